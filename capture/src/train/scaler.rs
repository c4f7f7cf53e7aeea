//! Loss scaling for float16 AMP (`torch.amp.GradScaler("cuda")` with its
//! defaults), as LibreYOLO's trainer uses it with `--amp` on CUDA: the loss
//! is multiplied by the scale before backward; the step unscales the
//! gradients in one multi-tensor kernel, skips the optimizer step when any
//! gradient is not finite, and the scale then grows ×2 after 2000 clean
//! steps or halves after an overflow.

use libreyolo_core::{Error, Result};
use tch::{Device, Kind, Tensor};

use super::optim::Sgd;
use crate::ops;

pub const INIT_SCALE: f64 = 65536.0;
pub const GROWTH_FACTOR: f64 = 2.0;
pub const BACKOFF_FACTOR: f64 = 0.5;
pub const GROWTH_INTERVAL: i64 = 2000;

pub struct GradScaler {
    scale: Tensor,
    growth_tracker: Tensor,
    found_inf: Tensor,
    /// Optimizer steps skipped for non-finite gradients.
    pub skipped: usize,
}

impl GradScaler {
    pub fn new(device: Device) -> GradScaler {
        GradScaler {
            scale: Tensor::full([1], INIT_SCALE, (Kind::Float, device)),
            growth_tracker: Tensor::zeros([1], (Kind::Int, device)),
            found_inf: Tensor::zeros([1], (Kind::Float, device)),
            skipped: 0,
        }
    }

    /// `scaler.scale(loss)`.
    pub fn scale(&self, loss: &Tensor) -> Tensor {
        loss * &self.scale.to_kind(loss.kind())
    }

    /// `scaler.step(opt)`: unscale, then step unless a gradient overflowed.
    /// Reads one flag back from the device, as torch does.
    pub fn step(&mut self, opt: &mut Sgd) -> Result<()> {
        let inv = self.scale.to_kind(Kind::Double).reciprocal().to_kind(Kind::Float);
        let _ = self.found_inf.f_zero_();
        ops::amp_unscale_(&opt.grads(), &self.found_inf, &inv)?;
        let overflow = f64::try_from(&self.found_inf)
            .map_err(|e| Error::failed(format!("GradScaler: {e}")).caused_by(e))?
            != 0.0;
        if overflow {
            self.skipped += 1;
            Ok(())
        } else {
            opt.step()
        }
    }

    /// `scaler.update()`.
    pub fn update(&mut self) -> Result<()> {
        self.scale
            .f_internal_amp_update_scale_(
                &self.growth_tracker,
                &self.found_inf,
                GROWTH_FACTOR,
                BACKOFF_FACTOR,
                GROWTH_INTERVAL,
            )
            .map(|_| ())
            .map_err(|e| Error::failed(format!("GradScaler update: {e}")).caused_by(e))
    }

    pub fn current(&self) -> f64 {
        f64::try_from(&self.scale).unwrap_or(f64::NAN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clean step unscales the gradients before the update; an overflow
    /// skips the update and halves the scale. The kernels run on CPU too.
    #[test]
    fn scaled_steps_match_unscaled_ones_and_overflow_is_skipped() {
        let vs = tch::nn::VarStore::new(Device::Cpu);
        let w = (vs.root() / "conv").var("weight", &[1], tch::nn::Init::Const(1.0));
        let mut opt = Sgd::new(&vs);
        let mut sc = GradScaler::new(Device::Cpu);
        sc.scale(&(&w * &w).sum(Kind::Float)).backward();
        sc.step(&mut opt).unwrap();
        sc.update().unwrap();
        let d = 2.0 + super::super::optim::WEIGHT_DECAY;
        let want = 1.0 - opt.lr * (d + opt.momentum * d);
        let got = f64::try_from(w.get(0)).unwrap();
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        assert_eq!(sc.current(), INIT_SCALE);

        opt.zero_grad().unwrap();
        (&w * f64::INFINITY).sum(Kind::Float).backward();
        sc.step(&mut opt).unwrap();
        sc.update().unwrap();
        assert_eq!(f64::try_from(w.get(0)).unwrap(), got, "the overflowing step is skipped");
        assert_eq!(sc.skipped, 1);
        assert_eq!(sc.current(), INIT_SCALE * BACKOFF_FACTOR);
    }

    /// The AMP step of `profile run` on the real model with its PGI branch:
    /// forward and loss under autocast (CPU bfloat16 here, CUDA float16 in
    /// a run), scaled backward, unscaled SGD step. Autocast must really be
    /// on (reduced-precision head maps, for both heads), the loss code must
    /// take those maps (no dtype clash) and give a finite loss, no step may
    /// be skipped, and the weights must move. (No comparison with fp32: the
    /// assigner picks anchors from the predictions, so bfloat16 moves the
    /// loss of a random model by tens of percent.)
    #[test]
    fn an_autocast_training_step_of_the_real_model_is_finite_and_updates() {
        use crate::model::{Yolo9, training};
        use crate::train::data::{Dataset, collate};
        use crate::train::loss::{Gains, yolo9_train_loss};
        use tch::Kind;
        let _rng = crate::rng_lock();
        let mut m = Yolo9::new(libreyolo_core::cli::ModelSize::T, 3, Device::Cpu).unwrap();
        m.enable_aux(0.25);
        let ds = Dataset::Synthetic { n: 2 };
        let b =
            collate(&[ds.sample(0, 96).unwrap(), ds.sample(1, 96).unwrap()], 16, false).unwrap();
        let mut opt = Sgd::new(&m.vs);
        let before = m.vs.variables()["backbone.conv0.conv.weight"].detach().copy();
        let mut sc = GradScaler::new(Device::Cpu);
        let train = training();
        crate::profiler::set_cpu_autocast(true).unwrap();
        let maps = m.forward_train(&b.images);
        let l = yolo9_train_loss(&maps, &b.targets, (96, 96), 3, &Gains::default(), 0.25);
        crate::profiler::set_cpu_autocast(false).unwrap();
        let kinds: Vec<Kind> =
            maps.main.iter().chain(maps.aux.iter().flatten()).map(|t| t.kind()).collect();
        assert!(kinds.len() == 6 && kinds.iter().all(|k| *k == Kind::BFloat16), "{kinds:?}");
        let value = f64::try_from(&l.total).unwrap();
        sc.scale(&l.total).backward();
        sc.step(&mut opt).unwrap();
        sc.update().unwrap();
        drop(train);
        assert!(value.is_finite() && value > 0.0, "{value}");
        assert_eq!(sc.skipped, 0);
        assert!(
            !m.vs.variables()["backbone.conv0.conv.weight"].equal(&before),
            "the step moved the weights"
        );
    }
}
