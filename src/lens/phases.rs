//! `profile phases`: per-phase GPU time, wall time, kernels and ops.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::profile::{PhaseRow, Profile};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Phases {
    pub trace: Option<String>,
    pub phases: Vec<PhaseRow>,
    /// How the phases were inferred, when the trace has no phase ranges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inferred: Option<String>,
}

pub fn phases(p: &Profile) -> Phases {
    Phases { trace: p.trace.clone(), phases: p.phases.clone(), inferred: p.phases_inferred.clone() }
}

/// Checks a `--phase` argument against the profile's phases (exit 2 with
/// the list when it does not resolve).
pub fn check_phase(p: &Profile, phase: &str) -> Result<()> {
    let names = p.phase_names();
    if names.iter().any(|n| *n == phase) {
        Ok(())
    } else if names.is_empty() {
        Err(Error::usage(format!("unknown phase '{phase}': this profile records no phases")))
    } else {
        Err(Error::usage(format!("unknown phase '{phase}'. available: {}", names.join(", "))))
    }
}
