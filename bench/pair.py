#!/usr/bin/env python3
"""Two builds of libreyolo timed side by side, one per core.

    bench/pair.py TRACE ROUNDS BEFORE AFTER

Runs `profile summary --json --threads 1 TRACE` with both binaries at
once, each pinned to one of the two cores (swapped every round), and
prints each one's best and median wall time and the median of the
per-round ratio AFTER/BEFORE. On a shared host whose speed drifts by
tens of percent between runs, both builds see the same phase in a
round, so the ratio is steadier than any sequence of single runs
(BENCHMARKS.md, "Fewer stalls and counts made once"). Needs `taskset`.
"""
import statistics
import subprocess
import sys
import time


def main() -> None:
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    trace, rounds, before, after = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    times = {before: [], after: []}
    ratios = []
    for r in range(rounds):
        start = time.perf_counter()
        procs = {
            binary: subprocess.Popen(
                ["taskset", "-c", str((r + k) % 2), binary, "profile", "summary", "--json",
                 "--threads", "1", trace],
                stdout=subprocess.DEVNULL,
            )
            for k, binary in enumerate((before, after))
        }
        done = {}
        while len(done) < 2:
            for binary, p in procs.items():
                if binary not in done and p.poll() is not None:
                    if p.returncode != 0:
                        sys.exit(f"{binary} exited {p.returncode}")
                    done[binary] = time.perf_counter() - start
            time.sleep(0.002)
        for binary in (before, after):
            times[binary].append(done[binary])
        ratios.append(done[after] / done[before])
    for label, binary in (("before", before), ("after", after)):
        t = times[binary]
        print(f"{label} {binary}: best {min(t):.3f} s, median {statistics.median(t):.3f} s")
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    print(f"after/before, median of {rounds} rounds: {statistics.median(ratios):.3f} "
          f"(quartiles {q[0]:.3f}-{q[2]:.3f})")


if __name__ == "__main__":
    main()
