//! LibreYOLO's model EMA (`training/ema.py`, `ModelEMA`, on by default):
//! after every optimizer step each floating-point entry of the state dict
//! (weights and BatchNorm running statistics) moves toward the live model,
//! `v = d·v + (1 − d)·w`, with `d = 0.9999·(1 − exp(−updates / 2000))`.
//! One tensor at a time on CPU, two multi-tensor kernels on CUDA, as theirs.

use libreyolo_core::Result;
use tch::{Kind, Tensor};

use crate::ops;

pub const DECAY: f64 = 0.9999;
pub const TAU: f64 = 2000.0;

pub struct Ema {
    /// Averaged copies, paired with the live tensors they follow.
    ema: Vec<Tensor>,
    live: Vec<Tensor>,
    updates: u64,
    foreach: bool,
}

impl Ema {
    pub fn new(vs: &tch::nn::VarStore) -> Ema {
        let mut named: Vec<(String, Tensor)> = vs
            .variables()
            .into_iter()
            .filter(|(_, t)| {
                matches!(t.kind(), Kind::Float | Kind::Double | Kind::Half | Kind::BFloat16)
            })
            .collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        let live: Vec<Tensor> = named.into_iter().map(|(_, t)| t.detach()).collect();
        let ema = live.iter().map(|t| t.copy()).collect();
        Ema { ema, live, updates: 0, foreach: vs.device().is_cuda() }
    }

    /// The decay of the next update.
    fn decay(&self) -> f64 {
        DECAY * (1.0 - (-(self.updates as f64) / TAU).exp())
    }

    pub fn update(&mut self) -> Result<()> {
        self.updates += 1;
        let d = self.decay();
        tch::no_grad(|| {
            if self.foreach {
                ops::foreach_mul_(&self.ema, d)?;
                ops::foreach_add_(&self.ema, &self.live, 1.0 - d)
            } else {
                for (v, w) in self.ema.iter().zip(&self.live) {
                    ops::mul_(v, d)?;
                    ops::add_(v, w, 1.0 - d)?;
                }
                Ok(())
            }
        })
    }

    /// How many tensors are averaged.
    pub fn len(&self) -> usize {
        self.ema.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ema.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    #[test]
    fn ema_follows_the_live_weights_with_the_ramped_decay() {
        let run = |foreach: bool| {
            let vs = tch::nn::VarStore::new(Device::Cpu);
            let w = (vs.root() / "conv").var("weight", &[2], tch::nn::Init::Const(1.0));
            let _stat = (vs.root() / "bn").zeros_no_train("running_mean", &[2]);
            let mut e = Ema::new(&vs);
            e.foreach = foreach;
            assert_eq!(e.len(), 2, "weights and running statistics are averaged");
            tch::no_grad(|| {
                let _ = w.shallow_clone().f_fill_(3.0);
            });
            e.update().unwrap();
            let d = DECAY * (1.0 - (-1.0f64 / TAU).exp());
            let want = d * 1.0 + (1.0 - d) * 3.0;
            // Sorted by name: bn.running_mean, then conv.weight.
            let got = f64::try_from(e.ema[1].get(0)).unwrap();
            assert!((got - want).abs() < 1e-5, "{got} vs {want}");
            assert_eq!(
                f64::try_from(e.ema[0].get(0)).unwrap(),
                0.0,
                "a statistic that did not move stays"
            );
        };
        run(false);
        run(true);
    }
}
