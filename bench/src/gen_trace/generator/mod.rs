//! The generator: the events of one chunk (the prelude before the first
//! step, one training step, the epilogue) as `torch.profiler` records them
//! for the model, and the ground truth counted as they are made. It is
//! deterministic for a seed, so the driver runs it again for each section
//! of the trace rather than hold the trace.
//!
//! The state is here; `cpu.rs` records the CPU ranges (ops, annotations,
//! `[memory]`), `gpu.rs` the CUDA runtime calls and the GPU work they start
//! (the straggler's too), `step.rs` what a step does with them.

mod cpu;
mod gpu;
mod step;

use crate::events::{Ann, CpuEv, GpuEv};
use crate::job::{JobSpec, SLOW_KERNEL};
use crate::model::{KSpec, Model};
use crate::rng::Rng;
use crate::truth::Truth;

pub(super) struct Gen {
    rng: Rng,
    pub(super) model: Model,
    pub(super) pid: i64,
    pub(super) main_tid: i64,
    pub(super) bwd_tid: i64,
    tid: i64,
    /// CPU time on `tid`, ns.
    pub(super) now: i64,
    corr: u64,
    ext: u64,
    cur_ext: u64,
    seq_nr: u64,
    pub(super) stream_free: [i64; 2],
    alloc: i64,
    reserved: i64,
    addr: u64,
    step_no: u64,
    phase: Option<usize>,
    in_step: bool,
    pub(super) start_ts: i64,
    pub(super) cpu: Vec<CpuEv>,
    pub(super) gpu: Vec<GpuEv>,
    pub(super) ann: Vec<Ann>,
    /// This step's kernel intervals and, per phase, its GPU extent.
    spans: Vec<(i64, i64)>,
    phase_gpu: [Option<(i64, i64)>; 5],
    pub(super) truth: Truth,
    pub(super) job: Option<JobSpec>,
    /// The straggler's extra kernel (a model entry made without the RNG,
    /// so every rank draws the same numbers).
    slow_kernel: Option<usize>,
    /// `stretch`: ns to add to the next compute kernel launched.
    stretch_next: i64,
    /// `stretch`: whether this step's first all-reduce is still to come.
    first_allreduce: bool,
    /// `stretch`: each all-reduce so far (start, dur); on the others, the
    /// straggler's, to wait for.
    pub(super) arrivals: Vec<(i64, i64)>,
    pub(super) wait_for: Vec<(i64, i64)>,
    /// The next comm kernel lasts until this one (start, dur) ends.
    wait_until: Option<(i64, i64)>,
    /// `stretch`, on the others: their waits for it inside the steps, ns.
    pub(super) waited_ns: i64,
    /// `stretch`, on the straggler: the kernel stretched.
    pub(super) stretched: Option<usize>,
}

impl Gen {
    pub(super) fn new(seed: u64, job: Option<JobSpec>) -> Gen {
        let mut rng = Rng::new(seed);
        let mut model = Model::build(&mut rng);
        let slow_kernel = job.and_then(|j| j.slow).map(|(_, ns)| {
            let name = model.name(SLOW_KERNEL.into(), false);
            model.kernels.push(KSpec {
                name,
                nelems: 0,
                dur: ns,
                grid: [132, 1, 1],
                block: [256, 1, 1],
                regs: 32,
                smem: 0,
            });
            model.kernels.len() - 1
        });
        let pid = rng.range(1_000_000, 3_999_999);
        let start = rng.range(40_000_000, 90_000_000) * 1_000_000 + rng.range(0, 999_999); // ns, like Kineto 2.x relative ts
        Gen {
            rng,
            model,
            pid,
            main_tid: pid,
            bwd_tid: pid + 9_503,
            tid: pid,
            now: start,
            corr: 1_000 + seed % 1000,
            ext: 0,
            cur_ext: 0,
            seq_nr: 0,
            stream_free: [0, 0],
            alloc: 1_300_000_000,
            reserved: 2_000_000_000,
            addr: 139_637_976_727_552,
            step_no: 10 + seed % 7,
            phase: None,
            in_step: false,
            start_ts: start,
            cpu: Vec::new(),
            gpu: Vec::new(),
            ann: Vec::new(),
            spans: Vec::new(),
            phase_gpu: [None; 5],
            truth: Truth::new(seed),
            job,
            slow_kernel,
            stretch_next: 0,
            first_allreduce: false,
            arrivals: Vec::new(),
            wait_for: Vec::new(),
            wait_until: None,
            waited_ns: 0,
            stretched: None,
        }
    }

    fn clear(&mut self) {
        self.cpu.clear();
        self.gpu.clear();
        self.ann.clear();
        self.spans.clear();
        self.phase_gpu = [None; 5];
    }

    /// Advances CPU time by a small jittered gap.
    fn tick(&mut self, ns: i64) -> i64 {
        self.now += self.rng.jitter(ns, 0.4);
        self.now
    }
}
