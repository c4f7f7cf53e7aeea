//! Writing files so that an interrupted write never leaves a truncated
//! one: pretty JSON, bytes, or a stream, through a temporary file and a
//! rename.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Writes `value` as pretty JSON (with a final newline), atomically.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| {
        Error::failed(format!("cannot encode {}: {e}", path.display())).caused_by(e)
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Writes `bytes` to `path` through a temporary file in the same folder and
/// a rename, so an interrupted write never leaves a truncated file. Only a
/// regular file or an absent path is replaced so; a symlink is followed and
/// its target written by the same rule; a character device or FIFO
/// (`/dev/null`, a named pipe) is opened and written, never replaced by a
/// file; a directory, block device or socket is refused (exit 2).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, &mut |w| {
        w.write_all(bytes).map_err(|e| {
            Error::failed(format!("cannot write {}: {e}", path.display())).caused_by(e)
        })
    })
}

/// [`write_atomic`] for output too large to hold: `write` streams it into
/// the (buffered) temporary file, which replaces `path` only once `write`
/// returned `Ok` and everything reached the disk; on an error the
/// temporary file is removed and `path` is untouched. The writer is `Send`,
/// so `write` may hand it to a thread of its own. A character device
/// or FIFO is written through, as [`write_atomic`] does.
pub fn write_atomic_with(
    path: &Path,
    write: &mut dyn FnMut(&mut (dyn Write + Send)) -> Result<()>,
) -> Result<()> {
    let fail = |e: std::io::Error| {
        Error::failed(format!("cannot write {}: {e}", path.display())).caused_by(e)
    };
    match write_target(path)? {
        Target::Replace(target) => {
            let dir =
                target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir).map_err(|e| {
                Error::failed(format!("cannot create {}: {e}", dir.display())).caused_by(e)
            })?;
            let tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| {
                Error::failed(format!("cannot write in {}: {e}", dir.display())).caused_by(e)
            })?;
            crate::tempfiles::track(tmp.path());
            let mut out = std::io::BufWriter::with_capacity(1 << 20, tmp);
            write(&mut out)?;
            let tmp = out.into_inner().map_err(|e| fail(e.into_error()))?;
            // Temporary files are private (0600); the result is an ordinary file.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644));
            }
            tmp.persist(&target).map_err(|e| fail(e.error))?;
            Ok(())
        }
        Target::Through => {
            // A character device or a FIFO (`/dev/null`, `/dev/stdout`, a
            // named pipe): written as a shell's `>` would; a rename would
            // put a regular file in the device's place.
            let f = std::fs::OpenOptions::new().write(true).open(path).map_err(fail)?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, f);
            write(&mut out)?;
            out.flush().map_err(fail)
        }
    }
}

/// Refuses a path [`write_atomic`] would refuse (a directory, a block
/// device, a socket: exit 2), before a long computation of what to write.
pub fn check_write_target(path: &Path) -> Result<()> {
    write_target(path).map(drop)
}

/// How [`write_atomic`] writes to a path.
enum Target {
    /// A regular file or an absent path (a symlink's target, resolved):
    /// a temporary file beside it, renamed over it.
    Replace(PathBuf),
    /// A character device or a FIFO: opened and written.
    Through,
}

/// What `path` is, following symlinks: a regular file or nothing (replaced
/// atomically), a character device or FIFO (written through); anything
/// else (a directory, a block device, a socket) is refused.
fn write_target(path: &Path) -> Result<Target> {
    // Follow a chain of symlinks (a dangling one names the file to create).
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&at).map_err(|e| {
                    Error::failed(format!("cannot read the link {}: {e}", at.display()))
                        .caused_by(e)
                })?;
                at = match at.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(m) if m.is_file() => return Ok(Target::Replace(at)),
            Ok(m) => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::FileTypeExt;
                    let t = m.file_type();
                    if t.is_char_device() || t.is_fifo() {
                        return Ok(Target::Through);
                    }
                }
                let what = if m.is_dir() {
                    "a directory"
                } else {
                    "not a regular file (a block device or a socket)"
                };
                return Err(Error::usage(format!(
                    "cannot write {}: it is {what}; give a file path",
                    path.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Target::Replace(at)),
            Err(e) => {
                return Err(
                    Error::failed(format!("cannot write {}: {e}", path.display())).caused_by(e)
                );
            }
        }
    }
    Err(Error::usage(format!("cannot write {}: too many levels of symbolic links", path.display())))
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

    /// A symlink stays a symlink (its target is replaced); a dangling one
    /// names the file to create; a directory is refused.
    #[cfg(unix)]
    #[test]
    fn atomic_writes_never_replace_links_or_special_files() {
        // FIFOs and devices: app/tests/hostile_readers.rs (never /dev/null here:
        // a regression run as root would replace it).
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink("made.json", &dangling).unwrap();
        write_atomic(&dangling, b"made").unwrap();
        assert_eq!(std::fs::read(dir.path().join("made.json")).unwrap(), b"made");
        let err = write_atomic(dir.path(), b"x").unwrap_err();
        assert_eq!(err.exit_code(), 2, "{err}");
        assert!(err.to_string().contains("is a directory"), "{err}");
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 4, "no temporary file left: {names:?}");
    }
}
