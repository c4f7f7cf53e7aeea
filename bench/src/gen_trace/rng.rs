//! The generator's randomness: SplitMix64, so that the output depends on
//! nothing but the seed (the same seed and size give the same file, byte
//! for byte) and every rank of a job draws the same numbers.

pub(super) struct Rng(u64);

impl Rng {
    /// The stream for `seed`. The model is drawn first, so a job's summary
    /// rebuilds the ranks' model from the seed alone.
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5EED_CAFE_F00D_D00D)
    }
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(super) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform integer in [lo, hi].
    pub(super) fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
    pub(super) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    /// `base` ± `frac`, at least 1.
    pub(super) fn jitter(&mut self, base: i64, frac: f64) -> i64 {
        ((base as f64) * (1.0 + frac * (2.0 * self.unit() - 1.0))).round().max(1.0) as i64
    }
    pub(super) fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() % xs.len() as u64) as usize]
    }
}
