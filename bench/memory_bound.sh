#!/usr/bin/env bash
# What a reader keeps per GPU event, and whether the memory budget holds to
# the end (issue #54, "bounded memory in every case"). Results: BENCHMARKS.md.
#
#   bench/memory_bound.sh [KERNELS...]
#
# For each count (default 1000000 4000000) it writes an all-kernel trace,
# bench/out/kernels-N.json.gz: one ProfilerStep over N tiny kernels of one
# name and no launches (the shape of the "10 GB all-kernel trace" of issue
# #54, at a size this machine reads in seconds). Then `profile summary
# --json` on it: peak RSS, and bytes per kernel event over the peak of the
# same trace cut to 1 000 kernels (the binary, its tables and buffers).
# Then the same read under `--max-memory` of half that peak: it must stop
# (exit 1) with its peak RSS near the budget, not finish past it.
#
# env: BIN (default target/release/libreyolo, built if missing), python3
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -x /usr/bin/time ] || { echo "bench/memory_bound.sh needs GNU time at /usr/bin/time" >&2; exit 1; }
bin=${BIN:-target/release/libreyolo}
[ -x "$bin" ] || cargo build --release -p libreyolo --features parquet
mkdir -p bench/out
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1000000 4000000)

# kernels N: the all-kernel trace of N kernels (written once).
kernels() {
    local out=bench/out/kernels-$1.json.gz
    [ -s "$out" ] || python3 - "$1" "$out" <<'EOF'
import gzip, sys
n, out = int(sys.argv[1]), sys.argv[2]
name = ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
        "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, at::detail::Array<char*, 3>)")
with gzip.open(out, "wt", compresslevel=1) as w:
    w.write('{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", '
            '"pid": 1, "tid": 1, "ts": 0, "dur": 1000000000}')
    for i in range(n):
        w.write(f',\n{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":7,"ts":{10 + i},"dur":1}}')
    w.write(']}')
EOF
    echo "$out"
}

# peak ARGS...: "<exit code> <peak RSS KiB> <seconds>" of one summary run.
peak() {
    local f t0 t1 code
    f=$(mktemp)
    t0=$EPOCHREALTIME
    code=0
    /usr/bin/time -f "%M" -o "$f" "$bin" profile summary --json "$@" > /dev/null 2> "$f.err" || code=$?
    t1=$EPOCHREALTIME
    echo "$code $(tail -1 "$f") $(echo "$t1 - $t0" | bc -l | xargs printf '%.2f')"
    rm -f "$f" "$f.err"
}

echo "load before: $(uptime)"
read -r _ base _ < <(peak "$(kernels 1000)")
echo "baseline (1000 kernels): peak RSS $((base / 1024)) MB"
echo
echo "| kernels | peak RSS MB | bytes per kernel | s | under --max-memory (half the peak) |"
echo "|---:|---:|---:|---:|---|"
for n in "${counts[@]}"; do
    t=$(kernels "$n")
    read -r code rss secs < <(peak "$t")
    [ "$code" = 0 ] || { echo "summary of $t failed (exit $code)" >&2; exit 1; }
    per=$(( (rss - base) * 1024 / n ))
    half=$(( rss / 2 ))
    read -r hcode hrss _ < <(peak "$t" --max-memory "${half}K")
    echo "| $n | $((rss / 1024)) | $per | $secs | budget $((half / 1024)) MB: exit $hcode, peak $((hrss / 1024)) MB |"
done
echo
echo "load after: $(uptime)"
