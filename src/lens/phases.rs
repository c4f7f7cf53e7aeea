//! `profile phases`: per-phase GPU time, wall time, kernels and ops.

use schemars::JsonSchema;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::profile::{PhaseRow, Profile};

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Phases {
    pub trace: Option<String>,
    pub phases: Vec<PhaseRow>,
    /// How the phases were inferred, when the trace has no phase ranges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inferred: Option<String>,
}

pub fn phases(p: &Profile) -> Phases {
    Phases {
        trace: p.trace.clone(),
        phases: p.phases.clone(),
        inferred: p.extras.phases_inferred.clone(),
    }
}

impl Phases {
    /// Each phase's time (wall where measured, else GPU) over the longest
    /// phase's: the length of its bar.
    pub fn bars(&self) -> Vec<f64> {
        let time = |r: &PhaseRow| r.wall_ms_per_step.unwrap_or(r.gpu_ms_per_step);
        let max = self.phases.iter().map(time).fold(0.0, f64::max);
        self.phases.iter().map(|r| if max > 0.0 { time(r) / max } else { 0.0 }).collect()
    }

    /// A phase's GPU time counts the kernels launched in it, wherever and
    /// however they ran: where it is longer than the phase's wall time,
    /// they ran on after the phase or side by side on several streams
    /// (docs/analysis.md §6). Said, per such phase, so the two columns do
    /// not read as a contradiction.
    pub fn gpu_past_wall(&self) -> Option<String> {
        let past: Vec<String> = self
            .phases
            .iter()
            .filter_map(|r| {
                let wall = r.wall_ms_per_step?;
                (r.gpu_ms_per_step > wall + 0.005)
                    .then(|| format!("{} {:.2} ms in {:.2}", r.phase, r.gpu_ms_per_step, wall))
            })
            .collect();
        (!past.is_empty()).then(|| {
            format!(
                "GPU time above wall time ({}): a phase's GPU time is the kernel time launched in it, run after the phase ends (queued) or on several streams at once",
                past.join(", ")
            )
        })
    }
}

/// Checks a `--phase` argument against the profile's phases (exit 2 with
/// the list when it does not resolve).
pub fn check_phase(p: &Profile, phase: &str) -> Result<()> {
    let names = p.phase_names();
    if names.contains(&phase) {
        Ok(())
    } else if names.is_empty() {
        Err(Error::usage(format!("unknown phase '{phase}': this profile records no phases")))
    } else {
        Err(Error::usage(format!("unknown phase '{phase}'. available: {}", names.join(", "))))
    }
}
