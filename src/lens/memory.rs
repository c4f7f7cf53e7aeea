//! `profile memory`: allocated and reserved memory over the window, the
//! peak with the phase and op around it, and each phase's peak
//! (docs/spec.md §3). Computed when the profile is built (the trace's
//! `[memory]` events); this lens only hands it on, so the command and the
//! explorer's pane show the same figures.

use schemars::JsonSchema;
use serde::Serialize;

use crate::profile::{DeviceMemory, Profile};

/// Said instead of a table when the profile holds no memory timeline.
pub const NO_MEMORY: &str = "no memory events in this trace: record with profile_memory=True (torch.profiler) to see allocated and reserved memory";

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Memory {
    pub trace: Option<String>,
    /// The window's wall time, the span the series covers.
    pub window_ms: f64,
    /// One timeline per device that recorded `[memory]` events, GPUs first.
    pub devices: Vec<DeviceMemory>,
    /// [`NO_MEMORY`] when `devices` is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub none: Option<String>,
}

pub fn memory(p: &Profile) -> Memory {
    Memory {
        trace: p.trace.clone(),
        window_ms: p.figures.window.wall_ms,
        devices: p.memory.clone(),
        none: p.memory.is_empty().then(|| NO_MEMORY.to_string()),
    }
}

impl Memory {
    /// Allocated MB of `device`'s series, in time order (for a sparkline or
    /// a chart; the series keeps its peak however long the window).
    pub fn allocated(device: &DeviceMemory) -> Vec<f64> {
        device.series.iter().map(|p| p.1).collect()
    }
}
