//! `--batch -1`: fit the batch to CUDA memory. The probe runs real training
//! steps (forward with the loss, backward; AMP as the run will use it) at a
//! few small batches, reads the peak of allocated memory after each, fits a
//! line `bytes = a + b·batch` and picks the batch whose line reaches
//! [`FRACTION`] of the device's total memory. Then it runs one step at that
//! batch: the line is an extrapolation (from batch 8 to 500 on an H200), so
//! a batch that runs out of memory is shrunk to [`BACKOFF`] of itself and
//! tried again, up to [`CHECKS`] times. BatchNorm statistics are restored
//! afterwards and the optimizer never steps, so the probe leaves the model
//! as it found it.

use libreyolo_core::{Error, Result};
use tch::{Device, Tensor};

use crate::{ops, profiler};

/// Share of total VRAM the chosen batch should use (docs/spec.md §2.2).
pub const FRACTION: f64 = 0.70;
/// Batches probed.
pub const PROBES: [usize; 3] = [2, 4, 8];
/// Full-size steps tried after the line chose a batch.
pub const CHECKS: usize = 4;
/// A checked batch that ran out of memory is shrunk to this share of itself.
pub const BACKOFF: f64 = 0.8;
/// Largest batch ever chosen: the largest `--batch` takes.
pub const MAX_BATCH: usize = libreyolo_core::cli::limits::MAX_BATCH;

/// (batch, peak allocated bytes) per full-size step after the line chose;
/// `None` where it ran out of memory. The last one ran.
pub type Checked = Vec<(usize, Option<i64>)>;

/// What the probe saw and chose; recorded in the profile's config.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// (batch, peak allocated bytes) per probe.
    pub probes: Vec<(usize, i64)>,
    pub total_bytes: i64,
    pub checked: Checked,
    pub batch: usize,
}

/// The batch where the least-squares line through `probes` reaches
/// `fraction · total`; `None` when the points do not rise with the batch.
pub fn choose(probes: &[(usize, i64)], total: i64, fraction: f64) -> Option<usize> {
    let n = probes.len() as f64;
    if probes.len() < 2 {
        return None;
    }
    let mx = probes.iter().map(|p| p.0 as f64).sum::<f64>() / n;
    let my = probes.iter().map(|p| p.1 as f64).sum::<f64>() / n;
    let sxx: f64 = probes.iter().map(|p| (p.0 as f64 - mx).powi(2)).sum();
    let sxy: f64 = probes.iter().map(|p| (p.0 as f64 - mx) * (p.1 as f64 - my)).sum();
    if sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    if slope <= 0.0 {
        return None;
    }
    let intercept = my - slope * mx;
    let raw = (total as f64 * fraction - intercept) / slope;
    Some((raw.floor().max(1.0) as usize).min(MAX_BATCH))
}

/// The batch that runs: `chosen`, shrunk to [`BACKOFF`] of itself while
/// `run(batch)` finds it out of memory (`Ok(None)`), at most [`CHECKS`]
/// tries; with every try's (batch, peak).
pub fn check(
    chosen: usize,
    mut run: impl FnMut(usize) -> Result<Option<i64>>,
) -> Result<(usize, Checked)> {
    let mut tried = Vec::new();
    let mut batch = chosen;
    for _ in 0..CHECKS {
        let peak = run(batch)?;
        tried.push((batch, peak));
        if peak.is_some() {
            return Ok((batch, tried));
        }
        if batch == 1 {
            break;
        }
        batch = ((batch as f64 * BACKOFF).floor() as usize).max(1);
    }
    let sizes: Vec<String> = tried.iter().map(|(b, _)| b.to_string()).collect();
    Err(Error::failed(format!(
        "--batch -1: batches {} ran out of CUDA memory; pass a smaller batch",
        sizes.join(", ")
    )))
}

/// Probes CUDA device `device` with `step(batch)`, which must run one
/// forward + loss + backward at that batch, with targets of the shape the
/// run's batches have, and clear the gradients. `bn_state` are the tensors
/// to restore afterwards (running statistics).
pub fn probe(
    device: Device,
    bn_state: &[Tensor],
    mut step: impl FnMut(usize) -> Result<()>,
) -> Result<Fit> {
    let Device::Cuda(index) = device else {
        return Err(Error::usage(
            "--batch -1 fits the batch to CUDA memory; on the CPU pass a batch (e.g. --batch 16)",
        ));
    };
    let saved: Vec<Tensor> = bn_state.iter().map(|t| t.detach().copy()).collect();
    let fit = fit(device, index, &mut step);
    tch::no_grad(|| {
        for (t, s) in bn_state.iter().zip(&saved) {
            t.shallow_clone().copy_(s);
        }
    });
    ops::cuda_empty_cache()?;
    fit
}

fn fit(device: Device, index: usize, step: &mut impl FnMut(usize) -> Result<()>) -> Result<Fit> {
    let mut probes = Vec::new();
    for b in PROBES {
        match peak_of(device, index, &mut *step, b)? {
            Some(bytes) => probes.push((b, bytes)),
            None => {
                return Err(Error::failed(format!(
                    "--batch -1: the probe at batch {b} ran out of CUDA memory; pass a batch"
                )));
            }
        }
    }
    let (_, total) = ops::cuda_memory_info(index)?;
    let chosen = choose(&probes, total, FRACTION).ok_or_else(|| {
        Error::failed(format!(
            "--batch -1: memory did not grow with the batch ({probes:?}); pass a batch"
        ))
    })?;
    let (batch, checked) = check(chosen, |b| peak_of(device, index, &mut *step, b))?;
    Ok(Fit { probes, total_bytes: total, checked, batch })
}

/// The peak allocated bytes of `step(batch)`, `None` when it ran out of
/// CUDA memory (libtorch's error, a panic in tch, caught here; any other
/// failure is returned as one).
fn peak_of(
    device: Device,
    index: usize,
    step: &mut impl FnMut(usize) -> Result<()>,
    batch: usize,
) -> Result<Option<i64>> {
    ops::cuda_empty_cache()?;
    profiler::cuda_reset_peak(index)?;
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| step(batch))) {
        Ok(r) => r?,
        Err(payload) => {
            // The hook kept this panic's sentence; it is handled here.
            let kept = crate::panics::take();
            let msg = crate::panics::message(payload.as_ref());
            if msg.contains("out of memory") {
                ops::cuda_empty_cache()?;
                return Ok(None);
            }
            return Err(Error::failed(kept.unwrap_or_else(|| crate::panics::sentence(msg, ""))));
        }
    }
    crate::device::sync(device);
    Ok(Some(profiler::cuda_peak_allocated(index)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: i64 = 1 << 30;

    #[test]
    fn the_line_through_the_probes_picks_seventy_percent_of_memory() {
        // 1 GiB fixed + 0.5 GiB per image on a 100 GiB device:
        // 0.7·100 = 1 + 0.5·b → b = 138.
        let probes: Vec<(usize, i64)> =
            PROBES.iter().map(|&b| (b, GIB + b as i64 * GIB / 2)).collect();
        assert_eq!(choose(&probes, 100 * GIB, FRACTION), Some(138));
        assert_eq!(choose(&probes, 10_000 * GIB, FRACTION), Some(MAX_BATCH));
        assert_eq!(choose(&probes, GIB, FRACTION), Some(1), "never below one image");
        assert_eq!(choose(&[(2, GIB), (4, GIB)], 100 * GIB, FRACTION), None, "flat memory");
        assert_eq!(choose(&[(2, GIB)], 100 * GIB, FRACTION), None);
    }

    #[test]
    fn a_batch_out_of_memory_is_shrunk_until_one_runs() {
        // Memory for 300 images: 534 → 427 → 341 → 272.
        let fits = |b: usize| Ok((b <= 300).then_some(b as i64 * GIB));
        let (batch, tried) = check(534, fits).unwrap();
        assert_eq!(batch, 272);
        assert_eq!(tried, vec![(534, None), (427, None), (341, None), (272, Some(272 * GIB))]);
        assert_eq!(check(100, fits).unwrap(), (100, vec![(100, Some(100 * GIB))]));
        let e = check(2000, fits).unwrap_err();
        assert!(e.to_string().contains("2000, 1600, 1280, 1024"), "{e}");
        let e = check(1, |_| Ok(None)).unwrap_err();
        assert!(e.to_string().contains("batches 1 ran"), "{e}");
        let failed = check(8, |_| Err(Error::failed("no device"))).unwrap_err();
        assert_eq!(failed.to_string(), "no device");
    }

    #[test]
    fn the_probe_needs_cuda() {
        let e = probe(Device::Cpu, &[], |_| Ok(())).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
}
