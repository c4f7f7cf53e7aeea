//! Hostile datasets and image sources (issue #27): symlink loops, device
//! and non-UTF-8 label files, a BOM, absurd class counts, truncated and
//! oversized images. Each ends in bounded time and memory with a sentence.

mod common;

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant};

use common::hostile::run_capture;
use libreyolo_capture::train::data::YoloSet;

/// A dataset of `n` small PNGs under `dir/images/train`, labels beside,
/// and `data.yaml` holding `yaml` (`path`/`train` lines added).
fn dataset(dir: &Path, n: usize, yaml: &str) -> String {
    let img_dir = dir.join("images/train");
    std::fs::create_dir_all(&img_dir).unwrap();
    std::fs::create_dir_all(dir.join("labels/train")).unwrap();
    for i in 0..n {
        image::RgbImage::from_pixel(32, 32, image::Rgb([10, 20, 30]))
            .save(img_dir.join(format!("{i:03}.png")))
            .unwrap();
    }
    let path = dir.join("data.yaml");
    std::fs::write(&path, format!("path: .\ntrain: images/train\n{yaml}")).unwrap();
    path.display().to_string()
}

#[test]
fn a_symlink_loop_in_the_images_is_walked_once() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dataset(dir.path(), 3, "names: [a, b]\n");
    let img_dir = dir.path().join("images/train");
    // Two links back to the folder: 2^depth paths without a visited set.
    symlink(".", img_dir.join("x")).unwrap();
    symlink(".", img_dir.join("y")).unwrap();
    symlink("../train", img_dir.join("z")).unwrap();
    let t = Instant::now();
    let set = YoloSet::load(&yaml).unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(set.data.images.len(), 3, "{:?}", set.data.images);
}

#[test]
fn device_oversized_and_non_utf8_label_files_are_said_apart_from_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dataset(dir.path(), 5, "names: [a, b]\n");
    let labels = dir.path().join("labels/train");
    symlink("/dev/zero", labels.join("000.txt")).unwrap();
    std::fs::write(labels.join("001.txt"), b"0 0.5 0.5 \xff\xfe 0.2\n").unwrap();
    std::fs::write(labels.join("002.txt"), "0 0.5 0.5 0.2 0.2\n").unwrap();
    let big = std::fs::File::create(labels.join("003.txt")).unwrap();
    big.set_len(17 << 20).unwrap(); // sparse: 17 MiB of zeros on no disk
    // 004 has no label file.
    let t = Instant::now();
    let set = YoloSet::load(&yaml).unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "/dev/zero is not read to its end: {:?}",
        t.elapsed()
    );
    assert_eq!(set.unlabelled, 1);
    assert_eq!(set.unreadable.count, 3);
    assert_eq!(set.labels[2].len(), 1);
    let notes =
        libreyolo_capture::train::data::Dataset::Yolo(std::sync::Arc::new(set)).notes().join("\n");
    assert!(notes.contains("1 of 5 images have no label file"), "{notes}");
    assert!(
        notes.contains("3 label files could not be read (first: ")
            && notes.contains("000.txt: not a regular file"),
        "{notes}"
    );
    // Each reason, read alone.
    use libreyolo_capture::train::yolo::{MAX_LABEL_BYTES, read_text};
    assert_eq!(
        read_text(&labels.join("001.txt"), MAX_LABEL_BYTES).unwrap_err().to_string(),
        "not UTF-8 text"
    );
    assert_eq!(
        read_text(&labels.join("003.txt"), MAX_LABEL_BYTES).unwrap_err().to_string(),
        "larger than 16 MiB"
    );
}

#[test]
fn a_byte_order_mark_does_not_hide_the_first_key() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path(), 2, "");
    let yaml = dir.path().join("bom.yaml");
    std::fs::write(&yaml, "\u{feff}names: [cat, dog]\npath: .\ntrain: images/train\n").unwrap();
    let set = YoloSet::load(yaml.to_str().unwrap()).unwrap();
    assert_eq!(set.data.names, ["cat", "dog"]);
}

#[test]
fn absurd_class_counts_are_usage_errors_before_any_name_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    for (nc, want) in [
        ("1000000000000", "nc 1000000000000: expected 1 to 10000 classes"),
        ("0", "nc 0: expected 1 to 10000 classes"),
    ] {
        let yaml = dataset(dir.path(), 2, &format!("nc: {nc}\n"));
        let ran = run_capture(&[
            "profile",
            "run",
            &yaml,
            "--device",
            "cpu",
            "--project",
            project.to_str().unwrap(),
        ]);
        assert_eq!(ran.code, Some(2), "{}", ran.stderr);
        assert!(ran.stderr.contains(want), "{}", ran.stderr);
        assert!(ran.peak_mib < 1024, "peak RSS {} MiB", ran.peak_mib);
        assert!(!project.exists());
    }
    let names: Vec<String> = (0..10_001).map(|i| format!("c{i}")).collect();
    let yaml = dataset(dir.path(), 2, &format!("names: [{}]\n", names.join(", ")));
    let err = YoloSet::load(&yaml).unwrap_err().to_string();
    assert!(err.contains("10001 names, more than the 10000 classes"), "{err}");
}

/// A JPEG of `w`×`h`, encoded here.
fn jpeg(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x * 7) as u8, (y * 5) as u8, ((x ^ y) * 3) as u8])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Jpeg).unwrap();
    out.into_inner()
}

#[test]
fn a_truncated_jpeg_is_an_error_and_a_whole_one_is_not() {
    use libreyolo_capture::source::jpeg_is_complete;
    let whole = jpeg(200, 150);
    assert!(jpeg_is_complete(&whole));
    assert!(jpeg_is_complete(include_bytes!("../assets/astronaut.jpg")));
    for cut in [whole.len() / 2, whole.len() - 2, 300] {
        assert!(!jpeg_is_complete(&whole[..cut]), "cut at {cut}");
    }
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let img = dir.path().join("half.jpg");
    std::fs::write(&img, &whole[..whole.len() / 2]).unwrap();
    let ran = run_capture(&[
        "profile",
        "infer",
        img.to_str().unwrap(),
        "--device",
        "cpu",
        "--project",
        project.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(ran.stderr.contains("half.jpg: truncated JPEG"), "{}", ran.stderr);
    assert!(!project.exists());
    // In a training dataset, the sample that reads it fails the run (exit 1).
    let err = libreyolo_capture::source::decode(&whole[..whole.len() / 2]).unwrap_err();
    assert!(err.contains("truncated JPEG"), "{err}");
}

/// A 54-byte BMP header claiming `w`×`h` 24-bit pixels (and no pixels).
fn bmp_header(w: i32, h: i32) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"BM");
    b.extend_from_slice(&(54u32 + 4).to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&54u32.to_le_bytes());
    b.extend_from_slice(&40u32.to_le_bytes());
    b.extend_from_slice(&w.to_le_bytes());
    b.extend_from_slice(&h.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&24u16.to_le_bytes());
    b.extend_from_slice(&[0; 24]);
    b.extend_from_slice(&[0; 4]);
    b
}

#[test]
fn images_that_would_decode_past_the_budget_are_refused_from_their_headers() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("images");
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..8 {
        std::fs::write(src.join(format!("{i}.bmp")), bmp_header(20_000, 20_000)).unwrap();
    }
    let project = dir.path().join("project");
    let ran = run_capture(&[
        "profile",
        "infer",
        src.to_str().unwrap(),
        "--device",
        "cpu",
        "--max-memory",
        "2G",
        "--project",
        project.to_str().unwrap(),
    ]);
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("the 8 images decode to more than the 2.00 GiB the capture may use"),
        "{}",
        ran.stderr
    );
    assert!(ran.peak_mib < 1024, "peak RSS {} MiB", ran.peak_mib);
    assert!(!project.exists());
}

/// A folder of many images costs what the window takes: with 1 warm-up
/// and 2 measured batches of 1, three good images are decoded and the 17
/// bombs after them (each would decode to 1.2 GB) are never read; the
/// profile counts the images it ran on.
#[test]
fn only_the_images_the_window_takes_are_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("images");
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..3 {
        std::fs::write(src.join(format!("{i:02}.jpg")), jpeg(96, 64)).unwrap();
    }
    for i in 3..20 {
        std::fs::write(src.join(format!("{i:02}.bmp")), bmp_header(20_000, 20_000)).unwrap();
    }
    let project = dir.path().join("project");
    let args = |runs: &str| {
        run_capture(&[
            "profile",
            "infer",
            src.to_str().unwrap(),
            "--device",
            "cpu",
            "--imgsz",
            "64",
            "--warmup",
            "1",
            "--runs",
            runs,
            "--threads",
            "1",
            "--max-memory",
            "2G",
            "--project",
            project.to_str().unwrap(),
        ])
    };
    let ran = args("2");
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("the window takes 3 of the 20 images (3 batches of 1)"),
        "{}",
        ran.stderr
    );
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(project.join("infer/profile.json")).unwrap())
            .unwrap();
    assert_eq!(profile["config"]["images"], 3, "{}", profile["config"]);
    // A window long enough to reach the first bomb reads it, and refuses
    // it without decoding (the decoder's own limit: 512 MiB an image).
    let ran = args("3");
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(ran.stderr.contains("the window takes 4 of the 20 images"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("cannot decode image") && ran.stderr.contains("03.bmp"),
        "{}",
        ran.stderr
    );
    assert!(ran.peak_mib < 1024, "peak RSS {} MiB", ran.peak_mib);
}
