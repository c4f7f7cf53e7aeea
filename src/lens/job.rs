//! `summary` of a distributed job: the job first (its step is the slowest
//! rank's), one row per rank, then the stragglers and why they are late
//! (docs/analysis.md §11).
//!
//! Synchronised ranks have equal steps: a rank that is late makes every
//! rank's step longer, so the step cannot say who it is. The collectives
//! can: the last rank to arrive at a collective is the one the others wait
//! for, and their waits there are the time it cost them. A straggler is a
//! rank whose caused wait is at least [`STRAGGLER_FRAC`] of the step, per
//! step and in most steps; it is late for what its GPU did before those
//! collectives (the collective's lead-in: kernels and idle causes), in
//! excess of what the other ranks did before the same collectives.
//! Without collectives matched across the ranks, compute time above the
//! median rank's by [`COMPUTE_FRAC`] of the step is the fallback.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::Serialize;

use crate::analysis::model::StepModel;
use crate::analysis::model::job::{JobModel, Member};
use crate::lens::collectives::{self, Collectives};
use crate::profile::ranks::RankSet;
use crate::profile::{Category, CollectiveCall, LeadKind, PathShare, Profile, Verdict};
use crate::util::{median, round};

/// A rank that makes the others wait this share of the step, per step, is
/// a straggler: 1% of the step is 1% of the job's GPUs idle, which is what
/// people profile many-rank jobs to find, and real jobs' jitter stays under
/// it (docs/analysis.md §11). Never less than [`STRAGGLER_MIN_MS`].
pub const STRAGGLER_FRAC: f64 = 0.01;
pub const STRAGGLER_MIN_MS: f64 = 0.05;
/// Without matched collectives: compute this share of the step above the
/// median rank's makes a straggler (unsynchronised ranks' compute varies
/// more than their waits do).
pub const COMPUTE_FRAC: f64 = 0.05;
/// Reasons named per straggler: at most this many, each at least this
/// share of its lateness and [`MIN_MS`] per step.
const TOP_WHY: usize = 5;
const WHY_SHARE: f64 = 0.02;
const MIN_MS: f64 = 0.01;
/// Collectives named per straggler.
const TOP_LATE_AT: usize = 4;

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Job {
    /// `distributedInfo.world_size`, where the traces record it.
    pub world_size: Option<u32>,
    /// The job's step time: the slowest rank's, ms.
    pub step_ms: f64,
    /// The slowest rank: the one the others wait for most at collectives
    /// (the first straggler); without matched collectives, the first
    /// straggler by compute, else the one with the longest step. None:
    /// nobody is waited for.
    pub critical_rank: Option<u32>,
    /// The ranks' GPU busy time over the job's step on every rank:
    /// Σ busy ÷ (ranks × `step_ms`).
    pub gpu_util: f64,
    pub ranks: Vec<RankRow>,
    /// How stragglers were found: from who waits for whom at collectives,
    /// or (no collectives matched across the ranks) from compute time.
    pub straggler_rule: StragglerRule,
    /// The wait caused (`waits`) or compute above the median rank's
    /// (`compute`) that makes a straggler, ms per step.
    pub straggler_threshold_ms: f64,
    /// Ordered by the wait they cause (or their compute excess).
    pub stragglers: Vec<Straggler>,
    /// The critical path through the ranks: the slowest rank's, and the
    /// rank it waits for longest at a collective (docs/analysis.md §14).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<JobPath>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One rank's stretch of the path through the ranks (latest first): its
/// time on the path, its largest parts, and the collective where the path
/// leaves it for the rank it waited for there.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct PathLeg {
    pub rank: u32,
    pub ms_per_step: f64,
    /// Its largest parts, each `pct` of this leg's time (`ms_per_step`),
    /// not of the whole path.
    pub parts: Vec<PathShare>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits_at: Option<LegWait>,
}

/// Where the path crosses to another rank.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct LegWait {
    pub collective: String,
    pub group: String,
    pub seq: usize,
    /// How long this rank's kernel waited there (ms: one wait, not per
    /// step), and for whom (the next leg's rank, the last to arrive).
    pub wait_ms: f64,
    pub for_rank: u32,
}

/// The ranks' models joined at the collectives `matched` pairs.
pub fn joined<'m>(
    set: &RankSet,
    models: &'m [Option<StepModel>],
    matched: &Collectives,
) -> JobModel<'m> {
    let position = |r: u32| set.ranks.iter().position(|x| x.rank == r);
    let members: Vec<Vec<Member>> = matched
        .collectives
        .iter()
        .map(|m| {
            m.ranks
                .iter()
                .filter_map(|at| {
                    let pos = position(at.rank)?;
                    let c = set.ranks[pos].input.profile.collectives.get(at.call)?;
                    Some(Member { rank: pos, start: c.start_ns, end: c.start_ns + c.dur_ns })
                })
                .collect()
        })
        .collect();
    JobModel::new(models.iter().map(Option::as_ref).collect(), &members)
}

/// The critical path through the joined ranks (docs/analysis.md §14), as
/// legs: `models` in the set's order (none kept: no path).
pub fn path_through(
    set: &RankSet,
    models: &[Option<StepModel>],
    matched: &Collectives,
) -> Vec<PathLeg> {
    if !matched.waits_meaningful || models.iter().all(Option::is_none) {
        return Vec::new();
    }
    legs(&joined(set, models, matched), set, models, matched)
}

/// [`path_through`] of ranks already joined ([`joined`]).
pub fn legs(
    job: &JobModel<'_>,
    set: &RankSet,
    models: &[Option<StepModel>],
    matched: &Collectives,
) -> Vec<PathLeg> {
    if !matched.waits_meaningful {
        return Vec::new();
    }
    let Some(path) = job.critical_path() else { return Vec::new() };
    path.legs
        .iter()
        .enumerate()
        .map(|(k, leg)| {
            let steps = models[leg.rank].as_ref().map_or(1, |m| m.n_steps.max(1)) as f64;
            let per_step = |ns: i64| round(ns as f64 / 1e6 / steps, 3);
            let total: i64 = leg.parts.iter().map(|p| p.1).sum();
            // Each part's share of its own leg, as the leg's line reads.
            let leg_ns = total.max(1) as f64;
            let parts = leg
                .parts
                .iter()
                .take(PATH_PARTS)
                .map(|&(p, ns)| PathShare {
                    part: p.label(),
                    kind: p.kind().to_string(),
                    ms_per_step: per_step(ns),
                    pct: round(ns as f64 * 100.0 / leg_ns, 1),
                })
                .collect();
            let next = path.legs.get(k + 1);
            let waits_at = leg.waited_at.and_then(|(k, wait)| {
                let m = matched.collectives.get(k)?;
                Some(LegWait {
                    collective: m.collective.clone(),
                    group: m.group.clone(),
                    seq: m.seq,
                    wait_ms: round(wait as f64 / 1e6, 3),
                    for_rank: set.ranks[next?.rank].rank,
                })
            });
            PathLeg {
                rank: set.ranks[leg.rank].rank,
                ms_per_step: per_step(total),
                parts,
                waits_at,
            }
        })
        .collect()
}

/// Where the job's step goes: the rank whose step is the job's, its
/// critical path's largest parts (its step model), and the collective it
/// waits at longest, for whom, with that rank's own largest parts.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct JobPath {
    pub rank: u32,
    pub parts: Vec<PathShare>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits_at: Option<PathWait>,
    /// The path through the ranks, latest leg first, where the ranks'
    /// step models were kept (`summary DIR` of up to
    /// [`PATH_THROUGH_RANKS`] ranks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub through: Vec<PathLeg>,
}

/// Rank sets up to this size keep every rank's step model for the path
/// through them (a few MB each).
pub const PATH_THROUGH_RANKS: usize = 64;

/// The collective the slowest rank waits at longest.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct PathWait {
    pub collective: String,
    pub group: String,
    /// Its position in its group.
    pub seq: usize,
    /// The rank it waits for (the last to arrive) and that rank's own
    /// critical path's largest parts.
    pub for_rank: u32,
    pub wait_ms: f64,
    pub for_parts: Vec<PathShare>,
}

/// Parts of a path shown.
const PATH_PARTS: usize = 3;

/// The job's path: the slowest rank's critical path and its longest wait.
fn job_path(set: &RankSet, matched: &Collectives, ranks: &[RankRow]) -> Option<JobPath> {
    let slowest =
        ranks.iter().max_by(|a, b| a.step_ms.total_cmp(&b.step_ms).then(b.rank.cmp(&a.rank)))?.rank;
    let parts_of = |rank: u32| -> Vec<PathShare> {
        set.ranks
            .iter()
            .find(|r| r.rank == rank)
            .and_then(|r| r.input.profile.step_model.as_ref())
            .map(|m| m.critical_path.iter().take(PATH_PARTS).cloned().collect())
            .unwrap_or_default()
    };
    let parts = parts_of(slowest);
    if parts.is_empty() {
        return None;
    }
    let waits_at = matched
        .collectives
        .iter()
        .filter_map(|m| {
            let at = m.ranks.iter().find(|r| r.rank == slowest)?;
            let last = m.last_rank.filter(|&l| l != slowest && at.wait_us > 0.0)?;
            Some((m, last, at.wait_us))
        })
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .filter(|_| matched.waits_meaningful)
        .map(|(m, last, wait)| PathWait {
            collective: m.collective.clone(),
            group: m.group.clone(),
            seq: m.seq,
            for_rank: last,
            wait_ms: round(wait / 1e3, 3),
            for_parts: parts_of(last),
        });
    Some(JobPath { rank: slowest, parts, waits_at, through: Vec::new() })
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StragglerRule {
    Waits,
    Compute,
}

/// One rank, per step (ms).
#[derive(Debug, Clone, Default, Serialize, JsonSchema, PartialEq)]
pub struct RankRow {
    pub rank: u32,
    pub step_ms: f64,
    pub gpu_util: f64,
    /// GPU busy time that is not exposed communication.
    pub compute_ms: f64,
    pub comm_ms: f64,
    /// Communication no compute kernel overlaps: time spent waiting.
    pub exposed_comm_ms: f64,
    /// The step's time with the GPU idle.
    pub idle_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataload_ms: Option<f64>,
    pub kernels_per_step: f64,
    pub bound: Verdict,
    /// Its own waits at matched collectives for later ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<f64>,
    /// The other ranks' waits at the collectives it arrived last at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_caused_ms: Option<f64>,
    /// The rank it waited for longest at collectives, where its verdict is
    /// communication and those waits are at least half its exposed
    /// communication: that communication is the other rank's lateness,
    /// which its verdict then names. Flat (`waits_for_rank`,
    /// `waits_for_ms_per_step`), so the md/csv rank table has it too.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub waits_for: Option<WaitsFor>,
}

/// The rank another waited for longest, and those waits per step.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema, PartialEq)]
pub struct WaitsFor {
    #[serde(rename = "waits_for_rank")]
    pub rank: u32,
    #[serde(rename = "waits_for_ms_per_step")]
    pub ms_per_step: f64,
}

impl RankRow {
    /// The verdict as the job's table says it: `waits for rank 7` where
    /// its communication is mostly that wait, else its own verdict.
    pub fn verdict(&self) -> String {
        match self.waits_for {
            Some(w) => format!("waits for rank {}", w.rank),
            None => self.bound.to_string(),
        }
    }
}

/// Per rank, the rank whose late arrivals it waited for longest and that
/// wait (ms, over the window), from the matched collectives.
fn waited_longest_for(c: &Collectives) -> HashMap<u32, (u32, f64)> {
    let mut by: HashMap<(u32, u32), f64> = HashMap::new();
    for m in &c.collectives {
        let Some(last) = m.last_rank else { continue };
        for r in m.ranks.iter().filter(|r| r.rank != last && r.wait_us > 0.0) {
            *by.entry((r.rank, last)).or_insert(0.0) += r.wait_us / 1e3;
        }
    }
    let mut out: HashMap<u32, (u32, f64)> = HashMap::new();
    for ((waiter, last), ms) in by {
        let e = out.entry(waiter).or_insert((last, ms));
        if ms > e.1 || (ms == e.1 && last < e.0) {
            *e = (last, ms);
        }
    }
    out
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Straggler {
    pub rank: u32,
    /// The other ranks' waits for it at collectives, summed, per step
    /// (None under the compute rule).
    pub wait_caused_ms_per_step: Option<f64>,
    /// Its arrival after the next-latest rank's at the collectives it was
    /// last at, summed, per step: what its lateness alone holds the job
    /// up (`what-if --straggler` re-times it); the rest of the wait it
    /// caused is the ranks' spread, which arriving on time would not end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ahead_ms_per_step: Option<f64>,
    /// How much later than the other ranks' median it arrived at the
    /// worst of those collectives in a step, mean over the steps: what
    /// `why` explains (a rank late at one collective is often late at
    /// those after it for the same reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_ms: Option<f64>,
    /// Steps in which it caused at least the threshold, of the steps its
    /// collectives ran in (None under the compute rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_steps: Option<[u64; 2]>,
    /// The collectives it was last at, the most wait first.
    pub late_at: Vec<LateAt>,
    /// What it did before the collective it was latest at in a step, in
    /// excess of the other ranks, mean over the steps: parts of `late_ms`
    /// (under the compute rule: its kernels' time above the median rank's).
    pub why: Vec<Why>,
    /// The part of `late_ms` its `why` does not cover, when a tenth of it
    /// or more: it was already late when its lead-ins began.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unexplained_ms: Option<f64>,
    /// Its compute per step above the median rank's (supporting evidence).
    pub compute_excess_ms: f64,
    /// The phase whose GPU time exceeds the median rank's the most.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Extra>,
}

/// Collectives of one kind a straggler arrived last at.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct LateAt {
    pub group: String,
    pub collective: String,
    /// How many of them (over the window).
    pub count: usize,
    pub wait_caused_ms_per_step: f64,
}

/// A reason a straggler is late: a kernel's time, or idle time of a cause.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Why {
    pub name: String,
    pub kind: LeadKind,
    pub excess_ms_per_step: f64,
}

/// A phase and its time per step above the median rank's.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Extra {
    pub name: String,
    pub extra_ms: f64,
}

/// One rank's row of the job view from its profile alone, without the
/// job's collectives.
pub fn row(rank: u32, p: &Profile) -> RankRow {
    rank_row(rank, p, None, &HashMap::new())
}

/// One rank's row of the job view (its waits from `c`, where matched;
/// `longest`: [`waited_longest_for`]).
fn rank_row(
    rank: u32,
    p: &Profile,
    c: Option<&Collectives>,
    longest: &HashMap<u32, (u32, f64)>,
) -> RankRow {
    let exposed = p.extras.comm_exposed_ms_per_step.unwrap_or(0.0);
    let waits = c.and_then(|c| c.per_rank.iter().find(|w| w.rank == rank));
    let per_step = |ms: f64| round(ms / steps_of(p), 3);
    // Only a communication verdict is the other rank's lateness: a rank
    // held up by its host is, first, held up by its host.
    let waits_for = longest
        .get(&rank)
        .map(|&(for_rank, ms)| WaitsFor { rank: for_rank, ms_per_step: per_step(ms) })
        .filter(|w| p.bound == Verdict::Communication && w.ms_per_step * 2.0 >= exposed);
    RankRow {
        rank,
        step_ms: p.figures.step_ms,
        gpu_util: p.figures.gpu_util,
        compute_ms: round((p.figures.gpu_busy_ms_per_step - exposed).max(0.0), 3),
        comm_ms: p.extras.comm_ms_per_step.unwrap_or(0.0),
        exposed_comm_ms: exposed,
        idle_ms: round((p.figures.step_ms - p.figures.gpu_busy_ms_per_step).max(0.0), 3),
        dataload_ms: p.figures.dataload_ms,
        kernels_per_step: p.figures.kernels_per_step,
        bound: p.bound.clone(),
        wait_ms: waits.map(|w| per_step(w.wait_ms)),
        wait_caused_ms: waits.map(|w| per_step(w.wait_caused_ms)),
        waits_for,
    }
}

/// The steps a profile's figures are per.
fn steps_of(p: &Profile) -> f64 {
    (p.figures.window.real_steps.max(1)) as f64
}

/// Each name's time in `this` above the median over all ranks (absent: 0).
fn extras(this: &[(String, f64)], all: &[Vec<(String, f64)>]) -> Vec<Extra> {
    let mut out: Vec<Extra> = this
        .iter()
        .map(|(name, ms)| {
            let others: Vec<f64> = all
                .iter()
                .map(|r| r.iter().filter(|(n, _)| n == name).map(|(_, v)| v).sum())
                .collect();
            Extra { name: name.clone(), extra_ms: round(ms - median(&others), 3) }
        })
        .filter(|e| e.extra_ms >= MIN_MS)
        .collect();
    out.sort_by(|a, b| b.extra_ms.total_cmp(&a.extra_ms).then_with(|| a.name.cmp(&b.name)));
    out
}

/// A lead-in item's time in µs in `call`. Absent: 0, or for a kernel of a
/// cut list, the most it can be (so an excess is never overstated).
fn lead_us(call: &CollectiveCall, kind: LeadKind, name: &str) -> f64 {
    let mut found = call.lead_in.iter().filter(|l| l.kind == kind && l.name == name).peekable();
    if found.peek().is_none() && kind == LeadKind::Kernel {
        return call.lead_in_floor_us.unwrap_or(0.0);
    }
    found.map(|l| l.us).sum()
}

/// What each rank's matched collectives cost the others, from the
/// collectives lens: per rank, the wait it caused per step number (None:
/// launched outside any step), per collective kind, and its lead-in
/// excess over the other ranks' at those collectives, µs over the window.
/// Each item of a lead-in and its excess over the other ranks' (µs).
type LeadExcess = Vec<((LeadKind, String), f64)>;

#[derive(Default)]
struct Caused {
    total_us: f64,
    /// Its arrival after the next-latest rank's, summed over the
    /// collectives it was last at: what its lateness alone held them up.
    ahead_us: f64,
    /// Per step, the most it arrived after the others' median, and its
    /// lead-in excess at that collective (what made that lateness).
    late_us: BTreeMap<Option<u64>, (f64, LeadExcess)>,
    by_step: BTreeMap<Option<u64>, f64>,
    by_kind: Vec<(String, String, usize, f64)>,
}

impl Caused {
    /// The lead-in excess at each step's latest collective, summed over
    /// the steps: a decomposition of the lateness, not a sum over every
    /// collective it was last at (audit s12 M4).
    fn excess_us(&self) -> BTreeMap<(LeadKind, String), f64> {
        let mut out: BTreeMap<(LeadKind, String), f64> = BTreeMap::new();
        for (key, us) in self.late_us.values().flat_map(|(_, x)| x) {
            *out.entry(key.clone()).or_insert(0.0) += us;
        }
        out
    }
}

fn caused(set: &RankSet, c: &Collectives) -> BTreeMap<u32, Caused> {
    let calls = |rank: u32| {
        set.ranks.iter().find(|r| r.rank == rank).map(|r| r.input.profile.collectives.as_slice())
    };
    let mut out: BTreeMap<u32, Caused> = BTreeMap::new();
    for m in c.collectives.iter().filter(|m| m.ranks.len() > 1 && m.wait_us > 0.0) {
        let Some(last) = m.last_rank else { continue };
        let Some(mine) =
            m.ranks.iter().find(|r| r.rank == last).and_then(|r| calls(last)?.get(r.call))
        else {
            continue;
        };
        let e = out.entry(last).or_default();
        e.total_us += m.wait_us;
        let arrivals: Vec<f64> =
            m.ranks.iter().filter(|r| r.rank != last).map(|r| r.arrival_us).collect();
        let arrived = m.ranks.iter().find(|r| r.rank == last).map_or(0.0, |r| r.arrival_us);
        let late = arrived - median(&arrivals);
        let next = arrivals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        e.ahead_us += (arrived - next).max(0.0);
        *e.by_step.entry(mine.step).or_insert(0.0) += m.wait_us;
        match e.by_kind.iter_mut().find(|k| k.0 == m.group && k.1 == m.collective) {
            Some(k) => {
                k.2 += 1;
                k.3 += m.wait_us;
            }
            None => e.by_kind.push((m.group.clone(), m.collective.clone(), 1, m.wait_us)),
        }
        let others: Vec<&CollectiveCall> = m
            .ranks
            .iter()
            .filter(|r| r.rank != last)
            .filter_map(|r| calls(r.rank)?.get(r.call))
            .collect();
        let worst = e.late_us.entry(mine.step).or_insert((f64::NEG_INFINITY, Vec::new()));
        if late > worst.0 {
            let excess = mine.lead_in.iter().map(|l| {
                let theirs: Vec<f64> = others.iter().map(|o| lead_us(o, l.kind, &l.name)).collect();
                ((l.kind, l.name.clone()), l.us - median(&theirs))
            });
            *worst = (late, excess.collect());
        }
    }
    out
}

pub fn job(set: &RankSet) -> Job {
    job_of(set, &collectives::of_ranks(set))
}

/// [`job`], given the set's collectives (`collectives::of_ranks`).
pub fn job_of(set: &RankSet, matched: &Collectives) -> Job {
    let profiles: Vec<(u32, &Profile)> =
        set.ranks.iter().map(|r| (r.rank, &r.input.profile)).collect();
    let by_waits = matched.waits_meaningful.then_some(matched);
    let longest = by_waits.map(waited_longest_for).unwrap_or_default();
    let ranks: Vec<RankRow> =
        profiles.iter().map(|(k, p)| rank_row(*k, p, by_waits, &longest)).collect();
    let step_ms = ranks.iter().map(|r| r.step_ms).fold(0.0, f64::max);
    // Over the job's step on every rank, the step the job line prints: a
    // rank whose own window is shorter idles for the rest of it
    // (docs/analysis.md §11).
    let busy: f64 = profiles.iter().map(|(_, p)| p.figures.gpu_busy_ms_per_step).sum();
    let steps = step_ms * profiles.len() as f64;
    let median_compute = median(&ranks.iter().map(|r| r.compute_ms).collect::<Vec<_>>());
    let phases: Vec<Vec<(String, f64)>> = profiles
        .iter()
        .map(|(_, p)| p.phases.iter().map(|ph| (ph.phase.clone(), ph.gpu_ms_per_step)).collect())
        .collect();
    let phase_of = |i: usize| extras(&phases[i], &phases).into_iter().next();
    let compute_excess = |r: &RankRow| round((r.compute_ms - median_compute).max(0.0), 3);
    let mut notes = set.notes.clone();

    let (rule, threshold, stragglers, critical) = if let Some(c) = by_waits {
        let threshold = (STRAGGLER_FRAC * step_ms).max(STRAGGLER_MIN_MS);
        let caused = caused(set, c);
        let mut stragglers: Vec<Straggler> = Vec::new();
        for (i, (rank, p)) in profiles.iter().enumerate() {
            let Some(w) = caused.get(rank) else { continue };
            let n = steps_of(p);
            let per_step = w.total_us / 1e3 / n;
            let in_steps: Vec<f64> =
                w.by_step.iter().filter(|(s, _)| s.is_some()).map(|(_, us)| us / 1e3).collect();
            // Consistent: most of its steps, not one outlier (a window
            // without step markers is one step).
            let typical = if in_steps.is_empty() { per_step } else { median(&pad(&in_steps, n)) };
            if per_step < threshold || typical < threshold {
                continue;
            }
            let late_steps = in_steps.iter().filter(|ms| **ms >= threshold).count() as u64;
            let mut late_at: Vec<LateAt> = w
                .by_kind
                .iter()
                .map(|(g, c, k, us)| LateAt {
                    group: g.clone(),
                    collective: c.clone(),
                    count: *k,
                    wait_caused_ms_per_step: round(us / 1e3 / n, 3),
                })
                .collect();
            late_at.sort_by(|a, b| {
                b.wait_caused_ms_per_step
                    .total_cmp(&a.wait_caused_ms_per_step)
                    .then_with(|| a.collective.cmp(&b.collective))
            });
            late_at.truncate(TOP_LATE_AT);
            // Both over the steps with a latest collective: the items
            // decompose the lateness (docs/analysis.md §11).
            let late_n = w.late_us.len().max(1) as f64;
            let late = w.late_us.values().map(|(us, _)| us).sum::<f64>() / 1e3 / late_n;
            let mut why: Vec<Why> = w
                .excess_us()
                .iter()
                .map(|((kind, name), us)| Why {
                    name: name.clone(),
                    kind: *kind,
                    excess_ms_per_step: round(us / 1e3 / late_n, 3),
                })
                .filter(|y| y.excess_ms_per_step >= (WHY_SHARE * late).max(MIN_MS))
                .collect();
            why.sort_by(|a, b| {
                b.excess_ms_per_step
                    .total_cmp(&a.excess_ms_per_step)
                    .then_with(|| a.name.cmp(&b.name))
            });
            why.truncate(TOP_WHY);
            let rest = late - why.iter().map(|w| w.excess_ms_per_step).sum::<f64>();
            stragglers.push(Straggler {
                rank: *rank,
                wait_caused_ms_per_step: Some(round(per_step, 3)),
                ahead_ms_per_step: Some(round(w.ahead_us / 1e3 / n, 3)),
                late_ms: Some(round(late, 3)),
                late_steps: (!in_steps.is_empty())
                    .then_some([late_steps, in_steps.len().max(n as usize) as u64]),
                late_at,
                why,
                unexplained_ms: (rest >= 0.1 * late && rest >= MIN_MS).then(|| round(rest, 3)),
                compute_excess_ms: compute_excess(&ranks[i]),
                phase: phase_of(i),
            });
        }
        stragglers.sort_by(|a, b| {
            b.wait_caused_ms_per_step
                .unwrap_or(0.0)
                .total_cmp(&a.wait_caused_ms_per_step.unwrap_or(0.0))
                .then(a.rank.cmp(&b.rank))
        });
        let critical = stragglers.first().map(|s| s.rank);
        (StragglerRule::Waits, threshold, stragglers, critical)
    } else {
        if profiles.len() > 1 {
            notes.push("no collectives matched across the ranks: stragglers are found by compute time, not by who waits for whom".into());
        }
        let threshold = (COMPUTE_FRAC * step_ms).max(STRAGGLER_MIN_MS);
        let kernels: Vec<Vec<(String, f64)>> = profiles
            .iter()
            .map(|(_, p)| {
                p.kernels
                    .iter()
                    .filter(|k| k.category != Category::Communication)
                    .map(|k| (k.kernel.clone(), k.ms_per_step))
                    .collect()
            })
            .collect();
        let mut stragglers: Vec<Straggler> = ranks
            .iter()
            .enumerate()
            .filter(|(_, r)| r.compute_ms - median_compute > threshold)
            .map(|(i, r)| Straggler {
                rank: r.rank,
                wait_caused_ms_per_step: None,
                ahead_ms_per_step: None,
                late_ms: None,
                late_steps: None,
                late_at: Vec::new(),
                why: extras(&kernels[i], &kernels)
                    .into_iter()
                    .take(TOP_WHY)
                    .map(|e| Why {
                        name: e.name,
                        kind: LeadKind::Kernel,
                        excess_ms_per_step: e.extra_ms,
                    })
                    .collect(),
                unexplained_ms: None,
                compute_excess_ms: compute_excess(r),
                phase: phase_of(i),
            })
            .collect();
        stragglers.sort_by(|a, b| {
            b.compute_excess_ms.total_cmp(&a.compute_excess_ms).then(a.rank.cmp(&b.rank))
        });
        // The rank computing longest, else the one with the longest step.
        let longest = ranks
            .iter()
            .max_by(|a, b| a.step_ms.total_cmp(&b.step_ms).then(b.rank.cmp(&a.rank)))
            .map(|r| r.rank);
        let critical = stragglers.first().map(|s| s.rank).or(longest);
        (StragglerRule::Compute, threshold, stragglers, critical)
    };
    let path = job_path(set, matched, &ranks);
    Job {
        world_size: set.world_size,
        step_ms: round(step_ms, 3),
        critical_rank: critical,
        gpu_util: round(if steps > 0.0 { busy / steps } else { 0.0 }, 3),
        ranks,
        straggler_rule: rule,
        straggler_threshold_ms: round(threshold, 3),
        stragglers,
        path,
        notes,
    }
}

/// `values` with zeros for the steps in which it caused no wait, up to `n`.
fn pad(values: &[f64], n: f64) -> Vec<f64> {
    let mut v = values.to_vec();
    v.resize(v.len().max(n as usize), 0.0);
    v
}

/// Two runs of a distributed job, before → after: the job's figures and
/// each rank's step.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct JobComparison {
    pub before: String,
    pub after: String,
    pub step_ms: [f64; 2],
    pub step_change_pct: Option<f64>,
    pub critical_rank: [Option<u32>; 2],
    pub gpu_util: [f64; 2],
    pub stragglers: [Vec<u32>; 2],
    pub ranks: Vec<RankDelta>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// One rank's step before and after (None: the rank is on one side only),
/// and the wait it caused the others per step at collectives.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct RankDelta {
    pub rank: u32,
    pub before_ms: Option<f64>,
    pub after_ms: Option<f64>,
    pub change_pct: Option<f64>,
    pub wait_caused_ms: [Option<f64>; 2],
}

fn change(a: f64, b: f64) -> Option<f64> {
    (a != 0.0).then(|| round((b - a) / a * 100.0, 1))
}

pub fn compare_jobs(a: &Job, b: &Job, before: &str, after: &str) -> JobComparison {
    let mut ranks: Vec<u32> = a.ranks.iter().chain(&b.ranks).map(|r| r.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    fn at(j: &Job, k: u32) -> Option<&RankRow> {
        j.ranks.iter().find(|r| r.rank == k)
    }
    let step = |j: &Job, k: u32| at(j, k).map(|r| r.step_ms);
    let caused = |j: &Job, k: u32| at(j, k).and_then(|r| r.wait_caused_ms);
    let warning = (a.ranks.len() != b.ranks.len()).then(|| {
        format!("{} ranks before, {} after: the jobs differ in size", a.ranks.len(), b.ranks.len())
    });
    JobComparison {
        before: before.to_string(),
        after: after.to_string(),
        step_ms: [a.step_ms, b.step_ms],
        step_change_pct: change(a.step_ms, b.step_ms),
        critical_rank: [a.critical_rank, b.critical_rank],
        gpu_util: [a.gpu_util, b.gpu_util],
        stragglers: [
            a.stragglers.iter().map(|s| s.rank).collect(),
            b.stragglers.iter().map(|s| s.rank).collect(),
        ],
        ranks: ranks
            .into_iter()
            .map(|k| {
                let (x, y) = (step(a, k), step(b, k));
                RankDelta {
                    rank: k,
                    before_ms: x,
                    after_ms: y,
                    change_pct: x.zip(y).and_then(|(x, y)| change(x, y)),
                    wait_caused_ms: [caused(a, k), caused(b, k)],
                }
            })
            .collect(),
        warning,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_extras() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        let all = vec![
            vec![("gemm".to_string(), 1.0), ("norm".to_string(), 0.5)],
            vec![("gemm".to_string(), 1.1)],
            vec![("gemm".to_string(), 3.0), ("norm".to_string(), 0.5)],
        ];
        let e = extras(&all[2], &all);
        assert_eq!(e[0], Extra { name: "gemm".into(), extra_ms: 1.9 });
        assert_eq!(e.len(), 1, "norm is at the median: not extra");
    }
}
