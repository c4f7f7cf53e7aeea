//! `--batch -1`: fit the batch to CUDA memory. The probe runs real training
//! steps (forward with the loss, backward; AMP as the run will use it) at a
//! few small batches, reads the peak of allocated memory after each, fits a
//! line `bytes = a + b·batch` and picks the batch whose line reaches
//! [`FRACTION`] of the device's total memory. BatchNorm statistics are
//! restored afterwards and the optimizer never steps, so the probe leaves
//! the model as it found it.

use libreyolo_core::{Error, Result};
use tch::{Device, Tensor};

use crate::{ops, profiler};

/// Share of total VRAM the chosen batch should use (docs/spec.md §2.2).
pub const FRACTION: f64 = 0.70;
/// Batches probed.
pub const PROBES: [usize; 3] = [2, 4, 8];
/// Largest batch ever chosen: the largest `--batch` takes.
pub const MAX_BATCH: usize = libreyolo_core::cli::limits::MAX_BATCH;

/// What the probe saw and chose; recorded in the profile's config.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// (batch, peak allocated bytes) per probe.
    pub probes: Vec<(usize, i64)>,
    pub total_bytes: i64,
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

/// Probes CUDA device `device` with `step(batch)`, which must run one
/// forward + loss + backward at that batch and clear the gradients.
/// `bn_state` are the tensors to restore afterwards (running statistics).
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
    let mut probes = Vec::new();
    let mut result = Ok(());
    for b in PROBES {
        ops::cuda_empty_cache()?;
        profiler::cuda_reset_peak(index)?;
        if let Err(e) = step(b) {
            result = Err(e);
            break;
        }
        crate::device::sync(device);
        probes.push((b, profiler::cuda_peak_allocated(index)?));
    }
    tch::no_grad(|| {
        for (t, s) in bn_state.iter().zip(&saved) {
            t.shallow_clone().copy_(s);
        }
    });
    ops::cuda_empty_cache()?;
    result?;
    let (_, total) = ops::cuda_memory_info(index)?;
    let batch = choose(&probes, total, FRACTION).ok_or_else(|| {
        Error::failed(format!(
            "--batch -1: memory did not grow with the batch ({probes:?}); pass a batch"
        ))
    })?;
    Ok(Fit { probes, total_bytes: total, batch })
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
    fn the_probe_needs_cuda() {
        let e = probe(Device::Cpu, &[], |_| Ok(())).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
}
