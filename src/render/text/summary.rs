//! `profile summary`: the figures of the run in a few lines, then the
//! idle account, the efficiency line, the critical path and levers, the
//! health findings, the verdict and the kernel mix.

use std::fmt::Write;

use super::efficiency::{efficiency_line, graph_attribution};
use super::{count, num, opt, path_line, path_span, pct, size_mb, sparkline, throughput};
use crate::lens::summary::Summary;
use crate::profile::Mode;
use crate::util::round;

pub fn summary(s: &Summary) -> String {
    let mut o = String::new();
    let model = s.model.as_deref().unwrap_or("n/a");
    let cpu = s.cpu_run();
    let work = match s.threads() {
        _ if !cpu => format!(
            "{} kernel{}/step @ ~{} us",
            num(s.figures.kernels_per_step, 1),
            crate::util::plural(s.figures.kernels_per_step),
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
            "latency  p50 {} ms | p90 {} ms | p99 {} ms  ({})",
            num(l.p50_ms, 3),
            num(l.p90_ms, 3),
            num(l.p99_ms, 3),
            latency_samples(l, s.config.runs())
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
            "GPU util {}  ({} ms busy)  |  {} {:.0}%  |  peak VRAM {vram}  |  memcpy {} ms",
            pct(s.figures.gpu_util),
            num(s.figures.gpu_busy_ms_per_step, 2),
            s.matrix_units(),
            s.figures.tensorcore_pct,
            num(s.figures.memcpy_ms_per_step, 3)
        );
    }
    if let Some(raw) = s.stream_concurrency() {
        let _ = writeln!(
            o,
            "streams overlap: kernel time sums to {} of the window (concurrency, counted once above)",
            pct(raw)
        );
    }
    let dataload = match (s.figures.dataload_ms, s.figures.dataload_frac) {
        (Some(d), Some(f)) if s.mode == Mode::Training => {
            Some(format!("dataload {} ms ({})", num(d, 2), pct(f)))
        }
        _ => None,
    };
    let and_dataload = dataload.as_ref().map(|d| format!("  |  {d}")).unwrap_or_default();
    let graphs = s.extras.graph_launches_per_step.map_or_else(String::new, |g| {
        let launches = format!(
            "{} CUDA/HIP graph launch{} replaying their kernels",
            num(g, 1),
            if g == 1.0 { "" } else { "es" }
        );
        match s.extras.graph_replay_ms_per_step {
            Some(ms) => {
                let all: f64 = s.categories.iter().map(|c| c.ms_per_step).sum();
                format!(
                    " ({launches}: {} ms/step, {} of the kernel time, {})",
                    num(ms, 2),
                    pct(if all > 0.0 { ms / all } else { 0.0 }),
                    graph_attribution(ms, s.extras.graph_replay_attributed_ms_per_step)
                )
            }
            None => format!(" ({launches})"),
        }
    });
    // Kernels whose launch the profiler missed were launched all the same.
    let recorded = match s.extras.launches_recorded_per_step {
        Some(r) => format!(" ({} of them recorded in the trace)", num(r, 1)),
        None => String::new(),
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
                "host overhead {} ms/step  |  {} kernel launch{}/step{recorded}{graphs}{and_dataload}",
                num(s.figures.host_overhead_ms_per_step, 2),
                num(s.figures.launches_per_step, 1),
                if s.figures.launches_per_step == 1.0 { "" } else { "es" }
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
    if s.figures.memory_pressure {
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
        if let Some(span) = path_span(&m.span, m.steps) {
            let _ = writeln!(o, "               spans {span}");
        }
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
            let more = s.levers.len().saturating_sub(3);
            let more = if more > 0 { format!("; {more} more") } else { String::new() };
            let _ = writeln!(
                o,
                "levers         by the saving the step model projects (--json: facts, what-if){more}"
            );
            for line in lever_lines(&s.levers, 3) {
                let _ = writeln!(o, "{line}");
            }
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
/// The first `n` levers the trace supports, by the saving the step model
/// projects (analysis.md §16), each with the measured figures it rests on:
/// a printed lever carries its evidence in the same output. The what-if
/// behind each and the facts that allow it are in `--json`.
pub fn lever_lines(levers: &[crate::profile::LeverRow], n: usize) -> Vec<String> {
    let shown = &levers[..levers.len().min(n)];
    let name_w = shown.iter().map(|l| l.lever.as_str().len()).max().unwrap_or(0);
    shown
        .iter()
        .map(|l| {
            format!(
                "  {:<name_w$} {:>9} ms {:>5.1}%  {}",
                l.lever.as_str(),
                format!("−{}", num(l.saved_ms_per_step, 3)),
                l.saved_pct,
                l.evidence
            )
        })
        .collect()
}

/// What the latency percentiles rest on: how many samples, from which of
/// the measured runs (the first half: the rest time the stages), and the
/// percentiles too few samples make the slowest one.
pub fn latency_samples(l: &crate::profile::Latency, runs: Option<u64>) -> String {
    let of_runs = match runs.filter(|r| *r > l.n) {
        Some(r) => format!(", the first {} of {r} runs", l.n),
        None => String::new(),
    };
    let tail = match l.at_the_slowest()[..] {
        [] => String::new(),
        [one] => format!("; {one} is the slowest sample: too few samples for it"),
        ref all => {
            format!("; {} are the slowest sample: too few samples for them", all.join(" and "))
        }
    };
    format!("{} samples{of_runs}{tail}", l.n)
}

pub fn idle_lines(idle: &crate::profile::IdleAccount, places: usize) -> Vec<String> {
    let lead = if idle.before_first_kernel_ms_per_step > 0.0 {
        format!(", {} before the first kernel", num(idle.before_first_kernel_ms_per_step, 2))
    } else {
        String::new()
    };
    let mut out = vec![format!(
        "idle     {} ms/step in {} gap{}/step{lead} (device {})",
        num(idle.ms_per_step, 2),
        num(idle.gaps_per_step, 1),
        crate::util::plural(idle.gaps_per_step),
        idle.device
    )];
    // A cause or place that rounds to 0 ms is left out (`--json` keeps it).
    let said = |ms: f64| round(ms, 3) > 0.0;
    for c in idle.causes.iter().filter(|c| said(c.ms_per_step)) {
        // Copies are GPU work with no kernel.
        let copying = c
            .copy_said()
            .map(|copy| format!(" (a memcpy/memset ran for {} of it)", num(copy, 3)))
            .unwrap_or_default();
        out.push(format!(
            "  {:<11} {:>9} ms  {}{copying}",
            c.cause.as_str(),
            num(c.ms_per_step, 3),
            c.cause.meaning()
        ));
        for p in c.places.iter().take(places).filter(|p| said(p.ms_per_step)) {
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
