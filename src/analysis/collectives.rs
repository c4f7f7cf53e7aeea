//! The communication kernels of one trace, in time order, with the
//! collective arguments PyTorch records on them: the per-rank half of
//! matching collectives across a job's ranks (docs/analysis.md §11). The
//! list is compact (one small record per collective, no kernel names), so
//! a rank's profile carries it and the job view is a reduce over profiles.

use rustc_hash::FxHashMap as HashMap;

use super::kernels::{COMMUNICATION, category};
use crate::profile::CollectiveCall;
use crate::trace::event::Collective;

#[derive(Debug, Default)]
pub struct Collector {
    /// Interned kernel name → the collective it runs, `None` for compute.
    known: HashMap<u32, Option<String>>,
    calls: Vec<CollectiveCall>,
}

/// A GPU kernel as the analyzer saw it.
pub struct Kernel<'e, 'a> {
    pub name_id: u32,
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
            .or_insert_with(|| (category(k.name) == COMMUNICATION).then(|| collective_of_kernel(k.name)))
            .clone();
        let Some(from_name) = from_name else { return };
        let a = k.args;
        let text = |t: Option<&crate::trace::event::Text<'_>>| t.map(|t| t.0.trim().to_string()).filter(|s| !s.is_empty());
        let count = |n: crate::trace::event::Num| n.id().filter(|v| *v >= 0).map(|v| v as u64);
        self.calls.push(CollectiveCall {
            group: a.and_then(|a| text(a.group.as_ref())).unwrap_or_else(|| format!("stream {}", k.stream)),
            collective: a.and_then(|a| text(a.name.as_ref())).map(|n| normalise(&n)).unwrap_or(from_name),
            start_ns: k.start,
            dur_ns: k.dur,
            device: k.device,
            in_nelems: a.and_then(|a| count(a.in_nelems)),
            out_nelems: a.and_then(|a| count(a.out_nelems)),
            dtype: a.and_then(|a| text(a.dtype.as_ref())),
            group_size: a.and_then(|a| count(a.group_size)).map(|v| v.min(u32::MAX as u64) as u32),
        });
    }

    /// The calls in time order (per group, the order the ranks match by).
    pub fn finish(mut self) -> Vec<CollectiveCall> {
        self.calls.sort_by_key(|c| (c.start_ns, c.device));
        self.calls
    }
}

/// `allreduce`, `all_reduce`, `_allgather_base`, `reduce_scatter_tensor`
/// → one spelling: lower case, no underscores, PyTorch's suffixes dropped.
pub fn normalise(name: &str) -> String {
    let mut s: String = name.to_lowercase().chars().filter(|c| *c != '_').collect();
    for suffix in ["base", "tensorcoalesced", "intotensorcoalesced", "intotensor", "tensor", "coalesced"] {
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
    let short = super::kernels::short_name(&super::kernels::demangle(name));
    short.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collective_names() {
        assert_eq!(collective_of_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"), "allreduce");
        assert_eq!(collective_of_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"), "sendrecv");
        assert_eq!(collective_of_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"), "allgather");
        assert_eq!(normalise("_allgather_base"), "allgather");
        assert_eq!(normalise("reduce_scatter_tensor_coalesced"), "reducescatter");
        assert_eq!(normalise("all_to_all"), "alltoall");
        assert_eq!(normalise("allreduce"), "allreduce");
    }
}
