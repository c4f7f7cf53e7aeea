//! Shared by the explorer's tests: real inputs from tests/fixtures/, loaded once
//! per test binary, and a screen rendered to text.
#![allow(dead_code)]

use std::sync::OnceLock;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use libreyolo_core::profile::Input;
use libreyolo_ui::app::App;
use libreyolo_ui::screen;
use libreyolo_ui::theme::{Depth, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

pub const INFER_B1: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/reference/infer_b1/profile.json");
pub const INFER_B4: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/reference/infer_b4/profile.json");
pub const TRAIN_B4: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/reference/train_b4/profile.json");
pub const TRAIN_B4_TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/reference/train_b4/profile_trace.json.gz"
);
pub const TRAIN_REPEAT3: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/reference/train_repeat3/profile_repeat.json"
);
pub const INFER_REPEAT3: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/reference/infer_repeat3/infer_repeat.json"
);
pub const INFER_REPEAT3_B4: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/reference/infer_repeat3/infer_repeat_b4.json"
);
/// A raw H100 trace (BERT-small inference, TraceLens): Tensor Core GEMMs,
/// several kernel categories; small enough to analyse quickly in debug.
pub const BERT_TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/traces/tracelens_h100_qwen_inference/gaunernst_bert-small-uncased__1016001.json.gz"
);
/// A real inference trace taken mid-flight (a third of its one step runs
/// work queued before the recording): its verdict is `cannot tell`.
pub const QWEN_TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/traces/tracelens_h100_qwen_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
);
/// A real H100 inference trace (TimeSformer, TraceLens) recorded with
/// `with_stack`: `nn.Module` and Python frames, ops and kernels, and
/// `[memory]` events.
pub const TIMESFORMER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/traces/tracelens_h100_timesformer/facebook_timesformer-base-finetuned-k400__1016002.json.gz"
);
/// vLLM's decode step (TraceLens): nearly all of its kernels replayed
/// from one CUDA/HIP graph, no capture trace beside it.
pub const GRAPH_REPLAY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/traces/tracelens_vllm_cuda_graph_capture/replay/graph_execution.json.gz"
);
/// HTA's NCCL trace (A100): compute on stream 7, NCCL on stream 40, three
/// steps.
pub const NCCL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/traces/hta_nccl_a100_2024/nccl_data.json.gz"
);

/// Loads a real input once per test binary.
pub fn input(path: &'static str) -> Input {
    static CACHE: OnceLock<std::sync::Mutex<Vec<(&'static str, Input)>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some((_, i)) = cache.lock().unwrap().iter().find(|(p, _)| *p == path) {
        return i.clone();
    }
    let i = libreyolo_core::input::load(path, Default::default())
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .input;
    cache.lock().unwrap().push((path, i.clone()));
    i
}

pub fn theme() -> Theme {
    Theme::builtin_dark(Depth::Ansi16)
}

pub fn app(main: &'static str, other: Option<&'static str>) -> App {
    App::with_inputs(theme(), input(main), other.map(input))
}

/// Draws the app at `w`×`h` and returns the screen as text, one line per
/// row, trailing blanks removed.
pub fn screen(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| screen::draw(f, app)).unwrap();
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        let mut line = String::new();
        for x in 0..w {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// What the pane on screen does with each key the app hands to panes, in
/// the app's state now: the keys it answers (does not pass on). Its state
/// is put back after each key.
pub fn answered(app: &mut App) -> Vec<libreyolo_ui::input::Action> {
    let saved = app.panes.clone();
    let mut out = Vec::new();
    for a in libreyolo_ui::input::pane_actions() {
        app.panes = saved.clone();
        if app.pane_update(a) != libreyolo_ui::view::Effect::Pass {
            out.push(a);
        }
    }
    app.panes = saved;
    out
}

/// The pane's help and its key handling agree over the states in which
/// `answered` was taken: a key it lists is answered in one of them at
/// least, and a key it does not list (other than a move, which the app's
/// rows describe) is answered in none.
pub fn assert_keys_match_help(
    pane: libreyolo_ui::app::Pane,
    listed: &[libreyolo_ui::view::KeyHint],
    answered: &[libreyolo_ui::input::Action],
) {
    use libreyolo_ui::input::MOVES;
    let listed: Vec<_> = listed.iter().flat_map(|h| h.actions.iter().copied()).collect();
    for a in &listed {
        assert!(answered.contains(a), "{pane:?} lists {a:?} in its help but never answers it");
    }
    for a in answered {
        assert!(
            listed.contains(a) || MOVES.contains(a),
            "{pane:?} answers {a:?}, which its help does not list"
        );
    }
}

/// The two screen sizes the pane snapshots are taken at.
pub const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

/// Presses `keys` in order: a character is its key, but `\n` Enter,
/// `\x1b` Esc, `\t` Tab, `⇤` Shift-Tab and the arrows their keys.
pub fn press(app: &mut App, keys: &str) {
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\x1b' => KeyCode::Esc,
            '\t' => KeyCode::Tab,
            '⇤' => KeyCode::BackTab,
            '↓' => KeyCode::Down,
            '↑' => KeyCode::Up,
            '→' => KeyCode::Right,
            '←' => KeyCode::Left,
            c => KeyCode::Char(c),
        };
        app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
    }
}

/// Snapshots the app at both [`SIZES`] under `NAME_WxH` and returns the
/// screens; nothing is drawn past the screen and every line fits. A macro,
/// so that the snapshots keep the calling test file's name.
#[macro_export]
macro_rules! snap {
    ($name:expr, $app:expr) => {
        $crate::common::SIZES
            .iter()
            .map(|&(w, h)| {
                let s = $crate::common::screen($app, w, h);
                insta::assert_snapshot!(format!("{}_{w}x{h}", $name), s);
                assert_eq!(s.lines().count(), h as usize);
                assert!(s.lines().all(|l| l.chars().count() <= w as usize), "{s}");
                s
            })
            .collect::<Vec<String>>()
    };
}
