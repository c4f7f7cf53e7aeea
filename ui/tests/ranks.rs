//! The Ranks pane on a real distributed job: the 8 rank traces of one DLRM
//! training job on V100s (tests/fixtures/traces/param_dlrm_v100_8rank).
//! Its rows are checked against the `job` lens run here on its own reading
//! of the ranks, a rank opened with Enter against that rank's file read
//! alone, and a straggler made from a real rank trace (one GEMM kernel
//! lengthened) against the lens's reason.

mod common;

use std::io::Read;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use libreyolo_core::input::ranks;
use libreyolo_core::lens::job::{Job, job};
use libreyolo_core::lens::summary::summary;
use libreyolo_ui::app::{App, Pane};
use libreyolo_ui::job::{OpenJob, Opening, opening};
use libreyolo_ui::panes::ranks::{RankSort, order};
use libreyolo_ui::view::Component;

const DLRM: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/traces/param_dlrm_v100_8rank");

fn files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(DLRM).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    assert_eq!(v.len(), 8);
    v
}

/// The job as the explorer reads it, once per test binary.
fn open_job() -> OpenJob {
    static JOB: OnceLock<OpenJob> = OnceLock::new();
    JOB.get_or_init(|| {
        let done = AtomicUsize::new(0);
        let j = OpenJob::read(&files(), &done, &Default::default()).unwrap();
        assert_eq!(done.load(Ordering::Relaxed), 8, "every rank counted for the progress");
        j
    })
    .clone()
}

/// The `job` lens on a reading of the ranks of its own (as `summary DIR`).
fn lens() -> Job {
    job(&ranks::load(&files(), &Default::default()).unwrap())
}

fn job_app() -> App {
    App::with_job(theme(), DLRM, open_job())
}

/// The Ranks pane's help, in either view, against what it does with each
/// key (the other panes' are checked in keys.rs).
#[test]
fn the_ranks_and_collectives_answer_the_keys_their_help_lists() {
    let mut a = job_app();
    assert_eq!(a.pane, Pane::Ranks);
    let ranks = answered(&mut a);
    assert_keys_match_help(Pane::Ranks, &a.panes.ranks.keys(), &ranks);
    press(&mut a, &[KeyCode::Char('c')]);
    let mut seen = answered(&mut a);
    let keys = a.panes.ranks.keys();
    // And with a collective's details open (Enter), where Esc closes them.
    press(&mut a, &[KeyCode::Enter]);
    seen.extend(answered(&mut a));
    assert_eq!(a.panes.ranks.keys(), keys);
    assert_keys_match_help(Pane::Ranks, &keys, &seen);
    assert_ne!(ranks, seen, "the two views answer different keys");
}

fn press(app: &mut App, keys: &[KeyCode]) {
    for k in keys {
        app.handle_key(KeyEvent::new(*k, KeyModifiers::NONE));
    }
}

/// The table's rows on screen: the figures of each line that starts with a
/// rank number (the shown rank's is marked `▸`).
fn rows(screen: &str) -> Vec<Vec<String>> {
    screen
        .lines()
        .map(|l| {
            l.split_whitespace().map(|c| c.trim_start_matches('▸').to_string()).collect::<Vec<_>>()
        })
        .filter(|c| c.len() >= 8 && c[0].parse::<u32>().is_ok() && c[1].parse::<f64>().is_ok())
        .collect()
}

fn close(shown: &str, value: f64, digits: i32) {
    let v: f64 =
        shown.trim_end_matches('%').parse().unwrap_or_else(|_| panic!("not a figure: {shown}"));
    assert!(
        (v - value).abs() <= 0.5 * 10f64.powi(-digits) + 1e-9,
        "{shown} on screen, {value} in the lens"
    );
}

#[test]
fn ranks_pane_rows_are_the_job_lens() {
    let mut a = job_app();
    assert_eq!(a.pane, Pane::Ranks, "a job opens on its Ranks pane");
    let j = lens();
    assert_eq!(a.job.as_ref().unwrap().job, j, "one reading of the ranks gives the lens's job");
    for (w, h) in [(80, 24), (160, 48)] {
        let s = screen(&mut a, w, h);
        insta::assert_snapshot!(format!("dlrm_8rank_ranks_{w}x{h}"), s);
        assert_eq!(s.lines().count(), h as usize);
        assert!(s.lines().all(|l| l.chars().count() <= w as usize));
        let head = format!(
            "job: 8 ranks of world size 8 · step {} ms ({})",
            libreyolo_core::render::text::num(j.step_ms, 2),
            libreyolo_core::render::text::slowest(&j)
        );
        assert!(s.contains(&head), "{head}\n{s}");
        assert!(s.contains("stragglers (the others wait for them at collectives"), "{s}");
        // At 80 columns a tab's key and title touch.
        let tabs = s.lines().next().unwrap();
        let tab = |t: &str| tabs.contains(t) || tabs.contains(&t.replace(' ', ""));
        assert!(tab("0 Ranks") && tab("9 Tree"), "every tab fits:\n{s}");
        let rows = rows(&s);
        assert_eq!(rows.len(), 8, "{s}");
        for (row, r) in rows.iter().zip(&j.ranks) {
            assert_eq!(row[0], r.rank.to_string());
            close(&row[1], r.step_ms, 2);
            close(&row[2], r.gpu_util * 100.0, 0);
            close(&row[3], r.compute_ms, 2);
            close(&row[4], r.comm_ms, 2);
            close(&row[5], r.exposed_comm_ms, 2);
            close(&row[6], r.idle_ms, 2);
            close(&row[7], r.kernels_per_step, 0);
            if w >= 110 {
                // `waits for rank 7` where its communication is that wait.
                assert_eq!(
                    row[9],
                    r.verdict().split(' ').next().unwrap(),
                    "the verdict at 160 columns"
                );
            }
            assert_eq!(
                row.iter().any(|c| c == "awaited"),
                Some(r.rank) == j.critical_rank,
                "{row:?}"
            );
            let straggler = j.stragglers.iter().find(|s| s.rank == r.rank);
            let mark = straggler.map(|s| {
                format!(
                    "+{}",
                    libreyolo_core::render::text::num(s.wait_caused_ms_per_step.unwrap(), 2)
                )
            });
            assert_eq!(
                row.last().filter(|c| c.starts_with('+')),
                mark.as_ref(),
                "the wait it causes: {row:?}"
            );
        }
        assert!(
            s.contains(&format!("Enter: rank {}'s panes", j.critical_rank.unwrap())),
            "the cursor starts on the shown rank:\n{s}"
        );
    }
}

#[test]
fn enter_opens_the_rank_as_its_file_alone() {
    for k in [1usize, 6] {
        let mut a = job_app();
        press(&mut a, &[KeyCode::Home]);
        for _ in 0..k {
            press(&mut a, &[KeyCode::Down]);
        }
        press(&mut a, &[KeyCode::Enter]);
        assert_eq!(a.pane, Pane::Summary);
        let file = &files()[k];
        let alone =
            libreyolo_core::input::load(file.to_str().unwrap(), Default::default()).unwrap().input;
        assert_eq!(
            a.main.data.as_ref().unwrap().summary,
            summary(&alone.profile),
            "rank {k}'s Summary is `summary` of {file:?}"
        );
        let mut single = App::with_inputs(theme(), alone, None);
        for (w, h) in [(80, 24), (160, 48)] {
            let job_screen = screen(&mut a, w, h);
            let one = screen(&mut single, w, h);
            let body = |s: &str| {
                s.lines().skip(1).take(h as usize - 2).map(str::to_string).collect::<Vec<_>>()
            };
            assert_eq!(
                body(&job_screen),
                body(&one),
                "the same Summary as the file alone at {w}x{h}"
            );
            let status = job_screen.lines().last().unwrap();
            assert!(
                status.starts_with(&format!("rank {k} of 8")),
                "the status line names the rank: {status}"
            );
        }
        // Phases and Kernels follow the rank too.
        press(&mut a, &[KeyCode::Char('3')]);
        let names: Vec<String> = a
            .panes
            .kernels
            .result
            .as_ref()
            .unwrap()
            .kernels
            .iter()
            .map(|r| r.raw_name.clone())
            .collect();
        press(&mut single, &[KeyCode::Char('3')]);
        let alone: Vec<String> = single
            .panes
            .kernels
            .result
            .as_ref()
            .unwrap()
            .kernels
            .iter()
            .map(|r| r.raw_name.clone())
            .collect();
        assert_eq!(names, alone);
        // Esc is the way back; the rank stays marked as shown.
        press(&mut a, &[KeyCode::Esc]);
        assert_eq!(a.pane, Pane::Ranks);
        assert!(!a.quit);
        let s = screen(&mut a, 80, 24);
        assert!(s.contains(&format!("▸{k} ")), "{s}");
        press(&mut a, &[KeyCode::Esc]);
        assert!(a.quit, "Esc on the Ranks pane quits");
    }
}

#[test]
fn sort_keys_cycle_the_columns() {
    let mut a = job_app();
    let j = lens();
    let key = |s: RankSort, r: &libreyolo_core::lens::job::RankRow| match s {
        RankSort::Rank => -f64::from(r.rank),
        RankSort::Step => r.step_ms,
        RankSort::GpuUtil => r.gpu_util,
        RankSort::Compute => r.compute_ms,
        RankSort::Comm => r.comm_ms,
        RankSort::Exposed => r.exposed_comm_ms,
        RankSort::Idle => r.idle_ms,
        RankSort::Kernels => r.kernels_per_step,
    };
    let selected =
        |a: &App| a.panes.ranks.selected_rank().map(|i| a.job.as_ref().unwrap().job.ranks[i].rank);
    let before = selected(&a);
    for sort in RankSort::ALL.iter().skip(1).chain([&RankSort::Rank]) {
        press(&mut a, &[KeyCode::Char('s')]);
        assert_eq!(a.panes.ranks.sort, *sort);
        assert_eq!(selected(&a), before, "the cursor stays on its rank");
        let s = screen(&mut a, 160, 48);
        assert!(
            s.contains(&format!("sort: {}", sort.as_str()))
                && s.contains(&format!("▼{}", sort.as_str())),
            "{s}"
        );
        let shown: Vec<u32> = rows(&s).iter().map(|r| r[0].parse().unwrap()).collect();
        // Largest first, ties in rank order: checked on the lens's figures.
        let mut expect: Vec<&libreyolo_core::lens::job::RankRow> = j.ranks.iter().collect();
        expect.sort_by(|x, y| key(*sort, y).total_cmp(&key(*sort, x)).then(x.rank.cmp(&y.rank)));
        assert_eq!(
            shown,
            expect.iter().map(|r| r.rank).collect::<Vec<_>>(),
            "sorted by {}",
            sort.as_str()
        );
        assert_eq!(a.panes.ranks.order, order(&j, *sort));
        for w in shown.windows(2) {
            let (x, y) = (
                j.ranks.iter().find(|r| r.rank == w[0]).unwrap(),
                j.ranks.iter().find(|r| r.rank == w[1]).unwrap(),
            );
            assert!(key(*sort, x) >= key(*sort, y));
        }
    }
    let rank_order: Vec<u32> =
        rows(&screen(&mut a, 80, 24)).iter().map(|r| r[0].parse().unwrap()).collect();
    assert_eq!(rank_order, (0..8).collect::<Vec<_>>());
}

#[test]
fn tabs_keys_and_one_profile() {
    let mut a = job_app();
    press(&mut a, &[KeyCode::Tab]);
    assert_eq!(a.pane, Pane::Summary);
    press(&mut a, &[KeyCode::BackTab, KeyCode::BackTab]);
    assert_eq!(a.pane, Pane::Modules, "Ranks is first: Shift-Tab wraps to the last pane");
    press(&mut a, &[KeyCode::Char('0')]);
    assert_eq!(a.pane, Pane::Ranks);
    press(&mut a, &[KeyCode::Char('?')]);
    let s = screen(&mut a, 80, 24);
    // The help of the Ranks pane: its own keys under its name.
    assert!(s.contains("the job's collectives") && s.contains("back to Ranks"), "{s}");

    // One profile: no Ranks tab, and `0` says why.
    let mut one = app(BERT_TRACE, None);
    let s = screen(&mut one, 80, 24);
    assert!(!s.contains("Ranks") && s.starts_with("1Summary ") && s.contains(" 9Tree"), "{s}");
    press(&mut one, &[KeyCode::Char('0')]);
    assert_eq!(one.pane, Pane::Summary);
    assert!(screen(&mut one, 80, 24).contains("not a distributed job"));
}

#[test]
fn what_the_arguments_open() {
    let f = files();
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    assert_eq!(
        opening(&[DLRM.to_string()]).unwrap(),
        Opening::Job { arg: DLRM.to_string(), files: f.clone() }
    );
    assert_eq!(opening(&[s(&f[0])]).unwrap(), Opening::Profile { main: f[0].clone(), other: None });
    match opening(&[s(&f[0]), s(&f[3])]).unwrap() {
        Opening::Job { files, arg } => {
            assert_eq!(
                files,
                vec![f[0].clone(), f[3].clone()],
                "two files named rank 0 and rank 3 are two ranks"
            );
            assert!(
                arg.starts_with("2 rank traces in ") && arg.ends_with("param_dlrm_v100_8rank"),
                "{arg}"
            );
        }
        o => panic!("{o:?}"),
    }
    assert_eq!(
        opening(&[BERT_TRACE.to_string(), TRAIN_B4.to_string()]).unwrap(),
        Opening::Profile { main: BERT_TRACE.into(), other: Some(TRAIN_B4.into()) }
    );
    let three: Vec<String> = f[..3].iter().map(s).collect();
    assert!(matches!(opening(&three).unwrap(), Opening::Job { files, .. } if files.len() == 3));
    let e = opening(&[DLRM.to_string(), BERT_TRACE.to_string()]).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("the explorer opens one job"), "{e}");
    assert_eq!(opening(&["/no/such/trace.json".to_string()]).unwrap_err().exit_code(), 2);
}

#[test]
fn a_straggler_is_marked_with_its_reason() {
    // Three ranks of one real trace without its NCCL kernels (stragglers by
    // compute); rank 2's GEMMs each take 1 ms more.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&files()[0]).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut base: serde_json::Value = serde_json::from_str(&text).unwrap();
    base["traceEvents"].as_array_mut().unwrap().retain(|e| {
        !(e["cat"] == "kernel" && e["name"].as_str().is_some_and(|n| n.starts_with("nccl")))
    });
    const SLOW: &str = "volta_sgemm_128x32_nt";
    let mut paths = Vec::new();
    for rank in 0..3u32 {
        let mut t = base.clone();
        t["distributedInfo"]["rank"] = rank.into();
        t["distributedInfo"]["world_size"] = 3.into();
        if rank == 2 {
            for e in t["traceEvents"].as_array_mut().unwrap() {
                if e["cat"] == "kernel" && e["name"] == SLOW {
                    e["dur"] = (e["dur"].as_f64().unwrap() + 1000.0).into();
                }
            }
        }
        let p = dir.path().join(format!("trace_rank{rank}.json"));
        std::fs::write(&p, t.to_string()).unwrap();
        paths.push(p);
    }
    let open = OpenJob::read(&paths, &AtomicUsize::new(0), &Default::default()).unwrap();
    let j = job(&ranks::load(&paths, &Default::default()).unwrap());
    assert_eq!(open.job, j);
    assert_eq!(j.stragglers.len(), 1);
    let st = &j.stragglers[0];
    assert_eq!(st.rank, 2);
    let mut a = App::with_job(theme(), dir.path().to_str().unwrap(), open);
    for (w, h) in [(80, 24), (160, 48)] {
        let s = screen(&mut a, w, h);
        let late = libreyolo_core::render::text::num(st.compute_excess_ms, 2);
        let row =
            s.lines().find(|l| l.trim_start().trim_start_matches('▸').starts_with("2 ")).unwrap();
        assert!(
            row.contains(&format!("slowest +{late}")),
            "the straggler is the slowest rank: {row}"
        );
        for r in ["0 ", "1 "] {
            let other =
                s.lines().find(|l| l.trim_start().trim_start_matches('▸').starts_with(r)).unwrap();
            assert!(!other.contains("straggler") && !other.contains("slowest"), "{other}");
        }
        assert!(s.contains(&format!("rank 2: +{late} ms of compute per step")), "{s}");
        if w == 160 {
            let phase = st.phase.as_ref().unwrap();
            let n = |v: f64| libreyolo_core::render::text::num(v, 2);
            assert!(
                s.contains(&format!(
                    " · +{} ms {SLOW} (kernel) · {} +{} ms",
                    n(st.why[0].excess_ms_per_step),
                    phase.name,
                    n(phase.extra_ms)
                )),
                "{s}"
            );
        }
    }
    // The straggler is the slowest rank: the other panes show it first.
    assert_eq!(j.critical_rank, Some(2));
    press(&mut a, &[KeyCode::Char('1')]);
    let status = screen(&mut a, 80, 24).lines().last().unwrap().to_string();
    assert!(status.starts_with("rank 2 of 3 (slowest, straggler)"), "{status}");
}

#[test]
fn loading_counts_rank_traces_and_a_change_reloads_the_job() {
    use libreyolo_ui::app::Opened;
    use libreyolo_ui::slot::{Loading, Side};
    use std::sync::Arc;
    // Loading: the screen counts the rank traces read.
    let mut a = App::for_job(theme(), DLRM, files());
    assert_eq!(a.requests, vec![(Side::Main, DLRM.into())]);
    let done = Arc::new(AtomicUsize::new(3));
    a.loading(
        Side::Main,
        Loading {
            id: 1,
            started: std::time::Instant::now(),
            size: Some(4_000_000),
            bar: None,
            reload: false,
            ranks: Some((Arc::clone(&done), 8)),
        },
    );
    let s = screen(&mut a, 80, 24);
    assert!(s.contains("3 of 8 rank traces read (4.0 MB)"), "{s}");

    // A copy of the job; the user opens rank 5 on the Kernels pane.
    let dir = tempfile::tempdir().unwrap();
    let copies: Vec<PathBuf> = files()
        .iter()
        .map(|f| {
            let to = dir.path().join(f.file_name().unwrap());
            std::fs::copy(f, &to).unwrap();
            to
        })
        .collect();
    let arg = dir.path().to_str().unwrap().to_string();
    let mut a = App::with_job(
        theme(),
        &arg,
        OpenJob::read(&copies, &AtomicUsize::new(0), &Default::default()).unwrap(),
    );
    let mut watched = a.watched_files();
    watched.sort();
    watched.dedup();
    assert_eq!(watched, copies, "every rank's file is watched");
    press(
        &mut a,
        &[
            KeyCode::Home,
            KeyCode::Char('G'),
            KeyCode::Up,
            KeyCode::Up,
            KeyCode::Enter,
            KeyCode::Char('3'),
        ],
    );
    assert_eq!(a.job.as_ref().unwrap().shown_rank(), 5);
    assert!(a.changed_on_disk().is_empty());
    // Rewriting one rank's file reloads the whole job.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options().write(true).open(&copies[2]).unwrap().set_modified(later).unwrap();
    assert_eq!(a.changed_on_disk(), vec![(Side::Main, arg.clone().into())]);
    let again = OpenJob::read(&copies, &AtomicUsize::new(0), &Default::default()).unwrap();
    a.opened(Side::Main, Ok(Opened::Job(Box::new(again))));
    assert_eq!(a.pane, Pane::Kernels, "the pane is kept");
    assert_eq!(a.job.as_ref().unwrap().shown_rank(), 5, "and the rank shown");
    assert!(screen(&mut a, 160, 48).contains(&format!("reloaded {arg}")));
}

#[test]
fn a_rank_opened_names_itself_on_every_pane() {
    let mut a = job_app();
    // Sorted by step, the second row is rank 3.
    press(&mut a, &[KeyCode::Char('s'), KeyCode::Home, KeyCode::Down, KeyCode::Enter]);
    assert_eq!(a.job.as_ref().unwrap().shown_rank(), 3);
    for (w, h) in [(80, 24), (160, 48)] {
        let s = screen(&mut a, w, h);
        insta::assert_snapshot!(format!("dlrm_8rank_rank3_summary_{w}x{h}"), s);
        assert!(s.lines().last().unwrap().starts_with("rank 3 of 8 "), "{s}");
    }
    for k in ['2', '3', '4', '6', '7', '8'] {
        press(&mut a, &[KeyCode::Char(k)]);
        let s = screen(&mut a, 80, 24);
        assert!(s.lines().last().unwrap().starts_with("rank 3 of 8 "), "pane {k}:\n{s}");
    }
}

/// In a job the What-if pane offers the job's changes first, largest
/// saving first: the critical rank's lateness removed and each standard
/// change made on every rank, with the figures `what-if DIR` and
/// `what-if DIR --all` give on a reading of the ranks of their own; then
/// the shown rank's own changes, named by rank.
#[test]
fn whatif_offers_the_jobs_changes_then_the_ranks() {
    use libreyolo_core::lens::{collectives, job::job_of, whatif};
    use libreyolo_ui::panes::whatif::WhatIfChoice;

    let opts = ranks::Options { keep_models: true, ..Default::default() };
    let (set, models) = ranks::load_with_models(&files(), &opts).unwrap();
    let matched = collectives::of_ranks(&set);
    let critical = job_of(&set, &matched).critical_rank.expect("DLRM waits for rank 7");
    let straggler = whatif::straggler_removed(&set, &models, &matched, critical).unwrap();
    let all = whatif::job_all(&set, &models, &matched, None).unwrap();

    let j = open_job();
    assert_eq!(j.whatifs.len(), all.scenarios.len() + 1, "every standard change and --straggler");
    let saved: Vec<f64> = j.whatifs.iter().map(|w| w.row().saved_ms_per_step).collect();
    assert!(saved.windows(2).all(|p| p[0] >= p[1]), "largest saving first: {saved:?}");
    for w in &j.whatifs {
        let row = w.row();
        if row.flags.starts_with("--straggler") {
            assert_eq!(w, &straggler);
        } else {
            let cli = all.scenarios.iter().find(|s| s.flags == row.flags).unwrap();
            assert_eq!(row.saved_ms_per_step, cli.saved_ms_per_step, "{}", row.flags);
            assert_eq!(row.removes_ms_per_step, cli.removes_ms_per_step, "{}", row.flags);
        }
    }

    let mut app = job_app();
    press(&mut app, &[KeyCode::Char('6')]);
    assert_eq!(app.pane, Pane::WhatIf);
    assert_eq!(app.panes.whatif.choice, Some(WhatIfChoice::Job(0)));
    let s = screen(&mut app, 160, 40);
    let first = j.whatifs[0].row();
    assert!(s.contains("the job: on every rank, re-timed together"), "{s}");
    assert!(s.contains(&first.flags), "{s}");
    assert!(s.contains("job step (the slowest rank's)"), "the job's table on the right: {s}");
    // Past the job's changes: the shown rank's own, named by its rank.
    let own = app.panes.whatif.choice;
    press(&mut app, &vec![KeyCode::Down; j.whatifs.len()]);
    assert_ne!(app.panes.whatif.choice, own);
    assert_eq!(app.panes.whatif.choice, Some(WhatIfChoice::Category(0)));
    let rank = j.shown_rank();
    let s = screen(&mut app, 160, 40);
    assert!(s.contains(&format!("rank {rank} alone")), "{s}");
    let w = app.panes.whatif.result.clone().unwrap().unwrap();
    let p = &set.ranks.iter().find(|r| r.rank == rank).unwrap().input.profile;
    assert_eq!(w.scenario, p.step_model.as_ref().unwrap().scenarios[0].flags);
}
