#!/usr/bin/env bash
# The same conv-BN-SiLU training step in a Rust process (tch) and in
# Python, on the same libtorch, at the same time on one core each (cores
# swapped every round), with glibc's default heap and with the heap our
# training capture keeps. Prints each side's median forward and backward,
# its minor page faults and system time.
#
#   capture/bench/step_vs_python.sh [rounds]
#
# Needs the torch venv (scripts/setup-torch.sh) and two cores.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds="${1:-2}"
eval "$("$here/scripts/setup-torch.sh" --env)"
py="$VIRTUAL_ENV/bin/python"
cargo build --quiet --release -p libreyolo-capture --example conv_bn_silu_step
rust="${CARGO_TARGET_DIR:-$here/target}/release/examples/conv_bn_silu_step"
timed() { /usr/bin/time -f "    %C: %R faults, %S s system" "$@"; }
uptime
for r in $(seq 1 "$rounds"); do
  for keep in "" --keep-heap; do
    core=$(( r % 2 ))
    timed taskset -c "$core" "$rust" $keep &
    timed taskset -c $(( 1 - core )) "$py" -W ignore "$here/capture/bench/conv_bn_silu_step.py" &
    wait
  done
done
uptime
