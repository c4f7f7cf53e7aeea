//! `profile kernels`: individual GPU kernels, filtered and sorted.

use schemars::JsonSchema;
use serde::Serialize;

pub use super::pattern::{compile_grep, compile_pattern};
use super::phases::check_phase;
use super::tree::{LaunchedFrom, launched_from, stored_tree};
use crate::error::{Error, Result};
use crate::profile::{Category, KernelRow, Profile};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Sort {
    #[default]
    Time,
    Count,
    Name,
    /// Time lost against the roofline (docs/analysis.md §13), largest
    /// first; rows the model did not price follow by time.
    Efficiency,
    /// GPU time: an op's, the kernels launched inside it (docs/analysis.md
    /// §17); a kernel's, its time.
    Gpu,
}

impl Sort {
    pub fn next(self) -> Sort {
        match self {
            Sort::Time => Sort::Count,
            Sort::Count => Sort::Name,
            Sort::Name => Sort::Efficiency,
            Sort::Efficiency | Sort::Gpu => Sort::Time,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Sort::Time => "time",
            Sort::Count => "count",
            Sort::Name => "name",
            Sort::Efficiency => "efficiency",
            Sort::Gpu => "gpu",
        }
    }
}

/// Orders rows by `sort`: `time`, `count`, `lost` and `gpu` read a row's
/// figures, `name` its name; ties by name.
pub fn sort_rows<T>(
    rows: &mut [&T],
    sort: Sort,
    time: fn(&T) -> f64,
    gpu: fn(&T) -> f64,
    count: fn(&T) -> f64,
    lost: fn(&T) -> Option<f64>,
    name: fn(&T) -> &str,
) {
    let by_name = |a: &&T, b: &&T| name(a).cmp(name(b));
    match sort {
        Sort::Time => rows.sort_by(|a, b| time(b).total_cmp(&time(a)).then_with(|| by_name(a, b))),
        Sort::Count => {
            rows.sort_by(|a, b| count(b).total_cmp(&count(a)).then_with(|| by_name(a, b)))
        }
        Sort::Name => rows.sort_by(by_name),
        Sort::Gpu => rows.sort_by(|a, b| {
            gpu(b).total_cmp(&gpu(a)).then(time(b).total_cmp(&time(a))).then_with(|| by_name(a, b))
        }),
        Sort::Efficiency => rows.sort_by(|a, b| {
            let key = |r: &&T| (lost(r).is_some(), lost(r).unwrap_or(0.0), time(r));
            let (ka, kb) = (key(a), key(b));
            kb.0.cmp(&ka.0)
                .then(kb.1.total_cmp(&ka.1))
                .then(kb.2.total_cmp(&ka.2))
                .then_with(|| by_name(a, b))
        }),
    }
}

/// The filters of the `kernels` command (and of the explorer's pane).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct KernelQuery {
    /// Rows to return; `None` returns every match.
    pub top: Option<usize>,
    /// Case-insensitive substring of the category.
    pub category: Option<String>,
    /// Case-insensitive regex on the full or short kernel name.
    pub grep: Option<String>,
    pub tensorcore: bool,
    pub sort: Sort,
    pub phase: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Kernels {
    pub trace: Option<String>,
    /// Why there is no table: the profile has no kernels at all (a CPU
    /// run); [`NO_KERNELS`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub none: Option<&'static str>,
    pub query: KernelQuery,
    /// Kernels that pass the filters (before `top`).
    pub matched: usize,
    /// Kernels in scope (the profile, or the phase) before filtering.
    pub total: usize,
    pub kernels: Vec<KernelRow>,
    /// Why rates or % of peak are missing (no shapes recorded, device not
    /// in the peak table): GPU traces only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub efficiency_notes: Vec<String>,
    /// The kernel time of CUDA/HIP graph replays: no op, shape or module
    /// of this trace launched it (docs/analysis.md §17).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_replay_ms_per_step: Option<f64>,
    /// The part of it matched to captured ops (a capture trace given,
    /// §17.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_replay_attributed_ms_per_step: Option<f64>,
    /// Where each kernel of the table was launched from, in its order: its
    /// op, modules and Python lines (a trace with a call tree; `--json`
    /// only: `Kernels::with_launched_from`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub launched_from: Vec<LaunchedFrom>,
    /// What the devices call the matrix units the `tensorcore` flag marks
    /// (Tensor or Matrix Cores): a label, not a figure.
    #[serde(skip)]
    pub matrix_units: &'static str,
}

/// What a profile without kernels says instead of an empty table
/// (`summary` and `kernels` alike).
pub const NO_KERNELS: &str = "none in this trace (a CPU run, or recorded without CUDA activities); `profile ops` on the same file shows where the CPU time goes";

/// The profile's efficiency notes, for the tables that show rates.
pub fn efficiency_notes(p: &Profile) -> Vec<String> {
    p.efficiency.as_ref().map(|e| e.notes.clone()).unwrap_or_default()
}

/// A `--category` that names no category (exit 2, listing them): every
/// category the analysis gives, and any other this profile holds.
pub fn check_category(p: &Profile, wanted: &str) -> Result<()> {
    let mut known: Vec<&str> = Category::ALL.iter().map(Category::as_str).collect();
    for c in p
        .categories
        .iter()
        .map(|c| c.name.as_str())
        .chain(p.kernels.iter().map(|k| k.category.as_str()))
    {
        if !known.contains(&c) {
            known.push(c);
        }
    }
    let needle = wanted.to_lowercase();
    if known.iter().any(|c| c.to_lowercase().contains(&needle)) {
        return Ok(());
    }
    Err(Error::usage(format!("no category matching '{wanted}'. categories: {}", known.join(", "))))
}

pub fn kernels(p: &Profile, q: &KernelQuery) -> Result<Kernels> {
    let scope: &[KernelRow] = match &q.phase {
        Some(phase) => {
            check_phase(p, phase)?;
            p.kernels_by_phase.get(phase).map_or(&[], Vec::as_slice)
        }
        None => &p.kernels,
    };
    let re = q.grep.as_deref().map(compile_grep).transpose()?;
    let cat = q.category.as_ref().map(|c| c.to_lowercase());
    // Filter and sort references; clone only the rows returned (the
    // explorer asks this of 50k-row profiles on every keypress).
    let mut rows: Vec<&KernelRow> = scope
        .iter()
        .filter(|k| {
            cat.as_ref().is_none_or(|c| k.category.as_str().to_lowercase().contains(c.as_str()))
        })
        .filter(|k| !q.tensorcore || k.tensorcore)
        .filter(|k| re.as_ref().is_none_or(|re| re.is_match(&k.raw_name) || re.is_match(&k.kernel)))
        .collect();
    match q.sort {
        // By label, then by full name (labels of template instances repeat).
        Sort::Name => {
            rows.sort_by(|a, b| a.kernel.cmp(&b.kernel).then_with(|| a.raw_name.cmp(&b.raw_name)))
        }
        sort => sort_rows(
            &mut rows,
            sort,
            |k| k.ms_per_step,
            |k| k.ms_per_step,
            |k| k.count_per_step,
            |k| k.achieved.lost_ms_per_step,
            |k| &k.raw_name,
        ),
    }
    let matched = rows.len();
    let shown = q.top.unwrap_or(matched).min(matched);
    // A profile written before `priced_pct` gets it from its own figures.
    let kernels: Vec<KernelRow> = rows[..shown]
        .iter()
        .map(|k| KernelRow { priced_pct: k.priced_share(), ..(*k).clone() })
        .collect();
    Ok(Kernels {
        trace: p.trace.clone(),
        none: p.kernels.is_empty().then_some(NO_KERNELS),
        query: q.clone(),
        matched,
        total: scope.len(),
        kernels,
        efficiency_notes: efficiency_notes(p),
        graph_replay_ms_per_step: p.extras.graph_replay_ms_per_step,
        graph_replay_attributed_ms_per_step: p.extras.graph_replay_attributed_ms_per_step,
        launched_from: Vec::new(),
        matrix_units: p.matrix_units(),
    })
}

impl Kernels {
    /// With where each row's kernel was launched from (`--json`): a walk
    /// of the call tree per row, which the tables and the explorer's list
    /// do not show, so only the renderer that writes it asks for it.
    pub fn with_launched_from(mut self, p: &Profile) -> Self {
        if stored_tree(p).is_ok() {
            self.launched_from =
                self.kernels.iter().filter_map(|k| launched_from(p, &k.kernel)).collect();
        }
        self
    }
}

/// A kernel's share in each phase, for the explorer's detail view.
pub fn phase_split(p: &Profile, raw_name: &str) -> Vec<(String, KernelRow)> {
    p.kernels_by_phase
        .iter()
        .filter_map(|(phase, rows)| {
            rows.iter().find(|r| r.raw_name == raw_name).map(|r| (phase.clone(), r.clone()))
        })
        .collect()
}

/// `kernels` over a distributed job's ranks: one job-wide row per kernel
/// (docs/spec.md §7). The row's figures are the mean over the ranks (a rank
/// without the kernel counts 0), so the table reads like one rank's; the
/// spread says which rank spends the most in it, where a straggler shows.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct JobKernels {
    pub ranks: Vec<u32>,
    pub query: KernelQuery,
    pub matched: usize,
    pub total: usize,
    pub kernels: Vec<JobKernelRow>,
    /// The ranks' devices' name for their matrix units ([`Kernels`]).
    #[serde(skip)]
    pub matrix_units: &'static str,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, PartialEq)]
pub struct JobKernelRow {
    /// Mean over the ranks, per step.
    #[serde(flatten)]
    pub mean: KernelRow,
    pub min_ms_per_step: f64,
    pub max_ms_per_step: f64,
    /// The rank with the most time in this kernel.
    pub max_rank: u32,
    /// Ranks that ran it.
    pub on_ranks: usize,
}

/// The ranks' kernel rows merged by raw name: the mean per step and, per
/// name, each rank's time (for the spread).
fn merge_rows(ranks: &[(u32, &[KernelRow])]) -> (Vec<KernelRow>, Vec<Vec<(u32, f64)>>) {
    let n = ranks.len().max(1) as f64;
    let mut rows: Vec<KernelRow> = Vec::new();
    let mut per: Vec<Vec<(u32, f64)>> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (rank, list) in ranks {
        for k in *list {
            let i = *at.entry(&k.raw_name).or_insert_with(|| {
                // Rates and a kernel's calls are per trace: not kept in a
                // mean over ranks.
                rows.push(KernelRow {
                    ms_per_step: 0.0,
                    pct_of_gpu: 0.0,
                    count_per_step: 0.0,
                    priced_pct: None,
                    achieved: Default::default(),
                    calls: None,
                    ..k.clone()
                });
                per.push(Vec::new());
                rows.len() - 1
            });
            rows[i].ms_per_step += k.ms_per_step / n;
            rows[i].count_per_step += k.count_per_step / n;
            per[i].push((*rank, k.ms_per_step));
        }
    }
    let total: f64 = rows.iter().map(|r| r.ms_per_step).sum();
    for r in &mut rows {
        r.pct_of_gpu =
            crate::util::round(if total > 0.0 { r.ms_per_step / total * 100.0 } else { 0.0 }, 2);
        r.ms_per_step = crate::util::round(r.ms_per_step, 4);
        r.count_per_step = crate::util::round(r.count_per_step, 2);
    }
    (rows, per)
}

pub fn job_kernels(profiles: &[(u32, &Profile)], q: &KernelQuery) -> Result<JobKernels> {
    // One profile holding the merged rows, so the filters and their errors
    // are those of the single-trace command.
    let mut merged = Profile::default();
    let (rows, per) =
        merge_rows(&profiles.iter().map(|(r, p)| (*r, p.kernels.as_slice())).collect::<Vec<_>>());
    merged.kernels = rows;
    let mut spread: std::collections::HashMap<String, Vec<(u32, f64)>> =
        merged.kernels.iter().map(|k| k.raw_name.clone()).zip(per).collect();
    if let Some(phase) = &q.phase {
        for (_, p) in profiles {
            for ph in &p.phases {
                if !merged.phases.iter().any(|x| x.phase == ph.phase) {
                    merged.phases.push(ph.clone());
                }
            }
        }
        let lists: Vec<(u32, &[KernelRow])> = profiles
            .iter()
            .map(|(r, p)| (*r, p.kernels_by_phase.get(phase).map_or(&[][..], Vec::as_slice)))
            .collect();
        let (rows, per) = merge_rows(&lists);
        spread = rows.iter().map(|k| k.raw_name.clone()).zip(per).collect();
        merged.kernels_by_phase.insert(phase.clone(), rows);
    }
    for (_, p) in profiles {
        for c in &p.categories {
            if !merged.categories.iter().any(|x| x.name == c.name) {
                merged.categories.push(c.clone());
            }
        }
    }
    if let Some(c) = &q.category {
        check_category(&merged, c)?;
    }
    let k = kernels(&merged, q)?;
    let rows = k
        .kernels
        .into_iter()
        .map(|mean| {
            let s = spread.get(&mean.raw_name).cloned().unwrap_or_default();
            // Ranks without the kernel spend 0 in it.
            let min = if s.len() < profiles.len() {
                0.0
            } else {
                s.iter().map(|x| x.1).fold(f64::INFINITY, f64::min)
            };
            let (max_rank, max) = s
                .iter()
                .copied()
                .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
            JobKernelRow {
                mean,
                min_ms_per_step: min,
                max_ms_per_step: max.max(0.0),
                max_rank,
                on_ranks: s.len(),
            }
        })
        .collect();
    Ok(JobKernels {
        ranks: profiles.iter().map(|(r, _)| *r).collect(),
        query: q.clone(),
        matched: k.matched,
        total: k.total,
        kernels: rows,
        matrix_units: crate::profile::schema::matrix_units(
            &profiles.iter().flat_map(|(_, p)| p.devices.iter().cloned()).collect::<Vec<_>>(),
        ),
    })
}
