//! `summary` of a distributed job: the 8 rank traces of one DLRM training
//! job on V100s (tests/fixtures/traces/param_dlrm_v100_8rank), checked rank
//! by rank against `summary` of each file alone; and a straggler made from
//! a real rank trace by lengthening one GEMM kernel.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use common::{json, run};
use serde_json::Value;

fn dlrm() -> PathBuf {
    common::shared().join("traces/param_dlrm_v100_8rank")
}

fn rank_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(dlrm()).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

#[test]
fn a_folder_of_rank_traces_is_one_job() {
    let dir = dlrm();
    let job = json(&["summary", dir.to_str().unwrap()]);
    assert_eq!(job["world_size"], 8);
    let rows = job["ranks"].as_array().unwrap();
    assert_eq!(
        rows.iter().map(|r| r["rank"].as_u64().unwrap()).collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>()
    );

    // Each rank's row is what `summary` says of that file alone.
    let (mut busy, mut slowest) = (0.0, (0u64, 0.0f64));
    for (row, file) in rows.iter().zip(rank_files()) {
        let alone = json(&["summary", file.to_str().unwrap()]);
        let rank = row["rank"].as_u64().unwrap();
        assert!(
            file.file_name().unwrap().to_string_lossy().starts_with(&format!("worker{rank}_")),
            "rank {rank} from distributedInfo matches the file"
        );
        let (step, b) =
            (alone["step_ms"].as_f64().unwrap(), alone["gpu_busy_ms_per_step"].as_f64().unwrap());
        let exposed = alone["comm_exposed_ms_per_step"].as_f64().unwrap();
        assert_eq!(row["step_ms"].as_f64().unwrap(), step);
        assert_eq!(row["comm_ms"], alone["comm_ms_per_step"]);
        assert_eq!(row["exposed_comm_ms"].as_f64().unwrap(), exposed);
        assert!(
            (row["compute_ms"].as_f64().unwrap() - (b - exposed)).abs() < 1e-3,
            "compute = busy − exposed communication"
        );
        assert!((row["idle_ms"].as_f64().unwrap() - (step - b)).abs() < 1e-3);
        assert_eq!(row["bound"], alone["bound"]);
        busy += b;
        if step > slowest.1 {
            slowest = (rank, step);
        }
    }
    assert_eq!(job["step_ms"].as_f64().unwrap(), slowest.1, "the job's step is the longest rank's");
    assert_ne!(
        job["critical_rank"].as_u64().unwrap(),
        slowest.0,
        "the longest step is the rank that waits most, not the one waited for"
    );
    assert!((job["gpu_util"].as_f64().unwrap() - busy / (8.0 * slowest.1)).abs() < 1e-3);
    assert_eq!(job["straggler_rule"], "waits");

    let text = run(&["profile", "summary", dir.to_str().unwrap()]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.starts_with("job      8 ranks of world size 8  |  step"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("(the others wait for rank 7)"), "{}", text.stdout);
}

/// The job line's utilisation is over the step it prints (audit s12 M3):
/// the ranks' kernel time in their steps (from the raw events: each rank's
/// kernels clipped to its ProfilerSteps, as a union, per step) over the
/// job's step — the longest rank's — on all 8 ranks, not over each rank's
/// own shorter window (44%). Text, JSON and md say the same figure.
#[test]
fn the_job_s_utilisation_is_over_the_job_s_step() {
    let (mut busy, mut job_step) = (0.0, 0.0f64);
    for file in rank_files() {
        let t = common::truth(&file);
        let n = t.windows.len() as f64;
        let kernels: Vec<(f64, f64)> = t.spans.iter().map(|s| (s.2, s.3)).collect();
        busy += common::union_len(&common::clip(&kernels, &t.windows)) / n / 1000.0;
        let step = t.windows.iter().map(|(s, e)| e - s).sum::<f64>() / n / 1000.0;
        job_step = job_step.max(step);
    }
    let util = busy / (8.0 * job_step);
    assert!((util - 0.35).abs() < 0.005, "{busy} ms busy, job step {job_step} ms: {util}");
    let dir = dlrm();
    let d = dir.to_str().unwrap();
    let job = json(&["summary", d]);
    assert!((job["step_ms"].as_f64().unwrap() - job_step).abs() < 1e-3, "{}", job["step_ms"]);
    assert!((job["gpu_util"].as_f64().unwrap() - util).abs() < 1e-3, "{}", job["gpu_util"]);
    let line = format!(
        "step {job_step:.2} ms (the others wait for rank 7)  |  GPU util {:.0}% over all ranks",
        util * 100.0
    );
    let text = run(&["profile", "summary", d]);
    assert!(text.stdout.lines().next().unwrap().ends_with(&line), "{}", text.stdout);
    let md = run(&["profile", "summary", d, "--format", "md"]);
    assert!(
        md.stdout.contains(&format!("GPU util {:.0}% over all ranks", util * 100.0)),
        "{}",
        md.stdout
    );
}

#[test]
fn the_dlrm_stragglers_are_the_ranks_the_others_wait_for_with_the_collectives_own_waits() {
    // Independently: per collective (the k-th NCCL kernel of each rank), the
    // last rank to start it costs every other rank (its start − theirs).
    let truth: Vec<Vec<(String, f64, f64)>> =
        rank_files().iter().map(|f| nccl_kernels(f)).collect();
    let mut caused = [0.0f64; 8];
    for i in 0..truth[0].len() {
        let starts: Vec<f64> = truth.iter().map(|t| t[i].1).collect();
        let last = starts.iter().cloned().fold(f64::MIN, f64::max);
        let r = starts.iter().position(|s| *s == last).unwrap();
        caused[r] += starts.iter().map(|s| last - s).sum::<f64>() / 1e3;
    }
    let job = json(&["summary", dlrm().to_str().unwrap()]);
    let threshold = 0.01 * job["step_ms"].as_f64().unwrap();
    assert!((job["straggler_threshold_ms"].as_f64().unwrap() - threshold).abs() < 1e-3);
    // One step per trace: per step is the window.
    let mut expect: Vec<(usize, f64)> =
        caused.iter().copied().enumerate().filter(|(_, ms)| *ms >= threshold).collect();
    expect.sort_by(|a, b| b.1.total_cmp(&a.1));
    let got: Vec<(usize, f64)> = job["stragglers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (s["rank"].as_u64().unwrap() as usize, s["wait_caused_ms_per_step"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(got.len(), expect.len(), "{got:?} vs {expect:?}");
    for ((r, ms), (er, ems)) in got.iter().zip(&expect) {
        assert_eq!(r, er);
        assert!((ms - ems).abs() < 2e-3, "rank {r}: {ms} vs {ems}");
    }
    assert_eq!(job["critical_rank"].as_u64().unwrap() as usize, expect[0].0);
    // The same numbers in the collectives lens and in each rank's row.
    let c = json(&["collectives", dlrm().to_str().unwrap()]);
    for (r, row) in c["per_rank"].as_array().unwrap().iter().enumerate() {
        assert!((row["wait_caused_ms"].as_f64().unwrap() - caused[r]).abs() < 2e-3, "rank {r}");
        assert_eq!(job["ranks"][r]["wait_caused_ms"], row["wait_caused_ms"]);
        assert_eq!(job["ranks"][r]["wait_ms"], row["wait_ms"]);
    }
}

/// Independently, from the raw NCCL kernels: at each collective a rank
/// was last at, how much later than the median of the other seven ranks'
/// starts it started; per rank the worst of them (ms).
fn lateness() -> [f64; 8] {
    let truth: Vec<Vec<(String, f64, f64)>> =
        rank_files().iter().map(|f| nccl_kernels(f)).collect();
    let mut late = [0.0f64; 8];
    for i in 0..truth[0].len() {
        let starts: Vec<f64> = truth.iter().map(|t| t[i].1).collect();
        let last = starts.iter().cloned().fold(f64::MIN, f64::max);
        let r = starts.iter().position(|s| *s == last).unwrap();
        let mut others: Vec<f64> =
            starts.iter().enumerate().filter(|(j, _)| *j != r).map(|(_, s)| *s).collect();
        others.sort_by(f64::total_cmp);
        let median = others[others.len() / 2]; // seven: the middle one
        late[r] = late[r].max((last - median) / 1e3);
    }
    late
}

#[test]
fn a_stragglers_lateness_is_against_the_other_ranks_median_arrival_and_says_so() {
    // `late_ms` is the worst lateness (one step per trace), and the text
    // names what it is measured against.
    let late = lateness();
    let job = json(&["summary", dlrm().to_str().unwrap()]);
    let stragglers = job["stragglers"].as_array().unwrap();
    assert!(!stragglers.is_empty());
    let text = run(&["profile", "summary", dlrm().to_str().unwrap()]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    for s in stragglers {
        let r = s["rank"].as_u64().unwrap() as usize;
        let got = s["late_ms"].as_f64().unwrap();
        assert!((got - late[r]).abs() < 2e-3, "rank {r}: late {got} vs {}", late[r]);
        let said = format!(
            "rank {r} makes the others wait {:.2} ms/step in all",
            s["wait_caused_ms_per_step"].as_f64().unwrap()
        );
        let line = text
            .stdout
            .lines()
            .find(|l| l.contains(&said))
            .unwrap_or_else(|| panic!("no line for rank {r} ({said}):\n{}", text.stdout));
        assert!(
            line.contains(&format!(
                "arriving up to {:.2} ms after the others' median arrival",
                late[r]
            )),
            "{line}"
        );
    }
}

/// A straggler's items are parts of its lateness (audit s12 M4): rank 5
/// arrives 0.58 ms after the others' median (from the raw NCCL kernels, as
/// above) and its lead-in items, with the part older than its lead-ins,
/// add up to that, none larger (it read +0.73 ms launch, summed over its
/// collectives). Every straggler's listed items stay within its lateness.
#[test]
fn a_stragglers_items_are_parts_of_its_lateness() {
    let late = lateness();
    assert!((late[5] - 0.58).abs() < 0.005, "{}", late[5]);
    let job = json(&["summary", dlrm().to_str().unwrap()]);
    let text = run(&["profile", "summary", dlrm().to_str().unwrap()]).stdout;
    for s in job["stragglers"].as_array().unwrap() {
        let r = s["rank"].as_u64().unwrap() as usize;
        let items: Vec<f64> = s["why"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["excess_ms_per_step"].as_f64().unwrap())
            .collect();
        let rest = s["unexplained_ms"].as_f64().unwrap_or(0.0);
        assert!(items.iter().sum::<f64>() <= late[r] + 0.005, "rank {r}: {items:?} of {}", late[r]);
        if r == 5 {
            assert!(!items.is_empty());
            let whole = items.iter().sum::<f64>() + rest;
            assert!((whole - late[5]).abs() < 0.01, "rank 5: {items:?} + {rest} vs {}", late[5]);
        }
    }
    // The text's items under rank 5, each within its 0.58 ms.
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("  rank 5 makes the others wait"))
        .skip(1)
        .take_while(|l| l.starts_with("      +"))
        .collect();
    assert!(!lines.is_empty(), "{text}");
    for l in lines {
        let ms: f64 =
            l.trim_start().trim_start_matches('+').split(' ').next().unwrap().parse().unwrap();
        assert!(ms <= late[5], "{l}");
    }
}

#[test]
fn several_files_are_ranks_and_gaps_or_duplicates_are_said() {
    let files = rank_files();
    let args: Vec<&str> = ["profile", "summary"]
        .into_iter()
        .chain([&files[0], &files[2], &files[5]].map(|f| f.to_str().unwrap()))
        .collect();
    let r = run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("note: ranks 1, 3, 4, 6, 7 of 8 are missing"), "{}", r.stderr);
    assert!(r.stdout.starts_with("job      3 ranks of world size 8"), "{}", r.stdout);

    let f = files[3].to_str().unwrap();
    let r = run(&["profile", "summary", f, f]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not the ranks of one job (rank 3 twice"), "{}", r.stderr);
    assert!(r.stdout.is_empty());
}

fn read_gz(path: &Path) -> Value {
    let mut s = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    serde_json::from_str(&s).unwrap()
}

#[test]
fn without_collectives_a_rank_that_computes_longer_is_the_straggler_and_its_kernel_the_reason() {
    // Three ranks of the same real trace with its NCCL kernels taken out
    // (no collectives to say who waits for whom); rank 2's GEMMs each take
    // 1 ms more.
    let dir = tempfile::tempdir().unwrap();
    let before = tempfile::tempdir().unwrap();
    let mut base = read_gz(&rank_files()[0]);
    base["traceEvents"].as_array_mut().unwrap().retain(|e| {
        !(e["cat"] == "kernel" && e["name"].as_str().is_some_and(|n| n.starts_with("nccl")))
    });
    const SLOW: &str = "volta_sgemm_128x32_nt";
    let mut slowed = 0;
    for rank in 0..3u32 {
        let mut t = base.clone();
        t["distributedInfo"]["rank"] = rank.into();
        t["distributedInfo"]["world_size"] = 3.into();
        std::fs::write(before.path().join(format!("trace_rank{rank}.json")), t.to_string())
            .unwrap();
    }
    for rank in 0..3u32 {
        let mut t = base.clone();
        t["distributedInfo"]["rank"] = rank.into();
        t["distributedInfo"]["world_size"] = 3.into();
        if rank == 2 {
            for e in t["traceEvents"].as_array_mut().unwrap() {
                if e["cat"] == "kernel" && e["name"] == SLOW {
                    e["dur"] = (e["dur"].as_f64().unwrap() + 1000.0).into();
                    slowed += 1;
                }
            }
        }
        let mut f =
            std::fs::File::create(dir.path().join(format!("trace_rank{rank}.json"))).unwrap();
        f.write_all(t.to_string().as_bytes()).unwrap();
    }
    assert!(slowed >= 1);
    let job = json(&["summary", dir.path().to_str().unwrap()]);
    assert_eq!(job["straggler_rule"], "compute");
    assert!(
        job["notes"].to_string().contains("no collectives matched across the ranks"),
        "{:#}",
        job["notes"]
    );
    let s = job["stragglers"].as_array().unwrap();
    assert_eq!(s.len(), 1, "{job:#}");
    assert_eq!(s[0]["rank"], 2);
    assert_eq!(s[0]["wait_caused_ms_per_step"], Value::Null);
    let late = s[0]["compute_excess_ms"].as_f64().unwrap();
    // Lengthened kernels overlap the ones after them, so the GPU's busy time
    // (compute) grows by less than the kernel time added, but it grows.
    assert!(
        late > job["straggler_threshold_ms"].as_f64().unwrap() && late <= slowed as f64 + 1e-3,
        "late by at most the added {slowed} ms: {late}"
    );
    assert_eq!(s[0]["why"][0]["name"], SLOW);
    assert_eq!(s[0]["why"][0]["kind"], "kernel");
    assert!((s[0]["why"][0]["excess_ms_per_step"].as_f64().unwrap() - slowed as f64).abs() < 1e-3);
    assert!(
        (s[0]["phase"]["extra_ms"].as_f64().unwrap() - slowed as f64).abs() < 1e-3,
        "the phase's kernel time: {}",
        s[0]["phase"]
    );
    assert_eq!(job["critical_rank"], 2, "without collectives, the longest step");

    // Before → after: rank 2 is now the straggler and the GPUs are busier
    // (the CPU-side step ranges of the edited trace did not move).
    let c = json(&["compare", before.path().to_str().unwrap(), dir.path().to_str().unwrap()]);
    assert_eq!(c["stragglers"], serde_json::json!([[], [2]]));
    assert!(c["gpu_util"][1].as_f64().unwrap() > c["gpu_util"][0].as_f64().unwrap(), "{c:#}");
    assert_eq!(c["ranks"][0]["change_pct"], 0.0);
}

#[test]
fn compare_of_two_rank_sets_is_per_job_and_per_rank() {
    let a = dlrm();
    let dir = tempfile::tempdir().unwrap();
    // After: the same job with rank 5 missing.
    for f in rank_files()
        .iter()
        .filter(|f| !f.file_name().unwrap().to_string_lossy().starts_with("worker5_"))
    {
        std::fs::copy(f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    let c = json(&["compare", a.to_str().unwrap(), dir.path().to_str().unwrap()]);
    assert_eq!(c["step_ms"][0], c["step_ms"][1], "the slowest rank is still there");
    let ranks = c["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 8);
    assert_eq!(ranks[5]["after_ms"], Value::Null);
    assert_eq!(ranks[0]["change_pct"], 0.0);
    let r = run(&["profile", "compare", a.to_str().unwrap(), dir.path().to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("8 ranks before, 7 after"), "{}", r.stderr);
    assert!(r.stdout.starts_with("job step "), "{}", r.stdout);
}

/// Each rank's NCCL kernels as (collective, start µs, duration µs) in time
/// order, read whole with serde_json: an independent reading to check the
/// streaming one against.
fn nccl_kernels(path: &Path) -> Vec<(String, f64, f64)> {
    let t = common::read_json(path);
    let mut v: Vec<(String, f64, f64)> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "kernel" && e["name"].as_str().unwrap().starts_with("nccl"))
        .map(|e| {
            let name = e["name"].as_str().unwrap();
            // ncclKernel_AllReduce_RING_LL_Sum_float(…) → allreduce
            let kind = name.split('_').nth(1).unwrap().to_lowercase();
            (kind, e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap())
        })
        .collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1));
    v
}

#[test]
fn collectives_match_across_the_eight_dlrm_ranks_with_skew_and_waits() {
    let c = json(&["collectives", dlrm().to_str().unwrap()]);
    let truth: Vec<Vec<(String, f64, f64)>> =
        rank_files().iter().map(|f| nccl_kernels(f)).collect();
    // The same count of each collective on every rank: 5 send/recv
    // (all-to-all) and 3 all-reduces.
    for t in &truth {
        let count = |k: &str| t.iter().filter(|c| c.0 == k).count();
        assert_eq!((count("sendrecv"), count("allreduce"), t.len()), (5, 3, 8));
    }
    assert_eq!(c["groups"].as_array().unwrap().len(), 1, "one NCCL stream: {:#}", c["groups"]);
    assert_eq!(c["groups"][0]["counts"], serde_json::json!([["sendrecv", 5], ["allreduce", 3]]));
    let matched = c["collectives"].as_array().unwrap();
    assert_eq!(matched.len(), 8);
    let mut total_wait = [0.0f64; 8];
    for (i, m) in matched.iter().enumerate() {
        assert_eq!(m["collective"], truth[0][i].0.as_str());
        assert_eq!(m["ranks"].as_array().unwrap().len(), 8, "every rank in collective {i}");
        let starts: Vec<f64> = truth.iter().map(|t| t[i].1).collect();
        let (first, last) = (
            starts.iter().cloned().fold(f64::MAX, f64::min),
            starts.iter().cloned().fold(f64::MIN, f64::max),
        );
        let last_rank = starts.iter().position(|s| *s == last).unwrap();
        assert!(
            (m["skew_us"].as_f64().unwrap() - (last - first)).abs() < 1e-3,
            "collective {i}: {m}"
        );
        assert_eq!(m["last_rank"], last_rank);
        assert!((m["duration_us"].as_f64().unwrap() - truth[last_rank][i].2).abs() < 1e-3);
        let mut waited = 0.0;
        for (r, at) in m["ranks"].as_array().unwrap().iter().enumerate() {
            assert_eq!(at["rank"], r);
            let wait = last - starts[r];
            assert!(
                (at["wait_us"].as_f64().unwrap() - wait).abs() < 1e-3,
                "rank {r}, collective {i}"
            );
            assert!((at["dur_us"].as_f64().unwrap() - truth[r][i].2).abs() < 1e-3);
            total_wait[r] += wait;
            waited += wait;
        }
        assert!(
            (m["wait_us"].as_f64().unwrap() - waited).abs() < 1e-2,
            "the ranks' waits summed, collective {i}: {m}"
        );
        // No message sizes in these 2023 traces: no bandwidth to claim.
        assert!(m.get("bytes").is_none() && m.get("busbw_gbps").is_none());
    }
    for (r, row) in c["per_rank"].as_array().unwrap().iter().enumerate() {
        assert!((row["wait_ms"].as_f64().unwrap() - total_wait[r] / 1e3).abs() < 1e-3, "rank {r}");
    }
    // Rank 7 arrives last at five of the eight: the others wait for it.
    assert_eq!(c["per_rank"][7]["last_arrivals"], 5);
    assert!(c.get("notes").is_none(), "{:#}", c["notes"]);

    let text = run(&["profile", "collectives", dlrm().to_str().unwrap(), "--top", "3"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.starts_with(
            "8 collectives on 8 ranks of world size 8\n  group stream 84: 5 sendrecv, 3 allreduce"
        ),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("collectives (largest skew first; 3 of 8):"), "{}", text.stdout);
}

#[test]
fn one_rank_lists_its_collectives_with_sizes_and_bus_bandwidth() {
    let file = common::shared().join("traces/hta_nccl_a100_2024/nccl_data.json.gz");
    let c = json(&["collectives", file.to_str().unwrap()]);
    let t = common::read_json(&file);
    let mut kernels: Vec<&Value> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "kernel" && e["args"]["Collective name"].is_string())
        .collect();
    kernels.sort_by(|a, b| a["ts"].as_f64().unwrap().total_cmp(&b["ts"].as_f64().unwrap()));
    let matched = c["collectives"].as_array().unwrap();
    assert_eq!(matched.len(), kernels.len());
    assert_eq!(c["groups"][0]["group"], "0", "the process group's name");
    for (m, k) in matched.iter().zip(&kernels) {
        let a = &k["args"];
        assert_eq!(m["collective"], a["Collective name"]);
        let size = match a["dtype"].as_str().unwrap() {
            "Float" => 4,
            "Long" => 8,
            d => panic!("dtype {d}"),
        };
        let bytes =
            a["In msg nelems"].as_u64().unwrap().max(a["Out msg nelems"].as_u64().unwrap()) * size;
        assert_eq!(m["bytes"].as_u64().unwrap(), bytes);
        let dur = k["dur"].as_f64().unwrap();
        assert!((m["duration_us"].as_f64().unwrap() - dur).abs() < 1e-3);
        // Two ranks: allreduce's factor 2(n−1)/n and broadcast's are both 1.
        let algbw = bytes as f64 / (dur * 1e3);
        assert!((m["algbw_gbps"].as_f64().unwrap() - algbw).abs() < 1e-3, "{m}");
        assert!((m["busbw_gbps"].as_f64().unwrap() - algbw).abs() < 1e-3, "{m}");
        assert_eq!(m["skew_us"], Value::Null, "skew needs every rank");
    }
    let r = run(&["profile", "collectives", file.to_str().unwrap()]);
    assert_eq!(r.code, 0);
    assert!(r.stderr.contains("skew and waits need the traces of all ranks"), "{}", r.stderr);
}

#[test]
fn kernels_over_a_rank_set_are_job_wide_rows_with_their_spread() {
    let k = json(&["kernels", dlrm().to_str().unwrap(), "--category", "communication"]);
    let per_rank: Vec<Value> = rank_files()
        .iter()
        .map(|f| {
            json(&["kernels", f.to_str().unwrap(), "--category", "communication", "--top", "100"])
        })
        .collect();
    let rows = k["kernels"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let ms: Vec<f64> = per_rank
            .iter()
            .map(|p| {
                p["kernels"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["raw_name"] == row["raw_name"])
                    .map_or(0.0, |r| r["ms_per_step"].as_f64().unwrap())
            })
            .collect();
        let mean = ms.iter().sum::<f64>() / 8.0;
        let max = ms.iter().cloned().fold(0.0, f64::max);
        assert!((row["ms_per_step"].as_f64().unwrap() - mean).abs() < 1e-3, "{row}");
        assert_eq!(row["max_ms_per_step"].as_f64().unwrap(), max);
        assert_eq!(
            row["max_rank"].as_u64().unwrap() as usize,
            ms.iter().position(|v| *v == max).unwrap()
        );
        assert_eq!(row["on_ranks"], 8);
        assert_eq!(row["category"], "communication");
    }
    let r = run(&["profile", "kernels", dlrm().to_str().unwrap(), "--category", "nope"]);
    assert_eq!(r.code, 2, "an unknown category is a usage error over a rank set too");
}

#[test]
fn rank_selection_and_bad_sets() {
    let dir = dlrm();
    let d = dir.to_str().unwrap();
    // --ranks: only those, and no gap noted for the ranks left out on purpose.
    let r = run(&["profile", "summary", d, "--ranks", "0-2,7", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        j["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["rank"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![0, 1, 2, 7]
    );
    assert!(!r.stderr.contains("missing"), "{}", r.stderr);
    let c = json(&["collectives", d, "--ranks", "3-4"]);
    assert_eq!(c["ranks"], serde_json::json!([3, 4]));
    for (args, code, says) in [
        (vec!["--ranks", "9"], 2, "selects none"),
        (vec!["--ranks", "3-1"], 2, "expected ranks and ranges"),
    ] {
        let mut all = vec!["profile", "summary", d];
        all.extend(args);
        let r = run(&all);
        assert_eq!(r.code, code, "{all:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{all:?}: {}", r.stderr);
    }

    // Ranks of two different jobs: world sizes 8 and 2.
    let other = common::shared().join("traces/hta_nccl_a100_2024/nccl_data.json.gz");
    let r =
        run(&["profile", "summary", rank_files()[3].to_str().unwrap(), other.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not the ranks of one job"), "{}", r.stderr);
    assert!(
        r.stderr.contains("of a world of 2") && r.stderr.contains("of a world of 8"),
        "{}",
        r.stderr
    );

    // One corrupt rank among eight: a warning naming it, the job of the
    // other seven (exit 0); with --strict, exit 1.
    let tmp = tempfile::tempdir().unwrap();
    for f in rank_files() {
        std::fs::copy(&f, tmp.path().join(f.file_name().unwrap())).unwrap();
    }
    let bad = tmp.path().join(rank_files()[5].file_name().unwrap());
    let bytes = std::fs::read(&bad).unwrap();
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    let t = tmp.path().to_str().unwrap();
    for cmd in ["summary", "collectives"] {
        let r = run(&["profile", cmd, t, "--json"]);
        assert_eq!(r.code, 0, "{cmd}: {}", r.stderr);
        assert!(
            r.stderr.contains("warning: rank left out") && r.stderr.contains("worker5_"),
            "{cmd}: {}",
            r.stderr
        );
        assert!(r.stderr.contains("ranks 5 of 8 are missing"), "{cmd}: {}", r.stderr);
        let j: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(j["ranks"].as_array().unwrap().len(), 7, "{cmd}");
        let r = run(&["profile", cmd, t, "--strict"]);
        assert_eq!(r.code, 1, "{cmd} --strict: {}", r.stderr);
        assert!(r.stderr.contains("worker5_"), "{}", r.stderr);
    }

    // A folder with no traces: a usage error.
    let empty = tempfile::tempdir().unwrap();
    for cmd in ["summary", "collectives", "kernels"] {
        let r = run(&["profile", cmd, empty.path().to_str().unwrap()]);
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
    }
}

#[test]
fn per_rank_profiles_reduce_to_the_same_job_as_the_traces() {
    // The cluster-scale shape: each rank writes its own small profile where
    // its trace is, and one reduce reads the folder of profiles.
    let out = tempfile::tempdir().unwrap();
    for (r, f) in rank_files().iter().enumerate() {
        let p = out.path().join(format!("rank{r}.json"));
        let res = run(&[
            "profile",
            "summary",
            f.to_str().unwrap(),
            "--write-profile",
            p.to_str().unwrap(),
        ]);
        assert_eq!(res.code, 0, "{}", res.stderr);
        // About half the trace it summarises at most: the rows of kernels
        // and ops, per phase too (each of the loop's phases, optimizer and
        // dataload included, with its own op table: 0.50 of the trace on
        // rank 5), with their roofline figures (§13), and the call tree
        // (§17), whose size follows the code's structure, not the trace's
        // length (this trace is 12 steps).
        let size = std::fs::metadata(&p).unwrap().len();
        let mut raw = 0u64;
        let mut gz = flate2::read::GzDecoder::new(std::fs::File::open(f).unwrap());
        raw += std::io::copy(&mut gz, &mut std::io::sink()).unwrap();
        assert!(size * 100 < raw * 55, "a profile is small: {size} bytes for a {raw}-byte trace");
    }
    let d = dlrm();
    let o = out.path().to_str().unwrap();
    // The same job, bar the path through the ranks, which needs the
    // ranks' step models (their traces).
    let mut from_traces = json(&["summary", d.to_str().unwrap()]);
    let through = from_traces["path"].as_object_mut().unwrap().remove("through");
    assert!(through.is_some_and(|t| !t.as_array().unwrap().is_empty()));
    assert_eq!(json(&["summary", o]), from_traces);
    assert_eq!(json(&["collectives", o]), json(&["collectives", d.to_str().unwrap()]));
    assert_eq!(
        json(&["kernels", o, "--category", "communication"]),
        json(&["kernels", d.to_str().unwrap(), "--category", "communication"])
    );
    let r = run(&["profile", "summary", d.to_str().unwrap(), "--write-profile", "x.json"]);
    assert_eq!(r.code, 2, "one input's profile only: {}", r.stderr);
}

#[test]
fn parquet_tables_or_a_clear_refusal() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().join("tables");
    let r =
        run(&["profile", "summary", dlrm().to_str().unwrap(), "--parquet", o.to_str().unwrap()]);
    // The values are checked by the core's read-back test (src/tables.rs);
    // here, that the command writes both files, or says how to get them.
    if cfg!(feature = "parquet") {
        assert_eq!(r.code, 0, "{}", r.stderr);
        for f in ["ranks.parquet", "collectives.parquet"] {
            let bytes = std::fs::read(o.join(f)).unwrap();
            assert!(
                bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"),
                "{f} is a Parquet file"
            );
        }
    } else {
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("build with `--features parquet`"), "{}", r.stderr);
    }
    let one = common::shared().join("traces/hta_nccl_a100_2024/nccl_data.json.gz");
    let r = run(&["profile", "summary", one.to_str().unwrap(), "--parquet", o.to_str().unwrap()]);
    assert_eq!(r.code, 2, "a rank set's tables: {}", r.stderr);

    // One rank's own tables, Hive-partitioned by its distributedInfo.rank
    // (their values: the core's read-back test, src/tables.rs).
    let parts = out.path().join("parts");
    let r = run(&[
        "profile",
        "summary",
        one.to_str().unwrap(),
        "--write-parquet",
        parts.to_str().unwrap(),
    ]);
    if cfg!(feature = "parquet") {
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("step"), "the summary is printed as ever: {}", r.stdout);
        for table in ["summary", "kernels", "ops", "phases", "collectives", "idle"] {
            let bytes = std::fs::read(parts.join(table).join("rank=0/part.parquet")).unwrap();
            assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"), "{table}");
        }
    } else {
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("build with `--features parquet`"), "{}", r.stderr);
        assert!(!parts.exists());
    }
}
