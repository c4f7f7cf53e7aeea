//! Mosaic and random affine of LibreYOLO 1.6's YOLOv9 training
//! (`YOLO9MosaicMixupDataset._get_mosaic_item`, `random_affine`).
//!
//! Per sample, with probability [`MOSAIC_PROB`] (1.0): a grey 2s×2s canvas
//! and a random centre in its middle half; the sample's image and three
//! partners drawn from the dataset (an annotated one preferred) fill the
//! four quadrants around the centre, each image cropped where it overflows;
//! boxes follow, clipped to the canvas. A random affine (YOLOv9 defaults:
//! scale 0.5–1.5, translation ±10 %, no rotation, no shear) warps the canvas
//! down to s×s with a grey border, boxes take their corners' bounds, clipped
//! to the output, and boxes 2 px or less on a side are dropped. The train
//! transform ([`super::augment::transform`]) follows.
//!
//! As in LibreYOLO, the affine has no centring term: it scales about the
//! canvas origin, so the output shows the canvas from its top-left corner
//! (shifted by the translation) — all of it at scale 0.5, a third at 1.5.
//!
//! Mixup (probability 0 for YOLOv9) and segment copy-paste are not done.

use super::augment::Rng;
use super::data_error::DataError;
use super::geometry::{GREY, Image, resize, warp_affine};

/// LibreYOLO's `mosaic_prob` for YOLOv9 (their `profile run` keeps mosaic on).
pub const MOSAIC_PROB: f64 = 1.0;

/// Random affine parameters (their `degrees`, `translate`, `mosaic_scale`,
/// `shear`).
#[derive(Debug, Clone, Copy)]
pub struct Affine {
    pub degrees: f64,
    pub translate: f64,
    pub scale: (f64, f64),
    pub shear: f64,
}

/// `YOLO9Config`'s defaults.
pub const YOLO9: Affine = Affine { degrees: 0.0, translate: 0.1, scale: (0.5, 1.5), shear: 0.0 };

/// What a mosaic draws from: the dataset.
pub trait Source {
    fn count(&self) -> usize;
    /// Whether image `i` has boxes (partners with boxes are preferred).
    fn has_labels(&self, i: usize) -> bool;
    /// Image `i` resized so its longer side is `size` (their `pull_item`),
    /// with its boxes `[class, x1, y1, x2, y2]` in that image's pixels.
    fn pull(&self, i: usize, size: usize) -> Result<(Image, Vec<[f32; 5]>), DataError>;
}

/// A partner index (their `_rand_partner_index`): up to 20 draws until one
/// has boxes, else the last draw, so an unlabelled dataset still works.
fn partner(src: &dyn Source, rng: &mut Rng) -> usize {
    let n = src.count().max(1) as u64;
    let mut i = 0;
    for _ in 0..20 {
        i = (rng.next_u64() % n) as usize;
        if src.has_labels(i) {
            break;
        }
    }
    i
}

/// Places an image of `w`×`h` in quadrant `k` (0 top-left, 1 top-right,
/// 2 bottom-left, 3 bottom-right) around the centre `(xc, yc)` of a canvas
/// of side `two`. Returns the canvas rectangle `(x1, y1, x2, y2)` and the
/// top-left of the part of the image that lands in it.
fn place(
    k: usize,
    xc: i64,
    yc: i64,
    w: i64,
    h: i64,
    two: i64,
) -> ((i64, i64, i64, i64), (i64, i64)) {
    let (x1, x2) = if k % 2 == 0 { ((xc - w).max(0), xc) } else { (xc, (xc + w).min(two)) };
    let (y1, y2) = if k < 2 { ((yc - h).max(0), yc) } else { (yc, (yc + h).min(two)) };
    // Left and top quadrants keep the image's right / bottom edge at the centre.
    let sx = if k % 2 == 0 { w - (x2 - x1) } else { 0 };
    let sy = if k < 2 { h - (y2 - y1) } else { 0 };
    ((x1, y1, x2, y2), (sx, sy))
}

/// The 2s×2s mosaic of image `idx` and three partners, boxes clipped to it.
pub fn mosaic(
    src: &dyn Source,
    idx: usize,
    size: usize,
    rng: &mut Rng,
) -> Result<(Image, Vec<[f32; 5]>), DataError> {
    let s = size as f64;
    let yc = rng.range(0.5 * s, 1.5 * s) as i64;
    let xc = rng.range(0.5 * s, 1.5 * s) as i64;
    let indices = [idx, partner(src, rng), partner(src, rng), partner(src, rng)];
    let two = 2 * size;
    let mut canvas = Image::filled(two, two, GREY);
    let mut labels = Vec::new();
    for (k, &i) in indices.iter().enumerate() {
        let (img, boxes) = src.pull(i, size)?;
        // Pulled images already fit `size`; the cap only matters otherwise.
        let scale = (s / img.h as f64).min(s / img.w as f64).min(1.0);
        let img = if scale < 1.0 {
            resize(
                &img,
                ((img.w as f64 * scale) as usize).max(1),
                ((img.h as f64 * scale) as usize).max(1),
            )
        } else {
            img
        };
        let ((x1, y1, x2, y2), (sx, sy)) = place(k, xc, yc, img.w as i64, img.h as i64, two as i64);
        let n = (x2 - x1) as usize * 3;
        for row in 0..(y2 - y1) {
            let d = ((y1 + row) as usize * two + x1 as usize) * 3;
            let o = ((sy + row) as usize * img.w + sx as usize) * 3;
            canvas.px[d..d + n].copy_from_slice(&img.px[o..o + n]);
        }
        let (padw, padh, sc) = ((x1 - sx) as f32, (y1 - sy) as f32, scale as f32);
        labels.extend(boxes.iter().map(|l| {
            [l[0], l[1] * sc + padw, l[2] * sc + padh, l[3] * sc + padw, l[4] * sc + padh]
        }));
    }
    let lim = two as f32;
    for l in &mut labels {
        for v in &mut l[1..] {
            *v = v.clamp(0.0, lim);
        }
    }
    Ok((canvas, labels))
}

/// A random affine (their `get_affine_matrix`, 2×3, source → output) for an
/// output of `w`×`h`: rotation and scale about the origin, shear, then a
/// translation of up to `translate` of the output.
pub fn affine_matrix(p: &Affine, w: usize, h: usize, rng: &mut Rng) -> [f64; 6] {
    let angle = rng.range(-p.degrees, p.degrees).to_radians();
    let scale = rng.range(p.scale.0, p.scale.1);
    // cv2.getRotationMatrix2D about (0, 0): positive angles turn counter-clockwise.
    let (a, b) = (scale * angle.cos(), scale * angle.sin());
    let r = [[a, b], [-b, a]];
    let shear_x = rng.range(-p.shear, p.shear).to_radians().tan();
    let shear_y = rng.range(-p.shear, p.shear).to_radians().tan();
    let tx = rng.range(-p.translate, p.translate) * w as f64;
    let ty = rng.range(-p.translate, p.translate) * h as f64;
    [
        r[0][0] + shear_y * r[1][0],
        r[0][1] + shear_y * r[1][1],
        tx,
        r[1][0] + shear_x * r[0][0],
        r[1][1] + shear_x * r[0][1],
        ty,
    ]
}

/// Boxes through `m`: the bounds of their four warped corners, clipped to
/// `w`×`h` (their `apply_affine_to_bboxes`).
pub fn affine_boxes(labels: &mut [[f32; 5]], m: [f64; 6], w: usize, h: usize) {
    for l in labels {
        let (mut x1, mut y1, mut x2, mut y2) =
            (f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY);
        for (x, y) in [(l[1], l[2]), (l[3], l[4]), (l[1], l[4]), (l[3], l[2])] {
            let (x, y) = (x as f64, y as f64);
            let (u, v) = (m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5]);
            (x1, y1, x2, y2) = (x1.min(u), y1.min(v), x2.max(u), y2.max(v));
        }
        let (w, h) = (w as f64, h as f64);
        l[1] = x1.clamp(0.0, w) as f32;
        l[2] = y1.clamp(0.0, h) as f32;
        l[3] = x2.clamp(0.0, w) as f32;
        l[4] = y2.clamp(0.0, h) as f32;
    }
}

/// Mosaic, random affine down to `size`×`size`, then boxes of 2 px or less
/// on a side dropped.
pub fn mosaic_affine(
    src: &dyn Source,
    idx: usize,
    size: usize,
    p: &Affine,
    rng: &mut Rng,
) -> Result<(Image, Vec<[f32; 5]>), DataError> {
    let (canvas, mut labels) = mosaic(src, idx, size, rng)?;
    let m = affine_matrix(p, size, size, rng);
    let img = warp_affine(&canvas, m, size, size);
    affine_boxes(&mut labels, m, size, size);
    labels.retain(|l| l[3] - l[1] > 2.0 && l[4] - l[2] > 2.0);
    Ok((img, labels))
}

#[cfg(test)]
mod tests {
    use super::super::data::Dataset;
    use super::*;

    const IDENTITY: Affine = Affine { degrees: 0.0, translate: 0.0, scale: (1.0, 1.0), shear: 0.0 };

    #[test]
    fn quadrants_meet_at_the_centre_and_stay_on_the_canvas() {
        for k in 0..4 {
            let ((x1, y1, x2, y2), (sx, sy)) = place(k, 50, 70, 64, 40, 128);
            assert!(0 <= x1 && x1 < x2 && x2 <= 128 && 0 <= y1 && y1 < y2 && y2 <= 128, "{k}");
            assert!(
                x2 - x1 <= 64 && y2 - y1 <= 40 && sx + (x2 - x1) <= 64 && sy + (y2 - y1) <= 40,
                "{k}"
            );
            assert!(if k % 2 == 0 { x2 == 50 } else { x1 == 50 }, "{k}");
            assert!(if k < 2 { y2 == 70 } else { y1 == 70 }, "{k}");
        }
        // Top-left overflowing the canvas: its right part is kept.
        assert_eq!(place(0, 50, 70, 64, 40, 128), ((0, 30, 50, 70), (14, 0)));
    }

    #[test]
    fn mosaic_boxes_stay_inside_keep_their_class_and_come_from_several_images() {
        let ds = Dataset::Synthetic { n: 16 };
        let size = 64;
        let classes_of = |i: usize| -> Vec<f32> {
            super::super::data::synthetic(i, size).labels.iter().map(|l| l[0]).collect()
        };
        let mut multi = 0;
        for i in 0..16 {
            let (img, labels) = mosaic(&ds, i, size, &mut Rng(i as u64)).unwrap();
            assert_eq!((img.w, img.h), (128, 128));
            for l in &labels {
                assert!(l[0] == 0.0 || l[0] == 1.0);
                assert!(
                    0.0 <= l[1]
                        && l[1] <= l[3]
                        && l[3] <= 128.0
                        && 0.0 <= l[2]
                        && l[2] <= l[4]
                        && l[4] <= 128.0,
                    "{l:?}"
                );
            }
            // Every source's boxes are there, in order, with their class.
            let mut rng = Rng(i as u64);
            rng.unit();
            rng.unit();
            let idx = [i, partner(&ds, &mut rng), partner(&ds, &mut rng), partner(&ds, &mut rng)];
            let want: Vec<f32> = idx.iter().flat_map(|&j| classes_of(j)).collect();
            assert_eq!(labels.iter().map(|l| l[0]).collect::<Vec<_>>(), want);
            // Boxes with area left on the canvas, from more than one image.
            let mut from = std::collections::BTreeSet::new();
            let mut at = 0;
            for (k, &j) in idx.iter().enumerate() {
                let n = classes_of(j).len();
                if labels[at..at + n].iter().any(|l| l[3] > l[1] && l[4] > l[2]) {
                    from.insert(k);
                }
                at += n;
            }
            if from.len() > 1 {
                multi += 1;
            }
        }
        assert!(multi >= 12, "only {multi} of 16 mosaics show boxes from several images");
    }

    #[test]
    fn mosaic_and_affine_keep_boxes_in_the_output() {
        let ds = Dataset::Synthetic { n: 10 };
        for size in [64, 96] {
            for i in 0..30 {
                let (img, labels) =
                    mosaic_affine(&ds, i % 10, size, &YOLO9, &mut Rng(100 + i as u64)).unwrap();
                assert_eq!((img.w, img.h, img.px.len()), (size, size, size * size * 3));
                let s = size as f32;
                for l in &labels {
                    assert!(l[0] == 0.0 || l[0] == 1.0);
                    assert!(0.0 <= l[1] && l[3] <= s && 0.0 <= l[2] && l[4] <= s, "{l:?}");
                    assert!(l[3] - l[1] > 2.0 && l[4] - l[2] > 2.0, "{l:?}");
                }
            }
        }
    }

    #[test]
    fn the_affine_with_no_translation_at_scale_one_is_the_identity() {
        let m = affine_matrix(&IDENTITY, 64, 64, &mut Rng(5));
        assert_eq!(m, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
        let ds = Dataset::Synthetic { n: 8 };
        let (canvas, labels) = mosaic(&ds, 3, 64, &mut Rng(9)).unwrap();
        let mut boxes = labels.clone();
        affine_boxes(&mut boxes, m, 64, 64);
        for (a, b) in labels.iter().zip(&boxes) {
            let clip = |v: f32| v.clamp(0.0, 64.0);
            assert_eq!(*b, [a[0], clip(a[1]), clip(a[2]), clip(a[3]), clip(a[4])]);
        }
        // The image too: the canvas's top-left quarter, unchanged.
        let out = warp_affine(&canvas, m, 64, 64);
        for y in 0..64 {
            assert_eq!(
                &out.px[y * 64 * 3..(y + 1) * 64 * 3],
                &canvas.px[y * 128 * 3..y * 128 * 3 + 64 * 3]
            );
        }
    }

    #[test]
    fn the_affine_moves_boxes_with_the_pixels() {
        // Scale 0.5 and a shift: a box's corners land where the matrix says.
        let m = [0.5, 0.0, 6.0, 0.0, 0.5, -3.0];
        let mut l = [[1.0, 10.0, 20.0, 50.0, 60.0]];
        affine_boxes(&mut l, m, 64, 64);
        assert_eq!(l[0], [1.0, 11.0, 7.0, 31.0, 27.0]);
        // A 90° turn swaps the sides; what leaves the output is clipped.
        let m = [0.0, 1.0, 0.0, -1.0, 0.0, 64.0];
        let mut l = [[0.0, 10.0, 20.0, 30.0, 24.0]];
        affine_boxes(&mut l, m, 64, 64);
        assert_eq!(l[0], [0.0, 20.0, 34.0, 24.0, 54.0]);
    }

    #[test]
    fn mosaic_affine_is_deterministic_per_seed() {
        let ds = Dataset::Synthetic { n: 8 };
        let a = mosaic_affine(&ds, 2, 64, &YOLO9, &mut Rng(77)).unwrap();
        let b = mosaic_affine(&ds, 2, 64, &YOLO9, &mut Rng(77)).unwrap();
        assert_eq!(a.0, b.0);
        assert_eq!(a.1, b.1);
        let c = mosaic_affine(&ds, 2, 64, &YOLO9, &mut Rng(78)).unwrap();
        assert!(c.0 != a.0 || c.1 != a.1);
    }

    /// Per-sample cost of the pipeline, stage by stage, on JPEG images of
    /// 640×480 (4 decodes per mosaic, as LibreYOLO's). A benchmark, not a
    /// check: run it optimised and without overflow checks, as a release
    /// build runs, e.g. `CARGO_PROFILE_DEV_OPT_LEVEL=3 cargo test
    /// --config 'profile.dev.package.libreyolo-capture.overflow-checks=false'
    /// --config 'profile.dev.package.libreyolo-capture.debug-assertions=false'
    /// -p libreyolo-capture --lib bench_ -- --ignored --nocapture`.
    #[test]
    #[ignore = "benchmark: run with --ignored --nocapture, see its doc comment"]
    fn bench_mosaic_affine_sample() {
        use super::super::augment::transform;
        use std::time::Instant;
        let dir = tempfile::tempdir().unwrap();
        let (img_dir, lbl_dir) = (dir.path().join("images/train"), dir.path().join("labels/train"));
        std::fs::create_dir_all(&img_dir).unwrap();
        std::fs::create_dir_all(&lbl_dir).unwrap();
        let mut rng = Rng(1);
        for i in 0..8 {
            // Textured content so the JPEG decode does real work.
            let img = image::RgbImage::from_fn(640, 480, |x, y| {
                let n = (rng.next_u64() % 24) as u32;
                image::Rgb([
                    ((x + i * 30) % 256) as u8 ^ n as u8,
                    ((y * 2) % 256) as u8,
                    ((x ^ y) % 256) as u8,
                ])
            });
            img.save(img_dir.join(format!("{i}.jpg"))).unwrap();
            std::fs::write(
                lbl_dir.join(format!("{i}.txt")),
                "0 0.3 0.3 0.2 0.2\n1 0.7 0.6 0.3 0.4\n0 0.5 0.5 0.05 0.05\n",
            )
            .unwrap();
        }
        let yaml = dir.path().join("data.yaml");
        std::fs::write(&yaml, "path: .\ntrain: images/train\nval: images/train\nnames: [a, b]\n")
            .unwrap();
        let ds = Dataset::parse(&yaml.display().to_string()).unwrap();
        // The fastest of n: the machine is shared, the minimum is the cost.
        let fastest = |v: Vec<f64>| v.into_iter().fold(f64::INFINITY, f64::min);
        let time = |n: usize, f: &mut dyn FnMut(usize)| {
            fastest(
                (0..n)
                    .map(|k| {
                        let t = Instant::now();
                        f(k);
                        t.elapsed().as_secs_f64() * 1e3
                    })
                    .collect(),
            )
        };
        for size in [320, 640] {
            let n = 150;
            let pull = time(n, &mut |k| drop(ds.pull(k % 8, size).unwrap()));
            let decode = time(n, &mut |k| {
                drop(image::open(img_dir.join(format!("{}.jpg", k % 8))).unwrap().into_rgb8())
            });
            // The resize in pull (none at 640: the images are 640 wide).
            let (big, _) = ds.pull(0, 640).unwrap();
            let rs = time(n, &mut |_| drop(resize(&big, size, size * 3 / 4)));
            let canvas =
                time(n, &mut |k| drop(mosaic(&ds, k % 8, size, &mut Rng(k as u64)).unwrap()));
            let (c, l) = mosaic(&ds, 0, size, &mut Rng(3)).unwrap();
            let warp = time(n, &mut |k| {
                drop(warp_affine(
                    &c,
                    affine_matrix(&YOLO9, size, size, &mut Rng(k as u64)),
                    size,
                    size,
                ))
            });
            let (w, _) = mosaic_affine(&ds, 0, size, &YOLO9, &mut Rng(3)).unwrap();
            let tf = time(n, &mut |k| {
                drop(transform(w.clone(), l.clone(), size, 300, &mut Rng(k as u64)))
            });
            let mut hsv_img = w.clone();
            let hsv = time(n, &mut |k| {
                super::super::augment::hsv(&mut hsv_img.px, &mut Rng(k as u64 | 1))
            });
            let synth = Dataset::Synthetic { n: 8 };
            let whole = time(n, &mut |k| drop(ds.sample(k % 8, size).unwrap()));
            let whole_synth = time(n, &mut |k| drop(synth.sample(k % 8, size).unwrap()));
            // Their transform ends in float CHW; ours does that in collate.
            let one = ds.sample(0, size).unwrap();
            let chw = time(n, &mut |_| {
                drop(super::super::data::collate(std::slice::from_ref(&one), 300, false))
            });
            if size < 640 {
                println!(
                    "size {size}: decode 640×480 JPEG {decode:.2} ms, resize it to {size}×{} {rs:.2} ms",
                    size * 3 / 4
                );
            }
            println!(
                "size {size}: sample {whole:.2} ms + float CHW in collate {chw:.2} (synthetic {whole_synth:.2}) = 4 × pull (decode + resize) {pull:.2} + mosaic canvas {:.2} + warp {warp:.2} + transform {tf:.2} (of which HSV {hsv:.2}) [fastest of {n}, ms]",
                canvas - 4.0 * pull
            );
        }
    }
}
