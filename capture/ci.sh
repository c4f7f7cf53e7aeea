#!/usr/bin/env bash
# CI for the capture engine: set up torch (reused when present), then build
# both executables and test libreyolo-capture through the `libreyolo` binary.
#
#   capture/ci.sh            # tests that need only torch; the LibreYOLO 1.6
#                            # parity tests are #[ignore]d here: scripts/test.sh
#                            # --parity sets up their venv and runs them
#                            # (see capture/parity/README.md)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
eval "$(scripts/setup-torch.sh)"
start=$(date +%s)
cargo build -p libreyolo -p libreyolo-capture
cargo test -p libreyolo-capture
bin="${CARGO_TARGET_DIR:-target}/debug/libreyolo"
project="$(mktemp -d)"
trap 'rm -rf "$project"' EXIT
"$bin" profile infer --device cpu --imgsz 320 --warmup 2 --runs 6 --project "$project"
"$bin" profile summary "$project/infer/profile.json" > /dev/null
"$bin" profile run synthetic:16 --device cpu --batch 2 --imgsz 160 --warmup 1 --steps 4 --workers 2 --project "$project"
"$bin" profile phases "$project/train/profile.json" > /dev/null
echo "capture CI: $(( $(date +%s) - start )) s after torch set-up"
