//! Plain-text renderings, laid out after the reference transcript and made
//! clearer where it was not (units, n/a instead of "?", notes at the end).

use std::fmt::Write;

use serde_json::Value;

use crate::lens::capture::{Capture, Detail};
use crate::lens::collectives::Collectives;
use crate::lens::compare::{Comparison, MetricDelta, RowDelta, RowStatus, Unit};
use crate::lens::gate::{GateUnit, GateVerdict};
use crate::lens::get::Got;
use crate::lens::job::{Job, JobComparison, Straggler, StragglerRule, Why};
use crate::lens::kernels::{JobKernels, Kernels};
use crate::lens::memory::Memory;
use crate::lens::modules::Modules;
use crate::lens::ops::Ops;
use crate::lens::phases::Phases;
use crate::lens::summary::Summary;
use crate::lens::tree::Tree;
use crate::lens::whatif::{JobWhatIf, Model, WhatIf, WhatIfAll};
use crate::profile::{Achieved, DeviceMemory, Efficiency, LeadKind, Mode, RooflineBound};

/// `12.3456` → "12.35"; integers print without decimals.
pub fn num(v: f64, digits: usize) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{v:.0}") } else { format!("{v:.digits$}") }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| num(v, digits))
}

/// A memory size given in MB (10⁶ bytes): in GB from 10 GB on, so that a
/// 192 GB device reads as one (`191.6 GB`, not `191628.7 MB`).
pub fn size_mb(mb: f64) -> String {
    if mb.abs() >= 10_000.0 {
        format!("{} GB", num(mb / 1000.0, 1))
    } else {
        format!("{} MB", num(mb, 1))
    }
}

/// `n thing`/`n things`: a count with its noun.
pub fn count(n: impl Into<f64>, noun: &str) -> String {
    let n = n.into();
    format!("{} {noun}{}", num(n, 0), if n == 1.0 { "" } else { "s" })
}

pub fn pct(frac: f64) -> String {
    format!("{:.0}%", frac * 100.0)
}

/// One side of a compared metric, in its unit.
pub fn metric_value(m: &MetricDelta, v: Option<f64>) -> String {
    match (v, m.unit) {
        (None, _) => "n/a".to_string(),
        (Some(v), Unit::Fraction) => pct(v),
        (Some(v), Unit::Percent) => format!("{v:.1}%"),
        (Some(v), Unit::Count) => num(v, 2),
        (Some(v), unit) => format!("{} {unit}", num(v, 3)),
    }
}

pub fn throughput(img_per_s: Option<f64>, std: Option<f64>, n: u32) -> String {
    match (img_per_s, std) {
        (Some(v), Some(s)) if n > 1 => format!("{} ± {} (n={n}) img/s", num(v, 2), num(s, 2)),
        (Some(v), _) => format!("{} img/s", num(v, 2)),
        (None, _) => "n/a img/s".to_string(),
    }
}

pub fn summary(s: &Summary) -> String {
    let mut o = String::new();
    let model = s.model.as_deref().unwrap_or("n/a");
    let cpu = s.cpu_run();
    let work = match s.threads() {
        _ if !cpu => format!(
            "{} kernels/step @ ~{} us",
            num(s.figures.kernels_per_step, 1),
            num(s.figures.mean_kernel_us.round(), 0)
        ),
        Some(1) => "CPU, 1 thread".to_string(),
        Some(n) => format!("CPU, {n} threads"),
        None => "CPU".to_string(),
    };
    let _ = writeln!(
        o,
        "model {model}  |  {}  |  step {} ms  |  {work}",
        throughput(s.figures.img_per_s, s.img_per_s_std, s.img_per_s_n),
        num(s.figures.step_ms, 2),
    );
    if let Some(l) = &s.figures.latency {
        let _ = writeln!(
            o,
            "latency  p50 {} ms | p90 {} ms | p99 {} ms  ({} samples)",
            num(l.p50_ms, 3),
            num(l.p90_ms, 3),
            num(l.p99_ms, 3),
            l.n
        );
    }
    if let Some(st) = &s.figures.stages_ms {
        let _ = writeln!(
            o,
            "stages   preprocess {} ms | forward {} ms | postprocess/NMS {} ms",
            opt(st.preprocess, 3),
            opt(st.forward, 3),
            opt(st.postprocess, 3)
        );
    }
    if !cpu {
        let vram = s.figures.peak_vram_mb.map_or_else(|| "n/a".to_string(), size_mb);
        let _ = writeln!(
            o,
            "GPU util {}  ({} ms busy)  |  Tensor Cores {:.0}%  |  peak VRAM {vram}  |  memcpy {} ms",
            pct(s.figures.gpu_util),
            num(s.figures.gpu_busy_ms_per_step, 2),
            s.figures.tensorcore_pct,
            num(s.figures.memcpy_ms_per_step, 3)
        );
    }
    if s.figures.gpu_util_raw > s.figures.gpu_util + 0.005 {
        let _ = writeln!(
            o,
            "streams overlap: kernel time sums to {} of the window (concurrency, counted once above)",
            pct(s.figures.gpu_util_raw)
        );
    }
    let dataload = match (s.figures.dataload_ms, s.figures.dataload_frac) {
        (Some(d), Some(f)) if s.mode == Mode::Training => {
            Some(format!("dataload {} ms ({})", num(d, 2), pct(f)))
        }
        _ => None,
    };
    let and_dataload = dataload.as_ref().map(|d| format!("  |  {d}")).unwrap_or_default();
    let graphs = match (s.extras.graph_launches_per_step, s.extras.graph_replay_ms_per_step) {
        (Some(g), Some(ms)) => {
            let all: f64 = s.categories.iter().map(|c| c.ms_per_step).sum();
            format!(
                " ({} CUDA/HIP graph launches replaying their kernels: {} ms/step, {} of the kernel time, {})",
                num(g, 1),
                num(ms, 2),
                pct(if all > 0.0 { ms / all } else { 0.0 }),
                graph_attribution(ms, s.extras.graph_replay_attributed_ms_per_step)
            )
        }
        (Some(g), None) => {
            format!(" ({} CUDA/HIP graph launches replaying their kernels)", num(g, 1))
        }
        _ => String::new(),
    };
    match s.extras.host_in_ops_frac {
        Some(f) => {
            let _ = writeln!(
                o,
                "CPU ops   {} of the step inside framework ops, {} between them{and_dataload}",
                pct(f),
                pct(1.0 - f)
            );
        }
        // A CPU profile without its trace's op times (LibreYOLO's own).
        None if cpu => {
            if let Some(d) = dataload {
                let _ = writeln!(o, "{d}");
            }
        }
        None => {
            let _ = writeln!(
                o,
                "host overhead {} ms/step  |  {} kernel launches/step{graphs}{and_dataload}",
                num(s.figures.host_overhead_ms_per_step, 2),
                num(s.figures.launches_per_step, 1)
            );
        }
    }
    if let (Some(c), Some(e)) =
        (s.extras.comm_ms_per_step.filter(|c| *c > 0.0), s.extras.comm_exposed_ms_per_step)
    {
        let _ = writeln!(
            o,
            "communication {} ms/step  |  exposed {} ms  |  {}% overlapped by compute",
            num(c, 3),
            num(e, 3),
            num(s.extras.comm_overlap_pct.unwrap_or(0.0), 1)
        );
    }
    let _ = writeln!(
        o,
        "window   {}, {} ms  |  {}",
        count(s.figures.window.real_steps as f64, "step"),
        num(s.figures.window.wall_ms, 1),
        s.mode
    );
    if let Some(steps) = &s.steps {
        let _ = writeln!(o, "{}", step_line(steps, 40));
    }
    let named: Vec<String> = s
        .devices
        .iter()
        .filter(|d| d.vendor.is_some() || d.name.is_some())
        .map(|d| {
            let what = [d.vendor.as_deref(), d.name.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            // "AMD AMD Instinct MI210" reads badly: drop the repeated vendor.
            let what = match (&d.vendor, &d.name) {
                (Some(v), Some(n)) if n.to_lowercase().starts_with(&v.to_lowercase()) => n.clone(),
                _ => what,
            };
            format!("{}: {what}", d.device)
        })
        .collect();
    if !named.is_empty() {
        let _ = writeln!(o, "devices  {}", named.join("  |  "));
    }
    if let Some(how) = &s.extras.phases_inferred {
        let _ = writeln!(o, "phases   inferred: {how}");
    }
    if !s.trustworthy {
        let _ = writeln!(
            o,
            "** UNTRUSTWORTHY: taken under VRAM pressure; utilisation and throughput here are unreliable **"
        );
    }
    if let Some(w) = &s.contended {
        let _ = writeln!(o, "** {w} **");
    }
    if let Some(idle) = &s.idle {
        for line in idle_lines(idle, 2) {
            let _ = writeln!(o, "{line}");
        }
    }
    if let Some(line) = s.efficiency.as_ref().and_then(efficiency_line) {
        let _ = writeln!(o, "{line}");
    }
    if let Some(m) = &s.step_model {
        let _ = writeln!(o, "critical path  {}", path_line(&m.critical_path, 4));
        let levers: Vec<String> = m
            .scenarios
            .iter()
            .filter(|r| r.saved_ms_per_step > 0.0)
            .take(3)
            .map(|r| {
                format!("{} −{} ms ({:.1}%)", r.flags, num(r.saved_ms_per_step, 3), r.saved_pct)
            })
            .collect();
        if !s.levers.is_empty() {
            // The levers the trace supports, by the saving the model
            // projects (analysis.md §16); the what-ifs behind them in --json.
            let shown: Vec<String> = s
                .levers
                .iter()
                .take(3)
                .map(|l| {
                    format!("{} −{} ms ({:.1}%)", l.lever, num(l.saves_ms_per_step, 3), l.saves_pct)
                })
                .collect();
            let _ =
                writeln!(o, "levers         {}  (--json: evidence, what-if)", shown.join(" · "));
        } else if !levers.is_empty() {
            let _ = writeln!(o, "what-if        {}  (what-if --all)", levers.join(" · "));
        }
    }
    for h in &s.health {
        let _ = writeln!(o, "health  {} {}: {}", h.severity, h.check, h.says);
    }
    let _ = writeln!(o, ">> {}: {}", s.bound.as_str().to_uppercase(), s.bound_why);
    if s.categories.is_empty() && s.top_kernels.is_empty() {
        // The reference printed two empty headings here.
        let _ = writeln!(o, "kernels  {}", crate::lens::kernels::NO_KERNELS);
    } else {
        let _ = writeln!(o, "kernel mix:");
        for c in &s.categories {
            let _ =
                writeln!(o, "  {:<17} {:5.1}%   {} ms/step", c.name, c.pct, num(c.ms_per_step, 3));
        }
        let _ = writeln!(o, "top kernels/step:");
        for k in &s.top_kernels {
            let tc = if k.tensorcore { " [TC]" } else { "" };
            let _ = writeln!(
                o,
                "  {:5.1}%  {:>8} ms  x{:<5} {}{tc}",
                k.pct_of_gpu,
                num(k.ms_per_step, 3),
                num(k.count_per_step, 1),
                k.kernel
            );
        }
    }
    if s.streams.len() > 1 {
        let _ = writeln!(o, "streams:");
        for st in &s.streams {
            let _ = writeln!(o, "  {}", stream_line(st));
        }
    }
    // Notes (`s.warnings`) go to stderr: the caller prints them.
    o
}

/// The idle account as the summary and the explorer print it: the total,
/// then each cause with its `places` largest places.
pub fn idle_lines(idle: &crate::profile::IdleAccount, places: usize) -> Vec<String> {
    let lead = if idle.before_first_kernel_ms_per_step > 0.0 {
        format!(", {} before the first kernel", num(idle.before_first_kernel_ms_per_step, 2))
    } else {
        String::new()
    };
    let mut out = vec![format!(
        "idle     {} ms/step in {} gaps/step{lead} (device {})",
        num(idle.ms_per_step, 2),
        num(idle.gaps_per_step, 1),
        idle.device
    )];
    for c in &idle.causes {
        out.push(format!(
            "  {:<11} {:>9} ms  {}",
            c.cause.as_str(),
            num(c.ms_per_step, 3),
            c.cause.meaning()
        ));
        for p in c.places.iter().take(places) {
            out.push(format!("  {:<11} {:>9}     {}", "", num(p.ms_per_step, 3), p.name));
        }
    }
    // The other devices of a multi-GPU trace: their idle and its causes.
    for d in idle.devices.iter().filter(|d| d.device != idle.device) {
        let causes: Vec<String> = d
            .causes
            .iter()
            .take(3)
            .map(|c| format!("{} {}", c.cause.as_str(), num(c.ms_per_step, 2)))
            .collect();
        out.push(format!(
            "  device {}: idle {} ms/step — {}",
            d.device,
            num(d.ms_per_step, 2),
            causes.join(", ")
        ));
    }
    out
}

/// One stream's figures, as the summary and the explorer print them.
pub fn stream_line(st: &crate::profile::StreamRow) -> String {
    format!(
        "device {} stream {:<4} {:>5} busy  {} ms/step  {} kernels/step",
        st.device,
        st.stream,
        pct(st.util),
        num(st.busy_ms_per_step, 3),
        num(st.kernels_per_step, 1)
    )
}

pub fn get(g: &Got) -> String {
    match g {
        Got::Names(names) => {
            let mut o = String::from("available metrics:\n");
            for n in &names.metrics {
                let _ = writeln!(o, "  {n}");
            }
            o
        }
        Got::Value(m) => format!("{}\n", scalar(&m.value)),
    }
}

/// A metric value as a script wants it: bare strings, `null` for missing.
pub fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub fn phases(p: &Phases) -> String {
    // GPU idle per phase, where the profile has the idle account.
    let idle = p.phases.iter().any(|r| r.idle_ms_per_step.is_some());
    let idle_head = if idle { format!(" {:>9}", "idle_ms") } else { String::new() };
    let mut o = format!(
        "{:<12} {:>9} {:>9}{idle_head} {:>9} {:>9}\n",
        "phase", "gpu_ms", "wall_ms", "kernels", "ops"
    );
    for (r, b) in p.phases.iter().zip(p.bars()) {
        let idle_cell = if idle {
            format!(" {:>9}", r.idle_ms_per_step.map_or("-".to_string(), |w| format!("{w:.2}")))
        } else {
            String::new()
        };
        let line = format!(
            "{:<12} {:>9} {:>9}{idle_cell} {:>9} {:>9}  {}",
            r.phase,
            format!("{:.2}", r.gpu_ms_per_step),
            r.wall_ms_per_step.map_or("-".to_string(), |w| format!("{w:.2}")),
            num(r.kernels_per_step, 1),
            num(r.ops_per_step, 1),
            bar(b, 20)
        );
        let _ = writeln!(o, "{}", line.trim_end());
    }
    if p.phases.is_empty() {
        o.push_str("(no phases: the trace has no step/<phase> ranges and no GPU work)\n");
    }
    if let Some(how) = &p.inferred {
        let _ = writeln!(o, "phases inferred: {how}");
    }
    o
}

pub fn kernels(k: &Kernels) -> String {
    if let Some(none) = k.none {
        return format!("kernels  {none}\n");
    }
    let priced = k.kernels.iter().any(|r| r.achieved.is_priced());
    let rates = if priced { RATES_HEADER } else { "" };
    let mut o =
        format!("{:>6} {:>9} {:>7} {rates}TC  kernel  [category]\n", "%GPU", "ms/step", "x/step");
    for r in &k.kernels {
        let _ = writeln!(
            o,
            "{:6.2} {:>9} {:>7} {} {}  {}  [{}]",
            r.pct_of_gpu,
            format!("{:.3}", r.ms_per_step),
            num(r.count_per_step, 1),
            if priced { rate_columns(&r.achieved) } else { String::new() },
            if r.tensorcore { "Y" } else { " " },
            r.kernel,
            r.category
        );
    }
    let scope = k.query.phase.as_deref().map_or(String::new(), |p| format!(" in phase {p}"));
    let _ = writeln!(
        o,
        "({} of {} kernels{scope} match; {} shown)",
        k.matched,
        k.total,
        k.kernels.len()
    );
    if let Some(ms) = k.graph_replay_ms_per_step {
        let _ =
            writeln!(o, "note: {}", graph_replay_note(ms, k.graph_replay_attributed_ms_per_step));
    }
    efficiency_notes(&mut o, &k.efficiency_notes);
    o
}

/// The summary's efficiency line (docs/analysis.md §13): the matrix work
/// against its peak, the GPU time far from its roofline, the priced share;
/// or why there are no such figures.
pub fn efficiency_line(e: &Efficiency) -> Option<String> {
    let parts = efficiency_parts(e);
    (!parts.is_empty()).then(|| format!("efficiency  {}", parts.join("; ")))
}

/// The efficiency line's parts, one finding each (the explorer shows one
/// per line).
pub fn efficiency_parts(e: &Efficiency) -> Vec<String> {
    let mut parts = Vec::new();
    if let (Some(m), Some(device)) = (&e.matrix, &e.device) {
        // A % of peak is the rate over the peak; the roofline share (which
        // judges memory-bound calls by the bandwidth) is said as such.
        let mut part = format!(
            "GEMM/conv/attention at {} TFLOP/s, {} of {device} {} peak ({} TFLOP/s), {:.0}% of its roofline (time-weighted)",
            num(m.tflops, 1),
            small_pct(m.pct_of_peak),
            m.format,
            num(m.peak_tflops, 1),
            m.pct_of_roofline,
        );
        if m.pct_of_matrix_time < MATRIX_TIME_SAID {
            part.push_str(&format!(
                ", over {} of the GEMM/conv/attention kernel time (the rest unpriced)",
                small_pct(m.pct_of_matrix_time)
            ));
        }
        parts.push(part);
    }
    if let Some(low) = e.below_30_pct_of_gpu {
        parts.push(format!("{low:.0}% of GPU time in ops below 30% of their roofline"));
    }
    if e.priced_calls > 0 {
        let unpriced: Vec<String> = e
            .unpriced_by_category
            .iter()
            .take(UNPRICED_SAID)
            .map(|u| {
                format!("{} {} ms ({:.0}%)", u.category, num(u.ms_per_step, 2), u.pct_of_category)
            })
            .collect();
        let unpriced = if unpriced.is_empty() {
            String::new()
        } else {
            format!(" (unpriced: {})", unpriced.join(", "))
        };
        parts.push(format!("{:.0}% of GPU time priced{unpriced}", e.modelled_pct_of_gpu));
    }
    parts.extend(e.notes.iter().cloned());
    parts
}

/// Categories named with their unpriced time on the efficiency line.
const UNPRICED_SAID: usize = 3;

/// Below this share of the matrix kernel time priced, the matrix headline
/// says what it rests on.
const MATRIX_TIME_SAID: f64 = 50.0;

/// A percentage, with a decimal below 10% ("0.2%", "3.5%", "15%").
fn small_pct(p: f64) -> String {
    if p < 9.95 { format!("{p:.1}%") } else { format!("{p:.0}%") }
}

/// The rate columns of the kernels and ops tables (docs/analysis.md §13).
const RATES_HEADER: &str = "TFLOP/s    TB/s  %peak   bound ";

fn rate_columns(a: &Achieved) -> String {
    if !a.is_priced() {
        return format!("{:>7} {:>7} {:>6} {:>7}", "-", "-", "-", "-");
    }
    format!(
        "{:>7} {:>7} {:>6} {:>7}",
        a.tflops.map_or_else(|| "-".to_string(), |v| format!("{v:.1}")),
        a.tbps.map_or_else(|| "-".to_string(), |v| format!("{v:.2}")),
        a.pct_of_peak.map_or_else(|| "-".to_string(), |p| format!("{p:.0}%")),
        a.roofline_bound.map_or("-", RooflineBound::as_str)
    )
}

/// Why the rate columns are missing or partial, as the tables say it.
/// What the kernel tables say of graph replays (docs/analysis.md §17).
pub fn graph_replay_note(ms: f64, attributed: Option<f64>) -> String {
    match attributed {
        None => format!(
            "{} ms/step of kernel time is in CUDA/HIP graph replays: captured earlier, launched by no op of this trace (no shapes or module for them; --graph-capture gives the capture trace)",
            num(ms, 2)
        ),
        Some(_) => format!(
            "{} ms/step of kernel time is in CUDA/HIP graph replays, {}",
            num(ms, 2),
            graph_attribution(ms, attributed)
        ),
    }
}

/// How much of the graph replays' kernel time the capture trace gave an
/// op (docs/analysis.md §17.1).
fn graph_attribution(ms: f64, attributed: Option<f64>) -> String {
    match attributed {
        None => "attributed to no op".to_string(),
        Some(a) => format!(
            "{} attributed to the ops that captured them ({} ms/step not)",
            pct(if ms > 0.0 { (a / ms).min(1.0) } else { 0.0 }),
            num((ms - a).max(0.0), 2)
        ),
    }
}

pub fn rates_note(note: &str) -> String {
    format!("rates: {note}")
}

fn efficiency_notes(o: &mut String, notes: &[String]) {
    for n in notes {
        let _ = writeln!(o, "{}", rates_note(n));
    }
}

/// `kernels` over a rank set: the mean row and where the ranks spread.
pub fn job_kernels(k: &JobKernels) -> String {
    let mut o = format!(
        "{} ranks; per kernel the mean over ranks, and the rank that spends the most\n",
        k.ranks.len()
    );
    let _ = writeln!(
        o,
        "{:>6} {:>9} {:>7} {:>9} {:>9} {:>5} TC  kernel  [category]",
        "%GPU", "ms/step", "x/step", "min", "max", "rank"
    );
    for r in &k.kernels {
        let m = &r.mean;
        let _ = writeln!(
            o,
            "{:6.2} {:>9} {:>7} {:>9} {:>9} {:>5}  {}  {}  [{}]",
            m.pct_of_gpu,
            format!("{:.3}", m.ms_per_step),
            num(m.count_per_step, 1),
            format!("{:.3}", r.min_ms_per_step),
            format!("{:.3}", r.max_ms_per_step),
            r.max_rank,
            if m.tensorcore { "Y" } else { " " },
            m.kernel,
            m.category
        );
    }
    let scope = k.query.phase.as_deref().map_or(String::new(), |p| format!(" in phase {p}"));
    let _ = writeln!(
        o,
        "({} of {} kernels{scope} match; {} shown)",
        k.matched,
        k.total,
        k.kernels.len()
    );
    o
}

/// `collectives`: per group the counts, per rank the waits, then the
/// collectives with the largest skew (all of them in `--json`).
pub fn collectives(c: &Collectives, top: usize) -> String {
    let mut o = String::new();
    let single = c.ranks.len() == 1;
    let world = c.world_size.map_or(String::new(), |w| format!(" of world size {w}"));
    let _ = writeln!(
        o,
        "{} collectives on {} rank{}{world}",
        c.collectives.len(),
        c.ranks.len(),
        if single { "" } else { "s" }
    );
    for g in &c.groups {
        let counts: Vec<String> = g.counts.iter().map(|(n, k)| format!("{k} {n}")).collect();
        let _ = writeln!(o, "  group {}: {}", g.group, counts.join(", "));
    }
    if !single {
        let _ = writeln!(
            o,
            "{:>6} {:>9} {:>13} {:>15} {:>9}",
            "rank", "wait ms", "last arrivals", "wait caused ms", "comm ms"
        );
        for r in &c.per_rank {
            let _ = writeln!(
                o,
                "{:>6} {:>9} {:>13} {:>15} {:>9}",
                r.rank,
                num(r.wait_ms, 3),
                r.last_arrivals,
                num(r.wait_caused_ms, 3),
                num(r.comm_ms, 3)
            );
        }
    }
    let rows = c.largest_skew_first();
    let shown = rows.len().min(top);
    let what = if single { "in order" } else { "largest skew first" };
    let _ = writeln!(o, "collectives ({what}; {shown} of {}):", rows.len());
    let _ = writeln!(
        o,
        "{:>9} {:>14} {:>5} {:>10} {:>9} {:>6} {:>11} {:>10} {:>10}",
        "at ms",
        "collective",
        "#",
        "MB",
        "skew us",
        "last",
        "transfer us",
        "algbw GB/s",
        "busbw GB/s"
    );
    for m in rows.into_iter().take(top) {
        let _ = writeln!(
            o,
            "{:>9} {:>14} {:>5} {:>10} {:>9} {:>6} {:>11} {:>10} {:>10}",
            num(m.at_ms, 3),
            m.collective,
            m.seq,
            m.bytes.map_or("n/a".to_string(), |b| num(b as f64 / 1e6, 3)),
            m.skew_us.map_or("n/a".to_string(), |s| num(s, 1)),
            m.last_rank.map_or("n/a".to_string(), |r| r.to_string()),
            num(m.duration_us, 1),
            m.algbw_gbps.map_or("n/a".to_string(), |b| num(b, 2)),
            m.busbw_gbps.map_or("n/a".to_string(), |b| num(b, 2)),
        );
    }
    o
}

pub fn ops(x: &Ops) -> String {
    let priced = x.ops.iter().any(|r| r.achieved.is_priced());
    let gpu = x.ops.iter().any(|r| r.gpu_ms_per_step.is_some());
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
    let mut o = format!("{:>6} {:>9} {:>9} {:>7}", "%cpu", "ms/step", "self ms", "x/step");
    if gpu {
        let _ = write!(o, " {:>9}", "GPU ms");
    }
    if priced {
        let _ = write!(o, " {RATES_HEADER} op  (shape of its costliest call)");
    } else {
        let _ = write!(o, "  op");
    }
    o.push('\n');
    for r in &x.ops {
        let _ = write!(
            o,
            "{:6.2} {:>9} {:>9} {:>7}",
            r.pct_of_cpu_ops,
            format!("{:.3}", r.ms_per_step),
            ms(r.self_ms_per_step),
            num(r.count_per_step, 1)
        );
        if gpu {
            let _ = write!(o, " {:>9}", ms(r.gpu_ms_per_step));
        }
        if priced {
            let shape = r.shape.as_deref().map_or(String::new(), |s| format!("  ({s})"));
            let _ = writeln!(o, " {}  {}{shape}", rate_columns(&r.achieved), r.op);
        } else {
            let _ = writeln!(o, "  {}", r.op);
        }
    }
    let scope = x.query.phase.as_deref().map_or(String::new(), |p| format!(" in phase {p}"));
    let _ = writeln!(o, "({} of {} ops{scope}; {} shown)", x.matched, x.total, x.ops.len());
    efficiency_notes(&mut o, &x.efficiency_notes);
    o
}

/// The kind of a tree node, in a few letters.
pub fn node_tag(kind: crate::profile::NodeKind) -> &'static str {
    use crate::profile::NodeKind as K;
    match kind {
        K::Phase => "phase",
        K::Annotation => "range",
        K::Module => "module",
        K::Frame => "py",
        K::Op => "op",
        K::Graph => "graph",
        K::Kernel => "kernel",
    }
}

pub fn tree(t: &Tree) -> String {
    let q = &t.query;
    let how = if q.bottom_up { "bottom-up (callers under each node)" } else { "top-down" };
    let scope = q.phase.as_deref().map_or(String::new(), |p| format!(", phase {p}"));
    // A CPU run has no kernel time: its tree by host time, without the
    // GPU's columns of zeros.
    let cpu = t.gpu_ms_per_step <= 0.0;
    let mut o = if cpu {
        format!(
            "call tree by {}, {how}{scope}: per step CPU {:.3} ms (no GPU kernels: host time)\n",
            q.by.as_str(),
            t.cpu_ms_per_step
        )
    } else {
        format!(
            "call tree by {}, {how}{scope}: per step GPU {:.3} ms, CPU {:.3} ms\n",
            q.by.as_str(),
            t.gpu_ms_per_step,
            t.cpu_ms_per_step
        )
    };
    if cpu {
        let _ = writeln!(
            o,
            "{:>9} {:>6} {:>9} {:>8}  {:<6} name",
            "CPU ms", "%cpu", "self ms", "x/step", "kind"
        );
    } else {
        let _ = writeln!(
            o,
            "{:>9} {:>6} {:>9} {:>9} {:>8} {:>8} {:>7}  {:<6} name",
            "GPU ms", "%gpu", "CPU ms", "self ms", "x/step", "kernels", "TFLOP/s", "kind"
        );
    }
    for r in &t.rows {
        let tflops = r.tflops.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"));
        // Phases and the forward scopes of backward ops are no calls.
        let calls = if r.calls_per_step > 0.0 { num(r.calls_per_step, 1) } else { "-".to_string() };
        let name = format!("{}{}", "  ".repeat(r.depth), r.name);
        let _ = if cpu {
            writeln!(
                o,
                "{:>9.3} {:>6.1} {:>9.3} {:>8}  {:<6} {name}",
                r.cpu_ms_per_step,
                r.pct_of_cpu,
                r.cpu_self_ms_per_step,
                calls,
                node_tag(r.kind),
            )
        } else {
            writeln!(
                o,
                "{:>9.3} {:>6.1} {:>9.3} {:>9.3} {:>8} {:>8} {:>7}  {:<6} {name}",
                r.gpu_ms_per_step,
                r.pct_of_gpu,
                r.cpu_ms_per_step,
                r.cpu_self_ms_per_step,
                calls,
                num(r.kernels_per_step, 1),
                tflops,
                node_tag(r.kind),
            )
        };
    }
    let view = (q.min_pct, q.depth, q.focus.as_deref());
    shown_footer(&mut o, "nodes shown", (t.rows.len(), t.hidden), view, &t.notes);
    o
}

pub fn modules(m: &Modules) -> String {
    // A CPU run has no kernel time: its modules by host time.
    let cpu = m.gpu_ms_per_step <= 0.0;
    let mut o = if cpu {
        format!(
            "modules, forward and backward: per step CPU {:.3} ms (no GPU kernels: host time)\n",
            m.cpu_ms_per_step
        )
    } else {
        format!(
            "modules, forward and backward: per step GPU {:.3} ms, {:.3} ms of it in no module\n",
            m.gpu_ms_per_step, m.outside_ms_per_step
        )
    };
    // A column for another phase only where a module has time in one.
    let other = !cpu && m.rows.iter().any(|r| r.other_gpu_ms_per_step > 0.0);
    let (unit, share) = if cpu { ("CPU ms", "%cpu") } else { ("GPU ms", "%gpu") };
    let _ = write!(o, "{:>9} {:>6} {:>9} {:>9} {:>8}", unit, share, "fwd ms", "bwd ms", "x/step");
    if !cpu {
        let _ = write!(o, " {:>7} {:>7}", "fwd TF", "bwd TF");
    }
    if other {
        let _ = write!(o, " {:>9}", "other ms");
    }
    let _ = writeln!(o, "  name");
    let tf = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"));
    for r in &m.rows {
        let calls = if r.calls_per_step > 0.0 { num(r.calls_per_step, 1) } else { "-".to_string() };
        let (all, pct, fwd, bwd) = if cpu {
            (r.cpu_ms_per_step, r.pct_of_cpu, r.forward_cpu_ms_per_step, r.backward_cpu_ms_per_step)
        } else {
            (r.gpu_ms_per_step, r.pct_of_gpu, r.forward_gpu_ms_per_step, r.backward_gpu_ms_per_step)
        };
        let _ = write!(o, "{all:>9.3} {pct:>6.1} {fwd:>9.3} {bwd:>9.3} {calls:>8}");
        if !cpu {
            let _ = write!(o, " {:>7} {:>7}", tf(r.forward_tflops), tf(r.backward_tflops));
        }
        if other {
            let _ = write!(o, " {:>9.3}", r.other_gpu_ms_per_step);
        }
        let tag = if r.kind == crate::profile::NodeKind::Annotation { " [annotation]" } else { "" };
        let _ = writeln!(o, "  {}{}{tag}", "  ".repeat(r.depth), r.name);
    }
    let q = &m.query;
    let view = (q.min_pct, q.depth, q.focus.as_deref());
    shown_footer(&mut o, "shown", (m.rows.len(), m.hidden), view, &m.notes);
    o
}

/// A tree view's last lines: how much it shows and hides, and why; its
/// notes.
fn shown_footer(
    o: &mut String,
    shown_what: &str,
    (shown, hidden): (usize, usize),
    (min_pct, depth, focus): (f64, Option<usize>, Option<&str>),
    notes: &[String],
) {
    let focus = focus.map_or(String::new(), |f| format!(", focus /{f}/"));
    let depth = depth.map_or(String::new(), |d| format!(", depth {d}"));
    let _ = writeln!(
        o,
        "({shown} {shown_what}, {hidden} hidden: under {min_pct}% of both totals{depth}{focus})"
    );
    for n in notes {
        let _ = writeln!(o, "note: {n}");
    }
}

fn change(c: Option<f64>) -> String {
    c.map_or(String::new(), |c| format!(" ({c:+.0}%)"))
}

pub fn compare(c: &Comparison) -> String {
    // The mode warning goes to stderr (see cli); stdout holds results only.
    let mut o = String::new();
    for m in &c.metrics {
        let show = |v: Option<f64>| metric_value(m, v);
        let sig = match m.significance.significant {
            Some(true) => format!("  [significant: {}]", m.significance.significance),
            Some(false) => format!("  [NOT significant: {}]", m.significance.significance),
            None if m.metric == "img_per_s" => format!("  [{}]", m.significance.significance),
            None => String::new(),
        };
        let _ = writeln!(
            o,
            "{:<14} {} -> {}{}{sig}",
            m.label,
            show(m.before),
            show(m.after),
            m.change_pts.map_or_else(|| change(m.change_pct), |p| format!(" ({p:+.1} pts)"))
        );
    }
    let _ = writeln!(o, "{:<14} {} -> {}", "verdict", c.bound[0], c.bound[1]);
    section(&mut o, "phases (ms/step)", &c.phases, 8);
    section(&mut o, "kernel mix (ms/step)", &c.categories, 8);
    section(&mut o, "GPU idle by cause (ms/step)", &c.idle, 8);
    section(&mut o, "kernels, largest changes (ms/step)", &c.kernels, 8);
    if !c.gates.is_empty() {
        let _ = writeln!(o, "gates:");
        for g in &c.gates {
            let unit = match g.unit {
                GateUnit::Percent => "%",
                GateUnit::Points => " pts",
                GateUnit::Absolute => "",
            };
            let verdict = match g.verdict {
                GateVerdict::Pass => "pass",
                GateVerdict::Fail => "FAIL",
                GateVerdict::Undecided => "undecided",
            };
            let _ = writeln!(
                o,
                "  {:<9} {}  {} -> {} ({:+}{unit}; limit {:+}{unit})  [{}]",
                verdict,
                g.gate,
                num(g.before, 3),
                num(g.after, 3),
                g.change,
                g.limit,
                g.significance
            );
        }
    }
    o
}

fn section(o: &mut String, title: &str, rows: &[RowDelta], limit: usize) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(o, "{title}:");
    for r in rows.iter().take(limit) {
        let status = match r.status {
            RowStatus::Faster => "faster",
            RowStatus::Slower => "slower",
            RowStatus::Same => "same",
            RowStatus::Appeared => "appeared",
            RowStatus::Disappeared => "disappeared",
        };
        let name = crate::analysis::kernels::short_name(&r.name);
        let _ = writeln!(
            o,
            "  {:<12} {:>9} -> {:<9}{:<8} {name}",
            status,
            opt(r.before_ms, 3),
            opt(r.after_ms, 3),
            change(r.change_pct)
        );
    }
    if rows.len() > limit {
        let _ = writeln!(o, "  … {} more (--json lists all)", rows.len() - limit);
    }
}

pub fn what_if(w: &WhatIf) -> String {
    let mut o = format!("what-if {}: {}\n", w.scenario, w.what);
    let source = match w.model {
        Model::StepModel => "re-timed on the trace's step model",
        Model::Stored => "the profile's own what-if (re-timed on its step model when it was made)",
    };
    let bound = w.saved_without_inferred_ms.map_or(String::new(), |b| {
        format!(" ({} ms without the waits the model inferred)", num(b, 3))
    });
    let _ = writeln!(
        o,
        "  takes away {} ms of work per step; saves {} ms{bound} ({source})",
        num(w.removes_ms_per_step, 3),
        num(w.saved_ms_per_step, 3)
    );
    let _ = writeln!(
        o,
        "  step   {} -> ~{} ms{}",
        opt(w.step_ms.now, 2),
        opt(w.step_ms.projected, 2),
        change(w.change_pct)
    );
    if let (Some(now), Some(p)) = (w.img_per_s.now, w.img_per_s.projected) {
        let c = if now > 0.0 { Some((p - now) / now * 100.0) } else { None };
        let _ = writeln!(o, "  img/s  {} -> ~{}{}", num(now, 2), num(p, 1), change(c));
    }
    for n in &w.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    let _ = writeln!(o, "  ({})", w.caveat);
    o
}

/// A rank set's what-if: each rank re-timed, the job's step.
pub fn job_what_if(w: &JobWhatIf) -> String {
    let mut o = format!("what-if {}: {}\n", w.scenario, w.what);
    let _ = writeln!(
        o,
        "  {:>5}  {:>9}  {:>9}  {:>9}  {:>9}",
        "rank", "step ms", "takes ms", "saves ms", "~ms"
    );
    for r in &w.ranks {
        let _ = writeln!(
            o,
            "  {:>5}  {:>9}  {:>9}  {:>9}  {:>9}",
            r.rank,
            num(r.step_ms, 3),
            num(r.removes_ms_per_step, 3),
            num(r.saved_ms_per_step, 3),
            num(r.projected_ms, 3)
        );
    }
    let _ = writeln!(
        o,
        "  job step (the slowest rank's)  {} -> ~{} ms{}",
        opt(w.job_step_ms.now, 2),
        opt(w.job_step_ms.projected, 2),
        change(w.change_pct)
    );
    for n in &w.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    let _ = writeln!(o, "  ({})", w.caveat);
    o
}

/// `what-if --all`: the standard changes, largest saving first, and the
/// critical path they act on.
pub fn what_if_all(w: &WhatIfAll) -> String {
    let mut o = format!(
        "what-if --all: the standard changes re-timed on the step model ({} step{} modelled, step {} ms)\n",
        w.steps_modelled,
        if w.steps_modelled == 1 { "" } else { "s" },
        num(w.step_ms, 2)
    );
    let _ = writeln!(o, "  {:>9}  {:>6}  {:>9}  change", "saves ms", "step", "takes ms");
    for r in &w.scenarios {
        let _ = writeln!(
            o,
            "  {:>9}  {:>5}%  {:>9}  {}: {}",
            num(r.saved_ms_per_step, 3),
            format!("{:.1}", -r.saved_pct),
            num(r.removes_ms_per_step, 3),
            r.flags,
            r.what
        );
    }
    let _ = writeln!(o, "critical path per step: {}", path_line(&w.critical_path, 8));
    through(&mut o, &w.through);
    for n in &w.notes {
        let _ = writeln!(o, "note: {n}");
    }
    let _ = writeln!(o, "({})", w.caveat);
    o
}

/// The path through a job's ranks, from the job's last work back: a line
/// per leg, and where it waited for the next.
fn through(o: &mut String, legs: &[crate::lens::job::PathLeg]) {
    for (k, leg) in legs.iter().enumerate() {
        let head = if k == 0 { "through  from the job's last work:" } else { "        " };
        let _ = writeln!(
            o,
            "{head} rank {} {} ms: {}",
            leg.rank,
            num(leg.ms_per_step, 3),
            path_line(&leg.parts, 3)
        );
        if let Some(w) = &leg.waits_at {
            let _ = writeln!(
                o,
                "           ← waited {} ms at {} #{} ({}) for",
                num(w.wait_ms, 3),
                w.collective,
                w.seq,
                w.group
            );
        }
    }
}

/// The critical path's largest parts on one line.
pub fn path_line(parts: &[crate::profile::PathShare], top: usize) -> String {
    let shown: Vec<String> = parts
        .iter()
        .take(top)
        .map(|p| format!("{} {} {} ms ({:.0}%)", p.kind, p.part, num(p.ms_per_step, 3), p.pct))
        .collect();
    let rest = parts.len().saturating_sub(top);
    let more = if rest > 0 { format!(" · {rest} more") } else { String::new() };
    format!("{}{more}", shown.join(" · "))
}

/// Who the job waits for, as the job line says it.
pub fn slowest(j: &Job) -> String {
    match (j.critical_rank, j.straggler_rule) {
        (Some(r), StragglerRule::Waits) => format!("the others wait for rank {r}"),
        (None, StragglerRule::Waits) => "nobody is waited for".to_string(),
        (Some(r), StragglerRule::Compute) => format!("rank {r}'s, the longest"),
        (None, StragglerRule::Compute) => "no ranks".to_string(),
    }
}

/// The line above the stragglers (or the one saying there are none).
pub fn stragglers_head(j: &Job) -> String {
    let t = num(j.straggler_threshold_ms, 2);
    match (j.straggler_rule, j.stragglers.is_empty()) {
        (StragglerRule::Waits, true) => {
            format!(
                "stragglers: none (no rank makes the others wait {t} ms per step, 1% of the step, at collectives)"
            )
        }
        (StragglerRule::Waits, false) => format!(
            "stragglers (the others wait for them at collectives, at least {t} ms per step):"
        ),
        (StragglerRule::Compute, true) => {
            format!("stragglers: none (every rank's compute is within {t} ms of the median rank's)")
        }
        (StragglerRule::Compute, false) => {
            format!(
                "stragglers (no matched collectives: compute more than {t} ms above the median rank's):"
            )
        }
    }
}

/// A straggler in one line: the wait it causes, in how many steps, how
/// late it arrives and where.
pub fn straggler_line(s: &Straggler) -> String {
    let Some(w) = s.wait_caused_ms_per_step else {
        return format!("rank {}: +{} ms of compute per step", s.rank, num(s.compute_excess_ms, 2));
    };
    let steps = s
        .late_steps
        .filter(|[_, n]| *n > 1)
        .map_or(String::new(), |[k, n]| format!(" ({k} of {n} steps)"));
    let late = s
        .late_ms
        .map_or(String::new(), |l| format!(", arriving up to {} ms after them", num(l, 2)));
    let at: Vec<String> =
        s.late_at.iter().take(2).map(|l| format!("{} ×{}", l.collective, l.count)).collect();
    format!(
        "rank {} makes the others wait {} ms/step{steps}{late} at {}",
        s.rank,
        num(w, 2),
        at.join(", ")
    )
}

/// A straggler's reason: `+5.00 ms conv (kernel)`, `+1.20 ms python (idle)`.
pub fn why(w: &Why) -> String {
    let kind = match w.kind {
        LeadKind::Kernel => "kernel",
        LeadKind::Idle => "GPU idle",
    };
    format!("+{} ms {} ({kind})", num(w.excess_ms_per_step, 2), w.name)
}

/// A distributed job: the job, one row per rank, the stragglers and why.
pub fn job(j: &Job) -> String {
    let mut o = String::new();
    let world = j.world_size.map_or(String::new(), |w| format!(" of world size {w}"));
    let _ = writeln!(
        o,
        "job      {} ranks{world}  |  step {} ms ({})  |  GPU util {} over all ranks",
        j.ranks.len(),
        num(j.step_ms, 2),
        slowest(j),
        pct(j.gpu_util)
    );
    if let Some(p) = &j.path {
        let _ =
            writeln!(o, "path     rank {}'s step, the job's: {}", p.rank, path_line(&p.parts, 3));
        if let Some(w) = &p.waits_at {
            let _ = writeln!(
                o,
                "         its longest wait: {} ms at {} #{} ({}) for rank {}{}",
                num(w.wait_ms, 3),
                w.collective,
                w.seq,
                w.group,
                w.for_rank,
                if w.for_parts.is_empty() {
                    String::new()
                } else {
                    format!(", whose path: {}", path_line(&w.for_parts, 3))
                }
            );
        }
        through(&mut o, &p.through);
    }
    let _ = writeln!(
        o,
        "per step, ms (waited: at collectives for later ranks; caused: the others' waits for it):"
    );
    let _ = writeln!(
        o,
        "{:>6} {:>9} {:>6} {:>9} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8}  verdict",
        "rank",
        "step",
        "GPU",
        "compute",
        "comm",
        "exposed",
        "idle",
        "dataload",
        "kernels",
        "waited",
        "caused"
    );
    for r in &j.ranks {
        let _ = writeln!(
            o,
            "{:>6} {:>9} {:>6} {:>9} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8}  {}",
            r.rank,
            num(r.step_ms, 2),
            pct(r.gpu_util),
            num(r.compute_ms, 2),
            num(r.comm_ms, 2),
            num(r.exposed_comm_ms, 2),
            num(r.idle_ms, 2),
            opt(r.dataload_ms, 2),
            num(r.kernels_per_step, 0),
            opt(r.wait_ms, 2),
            opt(r.wait_caused_ms, 2),
            r.bound
        );
    }
    let _ = writeln!(o, "{}", stragglers_head(j));
    for s in &j.stragglers {
        let _ = writeln!(o, "  {}", straggler_line(s));
        for w in &s.why {
            let _ = writeln!(o, "      {}", why(w));
        }
        if let Some(rest) = s.unexplained_ms {
            let _ = writeln!(
                o,
                "      {} ms of its lateness is older than its lead-ins (it was already late when they began)",
                num(rest, 2)
            );
        }
        if let Some(p) = &s.phase {
            let _ = writeln!(
                o,
                "      phase {}: +{} ms of GPU time per step",
                p.name,
                num(p.extra_ms, 2)
            );
        }
    }
    o
}

/// A device's peak allocated and reserved memory, `sep` between them (the
/// text and the explorer's Memory pane print the same line).
pub fn memory_peaks(d: &DeviceMemory, sep: &str) -> String {
    let reserved = d.peak_reserved_mb.map_or_else(|| "n/a".to_string(), size_mb);
    format!("peak allocated {}{sep}peak reserved {reserved}", size_mb(d.peak_allocated_mb))
}

/// When in the window the allocated peak came, in which phase and op.
pub fn memory_peak_at(m: &Memory, d: &DeviceMemory, sep: &str) -> String {
    format!(
        "peak at {} ms of {} ms{sep}phase {}{sep}op {}",
        num(d.peak_ms, 3),
        num(m.window_ms, 3),
        d.peak_phase,
        d.peak_op.as_deref().unwrap_or("n/a")
    )
}

/// `profile memory`: per device the peaks with the phase and op at the
/// allocated peak, a sparkline of allocated memory, the per-phase peaks.
pub fn memory(m: &Memory) -> String {
    let Some(none) = &m.none else {
        let mut o = String::new();
        for d in &m.devices {
            let relative = if d.totals {
                ""
            } else {
                " (counted from the first event: the trace records sizes, not totals)"
            };
            let _ = writeln!(
                o,
                "{}  {}  |  {} events{relative}",
                d.device,
                memory_peaks(d, "  |  "),
                d.events
            );
            let _ = writeln!(o, "  {}", memory_peak_at(m, d, "  |  "));
            let _ = writeln!(o, "  allocated  {}", sparkline(&Memory::allocated(d), 60));
            let width = d.phases.iter().map(|p| p.phase.chars().count()).max().unwrap_or(5).max(5);
            // The columns in the unit of the device's peak (see `size_mb`).
            let (unit, per) = if size_mb(d.peak_allocated_mb).ends_with("GB") {
                ("GB", 1000.0)
            } else {
                ("MB", 1.0)
            };
            let _ = writeln!(
                o,
                "  {:<width$}  {:>14}  {:>13}",
                "phase",
                format!("peak alloc {unit}"),
                format!("peak resv {unit}")
            );
            for p in &d.phases {
                let _ = writeln!(
                    o,
                    "  {:<width$}  {:>14}  {:>13}",
                    p.phase,
                    num(p.peak_allocated_mb / per, 1),
                    opt(p.peak_reserved_mb.map(|r| r / per), 1)
                );
            }
        }
        return o;
    };
    format!("{none}\n")
}

/// Eight-level block sparkline of `values`, at most `width` cells (a wider
/// series is bucketed, each cell its bucket's maximum, so a slow step
/// always shows). Scaled from 0 so equal steps draw as equal bars.
pub fn sparkline(values: &[f64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let width = width.max(1);
    let cells: Vec<f64> = if values.len() <= width {
        values.to_vec()
    } else {
        (0..width)
            .map(|c| {
                values[c * values.len() / width
                    ..((c + 1) * values.len() / width).max(c * values.len() / width + 1)]
                    .iter()
                    .copied()
                    .fold(0.0, f64::max)
            })
            .collect()
    };
    let max = cells.iter().copied().fold(0.0, f64::max);
    cells
        .iter()
        .map(|v| {
            if max > 0.0 {
                BARS[((v / max) * 7.0).round().clamp(0.0, 7.0) as usize]
            } else {
                BARS[0]
            }
        })
        .collect()
}

/// A horizontal bar of `frac` (0..=1) of `width` cells, in eighths.
pub fn bar(frac: f64, width: usize) -> String {
    const EIGHTHS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];
    let eighths = (frac.clamp(0.0, 1.0) * width as f64 * 8.0).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if eighths % 8 > 0 {
        s.push(EIGHTHS[eighths % 8 - 1]);
    }
    s
}

/// The summary's step line: spread, sparkline and outliers.
pub fn step_line(s: &crate::lens::summary::StepSpread, width: usize) -> String {
    let outliers = match s.outliers.len() {
        0 => String::new(),
        n => format!(
            "  |  {n} outlier{}: {}",
            if n == 1 { "" } else { "s" },
            s.outliers.iter().take(6).map(|k| format!("#{k}")).collect::<Vec<_>>().join(" ")
        ),
    };
    format!(
        "steps    {} | min {} median {} max {} ms  {}{outliers}",
        s.each_ms.len(),
        num(s.min_ms, 2),
        num(s.median_ms, 2),
        num(s.max_ms, 2),
        sparkline(&s.each_ms, width)
    )
}

/// Two runs of a distributed job, before → after.
pub fn compare_jobs(c: &JobComparison) -> String {
    let mut o = String::new();
    let change = |p: Option<f64>| p.map_or(String::new(), |p| format!(" ({p:+.0}%)"));
    let _ = writeln!(
        o,
        "job step      {} ms -> {} ms{}  (waited for: {} -> {})",
        num(c.step_ms[0], 2),
        num(c.step_ms[1], 2),
        change(c.step_change_pct),
        c.critical_rank[0].map_or("nobody".to_string(), |r| format!("rank {r}")),
        c.critical_rank[1].map_or("nobody".to_string(), |r| format!("rank {r}"))
    );
    let _ = writeln!(
        o,
        "GPU util      {} -> {} over all ranks",
        pct(c.gpu_util[0]),
        pct(c.gpu_util[1])
    );
    let list = |v: &[u32]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter().map(|r| format!("rank {r}")).collect::<Vec<_>>().join(", ")
        }
    };
    let _ = writeln!(o, "stragglers    {} -> {}", list(&c.stragglers[0]), list(&c.stragglers[1]));
    let _ = writeln!(
        o,
        "per rank, ms per step: step, and the wait it caused the others at collectives:"
    );
    for r in &c.ranks {
        let side = |v: Option<f64>| v.map_or("-".to_string(), |v| num(v, 2));
        let _ = writeln!(
            o,
            "  rank {:>4}  {:>9} -> {:<9}{:<8}  caused {:>8} -> {}",
            r.rank,
            side(r.before_ms),
            side(r.after_ms),
            change(r.change_pct),
            side(r.wait_caused_ms[0]),
            side(r.wait_caused_ms[1])
        );
    }
    o
}

pub fn merge(m: &crate::merge::Merged) -> String {
    let mut o = String::new();
    let n = m.ranks.len();
    let _ = writeln!(
        o,
        "wrote {}: {n} rank{}, {} events{}",
        m.output,
        if n == 1 { "" } else { "s" },
        m.events,
        if m.gzip { " (gzip)" } else { "" }
    );
    match &m.aligned_on {
        Some(a) => {
            let _ = writeln!(
                o,
                "clocks aligned on {} #{} of group {}, the first collective every rank ran: it ends at the same time on every rank",
                a.collective, a.seq, a.group
            );
        }
        None => {
            let _ = writeln!(o, "clocks as recorded");
        }
    }
    let _ = writeln!(
        o,
        "{:>6} {:>6} {:>12} {:>9} {:>8}  file",
        "rank", "pid", "offset us", "events", "threads"
    );
    for r in &m.ranks {
        let _ = writeln!(
            o,
            "{:>6} {:>6} {:>12} {:>9} {:>8}  {}",
            r.rank,
            r.pid,
            num(r.offset_us, 3),
            r.events,
            r.threads,
            r.file
        );
    }
    let _ = write!(
        o,
        "open it in https://ui.perfetto.dev or chrome://tracing; each rank is the process \"rank N\""
    );
    o
}

/// What `profile infer` and `profile run` print once their files are
/// written (docs/spec.md §2.1, §2.2).
pub fn capture(c: &Capture) -> String {
    let mut o = String::new();
    let rate = throughput(c.img_per_s, c.img_per_s_std, c.img_per_s_n);
    let (bound, why) = match &c.detail {
        Detail::Inference(i) => {
            let _ = writeln!(
                o,
                "latency  p50 {} ms | p90 {} ms | p99 {} ms  |  {rate}",
                num(i.latency_p50_ms, 3),
                num(i.latency_p90_ms, 3),
                num(i.latency_p99_ms, 3)
            );
            if let Some(s) = &i.stages_ms {
                let f = |v: Option<f64>| v.map_or("n/a".to_string(), |v| num(v, 3));
                let _ = writeln!(
                    o,
                    "stages   preprocess {} ms | forward {} ms | postprocess/NMS {} ms",
                    f(s.preprocess),
                    f(s.forward),
                    f(s.postprocess)
                );
            }
            (&i.bound, &i.bound_why)
        }
        Detail::Training(t) => {
            let _ = writeln!(o, "img/s: {}  |  {}", rate.trim_end_matches(" img/s"), t.bound);
            let dataload = t.dataload_frac.map_or("n/a".into(), |f| format!("{:.0}%", f * 100.0));
            let _ = writeln!(o, "step {} ms  |  dataload {dataload}", num(t.step_ms, 2));
            (&t.bound, &t.bound_why)
        }
    };
    let _ = writeln!(o, ">> {}: {why}", bound.as_str().to_uppercase());
    let _ = writeln!(o, "profile: {}", c.profile);
    // A training capture always writes its trace; its report names only the profile.
    if let (Some(t), Detail::Inference(_)) = (&c.trace, &c.detail) {
        let _ = writeln!(o, "trace:   {t}");
    }
    let _ = write!(o, "next:    libreyolo profile summary {}", c.profile);
    o
}

#[cfg(test)]
mod sparkline_tests {
    use super::*;

    #[test]
    fn sparklines_scale_from_zero_and_keep_slow_steps_when_bucketed() {
        assert_eq!(sparkline(&[1.0, 2.0, 4.0, 8.0], 10), "▂▃▅█");
        assert_eq!(sparkline(&[5.0, 5.0], 10), "██");
        let mut many = vec![1.0; 100];
        many[57] = 10.0;
        let s = sparkline(&many, 10);
        assert_eq!(s.chars().count(), 10);
        assert_eq!(s.chars().filter(|c| *c == '█').count(), 1, "{s}");
    }

    #[test]
    fn bars_count_eighths() {
        assert_eq!(bar(1.0, 4), "████");
        assert_eq!(bar(0.5, 4), "██");
        assert_eq!(bar(0.53, 4), "██▏", "17 eighths of 32");
        assert_eq!(bar(0.0, 4), "");
    }
}
