//! The ranks' step models joined at their collectives (docs/analysis.md
//! §14, "a rank set"): an NCCL kernel starts when its rank arrives and
//! transfers once the last rank has, so a collective's kernels end their
//! transfer after the last arrival. Re-timing one rank moves that arrival,
//! and with it every rank's later work; re-timing the job re-synchronises
//! the ranks at every collective.
//!
//! Each rank keeps its own model; a round replays every rank with the
//! collectives' last arrivals as they stand, then takes the new arrivals.
//! The joins run forward in time (a collective's arrivals depend only on
//! earlier collectives), so the rounds settle, at most one per collective
//! in a chain; with no change the first round gives the trace back.

use rustc_hash::FxHashMap as HashMap;

use super::path::At;
use super::{Change, NodeKind, PathPart, Replayed, StepModel};

/// One rank's kernel of a matched collective, as its profile has it.
#[derive(Debug, Clone, Copy)]
pub struct Member {
    /// The rank's position in the set.
    pub rank: usize,
    pub start: i64,
    pub end: i64,
}

/// A member in its rank's model: (rank position, node, transfer ns).
type Joined = (usize, u32, i64);

/// The ranks' models and the collectives joining them.
pub struct JobModel<'m> {
    models: Vec<Option<&'m StepModel>>,
    /// Per collective with two or more members in the models.
    links: Vec<Vec<Joined>>,
    /// Each link's last arrival in the trace.
    trace_last: Vec<i64>,
    /// Each link's collective: its index among those [`JobModel::new`]
    /// was given.
    index: Vec<usize>,
    /// Members left as they are: outside their rank's modelled steps, or
    /// ending before the last arrival (clocks out of step).
    pub unlinked: usize,
}

/// The job re-timed.
#[derive(Debug, Clone)]
pub struct JobReplayed {
    /// Per rank position: its replay (None without a model).
    pub ranks: Vec<Option<Replayed>>,
    /// Per rank position: the time its collective kernels no longer spend
    /// waiting for the last rank (ns; what re-synchronising took away).
    pub waits_removed: Vec<i64>,
    pub rounds: usize,
    /// The rounds settled (false: stopped at the limit, the collectives'
    /// order differing between ranks).
    pub settled: bool,
}

/// One rank's stretch of the job's critical path.
#[derive(Debug, Clone)]
pub struct Leg {
    /// The rank's position in the set.
    pub rank: usize,
    /// Its parts, ns, largest first.
    pub parts: Vec<(PathPart, i64)>,
    /// Where the path left this rank for the next leg's: the collective
    /// (its index among those `new` was given) and how long this rank's
    /// kernel waited there for the next leg's rank to arrive (ns).
    pub waited_at: Option<(usize, i64)>,
}

/// The critical path through the joined ranks, from the job's last work
/// back: legs latest first.
#[derive(Debug, Clone, Default)]
pub struct JobPath {
    pub legs: Vec<Leg>,
    /// From the last leg's window start to the first leg's end (ns).
    pub span: i64,
}

impl<'m> JobModel<'m> {
    /// `models` by rank position; `collectives`: each matched collective's
    /// members.
    pub fn new(models: Vec<Option<&'m StepModel>>, collectives: &[Vec<Member>]) -> JobModel<'m> {
        // Each rank's communication kernels by their trace times.
        let at: Vec<HashMap<(i64, i64), u32>> = models
            .iter()
            .map(|m| {
                m.map(|m| {
                    m.nodes
                        .iter()
                        .enumerate()
                        .filter(|(_, n)| n.kind == NodeKind::Gpu && n.class == 0)
                        .map(|(i, n)| ((n.start, n.end), i as u32))
                        .collect()
                })
                .unwrap_or_default()
            })
            .collect();
        let (mut links, mut trace_last, mut unlinked) = (Vec::new(), Vec::new(), 0);
        let mut index = Vec::new();
        for (k, c) in collectives.iter().enumerate() {
            let Some(last) = c.iter().map(|m| m.start).max() else { continue };
            let mut joined = Vec::new();
            for m in c {
                let node = at.get(m.rank).and_then(|a| a.get(&(m.start, m.end)));
                match node {
                    Some(&node) if m.end >= last => joined.push((m.rank, node, m.end - last)),
                    _ => unlinked += 1,
                }
            }
            if joined.len() >= 2 {
                links.push(joined);
                trace_last.push(last);
                index.push(k);
            } else {
                unlinked += joined.len();
            }
        }
        JobModel { models, links, trace_last, index, unlinked }
    }

    /// Collectives joining two or more ranks.
    pub fn links(&self) -> usize {
        self.links.len()
    }

    /// Every rank re-timed under its change (`changes` by rank position;
    /// a missing one is no change), the ranks re-synchronised at every
    /// collective: its transfer starts at the last arrival of its members,
    /// `ignore`'s left out (a straggler's lateness removed).
    pub fn replay(&self, changes: &[Change], ignore: Option<usize>) -> JobReplayed {
        let none = Change::default();
        let mut last = self.trace_last.clone();
        // A chain of collectives settles one a round.
        let limit = self.links.len() + 2;
        let mut rounds = 0;
        loop {
            rounds += 1;
            let ranks: Vec<Option<Replayed>> = self
                .models
                .iter()
                .enumerate()
                .map(|(r, m)| {
                    let m = (*m)?;
                    let mut change = changes.get(r).unwrap_or(&none).clone();
                    for (link, &l) in self.links.iter().zip(&last) {
                        for &(_, node, transfer) in link.iter().filter(|j| j.0 == r) {
                            change.arrivals.insert(node, (l, transfer));
                        }
                    }
                    Some(m.replay(&change))
                })
                .collect();
            let start = |&(r, node, _): &Joined| {
                ranks[r].as_ref().map_or(i64::MIN, |x| x.start[node as usize])
            };
            let now: Vec<i64> = self
                .links
                .iter()
                .zip(&last)
                .map(|(link, &l)| {
                    let arrivals = link.iter().filter(|j| Some(j.0) != ignore).map(start);
                    arrivals.max().unwrap_or(l)
                })
                .collect();
            let settled = now == last;
            if settled || rounds >= limit {
                let waits_removed = self.waits_removed(&ranks, &last);
                return JobReplayed { ranks, waits_removed, rounds, settled };
            }
            last = now;
        }
    }

    /// The critical path through the ranks, in the trace's times: from the
    /// work that ends last, back along its rank's own path; where that
    /// path reaches a collective's kernel that waited for another rank, on
    /// from that rank's arrival there, and so on to a window's start.
    pub fn critical_path(&self) -> Option<JobPath> {
        let (mut rank, first) = self
            .models
            .iter()
            .enumerate()
            .filter_map(|(r, m)| Some((r, (*m)?)))
            .max_by_key(|(r, m)| (m.end(), std::cmp::Reverse(*r)))?;
        let end = first.end();
        // Per rank: its joined kernels' links.
        let mut link_of: Vec<HashMap<u32, usize>> = vec![HashMap::default(); self.models.len()];
        for (k, link) in self.links.iter().enumerate() {
            for &(r, node, _) in link {
                link_of[r].insert(node, k);
            }
        }
        // Each link's last to arrive: (rank, node, its start).
        let last_of = |k: usize| {
            self.links[k]
                .iter()
                .filter_map(|&(r, node, _)| {
                    Some((r, node, self.models[r]?.nodes[node as usize].start))
                })
                .max_by_key(|&(r, _, s)| (s, std::cmp::Reverse(r)))
        };
        let mut legs = Vec::new();
        let mut from = At::End(first.last_node()?);
        // Each leg ends strictly earlier than the one before: bounded.
        for _ in 0..=self.links.len() {
            let m = self.models[rank]?;
            let links = &link_of[rank];
            let cross = |i: u32| {
                let (r, _, arrived) = last_of(*links.get(&i)?)?;
                (r != rank).then_some(arrived)
            };
            let (path, crossed) = m.path_from(from, &cross);
            let Some(i) = crossed else {
                legs.push(Leg { rank, parts: path.parts, waited_at: None });
                let span = end - m.window.0;
                return Some(JobPath { legs, span });
            };
            let k = link_of[rank][&i];
            let (r, node, arrived) = last_of(k)?;
            let wait = arrived - m.nodes[i as usize].start;
            legs.push(Leg { rank, parts: path.parts, waited_at: Some((self.index[k], wait)) });
            (rank, from) = (r, At::Start(node));
        }
        None
    }

    /// Per rank: its members' waits for the last arrival in the trace
    /// less those after re-timing.
    fn waits_removed(&self, ranks: &[Option<Replayed>], last: &[i64]) -> Vec<i64> {
        let mut out = vec![0i64; self.models.len()];
        for ((link, &was), &now) in self.links.iter().zip(&self.trace_last).zip(last) {
            for &(r, node, _) in link {
                let (Some(m), Some(x)) = (self.models[r], ranks[r].as_ref()) else { continue };
                let before = (was - m.nodes[node as usize].start).max(0);
                let after = (now - x.start[node as usize]).max(0);
                out[r] += (before - after).max(0);
            }
        }
        out
    }
}
