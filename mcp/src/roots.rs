//! The folders the server may read under (`--root DIR`, repeatable). Every
//! path a tool is given is resolved here, before any reader sees it: an
//! agent's path is data from a model, not the user's own command line.

use std::path::{Component, Path, PathBuf};

use libreyolo_core::error::{Error, Result};
use libreyolo_core::input::folders_looked_into;

/// The roots, each as given (made absolute) and with its links resolved:
/// a path is refused before anything is looked up unless it names one of
/// the two, and after resolving unless it lies under a resolved one.
#[derive(Debug, Clone)]
pub struct Roots {
    roots: Vec<(PathBuf, PathBuf)>,
}

impl Roots {
    /// The roots of `--root`: each must be a folder (exit 2 otherwise).
    pub fn new(dirs: &[PathBuf]) -> Result<Roots> {
        let roots = dirs
            .iter()
            .map(|dir| {
                let bad = |why: String| Error::usage(format!("--root {}: {why}", dir.display()));
                let real = dir.canonicalize().map_err(|e| bad(e.to_string()))?;
                if !real.is_dir() {
                    return Err(bad("not a folder".into()));
                }
                let given = std::path::absolute(dir).map_err(|e| bad(e.to_string()))?;
                Ok((given, real))
            })
            .collect::<Result<_>>()?;
        Ok(Roots { roots })
    }

    /// The roots as the server's instructions and refusals name them.
    pub fn list(&self) -> String {
        let names: Vec<String> = self.roots.iter().map(|(_, r)| r.display().to_string()).collect();
        names.join(", ")
    }

    /// The file or folder `given` names, links resolved, once it is known
    /// to lie under a root with nothing beside it that leads out of them.
    /// A relative path is taken from each root in turn (the first that
    /// holds it). Refusals are usage errors (exit 2), as a missing file is.
    pub fn resolve(&self, given: &str) -> Result<PathBuf> {
        let path = Path::new(given);
        if given.is_empty() {
            return Err(Error::usage("an empty path: name a trace, profile or folder"));
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(Error::usage(format!(
                "{given}: `..` is not taken in a path; name the file from a root ({})",
                self.list()
            )));
        }
        let real = if path.is_absolute() {
            if !self.roots.iter().any(|(g, r)| path.starts_with(g) || path.starts_with(r)) {
                return Err(self.outside(given));
            }
            path.canonicalize().map_err(|e| missing(given, e))?
        } else {
            // The first root that holds it; else why the first does not.
            let mut why = None;
            let found = self.roots.iter().find_map(|(_, r)| {
                r.join(path).canonicalize().map_err(|e| why.get_or_insert(e)).ok()
            });
            let why = || why.unwrap_or_else(|| std::io::ErrorKind::NotFound.into());
            found.ok_or_else(|| missing(given, why()))?
        };
        if !self.holds(&real) {
            return Err(self.outside(given));
        }
        // A FIFO or device would hold a reader until someone writes to it.
        if !(real.is_file() || real.is_dir()) {
            return Err(Error::usage(format!("{given} is neither a file nor a folder")));
        }
        // The readers open files beside the one named (a job's other
        // ranks, measured numbers, graph captures): none may lead out.
        for folder in folders_looked_into(&real) {
            let Ok(entries) = std::fs::read_dir(&folder) else { continue };
            for entry in entries.flatten() {
                let link = entry.file_type().is_ok_and(|t| t.is_symlink());
                let leads_out =
                    link && entry.path().canonicalize().is_ok_and(|target| !self.holds(&target));
                if leads_out {
                    return Err(Error::usage(format!(
                        "{given}: {} beside it is a link out of the roots ({}), which a reader may follow",
                        entry.path().display(),
                        self.list()
                    )));
                }
            }
        }
        Ok(real)
    }

    /// Whether a resolved path lies under a resolved root.
    fn holds(&self, real: &Path) -> bool {
        self.roots.iter().any(|(_, r)| real.starts_with(r))
    }

    fn outside(&self, given: &str) -> Error {
        Error::usage(format!(
            "{given} is outside the folders this server reads ({}); the roots are set when it starts (--root DIR)",
            self.list()
        ))
    }
}

/// A path under a root that cannot be resolved (missing, or refused by the
/// system), said as the readers say a missing file.
fn missing(given: &str, e: std::io::Error) -> Error {
    let why = if e.kind() == std::io::ErrorKind::NotFound {
        "no such file or folder".to_string()
    } else {
        e.to_string()
    };
    Error::usage(format!("{given}: {why}")).caused_by(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(dir: &Path) -> Roots {
        Roots::new(&[dir.to_path_buf()]).unwrap()
    }

    #[test]
    fn paths_under_a_root_resolve_and_others_are_refused() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("root");
        std::fs::create_dir_all(root.join("run")).unwrap();
        std::fs::write(root.join("run/t.json"), "{}").unwrap();
        std::fs::write(top.path().join("secret.json"), "{}").unwrap();
        let r = roots(&root);
        let real = root.canonicalize().unwrap().join("run/t.json");
        assert_eq!(r.resolve(real.to_str().unwrap()).unwrap(), real);
        assert_eq!(r.resolve("run/t.json").unwrap(), real);
        assert_eq!(r.resolve("run").unwrap(), real.parent().unwrap());
        let secret = top.path().join("secret.json");
        let refused = |p: &str| r.resolve(p).unwrap_err().to_string();
        assert!(refused(secret.to_str().unwrap()).contains("outside the folders"));
        assert!(refused("run/../../secret.json").contains("`..`"));
        assert!(refused("/etc/passwd").contains("outside the folders"));
        assert!(refused("run/absent.json").contains("no such file"));
        assert!(refused("").contains("empty path"));
        // `-` (standard input, the protocol's channel) is a missing file here.
        assert!(refused("-").contains("no such file"));
    }

    #[test]
    fn links_out_of_a_root_are_refused_named_or_beside() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("root");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::create_dir_all(root.join("b")).unwrap();
        std::fs::write(top.path().join("secret.json"), "{}").unwrap();
        std::fs::write(root.join("a/t.json"), "{}").unwrap();
        std::fs::write(root.join("b/t.json"), "{}").unwrap();
        std::os::unix::fs::symlink(top.path().join("secret.json"), root.join("a/out.json"))
            .unwrap();
        std::os::unix::fs::symlink(root.join("b/t.json"), root.join("b/in.json")).unwrap();
        let r = roots(&root);
        let err = r.resolve("a/out.json").unwrap_err().to_string();
        assert!(err.contains("outside the folders"), "{err}");
        let err = r.resolve("a/t.json").unwrap_err().to_string();
        assert!(err.contains("link out of the roots"), "{err}");
        // A link that stays inside is followed.
        assert_eq!(r.resolve("b/in.json").unwrap(), root.canonicalize().unwrap().join("b/t.json"));
    }

    #[test]
    fn a_root_must_be_a_folder() {
        let top = tempfile::tempdir().unwrap();
        let file = top.path().join("f");
        std::fs::write(&file, "").unwrap();
        let e = Roots::new(&[file]).unwrap_err();
        assert!(e.to_string().contains("not a folder"), "{e}");
        assert!(Roots::new(&[top.path().join("absent")]).is_err());
    }
}
