//! `--parquet DIR`: the per-rank and per-collective tables of a rank set as
//! Parquet files, for DuckDB, Spark or DataFusion (docs/spec.md §7). The
//! Arrow crates are large, so they are the `parquet` feature; a build
//! without it says so (exit 2).

use std::path::Path;

use crate::error::{Error, Result};
use crate::lens::collectives::Collectives;
use crate::lens::job::Job;

#[cfg(not(feature = "parquet"))]
fn unavailable() -> Error {
    Error::usage("this build has no Parquet support: build with `--features parquet` (README)")
}

/// `ranks.parquet` and `collectives.parquet` into `dir`.
#[cfg(not(feature = "parquet"))]
pub fn write(_dir: &Path, _job: &Job, _c: &Collectives) -> Result<()> {
    Err(unavailable())
}

/// `collectives.parquet` into `dir`.
#[cfg(not(feature = "parquet"))]
pub fn write_collectives(_dir: &Path, _c: &Collectives) -> Result<()> {
    Err(unavailable())
}
