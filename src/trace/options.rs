//! How a trace is read: a value every reading function is given, as
//! ripgrep's `SearcherBuilder` configures one searcher, instead of process
//! settings the command line sets and everything else reaches for.

use indicatif::ProgressBar;

use crate::budget::Budget;
use crate::error::{Error, Result};

/// Bytes per block of the parallel reader: about 3 000 events of a real
/// trace, so that handing a block over costs nothing against parsing it,
/// and the events a block becomes (~1.5× its bytes) stay few per thread.
pub const BLOCK: usize = 1 << 20;

/// Settings of one read. `ReadOptions::default()` is the plain read: every
/// CPU the process may use, files mapped, the default memory budget, no
/// progress bar.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Threads the read may use (at least 1; 1 parses inline): `--threads`,
    /// else the CPUs this process may run on. A rank folder gives each
    /// rank's read its share.
    pub threads: usize,
    /// Bytes per block of the parallel reader (tests cut small fixtures
    /// into many blocks).
    pub block: usize,
    /// Map plain files rather than read(2) them (`--no-mmap` turns it off).
    pub mmap: bool,
    /// The most memory the read may hold (`--max-memory`).
    pub budget: Budget,
    /// Whether and where reading progress is drawn.
    pub progress: Progress,
    /// Traces that recorded the capture of the CUDA/HIP graphs a trace
    /// replays (`--graph-capture`; docs/analysis.md §17.1). Empty: those
    /// in a `capture_traces/` folder beside the trace, if any.
    pub graph_capture: Vec<std::path::PathBuf>,
    /// A profile's trace may be read at the path the profile records
    /// (false: only beside the profile — the MCP server, whose reads stay
    /// under its roots).
    pub follow_recorded: bool,
}

/// Whether and where a read draws its progress.
#[derive(Debug, Clone, Default)]
pub enum Progress {
    /// Nothing.
    #[default]
    Off,
    /// A bar on stderr for a large file, when stderr is a terminal (a
    /// reader's command line).
    Terminal,
    /// A bar the caller draws itself (the explorer's loading screen),
    /// moved whatever the file's size: its length is the file's size and
    /// its position the bytes read (compressed bytes for gzip).
    To(ProgressBar),
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            threads: available_threads(),
            block: BLOCK,
            mmap: true,
            budget: Budget::default(),
            progress: Progress::Off,
            graph_capture: Vec::new(),
            follow_recorded: true,
        }
    }
}

impl ReadOptions {
    /// The options of the reader flags: `--threads`, `--no-mmap`,
    /// `--max-memory` (or its environment variable). `--threads 0` and a
    /// size that does not parse are usage errors.
    pub fn from_flags(
        threads: Option<usize>,
        no_mmap: bool,
        max_memory: Option<&str>,
    ) -> Result<ReadOptions> {
        let threads = match threads {
            Some(0) => return Err(Error::usage("--threads 0: expected 1 or more")),
            Some(n) => n,
            None => available_threads(),
        };
        Ok(ReadOptions {
            threads,
            block: BLOCK,
            mmap: !no_mmap,
            budget: Budget::from_flag(max_memory)?,
            progress: Progress::Off,
            graph_capture: Vec::new(),
            follow_recorded: true,
        })
    }

    /// These options with `threads` threads and blocks of `block` bytes.
    pub fn with_threads(&self, threads: usize, block: usize) -> ReadOptions {
        ReadOptions { threads: threads.max(1), block: block.max(64), ..self.clone() }
    }

    /// These options with progress drawn as `progress` says.
    pub fn with_progress(&self, progress: Progress) -> ReadOptions {
        ReadOptions { progress, ..self.clone() }
    }

    /// Whether a second thread may run beside this one: with one,
    /// inflating inline saves the hand-over.
    pub fn spare_core(&self) -> bool {
        self.threads > 1
    }
}

/// The CPUs this process may run on (affinity and cgroup quotas).
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
