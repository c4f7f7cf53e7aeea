//! Opening a trace or profile: a file, a pipe (`<(zcat x.json.gz)`,
//! `/dev/stdin`, a named FIFO) or standard input (`-`). Gzip is detected by
//! its magic bytes in the first buffer, not by the file name, and the input
//! is opened once: a pipe cannot be read twice. What a pipe delivers is
//! kept in an unnamed temporary file as it streams past, so a re-read (as
//! a profile, after sniffing) replays it instead of waiting on a pipe that
//! has nothing left. A progress bar
//! follows large file reads on a terminal.

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufReader, Cursor, IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use flate2::read::MultiGzDecoder;
pub use indicatif::ProgressBar;
use indicatif::ProgressStyle;

use super::inflate::ThreadedInflate;
use super::options::{Progress, ReadOptions};
use super::seekgz::{Checkpoints, GzReader};
use crate::error::{Error, Result};

/// Files above this size show a progress bar when stderr is a terminal.
const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// Where a reader's bytes come from. Cheap to clone; every [`Source::open`]
/// starts again at the first byte.
#[derive(Clone)]
pub struct Source {
    /// How the user named it, for messages.
    label: String,
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    /// A regular file: each pass opens it anew.
    File(PathBuf),
    /// A pipe, FIFO, character device or stdin: read once, replayed.
    Stream(Rc<RefCell<Spool>>),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label)
    }
}

/// The live stream and the copy of what it has delivered so far.
struct Spool {
    live: Option<Box<dyn Read>>,
    /// Unnamed (already unlinked) temporary file; created on first use.
    copy: Option<File>,
    len: u64,
}

impl Source {
    /// A regular file, opened anew for each pass.
    pub fn file(path: &Path) -> Source {
        Source { label: path.display().to_string(), kind: Kind::File(path.to_path_buf()) }
    }

    /// Anything read once: a pipe, a FIFO, stdin.
    pub fn stream(label: impl Into<String>, live: Box<dyn Read>) -> Source {
        let spool = Spool { live: Some(live), copy: None, len: 0 };
        Source { label: label.into(), kind: Kind::Stream(Rc::new(RefCell::new(spool))) }
    }

    /// Standard input (`-` on the command line).
    pub fn stdin() -> Source {
        Source::stream("standard input", Box::new(std::io::stdin()))
    }

    /// The path as given: a FIFO or device is opened once, here (a FIFO
    /// waits for its writer, as any reader of a FIFO does).
    pub fn path(path: &Path) -> Result<Source> {
        let meta = std::fs::metadata(path).map_err(|e| {
            Error::failed(format!("cannot open {}: {e}", path.display())).caused_by(e)
        })?;
        if meta.is_file() {
            return Ok(Source::file(path));
        }
        let f = File::open(path).map_err(|e| {
            Error::failed(format!("cannot open {}: {e}", path.display())).caused_by(e)
        })?;
        if f.is_terminal() {
            return Err(Error::usage(format!(
                "{} is a terminal: pipe a trace or profile in instead",
                path.display()
            )));
        }
        Ok(Source::stream(path.display().to_string(), Box::new(f)))
    }

    /// The regular file behind this source, if it is one.
    pub fn file_path(&self) -> Option<&Path> {
        match &self.kind {
            Kind::File(p) => Some(p),
            Kind::Stream(_) => None,
        }
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// Opens the input for one pass from its first byte to its last: a
    /// plain (not gzipped) regular file is mapped, anything else is
    /// [`Source::open`]ed.
    pub fn open_pass(&self, opts: &ReadOptions) -> Result<Opened> {
        if let Kind::File(path) = &self.kind {
            if let Some(mapped) = MappedFile::open(path, opts) {
                return Ok(Opened::Mapped(mapped));
            }
        }
        self.open(opts).map(Opened::Stream)
    }

    /// Opens the input from its first byte, decompressing gzip
    /// transparently (decided by the first two bytes read).
    pub fn open(&self, opts: &ReadOptions) -> Result<Box<dyn Read>> {
        match &self.kind {
            Kind::File(path) => {
                let file = File::open(path).map_err(|e| {
                    Error::failed(format!("cannot open {}: {e}", path.display())).caused_by(e)
                })?;
                let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                let bar = progress_bar(path, len, &opts.progress);
                let raw: Box<dyn Read + Send> = match bar {
                    Some(bar) => Box::new(bar.wrap_read(file)),
                    None => Box::new(file),
                };
                let (whole, gzipped) = sniff(raw, &self.label)?;
                if !gzipped {
                    return Ok(Box::new(whole));
                }
                if !opts.spare_core() {
                    return Ok(Box::new(gunzip(whole)));
                }
                // A file is ours to move: inflate it on a thread of its own.
                let inflate = ThreadedInflate::spawn(gunzip(whole)).map_err(|e| {
                    Error::failed(format!("cannot start a thread to read {}: {e}", self.label))
                        .caused_by(e)
                })?;
                Ok(Box::new(inflate))
            }
            // A stream's replay shares its spool with later passes (not
            // Send): it is inflated where it is parsed.
            Kind::Stream(spool) => {
                let (whole, gzipped) =
                    sniff(Replay { spool: Rc::clone(spool), pos: 0 }, &self.label)?;
                Ok(if gzipped { Box::new(gunzip(whole)) } else { Box::new(whole) })
            }
        }
    }
}

/// A progress bar over a file of `len` bytes, when one is wanted: the
/// caller's own, or a large file read for the user at a terminal.
fn progress_bar(path: &Path, len: u64, progress: &Progress) -> Option<ProgressBar> {
    match progress {
        Progress::Off => None,
        Progress::To(bar) => {
            bar.set_length(len);
            bar.set_position(0);
            Some(bar.clone())
        }
        Progress::Terminal => {
            (len >= PROGRESS_MIN_BYTES && std::io::stderr().is_terminal()).then(|| {
                let bar = ProgressBar::new(len);
                bar.set_style(
                    ProgressStyle::with_template(
                        "reading {msg} {bar:30} {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar.set_message(
                    path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
                );
                bar
            })
        }
    }
}

/// What one whole pass reads: a plain file's bytes in place, or a stream.
pub enum Opened {
    Mapped(MappedFile),
    Stream(Box<dyn Read>),
}

/// A plain file mapped for one pass, read front to back. Read through
/// read(2), each byte was copied from the page cache into our buffer
/// first (6% of a one-core read of 1 GB); mapped, the parser reads the
/// page cache itself. The pages behind the reader are given back as it
/// goes ([`MappedFile::advance`]), so the memory a pass holds stays that
/// of a read buffer whatever the file's size.
pub struct MappedFile {
    map: memmap2::Mmap,
    /// Pages before this offset are given back. Atomic: the parallel
    /// reader's threads share the file while the sink moves this on.
    released: AtomicUsize,
    bar: Option<ProgressBar>,
}

/// Pages are given back this many bytes at a time: a multiple of every
/// page size (4, 16, 64 KiB), and few calls (500 per GB).
const RELEASE_STEP: usize = 2 << 20;

impl MappedFile {
    /// `path` mapped, when it is a non-empty regular file that does not
    /// start as gzip; `None` sends the caller to the read(2) path, which
    /// also says why a file cannot be opened.
    fn open(path: &Path, opts: &ReadOptions) -> Option<MappedFile> {
        if !opts.mmap {
            return None;
        }
        let file = File::open(path).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() == 0 {
            return None;
        }
        // SAFETY: the mapping is read-only and lives as long as this value.
        // A file changed by another process while it is read shows us its
        // new bytes (torn events read as broken JSON), as read(2) would; one
        // truncated under us ends the process with SIGBUS — the risk every
        // mapping reader (ripgrep's, for one) takes for the speed, and what
        // `--no-mmap` is for.
        let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
        if map.starts_with(&[0x1f, 0x8b]) {
            return None;
        }
        // No MADV_SEQUENTIAL: it marks the pages as not worth keeping, and
        // a trace is often read again (another lens, the explorer).
        let bar = progress_bar(path, meta.len(), &opts.progress);
        Some(MappedFile { map, released: AtomicUsize::new(0), bar })
    }

    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The reader is done with the bytes before `upto`: moves the progress
    /// bar and gives their pages back, [`RELEASE_STEP`] at a time (they
    /// stay in the page cache; touched again, they map again).
    pub fn advance(&self, upto: usize) {
        if let Some(bar) = &self.bar {
            bar.set_position(upto as u64);
        }
        let end = upto.min(self.map.len()) / RELEASE_STEP * RELEASE_STEP;
        let released = self.released.load(Ordering::Relaxed);
        if end > released {
            #[cfg(unix)]
            // SAFETY: MADV_DONTNEED on a read-only private file mapping only
            // drops the page table entries: the bytes read back the same.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    released,
                    end - released,
                )
            };
            self.released.store(end, Ordering::Relaxed);
        }
    }

    /// The reader has met the end of the file (it may still be parsing
    /// the bytes it holds, so no page is given back here): the progress
    /// bar says all was read.
    pub fn read_to_end(&self) {
        if let Some(bar) = &self.bar {
            bar.set_position(self.map.len() as u64);
        }
    }
}

/// The rest of a mapped file as a reader, from `pos`: where the one-thread
/// scanner goes on after the parallel reader.
pub struct MappedReader {
    file: MappedFile,
    pos: usize,
}

impl MappedReader {
    pub fn new(file: MappedFile, pos: usize) -> MappedReader {
        MappedReader { file, pos }
    }
}

impl Read for MappedReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let rest = &self.file.bytes()[self.pos.min(self.file.map.len())..];
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        self.file.advance(self.pos);
        Ok(n)
    }
}

/// A stream with its first bytes, read to sniff it, put back in front.
type Whole<R> = std::io::Chain<Cursor<Vec<u8>>, R>;

/// Reads the first bytes once and puts them back in front of the stream;
/// true when they are gzip's magic.
fn sniff<R: Read>(mut raw: R, label: &str) -> Result<(Whole<R>, bool)> {
    let mut head = [0u8; 2];
    let mut n = 0;
    while n < head.len() {
        match raw.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::failed(format!("cannot read {label}: {e}")).caused_by(e)),
        }
    }
    let gzipped = n == 2 && head == [0x1f, 0x8b];
    Ok((Cursor::new(head[..n].to_vec()).chain(raw), gzipped))
}

/// The decoder over a gzip stream. The scanner reads in large chunks
/// itself: only gzip needs a buffer.
fn gunzip<R: Read>(whole: R) -> GzipErrors<MultiGzDecoder<BufReader<R>>> {
    GzipErrors(MultiGzDecoder::new(BufReader::with_capacity(1 << 20, whole)))
}

/// One pass over a stream: the spooled copy first, then the live stream,
/// copying as it goes.
struct Replay {
    spool: Rc<RefCell<Spool>>,
    pos: u64,
}

impl Read for Replay {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut s = self.spool.borrow_mut();
        if self.pos < s.len {
            let want = buf.len().min((s.len - self.pos) as usize);
            let copy = s.copy.as_mut().expect("a spool with bytes has its file");
            copy.seek(SeekFrom::Start(self.pos))?;
            let n = copy.read(&mut buf[..want])?;
            self.pos += n as u64;
            return Ok(n);
        }
        let Some(live) = s.live.as_mut() else { return Ok(0) };
        let n = live.read(buf)?;
        if n == 0 {
            s.live = None;
            return Ok(0);
        }
        if s.copy.is_none() {
            s.copy = Some(tempfile::tempfile()?);
        }
        let end = s.len;
        let copy = s.copy.as_mut().expect("just created");
        copy.seek(SeekFrom::Start(end))?;
        copy.write_all(&buf[..n]).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot keep a copy of the stream in the temporary folder: {e}"),
            )
        })?;
        s.len += n as u64;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Names gzip failures as such, so a truncated `.json.gz` reads as one.
struct GzipErrors<R>(R);

impl<R: Read> Read for GzipErrors<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf).map_err(|e| {
            let what = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                "gzip stream ends early (truncated file?)".to_string()
            } else {
                format!("gzip: {e}")
            };
            std::io::Error::new(e.kind(), what)
        })
    }
}

/// Opens the gzip file `path` for one whole pass that leaves its
/// checkpoints in `into` (src/trace/seekgz.rs), inflating on a thread of
/// its own when a core is spare, as [`Source::open`] does.
pub fn open_gz_recording(
    path: &Path,
    into: Arc<Mutex<Checkpoints>>,
    spacing: u64,
    opts: &ReadOptions,
) -> Result<Box<dyn Read>> {
    let cannot = |e: std::io::Error| Error::failed(format!("cannot open {}: {e}", path.display()));
    let reader = GzReader::recording(path, into, spacing).map_err(cannot)?;
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    // Only a caller's own bar: a gzip file read with checkpoints is the
    // explorer's first read, which draws its own.
    let progress = match &opts.progress {
        Progress::To(bar) => Progress::To(bar.clone()),
        _ => Progress::Off,
    };
    let reader: Box<dyn Read + Send> = match progress_bar(path, len, &progress) {
        Some(bar) => Box::new(GzProgress { gz: reader, bar }),
        None => Box::new(reader),
    };
    if !opts.spare_core() {
        return Ok(reader);
    }
    Ok(Box::new(ThreadedInflate::spawn(reader).map_err(|e| {
        Error::failed(format!("cannot start a thread to read {}: {e}", path.display())).caused_by(e)
    })?))
}

/// A gzip pass that moves `bar` to the compressed bytes it has consumed.
struct GzProgress {
    gz: GzReader,
    bar: ProgressBar,
}

impl Read for GzProgress {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.gz.read(buf)?;
        self.bar.set_position(self.gz.consumed());
        Ok(n)
    }
}

/// Whether the regular file at `path` starts with gzip's magic.
pub fn is_gzip_file(path: &Path) -> bool {
    let mut head = [0u8; 2];
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok()
        && head == [0x1f, 0x8b]
}

/// Opens `path` for reading, decompressing gzip transparently.
pub fn open(path: &Path, opts: &ReadOptions) -> Result<Box<dyn Read>> {
    Source::path(path)?.open(opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipe-like reader: short reads, and nothing after the end.
    struct Trickle(Vec<u8>, usize);
    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(3).min(self.0.len() - self.1);
            buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
            self.1 += n;
            Ok(n)
        }
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn a_stream_is_read_once_and_replayed_whole() {
        let doc = b"[{\"ph\": \"X\"}, 1, 2, 3]".to_vec();
        for bytes in [doc.clone(), gzip(&doc)] {
            let src = Source::stream("pipe", Box::new(Trickle(bytes, 0)));
            // A first pass that stops early, then two whole ones.
            let mut first = [0u8; 5];
            src.open(&ReadOptions::default()).unwrap().read_exact(&mut first).unwrap();
            assert_eq!(&first, &doc[..5]);
            for _ in 0..2 {
                let mut all = Vec::new();
                src.open(&ReadOptions::default()).unwrap().read_to_end(&mut all).unwrap();
                assert_eq!(all, doc);
            }
        }
    }

    #[test]
    fn one_byte_and_empty_streams() {
        for bytes in [&b""[..], b"x", b"\x1f"] {
            let src = Source::stream("pipe", Box::new(Trickle(bytes.to_vec(), 0)));
            let mut all = Vec::new();
            src.open(&ReadOptions::default()).unwrap().read_to_end(&mut all).unwrap();
            assert_eq!(all, bytes);
        }
    }
}
