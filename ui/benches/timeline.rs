//! Timeline benchmark (not a timed test): on a trace given as argument
//! (e.g. the 1 GB trace of `gen-trace`), prints
//! - the explorer's first read: the lenses alone, and the lenses with the
//!   Timeline's index built in the same pass,
//! - the index pass (pass 1 over the whole trace, once per file) and the
//!   memory the index holds,
//! - opening a step (re-reading its blocks, building its lanes, drawing
//!   it), and the memory its intervals hold,
//! - keypress-to-frame on the Timeline pane: cursor, zoom, pan, and `]`
//!   (the next step, read in place here; the explorer reads it on its
//!   loader thread and answers the key with a frame at once).
//!
//! Run: `cargo bench -p libreyolo-ui --bench timeline -- TRACE.json`.
//! Frames are drawn to ratatui's TestBackend at 160×48.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use libreyolo_core::analysis::timeline::{index, open_step};
use libreyolo_core::input::LoadOptions;
use libreyolo_core::profile::{Input, Profile};
use libreyolo_ui::app::{App, Pane};
use libreyolo_ui::screen;
use libreyolo_ui::theme::{Depth, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

mod common;

/// Columns for a measure's label in the printed lines.
const LABEL_WIDTH: usize = 44;

const W: u16 = 160;
const H: u16 = 48;

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "timeline bench: run it with `cargo bench -p libreyolo-ui --bench timeline -- TRACE.json`"
        );
        return;
    }
    let Some(path) = std::env::args().skip(1).find(|a| a.ends_with(".json") || a.ends_with(".gz"))
    else {
        println!("timeline bench: give a trace (gen-trace --size 1GB --out x.json)");
        return;
    };
    let path = PathBuf::from(path);
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!("trace {} ({:.1} MB)", path.display(), size as f64 / 1e6);

    // The explorer's first read: the lenses alone (a reader's read), and
    // the lenses with the Timeline's index from the same pass (what the
    // explorer does, so that a step opens with no pass of its own).
    let t = Instant::now();
    libreyolo_core::input::load(&path, LoadOptions::default()).unwrap();
    let lenses = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let opts = LoadOptions { timeline_index: true, ..LoadOptions::default() };
    let first = libreyolo_core::input::load(&path, opts).unwrap();
    println!(
        "first read: lenses {lenses:.0} ms; lenses + Timeline index in the same pass {:.0} ms ({} index)",
        t.elapsed().as_secs_f64() * 1e3,
        if first.index.is_some() { "with its" } else { "without an" }
    );

    let t = Instant::now();
    let ix = Arc::new(index(&path, &Default::default()).unwrap());
    println!(
        "index pass: {:.0} ms, {} events, {} steps, index holds {:.1} KB",
        t.elapsed().as_secs_f64() * 1e3,
        ix.events,
        ix.steps.len(),
        ix.heap_bytes() as f64 / 1e3
    );

    // Opening a step: steps spread over the file (the first, the middle,
    // the last), each read anew.
    let mut open = Vec::new();
    let mut mem = 0;
    let mut spans = 0;
    for &i in
        &[0, ix.steps.len() / 4, ix.steps.len() / 2, 3 * ix.steps.len() / 4, ix.steps.len() - 1]
    {
        for _ in 0..3 {
            let t = Instant::now();
            let tl = open_step(&ix, i).unwrap();
            let mut app = app_with(&path, Arc::clone(&ix), i, tl.clone());
            let mut term = Terminal::new(TestBackend::new(W, H)).unwrap();
            term.draw(|f| screen::draw(f, &app)).unwrap();
            open.push(t.elapsed());
            mem = mem.max(tl.heap_bytes());
            spans = spans.max(tl.lanes.iter().map(|l| l.spans.len()).sum::<usize>());
            app.quit = true;
        }
    }
    common::report("open a step (read + lanes + first draw)", LABEL_WIDTH, &mut open);
    if ix.checkpoints() > 0 {
        // A .json.gz: the last step with and without the gzip checkpoints
        // (without: inflating from the start, as before them).
        println!(
            "gzip checkpoints: {}, {:.1} MB held",
            ix.checkpoints(),
            ix.heap_bytes() as f64 / 1e6
        );
        let last = ix.steps.len() - 1;
        for (label, ix) in [
            ("  last step, resumed at a checkpoint", (*ix).clone()),
            ("  last step, inflated from the start", ix.without_checkpoints()),
        ] {
            let mut times: Vec<_> = (0..3)
                .map(|_| {
                    let t = Instant::now();
                    open_step(&ix, last).unwrap();
                    t.elapsed()
                })
                .collect();
            common::report(label, LABEL_WIDTH, &mut times);
        }
    }
    println!("largest step: {spans} intervals, {:.1} KB held", mem as f64 / 1e3);

    let mid = ix.steps.len() / 2;
    let tl = open_step(&ix, mid).unwrap();
    let mut app = app_with(&path, Arc::clone(&ix), mid, tl);
    let mut term = Terminal::new(TestBackend::new(W, H)).unwrap();
    let key =
        |app: &mut App, code: KeyCode| app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
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
    measure(&mut app, "  l (next span), whole step in view", 300, &mut |a| {
        key(a, KeyCode::Char('l'))
    });
    measure(&mut app, "  h (previous span)", 300, &mut |a| key(a, KeyCode::Char('h')));
    let mut zoom_in = true;
    measure(&mut app, "  + / - (zoom)", 200, &mut |a| {
        key(a, if zoom_in { KeyCode::Char('+') } else { KeyCode::Char('-') });
        zoom_in = !zoom_in;
    });
    for _ in 0..4 {
        key(&mut app, KeyCode::Char('+'));
    }
    let mut right = true;
    measure(&mut app, "  PgDn / PgUp (pan), zoomed x16", 200, &mut |a| {
        key(a, if right { KeyCode::PageDown } else { KeyCode::PageUp });
        right = !right;
    });
    measure(&mut app, "  Down / Up (lane)", 200, &mut |a| key(a, KeyCode::Down));
    let mut next = true;
    measure(&mut app, "  ] / [ (step, read in place)", 20, &mut |a| {
        key(a, if next { KeyCode::Char(']') } else { KeyCode::Char('[') });
        next = !next;
    });
}

/// An app on the Timeline pane showing step `i` (the profile itself is
/// not needed to draw it: an empty one stands in).
fn app_with(
    path: &Path,
    ix: Arc<libreyolo_core::analysis::timeline::StepIndex>,
    i: usize,
    tl: libreyolo_core::analysis::timeline::Timeline,
) -> App {
    let input = Input { path: path.to_path_buf(), profile: Profile::default(), from_trace: true };
    let mut app = App::with_inputs(Theme::load("dark", Depth::Ansi16).unwrap(), input, None);
    app.resize(W, H);
    app.panes.timeline.show(ix, i, tl);
    app.pane = Pane::Timeline;
    app
}
