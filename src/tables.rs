//! `--parquet DIR`: the per-rank and per-collective tables of a rank set as
//! Parquet files, for DuckDB, Spark or DataFusion (docs/spec.md §7). The
//! Arrow crates are large, so they are the `parquet` feature; a build
//! without it says so (exit 2).
//!
//! - `ranks.parquet`: one row per rank, the job view's per-rank figures,
//!   its collective waits (its own and those it caused) and, for a
//!   straggler, the wait it causes per step and its first reason.
//! - `collectives.parquet`: one row per collective and rank (long form, so
//!   a query can group by either), with the collective's skew and bandwidth
//!   repeated on each of its rows.
//!
//! `summary TRACE --write-parquet DIR` writes one rank's own tables instead,
//! Hive-partitioned by rank (`DIR/<table>/rank=<r>/part.parquet`), so that
//! each rank of a cluster job writes its part where its trace is and an
//! engine reads every rank with one glob ([`write_rank`], [`RANK_TABLES`]).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::lens::collectives::Collectives;
use crate::lens::job::Job;
use crate::profile::Profile;

/// Whether this build writes Parquet (the `parquet` feature).
pub const AVAILABLE: bool = cfg!(feature = "parquet");

/// The per-rank tables of `--write-parquet`, in the order they are written.
pub const RANK_TABLES: [&str; 6] = ["summary", "kernels", "ops", "phases", "collectives", "idle"];

/// One rank's tables under `dir`, Hive-partitioned: `dir/<table>/rank=<rank>/part.parquet`
/// for each of [`RANK_TABLES`] (a table with no rows still gets its file,
/// so a rerun replaces every part and every rank has the same tables).
/// The rank is the partition column, as Hive writes it: not repeated inside
/// the files. Returns the files written.
pub fn write_rank(dir: &Path, rank: u32, p: &Profile) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for table in RANK_TABLES {
        let path = dir.join(table).join(format!("rank={rank}")).join("part.parquet");
        imp::write_rank_table(&path, table, rank, p)?;
        written.push(path);
    }
    Ok(written)
}

/// `ranks.parquet` and `collectives.parquet` into `dir`.
pub fn write(dir: &Path, job: &Job, c: &Collectives) -> Result<()> {
    imp::write_ranks(dir, job, c)?;
    write_collectives(dir, c)
}

/// `collectives.parquet` into `dir`.
pub fn write_collectives(dir: &Path, c: &Collectives) -> Result<()> {
    imp::write_collectives(dir, c)
}

/// What a build without the `parquet` feature says (exit 2).
pub fn unavailable() -> Error {
    Error::usage("this build has no Parquet support: build with `--features parquet` (README)")
}

#[cfg(not(feature = "parquet"))]
mod imp {
    use super::*;

    pub fn write_ranks(_dir: &Path, _job: &Job, _c: &Collectives) -> Result<()> {
        Err(unavailable())
    }
    pub fn write_collectives(_dir: &Path, _c: &Collectives) -> Result<()> {
        Err(unavailable())
    }
    pub fn write_rank_table(_path: &Path, _table: &str, _rank: u32, _p: &Profile) -> Result<()> {
        Err(unavailable())
    }
}

#[cfg(feature = "parquet")]
mod imp {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array,
        UInt64Array,
    };
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;

    use super::*;

    fn col(name: &str, t: DataType, nullable: bool, a: ArrayRef) -> (Field, ArrayRef) {
        (Field::new(name, t, nullable), a)
    }
    fn f64s(name: &str, v: Vec<Option<f64>>) -> (Field, ArrayRef) {
        let nullable = v.iter().any(Option::is_none);
        col(name, DataType::Float64, nullable, Arc::new(Float64Array::from(v)))
    }
    fn u32s(name: &str, v: Vec<Option<u32>>) -> (Field, ArrayRef) {
        let nullable = v.iter().any(Option::is_none);
        col(name, DataType::UInt32, nullable, Arc::new(UInt32Array::from(v)))
    }
    fn u64s(name: &str, v: Vec<Option<u64>>) -> (Field, ArrayRef) {
        let nullable = v.iter().any(Option::is_none);
        col(name, DataType::UInt64, nullable, Arc::new(UInt64Array::from(v)))
    }
    fn strs(name: &str, v: Vec<Option<String>>) -> (Field, ArrayRef) {
        let nullable = v.iter().any(Option::is_none);
        col(name, DataType::Utf8, nullable, Arc::new(StringArray::from(v)))
    }

    /// One Parquet file from its columns, written atomically.
    fn write_table(path: &Path, cols: Vec<(Field, ArrayRef)>) -> Result<()> {
        fn cause<E: std::error::Error + Send + Sync + 'static>(
            path: &Path,
        ) -> impl Fn(E) -> Error + '_ {
            move |e| Error::failed(format!("cannot write {}: {e}", path.display())).caused_by(e)
        }
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = cols.into_iter().unzip();
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(cause(path))?;
        let mut bytes = Vec::new();
        let mut w = ArrowWriter::try_new(&mut bytes, schema, None).map_err(cause(path))?;
        w.write(&batch).map_err(cause(path))?;
        w.close().map_err(cause(path))?;
        crate::files::write_atomic(path, &bytes)
    }

    pub fn write_ranks(dir: &Path, job: &Job, c: &Collectives) -> Result<()> {
        let r = &job.ranks;
        let waits = |k: u32| c.per_rank.iter().find(|w| w.rank == k);
        let straggler = |k: u32| job.stragglers.iter().find(|s| s.rank == k);
        write_table(
            &dir.join("ranks.parquet"),
            vec![
                u32s("rank", r.iter().map(|x| Some(x.rank)).collect()),
                f64s("step_ms", r.iter().map(|x| Some(x.step_ms)).collect()),
                f64s("gpu_util", r.iter().map(|x| Some(x.gpu_util)).collect()),
                f64s("compute_ms", r.iter().map(|x| Some(x.compute_ms)).collect()),
                f64s("comm_ms", r.iter().map(|x| Some(x.comm_ms)).collect()),
                f64s("exposed_comm_ms", r.iter().map(|x| Some(x.exposed_comm_ms)).collect()),
                f64s("idle_ms", r.iter().map(|x| Some(x.idle_ms)).collect()),
                f64s("dataload_ms", r.iter().map(|x| x.dataload_ms).collect()),
                f64s("kernels_per_step", r.iter().map(|x| Some(x.kernels_per_step)).collect()),
                strs("bound", r.iter().map(|x| Some(x.bound.to_string())).collect()),
                f64s(
                    "collective_wait_ms",
                    r.iter().map(|x| waits(x.rank).map(|w| w.wait_ms)).collect(),
                ),
                u64s(
                    "last_arrivals",
                    r.iter().map(|x| waits(x.rank).map(|w| w.last_arrivals as u64)).collect(),
                ),
                f64s(
                    "collective_wait_caused_ms",
                    r.iter().map(|x| waits(x.rank).map(|w| w.wait_caused_ms)).collect(),
                ),
                f64s(
                    "straggler_wait_caused_ms_per_step",
                    r.iter()
                        .map(|x| straggler(x.rank).and_then(|s| s.wait_caused_ms_per_step))
                        .collect(),
                ),
                f64s(
                    "straggler_compute_excess_ms",
                    r.iter().map(|x| straggler(x.rank).map(|s| s.compute_excess_ms)).collect(),
                ),
                strs(
                    "straggler_why",
                    r.iter()
                        .map(|x| {
                            straggler(x.rank)
                                .and_then(|s| s.why.first())
                                .map(crate::render::text::why)
                        })
                        .collect(),
                ),
            ],
        )
    }

    // The per-rank tables keep one schema whatever the rank's data (a
    // column that may be empty is nullable in every part), so that an engine
    // reading all the parts sees one table; their integers are signed
    // 64-bit, which every engine reads as BIGINT (Spark reads an unsigned
    // 64-bit column as a decimal).
    fn req_f64(name: &str, v: Vec<f64>) -> (Field, ArrayRef) {
        col(name, DataType::Float64, false, Arc::new(Float64Array::from(v)))
    }
    fn opt_f64(name: &str, v: Vec<Option<f64>>) -> (Field, ArrayRef) {
        col(name, DataType::Float64, true, Arc::new(Float64Array::from(v)))
    }
    fn req_str(name: &str, v: Vec<String>) -> (Field, ArrayRef) {
        col(name, DataType::Utf8, false, Arc::new(StringArray::from(v)))
    }
    fn opt_str(name: &str, v: Vec<Option<String>>) -> (Field, ArrayRef) {
        col(name, DataType::Utf8, true, Arc::new(StringArray::from(v)))
    }
    fn opt_i64(name: &str, v: Vec<Option<i64>>) -> (Field, ArrayRef) {
        col(name, DataType::Int64, true, Arc::new(Int64Array::from(v)))
    }
    fn req_i64(name: &str, v: Vec<i64>) -> (Field, ArrayRef) {
        col(name, DataType::Int64, false, Arc::new(Int64Array::from(v)))
    }
    fn req_bool(name: &str, v: Vec<bool>) -> (Field, ArrayRef) {
        col(name, DataType::Boolean, false, Arc::new(BooleanArray::from(v)))
    }

    /// What a JSON schema says a scalar field holds.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Kind {
        Float,
        Int,
        Bool,
        Text,
    }

    /// The scalar fields of a row type, from its JSON schema (the one
    /// `profile schema` prints): name, kind and whether it may be absent,
    /// in the order the JSON writes them. A field holding an object or an
    /// array is a table of its own and left out, as `--format csv` leaves
    /// it out. So a field added to a row is a column in JSON, md/csv and
    /// Parquet alike, with no list to keep.
    fn scalar_fields<T: schemars::JsonSchema>() -> Vec<(String, Kind, bool)> {
        let root = schemars::schema_for!(T);
        let root = root.as_value();
        let resolve = |v: &'_ serde_json::Value| -> serde_json::Value {
            let mut v = v.clone();
            while let Some(r) = v.get("$ref").and_then(|r| r.as_str()) {
                let name = r.rsplit('/').next().unwrap_or_default();
                v = root["$defs"][name].clone();
            }
            v
        };
        // The types a field may hold: its `type`, or its `anyOf`'s.
        fn types(
            v: &serde_json::Value,
            resolve: &dyn Fn(&serde_json::Value) -> serde_json::Value,
            out: &mut Vec<String>,
        ) {
            let v = resolve(v);
            match v.get("type") {
                Some(serde_json::Value::String(t)) => out.push(t.clone()),
                Some(serde_json::Value::Array(ts)) => {
                    out.extend(ts.iter().filter_map(|t| t.as_str().map(String::from)))
                }
                _ => {}
            }
            for alt in v.get("anyOf").and_then(|a| a.as_array()).into_iter().flatten() {
                types(alt, resolve, out);
            }
        }
        let mut fields = Vec::new();
        let props = root.get("properties").and_then(|p| p.as_object());
        for (name, v) in props.into_iter().flatten() {
            let mut ts = Vec::new();
            types(v, &resolve, &mut ts);
            let has = |t: &str| ts.iter().any(|x| x == t);
            let kind = if has("object") || has("array") {
                continue;
            } else if has("number") {
                Kind::Float
            } else if has("integer") {
                Kind::Int
            } else if has("boolean") {
                Kind::Bool
            } else {
                Kind::Text
            };
            fields.push((name.clone(), kind, has("null")));
        }
        fields
    }

    /// One column per scalar field of `T` ([`scalar_fields`]), one row per
    /// item: the rank's tables keep one schema whatever the rank's data (a
    /// field that may be absent is nullable in every part).
    fn columns_of<T: serde::Serialize + schemars::JsonSchema>(
        rows: &[T],
    ) -> Result<Vec<(Field, ArrayRef)>> {
        let maps: Vec<serde_json::Value> =
            rows.iter().map(serde_json::to_value).collect::<std::result::Result<_, _>>().map_err(
                |e| Error::failed(format!("cannot encode a table row: {e}")).caused_by(e),
            )?;
        let cols = scalar_fields::<T>()
            .into_iter()
            .map(|(name, kind, nullable)| {
                let vals = maps.iter().map(|m| m.get(&name).filter(|v| !v.is_null()));
                let a: ArrayRef = match kind {
                    Kind::Float => {
                        Arc::new(vals.map(|v| v.and_then(|v| v.as_f64())).collect::<Float64Array>())
                    }
                    Kind::Int => {
                        Arc::new(vals.map(|v| v.and_then(|v| v.as_i64())).collect::<Int64Array>())
                    }
                    Kind::Bool => Arc::new(
                        vals.map(|v| v.and_then(|v| v.as_bool())).collect::<BooleanArray>(),
                    ),
                    Kind::Text => Arc::new(
                        vals.map(|v| {
                            v.map(|v| v.as_str().map_or_else(|| v.to_string(), String::from))
                        })
                        .collect::<StringArray>(),
                    ),
                };
                let t = match kind {
                    Kind::Float => DataType::Float64,
                    Kind::Int => DataType::Int64,
                    Kind::Bool => DataType::Boolean,
                    Kind::Text => DataType::Utf8,
                };
                col(&name, t, nullable, a)
            })
            .collect();
        Ok(cols)
    }

    pub fn write_rank_table(path: &Path, table: &str, rank: u32, p: &Profile) -> Result<()> {
        use crate::lens;
        let cols = match table {
            // The rank's line of the job view (`summary DIR`'s ranks table),
            // with the figures it is made of.
            "summary" => {
                let r = lens::job::row(rank, p);
                let f = &p.figures;
                let d = p.distributed.clone().unwrap_or_default();
                vec![
                    req_f64("step_ms", vec![r.step_ms]),
                    opt_f64("img_per_s", vec![f.img_per_s]),
                    req_f64("gpu_util", vec![r.gpu_util]),
                    req_f64("gpu_busy_ms_per_step", vec![f.gpu_busy_ms_per_step]),
                    req_f64("compute_ms", vec![r.compute_ms]),
                    req_f64("comm_ms", vec![r.comm_ms]),
                    req_f64("exposed_comm_ms", vec![r.exposed_comm_ms]),
                    req_f64("idle_ms", vec![r.idle_ms]),
                    opt_f64("dataload_ms", vec![r.dataload_ms]),
                    req_f64("kernels_per_step", vec![r.kernels_per_step]),
                    req_f64("launches_per_step", vec![f.launches_per_step]),
                    req_f64("host_overhead_ms_per_step", vec![f.host_overhead_ms_per_step]),
                    req_i64("steps", vec![f.window.real_steps as i64]),
                    req_str("bound", vec![r.bound.to_string()]),
                    opt_i64("world_size", vec![d.world_size.map(i64::from)]),
                    opt_str("trace", vec![p.trace.clone()]),
                ]
            }
            // The lens rows as `--json` writes them, every scalar field a
            // column (`--format csv`'s, the absent ones included).
            "kernels" => columns_of(
                &lens::kernels::kernels(p, &lens::kernels::KernelQuery::default())?.kernels,
            )?,
            "ops" => columns_of(&lens::ops::ops(p, &lens::ops::OpQuery::default())?.ops)?,
            "phases" => columns_of(&lens::phases::phases(p).phases)?,
            // One row per collective this rank ran, numbered per group as
            // every rank numbers them: `(group, seq)` joins the ranks' rows,
            // and `start_ns` (the rank's clock) gives the arrival skew.
            "collectives" => {
                let c = lens::collectives::of_profile(p);
                let ms = &c.collectives;
                let call = |m: &lens::collectives::Matched| {
                    m.ranks.first().and_then(|r| p.collectives.get(r.call))
                };
                vec![
                    req_str("group", ms.iter().map(|m| m.group.clone()).collect()),
                    req_i64("seq", ms.iter().map(|m| m.seq as i64).collect()),
                    req_str("collective", ms.iter().map(|m| m.collective.clone()).collect()),
                    opt_i64(
                        "step",
                        ms.iter().map(|m| call(m).and_then(|c| c.step).map(|s| s as i64)).collect(),
                    ),
                    req_i64(
                        "start_ns",
                        ms.iter().map(|m| call(m).map_or(0, |c| c.start_ns)).collect(),
                    ),
                    req_f64("at_ms", ms.iter().map(|m| m.at_ms).collect()),
                    req_f64("duration_us", ms.iter().map(|m| m.duration_us).collect()),
                    opt_i64("bytes", ms.iter().map(|m| m.bytes.map(|b| b as i64)).collect()),
                    opt_str("dtype", ms.iter().map(|m| m.dtype.clone()).collect()),
                    opt_i64(
                        "group_size",
                        ms.iter()
                            .map(|m| call(m).and_then(|c| c.group_size).map(i64::from))
                            .collect(),
                    ),
                    opt_f64("algbw_gbps", ms.iter().map(|m| m.algbw_gbps).collect()),
                    opt_f64("busbw_gbps", ms.iter().map(|m| m.busbw_gbps).collect()),
                ]
            }
            // The idle account by cause (docs/analysis.md §12), every device
            // it covers; `busiest` marks the device `summary` shows, whose
            // rows sum to its `idle.ms_per_step`.
            "idle" => {
                let mut rows: Vec<(i64, bool, &crate::profile::IdleCauseRow)> = Vec::new();
                if let Some(a) = &p.idle {
                    rows.extend(a.causes.iter().map(|c| (a.device, true, c)));
                    for d in a.devices.iter().filter(|d| d.device != a.device) {
                        rows.extend(d.causes.iter().map(|c| (d.device, false, c)));
                    }
                }
                vec![
                    req_i64("device", rows.iter().map(|r| r.0).collect()),
                    req_bool("busiest", rows.iter().map(|r| r.1).collect()),
                    req_str("cause", rows.iter().map(|r| r.2.cause.as_str().to_string()).collect()),
                    req_f64("ms_per_step", rows.iter().map(|r| r.2.ms_per_step).collect()),
                    req_f64("gaps_per_step", rows.iter().map(|r| r.2.gaps_per_step).collect()),
                    req_f64(
                        "before_first_kernel_ms_per_step",
                        rows.iter().map(|r| r.2.before_first_kernel_ms_per_step).collect(),
                    ),
                    opt_str(
                        "top_place",
                        rows.iter().map(|r| r.2.places.first().map(|x| x.name.clone())).collect(),
                    ),
                    opt_f64(
                        "top_place_ms_per_step",
                        rows.iter().map(|r| r.2.places.first().map(|x| x.ms_per_step)).collect(),
                    ),
                ]
            }
            other => return Err(Error::failed(format!("no per-rank table {other}"))),
        };
        write_table(path, cols)
    }

    pub fn write_collectives(dir: &Path, c: &Collectives) -> Result<()> {
        let rows: Vec<(&crate::lens::collectives::Matched, &crate::lens::collectives::RankAt)> =
            c.collectives.iter().flat_map(|m| m.ranks.iter().map(move |r| (m, r))).collect();
        write_table(
            &dir.join("collectives.parquet"),
            vec![
                strs("group", rows.iter().map(|(m, _)| Some(m.group.clone())).collect()),
                u64s("seq", rows.iter().map(|(m, _)| Some(m.seq as u64)).collect()),
                strs("collective", rows.iter().map(|(m, _)| Some(m.collective.clone())).collect()),
                f64s("at_ms", rows.iter().map(|(m, _)| Some(m.at_ms)).collect()),
                u64s("bytes", rows.iter().map(|(m, _)| m.bytes).collect()),
                strs("dtype", rows.iter().map(|(m, _)| m.dtype.clone()).collect()),
                f64s("skew_us", rows.iter().map(|(m, _)| m.skew_us).collect()),
                u32s("last_rank", rows.iter().map(|(m, _)| m.last_rank).collect()),
                f64s("duration_us", rows.iter().map(|(m, _)| Some(m.duration_us)).collect()),
                f64s("algbw_gbps", rows.iter().map(|(m, _)| m.algbw_gbps).collect()),
                f64s("busbw_gbps", rows.iter().map(|(m, _)| m.busbw_gbps).collect()),
                u32s("rank", rows.iter().map(|(_, r)| Some(r.rank)).collect()),
                f64s("arrival_us", rows.iter().map(|(_, r)| Some(r.arrival_us)).collect()),
                f64s("wait_us", rows.iter().map(|(_, r)| Some(r.wait_us)).collect()),
                f64s("dur_us", rows.iter().map(|(_, r)| Some(r.dur_us)).collect()),
            ],
        )
    }
}

#[cfg(all(test, feature = "parquet"))]
pub(crate) mod tests {
    use std::path::PathBuf;

    use arrow_array::{Array, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use crate::input::{json_files_in, ranks};
    use crate::lens::{collectives, job};

    pub(crate) fn read(path: &std::path::Path) -> Vec<RecordBatch> {
        let f = std::fs::File::open(path).unwrap();
        ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    pub(crate) fn column<'b, T: 'static>(b: &'b RecordBatch, name: &str) -> &'b T {
        b.column_by_name(name)
            .unwrap_or_else(|| panic!("column {name}"))
            .as_any()
            .downcast_ref::<T>()
            .unwrap()
    }

    #[test]
    fn the_rank_and_collective_tables_read_back_with_their_rows_and_values() {
        let dir = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/traces/param_dlrm_v100_8rank"
        ));
        let set = ranks::load(&json_files_in(&dir).unwrap(), &Default::default()).unwrap();
        let j = job::job(&set);
        let calls: Vec<collectives::RankCalls<'_>> = set
            .ranks
            .iter()
            .map(|r| collectives::RankCalls { rank: r.rank, calls: &r.input.profile.collectives })
            .collect();
        let c = collectives::collectives(&calls, set.world_size);
        let out = tempfile::tempdir().unwrap();
        super::write(out.path(), &j, &c).unwrap();

        let ranks = read(&out.path().join("ranks.parquet"));
        assert_eq!(ranks.iter().map(RecordBatch::num_rows).sum::<usize>(), 8);
        let b = &ranks[0];
        for (i, row) in j.ranks.iter().enumerate() {
            assert_eq!(column::<UInt32Array>(b, "rank").value(i), row.rank);
            assert_eq!(column::<Float64Array>(b, "step_ms").value(i), row.step_ms);
            assert_eq!(column::<Float64Array>(b, "compute_ms").value(i), row.compute_ms);
            assert_eq!(column::<StringArray>(b, "bound").value(i), row.bound.as_str());
            assert_eq!(
                column::<Float64Array>(b, "collective_wait_ms").value(i),
                c.per_rank[i].wait_ms
            );
            assert_eq!(
                column::<UInt64Array>(b, "last_arrivals").value(i),
                c.per_rank[i].last_arrivals as u64
            );
            assert_eq!(
                column::<Float64Array>(b, "collective_wait_caused_ms").value(i),
                c.per_rank[i].wait_caused_ms
            );
            let s = j.stragglers.iter().find(|s| s.rank == row.rank);
            let caused = column::<Float64Array>(b, "straggler_wait_caused_ms_per_step");
            assert_eq!(caused.is_null(i), s.is_none(), "rank {i}");
            if let Some(s) = s {
                assert_eq!(caused.value(i), s.wait_caused_ms_per_step.unwrap());
                // (A straggler already late when its lead-ins began has no
                // item: null.)
                let why = column::<StringArray>(b, "straggler_why");
                match s.why.first() {
                    Some(first) => assert_eq!(why.value(i), crate::render::text::why(first)),
                    None => assert!(why.is_null(i), "rank {i}"),
                }
            }
        }
        assert!(!j.stragglers.is_empty(), "rank 7 is waited for");
        assert!(
            column::<Float64Array>(b, "dataload_ms").is_null(0),
            "not measurable in a foreign trace"
        );

        // Long form: 8 collectives × 8 ranks.
        let coll = read(&out.path().join("collectives.parquet"));
        assert_eq!(coll.iter().map(RecordBatch::num_rows).sum::<usize>(), 64);
        let b = &coll[0];
        let mut i = 0;
        for m in &c.collectives {
            for r in &m.ranks {
                assert_eq!(column::<StringArray>(b, "collective").value(i), m.collective);
                assert_eq!(column::<UInt64Array>(b, "seq").value(i), m.seq as u64);
                assert_eq!(column::<Float64Array>(b, "skew_us").value(i), m.skew_us.unwrap());
                assert_eq!(column::<UInt32Array>(b, "rank").value(i), r.rank);
                assert_eq!(column::<Float64Array>(b, "wait_us").value(i), r.wait_us);
                assert!(column::<UInt64Array>(b, "bytes").is_null(i), "no sizes in these traces");
                i += 1;
            }
        }
    }
}
