//! What CUPTI's synchronisation records say (`cuda_sync`, written when a
//! trace is recorded with `enable_cuda_sync_events`; docs/analysis.md
//! §14.1): which stream waited for which event's record, and what each
//! synchronising call waited for. They name runtime calls by correlation,
//! so the pass keeps those calls' times beside them and the step model
//! resolves both at the end: recorded waits in place of inferred ones.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::model::{Recorded, StreamWait, SyncOn};
use crate::trace::event::Num;
use crate::trace::{Event, SyncKind};

/// One `cuda_sync` record.
#[derive(Debug, Clone, Copy)]
pub struct SyncRecord {
    pub kind: SyncKind,
    /// The correlation of the call that waited (`cudaStreamWaitEvent`,
    /// `cudaStreamSynchronize`, …).
    pub call: i64,
    pub device: i64,
    /// The stream that waits (a stream wait) or is waited for (a stream
    /// sync).
    pub stream: i64,
    /// The stream the awaited event was recorded on, and the correlation
    /// of the `cudaEventRecord` call (event waits; -1 when not recorded).
    pub on_stream: i64,
    pub on_record: i64,
}

impl SyncRecord {
    /// The record `ev` is, when it names the call that waited.
    pub(super) fn of(ev: &Event<'_>, kind: SyncKind) -> Option<SyncRecord> {
        let call = ev.correlation()?;
        let args = ev.args.as_ref();
        let id = |n: Option<&Num>| n.and_then(|n| n.id()).unwrap_or(-1);
        Some(SyncRecord {
            kind,
            call,
            device: ev.gpu_device(),
            stream: id(args.map(|a| &a.stream)),
            on_stream: id(args.map(|a| &a.wait_on_stream)),
            on_record: id(args.map(|a| &a.wait_on_record)),
        })
    }
}

/// The records and the runtime calls they may name.
#[derive(Debug, Default)]
pub struct SyncLog {
    records: Vec<SyncRecord>,
    /// Event records, stream waits and synchronising calls: (correlation,
    /// thread, start, end). Kept whatever the trace holds, as its records
    /// may come after them; a few per step.
    calls: Vec<(i64, u32, i64, i64)>,
}

impl SyncLog {
    pub fn record(&mut self, r: SyncRecord) {
        self.records.push(r);
    }

    pub fn call(&mut self, correlation: i64, thread: u32, start: i64, end: i64) {
        self.calls.push((correlation, thread, start, end));
    }

    /// The records with their calls' host times; those whose calls the
    /// trace lacks are left out.
    pub fn resolve(&self) -> Recorded {
        let mut out = Recorded::default();
        if self.records.is_empty() {
            return out;
        }
        let calls: HashMap<i64, (u32, i64, i64)> =
            self.calls.iter().map(|&(c, t, s, e)| (c, (t, s, e))).collect();
        let mut devices: HashSet<i64> = HashSet::default();
        for r in &self.records {
            devices.insert(r.device);
            let Some(&call) = calls.get(&r.call) else { continue };
            let record = (r.on_stream >= 0)
                .then(|| calls.get(&r.on_record))
                .flatten()
                .map(|&(_, at, _)| (r.on_stream, at));
            match r.kind {
                SyncKind::StreamWait => {
                    if let Some((on_stream, record_at)) = record {
                        out.waits.push(StreamWait {
                            device: r.device,
                            stream: r.stream,
                            wait_at: call.1,
                            on_stream,
                            record_at,
                        });
                    }
                }
                SyncKind::EventSync => {
                    if let Some((stream, at)) = record {
                        out.sync_on.insert(call, SyncOn::Record { device: r.device, stream, at });
                    }
                }
                SyncKind::StreamSync => {
                    let on = SyncOn::Stream { device: r.device, stream: r.stream };
                    out.sync_on.insert(call, on);
                }
                SyncKind::ContextSync => {
                    out.sync_on.insert(call, SyncOn::Device(r.device));
                }
            }
        }
        out.devices = devices.into_iter().collect();
        out.devices.sort_unstable();
        out
    }
}
