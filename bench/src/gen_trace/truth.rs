//! The ground truth written beside a trace as `<out>.expect.json`: what
//! the analysis must find (steps, kernels per step, unique kernels, kernel
//! time, ops per phase, GPU busy time as the union of kernel intervals...),
//! counted from the generator's own events as it records them, never from
//! the analysis, so that the readers can be tested against it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::model::{DEVICE, DEVICE_NAME, PHASES, STREAMS, TOTAL_GLOBAL_MEM};

#[derive(Debug, Default, Clone, Serialize)]
pub(super) struct PhaseTruth {
    phase: String,
    pub(super) kernels: u64,
    kernels_per_step: f64,
    pub(super) ops: u64,
    ops_per_step: f64,
    unique_kernels: u64,
    pub(super) kernel_ns: i64,
    pub(super) memcpy_events: u64,
    pub(super) memcpy_ns: i64,
    /// CPU wall time of the `step/<phase>` ranges, all steps.
    pub(super) wall_ns: i64,
    #[serde(skip)]
    pub(super) names: BTreeSet<u32>,
}

#[derive(Debug, Default, Serialize)]
pub(super) struct Truth {
    /// `--slow-mode stretch` (a job's ranks, not written): the rank's
    /// all-reduces, its waits for the straggler, the kernel stretched.
    #[serde(skip)]
    pub(super) arrivals: Vec<(i64, i64)>,
    #[serde(skip)]
    pub(super) waited_ns: i64,
    #[serde(skip)]
    pub(super) stretched: Option<String>,
    generator: &'static str,
    seed: u64,
    pub(super) gzip: bool,
    /// Uncompressed bytes of the JSON document.
    pub(super) bytes: u64,
    pub(super) events: u64,
    pub(super) events_by_kind: BTreeMap<String, u64>,
    device: i64,
    device_name: &'static str,
    total_global_mem: u64,
    streams: Vec<i64>,
    pub(super) steps: u64,
    pub(super) first_step: u64,
    /// Kernel events launched inside the steps.
    pub(super) kernels: u64,
    pub(super) kernels_per_step: f64,
    pub(super) unique_kernels: u64,
    pub(super) kernel_ns: i64,
    pub(super) kernel_ms_per_step: f64,
    mean_kernel_us: f64,
    pub(super) tensorcore_ns: i64,
    tensorcore_pct: f64,
    /// gpu_memcpy + gpu_memset inside the steps.
    pub(super) memcpy_events: u64,
    pub(super) memcpy_ns: i64,
    /// kernels + memcpy + memset inside the steps: all joined by correlation.
    pub(super) gpu_events_in_steps: u64,
    pub(super) gpu_events_outside_steps: u64,
    pub(super) cpu_ops: u64,
    pub(super) ops_per_step: f64,
    pub(super) runtime_launches: u64,
    /// Sum of the `ProfilerStep#N` durations.
    pub(super) step_wall_ns: i64,
    step_ms: f64,
    /// Union of kernel intervals on the device, inside the steps.
    pub(super) gpu_busy_ns: i64,
    pub(super) gpu_busy_ms_per_step: f64,
    pub(super) gpu_util: f64,
    gpu_util_raw: f64,
    pub(super) peak_reserved_bytes: i64,
    pub(super) peak_allocated_bytes: i64,
    pub(super) phases: Vec<PhaseTruth>,
    #[serde(skip)]
    pub(super) names: BTreeSet<u32>,
}

impl Truth {
    pub(super) fn new(seed: u64) -> Truth {
        let mut truth =
            Truth { generator: "libreyolo-bench gen-trace", seed, ..Default::default() };
        truth.phases = PHASES
            .iter()
            .map(|p| PhaseTruth { phase: p.to_string(), ..Default::default() })
            .collect();
        truth
    }

    /// The figures derived from the counts, once the trace is written.
    pub(super) fn finish(&mut self) {
        let n = self.steps as f64;
        self.device = DEVICE;
        self.device_name = DEVICE_NAME;
        self.total_global_mem = TOTAL_GLOBAL_MEM;
        self.streams = STREAMS.to_vec();
        self.kernels_per_step = self.kernels as f64 / n;
        self.unique_kernels = self.names.len() as u64;
        self.kernel_ms_per_step = self.kernel_ns as f64 / 1e6 / n;
        self.mean_kernel_us =
            if self.kernels > 0 { self.kernel_ns as f64 / 1e3 / self.kernels as f64 } else { 0.0 };
        self.tensorcore_pct = 100.0 * self.tensorcore_ns as f64 / self.kernel_ns.max(1) as f64;
        self.ops_per_step = self.cpu_ops as f64 / n;
        self.step_ms = self.step_wall_ns as f64 / 1e6 / n;
        self.gpu_busy_ms_per_step = self.gpu_busy_ns as f64 / 1e6 / n;
        self.gpu_util = self.gpu_busy_ns as f64 / self.step_wall_ns as f64;
        self.gpu_util_raw = self.kernel_ns as f64 / self.step_wall_ns as f64;
        for p in &mut self.phases {
            p.kernels_per_step = p.kernels as f64 / n;
            p.ops_per_step = p.ops as f64 / n;
            p.unique_kernels = p.names.len() as u64;
        }
    }
}
