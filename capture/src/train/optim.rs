//! LibreYOLO 1.6's YOLOv9 optimizer and learning-rate schedule.
//!
//! [`Sgd`] is `torch.optim.SGD` (Nesterov, momentum, weight decay) over
//! LibreYOLO's three parameter groups (`BaseTrainer._setup_optimizer`):
//! BatchNorm weights without decay, other weights with decay, biases without
//! decay. It runs the algorithm the way torch picks it: one tensor at a time
//! on CPU, and with the multi-tensor `_foreach_*` kernels on CUDA (torch's
//! default there), so the trace holds the same kernels a PyTorch run does.
//!
//! [`Schedule`] is their `LinearLRScheduler` with the YOLO9 defaults: a
//! linear warmup of the learning rate (from 1e-4) and of SGD momentum (from
//! 0.8) over three epochs' worth of iterations, then a linear decay, set
//! before the first step and after every step.

use libreyolo_core::Result;
use tch::Tensor;

use crate::ops;

/// `YOLO9Config` / `TrainConfig` defaults.
pub const LR: f64 = 0.01;
pub const MOMENTUM: f64 = 0.937;
pub const WEIGHT_DECAY: f64 = 5e-4;
pub const NESTEROV: bool = true;
pub const WARMUP_EPOCHS: usize = 3;
pub const WARMUP_LR_START: f64 = 1e-4;
pub const WARMUP_MOMENTUM: f64 = 0.8;
pub const MIN_LR_RATIO: f64 = 0.01;

/// One parameter group: its tensors, their momentum buffers, its decay.
struct Group {
    params: Vec<Tensor>,
    bufs: Vec<Option<Tensor>>,
    weight_decay: f64,
}

pub struct Sgd {
    groups: Vec<Group>,
    pub lr: f64,
    pub momentum: f64,
    /// Multi-tensor kernels (CUDA), as torch's `foreach` default.
    foreach: bool,
}

/// The group a parameter joins, by its state-dict name: 0 BatchNorm weights,
/// 1 other weights (decayed), 2 biases.
fn group_of(name: &str) -> usize {
    if name.ends_with(".bn.weight") {
        0
    } else if name.ends_with("bias") {
        2
    } else {
        1
    }
}

impl Sgd {
    pub fn new(vs: &tch::nn::VarStore) -> Sgd {
        let mut named: Vec<(String, Tensor)> =
            vs.variables().into_iter().filter(|(_, t)| t.requires_grad()).collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        let mut groups: Vec<Group> = [0.0, WEIGHT_DECAY, 0.0]
            .into_iter()
            .map(|weight_decay| Group { params: Vec::new(), bufs: Vec::new(), weight_decay })
            .collect();
        for (k, t) in named {
            let g = &mut groups[group_of(&k)];
            g.params.push(t);
            g.bufs.push(None);
        }
        Sgd { groups, lr: LR, momentum: MOMENTUM, foreach: vs.device().is_cuda() }
    }

    /// (BatchNorm weights, decayed weights, biases) counts.
    pub fn group_sizes(&self) -> (usize, usize, usize) {
        (self.groups[0].params.len(), self.groups[1].params.len(), self.groups[2].params.len())
    }

    /// The gradients of every parameter that has one (for unscaling).
    pub fn grads(&self) -> Vec<Tensor> {
        self.groups
            .iter()
            .flat_map(|g| g.params.iter().map(|p| p.grad()))
            .filter(|g| g.defined())
            .collect()
    }

    /// `optimizer.zero_grad()` (set_to_none, torch's default).
    pub fn zero_grad(&mut self) -> Result<()> {
        let params: Vec<Tensor> =
            self.groups.iter().flat_map(|g| g.params.iter().map(|p| p.shallow_clone())).collect();
        ops::clear_grads(&params)
    }

    pub fn step(&mut self) -> Result<()> {
        let (lr, momentum, foreach) = (self.lr, self.momentum, self.foreach);
        tch::no_grad(|| {
            self.groups.iter_mut().try_for_each(|g| {
                if foreach { g.step_foreach(lr, momentum) } else { g.step_single(lr, momentum) }
            })
        })
    }
}

impl Group {
    /// torch's `_single_tensor_sgd`.
    fn step_single(&mut self, lr: f64, momentum: f64) -> Result<()> {
        for (p, buf) in self.params.iter().zip(self.bufs.iter_mut()) {
            let g = p.grad();
            if !g.defined() {
                continue;
            }
            let d = if self.weight_decay != 0.0 { ops::add(&g, p, self.weight_decay)? } else { g };
            let b = match buf {
                Some(b) => {
                    ops::mul_(b, momentum)?;
                    ops::add_(b, &d, 1.0)?;
                    b.shallow_clone()
                }
                None => buf.insert(d.detach().copy()).shallow_clone(),
            };
            let upd = if NESTEROV { ops::add(&d, &b, momentum)? } else { b };
            ops::add_(p, &upd, -lr)?;
        }
        Ok(())
    }

    /// torch's `_multi_tensor_sgd`: the same arithmetic, one kernel per list.
    fn step_foreach(&mut self, lr: f64, momentum: f64) -> Result<()> {
        let live: Vec<usize> =
            (0..self.params.len()).filter(|&i| self.params[i].grad().defined()).collect();
        if live.is_empty() {
            return Ok(());
        }
        let params: Vec<Tensor> = live.iter().map(|&i| self.params[i].shallow_clone()).collect();
        let mut grads: Vec<Tensor> = params.iter().map(|p| p.grad()).collect();
        if self.weight_decay != 0.0 {
            grads = ops::foreach_add(&grads, &params, self.weight_decay)?;
        }
        if live.iter().all(|&i| self.bufs[i].is_some()) {
            let bufs: Vec<Tensor> = live
                .iter()
                .map(|&i| self.bufs[i].as_ref().expect("checked").shallow_clone())
                .collect();
            ops::foreach_mul_(&bufs, momentum)?;
            ops::foreach_add_(&bufs, &grads, 1.0)?;
        } else {
            // The first step: each buffer starts as a copy of its gradient.
            for (&i, g) in live.iter().zip(&grads) {
                match &self.bufs[i] {
                    Some(b) => {
                        ops::mul_(b, momentum)?;
                        ops::add_(b, g, 1.0)?;
                    }
                    None => self.bufs[i] = Some(g.detach().copy()),
                }
            }
        }
        let bufs: Vec<Tensor> = live
            .iter()
            .map(|&i| self.bufs[i].as_ref().expect("set above").shallow_clone())
            .collect();
        let update = if NESTEROV {
            ops::foreach_add_(&grads, &bufs, momentum)?;
            grads
        } else {
            bufs
        };
        ops::foreach_add_(&params, &update, -lr)
    }
}

/// `LinearLRScheduler` with YOLO9's warmup of the learning rate and momentum.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    warmup_iters: usize,
    total_iters: usize,
}

impl Schedule {
    /// `iters_per_epoch` batches per pass over the data, `epochs` passes
    /// (LibreYOLO's `profile run` trains warmup + steps + 5 epochs and stops
    /// when the window is full).
    pub fn new(iters_per_epoch: usize, epochs: usize) -> Schedule {
        Schedule {
            warmup_iters: iters_per_epoch * WARMUP_EPOCHS,
            total_iters: iters_per_epoch * epochs,
        }
    }

    pub fn warmup_iters(&self) -> usize {
        self.warmup_iters
    }

    /// The learning rate after `iters` optimizer steps.
    pub fn lr(&self, iters: usize) -> f64 {
        let start = WARMUP_LR_START.min(LR);
        if iters <= self.warmup_iters {
            if self.warmup_iters == 0 {
                LR
            } else {
                (LR - start) * iters as f64 / self.warmup_iters as f64 + start
            }
        } else {
            let progress = (iters - self.warmup_iters) as f64
                / self.total_iters.saturating_sub(self.warmup_iters).max(1) as f64;
            LR - (LR - LR * MIN_LR_RATIO) * progress
        }
    }

    /// SGD momentum after `iters` steps.
    pub fn momentum(&self, iters: usize) -> f64 {
        if self.warmup_iters == 0 || iters >= self.warmup_iters {
            MOMENTUM
        } else {
            WARMUP_MOMENTUM + (MOMENTUM - WARMUP_MOMENTUM) * iters as f64 / self.warmup_iters as f64
        }
    }

    /// Sets `opt`'s learning rate and momentum for step `iters`.
    pub fn apply(&self, opt: &mut Sgd, iters: usize) {
        opt.lr = self.lr(iters);
        opt.momentum = self.momentum(iters);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    #[test]
    fn parameter_groups_follow_libreyolo() {
        assert_eq!(group_of("backbone.conv0.bn.weight"), 0);
        assert_eq!(group_of("backbone.conv0.bn.bias"), 2);
        assert_eq!(group_of("head.cv3.0.2.bias"), 2);
        assert_eq!(group_of("backbone.conv0.conv.weight"), 1);
        assert_eq!(group_of("head.cv2.1.2.weight"), 1);
        let _rng = crate::rng_lock();
        let m =
            crate::model::Yolo9::new(libreyolo_core::cli::ModelSize::T, 2, Device::Cpu).unwrap();
        let (bn, w, b) = Sgd::new(&m.vs).group_sizes();
        assert!(bn > 0 && w > 0 && b > 0);
        // Every conv+BN contributes one conv weight, one BN weight and one BN
        // bias; the head's plain output convs add a weight and a bias each.
        assert_eq!(w, bn + 6);
        assert_eq!(b, bn + 6);
    }

    fn scalar_param(vs: &tch::nn::VarStore, name: &str, v: f64) -> Tensor {
        (vs.root() / name).var("weight", &[1], tch::nn::Init::Const(v))
    }

    /// Two steps by hand: d = g + wd·p, buf = d then m·buf + d, p -= lr·(d + m·buf).
    #[test]
    fn sgd_matches_torch_nesterov_with_decay() {
        let vs = tch::nn::VarStore::new(Device::Cpu);
        let w = scalar_param(&vs, "conv", 1.0);
        let mut opt = Sgd::new(&vs);
        (&w * &w).sum(Kind::Float).backward();
        opt.step().unwrap();
        let d = 2.0 + WEIGHT_DECAY;
        let want = 1.0 - LR * (d + MOMENTUM * d);
        assert!((f64::try_from(w.get(0)).unwrap() - want).abs() < 1e-6);
        opt.zero_grad().unwrap();
        (&w * &w).sum(Kind::Float).backward();
        opt.step().unwrap();
        let d2 = 2.0 * want + WEIGHT_DECAY * want;
        let buf = MOMENTUM * d + d2;
        let want2 = want - LR * (d2 + MOMENTUM * buf);
        assert!((f64::try_from(w.get(0)).unwrap() - want2).abs() < 1e-6);
    }

    /// The multi-tensor path (CUDA's) computes what the per-tensor one does;
    /// the foreach kernels run on CPU too.
    #[test]
    fn foreach_sgd_equals_single_tensor_sgd() {
        // Fixed values, not the global RNG other tests share.
        let init =
            |n: i64, k: f64| Tensor::arange(n, (Kind::Float, Device::Cpu)).g_mul_scalar(k).sin();
        let run = |foreach: bool| {
            let vs = tch::nn::VarStore::new(Device::Cpu);
            let a = (vs.root() / "a").var_copy("weight", &init(6, 0.7).view([3, 2]));
            let b = (vs.root() / "b").var_copy("bias", &init(2, 1.3));
            let c = (vs.root() / "c" / "bn").var_copy("weight", &init(2, 2.1));
            let x = init(12, 0.45).view([4, 3]);
            let mut opt = Sgd::new(&vs);
            opt.foreach = foreach;
            let sched = Schedule::new(2, 10);
            for i in 0..4 {
                sched.apply(&mut opt, i);
                ((x.matmul(&a) + &b) * &c).tanh().square().sum(Kind::Float).backward();
                opt.step().unwrap();
                opt.zero_grad().unwrap();
            }
            [a, b, c].map(|t| Vec::<f32>::try_from(t.detach().flatten(0, -1)).unwrap())
        };
        let (single, multi) = (run(false), run(true));
        assert_ne!(
            single[0],
            Vec::<f32>::try_from(init(6, 0.7)).unwrap(),
            "the steps moved the weights"
        );
        for (s, m) in single.iter().zip(&multi) {
            for (x, y) in s.iter().zip(m) {
                assert!((x - y).abs() < 1e-6, "{single:?} vs {multi:?}");
            }
        }
    }

    /// SGD steps on a fixed batch lower a smooth loss of the real model
    /// (the mean square of its raw head maps), through every parameter
    /// group, momentum and weight decay. Not YOLO's own loss, and not at a
    /// training learning rate: at random init on a batch of two the model
    /// is sharp (here |g|² ≈ 4·10⁵, and a step of 10⁻⁷·g already leaves
    /// the linear region), so at 10⁻⁴ either loss jumps by ±0.3% per step
    /// whatever the optimizer does — whether 8 steps lowered it depended on
    /// the CPU's kernels (yes on an Intel host, no on an AMD one). A step of
    /// 10⁻⁹·g is first-order: each lowers the loss by about lr·|g|².
    #[test]
    fn sgd_lowers_the_loss_of_the_real_model_on_a_fixed_batch() {
        use crate::train::data::{Dataset, collate};
        let _rng = crate::rng_lock();
        tch::manual_seed(0);
        let m =
            crate::model::Yolo9::new(libreyolo_core::cli::ModelSize::T, 2, Device::Cpu).unwrap();
        let ds = Dataset::Synthetic { n: 2 };
        let b = collate(&[ds.sample(0, 64).unwrap(), ds.sample(1, 64).unwrap()], 8, false).unwrap();
        let mut opt = Sgd::new(&m.vs);
        opt.lr = 1e-9;
        let training = crate::model::training();
        let mut losses = Vec::new();
        for _ in 0..8 {
            let maps = m.forward_raw(&b.images);
            let l = maps.iter().map(|t| t.square().mean(Kind::Float)).sum::<Tensor>();
            l.backward();
            opt.step().unwrap();
            opt.zero_grad().unwrap();
            losses.push(f64::try_from(&l).unwrap());
        }
        drop(training);
        assert!(losses.iter().all(|v| v.is_finite()), "{losses:?}");
        // Every step lowers it, by far more than float32's rounding of it.
        assert!(losses.windows(2).all(|w| w[1] < w[0] - 1e-5), "{losses:?}");
    }

    #[test]
    fn schedule_warms_up_lr_and_momentum_then_decays() {
        let s = Schedule::new(10, 20); // warmup 30 iterations, 200 in all
        assert_eq!(s.warmup_iters(), 30);
        assert!((s.lr(0) - WARMUP_LR_START).abs() < 1e-12);
        assert!((s.lr(15) - (WARMUP_LR_START + (LR - WARMUP_LR_START) / 2.0)).abs() < 1e-12);
        assert!((s.lr(30) - LR).abs() < 1e-12);
        assert!((s.lr(200) - LR * MIN_LR_RATIO).abs() < 1e-12);
        assert!(s.lr(100) < s.lr(31));
        assert!((s.momentum(0) - WARMUP_MOMENTUM).abs() < 1e-12);
        assert!((s.momentum(15) - (WARMUP_MOMENTUM + MOMENTUM) / 2.0).abs() < 1e-12);
        assert_eq!(s.momentum(30), MOMENTUM);
        assert_eq!(Schedule::new(0, 5).lr(0), LR);
    }
}
