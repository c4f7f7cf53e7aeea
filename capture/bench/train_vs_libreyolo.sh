#!/usr/bin/env bash
# Side by side on this machine: our `profile run --device cpu` against
# LibreYOLO 1.6's, on the same dataset (written here: YOLO format, JPEG
# photographs of shapes with their boxes), the same checkpoint (YOLOv9-t in
# LibreYOLO's format, random weights, made by parity/parity.py), the same
# flags and thread count, alternating runs. Prints img/s, the step time,
# the dataloader share and the synced phase split of each run.
#
#   capture/bench/train_vs_libreyolo.sh [rounds] [imgsz] [batch] [workers]
#
# PAIRED=1 runs the two sides at the same time instead, one core and one
# thread each (cores swapped every round): on a VM whose speed drifts by a
# third within minutes, both then meet the same machine, and the per-round
# ratio holds still where alternating runs do not (BENCHMARKS.md).
#
# Needs: our two executables built side by side ($BIN, default
# $CARGO_TARGET_DIR/release/libreyolo: scripts/setup.sh), and a python with libreyolo==1.6.0
# ($LIBREYOLO_PARITY_PYTHON, see capture/parity/README.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
rounds="${1:-3}"
imgsz="${2:-320}"
batch="${3:-4}"
workers="${4:-2}"
warmup="${WARMUP:-2}"
steps="${STEPS:-12}"
images=$(( (warmup + steps + 2) * batch ))

# The dataset: $images JPEGs of 1–6 filled shapes on a textured background,
# three classes, labels in labels/ beside images/.
"$py" - "$work/data" "$images" "$imgsz" <<'PY'
import os, random, sys
import numpy as np
from PIL import Image, ImageDraw
root, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(0)
for split in ("images", "labels"):
    os.makedirs(f"{root}/{split}/train", exist_ok=True)
for i in range(n):
    w, h = rng.choice([(size, size), (size * 4 // 3, size), (size, size * 3 // 4)])
    noise = np.random.default_rng(i).integers(60, 200, (h, w, 3), dtype=np.uint8)
    img = Image.fromarray(noise)
    d = ImageDraw.Draw(img)
    lines = []
    for _ in range(rng.randint(1, 6)):
        bw, bh = rng.randint(w // 10, w // 3), rng.randint(h // 10, h // 3)
        x0, y0 = rng.randint(0, w - bw), rng.randint(0, h - bh)
        c = rng.randrange(3)
        fill = tuple(rng.randrange(256) for _ in range(3))
        (d.rectangle if c == 0 else d.ellipse if c == 1 else d.polygon)(
            [(x0, y0 + bh), (x0 + bw // 2, y0), (x0 + bw, y0 + bh)] if c == 2 else [x0, y0, x0 + bw, y0 + bh], fill=fill)
        lines.append(f"{c} {(x0 + bw / 2) / w:.6f} {(y0 + bh / 2) / h:.6f} {bw / w:.6f} {bh / h:.6f}")
    img.save(f"{root}/images/train/{i:04d}.jpg", quality=90)
    open(f"{root}/labels/train/{i:04d}.txt", "w").write("\n".join(lines) + "\n")
open(f"{root}/data.yaml", "w").write(
    f"path: {root}\ntrain: images/train\nval: images/train\nnames: [rectangle, ellipse, triangle]\n")
PY
"$py" -W ignore "$here/capture/parity/parity.py" --size t --imgsz "$imgsz" --out "$work/ref" > /dev/null
ckpt="$work/ref/checkpoint.pt"
common=(--weights "$ckpt" --size t --device cpu --imgsz "$imgsz" --batch "$batch" --workers "$workers"
        --warmup "$warmup" --steps "$steps" --no-amp)

# One run of either side under a watch on the machine: the CPU time other
# processes used while it ran (/proc/stat less the run's own, from its
# rusage), judged by the capture's own rule (src/conditions.rs: others used
# more than the cores the run's threads left free plus CONTENDED_CORES).
margin="$(sed -n 's/^pub const CONTENDED_CORES: f64 = \([0-9.]*\);/\1/p' "$here/src/conditions.rs")"
watched() { # log command...
  local log="$1"; shift
  "$py" - "$log" "$threads" "$margin" "$@" <<'PY'
import os, resource, subprocess, sys, time
log, threads, margin, cmd = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
def machine():
    v = list(map(int, open("/proc/stat").readline().split()[1:9]))
    return sum(v) - v[3] - v[4], sum(v)
def children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
(b0, t0), c0 = machine(), children()
with open(log, "w") as f:
    rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
(b1, t1), c1 = machine(), children()
cpus = os.cpu_count()
own = (c1 - c0) * os.sysconf("SC_CLK_TCK")
others = max(0.0, (b1 - b0) - own) / max(1, t1 - t0) * cpus
print("%.2f %s" % (others, "contended" if others > max(0, cpus - threads) + margin else "quiet"))
sys.exit(rc)
PY
}

row() { # name profile.json conditions
  # The share of the step inside libtorch's ops, by our own reader on the
  # run's trace (the same for both sides: LibreYOLO's profile.json lacks it).
  local in_ops
  in_ops="$("$bin" profile get "$(dirname "$2")/profile_trace.json" host_in_ops_frac 2>/dev/null || echo n/a)"
  "$py" - "$1" "$2" "$3" "$work/rows.tsv" "$in_ops" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
ph = {p["phase"]: p.get("wall_ms_per_step", 0) for p in d.get("phases") or []}
others, judged = sys.argv[3].split()
print("%-14s img/s %6.2f  step %8.1f ms  dataload %4.1f%%  in ops %s  | synced: load %6.1f  to_dev %5.1f  fwd %7.1f  bwd %7.1f  opt %6.1f  | others %s cores, %s" % (
    sys.argv[1], d.get("img_per_s") or 0, d.get("step_ms") or 0, 100 * (d.get("dataload_frac") or 0), sys.argv[5],
    ph.get("dataload", 0), ph.get("to_device", 0), ph.get("forward", 0), ph.get("backward", 0), ph.get("optimizer", 0),
    others, judged))
open(sys.argv[4], "a").write("%s\t%s\t%s\n" % (sys.argv[1], d.get("img_per_s") or 0, judged))
PY
}

if [[ -n "${PAIRED:-}" ]]; then
  threads=1
  export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
  echo "paired: both sides at once, one core and one thread each"
fi
echo "threads $threads, $images images, imgsz $imgsz, batch $batch, workers $workers, warmup $warmup, steps $steps, $rounds rounds"
uptime
# Round $r of either side, pinned by $pin_ours / $pin_theirs when paired.
pin_ours=() pin_theirs=()
run_ours() { watched "$work/ours$r.log" "${pin_ours[@]}" "$bin" profile run "$work/data/data.yaml" "${common[@]}" --threads "$threads" --project "$work/ours$r"; }
run_theirs() { (cd "$work" && watched "$work/theirs$r.log" "${pin_theirs[@]}" "$theirs" profile run "$work/data/data.yaml" "${common[@]}" --project "$work/theirs$r"); }
for r in $(seq 1 "$rounds"); do
  if [[ -n "${PAIRED:-}" ]]; then
    pin_ours=(taskset -c $(( r % 2 ))) pin_theirs=(taskset -c $(( 1 - r % 2 )))
    run_ours > "$work/judged.ours" & o=$!
    run_theirs > "$work/judged.theirs" & t=$!
    wait "$o" || { cat "$work/ours$r.log"; exit 1; }
    wait "$t" || { tail -20 "$work/theirs$r.log"; exit 1; }
    c="$(cat "$work/judged.ours")" ct="$(cat "$work/judged.theirs")"
  else
    c="$(run_ours)" || { cat "$work/ours$r.log"; exit 1; }
    ct="$(run_theirs)" || { tail -20 "$work/theirs$r.log"; exit 1; }
  fi
  row "ours" "$work/ours$r/train/profile.json" "$c"
  row "libreyolo-1.6" "$work/theirs$r/prof/profile.json" "$ct"
done
uptime

# Only rounds where both sides ran quiet count: a contended run measures
# the other process, not the trainer.
"$py" - "$work/rows.tsv" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
pairs = [(rows[i], rows[i + 1]) for i in range(0, len(rows) - 1, 2)]
quiet = [(float(a[1]), float(b[1])) for a, b in pairs if a[2] == "quiet" and b[2] == "quiet"]
print("rounds: %d, both sides quiet: %d" % (len(pairs), len(quiet)))
if quiet:
    ours, theirs = [q[0] for q in quiet], [q[1] for q in quiet]
    ratios = sorted(o / t for o, t in quiet)
    print("quiet rounds: median img/s ours %.2f, LibreYOLO 1.6 %.2f; ratio of medians %.2fx; per-round ratios %s (median %.2fx)" % (
        statistics.median(ours), statistics.median(theirs), statistics.median(ours) / statistics.median(theirs),
        " ".join("%.2f" % r for r in ratios), statistics.median(ratios)))
PY
