//! `profile infer|run`: the report printed once their files are written.

use std::fmt::Write;

use super::{num, throughput};
use crate::lens::capture::{Capture, Detail};

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
