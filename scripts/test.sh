#!/usr/bin/env bash
# Set everything up and run every test: the readers, the explorer (tmux
# end-to-end test included), the benchmark harness's checks, and the capture
# engine on CPU against a real libtorch.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The explorer's end-to-end test drives the real binary in tmux.
if ! command -v tmux >/dev/null 2>&1; then
  echo "test: installing tmux" >&2
  (apt-get update -qq && apt-get install -y -qq tmux) >/dev/null 2>&1 || {
    echo "test: could not install tmux (the tmux test will say so and skip)" >&2
  }
fi

eval "$(scripts/setup-torch.sh)"
# Everything, the capture engine's executable included, in one cargo
# invocation: both executables land in one target folder, as setup.sh's do.
cargo test --workspace
