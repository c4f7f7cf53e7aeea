#!/usr/bin/env bash
# Two gen-trace builds write the same bytes: every option (sizes, units,
# --gzip, seeds, --ranks and each straggler mode), the `.expect.json`
# sidecars, the exit codes and the messages (MB/s, a timing, dropped), so
# that a refactoring of the generator can show it changed nothing.
#
#   bench/gen_identical.sh BEFORE AFTER     two gen-trace binaries
#
# Exit status: 0 when every file is the same, 1 otherwise (listed).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ $# -eq 2 ]] || { echo "usage: bench/gen_identical.sh BEFORE AFTER" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# write BINARY DIR: every case into DIR (relative --out paths, so the
# messages name the same files).
write() {
    local bin=$1 dir=$2 n=0
    mkdir -p "$dir"
    cd "$dir"
    while read -r name args; do
        rc=0
        # shellcheck disable=SC2086 # the case's arguments, split on purpose
        "$bin" $args 2> "$name.err" || rc=$?
        echo "$rc" > "$name.rc"
        sed -i -E 's/, [0-9.]+ MB\/s/, _ MB\/s/' "$name.err"
        n=$((n + 1))
    done <<'EOF'
plain          --size 2MB --out plain.json
seed7          --size 2MB --seed 7 --out seed7.json --quiet
mid            --size 20MB --seed 3 --out mid.json --quiet
gz             --size 2MB --seed 2 --gzip --out gz.json.gz
midgz          --size 20MB --seed 5 --gzip --out midgz.json.gz -q
bytes          --size 500000 --seed 9 --out bytes.json -q
mib            --size 1.5MiB --seed 11 --out mib.json -q
job            --size 1MB --ranks 4 --out job
extra          --size 1MB --ranks 4 --slow-rank 2 --slow-ms 3 --out extra -q
extrafwd       --size 1MB --ranks 3 --slow-rank 1 --slow-ms 2 --slow-phase forward --out extrafwd -q
stretch        --size 1MB --ranks 4 --slow-rank 3 --slow-ms 5 --slow-mode stretch --gzip --out stretch
stretch0       --size 1MB --ranks 3 --slow-rank 0 --slow-ms 1.5 --slow-mode stretch --slow-phase backward --seed 4 --out stretch0 -q
stretchnone    --size 1MB --ranks 2 --slow-mode stretch --out stretchnone -q
jobmid         --size 4MB --ranks 2 --slow-rank 0 --slow-ms 2 --slow-phase to_device --gzip --out jobmid -q
badrank        --size 1MB --ranks 4 --slow-rank 4 --slow-ms 3 --out badrank
badphase       --size 1MB --ranks 2 --slow-rank 1 --slow-ms 3 --slow-phase nope --out badphase
badsize        --size 12XB --out badsize.json
EOF
    cd - > /dev/null
}
write "$(realpath "$1")" "$tmp/before"
write "$(realpath "$2")" "$tmp/after"
same_outputs gen_identical.sh "$tmp/before" "$tmp/after"
