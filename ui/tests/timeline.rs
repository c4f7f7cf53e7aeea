//! The Timeline pane on a real trace with two overlapping streams
//! (HTA's NCCL trace, A100: compute on stream 7, NCCL on stream 40, three
//! steps): the screen, the keys (zoom, pan, steps, selection), and the
//! selected kernel checked against an independent reading of the trace.

mod common;

use common::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use libreyolo_core::analysis::timeline::LaneKind;
use libreyolo_ui::app::{App, Pane};

fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn timeline_app() -> App {
    let mut a = app(NCCL, None);
    key(&mut a, KeyCode::Char('7'));
    assert_eq!(a.pane, Pane::Timeline);
    assert!(a.panes.timeline.error.is_none(), "{:?}", a.panes.timeline.error);
    a
}

/// The trace's events, read whole with serde_json (not the core's reader).
fn events() -> Vec<serde_json::Value> {
    let f = std::fs::File::open(NCCL).unwrap();
    let v: serde_json::Value = serde_json::from_reader(flate2::read::GzDecoder::new(f)).unwrap();
    v["traceEvents"].as_array().unwrap().clone()
}

#[test]
fn the_timeline_of_a_step_with_two_streams() {
    let mut a = timeline_app();
    for (w, h) in [(80, 24), (160, 48)] {
        let s = screen(&mut a, w, h);
        insta::assert_snapshot!(format!("nccl_timeline_{w}x{h}"), s);
        assert!(s.contains("stream 7") && s.contains("stream 40") && s.contains("GPU busy"), "{s}");
        assert!(s.contains("(1 of 3)"), "{s}");
    }
}

/// The selected span's name and duration (ns).
fn selected(a: &App) -> (String, i64) {
    let (tl, s) = a.panes.timeline.selected().expect("a selected span");
    (tl.name(s.name).to_string(), s.dur())
}

#[test]
fn the_first_kernel_of_the_step_matches_an_independent_reading() {
    let a = timeline_app();
    let tl = a.panes.timeline.timeline.clone().unwrap();
    let lane = &tl.lanes[a.panes.timeline.lane];
    assert_eq!(
        lane.kind,
        LaneKind::Stream { device: 0, stream: 7 },
        "the cursor starts on the first stream"
    );
    let (name, dur) = selected(&a);

    // Independently: the step's window, the runtime calls in it, and the
    // earliest stream-7 kernel they launched.
    let ev = events();
    let step =
        ev.iter().find(|e| e["name"] == "ProfilerStep#4" && e["cat"] == "user_annotation").unwrap();
    let (s0, s1) = (
        step["ts"].as_f64().unwrap(),
        step["ts"].as_f64().unwrap() + step["dur"].as_f64().unwrap(),
    );
    let launched: std::collections::HashSet<i64> = ev
        .iter()
        .filter(|e| {
            e["cat"] == "cuda_runtime" && e["ts"].as_f64().is_some_and(|t| t >= s0 && t < s1)
        })
        .filter_map(|e| e["args"]["correlation"].as_i64())
        .collect();
    let first = ev
        .iter()
        .filter(|e| e["cat"] == "kernel" && e["args"]["stream"] == 7)
        .filter(|e| e["args"]["correlation"].as_i64().is_some_and(|c| launched.contains(&c)))
        .min_by(|a, b| a["ts"].as_f64().unwrap().total_cmp(&b["ts"].as_f64().unwrap()))
        .unwrap();
    assert_eq!(name, first["name"].as_str().unwrap());
    assert_eq!(dur, (first["dur"].as_f64().unwrap() * 1000.0).round() as i64);
    // Epoch µs × 1000 is past f64's exact integers: whole µs and fraction apart.
    let exact_ns = |us: f64| us.trunc() as i64 * 1000 + ((us - us.trunc()) * 1000.0).round() as i64;
    let start = exact_ns(first["ts"].as_f64().unwrap()) - exact_ns(s0);
    assert_eq!(tl.lanes[a.panes.timeline.lane].spans[0].start, start);
}

#[test]
fn kernel_times_over_the_steps_are_the_kernels_lens_figures() {
    // Every kernel of the three steps' timelines, summed, gives the
    // Kernels lens's ms and calls per step — for all kernels at once.
    let mut a = timeline_app();
    let (name, _) = selected(&a);
    let steps = a.panes.timeline.index.as_ref().unwrap().steps.len();
    assert_eq!(steps, 3);
    let mut sums: std::collections::BTreeMap<String, (i64, usize)> = Default::default();
    for i in 0..steps {
        if i > 0 {
            key(&mut a, KeyCode::Char(']'));
        }
        assert_eq!(a.panes.timeline.step, i);
        let tl = a.panes.timeline.timeline.clone().unwrap();
        for l in tl.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Stream { .. })) {
            for s in l.spans.iter().filter(|s| {
                s.category != u8::MAX
                    && !tl.name(s.name).starts_with("Memcpy")
                    && !tl.name(s.name).starts_with("Memset")
            }) {
                let e = sums.entry(tl.name(s.name).to_string()).or_default();
                e.0 += s.dur();
                e.1 += 1;
            }
        }
    }
    let p = a.profile().unwrap();
    assert_eq!(sums.len(), p.kernels.len(), "the same kernels");
    for row in &p.kernels {
        let (ns, calls) = sums[&row.raw_name];
        // The profile keeps ms per step to 4 decimals.
        assert!(
            (ns as f64 / 1e6 / steps as f64 - row.ms_per_step).abs() <= 0.5e-4,
            "{}: {ns} ns vs {} ms/step",
            row.raw_name,
            row.ms_per_step
        );
        assert!(
            (calls as f64 / steps as f64 - row.count_per_step).abs() < 0.01,
            "{}",
            row.raw_name
        );
    }

    // Enter on a kernel opens its details in the Kernels pane.
    key(&mut a, KeyCode::Char('['));
    key(&mut a, KeyCode::Char('['));
    assert_eq!(selected(&a).0, name);
    let (lane, cursor, view) =
        (a.panes.timeline.lane, a.panes.timeline.cursor, a.panes.timeline.view);
    let tl = a.panes.timeline.timeline.clone().unwrap();
    let span = tl.lanes[lane].spans[cursor];
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.pane, Pane::Kernels);
    assert!(a.panes.kernels.detail);
    assert_eq!(a.panes.kernels.selected_kernel().unwrap().raw_name, name);
    // The details say which call they were opened on: its time, where it
    // starts in the step, its stream and its launching op.
    let s = screen(&mut a, 160, 48);
    let ms = |ns: i64| format!("{:.3}", ns as f64 / 1e6);
    let call = format!(
        "this call     {} ms at {} ms of step {} · {}",
        ms(span.dur()),
        ms(span.start),
        tl.step.number.unwrap(),
        tl.lanes[lane].label
    );
    assert!(s.contains(&call), "{call}\n{s}");
    assert!(s.contains("Esc: back to the Timeline"), "{s}");
    // Esc goes back to the Timeline, the cursor where it was.
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.pane, Pane::Timeline);
    assert!(!a.panes.kernels.detail && a.panes.kernels.call.is_none());
    assert_eq!(
        (a.panes.timeline.lane, a.panes.timeline.cursor, a.panes.timeline.view),
        (lane, cursor, view)
    );
    // Details opened in the Kernels pane itself close to its list.
    key(&mut a, KeyCode::Char('3'));
    key(&mut a, KeyCode::Enter);
    assert!(a.panes.kernels.detail);
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.pane, Pane::Kernels);
    assert!(!a.panes.kernels.detail);
}

#[test]
fn zoom_pan_and_the_cursor() {
    let mut a = timeline_app();
    let extent = a.panes.timeline.timeline.as_ref().unwrap().extent;
    assert_eq!(a.panes.timeline.view, (0, extent), "the whole step first");

    key(&mut a, KeyCode::Char('+'));
    let (t0, t1) = a.panes.timeline.view;
    assert_eq!(t1 - t0, extent / 2);
    key(&mut a, KeyCode::Char('-'));
    assert_eq!(a.panes.timeline.view, (0, extent));

    // h/l move the cursor span by span along the lane.
    let first = selected(&a);
    key(&mut a, KeyCode::Char('l'));
    assert_eq!(a.panes.timeline.cursor, 1);
    assert_ne!(selected(&a), first);
    key(&mut a, KeyCode::Left);
    assert_eq!(a.panes.timeline.cursor, 0);
    assert_eq!(selected(&a), first);

    // Zoomed in, walking the cursor pans the view with it.
    for _ in 0..6 {
        key(&mut a, KeyCode::Char('+'));
    }
    let w = a.panes.timeline.view.1 - a.panes.timeline.view.0;
    assert_eq!(w, extent >> 6);
    let n = a.panes.timeline.timeline.as_ref().unwrap().lanes[a.panes.timeline.lane].spans.len();
    for _ in 0..n {
        key(&mut a, KeyCode::Char('l'));
    }
    assert_eq!(a.panes.timeline.cursor, n - 1);
    let last =
        a.panes.timeline.timeline.as_ref().unwrap().lanes[a.panes.timeline.lane].spans[n - 1];
    let (t0, t1) = a.panes.timeline.view;
    assert!(
        last.start >= t0 && last.start < t1,
        "the cursor stays in view: {last:?} in {t0}..{t1}"
    );
    assert_eq!(t1 - t0, w, "panning keeps the zoom");

    // PgUp pans one view to the left.
    key(&mut a, KeyCode::PageUp);
    assert_eq!(a.panes.timeline.view, (t0 - w, t1 - w));

    // Up/Down change the lane; the lanes are phases/ops, streams, busy,
    // and the critical path: its GPU nodes are the streams' own spans.
    let tl = a.panes.timeline.timeline.as_ref().unwrap();
    let lanes: Vec<String> = tl.lanes.iter().map(|l| l.label.clone()).collect();
    assert_eq!(lanes, ["CPU ops", "stream 7", "stream 40", "GPU busy", "crit. path"]);
    let on_streams: Vec<(i64, i64)> =
        tl.lanes[1..3].iter().flat_map(|l| l.spans.iter().map(|s| (s.start, s.end))).collect();
    let path = &tl.lanes[4].spans;
    for s in path.iter().filter(|s| s.category != u8::MAX) {
        assert!(on_streams.contains(&(s.start, s.end)), "{s:?} is a stream's span");
    }
    // Its stretches tile it, one after another, from the step's start.
    assert_eq!(path[0].start, 0);
    assert!(path.windows(2).all(|w| w[0].end == w[1].start), "one after another");
    key(&mut a, KeyCode::Down);
    assert_eq!(a.panes.timeline.lane, 2);
    key(&mut a, KeyCode::Up);
    key(&mut a, KeyCode::Up);
    assert_eq!(a.panes.timeline.lane, 0);
    key(&mut a, KeyCode::Up);
    assert_eq!(a.panes.timeline.lane, 0);
}

#[test]
fn steps_by_bracket_and_by_number() {
    let mut a = timeline_app();
    let numbers: Vec<Option<u64>> =
        a.panes.timeline.index.as_ref().unwrap().steps.iter().map(|s| s.number).collect();
    assert_eq!(numbers, [Some(4), Some(5), Some(6)]);
    key(&mut a, KeyCode::Char('['));
    assert_eq!(a.panes.timeline.step, 0, "no step before the first");
    key(&mut a, KeyCode::Char(']'));
    assert_eq!(a.panes.timeline.timeline.as_ref().unwrap().step.number, Some(5));
    key(&mut a, KeyCode::Char(']'));
    key(&mut a, KeyCode::Char(']'));
    assert_eq!(
        a.panes.timeline.timeline.as_ref().unwrap().step.number,
        Some(6),
        "no step after the last"
    );

    key(&mut a, KeyCode::Char('g'));
    for c in "4x".chars() {
        key(&mut a, KeyCode::Char(c));
    }
    assert_eq!(a.editor.as_ref().unwrap().text, "4", "digits only");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.panes.timeline.timeline.as_ref().unwrap().step.number, Some(4));

    key(&mut a, KeyCode::Char('g'));
    for c in "99".chars() {
        key(&mut a, KeyCode::Char(c));
    }
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.message.as_deref(), Some("no step 99 in this trace (steps: 4, 5, 6)"));
    assert_eq!(a.panes.timeline.step, 0);
}

#[test]
fn steps_load_on_the_loader_thread() {
    let mut a = app(NCCL, None);
    a.steps = Some(libreyolo_ui::app::StepLoader::spawn());
    key(&mut a, KeyCode::Char('7'));
    assert!(a.panes.timeline.pending.is_some(), "the key returns before the trace is read");
    assert!(screen(&mut a, 80, 24).contains("finding the trace's steps"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while a.panes.timeline.pending.is_some() {
        a.poll_steps();
        assert!(std::time::Instant::now() < deadline, "the loader never answered");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(a.panes.timeline.timeline.as_ref().unwrap().step.number, Some(4));
    // The next step reuses the index: only that step is read.
    key(&mut a, KeyCode::Char(']'));
    assert!(
        screen(&mut a, 80, 24).contains("reading…"),
        "the previous step stays on screen meanwhile"
    );
    while a.panes.timeline.pending.is_some() {
        a.poll_steps();
        assert!(std::time::Instant::now() < deadline, "the loader never answered");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(a.panes.timeline.timeline.as_ref().unwrap().step.number, Some(5));
    // A burst of keys while a step is read moves as many steps: each counts
    // from the step asked for, not the one still on screen (step 4).
    let wait = |a: &mut App| {
        while a.panes.timeline.pending.is_some() {
            a.poll_steps();
            assert!(std::time::Instant::now() < deadline, "the loader never answered");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    };
    key(&mut a, KeyCode::Char('['));
    wait(&mut a);
    assert_eq!(a.panes.timeline.timeline.as_ref().unwrap().step.number, Some(4));
    key(&mut a, KeyCode::Char(']'));
    key(&mut a, KeyCode::Char(']'));
    assert_eq!(a.panes.timeline.requested, Some(2));
    wait(&mut a);
    assert_eq!(a.panes.timeline.timeline.as_ref().unwrap().step.number, Some(6));
    assert_eq!(a.panes.timeline.requested, None);
}

#[test]
fn a_profile_without_its_trace_says_so_in_one_line() {
    // infer_b4 was copied without its trace; infer_b1 has it beside.
    let mut a = app(INFER_B4, None);
    key(&mut a, KeyCode::Char('7'));
    let s = screen(&mut a, 80, 24);
    let line = s.lines().nth(1).unwrap();
    assert!(line.starts_with("no timeline: the trace this profile was built from"), "{s}");
    assert!(a.panes.timeline.timeline.is_none());

    let mut a = app(INFER_B1, None);
    key(&mut a, KeyCode::Char('7'));
    let tl =
        a.panes.timeline.timeline.clone().unwrap_or_else(|| panic!("{:?}", a.panes.timeline.error));
    assert!(
        tl.lanes.iter().any(|l| l.kind == LaneKind::Phases),
        "a CPU capture: phases and ops, no GPU lanes"
    );
    assert!(tl.lanes.iter().all(|l| !matches!(l.kind, LaneKind::Stream { .. })));
}

#[test]
fn lanes_read_the_same_without_colour() {
    use libreyolo_ui::theme::{Depth, Theme};
    let mut reference = timeline_app();
    let text = screen(&mut reference, 80, 24);
    for (name, depth) in [("light", Depth::Ansi16), ("dark", Depth::None)] {
        let mut a = App::with_inputs(Theme::load(name, depth).unwrap(), input(NCCL), None);
        key(&mut a, KeyCode::Char('7'));
        assert_eq!(
            screen(&mut a, 80, 24),
            text,
            "{name} {depth:?}: categories are glyphs, not only colours"
        );
    }
    // Every category has its own glyph on the legend line.
    let legend = text.lines().find(|l| l.starts_with("legend")).unwrap();
    for g in ['≈', '▓', '█', '▒', '=', '░', '~', '#'] {
        assert_eq!(legend.matches(g).count(), 1, "{g} in {legend}");
    }
}

#[test]
fn tiny_terminals_do_not_panic() {
    let mut a = timeline_app();
    for (w, h) in [(1, 1), (10, 3), (20, 5), (40, 10)] {
        screen(&mut a, w, h);
    }
}

/// A trace the explorer read carries its Timeline index from that read:
/// the first step opens without a pass over the trace, and shows what a
/// Timeline that indexed the trace itself shows.
#[test]
fn a_step_opens_from_the_index_the_first_read_built() {
    use libreyolo_core::input::LoadOptions;
    use libreyolo_core::trace;
    use libreyolo_ui::app::Opened;
    use libreyolo_ui::slot::Side;
    let opts = LoadOptions { timeline_index: true, ..LoadOptions::default() };
    let loaded = libreyolo_core::input::load(NCCL, opts).unwrap();
    let index = loaded.index.map(std::sync::Arc::new);
    assert!(index.is_some());
    let mut a = app(NCCL, None);
    a.opened(Side::Main, Ok(Opened::Profile(Box::new(loaded.input), index, None)));
    let before = trace::passes_on_this_thread();
    key(&mut a, KeyCode::Char('7'));
    assert_eq!(a.pane, Pane::Timeline);
    assert!(a.panes.timeline.error.is_none(), "{:?}", a.panes.timeline.error);
    // Opening the step re-reads its blocks (a pass of `read_spans`, not
    // counted) but never the whole trace again.
    assert_eq!(trace::passes_on_this_thread() - before, 0);
    assert_eq!(a.panes.timeline.timeline, timeline_app().panes.timeline.timeline);
}
