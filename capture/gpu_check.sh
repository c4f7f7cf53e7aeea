#!/usr/bin/env bash
# The device checks of inference and training capture, as one script for a machine with a GPU
# and torch 2.11 installed: `infer --device 0` without and with --half, both
# --amp-dtype values, --batch 8, --fuse (compared with the unfused) and
# --memory; `run synthetic --device 0` with AMP, without, and with
# --batch -1; then the readers on each result, with the checks that matter
# (kernels recorded per phase, Tensor Core share, peak VRAM, readers agree,
# no memory-pressure verdict at the chosen batch).
#
#   BIN=path/to/libreyolo capture/gpu_check.sh [outdir]
#   ONLY="run_auto fp32" capture/gpu_check.sh        # only the checks named
#
# `libreyolo` hands infer/run to `libreyolo-capture` beside it: carry both
# (scripts/setup.sh builds them without debug info; together they fit the
# device run's 64 MiB carry limit). The capture's rpath points at the build
# machine's venv; here libtorch is found through LD_LIBRARY_PATH from this
# machine's python.
set -euo pipefail
bin="${BIN:-target/release/libreyolo}"
out="${1:-${OUT:-/tmp/gpu_check}}"
mkdir -p "$out"
torch_lib="$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
export LD_LIBRARY_PATH="$torch_lib:${LD_LIBRARY_PATH:-}"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true

# Whether check $1 is to run (all of them unless ONLY names some).
wanted() { [[ -z "${ONLY:-}" || " $ONLY " == *" $1 "* ]]; }

run() { # name args...
  local name="$1"; shift
  wanted "$name" || return 0
  echo "== $name: $*"
  "$bin" profile infer --device 0 --imgsz 640 --warmup 10 --runs 40 --project "$out/$name" "$@" 2> "$out/$name.stderr" | tee "$out/$name.txt"
  read_back "$name" "$out/$name/infer"
}

train() { # name args...
  local name="$1"; shift
  wanted "$name" || return 0
  echo "== $name: $*"
  "$bin" profile run synthetic --device 0 --imgsz 640 --workers 8 --warmup 5 --steps 20 --project "$out/$name" "$@" \
    2> "$out/$name.stderr" | tee "$out/$name.txt"
  tail -5 "$out/$name.stderr"
  read_back "$name" "$out/$name/train"
  "$bin" profile get "$out/$name/train/profile.json" bound
}

read_back() { # name dir
  local name="$1" dir="$2"
  local p="$dir/profile.json"
  "$bin" profile summary "$p" | tee "$out/$name.summary.txt"
  python3 -c 'import json, sys; print("conditions:", json.dumps((json.load(open(sys.argv[1])).get("host") or {}).get("conditions")))' "$p"
  "$bin" profile kernels "$p" --top 10
  "$bin" profile kernels "$p" --tensorcore --top 5
  "$bin" profile phases "$p"
  for f in peak_vram_mb tensorcore_pct gpu_util kernels_per_step launches_per_step; do
    printf '%s=%s\n' "$f" "$("$bin" profile get "$p" "$f")"
  done | tee "$out/$name.metrics.txt"
  # The trace read directly must give the same kernel count as the profile.
  a="$("$bin" profile get "$p" kernels_per_step)"
  b="$("$bin" profile get "$dir/profile_trace.json" kernels_per_step)"
  [[ "$a" == "$b" ]] && echo "readers agree: kernels_per_step $a" || echo "MISMATCH: profile $a vs trace $b"
}

run fp32
run half_fp16 --half --amp-dtype float16
run half_bf16 --half --amp-dtype bfloat16
run fp32_b8 --batch 8
run fp32_fused --fuse
run fp32_memory --memory
if wanted compare_fuse; then # reads fp32, fp32_fused and fp32_memory's outputs
  echo "== compare_fuse: fp32 -> fp32_fused"
  "$bin" profile compare "$out/fp32/infer/profile.json" "$out/fp32_fused/infer/profile.json" | tee "$out/compare_fuse.txt"
  "$bin" profile memory "$out/fp32_memory/infer/profile_trace.json" | tee "$out/fp32_memory.memory.txt"
fi
train run_amp --batch 16
train run_fp32 --batch 16 --no-amp
train run_auto --batch -1
echo "outputs in $out"
