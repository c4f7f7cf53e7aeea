//! Argument definitions (clap). Flags and defaults: docs/spec.md §2–§3.

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::lens::kernels::Sort;
use crate::lens::tree::{By, Weight};
use crate::render::table::{CollectivesTable, MemoryTable};
use crate::render::{Format, schema};

/// Bounds of the count flags (docs/spec.md §1.1, §2.3.1): generous beyond
/// any real capture, and checked by clap (exit 2) before anything is sized
/// from them (`--runs 18446744073709551615` once asked for that many slots,
/// `--workers 100000` for that many threads).
pub mod limits {
    /// `--batch` (`profile run`'s `-1` aside): images in one forward pass.
    pub const MAX_BATCH: usize = 1024;
    /// `--runs`, `--steps`, `--warmup`: iterations.
    pub const MAX_ITERATIONS: usize = 1_000_000;
    /// `--repeat`: trials.
    pub const MAX_REPEAT: usize = 1000;
    /// `--workers`: dataloader threads.
    pub const MAX_WORKERS: usize = 256;
    /// `--max-det`: detections kept per image.
    pub const MAX_DET: usize = 100_000;
    /// `--threads`: a reader's parsing threads, a capture's intra-op ones
    /// (100 000 once aborted a reader spawning them).
    pub const MAX_THREADS: usize = 1024;
}

/// A count of at most `MAX`, as clap's value parser.
fn at_most<const MAX: usize>(s: &str) -> std::result::Result<usize, String> {
    let n: usize = s.parse().map_err(|e| format!("{e}"))?;
    if n > MAX {
        return Err(format!("at most {MAX}"));
    }
    Ok(n)
}

/// `profile run --batch`: a batch of at most [`limits::MAX_BATCH`], or
/// any other value for the run to judge (`-1` fits, the rest are refused).
fn run_batch(s: &str) -> std::result::Result<i64, String> {
    let n: i64 = s.parse().map_err(|e| format!("{e}"))?;
    if n > limits::MAX_BATCH as i64 {
        return Err(format!("at most {} (or -1 to fit CUDA memory)", limits::MAX_BATCH));
    }
    Ok(n)
}

#[derive(Debug, Parser)]
#[command(
    name = "libreyolo",
    version,
    about = "Where the time goes in YOLO training and inference",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: TopCommand,
}

// Parsed once per process: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum TopCommand {
    /// Measure and read profiles of YOLOv9 training and inference.
    Profile(ProfileArgs),
    /// Shell completions on stdout (`libreyolo completions bash > …`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// A man page (roff) on stdout (`libreyolo man profile summary | man -l -`), or every page
    /// into a folder (`--dir`).
    Man(ManArgs),
    /// The readers as tools of a Model Context Protocol server on stdio, for coding agents.
    ///
    /// Each tool (summary, get, phases, kernels, ops, tree, modules, memory,
    /// collectives, compare, what-if) returns its reader's `--json` document.
    /// Only files under a `--root` can be read. Register it in an MCP client
    /// as the command `libreyolo mcp --root DIR`.
    Mcp(McpArgs),
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print, as typed after `libreyolo` (`profile what-if`); none:
    /// `libreyolo`'s own page
    pub command: Vec<String>,
    /// Write every command's page into DIR as `libreyolo-<command>.1` instead
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct McpArgs {
    /// A folder whose files the tools may read (repeatable): every path a tool is given must
    /// lie under one, symlinks resolved; relative paths are taken from the roots, in order
    #[arg(long = "root", value_name = "DIR", required = true)]
    pub roots: Vec<PathBuf>,
    /// Memory the server may hold while it reads (e.g. 8G, 512M; 0: no limit), as `profile --max-memory`. Default: half the machine's RAM, or LIBREYOLO_MAX_MEMORY
    #[arg(long, value_name = "SIZE")]
    pub max_memory: Option<String>,
    /// A read's parsing threads, as `profile --threads`. Default: the CPUs this process may use
    #[arg(long, value_name = "N", value_parser = at_most::<{ limits::MAX_THREADS }>)]
    pub threads: Option<usize>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Readers take a profile.json (ours or LibreYOLO 1.6's), a repeat file, or any PyTorch\nChrome trace (.json or .json.gz). Exit codes: 0 ok, 1 unreadable input or runtime failure,\n2 missing file or bad argument, 3 `run` produced no profile, 4 a `compare --fail-on` gate failed."
)]
pub struct ProfileArgs {
    #[command(subcommand)]
    pub command: Option<ProfileCommand>,
    /// Memory a reader may hold before it stops (e.g. 8G, 512M; 0: no limit). Default: half the machine's RAM, or LIBREYOLO_MAX_MEMORY
    #[arg(long, global = true, value_name = "SIZE")]
    pub max_memory: Option<String>,
    /// Threads to use: a reader's parsing threads, a capture's intra-op CPU threads. Default: the CPUs this process may use
    #[arg(long, global = true, value_name = "N", value_parser = at_most::<{ limits::MAX_THREADS }>)]
    pub threads: Option<usize>,
    /// Read plain trace files with read(2) instead of mapping them: slower, but a file that another process truncates while it is read is reported instead of ending the process (SIGBUS)
    #[arg(long, global = true)]
    pub no_mmap: bool,
    /// A trace that recorded the capture of the CUDA/HIP graphs the trace replays (repeatable): replayed kernels are put under the ops that captured them. Default: the traces in a capture_traces/ folder beside the trace (vLLM, SGLang, xDiT)
    #[arg(long, global = true, value_name = "FILE")]
    pub graph_capture: Vec<PathBuf>,
}

impl ProfileArgs {
    /// The subcommand, given the group's options it reads (`--threads`
    /// is a capture's intra-op threads, `--max-memory` its memory budget).
    pub fn into_command(self) -> Option<ProfileCommand> {
        let mut command = self.command;
        match &mut command {
            Some(ProfileCommand::Run(a)) => {
                (a.threads, a.max_memory) = (self.threads, self.max_memory);
            }
            Some(ProfileCommand::Infer(a)) => {
                (a.threads, a.max_memory) = (self.threads, self.max_memory);
            }
            _ => {}
        }
        command
    }
}

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Profile a short real training (writes <project>/train/profile.json).
    Run(RunArgs),
    /// Profile the inference path (writes <project>/infer/profile.json).
    Infer(InferArgs),
    #[command(flatten)]
    Reader(ReaderCommand),
    /// The interactive explorer over one profile, two side by side, or a distributed job.
    Explore(ExploreArgs),
}

/// The commands that only read a profile (`schema`: the shapes of what
/// they print); they run in the core.
#[derive(Debug, Subcommand)]
pub enum ReaderCommand {
    /// Headline figures, the verdict and the kernel mix (of rank traces: the job).
    ///
    /// Of a distributed job (several rank traces, or a folder of them): the
    /// job, each rank, and the stragglers with why. `--format md` of one
    /// trace: the verdict, headline figures, levers, idle causes and kernel
    /// mix as tables; `--format csv`: the headline figures as one row (of a
    /// job: one row per rank).
    Summary(SummaryArgs),
    /// One metric and nothing else; without a field, the metric names.
    Get(GetArgs),
    /// Per phase: GPU ms, wall ms, kernels and ops per step.
    Phases(TraceArgs),
    /// Individual GPU kernels, filtered and sorted.
    Kernels(KernelsArgs),
    /// aten/autograd ops by CPU time.
    Ops(OpsArgs),
    /// The call tree of a step: modules, frames and ops down to kernels, CPU and GPU time.
    ///
    /// Each node is a name at one place in the tree (a calling context):
    /// its calls, host time (total and self) and the kernel time launched
    /// inside it, which counts for every ancestor too. `--format folded`
    /// or `svg` gives the rows shown as stacks for a flame graph, each
    /// frame as wide as its row's GPU (or `--weight cpu`: CPU) time; what
    /// `--min-pct` and `--depth` hide stays in its parent's frame.
    Tree(TreeArgs),
    /// The model's nn.Modules and annotations: forward and backward GPU time side by side.
    ///
    /// Backward ops count for the modules of the forward op they
    /// differentiate (autograd's sequence numbers); calls are forward calls.
    Modules(ModulesArgs),
    /// Before → after, with a significance call when both sides have repeats.
    ///
    /// `--format md`: the metrics, the verdict and the largest changes as
    /// tables; `--format csv`: the metrics (of two jobs: each rank's step).
    Compare(CompareArgs),
    /// Collectives matched across a job's ranks: arrival skew, waits, bus bandwidth.
    ///
    /// Of one trace: its collectives with sizes and bandwidth (skew needs all ranks).
    Collectives(CollectivesArgs),
    /// Projected step time and img/s if a kernel category or launches went away.
    ///
    /// `--format md`: the change's figures as a table (`--all`: the
    /// scenarios and the critical path); `--format csv`: one row (`--all`:
    /// the scenarios; a job: each rank).
    WhatIf(WhatIfArgs),
    /// Allocated and reserved memory over the window: peaks, phase and op at the peak.
    Memory(MemoryArgs),
    /// One Chrome trace of a whole job (Perfetto): each rank a process, clocks aligned on a collective.
    Merge(MergeArgs),
    /// The JSON Schema of a `--json` document; without a name, the names.
    ///
    /// Every `--json` document starts with `schema_version` (MAJOR.MINOR):
    /// a field added is a minor step, a field renamed, removed or retyped a
    /// major one (docs/spec.md §3.4, CHANGELOG.md). The schemas are also
    /// shipped as docs/schemas/NAME.json.
    Schema(SchemaArgs),
}

#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// profile.json, a repeat file, or a Chrome trace (.json / .json.gz); a directory stands for the profile in it
    pub trace: PathBuf,
    /// Of a job's rank traces (a folder of them): read rank N alone [default: the lowest rank, said on stderr]
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    #[command(flatten)]
    pub output: FormatArgs,
}

#[derive(Debug, Clone, Args)]
pub struct MemoryArgs {
    /// profile.json, a repeat file, or a Chrome trace (.json / .json.gz); a directory stands for the profile in it
    pub trace: PathBuf,
    /// Of a job's rank traces (a folder of them): read rank N alone [default: the lowest rank, said on stderr]
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    /// The table `--format md|csv` prints [default: devices]
    #[arg(long, value_enum, value_name = "TABLE")]
    pub table: Option<MemoryTable>,
    #[command(flatten)]
    pub output: FormatArgs,
}

/// `--json` and `--format` of the readers whose output is a table.
#[derive(Debug, Clone, Default, Args)]
pub struct FormatArgs {
    /// JSON on stdout (the same as `--format json`)
    #[arg(long)]
    pub json: bool,
    /// What stdout holds [default: text]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
}

impl FormatArgs {
    /// The format asked for: `--json` is `--format json`, and any other
    /// `--format` beside it is a contradiction (exit 2).
    pub fn format(&self) -> Result<Format> {
        match (self.json, self.format) {
            (true, Some(f)) if f != Format::Json => Err(Error::usage(format!(
                "--json means --format json: give --json or --format {}, not both",
                f.as_str()
            ))),
            (true, _) => Ok(Format::Json),
            (false, f) => Ok(f.unwrap_or_default()),
        }
    }
}

/// Refuses `--table` where the format prints no single table.
pub fn check_table<T>(table: Option<T>, format: Format) -> Result<()> {
    match (table, format) {
        (Some(_), Format::Text | Format::Json) => Err(Error::usage(
            "--table picks the table that --format md or --format csv prints; text and JSON show them all",
        )),
        _ => Ok(()),
    }
}

#[derive(Debug, Clone, Args)]
pub struct SummaryArgs {
    /// profile.json, a repeat file, or a Chrome trace (.json / .json.gz); a directory stands for the profile in it. Several traces, or a folder of them, are the ranks of one distributed job
    #[arg(required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    #[command(flatten)]
    pub set: RankSetArgs,
    /// Also write this input's analysed profile.json here (one input only):
    /// the per-rank half of a cluster-scale run (docs/spec.md §7)
    #[arg(long, value_name = "FILE")]
    pub write_profile: Option<PathBuf>,
    /// Write the per-rank and per-collective tables as Parquet files into DIR
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
    /// Write each rank's own tables (summary, kernels, ops, phases,
    /// collectives, idle) as Parquet, Hive-partitioned:
    /// DIR/<table>/rank=<r>/part.parquet (docs/spec.md §7)
    #[arg(long, value_name = "DIR")]
    pub write_parquet: Option<PathBuf>,
    /// Of a job's rank traces (a folder of them, or several): summarise rank
    /// N alone, as one trace [default: the whole job]. With --write-parquet
    /// on one trace: the rank to write it as (default: its
    /// distributedInfo.rank, else a rank3/worker3 in its name, else 0)
    #[arg(long, value_name = "N", conflicts_with = "ranks")]
    pub rank: Option<u32>,
    // `--format md`: one trace's summary as a document, a rank set's ranks table; csv: one row
    // of headline figures, a rank set's ranks.
    #[command(flatten)]
    pub output: FormatArgs,
}

/// How a set of rank traces is read (docs/spec.md §7).
#[derive(Debug, Clone, Default, Args)]
pub struct RankSetArgs {
    /// Only these ranks of a rank set: `0-3,7`
    #[arg(long, value_name = "LIST")]
    pub ranks: Option<String>,
    /// An unreadable rank fails the command (default: a warning, and the job is the rest)
    #[arg(long)]
    pub strict: bool,
}

#[derive(Debug, Clone, Args)]
pub struct CollectivesArgs {
    /// A rank's trace or profile, several, or a folder of them
    #[arg(required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    #[command(flatten)]
    pub set: RankSetArgs,
    /// Of a job's rank traces (a folder of them, or several): read rank N alone, as one trace [default: the whole job]
    #[arg(long, value_name = "N", conflicts_with = "ranks")]
    pub rank: Option<u32>,
    /// Collectives listed in the text and Markdown output, largest skew first (JSON, CSV: all)
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Write the per-rank and per-collective tables as Parquet files into DIR
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
    /// The table `--format md|csv` prints [default: collectives]
    #[arg(long, value_enum, value_name = "TABLE")]
    pub table: Option<CollectivesTable>,
    #[command(flatten)]
    pub output: FormatArgs,
}

#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// A folder of rank traces (.json / .json.gz), or the rank traces
    #[arg(required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    /// The merged Chrome trace to write (gzipped when the name ends in .gz)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: PathBuf,
    #[command(flatten)]
    pub set: RankSetArgs,
    /// Keep each rank's clock as recorded (default: aligned on the first collective every rank ran)
    #[arg(long)]
    pub no_align: bool,
    /// What was written, as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct SchemaArgs {
    /// The document: the reader, and after a dash a form of it whose shape differs
    #[arg(value_name = "NAME", value_parser = PossibleValuesParser::new(schema::names().map(|(n, _)| n)))]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct GetArgs {
    /// profile.json, a repeat file, or a Chrome trace
    pub trace: PathBuf,
    /// Metric name (omit to list the names)
    pub field: Option<String>,
    /// Of a job's rank traces (a folder of them): read rank N alone [default: the lowest rank, said on stderr]
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct KernelsArgs {
    /// A trace or profile; several, or a folder of rank traces, give job-wide rows
    #[arg(required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    #[command(flatten)]
    pub set: RankSetArgs,
    /// Of a job's rank traces (a folder of them, or several): read rank N alone, as one trace [default: the whole job]
    #[arg(long, value_name = "N", conflicts_with = "ranks")]
    pub rank: Option<u32>,
    /// Show the top N
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Category substring: gemm, attention, communication, layout, norm, elementwise, other
    #[arg(long)]
    pub category: Option<String>,
    /// Regex on the kernel name (case-insensitive)
    #[arg(long)]
    pub grep: Option<String>,
    /// Only Tensor Core kernels
    #[arg(long)]
    pub tensorcore: bool,
    /// Order: time, count, name, or efficiency (time lost against the
    /// roofline, where the trace recorded shapes)
    #[arg(long, value_enum, default_value_t = Sort::Time)]
    pub sort: Sort,
    /// Restrict to one phase (forward, backward, …)
    #[arg(long)]
    pub phase: Option<String>,
    #[command(flatten)]
    pub output: FormatArgs,
}

#[derive(Debug, Clone, Args)]
pub struct OpsArgs {
    pub trace: PathBuf,
    /// Of a job's rank traces (a folder of them): read rank N alone [default: the lowest rank, said on stderr]
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    #[arg(long)]
    pub phase: Option<String>,
    /// Regex on the op name (case-insensitive)
    #[arg(long)]
    pub grep: Option<String>,
    /// Order: time (CPU), gpu (kernel time launched inside), count, name, or
    /// efficiency (time lost against the roofline, where the trace recorded shapes)
    #[arg(long, value_enum, default_value_t = Sort::Time)]
    pub sort: Sort,
    #[command(flatten)]
    pub output: FormatArgs,
}

#[derive(Debug, Clone, Args)]
pub struct TreeArgs {
    /// profile.json or a Chrome trace (.json / .json.gz)
    pub trace: PathBuf,
    /// Of a job's rank traces (a folder of them): read rank N alone [default: the lowest rank, said on stderr]
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    /// Which host records are nodes: module (annotations, nn.Modules, ops), frame (every
    /// Python frame too) or op (annotations and ops); the others are see-through
    #[arg(long, value_enum, default_value_t = By::Module)]
    pub by: By,
    /// Restrict to one phase (forward, backward, …)
    #[arg(long)]
    pub phase: Option<String>,
    /// Levels to show below the roots
    #[arg(long)]
    pub depth: Option<usize>,
    /// Hide the nodes under this % of both the GPU and the CPU total
    #[arg(long, default_value_t = 1.0)]
    pub min_pct: f64,
    /// Regex (case-insensitive): only the paths through a matching node; with
    /// --bottom-up, the matching nodes and their callers
    #[arg(long)]
    pub focus: Option<String>,
    /// Callers under each node: where a kernel's or an op's cost comes from
    #[arg(long)]
    pub bottom_up: bool,
    /// What --format folded|svg weighs each frame by, as integer nanoseconds per step:
    /// gpu (the kernel time launched inside it) or cpu (its host time) [default: gpu; cpu
    /// where the view has no GPU time]
    #[arg(long, value_enum, value_name = "WEIGHT")]
    pub weight: Option<Weight>,
    #[command(flatten)]
    pub output: TreeFormatArgs,
}

/// `--json` and `--format` of `tree`: the table formats, and its stacks.
#[derive(Debug, Clone, Default, Args)]
pub struct TreeFormatArgs {
    /// JSON on stdout (the same as `--format json`)
    #[arg(long)]
    pub json: bool,
    /// What stdout holds [default: text]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<TreeFormat>,
}

/// What `tree` prints: a reader's formats, and the shown tree as stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum TreeFormat {
    /// Aligned columns for a terminal
    #[default]
    Text,
    /// The whole result, as `--json`
    Json,
    /// A GitHub-flavoured Markdown table, to paste into a PR comment
    Md,
    /// RFC 4180 CSV with a header of the JSON field names, for DuckDB or pandas
    Csv,
    /// Collapsed stacks of the rows shown, for speedscope, inferno or FlameGraph: one line
    /// per stack, `root;child;leaf N`, N its own weight in integer ns per step (`;` in a name
    /// becomes `:`)
    Folded,
    /// A flame graph of the rows shown (SVG, drawn by inferno), to open in a browser
    Svg,
}

/// What `tree` prints, decided from `--json` and `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeOut {
    /// A reader's format: text, JSON, Markdown, CSV.
    Table(Format),
    /// The shown tree as collapsed stacks.
    Folded,
    /// The shown tree as a flame graph.
    Svg,
}

impl TreeFormatArgs {
    /// As [`FormatArgs::format`]: `--json` beside another `--format` exits 2.
    pub fn format(&self) -> Result<TreeOut> {
        let table = |format: Format| FormatArgs { json: self.json, format: Some(format) }.format();
        let out = match self.format {
            None => TreeOut::Table(FormatArgs { json: self.json, format: None }.format()?),
            Some(TreeFormat::Text) => TreeOut::Table(table(Format::Text)?),
            Some(TreeFormat::Json) => TreeOut::Table(table(Format::Json)?),
            Some(TreeFormat::Md) => TreeOut::Table(table(Format::Md)?),
            Some(TreeFormat::Csv) => TreeOut::Table(table(Format::Csv)?),
            Some(TreeFormat::Folded) => TreeOut::Folded,
            Some(TreeFormat::Svg) => TreeOut::Svg,
        };
        if self.json && !matches!(out, TreeOut::Table(Format::Json)) {
            return Err(Error::usage(format!(
                "--json means --format json: give --json or --format {}, not both",
                self.format.map_or("text", TreeFormat::as_str)
            )));
        }
        Ok(out)
    }
}

impl TreeFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            TreeFormat::Text => "text",
            TreeFormat::Json => "json",
            TreeFormat::Md => "md",
            TreeFormat::Csv => "csv",
            TreeFormat::Folded => "folded",
            TreeFormat::Svg => "svg",
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ModulesArgs {
    /// profile.json or a Chrome trace (.json / .json.gz)
    pub trace: PathBuf,
    /// Of a job's rank traces (a folder of them): read rank N alone [default: the lowest rank, said on stderr]
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    /// Levels to show below the top modules
    #[arg(long)]
    pub depth: Option<usize>,
    /// Hide the modules under this % of both the GPU and the CPU total
    #[arg(long, default_value_t = 1.0)]
    pub min_pct: f64,
    /// Regex (case-insensitive): only the paths through a matching module
    #[arg(long)]
    pub focus: Option<String>,
    #[command(flatten)]
    pub output: FormatArgs,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The baseline
    pub before: PathBuf,
    /// The changed run
    pub after: PathBuf,
    /// A regression gate: exit 4 when METRIC (a `profile get` name) moved
    /// past CHANGE and the change is significant: `step_ms:+5%`,
    /// `gpu_util:-3pts`, `idle_ms:+2`; repeatable. Single runs cannot decide
    /// a gate (it fails only with --strict)
    #[arg(long = "fail-on", value_name = "METRIC:CHANGE")]
    pub fail_on: Vec<String>,
    #[command(flatten)]
    pub set: RankSetArgs,
    /// Of a job's rank traces (a folder of them, or several): compare rank N alone on each side that is a job [default: the whole jobs]
    #[arg(long, value_name = "N", conflicts_with = "ranks")]
    pub rank: Option<u32>,
    // md: the metrics, verdict and largest changes as tables; csv: the metrics (of two jobs: the ranks).
    #[command(flatten)]
    pub output: FormatArgs,
}

#[derive(Debug, Clone, Args)]
pub struct WhatIfArgs {
    pub trace: PathBuf,
    /// The standard changes, each re-timed on the step model, largest saving first
    #[arg(long)]
    pub all: bool,
    /// Remove one kernel category (substring: gemm, attention, communication, layout, norm,
    /// elementwise, other, memcpy; communication: fully overlapped with compute)
    #[arg(long, value_name = "CATEGORY")]
    pub remove_category: Option<String>,
    /// Remove the GPU work whose kernel name matches REGEX (case-insensitive)
    #[arg(long, value_name = "REGEX")]
    pub grep: Option<String>,
    /// Remove the CPU ops or annotations (module scopes, record_function ranges) whose name
    /// matches REGEX (case-insensitive): their host time, their launches and the GPU work they
    /// launched (a trace, not a profile)
    #[arg(long, value_name = "REGEX")]
    pub op: Option<String>,
    /// With --remove-category, --grep or --op: keep this share (0 to 1) of the work's time
    /// instead of removing it (0.5: twice as fast)
    #[arg(long, value_name = "F")]
    pub scale: Option<f64>,
    /// Remove N launch calls per step (kernel launches and memcpy/memset calls, as the
    /// what-if counts them) and the dispatch between them (e.g. an op-fusion win)
    #[arg(long)]
    pub remove_launches: Option<u64>,
    /// Set one idle cause to zero (python, cpu_op, dataloader, allocator: that host time;
    /// sync: syncs return at once; launch: no launch overhead; dependency: no cross-stream waits)
    #[arg(long, value_name = "CAUSE", alias = "idle")]
    pub remove_idle: Option<crate::profile::IdleCause>,
    /// Run one kernel category's priced work at the device's roofline (traces
    /// that recorded shapes, on a device in the peak table): an upper bound
    #[arg(long, value_name = "CATEGORY")]
    pub at_roofline: Option<String>,
    /// Fuse each chain of memory-bound kernels (elementwise, norm, copy) that a stream runs
    /// between two matrix kernels into one kernel as long as its longest, launched once
    /// (a trace, not a profile)
    #[arg(long)]
    pub fuse_chains: bool,
    /// On a rank set: RANK's lateness at the collectives removed (default: the rank the others
    /// wait for), the ranks re-timed together on their step models joined at the collectives
    #[arg(long, value_name = "RANK", num_args = 0..=1)]
    pub straggler: Option<Option<u32>>,
    /// Of a job's rank traces (a folder of them): read rank N alone and change it [default: a change is made on every rank and the job re-timed; --all: so for each standard change; without one, --straggler]
    #[arg(long, value_name = "N", conflicts_with_all = ["ranks", "straggler"])]
    pub rank: Option<u32>,
    #[command(flatten)]
    pub set: RankSetArgs,
    // md: the change's figures (--all: the scenarios and critical path) as tables; csv: one row (--all: the scenarios).
    #[command(flatten)]
    pub output: FormatArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ExploreArgs {
    /// A profile or trace, then optionally a second one to compare against; or a distributed
    /// job: a folder of rank traces, three or more rank traces, or two whose names carry
    /// different rank numbers (`rank3`, `worker3`)
    #[arg(required = true)]
    pub traces: Vec<PathBuf>,
    /// Of a job's rank traces (a folder of them, or several): open rank N alone
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    /// Colour theme from themes/*.toml
    #[arg(long, default_value = "dark")]
    pub theme: String,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Dataset YAML, a dataset name from the datasets directory, or `synthetic[:N]`
    pub data: String,
    #[arg(long, default_value = "LibreYOLO9t.pt")]
    pub weights: String,
    #[arg(long, value_enum, default_value = "t", hide_possible_values = true)]
    pub size: ModelSize,
    /// Micro-batch; -1 fits about 70% of VRAM (CUDA)
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = run_batch)]
    pub batch: i64,
    #[arg(long, default_value_t = 640)]
    pub imgsz: u32,
    #[arg(long, default_value_t = 8, value_parser = at_most::<{ limits::MAX_WORKERS }>)]
    pub workers: usize,
    /// AMP on CUDA (default on)
    #[arg(long, overrides_with = "no_amp")]
    pub amp: bool,
    #[arg(long, overrides_with = "amp")]
    pub no_amp: bool,
    #[arg(long, default_value_t = 20, value_parser = at_most::<{ limits::MAX_ITERATIONS }>)]
    pub steps: usize,
    #[arg(long, default_value_t = 5, value_parser = at_most::<{ limits::MAX_ITERATIONS }>)]
    pub warmup: usize,
    #[arg(long, default_value_t = 1, value_parser = at_most::<{ limits::MAX_REPEAT }>)]
    pub repeat: usize,
    /// `cpu`, or a CUDA index
    #[arg(long, default_value = "0")]
    pub device: DeviceArg,
    /// Intra-op CPU threads: the group's `--threads`.
    #[arg(skip)]
    pub threads: Option<usize>,
    /// The memory the capture may use: the group's `--max-memory`.
    #[arg(skip)]
    pub max_memory: Option<String>,
    /// Leave the model's module scopes (`backbone`, `model.N Class`, …) out
    /// of the trace
    #[arg(long)]
    pub no_module_scopes: bool,
    #[arg(long, default_value = "runs/profile")]
    pub project: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct InferArgs {
    /// Image file or directory (default: the bundled sample image)
    pub source: Option<PathBuf>,
    #[arg(long, default_value = "LibreYOLO9t.pt")]
    pub weights: String,
    #[arg(long, value_enum, default_value = "t", hide_possible_values = true)]
    pub size: ModelSize,
    #[arg(long, default_value_t = 1, value_parser = at_most::<{ limits::MAX_BATCH }>)]
    pub batch: usize,
    #[arg(long, default_value_t = 640)]
    pub imgsz: u32,
    /// Autocast forward (CUDA only)
    #[arg(long, overrides_with = "no_half")]
    pub half: bool,
    #[arg(long, overrides_with = "half")]
    pub no_half: bool,
    /// CUDA autocast dtype: float16 or bfloat16
    #[arg(long, value_enum, default_value = "float16", hide_possible_values = true)]
    pub amp_dtype: AmpDtype,
    #[arg(long, default_value_t = 20, value_parser = at_most::<{ limits::MAX_ITERATIONS }>)]
    pub warmup: usize,
    #[arg(long, default_value_t = 100, value_parser = at_most::<{ limits::MAX_ITERATIONS }>)]
    pub runs: usize,
    #[arg(long, default_value_t = 1, value_parser = at_most::<{ limits::MAX_REPEAT }>)]
    pub repeat: usize,
    #[arg(long, default_value_t = 0.25)]
    pub conf: f64,
    #[arg(long, default_value_t = 0.45)]
    pub iou: f64,
    #[arg(long, default_value_t = 300, value_parser = at_most::<{ limits::MAX_DET }>)]
    pub max_det: usize,
    #[arg(long, default_value = "0")]
    pub device: DeviceArg,
    /// Intra-op CPU threads: the group's `--threads`.
    #[arg(skip)]
    pub threads: Option<usize>,
    /// The memory the capture may use: the group's `--max-memory`.
    #[arg(skip)]
    pub max_memory: Option<String>,
    /// Measure the deployed graph: BatchNorm folded into its convolution and
    /// RepConv branches merged, as exported models run. Default: the graph
    /// LibreYOLO's inference runs (unfused)
    #[arg(long)]
    pub fuse: bool,
    /// Emit the Chrome trace (default on)
    #[arg(long, overrides_with = "no_trace")]
    pub trace: bool,
    #[arg(long, overrides_with = "trace")]
    pub no_trace: bool,
    /// Record allocator events too (profile_memory), for `profile memory`
    #[arg(long)]
    pub memory: bool,
    /// Leave the model's module scopes (`backbone`, `model.N Class`, …) out
    /// of the trace
    #[arg(long)]
    pub no_module_scopes: bool,
    #[arg(long, default_value = "runs/profile")]
    pub project: String,
    #[arg(long)]
    pub json: bool,
}

/// A YOLOv9 size: `--size`, a checkpoint's `size`, the profile's
/// `config.size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelSize {
    T,
    S,
    M,
    C,
}

impl ModelSize {
    pub const ALL: [ModelSize; 4] = [ModelSize::T, ModelSize::S, ModelSize::M, ModelSize::C];

    pub fn as_str(self) -> &'static str {
        match self {
            ModelSize::T => "t",
            ModelSize::S => "s",
            ModelSize::M => "m",
            ModelSize::C => "c",
        }
    }

    /// The size a checkpoint names; `None` for one YOLOv9 does not have.
    pub fn parse(name: &str) -> Option<ModelSize> {
        ModelSize::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for ModelSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// `--amp-dtype`: the CUDA autocast dtype (written as `config.amp_dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
pub enum AmpDtype {
    #[value(name = "float16", alias = "fp16", alias = "half")]
    #[serde(rename = "float16")]
    Float16,
    #[value(name = "bfloat16", alias = "bf16")]
    #[serde(rename = "bfloat16")]
    Bfloat16,
}

/// `--device`: the CPU, or a CUDA device by index (`0`, `cuda`, `cuda:1`;
/// whether it exists is the capture engine's to check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceArg {
    Cpu,
    Cuda(usize),
}

impl std::str::FromStr for DeviceArg {
    type Err = Error;
    fn from_str(arg: &str) -> Result<DeviceArg> {
        let a = arg.trim().to_ascii_lowercase();
        if a == "cpu" {
            return Ok(DeviceArg::Cpu);
        }
        let index =
            a.strip_prefix("cuda:").or(if a == "cuda" { Some("0") } else { None }).unwrap_or(&a);
        index
            .parse()
            .map(DeviceArg::Cuda)
            .map_err(|e| Error::usage("expected `cpu` or a CUDA index such as `0`").caused_by(e))
    }
}

impl std::fmt::Display for DeviceArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceArg::Cpu => f.pad("cpu"),
            DeviceArg::Cuda(i) => f.pad(&i.to_string()),
        }
    }
}

impl RunArgs {
    pub fn amp(&self) -> bool {
        !self.no_amp
    }
}

impl InferArgs {
    pub fn half(&self) -> bool {
        self.half && !self.no_half
    }
    pub fn trace(&self) -> bool {
        !self.no_trace
    }
}

/// Refuses `key=value` arguments whose key is a flag of the chosen
/// subcommand (docs/spec.md §1: POSIX flags only), naming the `--key value` form.
pub fn refuse_key_value(args: &[String]) -> Option<String> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let profile = cmd.find_subcommand("profile")?;
    let sub_name = args.iter().skip_while(|a| *a != "profile").nth(1)?;
    let sub = profile.find_subcommand(sub_name)?;
    let flags: Vec<String> =
        sub.get_arguments().filter_map(|a| a.get_long().map(str::to_string)).collect();
    let positionals: Vec<String> = sub.get_positionals().map(|a| a.get_id().to_string()).collect();
    for arg in args.iter().skip_while(|a| *a != sub_name).skip(1) {
        if arg.starts_with('-') {
            continue;
        }
        let Some((key, value)) = arg.split_once('=') else { continue };
        let flag = key.replace('_', "-");
        if flags.contains(&flag) {
            return Some(format!(
                "`{arg}`: key=value arguments are not accepted; use `--{flag} {value}`"
            ));
        }
        if positionals.iter().any(|p| p == key) {
            return Some(format!(
                "`{arg}`: key=value arguments are not accepted; give the {key} as a plain argument: `{value}`"
            ));
        }
    }
    None
}

/// The subcommand list printed by a bare `libreyolo profile`.
pub fn subcommand_list() -> String {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let mut out =
        String::from("usage: libreyolo profile <subcommand> [<args>] [--flags]\n\nsubcommands:\n");
    if let Some(profile) = cmd.find_subcommand("profile") {
        for sub in profile.get_subcommands() {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            out.push_str(&format!("  {:<9} {about}\n", sub.get_name()));
        }
    }
    out.push_str("\nrun `libreyolo profile <subcommand> --help` for its flags\n");
    out
}
