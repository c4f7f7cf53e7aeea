//! The model: a YOLO-like CNN training on one H100, whose layers fix the
//! kernels of every step (names, durations, launch shapes, the DDP
//! buckets all-reduced), and the device and streams it runs on. Built
//! once from the seed, so every step launches the same kernels, as a real
//! training loop does.

use std::collections::HashMap;

use crate::rng::Rng;

pub(super) const PHASES: [&str; 5] = ["dataload", "to_device", "forward", "backward", "optimizer"];
pub(super) const COMPUTE_STREAM: i64 = 7;
pub(super) const COMM_STREAM: i64 = 24;
pub(super) const STREAMS: [i64; 2] = [COMPUTE_STREAM, COMM_STREAM];
pub(super) const DEVICE: i64 = 0;
pub(super) const DEVICE_NAME: &str = "NVIDIA H100 80GB HBM3";
pub(super) const SMS: f64 = 132.0;
pub(super) const TOTAL_GLOBAL_MEM: u64 = 85_045_231_616;

/// One kernel as launched by one layer: name (shared), duration, launch shape.
#[derive(Debug, Clone)]
pub(super) struct KSpec {
    pub(super) name: u32,
    /// Elements all-reduced (NCCL kernels; 0 for compute).
    pub(super) nelems: u64,
    pub(super) dur: i64,
    pub(super) grid: [u32; 3],
    pub(super) block: [u32; 3],
    pub(super) regs: u32,
    pub(super) smem: u32,
}

#[derive(Debug, Clone)]
pub(super) struct Layer {
    pub(super) cin: u32,
    pub(super) cout: u32,
    pub(super) hw: u32,
    pub(super) k: u32,
    pub(super) stride: u32,
    pub(super) conv_fwd: Vec<usize>,
    pub(super) bn_fwd: usize,
    pub(super) act_fwd: usize,
    pub(super) act_bwd: usize,
    pub(super) bn_bwd: usize,
    pub(super) conv_bwd: Vec<usize>,
    /// Bytes of this layer's output activation.
    pub(super) act_bytes: i64,
    /// DDP gradient bucket all-reduced after this layer's backward.
    pub(super) allreduce: Option<usize>,
}

#[derive(Debug, Default)]
pub(super) struct Model {
    /// Kernel names and whether they run on Tensor Cores (by construction).
    pub(super) names: Vec<(String, bool)>,
    name_ids: HashMap<String, u32>,
    pub(super) kernels: Vec<KSpec>,
    pub(super) layers: Vec<Layer>,
    pub(super) batch: u32,
    pub(super) imgsz: u32,
    params: usize,
    pub(super) cat: usize,
    pub(super) loss: Vec<usize>,
    pub(super) loss_bwd: Vec<usize>,
    pub(super) fill: usize,
    pub(super) adam: Vec<usize>,
    pub(super) foreach_add: usize,
}

fn tile(rng: &mut Rng, opts: &[&'static str]) -> &'static str {
    rng.pick::<&str>(opts)
}

impl Model {
    pub(super) fn name(&mut self, name: String, tc: bool) -> u32 {
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

    pub(super) fn build(rng: &mut Rng) -> Model {
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
