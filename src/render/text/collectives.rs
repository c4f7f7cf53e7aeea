//! `profile collectives`: per group the counts, per rank the waits, then
//! the collectives with the largest skew.

use std::fmt::Write;

use super::num;
use crate::lens::collectives::Collectives;

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
