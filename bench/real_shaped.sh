#!/usr/bin/env bash
# Benchmark on a real-shaped trace: the readers' speed where real traces
# differ from generated ones (no `step/<phase>` ranges: phases inferred).
# Results: BENCHMARKS.md.
#
#   bench/real_shaped.sh [COPIES] [SHAPE]
#
# SHAPE a100 (the default) concatenates COPIES (default 10) copies of the
# real fixture trace tests/fixtures/traces/hta_trace_diff_a100_2022/
# control.json.gz (an A100 ResNet training without phase ranges), each
# shifted past the one before, into bench/out/real-shaped-COPIES.json (and
# .json.gz; reused). SHAPE mixed concatenates COPIES rounds of that trace,
# two H100 inference traces recorded with Python stacks and the eight ranks
# of the V100 DLRM job into bench/out/real-mixed-COPIES.json (~55 MB a
# round; bench/real_shaped.py says how). Then it times
# `profile summary --json` on both, pinned to one core and on two cores,
# best and median of $RUNS, every row's runs interleaved with the
# others' (each input read into the page cache before each run), with
# peak RSS and the passes the reader reports; beside them, the same file
# through `cat`, `zcat` and a memchr scan for its `{`
# (bench/src/scan_ceiling.rs): the machine's own ceiling for reading,
# inflating and finding the events in those bytes. BEFORE=<binary> adds the same
# rows for another build of libreyolo (before → after in one run). HTA=<a
# python with HolisticTraceAnalysis> adds HTA 0.5.0's read of the same
# plain trace (bench/hta_read.py: its parser, then its temporal, kernel and
# idle breakdowns; one run, on both cores: it takes minutes). TraceLens is
# not on PyPI, so it has no row. Prints the load average before and after.
#
# env: RUNS (default 3), BIN (default target/release/libreyolo, built if
#      missing), BEFORE (optional), HTA (optional: e.g. a venv's python after
#      `pip install HolisticTraceAnalysis==0.5.0`), python3 (to write the trace)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/lib.sh
copies=${1:-10}
shape=${2:-a100}
runs=${RUNS:-3}
bin=${BIN:-target/release/libreyolo}
[ -x /usr/bin/time ] || { echo "bench/real_shaped.sh needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
[ -x "$bin" ] || cargo build --release -p libreyolo --features parquet
scan=target/release/scan-ceiling
[ -x "$scan" ] || cargo build --release -p libreyolo-bench --bin scan-ceiling
mkdir -p bench/out
trace=bench/out/real-shaped-$copies.json
[ "$shape" = a100 ] || trace=bench/out/real-$shape-$copies.json
if [ ! -f "$trace.gz" ]; then
    python3 bench/real_shaped.py "$shape" "$copies" "$trace"
    gzip -k -1 "$trace"
fi
bytes=$(stat -c %s "$trace")
mb=$(echo "$bytes / 1000000" | bc -l)
echo "load before: $(uptime)"
what="copies of hta_trace_diff_a100_2022/control"
[ "$shape" = a100 ] || what="rounds of the $shape shape (bench/real_shaped.py)"
printf "%d %s: %.0f MB of JSON (gz %.0f MB); %d runs a row, interleaved\n\n" "$copies" "$what" "$mb" "$(echo "$(stat -c %s "$trace.gz") / 1000000" | bc -l)" "$runs"
echo "| reader | input | cores | best s | median s | MB/s (best) | peak RSS MB | passes |"
echo "|---|---|---|---:|---:|---:|---:|---:|"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The rows, run interleaved: run 1 of every row, then run 2, … — the
# host's load drifts over minutes, and a before/after pair should see the
# same drift. Each run reads its input into the page cache first.
labels=() inputs=() cpus=() cmds=()
add() { # label, input, cores, command (words without spaces)...
    labels+=("$1") inputs+=("$2") cpus+=("$3")
    shift 3
    cmds+=("$*")
}
add "cat > /dev/null" json 0 cat "$trace"
add "zcat > /dev/null" gz 0 zcat "$trace.gz"
add "memchr scan for {" json 0 "$scan" "$trace"
for b in ${BEFORE:+"$BEFORE"} "$bin"; do
    label=$([ "$b" = "$bin" ] && echo "libreyolo (this build)" || echo "libreyolo (before)")
    for input in json gz; do
        f=$trace
        [ "$input" = gz ] && f=$trace.gz
        add "$label summary" "$input" 0 "$b" profile summary "$f" --json
        add "$label summary" "$input" 0,1 "$b" profile summary "$f" --json
    done
done
for _ in $(seq 1 "$runs"); do
    for i in "${!cmds[@]}"; do
        warm=$trace
        [ "${inputs[$i]}" = gz ] && warm=$trace.gz
        read -ra cmd <<< "${cmds[$i]}"
        read -r wall rss < <(BEST_OF_WARM=$warm BEST_OF_OUT=$tmp/out$i best_of 1 "${cpus[$i]}" "${cmd[@]}")
        echo "$wall $rss" >> "$tmp/runs$i"
    done
done
for i in "${!cmds[@]}"; do
    n=$(echo "${cpus[$i]}" | tr ',' '\n' | wc -l)
    passes=$(grep -o '"passes": *[0-9]*' "$tmp/out$i" | grep -o '[0-9]*$' || echo –)
    read -r best median rss < <(sort -g "$tmp/runs$i" | awk '{w[NR]=$1; if ($2 > r) r=$2} END {print w[1], (NR % 2) ? w[(NR+1)/2] : (w[NR/2] + w[NR/2+1]) / 2, r}')
    printf "| %s | %s | %d | %.2f | %.2f | %.0f | %.0f | %s |\n" "${labels[$i]}" "${inputs[$i]}" "$n" "$best" "$median" "$(echo "$mb / $best" | bc -l)" "$(echo "$rss / 1024" | bc -l)" "${passes:-–}"
done
if [ -n "${HTA:-}" ]; then
    read -r best rss < <(BEST_OF_WARM=$trace BEST_OF_OUT=$tmp/hta best_of 1 0,1 "$HTA" bench/hta_read.py "$trace")
    printf "| HTA 0.5.0 (%s) | json | 2 | %.2f | – | %.0f | %.0f | – |\n" "$(tr -d '\n' < "$tmp/hta")" "$best" "$(echo "$mb / $best" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
fi
echo
echo "load after: $(uptime)"
