//! Live reload: a `notify` watcher on the folders of the files on screen.
//! Folders, not files: a profile rewritten atomically (temp file + rename,
//! as our capture does) is a new inode that a watch on the old one misses.
//! Every event in a watched folder wakes the loop, which compares the
//! files' modification times (`App::changed_on_disk`) after they settle.

use std::path::{Path, PathBuf};

use notify::{RecursiveMode, Watcher as _};
use tokio::sync::mpsc::UnboundedSender;

pub struct Watcher {
    inner: Option<notify::RecommendedWatcher>,
    folders: Vec<PathBuf>,
}

impl Watcher {
    /// A watcher that sends `()` on `changes` for every event. Without one
    /// (an OS limit reached), live reload is off and `r` still reloads.
    pub fn new(changes: UnboundedSender<()>) -> Watcher {
        let inner = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if event.is_ok_and(|e| !e.kind.is_access()) {
                let _ = changes.send(());
            }
        })
        .ok();
        Watcher { inner, folders: Vec::new() }
    }

    /// Watches the folders of `files`, and only those.
    pub fn watch(&mut self, files: &[PathBuf]) {
        let Some(w) = self.inner.as_mut() else { return };
        let mut want: Vec<PathBuf> = files.iter().map(|f| folder(f)).collect();
        want.sort();
        want.dedup();
        for gone in self.folders.iter().filter(|f| !want.contains(f)) {
            let _ = w.unwatch(gone);
        }
        for new in want.iter().filter(|f| !self.folders.contains(f)) {
            let _ = w.watch(new, RecursiveMode::NonRecursive);
        }
        self.folders = want;
    }
}

fn folder(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
