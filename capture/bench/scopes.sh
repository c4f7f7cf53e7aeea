#!/usr/bin/env bash
# What the model's module scopes cost a capture: `profile infer --device
# cpu` with the scopes (the default) and with `--no-module-scopes`,
# alternating (the side that runs first swaps every round), then the
# in-process measure of examples/scope_cost.rs. Prints per run the p50, the
# synced forward, the load average and whether the capture judged its
# window contended, then the minimum and median of each side with their
# ratio, over all rounds and over the quiet ones.
#
#   capture/bench/scopes.sh [rounds] [imgsz] [runs]
#
# Needs our two executables built side by side ($BIN, default
# $CARGO_TARGET_DIR/release/libreyolo: scripts/setup.sh) and the example
# built beside them (cargo build --release -p libreyolo-capture --example
# scope_cost). $THREADS (default: every core) is the capture's --threads.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
rounds="${1:-10}"
imgsz="${2:-320}"
runs="${3:-10}"
common=(--device cpu --imgsz "$imgsz" --batch 1 --warmup 2 --runs "$runs" --threads "$threads" --json)

one() { # side (on|off), project
  local extra=()
  [[ $1 == off ]] && extra=(--no-module-scopes)
  "$bin" profile infer "${common[@]}" "${extra[@]}" --project "$2" > /dev/null 2>&1
  python3 - "$1" "$2/infer/profile.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[2]))
c = p["host"]["conditions"]
print("%s p50 %.2f fwd %.2f load %.2f contended %s" % (
    sys.argv[1], p["latency"]["p50_ms"], p["stages_ms"]["forward"],
    c["load_avg_end"][0], c["contended"]))
PY
}

echo "imgsz $imgsz, batch 1, warmup 2, runs $runs, threads $threads, $rounds rounds, $(nproc --all) cores"
echo "before: $(uptime)"
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then sides=(on off); else sides=(off on); fi
  for s in "${sides[@]}"; do echo "round $r $(one "$s" "$work/$s$r")"; done
done | tee "$work/rounds.txt"
echo "after:  $(uptime)"
python3 - "$work/rounds.txt" <<'PY'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1])]
for label, keep in (("all rounds", lambda r: True), ("quiet runs", lambda r: r[-1] == "False")):
    side = {s: [(float(r[4]), float(r[6])) for r in runs if r[2] == s and keep(r)] for s in ("on", "off")}
    if not side["on"] or not side["off"]:
        print(f"{label}: none"); continue
    for i, what in ((0, "p50"), (1, "forward")):
        for name, f in (("min", min), ("median", statistics.median)):
            a, b = f(x[i] for x in side["on"]), f(x[i] for x in side["off"])
            print(f"{label} ({len(side['on'])}/{len(side['off'])}) {name:6s} {what:7s}: scopes {a:.2f} ms, none {b:.2f} ms, {100 * (a / b - 1):+.1f}%")
PY
ex="$(dirname "$bin")/examples/scope_cost"
if [[ -x $ex ]]; then "$ex" "$imgsz" 10 10 "$threads"; else echo "($ex not built: no in-process measure)"; fi
