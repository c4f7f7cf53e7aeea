//! Pixel resampling for the training loader, on RGB8 images: the bilinear
//! resize (OpenCV's `INTER_LINEAR`: half-pixel centres, edges replicated),
//! the affine warp (`warpAffine`, bilinear, constant grey border) and the
//! top-left letterbox of LibreYOLO's YOLOv9 transform.
//!
//! One fixed-point kernel does all three. It is written here rather than
//! taken from `imageproc` (`warp` with a `Projection`): that one maps every
//! pixel through a generic f32 projection with a homogeneous divide and
//! generic interpolation, while the loader's warps are affine and, with
//! YOLOv9's defaults (no rotation, no shear), axis-aligned — a separable
//! case that precomputes each column's taps once per image. The loader runs
//! this per sample on `--workers` threads against OpenCV's SIMD kernels, so
//! the cheap path matters.

/// An RGB8 image, rows packed (`w·3` bytes each).
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    pub w: usize,
    pub h: usize,
    pub px: Vec<u8>,
}

/// The grey LibreYOLO pads and fills with.
pub const GREY: u8 = 114;

impl Image {
    pub fn filled(w: usize, h: usize, v: u8) -> Image {
        Image { w, h, px: vec![v; w * h * 3] }
    }
}

/// What a tap outside the source reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Border {
    /// A constant value (the warp's grey).
    Constant(u8),
    /// The nearest edge pixel (the resize).
    Replicate,
}

/// Fractional bits of the source coordinates; 8 of them weigh the taps.
const FRAC: u32 = 16;
const ONE: f64 = (1u64 << FRAC) as f64;

/// Resamples `src` into a `dw`×`dh` image: destination pixel `(x, y)` reads
/// the source, bilinearly, at `inv · (x, y, 1)` (an inverse 2×3 map, as
/// `warpAffine` with `WARP_INVERSE_MAP`).
pub fn remap(src: &Image, inv: [f64; 6], dw: usize, dh: usize, border: Border) -> Image {
    if inv[1] == 0.0 && inv[3] == 0.0 {
        remap_axis(src, inv, dw, dh, border)
    } else {
        remap_general(src, inv, dw, dh, border)
    }
}

/// Whole source pixel and the 8-bit weight of the next one.
#[inline]
fn split(fixed: i64) -> (i64, u32) {
    (fixed >> FRAC, ((fixed >> (FRAC - 8)) & 255) as u32)
}

#[inline]
fn fixed(v: f64) -> i64 {
    (v * ONE).round() as i64
}

/// A tap's byte offset in a row (or row offset), or `None` outside under a
/// constant border.
#[inline]
fn tap(i: i64, n: usize, border: Border) -> Option<usize> {
    if (0..n as i64).contains(&i) {
        Some(i as usize)
    } else {
        match border {
            Border::Replicate => Some(i.clamp(0, n as i64 - 1) as usize),
            Border::Constant(_) => None,
        }
    }
}

#[inline]
fn blend(p00: u32, p01: u32, p10: u32, p11: u32, ax: u32, ay: u32) -> u8 {
    let top = p00 * (256 - ax) + p01 * ax;
    let bottom = p10 * (256 - ax) + p11 * ax;
    ((top * (256 - ay) + bottom * ay + (1 << 15)) >> 16) as u8
}

/// One axis of the separable case: for each destination coordinate, its
/// two source taps and the weight of the second. Taps index a padded axis:
/// 0 is the constant border, `1..=n` the source; under a replicated border
/// taps are clamped into the source instead.
struct Axis {
    t0: Vec<usize>,
    t1: Vec<usize>,
    a: Vec<u32>,
}

impl Axis {
    fn new(scale: f64, offset: f64, n_dst: usize, n_src: usize, border: Border) -> Axis {
        let mut ax = Axis {
            t0: Vec::with_capacity(n_dst),
            t1: Vec::with_capacity(n_dst),
            a: Vec::with_capacity(n_dst),
        };
        let n = n_src as i64;
        let pad = |i: i64| match border {
            Border::Constant(_) if (0..n).contains(&i) => i as usize + 1,
            Border::Constant(_) => 0,
            Border::Replicate => i.clamp(0, n - 1) as usize + 1,
        };
        for d in 0..n_dst {
            let (i, a) = split(fixed(scale * d as f64 + offset));
            ax.t0.push(pad(i));
            ax.t1.push(pad(i + 1));
            ax.a.push(a);
        }
        ax
    }
}

/// No rotation or shear: each column's taps and weight are the same on every
/// row, each row's on every column, so each output row is one vertical blend
/// of two source rows (vectorisable) then a horizontal blend through the
/// column taps. The product of the two blends is the bilinear weight, as in
/// the general kernel; border taps read a padding slot, so no pixel branches.
fn remap_axis(src: &Image, inv: [f64; 6], dw: usize, dh: usize, border: Border) -> Image {
    let fill = match border {
        Border::Constant(v) => v,
        Border::Replicate => 0,
    };
    let mut out = Image::filled(dw, dh, fill);
    if src.w == 0 || src.h == 0 || dw == 0 {
        return out;
    }
    let cols = Axis::new(inv[0], inv[2], dw, src.w, border);
    let rows = Axis::new(inv[4], inv[5], dh, src.h, border);
    let stride = src.w * 3;
    let fill_row = vec![fill; stride];
    let row = |t: usize| if t == 0 { &fill_row[..] } else { &src.px[(t - 1) * stride..t * stride] };
    // Only the source columns some tap reads need the vertical blend.
    let lo = cols.t0.iter().chain(&cols.t1).copied().filter(|&t| t > 0).min().unwrap_or(1);
    let hi = cols.t0.iter().chain(&cols.t1).copied().max().unwrap_or(0).max(lo);
    // tmp[k] is padded column k's vertical blend, 0..=65280; slot 0 the border.
    let mut tmp = vec![fill as u16 * 256; (src.w + 1) * 3];
    let (c0, c1): (Vec<usize>, Vec<usize>) =
        cols.t0.iter().zip(&cols.t1).map(|(a, b)| (a * 3, b * 3)).unzip();
    for y in 0..dh {
        let ay = rows.a[y] as u16;
        let (r0, r1) = (row(rows.t0[y]), row(rows.t1[y]));
        let span = (lo - 1) * 3..hi * 3;
        for ((t, &p), &q) in
            tmp[lo * 3..(hi + 1) * 3].iter_mut().zip(&r0[span.clone()]).zip(&r1[span])
        {
            *t = p as u16 * (256 - ay) + q as u16 * ay;
        }
        let dst = &mut out.px[y * dw * 3..(y + 1) * dw * 3];
        for ((d, (&o0, &o1)), &ax) in dst.chunks_exact_mut(3).zip(c0.iter().zip(&c1)).zip(&cols.a) {
            // Slicing once per tap keeps the channel loop free of checks.
            let (p, q) = (&tmp[o0..o0 + 3], &tmp[o1..o1 + 3]);
            for c in 0..3 {
                d[c] = ((p[c] as u32 * (256 - ax) + q[c] as u32 * ax + (1 << 15)) >> 16) as u8;
            }
        }
    }
    out
}

/// Any affine map: the source point moves by a constant step per column.
fn remap_general(src: &Image, inv: [f64; 6], dw: usize, dh: usize, border: Border) -> Image {
    let fill = match border {
        Border::Constant(v) => v as u32,
        Border::Replicate => 0,
    };
    let mut out = Image::filled(dw, dh, fill as u8);
    if src.w == 0 || src.h == 0 {
        return out;
    }
    let stride = src.w * 3;
    let (du, dv) = (fixed(inv[0]), fixed(inv[3]));
    for y in 0..dh {
        let (u0, v0) = (fixed(inv[1] * y as f64 + inv[2]), fixed(inv[4] * y as f64 + inv[5]));
        let dst = &mut out.px[y * dw * 3..(y + 1) * dw * 3];
        for x in 0..dw {
            let (i, ax) = split(u0 + du * x as i64);
            let (j, ay) = split(v0 + dv * x as i64);
            let d = &mut dst[x * 3..x * 3 + 3];
            if i >= 0 && j >= 0 && ((i + 1) as usize) < src.w && ((j + 1) as usize) < src.h {
                let o = j as usize * stride + i as usize * 3;
                let (a, b) = (&src.px[o..o + 6], &src.px[o + stride..o + stride + 6]);
                for c in 0..3 {
                    d[c] =
                        blend(a[c] as u32, a[3 + c] as u32, b[c] as u32, b[3 + c] as u32, ax, ay);
                }
                continue;
            }
            let (c0, c1) = (tap(i, src.w, border), tap(i + 1, src.w, border));
            let (r0, r1) = (tap(j, src.h, border), tap(j + 1, src.h, border));
            if (c0.is_none() && c1.is_none()) || (r0.is_none() && r1.is_none()) {
                continue;
            }
            let get = |r: Option<usize>, col: Option<usize>, c: usize| match (r, col) {
                (Some(r), Some(col)) => src.px[r * stride + col * 3 + c] as u32,
                _ => fill,
            };
            for (c, v) in d.iter_mut().enumerate() {
                *v = blend(get(r0, c0, c), get(r0, c1, c), get(r1, c0, c), get(r1, c1, c), ax, ay);
            }
        }
    }
    out
}

/// Bilinear resize to `w`×`h` (`cv2.resize`, `INTER_LINEAR`).
pub fn resize(src: &Image, w: usize, h: usize) -> Image {
    if (w, h) == (src.w, src.h) {
        return src.clone();
    }
    let (sx, sy) = (src.w as f64 / w as f64, src.h as f64 / h as f64);
    // Pixel centres line up: x_src + 0.5 = (x + 0.5)·sx.
    remap(src, [sx, 0.0, 0.5 * sx - 0.5, 0.0, sy, 0.5 * sy - 0.5], w, h, Border::Replicate)
}

/// Warps `src` by the forward affine `m` (2×3, source → destination) into a
/// `w`×`h` image with a grey border (`cv2.warpAffine`, borderValue 114).
pub fn warp_affine(src: &Image, m: [f64; 6], w: usize, h: usize) -> Image {
    remap(src, invert(m), w, h, Border::Constant(GREY))
}

/// The inverse of a 2×3 affine map.
pub fn invert(m: [f64; 6]) -> [f64; 6] {
    let det = m[0] * m[4] - m[1] * m[3];
    let d = if det != 0.0 { 1.0 / det } else { 0.0 };
    let (a, b, c, e) = (m[4] * d, -m[1] * d, -m[3] * d, m[0] * d);
    [a, b, -(a * m[2] + b * m[5]), c, e, -(c * m[2] + e * m[5])]
}

/// The ratio LibreYOLO's letterbox scales by, and the resized size.
pub fn letterbox_ratio(w: usize, h: usize, size: usize) -> (f64, usize, usize) {
    let r = (size as f64 / h as f64).min(size as f64 / w as f64);
    (r, ((w as f64 * r) as usize).max(1), ((h as f64 * r) as usize).max(1))
}

/// Top-left letterbox into `size`×`size` (grey padding right and bottom);
/// returns the ratio boxes scale by. An image already square at `size`
/// passes through without a copy (the mosaic path).
pub fn letterbox(src: Image, size: usize) -> (Image, f64) {
    let (r, nw, nh) = letterbox_ratio(src.w, src.h, size);
    if (src.w, src.h) == (size, size) {
        return (src, r);
    }
    let resized = resize(&src, nw, nh);
    let mut out = Image::filled(size, size, GREY);
    for y in 0..nh {
        out.px[y * size * 3..y * size * 3 + nw * 3]
            .copy_from_slice(&resized.px[y * nw * 3..(y + 1) * nw * 3]);
    }
    (out, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(w: usize, h: usize) -> Image {
        let px = (0..h)
            .flat_map(|y| {
                (0..w).flat_map(move |x| [(x * 7 + y) as u8, (y * 5) as u8, (x * 3 + y * 2) as u8])
            })
            .collect();
        Image { w, h, px }
    }

    #[test]
    fn identity_warp_copies_and_pads_grey() {
        let src = ramp(9, 7);
        assert_eq!(warp_affine(&src, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0], 9, 7), src);
        // A 2-pixel shift right: the first two columns are border grey.
        let out = warp_affine(&src, [1.0, 0.0, 2.0, 0.0, 1.0, 0.0], 9, 7);
        for y in 0..7 {
            assert_eq!(&out.px[y * 27..y * 27 + 6], &[GREY; 6]);
            assert_eq!(&out.px[y * 27 + 6..y * 27 + 27], &src.px[y * 27..y * 27 + 21]);
        }
    }

    #[test]
    fn the_separable_and_general_kernels_agree() {
        let src = ramp(31, 23);
        for m in [[0.7, 0.0, 3.3, 0.0, 1.3, -2.1], [1.5, 0.0, -4.0, 0.0, 0.5, 6.2]] {
            let inv = invert(m);
            for border in [Border::Constant(GREY), Border::Replicate] {
                let a = remap_axis(&src, inv, 29, 27, border);
                let b = remap_general(&src, inv, 29, 27, border);
                // The general kernel steps in fixed point, the separable one
                // rounds each column: a weight may differ by its last bit.
                for (p, q) in a.px.iter().zip(&b.px) {
                    assert!((*p as i32 - *q as i32).abs() <= 1, "{m:?} {border:?}");
                }
            }
        }
    }

    #[test]
    fn resize_halves_by_averaging_pixel_pairs() {
        // cv2's INTER_LINEAR at exactly 2× down reads between two pixels.
        let src = Image { w: 4, h: 1, px: vec![0, 0, 0, 100, 100, 100, 200, 200, 200, 40, 40, 40] };
        let out = resize(&src, 2, 1);
        assert_eq!(out.px, vec![50, 50, 50, 120, 120, 120]);
        // Upscaling replicates the edge instead of fading into a border.
        let up = resize(&Image { w: 1, h: 1, px: vec![9, 8, 7] }, 3, 2);
        assert_eq!(up.px, [9, 8, 7].repeat(6));
    }

    #[test]
    fn a_rotation_is_inverted_exactly() {
        let (c, s) = (0.3f64.cos() * 1.2, 0.3f64.sin() * 1.2);
        let m = [c, s, 5.0, -s, c, 7.0];
        let inv = invert(m);
        let (x, y) = (3.0, -2.0);
        let (u, v) = (m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5]);
        assert!((inv[0] * u + inv[1] * v + inv[2] - x).abs() < 1e-12);
        assert!((inv[3] * u + inv[4] * v + inv[5] - y).abs() < 1e-12);
    }

    #[test]
    fn letterbox_keeps_the_aspect_top_left() {
        let (out, r) = letterbox(ramp(20, 10), 10);
        assert_eq!((out.w, out.h, r), (10, 10, 0.5));
        assert_eq!(&out.px[5 * 30..], &[GREY; 5 * 30][..]);
        assert_ne!(&out.px[..30], &[GREY; 30][..]);
    }
}
