//! Gzip decompressed on its own thread, so that inflating and parsing a
//! `.json.gz` overlap on two cores instead of taking turns on one
//! (inflate is about a quarter of a gzipped read: BENCHMARKS.md).
//!
//! The thread fills buffers of [`CHUNK`] bytes and hands them over a
//! bounded channel; emptied buffers come back on a second channel, so
//! memory stays at [`IN_FLIGHT`] + 2 chunks whatever the file's size. When
//! the reader is dropped before the end, the thread sees the closed channel
//! at its next hand-over and stops.

use std::io::{self, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

/// Bytes per hand-over: large enough that the channel costs nothing
/// against inflating it, small enough that the parser reads it from cache
/// (1 MiB chunks cost 25 % more CPU time than inflating inline; 256 KiB,
/// none measurable: BENCHMARKS.md).
const CHUNK: usize = 256 << 10;
/// Chunks the inflater may run ahead of the parser.
const IN_FLIGHT: usize = 4;

/// The parser's end: reads what the inflating thread produced, in order.
pub struct ThreadedInflate {
    full: Receiver<io::Result<Vec<u8>>>,
    empty: SyncSender<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
    done: bool,
}

impl ThreadedInflate {
    /// Starts a thread that reads `decoder` (a gzip decoder over the file)
    /// to its end or first error.
    pub fn spawn<R: Read + Send + 'static>(mut decoder: R) -> io::Result<ThreadedInflate> {
        let (full_tx, full) = sync_channel::<io::Result<Vec<u8>>>(IN_FLIGHT);
        let (empty, empty_rx) = sync_channel::<Vec<u8>>(IN_FLIGHT + 2);
        thread::Builder::new().name("inflate".into()).spawn(move || {
            loop {
                let mut buf = empty_rx.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK));
                buf.resize(CHUNK, 0);
                let filled = fill(&mut decoder, &mut buf);
                let end = !matches!(filled, Ok(n) if n == CHUNK);
                let sent = match filled {
                    Ok(n) => {
                        buf.truncate(n);
                        full_tx.send(Ok(buf))
                    }
                    Err(e) => full_tx.send(Err(e)),
                };
                if end || sent.is_err() {
                    return;
                }
            }
        })?;
        Ok(ThreadedInflate { full, empty, current: Vec::new(), pos: 0, done: false })
    }
}

/// Reads until `buf` is full or the input ends; the count read.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl Read for ThreadedInflate {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.current.len() {
            if self.done {
                return Ok(0);
            }
            match self.full.recv() {
                Ok(Ok(next)) => {
                    // A short chunk is the last one.
                    self.done = next.len() < CHUNK;
                    let spent = std::mem::replace(&mut self.current, next);
                    self.pos = 0;
                    // The thread may have finished: then nobody wants it back.
                    let _ = self.empty.try_send(spent);
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                // The thread ended without a short chunk: it panicked.
                Err(_) => return Err(io::Error::other("the gzip thread stopped unexpectedly")),
            }
        }
        let n = out.len().min(self.current.len() - self.pos);
        out[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn inflate(gz: Vec<u8>) -> io::Result<Vec<u8>> {
        let mut r = ThreadedInflate::spawn(flate2::read::MultiGzDecoder::new(io::Cursor::new(gz)))?;
        let mut out = Vec::new();
        r.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn every_size_around_the_chunk_comes_back_whole() {
        for len in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17, (IN_FLIGHT + 3) * CHUNK] {
            let doc: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            assert_eq!(inflate(gzip(&doc)).unwrap(), doc, "{len} bytes");
        }
    }

    #[test]
    fn a_truncated_stream_is_an_error_after_the_bytes_before_it() {
        let doc: Vec<u8> = (0..5 * CHUNK).map(|i| (i % 7) as u8).collect();
        let gz = gzip(&doc);
        let cut = gz[..gz.len() / 2].to_vec();
        let mut r = ThreadedInflate::spawn(flate2::read::MultiGzDecoder::new(io::Cursor::new(cut)))
            .unwrap();
        let mut out = Vec::new();
        let err = r.read_to_end(&mut out).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
        assert!(!out.is_empty() && doc.starts_with(&out), "what came before the cut is delivered");
    }

    #[test]
    fn dropping_the_reader_early_stops_the_thread() {
        let doc = vec![b'x'; 20 * CHUNK];
        let mut r =
            ThreadedInflate::spawn(flate2::read::MultiGzDecoder::new(io::Cursor::new(gzip(&doc))))
                .unwrap();
        let mut first = [0u8; 10];
        r.read_exact(&mut first).unwrap();
        drop(r); // must not hang or panic: the thread's next send fails
    }
}
