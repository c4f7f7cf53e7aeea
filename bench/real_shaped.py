"""Writes a real-shaped trace: real fixture traces concatenated, each piece
shifted past the one before. Called by bench/real_shaped.sh.

    python3 bench/real_shaped.py SHAPE COPIES OUT

SHAPE `a100`: COPIES copies of the A100 ResNet training trace (no phase
ranges: phases inferred), as earlier benchmarks used.

SHAPE `mixed`: COPIES rounds of four differently shaped real traces, so
that no single shape flatters the reader: the A100 training trace, two
H100 inference traces recorded with `with_stack` (mostly Python frames,
fractional-microsecond timestamps) and the eight ranks of the V100 DLRM
job (NCCL kernels, `distributedInfo`). Everything is moved into the H100
traces' clock so timestamps keep the digits Kineto writes (at most 16).
"""

import gzip
import json
import sys

FIX = "tests/fixtures/traces/"
A100 = FIX + "hta_trace_diff_a100_2022/control.json.gz"
H100 = [
    FIX + "tracelens_h100_timesformer/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
    FIX + "tracelens_h100_qwen_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
]
DLRM = [FIX + "param_dlrm_v100_8rank/worker%d_step_12.%s.pt.trace.json.gz" % r for r in [
    (0, "1694128201545"), (1, "1694128201556"), (2, "1694128201554"), (3, "1694128201557"),
    (4, "1694128201547"), (5, "1694128201549"), (6, "1694128201553"), (7, "1694128201553"),
]]
ID_KEYS = ("correlation", "External id")
ID_STRIDE = 10_000_000
GAP_US = 1000.0


def load(path):
    return json.load(gzip.open(path))


def times(ev):
    return [e["ts"] for e in ev if isinstance(e.get("ts"), (int, float))]


def shifted(ev, shift, k, digits):
    """`ev` moved by `shift` µs, its ids and step numbers made unique for
    piece `k`; timestamps rounded to the `digits` decimals they had."""
    for e in ev:
        e = dict(e)
        ts = e.get("ts")
        if isinstance(ts, (int, float)):
            e["ts"] = ts + shift if isinstance(ts, int) and isinstance(shift, int) else round(ts + shift, digits)
        a = e.get("args")
        if isinstance(a, dict) and any(isinstance(a.get(key), int) for key in ID_KEYS):
            a = dict(a)
            for key in ID_KEYS:
                if isinstance(a.get(key), int):
                    a[key] += k * ID_STRIDE
            e["args"] = a
        if isinstance(e.get("id"), int):
            e["id"] += k * ID_STRIDE
        n = e.get("name", "")
        if isinstance(n, str) and n.startswith("ProfilerStep#") and n[13:].isdigit():
            e["name"] = "ProfilerStep#%d" % (int(n[13:]) + k * 1000)
        yield e


def a100(copies):
    t = load(A100)
    ev = t["traceEvents"]
    ts = times(ev)
    span = max(ts) - min(ts) + GAP_US
    # The same bytes as the first real-shaped benchmarks wrote.
    t["traceEvents"] = [e for k in range(copies) for e in shifted(ev, k * span, k, 3)]
    return t


def mixed(copies):
    pieces = [load(A100)] + [load(p) for p in H100] + [load(p) for p in DLRM]
    out = dict(pieces[1])  # the H100 trace's metadata and clock
    out.pop("traceEvents")
    cursor = min(times(pieces[1]["traceEvents"]))
    events = []
    k = 0
    for _ in range(copies):
        for t in pieces:
            ev = t["traceEvents"]
            ts = times(ev)
            fractional = any(isinstance(v, float) and v != int(v) for v in ts[:1000])
            shift = cursor - min(ts)
            if not fractional:
                shift = int(round(shift))
            events.extend(shifted(ev, shift, k, 3))
            cursor += max(ts) - min(ts) + GAP_US
            k += 1
    out["traceEvents"] = events
    return out


def main():
    shape, copies, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    t = {"a100": a100, "mixed": mixed}[shape](copies)
    with open(path, "w") as f:
        json.dump(t, f)


if __name__ == "__main__":
    main()
