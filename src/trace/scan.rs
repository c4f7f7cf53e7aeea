//! A resumable, bounded-memory scanner over one JSON document.
//!
//! This is the hot path of every reader on a raw trace, and the reason it is
//! written here rather than taken from a crate: serde_json over a `Read`
//! cannot borrow, and reading the whole document into memory is ruled out
//! (traces run to several GB). The scanner only finds value boundaries — it
//! tracks strings, escapes and nesting depth, jumping through string bodies
//! with `memchr` — and hands each complete trace event, as a borrowed
//! slice, to the event parser (`event.rs`, written for this: it keeps only
//! the fields the analysis reads). Memory is one read chunk plus the
//! largest single event.

use std::io::Read;
use std::ops::Deref;

use super::input::{MappedFile, MappedReader};
use super::lex::sanitize_nonfinite;
use crate::error::{Error, Result};

const CHUNK: usize = 1 << 20;

/// The most one value the scanner hands over (a trace event, a header
/// key's value) may hold. Real events are a few KB (a long Python stack or
/// template name, a few hundred); a larger one is a hostile or corrupt
/// file, and holding it costs several times its size (the buffer, the
/// names kept from it): it is refused with [`too_large`] instead. Values
/// only skipped (an unknown top-level key) are streamed past whatever
/// their size.
pub const MAX_VALUE: usize = 64 << 20;

/// The sentence for a value over [`MAX_VALUE`]: `what` is "event N" or
/// "the value".
fn too_large(what: &str, offset: u64) -> Error {
    Error::failed(format!(
        "{what} at byte {offset} is larger than {} MiB, more than any real trace event: the file is corrupt or not a PyTorch trace",
        MAX_VALUE >> 20
    ))
}

pub struct Scanner<R> {
    src: R,
    buf: Buf,
    /// Next unread byte in `buf`.
    pos: usize,
    /// End of valid data in `buf`.
    end: usize,
    eof: bool,
    /// Bytes of the stream that lie before `buf[0]`, for error offsets.
    base: u64,
}

/// The bytes a scanner reads: its own buffer, which reads fill, or a
/// mapped file, which it walks through a window `CHUNK` bytes longer at
/// each fill, so that both run the same code above `fill`.
enum Buf {
    Read(Vec<u8>),
    Mapped(MappedFile),
}

impl Deref for Buf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Buf::Read(v) => v,
            Buf::Mapped(m) => m.bytes(),
        }
    }
}

/// Where a value ends, and whether it holds the non-JSON literals
/// `NaN` / `Infinity` that Python's json module writes.
struct ValueEnd {
    end: usize,
    nonfinite: bool,
}

impl<R: Read> Scanner<R> {
    pub fn new(src: R) -> Self {
        Scanner { src, buf: Buf::Read(vec![0; CHUNK]), pos: 0, end: 0, eof: false, base: 0 }
    }

    /// A scanner over `src` whose first byte is byte `base` of the stream
    /// (a file entered by seeking), so offsets stay those of the whole file.
    pub fn starting_at(src: R, base: u64) -> Self {
        Scanner { base, ..Scanner::new(src) }
    }

    /// Discards input up to byte `offset` of the stream (forward only).
    pub fn skip_to(&mut self, offset: u64) -> Result<()> {
        while self.base + (self.end as u64) < offset {
            self.pos = self.end;
            if !self.fill()? {
                return Err(
                    self.err("unexpected end of input (the file changed since it was read?)")
                );
            }
        }
        if offset > self.offset() {
            self.pos = (offset - self.base) as usize;
        }
        Ok(())
    }

    /// Byte offset of the next unread byte in the (decompressed) stream.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn err(&self, what: &str) -> Error {
        Error::failed(format!("invalid JSON at byte {}: {what}", self.offset()))
    }

    /// Reads more input, keeping `buf[pos..end]`. Returns false at EOF.
    fn fill(&mut self) -> Result<bool> {
        if self.eof {
            return Ok(false);
        }
        let buf = match &mut self.buf {
            Buf::Read(buf) => buf,
            Buf::Mapped(file) => {
                let len = file.bytes().len();
                if self.end == len {
                    self.eof = true;
                    file.read_to_end();
                    return Ok(false);
                }
                file.advance(self.pos);
                self.end = (self.end + CHUNK).min(len);
                return Ok(true);
            }
        };
        if self.pos > 0 {
            buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if buf.len() - self.end < CHUNK / 2 {
            let grow = buf.len().max(CHUNK);
            buf.resize(buf.len() + grow, 0);
        }
        loop {
            match self.src.read(&mut buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // After how much input, not the start of the value being
                // read (which was "byte 0" for a gzip header's error): the
                // JSON's bytes (a .gz file's inflated ones), a buffer's worth.
                Err(e) => {
                    let read = self.base + self.end as u64;
                    let after = if read > 0 {
                        format!(" after {read} bytes of JSON")
                    } else {
                        String::new()
                    };
                    return Err(Error::failed(format!("read error{after}: {e}")).caused_by(e));
                }
            }
        }
    }

    /// Skips a UTF-8 byte order mark at the very start (some editors and
    /// Windows tools write one; JSON parsers differ on it, we accept it).
    pub fn skip_bom(&mut self) -> Result<()> {
        while self.end - self.pos < 3 && self.fill()? {}
        if self.buf[self.pos..self.end].starts_with(b"\xEF\xBB\xBF") {
            self.pos += 3;
        }
        Ok(())
    }

    /// Skips whitespace and returns the next byte without consuming it.
    pub fn peek(&mut self) -> Result<Option<u8>> {
        loop {
            while self.pos < self.end {
                let b = self.buf[self.pos];
                if matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                    self.pos += 1;
                } else {
                    return Ok(Some(b));
                }
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Consumes `b`, which must be the next non-whitespace byte.
    pub fn expect(&mut self, b: u8) -> Result<()> {
        match self.peek()? {
            Some(c) if c == b => {
                self.pos += 1;
                Ok(())
            }
            Some(c) => Err(self.err(&format!("expected '{}', found '{}'", b as char, c as char))),
            None => Err(self.err(&format!("unexpected end of input, expected '{}'", b as char))),
        }
    }

    /// Finds the end of the value starting at `pos` (after whitespace),
    /// reading more input as needed. Offsets stay valid: `fill` only moves
    /// data when `pos` moves, and we keep `pos` at the value's start.
    /// With `keep` false the bytes scanned are discarded as the scan goes
    /// (a value skipped, of any size); with `keep` the value is held whole
    /// in `buf[pos..end]`, up to [`MAX_VALUE`].
    fn value_end(&mut self, keep: bool) -> Result<ValueEnd> {
        match self.peek()? {
            None => Err(self.err("unexpected end of input, expected a value")),
            Some(b'{') => self.object_end(keep),
            Some(_) => self.generic_end(keep),
        }
    }

    /// Before reading more in the middle of a value whose scan is at `i`:
    /// drops what was scanned when it is not kept, refuses a kept value
    /// over [`MAX_VALUE`]. Returns the scan position relative to `pos`.
    fn before_fill(&mut self, i: usize, keep: bool) -> Result<usize> {
        if !keep {
            // `i` may lie one past `end` (an escape's second byte).
            self.pos = i.min(self.end);
        } else if i - self.pos > MAX_VALUE {
            return Err(too_large("the value", self.offset()));
        }
        Ok(i - self.pos)
    }

    /// The end of an object: only braces and quotes matter for that, so the
    /// scan jumps from one to the next with SIMD searches.
    fn object_end(&mut self, keep: bool) -> Result<ValueEnd> {
        let mut depth: usize = 0;
        let mut in_str = false;
        let mut i = self.pos;
        loop {
            if i >= self.end {
                let rel = self.before_fill(i, keep)?;
                if !self.fill()? {
                    return Err(self.err("unexpected end of input (truncated file?)"));
                }
                i = self.pos + rel;
                continue;
            }
            let hay = &self.buf[i..self.end];
            if in_str {
                match memchr::memchr2(b'"', b'\\', hay) {
                    None => i = self.end,
                    Some(k) if hay[k] == b'\\' => i += k + 2,
                    Some(k) => {
                        in_str = false;
                        i += k + 1;
                    }
                }
                continue;
            }
            match memchr::memchr3(b'"', b'{', b'}', hay) {
                None => i = self.end,
                Some(k) => {
                    i += k;
                    match self.buf[i] {
                        b'"' => in_str = true,
                        b'{' => depth += 1,
                        _ => {
                            depth -= 1;
                            if depth == 0 {
                                return Ok(ValueEnd { end: i + 1, nonfinite: false });
                            }
                        }
                    }
                    i += 1;
                }
            }
        }
    }

    /// The end of any other value, byte by byte.
    fn generic_end(&mut self, keep: bool) -> Result<ValueEnd> {
        let mut depth: usize = 0;
        let mut in_str = false;
        let mut nonfinite = false;
        let start = self.offset();
        let mut i = self.pos; // absolute index into buf
        loop {
            if i >= self.end {
                let rel = self.before_fill(i, keep)?;
                if !self.fill()? {
                    // A bare scalar may end at EOF.
                    if depth == 0 && !in_str && self.offset() + rel as u64 > start {
                        return Ok(ValueEnd { end: self.pos + rel, nonfinite });
                    }
                    return Err(self.err("unexpected end of input (truncated file?)"));
                }
                i = self.pos + rel;
                continue;
            }
            if in_str {
                match memchr::memchr2(b'"', b'\\', &self.buf[i..self.end]) {
                    None => i = self.end,
                    Some(k) => {
                        let j = i + k;
                        if self.buf[j] == b'\\' {
                            // Skip the escaped byte (may lie in the next chunk).
                            i = j + 2;
                        } else {
                            in_str = false;
                            i = j + 1;
                            if depth == 0 {
                                return Ok(ValueEnd { end: i, nonfinite });
                            }
                        }
                    }
                }
                continue;
            }
            let b = self.buf[i];
            match b {
                b'"' => in_str = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    if depth == 0 {
                        // Closing bracket of the container we are inside.
                        return Ok(ValueEnd { end: i, nonfinite });
                    }
                    depth -= 1;
                    if depth == 0 {
                        return Ok(ValueEnd { end: i + 1, nonfinite });
                    }
                }
                b',' if depth == 0 => return Ok(ValueEnd { end: i, nonfinite }),
                b'N' | b'I' => nonfinite = true,
                _ => {}
            }
            i += 1;
        }
    }

    /// Runs `f` on the unread bytes, after whitespace. `f` returns how many
    /// bytes it consumed, or `None` when they end too early; then more input
    /// is read and `f` runs again on the longer slice. This lets the event
    /// parser work in the read buffer itself, touching each byte once.
    /// `event` numbers the value for the message when it is over
    /// [`MAX_VALUE`].
    pub fn parse_in_place(
        &mut self,
        event: u64,
        mut f: impl FnMut(&[u8]) -> Result<Option<usize>>,
    ) -> Result<()> {
        if self.peek()?.is_none() {
            return Err(self.err("unexpected end of input, expected a value"));
        }
        loop {
            let seen = self.end - self.pos;
            match f(&self.buf[self.pos..self.end])? {
                Some(n) => {
                    self.pos += n;
                    return Ok(());
                }
                None => {
                    if seen > MAX_VALUE {
                        return Err(too_large(&format!("event {event}"), self.offset()));
                    }
                    // `f` starts again from the value's first byte: read
                    // until what it sees has doubled, so that a long value
                    // costs O(length) in all, not one pass per read (a
                    // read from the inflating thread brings 256 KiB).
                    let want = seen.saturating_mul(2).max(seen + CHUNK / 4).min(MAX_VALUE + 1);
                    let mut more = false;
                    while self.end - self.pos < want && self.fill()? {
                        more = true;
                    }
                    if !more {
                        return Err(self.err("unexpected end of input (truncated file?)"));
                    }
                }
            }
        }
    }

    /// The bytes held and not yet consumed, and the stream offset of the
    /// first: for a caller that reads several values in place at once.
    pub fn window(&self) -> (&[u8], u64) {
        (&self.buf[self.pos..self.end], self.offset())
    }

    /// Consumes the first `n` bytes of [`Scanner::window`].
    pub fn consume(&mut self, n: usize) {
        assert!(n <= self.end - self.pos, "consumed past the held bytes");
        self.pos += n;
    }

    /// Skips one value.
    pub fn skip_value(&mut self) -> Result<()> {
        // Checked first: the scan below discards what it passes.
        if matches!(self.peek()?, Some(b',' | b']' | b'}')) {
            return Err(self.err("expected a value"));
        }
        let v = self.value_end(false)?;
        self.pos = v.end;
        Ok(())
    }

    /// Returns the bytes of one value and consumes it. For values other
    /// than objects, `NaN`, `Infinity` and `-Infinity` outside strings are
    /// rewritten to `null` in `scratch` (the event parser reads them itself).
    pub fn value<'s>(&'s mut self, scratch: &'s mut Vec<u8>) -> Result<&'s [u8]> {
        let v = self.value_end(true)?;
        if v.end == self.pos {
            return Err(self.err("expected a value"));
        }
        let start = self.pos;
        self.pos = v.end;
        let raw = &self.buf[start..v.end];
        if v.nonfinite {
            sanitize_nonfinite(raw, scratch);
            Ok(scratch.as_slice())
        } else {
            Ok(raw)
        }
    }

    /// Reads an object key and its ':' separator; `None` at the closing '}'.
    /// `first` says whether a ',' must precede the key.
    pub fn next_key(&mut self, first: bool, scratch: &mut Vec<u8>) -> Result<Option<String>> {
        match self.peek()? {
            Some(b'}') => {
                self.pos += 1;
                return Ok(None);
            }
            Some(b',') if !first => self.pos += 1,
            Some(_) if first => {}
            Some(c) => {
                return Err(self.err(&format!("expected ',' or '}}', found '{}'", c as char)));
            }
            None => {
                return Err(self.err("unexpected end of input inside an object (truncated file?)"));
            }
        }
        if self.peek()? != Some(b'"') {
            return Err(self.err("expected an object key"));
        }
        let raw = self.value(scratch)?;
        let key: String = serde_json::from_slice(raw)
            .map_err(|e| Error::failed(format!("invalid object key: {e}")).caused_by(e))?;
        self.expect(b':')?;
        Ok(Some(key))
    }

    /// Steps through an array: call with `first = true` after '['. Returns
    /// false at the closing ']'; otherwise the next element is ready to read.
    pub fn next_element(&mut self, first: bool) -> Result<bool> {
        match self.peek()? {
            Some(b']') => {
                self.pos += 1;
                Ok(false)
            }
            Some(b',') if !first => {
                self.pos += 1;
                if self.peek()? == Some(b']') {
                    return Err(self.err("trailing ',' before ']'"));
                }
                Ok(true)
            }
            Some(_) if first => Ok(true),
            Some(c) => Err(self.err(&format!("expected ',' or ']', found '{}'", c as char))),
            None => Err(self.err("unexpected end of input inside an array (truncated file?)")),
        }
    }

    /// True when only whitespace remains.
    pub fn at_end(&mut self) -> Result<bool> {
        Ok(self.peek()?.is_none())
    }
}

impl Scanner<Box<dyn Read>> {
    /// A scanner over a mapped file, from its first byte.
    pub fn mapped(file: MappedFile) -> Self {
        Scanner {
            src: Box::new(std::io::empty()),
            buf: Buf::Mapped(file),
            pos: 0,
            end: 0,
            eof: false,
            base: 0,
        }
    }

    /// Takes the scanner apart (what the parallel reader goes on from): the
    /// stream offset of the next unread byte, and the input from there.
    pub fn into_parts(self) -> (u64, Unread) {
        let offset = self.offset();
        let rest = match self.buf {
            Buf::Read(buf) => Unread::Read {
                carry: buf[self.pos..self.end].to_vec(),
                reader: self.src,
                ended: self.eof,
            },
            Buf::Mapped(file) => Unread::Mapped(file),
        };
        (offset, rest)
    }

    /// A scanner over `before` (the input from stream offset `base`),
    /// then the rest of `file` from its byte `offset` on.
    pub fn mapped_from(file: MappedFile, offset: u64, before: Vec<u8>, base: u64) -> Self {
        let rest = MappedReader::new(file, offset as usize);
        Scanner::starting_at(Box::new(std::io::Cursor::new(before).chain(rest)), base)
    }
}

/// The input a scanner had not yet consumed.
pub enum Unread {
    /// Bytes read ahead, the reader they came from, and whether it ended.
    Read { carry: Vec<u8>, reader: Box<dyn Read>, ended: bool },
    /// The whole file (the offset says where the unread part starts).
    Mapped(MappedFile),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elements(doc: &str, chunk_reader: bool) -> Result<Vec<String>> {
        let src: Box<dyn Read> = if chunk_reader {
            Box::new(OneByte(doc.as_bytes().to_vec(), 0))
        } else {
            Box::new(doc.as_bytes())
        };
        let mut s = Scanner::new(src);
        let mut scratch = Vec::new();
        s.expect(b'[')?;
        let mut out = Vec::new();
        let mut first = true;
        while s.next_element(first)? {
            first = false;
            out.push(String::from_utf8(s.value(&mut scratch)?.to_vec()).unwrap());
        }
        assert!(s.at_end()?);
        Ok(out)
    }

    /// A reader that returns one byte per call, to exercise every resume point.
    struct OneByte(Vec<u8>, usize);
    impl Read for OneByte {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.1 >= self.0.len() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[self.1];
            self.1 += 1;
            Ok(1)
        }
    }

    #[test]
    fn splits_elements_with_strings_escapes_and_nesting() {
        let doc = r#" [ {"a": "x,]}\"y", "b": [1, {"c": 2}]}, 3.5e2 ,"s\\" , null, [] ] "#;
        for one_byte in [false, true] {
            let els = elements(doc, one_byte).unwrap();
            assert_eq!(
                els,
                vec![r#"{"a": "x,]}\"y", "b": [1, {"c": 2}]}"#, "3.5e2 ", r#""s\\""#, "null", "[]"]
            );
        }
    }

    #[test]
    fn nonfinite_scalars_are_rewritten_while_scanning() {
        // Outside objects (the lexer's own test has them inside).
        assert_eq!(elements("[NaN, 1]", false).unwrap(), vec!["null", "1"]);
    }

    #[test]
    fn truncated_input_is_an_error_not_a_hang() {
        for doc in [r#"[{"a": 1"#, r#"[{"a": "abc"#, "[1, 2", "[", "[1,]"] {
            for one_byte in [false, true] {
                assert!(elements(doc, one_byte).is_err(), "{doc}");
            }
        }
    }

    #[test]
    fn reads_object_keys() {
        let mut s = Scanner::new(&br#"{"k1": [1,2], "k\u0032": {"x": "}"}}"#[..]);
        let mut scratch = Vec::new();
        s.expect(b'{').unwrap();
        assert_eq!(s.next_key(true, &mut scratch).unwrap().as_deref(), Some("k1"));
        s.skip_value().unwrap();
        assert_eq!(s.next_key(false, &mut scratch).unwrap().as_deref(), Some("k2"));
        s.skip_value().unwrap();
        assert_eq!(s.next_key(false, &mut scratch).unwrap(), None);
        assert!(s.at_end().unwrap());
    }

    /// A reader of `n` filler bytes after `head` and before `tail`, made
    /// as it is read (the tests' documents would be too large to hold).
    struct Filler {
        head: Vec<u8>,
        n: u64,
        tail: Vec<u8>,
        at: u64,
    }
    impl Read for Filler {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let (h, n) = (self.head.len() as u64, self.n);
            let total = h + n + self.tail.len() as u64;
            let mut k = 0;
            // Small reads, like the inflating thread's.
            let max = buf.len().min(256 << 10);
            while k < max && self.at < total {
                buf[k] = if self.at < h {
                    self.head[self.at as usize]
                } else if self.at < h + n {
                    b'x'
                } else {
                    self.tail[(self.at - h - n) as usize]
                };
                k += 1;
                self.at += 1;
            }
            Ok(k)
        }
    }

    #[test]
    fn a_value_over_the_limit_is_refused_and_a_skipped_one_streams() {
        let big = MAX_VALUE as u64 + (3 << 20);
        // Held for parsing: refused once past the limit, the buffer bounded.
        let mut s = Scanner::new(Filler {
            head: br#"{"name": ""#.to_vec(),
            n: big,
            tail: br#""}"#.to_vec(),
            at: 0,
        });
        let err = s
            .parse_in_place(7, |b| Ok(b.ends_with(b"\"}").then_some(b.len())))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("event 7 at byte 0 is larger than 64 MiB"), "{err}");
        assert!(s.buf.len() <= 2 * MAX_VALUE + 2 * CHUNK, "{} bytes held", s.buf.len());
        // Skipped: streamed past, then the next key reads.
        let mut s = Scanner::new(Filler {
            head: br#"{"junk": [""#.to_vec(),
            n: big,
            tail: br#"\"", {"a": "\\"}], "k": 1}"#.to_vec(),
            at: 0,
        });
        let mut scratch = Vec::new();
        s.expect(b'{').unwrap();
        assert_eq!(s.next_key(true, &mut scratch).unwrap().as_deref(), Some("junk"));
        s.skip_value().unwrap();
        assert!(s.buf.len() <= 4 * CHUNK, "{} bytes held while skipping", s.buf.len());
        assert_eq!(s.next_key(false, &mut scratch).unwrap().as_deref(), Some("k"));
        assert_eq!(s.value(&mut scratch).unwrap(), b"1");
        // A kept value (a header key's) over the limit is refused too.
        let mut s = Scanner::new(Filler {
            head: br#"[""#.to_vec(),
            n: big,
            tail: br#""]"#.to_vec(),
            at: 0,
        });
        s.expect(b'[').unwrap();
        assert!(s.next_element(true).unwrap());
        let err = s.value(&mut scratch).unwrap_err().to_string();
        assert!(err.contains("is larger than 64 MiB"), "{err}");
    }

    #[test]
    fn skipping_resumes_inside_escapes_and_scalars() {
        let doc = r#"{"a": "x\"y\\", "b": 12345, "c": [1, "]", {"d": "}"}], "e": tru}"#;
        let mut s = Scanner::new(OneByte(doc.as_bytes().to_vec(), 0));
        let mut scratch = Vec::new();
        s.expect(b'{').unwrap();
        let mut keys = Vec::new();
        let mut first = true;
        while let Some(k) = s.next_key(first, &mut scratch).unwrap() {
            first = false;
            keys.push(k);
            s.skip_value().unwrap();
        }
        assert_eq!(keys, ["a", "b", "c", "e"]);
        assert!(s.at_end().unwrap());
        let mut s = Scanner::new(&b"[1, , 2]"[..]);
        s.expect(b'[').unwrap();
        assert!(s.next_element(true).unwrap());
        s.skip_value().unwrap();
        assert!(s.next_element(false).unwrap());
        assert!(s.skip_value().is_err(), "an empty element is not a value");
    }
}
