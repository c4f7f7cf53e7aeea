//! The YOLOv9 training loss as LibreYOLO 1.6 computes it
//! (`libreyolo/models/yolo9/loss.py`, itself after MultimediaTechLab/YOLO),
//! written here in tch from that description:
//!
//! - anchors: one point per cell of each head map, at the cell centre in
//!   input pixels, with the map's stride (8, 16, 32);
//! - decode: the box channels are `(4, reg_max)` distributions; softmax,
//!   integral over `0..reg_max`, × stride gives left/top/right/bottom
//!   distances, hence xyxy boxes in pixels;
//! - task-aligned assignment on detached predictions: an anchor may take a
//!   target when it lies inside the box and every distance fits the DFL range
//!   (`≤ reg_max − 1.01` strides); score = CIoU^6 · p(class)^0.5; top 10
//!   anchors per target, at least one anchor per target that has any score,
//!   an anchor claimed by several targets keeps the one of highest IoU; the
//!   class target is one-hot scaled by score / max score · max IoU;
//! - losses: BCE-with-logits on every anchor and class, CIoU and DFL on the
//!   assigned anchors weighted by their class target, all divided by the sum
//!   of class targets (at least 1); gains box 7.5, DFL 1.5, class 0.5.
//!
//! With the PGI auxiliary branch attached, [`yolo9_train_loss`] adds the
//! auxiliary head's loss at its weight, component by component.
//!
//! Targets are `(B, M, 5)` rows `[class, x1, y1, x2, y2]` normalised to the
//! input size; rows of zeros pad images with fewer than `M` boxes (a zero box
//! holds no anchor, so it is never assigned).

use tch::{Device, Kind, Reduction, Tensor};

use crate::model::{REG_MAX, STRIDES, TrainMaps};

/// LibreYOLO's defaults for YOLOv9 (`YOLO9Loss.__init__`).
#[derive(Debug, Clone, Copy)]
pub struct Gains {
    pub box_gain: f64,
    pub dfl_gain: f64,
    pub cls_gain: f64,
    pub topk: i64,
    /// Exponent of the IoU in the alignment score (their `iou_factor`).
    pub iou_factor: f64,
    /// Exponent of the class probability (their `cls_factor`).
    pub cls_factor: f64,
}

impl Default for Gains {
    fn default() -> Self {
        Gains {
            box_gain: 7.5,
            dfl_gain: 1.5,
            cls_gain: 0.5,
            topk: 10,
            iou_factor: 6.0,
            cls_factor: 0.5,
        }
    }
}

const EPS: f64 = 1e-7;

/// The loss of one batch: the total to backpropagate and its weighted parts.
pub struct Loss {
    pub total: Tensor,
    pub box_loss: Tensor,
    pub dfl_loss: Tensor,
    pub cls_loss: Tensor,
    /// Assigned (foreground) anchors per image.
    pub fg_per_image: f64,
}

/// Anchor centres `(A, 2)` in pixels and their strides `(A,)`, from the
/// head maps' sizes (as `generate_anchors` for an input divisible by 32).
pub fn anchors(raw: &[Tensor]) -> (Tensor, Tensor) {
    let dev = raw[0].device();
    let mut points = Vec::new();
    let mut scalers = Vec::new();
    for (f, &stride) in raw.iter().zip(STRIDES.iter()) {
        let (h, w) = (f.size()[2], f.size()[3]);
        let shift = (stride / 2) as f64;
        let xs = Tensor::arange(w, (Kind::Float, dev)) * stride as f64 + shift;
        let ys = Tensor::arange(h, (Kind::Float, dev)) * stride as f64 + shift;
        let g = Tensor::meshgrid_indexing(&[ys, xs], "ij");
        points.push(Tensor::stack(&[g[1].flatten(0, -1), g[0].flatten(0, -1)], -1));
        scalers.push(Tensor::full([h * w], stride as f64, (Kind::Float, dev)));
    }
    (Tensor::cat(&points, 0), Tensor::cat(&scalers, 0))
}

/// Predictions in loss form: class logits `(B, A, nc)`, box distributions
/// `(B, A, 4, reg_max)` and decoded xyxy boxes in pixels `(B, A, 4)`.
pub struct Decoded {
    pub cls: Tensor,
    pub anc: Tensor,
    pub boxes: Tensor,
}

/// Their `Vec2Box`: split, flatten across scales, DFL integral, to xyxy.
pub fn decode(raw: &[Tensor], anchor_grid: &Tensor, scaler: &Tensor) -> Decoded {
    let mut cls = Vec::new();
    let mut anc = Vec::new();
    for p in raw {
        let (b, c, h, w) = p.size4().expect("head maps are 4-D");
        let parts = p.split_with_sizes([4 * REG_MAX, c - 4 * REG_MAX], 1);
        cls.push(parts[1].permute([0, 2, 3, 1]).reshape([b, h * w, -1]));
        anc.push(parts[0].view([b, 4, REG_MAX, h, w]).permute([0, 3, 4, 1, 2]).reshape([
            b,
            h * w,
            4,
            REG_MAX,
        ]));
    }
    let cls = Tensor::cat(&cls, 1);
    let anc = Tensor::cat(&anc, 1);
    let proj = Tensor::arange(REG_MAX, (anc.kind(), anc.device())).view([1, 1, 1, -1]);
    let dist = (anc.softmax(3, anc.kind()) * proj).sum_dim_intlist(3, false, anc.kind());
    let ltrb = dist * scaler.view([1, -1, 1]);
    let lr = ltrb.chunk(2, -1);
    let boxes = Tensor::cat(&[anchor_grid - &lr[0], anchor_grid + &lr[1]], -1);
    Decoded { cls, anc, boxes }
}

/// CIoU of boxes broadcast against each other (xyxy, last dim 4), as
/// LibreYOLO's `compute_iou(…, "ciou")`: IoU − centre distance² / enclosing
/// diagonal² − α·v with α computed without gradient.
pub fn ciou(b1: &Tensor, b2: &Tensor) -> Tensor {
    let c = |t: &Tensor, i: i64| t.select(-1, i);
    let (x1a, y1a, x2a, y2a) = (c(b1, 0), c(b1, 1), c(b1, 2), c(b1, 3));
    let (x1b, y1b, x2b, y2b) = (c(b2, 0), c(b2, 1), c(b2, 2), c(b2, 3));
    let iw = (x2a.minimum(&x2b) - x1a.maximum(&x1b)).clamp_min(0.0);
    let ih = (y2a.minimum(&y2b) - y1a.maximum(&y1b)).clamp_min(0.0);
    let inter = iw * ih;
    let area_a = (&x2a - &x1a) * (&y2a - &y1a);
    let area_b = (&x2b - &x1b) * (&y2b - &y1b);
    let iou = &inter / (area_a + area_b - &inter + EPS);
    let cent = ((&x2a + &x1a) / 2.0 - (&x2b + &x1b) / 2.0).square()
        + ((&y2a + &y1a) / 2.0 - (&y2b + &y1b) / 2.0).square();
    let cw = x2a.maximum(&x2b) - x1a.minimum(&x1b);
    let ch = y2a.maximum(&y2b) - y1a.minimum(&y1b);
    let diag = cw.square() + ch.square() + EPS;
    let diou = &iou - cent / diag;
    let arctan =
        ((&x2a - &x1a) / (&y2a - &y1a + EPS)).atan() - ((&x2b - &x1b) / (&y2b - &y1b + EPS)).atan();
    let v = arctan.square() * (4.0 / (std::f64::consts::PI * std::f64::consts::PI));
    let alpha = tch::no_grad(|| &v / (&v - &iou + 1.0 + EPS));
    diou - alpha * v
}

/// The assignment: per-anchor class targets `(B, A, nc)` (scaled one-hot),
/// box targets `(B, A, 4)` in pixels and the foreground mask `(B, A)`.
pub struct Assigned {
    pub cls: Tensor,
    pub boxes: Tensor,
    pub fg: Tensor,
}

/// Task-aligned assignment (their `BoxMatcher`). `targets` are `(B, M, 5)`
/// in pixels; `pred_cls` are logits and `pred_boxes` pixels, both detached.
pub fn assign(
    targets: &Tensor,
    pred_cls: &Tensor,
    pred_boxes: &Tensor,
    anchor_grid: &Tensor,
    scaler: &Tensor,
    nc: i64,
    g: &Gains,
) -> Assigned {
    let (b, a, _) = pred_cls.size3().expect("(B, A, nc)");
    let m = targets.size()[1];
    let dev = pred_cls.device();
    if m == 0 {
        return Assigned {
            cls: Tensor::zeros([b, a, nc], (Kind::Float, dev)),
            boxes: Tensor::zeros([b, a, 4], (Kind::Float, dev)),
            fg: Tensor::zeros([b, a], (Kind::Bool, dev)),
        };
    }
    let parts = targets.split_with_sizes([1, 4], -1);
    let t_cls = parts[0].to_kind(Kind::Int64).clamp_min(0); // (B, M, 1)
    let t_box = &parts[1]; // (B, M, 4)

    // Which anchors may predict which target: inside the box and within reach.
    let tb = t_box.unsqueeze(2); // (B, M, 1, 4)
    let ax = anchor_grid.select(1, 0).view([1, 1, a]);
    let ay = anchor_grid.select(1, 1).view([1, 1, a]);
    let dist = Tensor::stack(
        &[
            &ax - tb.select(-1, 0),
            &ay - tb.select(-1, 1),
            tb.select(-1, 2) - &ax,
            tb.select(-1, 3) - &ay,
        ],
        -1,
    ) / scaler.view([1, 1, a, 1]);
    let grid_mask =
        dist.amin(-1, false).ge(0.0).logical_and(&dist.amax(-1, false).le(REG_MAX as f64 - 1.01));

    let iou = ciou(&t_box.unsqueeze(2), &pred_boxes.unsqueeze(1)).clamp(0.0, 1.0); // (B, M, A)
    let probs = pred_cls.sigmoid().transpose(1, 2); // (B, nc, A)
    let cls_mat = probs.gather(1, &t_cls.expand([b, m, a], false), false); // (B, M, A)
    let score = iou.pow_tensor_scalar(g.iou_factor) * cls_mat.pow_tensor_scalar(g.cls_factor);

    // Top-k anchors per target among the reachable ones.
    let k = g.topk.min(a);
    let masked = grid_mask.to_kind(Kind::Float) * &score;
    let (values, indices) = masked.topk(k, -1, true, true);
    let topk_targets = score.zeros_like().scatter(-1, &indices, &values);
    let mut topk_mask = topk_targets.gt(0.0);

    // At least one anchor for every target that has any score.
    let (best_v, best_i) = score.max_dim(-1, false);
    let best_anchor = Tensor::zeros_like(&topk_mask).scatter_value(-1, &best_i.unsqueeze(-1), 1);
    let without =
        topk_mask.sum_dim_intlist(-1, false, Kind::Int64).eq(0).logical_and(&best_v.gt(0.0));
    // tch's `a.where_self(cond, b)` is torch.where(cond, a, b).
    topk_mask = best_anchor.where_self(&without.unsqueeze(-1), &topk_mask);

    // An anchor claimed by several targets keeps the one of highest IoU.
    let dup = topk_mask.sum_dim_intlist(1, true, Kind::Int64).gt(1).expand([b, m, a], false);
    let best_t = (topk_mask.to_kind(Kind::Float) * &iou).argmax(1, true); // (B, 1, A)
    let best_target = Tensor::zeros_like(&topk_mask).scatter_value(1, &best_t, 1);
    topk_mask = best_target.where_self(&dup, &topk_mask);
    let unique = topk_mask.to_kind(Kind::Uint8).argmax(1, false).unsqueeze(-1); // (B, A, 1)
    let fg = topk_mask.any_dim(1, false); // (B, A)

    let boxes = t_box.gather(1, &unique.repeat([1, 1, 4]), false);
    let cls_idx = t_cls.gather(1, &unique, false); // (B, A, 1)
    let one_hot = Tensor::zeros([b, a, nc], (Kind::Float, dev)).scatter_value(-1, &cls_idx, 1.0);

    let maskf = topk_mask.to_kind(Kind::Float);
    let iou_m = iou * &maskf;
    let score_m = score * &maskf;
    let max_score = score_m.amax(-1, true);
    let max_iou = iou_m.amax(-1, true);
    let norm = (score_m / (max_score + 1e-9)) * max_iou; // (B, M, A)
    let norm = norm.permute([0, 2, 1]).gather(2, &unique, false); // (B, A, 1)
    let cls = one_hot * norm * fg.unsqueeze(-1).to_kind(Kind::Float);
    Assigned { cls, boxes, fg }
}

/// The YOLOv9 loss of raw head maps against normalised targets, for an
/// input of `imgsz = (W, H)` pixels.
pub fn yolo9_loss(raw: &[Tensor], targets: &Tensor, imgsz: (i64, i64), nc: i64, g: &Gains) -> Loss {
    let (anchor_grid, scaler) = anchors(raw);
    let d = decode(raw, &anchor_grid, &scaler);
    let b = d.cls.size()[0];
    let dev = d.cls.device();
    let (w, h) = (imgsz.0 as f64, imgsz.1 as f64);
    let scale =
        Tensor::from_slice(&[1.0f32, w as f32, h as f32, w as f32, h as f32]).to_device(dev);
    let t = targets.to_kind(Kind::Float) * scale;
    let asg = tch::no_grad(|| {
        assign(&t, &d.cls.detach(), &d.boxes.detach(), &anchor_grid, &scaler, nc, g)
    });

    let s = scaler.view([1, -1, 1]);
    let pred_box_n = &d.boxes / &s;
    let tgt_box_n = &asg.boxes / &s;
    let cls_norm = asg.cls.sum(Kind::Float).clamp_min(1.0);
    let loss_cls = d
        .cls
        .binary_cross_entropy_with_logits::<Tensor>(&asg.cls, None, None, Reduction::None)
        .sum(Kind::Float)
        / &cls_norm;

    let n_fg = i64::try_from(asg.fg.sum(Kind::Int64)).unwrap_or(0);
    let (loss_box, loss_dfl) = if n_fg > 0 {
        let fg = [Some(&asg.fg)];
        let box_norm = asg.cls.sum_dim_intlist(-1, false, Kind::Float).index(&fg); // (N,)
        let p = pred_box_n.index(&fg);
        let q = tgt_box_n.index(&fg);
        let loss_box = (ciou(&p, &q).neg() + 1.0) * &box_norm;
        let loss_box = loss_box.sum(Kind::Float) / &cls_norm;

        let anchors_n = (&anchor_grid / scaler.unsqueeze(1)).unsqueeze(0); // (1, A, 2)
        let lr = tgt_box_n.chunk(2, -1);
        let tdist = Tensor::cat(&[&anchors_n - &lr[0], &lr[1] - &anchors_n], -1)
            .clamp(0.0, REG_MAX as f64 - 1.01);
        let picked_t = tdist.index(&fg).view([-1]);
        let picked_p = d.anc.index(&fg).view([-1, REG_MAX]);
        let left = picked_t.floor();
        let right = &left + 1.0;
        let wl = &right - &picked_t;
        let wr = &picked_t - &left;
        let ce = |lbl: &Tensor| {
            picked_p.cross_entropy_loss::<Tensor>(
                &lbl.to_kind(Kind::Int64),
                None,
                Reduction::None,
                -100,
                0.0,
            )
        };
        let dfl = (ce(&left) * wl + ce(&right) * wr).view([-1, 4]).mean_dim(-1, false, Kind::Float);
        let loss_dfl = (dfl * &box_norm).sum(Kind::Float) / &cls_norm;
        (loss_box, loss_dfl)
    } else {
        (pred_box_n.sum(Kind::Float) * 0.0, d.anc.sum(Kind::Float) * 0.0)
    };
    let box_loss = loss_box * g.box_gain;
    let dfl_loss = loss_dfl * g.dfl_gain;
    let cls_loss = loss_cls * g.cls_gain;
    let total = &box_loss + &dfl_loss + &cls_loss;
    Loss { total, box_loss, dfl_loss, cls_loss, fg_per_image: n_fg as f64 / b.max(1) as f64 }
}

/// LibreYOLO's `combine_aux_losses`: every component (total, box, DFL,
/// class) becomes `main + weight · aux`, so the total backpropagated and the
/// value reported are the combined total; the foreground count stays the
/// main head's.
pub fn combine_aux_losses(main: Loss, aux: &Loss, weight: f64) -> Loss {
    let mix = |m: &Tensor, a: &Tensor| m + a * weight;
    Loss {
        total: mix(&main.total, &aux.total),
        box_loss: mix(&main.box_loss, &aux.box_loss),
        dfl_loss: mix(&main.dfl_loss, &aux.dfl_loss),
        cls_loss: mix(&main.cls_loss, &aux.cls_loss),
        fg_per_image: main.fg_per_image,
    }
}

/// The loss of a training forward: the main head's loss, plus the PGI
/// auxiliary head's at `aux_weight` when the forward produced its maps
/// (each head has its own assignment, on its own predictions, as
/// LibreYOLO's second `YOLO9Loss` instance).
pub fn yolo9_train_loss(
    maps: &TrainMaps,
    targets: &Tensor,
    imgsz: (i64, i64),
    nc: i64,
    g: &Gains,
    aux_weight: f64,
) -> Loss {
    let main = yolo9_loss(&maps.main, targets, imgsz, nc, g);
    match &maps.aux {
        Some(aux) => combine_aux_losses(main, &yolo9_loss(aux, targets, imgsz, nc, g), aux_weight),
        None => main,
    }
}

/// Device of a set of head maps (for callers building targets).
pub fn device_of(raw: &[Tensor]) -> Device {
    raw[0].device()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn anchors_are_cell_centres_with_strides() {
        let raw: Vec<Tensor> = [(8, 8), (4, 4), (2, 2)]
            .iter()
            .map(|&(h, w)| Tensor::zeros([1, 65, h, w], (Kind::Float, Device::Cpu)))
            .collect();
        let (a, s) = anchors(&raw);
        assert_eq!(a.size(), vec![84, 2]);
        assert_eq!(Vec::<f32>::try_from(a.get(0)).unwrap(), vec![4.0, 4.0]);
        assert_eq!(Vec::<f32>::try_from(a.get(1)).unwrap(), vec![12.0, 4.0]);
        assert_eq!(Vec::<f32>::try_from(a.get(8)).unwrap(), vec![4.0, 12.0]);
        assert_eq!(Vec::<f32>::try_from(a.get(64)).unwrap(), vec![8.0, 8.0]);
        assert_eq!(Vec::<f32>::try_from(a.get(80)).unwrap(), vec![16.0, 16.0]);
        assert_eq!(f64::try_from(s.get(0)).unwrap(), 8.0);
        assert_eq!(f64::try_from(s.get(64)).unwrap(), 16.0);
        assert_eq!(f64::try_from(s.get(83)).unwrap(), 32.0);
    }

    #[test]
    fn ciou_of_identical_and_shifted_boxes() {
        let a = Tensor::from_slice(&[0.0f32, 0.0, 10.0, 10.0]).view([1, 4]);
        assert!(close(f64::try_from(ciou(&a, &a).sum(Kind::Float)).unwrap(), 1.0, 1e-5));
        // Shifted by 5 in x: IoU = 50/150, centres 5 apart, enclosing 15×10.
        let b = Tensor::from_slice(&[5.0f32, 0.0, 15.0, 10.0]).view([1, 4]);
        let want = 50.0 / 150.0 - 25.0 / (225.0 + 100.0);
        assert!(close(f64::try_from(ciou(&a, &b).sum(Kind::Float)).unwrap(), want, 1e-5));
    }

    #[test]
    fn decode_of_uniform_logits_is_the_mean_distance() {
        // Zero logits: every bin equally likely, integral = 7.5 strides.
        let raw = vec![Tensor::zeros([1, 4 * REG_MAX + 2, 1, 1], (Kind::Float, Device::Cpu))];
        let (a, s) = anchors(&raw);
        let d = decode(&raw, &a, &s);
        let bx = Vec::<f32>::try_from(d.boxes.view([-1])).unwrap();
        assert!(
            close(bx[0] as f64, 4.0 - 60.0, 1e-4) && close(bx[2] as f64, 4.0 + 60.0, 1e-4),
            "{bx:?}"
        );
        assert_eq!(d.anc.size(), vec![1, 1, 4, REG_MAX]);
        assert_eq!(d.cls.size(), vec![1, 1, 2]);
    }

    /// One 64×64 input, one 20×20 box round (32, 32): only anchors inside
    /// the box can be assigned, at most `topk` of them, and the class target
    /// is the one-hot of its class scaled into (0, 1].
    #[test]
    fn one_box_is_assigned_to_anchors_inside_it() {
        let _rng = crate::rng_lock();
        tch::manual_seed(0);
        let raw: Vec<Tensor> = [(8, 8), (4, 4), (2, 2)]
            .iter()
            .map(|&(h, w)| {
                Tensor::randn([1, 4 * REG_MAX + 3, h, w], (Kind::Float, Device::Cpu)) * 0.1
            })
            .collect();
        let (grid, scaler) = anchors(&raw);
        let d = decode(&raw, &grid, &scaler);
        let t = Tensor::from_slice(&[2.0f32, 22.0, 22.0, 42.0, 42.0]).view([1, 1, 5]);
        let asg = assign(&t, &d.cls, &d.boxes, &grid, &scaler, 3, &Gains::default());
        let fg = Vec::<bool>::try_from(asg.fg.view([-1])).unwrap();
        let n = fg.iter().filter(|&&f| f).count();
        assert!((1..=10).contains(&n), "{n} anchors assigned");
        let pts = Vec::<f32>::try_from(grid.view([-1])).unwrap();
        for (i, &f) in fg.iter().enumerate() {
            if f {
                let (x, y) = (pts[2 * i], pts[2 * i + 1]);
                assert!(
                    (22.0..=42.0).contains(&x) && (22.0..=42.0).contains(&y),
                    "anchor {i} at ({x}, {y})"
                );
                let c = Vec::<f32>::try_from(asg.cls.get(0).get(i as i64)).unwrap();
                assert_eq!(c[0], 0.0);
                assert_eq!(c[1], 0.0);
                assert!(c[2] > 0.0 && c[2] <= 1.0, "{c:?}");
                let bx = Vec::<f32>::try_from(asg.boxes.get(0).get(i as i64)).unwrap();
                assert_eq!(bx, vec![22.0, 22.0, 42.0, 42.0]);
            }
        }
        // A padding row (zeros) adds nothing.
        let t2 = Tensor::cat(
            &[t.shallow_clone(), Tensor::zeros([1, 1, 5], (Kind::Float, Device::Cpu))],
            1,
        );
        let asg2 = assign(&t2, &d.cls, &d.boxes, &grid, &scaler, 3, &Gains::default());
        assert!(asg2.fg.equal(&asg.fg));
        let tn = Tensor::from_slice(&[2.0f32, 22.0 / 64.0, 22.0 / 64.0, 42.0 / 64.0, 42.0 / 64.0])
            .view([1, 1, 5]);
        let loss = yolo9_loss(&raw, &tn, (64, 64), 3, &Gains::default());
        let total = f64::try_from(&loss.total).unwrap();
        assert!(total.is_finite() && total > 0.0, "{total}");
        assert!(loss.fg_per_image >= 1.0);
    }

    /// Two identical boxes of different classes compete for the same
    /// anchors: every anchor goes to one target only, and both targets are
    /// never assigned the same anchor.
    #[test]
    fn an_anchor_claimed_twice_goes_to_one_target() {
        let _rng = crate::rng_lock();
        tch::manual_seed(2);
        let raw: Vec<Tensor> = [(8, 8), (4, 4), (2, 2)]
            .iter()
            .map(|&(h, w)| {
                Tensor::randn([1, 4 * REG_MAX + 2, h, w], (Kind::Float, Device::Cpu)) * 0.1
            })
            .collect();
        let (grid, scaler) = anchors(&raw);
        let d = decode(&raw, &grid, &scaler);
        let t = Tensor::from_slice(&[0.0f32, 16.0, 16.0, 48.0, 48.0, 1.0, 18.0, 18.0, 46.0, 46.0])
            .view([1, 2, 5]);
        let asg = assign(&t, &d.cls, &d.boxes, &grid, &scaler, 2, &Gains::default());
        let fg = Vec::<bool>::try_from(asg.fg.view([-1])).unwrap();
        let cls = Vec::<f32>::try_from(asg.cls.view([-1])).unwrap();
        let mut per_class = [0, 0];
        for (i, &f) in fg.iter().enumerate() {
            let (c0, c1) = (cls[2 * i], cls[2 * i + 1]);
            if f {
                assert!((c0 > 0.0) != (c1 > 0.0), "anchor {i} targets both classes: {c0} {c1}");
                per_class[(c1 > 0.0) as usize] += 1;
            } else {
                assert_eq!((c0, c1), (0.0, 0.0));
            }
        }
        assert!(per_class[0] >= 1 && per_class[1] >= 1, "{per_class:?}");
        assert!(per_class[0] + per_class[1] <= 20);
    }

    /// With auxiliary maps, every component is main + weight · aux (each
    /// head assigned on its own predictions), the foreground count is the
    /// main head's, and the auxiliary maps get weight × their own gradient.
    #[test]
    fn the_training_loss_adds_the_aux_head_at_its_weight() {
        let _rng = crate::rng_lock();
        tch::manual_seed(3);
        let maps = |scale: f64| -> Vec<Tensor> {
            [(8, 8), (4, 4), (2, 2)]
                .iter()
                .map(|&(h, w)| {
                    (Tensor::randn([2, 4 * REG_MAX + 3, h, w], (Kind::Float, Device::Cpu)) * scale)
                        .set_requires_grad(true)
                })
                .collect()
        };
        let (main, aux) = (maps(0.1), maps(0.3));
        let t = Tensor::from_slice(&[1.0f32, 0.2, 0.3, 0.6, 0.7, 2.0, 0.1, 0.1, 0.4, 0.5])
            .view([2, 1, 5]);
        let g = Gains::default();
        let m = yolo9_loss(&main, &t, (64, 64), 3, &g);
        let a = yolo9_loss(&aux, &t, (64, 64), 3, &g);
        let tm = TrainMaps {
            main: main.iter().map(|t| t.shallow_clone()).collect(),
            aux: Some(aux.iter().map(|t| t.shallow_clone()).collect()),
        };
        let c = yolo9_train_loss(&tm, &t, (64, 64), 3, &g, 0.25);
        let v = |t: &Tensor| f64::try_from(t).unwrap();
        for (name, got, mm, aa) in [
            ("total", &c.total, &m.total, &a.total),
            ("box", &c.box_loss, &m.box_loss, &a.box_loss),
            ("dfl", &c.dfl_loss, &m.dfl_loss, &a.dfl_loss),
            ("cls", &c.cls_loss, &m.cls_loss, &a.cls_loss),
        ] {
            assert!(
                v(aa) > 0.0 && (v(aa) - v(mm)).abs() > 1e-3,
                "{name}: the two heads should differ"
            );
            assert!(
                close(v(got), v(mm) + 0.25 * v(aa), 1e-5),
                "{name}: {} vs {} + 0.25 · {}",
                v(got),
                v(mm),
                v(aa)
            );
        }
        assert_eq!(c.fg_per_image, m.fg_per_image);

        c.total.backward();
        let g_combined: Vec<Tensor> = aux.iter().map(|t| t.grad().copy()).collect();
        let g_main: Vec<Tensor> = main.iter().map(|t| t.grad().copy()).collect();
        for t in main.iter().chain(&aux) {
            t.shallow_clone().zero_grad();
        }
        a.total.backward();
        for (gc, ga) in g_combined.iter().zip(aux.iter().map(|t| t.grad())) {
            assert!(gc.allclose(&(ga * 0.25), 1e-6, 1e-8, false));
        }
        m.total.backward();
        for (gc, gm) in g_main.iter().zip(main.iter().map(|t| t.grad())) {
            assert!(gc.allclose(&gm, 1e-6, 1e-8, false));
        }

        let single =
            TrainMaps { main: main.iter().map(|t| t.shallow_clone()).collect(), aux: None };
        assert!(close(
            v(&yolo9_train_loss(&single, &t, (64, 64), 3, &g, 0.25).total),
            v(&m.total),
            1e-6
        ));
    }

    #[test]
    fn no_targets_give_a_finite_class_only_loss() {
        let raw: Vec<Tensor> = [(2, 2), (1, 1), (1, 1)]
            .iter()
            .map(|&(h, w)| Tensor::zeros([2, 4 * REG_MAX + 1, h, w], (Kind::Float, Device::Cpu)))
            .collect();
        let loss = yolo9_loss(
            &raw,
            &Tensor::zeros([2, 3, 5], (Kind::Float, Device::Cpu)),
            (16, 16),
            1,
            &Gains::default(),
        );
        assert_eq!(f64::try_from(&loss.box_loss).unwrap(), 0.0);
        assert_eq!(f64::try_from(&loss.dfl_loss).unwrap(), 0.0);
        // BCE of logit 0 against 0 is ln 2 per element: 6 anchors × 2 images.
        let want = 0.5 * 12.0 * std::f64::consts::LN_2;
        assert!(close(f64::try_from(&loss.cls_loss).unwrap(), want, 1e-4));
    }

    /// Gradient descent on the head maps themselves (as free parameters)
    /// lowers the loss: the gradient points the right way.
    #[test]
    fn loss_decreases_under_sgd_on_the_maps() {
        let _rng = crate::rng_lock();
        tch::manual_seed(1);
        let raw: Vec<Tensor> = [(8, 8), (4, 4), (2, 2)]
            .iter()
            .map(|&(h, w)| {
                (Tensor::randn([1, 4 * REG_MAX + 2, h, w], (Kind::Float, Device::Cpu)) * 0.1)
                    .set_requires_grad(true)
            })
            .collect();
        let t = Tensor::from_slice(&[1.0f32, 0.2, 0.3, 0.6, 0.7]).view([1, 1, 5]);
        let g = Gains::default();
        let first = f64::try_from(&yolo9_loss(&raw, &t, (64, 64), 2, &g).total).unwrap();
        let mut last = first;
        for _ in 0..20 {
            let l = yolo9_loss(&raw, &t, (64, 64), 2, &g);
            for r in &raw {
                r.shallow_clone().zero_grad();
            }
            l.total.backward();
            tch::no_grad(|| {
                for r in &raw {
                    let mut r = r.shallow_clone();
                    let _ = r.f_sub_(&(r.grad() * 0.5)).unwrap();
                }
            });
            last = f64::try_from(&l.total).unwrap();
        }
        assert!(last.is_finite() && last < first * 0.8, "{first} -> {last}");
    }
}
