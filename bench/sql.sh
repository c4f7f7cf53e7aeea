#!/usr/bin/env bash
# Benchmark of the job questions as SQL (sql/, docs/spec.md §7) over a
# generated job's per-rank Parquet tables. Results: BENCHMARKS.md.
#
#   bench/sql.sh [RANKS] [SIZE]   RANKS (default 256), SIZE of JSON per rank
#                                 trace (default 4MB: about 7 steps each)
#
# Generates RANKS rank traces with `gen-trace --ranks RANKS --gzip`, one
# rank stretched by 0.3 ms before each step's first all-reduce (the others
# wait for it there), under bench/out/sql-RANKS-SIZE/ (reused); writes each
# rank's tables with its own process pinned to one core, one after another
# (`summary TRACE --write-parquet`, as each node of a cluster would: the
# per-rank time is one node's), and states their mean, p50 and max; runs
# each SQL file in DuckDB over all the parts (best of $RUNS, DuckDB on every
# core); then `summary DIR --json` and `collectives DIR --json` of the same
# traces once, for their time and to check that the SQL found the same
# stragglers, skews and bus bandwidths. Prints the load average (`uptime`)
# before and after: the figures are only as good as the machine was quiet.
#
# env: RUNS (default 3), CARGO_TARGET_DIR (default target), BIN (the binary,
#      with the parquet feature; default $CARGO_TARGET_DIR/release/libreyolo,
#      built if missing), GEN (gen-trace; built if missing), PYTHON (one
#      that imports duckdb; default LIBREYOLO_DUCKDB_PYTHON, else the torch
#      venv's, else python3)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ranks=${1:-256}
size=${2:-4MB}
runs=${RUNS:-3}
target=${CARGO_TARGET_DIR:-target}
bin=${BIN:-$target/release/libreyolo}
[ -x "$bin" ] || cargo build --release -p libreyolo --features libreyolo/parquet
gen=${GEN:-$target/release/gen-trace}
[ -x "$gen" ] || cargo build --release -p libreyolo-bench --bin gen-trace
python=${PYTHON:-${LIBREYOLO_DUCKDB_PYTHON:-$HOME/.cache/libreyolo/torch-venv/bin/python}}
"$python" -c "import duckdb" 2> /dev/null || python=python3
"$python" -c "import duckdb" 2> /dev/null || {
    echo "bench/sql.sh needs a python with duckdb (pip install duckdb; or PYTHON=...)" >&2
    exit 1
}
slow=$((ranks / 3))
dir=bench/out/sql-$ranks-$size/job
if [ ! -f "$dir.expect.json" ]; then
    "$gen" --quiet --size "$size" --ranks "$ranks" --slow-rank "$slow" --slow-mode stretch --slow-ms 0.3 --gzip --out "$dir"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
parts=$tmp/parts

echo "load before: $(uptime)"
echo "job: $ranks ranks of $size of JSON each ($(du -sm "$dir" | cut -f1) MB gzipped), $(grep -o '"steps": [0-9]*' "$dir.expect.json" | cut -d' ' -f2) steps; rank $slow stretched by 0.3 ms"
echo "DuckDB $("$python" -c 'import duckdb; print(duckdb.__version__)'), $(nproc) cores"
echo

# The map: each rank's parts by its own process, one after another.
for f in "$dir"/rank*.json.gz; do
    t0=$EPOCHREALTIME
    taskset -c 0 "$bin" profile summary "$f" --write-parquet "$parts" > /dev/null 2>&1
    t1=$EPOCHREALTIME
    echo "$t1 - $t0" | bc -l >> "$tmp/per-rank"
done
sort -n "$tmp/per-rank" | awk -v n="$ranks" -v kb="$(du -sk "$parts" | cut -f1)" '
    { t[NR] = $1; s += $1 }
    END {
        printf "per rank (summary TRACE --write-parquet, 1 core, %d processes, %d KB of parts):\n", NR, kb
        printf "  mean %.3f s, p50 %.3f s, max %.3f s; %.1f s for all %d one after another\n", s / NR, t[int((NR + 1) / 2)], t[NR], s, n
    }'
echo

# The reduce in SQL: each file's time inside DuckDB, best of $runs.
for _ in $(seq 1 "$runs"); do
    t0=$EPOCHREALTIME
    "$python" sql/run.py "$parts" --json > "$tmp/sql.json" 2>> "$tmp/query-times"
    t1=$EPOCHREALTIME
    echo "$t1 - $t0" | bc -l >> "$tmp/run-wall"
done
echo "| query (sql/) | rows | best ms |"
echo "|---|---|---|"
awk '{ sub(":", "", $1); if (!($1 in best) || $5 < best[$1]) { best[$1] = $5; rows[$1] = $2 } }
     END { for (q in best) printf "| %s.sql | %d | %.1f |\n", q, rows[q], best[q] }' "$tmp/query-times" | sort
printf "| sql/run.py, all of them (python and DuckDB start, views, every query) | – | %.0f |\n" "$(sort -n "$tmp/run-wall" | head -1 | awk '{ print $1 * 1000 }')"
echo

# The same job on one machine, for its time and to check the answers.
t0=$EPOCHREALTIME
"$bin" profile summary "$dir" --json > "$tmp/summary.json" 2> /dev/null
t1=$EPOCHREALTIME
"$bin" profile collectives "$dir" --json > "$tmp/collectives.json" 2> /dev/null
t2=$EPOCHREALTIME
printf "summary DIR --json: %.1f s; collectives DIR --json: %.1f s (all cores)\n" "$(echo "$t1 - $t0" | bc -l)" "$(echo "$t2 - $t1" | bc -l)"
"$python" - "$tmp/sql.json" "$tmp/summary.json" "$tmp/collectives.json" << 'PY'
import json, sys
sql, job, coll = (json.load(open(p)) for p in sys.argv[1:])
got = [(s["rank"], s["wait_caused_ms_per_step"]) for s in sql["stragglers"]]
want = [(s["rank"], s["wait_caused_ms_per_step"]) for s in job["stragglers"]]
by_key = {(c["group"], c["seq"]): c for c in coll["collectives"]}
bad = [s for s in sql["skew"] if (lambda c: c["last_rank"] != s["last_rank"]
       or abs(c["skew_us"] - s["skew_us"]) > 1e-3
       or abs((c.get("busbw_gbps") or 0) - (s["busbw_gbps"] or 0)) > 1e-3)(by_key[(s["process_group"], s["seq"])])]
seen = sql["step_spread"][0]["ranks"]
print(f"ranks in the parts: {seen} of {len(job['ranks'])}; stragglers: SQL {got}, summary DIR {want}")
print(f"top {len(sql['skew'])} skews, their last ranks and bus bandwidths: {len(bad)} differ from collectives DIR")
same = len(got) == len(want) and all(g[0] == w[0] and abs(g[1] - w[1]) <= 1.5e-3 for g, w in zip(got, want))
sys.exit(0 if same and not bad and seen == len(job["ranks"]) else 1)
PY
echo
echo "load after: $(uptime)"
