//! `profile summary` of a rank set: the job, one row per rank, the
//! stragglers and why; and the path through the ranks that what-if
//! `--all` also prints.

use std::fmt::Write;

use super::{num, opt, path_line, pct};
use crate::lens::job::{Job, Straggler, StragglerRule, Why};
use crate::profile::LeadKind;

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
/// `others`: the job's other ranks, whose waits it sums; `with_lead`: its
/// [`own_lead`] said beside the wait (the explorer's one line; the text
/// says it after, with its what-if).
pub fn straggler_line(s: &Straggler, others: usize, with_lead: bool) -> String {
    let Some(w) = s.wait_caused_ms_per_step else {
        return format!("rank {}: +{} ms of compute per step", s.rank, num(s.compute_excess_ms, 2));
    };
    let steps = s
        .late_steps
        .filter(|[_, n]| *n > 1)
        .map_or(String::new(), |[k, n]| format!(" ({k} of {n} steps)"));
    // Lateness is against the other ranks' median arrival at the same
    // collective (docs/analysis.md §11), not their earliest.
    let late = s.late_ms.map_or(String::new(), |l| {
        format!(", arriving up to {} ms after the others' median arrival", num(l, 2))
    });
    let at: Vec<String> =
        s.late_at.iter().take(2).map(|l| format!("{} ×{}", l.collective, l.count)).collect();
    // A sum over the others: it can exceed the step, so the mean is said.
    let all = if others > 1 { " in all" } else { "" };
    let said: Vec<String> = (others > 1)
        .then(|| format!("{} each, over {others} ranks", num(w / others as f64, 2)))
        .into_iter()
        .chain(own_lead(s).filter(|_| with_lead).map(|a| format!("its own lead {}", num(a, 2))))
        .collect();
    let each =
        if said.is_empty() { all.to_string() } else { format!("{all} ({})", said.join("; ")) };
    format!(
        "rank {} makes the others wait {} ms/step{each}{steps}{late} at {}",
        s.rank,
        num(w, 2),
        at.join(", ")
    )
}

/// A straggler's own lead over the next-latest rank, ms per step, where
/// it is less than the wait it caused (the rest: the ranks' spread).
fn own_lead(s: &Straggler) -> Option<f64> {
    let (a, w) = (s.ahead_ms_per_step?, s.wait_caused_ms_per_step?);
    (a < 0.95 * w).then_some(a)
}

/// What of a straggler's caused wait is its own lead over the next-latest
/// rank (the rest is the ranks' spread), said after [`straggler_line`].
pub fn straggler_ahead(s: &Straggler) -> String {
    let Some(a) = own_lead(s) else { return String::new() };
    format!(
        "; its own lead over the next-latest rank there: {} ms/step, the rest the ranks' spread (`what-if DIR --straggler {}` re-times the job without it)",
        num(a, 2),
        s.rank
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
            r.verdict()
        );
    }
    let _ = writeln!(o, "{}", stragglers_head(j));
    for s in &j.stragglers {
        let line = straggler_line(s, j.ranks.len().saturating_sub(1), false);
        let _ = writeln!(o, "  {line}{}", straggler_ahead(s));
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
        // The items decompose the lateness; where those listed add up to
        // more, the rest of its lead-ins (shorter than the others', or
        // begun earlier) made up the difference: said, so that no part
        // reads larger than the whole.
        let listed: f64 = s.why.iter().map(|w| w.excess_ms_per_step).sum();
        if let Some(late) = s.late_ms.filter(|l| listed > l + 0.005) {
            let _ = writeln!(
                o,
                "      of these, {} ms was made up by the rest of its lead-ins (shorter than the others', or begun earlier)",
                num(listed - late, 2)
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

/// The path through a job's ranks, from the job's last work back: a line
/// per leg, and where it waited for the next.
pub(super) fn through(o: &mut String, legs: &[crate::lens::job::PathLeg]) {
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
