//! The profile: its schema, the measured sidecar, the flat metric map, and
//! loading any input (ours, the reference's, a raw trace) as a profile.

pub mod kinds;
mod load;
pub mod measured;
pub mod memory;
pub mod metrics;
pub mod ranks;
pub mod repeat;
pub mod schema;

pub use kinds::{Category, Mode, Verdict};
pub use load::{
    Input, LoadOptions, Loaded, check_write_target, json_files_in, load, resolve_input,
    write_atomic, write_atomic_with, write_json,
};
pub use measured::{Measurements, RunConfig};
pub use memory::{DeviceMemory, PhaseMemory};
pub use schema::*;
