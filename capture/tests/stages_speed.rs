//! Not a benchmark: prints what one preprocess / forward / postprocess costs
//! here, to spot a stage that is far off (run with --nocapture --ignored).

use std::time::Instant;

use libreyolo_capture::{model::Yolo9, postprocess, preprocess, source};

#[test]
#[ignore = "not a test: prints what each stage costs; run it with --ignored --nocapture"]
fn stage_costs() {
    let img = &source::load(&[], &Default::default()).unwrap()[0];
    let mut m = Yolo9::new(libreyolo_core::cli::ModelSize::T, 80, tch::Device::Cpu).unwrap();
    m.fuse();
    let time = |label: &str, n: usize, f: &mut dyn FnMut()| {
        f();
        let t0 = Instant::now();
        for _ in 0..n {
            f();
        }
        eprintln!("{label}: {:.2} ms", t0.elapsed().as_secs_f64() * 1e3 / n as f64);
    };
    let x0 = img.pixels.unsqueeze(0);
    eprintln!("strides {:?} {:?}", x0.size(), x0.stride());
    time("  resize u8", 20, &mut || {
        let _ = x0.upsample_bilinear2d([320, 320], false, None, None);
    });
    let r = x0.upsample_bilinear2d([320, 320], false, None, None);
    eprintln!("resized strides {:?}", r.stride());
    time("  pad", 20, &mut || {
        let _ = r.pad([0, 0, 0, 0], "constant", Some(114.0));
    });
    time("  float", 20, &mut || {
        let _ = r.to_kind(tch::Kind::Float).contiguous() / 255.0;
    });
    let (x, g) =
        preprocess::letterbox(&img.pixels, 320, preprocess::Pad::TopLeft, tch::Device::Cpu);
    time("preprocess", 20, &mut || {
        let _ = preprocess::letterbox(&img.pixels, 320, preprocess::Pad::TopLeft, tch::Device::Cpu);
    });
    let out = m.forward(&x);
    time("forward", 3, &mut || {
        let _ = m.forward(&x);
    });
    // A model that yields thousands of candidates: low threshold.
    time("postprocess conf 0.25", 10, &mut || {
        let _ = postprocess::detections(&out.predictions, 0, &g, 0.25, 0.45, 300);
    });
    time("postprocess conf 0.001", 3, &mut || {
        let _ = postprocess::detections(&out.predictions, 0, &g, 0.001, 0.45, 300);
    });
}
