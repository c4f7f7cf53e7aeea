//! LibreYOLO 1.6's YOLOv9 training transform (`YOLO9TrainTransform`), run
//! on every sample after the mosaic and affine ([`super::mosaic`]): HSV
//! jitter with probability `hsv_prob` (1.0) — hue ±5, saturation ±30, value
//! ±30 in OpenCV's 8-bit HSV (hue 0..180), each channel's shift kept or
//! zeroed at random — a horizontal flip with probability `flip_prob` (0.5),
//! boxes mirrored, the top-left letterbox, boxes of 1 px or less on a side
//! dropped, boxes clipped to the image and capped at `max_labels`.

use super::geometry::{Image, letterbox, letterbox_ratio};

/// LibreYOLO's defaults (`TrainConfig`).
pub const HSV_PROB: f64 = 1.0;
pub const FLIP_PROB: f64 = 0.5;
const GAINS: [f64; 3] = [5.0, 30.0, 30.0];

/// A small deterministic generator (splitmix64), one per sample.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

/// Rounds to the nearest integer, ties to even (OpenCV's `cvRound`), by
/// the 1.5·2^23 trick: exact for |x| < 2^22, and unlike `round` or a cast
/// it vectorises on any x86-64.
#[inline(always)]
fn rint(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    (x + MAGIC) - MAGIC
}

/// RGB → OpenCV's 8-bit HSV (h 0..180 in 2° steps, s and v 0..255), as
/// `cv2.cvtColor` computes it, with whole-number results.
#[inline(always)]
fn rgb_to_hsv(r: f32, g: f32, b: f32) -> (f32, f32, f32) {
    let v = r.max(g).max(b);
    let diff = v - r.min(g).min(b);
    let s = rint(diff * 255.0 / v.max(1.0));
    // All three candidates, then a select: which channel is the maximum
    // changes from pixel to pixel.
    let (hr, hg, hb) = (g - b, b - r + 2.0 * diff, r - g + 4.0 * diff);
    let raw = if v == r {
        hr
    } else if v == g {
        hg
    } else {
        hb
    };
    let h = raw * 30.0 / diff.max(1.0);
    let h = rint(if h < -0.5 { h + 180.0 } else { h });
    (if h >= 180.0 { h - 180.0 } else { h }, s, v)
}

/// OpenCV's 8-bit HSV → RGB (`COLOR_HSV2BGR`): its float formula, rounded.
#[inline(always)]
fn hsv_to_rgb(h: f32, s: f32, v: f32) -> (f32, f32, f32) {
    let x = h * (1.0 / 30.0);
    let k = rint(x);
    let k = if k > x { k - 1.0 } else { k }; // the sector, 0..6
    let f = x - k;
    let s = s * (1.0 / 255.0);
    // Grey (s = 0) needs no branch: all four are v.
    let (t0, t1, t2, t3) = (v, v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f)));
    // Which of the four each channel takes, per sector, as selects.
    let r = if k == 0.0 || k == 5.0 {
        t0
    } else if k == 1.0 {
        t2
    } else if k == 4.0 {
        t3
    } else {
        t1
    };
    let g = if k == 1.0 || k == 2.0 {
        t0
    } else if k == 0.0 {
        t3
    } else if k == 3.0 {
        t2
    } else {
        t1
    };
    let b = if k == 3.0 || k == 4.0 {
        t0
    } else if k == 2.0 {
        t3
    } else if k == 5.0 {
        t2
    } else {
        t1
    };
    (rint(r), rint(g), rint(b))
}

/// Pixels per block: deinterleaved into three lanes of floats so the
/// conversions run as vector code.
const BLOCK: usize = 64;

/// The jitter of every pixel, shifts `[h, s, v]` already drawn.
#[inline(always)]
fn hsv_shift(pixels: &mut [u8], aug: [f32; 3]) {
    let [dh, ds, dv] = aug;
    for chunk in pixels.chunks_mut(BLOCK * 3) {
        let (mut r, mut g, mut b) = ([0f32; BLOCK], [0f32; BLOCK], [0f32; BLOCK]);
        for (i, p) in chunk.chunks_exact(3).enumerate() {
            (r[i], g[i], b[i]) = (p[0] as f32, p[1] as f32, p[2] as f32);
        }
        for i in 0..BLOCK {
            let (h, s, v) = rgb_to_hsv(r[i], g[i], b[i]);
            let h = h + dh;
            let h = if h < 0.0 {
                h + 180.0
            } else if h >= 180.0 {
                h - 180.0
            } else {
                h
            };
            (r[i], g[i], b[i]) =
                hsv_to_rgb(h, (s + ds).clamp(0.0, 255.0), (v + dv).clamp(0.0, 255.0));
        }
        for (i, p) in chunk.chunks_exact_mut(3).enumerate() {
            (p[0], p[1], p[2]) = (r[i] as u8, g[i] as u8, b[i] as u8);
        }
    }
}

/// The same code compiled for AVX2 (twice the lanes). Float results are
/// identical: no fused multiply-adds, no reassociation.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn hsv_shift_avx2(pixels: &mut [u8], aug: [f32; 3]) {
    hsv_shift(pixels, aug)
}

/// Runs the jitter on the widest vector unit the CPU has.
fn hsv_shift_dispatch(pixels: &mut [u8], aug: [f32; 3]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present, checked just above.
        return unsafe { hsv_shift_avx2(pixels, aug) };
    }
    hsv_shift(pixels, aug)
}

/// HSV jitter of an RGB image in place (their `augment_hsv`). Like theirs
/// it converts there and back even when every shift came out zero.
pub fn hsv(pixels: &mut [u8], rng: &mut Rng) {
    let mut aug = [0f32; 3];
    for (k, a) in aug.iter_mut().enumerate() {
        // Truncated toward zero, as their int16 cast.
        *a = ((rng.unit() * 2.0 - 1.0) * GAINS[k]) as i32 as f32;
    }
    for a in aug.iter_mut() {
        if rng.next_u64() % 2 == 0 {
            *a = 0.0;
        }
    }
    hsv_shift_dispatch(pixels, aug);
}

/// Mirrors an RGB image of `w`×`h` left-right in place, and its boxes
/// (`[class, x1, y1, x2, y2]` in pixels).
pub fn flip(pixels: &mut [u8], w: usize, h: usize, labels: &mut [[f32; 5]]) {
    // Reversing a row's bytes mirrors its pixels but also turns RGB into
    // BGR; swapping each pixel's first and last byte turns it back. Both
    // passes are straight loops, unlike a pixel-by-pixel swap from both ends.
    for row in pixels[..w * h * 3].chunks_exact_mut(w.max(1) * 3) {
        row.reverse();
        for px in row.chunks_exact_mut(3) {
            px.swap(0, 2);
        }
    }
    for l in labels {
        let (x1, x2) = (l[1], l[3]);
        l[1] = w as f32 - x2;
        l[3] = w as f32 - x1;
    }
}

/// HSV (probability `HSV_PROB`) then flip (probability `FLIP_PROB`).
pub fn apply(pixels: &mut [u8], w: usize, h: usize, labels: &mut [[f32; 5]], rng: &mut Rng) {
    if rng.unit() < HSV_PROB {
        hsv(pixels, rng);
    }
    if rng.unit() < FLIP_PROB {
        flip(pixels, w, h, labels);
    }
}

/// The whole train transform on an image and its boxes (pixels): the
/// `size`×`size` result and the boxes that survive.
pub fn transform(
    mut img: Image,
    mut labels: Vec<[f32; 5]>,
    size: usize,
    max_labels: usize,
    rng: &mut Rng,
) -> (Image, Vec<[f32; 5]>) {
    let (r, _, _) = letterbox_ratio(img.w, img.h, size);
    let rf = r as f32;
    // Which boxes outlive the letterbox; the flip keeps widths, so this can
    // be known before augmenting.
    let keep: Vec<bool> = labels
        .iter()
        .map(|l| (l[3] * rf - l[1] * rf) > 1.0 && (l[4] * rf - l[2] * rf) > 1.0)
        .collect();
    // Their fallback: when every box would be dropped, the image is used
    // unaugmented with all its boxes rather than trained as background.
    let fallback = !labels.is_empty() && !keep.contains(&true);
    if !fallback {
        apply(&mut img.px, img.w, img.h, &mut labels, rng);
        let mut k = keep.iter();
        labels.retain(|_| *k.next().unwrap());
    }
    let (img, _) = letterbox(img, size);
    let s = size as f32;
    labels.truncate(max_labels);
    for l in &mut labels {
        for v in &mut l[1..] {
            *v = (*v * rf).clamp(0.0, s);
        }
    }
    (img, labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_hsv(r: u8, g: u8, b: u8) -> (i32, i32, i32) {
        let (h, s, v) = rgb_to_hsv(r as f32, g as f32, b as f32);
        (h as i32, s as i32, v as i32)
    }

    #[test]
    fn hsv_round_trips_within_a_few_levels() {
        for &(r, g, b) in &[
            (255u8, 0u8, 0u8),
            (0, 255, 0),
            (0, 0, 255),
            (12, 200, 77),
            (128, 128, 128),
            (250, 240, 10),
            (0, 0, 0),
        ] {
            let (h, s, v) = rgb_to_hsv(r as f32, g as f32, b as f32);
            let back = hsv_to_rgb(h, s, v);
            for (a, b) in [back.0, back.1, back.2].iter().zip([r, g, b]) {
                assert!((*a as i32 - b as i32).abs() <= 3, "{:?} -> {:?}", (r, g, b), back);
            }
        }
        assert_eq!(to_hsv(255, 0, 0), (0, 255, 255));
        assert_eq!(to_hsv(0, 0, 255).0, 120);
        // Orange (BGR 0,128,255): OpenCV gives H 15.
        assert_eq!(to_hsv(255, 128, 0), (15, 255, 255));
        // Just below red on the wheel wraps to the top of the hue range.
        assert_eq!(to_hsv(255, 0, 10).0, 179);
        assert_eq!(hsv_to_rgb(0.0, 0.0, 77.0), (77.0, 77.0, 77.0));
    }

    #[test]
    fn hsv_is_the_float_formula_to_one_level() {
        for r in (0..=255).step_by(15) {
            for g in (0..=255).step_by(17) {
                for b in (0..=255).step_by(13) {
                    let (rf, gf, bf) = (r as f64, g as f64, b as f64);
                    let v = rf.max(gf).max(bf);
                    let d = v - rf.min(gf).min(bf);
                    let s = if v > 0.0 { d * 255.0 / v } else { 0.0 };
                    let deg = if d == 0.0 {
                        0.0
                    } else if v == rf {
                        60.0 * (gf - bf) / d
                    } else if v == gf {
                        120.0 + 60.0 * (bf - rf) / d
                    } else {
                        240.0 + 60.0 * (rf - gf) / d
                    };
                    let h = deg.rem_euclid(360.0) / 2.0;
                    let got = to_hsv(r as u8, g as u8, b as u8);
                    let dh = (got.0 as f64 - h).abs();
                    assert!((0..180).contains(&got.0), "{:?} {got:?}", (r, g, b));
                    assert!(
                        dh.min(180.0 - dh) <= 0.5
                            && (got.1 as f64 - s).abs() <= 0.5
                            && got.2 == v as i32,
                        "{:?} {got:?}",
                        (r, g, b)
                    );
                }
            }
        }
    }

    #[test]
    fn the_vector_paths_agree_bit_for_bit() {
        let base: Vec<u8> =
            (0..3 * 1000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for aug in [[0.0, 0.0, 0.0], [5.0, -30.0, 12.0], [-4.0, 29.0, -30.0]] {
            let (mut a, mut b) = (base.clone(), base.clone());
            hsv_shift(&mut a, aug);
            hsv_shift_dispatch(&mut b, aug);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn flip_mirrors_pixels_and_boxes() {
        let mut px = vec![1, 1, 1, 2, 2, 2, 3, 3, 3];
        let mut l = [[0.0, 0.0, 0.0, 1.0, 1.0]];
        flip(&mut px, 3, 1, &mut l);
        assert_eq!(px, vec![3, 3, 3, 2, 2, 2, 1, 1, 1]);
        assert_eq!(l[0], [0.0, 2.0, 0.0, 3.0, 1.0]);
    }

    #[test]
    fn apply_is_deterministic_per_seed() {
        let base: Vec<u8> = (0..48).map(|i| (i * 5) as u8).collect();
        let (mut a, mut b) = (base.clone(), base.clone());
        let (mut la, mut lb) = ([[0.0, 0.0, 0.0, 2.0, 2.0]], [[0.0, 0.0, 0.0, 2.0, 2.0]]);
        apply(&mut a, 4, 4, &mut la, &mut Rng(7));
        apply(&mut b, 4, 4, &mut lb, &mut Rng(7));
        assert_eq!(a, b);
        assert_eq!(la, lb);
    }

    #[test]
    fn transform_letterboxes_drops_tiny_boxes_and_caps_the_count() {
        let img = Image { w: 40, h: 20, px: (0..40 * 20 * 3).map(|i| (i % 251) as u8).collect() };
        // At 20 the ratio is 0.5: the 2-px-wide box becomes 1 px and goes.
        let labels = vec![
            [0.0, 0.0, 0.0, 10.0, 10.0],
            [1.0, 5.0, 5.0, 7.0, 15.0],
            [1.0, 20.0, 2.0, 40.0, 20.0],
        ];
        for seed in 0..8 {
            let (out, l) = transform(img.clone(), labels.clone(), 20, 300, &mut Rng(seed));
            assert_eq!((out.w, out.h), (20, 20));
            assert_eq!(l.iter().map(|l| l[0]).collect::<Vec<_>>(), vec![0.0, 1.0]);
            // Halved, maybe mirrored about x = 10 (the letterboxed width).
            assert!(
                l[0] == [0.0, 0.0, 0.0, 5.0, 5.0] || l[0] == [0.0, 15.0, 0.0, 20.0, 5.0],
                "{l:?}"
            );
            assert!(
                l[1] == [1.0, 10.0, 1.0, 20.0, 10.0] || l[1] == [1.0, 0.0, 1.0, 10.0, 10.0],
                "{l:?}"
            );
        }
        let many: Vec<[f32; 5]> = (0..10).map(|k| [k as f32, 0.0, 0.0, 30.0, 20.0]).collect();
        let (_, l) = transform(img.clone(), many, 20, 4, &mut Rng(1));
        assert_eq!(l.iter().map(|l| l[0]).collect::<Vec<_>>(), vec![0.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn transform_falls_back_to_the_plain_image_when_every_box_would_go() {
        let img = Image { w: 40, h: 40, px: (0..40 * 40 * 3).map(|i| (i % 253) as u8).collect() };
        let tiny = vec![[1.0, 3.0, 3.0, 4.0, 30.0]];
        for seed in 0..8 {
            let (out, l) = transform(img.clone(), tiny.clone(), 40, 300, &mut Rng(seed));
            assert_eq!(out, img, "no HSV, no flip");
            assert_eq!(l, tiny);
        }
        // No boxes at all: augmented (some seed changes the pixels), no labels.
        let outs: Vec<_> = (0..8)
            .map(|seed| transform(img.clone(), Vec::new(), 40, 300, &mut Rng(seed)))
            .collect();
        assert!(outs.iter().all(|(_, l)| l.is_empty()));
        assert!(outs.iter().any(|(o, _)| *o != img));
    }
}
