//! `summary` of a distributed job: the job first (its step is the slowest
//! rank's), one row per rank, then the stragglers and why they are late.
//!
//! A rank that computes longer than the others arrives late at every
//! collective, and the others wait for it (their exposed communication
//! grows). So a straggler is a rank whose compute per step exceeds the
//! median rank's by more than [`STRAGGLER_FRAC`] of the job's step; its
//! reason is the phase and the kernels whose time exceeds the median rank's.

use serde::Serialize;

use crate::analysis::kernels::COMMUNICATION;
use crate::profile::Profile;
use crate::profile::ranks::RankSet;
use crate::util::{median, round};

/// Compute this share of the job's step above the median rank's makes a
/// straggler (and never less than [`STRAGGLER_MIN_MS`]).
pub const STRAGGLER_FRAC: f64 = 0.05;
pub const STRAGGLER_MIN_MS: f64 = 0.05;
/// Kernels named per straggler.
const TOP_KERNELS: usize = 3;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Job {
    /// `distributedInfo.world_size`, where the traces record it.
    pub world_size: Option<u32>,
    /// The job's step time: the slowest rank's, ms.
    pub step_ms: f64,
    /// The rank whose step is the job's.
    pub critical_rank: u32,
    /// GPU busy time over step time, all ranks together.
    pub gpu_util: f64,
    pub ranks: Vec<RankRow>,
    /// The compute above the median rank's that makes a straggler, ms.
    pub straggler_threshold_ms: f64,
    pub stragglers: Vec<Straggler>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One rank, per step (ms).
#[derive(Debug, Clone, Serialize, PartialEq)]
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
    pub bound: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Straggler {
    pub rank: u32,
    /// Compute per step above the median rank's.
    pub late_ms: f64,
    /// The phase whose GPU time exceeds the median rank's the most.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Extra>,
    /// The compute kernels whose time exceeds the median rank's the most.
    pub kernels: Vec<Extra>,
}

/// A phase or kernel and its time per step above the median rank's.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Extra {
    pub name: String,
    pub extra_ms: f64,
}

fn row(rank: u32, p: &Profile) -> RankRow {
    let exposed = p.extras.comm_exposed_ms_per_step.unwrap_or(0.0);
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
    }
}

/// Each name's time in `this` above the median over all ranks (absent: 0).
fn extras(this: &[(String, f64)], all: &[Vec<(String, f64)>]) -> Vec<Extra> {
    let mut out: Vec<Extra> = this
        .iter()
        .map(|(name, ms)| {
            let others: Vec<f64> = all.iter().map(|r| r.iter().filter(|(n, _)| n == name).map(|(_, v)| v).sum()).collect();
            Extra { name: name.clone(), extra_ms: round(ms - median(&others), 3) }
        })
        .filter(|e| e.extra_ms > 0.0)
        .collect();
    out.sort_by(|a, b| b.extra_ms.total_cmp(&a.extra_ms).then_with(|| a.name.cmp(&b.name)));
    out
}

pub fn job(set: &RankSet) -> Job {
    let profiles: Vec<(u32, &Profile)> = set.ranks.iter().map(|r| (r.rank, &r.input.profile)).collect();
    let ranks: Vec<RankRow> = profiles.iter().map(|(k, p)| row(*k, p)).collect();
    let critical = ranks.iter().max_by(|a, b| a.step_ms.total_cmp(&b.step_ms)).map_or(0, |r| r.rank);
    let step_ms = ranks.iter().map(|r| r.step_ms).fold(0.0, f64::max);
    let (busy, steps): (f64, f64) =
        profiles.iter().fold((0.0, 0.0), |(b, s), (_, p)| (b + p.figures.gpu_busy_ms_per_step, s + p.figures.step_ms));
    let threshold = (STRAGGLER_FRAC * step_ms).max(STRAGGLER_MIN_MS);
    let median_compute = median(&ranks.iter().map(|r| r.compute_ms).collect::<Vec<_>>());
    let phases: Vec<Vec<(String, f64)>> =
        profiles.iter().map(|(_, p)| p.phases.iter().map(|ph| (ph.phase.clone(), ph.gpu_ms_per_step)).collect()).collect();
    let kernels: Vec<Vec<(String, f64)>> = profiles
        .iter()
        .map(|(_, p)| p.kernels.iter().filter(|k| k.category != COMMUNICATION).map(|k| (k.raw_name.clone(), k.ms_per_step)).collect())
        .collect();
    let stragglers = ranks
        .iter()
        .enumerate()
        .filter(|(_, r)| r.compute_ms - median_compute > threshold)
        .map(|(i, r)| Straggler {
            rank: r.rank,
            late_ms: round(r.compute_ms - median_compute, 3),
            phase: extras(&phases[i], &phases).into_iter().next(),
            kernels: extras(&kernels[i], &kernels).into_iter().take(TOP_KERNELS).collect(),
        })
        .collect();
    Job {
        world_size: set.world_size,
        step_ms: round(step_ms, 3),
        critical_rank: critical,
        gpu_util: round(if steps > 0.0 { busy / steps } else { 0.0 }, 3),
        ranks,
        straggler_threshold_ms: round(threshold, 3),
        stragglers,
        notes: set.notes.clone(),
    }
}

/// Two runs of a distributed job, before → after: the job's figures and
/// each rank's step.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct JobComparison {
    pub before: String,
    pub after: String,
    pub step_ms: [f64; 2],
    pub step_change_pct: Option<f64>,
    pub critical_rank: [u32; 2],
    pub gpu_util: [f64; 2],
    pub stragglers: [Vec<u32>; 2],
    pub ranks: Vec<RankDelta>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// One rank's step before and after (None: the rank is on one side only).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RankDelta {
    pub rank: u32,
    pub before_ms: Option<f64>,
    pub after_ms: Option<f64>,
    pub change_pct: Option<f64>,
}

fn change(a: f64, b: f64) -> Option<f64> {
    (a != 0.0).then(|| round((b - a) / a * 100.0, 1))
}

pub fn compare_jobs(a: &Job, b: &Job, before: &str, after: &str) -> JobComparison {
    let mut ranks: Vec<u32> = a.ranks.iter().chain(&b.ranks).map(|r| r.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let step = |j: &Job, k: u32| j.ranks.iter().find(|r| r.rank == k).map(|r| r.step_ms);
    let warning = (a.ranks.len() != b.ranks.len())
        .then(|| format!("{} ranks before, {} after: the jobs differ in size", a.ranks.len(), b.ranks.len()));
    JobComparison {
        before: before.to_string(),
        after: after.to_string(),
        step_ms: [a.step_ms, b.step_ms],
        step_change_pct: change(a.step_ms, b.step_ms),
        critical_rank: [a.critical_rank, b.critical_rank],
        gpu_util: [a.gpu_util, b.gpu_util],
        stragglers: [a.stragglers.iter().map(|s| s.rank).collect(), b.stragglers.iter().map(|s| s.rank).collect()],
        ranks: ranks
            .into_iter()
            .map(|k| {
                let (x, y) = (step(a, k), step(b, k));
                RankDelta { rank: k, before_ms: x, after_ms: y, change_pct: x.zip(y).and_then(|(x, y)| change(x, y)) }
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
