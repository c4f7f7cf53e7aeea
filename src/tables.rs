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

use std::path::Path;

use crate::error::{Error, Result};
use crate::lens::collectives::Collectives;
use crate::lens::job::Job;

/// `ranks.parquet` and `collectives.parquet` into `dir`.
pub fn write(dir: &Path, job: &Job, c: &Collectives) -> Result<()> {
    imp::write_ranks(dir, job, c)?;
    write_collectives(dir, c)
}

/// `collectives.parquet` into `dir`.
pub fn write_collectives(dir: &Path, c: &Collectives) -> Result<()> {
    imp::write_collectives(dir, c)
}

#[cfg(not(feature = "parquet"))]
mod imp {
    use super::*;

    fn unavailable() -> Error {
        Error::usage("this build has no Parquet support: build with `--features parquet` (README)")
    }
    pub fn write_ranks(_dir: &Path, _job: &Job, _c: &Collectives) -> Result<()> {
        Err(unavailable())
    }
    pub fn write_collectives(_dir: &Path, _c: &Collectives) -> Result<()> {
        Err(unavailable())
    }
}

#[cfg(feature = "parquet")]
mod imp {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
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
        let fail = |e: &dyn std::fmt::Display| Error::failed(format!("cannot write {}: {e}", path.display()));
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = cols.into_iter().unzip();
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| fail(&e))?;
        let mut bytes = Vec::new();
        let mut w = ArrowWriter::try_new(&mut bytes, schema, None).map_err(|e| fail(&e))?;
        w.write(&batch).map_err(|e| fail(&e))?;
        w.close().map_err(|e| fail(&e))?;
        crate::profile::write_atomic(path, &bytes)
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
                f64s("collective_wait_ms", r.iter().map(|x| waits(x.rank).map(|w| w.wait_ms)).collect()),
                u64s("last_arrivals", r.iter().map(|x| waits(x.rank).map(|w| w.last_arrivals as u64)).collect()),
                f64s("collective_wait_caused_ms", r.iter().map(|x| waits(x.rank).map(|w| w.wait_caused_ms)).collect()),
                f64s(
                    "straggler_wait_caused_ms_per_step",
                    r.iter().map(|x| straggler(x.rank).and_then(|s| s.wait_caused_ms_per_step)).collect(),
                ),
                f64s("straggler_compute_excess_ms", r.iter().map(|x| straggler(x.rank).map(|s| s.compute_excess_ms)).collect()),
                strs(
                    "straggler_why",
                    r.iter().map(|x| straggler(x.rank).and_then(|s| s.why.first()).map(crate::render::text::why)).collect(),
                ),
            ],
        )
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
mod tests {
    use std::path::PathBuf;

    use arrow_array::{Array, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use crate::lens::{collectives, job};
    use crate::profile::{json_files_in, ranks};

    fn read(path: &std::path::Path) -> Vec<RecordBatch> {
        let f = std::fs::File::open(path).unwrap();
        ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap().map(Result::unwrap).collect()
    }

    fn column<'b, T: 'static>(b: &'b RecordBatch, name: &str) -> &'b T {
        b.column_by_name(name).unwrap_or_else(|| panic!("column {name}")).as_any().downcast_ref::<T>().unwrap()
    }

    #[test]
    fn the_rank_and_collective_tables_read_back_with_their_rows_and_values() {
        let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/traces/param_dlrm_v100_8rank"));
        let set = ranks::load(&json_files_in(&dir).unwrap()).unwrap();
        let j = job::job(&set);
        let calls: Vec<collectives::RankCalls<'_>> =
            set.ranks.iter().map(|r| collectives::RankCalls { rank: r.rank, calls: &r.input.profile.collectives }).collect();
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
            assert_eq!(column::<Float64Array>(b, "collective_wait_ms").value(i), c.per_rank[i].wait_ms);
            assert_eq!(column::<UInt64Array>(b, "last_arrivals").value(i), c.per_rank[i].last_arrivals as u64);
            assert_eq!(column::<Float64Array>(b, "collective_wait_caused_ms").value(i), c.per_rank[i].wait_caused_ms);
            let s = j.stragglers.iter().find(|s| s.rank == row.rank);
            let caused = column::<Float64Array>(b, "straggler_wait_caused_ms_per_step");
            assert_eq!(caused.is_null(i), s.is_none(), "rank {i}");
            if let Some(s) = s {
                assert_eq!(caused.value(i), s.wait_caused_ms_per_step.unwrap());
                assert_eq!(column::<StringArray>(b, "straggler_why").value(i), crate::render::text::why(&s.why[0]));
            }
        }
        assert!(!j.stragglers.is_empty(), "rank 7 is waited for");
        assert!(column::<Float64Array>(b, "dataload_ms").is_null(0), "not measurable in a foreign trace");

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
