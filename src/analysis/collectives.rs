//! The communication kernels of one trace, in time order, with the
//! collective arguments PyTorch records on them: the per-rank half of
//! matching collectives across a job's ranks (docs/analysis.md §11). The
//! list is compact (one small record per collective, no kernel names), so
//! a rank's profile carries it and the job view is a reduce over profiles.

use rustc_hash::FxHashMap as HashMap;

use super::PassRecord;
use super::idle::Gaps;
use super::kernel_index::{DeviceSpans, KernelIndex};
use crate::profile::{CollectiveCall, LeadIn, LeadKind};
use crate::trace::event::Collective;
use crate::util::round;

/// Compute kernels named in a collective's lead-in, the longest first: a
/// straggler's kernels are compared with the other ranks' before the same
/// collective, so the list is whole where it can be (real lead-ins hold
/// 5–25 distinct kernels); a longer one is cut, and says where.
const LEAD_IN_KERNELS: usize = 32;

/// How far back a collective's lead-in looks for the end of the previous
/// one (calls overlap only across groups; a few at once at most).
const LOOK_BACK: usize = 64;

#[derive(Debug, Default)]
pub struct Collector {
    /// Interned kernel name → the collective it runs, `None` for compute.
    known: HashMap<u32, Option<String>>,
    calls: Vec<CollectiveCall>,
    /// Each call's index in the analyzer's `kernel_spans`.
    spans: Vec<Option<u32>>,
}

/// A GPU kernel as the analyzer saw it.
pub struct Kernel<'e, 'a> {
    /// Whether its name is a communication kernel's.
    pub communication: bool,
    pub name_id: u32,
    /// Its index in the analyzer's `kernel_spans`.
    pub span: Option<u32>,
    pub name: &'e str,
    pub device: i64,
    pub stream: i64,
    pub start: i64,
    pub dur: i64,
    pub args: Option<&'e Collective<'a>>,
}

impl Collector {
    pub fn kernel(&mut self, k: Kernel<'_, '_>) {
        let from_name = self
            .known
            .entry(k.name_id)
            .or_insert_with(|| k.communication.then(|| collective_of_kernel(k.name)))
            .clone();
        let Some(from_name) = from_name else { return };
        let a = k.args;
        let text = |t: Option<&crate::trace::event::Text<'_>>| {
            t.map(|t| t.0.trim().to_string()).filter(|s| !s.is_empty())
        };
        let count = |n: crate::trace::event::Num| n.id().filter(|v| *v >= 0).map(|v| v as u64);
        self.calls.push(CollectiveCall {
            group: a
                .and_then(|a| text(a.group.as_ref()))
                .unwrap_or_else(|| format!("stream {}", k.stream)),
            collective: a
                .and_then(|a| text(a.name.as_ref()))
                .map(|n| normalise(&n))
                .unwrap_or(from_name),
            start_ns: k.start,
            dur_ns: k.dur,
            device: k.device,
            in_nelems: a.and_then(|a| count(a.in_nelems)),
            out_nelems: a.and_then(|a| count(a.out_nelems)),
            dtype: a.and_then(|a| text(a.dtype.as_ref())),
            group_size: a.and_then(|a| count(a.group_size)).map(|v| v.min(u32::MAX as u64) as u32),
            ..Default::default()
        });
        self.spans.push(k.span);
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The calls in time order (per group, the order the ranks match by),
    /// each with its step and lead-in (docs/analysis.md §11): the compute
    /// kernels (`label` names them; `None` is communication) the host
    /// launched between the device's previous collective and this one —
    /// the same stretch of the program on every rank, however late each
    /// ran — and then ([`LeadIns::with_idle`], once the idle account is
    /// done) the idle time by cause from the end of the previous
    /// collective to this one's start. Without launches in the trace, the
    /// kernels that ran in that time.
    pub(super) fn finish(
        &self,
        a: &PassRecord,
        index: &KernelIndex,
        label: &dyn Fn(u32) -> Option<String>,
    ) -> LeadIns {
        if self.calls.is_empty() {
            // No collective (one GPU, most inference): no per-device kernel
            // index to build (a list as long as the kernels).
            return LeadIns::default();
        }
        let mut calls: Vec<(&CollectiveCall, Option<u32>)> =
            self.calls.iter().zip(self.spans.iter().copied()).collect();
        calls.sort_by_key(|(c, _)| (c.start_ns, c.device));
        let steps = a.ranges.numbered_steps();
        let launch_of = |span: Option<u32>| {
            span.and_then(|s| a.gpu.kernel_spans.get(s as usize))
                .and_then(|k| k.launch())
                .map(|l| l.start)
        };
        // Each device's kernels by launch, where known (by start: `index`);
        // indices, as this list is held beside the idle account's sweep.
        let kernel = |i: &u32| &a.gpu.kernel_spans[*i as usize];
        let launch_of_kernel = |i: &u32| kernel(i).launch().map_or(i64::MIN, |l| l.start);
        let mut by_launch: HashMap<i64, Vec<u32>> = HashMap::default();
        for (i, k) in a.gpu.kernel_spans.iter().enumerate() {
            if k.launch().is_some() {
                by_launch.entry(a.gpu.device(k)).or_default().push(i as u32);
            }
        }
        for ks in by_launch.values_mut() {
            ks.sort_unstable_by_key(|i| (launch_of_kernel(i), *i));
        }
        let start_of = |i: &u32| kernel(i).start;
        let mut out = LeadIns {
            calls: Vec::with_capacity(calls.len()),
            from: Vec::with_capacity(calls.len()),
        };
        for i in 0..calls.len() {
            let (c, span) = &calls[i];
            let launched = launch_of(*span);
            let at_ts = launched.unwrap_or(c.start_ns);
            let at = steps.partition_point(|(_, s, _)| *s <= at_ts);
            let step = at
                .checked_sub(1)
                .map(|k| steps[k])
                .filter(|(_, _, e)| at_ts < *e)
                .map(|(n, _, _)| n);
            let before: Vec<&(&CollectiveCall, Option<u32>)> = calls[..i]
                .iter()
                .rev()
                .take(LOOK_BACK)
                .filter(|(p, _)| p.device == c.device)
                .collect();
            let ran = index.device(c.device);
            let ended = before
                .iter()
                .map(|(p, _)| p.start_ns + p.dur_ns)
                .filter(|e| *e <= c.start_ns)
                .max();
            let from = ended.or_else(|| ran.first().map(start_of)).unwrap_or(c.start_ns);
            let (lead_in, floor) = match launched {
                Some(l) => {
                    let after = before.iter().find_map(|(_, s)| launch_of(*s)).unwrap_or(i64::MIN);
                    let list = by_launch.get(&c.device).map_or(&[][..], Vec::as_slice);
                    let first = list.partition_point(|k| launch_of_kernel(k) <= after);
                    let ks =
                        list[first..].iter().take_while(|k| launch_of_kernel(k) < l).map(kernel);
                    lead_in_kernels(ks.map(|k| (k.name, k.end - k.start)), label)
                }
                None => {
                    let first = ran.partition_point(|k| start_of(k) < from);
                    let ks = DeviceSpans { ks: ran, all: &a.gpu.kernel_spans }
                        .iter(first)
                        .take_while(|k| k.start < c.start_ns);
                    lead_in_kernels(ks.map(|k| (k.name, k.end.min(c.start_ns) - k.start)), label)
                }
            };
            out.calls.push(CollectiveCall {
                step,
                lead_in,
                lead_in_floor_us: floor,
                ..(*c).clone()
            });
            out.from.push(from);
        }
        out
    }
}

/// The calls with their kernel lead-ins, waiting for the idle account.
#[derive(Default)]
pub(super) struct LeadIns {
    calls: Vec<CollectiveCall>,
    /// Where each call's lead-in starts.
    from: Vec<i64>,
}

impl LeadIns {
    /// The calls, each lead-in ending with the idle time by cause in
    /// `gaps` (the idle account's device) over the call's lead-in.
    pub(super) fn with_idle(self, gaps: Option<&Gaps>) -> Vec<CollectiveCall> {
        let mut calls = self.calls;
        let Some(g) = gaps else { return calls };
        for (c, from) in calls.iter_mut().zip(self.from).filter(|(c, _)| c.device == g.device) {
            let mut idle = g.within(from, c.start_ns);
            idle.sort_by_key(|x| (std::cmp::Reverse(x.1), x.0));
            c.lead_in.extend(idle.into_iter().filter(|x| x.1 >= 1_000).map(|(cause, ns)| LeadIn {
                kind: LeadKind::Idle,
                name: cause.as_str().to_string(),
                us: round(ns as f64 / 1e3, 3),
            }));
        }
        calls
    }
}

/// A lead-in's compute kernels from (name, ns) pairs, by label, the
/// longest first; and, when the list is cut, the time of the longest left
/// out.
fn lead_in_kernels(
    kernels: impl Iterator<Item = (u32, i64)>,
    label: &dyn Fn(u32) -> Option<String>,
) -> (Vec<LeadIn>, Option<f64>) {
    let mut by_name: HashMap<u32, i64> = HashMap::default();
    for (name, ns) in kernels {
        *by_name.entry(name).or_insert(0) += ns;
    }
    // Labels can be shared by several raw names.
    let mut labelled: HashMap<String, i64> = HashMap::default();
    for (name, ns) in by_name {
        if let Some(l) = label(name) {
            *labelled.entry(l).or_insert(0) += ns;
        }
    }
    let mut named: Vec<(String, i64)> = labelled.into_iter().collect();
    named.retain(|x| x.1 > 0);
    named.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    let floor = named.get(LEAD_IN_KERNELS).map(|x| round(x.1 as f64 / 1e3, 3));
    let listed = named
        .into_iter()
        .take(LEAD_IN_KERNELS)
        .map(|(name, ns)| LeadIn { kind: LeadKind::Kernel, name, us: round(ns as f64 / 1e3, 3) })
        .collect();
    (listed, floor)
}

/// `allreduce`, `all_reduce`, `_allgather_base`, `reduce_scatter_tensor`
/// → one spelling: lower case, no underscores, PyTorch's suffixes dropped.
pub fn normalise(name: &str) -> String {
    let mut s: String = name.to_lowercase().chars().filter(|c| *c != '_').collect();
    for suffix in
        ["base", "tensorcoalesced", "intotensorcoalesced", "intotensor", "tensor", "coalesced"]
    {
        if s.len() > suffix.len() && s.ends_with(suffix) {
            s.truncate(s.len() - suffix.len());
        }
    }
    s
}

/// The collective an NCCL/RCCL kernel name runs: `ncclKernel_AllReduce_…`,
/// `ncclDevKernel_SendRecv(…)` → `allreduce`, `sendrecv`; other
/// communication kernels keep their name.
pub fn collective_of_kernel(name: &str) -> String {
    let lower = name.to_lowercase();
    for key in ["kernel_", "devkernel_"] {
        if let Some(at) = lower.find(key) {
            let rest = &lower[at + key.len()..];
            let word: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
            if !word.is_empty() {
                return word;
            }
        }
    }
    let short = super::kernels::label(name);
    short.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collective_names() {
        assert_eq!(
            collective_of_kernel(
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
            ),
            "allreduce"
        );
        assert_eq!(
            collective_of_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"),
            "sendrecv"
        );
        assert_eq!(
            collective_of_kernel(
                "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
            ),
            "allgather"
        );
        assert_eq!(normalise("_allgather_base"), "allgather");
        assert_eq!(normalise("reduce_scatter_tensor_coalesced"), "reducescatter");
        assert_eq!(normalise("all_to_all"), "alltoall");
        assert_eq!(normalise("allreduce"), "allreduce");
    }
}
