//! `gen-trace`: writes a realistic PyTorch profiler (Kineto) Chrome trace of
//! any size, for benchmarking the trace readers without committing large
//! files.
//!
//! The trace imitates what `torch.profiler` writes for a CNN training loop on
//! one GPU (compare `tests/fixtures/traces/hta_nccl_a100_2024` and
//! `hta_trace_diff_a100_2022`), with two streams: compute (7) and NCCL (24).
//! Beside it, `<out>.expect.json` holds the ground truth of what the
//! analysis must find, computed from the generator's own events, never from
//! the analysis.
//!
//! Memory stays constant whatever the size: the generator is deterministic
//! for a seed, so it runs three times over the same steps — once writing the
//! CPU section (and counting the bytes of the rest to know where to stop),
//! once writing the GPU section, once the GPU annotations — holding one step
//! at a time.
//!
//! One module per stage: `rng` (the seeded randomness), `model` (the CNN
//! and the kernels it launches), `generator` (one step's events, with
//! `events` their types), `truth` (the ground truth), `render` (the bytes,
//! in the Kineto layout), `job` (`--ranks`: a distributed job and its
//! straggler); here, the command line and the three passes.

mod events;
mod generator;
mod job;
mod model;
mod render;
mod rng;
mod truth;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use flate2::Compression;
use flate2::write::GzEncoder;
use serde::Serialize;

use generator::Gen;
use job::JobSpec;
use model::DEVICE_NAME;
use render::{Out, Renderer, TRAILER, header, metadata, sized};
use truth::Truth;

#[derive(Parser, Debug)]
#[command(
    name = "gen-trace",
    about = "Write a realistic PyTorch/Kineto Chrome trace of a given size"
)]
struct Cli {
    /// Target size of the uncompressed JSON: 2MB, 100MB, 1GB, 1.5GiB, 500000 (bytes).
    /// Decimal units (MB = 10^6); KiB/MiB/GiB are binary. The result lands
    /// within one training step (~0.4 MB) above the target.
    #[arg(long, value_parser = parse_size)]
    size: u64,
    /// Output file (`.json`, or anything with --gzip).
    #[arg(long)]
    out: PathBuf,
    /// Gzip the output (the size still counts uncompressed bytes).
    #[arg(long)]
    gzip: bool,
    /// Seed: the same seed and size give the same file, byte for byte.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print nothing but errors.
    #[arg(long, short)]
    quiet: bool,
    /// A distributed job of N ranks: `--out` is a folder that receives
    /// `rank<r>.json[.gz]`, each with `distributedInfo` and the NCCL
    /// kernels' collective arguments, on one shared clock.
    #[arg(long, default_value_t = 1)]
    ranks: u32,
    /// The straggler: this rank runs one extra kernel per step …
    #[arg(long, requires = "slow_ms")]
    slow_rank: Option<u32>,
    /// … of this many ms …
    #[arg(long)]
    slow_ms: Option<f64>,
    /// … in this phase. In `optimizer` (the default) no communication runs,
    /// so the extra time is exactly the rank's extra compute; elsewhere it
    /// shifts kernels against the all-reduces.
    #[arg(long, default_value = "optimizer")]
    slow_phase: String,
    /// How the straggler is slow: `extra` runs the extra kernel above;
    /// `stretch` makes its last kernel before each step's first all-reduce
    /// run `--slow-ms` longer, and every rank's first all-reduce wait for
    /// its gradients, so the others wait that long inside it, as NCCL
    /// makes them (`--slow-phase` does not apply).
    #[arg(long, value_enum, default_value_t = SlowMode::Extra)]
    slow_mode: SlowMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
enum SlowMode {
    Extra,
    Stretch,
}

fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("not a size: {s:?} (try 100MB, 1GB)"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        u => return Err(format!("unknown size unit {u:?} (use B, KB, MB, GB, KiB, MiB, GiB)")),
    };
    let v = n * mult;
    // NaN is refused too.
    if v.is_nan() || v < 1.0 {
        return Err(format!("size must be positive: {s:?}"));
    }
    Ok(v as u64)
}

/// Writes one trace to `path` in the three passes above; returns its
/// ground truth.
/// `steps`: exactly this many steps (the ranks of a job), else as many as `--size` takes.
/// `wait_for`: under `--slow-mode stretch`, the straggler's all-reduces
/// (start, dur), which the other ranks wait for.
fn generate(
    cli: &Cli,
    path: &Path,
    job: Option<JobSpec>,
    steps_wanted: Option<u64>,
    wait_for: &[(i64, i64)],
) -> Result<Truth> {
    let new_gen = || {
        let mut g = Gen::new(cli.seed, job);
        g.wait_for = wait_for.to_vec();
        g
    };
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let buffered = BufWriter::with_capacity(1 << 20, file);
    let w: Box<dyn Write> = if cli.gzip {
        Box::new(GzEncoder::new(buffered, Compression::default()))
    } else {
        Box::new(buffered)
    };
    let mut out = Out::new(w);
    let mut buf = Vec::with_capacity(4096);
    let mut errors: Option<anyhow::Error> = None;
    macro_rules! emit {
        ($out:expr, $errors:expr) => {
            |b: &[u8]| {
                if $errors.is_none() {
                    if let Err(e) = $out.event(b) {
                        $errors = Some(e);
                    }
                }
            }
        };
    }

    // Pass 1: the CPU section; count the bytes of the rest to know when to stop.
    out.raw(header(DEVICE_NAME, job).as_bytes())?;
    let mut g = new_gen();
    let mut r = Renderer::default();
    let mut rest_bytes: u64 = 0;
    let meta_bytes: u64 = metadata(&g, g.start_ts).iter().map(|s| s.len() as u64 + 2).sum::<u64>()
        + TRAILER.len() as u64;
    g.prelude();
    r.cpu(&mut g, emit!(out, errors), &mut buf);
    r.gpu(&g, sized(&mut rest_bytes), &mut buf);
    let mut steps = 0u64;
    loop {
        g.step();
        steps += 1;
        r.cpu(&mut g, emit!(out, errors), &mut buf);
        r.gpu(&g, sized(&mut rest_bytes), &mut buf);
        r.annotations(&g, sized(&mut rest_bytes), &mut buf);
        if let Some(e) = errors.take() {
            return Err(e);
        }
        let enough = match steps_wanted {
            Some(n) => steps >= n,
            None => steps >= 2 && out.bytes + rest_bytes + meta_bytes + 8_000 >= cli.size,
        };
        if enough {
            break;
        }
    }
    g.epilogue();
    r.cpu(&mut g, emit!(out, errors), &mut buf);
    let end_ts = g.now.max(g.stream_free[0]).max(g.stream_free[1]) + 5_000;
    let mut truth = std::mem::take(&mut g.truth);
    truth.arrivals = std::mem::take(&mut g.arrivals);
    truth.waited_ns = g.waited_ns;
    truth.stretched =
        g.stretched.map(|k| g.model.names[g.model.kernels[k].name as usize].0.clone());
    let model_names: Vec<bool> = g.model.names.iter().map(|(_, tc)| *tc).collect();
    drop(g);

    // Pass 2: the GPU section (runtime calls, kernels, copies, flows).
    let mut g = new_gen();
    g.prelude();
    r.gpu(&g, emit!(out, errors), &mut buf);
    for _ in 0..steps {
        g.step();
        r.gpu(&g, emit!(out, errors), &mut buf);
        if let Some(e) = errors.take() {
            return Err(e);
        }
    }
    g.epilogue();
    r.gpu(&g, emit!(out, errors), &mut buf);

    // Pass 3: GPU-side annotations, then metadata.
    let mut g = new_gen();
    g.prelude();
    for _ in 0..steps {
        g.step();
        r.annotations(&g, emit!(out, errors), &mut buf);
        if let Some(e) = errors.take() {
            return Err(e);
        }
    }
    for m in metadata(&g, end_ts) {
        out.event(m.as_bytes())?;
    }
    out.raw(TRAILER.as_bytes())?;
    if let Some(e) = errors.take() {
        return Err(e);
    }
    out.w.flush()?;
    drop(out.w);

    // Ground truth.
    truth.gzip = cli.gzip;
    truth.bytes = out.bytes;
    truth.events = out.events;
    truth.events_by_kind = out.by_kind;
    truth.finish();
    debug_assert!(truth.names.iter().all(|&i| (i as usize) < model_names.len()));
    Ok(truth)
}

fn sidecar_path(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".expect.json");
    PathBuf::from(s)
}

fn main() {
    let cli = Cli::parse();
    if cli.ranks > 1 {
        if let Err(e) = job::generate_job(&cli) {
            eprintln!("gen-trace: {e:#}");
            std::process::exit(1);
        }
        return;
    }
    let t0 = Instant::now();
    match generate(&cli, &cli.out, None, None, &[]) {
        Ok(truth) => {
            let side = sidecar_path(&cli.out);
            let json = serde_json::to_string_pretty(&truth).expect("truth serializes");
            if let Err(e) = std::fs::write(&side, json + "\n") {
                eprintln!("gen-trace: cannot write {}: {e}", side.display());
                std::process::exit(1);
            }
            if !cli.quiet {
                let secs = t0.elapsed().as_secs_f64();
                eprintln!(
                    "gen-trace: wrote {} ({} bytes uncompressed, {} events, {:.1} MB/s{})",
                    cli.out.display(),
                    truth.bytes,
                    truth.events,
                    truth.bytes as f64 / 1e6 / secs,
                    if cli.gzip { ", gzip" } else { "" }
                );
                eprintln!(
                    "gen-trace: steps {} (ProfilerStep#{}..#{}), kernels {} ({:.2}/step, {} unique), total kernel time {:.3} ms ({:.3} ms/step), GPU busy {:.3} ms/step, util {:.3}, ops {:.2}/step",
                    truth.steps,
                    truth.first_step,
                    truth.first_step + truth.steps.saturating_sub(1),
                    truth.kernels,
                    truth.kernels_per_step,
                    truth.unique_kernels,
                    truth.kernel_ns as f64 / 1e6,
                    truth.kernel_ms_per_step,
                    truth.gpu_busy_ms_per_step,
                    truth.gpu_util,
                    truth.ops_per_step
                );
                eprintln!("gen-trace: ground truth in {}", side.display());
            }
        }
        Err(e) => {
            eprintln!("gen-trace: {e:#}");
            let _ = std::fs::remove_file(&cli.out);
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("100MB").unwrap(), 100_000_000);
        assert_eq!(parse_size("1GB").unwrap(), 1_000_000_000);
        assert_eq!(parse_size("2MiB").unwrap(), 2 << 20);
        assert_eq!(parse_size("1.5kb").unwrap(), 1500);
        assert_eq!(parse_size("123").unwrap(), 123);
        assert!(parse_size("12XB").is_err());
        assert!(parse_size("0").is_err());
    }
}
