//! What the model's module scopes cost, in one process: a scope opened
//! and closed with no session, in a session without module scopes and in
//! one with them (ns each), then YOLOv9-t inference forwards (random
//! init, batch 1, no grad) under a profiler session with the scopes and
//! without, in alternating blocks, each block its own session as a capture
//! has. `capture/bench/scopes.sh` runs it beside the CLI's A/B
//! (BENCHMARKS.md, "Module scopes").
//!
//!   scope_cost [imgsz] [rounds] [forwards per block] [threads]
//!
//! `SCOPE_COST_AA=1` runs both sides without scopes: the A/A difference
//! the procedure itself shows.

use std::time::Instant;

use libreyolo_capture::model::Yolo9;
use libreyolo_capture::profiler::{self, Options, Session};
use libreyolo_core::cli::ModelSize;
use tch::{Device, Kind, Tensor};

/// ns per scope opened and closed, `n` times.
fn scopes_ns(n: u32) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        let s = profiler::scope(c"model.0 Conv");
        std::hint::black_box(&s);
    }
    t.elapsed().as_nanos() as f64 / f64::from(n)
}

fn session(module_scopes: bool) -> Session {
    Session::start(Options { module_scopes, ..Default::default() }).expect("profiler")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn main() {
    let arg = |i: usize, default: usize| {
        std::env::args().nth(i).map_or(default, |a| a.parse().expect("a number"))
    };
    let (imgsz, rounds, block, threads) = (arg(1, 320), arg(2, 8), arg(3, 10), arg(4, 1));
    tch::set_num_threads(threads as i32);
    // SCOPE_COST_AA=1: both sides without scopes, the procedure's own bias.
    let aa = std::env::var_os("SCOPE_COST_AA").is_some();

    let off = scopes_ns(10_000_000);
    let s = session(false);
    let off_in_session = scopes_ns(10_000_000);
    s.discard().unwrap();
    let s = session(true);
    let on = scopes_ns(100_000);
    s.discard().unwrap();
    println!(
        "one scope opened and closed: {off:.2} ns with no session, {off_in_session:.2} ns in a session without module scopes, {on:.0} ns recorded"
    );

    tch::manual_seed(0);
    let model = Yolo9::new(ModelSize::T, 80, Device::Cpu).unwrap();
    let x = Tensor::rand([1, 3, imgsz as i64, imgsz as i64], (Kind::Float, Device::Cpu));
    for _ in 0..3 {
        let _ = model.forward(&x);
    }
    let mut per_side: [Vec<f64>; 2] = Default::default();
    let mut ratios = Vec::new();
    println!(
        "YOLOv9-t forward, imgsz {imgsz}, {threads} thread(s), {rounds} rounds of {block} forwards a side (ms, median of the block)"
    );
    for r in 0..rounds {
        // The side that runs first swaps every round.
        let order = if r % 2 == 0 { [true, false] } else { [false, true] };
        let mut line = [0.0; 2];
        for scopes in order {
            let s = session(scopes && !aa);
            let mut ms: Vec<f64> = (0..block)
                .map(|_| {
                    let t = Instant::now();
                    let out = model.forward(&x);
                    std::hint::black_box(&out.predictions);
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            s.discard().unwrap();
            let m = median(&mut ms);
            line[usize::from(!scopes)] = m;
            per_side[usize::from(!scopes)].push(m);
        }
        ratios.push(line[0] / line[1]);
        println!(
            "round {:2}  scopes {:8.3}  no scopes {:8.3}  {:+.2}%",
            r + 1,
            line[0],
            line[1],
            100.0 * (line[0] / line[1] - 1.0)
        );
    }
    let [mut with, mut without] = per_side;
    let (a, b) = (median(&mut with), median(&mut without));
    println!(
        "median   scopes {a:8.3}  no scopes {b:8.3}  {:+.2}%  (min {:.3} vs {:.3}); median of the rounds' ratios {:+.2}%",
        100.0 * (a / b - 1.0),
        with[0],
        without[0],
        100.0 * (median(&mut ratios) - 1.0)
    );
}
