#!/usr/bin/env bash
# Install the libtorch the capture engine links against, once, into a venv
# outside the checkout, and print the environment to build with.
#
#   scripts/setup-torch.sh            # install (or reuse) and print the env
#   eval "$(scripts/setup-torch.sh --env)"   # set the env in this shell
#
# The torch version lives in capture/TORCH_VERSION (one place). tch 0.24 binds
# exactly this libtorch. The PyPI wheel (+cu130, C++11 ABI) also runs on
# machines without a GPU: CUDA simply reports unavailable.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
torch_version="$(tr -d '[:space:]' < "$here/capture/TORCH_VERSION")"
venv="${LIBREYOLO_VENV:-$HOME/.cache/libreyolo/torch-venv}"
python="${PYTHON:-python3}"

env_only=0
[[ "${1:-}" == "--env" ]] && env_only=1

log() { echo "setup-torch: $*" >&2; }

installed_version() {
  [[ -x "$venv/bin/python" ]] || return 1
  "$venv/bin/python" - <<'PY' 2>/dev/null
import importlib.metadata as m
print(m.version("torch"))
PY
}

current="$(installed_version || true)"
if [[ "${current%%+*}" == "$torch_version" ]]; then
  log "torch $current already in $venv (reused)"
else
  if (( env_only )); then
    log "torch $torch_version is not installed in $venv; run scripts/setup-torch.sh first"
    exit 1
  fi
  if [[ ! -x "$venv/bin/python" ]]; then
    log "creating venv $venv"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
  fi
  log "installing torch==$torch_version into $venv (about 4.6 GB with its dependencies)"
  start=$(date +%s)
  "$venv/bin/python" -m pip install --disable-pip-version-check -q "torch==$torch_version"
  log "installed in $(( $(date +%s) - start )) s"
  current="$(installed_version)"
  [[ "${current%%+*}" == "$torch_version" ]] || { log "expected torch $torch_version, found '$current'"; exit 1; }
fi

cat <<ENV
export LIBTORCH_USE_PYTORCH=1
export VIRTUAL_ENV="$venv"
export PATH="$venv/bin:\$PATH"
ENV
