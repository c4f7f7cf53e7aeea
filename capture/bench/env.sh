# Sourced by the bench scripts: where things are and a scratch folder.
#   here    the checkout          bin     our binary ($BIN)
#   py      Python with libreyolo==1.6.0 ($LIBREYOLO_PARITY_PYTHON)
#   theirs  its `libreyolo` CLI   threads torch threads for both ($THREADS)
#   work    a temporary folder, removed on exit
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
py="${LIBREYOLO_PARITY_PYTHON:-/tmp/libreyolo-bench-venv/bin/python}"
theirs="$(dirname "$py")/libreyolo"
bin="${BIN:-${CARGO_TARGET_DIR:-$here/target}/release/libreyolo}"
threads="${THREADS:-$(nproc)}"
work="$(mktemp -d)"
# KEEP=1 keeps the scratch folder (its path is printed) to read the runs.
if [[ -n "${KEEP:-}" ]]; then echo "scratch: $work" >&2; else trap 'rm -rf "$work"' EXIT; fi
export OMP_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads"
