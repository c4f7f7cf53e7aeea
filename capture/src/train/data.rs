//! Training data: the built-in `synthetic[:N]` dataset and a loader with
//! `--workers` threads, a bounded prefetch queue and collation into a batch.
//!
//! A batch is what LibreYOLO's YOLOv9 transform hands its loss: images
//! `(B, 3, S, S)` float in 0..1 (RGB) and targets `(B, max_labels, 5)` rows
//! `[class, x1, y1, x2, y2]` normalised to the input, padded with class −1
//! and a zero box up to `max_labels` (300, their default).
//!
//! `synthetic` images are generated from their index alone (a small
//! deterministic PRNG): a plain background with one to four filled
//! rectangles or ellipses, the shape kind being the class. The same index
//! always gives the same image and labels.
//!
//! YOLO-format datasets ([`super::yolo`]) are decoded and resized by the
//! workers so their longer side is the input size (bilinear, as LibreYOLO's
//! `load_resized_img`).
//!
//! Each sample is then LibreYOLO 1.6's YOLOv9 training pipeline: a mosaic
//! with three other images of the dataset and a random affine
//! ([`super::mosaic`]), then HSV jitter, horizontal flip, top-left letterbox
//! and box filtering ([`super::augment::transform`]). All of it draws from
//! one generator seeded by the sample's index, so a sample is the same on
//! every run and in every worker.

use super::augment::Rng;
use super::data_error::{DataError, Made};
use super::geometry::{Image, resize};
use super::mosaic::{self, Source};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;

use libreyolo_core::{Error, Result};

use tch::{Device, Kind, Tensor};

/// Per-image label cap of LibreYOLO's YOLOv9 transform.
pub const MAX_LABELS: usize = 300;
/// Images in `synthetic` without `:N`.
pub const SYNTHETIC_DEFAULT: usize = 128;
/// Class names of `synthetic`.
pub const SYNTHETIC_NAMES: [&str; 2] = ["rectangle", "ellipse"];

/// One labelled image: HWC RGB bytes at `size`×`size`, labels in pixels.
#[derive(Debug, Clone)]
pub struct Sample {
    pub size: usize,
    pub pixels: Vec<u8>,
    /// `[class, x1, y1, x2, y2]` in pixels.
    pub labels: Vec<[f32; 5]>,
}

/// A dataset the loader can draw from.
#[derive(Debug, Clone)]
pub enum Dataset {
    Synthetic { n: usize },
    Yolo(Arc<YoloSet>),
}

/// Label files that exist but could not be read: how many, and the first
/// with its reason.
#[derive(Debug, Default)]
pub struct Unreadable {
    pub count: usize,
    pub first: Option<String>,
}

/// A YOLO-format training split with its labels read (normalised
/// `[class, x1, y1, x2, y2]`).
#[derive(Debug)]
pub struct YoloSet {
    pub data: super::yolo::YoloData,
    pub labels: Vec<Vec<[f32; 5]>>,
    /// Images without a label file.
    pub unlabelled: usize,
    /// Label files that could not be read (not UTF-8, not a regular file,
    /// too large): their images train as background.
    pub unreadable: Unreadable,
    /// Label lines skipped (malformed, class out of range, no area).
    pub skipped_lines: usize,
}

impl YoloSet {
    pub fn load(arg: &str) -> Result<YoloSet> {
        let data = super::yolo::load(arg)?;
        let nc = data.names.len();
        let (mut unlabelled, mut skipped_lines) = (0, 0);
        let mut unreadable = Unreadable::default();
        let labels = data
            .images
            .iter()
            .map(|img| {
                let path = super::yolo::label_path(img);
                match super::yolo::read_text(&path, super::yolo::MAX_LABEL_BYTES) {
                    Ok(text) => {
                        let (l, s) = super::yolo::parse_labels(&text, 1.0, 1.0, nc);
                        skipped_lines += s;
                        l
                    }
                    Err(super::yolo::TextError::Missing) => {
                        unlabelled += 1;
                        Vec::new()
                    }
                    // Said apart from the missing ones, with why.
                    Err(e) => {
                        unreadable.count += 1;
                        unreadable.first.get_or_insert_with(|| format!("{}: {e}", path.display()));
                        Vec::new()
                    }
                }
            })
            .collect();
        Ok(YoloSet { data, labels, unlabelled, unreadable, skipped_lines })
    }

    /// Image `i` decoded and resized so its longer side is `size` (their
    /// `pull_item`), boxes in its pixels.
    fn pull(&self, i: usize, size: usize) -> Made<(Image, Vec<[f32; 5]>)> {
        let path = &self.data.images[i];
        let bad = |why| DataError::Image { path: path.clone(), why };
        let img = crate::source::decode(&crate::source::read_image_file(path).map_err(bad)?)
            .map_err(bad)?
            .into_rgb8();
        let (w, h) = (img.width() as usize, img.height() as usize);
        let img = Image { w, h, px: img.into_raw() };
        let r = (size as f64 / h as f64).min(size as f64 / w as f64);
        let (nw, nh) = (((w as f64 * r) as usize).max(1), ((h as f64 * r) as usize).max(1));
        let img = if (nw, nh) == (w, h) { img } else { resize(&img, nw, nh) };
        // Boxes scale by the ratio, not the rounded size (as theirs).
        let (sx, sy) = ((w as f64 * r) as f32, (h as f64 * r) as f32);
        let labels = self.labels[i]
            .iter()
            .map(|l| [l[0], l[1] * sx, l[2] * sy, l[3] * sx, l[4] * sy])
            .collect();
        Ok((img, labels))
    }
}

impl Dataset {
    /// Parses `synthetic` / `synthetic:N`; anything else is not (yet) a
    /// dataset this build can read.
    pub fn parse(arg: &str) -> Result<Dataset> {
        let a = arg.trim();
        if a == "synthetic" {
            return Ok(Dataset::Synthetic { n: SYNTHETIC_DEFAULT });
        }
        if let Some(n) = a.strip_prefix("synthetic:") {
            let n: usize = n.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                Error::usage(format!(
                    "{arg}: expected synthetic or synthetic:N with N a positive number of images"
                ))
            })?;
            return Ok(Dataset::Synthetic { n });
        }
        Ok(Dataset::Yolo(Arc::new(YoloSet::load(a)?)))
    }

    /// Lines for stderr about the data (missing labels, skipped lines).
    pub fn notes(&self) -> Vec<String> {
        match self {
            Dataset::Synthetic { .. } => Vec::new(),
            Dataset::Yolo(y) => {
                let mut v = Vec::new();
                if y.unlabelled > 0 {
                    v.push(format!(
                        "note: {} of {} images have no label file (trained as background)",
                        y.unlabelled,
                        y.data.images.len()
                    ));
                }
                if let Some(first) = &y.unreadable.first {
                    v.push(format!(
                        "warning: {} label files could not be read (first: {first}); their images are trained as background",
                        y.unreadable.count
                    ));
                }
                if y.skipped_lines > 0 {
                    v.push(format!(
                        "warning: {} label lines skipped (malformed, class outside 0..{}, or no area), as LibreYOLO skips them",
                        y.skipped_lines,
                        y.data.names.len()
                    ));
                }
                v
            }
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Dataset::Synthetic { n } => *n,
            Dataset::Yolo(y) => y.data.images.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn names(&self) -> Vec<String> {
        match self {
            Dataset::Synthetic { .. } => SYNTHETIC_NAMES.iter().map(|s| s.to_string()).collect(),
            Dataset::Yolo(y) => y.data.names.clone(),
        }
    }

    pub fn nc(&self) -> i64 {
        self.names().len() as i64
    }

    /// Sample `i` at `size`×`size`, through the whole training pipeline.
    pub fn sample(&self, i: usize, size: usize) -> Made<Sample> {
        let mut rng = aug_rng(i);
        let (img, labels) = if rng.unit() < mosaic::MOSAIC_PROB {
            mosaic::mosaic_affine(self, i, size, &mosaic::YOLO9, &mut rng)?
        } else {
            self.pull(i, size)?
        };
        let (img, labels) = super::augment::transform(img, labels, size, MAX_LABELS, &mut rng);
        Ok(Sample { size, pixels: img.px, labels })
    }
}

impl Source for Dataset {
    fn count(&self) -> usize {
        self.len()
    }

    fn has_labels(&self, i: usize) -> bool {
        match self {
            Dataset::Synthetic { .. } => true,
            Dataset::Yolo(y) => !y.labels[i].is_empty(),
        }
    }

    fn pull(&self, i: usize, size: usize) -> Made<(Image, Vec<[f32; 5]>)> {
        match self {
            Dataset::Synthetic { .. } => {
                let s = synthetic(i, size);
                Ok((Image { w: size, h: size, px: s.pixels }, s.labels))
            }
            Dataset::Yolo(y) => y.pull(i, size),
        }
    }
}

/// The augmentation's generator for image `i` (deterministic per image).
fn aug_rng(i: usize) -> Rng {
    Rng(0xA06_0000 ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// The `i`-th synthetic image.
pub fn synthetic(i: usize, size: usize) -> Sample {
    let mut rng = Rng(0x5EED_0000 ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let bg =
        [rng.range(20.0, 235.0) as u8, rng.range(20.0, 235.0) as u8, rng.range(20.0, 235.0) as u8];
    let mut pixels = Vec::with_capacity(size * size * 3);
    for _ in 0..size * size {
        pixels.extend_from_slice(&bg);
    }
    let s = size as f64;
    let count = 1 + (rng.next_u64() % 4) as usize;
    let mut labels = Vec::with_capacity(count);
    for _ in 0..count {
        let class = (rng.next_u64() % 2) as usize;
        let w = rng.range(0.1, 0.5) * s;
        let h = rng.range(0.1, 0.5) * s;
        let x1 = rng.range(0.0, s - w);
        let y1 = rng.range(0.0, s - h);
        // A colour far enough from the background to be visible.
        let colour: [u8; 3] =
            std::array::from_fn(|c| bg[c].wrapping_add(64 + (rng.next_u64() % 128) as u8));
        let (cx, cy, rx, ry) = (x1 + w / 2.0, y1 + h / 2.0, w / 2.0, h / 2.0);
        for y in (y1 as usize)..((y1 + h) as usize).min(size) {
            for x in (x1 as usize)..((x1 + w) as usize).min(size) {
                let inside = class == 0 || {
                    let dx = (x as f64 + 0.5 - cx) / rx;
                    let dy = (y as f64 + 0.5 - cy) / ry;
                    dx * dx + dy * dy <= 1.0
                };
                if inside {
                    let o = (y * size + x) * 3;
                    pixels[o..o + 3].copy_from_slice(&colour);
                }
            }
        }
        labels.push([class as f32, x1 as f32, y1 as f32, (x1 + w) as f32, (y1 + h) as f32]);
    }
    Sample { size, pixels, labels }
}

/// A collated batch on the CPU.
pub struct Batch {
    /// `(B, 3, S, S)` float, 0..1.
    pub images: Tensor,
    /// `(B, max_labels, 5)` normalised `[class, x1, y1, x2, y2]`, padded.
    pub targets: Tensor,
    /// Real (unpadded) labels in the batch.
    pub labels: usize,
}

/// A float tensor of `shape` on the CPU (page-locked when `pin`), filled
/// by `fill` through a plain slice.
///
/// The loader threads must not run torch kernels: a parallel op (even the
/// copy behind `Tensor::from_slice`) starts an OpenMP team on that thread,
/// and while the thread lives the training thread's own team runs about
/// half as fast (measured: YOLOv9-t, batch 4 at 320, 2 cores: 1.7 s per step
/// with one such loader thread alive, 0.85 s without). Allocation starts
/// no team, so the samples are written straight into the tensor's memory.
fn filled(shape: &[i64], pin: bool, fill: impl FnOnce(&mut [f32])) -> Made<Tensor> {
    let t = if pin {
        crate::ops::empty_pinned(shape).map_err(DataError::Pinned)?
    } else {
        Tensor::empty(shape, (Kind::Float, Device::Cpu))
    };
    let n: i64 = shape.iter().product();
    // SAFETY: `t` is a fresh contiguous float tensor of n elements that
    // nothing else references yet.
    fill(unsafe { std::slice::from_raw_parts_mut(t.data_ptr() as *mut f32, n as usize) });
    Ok(t)
}

/// Collates samples: HWC bytes → CHW floats in 0..1, labels normalised and
/// padded to `max_labels` with class −1 (their padding). With `pin` the
/// batch lands in page-locked memory, as torch's DataLoader with
/// `pin_memory=True`, so the copy to a CUDA device can be asynchronous.
pub fn collate(samples: &[Sample], max_labels: usize, pin: bool) -> Made<Batch> {
    let b = samples.len();
    let size = samples[0].size;
    let plane = size * size;
    let s = size as i64;
    let images = filled(&[b as i64, 3, s, s], pin, |img| {
        for (k, smp) in samples.iter().enumerate() {
            let base = k * 3 * plane;
            for (p, px) in smp.pixels.chunks_exact(3).enumerate() {
                for c in 0..3 {
                    img[base + c * plane + p] = px[c] as f32 / 255.0;
                }
            }
        }
    })?;
    let mut labels = 0;
    let targets = filled(&[b as i64, max_labels as i64, 5], pin, |tgt| {
        for (k, smp) in samples.iter().enumerate() {
            let sz = smp.size as f32;
            for r in 0..max_labels {
                let o = (k * max_labels + r) * 5;
                match smp.labels.get(r) {
                    Some(l) => {
                        tgt[o..o + 5].copy_from_slice(&[
                            l[0],
                            l[1] / sz,
                            l[2] / sz,
                            l[3] / sz,
                            l[4] / sz,
                        ]);
                        labels += 1;
                    }
                    None => tgt[o..o + 5].copy_from_slice(&[-1.0, 0.0, 0.0, 0.0, 0.0]),
                }
            }
        }
    })?;
    Ok(Batch { images, targets, labels })
}

/// Builds batch `k` (images `k·B .. (k+1)·B`).
fn build(ds: &Dataset, k: usize, batch: usize, size: usize, pin: bool) -> Made<Batch> {
    let samples: Vec<Sample> = (k * batch..(k + 1) * batch)
        .map(|i| ds.sample(i, size))
        .collect::<std::result::Result<_, _>>()?;
    collate(&samples, MAX_LABELS, pin)
}

/// Lowers the calling loader thread's scheduling priority (nice +10).
/// Prefetching has the queue's slack: where cores are shared, it should use
/// the CPU the training step leaves idle rather than take it from the step.
/// When the step waits for data the loader runs alone anyway.
fn yield_to_training() {
    // SAFETY: plain syscalls on this thread's own id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

/// Loads `batches` batches in order, on `workers` threads (0: on the calling
/// thread, when asked) through a bounded queue of `2·workers` batches,
/// in page-locked memory with `pin` (training on CUDA).
pub struct Loader {
    ds: Dataset,
    batch: usize,
    size: usize,
    pin: bool,
    next: usize,
    total: usize,
    rx: Option<Receiver<(usize, Made<Batch>)>>,
    pending: BTreeMap<usize, Made<Batch>>,
    threads: Vec<JoinHandle<()>>,
}

impl Loader {
    pub fn new(
        ds: Dataset,
        batch: usize,
        size: usize,
        batches: usize,
        workers: usize,
        pin: bool,
    ) -> Loader {
        let mut l = Loader {
            ds,
            batch,
            size,
            pin,
            next: 0,
            total: batches,
            rx: None,
            pending: BTreeMap::new(),
            threads: Vec::new(),
        };
        if workers > 0 {
            let (tx, rx) = sync_channel::<(usize, Made<Batch>)>(2 * workers);
            let counter = Arc::new(AtomicUsize::new(0));
            for _ in 0..workers {
                let (tx, counter, ds) = (tx.clone(), counter.clone(), l.ds.clone());
                l.threads.push(std::thread::spawn(move || {
                    yield_to_training();
                    loop {
                        let k = counter.fetch_add(1, Ordering::SeqCst);
                        if k >= batches {
                            break;
                        }
                        if tx.send((k, build(&ds, k, batch, size, pin))).is_err() {
                            break;
                        }
                    }
                }));
            }
            l.rx = Some(rx);
        }
        l
    }

    /// The next batch in order, or `None` after the last. An image that
    /// cannot be decoded is an error (exit 1).
    pub fn next_batch(&mut self) -> Option<Result<Batch>> {
        if self.next >= self.total {
            return None;
        }
        let k = self.next;
        self.next += 1;
        let Some(rx) = &self.rx else {
            return Some(
                build(&self.ds, k, self.batch, self.size, self.pin)
                    .map_err(|e| Error::failed(e.to_string())),
            );
        };
        loop {
            if let Some(b) = self.pending.remove(&k) {
                return Some(b.map_err(|e| Error::failed(e.to_string())));
            }
            let (j, b) = rx.recv().ok()?;
            self.pending.insert(j, b);
        }
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        // Closing the queue stops the workers at their next send.
        self.rx = None;
        self.pending.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_is_deterministic_and_labelled_inside_the_image() {
        let a = synthetic(3, 64);
        let b = synthetic(3, 64);
        assert_eq!(a.pixels, b.pixels);
        assert_eq!(a.labels, b.labels);
        assert_ne!(synthetic(4, 64).pixels, a.pixels);
        for i in 0..20 {
            let s = synthetic(i, 64);
            assert!((1..=4).contains(&s.labels.len()));
            for l in &s.labels {
                assert!(l[0] == 0.0 || l[0] == 1.0);
                assert!(
                    0.0 <= l[1]
                        && l[1] < l[3]
                        && l[3] <= 64.0
                        && 0.0 <= l[2]
                        && l[2] < l[4]
                        && l[4] <= 64.0,
                    "{l:?}"
                );
            }
        }
        // The first shape's centre pixel has the shape's colour, not the background.
        let s = synthetic(0, 64);
        let l = s.labels.last().unwrap();
        let (cx, cy) = (((l[1] + l[3]) / 2.0) as usize, ((l[2] + l[4]) / 2.0) as usize);
        assert_ne!(&s.pixels[(cy * 64 + cx) * 3..(cy * 64 + cx) * 3 + 3], &s.pixels[0..3]);
    }

    #[test]
    fn parse_accepts_synthetic_forms_only() {
        assert_eq!(Dataset::parse("synthetic").unwrap().len(), SYNTHETIC_DEFAULT);
        assert_eq!(Dataset::parse("synthetic:16").unwrap().len(), 16);
        assert!(Dataset::parse("synthetic:0").is_err());
        assert!(Dataset::parse("synthetic:x").is_err());
    }

    #[test]
    fn collation_normalises_and_pads_with_minus_one() {
        let s = Sample {
            size: 2,
            pixels: vec![255, 0, 0, 0, 255, 0, 0, 0, 255, 51, 51, 51],
            labels: vec![[1.0, 0.0, 0.0, 1.0, 2.0]],
        };
        let b = collate(&[s.clone(), s], 3, false).unwrap();
        assert_eq!(b.images.size(), vec![2, 3, 2, 2]);
        assert_eq!(b.targets.size(), vec![2, 3, 5]);
        assert_eq!(
            Vec::<f32>::try_from(b.images.get(0).get(0).view([-1])).unwrap(),
            vec![1.0, 0.0, 0.0, 0.2]
        );
        assert_eq!(
            Vec::<f32>::try_from(b.targets.get(1).get(0)).unwrap(),
            vec![1.0, 0.0, 0.0, 0.5, 1.0]
        );
        assert_eq!(
            Vec::<f32>::try_from(b.targets.get(1).get(2)).unwrap(),
            vec![-1.0, 0.0, 0.0, 0.0, 0.0]
        );
        assert_eq!(b.labels, 2);
    }

    #[test]
    fn threaded_loader_yields_batches_in_order() {
        let ds = Dataset::Synthetic { n: 12 };
        let mut l = Loader::new(ds.clone(), 2, 32, 5, 3, false);
        for k in 0..5 {
            let b = l.next_batch().unwrap().unwrap();
            let want = build(&ds, k, 2, 32, false).unwrap();
            assert!(b.images.equal(&want.images), "batch {k}");
        }
        assert!(l.next_batch().is_none());
    }

    /// A YOLO dataset of `n` 80×60 PNGs; images whose index is in `labelled`
    /// get one box of class `i % 2`, the rest no label file.
    fn yolo_dataset(dir: &std::path::Path, n: usize, labelled: impl Fn(usize) -> bool) -> Dataset {
        let (img_dir, lbl_dir) = (dir.join("images/train"), dir.join("labels/train"));
        std::fs::create_dir_all(&img_dir).unwrap();
        std::fs::create_dir_all(&lbl_dir).unwrap();
        for i in 0..n {
            let img = image::RgbImage::from_fn(80, 60, |x, y| {
                image::Rgb([(x * 3) as u8, (y * 4) as u8, (i * 40) as u8])
            });
            img.save(img_dir.join(format!("{i}.png"))).unwrap();
            if labelled(i) {
                std::fs::write(
                    lbl_dir.join(format!("{i}.txt")),
                    format!("{} 0.5 0.5 0.6 0.5\n", i % 2),
                )
                .unwrap();
            }
        }
        let yaml = dir.join("data.yaml");
        std::fs::write(&yaml, "path: .\ntrain: images/train\nval: images/train\nnames: [a, b]\n")
            .unwrap();
        Dataset::parse(&yaml.display().to_string()).unwrap()
    }

    fn assert_labels_inside(s: &Sample) {
        let z = s.size as f32;
        assert_eq!(s.pixels.len(), s.size * s.size * 3);
        for l in &s.labels {
            assert!(l[0] == 0.0 || l[0] == 1.0, "{l:?}");
            assert!(
                0.0 <= l[1] && l[1] < l[3] && l[3] <= z && 0.0 <= l[2] && l[2] < l[4] && l[4] <= z,
                "{l:?}"
            );
            assert!(l[3] - l[1] > 1.0 && l[4] - l[2] > 1.0, "{l:?}");
        }
    }

    #[test]
    fn samples_are_mosaics_deterministic_per_index() {
        let ds = Dataset::Synthetic { n: 12 };
        let mut total = 0;
        for i in 0..12 {
            let a = ds.sample(i, 64).unwrap();
            let b = ds.sample(i, 64).unwrap();
            assert_eq!((&a.pixels, &a.labels), (&b.pixels, &b.labels));
            assert_labels_inside(&a);
            total += a.labels.len();
        }
        // A mosaic shows several images' boxes: on average more than one
        // synthetic image has (2.5).
        assert!(total > 12 * 2, "{total} boxes in 12 samples");
        assert_ne!(ds.sample(0, 64).unwrap().pixels, ds.sample(1, 64).unwrap().pixels);
    }

    #[test]
    fn yolo_samples_mix_labelled_and_unlabelled_images() {
        let dir = tempfile::tempdir().unwrap();
        let ds = yolo_dataset(dir.path(), 6, |i| i % 3 != 0);
        let mut boxes = 0;
        for i in 0..6 {
            let s = ds.sample(i, 64).unwrap();
            assert_labels_inside(&s);
            assert_eq!(s.labels, ds.sample(i, 64).unwrap().labels);
            boxes += s.labels.len();
        }
        assert!(boxes > 0);
        // The pulled image fits the input, its box scaled with it.
        let (img, l) = ds.pull(1, 64).unwrap();
        assert_eq!((img.w, img.h), (64, 48));
        let want = [1.0, 12.8, 12.0, 51.2, 36.0];
        assert!(l.len() == 1 && l[0].iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-4), "{l:?}");
    }

    #[test]
    fn a_dataset_without_labels_gives_background_samples() {
        let dir = tempfile::tempdir().unwrap();
        let ds = yolo_dataset(dir.path(), 3, |_| false);
        for i in 0..3 {
            let s = ds.sample(i, 32).unwrap();
            assert!(s.labels.is_empty());
            assert_eq!(s.pixels.len(), 32 * 32 * 3);
        }
        let b = collate(&[ds.sample(0, 32).unwrap()], MAX_LABELS, false).unwrap();
        assert_eq!(b.labels, 0);
    }
}
