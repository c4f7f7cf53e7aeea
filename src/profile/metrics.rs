//! The flat metric map behind `profile get`, derived from a profile's own
//! fields so that `get` and every other reader agree — also on files of the
//! reference implementation, whose stored map can disagree with its
//! top-level fields (its repeat files keep the last trial's `img_per_s`).

use serde_json::{Map, Value, json};

use super::kinds::Mode;
use super::schema::Profile;

/// Every metric of `p`, keyed by name.
pub fn of(p: &Profile) -> Map<String, Value> {
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put("img_per_s", json!(p.figures.img_per_s));
    if let Some(std) = p.img_per_s_std {
        put("img_per_s_std", json!(std));
        put("img_per_s_n", json!(p.img_per_s_n()));
    }
    put("step_ms", json!(p.figures.step_ms));
    if let Some(b) = p.batch().filter(|_| p.figures.step_ms > 0.0) {
        put("ms_per_image", json!(crate::util::round(p.figures.step_ms / b, 3)));
    }
    put("dataload_ms", json!(p.figures.dataload_ms));
    put("dataload_frac", json!(p.figures.dataload_frac));
    put("gpu_util", json!(p.figures.gpu_util));
    put("gpu_util_raw", json!(p.figures.gpu_util_raw));
    put("gpu_busy_ms", json!(p.figures.gpu_busy_ms_per_step));
    put("mean_kernel_us", json!(p.figures.mean_kernel_us));
    put("kernels_per_step", json!(p.figures.kernels_per_step));
    put("unique_kernels", json!(p.figures.unique_kernels));
    put(
        "ops_per_step",
        json!(crate::util::round(p.phases.iter().map(|ph| ph.ops_per_step).sum::<f64>(), 2)),
    );
    put("memcpy_ms", json!(p.figures.memcpy_ms_per_step));
    put("tensorcore_pct", json!(p.figures.tensorcore_pct));
    put("peak_vram_mb", json!(p.figures.peak_vram_mb));
    put("host_overhead_ms", json!(p.figures.host_overhead_ms_per_step));
    put("launches_per_step", json!(p.figures.launches_per_step));
    if let Some(f) = p.extras.host_in_ops_frac {
        put("host_in_ops_frac", json!(f));
    }
    if let Some(g) = p.extras.graph_launches_per_step {
        put("graph_launches_per_step", json!(g));
    }
    if let Some(r) = p.extras.launches_recorded_per_step {
        put("launches_recorded_per_step", json!(r));
    }
    if let Some(g) = p.extras.graph_replay_ms_per_step {
        put("graph_replay_ms_per_step", json!(g));
    }
    if let Some(g) = p.extras.graph_replay_attributed_ms_per_step {
        put("graph_replay_attributed_ms_per_step", json!(g));
    }
    if let Some(c) = p.extras.comm_ms_per_step {
        put("comm_ms_per_step", json!(c));
        put("comm_exposed_ms_per_step", json!(p.extras.comm_exposed_ms_per_step));
        put("comm_overlap_pct", json!(p.extras.comm_overlap_pct));
    }
    if let Some(idle) = &p.idle {
        put("idle_ms", json!(idle.ms_per_step));
        put("idle_before_first_kernel_ms", json!(idle.before_first_kernel_ms_per_step));
        // Every cause, 0 where it took no time, so scripts can rely on them.
        for cause in crate::profile::IdleCause::ALL {
            put(
                &format!("idle_{cause}_ms"),
                json!(idle.cause(cause).map_or(0.0, |c| c.ms_per_step)),
            );
        }
    }
    if let Some(e) = p.efficiency.as_ref().filter(|e| e.priced_calls > 0) {
        put("priced_pct_of_gpu", json!(e.modelled_pct_of_gpu));
        if let Some(m) = &e.matrix {
            put("matrix_pct_of_peak", json!(m.pct_of_peak));
            put("matrix_pct_of_roofline", json!(m.pct_of_roofline));
            put("matrix_tflops", json!(m.tflops));
        }
        if let Some(low) = e.below_30_pct_of_gpu {
            put("below_30_pct_of_gpu", json!(low));
        }
    }
    put("cuda_mallocs_per_step", json!(p.figures.cuda_mallocs_per_step));
    put("memory_pressure", json!(p.figures.memory_pressure));
    put("bound", json!(p.bound));
    put("real_steps", json!(p.figures.window.real_steps));
    for ph in &p.phases {
        put(&format!("{}_gpu_ms", ph.phase), json!(ph.gpu_ms_per_step));
        put(&format!("{}_wall_ms", ph.phase), json!(ph.wall_ms_per_step));
        put(&format!("{}_kernels", ph.phase), json!(ph.kernels_per_step));
        put(&format!("{}_ops", ph.phase), json!(ph.ops_per_step));
        if let Some(idle) = ph.idle_ms_per_step {
            put(&format!("{}_idle_ms", ph.phase), json!(idle));
        }
    }
    if p.mode() == Mode::Inference {
        if let Some(l) = &p.figures.latency {
            put("latency_p50_ms", json!(l.p50_ms));
            put("latency_p90_ms", json!(l.p90_ms));
            put("latency_p99_ms", json!(l.p99_ms));
            put("latency_mean_ms", json!(l.mean_ms));
        }
        put("throughput_img_s", json!(p.figures.img_per_s));
        if let Some(s) = &p.figures.stages_ms {
            put("preprocess_ms", json!(s.preprocess));
            put("forward_ms", json!(s.forward));
            put("nms_ms", json!(s.postprocess));
        }
    }
    for (k, std) in &p.metrics_std {
        put(&format!("{k}_std"), json!(std));
    }
    m
}
