//! A distributed job in the explorer (docs/spec.md §6, §7): what the
//! command line asks to open, and the job once read — the `job` and
//! `collectives` lenses and each rank's profile, from one reading of the
//! rank traces (`profile::ranks`) on the loader thread. The Ranks pane
//! shows the lenses (its collectives view the second); the other panes
//! show the profile of the rank the user opened.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;

use libreyolo_core::error::{Error, Result};
use libreyolo_core::input::{self, ranks};
use libreyolo_core::lens::collectives::{self, Collectives};
use libreyolo_core::lens::job::{Job, job_of, joined};
use libreyolo_core::lens::whatif::{
    JobWhatIf, job_scenarios, largest_saving_first, straggler_removed,
};
use libreyolo_core::trace::ReadOptions;

use crate::slot::Loaded;

/// What `profile explore ARGS…` opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opening {
    /// One profile, and maybe a second to compare against.
    Profile { main: PathBuf, other: Option<PathBuf> },
    /// A distributed job: `arg` names it on screen, `files` are its ranks.
    Job { arg: String, files: Vec<PathBuf> },
}

/// Decides what the arguments are. A folder holding several traces, or
/// three or more files, is a job; two files are a comparison unless their
/// names carry different rank numbers (`rank3`, `worker3`). Missing paths
/// are usage errors, as for one profile.
pub fn opening<P: AsRef<Path>>(args: &[P]) -> Result<Opening> {
    let ranked = |a: &P| ranks::rank_from_name(a.as_ref());
    match args {
        [] => Err(Error::usage("explore needs a profile, a trace or a folder of rank traces")),
        [one] => match ranks::rank_files(args)? {
            Some(files) => Ok(Opening::Job { arg: one.as_ref().display().to_string(), files }),
            None => {
                input::resolve_input(one)?;
                Ok(Opening::Profile { main: one.as_ref().to_path_buf(), other: None })
            }
        },
        [a, b] if !matches!((ranked(a), ranked(b)), (Some(x), Some(y)) if x != y) => {
            for x in [a, b] {
                if ranks::rank_files(std::slice::from_ref(x))?.is_some() {
                    let x = x.as_ref().display();
                    return Err(Error::usage(format!(
                        "{x} is a folder of rank traces: the explorer opens one job (`profile explore {x}`); \
                         `profile compare` compares two jobs"
                    )));
                }
                input::resolve_input(x)?;
            }
            Ok(Opening::Profile {
                main: a.as_ref().to_path_buf(),
                other: Some(b.as_ref().to_path_buf()),
            })
        }
        _ => {
            let files = ranks::rank_files(args)?.unwrap_or_default();
            Ok(Opening::Job {
                arg: format!("{} rank traces in {}", files.len(), common_folder(&files)),
                files,
            })
        }
    }
}

/// The folder the files share (for the title bar), else the first's.
fn common_folder(files: &[PathBuf]) -> String {
    let first = files.first().and_then(|f| f.parent()).map(PathBuf::from).unwrap_or_default();
    let mut dir = first.as_path();
    while !files.iter().all(|f| f.starts_with(dir)) {
        match dir.parent() {
            Some(p) => dir = p,
            None => break,
        }
    }
    dir.display().to_string()
}

/// A job read: the `job` and `collectives` lenses and each rank's
/// profile, in rank order (the order of `job.ranks`).
#[derive(Debug, Clone)]
pub struct OpenJob {
    pub job: Job,
    /// The ranks' collectives matched across them (`collectives DIR`).
    pub collectives: Collectives,
    pub ranks: Vec<Loaded>,
    /// The position in `ranks` of the rank the other panes show.
    pub shown: usize,
    /// The job's what-ifs (`what-if DIR`, `what-if DIR --all`), re-timed on
    /// the ranks' step models joined at their collectives, largest saving
    /// first: the critical rank's lateness removed, and each standard
    /// change made on every rank. Worked out at reading, so the models
    /// need not be kept.
    pub whatifs: Vec<JobWhatIf>,
}

impl OpenJob {
    /// Reads the rank traces once (in parallel, `done` counting the files
    /// read) and reduces them; the other panes' lenses of each rank run here
    /// too, off the UI thread. The critical rank is shown first.
    pub fn read(files: &[PathBuf], done: &AtomicUsize, read: &ReadOptions) -> Result<OpenJob> {
        let opts = ranks::Options {
            done: Some(done),
            read: read.clone(),
            keep_models: true,
            ..Default::default()
        };
        let (set, models) = ranks::load_with_models(files, &opts)?;
        let collectives = collectives::of_ranks(&set);
        let job = job_of(&set, &collectives);
        let whatifs = {
            let joined = joined(&set, &models, &collectives);
            let mut v = job_scenarios(&set, &models, &joined).0;
            v.extend(
                job.critical_rank
                    .and_then(|r| straggler_removed(&set, &models, &collectives, r).ok()),
            );
            v.sort_by(|a, b| largest_saving_first(&a.row(), &b.row()));
            v
        };
        let ranks: Vec<Loaded> = set.ranks.into_iter().map(|r| Loaded::new(r.input)).collect();
        let shown =
            job.critical_rank.and_then(|c| job.ranks.iter().position(|r| r.rank == c)).unwrap_or(0);
        Ok(OpenJob { job, collectives, ranks, shown, whatifs })
    }

    /// The rank number shown by the other panes.
    pub fn shown_rank(&self) -> u32 {
        self.job.ranks.get(self.shown).map_or(0, |r| r.rank)
    }

    /// Whether rank `rank` is a straggler.
    pub fn straggler(&self, rank: u32) -> Option<&libreyolo_core::lens::job::Straggler> {
        self.job.stragglers.iter().find(|s| s.rank == rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_folder_of_files() {
        let f = |v: &[&str]| common_folder(&v.iter().map(PathBuf::from).collect::<Vec<_>>());
        assert_eq!(f(&["/a/b/r0.json", "/a/b/r1.json"]), "/a/b");
        assert_eq!(f(&["/a/b/r0.json", "/a/c/r1.json"]), "/a");
    }
}
