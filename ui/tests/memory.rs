//! The Memory pane on real traces: TimeSformer on an H100 (TraceLens),
//! whose `[memory]` events carry allocated and reserved totals, and HTA's
//! AlexNet trace, which has none. The peaks on screen are the `memory`
//! lens's (docs/spec.md §3).

mod common;

use common::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use libreyolo_core::lens::memory::{NO_MEMORY, memory};
use libreyolo_core::render::text::num;
use libreyolo_ui::app::{App, Pane};

const ALEXNET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/traces/hta_alexnet_a100_nosteps/benchmark_result_2869224_1695835535_trace.json.gz"
);

fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn memory_app(path: &'static str) -> App {
    let mut a = app(path, None);
    key(&mut a, KeyCode::Char('8'));
    assert_eq!(a.pane, Pane::Memory);
    a
}

#[test]
fn the_peaks_on_screen_are_the_lens_figures() {
    let mut a = memory_app(TIMESFORMER);
    let m = memory(a.profile().unwrap());
    assert!(m.none.is_none(), "the fixture has [memory] events");
    let d = &m.devices[0];
    assert!(d.peak_allocated_mb > 0.0 && d.events > 0, "{d:?}");
    let reserved = d.peak_reserved_mb.expect("the fixture records reserved totals");
    for (w, h) in [(80, 24), (160, 48)] {
        let s = screen(&mut a, w, h);
        insta::assert_snapshot!(format!("timesformer_memory_{w}x{h}"), s);
        assert!(s.contains(&format!("peak allocated {} MB", num(d.peak_allocated_mb, 1))), "{s}");
        assert!(s.contains(&format!("peak reserved {} MB", num(reserved, 1))), "{s}");
        assert!(
            s.contains(&format!("peak at {} ms of {} ms", num(d.peak_ms, 3), num(m.window_ms, 3))),
            "{s}"
        );
        assert!(s.contains(&format!("phase {}", d.peak_phase)), "{s}");
        assert!(s.contains(&d.device), "{s}");
        // The first phase's row of the table, as the lens has it.
        let p = &d.phases[0];
        let row = s
            .lines()
            .find(|l| l.trim_start().starts_with(&p.phase))
            .unwrap_or_else(|| panic!("{s}"));
        assert!(row.contains(&num(p.peak_allocated_mb, 1)), "{row}");
    }
}

#[test]
fn a_trace_without_memory_events_shows_the_lens_line() {
    let mut a = memory_app(ALEXNET);
    let m = memory(a.profile().unwrap());
    assert_eq!(m.none.as_deref(), Some(NO_MEMORY));
    let s = screen(&mut a, 160, 48);
    assert!(s.contains(NO_MEMORY), "{s}");
    // At 80 columns it wraps: its first words still show.
    let s = screen(&mut a, 80, 24);
    assert!(s.contains("no memory events in this trace"), "{s}");
}

#[test]
fn the_pane_is_reached_with_tab_after_the_timeline() {
    let mut a = app(TIMESFORMER, None);
    key(&mut a, KeyCode::Char('7'));
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.pane, Pane::Memory);
    // (Tab's wrap-around and BackTab: ui/tests/keys.rs.) Up/Down keep the device within the lens's list.
    let n = memory(a.profile().unwrap()).devices.len();
    assert_eq!(n, 2, "cuda:0 and cpu");
    for _ in 0..3 {
        key(&mut a, KeyCode::Down);
    }
    assert_eq!(a.panes.memory.device, n - 1);
    let m = memory(a.profile().unwrap());
    let last = &m.devices[n - 1];
    let s = screen(&mut a, 80, 24);
    assert!(s.contains(&format!("▸{}", last.device)), "{s}");
    assert!(s.contains(&format!("peak allocated {} MB", num(last.peak_allocated_mb, 1))), "{s}");
    key(&mut a, KeyCode::Home);
    assert_eq!(a.panes.memory.device, 0);
}
