//! `collectives`: each collective of a distributed job matched across its
//! ranks, with the arrival skew, each rank's wait and the bus bandwidth
//! (docs/analysis.md §11).
//!
//! Each rank's profile carries its communication kernels in time order
//! (`Profile::collectives`, computed by the per-rank pass); this is the
//! reduce. Ranks match by process group and order: the k-th collective of
//! group G on one rank is the k-th of G on every rank, which is how NCCL
//! itself pairs them. An NCCL kernel starts when its rank arrives and ends
//! once every rank has, so a rank's wait is the last arrival minus its own.

use schemars::JsonSchema;
use serde::Serialize;

use crate::profile::ranks::RankSet;
use crate::profile::{CollectiveCall, Profile};
use crate::util::round;

impl Collectives {
    /// The collectives as people read them: in order on one rank, largest
    /// skew first on several (ties by time).
    pub fn largest_skew_first(&self) -> Vec<&Matched> {
        let mut rows: Vec<&Matched> = self.collectives.iter().collect();
        if self.ranks.len() > 1 {
            rows.sort_by(|a, b| {
                b.skew_us
                    .unwrap_or(0.0)
                    .total_cmp(&a.skew_us.unwrap_or(0.0))
                    .then(a.at_ms.total_cmp(&b.at_ms))
            });
        }
        rows
    }
}

/// One rank's communication kernels, as the reduce takes them.
pub struct RankCalls<'p> {
    pub rank: u32,
    pub calls: &'p [CollectiveCall],
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Collectives {
    pub ranks: Vec<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_size: Option<u32>,
    /// Per process group (or stream): how many of each collective, the
    /// same on every rank unless said in `notes`.
    pub groups: Vec<Group>,
    /// Per rank: the total wait and how often it arrived last.
    pub per_rank: Vec<RankWaits>,
    /// Every matched collective, in each group's order.
    pub collectives: Vec<Matched>,
    /// Whether the ranks' waits are meaningful: two or more ranks whose
    /// collectives overlap in time as one job's do.
    #[serde(skip)]
    pub waits_meaningful: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Group {
    pub group: String,
    /// (collective, count) in order of first appearance.
    pub counts: Vec<(String, usize)>,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, PartialEq)]
pub struct RankWaits {
    pub rank: u32,
    /// Sum of this rank's waits over the matched collectives, ms.
    pub wait_ms: f64,
    /// Collectives at which this rank arrived last (everyone waited for it).
    pub last_arrivals: usize,
    /// The other ranks' waits summed over those collectives: the wait this
    /// rank caused, ms.
    pub wait_caused_ms: f64,
    /// Time in communication kernels, ms.
    pub comm_ms: f64,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, PartialEq)]
pub struct Matched {
    pub group: String,
    /// Position in its group (0-based).
    pub seq: usize,
    pub collective: String,
    /// Start of the earliest rank, ms after the job's first collective.
    pub at_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// Latest start − earliest start, µs (`None` on one rank).
    pub skew_us: Option<f64>,
    /// The rank that arrived last (`None` on one rank).
    pub last_rank: Option<u32>,
    /// The ranks' waits summed: the GPU time the job lost at this
    /// collective, µs (0 on one rank).
    pub wait_us: f64,
    /// The transfer: the last-arriving rank's kernel time, which holds no
    /// wait (on one rank: its kernel time, waits included), µs.
    pub duration_us: f64,
    /// bytes ÷ duration, GB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub algbw_gbps: Option<f64>,
    /// NCCL's bus bandwidth: algbw × the collective's factor, GB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busbw_gbps: Option<f64>,
    /// Per rank: its start relative to the earliest, its wait and kernel time.
    pub ranks: Vec<RankAt>,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct RankAt {
    pub rank: u32,
    pub arrival_us: f64,
    pub wait_us: f64,
    pub dur_us: f64,
    /// Its index in the rank's calls (`RankCalls::calls`).
    #[serde(skip)]
    pub call: usize,
}

/// Bytes per element of PyTorch's dtype names as the profiler writes them.
pub fn dtype_bytes(dtype: &str) -> Option<u64> {
    let d = dtype.to_lowercase();
    Some(match d.as_str() {
        "double" | "long" | "complexfloat" | "float64" | "int64" => 8,
        "float" | "int" | "float32" | "int32" | "uint32" => 4,
        "half" | "bfloat16" | "short" | "float16" | "int16" | "uint16" => 2,
        "byte" | "char" | "bool" | "int8" | "uint8" => 1,
        _ if d.starts_with("float8") => 1,
        _ => return None,
    })
}

/// NCCL's bus-bandwidth factor for `n` ranks (nccl-tests, PERFORMANCE.md):
/// what each link carries relative to the message.
pub fn bus_factor(collective: &str, n: u32) -> Option<f64> {
    let n = f64::from(n.max(1));
    let c = collective;
    Some(if c.contains("allreduce") {
        2.0 * (n - 1.0) / n
    } else if c.contains("allgather") || c.contains("reducescatter") || c.contains("alltoall") {
        (n - 1.0) / n
    } else if c.contains("broadcast")
        || c == "reduce"
        || c.contains("sendrecv")
        || c == "send"
        || c == "recv"
    {
        1.0
    } else {
        return None;
    })
}

/// The message size in NCCL's terms (nccl-tests' "size"): the larger of
/// the input and output buffers (allgather's output, reduce-scatter's input).
pub fn message_bytes(c: &CollectiveCall) -> Option<u64> {
    let nelems = c.in_nelems.max(c.out_nelems).filter(|n| *n > 0)?;
    Some(nelems.saturating_mul(dtype_bytes(c.dtype.as_deref()?)?))
}

/// A call and its index in its rank's calls.
type Call<'c> = (usize, &'c CollectiveCall);

/// A rank's calls per group, each group in time order.
type Groups<'c> = Vec<(&'c str, Vec<Call<'c>>)>;

/// The ranks' calls per group, each in time order.
fn by_group(calls: &[CollectiveCall]) -> Groups<'_> {
    let mut groups: Groups<'_> = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        match groups.iter_mut().find(|(g, _)| *g == c.group) {
            Some((_, v)) => v.push((i, c)),
            None => groups.push((&c.group, vec![(i, c)])),
        }
    }
    groups
}

pub fn collectives(ranks: &[RankCalls<'_>], world_size: Option<u32>) -> Collectives {
    let mut notes = Vec::new();
    let single = ranks.len() == 1;
    if single {
        notes.push("one rank: arrival skew and waits need the traces of all ranks; durations include any wait".to_string());
    }
    let grouped: Vec<(u32, Groups<'_>)> =
        ranks.iter().map(|r| (r.rank, by_group(r.calls))).collect();
    let mut names: Vec<&str> = Vec::new();
    for (_, g) in &grouped {
        for (name, _) in g {
            if !names.contains(name) {
                names.push(name);
            }
        }
    }
    let origin = ranks.iter().flat_map(|r| r.calls.first()).map(|c| c.start_ns).min().unwrap_or(0);
    let n_ranks = world_size.filter(|w| *w as usize >= ranks.len()).unwrap_or(ranks.len() as u32);
    let mut matched = Vec::new();
    let mut groups = Vec::new();
    let mut disjoint = 0usize;
    for name in names {
        let lists: Vec<(u32, &[Call<'_>])> = grouped
            .iter()
            .map(|(rank, g)| {
                (*rank, g.iter().find(|(n, _)| *n == name).map_or(&[][..], |(_, v)| v.as_slice()))
            })
            .collect();
        let lens: Vec<usize> = lists.iter().map(|(_, l)| l.len()).collect();
        if lens.iter().any(|l| *l != lens[0]) {
            let per: Vec<String> =
                lists.iter().map(|(r, l)| format!("rank {r}: {}", l.len())).collect();
            notes.push(format!(
                "{name}: the ranks recorded different numbers of collectives ({}); matched by order up to the shortest",
                per.join(", ")
            ));
        }
        let mut counts: Vec<(String, usize)> = Vec::new();
        let mut mismatch_said = false;
        for seq in 0..lens.iter().copied().max().unwrap_or(0) {
            let here: Vec<(u32, Call<'_>)> =
                lists.iter().filter_map(|(r, l)| l.get(seq).map(|c| (*r, *c))).collect();
            let first = here[0].1.1;
            match counts.iter_mut().find(|(c, _)| *c == first.collective) {
                Some((_, k)) => *k += 1,
                None => counts.push((first.collective.clone(), 1)),
            }
            if let Some((r, (_, c))) =
                here.iter().find(|(_, (_, c))| c.collective != first.collective)
                && !mismatch_said
            {
                mismatch_said = true;
                notes.push(format!(
                    "{name}: collective #{seq} is {} on rank {} but {} on rank {r}: the ranks did not record the same collectives (different windows or jobs?)",
                    first.collective, here[0].0, c.collective
                ));
            }
            let same: Vec<(u32, usize, &CollectiveCall)> = here
                .iter()
                .filter(|(_, (_, c))| c.collective == first.collective)
                .map(|(r, (i, c))| (*r, *i, *c))
                .collect();
            let earliest = same.iter().map(|(_, _, c)| c.start_ns).min().unwrap_or(0);
            let (last_rank, last) = same
                .iter()
                .max_by_key(|(r, _, c)| (c.start_ns, std::cmp::Reverse(*r)))
                .map_or((here[0].0, here[0].1.1), |(r, _, c)| (*r, *c));
            if same.iter().any(|(_, _, c)| c.start_ns + c.dur_ns < last.start_ns) {
                disjoint += 1;
            }
            let bytes = message_bytes(first);
            let duration_us = last.dur_ns as f64 / 1e3;
            let group_n = first.group_size.unwrap_or(n_ranks);
            let algbw = bytes.filter(|_| duration_us > 0.0).map(|b| b as f64 / (duration_us * 1e3));
            let at: Vec<RankAt> = same
                .iter()
                .map(|(r, i, c)| RankAt {
                    rank: *r,
                    arrival_us: round((c.start_ns - earliest) as f64 / 1e3, 3),
                    wait_us: if single {
                        0.0
                    } else {
                        round((last.start_ns - c.start_ns) as f64 / 1e3, 3)
                    },
                    dur_us: round(c.dur_ns as f64 / 1e3, 3),
                    call: *i,
                })
                .collect();
            let waited: i64 = if single {
                0
            } else {
                same.iter().map(|(_, _, c)| last.start_ns - c.start_ns).sum()
            };
            matched.push(Matched {
                group: name.to_string(),
                seq,
                collective: first.collective.clone(),
                at_ms: round((earliest - origin) as f64 / 1e6, 3),
                bytes,
                dtype: first.dtype.clone(),
                skew_us: (!single).then(|| round((last.start_ns - earliest) as f64 / 1e3, 3)),
                last_rank: (!single).then_some(last_rank),
                wait_us: round(waited as f64 / 1e3, 3),
                duration_us: round(duration_us, 3),
                algbw_gbps: algbw.map(|a| round(a, 3)),
                busbw_gbps: algbw
                    .and_then(|a| Some(round(a * bus_factor(&first.collective, group_n)?, 3))),
                ranks: at,
            });
        }
        groups.push(Group { group: name.to_string(), counts });
    }
    let waits_meaningful = !single && !matched.is_empty() && disjoint * 2 <= matched.len();
    if !single && disjoint * 2 > matched.len() {
        notes.push(format!(
            "{disjoint} of {} matched collectives end on some rank before the last rank starts them: these traces do not look like one job (or their clocks differ), so skew and waits are not meaningful",
            matched.len()
        ));
    }
    let per_rank = ranks
        .iter()
        .map(|r| {
            let waits = matched
                .iter()
                .flat_map(|m| m.ranks.iter().filter(|x| x.rank == r.rank))
                .map(|x| x.wait_us)
                .sum::<f64>();
            let last_at =
                || matched.iter().filter(|m| m.last_rank == Some(r.rank) && m.ranks.len() > 1);
            RankWaits {
                rank: r.rank,
                wait_ms: round(waits / 1e3, 3),
                last_arrivals: if single { 0 } else { last_at().count() },
                wait_caused_ms: if single {
                    0.0
                } else {
                    round(last_at().map(|m| m.wait_us).sum::<f64>() / 1e3, 3)
                },
                comm_ms: round(r.calls.iter().map(|c| c.dur_ns).sum::<i64>() as f64 / 1e6, 3),
            }
        })
        .collect();
    Collectives {
        ranks: ranks.iter().map(|r| r.rank).collect(),
        world_size,
        groups,
        per_rank,
        collectives: matched,
        waits_meaningful,
        notes,
    }
}

/// The collectives of a rank set, matched across its ranks (what
/// `collectives DIR` prints and the explorer's job view shows).
pub fn of_ranks(set: &RankSet) -> Collectives {
    let calls: Vec<RankCalls<'_>> = set
        .ranks
        .iter()
        .map(|r| RankCalls { rank: r.rank, calls: &r.input.profile.collectives })
        .collect();
    collectives(&calls, set.world_size)
}

/// The collectives of one profile alone (rank from `distributedInfo`, else 0).
pub fn of_profile(p: &Profile) -> Collectives {
    let d = p.distributed.clone().unwrap_or_default();
    collectives(&[RankCalls { rank: d.rank.unwrap_or(0), calls: &p.collectives }], d.world_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(group: &str, name: &str, start: i64, dur: i64) -> CollectiveCall {
        CollectiveCall {
            group: group.into(),
            collective: name.into(),
            start_ns: start,
            dur_ns: dur,
            ..Default::default()
        }
    }

    #[test]
    fn skew_waits_and_bus_bandwidth() {
        let mut a = call("0", "allreduce", 1_000, 10_000);
        a.in_nelems = Some(1_000_000);
        a.out_nelems = Some(1_000_000);
        a.dtype = Some("Float".into());
        let mut b = a.clone();
        b.start_ns = 5_000;
        b.dur_ns = 6_000;
        let c = collectives(
            &[RankCalls { rank: 0, calls: &[a] }, RankCalls { rank: 1, calls: &[b] }],
            Some(2),
        );
        let m = &c.collectives[0];
        assert_eq!(m.skew_us, Some(4.0));
        assert_eq!(m.last_rank, Some(1));
        assert_eq!(m.ranks[0].wait_us, 4.0);
        assert_eq!(m.ranks[1].wait_us, 0.0);
        assert_eq!(m.wait_us, 4.0, "the ranks' waits summed");
        assert_eq!(m.duration_us, 6.0);
        // 4 MB in 6 µs: 666.667 GB/s; allreduce over 2 ranks: ×2·1/2.
        assert_eq!(m.bytes, Some(4_000_000));
        assert_eq!(m.algbw_gbps, Some(666.667));
        assert_eq!(m.busbw_gbps, Some(666.667));
        assert_eq!(c.per_rank[1].last_arrivals, 1);
        assert!(c.notes.is_empty(), "{:?}", c.notes);
    }

    #[test]
    fn factors() {
        assert_eq!(bus_factor("allreduce", 8), Some(1.75));
        assert_eq!(bus_factor("allgather", 4), Some(0.75));
        assert_eq!(bus_factor("reducescatter", 4), Some(0.75));
        assert_eq!(bus_factor("alltoall", 2), Some(0.5));
        assert_eq!(bus_factor("broadcast", 8), Some(1.0));
        assert_eq!(bus_factor("barrier", 8), None);
        assert_eq!(dtype_bytes("BFloat16"), Some(2));
    }

    #[test]
    fn different_sequences_are_said() {
        let a = [call("g", "allreduce", 0, 10), call("g", "allreduce", 100, 10)];
        let b = [call("g", "alltoall", 0, 10)];
        let c = collectives(
            &[RankCalls { rank: 0, calls: &a }, RankCalls { rank: 1, calls: &b }],
            None,
        );
        assert!(c.notes.iter().any(|n| n.contains("different numbers")), "{:?}", c.notes);
        assert!(
            c.notes.iter().any(|n| n.contains("is allreduce on rank 0 but alltoall on rank 1")),
            "{:?}",
            c.notes
        );
    }
}
