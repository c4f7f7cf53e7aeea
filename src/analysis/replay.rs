//! What the step- and phase-keyed aggregates are counted (again) from.

use crate::trace::GpuWork;

use super::gpulog::GpuLog;
use super::launches::{GpuEvent, Placed};

/// What the step- and phase-keyed aggregates are counted from, kept
/// during the pass (docs/analysis.md §1): when the ranges turn out to
/// differ at the end (phases inferred, or a step marker written after the
/// work it encloses), the aggregates are counted again from this and from
/// the ops of the [`CpuLog`](super::cpulog::CpuLog) instead of reading the trace a second
/// time. O(calls + GPU events), small records.
#[derive(Debug, Default)]
pub(super) struct Replay {
    /// Allocator and graph-launch calls (the other calls count nothing).
    pub(super) calls: Vec<CallRec>,
    /// Every GPU event counted, in the order it was.
    pub(super) gpu: Vec<GpuRec>,
    /// The GPU events kept whole ([`GpuRec::Event`]), in the same order.
    pub(super) events: Vec<(GpuEvent, Placed)>,
}

impl Replay {
    /// Keeps a GPU event as it is counted: a kernel as its entry in `log`.
    pub(super) fn keep(&mut self, log: &GpuLog, gpu: GpuEvent, how: Placed) {
        let kernel = gpu.span.filter(|_| gpu.kind == GpuWork::Kernel);
        let rec = match (kernel, how) {
            // A launch is given to the span before its kernel is counted.
            (Some(span), Placed::Launch { thread, start, graph })
                if log.kernel_spans[span as usize]
                    .launch()
                    .is_some_and(|l| (l.thread, l.start) == (thread, start)) =>
            {
                GpuRec::Kernel { span, launched: true, graph }
            }
            (Some(span), Placed::Time) => GpuRec::Kernel { span, launched: false, graph: false },
            _ => {
                self.events.push((gpu, how));
                GpuRec::Event
            }
        };
        self.gpu.push(rec);
    }
}

/// A kept kernel as it was counted.
pub(super) fn kernel(log: &GpuLog, span: u32, launched: bool, graph: bool) -> (GpuEvent, Placed) {
    let k = &log.kernel_spans[span as usize];
    let gpu = GpuEvent {
        kind: GpuWork::Kernel,
        name: k.name,
        device: log.device(k),
        ts: k.start,
        dur: k.end - k.start,
        span: Some(span),
    };
    let how = match k.launch().filter(|_| launched) {
        Some(l) => Placed::Launch { thread: l.thread, start: l.start, graph },
        None => Placed::Time,
    };
    (gpu, how)
}

/// A GPU event counted, to count again (8 bytes). A kernel is its entry
/// in `GpuLog::kernel_spans`, which holds its name, time, device and
/// launch: kept whole beside it, it was 56 bytes a kernel, the pass's
/// largest state on a real trace.
#[derive(Debug, Clone, Copy)]
pub(super) enum GpuRec {
    /// A kernel placed by its launch (its span's) or, without, by time.
    Kernel { span: u32, launched: bool, graph: bool },
    /// Anything else: the next of `Replay::events`.
    Event,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct CallRec {
    pub(super) start: i64,
    pub(super) malloc: bool,
    pub(super) graph: bool,
}
