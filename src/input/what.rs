//! What a reader's arguments are, decided in one place for every reader
//! (docs/spec.md §3.2): one input (a profile, a trace, a folder standing
//! for one of them, `-`), or the traces of one job's ranks — and the
//! refusals: a folder (or a list) of traces that are not one job's, and
//! another tool's JSON. A file is told by its first bytes and top-level keys
//! ([`sniff`]), never by a full read: a rank folder of multi-GB traces is
//! sorted out by their headers.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::profile::SCHEMA_PREFIX;
use crate::profile::measured::SIDECAR;
use crate::trace::scan::Scanner;
use crate::trace::{BLOCK, Distributed, Foreign, ReadOptions};

/// Files looked for, in order, when a directory is given.
pub(super) const DIR_CANDIDATES: &[&str] = &[
    "profile.json",
    "infer_repeat.json",
    "profile_repeat.json",
    "profile_trace.json",
    "profile_trace.json.gz",
];

/// The folders a capture writes in its `--project` folder
/// (`<project>/infer/profile.json`, `<project>/train/profile.json`).
const CAPTURE_SUBDIRS: [&str; 2] = ["infer", "train"];

/// How far into a file [`sniff`] looks for the keys that tell it (a
/// Kineto header is a few KB; a profile a few hundred).
const SNIFF_LIMIT: u64 = 64 << 20;

/// What a reader's arguments are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// One input: the file it stands for (a folder's profile or only trace,
    /// or `-`).
    One(PathBuf),
    /// The traces (or profiles) of one job, one per rank, in rank order.
    Ranks(Vec<RankFile>),
}

/// A rank's file, its rank told by its header or its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankFile {
    pub rank: u32,
    pub path: PathBuf,
}

/// What [`what`] found: what the arguments are, the arguments as given,
/// and the notes to say (a folder's files left out, and why).
#[derive(Debug, Clone)]
pub struct Inputs {
    pub what: What,
    pub args: Vec<PathBuf>,
    pub notes: Vec<String>,
}

/// Whether a reader shows one rank (`phases`, `ops`, `tree`, `memory`,
/// `get`, `what-if`'s changes) or a whole job (`summary`, `kernels`,
/// `collectives`, `compare`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    OneRank,
    Job,
}

/// What a reader reads, once `--rank` is applied ([`Inputs::choose`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    /// One input, the path to load (the argument as given, or one rank's
    /// file).
    One(PathBuf),
    /// A job's rank files.
    Job(Vec<PathBuf>),
}

impl Inputs {
    /// Applies `--rank` (docs/spec.md §3.2): of a job, `--rank N` is rank
    /// N's file alone (exit 2 when the job has no rank N); without it, a
    /// reader of one rank reads the lowest rank and says so in a note, a
    /// reader of a job reads them all. `--rank` on one input exits 2.
    /// Returns the choice and the notes to say.
    pub fn choose(self, rank: Option<u32>, reads: Reads) -> Result<(Chosen, Vec<String>)> {
        let Inputs { what, args, mut notes } = self;
        let named = named(&args);
        let chosen = match (what, rank) {
            (What::One(_), None) => Chosen::One(args[0].clone()),
            (What::One(_), Some(n)) => {
                return Err(Error::usage(format!(
                    "--rank {n} picks one rank of a job (a folder of rank traces, or several): {named} is one input"
                )));
            }
            (What::Ranks(ranks), Some(n)) => match ranks.iter().find(|r| r.rank == n) {
                Some(r) => {
                    if reads == Reads::Job {
                        notes.push(rank_alone(n, &named));
                    }
                    Chosen::One(r.path.clone())
                }
                None => {
                    return Err(Error::usage(format!(
                        "--rank {n}: {named} holds ranks {}",
                        list_ranks(&ranks)
                    )));
                }
            },
            (What::Ranks(ranks), None) if reads == Reads::OneRank => {
                let lowest = &ranks[0];
                notes.push(format!(
                    "{named} holds the traces of a job's ranks {}: showing rank {}, the lowest (--rank N shows another; `profile summary` the whole job)",
                    list_ranks(&ranks),
                    lowest.rank
                ));
                Chosen::One(lowest.path.clone())
            }
            (What::Ranks(ranks), None) => Chosen::Job(ranks.into_iter().map(|r| r.path).collect()),
        };
        Ok((chosen, notes))
    }
}

/// Said where a job's rank is read alone for a verdict (`summary`,
/// `what-if`, … `--rank N`): its waits for later ranks at collectives,
/// which only the job's ranks together tell apart (docs/spec.md §3.2),
/// read as its own communication.
pub fn rank_alone(rank: u32, named: &str) -> String {
    format!(
        "rank {rank} read alone: the time it waited at collectives for later ranks reads here as its own communication (`profile summary {named}` says which rank it waits for)"
    )
}

/// `0-7`, `0, 2, 5`: the ranks of a job, for messages.
fn list_ranks(ranks: &[RankFile]) -> String {
    let r: Vec<u32> = ranks.iter().map(|r| r.rank).collect();
    let contiguous = r.windows(2).all(|w| w[1] == w[0] + 1);
    match (r.first(), r.last()) {
        (Some(a), Some(b)) if contiguous && r.len() > 2 => format!("{a}-{b}"),
        _ => r.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
    }
}

/// The arguments as messages name them.
fn named(args: &[PathBuf]) -> String {
    match args {
        [one] => one.display().to_string(),
        _ => format!("the {} inputs", args.len()),
    }
}

/// Decides what a reader's arguments are — the one rule of docs/spec.md
/// §3.2, the same for every reader:
///
/// - a file, or `-`: one input (another tool's JSON is refused when read,
///   at its first key);
/// - a folder: its `profile.json` (or repeat file, or `profile_trace.json`),
///   else its JSON files less those of another tool (left out, with a
///   note): one is the input; several are one job's ranks when each names
///   its rank (`distributedInfo`, or `rank3`/`worker3` in its name), all
///   of one world size and no rank twice — else the folder is refused
///   (exit 2: name one); none, a capture's `--project` folder;
/// - several paths: one job's rank traces, by the same test.
pub fn what<P: AsRef<Path>>(args: &[P]) -> Result<Inputs> {
    let given: Vec<PathBuf> = args.iter().map(|a| a.as_ref().to_path_buf()).collect();
    match given.as_slice() {
        [] => Err(Error::usage("no input given")),
        [one] => {
            let (what, notes) = what_one(one)?;
            Ok(Inputs { what, args: given, notes })
        }
        several => {
            let mut files = Vec::new();
            let mut notes = Vec::new();
            for a in several {
                let (what, n) = what_one(a)?;
                notes.extend(n);
                match what {
                    What::One(p) if p.as_os_str() == "-" => {
                        return Err(Error::usage(
                            "standard input is one input: give it alone, or the rank traces as files",
                        ));
                    }
                    What::One(p) => {
                        let s = sniff(&p);
                        if let Kind::Foreign(f) = s.kind {
                            return Err(foreign(&p, f));
                        }
                        files.push((p, s));
                    }
                    What::Ranks(_) => {
                        return Err(Error::usage(format!(
                            "{} holds a job's rank traces: give the folder alone, or the rank traces themselves",
                            a.display()
                        )));
                    }
                }
            }
            let ranks = one_job(files, None)?;
            Ok(Inputs { what: What::Ranks(ranks), args: given, notes })
        }
    }
}

/// [`what`] of one path.
fn what_one(path: &Path) -> Result<(What, Vec<String>)> {
    let arg = path.display();
    if path.as_os_str() == "-" {
        use std::io::IsTerminal;
        if std::io::stdin().is_terminal() {
            return Err(Error::usage(
                "`-` reads a trace or profile from standard input, which is a terminal here: pipe one in (`zcat trace.json.gz | libreyolo profile summary -`)",
            ));
        }
        return Ok((What::One(path.to_path_buf()), Vec::new()));
    }
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::usage(format!("not found: {arg}")),
        _ => Error::failed(format!("cannot open {arg}: {e}")).caused_by(e),
    })?;
    if !meta.is_dir() {
        return Ok((What::One(path.to_path_buf()), Vec::new()));
    }
    if let Some(p) = DIR_CANDIDATES.iter().map(|name| path.join(name)).find(|p| p.is_file()) {
        return Ok((What::One(p), Vec::new()));
    }
    let mut kept = Vec::new();
    let mut notes = Vec::new();
    let mut first_foreign = None;
    let mut not_traces = Vec::new();
    for f in json_files_in(path)? {
        let s = sniff(&f);
        match s.kind {
            Kind::Foreign(x) => {
                notes.push(format!("{} left out: it is {}", f.display(), x.what()));
                first_foreign.get_or_insert((f, x));
            }
            Kind::NotTrace => {
                notes.push(format!("{} left out: {NOT_A_TRACE}", f.display()));
                not_traces.push(f);
            }
            _ => kept.push((f, s)),
        }
    }
    match kept.len() {
        0 => match first_foreign {
            // Only another tool's files: the refusal of the first, as if named.
            Some((f, x)) => Err(foreign(&f, x)),
            None => capture_folder(path, &not_traces).map(|p| (What::One(p), notes)),
        },
        1 => Ok((What::One(kept.remove(0).0), notes)),
        _ => Ok((What::Ranks(one_job(kept, Some(path))?), notes)),
    }
}

/// What a JSON object with no `traceEvents` and no profile `schema` is not.
const NOT_A_TRACE: &str =
    "a JSON object with no `traceEvents` (not a PyTorch trace) and no libreyolo `schema`";

/// A capture's `--project` folder: the one profile in its `infer/` or
/// `train/` (both: exit 2, naming them). `not_traces`: the folder's JSON
/// files that are neither a trace nor a profile, named when nothing is.
fn capture_folder(path: &Path, not_traces: &[PathBuf]) -> Result<PathBuf> {
    let arg = path.display();
    let mut inside: Vec<PathBuf> = CAPTURE_SUBDIRS
        .iter()
        .filter_map(|sub| {
            DIR_CANDIDATES.iter().map(|name| path.join(sub).join(name)).find(|p| p.is_file())
        })
        .collect();
    match inside.len() {
        1 => Ok(inside.remove(0)),
        0 => {
            let seen = match not_traces {
                [] => String::new(),
                [one] => format!(" ({} is {NOT_A_TRACE})", one.display()),
                [one, ..] => format!(
                    " ({} and {} other JSON files are {NOT_A_TRACE})",
                    one.display(),
                    not_traces.len() - 1
                ),
            };
            Err(Error::usage(format!(
                "{arg} is a directory with no trace or profile in it{seen}: give a PyTorch trace (*.json or *.json.gz), a folder of a job's rank traces, or a capture's folder (profile.json, or its infer/ or train/)"
            )))
        }
        _ => {
            let names: Vec<String> = inside.iter().map(|p| p.display().to_string()).collect();
            Err(Error::usage(format!(
                "{arg} holds the profiles of two captures, {}: name one",
                names.join(" and ")
            )))
        }
    }
}

/// The refusal of another tool's file (exit 1), naming it.
fn foreign(path: &Path, f: Foreign) -> Error {
    let e = f.error();
    Error::failed(format!("{}: {e}", path.display())).caused_by(e)
}

/// The files of one job, in rank order, or the refusal of files that are
/// not (exit 2: which file breaks it, and the files to name one of).
fn one_job(files: Vec<(PathBuf, Sniffed)>, dir: Option<&Path>) -> Result<Vec<RankFile>> {
    let short = |p: &Path| match (dir, p.file_name()) {
        (Some(_), Some(n)) => n.to_string_lossy().into_owned(),
        _ => p.display().to_string(),
    };
    let why = |why: String| {
        let names: Vec<String> = files.iter().take(5).map(|(p, _)| short(p)).collect();
        let more = if files.len() > 5 { ", …" } else { "" };
        let n = files.len();
        let head = match dir {
            Some(d) => format!("{} holds {n} traces that are", d.display()),
            None => format!("these {n} traces are"),
        };
        Error::usage(format!(
            "{head} not the ranks of one job ({why}): name one of them ({}{more}); a job's rank traces are read together when each names its rank (distributedInfo, or rank3/worker3 in the file name)",
            names.join(", ")
        ))
    };
    let mut ranks: Vec<RankFile> = Vec::new();
    let mut world: Option<(u32, &Path)> = None;
    for (path, s) in &files {
        let Some(rank) = s.rank.or_else(|| rank_from_name(path)) else {
            return Err(why(format!(
                "{} names no rank: no distributedInfo.rank, no rank/worker number in its name",
                short(path)
            )));
        };
        if let Some(w) = s.world_size {
            match world {
                Some((w0, p0)) if w0 != w => {
                    return Err(why(format!(
                        "{} is rank {rank} of a world of {w}, {} of a world of {w0}",
                        short(path),
                        short(p0)
                    )));
                }
                None => world = Some((w, path)),
                _ => {}
            }
        }
        if let Some(other) = ranks.iter().find(|r| r.rank == rank) {
            return Err(why(format!(
                "rank {rank} twice: {} and {}",
                short(&other.path),
                short(path)
            )));
        }
        ranks.push(RankFile { rank, path: path.clone() });
    }
    ranks.sort_by_key(|r| r.rank);
    Ok(ranks)
}

/// The rank number in a file name: `rank3`, `rank_3`, `worker3`, `worker-3`.
pub fn rank_from_name(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    ["rank", "worker"].iter().find_map(|key| {
        let rest = &name[name.find(key)? + key.len()..];
        let digits: String =
            rest.trim_start_matches(['_', '-']).chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

/// Resolves a command-line path to the one file it stands for
/// ([`what`]): a missing path is a usage error (exit 2), one the system
/// refuses (permissions, a symlink loop) says why (exit 1); a folder of
/// one job's rank traces is no one input (exit 2, naming `--rank`).
pub fn resolve_input(path: impl AsRef<Path>) -> Result<PathBuf> {
    let path = path.as_ref();
    match what_one(path)?.0 {
        What::One(p) => Ok(p),
        What::Ranks(ranks) => Err(Error::usage(format!(
            "{} holds the traces of a job's ranks {}: name one (--rank N), or read the job with `profile summary`",
            path.display(),
            list_ranks(&ranks)
        ))),
    }
}

/// The folders a reader given `path` (a file or a folder) may open files
/// in besides `path` itself: its folder (a job's other ranks, the measured
/// numbers and the trace beside a profile), a capture folder's `infer/` and
/// `train/`, and each one's graph captures ([`crate::analysis::graphs`]).
/// For a caller that confines reading to some folders (`libreyolo mcp`).
pub fn folders_looked_into(path: &Path) -> Vec<PathBuf> {
    let dir = if path.is_dir() { path } else { path.parent().unwrap_or(Path::new(".")) };
    let mut folders = vec![dir.to_path_buf()];
    if path.is_dir() {
        folders.extend(CAPTURE_SUBDIRS.iter().map(|sub| dir.join(sub)));
    }
    let graphs = folders.iter().map(|d| d.join(crate::analysis::graphs::CAPTURE_TRACES));
    folders.extend(graphs.collect::<Vec<_>>());
    folders
}

/// The JSON files of a folder that can be traces or profiles (not a
/// sidecar, not hidden), sorted by name.
pub fn json_files_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Error::failed(format!("cannot list {}: {e}", dir.display())).caused_by(e))?;
    let mut json: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            (name.ends_with(".json") || name.ends_with(".json.gz"))
                && name != SIDECAR
                && !name.starts_with('.')
                && p.is_file()
        })
        .collect();
    json.sort();
    Ok(json)
}

/// What a file's first bytes say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Kind {
    /// A Chrome trace: `traceEvents`, or a bare array of objects.
    Trace,
    /// A libreyolo profile (its `schema`).
    Profile,
    /// Another tool's JSON.
    Foreign(Foreign),
    /// A JSON object read to its end with no key that makes it a trace or
    /// a profile (a config file beside the traces).
    NotTrace,
    /// Not told (not JSON, unreadable, no key that tells): the full read
    /// will say.
    #[default]
    Unknown,
}

/// A file as its header tells it: what it is, and the rank and world size
/// it records (a trace's `distributedInfo`, a profile's `distributed`).
#[derive(Debug, Clone, Default)]
struct Sniffed {
    kind: Kind,
    rank: Option<u32>,
    world_size: Option<u32>,
}

/// Reads a file's top level only as far as it must: to `traceEvents`
/// (a trace: the keys Kineto writes before it), the first key of another
/// tool, a bare array's first element; a profile's top-level keys (it is
/// small). Never fails: what cannot be told is [`Kind::Unknown`].
fn sniff(path: &Path) -> Sniffed {
    let mut out = Sniffed::default();
    let _ = sniff_into(path, &mut out);
    out
}

fn sniff_into(path: &Path, out: &mut Sniffed) -> Option<()> {
    let read = crate::trace::input::open(path, &ReadOptions::default().with_threads(1, BLOCK));
    let mut s = Scanner::new(read.ok()?);
    s.skip_bom().ok()?;
    match s.peek().ok()?? {
        b'[' => {
            s.expect(b'[').ok()?;
            s.peek().ok()?;
            out.kind = Foreign::of_first_element(s.window().0).map_or(Kind::Trace, Kind::Foreign);
        }
        b'{' => {
            s.expect(b'{').ok()?;
            let mut scratch = Vec::new();
            let mut first = true;
            while let Some(key) = s.next_key(first, &mut scratch).ok()? {
                first = false;
                if let Some(f) = Foreign::of_key(&key) {
                    out.kind = Kind::Foreign(f);
                    return Some(());
                }
                match key.as_str() {
                    "traceEvents" => {
                        out.kind = Kind::Trace;
                        return Some(());
                    }
                    "schema" => {
                        let id: Option<String> =
                            serde_json::from_slice(s.value(&mut scratch).ok()?).ok();
                        if id.is_some_and(|id| id.starts_with(SCHEMA_PREFIX)) {
                            out.kind = Kind::Profile;
                        }
                    }
                    "distributedInfo" | "distributed" => {
                        let d: Option<Distributed> =
                            serde_json::from_slice(s.value(&mut scratch).ok()?).ok();
                        if let Some(d) = d {
                            (out.rank, out.world_size) = (d.rank, d.world_size);
                        }
                    }
                    _ => s.skip_value().ok()?,
                }
                if s.offset() > SNIFF_LIMIT {
                    return None;
                }
            }
            if out.kind == Kind::Unknown {
                out.kind = Kind::NotTrace;
            }
        }
        _ => {}
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_from_file_names() {
        let r = |n: &str| rank_from_name(Path::new(n));
        assert_eq!(r("worker3_step_12.1694128201557.pt.trace.json.gz"), Some(3));
        assert_eq!(r("trace_rank_12.json"), Some(12));
        assert_eq!(r("run-Rank-0.json"), Some(0));
        assert_eq!(r("trace.json"), None);
    }

    #[test]
    fn rank_lists() {
        let of = |r: &[u32]| {
            list_ranks(
                &r.iter().map(|&rank| RankFile { rank, path: PathBuf::new() }).collect::<Vec<_>>(),
            )
        };
        assert_eq!(of(&[0, 1, 2, 3]), "0-3");
        assert_eq!(of(&[0, 1]), "0, 1");
        assert_eq!(of(&[1, 4, 5]), "1, 4, 5");
    }
}
