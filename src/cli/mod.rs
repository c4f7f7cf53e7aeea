//! The `libreyolo profile` command line: argument definitions for every
//! subcommand (capture and explorer included, so `--help` is whole), the
//! parse and exit-code mapping both executables share, and the reader
//! commands, which run here. The binary wires capture and explorer.

mod args;
mod man;
#[cfg(all(test, feature = "parquet"))]
mod parquet_tests;

pub use args::*;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::error::{Error, Result};
use crate::input::{self, Chosen, LoadOptions, Loaded, Reads, What, ranks};
use crate::lens::modules::ModulesQuery;
use crate::lens::{self, kernels::KernelQuery, ops::OpQuery, tree::TreeQuery, whatif::Request};
use crate::profile::{self, Input};
use crate::render::table::{self, Table};
use crate::render::{self, Format, text};
use crate::trace::{Progress, ReadOptions};

/// A parsed command line: the subcommand, and how it reads its inputs
/// (`--threads`, `--no-mmap`, `--max-memory`).
#[derive(Debug)]
pub struct Parsed {
    pub command: Command,
    pub read: ReadOptions,
}

/// The commands that run once parsed: `profile`'s, and `mcp`.
#[derive(Debug)]
pub enum Command {
    Profile(ProfileCommand),
    Mcp(McpArgs),
}

/// Parses `libreyolo …` as given (`OsString`s: a non-UTF-8 argument is a
/// clap error, not a panic). `None` is a bare `libreyolo profile`.
/// `--help`/`--version` and clap's errors are printed here and end the
/// process with 0 or 2, as every subcommand of the group does.
pub fn parse(args: &[OsString]) -> Result<Option<Parsed>> {
    use clap::Parser;
    let lossy: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    if let Some(msg) = refuse_key_value(&lossy) {
        return Err(Error::usage(msg));
    }
    match Cli::try_parse_from(args) {
        Ok(parsed) => match parsed.command {
            TopCommand::Profile(profile) => {
                let mut read = ReadOptions::from_flags(
                    profile.threads,
                    profile.no_mmap,
                    profile.max_memory.as_deref(),
                )?;
                read.graph_capture = profile.graph_capture.clone();
                Ok(profile.into_command().map(|c| Parsed { command: Command::Profile(c), read }))
            }
            TopCommand::Mcp(args) => {
                // read(2), not a mapping: a trace truncated under a mapping
                // (a run writing it again) would end the server with SIGBUS.
                let mut read =
                    ReadOptions::from_flags(args.threads, true, args.max_memory.as_deref())?;
                // A profile's recorded trace path may lie outside the roots.
                read.follow_recorded = false;
                Ok(Some(Parsed { command: Command::Mcp(args), read }))
            }
            // Generated from these definitions (clap_complete, clap_mangen),
            // printed, and the process ends as `--help` does.
            TopCommand::Completions { shell } => print_and_exit(&completions(shell)),
            TopCommand::Man(m) => match &m.dir {
                Some(dir) => {
                    let written = man::write_all(dir)?;
                    say(&format!("wrote {} man pages into {}", written.len(), dir.display()));
                    std::process::exit(0)
                }
                None => print_and_exit(&man::page(&m.command)?),
            },
        },
        Err(e) => {
            // --help and --version are successes, unless they could not be
            // written (`>/dev/full`; a closed pipe is fine); everything
            // else is usage.
            use crate::error::exit;
            if e.use_stderr() {
                // Plain text, control and bidi characters escaped: clap
                // echoes the offending value, which may hold an ESC or OSC
                // sequence meant for the terminal.
                let text = e.render().to_string();
                let _ = write!(std::io::stderr(), "{}", render::printable(&text));
                std::process::exit(exit::USAGE);
            }
            let code = match e.print() {
                Err(w) if w.kind() != std::io::ErrorKind::BrokenPipe => exit::FAILURE,
                _ => exit::OK,
            };
            std::process::exit(code);
        }
    }
}

/// Prints `text` on stdout and ends the process: 0, or the error's code.
fn print_and_exit(text: &str) -> ! {
    let code = match print_stdout(text) {
        Ok(()) => 0,
        Err(e) => {
            say(&format!("error: {e}"));
            e.exit_code()
        }
    };
    std::process::exit(code)
}

/// Shell completions for `libreyolo`, every subcommand and flag.
pub fn completions(shell: clap_complete::Shell) -> String {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "libreyolo", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The process's exit status for a command's result: errors are printed
/// once, here, and mapped to the group's exit codes.
pub fn exit_status(result: Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Not eprintln!: it panics when stderr cannot be written.
            let _ = writeln!(std::io::stderr(), "error: {}", render::printable(&e.to_string()));
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// A line on stderr; never a panic when stderr cannot be written.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{}", render::printable(line));
}

/// What a reader reads of its arguments: [`input::what`] (the one rule of
/// docs/spec.md §3.2), then `--rank`; the notes (files left out, the rank
/// shown) said on stderr.
fn choose<P: AsRef<Path>>(
    args: &[P],
    rank: Option<u32>,
    reads: Reads,
    said: &dyn Fn(&str),
) -> Result<Chosen> {
    let (chosen, notes) = input::what(args)?.choose(rank, reads)?;
    for n in &notes {
        said(&format!("note: {n}"));
    }
    Ok(chosen)
}

/// The one input a reader of one rank reads ([`choose`]).
fn one_rank(arg: &Path, rank: Option<u32>, said: &dyn Fn(&str)) -> Result<PathBuf> {
    match choose(&[arg], rank, Reads::OneRank, said)? {
        Chosen::One(path) => Ok(path),
        Chosen::Job(_) => Err(Error::failed("a job where one rank was asked for")),
    }
}

/// A lens result in `format`: text and JSON as ever; Markdown and CSV from
/// its table, whose notes go to stderr so stdout holds the table alone.
fn emit<T: serde::Serialize>(
    format: Format,
    value: &T,
    text: impl FnOnce() -> String,
    table: impl FnOnce() -> Result<Table>,
) -> Result<String> {
    match format {
        Format::Text => Ok(text()),
        Format::Json => render::json(value),
        Format::Md | Format::Csv => {
            let t = table()?;
            for n in &t.notes {
                say(&format!("note: {n}"));
            }
            if format == Format::Md { Ok(table::markdown(&t)) } else { table::csv(&t) }
        }
    }
}

/// As [`emit`], for a result that is no single table: Markdown is its
/// document (several tables and prose), CSV the one table that fits.
fn emit_doc<T: serde::Serialize>(
    format: Format,
    value: &T,
    text: impl FnOnce() -> String,
    doc: impl FnOnce() -> Result<Vec<render::doc::Part>>,
    table: impl FnOnce() -> Result<Table>,
) -> Result<String> {
    match format {
        Format::Md => Ok(render::doc::markdown_document(&doc()?)),
        _ => emit(format, value, text, table),
    }
}

/// Runs a reader subcommand and returns what to print on stdout. Warnings
/// about the input (measured numbers not taken, an unknown schema version,
/// repeated step names) and the summary's notes go to stderr. One input's
/// read draws the progress `read` asks for (the command line: a bar on a
/// terminal; the MCP server: none); a job's ranks, read side by side, none.
pub fn run_reader(cmd: &ReaderCommand, read: &ReadOptions) -> Result<String> {
    run_reader_saying(cmd, read, &say)
}

/// [`run_reader`], its warnings and notes (each a line, `note: …` or
/// `warning: …`) handed to `said` instead of stderr: the MCP server gives
/// them to the agent with the result.
pub fn run_reader_saying(
    cmd: &ReaderCommand,
    read: &ReadOptions,
    said: &dyn Fn(&str),
) -> Result<String> {
    // The notices of an input said; `peak_ops` for `profile memory`.
    let load_with = |path: &Path, peak_ops: bool| -> Result<Loaded> {
        let loaded =
            input::load(path, LoadOptions { read: read.clone(), peak_ops, ..Default::default() })?;
        for n in &loaded.notices {
            said(&format!("warning: {n}"));
        }
        Ok(loaded)
    };
    let load = |path: &Path| load_with(path, false).map(|l| l.input);
    // A distributed job's ranks (and their step models), the set's
    // warnings and notes said.
    let rank_set_with = |files: &[PathBuf], set: &RankSetArgs, keep_models: bool| {
        let opts = ranks::Options {
            select: set.ranks.as_deref().map(ranks::parse_selection).transpose()?,
            strict: set.strict,
            done: None,
            read: read.with_progress(Progress::Off),
            keep_models,
        };
        let (set, models) = ranks::load_with_models(files, &opts)?;
        for w in &set.warnings {
            said(&format!("warning: {w}"));
        }
        for n in &set.notes {
            said(&format!("note: {n}"));
        }
        Ok::<_, Error>((set, models))
    };
    let rank_set =
        |files: &[PathBuf], set: &RankSetArgs| rank_set_with(files, set, false).map(|(set, _)| set);
    let job =
        |files: &[PathBuf], set: &RankSetArgs| rank_set(files, set).map(|s| lens::job::job(&s));
    let out = match cmd {
        ReaderCommand::Summary(a) => {
            let format = a.output.format()?;
            if a.write_parquet.is_some() && !crate::tables::AVAILABLE {
                return Err(crate::tables::unavailable());
            }
            let inputs = input::what(&a.traces)?;
            // Of one trace, --rank is the rank its --write-parquet tables
            // are written as; of a job, the rank read alone.
            let one = matches!(inputs.what, What::One(_));
            if one && a.rank.is_some() && a.write_parquet.is_none() {
                return Err(Error::usage(format!(
                    "--rank picks one rank of a job (a folder of rank traces, or several), or names the rank --write-parquet writes one trace's tables as: {} is one trace",
                    a.traces[0].display()
                )));
            }
            let (chosen, notes) = inputs.choose(a.rank.filter(|_| !one), Reads::Job)?;
            for n in &notes {
                said(&format!("note: {n}"));
            }
            match (chosen, format) {
                (Chosen::Job(files), format) => {
                    if a.write_profile.is_some() {
                        return Err(Error::usage(
                            "--write-profile writes one input's profile: give one trace",
                        ));
                    }
                    // The path through the ranks needs their step models.
                    let keep = files.len() <= lens::job::PATH_THROUGH_RANKS;
                    let (set, models) = rank_set_with(&files, &a.set, keep)?;
                    let matched = lens::collectives::of_ranks(&set);
                    let mut j = lens::job::job_of(&set, &matched);
                    if let Some(p) = j.path.as_mut() {
                        p.through = lens::job::path_through(&set, &models, &matched);
                    }
                    if let Some(dir) = &a.parquet {
                        crate::tables::write(dir, &j, &matched)?;
                    }
                    if let Some(dir) = &a.write_parquet {
                        for r in &set.ranks {
                            crate::tables::write_rank(dir, r.rank, &r.input.profile)?;
                        }
                    }
                    emit_doc(
                        format,
                        &j,
                        || text::job(&j),
                        || render::doc::job(&j),
                        || table::job_ranks(&j),
                    )?
                }
                (Chosen::One(path), format) => {
                    if a.parquet.is_some() {
                        return Err(Error::usage(
                            "--parquet writes the tables of a rank set: give several rank traces or a folder of them",
                        ));
                    }
                    let Loaded { input, notices, .. } = load_with(&path, false)?;
                    if let Some(out) = &a.write_profile {
                        crate::files::write_json(out, &input.profile)?;
                    }
                    if let Some(dir) = &a.write_parquet {
                        let rank = parquet_rank(a.rank, &input);
                        crate::tables::write_rank(dir, rank, &input.profile)?;
                    }
                    let s = lens::summary::summary(&input.profile);
                    // The Markdown lists them itself; text and CSV say them on stderr.
                    if matches!(format, Format::Text | Format::Csv) {
                        for w in s.warnings.iter().filter(|w| !notices.contains(w)) {
                            said(&format!("note: {w}"));
                        }
                    }
                    emit_doc(
                        format,
                        &s,
                        || text::summary(&s),
                        || render::doc::summary(&s),
                        || render::doc::summary_row(&s),
                    )?
                }
            }
        }
        ReaderCommand::Collectives(a) => {
            let format = a.output.format()?;
            check_table(a.table, format)?;
            let c = match choose(&a.traces, a.rank, Reads::Job, said)? {
                Chosen::Job(files) => lens::collectives::of_ranks(&rank_set(&files, &a.set)?),
                Chosen::One(path) => lens::collectives::of_profile(&load(&path)?.profile),
            };
            for n in &c.notes {
                said(&format!("note: {n}"));
            }
            if let Some(dir) = &a.parquet {
                crate::tables::write_collectives(dir, &c)?;
            }
            // Markdown is read as the text is (the `--top` largest skews), CSV as the JSON (all).
            let top = (format == Format::Md).then_some(a.top);
            emit(
                format,
                &c,
                || text::collectives(&c, a.top),
                || table::collectives(&c, a.table.unwrap_or_default(), top),
            )?
        }
        ReaderCommand::Get(a) => {
            let input = load(&one_rank(&a.trace, a.rank, said)?)?;
            let got =
                lens::get::get(&input.profile, a.field.as_deref(), &a.trace.to_string_lossy())?;
            if a.json {
                match &got {
                    lens::get::GetAnswer::Names(n) => render::json(n)?,
                    lens::get::GetAnswer::Value(m) => render::json(m)?,
                }
            } else {
                text::get(&got)
            }
        }
        ReaderCommand::Phases(a) => {
            let format = a.output.format()?;
            let p = lens::phases::phases(&load(&one_rank(&a.trace, a.rank, said)?)?.profile);
            emit(format, &p, || text::phases(&p), || table::phases(&p))?
        }
        ReaderCommand::Kernels(a) => {
            let format = a.output.format()?;
            let q = KernelQuery {
                top: Some(a.top),
                category: a.category.clone(),
                grep: a.grep.clone(),
                tensorcore: a.tensorcore,
                sort: a.sort,
                phase: a.phase.clone(),
            };
            match choose(&a.traces, a.rank, Reads::Job, said)? {
                Chosen::Job(files) => {
                    let set = rank_set(&files, &a.set)?;
                    let profiles: Vec<(u32, &profile::Profile)> =
                        set.ranks.iter().map(|r| (r.rank, &r.input.profile)).collect();
                    let k = lens::kernels::job_kernels(&profiles, &q)?;
                    emit(format, &k, || text::job_kernels(&k), || table::job_kernels(&k))?
                }
                Chosen::One(path) => {
                    let Input { profile, .. } = load(&path)?;
                    if let Some(c) = &a.category {
                        lens::kernels::check_category(&profile, c)?;
                    }
                    let mut k = lens::kernels::kernels(&profile, &q)?;
                    if format == Format::Json {
                        k = k.with_launched_from(&profile);
                    }
                    emit(format, &k, || text::kernels(&k), || table::kernels(&k))?
                }
            }
        }
        ReaderCommand::Ops(a) => {
            let format = a.output.format()?;
            let Input { profile, .. } = load(&one_rank(&a.trace, a.rank, said)?)?;
            let q = OpQuery {
                top: Some(a.top),
                phase: a.phase.clone(),
                grep: a.grep.clone(),
                sort: a.sort,
            };
            let o = lens::ops::ops(&profile, &q)?;
            emit(format, &o, || text::ops(&o), || table::ops(&o))?
        }
        ReaderCommand::Tree(a) => {
            let format = a.output.format()?;
            if a.weight.is_some() && matches!(format, TreeOut::Table(_)) {
                return Err(Error::usage(
                    "--weight picks what --format folded or --format svg weighs each frame by; the other formats show GPU and CPU time side by side",
                ));
            }
            let Input { profile, .. } = load(&one_rank(&a.trace, a.rank, said)?)?;
            let q = TreeQuery {
                by: a.by,
                phase: a.phase.clone(),
                depth: a.depth,
                min_pct: a.min_pct,
                focus: a.focus.clone(),
                bottom_up: a.bottom_up,
            };
            match format {
                TreeOut::Table(format) => {
                    let t = lens::tree::tree(&profile, &q)?;
                    emit(format, &t, || text::tree(&t), || table::tree(&t))?
                }
                TreeOut::Folded | TreeOut::Svg => {
                    let s = lens::tree::stacks(&profile, &q, a.weight)?;
                    for n in &s.notes {
                        said(&format!("note: {n}"));
                    }
                    if format == TreeOut::Svg {
                        render::flame::svg(&s)?
                    } else {
                        render::flame::folded(&s)
                    }
                }
            }
        }
        ReaderCommand::Modules(a) => {
            let format = a.output.format()?;
            let Input { profile, .. } = load(&one_rank(&a.trace, a.rank, said)?)?;
            let q = ModulesQuery { depth: a.depth, min_pct: a.min_pct, focus: a.focus.clone() };
            let m = lens::modules::modules(&profile, &q)?;
            emit(format, &m, || text::modules(&m), || table::modules(&m))?
        }
        ReaderCommand::Compare(a) => {
            let format = a.output.format()?;
            if a.before.as_os_str() == "-" && a.after.as_os_str() == "-" {
                return Err(Error::usage(
                    "standard input can be read once: give `-` for one side at most",
                ));
            }
            // Each side: one input or a job; --rank reads one rank of
            // each side that is a job.
            let side = |p: &PathBuf| -> Result<(Chosen, bool)> {
                let inputs = input::what(std::slice::from_ref(p))?;
                let job = matches!(inputs.what, What::Ranks(_));
                let (chosen, notes) = inputs.choose(a.rank.filter(|_| job), Reads::Job)?;
                for n in &notes {
                    said(&format!("note: {n}"));
                }
                Ok((chosen, job))
            };
            let ((before_in, before_job), (after_in, after_job)) =
                (side(&a.before)?, side(&a.after)?);
            if let Some(n) = a.rank.filter(|_| !before_job && !after_job) {
                return Err(Error::usage(format!(
                    "--rank {n} picks one rank of a job (a folder of rank traces): neither side is one"
                )));
            }
            let gates: Vec<lens::gate::GateSpec> =
                a.fail_on.iter().map(|g| lens::gate::parse(g)).collect::<Result<_>>()?;
            // Each side as the output names it.
            let (b, f) = (a.before.to_string_lossy(), a.after.to_string_lossy());
            let (before_path, after_path) = match (before_in, after_in) {
                (Chosen::One(x), Chosen::One(y)) => (x, y),
                (Chosen::Job(x), Chosen::Job(y)) => {
                    if !gates.is_empty() {
                        return Err(Error::usage(
                            "--fail-on gates compare two profiles, not two rank sets (gate each rank's profile)",
                        ));
                    }
                    let c = lens::job::compare_jobs(&job(&x, &a.set)?, &job(&y, &a.set)?, &b, &f);
                    if let Some(w) = &c.warning {
                        said(&format!("warning: {w}"));
                    }
                    let out = emit_doc(
                        format,
                        &c,
                        || text::compare_jobs(&c),
                        || render::doc::job_compare(&c),
                        || render::doc::job_compare_ranks(&c),
                    )?;
                    return Ok(render::printable(&out).into_owned());
                }
                _ => {
                    let (job, one) =
                        if before_job { (&a.before, &a.after) } else { (&a.after, &a.before) };
                    return Err(Error::usage(format!(
                        "{} holds a job's rank traces and {} is one input: compare two jobs, or one rank of it (--rank N) with the input",
                        job.display(),
                        one.display()
                    )));
                }
            };
            {
                let before = load(&before_path)?;
                let after = load(&after_path)?;
                let mut c = lens::compare::compare(&before.profile, &after.profile, &b, &f);
                if let Some(w) = &c.warning {
                    said(&format!("warning: {w}"));
                }
                for n in &c.notes {
                    said(&format!("note: {n}"));
                }
                let contended = lens::compare::contended_refusal(&before.profile, &after.profile);
                c.gates = lens::gate::evaluate(
                    &before.profile,
                    &after.profile,
                    &gates,
                    contended.as_deref(),
                )?;
                let out = emit_doc(
                    format,
                    &c,
                    || text::compare(&c),
                    || render::doc::compare(&c),
                    || render::doc::compare_metrics(&c),
                )?;
                let failed: Vec<&str> = c
                    .gates
                    .iter()
                    .filter(|g| {
                        g.verdict == lens::gate::GateVerdict::Fail
                            || (a.set.strict && g.verdict == lens::gate::GateVerdict::Undecided)
                    })
                    .map(|g| g.gate.as_str())
                    .collect();
                if !failed.is_empty() {
                    print_stdout(&out)?;
                    return Err(Error::gate(format!("gate failed: {}", failed.join(", "))));
                }
                out
            }
        }
        ReaderCommand::WhatIf(a) => {
            let format = a.output.format()?;
            let request = Request {
                remove_category: a.remove_category.clone(),
                grep: a.grep.clone(),
                op: a.op.clone(),
                scale: a.scale,
                remove_launches: a.remove_launches,
                remove_idle: a.remove_idle,
                at_roofline: a.at_roofline.clone(),
                fuse_chains: a.fuse_chains,
            };
            let inputs = input::what(std::slice::from_ref(&a.trace))?;
            let job = matches!(inputs.what, What::Ranks(_));
            // `--all`'s list, of a job or of one trace.
            let emit_all = |w: &lens::whatif::WhatIfAll| {
                emit_doc(
                    format,
                    w,
                    || text::what_if_all(w),
                    || render::doc::what_if_all(w),
                    || render::doc::what_if_scenarios(w),
                )
                .map(|out| render::printable(&out).into_owned())
            };
            // A job without --rank: no change is the straggler's lateness
            // removed (--straggler, the default); a change is made on every
            // rank and the job re-timed; --all, each standard change so.
            let changes = request != Request::default() || a.all;
            if job && a.rank.is_none() {
                if a.all && (request != Request::default() || a.straggler.is_some()) {
                    return Err(Error::usage("--all lists the standard changes: give it alone"));
                }
                if changes && a.straggler.is_some() {
                    return Err(Error::usage(
                        "on a rank set, --straggler [RANK] re-times the whole job: give it alone; the other changes are made on every rank (or one rank's, with --rank N)",
                    ));
                }
                let (chosen, notes) = inputs.choose(None, Reads::Job)?;
                for n in &notes {
                    said(&format!("note: {n}"));
                }
                let Chosen::Job(files) = chosen else {
                    return Err(Error::failed("one input where a job was read"));
                };
                let (set, models) = rank_set_with(&files, &a.set, true)?;
                let matched = lens::collectives::of_ranks(&set);
                if a.all {
                    let label = Some(a.trace.display().to_string());
                    let w = lens::whatif::job_all(&set, &models, &matched, label)?;
                    return emit_all(&w);
                }
                let w = if changes {
                    lens::whatif::job_changed(&set, &models, &matched, &request)?
                } else {
                    let rank = match a.straggler.flatten() {
                        Some(r) => r,
                        None => {
                            lens::job::job_of(&set, &matched).critical_rank.ok_or_else(|| {
                                Error::usage(
                                    "no rank is waited for in this job: name one with --straggler RANK",
                                )
                            })?
                        }
                    };
                    lens::whatif::straggler_removed(&set, &models, &matched, rank)?
                };
                return emit_doc(
                    format,
                    &w,
                    || text::job_what_if(&w),
                    || render::doc::job_what_if(&w),
                    || render::doc::job_what_if_ranks(&w),
                )
                .map(|out| render::printable(&out).into_owned());
            }
            if a.straggler.is_some() {
                return Err(Error::usage(
                    "--straggler is for a rank set: give several rank traces or a folder of them",
                ));
            }
            let job = matches!(inputs.what, What::Ranks(_));
            let (chosen, mut notes) = inputs.choose(a.rank, Reads::OneRank)?;
            if let Some(n) = a.rank.filter(|_| job) {
                notes.push(input::rank_alone(n, &a.trace.display().to_string()));
            }
            for n in &notes {
                said(&format!("note: {n}"));
            }
            let Chosen::One(path) = chosen else {
                return Err(Error::failed("a job where one rank was asked for"));
            };
            if a.all {
                if request != Request::default() {
                    return Err(Error::usage("--all lists the standard changes: give it alone"));
                }
                let w = lens::whatif::all(&load(&path)?.profile)?;
                return emit_all(&w);
            }
            // A trace's step model answers any change; a profile's, its
            // standard ones, else the trace beside it.
            let with_model = |path: &Path| -> Result<Loaded> {
                let opts =
                    LoadOptions { read: read.clone(), keep_model: true, ..Default::default() };
                let loaded = input::load(path, opts)?;
                for n in &loaded.notices {
                    said(&format!("warning: {n}"));
                }
                Ok(loaded)
            };
            let loaded = with_model(&path)?;
            let p = &loaded.input.profile;
            let w = match lens::whatif::what_if(p, loaded.model.as_ref(), &request) {
                Err(e)
                    if !loaded.input.from_trace && e.exit_code() == crate::error::exit::USAGE =>
                {
                    match crate::analysis::timeline::trace_of(&loaded.input, read.follow_recorded) {
                        Ok(trace) => {
                            let t = with_model(&trace)?;
                            lens::whatif::what_if(p, t.model.as_ref(), &request)?
                        }
                        Err(_) => return Err(e),
                    }
                }
                w => w?,
            };
            emit_doc(
                format,
                &w,
                || text::what_if(&w),
                || render::doc::what_if(&w),
                || render::doc::what_if_row(&w),
            )?
        }
        ReaderCommand::Merge(a) => {
            let output = a.output.as_path();
            // Refused before the first pass reads the job, not after.
            crate::files::check_write_target(output)?;
            let crate::merge::Inputs { files, notes } =
                crate::merge::input_files(&a.traces, output)?;
            for n in &notes {
                said(&format!("note: {n}"));
            }
            let set = rank_set(&files, &a.set)?;
            if let Some(r) = set.ranks.iter().find(|r| !r.input.from_trace) {
                return Err(Error::usage(format!(
                    "{} is a profile, which keeps no events: merge needs the rank traces themselves",
                    r.input.path.display()
                )));
            }
            // A long write: Ctrl-C removes its temporary file too.
            crate::tempfiles::remove_on_signal().map_err(|e| {
                Error::failed(format!("cannot install the signal handler: {e}")).caused_by(e)
            })?;
            let m =
                crate::merge::merge(&set, output, !a.no_align, &read.with_progress(Progress::Off))?;
            for n in &m.notes {
                said(&format!("note: {n}"));
            }
            if a.json { render::json(&m)? } else { text::merge(&m) }
        }
        ReaderCommand::Schema(a) => match &a.name {
            Some(name) => render::schema::text(name)
                .ok_or_else(|| Error::usage(format!("no document is named {name}")))?,
            None => render::schema::names()
                .map(|(name, command)| format!("{name:<12} {command}\n"))
                .collect(),
        },
        ReaderCommand::Memory(a) => {
            let format = a.output.format()?;
            check_table(a.table, format)?;
            let input = load_with(&one_rank(&a.trace, a.rank, said)?, true)?.input;
            let m = lens::memory::memory(&input.profile);
            emit(
                format,
                &m,
                || text::memory(&m),
                || table::memory(&m, a.table.unwrap_or_default()),
            )?
        }
    };
    // Names come from the trace: no raw control characters on a terminal.
    Ok(render::printable(&out).into_owned())
}

/// The rank a trace's `--write-parquet` tables are written as: `--rank`,
/// else `distributedInfo.rank`, else the file name's `rank3`/`worker3`,
/// else 0 (said on stderr, since ranks written as 0 replace each other).
fn parquet_rank(given: Option<u32>, input: &Input) -> u32 {
    let recorded = input.profile.distributed.as_ref().and_then(|d| d.rank);
    let named = ranks::rank_from_name(&input.path);
    match (given, recorded.or(named)) {
        (Some(r), Some(t)) if r != t => {
            say(&format!(
                "note: --rank {r} given; the trace says rank {t}: its tables are written as rank {r}"
            ));
            r
        }
        (Some(r), _) | (None, Some(r)) => r,
        (None, None) => {
            say(
                "note: the trace names no rank (no distributedInfo.rank, no rank/worker number in its name): its tables are written as rank 0; give --rank N",
            );
            0
        }
    }
}

/// Writes to stdout, treating a closed pipe (`| head`) as success.
pub fn print_stdout(s: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let res = out
        .write_all(s.as_bytes())
        .and_then(|_| if s.ends_with('\n') { Ok(()) } else { out.write_all(b"\n") })
        .and_then(|_| out.flush());
    match res {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::failed(format!("cannot write to stdout: {e}")).caused_by(e))
        }
        _ => Ok(()),
    }
}
