//! Key handling on the app state: pane switching, filters, sort, drill-down,
//! details, compare selection, What-if, live reload. Asserts on the state
//! (and on the lens results it holds), not on pixels.

mod common;

use common::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use libreyolo_core::lens::kernels::Sort;
use libreyolo_core::profile;
use libreyolo_ui::app::{App, Opened, Pane};
use libreyolo_ui::editor::Field;
use libreyolo_ui::panes::whatif::WhatIfChoice;
use libreyolo_ui::slot::Side;

fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn typ(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn kernel_names(app: &App) -> Vec<String> {
    app.panes.kernels.result.as_ref().unwrap().kernels.iter().map(|k| k.raw_name.clone()).collect()
}

/// Every pane's part of the help against what the pane does with each key,
/// on real profiles: an H100 trace alone, compared with itself, and the
/// TimeSformer trace (modules, frames, memory), and a trace of three steps
/// (the Timeline on its second).
#[test]
fn each_pane_answers_the_keys_its_help_lists_and_no_others() {
    let mut states = [
        app(BERT_TRACE, None),
        app(BERT_TRACE, Some(BERT_TRACE)),
        app(TIMESFORMER, None),
        app(NCCL, None),
    ];
    for &pane in Pane::ALL {
        let mut seen = Vec::new();
        let mut listed = None;
        for a in &mut states {
            a.apply(libreyolo_ui::input::Action::Pane(pane));
            assert_eq!(a.pane, pane);
            seen.extend(answered(a));
            if pane == Pane::Timeline {
                a.apply(libreyolo_ui::input::Action::NextStep);
                seen.extend(answered(a));
            }
            let keys = a.panes.get(pane).keys();
            assert!(listed.is_none_or(|l| l == keys), "{pane:?}: the same keys in each state");
            listed = Some(keys);
        }
        assert_keys_match_help(pane, &listed.unwrap(), &seen);
    }
}

#[test]
fn number_keys_and_tab_switch_panes() {
    let mut a = app(BERT_TRACE, None);
    assert_eq!(a.pane, Pane::Summary);
    for (k, p) in
        [('3', Pane::Kernels), ('6', Pane::WhatIf), ('1', Pane::Summary), ('5', Pane::Compare)]
    {
        typ(&mut a, &k.to_string());
        assert_eq!(a.pane, p);
    }
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.pane, Pane::WhatIf);
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.pane, Pane::Timeline);
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.pane, Pane::Memory);
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.pane, Pane::Tree);
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.pane, Pane::Modules, "past the number keys");
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.pane, Pane::Summary, "Tab wraps around");
    key(&mut a, KeyCode::BackTab);
    assert_eq!(a.pane, Pane::Modules);
    assert!(!a.quit);
}

#[test]
fn kernel_filters_category_tensorcore_regex() {
    let mut a = app(BERT_TRACE, None);
    typ(&mut a, "3");
    let all = a.panes.kernels.result.as_ref().unwrap().matched;
    assert_eq!(all, 11);

    // Category cycles through the kernel mix, then back to none.
    typ(&mut a, "c");
    assert_eq!(a.panes.kernels.query.category.as_deref(), Some("gemm / conv"));
    let k = a.panes.kernels.result.as_ref().unwrap();
    assert!(k.kernels.iter().all(|r| r.category == profile::Category::GemmConv));
    assert!(k.matched < all);
    let cats = libreyolo_ui::panes::kernels::categories(a.main.data.as_ref());
    for expected in cats.iter().skip(1) {
        typ(&mut a, "c");
        assert_eq!(a.panes.kernels.query.category.as_ref(), Some(expected));
    }
    typ(&mut a, "c");
    assert_eq!(a.panes.kernels.query.category, None);

    // Tensor Core only.
    typ(&mut a, "t");
    assert!(a.panes.kernels.query.tensorcore);
    let k = a.panes.kernels.result.as_ref().unwrap();
    // Three cutlass/xmma GEMMs, one wmma GEMM and FlashAttention's forward.
    assert_eq!(k.matched, 5);
    assert!(k.kernels.iter().all(|r| r.tensorcore));
    typ(&mut a, "t");
    assert_eq!(a.panes.kernels.result.as_ref().unwrap().matched, all);

    // The regex applies on every key; Esc restores the previous filter.
    typ(&mut a, "/");
    assert!(matches!(a.editor.as_ref().unwrap().field, Field::Regex { pane: Pane::Kernels, .. }));
    typ(&mut a, "layer");
    assert_eq!(a.panes.kernels.query.grep.as_deref(), Some("layer"));
    assert!(kernel_names(&a).iter().all(|n| n.to_lowercase().contains("layer")));
    assert_eq!(a.panes.kernels.result.as_ref().unwrap().matched, 1);
    key(&mut a, KeyCode::Esc);
    assert!(a.editor.is_none());
    assert_eq!(a.panes.kernels.query.grep, None);
    assert_eq!(a.panes.kernels.result.as_ref().unwrap().matched, all);
    assert!(!a.quit, "Esc in a field only closes the field");

    // An unfinished regex keeps the last good result and says why.
    typ(&mut a, "/gemm(");
    assert_eq!(a.panes.kernels.error.as_deref(), Some("invalid regex: unclosed group"));
    let shown = a.panes.kernels.result.as_ref().unwrap();
    assert!(
        shown.kernels.iter().all(|k| k.raw_name.to_lowercase().contains("gemm")),
        "previous match stays"
    );
    typ(&mut a, "|norm)");
    key(&mut a, KeyCode::Enter);
    assert!(a.panes.kernels.error.is_none());
    assert_eq!(a.panes.kernels.query.grep.as_deref(), Some("gemm(|norm)"));

    // x clears every filter.
    typ(&mut a, "tx");
    assert_eq!(a.panes.kernels.query, Default::default());
    assert_eq!(a.panes.kernels.result.as_ref().unwrap().matched, all);
}

#[test]
fn sort_cycles_time_count_name_efficiency() {
    let mut a = app(BERT_TRACE, None);
    typ(&mut a, "3");
    assert_eq!(a.panes.kernels.query.sort, Sort::Time);
    let ms: Vec<f64> =
        a.panes.kernels.result.as_ref().unwrap().kernels.iter().map(|k| k.ms_per_step).collect();
    assert!(ms.windows(2).all(|w| w[0] >= w[1]));
    typ(&mut a, "s");
    assert_eq!(a.panes.kernels.query.sort, Sort::Count);
    let n: Vec<f64> =
        a.panes.kernels.result.as_ref().unwrap().kernels.iter().map(|k| k.count_per_step).collect();
    assert!(n.windows(2).all(|w| w[0] >= w[1]), "{n:?}");
    typ(&mut a, "s");
    assert_eq!(a.panes.kernels.query.sort, Sort::Name);
    let names: Vec<String> =
        a.panes.kernels.result.as_ref().unwrap().kernels.iter().map(|k| k.kernel.clone()).collect();
    assert!(names.windows(2).all(|w| w[0] <= w[1]));
    typ(&mut a, "s");
    assert_eq!(a.panes.kernels.query.sort, Sort::Efficiency);
    typ(&mut a, "s");
    assert_eq!(a.panes.kernels.query.sort, Sort::Time);

    // Ops sort the same way (by rearranging the lens rows).
    let mut a = app(TRAIN_B4, None);
    typ(&mut a, "4s");
    assert_eq!(a.panes.ops.query.sort, Sort::Count);
    let n: Vec<f64> =
        a.panes.ops.result.as_ref().unwrap().ops.iter().map(|o| o.count_per_step).collect();
    assert!(n.windows(2).all(|w| w[0] >= w[1]));
}

/// Ops carry their self time and the GPU time launched inside them (from
/// the call tree); `s` sorts by the GPU time after the CPU time.
#[test]
fn ops_show_self_and_gpu_time_and_sort_by_gpu() {
    let mut a = app(TIMESFORMER, None);
    typ(&mut a, "4");
    let s = screen(&mut a, 80, 24);
    assert!(s.contains("self ms") && s.contains("GPU ms"), "{s}");
    typ(&mut a, "s");
    assert_eq!(a.panes.ops.query.sort, Sort::Gpu);
    let o = a.panes.ops.result.as_ref().unwrap();
    let gpu: Vec<f64> = o.ops.iter().map(|o| o.gpu_ms_per_step.unwrap_or(0.0)).collect();
    assert!(gpu[0] > 0.0 && gpu.windows(2).all(|w| w[0] >= w[1]), "{gpu:?}");
    for sort in [Sort::Count, Sort::Name, Sort::Efficiency, Sort::Time] {
        typ(&mut a, "s");
        assert_eq!(a.panes.ops.query.sort, sort);
    }
    // Ops without GPU time (a profile written before call trees) skip it.
    let mut a = app(TRAIN_B4, None);
    typ(&mut a, "4s");
    assert_eq!(a.panes.ops.query.sort, Sort::Count);
    assert!(!screen(&mut a, 80, 24).contains("GPU ms"));
}

#[test]
fn selection_moves_and_detail_opens_on_enter() {
    let mut a = app(BERT_TRACE, None);
    typ(&mut a, "3");
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Down);
    assert_eq!(a.panes.kernels.selected, 2);
    key(&mut a, KeyCode::Up);
    assert_eq!(a.panes.kernels.selected, 1);
    typ(&mut a, "G");
    assert_eq!(a.panes.kernels.selected, 10);
    key(&mut a, KeyCode::Down);
    assert_eq!(a.panes.kernels.selected, 10, "stops at the last row");
    typ(&mut a, "g");
    assert_eq!(a.panes.kernels.selected, 0);

    key(&mut a, KeyCode::Enter);
    assert!(a.panes.kernels.detail);
    let first = a.panes.kernels.selected_kernel().unwrap().raw_name.clone();
    key(&mut a, KeyCode::Down);
    assert!(a.panes.kernels.detail, "Down moves to the next kernel's details");
    assert_ne!(a.panes.kernels.selected_kernel().unwrap().raw_name, first);
    key(&mut a, KeyCode::Esc);
    assert!(!a.panes.kernels.detail);
    assert!(!a.quit);
    key(&mut a, KeyCode::Esc);
    assert!(a.quit, "Esc with nothing open quits");
}

#[test]
fn phase_drill_down() {
    // A GPU trace: Enter on a phase shows that phase's kernels.
    let mut a = app(BERT_TRACE, None);
    typ(&mut a, "2");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.pane, Pane::Kernels);
    assert_eq!(a.panes.kernels.query.phase.as_deref(), Some("unphased"));
    let k = a.panes.kernels.result.as_ref().unwrap();
    assert_eq!(k.total, a.profile().unwrap().kernels_by_phase["unphased"].len());

    // A CPU profile: its phases launched no kernels, so Enter shows the ops.
    let mut a = app(TRAIN_B4, None);
    typ(&mut a, "2");
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Down);
    assert_eq!(a.panes.phases.selected, 2);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.pane, Pane::Ops);
    assert_eq!(a.panes.ops.query.phase.as_deref(), Some("forward"));
    let o = a.panes.ops.result.as_ref().unwrap();
    assert_eq!(o.total, a.profile().unwrap().ops_by_phase["forward"].len());

    // p cycles the phase filter through every phase and back to none.
    typ(&mut a, "x");
    assert_eq!(a.panes.ops.query.phase, None);
    let phases: Vec<String> =
        a.profile().unwrap().phase_names().iter().map(|s| s.to_string()).collect();
    for ph in &phases {
        typ(&mut a, "p");
        assert_eq!(a.panes.ops.query.phase.as_ref(), Some(ph));
    }
    typ(&mut a, "p");
    assert_eq!(a.panes.ops.query.phase, None);
}

#[test]
fn compare_selection_opens_a_second_profile() {
    let mut a = app(INFER_REPEAT3, None);
    typ(&mut a, "5");
    assert!(a.panes.compare.comparison.is_none());
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.editor.as_ref().unwrap().field, Field::Path);

    // A path that does not exist is refused with a message; nothing loads.
    typ(&mut a, "/no/such/profile.json");
    key(&mut a, KeyCode::Enter);
    assert!(a.message.as_deref().unwrap().contains("not found"), "{:?}", a.message);
    assert!(a.requests.is_empty());

    typ(&mut a, "o");
    typ(&mut a, INFER_REPEAT3_B4);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.requests, vec![(Side::Other, INFER_REPEAT3_B4.into())]);
    assert_eq!(a.other.arg, std::path::Path::new(INFER_REPEAT3_B4));
    // The event loop loads it in the background; here, in place.
    a.requests.clear();
    a.loaded(
        Side::Other,
        libreyolo_core::input::load(INFER_REPEAT3_B4, Default::default()).map(|l| l.input),
    );
    let c = a.panes.compare.comparison.as_ref().expect("a comparison once both are loaded");
    assert_eq!(c.after, INFER_REPEAT3_B4);
    let img = c.throughput().unwrap();
    assert_eq!(img.significance.significant, Some(true));
    assert_eq!(img.improved, Some(true));

    // A second profile that fails to load leaves the pane usable.
    let mut a = app(INFER_B1, None);
    typ(&mut a, "5o");
    typ(&mut a, TRAIN_B4);
    key(&mut a, KeyCode::Enter);
    a.loaded(Side::Other, Err(libreyolo_core::Error::failed("invalid JSON")));
    assert!(a.panes.compare.comparison.is_none());
    assert_eq!(a.other.error.as_deref(), Some("invalid JSON"));
}

/// The What-if pane lists the profile's standard changes (largest saving
/// first) and re-times a typed launch count on the trace's step model.
#[test]
fn whatif_standard_changes_and_launch_count() {
    let opts = libreyolo_core::input::LoadOptions { keep_model: true, ..Default::default() };
    let loaded = libreyolo_core::input::load(BERT_TRACE, opts).unwrap();
    let rows = loaded.input.profile.step_model.as_ref().unwrap().scenarios.clone();
    assert!(rows.len() >= 3, "{rows:?}");
    let mut a = App::new(theme(), &loaded.input.path, None);
    a.requests.clear();
    let model = loaded.model.map(std::sync::Arc::new);
    a.opened(Side::Main, Ok(Opened::Profile(Box::new(loaded.input), None, model)));
    typ(&mut a, "6");
    assert_eq!(a.panes.whatif.choice, Some(WhatIfChoice::Category(0)));
    let w = a.panes.whatif.result.clone().unwrap().unwrap();
    assert_eq!(w.scenario, rows[0].flags);
    assert_eq!(w.saved_ms_per_step, rows[0].saved_ms_per_step);
    key(&mut a, KeyCode::Right);
    let w = a.panes.whatif.result.clone().unwrap().unwrap();
    assert_eq!(w.scenario, rows[1].flags);
    key(&mut a, KeyCode::Left);
    key(&mut a, KeyCode::Left);
    assert_eq!(
        a.panes.whatif.choice,
        Some(WhatIfChoice::Category(rows.len() - 1)),
        "Left wraps around"
    );

    // A launch count updates the projection as it is typed; letters are ignored.
    typ(&mut a, "n");
    typ(&mut a, "2x0");
    assert_eq!(a.editor.as_ref().unwrap().text, "20");
    assert_eq!(a.panes.whatif.choice, Some(WhatIfChoice::Launches(20)));
    let w = a.panes.whatif.result.clone().unwrap().unwrap();
    assert_eq!(w.scenario, "--remove-launches 20");
    assert_eq!(w.model, libreyolo_core::lens::whatif::Model::StepModel);
    assert!(w.step_ms.projected.unwrap() <= w.step_ms.now.unwrap());
    key(&mut a, KeyCode::Enter);
    assert!(a.editor.is_none());
    assert_eq!(a.panes.whatif.choice, Some(WhatIfChoice::Launches(20)));
}

#[test]
fn help_opens_and_any_key_closes_it() {
    let mut a = app(TRAIN_B4, None);
    typ(&mut a, "?");
    assert!(a.help);
    typ(&mut a, "3");
    assert!(!a.help);
    assert_eq!(a.pane, Pane::Summary, "the key that closes the help does nothing else");
    typ(&mut a, "?q");
    assert!(a.quit);
}

#[test]
fn ctrl_c_quits_even_while_typing() {
    let mut a = app(TRAIN_B4, None);
    typ(&mut a, "4/conv");
    a.handle_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(a.quit);
}

#[test]
fn live_reload_keeps_pane_and_filters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.json");
    std::fs::copy(TRAIN_B4, &path).unwrap();
    let arg = path.to_str().unwrap();
    let mut a = App::with_inputs(
        theme(),
        libreyolo_core::input::load(arg, Default::default()).unwrap().input,
        None,
    );
    typ(&mut a, "4ppp/conv");
    key(&mut a, KeyCode::Enter);
    typ(&mut a, "s");
    assert!(a.changed_on_disk().is_empty());

    // A new capture rewrites the file.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["step_ms"] = serde_json::json!(450.0);
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
    assert_eq!(a.changed_on_disk(), vec![(Side::Main, arg.into())]);

    a.loaded(Side::Main, libreyolo_core::input::load(arg, Default::default()).map(|l| l.input));
    assert_eq!(a.main.data.as_ref().unwrap().summary.figures.step_ms, 450.0);
    assert_eq!(a.pane, Pane::Ops);
    assert_eq!(a.panes.ops.query.phase.as_deref(), Some("forward"));
    assert_eq!(a.panes.ops.query.grep.as_deref(), Some("conv"));
    assert_eq!(a.panes.ops.query.sort, Sort::Count);
    assert!(a.message.as_deref().unwrap().starts_with("reloaded"));
    assert!(a.changed_on_disk().is_empty());

    // A broken rewrite keeps the previous data and is not retried every second.
    std::fs::write(&path, "{ not json").unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(10);
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
    assert_eq!(a.changed_on_disk().len(), 1);
    a.loaded(Side::Main, libreyolo_core::input::load(arg, Default::default()).map(|l| l.input));
    assert_eq!(a.main.data.as_ref().unwrap().summary.figures.step_ms, 450.0);
    assert!(a.message.as_deref().unwrap().starts_with("reload failed"));
    assert!(a.changed_on_disk().is_empty());
}

#[test]
fn large_lists_filter_on_the_worker_and_keep_only_the_newest_answer() {
    let mut a = app(BERT_TRACE, None);
    a.worker = Some(libreyolo_ui::app::Worker::spawn());
    a.background_rows = 0; // every list counts as large here
    typ(&mut a, "3/");
    // A burst of keys: each sends a job; only the last one's answer is shown.
    typ(&mut a, "layer");
    assert!(a.panes.kernels.pending.is_some(), "the key returns before the lens runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while a.panes.kernels.pending.is_some() {
        a.poll_worker();
        assert!(std::time::Instant::now() < deadline, "the worker never answered");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let k = a.panes.kernels.result.as_ref().unwrap();
    assert_eq!(k.query.grep.as_deref(), Some("layer"));
    assert_eq!(k.matched, 1);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.panes.kernels.query.grep.as_deref(), Some("layer"));
}

/// The loading screen shows the bytes the reader's bar has reached (the
/// reader moves it on whichever thread reads the file).
#[test]
fn the_loading_screen_counts_what_the_reader_read() {
    use libreyolo_core::trace::input::ProgressBar;
    use libreyolo_ui::slot::Loading;
    let mut a = App::new(theme(), std::path::Path::new(BERT_TRACE), None);
    let bar = ProgressBar::hidden();
    bar.set_length(8_000_000);
    a.loading(
        Side::Main,
        Loading {
            id: 1,
            started: std::time::Instant::now(),
            size: Some(8_000_000),
            bar: Some(bar.clone()),
            reload: false,
            ranks: None,
        },
    );
    bar.set_position(2_000_000);
    let s = screen(&mut a, 80, 24);
    assert!(s.contains("2.0 of 8.0 MB read"), "{s}");
    assert!(s.contains("25%"), "{s}");
}
