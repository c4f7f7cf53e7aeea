//! YOLOv9 detection (`t`, `s`, `m`, `c`) in tch, with the module structure
//! and state-dict key names of LibreYOLO 1.6's `LibreYOLO9Model`
//! (`backbone.*`, `neck.*`, `head.cv2|cv3.*`), so its checkpoints load as
//! they are. Written from the architecture (YOLOv9: ELAN / RepNCSPELAN,
//! AConv / ADown, SPPELAN, the decoupled DFL head), not copied.
//!
//! Unfused, the forward is LibreYOLO 1.6's op for op (its inference never
//! calls `fuse()`), so a default `profile infer` measures the graph the
//! user's pipeline runs. [`Yolo9::fuse`] (`--fuse`) folds every BatchNorm
//! into its convolution and every RepConvN's 1×1 branch into its 3×3 one, the
//! re-parameterisation LibreYOLO's `fuse()` does for deployment.
//!
//! For training, [`Yolo9::enable_aux`] attaches the PGI auxiliary branch
//! LibreYOLO 1.6 trains with (its `enable_aux`, after MultimediaTechLab's
//! `auxiliary` section of `v9-*.yaml`): an SPPELAN on the backbone's pre-SPP
//! B5 feature, a top-down path that concatenates with B4 and B3
//! (`aux.spp`, `aux.elan_a4`, `aux.elan_a3`), and a second detection head on
//! those three maps (`aux_head.cv2|cv3.*`). It only feeds the training loss
//! ([`Yolo9::forward_train`]); a model built for inference never has it, so
//! its graph and state dict stay single-head.
//!
//! Module scopes: while a profiler session records them
//! ([`crate::profiler::Options::module_scopes`]), every forward names its
//! top-level layers as user ranges, `model.N Class` with the index of the
//! Ultralytics-style YOLOv9 layer list and LibreYOLO 1.6's class name
//! ([`layer_scopes`]), each inside a group range: `backbone` (layers 0–9,
//! the stem up to SPPELAN), `neck` (10–21, the FPN/PAN top-down and
//! bottom-up paths with their upsamples and concats) and `head` (22, the
//! DDetect head; in inference its box decoding too, as LibreYOLO's DDetect
//! decodes in eval mode). A training forward adds the group `aux` with
//! `aux AuxNeck` and `aux_head DDetect`, LibreYOLO's attribute names of the
//! PGI branch. Inside the layers, each unfused RepConvN's 1×1 branch and
//! its sums are a range of their own ([`REPCONV_BRANCH`]): what `--fuse`
//! removes, so that a what-if can name it. With no such session a scope
//! costs one atomic load.

use std::collections::HashMap;
use std::ffi::CStr;

use libreyolo_core::cli::ModelSize;
use tch::nn::{self, Init};
use tch::{Device, Kind, Tensor};

use crate::profiler;

/// Channel plan of one size variant.
#[derive(Debug, Clone)]
pub struct Config {
    conv0: i64,
    conv1: i64,
    /// ELAN (t, s) or RepNCSPELAN (m, c) as the first block.
    first_elan: bool,
    first_out: i64,
    first_part: i64,
    /// ADown (c) or AConv (t, s, m) for downsampling.
    adown: bool,
    /// (down_out, elan_out, elan_part) for backbone stages 2, 3, 4.
    stages: [(i64, i64, i64); 3],
    spp_out: i64,
    repeat: i64,
    up1: (i64, i64),
    up2: (i64, i64),
    down1_out: i64,
    down1: (i64, i64),
    down2_out: i64,
    down2: (i64, i64),
    head: [i64; 3],
}

impl Config {
    pub fn of(size: ModelSize) -> Config {
        match size {
            ModelSize::T => Config {
                conv0: 16,
                conv1: 32,
                first_elan: true,
                first_out: 32,
                first_part: 32,
                adown: false,
                stages: [(64, 64, 64), (96, 96, 96), (128, 128, 128)],
                spp_out: 128,
                repeat: 3,
                up1: (96, 96),
                up2: (64, 64),
                down1_out: 48,
                down1: (96, 96),
                down2_out: 64,
                down2: (128, 128),
                head: [64, 96, 128],
            },
            ModelSize::S => Config {
                conv0: 32,
                conv1: 64,
                first_elan: true,
                first_out: 64,
                first_part: 64,
                adown: false,
                stages: [(128, 128, 128), (192, 192, 192), (256, 256, 256)],
                spp_out: 256,
                repeat: 3,
                up1: (192, 192),
                up2: (128, 128),
                down1_out: 96,
                down1: (192, 192),
                down2_out: 128,
                down2: (256, 256),
                head: [128, 192, 256],
            },
            ModelSize::M => Config {
                conv0: 32,
                conv1: 64,
                first_elan: false,
                first_out: 128,
                first_part: 128,
                adown: false,
                stages: [(240, 240, 240), (360, 360, 360), (480, 480, 480)],
                spp_out: 480,
                repeat: 1,
                up1: (360, 360),
                up2: (240, 240),
                down1_out: 184,
                down1: (360, 360),
                down2_out: 240,
                down2: (480, 480),
                head: [240, 360, 480],
            },
            ModelSize::C => Config {
                conv0: 64,
                conv1: 128,
                first_elan: false,
                first_out: 256,
                first_part: 128,
                adown: true,
                stages: [(256, 512, 256), (512, 512, 512), (512, 512, 512)],
                spp_out: 512,
                repeat: 1,
                up1: (512, 512),
                up2: (256, 256),
                down1_out: 256,
                down1: (512, 512),
                down2_out: 512,
                down2: (512, 512),
                head: [256, 512, 512],
            },
        }
    }
}

// ---------------------------------------------------------------- blocks --

/// Conv2d (no bias) + BatchNorm2d(eps 1e-3) + optional SiLU; keys
/// `conv.weight`, `bn.{weight,bias,running_mean,running_var,num_batches_tracked}`.
struct Conv {
    weight: Tensor,
    bn_w: Tensor,
    bn_b: Tensor,
    mean: Tensor,
    var: Tensor,
    stride: i64,
    pad: i64,
    groups: i64,
    act: bool,
    /// Folded (weight, bias) once [`Conv::fuse`] ran.
    fused: Option<(Tensor, Tensor)>,
}

const BN_EPS: f64 = 1e-3;

thread_local! {
    static TRAINING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The largest `--imgsz` accepted: checked before anything is allocated
/// (a training mosaic canvas is 2·imgsz square per image; at 4096 that is
/// 200 MB each, already far beyond any YOLO training recipe).
pub const MAX_IMGSZ: u32 = 4096;

/// The most classes a model is built for: checked before the var store
/// allocates (a checkpoint claiming 1e9 classes would ask for terabytes).
/// LVIS, the largest common detection label set, has 1203.
pub const MAX_CLASSES: i64 = 10_000;

/// Checks `--imgsz`: YOLOv9's strides need a multiple of 32.
pub fn check_imgsz(imgsz: u32) -> libreyolo_core::Result<i64> {
    if imgsz < 32 || imgsz % 32 != 0 {
        return Err(libreyolo_core::Error::usage(format!(
            "--imgsz {imgsz}: YOLOv9 needs a multiple of 32 (e.g. 320, 640)"
        )));
    }
    if imgsz > MAX_IMGSZ {
        return Err(libreyolo_core::Error::usage(format!("--imgsz {imgsz}: at most {MAX_IMGSZ}")));
    }
    Ok(imgsz as i64)
}

/// Refuses a `--batch` × `--imgsz` on the CPU whose working memory would
/// pass the memory budget (`--max-memory`, default half the RAM): at least
/// `per_input` times the float32 input batch, a lower bound measured on
/// YOLOv9-t (inference about 7×, training about 150×). Caught here, it is a
/// sentence; caught by the allocator, it was an abort or the OOM killer.
/// On CUDA the batch lives in VRAM, which this does not judge.
pub fn check_memory(
    batch: usize,
    imgsz: i64,
    per_input: u64,
    device: Device,
    budget: &libreyolo_core::budget::Budget,
) -> libreyolo_core::Result<()> {
    let Some(budget) = budget.limit.filter(|_| device == Device::Cpu) else {
        return Ok(());
    };
    let input = (batch as u64).saturating_mul(3 * 4).saturating_mul((imgsz * imgsz) as u64);
    let need = input.saturating_mul(per_input);
    if need > budget {
        use libreyolo_core::budget::human;
        return Err(libreyolo_core::Error::usage(format!(
            "--batch {batch} at --imgsz {imgsz} needs at least {} of memory on the CPU, more than the {} the capture may use (--max-memory SIZE; default half the RAM): use a smaller --batch or --imgsz",
            human(need),
            human(budget)
        )));
    }
    Ok(())
}

/// BatchNorm in training mode (batch statistics, running statistics updated
/// with momentum 0.03) for forwards on this thread while the returned guard
/// lives: `model.train()` for the training capture. Per thread, so inference
/// elsewhere is untouched; the mode before comes back when the guard drops,
/// on every path out of the scope (an error, a panic) alike.
pub fn training() -> Training {
    Training { before: TRAINING.with(|t| t.replace(true)) }
}

/// BatchNorm in training mode on this thread until dropped ([`training`]).
#[must_use = "training mode ends when the guard is dropped"]
pub struct Training {
    before: bool,
}

impl Drop for Training {
    fn drop(&mut self) {
        TRAINING.with(|t| t.set(self.before));
    }
}

/// Whether forwards on this thread run BatchNorm in training mode.
pub fn is_training() -> bool {
    TRAINING.with(|t| t.get())
}

impl Conv {
    #[allow(clippy::too_many_arguments)]
    fn new(
        p: &nn::Path,
        c1: i64,
        c2: i64,
        k: i64,
        s: i64,
        pad: Option<i64>,
        g: i64,
        act: bool,
    ) -> Conv {
        let fan_in = (c1 / g) * k * k;
        let bound = 1.0 / (fan_in as f64).sqrt();
        let weight = (p / "conv").var(
            "weight",
            &[c2, c1 / g, k, k],
            Init::Uniform { lo: -bound, up: bound },
        );
        let bn = p / "bn";
        let bn_w = bn.var("weight", &[c2], Init::Const(1.0));
        let bn_b = bn.var("bias", &[c2], Init::Const(0.0));
        let mean = bn.zeros_no_train("running_mean", &[c2]);
        let var = bn.ones_no_train("running_var", &[c2]);
        let _ = bn.add("num_batches_tracked", Tensor::zeros([], (Kind::Int64, p.device())), false);
        Conv {
            weight,
            bn_w,
            bn_b,
            mean,
            var,
            stride: s,
            pad: pad.unwrap_or(k / 2),
            groups: g,
            act,
            fused: None,
        }
    }

    /// The folded (weight, bias) of conv + BN.
    fn folded(&self) -> (Tensor, Tensor) {
        let scale = &self.bn_w / (&self.var + BN_EPS).sqrt();
        let w = &self.weight * scale.reshape([-1, 1, 1, 1]);
        let b = &self.bn_b - &self.mean * &scale;
        (w, b)
    }

    fn fuse(&mut self) {
        self.fused = Some(self.folded());
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let y = match &self.fused {
            Some((w, b)) => x.conv2d(w, Some(b), [self.stride], [self.pad], [1], self.groups),
            None => x
                .conv2d(&self.weight, None::<Tensor>, [self.stride], [self.pad], [1], self.groups)
                // cudnn_enabled as nn.BatchNorm2d passes it (torch's default), so
                // CUDA runs the same BatchNorm kernels as LibreYOLO.
                .batch_norm(
                    Some(&self.bn_w),
                    Some(&self.bn_b),
                    Some(&self.mean),
                    Some(&self.var),
                    is_training(),
                    0.03,
                    BN_EPS,
                    true,
                ),
        };
        if self.act { y.silu() } else { y }
    }
}

/// RepConvN: 3×3 conv+BN plus 1×1 conv+BN, summed, SiLU (no identity BN).
struct RepConvN {
    conv1: Conv,
    conv2: Conv,
    /// LibreYOLO's absent identity branch: its forward adds the Python int
    /// `id_out = 0`, one more aten::add (and the cast of that int, an
    /// aten::to) per RepConvN that the profile must show too. A 0-dim int64
    /// CPU tensor adds as Python's wrapped 0 does (tch's `+ 0.0` records two
    /// adds and no cast).
    id_out: Tensor,
    fused: Option<(Tensor, Tensor)>,
}

impl RepConvN {
    fn new(p: &nn::Path, c1: i64, c2: i64) -> RepConvN {
        RepConvN {
            conv1: Conv::new(&(p / "conv1"), c1, c2, 3, 1, Some(1), 1, false),
            conv2: Conv::new(&(p / "conv2"), c1, c2, 1, 1, Some(0), 1, false),
            id_out: Tensor::from(0i64),
            fused: None,
        }
    }
    fn fuse(&mut self) {
        let (w3, b3) = self.conv1.folded();
        let (w1, b1) = self.conv2.folded();
        let w = w3 + w1.constant_pad_nd([1, 1, 1, 1]);
        self.fused = Some((w, b3 + b1));
    }
    fn forward(&self, x: &Tensor) -> Tensor {
        match &self.fused {
            Some((w, b)) => x.conv2d(w, Some(b), [1], [1], [1], 1).silu(),
            None => {
                let y = self.conv1.forward(x);
                // The ops in the same order as one expression; the scope
                // holds what `--fuse` merges away besides the 3×3 branch's
                // BatchNorm ([`REPCONV_BRANCH`]).
                scoped(REPCONV_BRANCH, || y + self.conv2.forward(x) + &self.id_out).silu()
            }
        }
    }
}

struct RepNBottleneck {
    cv1: RepConvN,
    cv2: Conv,
    add: bool,
}

impl RepNBottleneck {
    fn new(p: &nn::Path, c1: i64, c2: i64) -> Self {
        RepNBottleneck {
            cv1: RepConvN::new(&(p / "cv1"), c1, c2),
            cv2: Conv::new(&(p / "cv2"), c2, c2, 3, 1, None, 1, true),
            add: c1 == c2,
        }
    }
    fn fuse(&mut self) {
        self.cv1.fuse();
        self.cv2.fuse();
    }
    fn forward(&self, x: &Tensor) -> Tensor {
        let y = self.cv2.forward(&self.cv1.forward(x));
        if self.add { x + y } else { y }
    }
}

struct RepNCSP {
    cv1: Conv,
    cv2: Conv,
    cv3: Conv,
    m: Vec<RepNBottleneck>,
}

impl RepNCSP {
    fn new(p: &nn::Path, c1: i64, c2: i64, n: i64) -> Self {
        let c = c2 / 2;
        RepNCSP {
            cv1: Conv::new(&(p / "cv1"), c1, c, 1, 1, None, 1, true),
            cv2: Conv::new(&(p / "cv2"), c1, c, 1, 1, None, 1, true),
            cv3: Conv::new(&(p / "cv3"), 2 * c, c2, 1, 1, None, 1, true),
            m: (0..n).map(|i| RepNBottleneck::new(&(p / "m" / i), c, c)).collect(),
        }
    }
    fn fuse(&mut self) {
        self.cv1.fuse();
        self.cv2.fuse();
        self.cv3.fuse();
        self.m.iter_mut().for_each(RepNBottleneck::fuse);
    }
    fn forward(&self, x: &Tensor) -> Tensor {
        let mut y = self.cv1.forward(x);
        for b in &self.m {
            y = b.forward(&y);
        }
        self.cv3.forward(&Tensor::cat(&[y, self.cv2.forward(x)], 1))
    }
}

/// ELAN (first block of t/s): split, two 3×3 convs, concat all.
struct Elan {
    cv1: Conv,
    cv2: Conv,
    cv3: Conv,
    cv4: Conv,
}

impl Elan {
    fn new(p: &nn::Path, c1: i64, c2: i64, c3: i64, c4: i64) -> Self {
        Elan {
            cv1: Conv::new(&(p / "cv1"), c1, c2, 1, 1, None, 1, true),
            cv2: Conv::new(&(p / "cv2"), c2 / 2, c3, 3, 1, None, 1, true),
            cv3: Conv::new(&(p / "cv3"), c3, c3, 3, 1, None, 1, true),
            cv4: Conv::new(&(p / "cv4"), c2 + 2 * c3, c4, 1, 1, None, 1, true),
        }
    }
    fn fuse(&mut self) {
        for c in [&mut self.cv1, &mut self.cv2, &mut self.cv3, &mut self.cv4] {
            c.fuse();
        }
    }
    fn forward(&self, x: &Tensor) -> Tensor {
        let mut y = self.cv1.forward(x).chunk(2, 1);
        let a = self.cv2.forward(&y[1]);
        let b = self.cv3.forward(&a);
        y.push(a);
        y.push(b);
        self.cv4.forward(&Tensor::cat(&y, 1))
    }
}

/// RepNCSPELAN: split, (RepNCSP + 3×3 conv) twice, concat all.
struct RepNCSPElan {
    cv1: Conv,
    cv2: (RepNCSP, Conv),
    cv3: (RepNCSP, Conv),
    cv4: Conv,
}

impl RepNCSPElan {
    fn new(p: &nn::Path, c1: i64, c2: i64, c3: i64, c4: i64, n: i64) -> Self {
        RepNCSPElan {
            cv1: Conv::new(&(p / "cv1"), c1, c2, 1, 1, None, 1, true),
            cv2: (
                RepNCSP::new(&(p / "cv2" / 0), c2 / 2, c3, n),
                Conv::new(&(p / "cv2" / 1), c3, c3, 3, 1, None, 1, true),
            ),
            cv3: (
                RepNCSP::new(&(p / "cv3" / 0), c3, c3, n),
                Conv::new(&(p / "cv3" / 1), c3, c3, 3, 1, None, 1, true),
            ),
            cv4: Conv::new(&(p / "cv4"), c2 + 2 * c3, c4, 1, 1, None, 1, true),
        }
    }
    fn fuse(&mut self) {
        self.cv1.fuse();
        self.cv2.0.fuse();
        self.cv2.1.fuse();
        self.cv3.0.fuse();
        self.cv3.1.fuse();
        self.cv4.fuse();
    }
    fn forward(&self, x: &Tensor) -> Tensor {
        let mut y = self.cv1.forward(x).chunk(2, 1);
        let a = self.cv2.1.forward(&self.cv2.0.forward(&y[1]));
        let b = self.cv3.1.forward(&self.cv3.0.forward(&a));
        y.push(a);
        y.push(b);
        self.cv4.forward(&Tensor::cat(&y, 1))
    }
}

/// Boxed: one model holds one of them, and RepNCSPElan is 2.6× Elan's size.
enum First {
    Elan(Box<Elan>),
    RepNCSPElan(Box<RepNCSPElan>),
}

/// The anchor grid of the last input size: (height, width), anchors, strides.
type Grid = ((i64, i64), Tensor, Tensor);

/// AConv (avg-pool 2/1, 3×3 stride-2 conv) or ADown (two-path).
enum Down {
    AConv { cv: Conv },
    ADown { cv1: Conv, cv2: Conv },
}

impl Down {
    fn new(p: &nn::Path, adown: bool, c1: i64, c2: i64) -> Down {
        if adown {
            Down::ADown {
                cv1: Conv::new(&(p / "cv1"), c1 / 2, c2 / 2, 3, 2, Some(1), 1, true),
                cv2: Conv::new(&(p / "cv2"), c1 / 2, c2 / 2, 1, 1, Some(0), 1, true),
            }
        } else {
            Down::AConv { cv: Conv::new(&(p / "cv"), c1, c2, 3, 2, Some(1), 1, true) }
        }
    }
    fn fuse(&mut self) {
        match self {
            Down::AConv { cv } => cv.fuse(),
            Down::ADown { cv1, cv2 } => {
                cv1.fuse();
                cv2.fuse();
            }
        }
    }
    fn forward(&self, x: &Tensor) -> Tensor {
        let x = x.avg_pool2d([2, 2], [1, 1], [0, 0], false, true, None);
        match self {
            Down::AConv { cv } => cv.forward(&x),
            Down::ADown { cv1, cv2 } => {
                let h = x.chunk(2, 1);
                let a = cv1.forward(&h[0]);
                let b = cv2.forward(&h[1].max_pool2d([3, 3], [2, 2], [1, 1], [1, 1], false));
                Tensor::cat(&[a, b], 1)
            }
        }
    }
}

struct SppElan {
    cv1: Conv,
    cv5: Conv,
}

impl SppElan {
    fn new(p: &nn::Path, c1: i64, c2: i64, c3: i64) -> Self {
        SppElan {
            cv1: Conv::new(&(p / "cv1"), c1, c2, 1, 1, None, 1, true),
            cv5: Conv::new(&(p / "cv5"), 4 * c2, c3, 1, 1, None, 1, true),
        }
    }
    fn fuse(&mut self) {
        self.cv1.fuse();
        self.cv5.fuse();
    }
    fn forward(&self, x: &Tensor) -> Tensor {
        let mut f = vec![self.cv1.forward(x)];
        for _ in 0..3 {
            let y = f.last().unwrap().max_pool2d([5, 5], [1, 1], [2, 2], [1, 1], false);
            f.push(y);
        }
        self.cv5.forward(&Tensor::cat(&f, 1))
    }
}

/// A plain nn.Conv2d with bias (the last layer of each head tower).
struct Conv2d {
    weight: Tensor,
    bias: Tensor,
    groups: i64,
}

impl Conv2d {
    fn new(p: &nn::Path, c1: i64, c2: i64, groups: i64, bias: f64) -> Self {
        let bound = 1.0 / ((c1 / groups) as f64).sqrt();
        Conv2d {
            weight: p.var(
                "weight",
                &[c2, c1 / groups, 1, 1],
                Init::Uniform { lo: -bound, up: bound },
            ),
            // Detection prior as LibreYOLO initialises it: box 1.0, class -10.
            bias: p.var("bias", &[c2], Init::Const(bias)),
            groups,
        }
    }
    fn forward(&self, x: &Tensor) -> Tensor {
        x.conv2d(&self.weight, Some(&self.bias), [1], [0], [1], self.groups)
    }
}

struct Tower {
    a: Conv,
    b: Conv,
    out: Conv2d,
}

impl Tower {
    fn new(p: &nn::Path, c: i64, hidden: i64, out: i64, groups: i64, bias: f64) -> Tower {
        Tower {
            a: Conv::new(&(p / 0), c, hidden, 3, 1, None, 1, true),
            b: Conv::new(&(p / 1), hidden, hidden, 3, 1, None, groups, true),
            out: Conv2d::new(&(p / 2), hidden, out, groups, bias),
        }
    }
    fn fuse(&mut self) {
        self.a.fuse();
        self.b.fuse();
    }
    fn forward(&self, x: &Tensor) -> Tensor {
        self.out.forward(&self.b.forward(&self.a.forward(x)))
    }
}

/// The decoupled detection head (LibreYOLO's `DDetect`): per scale a box
/// tower (`cv2.i`, grouped, `4·reg_max` outputs) and a class tower (`cv3.i`,
/// `nc` outputs), concatenated channel-wise.
struct Detect {
    box_towers: Vec<Tower>,
    cls_towers: Vec<Tower>,
}

impl Detect {
    /// `ch` are the three input widths; `cls_hidden` the class towers'
    /// hidden width (see [`Yolo9::with_class_width`]).
    fn new(p: &nn::Path, ch: &[i64; 3], nc: i64, cls_hidden: i64) -> Detect {
        let groups = 4;
        let box_out = 4 * REG_MAX;
        let round_up = |v: i64, d: i64| (v + d - 1) / d * d;
        let box_hidden = round_up(ch[0] / 4, groups).max(box_out).max(REG_MAX);
        Detect {
            box_towers: ch
                .iter()
                .enumerate()
                .map(|(i, &c)| Tower::new(&(p / "cv2" / i), c, box_hidden, box_out, groups, 1.0))
                .collect(),
            cls_towers: ch
                .iter()
                .enumerate()
                .map(|(i, &c)| Tower::new(&(p / "cv3" / i), c, cls_hidden, nc, 1, -10.0))
                .collect(),
        }
    }
    fn fuse(&mut self) {
        self.box_towers.iter_mut().chain(self.cls_towers.iter_mut()).for_each(Tower::fuse);
    }
    fn forward(&self, feats: &[Tensor]) -> Vec<Tensor> {
        feats
            .iter()
            .enumerate()
            .map(|(i, f)| {
                Tensor::cat(&[self.box_towers[i].forward(f), self.cls_towers[i].forward(f)], 1)
            })
            .collect()
    }
}

/// Nearest-neighbour ×2 upsampling (`nn.Upsample(scale_factor=2)`), through
/// the scale-factor overload `F.interpolate` calls, so the profile records
/// the same two nested `aten::upsample_nearest2d` per call as LibreYOLO's.
fn upsample2(t: &Tensor) -> Tensor {
    t.upsample_nearest2d_vec(None::<&[i64]>, [2.0, 2.0])
}

/// LibreYOLO's `AuxNeck`: SPPELAN on the pre-SPP B5, then upsample + concat
/// with B4 and with B3, each followed by a RepNCSPELAN of the main neck's
/// top-down widths. Returns (A3, A4, A5) for the auxiliary head.
struct AuxNeck {
    spp: SppElan,
    elan_a4: RepNCSPElan,
    elan_a3: RepNCSPElan,
}

impl AuxNeck {
    fn new(p: &nn::Path, cfg: &Config) -> AuxNeck {
        let [(_, b3, _), (_, b4, _), (_, b5, _)] = cfg.stages;
        let elan = |name: &str, c1: i64, (out, part): (i64, i64)| {
            RepNCSPElan::new(&(p / name), c1, part, part / 2, out, cfg.repeat)
        };
        AuxNeck {
            spp: SppElan::new(&(p / "spp"), b5, cfg.spp_out / 2, cfg.spp_out),
            elan_a4: elan("elan_a4", cfg.spp_out + b4, cfg.up1),
            elan_a3: elan("elan_a3", cfg.up1.0 + b3, cfg.up2),
        }
    }
    fn fuse(&mut self) {
        self.spp.fuse();
        self.elan_a4.fuse();
        self.elan_a3.fuse();
    }
    fn forward(&self, p3: &Tensor, p4: &Tensor, b5: &Tensor) -> [Tensor; 3] {
        let a5 = self.spp.forward(b5);
        let a4 = self.elan_a4.forward(&Tensor::cat(&[&upsample2(&a5), p4], 1));
        let a3 = self.elan_a3.forward(&Tensor::cat(&[&upsample2(&a4), p3], 1));
        [a3, a4, a5]
    }
}

/// The PGI auxiliary branch and its loss weight.
struct Aux {
    neck: AuxNeck,
    head: Detect,
    weight: f64,
}

/// Key prefixes of the PGI auxiliary branch in a LibreYOLO state dict.
pub fn is_aux_key(name: &str) -> bool {
    name.starts_with("aux.") || name.starts_with("aux_head.")
}

// --------------------------------------------------------- module scopes --

/// The group scope of layers 0–9: the stem, the ELAN stages and SPPELAN.
pub const BACKBONE: &CStr = c"backbone";
/// The group scope of layers 10–21: the FPN (top-down) and PAN (bottom-up)
/// paths.
pub const NECK: &CStr = c"neck";
/// The group scope of layer 22, the detection head.
pub const HEAD: &CStr = c"head";
/// The group scope of the PGI auxiliary branch (training forward only).
pub const AUX: &CStr = c"aux";
/// The auxiliary branch's two modules, by LibreYOLO's attribute names.
pub const AUX_NECK: &CStr = c"aux AuxNeck";
pub const AUX_HEAD: &CStr = c"aux_head DDetect";

/// Inside each unfused RepConvN: its 1×1 branch (conv + BatchNorm) and
/// the sums of the branches, which `--fuse` merges into the 3×3
/// convolution. With BatchNorm, what a fused graph no longer runs, so that
/// `what-if --op 'batch_norm|RepConvN 1x1'` predicts `--fuse` from the
/// unfused profile alone; the verdict counts these ranges by this name
/// (`libreyolo_core::analysis::verdict::REPCONV_BRANCH`).
pub const REPCONV_BRANCH: &CStr = c"RepConvN 1x1 branch";

/// Top-level layers of YOLOv9 (`model.0` … `model.22`).
pub const LAYERS: usize = 23;

/// The scope name of each top-level layer of a model of `size`:
/// `model.N Class`, N as in the Ultralytics-style YOLOv9 layer list (the
/// upsamples and concats of the neck are layers of their own, so every op
/// of the forward lies in exactly one), the class as LibreYOLO 1.6 names
/// its module (`nn.Upsample` and `torch.cat` as `Upsample` and `Concat`).
/// Sizes differ in layer 2 (ELAN for t and s) and in the downsampling
/// layers (ADown for c).
pub fn layer_scopes(size: ModelSize) -> [&'static CStr; LAYERS] {
    let cfg = Config::of(size);
    let down = |aconv, adown| if cfg.adown { adown } else { aconv };
    [
        c"model.0 Conv",
        c"model.1 Conv",
        if cfg.first_elan { c"model.2 ELAN" } else { c"model.2 RepNCSPELAN" },
        down(c"model.3 AConv", c"model.3 ADown"),
        c"model.4 RepNCSPELAN",
        down(c"model.5 AConv", c"model.5 ADown"),
        c"model.6 RepNCSPELAN",
        down(c"model.7 AConv", c"model.7 ADown"),
        c"model.8 RepNCSPELAN",
        c"model.9 SPPELAN",
        c"model.10 Upsample",
        c"model.11 Concat",
        c"model.12 RepNCSPELAN",
        c"model.13 Upsample",
        c"model.14 Concat",
        c"model.15 RepNCSPELAN",
        down(c"model.16 AConv", c"model.16 ADown"),
        c"model.17 Concat",
        c"model.18 RepNCSPELAN",
        down(c"model.19 AConv", c"model.19 ADown"),
        c"model.20 Concat",
        c"model.21 RepNCSPELAN",
        c"model.22 DDetect",
    ]
}

/// Runs `f` inside the module scope `name` (a range only while a session
/// records module scopes).
#[inline]
fn scoped<T>(name: &'static CStr, f: impl FnOnce() -> T) -> T {
    let _scope = profiler::scope(name);
    f()
}

// ----------------------------------------------------------------- model --

/// The class towers' hidden width of a head built for `nc` classes.
fn default_class_width(cfg: &Config, nc: i64) -> i64 {
    cfg.head[0].max(nc.min(100))
}

pub const REG_MAX: i64 = 16;
pub const STRIDES: [i64; 3] = [8, 16, 32];

/// YOLOv9 detection model.
pub struct Yolo9 {
    pub vs: nn::VarStore,
    pub size: ModelSize,
    pub nc: i64,
    conv0: Conv,
    conv1: Conv,
    elan1: First,
    down2: Down,
    elan2: RepNCSPElan,
    down3: Down,
    elan3: RepNCSPElan,
    down4: Down,
    elan4: RepNCSPElan,
    spp: SppElan,
    n_elan_up1: RepNCSPElan,
    n_elan_up2: RepNCSPElan,
    n_down1: Down,
    n_elan_down1: RepNCSPElan,
    n_down2: Down,
    n_elan_down2: RepNCSPElan,
    head: Detect,
    /// The PGI auxiliary branch, once [`Yolo9::enable_aux`] attached it.
    aux: Option<Aux>,
    project: Tensor,
    /// Anchor grid cache keyed by the input's spatial size.
    grid: std::cell::RefCell<Option<Grid>>,
    /// The top-level layers' scope names ([`layer_scopes`]).
    scopes: [&'static CStr; LAYERS],
}

/// The raw head outputs (one `(B, 4·reg_max + nc, H, W)` map per stride) and
/// the decoded predictions `(B, 4 + nc, anchors)`: xyxy in input pixels,
/// then sigmoid class scores.
pub struct Output {
    pub raw: Vec<Tensor>,
    pub predictions: Tensor,
}

/// The raw maps of a training forward: the main head's and, when the PGI
/// branch is attached with a positive weight, the auxiliary head's (same
/// shapes).
pub struct TrainMaps {
    pub main: Vec<Tensor>,
    pub aux: Option<Vec<Tensor>>,
}

/// What [`Yolo9::load_aux_state`] found for the auxiliary tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuxLoad {
    /// Taken from the state dict (same name and shape).
    pub loaded: usize,
    /// Tensors of the branch, in all.
    pub total: usize,
}

/// Why a model could not be built or a state dict not loaded into it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("number of classes must be between 1 and {MAX_CLASSES}, got {0}")]
    Classes(i64),
    #[error("class head width must be between 1 and {MAX_CLASSES}, got {0}")]
    ClassWidth(i64),
    /// Tensors with another shape, missing or unexpected, summarised.
    #[error("the checkpoint does not fit YOLOv9-{size} with {nc} classes: {why}")]
    Mismatch { size: ModelSize, nc: i64, why: String },
}

impl Yolo9 {
    /// Builds the model with random initialisation on `device`.
    pub fn new(size: ModelSize, nc: i64, device: Device) -> Result<Yolo9, ModelError> {
        Self::with_class_width(size, nc, None, device)
    }

    /// As [`Yolo9::new`], with the class towers' hidden width given. It is
    /// `max(first scale's channels, min(nc, 100))` for a model built with
    /// its `nc`; a checkpoint fine-tuned from COCO keeps the COCO width (80)
    /// under a new `nc`, so loaders read the width from the checkpoint.
    pub fn with_class_width(
        size: ModelSize,
        nc: i64,
        cls_hidden: Option<i64>,
        device: Device,
    ) -> Result<Yolo9, ModelError> {
        let cfg = Config::of(size);
        if !(1..=MAX_CLASSES).contains(&nc) {
            return Err(ModelError::Classes(nc));
        }
        if cls_hidden.is_some_and(|h| !(1..=MAX_CLASSES).contains(&h)) {
            return Err(ModelError::ClassWidth(cls_hidden.unwrap_or(0)));
        }
        let vs = nn::VarStore::new(device);
        let root = vs.root();
        let b = &root / "backbone";
        let n = cfg.repeat;
        let conv0 = Conv::new(&(&b / "conv0"), 3, cfg.conv0, 3, 2, None, 1, true);
        let conv1 = Conv::new(&(&b / "conv1"), cfg.conv0, cfg.conv1, 3, 2, None, 1, true);
        let elan1 = if cfg.first_elan {
            First::Elan(Box::new(Elan::new(
                &(&b / "elan1"),
                cfg.conv1,
                cfg.first_out,
                cfg.first_out / 2,
                cfg.first_out,
            )))
        } else {
            First::RepNCSPElan(Box::new(RepNCSPElan::new(
                &(&b / "elan1"),
                cfg.conv1,
                cfg.first_part,
                cfg.first_part / 2,
                cfg.first_out,
                n,
            )))
        };
        let [s2, s3, s4] = cfg.stages;
        let stage = |name_d: &str, name_e: &str, prev: i64, s: (i64, i64, i64)| {
            (
                Down::new(&(&b / name_d), cfg.adown, prev, s.0),
                RepNCSPElan::new(&(&b / name_e), s.0, s.2, s.2 / 2, s.1, n),
            )
        };
        let (down2, elan2) = stage("down2", "elan2", cfg.first_out, s2);
        let (down3, elan3) = stage("down3", "elan3", s2.1, s3);
        let (down4, elan4) = stage("down4", "elan4", s3.1, s4);
        let spp = SppElan::new(&(&b / "spp"), s4.1, cfg.spp_out / 2, cfg.spp_out);

        let k = &root / "neck";
        let elan = |name: &str, c1: i64, (out, part): (i64, i64)| {
            RepNCSPElan::new(&(&k / name), c1, part, part / 2, out, n)
        };
        let n_elan_up1 = elan("elan_up1", cfg.spp_out + s3.1, cfg.up1);
        let n_elan_up2 = elan("elan_up2", cfg.up1.0 + s2.1, cfg.up2);
        let n_down1 = Down::new(&(&k / "down1"), cfg.adown, cfg.up2.0, cfg.down1_out);
        let n_elan_down1 = elan("elan_down1", cfg.down1_out + cfg.up1.0, cfg.down1);
        let n_down2 = Down::new(&(&k / "down2"), cfg.adown, cfg.down1.0, cfg.down2_out);
        let n_elan_down2 = elan("elan_down2", cfg.down2_out + cfg.spp_out, cfg.down2);

        let cls_hidden = cls_hidden.unwrap_or_else(|| default_class_width(&cfg, nc));
        let head = Detect::new(&(&root / "head"), &cfg.head, nc, cls_hidden);
        let project = Tensor::arange(REG_MAX, (Kind::Float, device)).view([1, 1, REG_MAX, 1]);

        Ok(Yolo9 {
            vs,
            size,
            nc,
            conv0,
            conv1,
            elan1,
            down2,
            elan2,
            down3,
            elan3,
            down4,
            elan4,
            spp,
            n_elan_up1,
            n_elan_up2,
            n_down1,
            n_elan_down1,
            n_down2,
            n_elan_down2,
            head,
            aux: None,
            project,
            grid: std::cell::RefCell::new(None),
            scopes: layer_scopes(size),
        })
    }

    /// Named tensors of the state dict (name → shape), sorted by name.
    pub fn state_shapes(&self) -> Vec<(String, Vec<i64>)> {
        let mut v: Vec<(String, Vec<i64>)> =
            self.vs.variables().into_iter().map(|(k, t)| (k, t.size())).collect();
        v.sort();
        v
    }

    /// Copies a state dict into the main model (backbone, neck, head). Every
    /// such tensor must be present with the same shape; extra entries are
    /// reported as an error too (strict, as LibreYOLO loads its own
    /// checkpoints), except the PGI auxiliary branch (`aux.*`, `aux_head.*`):
    /// its tensors are ignored here, as LibreYOLO's single-head load strips
    /// them, and go in through [`Yolo9::load_aux_state`].
    pub fn load_state(&mut self, state: &[(String, Tensor)]) -> Result<(), ModelError> {
        let mut vars = self.vs.variables();
        vars.retain(|k, _| !is_aux_key(k));
        let given: HashMap<&str, &Tensor> = state.iter().map(|(k, t)| (k.as_str(), t)).collect();
        let mut missing = Vec::new();
        let mut mismatched = Vec::new();
        tch::no_grad(|| {
            for (name, var) in &vars {
                match given.get(name.as_str()) {
                    None => missing.push(name.clone()),
                    Some(src) if src.size() != var.size() => mismatched.push(format!(
                        "{name} {:?} vs model {:?}",
                        src.size(),
                        var.size()
                    )),
                    Some(src) => {
                        let mut v = var.shallow_clone();
                        v.copy_(&src.to_kind(var.kind()).to_device(var.device()));
                    }
                }
            }
        });
        let unexpected: Vec<&str> = state
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !vars.contains_key(*k) && !is_aux_key(k))
            .collect();
        if missing.is_empty() && mismatched.is_empty() && unexpected.is_empty() {
            return Ok(());
        }
        let mut parts = Vec::new();
        let show = |v: &[String]| {
            let head: Vec<&str> = v.iter().take(3).map(String::as_str).collect();
            format!(
                "{}{}",
                head.join(", "),
                if v.len() > 3 { format!(" (+{} more)", v.len() - 3) } else { String::new() }
            )
        };
        if !mismatched.is_empty() {
            mismatched.sort();
            parts.push(format!("{} with another shape: {}", mismatched.len(), show(&mismatched)));
        }
        if !missing.is_empty() {
            missing.sort();
            parts.push(format!("{} missing: {}", missing.len(), show(&missing)));
        }
        if !unexpected.is_empty() {
            let u: Vec<String> = unexpected.iter().map(|s| s.to_string()).collect();
            parts.push(format!("{} unexpected: {}", u.len(), show(&u)));
        }
        Err(ModelError::Mismatch { size: self.size, nc: self.nc, why: parts.join("; ") })
    }

    /// Attaches the PGI auxiliary branch (randomly initialised, on the
    /// model's device) and sets its loss weight, as LibreYOLO's
    /// `enable_aux(weight)`: called again, only the weight changes. The
    /// auxiliary head's class towers take the width a head built for this
    /// `nc` has (`max(first scale's channels, min(nc, 100))`), whatever
    /// width the main head kept from a checkpoint.
    pub fn enable_aux(&mut self, weight: f64) {
        if let Some(aux) = &mut self.aux {
            aux.weight = weight;
            return;
        }
        let cfg = Config::of(self.size);
        let root = self.vs.root();
        let neck = AuxNeck::new(&(&root / "aux"), &cfg);
        let head = Detect::new(
            &(&root / "aux_head"),
            &cfg.head,
            self.nc,
            default_class_width(&cfg, self.nc),
        );
        self.aux = Some(Aux { neck, head, weight });
    }

    /// The weight of the auxiliary loss: 0 without the branch.
    pub fn aux_weight(&self) -> f64 {
        self.aux.as_ref().map_or(0.0, |a| a.weight)
    }

    /// Copies the auxiliary tensors of a state dict into the attached
    /// branch: those with the same name and shape, the rest keep their
    /// initialisation (LibreYOLO's `_load_aux_tensors`, which is how a
    /// checkpoint without the branch, or with another class count, still
    /// trains with it). Nothing to do without the branch.
    pub fn load_aux_state(&mut self, state: &[(String, Tensor)]) -> AuxLoad {
        let mut vars = self.vs.variables();
        vars.retain(|k, _| is_aux_key(k));
        let given: HashMap<&str, &Tensor> =
            state.iter().filter(|(k, _)| is_aux_key(k)).map(|(k, t)| (k.as_str(), t)).collect();
        let mut loaded = 0;
        tch::no_grad(|| {
            for (name, var) in &vars {
                if let Some(src) = given.get(name.as_str()).filter(|s| s.size() == var.size()) {
                    let mut v = var.shallow_clone();
                    v.copy_(&src.to_kind(var.kind()).to_device(var.device()));
                    loaded += 1;
                }
            }
        });
        AuxLoad { loaded, total: vars.len() }
    }

    /// Folds BatchNorm and RepConvN branches (inference only). Call after
    /// loading weights.
    pub fn fuse(&mut self) {
        tch::no_grad(|| {
            self.conv0.fuse();
            self.conv1.fuse();
            match &mut self.elan1 {
                First::Elan(e) => e.fuse(),
                First::RepNCSPElan(e) => e.fuse(),
            }
            for d in [
                &mut self.down2,
                &mut self.down3,
                &mut self.down4,
                &mut self.n_down1,
                &mut self.n_down2,
            ] {
                d.fuse();
            }
            for e in [
                &mut self.elan2,
                &mut self.elan3,
                &mut self.elan4,
                &mut self.n_elan_up1,
                &mut self.n_elan_up2,
                &mut self.n_elan_down1,
                &mut self.n_elan_down2,
            ] {
                e.fuse();
            }
            self.spp.fuse();
            self.head.fuse();
            if let Some(aux) = &mut self.aux {
                aux.neck.fuse();
                aux.head.fuse();
            }
        });
    }

    /// The backbone's P3, P4, P5 (after SPPELAN) and the pre-SPP B5 the
    /// auxiliary branch reads.
    /// Each layer in its module scope, `x` rebound as it goes (as
    /// LibreYOLO's `x = self.conv0(x)`), so an input is freed once used.
    fn backbone(&self, x: &Tensor) -> [Tensor; 4] {
        let _group = profiler::scope(BACKBONE);
        let s = &self.scopes;
        let mut x = scoped(s[0], || self.conv0.forward(x));
        x = scoped(s[1], || self.conv1.forward(&x));
        x = scoped(s[2], || match &self.elan1 {
            First::Elan(e) => e.forward(&x),
            First::RepNCSPElan(e) => e.forward(&x),
        });
        x = scoped(s[3], || self.down2.forward(&x));
        let p3 = scoped(s[4], || self.elan2.forward(&x));
        x = scoped(s[5], || self.down3.forward(&p3));
        let p4 = scoped(s[6], || self.elan3.forward(&x));
        x = scoped(s[7], || self.down4.forward(&p4));
        let b5 = scoped(s[8], || self.elan4.forward(&x));
        let p5 = scoped(s[9], || self.spp.forward(&b5));
        [p3, p4, p5, b5]
    }

    /// The PANet neck: top-down with B4 and B3, bottom-up back to P5; each
    /// upsample and concat a layer of its own, as in the layer list.
    fn neck(&self, p3: &Tensor, p4: &Tensor, p5: &Tensor) -> [Tensor; 3] {
        let _group = profiler::scope(NECK);
        let s = &self.scopes;
        let mut x = scoped(s[10], || upsample2(p5));
        x = scoped(s[11], || Tensor::cat(&[&x, p4], 1));
        let n4 = scoped(s[12], || self.n_elan_up1.forward(&x));
        x = scoped(s[13], || upsample2(&n4));
        x = scoped(s[14], || Tensor::cat(&[&x, p3], 1));
        let o3 = scoped(s[15], || self.n_elan_up2.forward(&x));
        x = scoped(s[16], || self.n_down1.forward(&o3));
        x = scoped(s[17], || Tensor::cat(&[&x, &n4], 1));
        let o4 = scoped(s[18], || self.n_elan_down1.forward(&x));
        x = scoped(s[19], || self.n_down2.forward(&o4));
        x = scoped(s[20], || Tensor::cat(&[&x, p5], 1));
        let o5 = scoped(s[21], || self.n_elan_down2.forward(&x));
        [o3, o4, o5]
    }

    /// The main head on the neck's maps, in the `head` group and its layer
    /// scope; `then` runs inside them too (inference decodes there).
    fn detect<T>(&self, feats: &[Tensor], then: impl FnOnce(Vec<Tensor>) -> T) -> T {
        let _group = profiler::scope(HEAD);
        scoped(self.scopes[22], || then(self.head.forward(feats)))
    }

    /// Raw head outputs for an input `(B, 3, H, W)`: the main head only,
    /// with or without the auxiliary branch attached.
    pub fn forward_raw(&self, x: &Tensor) -> Vec<Tensor> {
        let [p3, p4, p5, _] = self.backbone(x);
        self.detect(&self.neck(&p3, &p4, &p5), |raw| raw)
    }

    /// The forward of a training step (LibreYOLO's forward with targets,
    /// before the loss): the main head's raw maps and, when the auxiliary
    /// branch is attached with a weight above 0, its raw maps from the same
    /// backbone pass.
    pub fn forward_train(&self, x: &Tensor) -> TrainMaps {
        let [p3, p4, p5, b5] = self.backbone(x);
        let main = self.detect(&self.neck(&p3, &p4, &p5), |raw| raw);
        let aux = self.aux.as_ref().filter(|a| a.weight > 0.0).map(|a| {
            let _group = profiler::scope(AUX);
            let feats = scoped(AUX_NECK, || a.neck.forward(&p3, &p4, &b5));
            scoped(AUX_HEAD, || a.head.forward(&feats))
        });
        TrainMaps { main, aux }
    }

    /// Forward plus decode (no grad).
    pub fn forward(&self, x: &Tensor) -> Output {
        tch::no_grad(|| {
            let [p3, p4, p5, _] = self.backbone(x);
            self.detect(&self.neck(&p3, &p4, &p5), |raw| {
                let predictions = self.decode(&raw);
                Output { raw, predictions }
            })
        })
    }

    /// Anchor centres `(1, 2, A)` and strides `(1, 1, A)` for the maps.
    fn anchors(&self, raw: &[Tensor]) -> (Tensor, Tensor) {
        let s = raw[0].size();
        let key = (s[2], s[3]);
        let dev = raw[0].device();
        let kind = raw[0].kind();
        if let Some((k, a, st)) = self.grid.borrow().as_ref() {
            if *k == key && a.device() == dev && a.kind() == kind {
                return (a.shallow_clone(), st.shallow_clone());
            }
        }
        let mut points = Vec::new();
        let mut strides = Vec::new();
        for (f, &stride) in raw.iter().zip(STRIDES.iter()) {
            let (h, w) = (f.size()[2], f.size()[3]);
            let sx = Tensor::arange(w, (Kind::Int64, dev)).to_kind(kind) + 0.5;
            let sy = Tensor::arange(h, (Kind::Int64, dev)).to_kind(kind) + 0.5;
            let grid = Tensor::meshgrid_indexing(&[sy, sx], "ij");
            points.push(Tensor::stack(&[&grid[1], &grid[0]], -1).reshape([-1, 2]));
            strides.push(Tensor::full([h * w, 1], stride as f64, (kind, dev)));
        }
        let a = Tensor::cat(&points, 0).transpose(0, 1).unsqueeze(0);
        let st = Tensor::cat(&strides, 0).transpose(0, 1).unsqueeze(0);
        *self.grid.borrow_mut() = Some((key, a.shallow_clone(), st.shallow_clone()));
        (a, st)
    }

    /// Decodes the raw maps: DFL integral, LTRB → xyxy × stride, sigmoid.
    pub fn decode(&self, raw: &[Tensor]) -> Tensor {
        let (anchors, strides) = self.anchors(raw);
        let mut boxes = Vec::new();
        let mut scores = Vec::new();
        for r in raw {
            let flat = r.flatten(2, -1);
            let parts = flat.split_with_sizes([4 * REG_MAX, self.nc], 1);
            boxes.push(parts[0].shallow_clone());
            scores.push(parts[1].shallow_clone());
        }
        let dist = Tensor::cat(&boxes, 2);
        let (b, _, a) = dist.size3().unwrap();
        let d = (dist.view([b, 4, REG_MAX, a]).softmax(2, dist.kind())
            * self.project.to_kind(dist.kind()))
        .sum_dim_intlist(2, false, dist.kind());
        let lt_rb = d.chunk(2, 1);
        let xyxy = Tensor::cat(&[&anchors - &lt_rb[0], &anchors + &lt_rb[1]], 1) * strides;
        Tensor::cat(&[xyxy, Tensor::cat(&scores, 2).sigmoid()], 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> Tensor {
        tch::manual_seed(5);
        Tensor::rand([2, 3, 64, 64], (Kind::Float, Device::Cpu))
    }

    /// Forwards with batch statistics: from random init with the initial
    /// running statistics, features shrink layer by layer until every head
    /// output is its bias, and outputs could not tell weights apart.
    fn batch_stats<T>(f: impl FnOnce() -> T) -> T {
        let _training = training();
        f()
    }

    /// The branch range is the name the readers' `--fuse` lever looks for.
    #[test]
    fn the_branch_range_is_the_name_the_verdict_reads() {
        assert_eq!(
            REPCONV_BRANCH.to_str().unwrap(),
            libreyolo_core::analysis::verdict::REPCONV_BRANCH
        );
    }

    fn aux_keys(m: &Yolo9) -> usize {
        m.state_shapes().iter().filter(|(k, _)| is_aux_key(k)).count()
    }

    fn state(m: &Yolo9) -> Vec<(String, Tensor)> {
        let mut v: Vec<(String, Tensor)> =
            m.vs.variables().into_iter().map(|(k, t)| (k, t.detach().copy())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Every size's layer scopes number the layers in order; the sizes
    /// differ in layer 2 and in the downsampling layers.
    #[test]
    fn layer_scopes_name_every_layer_in_order() {
        for size in ModelSize::ALL {
            for (i, name) in layer_scopes(size).iter().enumerate() {
                let name = name.to_str().unwrap();
                let class = name
                    .strip_prefix(&format!("model.{i} "))
                    .unwrap_or_else(|| panic!("{size}: layer {i} is named {name}"));
                assert!(!class.is_empty() && !class.contains(' '), "{name}");
            }
        }
        assert_eq!(layer_scopes(ModelSize::T)[2], c"model.2 ELAN");
        assert_eq!(layer_scopes(ModelSize::M)[2], c"model.2 RepNCSPELAN");
        assert_eq!(layer_scopes(ModelSize::S)[19], c"model.19 AConv");
        assert_eq!(layer_scopes(ModelSize::C)[19], c"model.19 ADown");
        assert_eq!(layer_scopes(ModelSize::C)[22], c"model.22 DDetect");
    }

    /// The branch exists only once attached, feeds only the training
    /// forward, and leaves the inference forward as it was.
    #[test]
    fn training_mode_ends_with_its_guard_on_every_path() {
        assert!(!is_training());
        {
            let _outer = training();
            assert!(is_training());
            drop(training());
            assert!(is_training(), "an inner guard gives back the mode it found");
        }
        assert!(!is_training());
        let r = std::panic::catch_unwind(|| {
            let _t = training();
            panic!("a failed step");
        });
        assert!(r.is_err());
        assert!(!is_training(), "a panic ends training mode too");
    }

    #[test]
    fn the_aux_branch_is_training_only() {
        let _rng = crate::rng_lock();
        tch::manual_seed(0);
        let mut m = Yolo9::new(ModelSize::T, 3, Device::Cpu).unwrap();
        let x = input();
        assert_eq!(aux_keys(&m), 0);
        assert_eq!(m.aux_weight(), 0.0);
        let before = batch_stats(|| m.forward_raw(&x));
        assert!(before[0].std(false).double_value(&[]) > 1e-3, "degenerate outputs");
        assert!(m.forward_train(&x).aux.is_none());

        m.enable_aux(0.25);
        let n = aux_keys(&m);
        assert!(n > 0);
        assert_eq!(m.aux_weight(), 0.25);
        let after = batch_stats(|| m.forward_raw(&x));
        for (a, b) in before.iter().zip(&after) {
            assert!(a.equal(b), "the inference forward changed");
        }
        let t = batch_stats(|| m.forward_train(&x));
        for (main, raw) in t.main.iter().zip(&before) {
            assert!(main.equal(raw));
        }
        let aux = t.aux.expect("aux maps with the branch attached");
        assert_eq!(aux.len(), 3);
        for (a, b) in aux.iter().zip(&t.main) {
            assert_eq!(a.size(), b.size());
            assert!(!a.equal(b));
        }

        // Again: only the weight changes. Weight 0: no auxiliary maps.
        m.enable_aux(0.5);
        assert_eq!((aux_keys(&m), m.aux_weight()), (n, 0.5));
        m.enable_aux(0.0);
        assert!(m.forward_train(&x).aux.is_none());
    }

    /// A training state dict (with `aux.*`, `aux_head.*`) loads into an
    /// inference model, which stays single-head; into a training model the
    /// branch takes every tensor, or all but the class outputs under another
    /// class count; a single-head state leaves the branch as initialised.
    #[test]
    fn aux_tensors_load_by_name_and_shape() {
        let _rng = crate::rng_lock();
        tch::manual_seed(1);
        let mut trained = Yolo9::new(ModelSize::T, 3, Device::Cpu).unwrap();
        trained.enable_aux(0.25);
        let sd = state(&trained);
        let x = input();
        let want = batch_stats(|| trained.forward_train(&x));

        tch::manual_seed(2);
        let mut inference = Yolo9::new(ModelSize::T, 3, Device::Cpu).unwrap();
        inference.load_state(&sd).unwrap();
        assert_eq!(aux_keys(&inference), 0);
        for (a, b) in batch_stats(|| inference.forward_raw(&x)).iter().zip(&want.main) {
            assert!(a.equal(b));
        }

        tch::manual_seed(3);
        let mut training = Yolo9::new(ModelSize::T, 3, Device::Cpu).unwrap();
        training.load_state(&sd).unwrap();
        training.enable_aux(0.25);
        let loaded = training.load_aux_state(&sd);
        assert_eq!(loaded, AuxLoad { loaded: aux_keys(&trained), total: aux_keys(&trained) });
        for (a, b) in batch_stats(|| training.forward_train(&x))
            .aux
            .unwrap()
            .iter()
            .zip(want.aux.as_ref().unwrap())
        {
            assert!(a.equal(b));
        }

        let mut other = Yolo9::new(ModelSize::T, 5, Device::Cpu).unwrap();
        other.enable_aux(0.25);
        let r = other.load_aux_state(&sd);
        // aux_head.cv3.{0,1,2}.2.{weight,bias} have 5 outputs instead of 3.
        assert_eq!((r.loaded, r.total), (r.total - 6, aux_keys(&other)));

        let single: Vec<(String, Tensor)> = sd
            .iter()
            .filter(|(k, _)| !is_aux_key(k))
            .map(|(k, t)| (k.clone(), t.shallow_clone()))
            .collect();
        let before = state(&other);
        assert_eq!(other.load_aux_state(&single).loaded, 0);
        for ((k, a), (_, b)) in before.iter().zip(state(&other).iter()) {
            assert!(a.equal(b), "{k} changed");
        }
    }

    /// The auxiliary head's class towers have the width a head built for
    /// the model's `nc` has, even when the main head kept a checkpoint's.
    #[test]
    fn the_aux_class_towers_take_the_default_width() {
        let _rng = crate::rng_lock();
        let mut m = Yolo9::with_class_width(ModelSize::T, 2, Some(80), Device::Cpu).unwrap();
        m.enable_aux(0.25);
        let shapes: HashMap<String, Vec<i64>> = m.state_shapes().into_iter().collect();
        assert_eq!(shapes["head.cv3.0.0.conv.weight"], [80, 64, 3, 3]);
        assert_eq!(shapes["aux_head.cv3.0.0.conv.weight"], [64, 64, 3, 3]);
        assert_eq!(shapes["aux_head.cv3.2.2.weight"], [2, 64, 1, 1]);
    }
}
