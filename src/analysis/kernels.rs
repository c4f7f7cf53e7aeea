//! Kernel names → category, Tensor Core flag and a short readable label.
//! Both tables live here and nowhere else (docs/analysis.md §7). Names are demangled
//! first (ROCm traces carry Itanium-mangled names such as
//! `_ZN7ck_tile6kentry…`); the raw name is kept by the caller.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use crate::profile::Category;

/// Category patterns, first match wins, matched on the lower-cased,
/// demangled name.
///
/// - Communication first: NCCL/RCCL kernels mention "reduce", "copy" and
///   data types that would otherwise pull them elsewhere. `all_reduce` is
///   anchored so that `small_reduce` stays a reduction. Expert-parallel
///   dispatch/combine counts too: DeepEP under every namespace it ships in
///   (`deep_ep::`, `primus_turbo::deep_ep::`, DeepSeek's `dpsk::ep::`),
///   MoRI's `EpDispatch…`/`EpCombine…`, TRT-LLM's `moeA2A…`.
/// - Triton Inductor says what a kernel is in its prefix (`triton_poi_`
///   pointwise, `triton_red_`/`triton_per_` reductions), whatever op names
///   follow it, so the prefix decides before the op names can.
/// - Attention before norm and gemm: FlashAttention names carry "cutlass"
///   and "softmax" in their template arguments.
/// - Softmax before norm: its kernels are reductions, but eager
///   attention is told by them (`facts::SOFTMAX_KERNEL`); after attention,
///   whose fused kernels name "softmax" in their templates.
/// - Explicit layout transposes (cuDNN's nchwToNhwc, MIOpen's
///   batched_transpose) and embedding lookups before norm and gemm/conv,
///   norm before gemm/conv (cuDNN batchnorm kernels say "cudnn"), and
///   gemm/conv before the generic copies (cutlass epilogues mention "copy").
///   CUTLASS 3.x `device_kernel<…gemm…>` and DeepGEMM decide before norm:
///   their template arguments name epilogues and reductions.
///   `fbgemm` (FBGEMM-GPU's namespace) is not a GEMM.
/// - `\bcopy` keeps "copy" from matching `bfloat16_copy_kernel` inside
///   elementwise templates, as the reference did; `conv(?:[^e]|$)` keeps
///   `convert` kernels out of convolutions.
const CATEGORY_PATTERNS: &[(Category, &str)] = &[
    (
        Category::Communication,
        r"nccl|rccl|msccl|multimem_|allreduce|allgather|alltoall|(?:^|[^a-z])all_(?:reduce|gather|to_all)|reduce_?scatter|cross_device_reduce|deep_ep::|dpsk::ep::|^ep(?:dispatch|combine)|moea2a",
    ),
    (Category::ReductionNorm, r"^triton_(?:red|per)_"),
    (Category::Elementwise, r"^triton_poi_"),
    (
        Category::Attention,
        r"flash_fwd|flash_bwd|flash_fprop|flash_bprop|flash::|flash_attn|flashattn|fmha|attn_fwd|attn_bwd|attention|_sdpa_|sageattn|(?:^|_)sage_(?:fwd|bwd)|qk_int\d*_sv_|mha_fwd|mha_bwd|batchprefill|batchdecode",
    ),
    // Names whose other words would pull them elsewhere: rotary embeddings
    // are pointwise, and so is FBGEMM's embedding backward fused with its
    // optimizer (`split_embedding_backward_codegen_<optimizer>_…_kernel_*`:
    // each touched row's gradient applied by the optimizer's update, as
    // `multi_tensor_apply` optimizers are; its `dense` backward, a
    // scatter-add, and its `find_long_segments` helper are not);
    // embedding lookups, scatter-adds, KV-cache writes and
    // MoE's finalize scatter are data movement; cuDNN's FFT and split-K
    // helpers and im2col/col2im (MIOpen's `Im2d2Col`) are parts of a
    // convolution.
    (
        Category::Elementwise,
        r"rotary_emb|split_embedding_backward_codegen_\w*(?:adagrad|sgd|adam|lamb)\w*_kernel_",
    ),
    (
        Category::LayoutCopy,
        r"nchwtonhwc|nhwctonchw|batched_transpose|embedding|scatter_gather|indexfunclargeindex|reshape_and_cache|kv_?cache|matmul_scatter",
    ),
    (
        Category::GemmConv,
        r"fft2d_|reduce_wgrad|reducesplitk|im2col|col2im|im\dd2col|col2im\dd|cutlass(?:::|13)device_kernel.*gemm|deep_gemm::|dpsk::(?:grouped_)?gemm",
    ),
    (Category::Softmax, r"softmax"),
    (
        Category::ReductionNorm,
        r"bn_fw|bn_bw|batchnorm|batch_norm|layer_norm|layernorm|group_norm|groupnorm|instance_norm|rms_?norm|rowwisemoments|fusedparams|internalgradients|welford|\breduce|variance|gammabeta|max_pool|avg_pool|average_pool|pooling|classnllcriterion|devicescan|devicereduce|reducebykey|scan_impl",
    ),
    (
        Category::GemmConv,
        r"(?:^|[^b])gemm|gemv|conv(?:[^e]|$)|implicit|cutlass|cudnn|cublas|wgrad|dgrad|winograd|nvjet|xmma|gmma|^cijk_|matmul|triton_tem_|^bmm_|splitkreduce|\bdot_kernel|_xdl|mfma|marlin",
    ),
    (
        Category::LayoutCopy,
        r"memcpy|memset|\bcopy|catarray|concat|contiguous|gather|scatter|\bpermute|\btranspose|index_?select|indexing_backward|index_put|upsample|recat_|to_dense",
    ),
    (
        Category::Elementwise,
        r"elementwise|vectorized|pointwise|activation|silu|relu|gelu|sigmoid|tanh|unary|binary|clamp|fill|arange|dropout|multi_tensor_apply|subtensorop|swiglu|quant|fp8_?row|scalematrix",
    ),
];

/// Tensor / Matrix Core kernels: one regex per family, each with a real
/// kernel name that it recognises (checked by the tests below; the names
/// come from public traces and profiler reports, see
/// tests/fixtures/README.md). Matched on the lower-cased, demangled name.
pub const TENSOR_CORE_TABLE: &[(&str, &str)] = &[
    // cuBLAS / cutlass MMA shapes: Volta h884/s884, Turing h1688, Ampere
    // tf32 s1688, s16816, wmma s161616, int8 i8816/i16832.
    (
        r"[hsi](?:884|1688|16816|161616|8816|16832)(?:gemm|fprop|dgrad|wgrad)",
        "volta_h884gemm_64x64_nt",
    ),
    (
        r"tensorop",
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)",
    ),
    (r"wgmma", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16"),
    (
        r"wmma",
        "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
    ),
    // cuDNN's Ampere xmma convolutions name their MMA tile (tf32: 16x8x8).
    (
        r"_tensor\d+x\d+x\d+",
        "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel_cudnn",
    ),
    // TF32 exists only on Tensor Cores.
    (
        r"tf32",
        "void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688dgrad_optimized_tf32_64x128_32x3_nhwc_align4>(cutlass_tensorop_s1688dgrad_optimized_tf32_64x128_32x3_nhwc_align4::Params)",
    ),
    // Hopper/Blackwell cuBLAS.
    (
        r"sm90_xmma|sm100_xmma",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    ),
    (r"nvjet", "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT"),
    // TRT-LLM gen batched GEMMs (block-scaled fp8/fp4 on sm100).
    (
        r"^bmm_.*_sm1\d\d",
        "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_Ab32_Bb32_Cb32_t128x8x512_s3_et128x8_m128x8x32_c1x1x1_rM_TN_transOut_schPd2x1x2x3_biasFp32M_bN_tma_ldgstsSf_rgTma_clmp_swiGlu_dynB_sm100f",
    ),
    // Triton MoE matmul (tl.dot on Hopper/Blackwell).
    (r"_matmul_ogs_", "_matmul_ogs_NNT_bf16xbf16xmxfp4_32x256x256x1_swiglu"),
    // CUTLASS 3.x GEMMs (`cutlass::device_kernel<…GemmUniversal…>`, also
    // Itanium-mangled when a report cut them short) exist only for sm90+
    // and issue wgmma / tcgen05; so do their CuTe MMA atoms (Hopper GMMA,
    // Blackwell UMMA) and warp-specialized kernel schedules.
    (
        r"cutlass(?:::|13)device_kernel.*gemm",
        "void cutlass::device_kernel<enable_sm120_family<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::Mainl…",
    ),
    (
        r"gmma|umma::|tmaumma",
        "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<long, long, long>>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90ArrayTmaGmmaWarpSpecialized<(int)12, ...",
    ),
    (
        r"warpspecialized",
        "cutlass3x_sm90_tensorop_s64x256x16gemm_f16_f16_f32_void_f16_128x256x64_2x1x1_0_tnn_align8_warpspecialized_cooperative_epi_tma",
    ),
    // DeepGEMM (`deep_gemm::`, `dpsk::gemm::` in DeepSeek's own traces):
    // wgmma / tcgen05 GEMMs only.
    (
        r"deep_gemm::\w*gemm|dpsk::(?:grouped_)?gemm",
        "void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 160u, 128u, 0u, 64u, 9u, 4u, 128u, 128u, 1u, true, (deep_gemm::GemmType)1>(__nv_bfloat16*, float*, int*, unsigned int, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st)",
    ),
    // Marlin (vLLM's quantised-weight GEMMs) dequantises into mma.sync.
    (
        r"marlin",
        "void marlin_moe_wna16::Marlin<1125899906909960l, 562949953487106l, 1125899906909960l, 2814749767106568l, 128, 4, 8, 4, false, 4, 2, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, float const*, int4 const*, float const*, int4 const*, int const*, int const*, int const*, int const*, float const*, int, bool, int, int, int, int, int*, bool, bool, bool)",
    ),
    // SageAttention (INT8 QK, FP8/FP16 PV) and FlashInfer's prefill
    // kernels are mma.sync / wgmma attention; FlashInfer decode is not.
    (r"qk_int\d*_sv_", "void qk_int_sv_f8_attn_kernel<128u, 64u, 32u, 64u, 128u, (DataType)1>"),
    (
        r"batchprefill|singleprefill",
        "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, (unsigned int)128, (unsigned int)2, (unsigned int)2, (unsigned int)8, (unsigned int)8, (unsigned int)4, (unsigned int)1, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, flashinfer::DefaultAttention<(bool)0, (bool)0, (bool)0, (bool)0>>, PagedParams>(T2)",
    ),
    // FlashAttention 2/3/4, cuDNN's flash SDPA and fmha (xformers/PyTorch
    // mem-efficient, TRT-LLM, CK tile).
    (
        r"flash_fwd|flash_bwd|flash_fprop|flash_bprop|flash::|fmha",
        "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, false, true, false, false>(pytorch_flash::Flash_fwd_params)",
    ),
    // Triton's fused attention (tl.dot → MFMA / MMA), aiter's SageAttention.
    (r"^_?attn_fwd|^_?attn_bwd", "attn_fwd"),
    (r"^_?sage_(?:fwd|bwd)", "sage_fwd"),
    (r"unified_attention", "kernel_unified_attention_2d"),
    // AMD CDNA: Tensile/hipBLASLt matrix-instruction tiles, MIOpen xdlops
    // (gtcx), CK xdl, raw MFMA.
    // Tensile names the MFMA shape with its block count (`_MI32x32x8x1_`).
    (
        r"_mi\d+x\d+x\d+(?:x\d+)?_",
        "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1",
    ),
    (
        r"gtcx",
        "igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt32x256x32_wt16x64x4_ws1x1_wr1x2_ta1x4x1x1_1x8x1x32_tb1x4x8x1_1x8x1x32_gkgs",
    ),
    (r"_xdl", "gemm_xdl_preshuffle"),
    (r"mfma", "paged_attention_ll4mi_QKV_mfma16_kernel"),
];

/// Families that imply Tensor Cores only in the categories listed: what
/// the naming scheme says about the math, not which library wrote it.
pub const TENSOR_CORE_IN_CATEGORY: &[(&str, &[Category], &str)] = &[
    // FP8 math exists only on Tensor Cores (Ada, Hopper, Blackwell): a GEMM
    // that names FP8 is one. Attention is left out: FP8 KV caches are
    // dequantised for CUDA-core decode kernels (`Fp8KVCacheDataType`).
    (r"fp8|e4m3|e5m2|f8f8|float8", &[Category::GemmConv], "_w8a8_block_fp8_matmul"),
    // GEMM and attention kernels built for sm90 and later (`Sm90`,
    // `sm100`, `enable_sm90_or_later`, FlashMLA's `sm90::`) exist to issue
    // wgmma / tcgen05.
    (
        r"sm_?(?:9\d|1[0-2]\d)(?:[^0-9]|$)",
        &[Category::GemmConv, Category::Attention],
        "void sm90::fwd::sparse_attn_fwd_kernel<sm90::fwd::KernelTemplate<512, true>, sm90::fwd::KernelTemplate<512, true>::TmaParams<cute::tuple<int, int, int>, cute::TiledCopy<cute::Copy_Atom<cute::Copy_Traits<cute::SM90_TMA_LOAD, cute::C<65536>, cute::AuxTmaParams<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 2> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64>, cute::C<1> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 2> > > const&, cute::Swizzle<3, 4, 3> const&> >, cutlass::bfloat16_t>, cute::Layout<cute::tuple<cute::C<1>, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<64> >, cute::C<8> > > >, cute::tuple<cute::C<0>, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::C<4096> > > > >, cute::tuple<cute::C<64>, cute::C<512> > > > >(SparseAttnFwdParams, sm90::fwd::KernelTemplate<512, true>::TmaParams<cute::tuple<int, int, int>, cute::TiledCopy<cute::Copy_Atom<cute::Copy_Traits<cute::SM90_TMA_LOAD, cute::C<65536>, cute::AuxTmaParams<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 2> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64>, cute::C<1> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 2> > > const&, cute::Swizzle<3, 4, 3> const&> >, cutlass::bfloat16_t>, cute::Layout<cute::tuple<cute::C<1>, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<64> >, cute::C<8> > > >, cute::tuple<cute::C<0>, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::C<4096> > > > >, cute::tuple<cute::C<64>, cute::C<512> > > >)",
    ),
];

/// Names that contain a Tensor Core pattern without being one, each with
/// the real name that needs it.
pub const TENSOR_CORE_EXCLUSIONS: &[(&str, &str)] = &[
    // MIOpen's elementwise sub-tensor ops contain "tensorop".
    (r"subtensorop", "SubTensorOpWithCastTensor1d"),
    // Triton Inductor's pointwise and reduction kernels issue no tl.dot,
    // whatever op names (`fmha`, `flash`) their names carry.
    (r"^triton_(?:poi|red|per)_", "triton_poi_fused__scaled_dot_product_fmha_0"),
];

static CATEGORIES: LazyLock<Vec<(Category, Regex)>> = LazyLock::new(|| {
    CATEGORY_PATTERNS
        .iter()
        .map(|(cat, pat)| (cat.clone(), Regex::new(pat).expect("category pattern compiles")))
        .collect()
});

type ScopedPatterns = Vec<(Regex, &'static [Category])>;

static TENSOR_CORE: LazyLock<(Regex, Regex, ScopedPatterns)> = LazyLock::new(|| {
    let join = |t: &[(&str, &str)]| {
        t.iter().map(|(p, _)| format!("(?:{p})")).collect::<Vec<_>>().join("|")
    };
    (
        Regex::new(&join(TENSOR_CORE_TABLE)).expect("tensor core table compiles"),
        Regex::new(&join(TENSOR_CORE_EXCLUSIONS)).expect("tensor core exclusions compile"),
        TENSOR_CORE_IN_CATEGORY
            .iter()
            .map(|(p, cats, _)| (Regex::new(p).expect("tensor core pattern compiles"), *cats))
            .collect(),
    )
});

/// The category of a lower-cased, demangled name.
fn category_of(lower: &str) -> &'static Category {
    CATEGORIES.iter().find(|(_, re)| re.is_match(lower)).map_or(&Category::Other, |(cat, _)| cat)
}

/// The Tensor Core flag of a lower-cased, demangled name in its category.
fn tensor_core_of(lower: &str, cat: &Category) -> bool {
    let (yes, no, scoped) = &*TENSOR_CORE;
    let named = yes.is_match(lower)
        || scoped.iter().any(|(re, cats)| cats.contains(cat) && re.is_match(lower));
    named && !no.is_match(lower)
}

/// The readable form of a kernel name: Itanium-mangled names (`_Z…`)
/// demangled, everything else as it is.
pub fn demangle(name: &str) -> Cow<'_, str> {
    let t = name.trim();
    if !t.starts_with("_Z") {
        return Cow::Borrowed(name);
    }
    // Mangled symbols have no spaces; a trailing parameter list or suffix
    // some tools add is kept as written after the demangled part.
    let (sym, rest) =
        t.split_at(t.find(|c: char| c.is_whitespace() || c == '(').unwrap_or(t.len()));
    match cpp_demangle::Symbol::new(sym).ok().and_then(|s| s.demangle().ok()) {
        Some(d) => Cow::Owned(format!("{d}{rest}")),
        None => Cow::Borrowed(name),
    }
}

/// The category of a kernel name (raw or demangled).
pub fn category(name: &str) -> Category {
    category_of(&demangle(name).to_lowercase()).clone()
}

/// True when the kernel runs on Tensor / Matrix Cores, judged by its name.
pub fn is_tensor_core(name: &str) -> bool {
    let lower = demangle(name).to_lowercase();
    tensor_core_of(&lower, category_of(&lower))
}

/// A kernel name's label (raw or demangled): the tables' name for it.
pub fn label(name: &str) -> String {
    short_name(&demangle(name))
}

/// [`label`] in at most `max` characters: the explorer's, on a screen wider
/// than the tables' labels.
pub fn label_within(name: &str, max: usize) -> String {
    short_name_within(&demangle(name), max)
}

/// What a kernel's name says of it.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelClass {
    pub category: Category,
    pub tensor_core: bool,
    /// The name as the tables show it (demangled, shortened).
    pub label: String,
}

/// Category, Tensor Core flag and label of one kernel name, demangling once.
pub fn classify(name: &str) -> KernelClass {
    let shown = demangle(name);
    let lower = shown.to_lowercase();
    let category = category_of(&lower);
    let tensor_core = tensor_core_of(&lower, category);
    KernelClass { category: category.clone(), tensor_core, label: short_name(&shown) }
}

static NAMESPACE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Za-z_][A-Za-z0-9_]*::").expect("namespace pattern compiles")
});

/// Longest label we print for a kernel; the full name stays in `raw_name`.
const LABEL_MAX: usize = 72;

/// Bounds on what a label is built from, whatever a trace holds: brackets
/// nested deeper are text, and a name is read up to this many characters
/// (real ones reach a few thousand).
const NESTING_MAX: usize = 32;
const NAME_MAX: usize = 16_384;

/// A readable label (docs/analysis.md §7): no `void`, no parameter list, no
/// anonymous namespace; the kernel's own scopes are kept
/// (`at::native::vectorized_elementwise_kernel`, `deep_ep::internode::dispatch`)
/// and its template arguments are shortened, step by step, only as far as
/// the label needs to fit `LABEL_MAX`:
///
/// 1. the arguments as written (`> >` closes as `>>`);
/// 2. names inside the arguments lose their namespaces, and a function
///    named there loses its parameter list and the local entity
///    (`::{lambda(int)#1}`) that follows it;
/// 3. argument lists nested three deep become `<…>`, the innermost first,
///    then the rightmost;
/// 4. argument lists lose trailing arguments (`<4, FillFunctor<float>, …>`),
///    the innermost list first, then the rightmost, each keeping its
///    arguments up to its first named one (not a number or a built-in type);
/// 5. whatever is still too long is cut with `…`.
pub fn short_name(name: &str) -> String {
    short_name_within(name, LABEL_MAX)
}

/// [`short_name`] in at most `max` characters (at least 8): a screen with
/// room for more than [`LABEL_MAX`] shortens less.
pub fn short_name_within(name: &str, max: usize) -> String {
    let max = max.max(8);
    // `<unnamed>` is how Nsight writes an anonymous namespace.
    let cleaned = name.trim().replace("(anonymous namespace)::", "").replace("<unnamed>::", "");
    let mut s = cleaned.as_str();
    s = s.strip_prefix("void ").unwrap_or(s);
    // A SFINAE return type (`std::enable_if<…>::type kernel<…>(…)`).
    if s.starts_with("std::enable_if<") {
        if let Some(at) = s.find(">::type ") {
            s = &s[at + ">::type ".len()..];
        }
    }
    // Cut the parameter list: the first '(' outside template brackets.
    let mut depth = 0i32;
    let mut cut = s.len();
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth <= 0 && i > 0 => {
                cut = i;
                break;
            }
            _ => {}
        }
    }
    let head = s[..cut].trim();
    if head.is_empty() {
        return clip(name.trim(), max);
    }
    let head = match head.char_indices().nth(NAME_MAX) {
        Some((at, _)) => &head[..at],
        None => head,
    };
    let tree = Tree::parse(head);
    let mut cfg = Render::default();
    let fits = |cfg: &Render| -> Option<String> {
        let out = tree.render(cfg);
        (out.chars().count() <= max).then_some(out)
    };
    if let Some(out) = fits(&cfg) {
        return out;
    }
    cfg.compact = true;
    if let Some(out) = fits(&cfg) {
        return out;
    }
    // Innermost first, then rightmost: groups open left to right. Each
    // step only shortens, so the fewest that fit are found by bisection.
    let mut lists: Vec<&Group> =
        tree.groups.iter().filter(|g| g.open == '<' && !g.args.iter().all(Vec::is_empty)).collect();
    lists.sort_by_key(|g| std::cmp::Reverse((g.depth, g.id)));
    let nested: Vec<usize> = lists.iter().filter(|g| g.depth >= 3).map(|g| g.id).collect();
    let len_with = |cfg: &Render| tree.render(cfg).chars().count();
    let elided = least(nested.len(), |n| {
        len_with(&Render { compact: true, elided: nested[..n].to_vec(), kept: Vec::new() }) <= max
    });
    cfg.elided = nested[..elided.unwrap_or(nested.len())].to_vec();
    if elided.is_some() {
        return tree.render(&cfg);
    }
    // Keep len - 1 - j arguments, j in 0..=most, never fewer than up to
    // the first named one; real names have a handful of such lists, so a
    // name with more than LISTS_MAX is cut instead.
    const LISTS_MAX: usize = 64;
    let cuttable = lists.iter().filter(|g| g.depth < 3).filter_map(|g| {
        let first_named = g.args.iter().position(|a| tree.is_named(a)).unwrap_or(0);
        g.args.len().checked_sub(first_named + 2).map(|most| (g, most))
    });
    for (g, most) in cuttable.take(LISTS_MAX) {
        let keeping = |j: usize| {
            let mut kept = cfg.kept.clone();
            kept.push((g.id, g.args.len() - 1 - j));
            Render { compact: true, elided: cfg.elided.clone(), kept }
        };
        let j = least(most, |j| len_with(&keeping(j)) <= max);
        cfg = keeping(j.unwrap_or(most));
        if j.is_some() {
            return tree.render(&cfg);
        }
    }
    clip(&tree.render(&cfg), max)
}

/// The least n in 0..=max for which `ok` holds, `ok` being monotone
/// (false, …, false, true, …); None when it never holds.
fn least(max: usize, ok: impl Fn(usize) -> bool) -> Option<usize> {
    if !ok(max) {
        return None;
    }
    let (mut lo, mut hi) = (0, max);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if ok(mid) { hi = mid } else { lo = mid + 1 }
    }
    Some(lo)
}

/// Cut to `max` characters, the last one `…`.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// A kernel name split into text and bracketed groups (`<…>`, `(…)`,
/// `{…}`, `[…]`), each group's content split at its own commas. Names cut
/// short by the tool that printed them leave groups unclosed.
struct Tree {
    top: Vec<Node>,
    /// Every group, in the order they open (left to right).
    groups: Vec<Group>,
}

enum Node {
    Text(String),
    Group(usize),
}

struct Group {
    id: usize,
    open: char,
    close: Option<char>,
    /// 1 for a group at the top level, 2 inside it, …
    depth: usize,
    args: Vec<Vec<Node>>,
}

#[derive(Default)]
struct Render {
    /// Step 2: namespaces, parameter lists and local entities out of arguments.
    compact: bool,
    /// Groups shown as `<…>`.
    elided: Vec<usize>,
    /// Groups that show only their first n arguments.
    kept: Vec<(usize, usize)>,
}

impl Tree {
    fn parse(s: &str) -> Tree {
        let mut tree = Tree { top: Vec::new(), groups: Vec::new() };
        let chars: Vec<char> = s.chars().collect();
        let mut i = 0;
        let (top, _) = tree.parse_seq(&chars, &mut i, 0, None);
        tree.top = top.into_iter().flatten().collect();
        tree
    }

    /// Reads until `close` (or the end), splitting at commas inside
    /// groups; true when `close` was found.
    fn parse_seq(
        &mut self,
        chars: &[char],
        i: &mut usize,
        depth: usize,
        close: Option<char>,
    ) -> (Vec<Vec<Node>>, bool) {
        let mut args = vec![Vec::new()];
        let mut text = String::new();
        // Brackets opened as text past NESTING_MAX, whose closers are text too.
        let mut deep = 0usize;
        let flush = |text: &mut String, args: &mut Vec<Vec<Node>>| {
            if !text.is_empty() {
                args.last_mut()
                    .expect("one argument at least")
                    .push(Node::Text(std::mem::take(text)));
            }
        };
        while let Some(&c) = chars.get(*i) {
            *i += 1;
            let closer = match c {
                '<' => Some('>'),
                '(' => Some(')'),
                '{' => Some('}'),
                '[' => Some(']'),
                _ => None,
            };
            if closer.is_some() && depth >= NESTING_MAX {
                deep += 1;
                text.push(c);
            } else if deep > 0 && matches!(c, '>' | ')' | '}' | ']') {
                deep -= 1;
                text.push(c);
            } else if let Some(want) = closer {
                flush(&mut text, &mut args);
                let id = self.groups.len();
                self.groups.push(Group {
                    id,
                    open: c,
                    close: None,
                    depth: depth + 1,
                    args: Vec::new(),
                });
                let (inner, closed) = self.parse_seq(chars, i, depth + 1, Some(want));
                let g = &mut self.groups[id];
                g.args = inner;
                g.close = closed.then_some(want);
                args.last_mut().expect("one argument at least").push(Node::Group(id));
            } else if Some(c) == close {
                flush(&mut text, &mut args);
                return (args, true);
            } else if c == ',' && close.is_some() {
                flush(&mut text, &mut args);
                args.push(Vec::new());
            } else {
                text.push(c);
            }
        }
        flush(&mut text, &mut args);
        (args, false)
    }

    /// An argument that names something: not only numbers, `true`/`false`
    /// and built-in types.
    fn is_named(&self, arg: &[Node]) -> bool {
        const PLAIN: &[&str] = &[
            "void", "bool", "char", "short", "int", "long", "float", "double", "signed",
            "unsigned", "const", "true", "false",
        ];
        arg.iter().any(|n| match n {
            Node::Text(t) => t.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| {
                w.starts_with(|c: char| c.is_alphabetic() || c == '_') && !PLAIN.contains(&w)
            }),
            Node::Group(id) => self.groups[*id].args.iter().any(|a| self.is_named(a)),
        })
    }

    fn render(&self, cfg: &Render) -> String {
        let mut out = String::new();
        self.render_nodes(&self.top, 0, cfg, &mut out);
        out.trim().to_string()
    }

    fn render_nodes(&self, nodes: &[Node], depth: usize, cfg: &Render, out: &mut String) {
        for node in nodes {
            match node {
                Node::Text(t) if depth > 0 && cfg.compact => {
                    out.push_str(&NAMESPACE.replace_all(t, ""))
                }
                Node::Text(t) => out.push_str(t),
                Node::Group(id) => {
                    let g = &self.groups[*id];
                    let part_of_name = out.ends_with("operator") || out.ends_with("decltype");
                    if depth > 0 && cfg.compact && !(g.open == '(' && part_of_name) {
                        let named = out.ends_with(|c: char| {
                            c.is_alphanumeric() || c == '_' || c == '>' || c == ')'
                        });
                        // A parameter list or a local entity: the function
                        // named before it stands for the whole argument.
                        if (g.open == '(' && named) || g.open == '{' || g.open == '[' {
                            let keep =
                                out.trim_end_matches(':').trim_end_matches("::operator()").len();
                            out.truncate(keep);
                            return;
                        }
                    }
                    self.render_group(g, cfg, out);
                }
            }
        }
    }

    fn render_group(&self, g: &Group, cfg: &Render, out: &mut String) {
        out.push(g.open);
        if cfg.elided.contains(&g.id) {
            out.push('…');
        } else {
            let keep =
                cfg.kept.iter().find(|(id, _)| *id == g.id).map_or(g.args.len(), |(_, n)| *n);
            for (n, arg) in g.args.iter().take(keep).enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                let mut one = String::new();
                self.render_nodes(arg, g.depth, cfg, &mut one);
                let one = one.trim();
                // A function named as an argument (Nsight writes its return type).
                let one = if cfg.compact { one.strip_prefix("void ").unwrap_or(one) } else { one };
                out.push_str(one);
            }
            if keep < g.args.len() {
                out.push_str(", …");
            }
        }
        if let Some(c) = g.close {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tensor_core_pattern_has_a_real_name_it_recognises() {
        for (pat, name) in TENSOR_CORE_TABLE {
            let re = Regex::new(pat).unwrap();
            assert!(
                re.is_match(&demangle(name).to_lowercase()),
                "{pat} matches its example {name}"
            );
            assert!(is_tensor_core(name), "{name} is a Tensor Core kernel");
            assert!(
                is_tensor_core(&name.to_uppercase()) || pat.starts_with('^'),
                "matching ignores case: {name}"
            );
        }
        for (pat, cats, name) in TENSOR_CORE_IN_CATEGORY {
            assert!(
                Regex::new(pat).unwrap().is_match(&demangle(name).to_lowercase()),
                "{pat} matches its example {name}"
            );
            assert!(cats.contains(&category(name)), "{name} is in {cats:?}");
            assert!(is_tensor_core(name), "{name} is a Tensor Core kernel");
            assert!(is_tensor_core(&name.to_uppercase()), "matching ignores case: {name}");
        }
        // The same words outside those categories say nothing: FP8 casts and
        // quantisation, an FP8 KV cache read by a CUDA-core decode kernel.
        for plain in [
            "void per_token_group_quant_8bit_kernel<c10::BFloat16, c10::Float8_e4m3fn, true, true, float>(c10::BFloat16 const*, void*, float*, int, int, int, float, float, float, int, int)",
            "void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const*)",
            "void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 3, false>(__hip_bfloat16*)",
        ] {
            assert!(!is_tensor_core(plain), "{plain}");
        }
        for (pat, name) in TENSOR_CORE_EXCLUSIONS {
            assert!(
                Regex::new(pat).unwrap().is_match(&name.to_lowercase()),
                "{pat} matches {name}"
            );
            assert!(!is_tensor_core(name), "{name} is excluded");
        }
        for plain in [
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
            "volta_sgemm_64x64_nt",
            "ampere_sgemm_32x32_sliced1x4_tn",
            "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1",
            "Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MIAV0_MIWT1_1",
            "SubTensorOpWithScalar1d",
        ] {
            assert!(!is_tensor_core(plain), "{plain}");
        }
    }

    #[test]
    fn categories_follow_first_match_order() {
        let cases = [
            (
                "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>",
                Category::ReductionNorm,
            ),
            (
                "void at::native::(anonymous namespace)::softmax_warp_forward<float>",
                Category::Softmax,
            ),
            // Fused attention names softmax in its templates.
            (
                "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, false, true, false, false>(pytorch_flash::Flash_fwd_params)",
                Category::Attention,
            ),
            // Inductor's prefix decides over the ops it fused.
            ("triton_per_fused__softmax_0", Category::ReductionNorm),
            ("void cudnn::ops::nchwToNhwcKernel<__half>", Category::LayoutCopy),
            ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32", Category::GemmConv),
            ("Memcpy DtoD (Device -> Device)", Category::LayoutCopy),
            (
                "void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda>",
                Category::Elementwise,
            ),
            (
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                Category::Communication,
            ),
            ("multimem_all_reduce_kernel", Category::Communication),
            ("void at::native::reduce_kernel<512, 1>", Category::ReductionNorm),
            ("triton_poi_fused__scaled_dot_product_flash_attention_0", Category::Elementwise),
            ("triton_red_fused_add_mean_mul_pow_rsqrt_0", Category::ReductionNorm),
            ("void fp8_convert_kernel<float>", Category::Other),
            // DeepEP under each namespace it ships in, MoRI's EP kernels.
            (
                "void dpsk::ep::internode::dispatch_ll<true, 3, 10, 7168>(void*)",
                Category::Communication,
            ),
            (
                "void primus_turbo::deep_ep::layout::get_dispatch_layout<long>",
                Category::Communication,
            ),
            ("EpCombineIntraNodeKernel_bf16_nop2p", Category::Communication),
            (
                "void qk_int_sv_f8_attn_kernel<128u, 64u, 32u, 64u, 128u, (DataType)1>",
                Category::Attention,
            ),
            (
                "void deep_gemm::sm90_tf32_hc_prenorm_gemm_impl<24u, 16384u>(unsigned int)",
                Category::GemmConv,
            ),
        ];
        for (name, want) in cases {
            assert_eq!(category(name), want, "{name}");
        }
        // "all_reduce" inside a longer word is not a collective.
        assert_ne!(category("void small_reduce_kernel<float>"), Category::Communication);
    }

    #[test]
    fn mangled_names_are_demangled_before_classifying() {
        let raw = "_ZN7ck_tile6kentryILi1ENS_13FmhaFwdKernelEEEvv";
        let shown = demangle(raw);
        assert!(shown.contains("ck_tile::kentry<1, ck_tile::FmhaFwdKernel>"), "{shown}");
        assert_eq!(category(raw), Category::Attention);
        assert!(is_tensor_core(raw));
        let class = classify(raw);
        assert_eq!((class.category, class.tensor_core), (Category::Attention, true));
        assert_eq!(class.label, "ck_tile::kentry<1, ck_tile::FmhaFwdKernel>");
        // Not mangled, or not valid: unchanged.
        assert_eq!(demangle("attn_fwd"), "attn_fwd");
        assert_eq!(demangle("_Znot a symbol"), "_Znot a symbol");
    }

    /// The committed table of real kernel names (tests/fixtures/README.md):
    /// every row's category and Tensor Core flag.
    #[test]
    fn real_kernel_names_from_public_traces() {
        let table = include_str!("../../tests/fixtures/kernel_names.tsv");
        let mut rows = 0;
        let mut wrong = Vec::new();
        for line in table.lines().skip(1).filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), 4, "category, tensorcore, source, name: {line}");
            let (want_cat, want_tc, name) = (cols[0], cols[1] == "1", cols[3]);
            let Some(want) = Category::ALL.into_iter().find(|c| c.as_str() == want_cat) else {
                panic!("{want_cat}")
            };
            let KernelClass { category: cat, tensor_core: tc, .. } = classify(name);
            if cat != want || tc != want_tc {
                wrong.push(format!("{name}: got {cat}/{tc}, want {want_cat}/{want_tc}"));
            }
            rows += 1;
        }
        assert!(rows >= 300, "{rows} rows");
        assert!(wrong.is_empty(), "{} of {rows} rows disagree:\n{}", wrong.len(), wrong.join("\n"));
    }

    #[test]
    fn short_names_drop_noise_but_keep_identity() {
        assert_eq!(short_name("volta_sgemm_128x64_nn"), "volta_sgemm_128x64_nn");
        assert_eq!(short_name("Memcpy DtoD (Device -> Device)"), "Memcpy DtoD");
        // Scopes stay; `void`, the parameter list and anonymous namespaces go.
        assert_eq!(
            short_name(
                "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*)"
            ),
            "at::native::max_pool_forward_nchw<float, float>"
        );
        assert_eq!(
            short_name(
                "void at::native::<unnamed>::cunn_SoftMaxForward<(int)4, float>(T4 *, const T2 *, int)"
            ),
            "at::native::cunn_SoftMaxForward<(int)4, float>"
        );
        assert_eq!(
            short_name(
                "void deep_ep::internode::dispatch<false, 4, false, 7, 4>(int4*, float*, long*, float*, deep_ep::internode::SourceMeta*)"
            ),
            "deep_ep::internode::dispatch<false, 4, false, 7, 4>"
        );
        // Step 1: arguments as written when they fit.
        assert_eq!(
            short_name(
                "void fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)>(int, int)"
            ),
            "fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)>"
        );
        // Step 2: no namespaces inside arguments; a lambda stands as the
        // function that holds it.
        assert_eq!(
            short_name(
                "void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &(silu(float const&))>(__nv_bfloat16*, __nv_bfloat16 const*, int)"
            ),
            "flashinfer::activation::act_and_mul_kernel<__nv_bfloat16, &(silu)>"
        );
        // Step 3: argument lists three deep become `<…>`.
        assert_eq!(
            short_name(
                "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<192> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 32, false, false, true> > > >(flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<int> >::Params)"
            ),
            "cutlass::device_kernel<enable_sm90_or_later<FlashAttnFwdSm90<…>>>"
        );
        // Step 4: trailing arguments go, up to the first named one.
        assert_eq!(
            short_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
            ),
            "at::native::vectorized_elementwise_kernel<4, FillFunctor<float>, …>"
        );
        assert_eq!(
            short_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#6}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, std::array<char*, 2ul>)"
            ),
            "at::native::vectorized_elementwise_kernel<4, silu_kernel, …>"
        );
        assert_eq!(
            short_name(
                "void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 0u, 4096u, 1024u, 1u, 256u, 128u, 128u, 128u, 128u, 128u, 3u, 128u, 256u, 2u, true, 132u, (deep_gemm::GemmType)0, deep_gemm::epilogue::transform::EpilogueIdentity>(float*, int*)"
            ),
            "deep_gemm::sm90_fp8_gemm_1d2d_impl<(Major)0, 0u, 4096u, 1024u, 1u, …>"
        );
        // A SFINAE return type is not the kernel.
        assert!(
            short_name("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float>(float)")
                .starts_with("internal::gemvx::kernel<int, int")
        );
        // Step 5: cut; names a report cut short keep their open brackets.
        let long = format!("kernel_{}", "x".repeat(200));
        assert_eq!(short_name(&long).chars().count(), LABEL_MAX);
        assert_eq!(
            short_name(
                "void cutlass::device_kernel<enable_sm120_family<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::Mainl…"
            ),
            "cutlass::device_kernel<enable_sm120_family<GemmUniversal<…"
        );
    }

    #[test]
    fn hostile_names_give_a_label_without_deep_recursion() {
        for name in [
            format!("k{}{}", "<".repeat(20_000), ">".repeat(20_000)),
            format!("k{}", "[{(".repeat(20_000)),
            format!("k<{}>", "a<b, c>, ".repeat(20_000)),
            format!("k<{}>", "<x>".repeat(20_000)),
        ] {
            let label = short_name(&name);
            assert!(label.starts_with('k') && label.chars().count() <= LABEL_MAX, "{label}");
        }
    }

    /// Every real name's label fits, and starts with the kernel's scopes
    /// (the namespaces before its name, anonymous ones aside).
    #[test]
    fn labels_of_real_names_fit_and_keep_their_scopes() {
        let table = include_str!("../../tests/fixtures/kernel_names.tsv");
        for line in table.lines().skip(1).filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
            let name = line.rsplit('\t').next().unwrap();
            let label = classify(name).label;
            assert!(label.chars().count() <= LABEL_MAX, "{label}");
            let shown = demangle(name).replace("(anonymous namespace)::", "");
            let head = shown.strip_prefix("void ").unwrap_or(&shown);
            let head = head.split_once(">::type ").map_or(head, |(_, kernel)| kernel);
            let scope = &head[..head.find(['<', '(', ' ']).unwrap_or(head.len())];
            let scope = &scope[..scope.rfind("::").map_or(0, |at| at + 2)];
            assert!(scope.len() > LABEL_MAX || label.starts_with(scope), "{label} keeps {scope}");
        }
    }

    #[test]
    fn a_wider_label_shortens_only_as_far_as_it_needs() {
        let raw = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)";
        let short = label(raw);
        assert!(short.contains('…') && short.chars().count() <= LABEL_MAX, "{short}");
        let wide = label_within(raw, 120);
        assert_eq!(
            wide,
            "at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl, Array<char*, 2>>"
        );
        assert_eq!(label_within(raw, LABEL_MAX), short);
        assert!(label_within(raw, 30).chars().count() <= 30);
    }
}
