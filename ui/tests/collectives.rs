//! The Ranks pane's collectives view (`c`) on real distributed jobs: the 8
//! DLRM ranks (tests/fixtures/traces/param_dlrm_v100_8rank, no message
//! sizes), and two ranks made from the A100 NCCL trace, which records
//! sizes (hta_nccl_a100_2024; rank 1 arrives 100 µs late at every
//! collective). What is on screen is checked against the `collectives`
//! lens run here on its own reading of the ranks, as
//! `profile collectives DIR` runs it.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::AtomicUsize;

use common::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use libreyolo_core::input::ranks;
use libreyolo_core::lens::collectives::{Collectives, Matched, of_ranks};
use libreyolo_core::render::text::num;
use libreyolo_ui::app::{App, Pane};
use libreyolo_ui::job::OpenJob;
use libreyolo_ui::panes::collectives::{CollSort, order};
use libreyolo_ui::panes::ranks::JobView;

const DLRM: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/traces/param_dlrm_v100_8rank");
const NCCL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/traces/hta_nccl_a100_2024/nccl_data.json.gz"
);
const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

fn files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(DLRM).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

/// The DLRM job as the explorer reads it, once per test binary.
fn dlrm_job() -> OpenJob {
    static JOB: OnceLock<OpenJob> = OnceLock::new();
    JOB.get_or_init(|| OpenJob::read(&files(), &AtomicUsize::new(0), &Default::default()).unwrap())
        .clone()
}

/// The `collectives` lens on a reading of the ranks of its own.
fn lens(files: &[PathBuf]) -> Collectives {
    of_ranks(&ranks::load(files, &Default::default()).unwrap())
}

fn press(app: &mut App, keys: &[KeyCode]) {
    for k in keys {
        app.handle_key(KeyEvent::new(*k, KeyModifiers::NONE));
    }
}

/// The DLRM job on its collectives view.
fn dlrm_view() -> App {
    let mut a = App::with_job(theme(), DLRM, dlrm_job());
    press(&mut a, &[KeyCode::Char('c')]);
    assert_eq!((a.pane, a.panes.ranks.view), (Pane::Ranks, JobView::Collectives));
    a
}

/// The figures after a row label of the per-rank table (`wait ms`, …).
fn per_rank(screen: &str, label: &str) -> Vec<String> {
    let line = screen
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label} row:\n{screen}"));
    line[label.len()..].split_whitespace().map(str::to_string).collect()
}

/// The list's rows: the cells after the group's name, for the lines that
/// start with a group and then a position.
fn rows(screen: &str, c: &Collectives) -> Vec<Vec<String>> {
    screen
        .lines()
        .filter_map(|l| {
            let g = c.groups.iter().find(|g| l.starts_with(&g.group))?;
            let cells: Vec<String> =
                l[g.group.len()..].split_whitespace().map(str::to_string).collect();
            cells.first()?.parse::<usize>().ok()?;
            Some(std::iter::once(g.group.clone()).chain(cells).collect())
        })
        .collect()
}

/// A row's cells by column name: 80 columns show group, #, collective,
/// at, MB, skew, wait, last, xfer, busbw; 110 and more add dtype and algbw.
fn cell<'r>(row: &'r [String], wide: bool, col: &str) -> &'r str {
    let cols: &[&str] = if wide {
        &[
            "group",
            "#",
            "collective",
            "at",
            "MB",
            "dtype",
            "skew",
            "wait",
            "last",
            "xfer",
            "algbw",
            "busbw",
        ]
    } else {
        &["group", "#", "collective", "at", "MB", "skew", "wait", "last", "xfer", "busbw"]
    };
    assert_eq!(row.len(), cols.len(), "{row:?}");
    &row[cols.iter().position(|c| *c == col).unwrap()]
}

fn close(shown: &str, value: f64, digits: i32) {
    let v: f64 = shown.parse().unwrap_or_else(|_| panic!("not a figure: {shown}"));
    assert!(
        (v - value).abs() <= 0.5 * 10f64.powi(-digits) + 1e-9,
        "{shown} on screen, {value} in the lens"
    );
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| num(v, digits))
}

/// Each row on screen is the lens's collective at that place of `order`.
fn check_rows(s: &str, c: &Collectives, sort: CollSort, wide: bool) -> Vec<Vec<String>> {
    let rows = rows(s, c);
    let want = order(c, sort);
    assert!(!rows.is_empty() && rows.len() <= want.len(), "{s}");
    // The window may start further down (the cursor kept in view).
    let first = want
        .iter()
        .position(|&i| {
            c.collectives[i].group == rows[0][0] && c.collectives[i].seq.to_string() == rows[0][1]
        })
        .unwrap_or_else(|| panic!("{:?} is not a collective:\n{s}", rows[0]));
    assert!(first + rows.len() <= want.len());
    for (row, &i) in rows.iter().zip(&want[first..]) {
        let m = &c.collectives[i];
        assert_eq!(
            (cell(row, wide, "group"), cell(row, wide, "#")),
            (m.group.as_str(), m.seq.to_string().as_str())
        );
        assert_eq!(cell(row, wide, "collective"), m.collective);
        close(cell(row, wide, "at"), m.at_ms, 3);
        assert_eq!(cell(row, wide, "MB"), opt(m.bytes.map(|b| b as f64 / 1e6), 3));
        assert_eq!(cell(row, wide, "skew"), opt(m.skew_us, 1));
        assert_eq!(cell(row, wide, "wait"), num(m.wait_us, 1));
        assert_eq!(
            cell(row, wide, "last"),
            m.last_rank.map_or("n/a".to_string(), |r| r.to_string())
        );
        assert_eq!(cell(row, wide, "xfer"), num(m.duration_us, 1));
        assert_eq!(cell(row, wide, "busbw"), opt(m.busbw_gbps, 2));
        if wide {
            assert_eq!(cell(row, wide, "algbw"), opt(m.algbw_gbps, 2));
            assert_eq!(cell(row, wide, "dtype"), m.dtype.as_deref().unwrap_or("n/a"));
        }
    }
    rows
}

/// Per group, its counts; per rank, its waits, last arrivals and
/// communication time: the lens's, on screen.
fn check_head(s: &str, c: &Collectives) {
    let world = c.world_size.map_or(String::new(), |w| format!(" of world size {w}"));
    let plural = if c.ranks.len() == 1 { "" } else { "s" };
    assert!(
        s.contains(&format!(
            "collectives: {} matched on {} rank{plural}{world}",
            c.collectives.len(),
            c.ranks.len()
        )),
        "{s}"
    );
    for g in &c.groups {
        let counts: Vec<String> = g.counts.iter().map(|(n, k)| format!("{k} {n}")).collect();
        assert!(s.contains(&format!("group {}: {}", g.group, counts.join(", "))), "{s}");
    }
    let ranks: Vec<String> = c.per_rank.iter().map(|r| r.rank.to_string()).collect();
    assert_eq!(per_rank(s, "rank"), ranks, "{s}");
    assert_eq!(
        per_rank(s, "comm ms"),
        c.per_rank.iter().map(|r| num(r.comm_ms, 3)).collect::<Vec<_>>()
    );
    if c.ranks.len() > 1 {
        assert_eq!(
            per_rank(s, "wait ms"),
            c.per_rank.iter().map(|r| num(r.wait_ms, 3)).collect::<Vec<_>>()
        );
        assert_eq!(
            per_rank(s, "last"),
            c.per_rank.iter().map(|r| r.last_arrivals.to_string()).collect::<Vec<_>>()
        );
    } else {
        assert!(!s.lines().any(|l| l.starts_with("wait ms")), "one rank has no waits:\n{s}");
    }
}

#[test]
fn the_view_is_the_collectives_lens() {
    let mut a = dlrm_view();
    let c = lens(&files());
    assert_eq!(
        a.job.as_ref().unwrap().collectives,
        c,
        "one reading of the ranks gives the lens's collectives"
    );
    // The DLRM job: one NCCL stream, 5 send/recv and 3 all-reduces; rank 7
    // arrives last at five of them (app/tests/ranks.rs checks these against
    // the traces).
    assert_eq!(c.groups.len(), 1);
    assert_eq!(c.per_rank[7].last_arrivals, 5);
    for (w, h) in SIZES {
        let s = screen(&mut a, w, h);
        insta::assert_snapshot!(format!("dlrm_8rank_collectives_{w}x{h}"), s);
        assert_eq!(s.lines().count(), h as usize);
        assert!(s.lines().all(|l| l.chars().count() <= w as usize), "{s}");
        check_head(&s, &c);
        assert!(s.contains("group stream 84: 5 sendrecv, 3 allreduce"), "{s}");
        assert!(s.contains("arrives last most often: rank 7 (5 of 8)"), "{s}");
        let rows = check_rows(&s, &c, CollSort::Skew, w >= 110);
        assert_eq!(rows.len(), 8, "every collective fits:\n{s}");
        // Largest skew first: the top row is the lens's largest skew.
        let top = &c.collectives[order(&c, CollSort::Skew)[0]];
        assert_eq!(top.skew_us, c.collectives.iter().filter_map(|m| m.skew_us).reduce(f64::max));
        let wide = w >= 110;
        assert_eq!(cell(&rows[0], wide, "skew"), num(top.skew_us.unwrap(), 1));
        assert_eq!(cell(&rows[0], wide, "last"), top.last_rank.unwrap().to_string());
        // The details line is the top row's.
        let first = top.ranks.iter().find(|r| r.arrival_us == 0.0).unwrap().rank;
        let detail = format!(
            "skew {} µs · last: rank {} · first: rank {first} · {} µs waited over 8 ranks",
            num(top.skew_us.unwrap(), 1),
            top.last_rank.unwrap(),
            num(top.wait_us, 1)
        );
        assert!(s.contains(&detail), "{detail}\n{s}");
        assert!(
            s.contains(&format!(
                "stream 84 #{} {} · at {} ms · size n/a",
                top.seq,
                top.collective,
                num(top.at_ms, 3)
            )),
            "{s}"
        );
        assert!(
            s.contains(&format!("transfer {} µs · bandwidth n/a", num(top.duration_us, 1))),
            "{s}"
        );
        let status = s.lines().last().unwrap();
        assert!(status.starts_with("8 collectives · sort:skew"), "{status}");
    }
}

#[test]
fn sort_cycles_the_columns_and_keeps_the_cursor() {
    let mut a = dlrm_view();
    let c = lens(&files());
    press(&mut a, &[KeyCode::Down, KeyCode::Down]);
    let on = |a: &App| {
        a.panes
            .ranks
            .collectives
            .matched(&a.job.as_ref().unwrap().collectives)
            .map(|m| (m.group.clone(), m.seq))
    };
    let before = on(&a);
    assert!(before.is_some());
    for sort in CollSort::ALL.iter().skip(1).chain([&CollSort::Skew]) {
        press(&mut a, &[KeyCode::Char('s')]);
        assert_eq!(a.panes.ranks.collectives.sort, *sort);
        assert_eq!(on(&a), before, "the cursor stays on its collective");
        for (w, h) in SIZES {
            let s = screen(&mut a, w, h);
            assert!(s.contains(&format!("sort: {} (s)", sort.as_str())), "{s}");
            assert!(
                s.lines()
                    .last()
                    .unwrap()
                    .starts_with(&format!("8 collectives · sort:{}", sort.as_str())),
                "{s}"
            );
            check_rows(&s, &c, *sort, w >= 110);
        }
        // Largest first, checked on the lens's figures.
        let shown: Vec<&Matched> = order(&c, *sort).iter().map(|&i| &c.collectives[i]).collect();
        for p in shown.windows(2) {
            match sort.value(p[0]).zip(sort.value(p[1])) {
                Some((x, y)) => assert!(x >= y, "{sort:?}: {x} before {y}"),
                None => assert!(sort.value(p[1]).is_none() || *sort == CollSort::Time),
            }
            if *sort == CollSort::Time {
                assert!(p[0].at_ms <= p[1].at_ms);
            }
        }
    }
    // By wait: the top row holds the most waiting, summed over the ranks.
    press(&mut a, &[KeyCode::Char('s'), KeyCode::Home]);
    assert_eq!(a.panes.ranks.collectives.sort, CollSort::Wait);
    let s = screen(&mut a, 80, 24);
    let most = c.collectives.iter().map(|m| m.wait_us).fold(0.0, f64::max);
    assert_eq!(cell(&rows(&s, &c)[0], false, "wait"), num(most, 1), "{s}");
    // Moving: End is the last row, PgUp and Home the first.
    press(&mut a, &[KeyCode::End]);
    assert_eq!(a.panes.ranks.collectives.selected, 7);
    press(&mut a, &[KeyCode::Down]);
    assert_eq!(a.panes.ranks.collectives.selected, 7, "the cursor stops at the last row");
    press(&mut a, &[KeyCode::Up, KeyCode::Char('k')]);
    assert_eq!(a.panes.ranks.collectives.selected, 5);
    press(&mut a, &[KeyCode::PageUp]);
    assert_eq!(a.panes.ranks.collectives.selected, 0);
    // The ranks view keeps its own sort.
    assert_eq!(a.panes.ranks.sort, libreyolo_ui::panes::ranks::RankSort::Rank);
}

#[test]
fn enter_shows_the_ranks_of_a_collective_and_opens_one() {
    let mut a = dlrm_view();
    let c = lens(&files());
    press(&mut a, &[KeyCode::Home, KeyCode::Down]);
    let m = c.collectives[order(&c, CollSort::Skew)[1]].clone();
    press(&mut a, &[KeyCode::Enter]);
    assert!(a.panes.ranks.collectives.detail);
    for (w, h) in SIZES {
        let s = screen(&mut a, w, h);
        insta::assert_snapshot!(format!("dlrm_8rank_collective_ranks_{w}x{h}"), s);
        // One row per rank: arrival, wait and kernel time as the lens has them.
        let table: Vec<Vec<&str>> = s
            .lines()
            .skip_while(|l| !l.contains("arrival µs"))
            .skip(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .take_while(|c| c.len() >= 4 && c[0].parse::<u32>().is_ok())
            .collect();
        assert_eq!(table.len(), 8, "{s}");
        for (row, r) in table.iter().zip(&m.ranks) {
            assert_eq!(row[0], r.rank.to_string());
            assert_eq!(row[1], num(r.arrival_us, 1));
            assert_eq!(row[2], num(r.wait_us, 1));
            assert_eq!(row[3], num(r.dur_us, 1));
            assert_eq!(row.get(4) == Some(&"last:"), Some(r.rank) == m.last_rank, "{row:?}");
        }
        let last = m.last_rank.unwrap();
        assert!(
            s.contains(&format!("Enter: rank {last}'s panes")),
            "the cursor starts on the last rank:\n{s}"
        );
    }
    // Enter opens the rank that arrived last in the other panes.
    press(&mut a, &[KeyCode::Enter]);
    assert_eq!(a.pane, Pane::Summary);
    assert_eq!(a.job.as_ref().unwrap().shown_rank(), m.last_rank.unwrap());
    // Esc comes back to where it was, then closes the detail, then the view.
    press(&mut a, &[KeyCode::Esc]);
    assert_eq!(
        (a.pane, a.panes.ranks.view, a.panes.ranks.collectives.detail),
        (Pane::Ranks, JobView::Collectives, true)
    );
    let at = m.ranks.iter().position(|r| Some(r.rank) == m.last_rank).unwrap();
    let (key, next) = if at > 0 { (KeyCode::Up, at - 1) } else { (KeyCode::Down, at + 1) };
    press(&mut a, &[key, KeyCode::Enter]);
    assert_eq!(
        a.job.as_ref().unwrap().shown_rank(),
        m.ranks[next].rank,
        "Up/Down move over the ranks"
    );
    press(&mut a, &[KeyCode::Char('0')]);
    assert_eq!(a.pane, Pane::Ranks);
    press(&mut a, &[KeyCode::Esc]);
    assert!(!a.panes.ranks.collectives.detail && a.panes.ranks.view == JobView::Collectives);
    press(&mut a, &[KeyCode::Esc]);
    assert_eq!(a.panes.ranks.view, JobView::Ranks);
    assert!(!a.quit);
    press(&mut a, &[KeyCode::Esc]);
    assert!(a.quit, "Esc on the ranks view quits, as before");
}

#[test]
fn c_switches_views_and_the_help_says_so() {
    let mut a = App::with_job(theme(), DLRM, dlrm_job());
    let s = screen(&mut a, 80, 24);
    assert!(s.contains("· c: collectives"), "the ranks view names the key:\n{s}");
    press(&mut a, &[KeyCode::Char('c')]);
    assert_eq!(a.panes.ranks.view, JobView::Collectives);
    assert!(screen(&mut a, 80, 24).contains("c: ranks"));
    press(&mut a, &[KeyCode::Char('c')]);
    assert_eq!(a.panes.ranks.view, JobView::Ranks);
    // The view is kept while other panes are shown.
    press(
        &mut a,
        &[KeyCode::Char('c'), KeyCode::Char('3'), KeyCode::Char('c'), KeyCode::Char('0')],
    );
    assert_eq!((a.pane, a.panes.ranks.view), (Pane::Ranks, JobView::Collectives));
    assert!(a.panes.kernels.query.category.is_some(), "c on Kernels is still its category filter");
    press(&mut a, &[KeyCode::Char('?')]);
    let s = screen(&mut a, 80, 24);
    // The help of the collectives view: its keys, `c` among them.
    assert!(s.contains("back to the ranks") && s.contains("the collective rank by rank"), "{s}");
    // One profile: `0` says what is needed.
    let mut one = app(BERT_TRACE, None);
    press(&mut one, &[KeyCode::Char('0')]);
    let s = screen(&mut one, 80, 24);
    assert!(
        s.contains("not a distributed job: no Ranks or collectives; open a folder of rank traces"),
        "{s}"
    );
}

#[test]
fn no_color_and_other_themes_render_the_same_text() {
    use libreyolo_ui::theme::{Depth, Theme};
    let mut dark = dlrm_view();
    let reference = screen(&mut dark, 80, 24);
    for (name, depth) in
        [("light", Depth::Ansi16), ("high-contrast", Depth::TrueColor), ("dark", Depth::None)]
    {
        let mut a = App::with_job(Theme::load(name, depth).unwrap(), DLRM, dlrm_job());
        press(&mut a, &[KeyCode::Char('c')]);
        assert_eq!(screen(&mut a, 80, 24), reference, "{name} {depth:?}");
    }
    // Tiny terminals do not panic, list or detail.
    for keys in [&[][..], &[KeyCode::Enter][..]] {
        let mut a = dlrm_view();
        press(&mut a, keys);
        for (w, h) in [(1, 1), (10, 3), (20, 5), (40, 10)] {
            screen(&mut a, w, h);
        }
    }
}

/// The A100 NCCL trace (rank 0 of 2) as rank `rank`; rank 1's NCCL
/// kernels start `late_us` later, and rank 0's end as late (it waited).
fn nccl_rank(dir: &Path, base: &serde_json::Value, rank: u32, late_us: f64) -> PathBuf {
    let mut t = base.clone();
    t["distributedInfo"]["rank"] = rank.into();
    for e in t["traceEvents"].as_array_mut().unwrap() {
        if e["cat"] == "kernel" && e["args"]["Collective name"].is_string() {
            let (key, by) = if rank == 1 { ("ts", late_us) } else { ("dur", late_us) };
            e[key] = (e[key].as_f64().unwrap() + by).into();
        }
    }
    let p = dir.join(format!("trace_rank{rank}.json"));
    std::fs::write(&p, t.to_string()).unwrap();
    p
}

fn nccl_base() -> serde_json::Value {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(NCCL).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn sizes_and_bus_bandwidth_on_two_ranks_and_one() {
    let base = nccl_base();
    assert_eq!(base["distributedInfo"]["world_size"], 2);
    let dir = tempfile::tempdir().unwrap();
    let paths =
        vec![nccl_rank(dir.path(), &base, 0, 100.0), nccl_rank(dir.path(), &base, 1, 100.0)];
    let c = lens(&paths);
    // A fixed name for the title bar: the temporary folder's changes.
    let mut a = App::with_job(
        theme(),
        "traces/nccl_2rank",
        OpenJob::read(&paths, &AtomicUsize::new(0), &Default::default()).unwrap(),
    );
    assert_eq!(a.job.as_ref().unwrap().collectives, c);
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    // Rank 1 arrives last everywhere, 100 µs after rank 0.
    let about = |v: f64| (v - 100.0).abs() < 0.01;
    assert!(
        c.collectives
            .iter()
            .all(|m| m.last_rank == Some(1) && m.skew_us.is_some_and(about) && about(m.wait_us)),
        "{c:#?}"
    );
    assert!(
        c.collectives.iter().any(|m| m.busbw_gbps.is_some()),
        "the trace records message sizes"
    );
    press(&mut a, &[KeyCode::Char('c')]);
    // By size: the largest message first.
    press(&mut a, &[KeyCode::Char('s'), KeyCode::Char('s'), KeyCode::Char('s'), KeyCode::Home]);
    assert_eq!(a.panes.ranks.collectives.sort, CollSort::Size);
    for (w, h) in SIZES {
        let s = screen(&mut a, w, h);
        insta::assert_snapshot!(format!("nccl_2rank_collectives_by_size_{w}x{h}"), s);
        assert!(s.lines().all(|l| l.chars().count() <= w as usize), "{s}");
        check_head(&s, &c);
        let rows = check_rows(&s, &c, CollSort::Size, w >= 110);
        let big = c.collectives.iter().filter_map(|m| m.bytes).max().unwrap();
        assert_eq!(cell(&rows[0], w >= 110, "MB"), num(big as f64 / 1e6, 3));
        let top = &c.collectives[order(&c, CollSort::Size)[0]];
        if let (Some(al), Some(bus)) = (top.algbw_gbps, top.busbw_gbps) {
            assert!(
                s.contains(&format!("algbw {} GB/s · busbw {} GB/s", num(al, 2), num(bus, 2))),
                "{s}"
            );
        }
    }

    // One rank left (the other's file broken): the single-rank view, with
    // sizes and bandwidth and no skew.
    std::fs::write(&paths[1], "{ not json").unwrap();
    let one = OpenJob::read(&paths, &AtomicUsize::new(0), &Default::default()).unwrap();
    let c = one.collectives.clone();
    assert_eq!(c.ranks, vec![0]);
    let mut a = App::with_job(theme(), dir.path().to_str().unwrap(), one);
    press(&mut a, &[KeyCode::Char('c')]);
    for (w, h) in SIZES {
        let s = screen(&mut a, w, h);
        check_head(&s, &c);
        let rows = check_rows(&s, &c, CollSort::Skew, w >= 110);
        assert!(
            rows.iter()
                .all(|r| cell(r, w >= 110, "skew") == "n/a" && cell(r, w >= 110, "last") == "n/a"),
            "{s}"
        );
        assert!(s.contains("one rank: skew and waits need every rank's trace"), "{s}");
        assert!(s.contains("collectives: ") && s.contains(" on 1 rank of world size 2"), "{s}");
    }
}

#[test]
fn a_reload_keeps_the_view_its_sort_and_the_collective() {
    use libreyolo_ui::app::Opened;
    use libreyolo_ui::slot::Side;
    let mut a = dlrm_view();
    press(
        &mut a,
        &[KeyCode::Char('s'), KeyCode::Home, KeyCode::Down, KeyCode::Down, KeyCode::Enter],
    );
    let on = |a: &App| {
        a.panes
            .ranks
            .collectives
            .matched(&a.job.as_ref().unwrap().collectives)
            .map(|m| (m.group.clone(), m.seq))
    };
    let before = on(&a);
    a.opened(Side::Main, Ok(Opened::Job(Box::new(dlrm_job()))));
    assert_eq!(
        (a.pane, a.panes.ranks.view, a.panes.ranks.collectives.sort),
        (Pane::Ranks, JobView::Collectives, CollSort::Wait)
    );
    assert_eq!(on(&a), before, "the cursor stays on its collective");
    assert!(a.panes.ranks.collectives.detail, "and its ranks stay open");
    assert!(screen(&mut a, 80, 24).contains("reloaded"));
}
