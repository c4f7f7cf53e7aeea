#!/usr/bin/env bash
# Set everything up on a fresh machine: libtorch (a venv outside the
# checkout, reused when present) and the release binary with the capture
# engine, at target/release/libreyolo.
#
#   scripts/setup.sh               # readers + capture (needs ~5 GB for torch)
#   scripts/setup.sh --readers     # readers and explorer only: no torch, no Python
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ "${1:-}" == "--readers" ]]; then
  cargo build --release -p libreyolo
else
  eval "$(scripts/setup-torch.sh)"
  cargo build --release -p libreyolo --features capture
fi
echo "setup: built $(pwd)/target/release/libreyolo" >&2
