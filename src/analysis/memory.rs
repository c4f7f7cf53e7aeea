//! `[memory]` events → each device's memory over the window: a bounded
//! series, the peak with the phase and op around it, the peak per phase
//! (docs/analysis.md §9).
//!
//! The samples are kept during the pass (one small record per event, as
//! kernels keep their interval): the peak over the window and the phase
//! of each sample are known only once every range is. The op around the
//! peak takes one more, cheap pass: Kineto writes the `[memory]` events
//! after the ops that made them, so they cannot be matched as they stream.

use rustc_hash::FxHashMap as HashMap;

use super::PassRecord;
use super::ranges::{PHASE_ORDER, UNPHASED, UNPHASED_NAME};
use crate::profile::memory::{DeviceMemory, MAX_POINTS, PhaseMemory};
use crate::trace::Event;
use crate::util::round;

const MB: f64 = 1e6;
const MS: f64 = 1e6; // ns per ms

/// What the `[memory]` events said: each device's peaks, and every event
/// for the timeline.
#[derive(Debug, Default)]
pub(super) struct MemoryLog {
    pub(super) peaks: HashMap<i64, MemoryPeak>,
    /// Every `[memory]` event, per device, for the timeline.
    samples: HashMap<DeviceKey, Vec<Sample>>,
}

impl MemoryLog {
    /// Keeps a `[memory]` event from `thread`.
    pub(super) fn add(&mut self, ev: &Event<'_>, thread: u32) {
        if let Some((key, sample)) = sample(ev, thread) {
            self.samples.entry(key).or_default().push(sample);
        }
        let Some(args) = ev.args.as_ref() else { return };
        // VRAM: CUDA's and ROCm's allocators (CPU allocations carry 0).
        if !matches!(args.device_type.id(), Some(CUDA | HIP)) {
            return;
        }
        let device = args.device_id.id().unwrap_or(0);
        let peak = self.peaks.entry(device).or_default();
        if let Some(r) = args.total_reserved.get() {
            peak.reserved = peak.reserved.max(r);
        }
        if let Some(a) = args.total_allocated.get() {
            peak.allocated = peak.allocated.max(a);
        }
    }
}

/// Per-device allocator evidence from `[memory]` events.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryPeak {
    pub reserved: f64,
    pub allocated: f64,
}

/// One `[memory]` event: totals are NaN where the trace left them out.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sample {
    pub ts: i64,
    pub allocated: f64,
    pub reserved: f64,
    pub bytes: f64,
    pub thread: u32,
}

/// PyTorch's device type and index, as `[memory]` events write them.
pub(super) type DeviceKey = (i64, i64);

/// Where a device's allocated memory peaked, for the op pass.
#[derive(Debug, Clone, Copy)]
pub(super) struct Probe {
    thread: u32,
    ts: i64,
}

/// c10::DeviceType numbers of the GPUs whose memory is VRAM.
pub(super) const CUDA: i64 = 1;
pub(super) const HIP: i64 = 6;

fn label((kind, index): DeviceKey) -> String {
    // c10::DeviceType numbers.
    let name = match kind {
        0 => return "cpu".into(),
        CUDA => "cuda",
        HIP => "hip",
        9 => "xla",
        12 => "xpu",
        13 => "mps",
        other => return format!("device-type-{other}:{index}"),
    };
    format!("{name}:{index}")
}

/// A device's samples in the window, in time order, with allocated filled
/// in from the sizes when the trace wrote no totals.
struct Series {
    key: DeviceKey,
    totals: bool,
    samples: Vec<Sample>,
}

fn series(a: &PassRecord) -> Vec<Series> {
    let mut keys: Vec<DeviceKey> = a.memory.samples.keys().copied().collect();
    // GPUs first, then the host.
    keys.sort_by_key(|&(kind, index)| (kind == 0, kind, index));
    keys.into_iter()
        .filter_map(|key| {
            let mut samples = a.memory.samples[&key].clone();
            samples.sort_by_key(|s| s.ts); // stable: file order on ties
            let totals = samples.iter().any(|s| s.allocated.is_finite());
            if totals {
                samples.retain(|s| s.allocated.is_finite());
            } else {
                let mut running = 0.0;
                for s in &mut samples {
                    running += if s.bytes.is_finite() { s.bytes } else { 0.0 };
                    s.allocated = running;
                }
            }
            samples.retain(|s| a.ranges.in_step(s.ts));
            (!samples.is_empty()).then_some(Series { key, totals, samples })
        })
        .collect()
}

/// The sample where allocated peaked: the first, on a tie.
fn peak(samples: &[Sample]) -> &Sample {
    samples.iter().fold(&samples[0], |best, s| if s.allocated > best.allocated { s } else { best })
}

fn max_reserved<'s>(samples: impl Iterator<Item = &'s Sample>) -> Option<f64> {
    samples.map(|s| s.reserved).filter(|r| r.is_finite()).reduce(f64::max)
}

fn mb(bytes: f64) -> f64 {
    round(bytes / MB, 3)
}

/// Each device's timeline over the window (`peak_op` is named later, by
/// [`name_peak_ops`]).
pub(super) fn timeline(a: &PassRecord) -> Vec<DeviceMemory> {
    let start = a.ranges.step_intervals().first().map(|s| s.0).or(a.span.map(|s| s.0)).unwrap_or(0);
    series(a)
        .into_iter()
        .map(|s| {
            let top = peak(&s.samples);
            let phase_name = |id: u16| {
                if id == UNPHASED {
                    UNPHASED_NAME.to_string()
                } else {
                    a.phases.name(id).to_string()
                }
            };
            let mut by_phase: HashMap<u16, (f64, Option<f64>)> = HashMap::default();
            for x in &s.samples {
                let e =
                    by_phase.entry(a.ranges.cpu_phase(x.thread, x.ts)).or_insert((f64::MIN, None));
                e.0 = e.0.max(x.allocated);
                if x.reserved.is_finite() {
                    e.1 = Some(e.1.map_or(x.reserved, |r: f64| r.max(x.reserved)));
                }
            }
            let mut ids: Vec<u16> = by_phase.keys().copied().collect();
            let rank = |id: &u16| {
                let name = a.phases.name(*id);
                (
                    *id == UNPHASED,
                    PHASE_ORDER.iter().position(|p| *p == name).unwrap_or(PHASE_ORDER.len()),
                    *id,
                )
            };
            ids.sort_by_key(rank);
            DeviceMemory {
                device: label(s.key),
                totals: s.totals,
                events: s.samples.len() as u64,
                peak_allocated_mb: mb(top.allocated),
                peak_reserved_mb: max_reserved(s.samples.iter()).map(mb),
                peak_ms: round((top.ts - start) as f64 / MS, 3),
                peak_phase: phase_name(a.ranges.cpu_phase(top.thread, top.ts)),
                peak_op: None,
                phases: ids
                    .into_iter()
                    .map(|id| PhaseMemory {
                        phase: phase_name(id),
                        peak_allocated_mb: mb(by_phase[&id].0),
                        peak_reserved_mb: by_phase[&id].1.map(mb),
                    })
                    .collect(),
                series: downsample(&s.samples, start),
            }
        })
        .collect()
}

/// At most [`MAX_POINTS`] points: past that, the window is cut into
/// `MAX_POINTS / 2` time buckets and each keeps its lowest and highest
/// allocated sample, so neither the peak nor a dip is lost.
fn downsample(samples: &[Sample], start: i64) -> Vec<(f64, f64, Option<f64>)> {
    let point = |s: &Sample| {
        (
            round((s.ts - start) as f64 / MS, 3),
            mb(s.allocated),
            s.reserved.is_finite().then(|| mb(s.reserved)),
        )
    };
    if samples.len() <= MAX_POINTS {
        return samples.iter().map(point).collect();
    }
    let buckets = (MAX_POINTS / 2) as i128;
    let (first, last) = (samples[0].ts, samples[samples.len() - 1].ts);
    let span = i128::from(last - first) + 1;
    let mut out = Vec::with_capacity(MAX_POINTS);
    let mut i = 0;
    while i < samples.len() {
        let bucket = i128::from(samples[i].ts - first) * buckets / span;
        let mut j = i;
        let (mut lo, mut hi) = (i, i);
        while j < samples.len() && i128::from(samples[j].ts - first) * buckets / span == bucket {
            if samples[j].allocated < samples[lo].allocated {
                lo = j;
            }
            if samples[j].allocated > samples[hi].allocated {
                hi = j;
            }
            j += 1;
        }
        let (a, b) = (lo.min(hi), lo.max(hi));
        out.push(point(&samples[a]));
        if b != a {
            out.push(point(&samples[b]));
        }
        i = j;
    }
    out
}

/// Where each device of [`timeline`] peaked, in the same order.
pub(super) fn probes(a: &PassRecord) -> Vec<Probe> {
    series(a)
        .iter()
        .map(|s| {
            let p = peak(&s.samples);
            Probe { thread: p.thread, ts: p.ts }
        })
        .collect()
}

/// The innermost CPU op around each probe on its thread (the shortest; on
/// equal lengths, the later start), from the ops the pass kept.
pub(super) fn ops_at(a: &PassRecord, probes: &[Probe]) -> Vec<Option<String>> {
    probes
        .iter()
        .map(|p| {
            a.op_records()
                .filter(|o| o.thread == p.thread && o.start <= p.ts && p.ts <= o.start + o.dur)
                .min_by_key(|o| (o.dur, std::cmp::Reverse(o.start)))
                .map(|o| a.names.get(o.name).to_string())
        })
        .collect()
}

/// Records a `[memory]` event's sample (ids of the thread and device).
pub(super) fn sample(ev: &Event<'_>, thread: u32) -> Option<(DeviceKey, Sample)> {
    let args = ev.args.as_ref()?;
    let ts = crate::trace::kind::ts_ns(ev.ts.get())?;
    let key = (args.device_type.id().unwrap_or(-1), args.device_id.id().unwrap_or(0));
    let nan = f64::NAN;
    let sample = Sample {
        ts,
        allocated: args.total_allocated.get().unwrap_or(nan),
        reserved: args.total_reserved.get().unwrap_or(nan),
        bytes: args.bytes.get().unwrap_or(nan),
        thread,
    };
    Some((key, sample))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_series_keeps_its_peak_and_its_dips_within_the_bound() {
        // A saw-tooth of 10 000 samples with one spike in the middle.
        let samples: Vec<Sample> = (0..10_000)
            .map(|i| Sample {
                ts: i * 1000,
                allocated: if i == 5_003 { 9e9 } else { ((i % 7) as f64) * 1e6 },
                reserved: 1e10,
                bytes: 0.0,
                thread: 0,
            })
            .collect();
        let out = downsample(&samples, 0);
        assert!(out.len() <= MAX_POINTS, "{} points", out.len());
        assert!(
            out.len() > MAX_POINTS / 2,
            "two points per bucket where they differ: {}",
            out.len()
        );
        assert!(out.iter().any(|p| p.1 == 9000.0 && p.0 == 5.003), "the spike survives");
        assert_eq!(out.iter().filter(|p| p.1 == 0.0).count(), MAX_POINTS / 2, "each bucket's dip");
        assert!(out.windows(2).all(|w| w[0].0 < w[1].0), "time order");
        let short = downsample(&samples[..100], 0);
        assert_eq!(short.len(), 100, "a short series is kept whole");
    }

    #[test]
    fn devices_are_named_as_pytorch_does() {
        assert_eq!(label((1, 0)), "cuda:0");
        assert_eq!(label((6, 3)), "hip:3");
        assert_eq!(label((0, -1)), "cpu");
    }
}
