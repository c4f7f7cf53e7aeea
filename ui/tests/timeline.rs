//! The Timeline pane on a real trace with two overlapping streams
//! (HTA's NCCL trace, A100: compute on stream 7, NCCL on stream 40, three
//! steps): the screen, the keys (zoom, pan, steps, selection), and the
//! selected kernel checked against an independent reading of the trace.

mod common;

use common::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use libreyolo_core::lens::timeline::LaneKind;
use libreyolo_ui::app::{App, Pane};

const NCCL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/traces/hta_nccl_a100_2024/nccl_data.json.gz");

fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn timeline_app() -> App {
    let mut a = app(NCCL, None);
    key(&mut a, KeyCode::Char('7'));
    assert_eq!(a.pane, Pane::Timeline);
    assert!(a.timeline.error.is_none(), "{:?}", a.timeline.error);
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
