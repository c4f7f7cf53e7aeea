//! What the pass counts of the trace as a whole: the attribution's
//! counters and the evidence of the work it recorded.

/// Counters for the attribution report.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub events: u64,
    pub malformed: u64,
    pub gpu_in_steps: u64,
    pub via_launch: u64,
    pub via_time: u64,
    pub gpu_outside: u64,
    pub mallocs: u64,
    /// Kernels in the steps that a CUDA/HIP graph launch owns.
    pub graph_kernels: u64,
    /// `cudaGraphLaunch` / `hipGraphLaunch` calls inside the steps.
    pub graph_launches: u64,
    /// Kernels in the steps whose launch the trace did not record (placed
    /// by time): the host launched them through a call the profiler missed.
    pub kernels_via_time: u64,
    /// GPU work whose correlation named a launch that began after it: ids
    /// of another process (a merged trace), not paired.
    pub launch_after_work: u64,
}

/// What the trace shows about the work it recorded (docs/analysis.md §10, mode).
#[derive(Debug, Clone, Copy, Default)]
pub struct WorkSigns {
    /// CPU ops of any kind, anywhere in the trace.
    pub cpu_ops: u64,
    /// Autograd backward work: `*Backward*` ops, the autograd engine.
    pub backward_ops: u64,
    /// `Optimizer.step#…` / `Optimizer.zero_grad#…` ranges or ops.
    pub optimizer_marks: u64,
    /// Runtime calls named `hip…` (a ROCm trace) and `cuda…`/`cu…`.
    pub hip_calls: u64,
    pub cuda_calls: u64,
    /// `cudaStreamBeginCapture` / `hipStreamBeginCapture`: the window
    /// records a graph capture, whose kernels are recorded, not run.
    pub graph_captures: u64,
}
