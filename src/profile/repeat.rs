//! `--repeat N`: several trials of one capture combined into one profile
//! (`infer_repeat.json`, `profile_repeat.json`), the same way for inference
//! and training.

use serde_json::json;

use super::kinds::Verdict;
use super::metrics;
use super::schema::{Figures, Profile};
use crate::util::round;

/// Population mean and standard deviation.
pub fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mu = v.iter().sum::<f64>() / n;
    (mu, (v.iter().map(|x| (x - mu).powi(2)).sum::<f64>() / n).sqrt())
}

type Field = (&'static str, fn(&Figures) -> Option<f64>, fn(&mut Figures, f64), i32);

/// The scalars averaged across trials (each also gets its std in
/// `metrics_std`); the key is the name `compare` looks the std up by.
const AVERAGED: [Field; 8] = [
    ("step_ms", |p| Some(p.step_ms), |p, v| p.step_ms = v, 3),
    ("dataload_ms", |p| p.dataload_ms, |p, v| p.dataload_ms = Some(v), 3),
    ("dataload_frac", |p| p.dataload_frac, |p, v| p.dataload_frac = Some(v), 3),
    ("gpu_util", |p| Some(p.gpu_util), |p, v| p.gpu_util = v, 3),
    (
        "gpu_busy_ms_per_step",
        |p| Some(p.gpu_busy_ms_per_step),
        |p, v| p.gpu_busy_ms_per_step = v,
        3,
    ),
    (
        "host_overhead_ms_per_step",
        |p| Some(p.host_overhead_ms_per_step),
        |p, v| p.host_overhead_ms_per_step = v,
        3,
    ),
    ("launches_per_step", |p| Some(p.launches_per_step), |p, v| p.launches_per_step = v, 2),
    ("tensorcore_pct", |p| Some(p.tensorcore_pct), |p, v| p.tensorcore_pct = v, 1),
];

/// The final trial's profile (phases, kernel and op lists, latency) with
/// img/s and the step scalars averaged over the trials — img/s with std, n
/// and the per-trial values, the others with their std in `metrics_std` —
/// and `bound: "mixed"` when the trials disagree on the verdict.
/// `paths` names each trial's profile, for the `aggregation` block.
pub fn aggregate(trials: &[Profile], paths: &[String]) -> Option<Profile> {
    let last = trials.last()?;
    let mut out = last.clone();
    let vals: Vec<f64> = trials.iter().filter_map(|p| p.figures.img_per_s).collect();
    if !vals.is_empty() {
        let (mu, sd) = mean_std(&vals);
        out.figures.img_per_s = Some(round(mu, 2));
        out.img_per_s_std = Some(round(sd, 2));
        out.img_per_s_n = Some(vals.len() as u32);
        out.img_per_s_trials = Some(vals.iter().map(|v| round(*v, 2)).collect());
    }
    for (key, get, set, digits) in AVERAGED {
        let v: Vec<f64> = trials.iter().filter_map(|p| get(&p.figures)).collect();
        if v.len() != trials.len() {
            continue;
        }
        let (mu, sd) = mean_std(&v);
        set(&mut out.figures, round(mu, digits));
        out.metrics_std.insert(key.to_string(), round(sd, digits + 1));
    }
    if let Some(b) = out.batch().filter(|_| trials.iter().all(|p| p.figures.step_ms > 0.0)) {
        let per_image: Vec<f64> = trials.iter().map(|p| p.figures.step_ms / b).collect();
        out.metrics_std.insert("ms_per_image".into(), round(mean_std(&per_image).1, 4));
    }
    if trials.iter().any(|p| p.bound != last.bound) {
        let verdicts: Vec<&str> = trials.iter().map(|p| p.bound.as_str()).collect();
        out.bound = Verdict::Mixed;
        out.bound_why = format!("the trials disagree on the verdict: {}", verdicts.join(", "));
    }
    out.aggregation = Some(json!({
        "n": trials.len(),
        "profiles": paths,
        "representative_profile": paths.last(),
        "note": "img_per_s and the step scalars are means of the trials (img_per_s_std and metrics_std: population std); phases, latency, kernel and op lists are the final trial's.",
    }));
    out.metrics = metrics::of(&out);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(img: f64, step: f64, bound: Verdict) -> Profile {
        let mut p = Profile {
            figures: Figures { img_per_s: Some(img), step_ms: step, ..Default::default() },
            bound,
            ..Default::default()
        };
        p.config.insert("batch", json!(4));
        p
    }

    #[test]
    fn means_stds_and_mixed_verdicts() {
        let t = [
            trial(4.0, 1000.0, Verdict::Compute),
            trial(6.0, 666.0, Verdict::Compute),
            trial(5.0, 800.0, Verdict::Dataloader),
        ];
        let paths: Vec<String> = (0..3).map(|i| format!("t{i}")).collect();
        let a = aggregate(&t, &paths).unwrap();
        assert_eq!(a.figures.img_per_s, Some(5.0));
        assert_eq!(a.img_per_s_std, Some(0.82));
        assert_eq!(a.img_per_s_n, Some(3));
        assert_eq!(a.img_per_s_trials, Some(vec![4.0, 6.0, 5.0]));
        assert_eq!(a.figures.step_ms, 822.0);
        assert!(a.metrics_std["step_ms"] > 0.0);
        assert_eq!(a.bound, Verdict::Mixed);
        // `get` reads the aggregated figures, not the last trial's.
        assert_eq!(a.metrics["img_per_s"], json!(5.0));
        assert_eq!(a.metrics["img_per_s_std"], json!(0.82));
        assert_eq!(a.metrics["step_ms_std"], json!(a.metrics_std["step_ms"]));
        assert_eq!(a.aggregation.unwrap()["representative_profile"], "t2");
    }
}
