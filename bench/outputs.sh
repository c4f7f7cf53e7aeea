#!/usr/bin/env bash
# Every reader's output on every fixture, written to one folder, so that two
# builds can be compared byte for byte (a refactoring must change none).
#
#   bench/outputs.sh BINARY OUT_DIR          write OUT_DIR/<fixture>.<lens>.<threads>
#   bench/outputs.sh --diff BEFORE AFTER     run both binaries, diff the folders
#
# Lenses: summary (text and --json), phases, kernels --json, ops --json,
# memory --json, tree --json, what-if (each scenario flag), collectives;
# at 1 and 2
# threads. Rank folders: summary, collectives, kernels. The exit code and
# stderr are kept beside each output. Exit status of --diff: 0 when every
# file is the same, 1 otherwise (the differing files are listed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ "${1:-}" == "--diff" ]]; then
    [[ $# -eq 3 ]] || { echo "usage: bench/outputs.sh --diff BEFORE AFTER" >&2; exit 2; }
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    "$0" "$2" "$tmp/before"
    "$0" "$3" "$tmp/after"
    source bench/lib.sh
    same_outputs outputs.sh "$tmp/before" "$tmp/after"
    exit 0
fi
[[ $# -eq 2 ]] || { echo "usage: bench/outputs.sh BINARY OUT_DIR | --diff BEFORE AFTER" >&2; exit 2; }
bin=$1
out=$2
mkdir -p "$out"

# run NAME ARGS...: one output, its stderr and exit code.
run() {
    local name=$1 rc=0
    shift
    "$bin" profile "$@" > "$out/$name.out" 2> "$out/$name.err" || rc=$?
    echo "$rc" > "$out/$name.rc"
}

fixtures=tests/fixtures
for trace in "$fixtures"/traces/*/*.json.gz "$fixtures"/reference/*/profile.json; do
    [[ -f "$trace" ]] || continue
    base=$(echo "${trace#"$fixtures"/}" | tr '/' '_')
    for t in 1 2; do
        run "$base.summary.$t" --threads "$t" summary "$trace"
        run "$base.summary-json.$t" --threads "$t" summary --json "$trace"
        run "$base.phases.$t" --threads "$t" phases "$trace"
        run "$base.kernels.$t" --threads "$t" kernels --json "$trace"
        run "$base.ops.$t" --threads "$t" ops --json "$trace"
        run "$base.memory.$t" --threads "$t" memory --json "$trace"
        run "$base.collectives.$t" --threads "$t" collectives --json "$trace"
        run "$base.tree.$t" --threads "$t" tree --json "$trace"
    done
    run "$base.tree-module" tree --by module "$trace"
    run "$base.kernels-text" kernels "$trace"
    run "$base.ops-text" ops "$trace"
    run "$base.whatif-gemm" what-if --json --remove-category gemm "$trace"
    run "$base.whatif-comm" what-if --remove-category communication "$trace"
    run "$base.whatif-launches" what-if --json --remove-launches 100 "$trace"
    run "$base.whatif-python" what-if --json --remove-idle python "$trace"
    run "$base.whatif-launch" what-if --remove-idle launch "$trace"
    run "$base.whatif-roofline" what-if --json --at-roofline gemm "$trace"
done
for dir in "$fixtures"/traces/param_dlrm_v100_8rank; do
    base=$(basename "$dir")
    run "$base.job-summary" summary "$dir"
    run "$base.job-summary-json" summary --json "$dir"
    run "$base.job-collectives" collectives "$dir"
    run "$base.job-kernels" kernels --json "$dir"
done
