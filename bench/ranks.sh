#!/usr/bin/env bash
# Benchmark of a distributed job's readers. Results: BENCHMARKS.md.
#
#   bench/ranks.sh [SIZE]      SIZE per rank trace (default 100MB)
#
# Generates 8 rank traces of SIZE of uncompressed JSON each with
# `gen-trace --ranks 8`, rank 5's last kernel before each all-reduce
# stretched by 0.3 ms (2% of the generated step; `--slow-mode stretch`, the
# others wait in the all-reduces), under bench/out/ranks-SIZE-stretch/
# (reused); prints the stragglers `summary` finds against the generator's
# truth; then times
# `libreyolo profile summary <folder> --json` and
# `libreyolo profile collectives <folder> --json` pinned to 1 core and to
# 2 cores (taskset; the ranks are read on as many threads as CPUs the
# process may use), best of $RUNS, with peak RSS (/usr/bin/time %M); then
# the same job through per-rank profiles (`summary --write-profile` per
# rank, then `summary` over their folder); then `merge` of the job (gzipped
# and plain, 1 and 2 cores) and each rank's `summary --write-parquet`. Prints
# the load average (`uptime`) before and after: the figures are only as
# good as the machine was quiet.
#
# env: RUNS (default 3), CARGO_TARGET_DIR (default target), BIN (the binary;
#      default $CARGO_TARGET_DIR/release/libreyolo, built if missing), GEN
#      (gen-trace; default $CARGO_TARGET_DIR/release/gen-trace, built if missing)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source bench/lib.sh
size=${1:-100MB}
runs=${RUNS:-3}
target=${CARGO_TARGET_DIR:-target}
bin=${BIN:-$target/release/libreyolo}
[ -x /usr/bin/time ] || { echo "bench/ranks.sh needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
[ -x "$bin" ] || cargo build --release -p libreyolo
gen=${GEN:-$target/release/gen-trace}
[ -x "$gen" ] || cargo build --release -p libreyolo-bench --bin gen-trace
dir=bench/out/ranks-$size-stretch/job
if [ ! -f "$dir.expect.json" ]; then
    "$gen" --quiet --size "$size" --ranks 8 --slow-rank 5 --slow-mode stretch --slow-ms 0.3 --out "$dir"
fi
total=$(du -cb "$dir"/rank*.json | tail -1 | cut -f1)
echo "load before: $(uptime)"
echo "generated: rank 5 stretched by 0.3 ms; the others' waits for it: $(grep -o '"wait_caused_ms_per_step": [0-9.]*' "$dir.expect.json" | cut -d' ' -f2) ms per step"
echo "found:"
"$bin" profile summary "$dir" | sed -n '/^stragglers/,$p' | head -4
echo
echo "8 ranks, $((total / 1000000)) MB of JSON in all; best of $runs"
echo
echo "| command | cores | wall s | MB/s | peak RSS MB |"
echo "|---|---|---|---|---|"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for cmd in summary collectives; do
    for cpus in 0 0,1; do
        read -r best rss < <(best_of "$runs" "$cpus" "$bin" profile "$cmd" "$dir" --json)
        n=$(echo "$cpus" | tr ',' '\n' | wc -l)
        printf "| %s | %d | %.2f | %.0f | %.0f |\n" "$cmd" "$n" "$best" "$(echo "$total / 1000000 / $best" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
    done
done

# The two-level path (docs/spec.md §7): each rank's profile written where
# its trace is (the map, timed here one rank after another on one core, as
# each cluster node would), then one `summary` over the folder of profiles.
profiles="$tmp/profiles"
mkdir -p "$profiles"
t0=$EPOCHREALTIME
for f in "$dir"/rank*.json; do
    r=$(basename "$f" .json)
    /usr/bin/time -f "%M" -a -o "$tmp/map-rss" taskset -c 0 "$bin" profile summary "$f" --write-profile "$profiles/$r.json" > /dev/null 2>&1
done
t1=$EPOCHREALTIME
map=$(echo "$t1 - $t0" | bc -l)
maprss=$(sort -n "$tmp/map-rss" | tail -1)
printf "| summary --write-profile, each rank in turn (the map) | 1 | %.2f (%.2f per rank) | %.0f | %.0f |\n" "$map" "$(echo "$map / 8" | bc -l)" "$(echo "$total / 1000000 / $map" | bc -l)" "$(echo "$maprss / 1024" | bc -l)"
read -r best rss < <(best_of "$runs" 0 "$bin" profile summary "$profiles" --json)
printf "| summary over the 8 profiles (the reduce) | 1 | %.3f | – | %.0f |\n" "$best" "$(echo "$rss / 1024" | bc -l)"

# One timeline of the job (`merge`: the offsets pass reads the ranks as
# `summary` does, then each trace is copied), gzipped and plain; and each
# rank's own Parquet parts (`summary --write-parquet`, each rank in turn on
# one core as each node would; needs a build with `--features parquet`).
for out in job.json.gz job.json; do
    for cpus in 0 0,1; do
        read -r best rss < <(best_of "$runs" "$cpus" "$bin" profile merge "$dir" -o "$tmp/$out")
        n=$(echo "$cpus" | tr ',' '\n' | wc -l)
        printf "| merge -o %s (%.0f MB) | %d | %.2f | %.0f | %.0f |\n" "$out" "$(echo "$(stat -c %s "$tmp/$out") / 1000000" | bc -l)" "$n" "$best" "$(echo "$total / 1000000 / $best" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
    done
    rm -f "$tmp/$out"
done
if "$bin" profile summary "$dir/rank0.json" --write-parquet "$tmp/parts" > /dev/null 2>&1; then
    rm -rf "$tmp/parts" "$tmp/pq-rss"
    t0=$EPOCHREALTIME
    for f in "$dir"/rank*.json; do
        /usr/bin/time -f "%M" -a -o "$tmp/pq-rss" taskset -c 0 "$bin" profile summary "$f" --write-parquet "$tmp/parts" > /dev/null 2>&1
    done
    t1=$EPOCHREALTIME
    pq=$(echo "$t1 - $t0" | bc -l)
    printf "| summary --write-parquet, each rank in turn (%s KB of parts) | 1 | %.2f (%.2f per rank) | %.0f | %.0f |\n" "$(du -sk "$tmp/parts" | cut -f1)" "$pq" "$(echo "$pq / 8" | bc -l)" "$(echo "$total / 1000000 / $pq" | bc -l)" "$(echo "$(sort -n "$tmp/pq-rss" | tail -1) / 1024" | bc -l)"
else
    echo "| summary --write-parquet | – | n/a: $bin has no Parquet support (cargo build --release -p libreyolo --features parquet) | | |"
fi
echo
echo "load after: $(uptime)"
