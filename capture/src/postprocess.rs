//! Postprocess as LibreYOLO's YOLOv9 does it: multi-label confidence filter
//! (every class above `conf` is a candidate), at most 30 000 candidates by
//! score, boxes mapped back through the letterbox and clipped to the image,
//! empty boxes dropped, class-aware NMS, `max_det` cap.
//!
//! The filter runs on the device with tch; NMS runs here on the few
//! surviving candidates (greedy in score order, a box suppressed by a kept
//! box of its class with IoU > `iou`), and stops as soon as `max_det` boxes
//! are kept: later boxes have lower scores and could never make the cut.

use tch::{Device, IndexOp, Kind, Tensor};

use crate::preprocess::Letterbox;

/// Most candidates that enter NMS (LibreYOLO's `_YOLO9_MAX_NMS_CANDIDATES`).
pub const MAX_NMS_CANDIDATES: i64 = 30_000;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detection {
    /// x1, y1, x2, y2 in original image pixels.
    pub xyxy: [f32; 4],
    pub score: f32,
    pub class: i64,
}

/// Detections of image `i` of a `(B, 4 + nc, A)` prediction tensor.
pub fn detections(
    predictions: &Tensor,
    i: i64,
    g: &Letterbox,
    conf: f64,
    iou: f64,
    max_det: usize,
) -> Vec<Detection> {
    tch::no_grad(|| {
        let pred = predictions.i(i).to_kind(Kind::Float).transpose(0, 1);
        let nc = pred.size()[1] - 4;
        let scores = pred.narrow(1, 4, nc);
        let idx = scores.gt(conf).nonzero();
        let k = idx.size()[0];
        if k == 0 {
            return Vec::new();
        }
        let mut anchor = idx.select(1, 0);
        let mut class = idx.select(1, 1);
        let mut score = scores.index(&[Some(&anchor), Some(&class)]);
        let cap = (max_det as i64).max(MAX_NMS_CANDIDATES);
        if k > cap {
            let (_, top) = score.topk(cap, 0, true, true);
            anchor = anchor.index_select(0, &top);
            class = class.index_select(0, &top);
            score = score.index_select(0, &top);
        }
        let boxes = pred.narrow(1, 0, 4).index_select(0, &anchor);
        let shift = Tensor::from_slice(&[
            g.pad_left as f32,
            g.pad_top as f32,
            g.pad_left as f32,
            g.pad_top as f32,
        ])
        .to_device(boxes.device());
        let b = (boxes - shift) / g.ratio;
        let xs = b
            .index_select(1, &Tensor::from_slice(&[0i64, 2]).to_device(b.device()))
            .clamp(0.0, g.orig_w as f64);
        let ys = b
            .index_select(1, &Tensor::from_slice(&[1i64, 3]).to_device(b.device()))
            .clamp(0.0, g.orig_h as f64);
        let b =
            Tensor::stack(&[xs.select(1, 0), ys.select(1, 0), xs.select(1, 1), ys.select(1, 1)], 1);

        let b = b.to_device(Device::Cpu).contiguous();
        let s = score.to_device(Device::Cpu).contiguous();
        let c = class.to_device(Device::Cpu).contiguous();
        let b: Vec<f32> = Vec::try_from(b.flatten(0, -1)).unwrap_or_default();
        let s: Vec<f32> = Vec::try_from(&s).unwrap_or_default();
        let c: Vec<i64> = Vec::try_from(&c).unwrap_or_default();
        let cands: Vec<Detection> = (0..s.len())
            .map(|j| Detection {
                xyxy: [b[4 * j], b[4 * j + 1], b[4 * j + 2], b[4 * j + 3]],
                score: s[j],
                class: c[j],
            })
            .filter(|d| {
                d.xyxy[2] - d.xyxy[0] > 0.0
                    && d.xyxy[3] - d.xyxy[1] > 0.0
                    && d.xyxy.iter().all(|v| v.is_finite())
                    && d.score.is_finite()
            })
            .collect();
        nms(cands, iou as f32, max_det)
    })
}

fn area(b: &[f32; 4]) -> f32 {
    (b[2] - b[0]) * (b[3] - b[1])
}

fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = w * h;
    inter / (area(a) + area(b) - inter)
}

/// Class-aware greedy NMS; the result is in descending score order.
pub fn nms(mut cands: Vec<Detection>, iou_thres: f32, max_det: usize) -> Vec<Detection> {
    // Stable: exact ties keep candidate order, as torchvision's stable sort.
    cands.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut kept: Vec<Detection> = Vec::new();
    // Kept boxes per class: a candidate is only compared with its own class.
    let mut by_class: std::collections::HashMap<i64, Vec<[f32; 4]>> =
        std::collections::HashMap::new();
    for d in cands {
        if kept.len() >= max_det {
            break;
        }
        let same = by_class.entry(d.class).or_default();
        if same.iter().all(|k| iou(k, &d.xyxy) <= iou_thres) {
            same.push(d.xyxy);
            kept.push(d);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det(x: f32, score: f32, class: i64) -> Detection {
        Detection { xyxy: [x, 0.0, x + 10.0, 10.0], score, class }
    }

    #[test]
    fn nms_is_class_aware_and_capped() {
        let c = vec![det(0.0, 0.9, 0), det(1.0, 0.8, 0), det(1.0, 0.7, 1), det(50.0, 0.6, 0)];
        let k = nms(c.clone(), 0.45, 300);
        assert_eq!(k.iter().map(|d| d.score).collect::<Vec<_>>(), [0.9, 0.7, 0.6]);
        assert_eq!(nms(c, 0.45, 2).len(), 2);
    }
}
