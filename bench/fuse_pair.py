#!/usr/bin/env python3
"""`--fuse` predicted from the unfused profile against measured (issue #51).

    bench/fuse_pair.py ROUNDS [BINARY] [OUT_DIR]

Each round captures `profile infer --device cpu --imgsz 320 --warmup 10
--runs 100` unfused, then `--fuse` (interleaved, so both sides of a round
see the same phase of a shared host), and prints per round and as medians:
the prediction `what-if --op 'batch_norm|RepConvN 1x1'` (and BatchNorm
alone) made from the unfused profile only; the measured saving of the
profile's step and of the trace's forward wall per step; and, from the two
traces' `aten::conv2d` events, how much longer the fused graph's
convolutions run than the same ones unfused (the folded bias: work a
removal cannot predict). BINARY defaults to target/release/libreyolo (with
libreyolo-capture beside it: scripts/setup.sh). Results: BENCHMARKS.md.
"""
import json
import os
import statistics
import subprocess
import sys

BRANCH = "RepConvN 1x1 branch"


def profile(binary, *args):
    out = subprocess.run([binary, "profile", *args, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)}: {out.stderr}")
    return json.loads(out.stdout)


def conv_ms(trace, outside_branch):
    """`aten::conv2d` ms per step, outside the branch ranges if asked."""
    with open(trace) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sum(1 for e in events if e["name"].startswith("ProfilerStep#"))
    branches = [(e["tid"], e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == BRANCH]

    def in_branch(e):
        return any(t == e["tid"] and s <= e["ts"] < end for t, s, end in branches)

    convs = [e for e in events if e["name"] == "aten::conv2d" and e.get("cat") == "cpu_op"]
    kept = [e["dur"] for e in convs if not (outside_branch and in_branch(e))]
    return sum(kept) / max(steps, 1) / 1000.0


def main():
    if not 2 <= len(sys.argv) <= 4:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    binary = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "target/release/libreyolo")
    out = sys.argv[3] if len(sys.argv) > 3 else "bench/out/fuse_pair"
    os.makedirs(out, exist_ok=True)
    print(f"load before: {os.getloadavg()}")
    rows = []
    for r in range(rounds):
        dirs = {}
        for side, extra in (("unfused", []), ("fused", ["--fuse"])):
            d = os.path.join(out, f"{side}{r}")
            cmd = [binary, "profile", "infer", "--device", "cpu", "--imgsz", "320", "--warmup",
                   "10", "--runs", "100", "--weights", "no-such-weights.pt", "--project", d, *extra]
            subprocess.run(cmd, check=True, capture_output=True)
            dirs[side] = os.path.join(d, "infer")
        p = {s: os.path.join(dirs[s], "profile.json") for s in dirs}
        step = {s: profile(binary, "get", p[s], "step_ms")["step_ms"] for s in p}
        fwd = {
            s: next(x["wall_ms_per_step"] for x in profile(binary, "phases", p[s])["phases"]
                    if x["phase"] == "forward")
            for s in p
        }
        both = profile(binary, "what-if", p["unfused"], "--op", "batch_norm|RepConvN 1x1")
        bn = profile(binary, "what-if", p["unfused"], "--op", "batch_norm")
        extra = (conv_ms(os.path.join(dirs["fused"], "profile_trace.json"), False)
                 - conv_ms(os.path.join(dirs["unfused"], "profile_trace.json"), True))
        row = (both["saved_ms_per_step"], bn["saved_ms_per_step"],
               step["unfused"] - step["fused"], fwd["unfused"] - fwd["fused"], extra)
        rows.append(row)
        print(f"round {r}: predicted {row[0]:.2f} (BatchNorm alone {row[1]:.2f}); measured "
              f"step {row[2]:.2f}, forward {row[3]:.2f}; fused convolutions {row[4]:+.2f} ms/step")
    med = [statistics.median(x[i] for x in rows) for i in range(5)]
    print(f"load after: {os.getloadavg()}")
    print(f"medians of {rounds} rounds, ms/step saved: predicted {med[0]:.2f} (BatchNorm alone "
          f"{med[1]:.2f}); measured step {med[2]:.2f}, forward {med[3]:.2f}; the fused "
          f"convolutions {med[4]:+.2f} (the folded bias); predicted less that {med[0] - med[4]:.2f}")


if __name__ == "__main__":
    main()
