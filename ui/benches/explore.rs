//! Explorer benchmark (not a timed test): prints
//! - first frame: loading a profile.json, running the lenses and drawing the
//!   Summary pane (what the user waits for after start), and
//! - keypress-to-frame on a Kernels pane of 50k rows (a generated profile):
//!   handling the key (re-running the lens when a filter changes) plus
//!   drawing the frame;
//! - a distributed job's first frame: reading the 8 rank traces of
//!   tests/fixtures/traces/param_dlrm_v100_8rank (in parallel), the job
//!   lens and each rank's lenses, drawing the Ranks pane; then Enter on a
//!   rank (its panes) and a sort key on the Ranks pane.
//!
//! Run: `cargo bench -p libreyolo-ui --bench explore [-- PROFILE.json]`.
//! Frames are drawn to ratatui's TestBackend at 160×48, so terminal I/O is
//! not included.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use libreyolo_core::lens::kernels::{KernelQuery, Sort, kernels};
use libreyolo_core::profile::{
    self, Category, CategoryRow, Figures, Input, KernelRow, PhaseRow, Profile, Verdict,
};
use libreyolo_ui::app::App;
use libreyolo_ui::screen;
use libreyolo_ui::theme::{Depth, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

mod common;

/// Columns for a measure's label in the printed lines.
const LABEL_WIDTH: usize = 36;

const W: u16 = 160;
const H: u16 = 48;

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` does not, and
    // only checks that this builds.
    if !std::env::args().any(|a| a == "--bench") {
        println!("explore bench: run it with `cargo bench -p libreyolo-ui --bench explore`");
        return;
    }
    let path = std::env::args()
        .skip(1)
        .find(|a| a.ends_with(".json") || a.ends_with(".gz"))
        .unwrap_or_else(|| {
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../tests/fixtures/reference/train_b4/profile.json"
            )
            .to_string()
        });
    first_frame(&path);
    keypress_50k();
    job_frames();
}

fn job_frames() {
    use libreyolo_ui::job::OpenJob;
    let dir =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/traces/param_dlrm_v100_8rank");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let theme = Theme::load("dark", Depth::Ansi16).unwrap();
    let mut term = Terminal::new(TestBackend::new(W, H)).unwrap();
    let (mut first, mut enter, mut sort) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..10 {
        let t0 = Instant::now();
        let job =
            OpenJob::read(&files, &std::sync::atomic::AtomicUsize::new(0), &Default::default())
                .unwrap();
        let mut app = App::with_job(theme.clone(), dir, job);
        term.draw(|f| screen::draw(f, &app)).unwrap();
        first.push(t0.elapsed());
        for (key, times) in [(KeyCode::Char('s'), &mut sort), (KeyCode::Enter, &mut enter)] {
            let t0 = Instant::now();
            app.handle_key(KeyEvent::new(key, KeyModifiers::NONE));
            term.draw(|f| screen::draw(f, &app)).unwrap();
            times.push(t0.elapsed());
        }
    }
    println!("distributed job ({} rank traces, {W}x{H}):", files.len());
    common::report("  first frame (read ranks, Ranks)", LABEL_WIDTH, &mut first);
    common::report("  s (sort) → frame", LABEL_WIDTH, &mut sort);
    common::report("  Enter (a rank's Summary) → frame", LABEL_WIDTH, &mut enter);
}

fn first_frame(path: &str) {
    let mut times = Vec::new();
    for _ in 0..20 {
        let t0 = Instant::now();
        let theme = Theme::load("dark", Depth::Ansi16).unwrap();
        let input = libreyolo_core::input::load(path, Default::default()).unwrap().input;
        let app = App::with_inputs(theme, input, None);
        let mut term = Terminal::new(TestBackend::new(W, H)).unwrap();
        term.draw(|f| screen::draw(f, &app)).unwrap();
        times.push(t0.elapsed());
    }
    println!("first frame (load {path} + lenses + Summary draw, {W}x{H}):");
    common::report("  first frame", LABEL_WIDTH, &mut times);
}

/// A profile with `n` distinct kernels over 4 categories and 2 phases.
fn generated(n: usize) -> Profile {
    const CATS: [Category; 4] =
        [Category::GemmConv, Category::Elementwise, Category::ReductionNorm, Category::Other];
    let mut kernels = Vec::with_capacity(n);
    for i in 0..n {
        let cat = CATS[i % CATS.len()].clone();
        let ms = 1000.0 / (i as f64 + 10.0);
        kernels.push(KernelRow {
            kernel: format!("kernel_{i}<float, {}>", i % 97),
            raw_name: format!(
                "void at::native::(anonymous namespace)::kernel_{i}<float, {}, {}>(at::TensorIteratorBase&, float const*)",
                i % 97,
                i % 13
            ),
            category: cat,
            tensorcore: i % 5 == 0,
            ms_per_step: ms,
            pct_of_gpu: ms / 10.0,
            count_per_step: (i % 50 + 1) as f64,
            priced_pct: None,
            achieved: Default::default(),
            calls: None,
        });
    }
    let half = n / 2;
    let mut p = Profile {
        schema: profile::SCHEMA_ID.to_string(),
        bound: Verdict::Compute,
        bound_why: "generated".into(),
        figures: Figures {
            step_ms: 1000.0,
            gpu_util: 0.9,
            gpu_busy_ms_per_step: 900.0,
            launches_per_step: n as f64,
            kernels_per_step: n as f64,
            unique_kernels: n as u64,
            ..Default::default()
        },
        categories: CATS
            .iter()
            .map(|c| CategoryRow { name: c.clone(), pct: 25.0, ms_per_step: 250.0 })
            .collect(),
        phases: ["forward", "backward"]
            .iter()
            .map(|ph| PhaseRow {
                phase: ph.to_string(),
                gpu_ms_per_step: 450.0,
                ..Default::default()
            })
            .collect(),
        top_kernels: kernels[..10].to_vec(),
        ..Default::default()
    };
    p.kernels_by_phase.insert("forward".into(), kernels[..half].to_vec());
    p.kernels_by_phase.insert("backward".into(), kernels[half..].to_vec());
    p.kernels = kernels;
    p
}

fn keypress_50k() {
    let n = 50_000;
    let t0 = Instant::now();
    let input = Input {
        path: PathBuf::from("generated-50k.json"),
        profile: generated(n),
        from_trace: false,
    };
    let mut app = App::with_inputs(Theme::load("dark", Depth::Ansi16).unwrap(), input, None);
    let mut term = Terminal::new(TestBackend::new(W, H)).unwrap();
    // As the event loop does: the page of PgUp/PgDn follows the screen.
    app.resize(W, H);
    let key =
        |app: &mut App, code: KeyCode| app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
    key(&mut app, KeyCode::Char('3'));
    term.draw(|f| screen::draw(f, &app)).unwrap();
    println!("\nKernels pane with {n} rows (set-up {:.0} ms):", t0.elapsed().as_secs_f64() * 1e3);

    let mut measure = |app: &mut App, label: &str, iters: usize, act: &mut dyn FnMut(&mut App)| {
        let mut times = Vec::with_capacity(iters);
        for _ in 0..iters {
            let t = Instant::now();
            act(app);
            term.draw(|f| screen::draw(f, app)).unwrap();
            times.push(t.elapsed());
        }
        common::report(label, LABEL_WIDTH, &mut times);
    };
    println!("in place (no worker):");
    measure(&mut app, "  Down (move selection)", 500, &mut |a| key(a, KeyCode::Down));
    measure(&mut app, "  PageDown", 200, &mut |a| key(a, KeyCode::PageDown));
    measure(&mut app, "  s (re-sort all rows)", 30, &mut |a| key(a, KeyCode::Char('s')));
    measure(&mut app, "  c (category filter)", 30, &mut |a| key(a, KeyCode::Char('c')));
    measure(&mut app, "  t (Tensor Core toggle)", 30, &mut |a| key(a, KeyCode::Char('t')));
    measure(&mut app, "  p (phase filter)", 30, &mut |a| key(a, KeyCode::Char('p')));
    key(&mut app, KeyCode::Char('x'));
    key(&mut app, KeyCode::Char('/'));
    for c in "kernel_1".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    let mut typed = false;
    measure(&mut app, "  regex key (live filter)", 30, &mut |a| {
        // One key per frame: "kernel_1" + '2', then Backspace, alternately.
        key(a, if typed { KeyCode::Backspace } else { KeyCode::Char('2') });
        typed = !typed;
    });
    key(&mut app, KeyCode::Esc);
    measure(&mut app, "  Enter (detail view)", 30, &mut |a| key(a, KeyCode::Enter));
    measure(&mut app, "  3 (draw pane only)", 200, &mut |a| key(a, KeyCode::Char('3')));
    println!("(the figures above run the lens in place, on the key's own time)");

    // As the explorer runs: filters of a list this long go to the worker
    // thread. The key is answered by a frame at once (status "filtering…");
    // the filtered frame follows when the lens is done.
    app.worker = Some(libreyolo_ui::app::Worker::spawn());
    println!("with the filter worker (as the explorer runs):");
    for (label, code) in [
        ("  s (re-sort)", KeyCode::Char('s')),
        ("  c (category filter)", KeyCode::Char('c')),
        ("  t (Tensor Core toggle)", KeyCode::Char('t')),
        ("  p (phase filter)", KeyCode::Char('p')),
    ] {
        let (mut first, mut done) = (Vec::new(), Vec::new());
        for _ in 0..30 {
            let t = Instant::now();
            key(&mut app, code);
            term.draw(|f| screen::draw(f, &app)).unwrap();
            first.push(t.elapsed());
            while app.panes.kernels.pending.is_some() {
                if !app.poll_worker() {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            term.draw(|f| screen::draw(f, &app)).unwrap();
            done.push(t.elapsed());
        }
        common::report(&format!("{label} → frame"), LABEL_WIDTH, &mut first);
        common::report(&format!("{label} → filtered"), LABEL_WIDTH, &mut done);
    }

    // Where the time of a filter goes: the core's kernels lens alone.
    let p = app.profile().unwrap().clone();
    println!("of which the kernels lens alone ({n} rows):");
    let queries = [
        ("  sort time", KernelQuery::default()),
        ("  sort count", KernelQuery { sort: Sort::Count, ..Default::default() }),
        ("  sort name", KernelQuery { sort: Sort::Name, ..Default::default() }),
        ("  category", KernelQuery { category: Some("elementwise".into()), ..Default::default() }),
        ("  Tensor Core", KernelQuery { tensorcore: true, ..Default::default() }),
        ("  regex kernel_1", KernelQuery { grep: Some("kernel_1".into()), ..Default::default() }),
    ];
    for (label, q) in queries {
        let mut times: Vec<Duration> = (0..10)
            .map(|_| {
                let t = Instant::now();
                let _ = kernels(&p, &q).unwrap();
                t.elapsed()
            })
            .collect();
        common::report(label, LABEL_WIDTH, &mut times);
    }
}
