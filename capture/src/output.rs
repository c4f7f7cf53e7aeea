//! Where a capture's files go, checked before anything is measured: a
//! `--project` that is a file, read-only or under a file fails at once, not
//! after minutes of measurement.

use std::path::Path;

use libreyolo_core::{Error, Result};

/// Creates `dir` if needed and proves a file can be written in it.
pub fn prepare(dir: &Path) -> Result<()> {
    let unusable = |e: std::io::Error| Error::usage(format!("--project: cannot write in {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(unusable)?;
    tempfile::tempfile_in(dir).map_err(unusable)?;
    Ok(())
}
