#!/usr/bin/env bash
# Cost of recording allocator events (`profile infer --memory`, PyTorch's
# profile_memory): p50 latency with and without, alternating rounds, on the
# bundled image. Prints the load (`uptime`) before and after, every round
# with each capture's own contention verdict (host.conditions), and the
# minimum and median p50 of each side over the uncontended rounds.
#
#   capture/bench/memory_overhead.sh [rounds] [imgsz] [runs]
#
# Needs our two executables built side by side ($BIN, default
# $CARGO_TARGET_DIR/release/libreyolo: scripts/setup.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
rounds="${1:-8}"
imgsz="${2:-320}"
runs="${3:-20}"
common=(--device cpu --imgsz "$imgsz" --batch 1 --warmup 5 --runs "$runs" --json)

# p50 and the contention verdict of one capture.
fig() {
  python3 - "$1/infer/profile.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
c = ((p.get("host") or {}).get("conditions") or {})
mem = sum(d.get("events", 0) for d in p.get("memory", []))
print(f'{p["latency"]["p50_ms"]:.2f} {"contended" if c.get("contended") else "quiet"} {mem}')
PY
}
echo "imgsz $imgsz, batch 1, warmup 5, runs $runs, $rounds rounds, $(nproc) cores"
echo "before: $(uptime)"
for r in $(seq 1 "$rounds"); do
  # Alternate which side goes first, so drift in the load favours neither.
  if (( r % 2 )); then order=(m n); else order=(n m); fi
  for side in "${order[@]}"; do
    flag=(); [[ $side == m ]] && flag=(--memory)
    "$bin" profile infer "${common[@]}" "${flag[@]}" --project "$work/$side$r" > /dev/null 2>&1
  done
  echo "round $r  memory $(fig "$work/m$r")  plain $(fig "$work/n$r")"
done | tee "$work/rounds.txt"
echo "after: $(uptime)"
python3 - "$work/rounds.txt" <<'PY'
import statistics, sys
m, n, skipped = [], [], 0
for line in open(sys.argv[1]):
    f = line.split()
    if f[4] == "contended" or f[8] == "contended":
        skipped += 1
        continue
    m.append(float(f[3])); n.append(float(f[7]))
print(f"{len(m)} uncontended rounds ({skipped} contended left out)")
if m:
    for name, f in (("min", min), ("median", statistics.median)):
        a, b = f(m), f(n)
        print(f"{name:6s} p50: --memory {a:.2f} ms, without {b:.2f} ms, overhead {100 * (a / b - 1):+.1f}%")
PY
