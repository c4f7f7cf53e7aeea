#!/usr/bin/env bash
# Set everything up on a fresh machine: libtorch (a venv outside the
# checkout, reused when present) and the two release executables,
# target/release/libreyolo (readers, explorer; no libtorch) and
# target/release/libreyolo-capture (infer, run; links libtorch), which
# `libreyolo profile infer|run` finds beside itself.
#
#   scripts/setup.sh               # readers + capture (needs ~5 GB for torch)
#   scripts/setup.sh --readers     # readers and explorer only: no torch, no Python
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# `--parquet DIR` on the rank-set readers: the Arrow crates add 4.4 MB to
# the binary and under 1 ms to a reader's start (BENCHMARKS.md).

if [[ "${1:-}" == "--readers" ]]; then
  cargo build --release -p libreyolo --features libreyolo/parquet
  echo "setup: built $(pwd)/target/release/libreyolo (readers and explorer)" >&2
else
  eval "$(scripts/setup-torch.sh)"
  cargo build --release -p libreyolo -p libreyolo-capture --features libreyolo/parquet
  echo "setup: built $(pwd)/target/release/libreyolo and libreyolo-capture beside it" >&2
fi
