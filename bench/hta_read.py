"""HTA 0.5.0 on one trace, as bench/real_shaped.sh times it beside ours.

    python bench/hta_read.py TRACE

Loads TRACE with HTA's TraceAnalysis (its parser: the bulk of its time),
then runs the analyses closest to `libreyolo profile summary`: the temporal
breakdown (idle / compute / non-compute per rank), the kernel breakdown by
type and kernel, and the idle-time breakdown. Prints one line:
`load_s=… analyses_s=… kernels=…` (kernels: rows HTA's kernel table has,
a check that it read the trace). Plots are off; HTA's own logging is
quieted.
"""
import logging
import os
import sys
import time
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

from hta.trace_analysis import TraceAnalysis  # noqa: E402

trace = os.path.abspath(sys.argv[1])
t0 = time.perf_counter()
ta = TraceAnalysis(trace_files={0: trace}, trace_dir=os.path.dirname(trace))
t1 = time.perf_counter()
ta.get_temporal_breakdown(visualize=False)
kernel_types, kernels = ta.get_gpu_kernel_breakdown(visualize=False)
ta.get_idle_time_breakdown(visualize=False)
t2 = time.perf_counter()
print(f"load_s={t1 - t0:.2f} analyses_s={t2 - t1:.2f} kernels={len(kernels)}")
