//! The profile: its schema, the measured sidecar, the flat metric map, the
//! named values, and the rank set's shape. Data only: loading an input is
//! [`crate::input`]'s, analysing a trace [`crate::analysis`]'s.

pub mod facts;
pub mod kinds;
pub mod measured;
pub mod memory;
pub mod metrics;
pub mod ranks;
pub mod repeat;
pub mod schema;
pub mod tree;

pub use facts::TraceFacts;
pub use kinds::{Category, HealthCheck, LeverKind, Mode, Severity, Verdict};
pub use measured::{Measurements, RunConfig};
pub use memory::{DeviceMemory, PhaseMemory};
pub use schema::*;
pub use tree::{CallNode, CallTree, NodeKind};

use std::path::PathBuf;

/// A loaded input: where it came from and the profile it gives.
#[derive(Debug, Clone)]
pub struct Input {
    pub path: PathBuf,
    pub profile: Profile,
    /// True when the profile was analysed from a raw trace just now.
    pub from_trace: bool,
}

/// For `skip_serializing_if`: a count that is zero is left out.
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}
