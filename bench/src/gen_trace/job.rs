//! A distributed job (`--ranks N`): one trace per rank into the `--out`
//! folder, on one shared clock, each with `distributedInfo` and the NCCL
//! kernels' collective arguments; and what the job holds, in
//! `<folder>.expect.json`. The ranks share the seed, so they run the same
//! model and draw the same numbers; one may be the straggler, which runs an
//! extra kernel per step in one phase (`extra`, drawing nothing from the
//! RNG) or stretches its last kernel before each step's first all-reduce,
//! which every rank's all-reduce waits for (`stretch`).

use anyhow::{Context, Result};
use serde::Serialize;

use crate::model::{Model, PHASES};
use crate::rng::Rng;
use crate::{Cli, SlowMode, generate, sidecar_path};

/// One rank of a generated job.
#[derive(Debug, Clone, Copy)]
pub(super) struct JobSpec {
    pub(super) rank: u32,
    pub(super) world: u32,
    /// (phase index, ns) of the extra kernel per step.
    pub(super) slow: Option<(usize, i64)>,
    /// `--slow-mode stretch`: ns the straggler's kernel is stretched by
    /// (set on every rank: all synchronise at the first all-reduce) and
    /// whether this rank is the straggler.
    pub(super) stretch: Option<(i64, bool)>,
}

/// What a generated job holds, written to `<folder>.expect.json`.
#[derive(Debug, Serialize)]
struct JobTruth {
    ranks: u32,
    slow_rank: Option<u32>,
    slow_mode: SlowMode,
    slow_phase: String,
    slow_ms: Option<f64>,
    slow_kernel: &'static str,
    steps: u64,
    allreduces_per_step: u64,
    /// `stretch`: the other ranks' waits for the straggler at the
    /// all-reduces, summed, per step (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    wait_caused_ms_per_step: Option<f64>,
    /// `stretch`: the kernel stretched (the straggler's last before that
    /// all-reduce).
    #[serde(skip_serializing_if = "Option::is_none")]
    stretched_kernel: Option<String>,
}

/// The extra kernel a straggler runs.
pub(super) const SLOW_KERNEL: &str = "straggler_spin_kernel(float*, int)";

/// `--ranks N`: one trace per rank into the `--out` folder, and what the
/// job holds in `<folder>.expect.json`.
pub(super) fn generate_job(cli: &Cli) -> Result<()> {
    let phase = PHASES
        .iter()
        .position(|p| *p == cli.slow_phase)
        .with_context(|| format!("--slow-phase: one of {}", PHASES.join(", ")))?;
    if let Some(r) = cli.slow_rank
        && r >= cli.ranks
    {
        anyhow::bail!("--slow-rank {r}: the job has ranks 0..{}", cli.ranks - 1);
    }
    std::fs::create_dir_all(&cli.out)
        .with_context(|| format!("cannot create {}", cli.out.display()))?;
    let stretch = (cli.slow_mode == SlowMode::Stretch)
        .then(|| (cli.slow_ms.unwrap_or(0.0) * 1e6).round() as i64);
    let mut steps = None;
    // `extra`: the straggler last, the others deciding the step count from
    // --size. `stretch`: the straggler first, the others waiting for it.
    let mut order: Vec<u32> = (0..cli.ranks).filter(|r| Some(*r) != cli.slow_rank).collect();
    match (stretch, cli.slow_rank) {
        (Some(_), Some(r)) => order.insert(0, r),
        (_, r) => order.extend(r),
    }
    let (mut arrivals, mut waited_ns, mut stretched) = (Vec::new(), 0i64, None);
    for rank in order {
        let is_slow = cli.slow_rank == Some(rank);
        let slow = (is_slow && stretch.is_none())
            .then(|| (phase, (cli.slow_ms.unwrap_or(0.0) * 1e6).round() as i64));
        let spec = JobSpec { rank, world: cli.ranks, slow, stretch: stretch.map(|d| (d, is_slow)) };
        let name = format!("rank{rank}.json{}", if cli.gzip { ".gz" } else { "" });
        let t = generate(cli, &cli.out.join(&name), Some(spec), steps, &arrivals)?;
        steps = Some(t.steps);
        if is_slow {
            arrivals = t.arrivals;
            stretched = t.stretched;
        } else {
            waited_ns += t.waited_ns;
        }
        if !cli.quiet {
            eprintln!(
                "gen-trace: wrote {} ({} bytes uncompressed, {} steps)",
                cli.out.join(&name).display(),
                t.bytes,
                t.steps
            );
        }
    }
    let model = Model::build(&mut Rng::new(cli.seed));
    let n_steps = steps.unwrap_or(0);
    let truth = JobTruth {
        ranks: cli.ranks,
        slow_rank: cli.slow_rank,
        slow_mode: cli.slow_mode,
        slow_phase: cli.slow_phase.clone(),
        slow_ms: cli.slow_ms,
        slow_kernel: SLOW_KERNEL,
        steps: n_steps,
        allreduces_per_step: model.layers.iter().filter(|l| l.allreduce.is_some()).count() as u64,
        wait_caused_ms_per_step: stretch.map(|_| waited_ns as f64 / 1e6 / n_steps.max(1) as f64),
        stretched_kernel: stretched,
    };
    let side = sidecar_path(&cli.out);
    std::fs::write(&side, serde_json::to_string_pretty(&truth)? + "\n")
        .with_context(|| format!("cannot write {}", side.display()))?;
    Ok(())
}
