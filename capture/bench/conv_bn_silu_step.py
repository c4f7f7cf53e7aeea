"""The training step of capture/examples/conv_bn_silu_step.rs in Python:
eight conv3x3(64->64, no bias) + BatchNorm + SiLU on a 4x64x80x80 input,
forward and backward timed on one thread, median of 30 steps."""
import time

import torch

LAYERS, STEPS = 8, 30
torch.set_num_threads(1)
layers = torch.nn.Sequential(*[
    torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3, padding=1, bias=False), torch.nn.BatchNorm2d(64), torch.nn.SiLU())
    for _ in range(LAYERS)])
x = torch.randn(4, 64, 80, 80)
fwd, bwd = [], []
for _ in range(STEPS):
    t0 = time.perf_counter()
    loss = layers(x).mean()
    t1 = time.perf_counter()
    loss.backward()
    fwd.append((t1 - t0) * 1e3)
    bwd.append((time.perf_counter() - t1) * 1e3)
    layers.zero_grad(set_to_none=True)
fwd.sort()
bwd.sort()
print("%-16s forward median %6.1f ms  backward median %6.1f ms" % ("python", fwd[STEPS // 2], bwd[STEPS // 2]))
