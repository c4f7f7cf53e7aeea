//! A training step of a plain conv-BN-SiLU stack on one thread, timed:
//! the smallest graph that shows what the process around libtorch costs.
//! `capture/bench/step_vs_python.sh` runs it beside the same step in
//! Python on the same libtorch (BENCHMARKS.md, "The heap a training
//! capture keeps").
//!
//!   conv_bn_silu_step [--keep-heap]

use tch::nn::{self, ModuleT};
use tch::{Device, Kind, Tensor};

const LAYERS: usize = 8;
const STEPS: usize = 30;

fn main() {
    let keep = std::env::args().any(|a| a == "--keep-heap");
    if keep {
        libreyolo_capture::heap::keep_freed_memory();
    }
    tch::set_num_threads(1);
    let vs = nn::VarStore::new(Device::Cpu);
    let layers: Vec<_> = (0..LAYERS)
        .map(|i| {
            let conv = nn::ConvConfig { padding: 1, bias: false, ..Default::default() };
            (
                nn::conv2d(vs.root() / format!("conv{i}"), 64, 64, 3, conv),
                nn::batch_norm2d(vs.root() / format!("bn{i}"), 64, Default::default()),
            )
        })
        .collect();
    let x = Tensor::randn([4, 64, 80, 80], (Kind::Float, Device::Cpu));
    let (mut fwd, mut bwd) = (Vec::new(), Vec::new());
    for _ in 0..STEPS {
        let t0 = std::time::Instant::now();
        let mut y = x.shallow_clone();
        for (conv, bn) in &layers {
            y = bn.forward_t(&y.apply(conv), true).silu();
        }
        let loss = y.mean(None);
        let t1 = std::time::Instant::now();
        loss.backward();
        fwd.push((t1 - t0).as_secs_f64() * 1e3);
        bwd.push(t1.elapsed().as_secs_f64() * 1e3);
        for mut v in vs.trainable_variables() {
            v.zero_grad();
        }
    }
    fwd.sort_by(f64::total_cmp);
    bwd.sort_by(f64::total_cmp);
    let heap = if keep { "rust, heap kept" } else { "rust" };
    println!(
        "{heap:<16} forward median {:6.1} ms  backward median {:6.1} ms",
        fwd[STEPS / 2],
        bwd[STEPS / 2]
    );
}
