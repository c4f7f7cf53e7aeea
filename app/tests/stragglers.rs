//! Stragglers from who waits for whom (docs/analysis.md §11), on jobs made
//! in the test from a real rank trace (`hta_nccl_a100_2024`, rank 0 of a
//! DDP ResNet job on A100s): four copies of it are four ranks whose
//! collectives arrive together; delaying one rank's longest kernel before
//! a collective by D, with the others waiting those D inside that
//! collective (as NCCL makes them), must name that rank, the wait it
//! causes (3·D per step: three ranks wait D each) and the kernel, with
//! figures this test derives from the edit alone.

mod common;

use std::path::Path;

use common::{json, run};
use serde_json::Value;

fn base() -> Value {
    common::read_json(&common::shared().join("traces/hta_nccl_a100_2024/nccl_data.json.gz"))
}

fn events(t: &Value) -> &Vec<Value> {
    t["traceEvents"].as_array().unwrap()
}

fn num(e: &Value, k: &str) -> f64 {
    e[k].as_f64().unwrap_or(0.0)
}

/// The trace's steps as (start, end) µs, in time order.
fn steps(t: &Value) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = events(t)
        .iter()
        .filter(|e| e["name"].as_str().is_some_and(|n| n.starts_with("ProfilerStep#")))
        .map(|e| (num(e, "ts"), num(e, "ts") + num(e, "dur")))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

fn is_comm(e: &Value) -> bool {
    e["name"].as_str().is_some_and(|n| n.starts_with("nccl"))
}

/// Per step, the `k`-th all-reduce (its start, µs) and the longest compute
/// kernel between the previous NCCL kernel's end and it (its end, µs, and
/// name).
fn targets(t: &Value, k: usize) -> Vec<(f64, f64, String)> {
    let mut kernels: Vec<&Value> = events(t).iter().filter(|e| e["cat"] == "kernel").collect();
    kernels.sort_by(|a, b| num(a, "ts").total_cmp(&num(b, "ts")));
    let mut out = Vec::new();
    for (s0, s1) in steps(t) {
        let comm: Vec<&&Value> = kernels
            .iter()
            .filter(|e| is_comm(e) && num(e, "ts") >= s0 && num(e, "ts") < s1)
            .collect();
        let ar: Vec<&&&Value> =
            comm.iter().filter(|e| e["name"].as_str().unwrap().contains("AllReduce")).collect();
        let a = ar[k];
        let at = num(a, "ts");
        let from = comm
            .iter()
            .filter(|e| num(e, "ts") + num(e, "dur") <= at)
            .map(|e| num(e, "ts") + num(e, "dur"))
            .fold(s0, f64::max);
        let longest = kernels
            .iter()
            .filter(|e| !is_comm(e) && num(e, "ts") >= from && num(e, "ts") + num(e, "dur") <= at)
            .max_by(|a, b| num(a, "dur").total_cmp(&num(b, "dur")))
            .unwrap();
        out.push((
            at,
            num(longest, "ts") + num(longest, "dur"),
            longest["name"].as_str().unwrap().to_string(),
        ));
    }
    out
}

/// Inserts `d` µs of time at `at` µs: events starting at or after it move
/// later, events spanning it last longer.
fn insert(t: &mut Value, at: f64, d: f64) {
    for e in t["traceEvents"].as_array_mut().unwrap() {
        let Some(ts) = e["ts"].as_f64() else { continue };
        if ts >= at {
            e["ts"] = (ts + d).into();
        } else if let Some(dur) = e["dur"].as_f64()
            && ts + dur >= at
        {
            e["dur"] = (dur + d).into();
        }
    }
}

/// A job of `n` ranks made from the base trace; `late` lists (rank, k, D
/// µs): that rank's longest kernel before each step's `k`-th all-reduce
/// takes D longer, and every other rank waits D inside that all-reduce.
fn write_job(dir: &Path, n: u32, late: &[(u32, usize, f64)]) -> String {
    let base = base();
    let mut kernel = String::new();
    for rank in 0..n {
        let mut t = base.clone();
        t["distributedInfo"]["rank"] = rank.into();
        t["distributedInfo"]["world_size"] = n.into();
        // Latest first, so that each insertion leaves the earlier points
        // where they were.
        let mut points: Vec<f64> = Vec::new();
        for &(slow, k, _) in late {
            for (ar, kernel_end, name) in targets(&base, k) {
                points.push(if rank == slow { kernel_end } else { ar + 0.0005 });
                kernel = name;
            }
        }
        let mut order: Vec<(f64, f64)> = Vec::new();
        for (i, &(_, k, d)) in late.iter().enumerate() {
            let per = targets(&base, k).len();
            order.extend(points[i * per..(i + 1) * per].iter().map(|p| (*p, d)));
        }
        order.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (p, d) in order {
            insert(&mut t, p, d);
        }
        std::fs::write(dir.join(format!("rank{rank}.json")), t.to_string()).unwrap();
    }
    kernel
}

fn step_ms() -> f64 {
    let s = steps(&base());
    s.iter().map(|(a, b)| b - a).sum::<f64>() / s.len() as f64 / 1e3
}

fn close(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() <= 0.1 * want, "{what}: {got} vs {want} (10%)");
}

#[test]
fn a_rank_late_by_1_2_or_5_percent_of_the_step_is_named_with_its_kernel() {
    let step = step_ms();
    for pct in [1.0, 2.0, 5.0] {
        let dir = tempfile::tempdir().unwrap();
        let d_ms = step * pct / 100.0;
        let kernel = write_job(dir.path(), 4, &[(2, 0, d_ms * 1e3)]);
        let job = json(&["summary", dir.path().to_str().unwrap()]);
        assert_eq!(job["straggler_rule"], "waits");
        let s = job["stragglers"].as_array().unwrap();
        assert_eq!(s.len(), 1, "{pct}%: {:#}", job["stragglers"]);
        assert_eq!(s[0]["rank"], 2);
        assert_eq!(job["critical_rank"], 2, "the rank the others wait for is the slowest");
        close(
            s[0]["wait_caused_ms_per_step"].as_f64().unwrap(),
            3.0 * d_ms,
            "three ranks wait D each",
        );
        close(s[0]["late_ms"].as_f64().unwrap(), d_ms, "late by D");
        assert_eq!(s[0]["late_steps"], serde_json::json!([3, 3]));
        assert_eq!(s[0]["late_at"][0]["collective"], "allreduce");
        assert_eq!(s[0]["late_at"][0]["count"], 3, "once per step");
        let why = &s[0]["why"][0];
        assert_eq!(why["kind"], "kernel");
        let label = why["name"].as_str().unwrap().trim_end_matches('…');
        assert!(kernel.starts_with(label), "{kernel} is named: {why}");
        close(why["excess_ms_per_step"].as_f64().unwrap(), d_ms, "the stretched kernel's excess");
        // The others wait; rank 2 does not.
        let rows = job["ranks"].as_array().unwrap();
        for r in rows {
            let waited = r["wait_ms"].as_f64().unwrap();
            if r["rank"] == 2 {
                assert!(waited < 0.01 * d_ms, "{r}");
            } else {
                close(waited, d_ms, "each other rank waits D per step");
            }
        }
        // The same numbers as the collectives lens's own.
        let c = json(&["collectives", dir.path().to_str().unwrap()]);
        let caused = c["per_rank"][2]["wait_caused_ms"].as_f64().unwrap();
        assert!(
            (caused / 3.0 - s[0]["wait_caused_ms_per_step"].as_f64().unwrap()).abs() < 2e-3,
            "{caused} over 3 steps"
        );
    }
}

#[test]
fn the_same_job_without_the_delay_names_nobody() {
    let dir = tempfile::tempdir().unwrap();
    write_job(dir.path(), 4, &[]);
    let job = json(&["summary", dir.path().to_str().unwrap()]);
    assert_eq!(job["straggler_rule"], "waits");
    assert_eq!(job["stragglers"], Value::Array(vec![]));
    assert_eq!(job["critical_rank"], Value::Null);
    let text = run(&["profile", "summary", dir.path().to_str().unwrap()]);
    assert!(text.stdout.contains("(nobody is waited for)"), "{}", text.stdout);
    assert!(
        text.stdout.contains("stragglers: none (no rank makes the others wait"),
        "{}",
        text.stdout
    );
}

#[test]
fn two_stragglers_are_named_in_the_order_of_the_wait_they_cause() {
    let dir = tempfile::tempdir().unwrap();
    let step = step_ms();
    // Rank 1 is 2% late for each step's first all-reduce, rank 3 5% late
    // for its second.
    let (d1, d3) = (0.02 * step, 0.05 * step);
    write_job(dir.path(), 4, &[(1, 0, d1 * 1e3), (3, 1, d3 * 1e3)]);
    let job = json(&["summary", dir.path().to_str().unwrap()]);
    let s = job["stragglers"].as_array().unwrap();
    let ranks: Vec<u64> = s.iter().map(|x| x["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, vec![3, 1], "{:#}", job["stragglers"]);
    close(s[0]["wait_caused_ms_per_step"].as_f64().unwrap(), 3.0 * d3, "rank 3");
    close(s[1]["wait_caused_ms_per_step"].as_f64().unwrap(), 3.0 * d1, "rank 1");
    assert_eq!(job["critical_rank"], 3);
    let text = run(&["profile", "summary", dir.path().to_str().unwrap()]);
    assert!(text.stdout.contains("(the others wait for rank 3)"), "{}", text.stdout);
    let at3 = text.stdout.find("  rank 3 makes the others wait").unwrap();
    let at1 = text.stdout.find("  rank 1 makes the others wait").unwrap();
    assert!(at3 < at1, "{}", text.stdout);
}

/// The DLRM job (8 V100 ranks, one step each): a communication-bound rank
/// whose exposed communication is mostly waiting for one later rank has
/// that rank as its verdict; the waits are summed by who arrived last,
/// from the collectives lens's per-rank waits.
#[test]
fn a_rank_that_mostly_waits_for_another_says_so() {
    let dir = common::fixtures().join("traces/param_dlrm_v100_8rank");
    let dir = dir.to_str().unwrap();
    let c = json(&["collectives", dir]);
    let mut waited: std::collections::BTreeMap<(u64, u64), f64> = Default::default();
    for m in c["collectives"].as_array().unwrap() {
        let Some(last) = m["last_rank"].as_u64() else { continue };
        for r in m["ranks"].as_array().unwrap() {
            let rank = r["rank"].as_u64().unwrap();
            if rank != last {
                *waited.entry((rank, last)).or_default() += r["wait_us"].as_f64().unwrap() / 1e3;
            }
        }
    }
    let s = json(&["summary", dir]);
    let text = common::profile_out(&["summary", dir]);
    let mut named = 0;
    for r in s["ranks"].as_array().unwrap() {
        let rank = r["rank"].as_u64().unwrap();
        // One step per rank trace: per step is the sum.
        let (&(_, top), &ms) = waited
            .iter()
            .filter(|((w, _), ms)| *w == rank && **ms > 0.0)
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.1.cmp(&a.0.1)))
            .unwrap_or((&(rank, rank), &0.0));
        let exposed = r["exposed_comm_ms"].as_f64().unwrap();
        let row =
            text.lines().find(|l| l.split_whitespace().next() == Some(&rank.to_string())).unwrap();
        if r["bound"] == "communication" && ms > 0.0 && ms * 2.0 >= exposed {
            assert_eq!(r["waits_for_rank"].as_u64(), Some(top), "rank {rank}: {r}");
            let got = r["waits_for_ms_per_step"].as_f64().unwrap();
            assert!((got - ms).abs() < 0.002, "rank {rank}: {got} vs {ms}");
            assert!(row.ends_with(&format!("waits for rank {top}")), "{row}");
            named += 1;
        } else {
            assert!(r["waits_for_rank"].is_null(), "rank {rank}: {r}");
            assert!(row.ends_with(r["bound"].as_str().unwrap()), "{row}");
        }
    }
    assert!(named >= 2, "ranks 1 and 3 wait for rank 7 most of their communication");
    // The md/csv rank table has the same figure.
    let csv = common::profile_out(&["summary", dir, "--format", "csv"]);
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = head.iter().position(|c| *c == "waits_for_rank").expect("a waits_for_rank column");
    let rank1 = csv.lines().find(|l| l.starts_with("1,")).unwrap();
    assert_eq!(rank1.split(',').nth(col), Some("7"), "{csv}");
    // The wait a straggler causes is a sum over the others, said with its
    // mean, so no figure reads as longer than the step.
    let st = &s["stragglers"][0];
    let caused = st["wait_caused_ms_per_step"].as_f64().unwrap();
    let each = caused / 7.0;
    let line = text.lines().find(|l| l.contains("makes the others wait")).unwrap();
    assert!(
        line.contains(&format!("in all ({each:.2} each, over 7 ranks)")),
        "{line} ({caused} / 7)"
    );
    // Most of those waits are the ranks' spread (rank 7 arrives 0.5 ms
    // after ranks 2 and 6 at sendrecv #0): its own part is its lead over
    // the next-latest rank at each collective it was last at, summed here
    // from the collectives' arrivals; no re-timing without its lateness
    // saves the job more.
    let rank = st["rank"].as_u64().unwrap();
    let ahead: f64 = c["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["last_rank"].as_u64() == Some(rank) && m["wait_us"].as_f64() > Some(0.0))
        .map(|m| {
            let at = |r: &Value| r["arrival_us"].as_f64().unwrap();
            let ranks = m["ranks"].as_array().unwrap();
            let last = ranks.iter().find(|r| r["rank"].as_u64() == Some(rank)).map(at).unwrap();
            let next = ranks
                .iter()
                .filter(|r| r["rank"].as_u64() != Some(rank))
                .map(at)
                .fold(f64::NEG_INFINITY, f64::max);
            (last - next) / 1e3
        })
        .sum();
    let got = st["ahead_ms_per_step"].as_f64().unwrap();
    assert!((got - ahead).abs() < 0.002, "{got} vs {ahead}");
    assert!(ahead < 0.1 * caused, "{ahead} of {caused}: mostly the spread");
    assert!(
        line.contains(&format!("its own lead over the next-latest rank there: {ahead:.2} ms/step")),
        "{line}"
    );
    let w = json(&["what-if", dir, "--straggler", &rank.to_string()]);
    let saved =
        w["job_step_ms"]["now"].as_f64().unwrap() - w["job_step_ms"]["projected"].as_f64().unwrap();
    assert!(saved <= ahead + 0.002, "the job saves {saved}, more than its lead {ahead}");
}
