#!/usr/bin/env bash
# Infer p50 on a quiet machine and with one busy-loop process (a "hog"),
# for our capture with its default threads (the cores other processes
# leave free), ours forced to every core (--threads = nproc, the old
# default), and LibreYOLO 1.6 (torch's default threads), alternating.
# Prints per run the p50, the threads used and what host.conditions said.
#
#   capture/bench/contention.sh [rounds] [imgsz]
#
# Needs our two executables (scripts/setup.sh) and a python with
# libreyolo==1.6.0 ($LIBREYOLO_PARITY_PYTHON, see capture/parity/README.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
rounds="${1:-2}"
imgsz="${2:-320}"
unset OMP_NUM_THREADS MKL_NUM_THREADS  # each side picks its own threads
"$py" -W ignore "$here/capture/parity/parity.py" --size t --imgsz "$imgsz" --out "$work/ref" > /dev/null
common=(--weights "$work/ref/checkpoint.pt" --device cpu --imgsz "$imgsz" --batch 1 --warmup 3 --runs 10)
hog_pid=
hog() { sh -c 'while :; do :; done' & hog_pid=$!; sleep 1; }
unhog() { kill "$hog_pid"; wait "$hog_pid" 2>/dev/null || true; hog_pid=; }
trap '[ -n "$hog_pid" ] && kill "$hog_pid"; rm -rf "$work"' EXIT

report() { # label profile.json
  "$py" - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
c = (d.get("host") or {}).get("conditions") or {}
t = c.get("threads", (d.get("config") or {}).get("threads", "?"))
print("%-26s p50 %9.1f ms  threads %-2s  other cores %-4s  contended %s" % (
    sys.argv[1], (d.get("latency") or {}).get("p50_ms", 0), t, c.get("other_cores", "n/a"), c.get("contended", "n/a")))
PY
}

echo "imgsz $imgsz, batch 1, warmup 3, runs 10, $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
  for load in quiet hog; do
    [ "$load" = hog ] && hog
    "$bin" profile infer "${common[@]}" --project "$work/ours-$load-$r" > /dev/null 2>&1
    report "ours default, $load" "$work/ours-$load-$r/infer/profile.json"
    "$bin" profile infer "${common[@]}" --threads "$(nproc)" --project "$work/all-$load-$r" > /dev/null 2>&1
    report "ours --threads $(nproc), $load" "$work/all-$load-$r/infer/profile.json"
    timeout 300 "$theirs" profile infer "${common[@]}" --project "$work/theirs-$load-$r" > /dev/null 2>&1 || true
    [ -f "$work/theirs-$load-$r/infer/profile.json" ] && report "libreyolo-1.6, $load" "$work/theirs-$load-$r/infer/profile.json"
    [ "$load" = hog ] && unhog
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
