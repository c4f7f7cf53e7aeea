//! `gen-trace`: writes a realistic PyTorch profiler (Kineto) Chrome trace of
//! any size, for benchmarking the trace readers without committing large
//! files.
//!
//! The trace imitates what `torch.profiler` writes for a CNN training loop on
//! one GPU (compare `tests/fixtures/traces/hta_nccl_a100_2024` and
//! `hta_trace_diff_a100_2022`): the Kineto pretty-printed layout, a top-level
//! object with `schemaVersion`, `deviceProperties` and `traceEvents`; per
//! step a `ProfilerStep#N` range and `step/<phase>` ranges on the main
//! thread, nested `cpu_op`s with `External id` / `Input Dims`, the backward
//! pass on an autograd thread, `[memory]` instant events; then, as Kineto
//! orders it, the GPU section: for each CUDA runtime call in time order the
//! kernel / memcpy / memset record with its `ac2g` flow end followed by the
//! `cuda_runtime` record with its flow start, both carrying the same
//! `args.correlation`; then `gpu_user_annotation` mirrors and `M` metadata.
//! Two streams: compute (7) and NCCL (24). Bytes per event and the event mix
//! are close to the real traces (about 280 B/event; cpu_op ≈ 35 %,
//! cuda_runtime ≈ 20 %, flows ≈ 30 %, kernels ≈ 8 %).
//!
//! Memory stays constant whatever the size: the generator is deterministic
//! for a seed, so it runs three times over the same steps — once writing the
//! CPU section (and counting the bytes of the rest to know where to stop),
//! once writing the GPU section, once the GPU annotations — holding one step
//! at a time.
//!
//! Beside the trace it writes `<out>.expect.json`: the ground truth of what
//! the analysis must find (steps, kernels per step, unique kernels, kernel
//! time, ops per phase, GPU busy time as the union of kernel intervals...),
//! computed from the generator's own events, never from the analysis.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde::Serialize;

#[derive(Parser, Debug)]
#[command(
    name = "gen-trace",
    about = "Write a realistic PyTorch/Kineto Chrome trace of a given size"
)]
struct Cli {
    /// Target size of the uncompressed JSON: 2MB, 100MB, 1GB, 1.5GiB, 500000 (bytes).
    /// Decimal units (MB = 10^6); KiB/MiB/GiB are binary. The result lands
    /// within one training step (~0.4 MB) above the target.
    #[arg(long, value_parser = parse_size)]
    size: u64,
    /// Output file (`.json`, or anything with --gzip).
    #[arg(long)]
    out: PathBuf,
    /// Gzip the output (the size still counts uncompressed bytes).
    #[arg(long)]
    gzip: bool,
    /// Seed: the same seed and size give the same file, byte for byte.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print nothing but errors.
    #[arg(long, short)]
    quiet: bool,
    /// A distributed job of N ranks: `--out` is a folder that receives
    /// `rank<r>.json[.gz]`, each with `distributedInfo` and the NCCL
    /// kernels' collective arguments, on one shared clock.
    #[arg(long, default_value_t = 1)]
    ranks: u32,
    /// The straggler: this rank runs one extra kernel per step …
    #[arg(long, requires = "slow_ms")]
    slow_rank: Option<u32>,
    /// … of this many ms …
    #[arg(long)]
    slow_ms: Option<f64>,
    /// … in this phase. In `optimizer` (the default) no communication runs,
    /// so the extra time is exactly the rank's extra compute; elsewhere it
    /// shifts kernels against the all-reduces.
    #[arg(long, default_value = "optimizer")]
    slow_phase: String,
    /// How the straggler is slow: `extra` runs the extra kernel above;
    /// `stretch` makes its last kernel before each step's first all-reduce
    /// run `--slow-ms` longer, and every rank's first all-reduce wait for
    /// its gradients, so the others wait that long inside it, as NCCL
    /// makes them (`--slow-phase` does not apply).
    #[arg(long, value_enum, default_value_t = SlowMode::Extra)]
    slow_mode: SlowMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
enum SlowMode {
    Extra,
    Stretch,
}

/// One rank of a generated job.
#[derive(Debug, Clone, Copy)]
struct JobSpec {
    rank: u32,
    world: u32,
    /// (phase index, ns) of the extra kernel per step.
    slow: Option<(usize, i64)>,
    /// `--slow-mode stretch`: ns the straggler's kernel is stretched by
    /// (set on every rank: all synchronise at the first all-reduce) and
    /// whether this rank is the straggler.
    stretch: Option<(i64, bool)>,
}

/// What a generated job holds, written to `<folder>.expect.json`.
#[derive(Debug, Serialize)]
struct JobTruth {
    ranks: u32,
    slow_rank: Option<u32>,
    slow_mode: SlowMode,
    slow_phase: String,
    slow_ms: Option<f64>,
    slow_kernel: &'static str,
    steps: u64,
    allreduces_per_step: u64,
    /// `stretch`: the other ranks' waits for the straggler at the
    /// all-reduces, summed, per step (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    wait_caused_ms_per_step: Option<f64>,
    /// `stretch`: the kernel stretched (the straggler's last before that
    /// all-reduce).
    #[serde(skip_serializing_if = "Option::is_none")]
    stretched_kernel: Option<String>,
}

/// The extra kernel a straggler runs.
const SLOW_KERNEL: &str = "straggler_spin_kernel(float*, int)";

fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("not a size: {s:?} (try 100MB, 1GB)"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        u => return Err(format!("unknown size unit {u:?} (use B, KB, MB, GB, KiB, MiB, GiB)")),
    };
    let v = n * mult;
    // NaN is refused too.
    if v.is_nan() || v < 1.0 {
        return Err(format!("size must be positive: {s:?}"));
    }
    Ok(v as u64)
}

// ---------------------------------------------------------------------------
// Randomness: SplitMix64, so the output depends on nothing but the seed.

struct Rng(u64);

impl Rng {
    /// The stream for `seed`. The model is drawn first, so a job's summary
    /// rebuilds the ranks' model from the seed alone.
    fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5EED_CAFE_F00D_D00D)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform integer in [lo, hi].
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    /// `base` ± `frac`, at least 1.
    fn jitter(&mut self, base: i64, frac: f64) -> i64 {
        ((base as f64) * (1.0 + frac * (2.0 * self.unit() - 1.0))).round().max(1.0) as i64
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() % xs.len() as u64) as usize]
    }
}

// ---------------------------------------------------------------------------
// The model: a YOLO-like CNN whose layers fix the kernels of every step.

const PHASES: [&str; 5] = ["dataload", "to_device", "forward", "backward", "optimizer"];
const COMPUTE_STREAM: i64 = 7;
const COMM_STREAM: i64 = 24;
const STREAMS: [i64; 2] = [COMPUTE_STREAM, COMM_STREAM];
const DEVICE: i64 = 0;
const SMS: f64 = 132.0;
const TOTAL_GLOBAL_MEM: u64 = 85_045_231_616;
const US: i64 = 1000; // ns per µs

/// One kernel as launched by one layer: name (shared), duration, launch shape.
#[derive(Debug, Clone)]
struct KSpec {
    name: u32,
    /// Elements all-reduced (NCCL kernels; 0 for compute).
    nelems: u64,
    dur: i64,
    grid: [u32; 3],
    block: [u32; 3],
    regs: u32,
    smem: u32,
}

#[derive(Debug, Clone)]
struct Layer {
    cin: u32,
    cout: u32,
    hw: u32,
    k: u32,
    stride: u32,
    conv_fwd: Vec<usize>,
    bn_fwd: usize,
    act_fwd: usize,
    act_bwd: usize,
    bn_bwd: usize,
    conv_bwd: Vec<usize>,
    /// Bytes of this layer's output activation.
    act_bytes: i64,
    /// DDP gradient bucket all-reduced after this layer's backward.
    allreduce: Option<usize>,
}

#[derive(Debug, Default)]
struct Model {
    /// Kernel names and whether they run on Tensor Cores (by construction).
    names: Vec<(String, bool)>,
    name_ids: HashMap<String, u32>,
    kernels: Vec<KSpec>,
    layers: Vec<Layer>,
    batch: u32,
    imgsz: u32,
    params: usize,
    cat: usize,
    loss: Vec<usize>,
    loss_bwd: Vec<usize>,
    fill: usize,
    adam: Vec<usize>,
    foreach_add: usize,
}

fn tile(rng: &mut Rng, opts: &[&'static str]) -> &'static str {
    rng.pick::<&str>(opts)
}

impl Model {
    fn name(&mut self, name: String, tc: bool) -> u32 {
        if let Some(&id) = self.name_ids.get(&name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.name_ids.insert(name.clone(), id);
        self.names.push((name, tc));
        id
    }

    fn kernel(
        &mut self,
        rng: &mut Rng,
        name: String,
        tc: bool,
        dur_us: f64,
        threads: u64,
        block: u32,
    ) -> usize {
        let name = self.name(name, tc);
        let blocks = (threads / block as u64).clamp(1, 2_000_000);
        let grid = if blocks > 65_535 {
            [65_535.min(blocks as u32), (blocks / 65_535 + 1) as u32, 1]
        } else {
            [blocks as u32, 1, 1]
        };
        let regs = if tc {
            *rng.pick(&[128, 154, 168, 232, 255])
        } else {
            *rng.pick(&[16, 20, 26, 32, 40, 64, 90])
        };
        let smem = if tc {
            *rng.pick(&[49_152, 73_728, 98_304, 147_456, 200_704])
        } else {
            *rng.pick(&[0, 0, 400, 4_096, 16_384])
        };
        self.kernels.push(KSpec {
            name,
            nelems: 0,
            dur: ((dur_us * 1000.0) as i64).max(1_200),
            grid,
            block: [block, 1, 1],
            regs,
            smem,
        });
        self.kernels.len() - 1
    }

    fn build(rng: &mut Rng) -> Model {
        let mut m = Model { batch: 16, imgsz: 320, ..Default::default() };
        let b = m.batch as f64;
        // (cin, cout, output hw, k, stride)
        let plan: [(u32, u32, u32, u32, u32); 24] = [
            (3, 32, 160, 3, 2),
            (32, 64, 80, 3, 2),
            (64, 64, 80, 1, 1),
            (64, 64, 80, 3, 1),
            (64, 128, 40, 3, 2),
            (128, 128, 40, 1, 1),
            (128, 128, 40, 3, 1),
            (128, 128, 40, 3, 1),
            (128, 256, 20, 3, 2),
            (256, 256, 20, 1, 1),
            (256, 256, 20, 3, 1),
            (256, 256, 20, 3, 1),
            (256, 512, 10, 3, 2),
            (512, 512, 10, 1, 1),
            (512, 512, 10, 3, 1),
            (512, 256, 10, 1, 1),
            (256, 256, 20, 3, 1),
            (256, 128, 20, 1, 1),
            (128, 128, 40, 3, 1),
            (128, 64, 40, 1, 1),
            (64, 64, 80, 3, 1),
            (64, 255, 80, 1, 1),
            (128, 255, 40, 1, 1),
            (256, 255, 20, 1, 1),
        ];
        let nccl = m.name(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
                .into(),
            false,
        );
        let _ = nccl;
        let mut bucket_bytes = 0i64;
        for (i, &(cin, cout, hw, k, stride)) in plan.iter().enumerate() {
            let px = (hw as f64) * (hw as f64);
            let flops = 2.0 * b * cout as f64 * px * cin as f64 * (k * k) as f64;
            let act_elems = (b * cout as f64 * px) as u64;
            let act_bytes = act_elems as i64 * 4;
            m.params += (cout * cin * k * k + 2 * cout) as usize;
            // Family: 1x1 convs go to cuBLAS-like cutlass GEMMs; 3x3 to cuDNN,
            // Tensor Core or not.
            let family = if k == 1 { 0 } else { *rng.pick(&[1, 1, 2, 3]) };
            let mut conv_fwd = Vec::new();
            let mut conv_bwd = Vec::new();
            let tc_rate = 45e6; // FLOP/µs on Tensor Cores (TF32/BF16, small convs)
            let simt_rate = 12e6;
            match family {
                0 => {
                    let t = tile(
                        rng,
                        &[
                            "64x64_16x6",
                            "128x64_16x6",
                            "64x128_32x3",
                            "256x64_16x4",
                            "128x128_32x3",
                        ],
                    );
                    let n = format!(
                        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_{t}_nn_align4>(cutlass_80_tensorop_s1688gemm_{t}_nn_align4::Params)"
                    );
                    conv_fwd.push(m.kernel(
                        rng,
                        n,
                        true,
                        flops / tc_rate + 4.0,
                        act_elems / 32,
                        128,
                    ));
                    let t2 = tile(rng, &["64x64_16x6", "128x64_16x6", "256x64_16x4"]);
                    let n = format!(
                        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_{t2}_nt_align4>(cutlass_80_tensorop_s1688gemm_{t2}_nt_align4::Params)"
                    );
                    if i > 0 {
                        conv_bwd.push(m.kernel(
                            rng,
                            n,
                            true,
                            flops / tc_rate + 4.0,
                            act_elems / 32,
                            128,
                        ));
                    }
                    let n = format!(
                        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_{t2}_tn_align4>(cutlass_80_tensorop_s1688gemm_{t2}_tn_align4::Params)"
                    );
                    conv_bwd.push(m.kernel(
                        rng,
                        n,
                        true,
                        flops / tc_rate + 6.0,
                        act_elems / 64,
                        128,
                    ));
                    let n = "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>(cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, float*, int*)".to_string();
                    conv_bwd.push(m.kernel(
                        rng,
                        n,
                        false,
                        3.0 + cout as f64 * cin as f64 / 4e4,
                        (cout * cin) as u64,
                        256,
                    ));
                }
                1 => {
                    let t = tile(
                        rng,
                        &[
                            "64x64_32x6",
                            "128x64_32x3",
                            "128x128_32x4",
                            "256x64_16x4",
                            "64x128_32x3",
                        ],
                    );
                    if rng.chance(0.5) {
                        let n = "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)".to_string();
                        conv_fwd.push(m.kernel(
                            rng,
                            n,
                            false,
                            2.0 + act_bytes as f64 / 1.2e6,
                            act_elems / 4,
                            256,
                        ));
                    }
                    let n = format!(
                        "void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_{t}_nhwc_align4>(cutlass_tensorop_s1688fprop_optimized_tf32_{t}_nhwc_align4::Params)"
                    );
                    conv_fwd.push(m.kernel(
                        rng,
                        n,
                        true,
                        flops / tc_rate + 5.0,
                        act_elems / 32,
                        128,
                    ));
                    if i > 0 {
                        let n = format!(
                            "void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_optimized_tf32_{t}_nhwc_unity_stride_align4>(cutlass_tensorop_s1688dgrad_optimized_tf32_{t}_nhwc_unity_stride_align4::Params)"
                        );
                        conv_bwd.push(m.kernel(
                            rng,
                            n,
                            true,
                            flops / tc_rate + 5.0,
                            act_elems / 32,
                            128,
                        ));
                    }
                    let tw = tile(rng, &["256x128_16x3", "128x128_32x3", "64x64_32x5"]);
                    let n = format!(
                        "void cutlass_cudnn_train::Kernel<cutlass_tensorop_s1688wgrad_optimized_tf32_{tw}_nhwc_align4>(cutlass_tensorop_s1688wgrad_optimized_tf32_{tw}_nhwc_align4::Params)"
                    );
                    conv_bwd.push(m.kernel(
                        rng,
                        n,
                        true,
                        flops / tc_rate * 1.3 + 6.0,
                        act_elems / 64,
                        256,
                    ));
                    let n = "void cudnn::ops::nhwcToNchwKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>(cudnn::ops::nhwc2nchw_params_t<float>, float const*, float*)".to_string();
                    conv_bwd.push(m.kernel(
                        rng,
                        n,
                        false,
                        2.0 + (cout * cin * 9) as f64 / 2e5,
                        (cout * cin * 9) as u64,
                        256,
                    ));
                }
                2 => {
                    let t = tile(rng, &["128x128x64", "128x256x64", "256x128x64", "64x128x64"]);
                    let n = format!(
                        "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize{t}_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn"
                    );
                    conv_fwd.push(m.kernel(
                        rng,
                        n,
                        true,
                        flops / tc_rate / 1.5 + 5.0,
                        act_elems / 64,
                        384,
                    ));
                    if i > 0 {
                        let n = format!(
                            "sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize{t}_warpgroupsize1x1x1_g1_execute_kernel__5x_cudnn"
                        );
                        conv_bwd.push(m.kernel(
                            rng,
                            n,
                            true,
                            flops / tc_rate / 1.5 + 5.0,
                            act_elems / 64,
                            384,
                        ));
                    }
                    let n = format!(
                        "sm90_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize{t}_warpgroupsize1x1x1_g1_execute_kernel__5x_cudnn"
                    );
                    conv_bwd.push(m.kernel(
                        rng,
                        n,
                        true,
                        flops / tc_rate / 1.2 + 6.0,
                        act_elems / 64,
                        384,
                    ));
                }
                _ => {
                    let a = *rng.pick(&[128u32, 512, 1024]);
                    let n = format!(
                        "void implicit_convolve_sgemm<float, float, {a}, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)"
                    );
                    conv_fwd.push(m.kernel(
                        rng,
                        n,
                        false,
                        flops / simt_rate + 5.0,
                        act_elems / 8,
                        a.min(256),
                    ));
                    if i > 0 {
                        let n = "void cudnn::detail::dgrad_engine<float, 128, 6, 7, 3, 3, 5, false>(int, int, int, float const*, int, float const*, int, float*, kernel_grad_params, unsigned long long, int, unsigned long long, int, float, int, int, int)".to_string();
                        conv_bwd.push(m.kernel(
                            rng,
                            n,
                            false,
                            flops / simt_rate + 5.0,
                            act_elems / 8,
                            128,
                        ));
                    }
                    let n = "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, int, float, int, int, int, int)".to_string();
                    conv_bwd.push(m.kernel(
                        rng,
                        n,
                        false,
                        flops / simt_rate * 1.4 + 6.0,
                        act_elems / 16,
                        512,
                    ));
                    let n = "void cudnn::cnn::reduce_wgrad_nchw_helper<float, float>(void*, void const*, float, int, int)".to_string();
                    conv_bwd.push(m.kernel(
                        rng,
                        n,
                        false,
                        2.0 + (cout * cin * 9) as f64 / 3e5,
                        (cout * cin * 9) as u64,
                        256,
                    ));
                }
            }
            let mem_us = act_bytes as f64 / 1.6e6; // 1.6 TB/s
            let bw = if cout >= 256 { 128 } else { 512 };
            let n = if hw >= 40 {
                format!(
                    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, {bw}, true, 1, true>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float const*, float, float, float*, float*, float*, float*, float, float)"
                )
            } else {
                "void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_fw_tr_1C11_args<float>)".to_string()
            };
            let bn_fwd = m.kernel(rng, n, false, 3.0 + mem_us * 2.2, act_elems / 4, 512);
            let n = if hw >= 40 {
                format!(
                    "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, {bw}, true, 1>(float, float, float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float*, float*, float const*, float const*, float)"
                )
            } else {
                "void cudnn::bn_bw_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_bw_1C11_args<float>)".to_string()
            };
            let bn_bwd = m.kernel(rng, n, false, 3.0 + mem_us * 3.5, act_elems / 4, 512);
            let silu = "at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(float)#1}";
            let n = format!(
                "void at::native::vectorized_elementwise_kernel<4, {silu}, at::detail::Array<char*, 2> >(int, {silu}, at::detail::Array<char*, 2>)"
            );
            let act_fwd = m.kernel(rng, n, false, 2.0 + mem_us * 2.0, act_elems / 4, 128);
            let silu_b = "at::native::(anonymous namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(float, float)#1}";
            let n = format!(
                "void at::native::vectorized_elementwise_kernel<4, {silu_b}, at::detail::Array<char*, 3> >(int, {silu_b}, at::detail::Array<char*, 3>)"
            );
            let act_bwd = m.kernel(rng, n, false, 2.0 + mem_us * 3.0, act_elems / 4, 128);
            // DDP buckets of ~25 MB, all-reduced as backward reaches them.
            bucket_bytes += (cout * cin * k * k) as i64 * 4;
            let allreduce = if bucket_bytes >= 2_000_000 || i == 0 {
                let n = m.names[0].0.clone();
                let id = m.kernel(rng, n, false, 40.0 + bucket_bytes as f64 / 8e3, 2 * 640, 640);
                m.kernels[id].nelems = bucket_bytes as u64 / 4;
                bucket_bytes = 0;
                Some(id)
            } else {
                None
            };
            m.layers.push(Layer {
                cin,
                cout,
                hw,
                k,
                stride,
                conv_fwd,
                bn_fwd,
                act_fwd,
                act_bwd,
                bn_bwd,
                conv_bwd,
                act_bytes,
                allreduce,
            });
        }
        let n = "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 4, 64, 64>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, unsigned int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)".to_string();
        m.cat = m.kernel(rng, n, false, 45.0, 16 * 255 * 8400, 512);
        let sub = "at::native::CUDAFunctor_add<float>";
        let n1 = format!(
            "void at::native::vectorized_elementwise_kernel<4, {sub}, at::detail::Array<char*, 3> >(int, {sub}, at::detail::Array<char*, 3>)"
        );
        let pw = "at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#1}";
        let n2 = format!(
            "void at::native::vectorized_elementwise_kernel<4, {pw}, at::detail::Array<char*, 2> >(int, {pw}, at::detail::Array<char*, 2>)"
        );
        let mean = "at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>";
        let n3 = format!("void at::native::reduce_kernel<512, 1, {mean} >({mean})");
        m.loss = vec![
            m.kernel(rng, n1.clone(), false, 30.0, 16 * 255 * 8400 / 4, 128),
            m.kernel(rng, n2, false, 28.0, 16 * 255 * 8400 / 4, 128),
            m.kernel(rng, n3, false, 22.0, 16 * 255 * 8400 / 16, 512),
        ];
        let fill = "at::native::FillFunctor<float>";
        let nf = format!(
            "void at::native::vectorized_elementwise_kernel<4, {fill}, at::detail::Array<char*, 1> >(int, {fill}, at::detail::Array<char*, 1>)"
        );
        m.fill = m.kernel(rng, nf, false, 1.6, 1, 128);
        let mul = "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >";
        let nm = format!(
            "void at::native::vectorized_elementwise_kernel<4, {mul}, at::detail::Array<char*, 3> >(int, {mul}, at::detail::Array<char*, 3>)"
        );
        m.loss_bwd = vec![
            m.kernel(rng, nm, false, 31.0, 16 * 255 * 8400 / 4, 128),
            m.kernel(rng, n1, false, 30.0, 16 * 255 * 8400 / 4, 128),
        ];
        let adam = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, float*, float*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, float*, float*)";
        let chunks = m.params.div_ceil(65_536 * 16).clamp(2, 6);
        m.adam = (0..chunks)
            .map(|_| m.kernel(rng, adam.to_string(), false, 55.0, 65_536 * 16, 512))
            .collect();
        let fa = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float)";
        m.foreach_add = m.kernel(rng, fa.to_string(), false, 4.0, 72 * 512, 512);
        m
    }
}

// ---------------------------------------------------------------------------
// Events of one chunk (the prelude, one step, the epilogue).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CpuKind {
    Op,
    Annotation,
    Memory,
}

#[derive(Debug)]
struct CpuEv {
    ts: i64,
    dur: i64,
    tid: i64,
    kind: CpuKind,
    name: String,
    ext: u64,
    /// Pre-rendered extra args (after `External id`, before `Ev Idx`).
    args: String,
}

#[derive(Debug)]
enum GpuEv {
    Runtime {
        ts: i64,
        dur: i64,
        tid: i64,
        name: &'static str,
        cbid: u32,
        ext: u64,
        corr: u64,
        launch: bool,
    },
    Kernel {
        ts: i64,
        dur: i64,
        stream: i64,
        k: usize,
        ext: u64,
        corr: u64,
    },
    Copy {
        ts: i64,
        dur: i64,
        stream: i64,
        name: &'static str,
        bytes: u64,
        ext: u64,
        corr: u64,
        memset: bool,
    },
}

#[derive(Debug)]
struct Ann {
    ts: i64,
    dur: i64,
    name: String,
}

// ---------------------------------------------------------------------------
// Ground truth, from the generator's own events.

#[derive(Debug, Default, Clone, Serialize)]
struct PhaseTruth {
    phase: String,
    kernels: u64,
    kernels_per_step: f64,
    ops: u64,
    ops_per_step: f64,
    unique_kernels: u64,
    kernel_ns: i64,
    memcpy_events: u64,
    memcpy_ns: i64,
    /// CPU wall time of the `step/<phase>` ranges, all steps.
    wall_ns: i64,
    #[serde(skip)]
    names: BTreeSet<u32>,
}

#[derive(Debug, Default, Serialize)]
struct Truth {
    /// `--slow-mode stretch` (a job's ranks, not written): the rank's
    /// all-reduces, its waits for the straggler, the kernel stretched.
    #[serde(skip)]
    arrivals: Vec<(i64, i64)>,
    #[serde(skip)]
    waited_ns: i64,
    #[serde(skip)]
    stretched: Option<String>,
    generator: &'static str,
    seed: u64,
    gzip: bool,
    /// Uncompressed bytes of the JSON document.
    bytes: u64,
    events: u64,
    events_by_kind: BTreeMap<String, u64>,
    device: i64,
    device_name: &'static str,
    total_global_mem: u64,
    streams: Vec<i64>,
    steps: u64,
    first_step: u64,
    /// Kernel events launched inside the steps.
    kernels: u64,
    kernels_per_step: f64,
    unique_kernels: u64,
    kernel_ns: i64,
    kernel_ms_per_step: f64,
    mean_kernel_us: f64,
    tensorcore_ns: i64,
    tensorcore_pct: f64,
    /// gpu_memcpy + gpu_memset inside the steps.
    memcpy_events: u64,
    memcpy_ns: i64,
    /// kernels + memcpy + memset inside the steps: all joined by correlation.
    gpu_events_in_steps: u64,
    gpu_events_outside_steps: u64,
    cpu_ops: u64,
    ops_per_step: f64,
    runtime_launches: u64,
    /// Sum of the `ProfilerStep#N` durations.
    step_wall_ns: i64,
    step_ms: f64,
    /// Union of kernel intervals on the device, inside the steps.
    gpu_busy_ns: i64,
    gpu_busy_ms_per_step: f64,
    gpu_util: f64,
    gpu_util_raw: f64,
    peak_reserved_bytes: i64,
    peak_allocated_bytes: i64,
    phases: Vec<PhaseTruth>,
    #[serde(skip)]
    names: BTreeSet<u32>,
}

impl Truth {
    fn new(seed: u64) -> Truth {
        let mut truth =
            Truth { generator: "libreyolo-bench gen-trace", seed, ..Default::default() };
        truth.phases = PHASES
            .iter()
            .map(|p| PhaseTruth { phase: p.to_string(), ..Default::default() })
            .collect();
        truth
    }

    /// The figures derived from the counts, once the trace is written.
    fn finish(&mut self) {
        let n = self.steps as f64;
        self.device = DEVICE;
        self.device_name = DEVICE_NAME;
        self.total_global_mem = TOTAL_GLOBAL_MEM;
        self.streams = STREAMS.to_vec();
        self.kernels_per_step = self.kernels as f64 / n;
        self.unique_kernels = self.names.len() as u64;
        self.kernel_ms_per_step = self.kernel_ns as f64 / 1e6 / n;
        self.mean_kernel_us =
            if self.kernels > 0 { self.kernel_ns as f64 / 1e3 / self.kernels as f64 } else { 0.0 };
        self.tensorcore_pct = 100.0 * self.tensorcore_ns as f64 / self.kernel_ns.max(1) as f64;
        self.ops_per_step = self.cpu_ops as f64 / n;
        self.step_ms = self.step_wall_ns as f64 / 1e6 / n;
        self.gpu_busy_ms_per_step = self.gpu_busy_ns as f64 / 1e6 / n;
        self.gpu_util = self.gpu_busy_ns as f64 / self.step_wall_ns as f64;
        self.gpu_util_raw = self.kernel_ns as f64 / self.step_wall_ns as f64;
        for p in &mut self.phases {
            p.kernels_per_step = p.kernels as f64 / n;
            p.ops_per_step = p.ops as f64 / n;
            p.unique_kernels = p.names.len() as u64;
        }
    }
}

// ---------------------------------------------------------------------------
// The generator.

struct Gen {
    rng: Rng,
    model: Model,
    pid: i64,
    main_tid: i64,
    bwd_tid: i64,
    tid: i64,
    /// CPU time on `tid`, ns.
    now: i64,
    corr: u64,
    ext: u64,
    cur_ext: u64,
    seq_nr: u64,
    stream_free: [i64; 2],
    alloc: i64,
    reserved: i64,
    addr: u64,
    step_no: u64,
    phase: Option<usize>,
    in_step: bool,
    start_ts: i64,
    cpu: Vec<CpuEv>,
    gpu: Vec<GpuEv>,
    ann: Vec<Ann>,
    /// This step's kernel intervals and, per phase, its GPU extent.
    spans: Vec<(i64, i64)>,
    phase_gpu: [Option<(i64, i64)>; 5],
    truth: Truth,
    job: Option<JobSpec>,
    /// The straggler's extra kernel (a model entry made without the RNG,
    /// so every rank draws the same numbers).
    slow_kernel: Option<usize>,
    /// `stretch`: ns to add to the next compute kernel launched.
    stretch_next: i64,
    /// `stretch`: whether this step's first all-reduce is still to come.
    first_allreduce: bool,
    /// `stretch`: each all-reduce so far (start, dur); on the others, the
    /// straggler's, to wait for.
    arrivals: Vec<(i64, i64)>,
    wait_for: Vec<(i64, i64)>,
    /// The next comm kernel lasts until this one (start, dur) ends.
    wait_until: Option<(i64, i64)>,
    /// `stretch`, on the others: their waits for it inside the steps, ns.
    waited_ns: i64,
    /// `stretch`, on the straggler: the kernel stretched.
    stretched: Option<usize>,
}

impl Gen {
    fn new(seed: u64, job: Option<JobSpec>) -> Gen {
        let mut rng = Rng::new(seed);
        let mut model = Model::build(&mut rng);
        let slow_kernel = job.and_then(|j| j.slow).map(|(_, ns)| {
            let name = model.name(SLOW_KERNEL.into(), false);
            model.kernels.push(KSpec {
                name,
                nelems: 0,
                dur: ns,
                grid: [132, 1, 1],
                block: [256, 1, 1],
                regs: 32,
                smem: 0,
            });
            model.kernels.len() - 1
        });
        let pid = rng.range(1_000_000, 3_999_999);
        let start = rng.range(40_000_000, 90_000_000) * 1_000_000 + rng.range(0, 999_999); // ns, like Kineto 2.x relative ts
        Gen {
            rng,
            model,
            pid,
            main_tid: pid,
            bwd_tid: pid + 9_503,
            tid: pid,
            now: start,
            corr: 1_000 + seed % 1000,
            ext: 0,
            cur_ext: 0,
            seq_nr: 0,
            stream_free: [0, 0],
            alloc: 1_300_000_000,
            reserved: 2_000_000_000,
            addr: 139_637_976_727_552,
            step_no: 10 + seed % 7,
            phase: None,
            in_step: false,
            start_ts: start,
            cpu: Vec::new(),
            gpu: Vec::new(),
            ann: Vec::new(),
            spans: Vec::new(),
            phase_gpu: [None; 5],
            truth: Truth::new(seed),
            job,
            slow_kernel,
            stretch_next: 0,
            first_allreduce: false,
            arrivals: Vec::new(),
            wait_for: Vec::new(),
            wait_until: None,
            waited_ns: 0,
            stretched: None,
        }
    }

    fn clear(&mut self) {
        self.cpu.clear();
        self.gpu.clear();
        self.ann.clear();
        self.spans.clear();
        self.phase_gpu = [None; 5];
    }

    /// Advances CPU time by a small jittered gap.
    fn tick(&mut self, ns: i64) -> i64 {
        self.now += self.rng.jitter(ns, 0.4);
        self.now
    }

    /// A CPU-side range: an op (`cpu_op`) or a `user_annotation`, with its
    /// children emitted by `body`. Children get later start times, so the
    /// parent starts strictly first, as Kineto sorts them.
    fn range(&mut self, kind: CpuKind, name: &str, args: String, body: impl FnOnce(&mut Gen)) {
        let start = self.tick(600);
        self.ext += 1;
        let ext = self.ext;
        let idx = self.cpu.len();
        self.cpu.push(CpuEv {
            ts: start,
            dur: 0,
            tid: self.tid,
            kind,
            name: name.to_string(),
            ext,
            args,
        });
        let outer = std::mem::replace(&mut self.cur_ext, ext);
        body(self);
        self.tick(if kind == CpuKind::Op { 1_500 } else { 400 });
        self.cur_ext = outer;
        self.cpu[idx].dur = self.now - start;
        if kind == CpuKind::Op && self.in_step {
            self.truth.cpu_ops += 1;
            if let Some(p) = self.phase {
                self.truth.phases[p].ops += 1;
            }
        }
    }

    fn op(&mut self, name: &str, args: String, body: impl FnOnce(&mut Gen)) {
        self.range(CpuKind::Op, name, args, body)
    }

    fn leaf(&mut self, name: &str, args: String) {
        self.range(CpuKind::Op, name, args, |g| {
            g.tick(1_800);
        })
    }

    fn annotation(&mut self, name: &str, body: impl FnOnce(&mut Gen)) {
        self.range(CpuKind::Annotation, name, String::new(), body)
    }

    /// A `step/<phase>` range; GPU work launched inside belongs to the phase.
    fn phase(&mut self, p: usize, body: impl FnOnce(&mut Gen)) {
        let name = format!("step/{}", PHASES[p]);
        let outer = self.phase.replace(p);
        let start_idx = self.cpu.len();
        let slow = self.slow_kernel.filter(|_| {
            self.in_step && self.job.and_then(|j| j.slow).is_some_and(|(sp, _)| sp == p)
        });
        // First in the phase: the optimizer's own work ends in a sync.
        self.annotation(&name, |g| {
            if let Some(k) = slow {
                g.launch_fixed(k);
            }
            body(g);
        });
        self.phase = outer;
        if self.in_step {
            self.truth.phases[p].wall_ns += self.cpu[start_idx].dur;
        }
    }

    /// A CUDA caching-allocator event (`[memory]`), inside the current op.
    fn memory(&mut self, bytes: i64) {
        self.alloc += bytes;
        if self.alloc > self.reserved {
            self.reserved = (self.alloc / (20 << 20) + 1) * (20 << 20);
        }
        let ts = self.tick(300);
        self.addr = self.addr.wrapping_add((bytes.unsigned_abs() + 511) & !511);
        let args = format!(
            "\"Total Reserved\": {}, \"Total Allocated\": {}, \"Bytes\": {}, \"Addr\": {}, \"Device Id\": {DEVICE}, \"Device Type\": 1",
            self.reserved, self.alloc, bytes, self.addr
        );
        self.cpu.push(CpuEv {
            ts,
            dur: 0,
            tid: self.tid,
            kind: CpuKind::Memory,
            name: "[memory]".into(),
            ext: 0,
            args,
        });
        if self.in_step {
            self.truth.peak_reserved_bytes = self.truth.peak_reserved_bytes.max(self.reserved);
            self.truth.peak_allocated_bytes = self.truth.peak_allocated_bytes.max(self.alloc);
        }
    }

    fn empty(&mut self, name: &str, dims: &str, bytes: i64) {
        let args = format!(
            "\"Input Dims\": [{dims}, [], [], [], [], []], \"Input type\": [\"ScalarList\", \"Scalar\", \"\", \"Device\", \"Scalar\", \"\"], "
        );
        self.op(name, args, |g| {
            g.tick(900);
            // Small allocations come from the allocator's cache silently
            // (as when `profile_memory` rounds them away); large ones show.
            if bytes.abs() >= 256 << 10 {
                g.memory(bytes);
            } else {
                g.alloc += bytes;
            }
        });
    }

    /// A CUDA runtime call that launches nothing (it still has a correlation).
    fn runtime(&mut self, name: &'static str, cbid: u32, dur: i64) {
        let ts = self.tick(500);
        let dur = self.rng.jitter(dur, 0.5);
        self.corr += 1;
        self.gpu.push(GpuEv::Runtime {
            ts,
            dur,
            tid: self.tid,
            name,
            cbid,
            ext: self.cur_ext,
            corr: self.corr,
            launch: false,
        });
        self.now = ts + dur;
    }

    fn gpu_extent(&mut self, start: i64, end: i64) {
        if let Some(p) = self.phase {
            let e = self.phase_gpu[p].get_or_insert((start, end));
            e.0 = e.0.min(start);
            e.1 = e.1.max(end);
        }
    }

    /// `cudaLaunchKernel` of kernel `k` on `stream`, and the kernel itself.
    fn launch(&mut self, k: usize, stream: i64) {
        if self.rng.chance(0.35) {
            self.runtime("cudaStreamIsCapturing", 317, 900);
        }
        if self.rng.chance(0.12) {
            self.runtime("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 251, 1_200);
            self.runtime("cudaFuncSetAttribute", 239, 1_000);
        }
        let ts = self.tick(700);
        let dur = self.rng.jitter(5_500, 0.5);
        let si = if stream == COMPUTE_STREAM { 0 } else { 1 };
        let start = (ts + self.rng.jitter(4_000, 0.5))
            .max(self.stream_free[si] + self.rng.range(1_000, 2_500));
        let mut kdur = self.rng.jitter(self.model.kernels[k].dur, 0.08);
        if si == 0 && self.stretch_next > 0 {
            kdur += std::mem::take(&mut self.stretch_next);
            self.stretched = Some(k);
        }
        // Waiting in a collective for a later rank: it ends when theirs does.
        if let Some((s, d)) =
            self.wait_until.take().filter(|(s, d)| si == 1 && s + d > start + kdur)
        {
            if self.in_step {
                self.waited_ns += (s - start).max(0);
            }
            kdur = s + d - start;
        }
        self.stream_free[si] = start + kdur;
        self.launched(k, stream, (ts, dur), (start, kdur));
    }

    /// A gradient all-reduce. Under `--slow-mode stretch` each waits for the
    /// compute stream (its gradients) on every rank; the
    /// straggler records when each of its all-reduces ran, and the others'
    /// kernel lasts until the straggler's ends (they wait in it, as NCCL
    /// makes them), which the end of backward passes on to their compute.
    fn launch_allreduce(&mut self, k: usize) {
        let Some((_, slow)) = self.job.and_then(|j| j.stretch) else {
            return self.launch(k, COMM_STREAM);
        };
        // Each waits for its gradients (`cudaStreamWaitEvent`).
        self.first_allreduce = false;
        self.stream_free[1] = self.stream_free[1].max(self.stream_free[0]);
        if !slow {
            self.wait_until = self.wait_for.get(self.arrivals.len()).copied();
        }
        self.launch(k, COMM_STREAM);
        // Every rank counts its all-reduces in `arrivals` (the others'
        // entries are their own, unused): the k-th matches the k-th.
        if let Some(GpuEv::Kernel { ts, dur, .. }) =
            self.gpu.iter().rev().find(|e| matches!(e, GpuEv::Kernel { .. }))
        {
            self.arrivals.push((*ts, *dur));
        }
    }

    /// The straggler's extra kernel: launched like any other but drawing
    /// nothing from the RNG, so the rest of its trace stays the same as the
    /// other ranks'. It starts after everything queued on both streams.
    fn launch_fixed(&mut self, k: usize) {
        self.now += 700;
        let (ts, dur) = (self.now, 5_500);
        let start = (ts + 4_000).max(self.stream_free[0].max(self.stream_free[1]) + 1_500);
        let kdur = self.model.kernels[k].dur;
        self.stream_free[0] = start + kdur;
        self.launched(k, COMPUTE_STREAM, (ts, dur), (start, kdur));
    }

    /// Kernel `k` launched at `launch` (ts, dur) and run at `run` (start,
    /// dur) on `stream`: its two events, and the ground truth it adds to.
    fn launched(
        &mut self,
        k: usize,
        stream: i64,
        (ts, dur): (i64, i64),
        (start, kdur): (i64, i64),
    ) {
        self.corr += 1;
        self.gpu.push(GpuEv::Kernel {
            ts: start,
            dur: kdur,
            stream,
            k,
            ext: self.cur_ext,
            corr: self.corr,
        });
        self.gpu.push(GpuEv::Runtime {
            ts,
            dur,
            tid: self.tid,
            name: "cudaLaunchKernel",
            cbid: 211,
            ext: self.cur_ext,
            corr: self.corr,
            launch: true,
        });
        self.now = ts + dur;
        self.spans.push((start, start + kdur));
        self.gpu_extent(start, start + kdur);
        let t = &mut self.truth;
        if self.in_step {
            let name = self.model.kernels[k].name;
            t.kernels += 1;
            t.kernel_ns += kdur;
            t.gpu_events_in_steps += 1;
            t.names.insert(name);
            if self.model.names[name as usize].1 {
                t.tensorcore_ns += kdur;
            }
            if let Some(p) = self.phase {
                let ph = &mut t.phases[p];
                ph.kernels += 1;
                ph.kernel_ns += kdur;
                ph.names.insert(name);
            }
        } else {
            t.gpu_events_outside_steps += 1;
        }
        t.runtime_launches += 1;
    }

    /// `cudaMemcpyAsync` / `cudaMemsetAsync` and the GPU copy it starts.
    fn copy(&mut self, name: &'static str, bytes: u64, gbps: f64, memset: bool, stream: i64) {
        let ts = self.tick(800);
        let dur = self.rng.jitter(if memset { 4_000 } else { 9_000 }, 0.4);
        self.corr += 1;
        let si = if stream == COMPUTE_STREAM { 0 } else { 1 };
        let start = (ts + self.rng.jitter(3_000, 0.5)).max(self.stream_free[si] + 1_000);
        let cdur = self.rng.jitter((bytes as f64 / gbps).max(1_100.0) as i64, 0.05);
        self.stream_free[si] = start + cdur;
        self.gpu.push(GpuEv::Copy {
            ts: start,
            dur: cdur,
            stream,
            name,
            bytes,
            ext: self.cur_ext,
            corr: self.corr,
            memset,
        });
        let (rname, cbid) = if memset { ("cudaMemsetAsync", 51) } else { ("cudaMemcpyAsync", 41) };
        self.gpu.push(GpuEv::Runtime {
            ts,
            dur,
            tid: self.tid,
            name: rname,
            cbid,
            ext: self.cur_ext,
            corr: self.corr,
            launch: true,
        });
        self.now = ts + dur;
        self.gpu_extent(start, start + cdur);
        let t = &mut self.truth;
        if self.in_step {
            t.memcpy_events += 1;
            t.memcpy_ns += cdur;
            t.gpu_events_in_steps += 1;
            if let Some(p) = self.phase {
                t.phases[p].memcpy_events += 1;
                t.phases[p].memcpy_ns += cdur;
            }
        } else {
            t.gpu_events_outside_steps += 1;
        }
        t.runtime_launches += 1;
    }

    fn seq_args(&mut self, dims: &str, types: &str) -> String {
        self.seq_nr += 1;
        format!(
            "\"Sequence number\": {}, \"Fwd thread id\": 0, \"Input Dims\": [{dims}], \"Input type\": [{types}], ",
            self.seq_nr
        )
    }

    // --- the training step -------------------------------------------------

    fn prelude(&mut self) {
        self.clear();
        // What the profiler records before the first step: a few tensor
        // factory calls and one fill kernel, outside every step.
        self.empty("aten::empty", "[1]", 512);
        self.op(
            "aten::zeros",
            "\"Input Dims\": [[], [], [], [], []], \"Input type\": [\"ScalarList\", \"Scalar\", \"\", \"Device\", \"Scalar\"], ".into(),
            |g| {
                g.empty("aten::empty", "[1]", 512);
                g.op("aten::zero_", "\"Input Dims\": [[1]], \"Input type\": [\"float\"], ".into(), |g| {
                    g.op("aten::fill_", "\"Input Dims\": [[1], []], \"Input type\": [\"float\", \"Scalar\"], ".into(), |g| {
                        let k = g.model.fill;
                        g.launch(k, COMPUTE_STREAM);
                    });
                });
            },
        );
        self.tick(40_000);
    }

    fn epilogue(&mut self) {
        self.clear();
        self.tick(30_000);
        self.op(
            "aten::zeros",
            "\"Input Dims\": [[], [], [], [], []], \"Input type\": [\"ScalarList\", \"Scalar\", \"\", \"Device\", \"Scalar\"], ".into(),
            |g| {
                g.empty("aten::empty", "[1]", 512);
                g.op("aten::fill_", "\"Input Dims\": [[1], []], \"Input type\": [\"float\", \"Scalar\"], ".into(), |g| {
                    let k = g.model.fill;
                    g.launch(k, COMPUTE_STREAM);
                });
            },
        );
        self.runtime("cudaDeviceSynchronize", 165, 30_000);
    }

    fn step(&mut self) {
        self.clear();
        self.first_allreduce = true;
        self.tick(3_000);
        let step_start_idx = self.cpu.len();
        let name = format!("ProfilerStep#{}", self.step_no);
        self.in_step = true;
        self.annotation(&name, |g| {
            g.phase(0, |g| g.dataload());
            g.phase(1, |g| g.copy_to_device());
            g.phase(2, |g| g.forward());
            g.phase(3, |g| g.backward());
            g.phase(4, |g| g.optimizer());
        });
        self.in_step = false;
        let (s, d) = (self.cpu[step_start_idx].ts, self.cpu[step_start_idx].dur);
        // GPU mirrors of the step and phase ranges (newer Kineto).
        self.ann.push(Ann { ts: s + 1_000, dur: d - 2_000, name: name.clone() });
        for (p, ext) in self.phase_gpu.iter().enumerate() {
            if let Some((a, b)) = ext {
                self.ann.push(Ann { ts: *a, dur: b - a, name: format!("step/{}", PHASES[p]) });
            }
        }
        // Ground truth for the step.
        let t = &mut self.truth;
        t.steps += 1;
        if t.steps == 1 {
            t.first_step = self.step_no;
        }
        t.step_wall_ns += d;
        self.spans.sort_unstable();
        let mut cur: Option<(i64, i64)> = None;
        for &(a, b) in &self.spans {
            assert!(a >= s && b <= s + d, "a kernel outside its step");
            match cur {
                Some((cs, ce)) if a <= ce => cur = Some((cs, ce.max(b))),
                Some((cs, ce)) => {
                    t.gpu_busy_ns += ce - cs;
                    cur = Some((a, b));
                }
                None => cur = Some((a, b)),
            }
        }
        if let Some((cs, ce)) = cur {
            t.gpu_busy_ns += ce - cs;
        }
        self.step_no += 1;
    }

    fn dataload(&mut self) {
        let wait = self.rng.range(300, 2_500) * US;
        self.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", |g| {
            g.now += wait;
        });
    }

    fn copy_to_device(&mut self) {
        let (b, s) = (self.model.batch, self.model.imgsz);
        let img_bytes = (b * 3 * s * s * 4) as u64;
        for (dims, bytes, name) in [
            (format!("[{b}, 3, {s}, {s}]"), img_bytes, "Memcpy HtoD (Pinned -> Device)"),
            ("[214, 6]".to_string(), 214 * 6 * 4, "Memcpy HtoD (Pinned -> Device)"),
        ] {
            let args = format!(
                "\"Input Dims\": [{dims}, [], [], [], [], []], \"Input type\": [\"float\", \"\", \"Scalar\", \"Scalar\", \"Scalar\", \"\"], "
            );
            self.op("aten::to", args.clone(), |g| {
                g.op("aten::_to_copy", args.clone(), |g| {
                    g.empty("aten::empty_strided", &format!("{dims}, []"), bytes as i64);
                    g.op(
                        "aten::copy_",
                        format!("\"Input Dims\": [{dims}, {dims}, []], \"Input type\": [\"float\", \"float\", \"Scalar\"], "),
                        |g| {
                            g.copy(name, bytes, 24.0, false, COMPUTE_STREAM);
                        },
                    );
                });
            });
        }
    }

    fn forward(&mut self) {
        let layers = self.model.layers.clone();
        let b = self.model.batch;
        let mut hw_in = self.model.imgsz;
        for l in &layers {
            let inp = format!("[{b}, {}, {hw_in}, {hw_in}]", l.cin);
            let w = format!("[{}, {}, {}, {}]", l.cout, l.cin, l.k, l.k);
            let out = format!("[{b}, {}, {}, {}]", l.cout, l.hw, l.hw);
            let pad = l.k / 2;
            let cargs = self.seq_args(
                &format!("{inp}, {w}, [], [{s}, {s}], [{pad}, {pad}], [1, 1], []", s = l.stride),
                "\"float\", \"float\", \"\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\"",
            );
            self.op("aten::conv2d", cargs, |g| {
                let a = format!("\"Input Dims\": [{inp}, {w}, [], [], [], [], [], [], []], \"Input type\": [\"float\", \"float\", \"\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\", \"ScalarList\", \"Scalar\"], ");
                g.op("aten::convolution", a.clone(), |g| {
                    g.op("aten::_convolution", a.clone(), |g| {
                        g.op("aten::cudnn_convolution", format!("\"Input Dims\": [{inp}, {w}, [], [], [], [], [], [], []], "), |g| {
                            g.empty("aten::empty", &out, l.act_bytes);
                            for &k in &l.conv_fwd {
                                g.launch(k, COMPUTE_STREAM);
                            }
                        });
                    });
                });
            });
            let bargs = self.seq_args(
                &format!("{out}, [{c}], [{c}], [{c}], [{c}], [], [], [], []", c = l.cout),
                "\"float\", \"float\", \"float\", \"float\", \"float\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\"",
            );
            self.op("aten::batch_norm", bargs, |g| {
                let a = format!(
                    "\"Input Dims\": [{out}, [{c}], [{c}], [{c}], [{c}], [], [], [], []], ",
                    c = l.cout
                );
                g.op("aten::_batch_norm_impl_index", a.clone(), |g| {
                    g.op("aten::cudnn_batch_norm", a.clone(), |g| {
                        g.op(
                            "aten::empty_like",
                            format!("\"Input Dims\": [{out}, [], [], [], [], []], "),
                            |g| {
                                g.empty("aten::empty_strided", &format!("{out}, []"), l.act_bytes);
                            },
                        );
                        g.empty("aten::empty", &format!("[{}]", l.cout), l.cout as i64 * 8);
                        g.empty("aten::empty", "[0]", 0);
                        g.launch(l.bn_fwd, COMPUTE_STREAM);
                    });
                });
            });
            let sargs = self.seq_args(&out, "\"float\"");
            self.op("aten::silu_", sargs, |g| g.launch(l.act_fwd, COMPUTE_STREAM));
            hw_in = l.hw;
        }
        // Head and loss.
        let pred = format!("[{b}, 255, 8400]");
        self.op("aten::cat", format!("\"Input Dims\": [[[{b}, 255, 80, 80], [{b}, 255, 40, 40], [{b}, 255, 20, 20]], []], \"Input type\": [\"TensorList\", \"Scalar\"], "), |g| {
            g.empty("aten::empty", &pred, (b * 255 * 8400 * 4) as i64);
            let k = g.model.cat;
            g.launch(k, COMPUTE_STREAM);
        });
        let loss = self.model.loss.clone();
        for (name, k) in ["aten::sub", "aten::pow", "aten::mean"].iter().zip(loss) {
            let a =
                self.seq_args(&format!("{pred}, {pred}, []"), "\"float\", \"float\", \"Scalar\"");
            self.op(name, a, |g| {
                g.empty("aten::empty", &pred, 0);
                g.launch(k, COMPUTE_STREAM);
            });
        }
        self.op(
            "aten::zeros",
            "\"Input Dims\": [[], [], [], [], []], \"Input type\": [\"ScalarList\", \"Scalar\", \"\", \"Device\", \"Scalar\"], ".into(),
            |g| {
                g.empty("aten::empty", "[3]", 512);
                g.op("aten::zero_", "\"Input Dims\": [[3]], \"Input type\": [\"float\"], ".into(), |g| {
                    g.copy("Memset (Device)", 12, 0.004, true, COMPUTE_STREAM);
                });
            },
        );
    }

    fn backward(&mut self) {
        let b = self.model.batch;
        // The loop thread seeds the gradient, then the autograd engine's
        // thread runs the graph while the loop thread waits.
        self.op("aten::ones_like", "\"Input Dims\": [[], [], [], [], [], []], ".into(), |g| {
            g.op("aten::empty_like", "\"Input Dims\": [[], [], [], [], [], []], ".into(), |g| {
                g.empty("aten::empty_strided", "[], []", 512)
            });
            g.op(
                "aten::fill_",
                "\"Input Dims\": [[], []], \"Input type\": [\"float\", \"Scalar\"], ".into(),
                |g| {
                    let k = g.model.fill;
                    g.launch(k, COMPUTE_STREAM);
                },
            );
        });
        let saved = self.now;
        self.tid = self.bwd_tid;
        self.tick(8_000);
        let loss_bwd = self.model.loss_bwd.clone();
        for (name, k) in ["MeanBackward0", "PowBackward0"].iter().zip(loss_bwd) {
            let full = format!("autograd::engine::evaluate_function: {name}");
            self.op(&full, String::new(), |g| {
                let a = g.seq_args("[]", "\"float\"");
                g.op(name, a, |g| {
                    g.op("aten::mul", format!("\"Input Dims\": [[{b}, 255, 8400], []], \"Input type\": [\"float\", \"Scalar\"], "), |g| {
                        g.empty("aten::empty", "[]", 0);
                        g.launch(k, COMPUTE_STREAM);
                    });
                });
            });
        }
        let layers = self.model.layers.clone();
        for l in layers.iter().rev() {
            let out = format!("[{b}, {}, {}, {}]", l.cout, l.hw, l.hw);
            self.op("autograd::engine::evaluate_function: SiluBackward0", String::new(), |g| {
                let a = g.seq_args(&out, "\"float\"");
                g.op("SiluBackward0", a, |g| {
                    g.op("aten::silu_backward", format!("\"Input Dims\": [{out}, {out}], \"Input type\": [\"float\", \"float\"], "), |g| {
                        g.empty("aten::empty", &out, l.act_bytes);
                        g.launch(l.act_bwd, COMPUTE_STREAM);
                    });
                });
            });
            self.op("autograd::engine::evaluate_function: CudnnBatchNormBackward0", String::new(), |g| {
                let a = g.seq_args(&out, "\"float\"");
                g.op("CudnnBatchNormBackward0", a, |g| {
                    g.op(
                        "aten::cudnn_batch_norm_backward",
                        format!("\"Input Dims\": [{out}, {out}, [{c}], [{c}], [{c}], [{c}], [{c}], [], []], ", c = l.cout),
                        |g| {
                            g.op("aten::empty_like", format!("\"Input Dims\": [{out}, [], [], [], [], []], "), |g| {
                                g.empty("aten::empty_strided", &format!("{out}, []"), l.act_bytes);
                            });
                            g.empty("aten::empty", &format!("[{}]", l.cout), l.cout as i64 * 8);
                            g.launch(l.bn_bwd, COMPUTE_STREAM);
                        },
                    );
                });
                g.memory(-l.act_bytes);
            });
            self.op("autograd::engine::evaluate_function: ConvolutionBackward0", String::new(), |g| {
                let a = g.seq_args(&out, "\"float\"");
                g.op("ConvolutionBackward0", a, |g| {
                    g.op(
                        "aten::convolution_backward",
                        format!("\"Input Dims\": [{out}, [], [{}, {}, {}, {}], [], [], [], [], [], [], [], []], ", l.cout, l.cin, l.k, l.k),
                        |g| {
                            g.empty(
                                "aten::empty",
                                &format!("[{}, {}, {}, {}]", l.cout, l.cin, l.k, l.k),
                                (l.cout * l.cin * l.k * l.k) as i64 * 4,
                            );
                            for (i, &k) in l.conv_bwd.iter().enumerate() {
                                // `stretch`: the straggler's last kernel before the step's first all-reduce.
                                if let Some((d, true)) = g.job.and_then(|j| j.stretch)
                                    && g.first_allreduce
                                    && l.allreduce.is_some()
                                    && i + 1 == l.conv_bwd.len()
                                {
                                    g.stretch_next = d;
                                }
                                g.launch(k, COMPUTE_STREAM);
                            }
                        },
                    );
                });
                g.memory(-2 * l.act_bytes);
            });
            for _ in 0..3 {
                self.op(
                    "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                    String::new(),
                    |g| {
                        g.op("torch::autograd::AccumulateGrad", String::new(), |g| {
                            g.op(
                                "aten::detach",
                                format!(
                                    "\"Input Dims\": [[{}]], \"Input type\": [\"float\"], ",
                                    l.cout
                                ),
                                |g| g.leaf("detach", String::new()),
                            );
                        });
                    },
                );
            }
            if let Some(k) = l.allreduce {
                self.annotation("nccl:all_reduce", |g| {
                    g.op(
                        "record_param_comms",
                        "\"Input Dims\": [[[1]], [], [], [], [], [], [], [], [], [], [], []], "
                            .into(),
                        |g| {
                            g.op("c10d::allreduce_", String::new(), |g| {
                                g.runtime("cudaEventRecord", 135, 1_500);
                                g.runtime("cudaStreamWaitEvent", 147, 1_200);
                                g.launch_allreduce(k);
                                g.runtime("cudaEventRecord", 135, 1_500);
                            });
                        },
                    );
                });
            }
        }
        let bwd_end = self.now;
        self.tid = self.main_tid;
        self.now = saved.max(bwd_end) + self.rng.range(5, 20) * US;
        // The compute stream waits for the last gradient all-reduce.
        self.op("aten::record_stream", String::new(), |g| {
            g.runtime("cudaStreamWaitEvent", 147, 1_500);
            g.stream_free[0] = g.stream_free[0].max(g.stream_free[1]);
        });
    }

    fn optimizer(&mut self) {
        self.annotation("Optimizer.zero_grad#AdamW.zero_grad", |g| {
            g.tick(60_000);
        });
        let adam = self.model.adam.clone();
        self.annotation("Optimizer.step#AdamW.step", |g| {
            g.op("aten::_foreach_add_", "\"Input Dims\": [[[], [], []], []], \"Input type\": [\"TensorList\", \"Scalar\"], ".into(), |g| {
                let k = g.model.foreach_add;
                g.launch(k, COMPUTE_STREAM);
            });
            g.op(
                "aten::_fused_adamw_",
                "\"Input Dims\": [[[], [], []], [[], [], []], [[], [], []], [[], [], []], [], [], [], [], [], [], [], [], [], []], ".into(),
                |g| {
                    for &k in &adam {
                        g.launch(k, COMPUTE_STREAM);
                    }
                },
            );
        });
        // loss.item(): a device-to-host copy and a sync; the GPU drains.
        self.op("aten::item", "\"Input Dims\": [[]], \"Input type\": [\"float\"], ".into(), |g| {
            g.op(
                "aten::_local_scalar_dense",
                "\"Input Dims\": [[]], \"Input type\": [\"float\"], ".into(),
                |g| {
                    g.copy("Memcpy DtoH (Device -> Pinned)", 4, 0.002, false, COMPUTE_STREAM);
                    let wait = (g.stream_free[0].max(g.stream_free[1]) - g.now).max(0) + 2_000;
                    g.runtime("cudaStreamSynchronize", 131, wait);
                    g.now = g.now.max(g.stream_free[0].max(g.stream_free[1]) + 1_000);
                },
            );
        });
    }
}

// ---------------------------------------------------------------------------
// Rendering, in the Kineto layout.

fn put_us(out: &mut Vec<u8>, ns: i64) {
    let (us, frac) = (ns.div_euclid(1000), ns.rem_euclid(1000));
    let _ = write!(out, "{us}");
    if frac != 0 {
        let d =
            [b'0' + (frac / 100) as u8, b'0' + (frac / 10 % 10) as u8, b'0' + (frac % 10) as u8];
        let n = if d[2] != b'0' {
            3
        } else if d[1] != b'0' {
            2
        } else {
            1
        };
        out.push(b'.');
        out.extend_from_slice(&d[..n]);
    }
}

#[derive(Default)]
struct Renderer {
    /// The CPU events' `Ev Idx`, counted across chunks.
    ev_idx: u64,
}

impl Renderer {
    /// Renders one chunk's CPU section; `each` receives every event.
    fn cpu(&mut self, g: &mut Gen, mut each: impl FnMut(&[u8]), buf: &mut Vec<u8>) {
        g.cpu.sort_by_key(|e| (e.ts, std::cmp::Reverse(e.dur)));
        for e in &g.cpu {
            buf.clear();
            match e.kind {
                CpuKind::Op | CpuKind::Annotation => {
                    let cat = if e.kind == CpuKind::Op { "cpu_op" } else { "user_annotation" };
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {},\n    \"ts\": ",
                        e.name, g.pid, e.tid
                    );
                    put_us(buf, e.ts);
                    buf.extend_from_slice(b", \"dur\": ");
                    put_us(buf, e.dur);
                    let _ = write!(
                        buf,
                        ",\n    \"args\": {{\n      \"External id\": {},\"Record function id\": 0, {}\"Ev Idx\": {}\n    }}\n  }}",
                        e.ext, e.args, self.ev_idx
                    );
                }
                CpuKind::Memory => {
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\",\n    \"pid\": {}, \"tid\": {},\n    \"ts\": ",
                        g.pid, e.tid
                    );
                    put_us(buf, e.ts);
                    let _ = write!(
                        buf,
                        ",\n    \"args\": {{\n      {}, \"Ev Idx\": {}\n    }}\n  }}",
                        e.args, self.ev_idx
                    );
                }
            }
            self.ev_idx += 1;
            each(buf);
        }
    }

    fn gpu(&mut self, g: &Gen, mut each: impl FnMut(&[u8]), buf: &mut Vec<u8>) {
        for e in &g.gpu {
            match *e {
                GpuEv::Runtime { ts, dur, tid, name, cbid, ext, corr, launch } => {
                    buf.clear();
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{name}\", \"pid\": {}, \"tid\": {tid},\n    \"ts\": ",
                        g.pid
                    );
                    put_us(buf, ts);
                    buf.extend_from_slice(b", \"dur\": ");
                    put_us(buf, dur);
                    let _ = write!(
                        buf,
                        ",\n    \"args\": {{\n      \"External id\": {ext},      \"cbid\": {cbid}, \"correlation\": {corr}\n    }}\n  }}"
                    );
                    each(buf);
                    buf.clear();
                    let ph = if launch { "s" } else { "f" };
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"{ph}\", \"id\": {corr}, \"pid\": {}, \"tid\": {tid}, \"ts\": ",
                        g.pid
                    );
                    put_us(buf, ts);
                    let bp = if launch { "" } else { ", \"bp\": \"e\"" };
                    let _ = write!(buf, ",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"{bp}\n  }}");
                    each(buf);
                }
                GpuEv::Kernel { ts, dur, stream, k, ext, corr } => {
                    let ks = &g.model.kernels[k];
                    let name = &g.model.names[ks.name as usize].0;
                    buf.clear();
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{name}\", \"pid\": {DEVICE}, \"tid\": {stream},\n    \"ts\": "
                    );
                    put_us(buf, ts);
                    buf.extend_from_slice(b", \"dur\": ");
                    put_us(buf, dur);
                    let blocks = (ks.grid[0] as u64 * ks.grid[1] as u64 * ks.grid[2] as u64) as f64;
                    let bps = blocks / SMS;
                    let wps = bps * (ks.block[0] as f64 / 32.0);
                    let occ = (wps / 64.0 * 100.0).min(100.0) as u32;
                    // What PyTorch ≥ 2.3 records on NCCL kernels.
                    let coll = match g.job {
                        Some(j) if ks.nelems > 0 => format!(
                            ",      \"Collective name\": \"allreduce\", \"In msg nelems\": {n}, \"Out msg nelems\": {n}, \"Group size\": {}, \"dtype\": \"Float\", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\"",
                            j.world,
                            n = ks.nelems
                        ),
                        _ => String::new(),
                    };
                    let _ = write!(
                        buf,
                        ",\n    \"args\": {{\n      \"External id\": {ext},      \"queued\": 0, \"device\": {DEVICE}, \"context\": 1,      \"stream\": {stream}, \"correlation\": {corr},      \"registers per thread\": {},      \"shared memory\": {},      \"blocks per SM\": {:.6},      \"warps per SM\": {:.6},      \"grid\": [{}, {}, {}],      \"block\": [{}, {}, {}],      \"est. achieved occupancy %\": {occ}{coll}\n    }}\n  }}",
                        ks.regs,
                        ks.smem,
                        bps,
                        wps,
                        ks.grid[0],
                        ks.grid[1],
                        ks.grid[2],
                        ks.block[0],
                        ks.block[1],
                        ks.block[2]
                    );
                    each(buf);
                    flow_end(buf, corr, stream, ts);
                    each(buf);
                }
                GpuEv::Copy { ts, dur, stream, name, bytes, ext, corr, memset } => {
                    buf.clear();
                    let cat = if memset { "gpu_memset" } else { "gpu_memcpy" };
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{name}\", \"pid\": {DEVICE}, \"tid\": {stream},\n    \"ts\": "
                    );
                    put_us(buf, ts);
                    buf.extend_from_slice(b", \"dur\": ");
                    put_us(buf, dur);
                    let bw = bytes as f64 / dur as f64;
                    let _ = write!(
                        buf,
                        ",\n    \"args\": {{\n      \"External id\": {ext},      \"device\": {DEVICE}, \"context\": 1,      \"stream\": {stream}, \"correlation\": {corr},      \"bytes\": {bytes}, \"memory bandwidth (GB/s)\": {bw}\n    }}\n  }}"
                    );
                    each(buf);
                    flow_end(buf, corr, stream, ts);
                    each(buf);
                }
            }
        }
    }

    fn annotations(&mut self, g: &Gen, mut each: impl FnMut(&[u8]), buf: &mut Vec<u8>) {
        for a in &g.ann {
            buf.clear();
            let _ = write!(
                buf,
                "  {{\n    \"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"{}\", \"pid\": {DEVICE}, \"tid\": {COMPUTE_STREAM},\n    \"ts\": ",
                a.name
            );
            put_us(buf, a.ts);
            buf.extend_from_slice(b", \"dur\": ");
            put_us(buf, a.dur);
            let _ = write!(buf, ",\n    \"args\": {{\n      \"External id\": 0\n    }}\n  }}");
            each(buf);
        }
    }
}

fn flow_end(buf: &mut Vec<u8>, corr: u64, stream: i64, ts: i64) {
    buf.clear();
    let _ = write!(
        buf,
        "  {{\n    \"ph\": \"f\", \"id\": {corr}, \"pid\": {DEVICE}, \"tid\": {stream}, \"ts\": "
    );
    put_us(buf, ts);
    let _ = write!(buf, ",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }}");
}

/// The output: counts uncompressed bytes and events, writes the separators.
struct Out {
    w: Box<dyn Write>,
    bytes: u64,
    events: u64,
    by_kind: BTreeMap<String, u64>,
}

impl Out {
    fn new(w: Box<dyn Write>) -> Out {
        Out { w, bytes: 0, events: 0, by_kind: BTreeMap::new() }
    }
    fn raw(&mut self, b: &[u8]) -> Result<()> {
        self.w.write_all(b)?;
        self.bytes += b.len() as u64;
        Ok(())
    }
    fn event(&mut self, b: &[u8]) -> Result<()> {
        if self.events > 0 {
            self.raw(b",\n")?;
        }
        self.events += 1;
        *self.by_kind.entry(kind_of(b)).or_insert(0) += 1;
        self.raw(b)
    }
}

/// "X/cpu_op", "s/ac2g", "M", ... from a rendered event (for the summary).
fn kind_of(b: &[u8]) -> String {
    let s = std::str::from_utf8(&b[..b.len().min(120)]).unwrap_or("");
    let field = |key: &str| -> Option<&str> {
        let i = s.find(key)? + key.len();
        let rest = &s[i..];
        let j = rest.find('"')?;
        Some(&rest[..j])
    };
    match (field("\"ph\": \""), field("\"cat\": \"")) {
        (Some(ph), Some(cat)) => format!("{ph}/{cat}"),
        (Some(ph), None) => ph.to_string(),
        _ => "?".into(),
    }
}

/// Size of an event as written, separator included.
fn sized(total: &mut u64) -> impl FnMut(&[u8]) + '_ {
    move |b| *total += b.len() as u64 + 2
}

fn header(pid_name: &str, job: Option<JobSpec>) -> String {
    let dist = job.map_or(String::new(), |j| {
        format!(
            "  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}}},\n",
            j.rank, j.world
        )
    });
    format!(
        "\n{{\n  \"schemaVersion\": 1,\n{dist}  \"deviceProperties\": [\n    {{\n      \"id\": 0, \"name\": \"{pid_name}\", \"totalGlobalMem\": {TOTAL_GLOBAL_MEM},\n      \"computeMajor\": 9, \"computeMinor\": 0,\n      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n      \"regsPerBlock\": 65536, \"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, \"numSms\": 132\n    , \"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": 232448, \"sharedMemPerMultiprocessor\": 233472\n    }}\n  ],\n  \"cupti_version\": 24,\n  \"cuda_runtime_version\": 12040,\n  \"cuda_driver_version\": 12040,\n  \"traceEvents\": [\n"
    )
}

const DEVICE_NAME: &str = "NVIDIA H100 80GB HBM3";

fn metadata(g: &Gen, end_ts: i64) -> Vec<String> {
    let mut out = Vec::new();
    let mut m = |name: &str, pid: String, tid: String, args: String| {
        let mut b = Vec::new();
        let _ = write!(b, "  {{\n    \"name\": \"{name}\", \"ph\": \"M\", \"ts\": ");
        put_us(&mut b, g.start_ts);
        let _ = write!(
            b,
            ", \"pid\": {pid}, \"tid\": {tid},\n    \"args\": {{\n      {args}\n    }}\n  }}"
        );
        out.push(String::from_utf8(b).unwrap_or_default());
    };
    m("process_name", g.pid.to_string(), "0".into(), "\"name\": \"python3.11\"".into());
    m("process_labels", g.pid.to_string(), "0".into(), "\"labels\": \"CPU\"".into());
    m("process_sort_index", g.pid.to_string(), "0".into(), format!("\"sort_index\": {}", g.pid));
    m("process_name", DEVICE.to_string(), "0".into(), "\"name\": \"python3.11\"".into());
    m("process_labels", DEVICE.to_string(), "0".into(), format!("\"labels\": \"GPU {DEVICE}\""));
    m(
        "process_sort_index",
        DEVICE.to_string(),
        "0".into(),
        format!("\"sort_index\": {}", 5_000_000 + DEVICE),
    );
    for s in STREAMS {
        m("thread_name", DEVICE.to_string(), s.to_string(), format!("\"name\": \"stream {s} \""));
        m("thread_sort_index", DEVICE.to_string(), s.to_string(), format!("\"sort_index\": {s}"));
    }
    for (tid, what) in [(g.main_tid, "pt_main_thread"), (g.bwd_tid, "pt_autograd_0")] {
        m(
            "thread_name",
            g.pid.to_string(),
            tid.to_string(),
            format!("\"name\": \"thread {tid} ({what})\""),
        );
        m(
            "thread_sort_index",
            g.pid.to_string(),
            tid.to_string(),
            format!("\"sort_index\": {tid}"),
        );
    }
    let mut b = Vec::new();
    let _ = write!(b, "  {{\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
    put_us(&mut b, g.start_ts);
    b.extend_from_slice(b", \"dur\": ");
    put_us(&mut b, end_ts - g.start_ts);
    let _ = write!(
        b,
        ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {{\n      \"Op count\": 0\n    }}\n  }}"
    );
    out.push(String::from_utf8(b).unwrap_or_default());
    let mut b = Vec::new();
    let _ = write!(
        b,
        "  {{\n    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": "
    );
    put_us(&mut b, g.start_ts);
    b.extend_from_slice(b"\n  }");
    out.push(String::from_utf8(b).unwrap_or_default());
    let mut b = Vec::new();
    let _ = write!(
        b,
        "  {{\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": "
    );
    put_us(&mut b, end_ts);
    b.extend_from_slice(b"\n  }");
    out.push(String::from_utf8(b).unwrap_or_default());
    out
}

const TRAILER: &str = "\n  ],\n  \"traceName\": \"/tmp/libreyolo_gen_trace.json\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1700000000000000000\n}\n";

// ---------------------------------------------------------------------------

/// `steps`: exactly this many steps (the ranks of a job), else as many as `--size` takes.
/// `wait_for`: under `--slow-mode stretch`, the straggler's all-reduces
/// (start, dur), which the other ranks wait for.
fn generate(
    cli: &Cli,
    path: &Path,
    job: Option<JobSpec>,
    steps_wanted: Option<u64>,
    wait_for: &[(i64, i64)],
) -> Result<Truth> {
    let new_gen = || {
        let mut g = Gen::new(cli.seed, job);
        g.wait_for = wait_for.to_vec();
        g
    };
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let buffered = BufWriter::with_capacity(1 << 20, file);
    let w: Box<dyn Write> = if cli.gzip {
        Box::new(GzEncoder::new(buffered, Compression::default()))
    } else {
        Box::new(buffered)
    };
    let mut out = Out::new(w);
    let mut buf = Vec::with_capacity(4096);
    let mut errors: Option<anyhow::Error> = None;
    macro_rules! emit {
        ($out:expr, $errors:expr) => {
            |b: &[u8]| {
                if $errors.is_none() {
                    if let Err(e) = $out.event(b) {
                        $errors = Some(e);
                    }
                }
            }
        };
    }

    // Pass 1: the CPU section; count the bytes of the rest to know when to stop.
    out.raw(header(DEVICE_NAME, job).as_bytes())?;
    let mut g = new_gen();
    let mut r = Renderer::default();
    let mut rest_bytes: u64 = 0;
    let meta_bytes: u64 = metadata(&g, g.start_ts).iter().map(|s| s.len() as u64 + 2).sum::<u64>()
        + TRAILER.len() as u64;
    g.prelude();
    r.cpu(&mut g, emit!(out, errors), &mut buf);
    r.gpu(&g, sized(&mut rest_bytes), &mut buf);
    let mut steps = 0u64;
    loop {
        g.step();
        steps += 1;
        r.cpu(&mut g, emit!(out, errors), &mut buf);
        r.gpu(&g, sized(&mut rest_bytes), &mut buf);
        r.annotations(&g, sized(&mut rest_bytes), &mut buf);
        if let Some(e) = errors.take() {
            return Err(e);
        }
        let enough = match steps_wanted {
            Some(n) => steps >= n,
            None => steps >= 2 && out.bytes + rest_bytes + meta_bytes + 8_000 >= cli.size,
        };
        if enough {
            break;
        }
    }
    g.epilogue();
    r.cpu(&mut g, emit!(out, errors), &mut buf);
    let end_ts = g.now.max(g.stream_free[0]).max(g.stream_free[1]) + 5_000;
    let mut truth = std::mem::take(&mut g.truth);
    truth.arrivals = std::mem::take(&mut g.arrivals);
    truth.waited_ns = g.waited_ns;
    truth.stretched =
        g.stretched.map(|k| g.model.names[g.model.kernels[k].name as usize].0.clone());
    let model_names: Vec<bool> = g.model.names.iter().map(|(_, tc)| *tc).collect();
    drop(g);

    // Pass 2: the GPU section (runtime calls, kernels, copies, flows).
    let mut g = new_gen();
    g.prelude();
    r.gpu(&g, emit!(out, errors), &mut buf);
    for _ in 0..steps {
        g.step();
        r.gpu(&g, emit!(out, errors), &mut buf);
        if let Some(e) = errors.take() {
            return Err(e);
        }
    }
    g.epilogue();
    r.gpu(&g, emit!(out, errors), &mut buf);

    // Pass 3: GPU-side annotations, then metadata.
    let mut g = new_gen();
    g.prelude();
    for _ in 0..steps {
        g.step();
        r.annotations(&g, emit!(out, errors), &mut buf);
        if let Some(e) = errors.take() {
            return Err(e);
        }
    }
    for m in metadata(&g, end_ts) {
        out.event(m.as_bytes())?;
    }
    out.raw(TRAILER.as_bytes())?;
    if let Some(e) = errors.take() {
        return Err(e);
    }
    out.w.flush()?;
    drop(out.w);

    // Ground truth.
    truth.gzip = cli.gzip;
    truth.bytes = out.bytes;
    truth.events = out.events;
    truth.events_by_kind = out.by_kind;
    truth.finish();
    debug_assert!(truth.names.iter().all(|&i| (i as usize) < model_names.len()));
    Ok(truth)
}

fn sidecar_path(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".expect.json");
    PathBuf::from(s)
}

/// `--ranks N`: one trace per rank into the `--out` folder, and what the
/// job holds in `<folder>.expect.json`.
fn generate_job(cli: &Cli) -> Result<()> {
    let phase = PHASES
        .iter()
        .position(|p| *p == cli.slow_phase)
        .with_context(|| format!("--slow-phase: one of {}", PHASES.join(", ")))?;
    if let Some(r) = cli.slow_rank
        && r >= cli.ranks
    {
        anyhow::bail!("--slow-rank {r}: the job has ranks 0..{}", cli.ranks - 1);
    }
    std::fs::create_dir_all(&cli.out)
        .with_context(|| format!("cannot create {}", cli.out.display()))?;
    let stretch = (cli.slow_mode == SlowMode::Stretch)
        .then(|| (cli.slow_ms.unwrap_or(0.0) * 1e6).round() as i64);
    let mut steps = None;
    // `extra`: the straggler last, the others deciding the step count from
    // --size. `stretch`: the straggler first, the others waiting for it.
    let mut order: Vec<u32> = (0..cli.ranks).filter(|r| Some(*r) != cli.slow_rank).collect();
    match (stretch, cli.slow_rank) {
        (Some(_), Some(r)) => order.insert(0, r),
        (_, r) => order.extend(r),
    }
    let (mut arrivals, mut waited_ns, mut stretched) = (Vec::new(), 0i64, None);
    for rank in order {
        let is_slow = cli.slow_rank == Some(rank);
        let slow = (is_slow && stretch.is_none())
            .then(|| (phase, (cli.slow_ms.unwrap_or(0.0) * 1e6).round() as i64));
        let spec = JobSpec { rank, world: cli.ranks, slow, stretch: stretch.map(|d| (d, is_slow)) };
        let name = format!("rank{rank}.json{}", if cli.gzip { ".gz" } else { "" });
        let t = generate(cli, &cli.out.join(&name), Some(spec), steps, &arrivals)?;
        steps = Some(t.steps);
        if is_slow {
            arrivals = t.arrivals;
            stretched = t.stretched;
        } else {
            waited_ns += t.waited_ns;
        }
        if !cli.quiet {
            eprintln!(
                "gen-trace: wrote {} ({} bytes uncompressed, {} steps)",
                cli.out.join(&name).display(),
                t.bytes,
                t.steps
            );
        }
    }
    let model = Model::build(&mut Rng::new(cli.seed));
    let n_steps = steps.unwrap_or(0);
    let truth = JobTruth {
        ranks: cli.ranks,
        slow_rank: cli.slow_rank,
        slow_mode: cli.slow_mode,
        slow_phase: cli.slow_phase.clone(),
        slow_ms: cli.slow_ms,
        slow_kernel: SLOW_KERNEL,
        steps: n_steps,
        allreduces_per_step: model.layers.iter().filter(|l| l.allreduce.is_some()).count() as u64,
        wait_caused_ms_per_step: stretch.map(|_| waited_ns as f64 / 1e6 / n_steps.max(1) as f64),
        stretched_kernel: stretched,
    };
    let side = sidecar_path(&cli.out);
    std::fs::write(&side, serde_json::to_string_pretty(&truth)? + "\n")
        .with_context(|| format!("cannot write {}", side.display()))?;
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    if cli.ranks > 1 {
        if let Err(e) = generate_job(&cli) {
            eprintln!("gen-trace: {e:#}");
            std::process::exit(1);
        }
        return;
    }
    let t0 = Instant::now();
    match generate(&cli, &cli.out, None, None, &[]) {
        Ok(truth) => {
            let side = sidecar_path(&cli.out);
            let json = serde_json::to_string_pretty(&truth).expect("truth serializes");
            if let Err(e) = std::fs::write(&side, json + "\n") {
                eprintln!("gen-trace: cannot write {}: {e}", side.display());
                std::process::exit(1);
            }
            if !cli.quiet {
                let secs = t0.elapsed().as_secs_f64();
                eprintln!(
                    "gen-trace: wrote {} ({} bytes uncompressed, {} events, {:.1} MB/s{})",
                    cli.out.display(),
                    truth.bytes,
                    truth.events,
                    truth.bytes as f64 / 1e6 / secs,
                    if cli.gzip { ", gzip" } else { "" }
                );
                eprintln!(
                    "gen-trace: steps {} (ProfilerStep#{}..#{}), kernels {} ({:.2}/step, {} unique), total kernel time {:.3} ms ({:.3} ms/step), GPU busy {:.3} ms/step, util {:.3}, ops {:.2}/step",
                    truth.steps,
                    truth.first_step,
                    truth.first_step + truth.steps.saturating_sub(1),
                    truth.kernels,
                    truth.kernels_per_step,
                    truth.unique_kernels,
                    truth.kernel_ns as f64 / 1e6,
                    truth.kernel_ms_per_step,
                    truth.gpu_busy_ms_per_step,
                    truth.gpu_util,
                    truth.ops_per_step
                );
                eprintln!("gen-trace: ground truth in {}", side.display());
            }
        }
        Err(e) => {
            eprintln!("gen-trace: {e:#}");
            let _ = std::fs::remove_file(&cli.out);
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("100MB").unwrap(), 100_000_000);
        assert_eq!(parse_size("1GB").unwrap(), 1_000_000_000);
        assert_eq!(parse_size("2MiB").unwrap(), 2 << 20);
        assert_eq!(parse_size("1.5kb").unwrap(), 1500);
        assert_eq!(parse_size("123").unwrap(), 123);
        assert!(parse_size("12XB").is_err());
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn microseconds_keep_nanoseconds() {
        for (ns, s) in [
            (1_500, "1.5"),
            (2_000, "2"),
            (4_458_676_983_543_183, "4458676983543.183"),
            (10, "0.01"),
            (1_001, "1.001"),
        ] {
            let mut b = Vec::new();
            put_us(&mut b, ns);
            assert_eq!(String::from_utf8(b).unwrap(), s);
        }
    }
}
