//! A distributed job's traces, one per rank: several files on the command
//! line, or a folder holding several traces. Each rank is read on its own
//! thread (as many as CPUs), in the bounded memory of a single trace; the
//! job view is a reduce over the per-rank profiles (`lens::job`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub use super::rank_from_name;
use super::{LoadOptions, Loaded, load as load_one};
use crate::analysis::model::StepModel;
use crate::error::{Error, Result};
pub use crate::profile::ranks::{Rank, RankSet};
use crate::trace::ReadOptions;

/// The files of a rank set, when the arguments name one ([`super::what`]):
/// several paths, or one folder, of one job's rank traces.
pub fn rank_files<P: AsRef<Path>>(args: &[P]) -> Result<Option<Vec<PathBuf>>> {
    Ok(match super::what(args)?.what {
        super::What::Ranks(ranks) => Some(ranks.into_iter().map(|r| r.path).collect()),
        super::What::One(_) => None,
    })
}

/// Which ranks to read, what an unreadable one does, and who counts.
#[derive(Debug, Clone, Default)]
pub struct Options<'a> {
    /// `--ranks 0-3,7`: only these ranks (all when `None`).
    pub select: Option<Vec<u32>>,
    /// `--strict`: one unreadable rank fails the whole set (exit 1);
    /// otherwise it is named in a warning and the job is the rest.
    pub strict: bool,
    /// Incremented as each rank's file is read (the explorer's progress,
    /// docs/design.md §4).
    pub done: Option<&'a AtomicUsize>,
    /// How the ranks are read: their threads are the job's budget, shared
    /// between the ranks read side by side.
    pub read: ReadOptions,
    /// Keep each rank trace's step model ([`load_with_models`]).
    pub keep_models: bool,
}

/// Parses a rank selection: `0-3,7` → [0, 1, 2, 3, 7] (exit 2 on a bad one).
pub fn parse_selection(s: &str) -> Result<Vec<u32>> {
    crate::util::parse_ranges(s)
        .ok_or_else(|| Error::usage(format!("--ranks {s}: expected ranks and ranges like 0-3,7")))
}

/// A file's rank without reading its events: `distributedInfo` in the
/// keys before `traceEvents` (where Kineto writes it), else the file name.
/// `None` when only a full read can tell (a profile, an odd key order).
fn cheap_rank(path: &Path) -> Option<u32> {
    crate::trace::header_rank(path).or_else(|| rank_from_name(path))
}

/// Reads every rank, in parallel. The rank comes from `distributedInfo`,
/// else from the file name; a rank seen twice is refused (which file is the
/// real one cannot be guessed), missing ranks are noted; ranks that
/// disagree on the world size are from different jobs and refused.
pub fn load(files: &[PathBuf], opts: &Options<'_>) -> Result<RankSet> {
    load_with_models(files, opts).map(|(set, _)| set)
}

/// [`load`], with each rank's step model (in the set's rank order) when
/// [`Options::keep_models`] and the rank is a trace.
pub fn load_with_models(
    files: &[PathBuf],
    opts: &Options<'_>,
) -> Result<(RankSet, Vec<Option<StepModel>>)> {
    // Ranks not selected are not read, when the header or name tells.
    let files: Vec<PathBuf> = match &opts.select {
        Some(sel) => files
            .iter()
            .filter(|f| cheap_rank(f).is_none_or(|r| sel.contains(&r)))
            .cloned()
            .collect(),
        None => files.to_vec(),
    };
    let files = files.as_slice();
    // One thread budget for the job: ranks side by side, and each rank's
    // read parses on what is left over (one thread each once ranks ≥ cores).
    let budget = opts.read.threads;
    let threads = budget.min(files.len()).max(1);
    let share = (budget / threads).max(1);
    let next = AtomicUsize::new(0);
    let mut loaded: Vec<Option<Result<Loaded>>> = (0..files.len()).map(|_| None).collect();
    let slots = std::sync::Mutex::new(&mut loaded);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = files.get(i) else { break };
                    let read = opts.read.with_threads(share, opts.read.block);
                    let keep_model = opts.keep_models;
                    let r =
                        load_one(path, LoadOptions { read, keep_model, ..LoadOptions::default() });
                    if let Ok(mut slots) = slots.lock() {
                        slots[i] = Some(r);
                    }
                    if let Some(done) = opts.done {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let mut ranks = Vec::new();
    let mut notes = Vec::new();
    let mut world_size = None;
    let mut unread = Vec::new();
    for (path, r) in files.iter().zip(loaded) {
        let Loaded { input, model, .. } = match r
            .unwrap_or_else(|| Err(Error::failed(format!("{} was not read", path.display()))))
        {
            Ok(x) => x,
            Err(e) if opts.strict || e.exit_code() == crate::error::exit::USAGE => return Err(e),
            Err(e) => {
                unread.push(e);
                continue;
            }
        };
        let dist = input.profile.distributed.clone().unwrap_or_default();
        let rank = dist.rank.or_else(|| rank_from_name(path)).ok_or_else(|| {
            Error::failed(format!(
                "{}: no rank (no distributedInfo.rank and no rank/worker number in the name)",
                path.display()
            ))
        })?;
        if opts.select.as_ref().is_some_and(|sel| !sel.contains(&rank)) {
            continue;
        }
        if let (Some(w), Some(mine)) = (world_size, dist.world_size)
            && w != mine
        {
            return Err(Error::failed(format!(
                "{} is rank {rank} of a world of {mine}, the others of a world of {w}: these traces are from different jobs",
                path.display()
            )));
        }
        world_size = world_size.or(dist.world_size);
        if let Some((other, _)) = ranks.iter().find(|r: &&(Rank, _)| r.0.rank == rank) {
            return Err(Error::failed(format!(
                "rank {rank} twice: {} and {}; give one trace per rank",
                other.input.path.display(),
                path.display()
            )));
        }
        ranks.push((Rank { rank, input }, model));
    }
    if ranks.is_empty() {
        return Err(match (&opts.select, unread.into_iter().next()) {
            (_, Some(e)) => Error::failed(format!("no rank could be read: {e}")).caused_by(e),
            (Some(_), None) => Error::usage("--ranks selects none of the ranks given"),
            (None, None) => Error::usage("no rank traces given"),
        });
    }
    let warnings = unread
        .iter()
        .map(|e| format!("rank left out: {e} (--strict makes this an error)"))
        .collect();
    ranks.sort_by_key(|r| r.0.rank);
    let (ranks, models): (Vec<Rank>, Vec<Option<StepModel>>) = ranks.into_iter().unzip();
    let expected = world_size.unwrap_or_else(|| ranks.last().map_or(0, |r| r.rank + 1));
    let missing: Vec<String> = (0..expected)
        .filter(|k| opts.select.as_ref().is_none_or(|sel| sel.contains(k)))
        .filter(|k| !ranks.iter().any(|r| r.rank == *k))
        .map(|k| k.to_string())
        .collect();
    if !missing.is_empty() {
        notes.push(format!(
            "ranks {} of {expected} are missing: the job view covers the {} given",
            missing.join(", "),
            ranks.len()
        ));
    }
    Ok((RankSet { ranks, world_size, notes, warnings }, models))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_selections() {
        assert_eq!(parse_selection("0-3,7").unwrap(), vec![0, 1, 2, 3, 7]);
        assert_eq!(parse_selection("5").unwrap(), vec![5]);
        assert_eq!(parse_selection("7,2-2,3").unwrap(), vec![2, 3, 7]);
        for bad in ["", "3-1", "a", "1-", "-2", "1,,2"] {
            assert_eq!(
                parse_selection(bad).unwrap_err().exit_code(),
                crate::error::exit::USAGE,
                "{bad}"
            );
        }
    }
}
