//! `summary --write-parquet` end to end, as a cluster's launcher runs it:
//! the command line's tables read back against its `--json` readers.

use std::path::PathBuf;

use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::input::json_files_in;
use crate::tables::tests::column;

/// `libreyolo profile ARGS…` as the binary runs it: its stdout.
fn cli(args: &[&str]) -> crate::error::Result<String> {
    let all: Vec<std::ffi::OsString> =
        ["libreyolo", "profile"].iter().chain(args).map(std::ffi::OsString::from).collect();
    match super::parse(&all)? {
        Some(super::Parsed {
            command: super::Command::Profile(super::ProfileCommand::Reader(r)),
            read,
        }) => super::run_reader(&r, &read),
        other => panic!("{args:?} is no reader: {other:?}"),
    }
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = cli(&[args, &["--json"]].concat()).unwrap();
    serde_json::from_str(&out).unwrap()
}

/// A part's rows as one batch (an empty one keeps the file's columns).
fn rows(path: &std::path::Path) -> (RecordBatch, usize) {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let builder = ParquetRecordBatchReaderBuilder::try_new(f).unwrap().with_batch_size(1 << 20);
    let schema = builder.schema().clone();
    let mut batches: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
    assert!(batches.len() <= 1, "one batch");
    let b = batches.pop().unwrap_or_else(|| RecordBatch::new_empty(schema));
    let n = b.num_rows();
    (b, n)
}

fn sum(b: &RecordBatch, name: &str) -> f64 {
    column::<Float64Array>(b, name).iter().map(|v| v.unwrap_or(0.0)).sum()
}

fn json_sum(rows: &serde_json::Value, name: &str) -> f64 {
    rows.as_array().unwrap().iter().map(|r| r[name].as_f64().unwrap_or(0.0)).sum()
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{what}: {a} vs {b}");
}

/// Each rank's `summary TRACE --write-parquet DIR`, as a cluster's
/// launcher runs it, read back partition by partition: every table sums
/// to what that rank's `--json` readers print.
#[test]
fn each_rank_writes_its_partition_of_every_table_and_it_sums_to_its_json() {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/traces/param_dlrm_v100_8rank"
    ));
    let files = json_files_in(&dir).unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    for f in &files {
        cli(&["summary", f.to_str().unwrap(), "--write-parquet", o]).unwrap();
    }
    for table in crate::tables::RANK_TABLES {
        let mut parts: Vec<String> = std::fs::read_dir(out.path().join(table))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        parts.sort();
        assert_eq!(parts, (0..8).map(|r| format!("rank={r}")).collect::<Vec<_>>(), "{table}");
    }
    let job = json(&["summary", dir.to_str().unwrap()]);
    let mut collectives_seen = 0;
    for f in &files {
        let t = f.to_str().unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let rank: usize = name["worker".len()..name.find('_').unwrap()].parse().unwrap();
        let part =
            |table: &str| out.path().join(table).join(format!("rank={rank}")).join("part.parquet");

        let s = json(&["summary", t]);
        let (b, n) = rows(&part("summary"));
        assert_eq!(n, 1);
        for key in [
            "step_ms",
            "gpu_util",
            "gpu_busy_ms_per_step",
            "kernels_per_step",
            "launches_per_step",
            "host_overhead_ms_per_step",
        ] {
            assert_eq!(
                column::<Float64Array>(&b, key).value(0),
                s[key].as_f64().unwrap(),
                "rank {rank} {key}"
            );
        }
        assert_eq!(
            column::<Int64Array>(&b, "steps").value(0),
            s["window"]["real_steps"].as_i64().unwrap()
        );
        assert_eq!(column::<StringArray>(&b, "bound").value(0), s["bound"].as_str().unwrap());
        let row = &job["ranks"][rank];
        for key in ["compute_ms", "comm_ms", "exposed_comm_ms", "idle_ms"] {
            assert_eq!(
                column::<Float64Array>(&b, key).value(0),
                row[key].as_f64().unwrap(),
                "rank {rank} {key}: as the job view"
            );
        }
        assert_eq!(column::<Int64Array>(&b, "world_size").value(0), 8);

        let k = json(&["kernels", t, "--top", "1000000"]);
        let (b, n) = rows(&part("kernels"));
        assert_eq!(n, k["kernels"].as_array().unwrap().len());
        assert_eq!(n as u64, k["total"].as_u64().unwrap(), "every kernel");
        close(sum(&b, "ms_per_step"), json_sum(&k["kernels"], "ms_per_step"), "kernels ms");
        close(
            sum(&b, "count_per_step"),
            json_sum(&k["kernels"], "count_per_step"),
            "kernels count",
        );
        close(sum(&b, "pct_of_gpu"), json_sum(&k["kernels"], "pct_of_gpu"), "kernels pct");
        let comm: f64 = (0..n)
            .filter(|&i| column::<StringArray>(&b, "category").value(i) == "communication")
            .map(|i| column::<Float64Array>(&b, "ms_per_step").value(i))
            .sum();
        assert!(
            (comm - s["comm_ms_per_step"].as_f64().unwrap()).abs() < 1e-3 * 8.0,
            "rank {rank}: communication kernels {comm} ms per step"
        );

        let ops = json(&["ops", t, "--top", "1000000"]);
        let (b, n) = rows(&part("ops"));
        assert_eq!(n, ops["ops"].as_array().unwrap().len());
        assert_eq!(n as u64, ops["total"].as_u64().unwrap());
        close(sum(&b, "ms_per_step"), json_sum(&ops["ops"], "ms_per_step"), "ops ms");
        close(sum(&b, "count_per_step"), json_sum(&ops["ops"], "count_per_step"), "ops count");

        let ph = json(&["phases", t]);
        let (b, n) = rows(&part("phases"));
        assert_eq!(n, ph["phases"].as_array().unwrap().len());
        assert!(n >= 2, "rank {rank}: {n} phases");
        close(
            sum(&b, "gpu_ms_per_step"),
            json_sum(&ph["phases"], "gpu_ms_per_step"),
            "phases gpu ms",
        );
        close(
            sum(&b, "kernels_per_step"),
            json_sum(&ph["phases"], "kernels_per_step"),
            "phases kernels",
        );

        let c = json(&["collectives", t]);
        let (b, n) = rows(&part("collectives"));
        assert_eq!(n, c["collectives"].as_array().unwrap().len());
        assert!(n > 0);
        collectives_seen += n;
        close(sum(&b, "duration_us"), json_sum(&c["collectives"], "duration_us"), "collectives µs");
        assert_eq!(
            (0..n).map(|i| column::<Int64Array>(&b, "seq").value(i)).collect::<Vec<_>>(),
            c["collectives"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["seq"].as_i64().unwrap())
                .collect::<Vec<_>>()
        );

        let idle = &s["idle"];
        let (b, n) = rows(&part("idle"));
        let busiest = column::<arrow_array::BooleanArray>(&b, "busiest");
        let on_busiest: Vec<usize> = (0..n).filter(|&i| busiest.value(i)).collect();
        assert_eq!(on_busiest.len(), idle["causes"].as_array().unwrap().len());
        let ms: f64 =
            on_busiest.iter().map(|&i| column::<Float64Array>(&b, "ms_per_step").value(i)).sum();
        close(ms, json_sum(&idle["causes"], "ms_per_step"), "idle by cause");
        assert!(
            (ms - idle["ms_per_step"].as_f64().unwrap()).abs() <= 1e-3 * on_busiest.len() as f64,
            "rank {rank}: causes sum to the account"
        );
    }
    assert_eq!(collectives_seen, 64, "8 allreduces on each of 8 ranks");

    // The rank set in one process writes the same parts, byte for byte.
    let whole = tempfile::tempdir().unwrap();
    cli(&["summary", dir.to_str().unwrap(), "--write-parquet", whole.path().to_str().unwrap()])
        .unwrap();
    for table in crate::tables::RANK_TABLES {
        for rank in 0..8 {
            let p = std::path::Path::new(table).join(format!("rank={rank}/part.parquet"));
            assert!(
                std::fs::read(out.path().join(&p)).unwrap()
                    == std::fs::read(whole.path().join(&p)).unwrap(),
                "{}",
                p.display()
            );
        }
    }
}

#[test]
fn the_rank_of_a_part_is_given_recorded_named_or_zero() {
    let fixture = |p: &str| {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/traces")).join(p)
    };
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let parts = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(out.path().join("kernels"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // distributedInfo: rank 3 of 8.
    let hta = fixture("hta_trace_diff_a100_2022/control.json.gz");
    cli(&["summary", hta.to_str().unwrap(), "--write-parquet", o]).unwrap();
    assert_eq!(parts(), ["rank=3"]);
    cli(&["summary", hta.to_str().unwrap(), "--write-parquet", o, "--rank", "12"]).unwrap();
    assert_eq!(parts(), ["rank=12", "rank=3"]);
    // No rank anywhere: 0.
    let qwen = fixture("tracelens_h100_qwen_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    cli(&["summary", qwen.to_str().unwrap(), "--write-parquet", o]).unwrap();
    assert_eq!(parts(), ["rank=0", "rank=12", "rank=3"]);
    // No collectives: the table is there, empty, with its columns.
    let (b, n) = rows(&out.path().join("collectives/rank=0/part.parquet"));
    assert_eq!((n, b.num_columns()), (0, 12));
    let usage = |args: &[&str]| cli(args).unwrap_err().exit_code();
    assert_eq!(
        usage(&["summary", qwen.to_str().unwrap(), "--rank", "2"]),
        2,
        "--rank without --write-parquet"
    );
    // Of a rank set, --rank is the rank read alone: its parts only, the
    // bytes its trace alone writes.
    let dlrm = fixture("param_dlrm_v100_8rank");
    let (alone, of_set) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let rank2 = json_files_in(&dlrm).unwrap().remove(2);
    cli(&["summary", rank2.to_str().unwrap(), "--write-parquet", alone.path().to_str().unwrap()])
        .unwrap();
    let set_out = of_set.path().to_str().unwrap();
    cli(&["summary", dlrm.to_str().unwrap(), "--write-parquet", set_out, "--rank", "2"]).unwrap();
    let written: Vec<_> = std::fs::read_dir(of_set.path().join("kernels"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written, ["rank=2"]);
    for table in ["summary", "kernels", "ops", "phases", "collectives", "idle"] {
        let p = std::path::Path::new(table).join("rank=2/part.parquet");
        assert!(
            std::fs::read(alone.path().join(&p)).unwrap()
                == std::fs::read(of_set.path().join(&p)).unwrap(),
            "{}",
            p.display()
        );
    }
    assert_eq!(
        usage(&["summary", dlrm.to_str().unwrap(), "--write-parquet", o, "--rank", "9"]),
        2,
        "--rank the set does not hold"
    );
}

/// The kernels, ops and phases parts are the readers' rows: on traces with
/// and without shapes, module frames or ranks, every scalar field of every
/// `--json` row (so every `--format csv` column, which tests/formats.rs
/// checks against the JSON) is a Parquet column holding the same value,
/// the columns in the JSON's order, and the Parquet has no column the row
/// type does not have (the absent ones are null).
#[test]
fn the_row_tables_have_the_json_rows_columns_and_values() {
    use arrow_array::{Array, BooleanArray};
    let fixture = |p: &str| {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/traces")).join(p)
    };
    for trace in [
        "tracelens_h100_timesformer/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
        "hta_trace_diff_a100_2022/control.json.gz",
        "tracelens_mi300_inference/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    ] {
        let t = fixture(trace);
        let t = t.to_str().unwrap();
        let out = tempfile::tempdir().unwrap();
        cli(&["summary", t, "--write-parquet", out.path().to_str().unwrap(), "--rank", "0"])
            .unwrap();
        let tables = [
            ("kernels", json(&["kernels", t, "--top", "1000000"]), "kernels"),
            ("ops", json(&["ops", t, "--top", "1000000"]), "ops"),
            ("phases", json(&["phases", t]), "phases"),
        ];
        for (table, doc, key) in tables {
            let (b, n) = rows(&out.path().join(table).join("rank=0/part.parquet"));
            let json_rows = doc[key].as_array().unwrap();
            assert_eq!(n, json_rows.len(), "{trace} {table}");
            let names: Vec<String> = b.schema().fields().iter().map(|f| f.name().clone()).collect();
            let mut seen = std::collections::HashSet::new();
            for (i, row) in json_rows.iter().enumerate() {
                let scalars: Vec<(&String, &serde_json::Value)> = row
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter(|(_, v)| !v.is_array() && !v.is_object())
                    .collect();
                let at: Vec<usize> = scalars
                    .iter()
                    .map(|(k, _)| {
                        names.iter().position(|n| n == *k).unwrap_or_else(|| {
                            panic!("{trace} {table}: `{k}` is no Parquet column: {names:?}")
                        })
                    })
                    .collect();
                assert!(at.windows(2).all(|w| w[0] < w[1]), "{trace} {table}: the JSON's order");
                for ((k, v), c) in scalars.iter().zip(at) {
                    seen.insert(c);
                    let col = b.column(c);
                    let what = format!("{trace} {table} row {i} {k}");
                    match v {
                        serde_json::Value::Null => assert!(col.is_null(i), "{what}"),
                        serde_json::Value::Bool(x) => assert_eq!(
                            col.as_any().downcast_ref::<BooleanArray>().unwrap().value(i),
                            *x,
                            "{what}"
                        ),
                        serde_json::Value::String(x) => assert_eq!(
                            col.as_any().downcast_ref::<StringArray>().unwrap().value(i),
                            x,
                            "{what}"
                        ),
                        // serde_json's parse of a float may miss the last bit.
                        serde_json::Value::Number(x) if x.is_f64() => {
                            let a = col.as_any().downcast_ref::<Float64Array>().unwrap().value(i);
                            let j = x.as_f64().unwrap();
                            assert!(
                                (a - j).abs() <= 4.0 * f64::EPSILON * j.abs(),
                                "{what}: {a} {j}"
                            );
                        }
                        serde_json::Value::Number(x) => assert_eq!(
                            col.as_any().downcast_ref::<Int64Array>().unwrap().value(i),
                            x.as_i64().unwrap(),
                            "{what}"
                        ),
                        _ => unreachable!(),
                    }
                }
            }
            // A column no row wrote is a field every row left out: null.
            for (c, name) in names.iter().enumerate() {
                if !seen.contains(&c) {
                    assert_eq!(b.column(c).null_count(), n, "{trace} {table} {name}");
                }
            }
        }
    }
}
