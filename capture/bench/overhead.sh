#!/usr/bin/env bash
# Profiler overhead of `profile infer`: p50 with the trace against
# `--no-trace`, alternating, on the bundled image. Prints every round and the
# minimum and median p50 of each side with their ratio (the minimum is the
# figure least disturbed by other work on the machine).
#
#   capture/bench/overhead.sh [rounds] [imgsz] [runs]
#
# Needs our two executables built side by side ($BIN, default
# $CARGO_TARGET_DIR/release/libreyolo: scripts/setup.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
rounds="${1:-10}"
imgsz="${2:-640}"
runs="${3:-30}"
common=(--device cpu --imgsz "$imgsz" --batch 1 --warmup 5 --runs "$runs" --json)

p50() { "$bin" profile get "$1/infer/profile.json" latency_p50_ms; }
echo "imgsz $imgsz, batch 1, warmup 5, runs $runs, $rounds rounds, $(nproc) cores"
for r in $(seq 1 "$rounds"); do
  "$bin" profile infer "${common[@]}" --project "$work/t$r" > /dev/null 2>&1
  "$bin" profile infer "${common[@]}" --no-trace --project "$work/n$r" > /dev/null 2>&1
  echo "round $r  trace $(p50 "$work/t$r")  no-trace $(p50 "$work/n$r")"
done | tee "$work/rounds.txt"
python3 - "$work/rounds.txt" <<'PY'
import statistics, sys
t, n = [], []
for line in open(sys.argv[1]):
    f = line.split()
    t.append(float(f[3])); n.append(float(f[5]))
for name, f in (("min", min), ("median", statistics.median)):
    a, b = f(t), f(n)
    print(f"{name:6s} p50: trace {a:.2f} ms, no-trace {b:.2f} ms, overhead {100 * (a / b - 1):+.1f}%")
PY
