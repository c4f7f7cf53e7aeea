//! Kernel names → category, Tensor Core flag and a short readable label.
//! Both tables live here and nowhere else (SPEC §4).

use std::sync::LazyLock;

use regex::Regex;

pub const GEMM_CONV: &str = "gemm / conv";
pub const LAYOUT_COPY: &str = "layout / copy";
pub const REDUCTION_NORM: &str = "reduction / norm";
pub const ELEMENTWISE: &str = "elementwise";
pub const OTHER: &str = "other";

/// Category patterns, first match wins, matched on the lower-cased name.
/// Norm comes before gemm/conv (cuDNN batchnorm kernels say "cudnn"), the
/// explicit layout transposes before gemm/conv (cuDNN's nchwToNhwc), and
/// gemm/conv before the generic copies (cutlass epilogues mention "copy").
/// `\b` keeps "copy" from matching inside names like `bfloat16_copy_kernel`
/// templates of elementwise kernels, as the reference did.
const CATEGORY_PATTERNS: &[(&str, &str)] = &[
    (REDUCTION_NORM, r"bn_fw|bn_bw|batchnorm|batch_norm|layer_norm|group_norm|instance_norm|softmax|welford|\breduce|variance|rms_norm"),
    (LAYOUT_COPY, r"nchwtonhwc|nhwctonchw"),
    (GEMM_CONV, r"gemm|conv|implicit|cutlass|cudnn|wgrad|dgrad|winograd|nvjet|xmma|gmma"),
    (LAYOUT_COPY, r"memcpy|memset|\bcopy|catarray|concat|contiguous|\bgather|\bscatter|\bpermute|\btranspose"),
    (ELEMENTWISE, r"elementwise|vectorized|pointwise|activation|silu|relu|sigmoid|unary|binary|clamp|fill|arange"),
];

/// Substrings that mark a Tensor Core kernel: Volta h884, Turing/Ampere
/// h1688/16816/16832, tf32 s1688/s16816, int8 imma/i8816/i16832, cutlass
/// tensorop, wmma, and Hopper/Blackwell wgmma/gmma, sm90 xmma, cuBLAS nvjet,
/// tcgen05.
pub const TENSOR_CORE_PATTERNS: &[&str] = &[
    "h884", "h1688", "i16832", "i8816", "s16816", "s1688", "hmma", "imma", "tensorop", "wmma", "16816", "16832",
    "884gemm", "1688gemm", "wgmma", "gmma", "sm90_xmma", "sm100_xmma", "nvjet", "tcgen05",
];

static CATEGORIES: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    CATEGORY_PATTERNS
        .iter()
        .map(|(cat, pat)| (*cat, Regex::new(pat).expect("category pattern compiles")))
        .collect()
});

/// The category of a kernel name.
pub fn category(name: &str) -> &'static str {
    let lower = name.to_lowercase();
    CATEGORIES
        .iter()
        .find(|(_, re)| re.is_match(&lower))
        .map_or(OTHER, |(cat, _)| cat)
}

/// True when the kernel runs on Tensor Cores, judged by its name.
pub fn is_tensor_core(name: &str) -> bool {
    let lower = name.to_lowercase();
    TENSOR_CORE_PATTERNS.iter().any(|p| lower.contains(p))
}

static NAMESPACE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b(?:[A-Za-z_][A-Za-z0-9_]*|\(anonymous namespace\))::").expect("namespace pattern compiles"));

/// Longest label we print for a kernel; the full name stays in `raw_name`.
const LABEL_MAX: usize = 72;

/// A readable label: no `void`, no parameter list, no namespaces, cut to a
/// terminal-friendly width.
pub fn short_name(name: &str) -> String {
    let cleaned = name.trim().replace("(anonymous namespace)::", "");
    let mut s = cleaned.as_str();
    s = s.strip_prefix("void ").unwrap_or(s);
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
    let body = NAMESPACE.replace_all(&s[..cut], "");
    let body = body.trim();
    let body = if body.is_empty() { name.trim() } else { body };
    if body.chars().count() <= LABEL_MAX {
        body.to_string()
    } else {
        let mut out: String = body.chars().take(LABEL_MAX - 1).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tensor_core_pattern_is_recognised() {
        // One real-looking kernel per pattern, each with that pattern only.
        let cases = [
            ("h884", "volta_h884gemm_64x64_ldg8_nn"),
            ("h1688", "turing_h1688gemm_128x128_ldg8_nt"),
            ("i16832", "sm80_xmma_gemm_i16832_int8"),
            ("i8816", "turing_i8816gemm_int8_128x128"),
            ("s16816", "ampere_s16816gemm_fp16_128x64_ldg8_f2f_nn"),
            ("s1688", "cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4"),
            ("hmma", "sm70_hmma_fprop"),
            ("imma", "sm75_imma_int8_conv"),
            ("tensorop", "cutlass_tensorop_f16_s16816gemm"),
            ("wmma", "wmma_fp16_kernel"),
            ("16816", "ampere_fp16_16816_gemm"),
            ("16832", "ampere_int8_16832_gemm"),
            ("884gemm", "volta_fp16_884gemm_nn"),
            ("1688gemm", "turing_fp16_1688gemm_tn"),
            ("wgmma", "sm90_gemm_wgmma_f16f16_128x128"),
            ("gmma", "cutlass3x_sm90_tensorop_gmma_s64x128x16gemm_f16"),
            ("sm90_xmma", "sm90_xmma_fprop_implicit_gemm_f16f16_f16f32"),
            ("sm100_xmma", "sm100_xmma_gemm_bf16bf16_bf16f32"),
            ("nvjet", "nvjet_hsh_128x256_64x4_1x2_h_bz_coopA_NNN"),
            ("tcgen05", "kernel_tcgen05_mma_bf16"),
        ];
        assert_eq!(cases.len(), TENSOR_CORE_PATTERNS.len(), "one case per pattern");
        for (pat, name) in cases {
            assert!(TENSOR_CORE_PATTERNS.contains(&pat), "{pat} is in the table");
            assert!(name.to_lowercase().contains(pat), "{name} exercises {pat}");
            assert!(is_tensor_core(name), "{name} is a Tensor Core kernel");
            assert!(is_tensor_core(&name.to_uppercase()), "matching ignores case");
        }
        for plain in [
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
            "volta_sgemm_128x64_nn",
            "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float>",
            "Memcpy DtoD (Device -> Device)",
        ] {
            assert!(!is_tensor_core(plain), "{plain}");
        }
    }

    #[test]
    fn categories_follow_first_match_order() {
        let cases = [
            ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>", REDUCTION_NORM),
            ("void cudnn::bn_bw_1C11_kernel_new<float>", REDUCTION_NORM),
            ("void at::native::(anonymous namespace)::softmax_warp_forward<float>", REDUCTION_NORM),
            ("void at::native::reduce_kernel<512, 1>", REDUCTION_NORM),
            ("void cudnn::ops::nchwToNhwcKernel<__half>", LAYOUT_COPY),
            ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>", GEMM_CONV),
            ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32", GEMM_CONV),
            ("nvjet_hsh_128x256_64x4_1x2_h_bz_coopA_NNN", GEMM_CONV),
            ("void cudnn::winograd_nonfused::winogradForwardData4x4<float>", GEMM_CONV),
            ("volta_scudnn_128x64_relu_interior_nn_v1", GEMM_CONV),
            ("Memcpy DtoD (Device -> Device)", LAYOUT_COPY),
            ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float>", LAYOUT_COPY),
            ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", ELEMENTWISE),
            ("void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda>", ELEMENTWISE),
            ("void at::native::silu_kernel<float>", ELEMENTWISE),
            ("ncclKernel_AllReduce_RING_LL_Sum_float", OTHER),
        ];
        for (name, want) in cases {
            assert_eq!(category(name), want, "{name}");
        }
    }

    #[test]
    fn short_names_drop_noise_but_keep_identity() {
        assert_eq!(
            short_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"),
            "vectorized_elementwise_kernel<4, FillFunctor<float>, Array<char*, 1> >"
        );
        assert_eq!(short_name("volta_sgemm_128x64_nn"), "volta_sgemm_128x64_nn");
        assert_eq!(
            short_name("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*)"),
            "max_pool_forward_nchw<float, float>"
        );
        assert_eq!(short_name("Memcpy DtoD (Device -> Device)"), "Memcpy DtoD");
        let long = format!("kernel_{}", "x".repeat(200));
        assert_eq!(short_name(&long).chars().count(), LABEL_MAX);
    }
}
