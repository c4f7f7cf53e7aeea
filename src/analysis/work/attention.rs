//! Attention: `scaled_dot_product_attention` and the flash, efficient and
//! cuDNN kernels' ops under it, forward and backward, causal or not.

use std::fmt::Write as _;

use super::args::{Args, Tensor};
use super::{Work, int, matrix};

#[derive(Debug, Clone, Copy)]
enum Layout {
    /// `[B, H, L, D]`: the `scaled_dot_product_*` ops.
    Bhld,
    /// `[B, L, H, D]`: `_flash_attention_*`, `_efficient_attention_*`.
    Blhd,
}

/// How the causal mask lines up when `Lq != Lk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    /// Query i sees keys 0..=i (`torch.nn.functional.scaled_dot_product_attention`).
    TopLeft,
    /// Query i sees keys 0..=i + Lk − Lq (flash-attn; the last query sees all).
    BottomRight,
}

#[derive(Debug, Clone, Copy)]
enum Causal {
    /// `bool is_causal` at this position, aligned so.
    Flag(u8, Align),
    /// `int custom_mask_type` (0 none, 1 top-left, 2 bottom-right).
    MaskType(u8),
}

#[derive(Debug, Clone, Copy)]
pub(super) struct AttnSig {
    layout: Layout,
    causal: Causal,
    backward: bool,
    /// Position of `query` (0, or 1 after `grad_out`).
    q: u8,
    /// Positions of `cum_seq_q`/`cum_seq_k`: recorded tensors there mean
    /// packed variable-length sequences, whose lengths are not recorded.
    varlen: Option<(u8, u8)>,
    /// Positions of `window_size_left`/`_right`: a sliding window is not
    /// modelled.
    window: Option<(u8, u8)>,
}

pub(super) fn attn_sig(name: &str) -> Option<AttnSig> {
    use Align::{BottomRight, TopLeft};
    let sig = |layout, causal, backward, varlen, window| AttnSig {
        layout,
        causal,
        backward,
        q: u8::from(backward),
        varlen,
        window,
    };
    Some(match name {
        // (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        "scaled_dot_product_attention" => {
            sig(Layout::Bhld, Causal::Flag(5, TopLeft), false, None, None)
        }
        // (query, key, value, dropout_p, is_causal, return_debug_mask, scale)
        "_scaled_dot_product_flash_attention" | "_scaled_dot_product_flash_attention_for_cpu" => {
            sig(Layout::Bhld, Causal::Flag(4, TopLeft), false, None, None)
        }
        // (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, …)
        "_scaled_dot_product_flash_attention_backward" => {
            sig(Layout::Bhld, Causal::Flag(11, TopLeft), true, None, None)
        }
        // (grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask, scale)
        "_scaled_dot_product_flash_attention_for_cpu_backward" => {
            sig(Layout::Bhld, Causal::Flag(7, TopLeft), true, None, None)
        }
        // (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, scale); 2.0 had no
        // attn_bias nor dropout_p (is_causal at 4): see `causal_of`.
        "_scaled_dot_product_efficient_attention" | "_scaled_dot_product_cudnn_attention" => {
            sig(Layout::Bhld, Causal::Flag(6, TopLeft), false, None, None)
        }
        // (grad_out_, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p,
        //  grad_input_mask, is_causal, scale); 2.0: (grad_out_, query, key, value, out, logsumexp, is_causal, …)
        "_scaled_dot_product_efficient_attention_backward" => {
            sig(Layout::Bhld, Causal::Flag(11, TopLeft), true, None, None)
        }
        // (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q,
        //  cum_seq_k, max_q, max_k, dropout_p, is_causal, scale)
        "_scaled_dot_product_cudnn_attention_backward" => {
            sig(Layout::Bhld, Causal::Flag(14, TopLeft), true, Some((9, 10)), None)
        }
        // (query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, return_debug_mask,
        //  scale, window_size_left, window_size_right, seqused_k, alibi_slopes)
        "_flash_attention_forward" => {
            sig(Layout::Blhd, Causal::Flag(8, BottomRight), false, Some((3, 4)), Some((11, 12)))
        }
        // (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
        //  is_causal, rng_state, unused, scale, window_size_left, window_size_right)
        "_flash_attention_backward" => {
            sig(Layout::Blhd, Causal::Flag(11, BottomRight), true, Some((6, 7)), Some((15, 16)))
        }
        // (query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
        //  custom_mask_type, compute_log_sumexp, scale, seqlen_k, window_size)
        "_efficient_attention_forward" => {
            sig(Layout::Blhd, Causal::MaskType(9), false, Some((4, 5)), Some((13, 13)))
        }
        // (grad_out_, query, key, value, bias, out, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
        //  logsumexp, dropout_p, philox_seed, philox_offset, custom_mask_type, bias_requires_grad, scale,
        //  num_splits_key, window_size, shared_storage_dqdkdv)
        "_efficient_attention_backward" => {
            sig(Layout::Blhd, Causal::MaskType(14), true, Some((6, 7)), Some((18, 18)))
        }
        _ => return None,
    })
}

/// Query-key pairs the mask keeps, per batch and head.
fn attended_pairs(lq: f64, lk: f64, causal: Option<Align>) -> f64 {
    let triangle = |n: f64| n * (n + 1.0) / 2.0;
    match causal {
        None => lq * lk,
        Some(Align::TopLeft) if lq <= lk => triangle(lq),
        Some(Align::TopLeft) => triangle(lk) + (lq - lk) * lk,
        Some(Align::BottomRight) if lk >= lq => lq * (lk - lq) + triangle(lq),
        Some(Align::BottomRight) => triangle(lk),
    }
}

/// The causal setting a call recorded; `None` when it is not recorded.
fn causal_of(a: &Args<'_>, causal: Causal, backward: bool) -> Option<Option<Align>> {
    match causal {
        Causal::Flag(at, align) => {
            // PyTorch 2.0's efficient-attention ops were shorter (no bias, no dropout).
            let at = match (at, a.n_entries, backward) {
                (6, 6, false) => 4,
                (11, 9, true) => 6,
                _ => at.into(),
            };
            Some(a.conc_bool(at)?.then_some(align))
        }
        Causal::MaskType(at) => match a.conc_int(at.into())? {
            0 => Some(None),
            1 => Some(Some(Align::TopLeft)),
            2 => Some(Some(Align::BottomRight)),
            _ => None,
        },
    }
}

/// Forward: QKᵀ and PV, 2·B·H·P·(D + Dv) for P attended pairs. Backward:
/// QKᵀ again, dV = PᵀdO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀQ:
/// 2·B·H·P·(3·D + 2·Dv), 2.5× the forward when D = Dv.
pub(super) fn attention(a: &Args<'_>, sig: AttnSig) -> Option<Work> {
    let dtype = a.dtype()?;
    let qi = usize::from(sig.q);
    let (q, k, v) = (a.tensor(qi)?, a.tensor(qi + 1)?, a.tensor(qi + 2)?);
    if let Some((cq, ck)) = sig.varlen {
        if [cq, ck].iter().any(|&i| a.tensor(i.into()).is_some_and(|t| t.rank() > 0)) {
            return None;
        }
    }
    if let Some((l, r)) = sig.window {
        if [l, r].iter().any(|&i| a.conc_int(i.into()).is_some_and(|w| w >= 0)) {
            return None;
        }
    }
    // (batch, heads, L, D) of each tensor.
    let bhld = |t: &Tensor<'_>| -> Option<(f64, f64, f64, f64)> {
        match (sig.layout, t.dims) {
            (Layout::Blhd, [b, l, h, d]) => Some((*b as f64, *h as f64, *l as f64, *d as f64)),
            (Layout::Blhd, _) => None,
            (Layout::Bhld, [b, h, l, d]) => Some((*b as f64, *h as f64, *l as f64, *d as f64)),
            (Layout::Bhld, [b, l, d]) => Some((*b as f64, 1.0, *l as f64, *d as f64)),
            (Layout::Bhld, [lead @ .., l, d]) if !lead.is_empty() => {
                Some((lead.iter().map(|&x| x as f64).product(), 1.0, *l as f64, *d as f64))
            }
            (Layout::Bhld, _) => None,
        }
    };
    let ((b, h, lq, d), (_, hk, lk, dk), (_, hv, lv, dv)) = (bhld(&q)?, bhld(&k)?, bhld(&v)?);
    if dk != d || lv != lk || hv != hk {
        return None;
    }
    let causal = causal_of(a, sig.causal, sig.backward)?;
    let pairs = b * h * attended_pairs(lq, lk, causal);
    let flops =
        if sig.backward { 2.0 * pairs * (3.0 * d + 2.0 * dv) } else { 2.0 * pairs * (d + dv) };
    // Read: every tensor argument (Q, K, V, a mask; dO, O, logsumexp).
    // Written: O, or dQ, dK, dV.
    let fallback = Some(dtype);
    let written = if sig.backward {
        q.bytes_or(fallback)? + k.bytes_or(fallback)? + v.bytes_or(fallback)?
    } else {
        b * h * lq * dv * f64::from(q.dtype.unwrap_or(dtype).size())
    };
    let bytes = a.all_tensor_bytes(fallback)? + written;
    let mut inputs =
        format!("B={} H={} Lq={} Lk={} D={}", int(b), int(h), int(lq), int(lk), int(d));
    if dv != d {
        let _ = write!(inputs, " Dv={}", int(dv));
    }
    if hk != h {
        let _ = write!(inputs, " Hkv={}", int(hk));
    }
    match causal {
        Some(Align::TopLeft) => inputs.push_str(" causal"),
        Some(Align::BottomRight) if lq != lk => inputs.push_str(" causal(bottom-right)"),
        Some(Align::BottomRight) => inputs.push_str(" causal"),
        None => {}
    }
    Some(matrix(flops, bytes, dtype, inputs))
}

#[cfg(test)]
mod tests {
    //! Cases as the tests in `mod.rs` describe them: a public trace's
    //! `cpu_op` shape arguments, or ones written in their format.
    use super::*;
    use crate::analysis::work::Model;
    use crate::analysis::work::tests::{
        BF16, F32, I64, QWEN_SDPA_DIMS, QWEN_SDPA_TYPES, check, run, work,
    };

    #[test]
    fn sdpa_causal_counts_the_kept_triangle() {
        // tracelens_h100_qwen_inference, Qwen1.5-0.5B: is_causal=True (6th argument).
        let w = work(
            "aten::scaled_dot_product_attention",
            QWEN_SDPA_DIMS,
            QWEN_SDPA_TYPES,
            Some(r#"["", "", "", "", "0.", "True", "0.125", "False"]"#),
        );
        let (b, h, l, d) = (16.0, 16.0, 559.0, 64.0);
        let pairs = l * (l + 1.0) / 2.0;
        check(&w, 2.0 * b * h * pairs * d * 2.0, 4.0 * b * h * l * d * BF16);
        assert_eq!(w.inputs, "B=16 H=16 Lq=559 Lk=559 D=64 causal");
        // The same call's aten::_scaled_dot_product_flash_attention (is_causal 5th).
        let w = work(
            "aten::_scaled_dot_product_flash_attention",
            "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", "Scalar"]"#,
            Some(r#"["", "", "", "0.", "True", "False", "0.125"]"#),
        );
        check(&w, 4.0 * b * h * pairs * d, 4.0 * b * h * l * d * BF16);
    }

    #[test]
    fn sdpa_without_mask_counts_every_pair() {
        // tracelens_h100_qwen_inference, BERT small: is_causal=False.
        let w = work(
            "aten::scaled_dot_product_attention",
            "[[1, 8, 141, 64], [1, 8, 141, 64], [1, 8, 141, 64], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "Scalar", "Scalar", "", "Scalar"]"#,
            Some(r#"["", "", "", "", "0.", "False", "", "False"]"#),
        );
        let (b, h, l, d) = (1.0, 8.0, 141.0, 64.0);
        check(&w, 4.0 * b * h * l * l * d, 4.0 * b * h * l * d * BF16);
        assert_eq!(w.inputs, "B=1 H=8 Lq=141 Lk=141 D=64");
        // Without Concrete Inputs the mask is unknown: not guessed.
        assert_eq!(
            run("aten::scaled_dot_product_attention", QWEN_SDPA_DIMS, QWEN_SDPA_TYPES, None),
            Model::NoShapes
        );
    }

    #[test]
    fn flash_attention_forward_reads_the_blhd_layout() {
        // tracelens_h100_qwen_inference, Qwen1.5-0.5B: [B, L, H, D], is_causal the 9th argument.
        let w = work(
            "aten::_flash_attention_forward",
            "[[16, 559, 16, 64], [16, 559, 16, 64], [16, 559, 16, 64], [], [], [], [], [], [], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "", ""]"#,
            Some(
                r#"["", "", "", "", "", "559", "559", "0.", "True", "False", "0.125", "", "", "", ""]"#,
            ),
        );
        let (b, h, l, d) = (16.0, 16.0, 559.0, 64.0);
        check(&w, 4.0 * b * h * (l * (l + 1.0) / 2.0) * d, 4.0 * b * l * h * d * BF16);
        assert_eq!(w.inputs, "B=16 H=16 Lq=559 Lk=559 D=64 causal");
        // tracelens_rocm_triton_compile: [8, 4096, 16, 128], not causal.
        let w = work(
            "aten::_flash_attention_forward",
            "[[8, 4096, 16, 128], [8, 4096, 16, 128], [8, 4096, 16, 128], [], [], [], [], [], [], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "", ""]"#,
            Some(
                r#"["", "", "", "", "", "4096", "4096", "0.", "False", "False", "0.088388347648318433", "", "", "", ""]"#,
            ),
        );
        let (b, h, l, d) = (8.0, 16.0, 4096.0, 128.0);
        check(&w, 4.0 * b * h * l * l * d, 4.0 * b * l * h * d * BF16);
        assert_eq!(w.inputs, "B=8 H=16 Lq=4096 Lk=4096 D=128");
        // Packed variable-length sequences ([total, H, D]): the lengths are not recorded.
        let varlen = run(
            "aten::_flash_attention_forward",
            "[[1000, 16, 64], [1000, 16, 64], [1000, 16, 64], [9], [9], [], [], [], [], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "int", "int", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "", ""]"#,
            Some(
                r#"["", "", "", "", "", "200", "200", "0.", "True", "False", "0.125", "", "", "", ""]"#,
            ),
        );
        assert_eq!(varlen, Model::NoShapes);
    }

    #[test]
    fn sdpa_backward_is_five_matmuls() {
        // Written in the trace format from the Qwen call above (the traces here are inference):
        // _scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, logsumexp,
        // cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, scale).
        let w = work(
            "aten::_scaled_dot_product_flash_attention_backward",
            "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559], [], [], [], [], [], [], [], [], []]",
            r#"["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "float", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "long int", "long int", "Scalar"]"#,
            Some(
                r#"["", "", "", "", "", "", "", "", "559", "559", "0.", "True", "", "", "0.125"]"#,
            ),
        );
        let (b, h, l, d) = (16.0, 16.0, 559.0, 64.0);
        let forward = 4.0 * b * h * (l * (l + 1.0) / 2.0) * d;
        let t = b * h * l * d;
        // Read dO, Q, K, V, O, logsumexp (f32) and the two int64 philox scalars; write dQ, dK, dV.
        check(&w, 2.5 * forward, 5.0 * t * BF16 + b * h * l * F32 + 2.0 * I64 + 3.0 * t * BF16);
    }

    #[test]
    fn grouped_query_attention_counts_the_query_heads() {
        // Written in the sdpa format: 16 query heads over 2 key/value heads (enable_gqa=True).
        let w = work(
            "aten::scaled_dot_product_attention",
            "[[1, 16, 128, 64], [1, 2, 128, 64], [1, 2, 128, 64], [], [], [], [], []]",
            QWEN_SDPA_TYPES,
            Some(r#"["", "", "", "", "0.", "False", "", "True"]"#),
        );
        check(
            &w,
            4.0 * 16.0 * 128.0 * 128.0 * 64.0,
            (2.0 * 16.0 * 128.0 * 64.0 + 2.0 * 2.0 * 128.0 * 64.0) * BF16,
        );
        assert!(w.inputs.contains("Hkv=2"), "{}", w.inputs);
    }

    #[test]
    fn causal_pairs_match_a_count_of_the_mask() {
        for (lq, lk) in [(1, 1), (4, 10), (10, 4), (559, 559), (7, 1)] {
            let count = |keep: &dyn Fn(i64, i64) -> bool| {
                (0..lq)
                    .flat_map(|i| (0..lk).map(move |j| (i, j)))
                    .filter(|&(i, j)| keep(i, j))
                    .count() as f64
            };
            let top_left = count(&|i, j| j <= i);
            let bottom_right = count(&|i, j| j <= i + lk - lq);
            let (q, k) = (lq as f64, lk as f64);
            assert_eq!(attended_pairs(q, k, Some(Align::TopLeft)), top_left, "top-left {lq}x{lk}");
            assert_eq!(
                attended_pairs(q, k, Some(Align::BottomRight)),
                bottom_right,
                "bottom-right {lq}x{lk}"
            );
            assert_eq!(attended_pairs(q, k, None), q * k);
        }
    }
}
