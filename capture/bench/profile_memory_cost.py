# Cost of PyTorch's profile_memory on CPU, measured in Python torch (the same
# Kineto path as the capture shim): CPU time of the main thread per forward of
# a small conv net at 320x320, with and without, alternating rounds, with
# `uptime` before and after. Run with the torch venv's python:
#   python capture/bench/profile_memory_cost.py [rounds] [threads]
import time, sys, os, statistics, torch, torch.nn as nn
from torch.profiler import profile, ProfilerActivity, record_function
torch.manual_seed(0)
torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
def blk(i, o, s): return nn.Sequential(nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.SiLU())
net = nn.Sequential(blk(3,16,2), blk(16,32,2), blk(32,32,1), blk(32,64,2), blk(64,64,1), blk(64,128,2), blk(128,128,1), blk(128,256,2), blk(256,256,1)).eval()
x = torch.randn(1, 3, 320, 320)
def run(mem, n=20):
    with torch.no_grad():
        for _ in range(3): net(x)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=mem) as p:
            lat = []
            for i in range(n):
                t = time.thread_time()
                with record_function(f"ProfilerStep#{i}"):
                    net(x)
                lat.append((time.thread_time() - t) * 1e3)
        n_mem = sum(1 for e in p.events() if e.name == "[memory]") if False else None
    return statistics.median(lat)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
print("CPU time of the main thread per forward (time.thread_time), 1 intra-op thread");print("before:", os.popen("uptime").read().strip())
m, n = [], []
for r in range(rounds):
    order = [True, False] if r % 2 == 0 else [False, True]
    for mem in order:
        (m if mem else n).append(run(mem))
    print(f"round {r+1} memory {m[-1]:.2f} ms plain {n[-1]:.2f} ms", flush=True)
print("after:", os.popen("uptime").read().strip())
for name, f in (("min", min), ("median", statistics.median)):
    a, b = f(m), f(n)
    print(f"{name} p50: profile_memory {a:.2f} ms, without {b:.2f} ms, overhead {100*(a/b-1):+.1f}%")
