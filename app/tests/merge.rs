//! `profile merge`: the 8 rank traces of one DLRM job
//! (tests/fixtures/traces/param_dlrm_v100_8rank) merged into one Chrome
//! trace, read back with our own reader: every rank's events are there, in
//! its own process, shifted by its offset, and the collective the clocks
//! were aligned on ends at the same time on every rank.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{json, run};
use libreyolo_core::analysis::kernels::category;
use libreyolo_core::profile::Category;
use libreyolo_core::trace::event::Id;
use libreyolo_core::trace::{self, Event, EventSink};
use serde_json::Value;

fn dlrm() -> PathBuf {
    common::shared().join("traces/param_dlrm_v100_8rank")
}

/// What the tests compare of a trace, per pid (of the merged trace) or of
/// the whole file (a rank's own trace).
#[derive(Default, Debug)]
struct Seen {
    /// Events the reader parsed.
    events: u64,
    /// Metadata events of processes (replaced by the rank's own on merging).
    process_meta: u64,
    /// Complete events' start and duration (µs), in file order.
    complete: Vec<(f64, f64)>,
    /// Communication kernels' (start, duration), in file order.
    comm: Vec<(f64, f64)>,
}

#[derive(Default)]
struct ByPid(BTreeMap<i64, Seen>, bool);

impl EventSink for ByPid {
    fn event(&mut self, ev: &Event<'_>) {
        // A rank's own trace: all in one; the merged one: by pid.
        let pid = if self.1 {
            ev.pid.as_ref().and_then(Id::as_int).expect("every merged event has an integer pid")
        } else {
            0
        };
        let s = self.0.entry(pid).or_default();
        s.events += 1;
        if ev.ph() == "M" && ev.name().starts_with("process_") {
            s.process_meta += 1;
        }
        if let (Some(ts), Some(dur)) = (ev.ts.get(), ev.dur.get())
            && ev.ph() == "X"
        {
            s.complete.push((ts, dur));
            if matches!(ev.cat(), "kernel" | "Kernel")
                && category(ev.name()) == Category::Communication
            {
                s.comm.push((ts, dur));
            }
        }
    }
    fn malformed(&mut self) {}
}

fn read(path: &Path, by_pid: bool) -> BTreeMap<i64, Seen> {
    let mut sink = ByPid(BTreeMap::new(), by_pid);
    trace::read(path, &mut sink, &Default::default()).unwrap();
    sink.0
}

fn merge(dir: &Path, out: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["merge", dir.to_str().unwrap(), "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    json(&args)
}

#[test]
fn a_job_merges_into_one_trace_with_a_process_per_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("job.json.gz");
    let report = merge(&dlrm(), &out, &[]);
    assert!(
        std::fs::read(&out).unwrap().starts_with(&[0x1f, 0x8b]),
        "gzipped: the name ends in .gz"
    );
    let on = &report["aligned_on"];
    // The old NCCL of these traces runs the all-to-alls as sendrecv kernels on stream 84.
    assert_eq!(
        (on["group"].as_str(), on["collective"].as_str()),
        (Some("stream 84"), Some("sendrecv")),
        "{report}"
    );

    let merged = read(&out, true);
    assert_eq!(
        merged.keys().copied().collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>(),
        "one process per rank, pid = rank"
    );
    let rows = report["ranks"].as_array().unwrap();
    let mut ends = Vec::new();
    let mut total = 0;
    for row in rows {
        let rank = row["rank"].as_i64().unwrap();
        let file = PathBuf::from(row["file"].as_str().unwrap());
        assert!(file.file_name().unwrap().to_string_lossy().starts_with(&format!("worker{rank}_")));
        let own = read(&file, false).remove(&0).unwrap();
        let m = &merged[&rank];
        // Every event of the rank, its processes' metadata replaced by the
        // rank's three (name, sort index, labels).
        assert_eq!(m.events, own.events - own.process_meta + 3, "rank {rank}");
        assert_eq!(m.events, row["events"].as_u64().unwrap());
        assert_eq!(own.process_meta, row["metadata_replaced"].as_u64().unwrap());
        assert_eq!(m.process_meta, 3);
        total += m.events;
        // The same complete events in the same order, each shifted by the
        // rank's offset (to f64's resolution at epoch microseconds).
        let off = row["offset_us"].as_f64().unwrap();
        assert_eq!(m.complete.len(), own.complete.len(), "rank {rank}");
        for (a, b) in m.complete.iter().zip(&own.complete) {
            assert!((a.0 - (b.0 + off)).abs() <= 0.25, "rank {rank}: {} vs {} + {off}", a.0, b.0);
            assert_eq!(a.1, b.1);
        }
        // The collective aligned on: the seq-th of the rank's (one group).
        let seq = on["seq"].as_u64().unwrap() as usize;
        let (ts, dur) = m.comm[seq];
        let (own_ts, own_dur) = own.comm[seq];
        ends.push((rank, ts + dur, own_ts + own_dur));
        assert_eq!(dur, own_dur);
    }
    assert_eq!(total, report["events"].as_u64().unwrap());
    let (_, ref_end, ref_own) = ends[0];
    for (rank, end, own_end) in &ends {
        assert!(
            (end - ref_end).abs() <= 0.25,
            "rank {rank}: the aligned collective ends at {end}, rank 0's at {ref_end}"
        );
        let off = rows[*rank as usize]["offset_us"].as_f64().unwrap();
        assert!(
            (off - (ref_own - own_end)).abs() < 1e-6,
            "rank {rank}: offset {off} = rank 0's end − its own"
        );
    }
    assert!(
        ends.iter().any(|(_, _, own)| (own - ref_own).abs() > 0.5),
        "the recorded ends differ: something was aligned"
    );

    // The processes are named by rank; the threads keep their names.
    let doc = common::read_json(&out);
    let events = doc["traceEvents"].as_array().unwrap();
    for rank in 0..8 {
        let names: Vec<&Value> = events
            .iter()
            .filter(|e| e["pid"] == rank && e["name"] == "process_name")
            .map(|e| &e["args"]["name"])
            .collect();
        assert_eq!(names, [&Value::from(format!("rank {rank}"))]);
    }
    let threads =
        |v: &Value| v.as_array().unwrap().iter().filter(|e| e["name"] == "thread_name").count();
    let own_threads: usize = rows
        .iter()
        .map(|r| threads(&common::read_json(Path::new(r["file"].as_str().unwrap()))["traceEvents"]))
        .sum();
    assert_eq!(threads(&doc["traceEvents"]), own_threads);
    // Flows stay within their rank: every id is unique to one.
    let mut flows: BTreeMap<String, i64> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "s") {
        let prev = flows.insert(e["id"].to_string(), e["pid"].as_i64().unwrap());
        assert!(prev.is_none(), "flow id {} started twice", e["id"]);
    }
    assert!(flows.len() > 8 * 100, "{} flows", flows.len());
}

#[test]
fn merge_writes_plain_json_keeps_clocks_on_request_and_says_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("job.json");
    let report = merge(&dlrm(), &plain, &["--no-align"]);
    assert_eq!(report["aligned_on"], Value::Null);
    assert!(std::fs::read(&plain).unwrap().starts_with(b"{"), "not gzipped");
    assert!(
        report["ranks"].as_array().unwrap().iter().all(|r| r["offset_us"] == 0.0),
        "one clock, as recorded (no base times)"
    );
    let merged = read(&plain, true);
    let own = read(&dlrm().join("worker3_step_12.1694128201557.pt.trace.json.gz"), false)
        .remove(&0)
        .unwrap();
    assert_eq!(merged[&3].complete, own.complete, "timestamps byte for byte");

    // One rank (of 2) whose timestamps are relative to its base time: kept,
    // and the merged trace says the base.
    let nccl = common::shared().join("traces/hta_nccl_a100_2024/nccl_data.json.gz");
    let one = tmp.path().join("one.json");
    let report = merge(&nccl, &one, &[]);
    assert_eq!(
        (report["ranks"].as_array().unwrap().len(), &report["aligned_on"]),
        (1, &Value::Null)
    );
    assert_eq!(
        common::read_json(&one)["baseTimeNanoseconds"].as_u64(),
        Some(1_711_964_646_000_000_000)
    );
    let own = read(&nccl, false).remove(&0).unwrap();
    assert_eq!(read(&one, true)[&0].complete, own.complete);

    // A selection of ranks; the text report.
    let some = tmp.path().join("some.json.gz");
    let r = run(&[
        "profile",
        "merge",
        dlrm().to_str().unwrap(),
        "-o",
        some.to_str().unwrap(),
        "--ranks",
        "2,5",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("2 ranks") && r.stdout.contains("clocks aligned on sendrecv #0"),
        "{}",
        r.stdout
    );
    assert_eq!(read(&some, true).keys().copied().collect::<Vec<_>>(), [2, 5]);

    // The output inside the folder merged is not read as a rank next time.
    let ranks = tmp.path().join("ranks");
    std::fs::create_dir(&ranks).unwrap();
    for f in std::fs::read_dir(dlrm()).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, ranks.join(f.file_name().unwrap())).unwrap();
    }
    let inside = ranks.join("job.json.gz");
    for _ in 0..2 {
        let r = run(&["profile", "merge", ranks.to_str().unwrap(), "-o", inside.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    assert_eq!(read(&inside, true).len(), 8);

    // Usage errors (exit 2) before anything is read; profiles are not traces.
    for (args, says) in [
        (
            vec!["merge", dlrm().to_str().unwrap(), "-o", tmp.path().to_str().unwrap()],
            "is a directory",
        ),
        (vec!["merge", "/no/such/dir", "-o", "x.json"], "not found"),
        (vec!["merge", "-", "-o", "x.json"], "not standard input"),
        (vec!["merge", dlrm().to_str().unwrap()], "--output"),
    ] {
        let r = run(&[&["profile"][..], &args[..]].concat());
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
    let profiles = tmp.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    for k in [0, 1] {
        let f = std::fs::read_dir(dlrm())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains(&format!("worker{k}_")))
            .unwrap();
        let p = profiles.join(format!("rank{k}.json"));
        assert_eq!(
            run(&[
                "profile",
                "summary",
                f.to_str().unwrap(),
                "--write-profile",
                p.to_str().unwrap()
            ])
            .code,
            0
        );
    }
    let r = run(&[
        "profile",
        "merge",
        profiles.to_str().unwrap(),
        "-o",
        tmp.path().join("p.json").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("merge needs the rank traces"), "{}", r.stderr);
    assert!(!tmp.path().join("p.json").exists(), "nothing written");

    // Two unrelated traces: the readers' rule (exit 2, naming them), as
    // `summary DIR` says it, not a failure after reading them.
    let unrelated = tmp.path().join("unrelated");
    std::fs::create_dir(&unrelated).unwrap();
    for (dir, file) in [
        ("hta_trace_diff_a100_2022", "control.json.gz"),
        ("tracelens_h100_qwen_inference", "gaunernst_bert-small-uncased__1016001.json.gz"),
    ] {
        let from = common::fixtures().join("traces").join(dir).join(file);
        std::fs::copy(from, unrelated.join(file)).unwrap();
    }
    let out = tmp.path().join("u.json");
    let r = run(&["profile", "merge", unrelated.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("are not the ranks of one job"), "{}", r.stderr);
    let s = run(&["profile", "summary", unrelated.to_str().unwrap()]);
    assert_eq!(s.code, 2, "{}", s.stderr);
    assert!(!out.exists(), "nothing written");
}

/// The merged job read as one trace: every rank numbers its correlations
/// from 1, so merging makes them unique to the rank; each device's idle
/// time then fits in the step (before, a kernel paired with another
/// rank's launch gave device 1 an idle time of 108 ms in a 20.8 ms step).
/// A merged file whose ids still collide (as older merges wrote them) is
/// read the same: a launch that began after the work is not its launch.
#[test]
fn a_merged_job_s_idle_time_fits_in_its_step() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("job.json");
    merge(&dlrm(), &out, &[]);
    let text = std::fs::read_to_string(&out).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    // Correlations unique to a (pid) rank, and kernels still paired.
    let mut seen: BTreeMap<i64, i64> = BTreeMap::new();
    for e in v["traceEvents"].as_array().unwrap() {
        if e["cat"] == "cuda_runtime" {
            if let Some(c) = e["args"]["correlation"].as_i64() {
                let pid = e["pid"].as_i64().unwrap();
                assert_eq!(*seen.entry(c).or_insert(pid), pid, "correlation {c} on two ranks");
            }
        }
    }
    let check = |path: &Path| -> Value {
        let s = json(&["summary", path.to_str().unwrap()]);
        let step = s["step_ms"].as_f64().unwrap();
        let idle = &s["idle"];
        assert!(idle["ms_per_step"].as_f64().unwrap() <= step, "{idle}");
        for d in idle["devices"].as_array().unwrap() {
            assert!(d["ms_per_step"].as_f64().unwrap() <= step, "{d}");
        }
        // The causes are the idle time, split.
        let causes: f64 = idle["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["ms_per_step"].as_f64().unwrap())
            .sum();
        assert!((causes - idle["ms_per_step"].as_f64().unwrap()).abs() < 0.01, "{idle}");
        s
    };
    let s = check(&out);
    let warned = |s: &Value| s["warnings"].to_string().contains("share their correlation id");
    assert!(!warned(&s), "{}", s["warnings"]);
    // The ids as every rank wrote them: rank × stride + rank undone.
    let stride = 10;
    let collided = text
        .split("\"correlation\": ")
        .enumerate()
        .map(|(k, part)| {
            if k == 0 {
                return part.to_string();
            }
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            match digits.parse::<i64>() {
                Ok(id) => format!("\"correlation\": {}{}", id / stride, &part[digits.len()..]),
                Err(_) => format!("\"correlation\": {part}"),
            }
        })
        .collect::<String>();
    let old = dir.path().join("old.json");
    std::fs::write(&old, collided).unwrap();
    let s = check(&old);
    assert!(warned(&s), "{}", s["warnings"]);
}
