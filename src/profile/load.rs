//! Any reader input → a [`Profile`]. The kind is decided by content: a JSON
//! object with a libreyolo schema id is a profile (ours or the reference's,
//! including its repeat files); anything else is a trace and is analysed.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::measured::Measurements;
use super::schema::Profile;
use crate::analysis;
use crate::error::{Error, Result};
use crate::trace::input;

/// A loaded input: where it came from and the profile it gives.
#[derive(Debug, Clone)]
pub struct Input {
    pub path: PathBuf,
    pub profile: Profile,
    /// True when the profile was analysed from a raw trace just now.
    pub from_trace: bool,
}

/// Files looked for, in order, when a directory is given.
const DIR_CANDIDATES: &[&str] =
    &["profile.json", "infer_repeat.json", "profile_repeat.json", "profile_trace.json", "profile_trace.json.gz"];

/// Resolves a command-line path: a missing path is a usage error (exit 2);
/// a directory stands for the profile inside it.
pub fn resolve_input(arg: &str) -> Result<PathBuf> {
    let path = PathBuf::from(arg);
    let meta = std::fs::metadata(&path).map_err(|_| Error::usage(format!("not found: {arg}")))?;
    if meta.is_dir() {
        return DIR_CANDIDATES
            .iter()
            .map(|name| path.join(name))
            .find(|p| p.is_file())
            .ok_or_else(|| Error::usage(format!("{arg} is a directory with no profile.json or profile_trace.json in it")));
    }
    Ok(path)
}

/// Loads `arg` as a profile, analysing it first when it is a trace.
pub fn load(arg: &str, progress: bool) -> Result<Input> {
    let path = resolve_input(arg)?;
    let fail = |e: Error| Error::failed(format!("failed to analyse {arg}: {e}"));
    let measured = Measurements::beside(&path);
    match analysis::analyze_file(&path, measured.as_ref(), progress).map_err(fail)? {
        Some(mut profile) => {
            profile.trace = Some(arg.to_string());
            Ok(Input { path, profile, from_trace: true })
        }
        None => {
            let profile = read_profile(&path).map_err(fail)?;
            Ok(Input { path, profile, from_trace: false })
        }
    }
}

fn read_profile(path: &Path) -> Result<Profile> {
    let mut text = Vec::new();
    input::open(path, false)?
        .read_to_end(&mut text)
        .map_err(|e| Error::failed(format!("cannot read: {e}")))?;
    let value: Value = serde_json::from_slice(&text).map_err(|e| Error::failed(format!("invalid JSON: {e}")))?;
    let obj = value.as_object().ok_or_else(|| Error::failed("a profile must be a JSON object"))?;
    for (key, what) in [("step_ms", "a number"), ("bound", "a string")] {
        let ok = match obj.get(key) {
            Some(v) if key == "step_ms" => v.is_number(),
            Some(v) => v.is_string(),
            None => false,
        };
        if !ok {
            return Err(Error::failed(format!("incomplete profile: `{key}` is missing or not {what}")));
        }
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let at = e.path().to_string();
        Error::failed(format!("profile field `{at}`: {}", e.into_inner()))
    })
}

/// Writes `value` as pretty JSON (with a final newline), atomically.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| Error::failed(format!("cannot encode {}: {e}", path.display())))?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Writes `bytes` to `path` through a temporary file in the same folder and
/// a rename, so an interrupted write never leaves a truncated file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::failed(format!("cannot create {}: {e}", dir.display())))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::failed(format!("cannot write in {}: {e}", dir.display())))?;
    crate::tempfiles::track(tmp.path());
    tmp.write_all(bytes).map_err(|e| Error::failed(format!("cannot write {}: {e}", path.display())))?;
    // Temporary files are private (0600); the result is an ordinary file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644));
    }
    tmp.persist(path).map_err(|e| Error::failed(format!("cannot write {}: {e}", path.display())))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_replace_whole_files_readable_by_others() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/profile.json");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        }
        let leftovers = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file left behind");
    }
}
