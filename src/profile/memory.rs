//! `profile.json`'s `memory`: the allocator timeline of the window, per
//! device (docs/profile-schema.md §2, docs/analysis.md §9). Optional, so
//! profiles written before it still load.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One device's memory over the window, from the trace's `[memory]` events.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct DeviceMemory {
    /// `cuda:0`, `hip:0`, `cpu`, … (PyTorch's device type and index).
    pub device: String,
    /// False when the trace's events carry only allocation sizes (PyTorch
    /// before 1.10): allocated is then counted from the first event, so it
    /// is relative to whatever was allocated before the profiler started.
    pub totals: bool,
    /// `[memory]` events of this device inside the window.
    pub events: u64,
    pub peak_allocated_mb: f64,
    /// Absent when the events carry no reserved total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_reserved_mb: Option<f64>,
    /// When allocated peaked, ms from the window's start (its first time).
    pub peak_ms: f64,
    /// The phase the allocating thread was in at the peak.
    pub peak_phase: String,
    /// The innermost CPU op on the allocating thread around the peak.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_op: Option<String>,
    /// The peak of each phase, in phase order.
    pub phases: Vec<PhaseMemory>,
    /// `[ms from the window's start, allocated MB, reserved MB or null]`,
    /// in time order, at most [`MAX_POINTS`]: a longer series keeps each
    /// time bucket's lowest and highest allocated point, so the peak stays.
    pub series: Vec<(f64, f64, Option<f64>)>,
}

/// Peak memory of one phase.
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize, PartialEq)]
#[serde(default)]
pub struct PhaseMemory {
    pub phase: String,
    pub peak_allocated_mb: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_reserved_mb: Option<f64>,
}

/// Most points a stored series keeps.
pub const MAX_POINTS: usize = 1024;
