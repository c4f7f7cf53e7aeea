//! Random access into a gzip file, zran-style: while a pass inflates the
//! whole file it records checkpoints — every [`SPACING`] bytes of output,
//! the inflater's state, the last 32 KiB it wrote (the window a resumed
//! inflate refers back into) and where in the compressed file it stood —
//! so that a later read of bytes far into the file (the explorer's
//! Timeline opening one step) resumes at the checkpoint before them
//! instead of inflating everything from the start.
//!
//! Hand-written over miniz_oxide's core inflater because the streaming
//! decoders (flate2's, zlib's) cannot copy their state out: miniz_oxide's
//! [`DecompressorOxide`] is a plain value that `Clone`s, and its wrapping
//! output buffer is the window. The whole-file pass checks each member's
//! CRC-32 and length, as gzip does; a resumed read trusts the checkpoint
//! (the same file, checked when the checkpoints were taken).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, Mutex};

use miniz_oxide::inflate::TINFLStatus;
use miniz_oxide::inflate::core::inflate_flags::TINFL_FLAG_HAS_MORE_INPUT;
use miniz_oxide::inflate::core::{DecompressorOxide, decompress};

/// Output bytes between checkpoints: a resumed read inflates at most this
/// much before the bytes it wants (a few ms), and each checkpoint holds
/// about 43 kB (1 GB of JSON: ~11 MB).
pub const SPACING: u64 = 4 << 20;

/// Deflate's window, and the size of the wrapping output buffer.
const WINDOW: usize = 32 * 1024;
/// Compressed bytes read from the file at a time.
const INPUT: usize = 256 * 1024;

/// One place to resume inflating from.
#[derive(Clone)]
struct Point {
    /// Inflated bytes before this point.
    out: u64,
    /// File offset of the first compressed byte the inflater has not taken.
    input: u64,
    state: Box<DecompressorOxide>,
    window: Box<[u8]>,
    /// Where in `window` the next byte will be written.
    pos: usize,
}

/// The checkpoints of one gzip file, in output order.
#[derive(Clone, Default)]
pub struct Checkpoints {
    points: Vec<Point>,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Checkpoints({} points)", self.points.len())
    }
}

impl Checkpoints {
    pub fn len(&self) -> usize {
        self.points.len()
    }
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
    /// Bytes the checkpoints hold.
    pub fn heap_bytes(&self) -> usize {
        self.points.len() * (size_of::<Point>() + size_of::<DecompressorOxide>() + WINDOW)
    }
    /// Inflated offset of the last checkpoint at or before `offset`.
    pub fn before(&self, offset: u64) -> Option<u64> {
        self.last_at_or_before(offset).map(|p| p.out)
    }
    fn last_at_or_before(&self, offset: u64) -> Option<&Point> {
        let k = self.points.partition_point(|p| p.out <= offset);
        k.checked_sub(1).map(|k| &self.points[k])
    }

    /// A reader of the inflated bytes of `path` from the last checkpoint at
    /// or before `offset`, with that checkpoint's inflated offset (the
    /// offset of the reader's first byte).
    pub fn resume(&self, path: &Path, offset: u64) -> io::Result<Option<(GzReader, u64)>> {
        let Some(p) = self.last_at_or_before(offset) else { return Ok(None) };
        let mut file = File::open(path)?;
        file.seek(SeekFrom::Start(p.input))?;
        Ok(Some((GzReader::at(file, p.clone(), Stage::Body, None), p.out)))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    /// Before a member's header (the first, or after a trailer).
    Header,
    Body,
    /// The deflate stream ended: the 8-byte trailer follows.
    Trailer,
    Done,
}

/// Where a recording pass leaves its checkpoints.
struct Record {
    into: Arc<Mutex<Checkpoints>>,
    /// The output offset to take the next one at.
    next: u64,
    spacing: u64,
}

/// The inflated bytes of a gzip file (every member, as `gzip -d` does).
pub struct GzReader {
    file: File,
    input: Vec<u8>,
    in_start: usize,
    in_end: usize,
    /// File offset of `input[in_start]`.
    in_file: u64,
    eof: bool,
    state: Box<DecompressorOxide>,
    window: Box<[u8]>,
    pos: usize,
    /// Inflated bytes in `window` not yet handed out.
    ready: (usize, usize),
    /// Inflated bytes handed out or ready.
    out: u64,
    stage: Stage,
    /// The member's CRC-32 so far (whole-file reads only).
    crc: Option<crc32fast::Hasher>,
    member_out: u64,
    /// Where to record checkpoints (whole-file reads that keep them).
    record: Option<Record>,
}

impl GzReader {
    /// Reads `path` from its start, checking every member, taking a
    /// checkpoint every `spacing` inflated bytes into `into`.
    pub fn recording(
        path: &Path,
        into: Arc<Mutex<Checkpoints>>,
        spacing: u64,
    ) -> io::Result<GzReader> {
        let start = Point {
            out: 0,
            input: 0,
            state: Box::default(),
            window: vec![0u8; WINDOW].into_boxed_slice(),
            pos: 0,
        };
        let mut r = GzReader::at(
            File::open(path)?,
            start,
            Stage::Header,
            Some(Record { into, next: 0, spacing: spacing.max(1) }),
        );
        r.crc = Some(crc32fast::Hasher::new());
        Ok(r)
    }

    /// Compressed bytes consumed so far (the file offset reached).
    pub fn consumed(&self) -> u64 {
        self.in_file
    }

    /// A reader of `file` (positioned at `p.input`) from the point `p`.
    fn at(file: File, p: Point, stage: Stage, record: Option<Record>) -> GzReader {
        GzReader {
            file,
            input: vec![0; INPUT],
            in_start: 0,
            in_end: 0,
            in_file: p.input,
            eof: false,
            state: p.state,
            window: p.window,
            pos: p.pos,
            ready: (0, 0),
            out: p.out,
            stage,
            crc: None,
            member_out: 0,
            record,
        }
    }

    /// At least `n` compressed bytes buffered, unless the file ends first.
    fn want(&mut self, n: usize) -> io::Result<bool> {
        while self.in_end - self.in_start < n && !self.eof {
            if self.in_start > 0 {
                self.input.copy_within(self.in_start..self.in_end, 0);
                self.in_end -= self.in_start;
                self.in_start = 0;
            }
            if self.in_end == self.input.len() {
                self.input.resize(self.input.len() * 2, 0);
            }
            match self.file.read(&mut self.input[self.in_end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.in_end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.in_end - self.in_start >= n)
    }

    fn take(&mut self, n: usize) {
        self.in_start += n;
        self.in_file += n as u64;
    }

    /// The bytes at the cursor, after at least `n` are buffered.
    fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        if !self.want(n)? {
            return Err(truncated());
        }
        Ok(&self.input[self.in_start..self.in_start + n])
    }

    /// A member's header (RFC 1952 §2.3): magic, method, flags and the
    /// optional fields they announce.
    fn header(&mut self) -> io::Result<()> {
        let h: [u8; 10] = self.peek(10)?.try_into().expect("10 bytes");
        if h[0..2] != [0x1f, 0x8b] || h[2] != 8 {
            return Err(bad("invalid gzip header"));
        }
        let flags = h[3];
        self.take(10);
        if flags & 4 != 0 {
            let x = self.peek(2)?;
            let len = usize::from(u16::from_le_bytes([x[0], x[1]]));
            self.take(2);
            self.peek(len)?;
            self.take(len);
        }
        for bit in [8u8, 16] {
            if flags & bit != 0 {
                // A zero-terminated name or comment.
                loop {
                    let c = self.peek(1)?[0];
                    self.take(1);
                    if c == 0 {
                        break;
                    }
                }
            }
        }
        if flags & 2 != 0 {
            self.peek(2)?;
            self.take(2);
        }
        *self.state = DecompressorOxide::default();
        self.member_out = 0;
        if let Some(c) = self.crc.as_mut() {
            *c = crc32fast::Hasher::new();
        }
        Ok(())
    }

    fn trailer(&mut self) -> io::Result<()> {
        let t: [u8; 8] = self.peek(8)?.try_into().expect("8 bytes");
        self.take(8);
        if let Some(c) = self.crc.take() {
            let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
            let len = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
            if c.finalize() != crc || self.member_out as u32 != len {
                // flate2's words, so a bad file reads the same on every path.
                return Err(bad("corrupt gzip stream does not have a matching checksum"));
            }
            self.crc = Some(crc32fast::Hasher::new());
        }
        // Another member may follow; padding zeros after the last are
        // tolerated as gzip does.
        self.stage = if self.want(1)? && self.input[self.in_start] != 0 {
            Stage::Header
        } else {
            Stage::Done
        };
        Ok(())
    }

    /// Inflates the next piece into the window; false at the end.
    fn inflate(&mut self) -> io::Result<bool> {
        loop {
            match self.stage {
                Stage::Done => return Ok(false),
                Stage::Header => {
                    self.header()?;
                    self.stage = Stage::Body;
                }
                Stage::Trailer => self.trailer()?,
                Stage::Body => {
                    if let Some(rec) = self.record.as_mut()
                        && self.out >= rec.next
                    {
                        rec.next = self.out + rec.spacing;
                        let point = Point {
                            out: self.out,
                            input: self.in_file,
                            state: self.state.clone(),
                            window: self.window.clone(),
                            pos: self.pos,
                        };
                        rec.into.lock().unwrap_or_else(|e| e.into_inner()).points.push(point);
                    }
                    if self.in_start == self.in_end {
                        self.want(1)?;
                    }
                    let flags = if self.eof { 0 } else { TINFL_FLAG_HAS_MORE_INPUT };
                    let (status, used, made) = decompress(
                        &mut self.state,
                        &self.input[self.in_start..self.in_end],
                        &mut self.window,
                        self.pos,
                        flags,
                    );
                    self.take(used);
                    if made > 0 {
                        if let Some(c) = self.crc.as_mut() {
                            c.update(&self.window[self.pos..self.pos + made]);
                        }
                        self.ready = (self.pos, self.pos + made);
                        self.pos = (self.pos + made) & (WINDOW - 1);
                        self.out += made as u64;
                        self.member_out += made as u64;
                    }
                    match status {
                        TINFLStatus::Done => self.stage = Stage::Trailer,
                        TINFLStatus::NeedsMoreInput => {
                            if self.eof && used == 0 && made == 0 {
                                return Err(truncated());
                            }
                        }
                        TINFLStatus::HasMoreOutput => {}
                        TINFLStatus::FailedCannotMakeProgress => return Err(truncated()),
                        _ => return Err(bad("invalid compressed data")),
                    }
                    if made > 0 {
                        return Ok(true);
                    }
                }
            }
        }
    }
}

impl Read for GzReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.ready.0 == self.ready.1 {
            if !self.inflate()? {
                return Ok(0);
            }
        }
        let (a, b) = self.ready;
        let n = (b - a).min(buf.len());
        buf[..n].copy_from_slice(&self.window[a..a + n]);
        self.ready.0 += n;
        Ok(n)
    }
}

fn truncated() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "gzip stream ends early (truncated file?)")
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("gzip: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(parts: &[&[u8]]) -> Vec<u8> {
        // Several members, as `cat a.gz b.gz` makes.
        let mut all = Vec::new();
        for p in parts {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(p).unwrap();
            all.extend(e.finish().unwrap());
        }
        all
    }

    fn sample(n: usize) -> Vec<u8> {
        // Compressible but not trivial: matches reach back across the window.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if i % 7 == 0 {
                    b"{}[],:\"0123456789abc"[(x % 20) as usize]
                } else {
                    b"kernel_name_"[i % 12]
                }
            })
            .collect()
    }

    #[test]
    fn reads_every_member_and_resumes_at_any_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json.gz");
        let (a, b) = (sample(700_000), sample(300_011));
        std::fs::write(&path, gz(&[&a, &b])).unwrap();
        let whole: Vec<u8> = [a, b].concat();
        let points = Arc::new(Mutex::new(Checkpoints::default()));
        let mut out = Vec::new();
        GzReader::recording(&path, Arc::clone(&points), 50_000)
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, whole);
        let points = points.lock().unwrap().clone();
        assert!(points.len() >= 12, "{} checkpoints", points.len());
        for want in [0u64, 1, 49_999, 50_000, 123_456, 699_999, 700_000, 700_001, 999_999] {
            let (mut r, from) = points.resume(&path, want).unwrap().unwrap();
            assert!(from <= want && want - from < 50_000 + 32 * 1024, "{want}: from {from}");
            let mut rest = Vec::new();
            r.read_to_end(&mut rest).unwrap();
            assert_eq!(rest, whole[from as usize..], "resumed at {from} for {want}");
        }
    }

    #[test]
    fn broken_files_say_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.gz");
        let good = gz(&[&sample(100_000)]);
        let read = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            let points = Arc::new(Mutex::new(Checkpoints::default()));
            let mut out = Vec::new();
            GzReader::recording(&path, points, SPACING)
                .unwrap()
                .read_to_end(&mut out)
                .map(|_| out)
                .map_err(|e| e.to_string())
        };
        assert!(read(&good).is_ok());
        assert_eq!(
            read(&good[..good.len() / 2]).unwrap_err(),
            "gzip stream ends early (truncated file?)"
        );
        let mut crc = good.clone();
        let k = crc.len() - 6;
        crc[k] ^= 1;
        assert_eq!(
            read(&crc).unwrap_err(),
            "gzip: corrupt gzip stream does not have a matching checksum"
        );
        let mut body = good.clone();
        body[12] ^= 0xff;
        assert!(read(&body).unwrap_err().starts_with("gzip"), "{:?}", read(&body));
        assert_eq!(read(b"\x1f\x8b\x07rest-of-it").unwrap_err(), "gzip: invalid gzip header");
    }
}
