//! Opening a trace or profile file: gzip is detected by its magic bytes,
//! not by the file name, and a progress bar follows large reads on a
//! terminal.

use std::fs::File;
use std::io::{BufReader, IsTerminal, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use indicatif::{ProgressBar, ProgressStyle};

use crate::error::{Error, Result};

/// Files above this size show a progress bar when stderr is a terminal.
const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// Opens `path` for reading, decompressing gzip transparently.
pub fn open(path: &Path, progress: bool) -> Result<Box<dyn Read>> {
    let file = File::open(path).map_err(|e| Error::failed(format!("cannot open {}: {e}", path.display())))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut head = [0u8; 2];
    let n = read_head(&file, &mut head, path)?;
    let file = File::open(path).map_err(|e| Error::failed(format!("cannot open {}: {e}", path.display())))?;
    let bar = (progress && len >= PROGRESS_MIN_BYTES && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(len);
        bar.set_style(
            ProgressStyle::with_template("reading {msg} {bar:30} {bytes}/{total_bytes} ({bytes_per_sec}, {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default());
        bar
    });
    let counted: Box<dyn Read> = match bar {
        Some(bar) => Box::new(bar.wrap_read(file)),
        None => Box::new(file),
    };
    // The scanner reads in large chunks itself: only gzip needs a buffer.
    if n == 2 && head == [0x1f, 0x8b] {
        Ok(Box::new(GzipErrors(MultiGzDecoder::new(BufReader::with_capacity(1 << 20, counted)))))
    } else {
        Ok(counted)
    }
}

fn read_head(mut file: &File, head: &mut [u8; 2], path: &Path) -> Result<usize> {
    let mut n = 0;
    while n < 2 {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::failed(format!("cannot read {}: {e}", path.display()))),
        }
    }
    Ok(n)
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
