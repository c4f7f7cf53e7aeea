#!/usr/bin/env bash
# Side by side on this machine: our `profile infer --device cpu` against
# LibreYOLO 1.6's, same checkpoint, image, imgsz, batch and thread count,
# alternating runs; both measure the unfused graph LibreYOLO's inference
# runs. Plus ours with --fuse (the deployed graph) and our profiler overhead
# (trace vs --no-trace). Each round prints the load average it ran under.
#
#   capture/bench/vs_libreyolo.sh [rounds] [imgsz]
#
# Needs: our two executables built side by side ($BIN, default
# $CARGO_TARGET_DIR/release/libreyolo: scripts/setup.sh), and a python with libreyolo==1.6.0
# ($LIBREYOLO_PARITY_PYTHON, see capture/parity/README.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
rounds="${1:-2}"
imgsz="${2:-640}"

# One checkpoint for both (LibreYOLO9 t, random weights, LibreYOLO format).
"$py" -W ignore "$here/capture/parity/parity.py" --size t --imgsz "$imgsz" --out "$work/ref" > /dev/null
ckpt="$work/ref/checkpoint.pt"
img="$here/capture/assets/astronaut.jpg"
common=(--weights "$ckpt" --device cpu --imgsz "$imgsz" --batch 1 --warmup 5 --runs 20)

row() { # name profile.json
  "$py" - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
s = d.get("stages_ms") or {}
l = d.get("latency") or {}
print("%-14s p50 %8.2f  p90 %8.2f  pre %7.2f  fwd %8.2f  post %7.2f  img/s %s" % (
    sys.argv[1], l.get("p50_ms", 0), l.get("p90_ms", 0), s.get("preprocess", 0),
    s.get("forward", 0), s.get("postprocess", 0), d.get("img_per_s")))
PY
}

echo "threads $threads, imgsz $imgsz, batch 1, warmup 5, runs 20, $rounds rounds"
for r in $(seq 1 "$rounds"); do
  "$bin" profile infer "$img" "${common[@]}" --project "$work/ours$r" > /dev/null 2>&1
  row "ours" "$work/ours$r/infer/profile.json"
  "$theirs" profile infer "$img" "${common[@]}" --project "$work/theirs$r" > /dev/null 2>&1
  row "libreyolo-1.6" "$work/theirs$r/infer/profile.json"
  "$bin" profile infer "$img" "${common[@]}" --no-trace --project "$work/notrace$r" > /dev/null 2>&1
  row "ours no-trace" "$work/notrace$r/infer/profile.json"
  "$bin" profile infer "$img" "${common[@]}" --fuse --project "$work/fused$r" > /dev/null 2>&1
  row "ours --fuse" "$work/fused$r/infer/profile.json"
  echo "round $r load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done
