//! `profile kernels`: individual GPU kernels, filtered and sorted.

use regex::{Regex, RegexBuilder};
use serde::Serialize;

use super::phases::check_phase;
use crate::error::{Error, Result};
use crate::profile::{KernelRow, Profile};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Sort {
    #[default]
    Time,
    Count,
    Name,
}

impl Sort {
    pub fn next(self) -> Sort {
        match self {
            Sort::Time => Sort::Count,
            Sort::Count => Sort::Name,
            Sort::Name => Sort::Time,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Sort::Time => "time",
            Sort::Count => "count",
            Sort::Name => "name",
        }
    }
}

/// The filters of the `kernels` command (and of the explorer's pane).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Kernels {
    pub trace: Option<String>,
    pub query: KernelQuery,
    /// Kernels that pass the filters (before `top`).
    pub matched: usize,
    /// Kernels in scope (the profile, or the phase) before filtering.
    pub total: usize,
    pub kernels: Vec<KernelRow>,
}

/// Compiles a `--grep` pattern (exit 2 on a bad one).
pub fn compile_grep(pattern: &str) -> Result<Regex> {
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| Error::usage(format!("invalid --grep regex '{pattern}': {e}")))
}

/// A `--category` that names no category (exit 2, listing them): every
/// category the analysis gives, and any other this profile holds.
pub fn check_category(p: &Profile, wanted: &str) -> Result<()> {
    let mut known: Vec<&str> = crate::analysis::kernels::CATEGORIES_ALL.to_vec();
    for c in p.categories.iter().map(|c| c.name.as_str()).chain(p.kernels.iter().map(|k| k.category.as_str())) {
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
        .filter(|k| cat.as_ref().is_none_or(|c| k.category.to_lowercase().contains(c.as_str())))
        .filter(|k| !q.tensorcore || k.tensorcore)
        .filter(|k| re.as_ref().is_none_or(|re| re.is_match(&k.raw_name) || re.is_match(&k.kernel)))
        .collect();
    match q.sort {
        Sort::Time => rows.sort_by(|a, b| b.ms_per_step.total_cmp(&a.ms_per_step).then_with(|| a.raw_name.cmp(&b.raw_name))),
        Sort::Count => rows.sort_by(|a, b| b.count_per_step.total_cmp(&a.count_per_step).then_with(|| a.raw_name.cmp(&b.raw_name))),
        Sort::Name => rows.sort_by(|a, b| a.kernel.cmp(&b.kernel).then_with(|| a.raw_name.cmp(&b.raw_name))),
    }
    let matched = rows.len();
    let shown = q.top.unwrap_or(matched).min(matched);
    let kernels = rows[..shown].iter().map(|k| (*k).clone()).collect();
    Ok(Kernels { trace: p.trace.clone(), query: q.clone(), matched, total: scope.len(), kernels })
}

/// A kernel's share in each phase, for the explorer's detail view.
pub fn phase_split(p: &Profile, raw_name: &str) -> Vec<(String, KernelRow)> {
    p.kernels_by_phase
        .iter()
        .filter_map(|(phase, rows)| rows.iter().find(|r| r.raw_name == raw_name).map(|r| (phase.clone(), r.clone())))
        .collect()
}
