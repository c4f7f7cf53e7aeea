//! `profile merge`: the merged trace written, and how its clocks were
//! aligned.

use std::fmt::Write;

use super::num;

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
