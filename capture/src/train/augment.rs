//! The photometric and flip part of LibreYOLO 1.6's YOLOv9 training
//! transform (`YOLO9TrainTransform`): HSV jitter with probability
//! `hsv_prob` (1.0) — hue ±5, saturation ±30, value ±30 in OpenCV's 8-bit
//! HSV (hue 0..180), each channel's shift kept or zeroed at random — then a
//! horizontal flip with probability `flip_prob` (0.5), boxes mirrored.
//!
//! Not here yet: mosaic and the random affine (`YOLO9MosaicMixupDataset`).

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

/// RGB → OpenCV 8-bit HSV (h 0..180, s and v 0..255).
fn rgb_to_hsv(r: u8, g: u8, b: u8) -> (i32, i32, i32) {
    let (r, g, b) = (r as f64, g as f64, b as f64);
    let v = r.max(g).max(b);
    let mn = r.min(g).min(b);
    let d = v - mn;
    let s = if v > 0.0 { d * 255.0 / v } else { 0.0 };
    let mut h = if d == 0.0 {
        0.0
    } else if v == r {
        60.0 * (g - b) / d
    } else if v == g {
        120.0 + 60.0 * (b - r) / d
    } else {
        240.0 + 60.0 * (r - g) / d
    };
    if h < 0.0 {
        h += 360.0;
    }
    ((h / 2.0).round() as i32 % 180, s.round() as i32, v.round() as i32)
}

/// OpenCV 8-bit HSV → RGB.
fn hsv_to_rgb(h: i32, s: i32, v: i32) -> [u8; 3] {
    let (h, s, v) = (h as f64 * 2.0, s as f64 / 255.0, v as f64);
    let c = v * s;
    let hp = (h / 60.0) % 6.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = v - c;
    let q = |t: f64| (t + m).round().clamp(0.0, 255.0) as u8;
    [q(r), q(g), q(b)]
}

/// HSV jitter of an RGB image in place (their `augment_hsv`).
pub fn hsv(pixels: &mut [u8], rng: &mut Rng) {
    let mut aug = [0i32; 3];
    for (k, a) in aug.iter_mut().enumerate() {
        *a = ((rng.unit() * 2.0 - 1.0) * GAINS[k]) as i32;
    }
    for a in aug.iter_mut() {
        if rng.next_u64() % 2 == 0 {
            *a = 0;
        }
    }
    if aug == [0, 0, 0] {
        return;
    }
    for px in pixels.chunks_exact_mut(3) {
        let (h, s, v) = rgb_to_hsv(px[0], px[1], px[2]);
        let h = (h + aug[0]).rem_euclid(180);
        let s = (s + aug[1]).clamp(0, 255);
        let v = (v + aug[2]).clamp(0, 255);
        px.copy_from_slice(&hsv_to_rgb(h, s, v));
    }
}

/// Mirrors an RGB image of `w`×`h` left-right in place, and its boxes
/// (`[class, x1, y1, x2, y2]` in pixels).
pub fn flip(pixels: &mut [u8], w: usize, h: usize, labels: &mut [[f32; 5]]) {
    for y in 0..h {
        let row = &mut pixels[y * w * 3..(y + 1) * w * 3];
        for x in 0..w / 2 {
            let (a, b) = (x * 3, (w - 1 - x) * 3);
            for c in 0..3 {
                row.swap(a + c, b + c);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hsv_round_trips_within_one_level() {
        for &(r, g, b) in &[(255u8, 0u8, 0u8), (0, 255, 0), (0, 0, 255), (12, 200, 77), (128, 128, 128), (250, 240, 10)] {
            let (h, s, v) = rgb_to_hsv(r, g, b);
            let back = hsv_to_rgb(h, s, v);
            for (a, b) in back.iter().zip([r, g, b]) {
                assert!((*a as i32 - b as i32).abs() <= 3, "{:?} -> {:?}", (r, g, b), back);
            }
        }
        assert_eq!(rgb_to_hsv(255, 0, 0), (0, 255, 255));
        assert_eq!(rgb_to_hsv(0, 0, 255).0, 120);
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
}
