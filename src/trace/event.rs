//! One trace event as the analysis needs it, parsed from a borrowed slice.
//!
//! This parser is written here rather than derived with serde because it is
//! the hot loop of every reader on a raw trace: it reads only the fields the
//! analysis uses (`ph cat name pid tid ts dur` and a few `args`), borrows
//! strings without copying or UTF-8 validation passes of its own, skips the
//! rest in place, and takes the liberties real traces need — pid/tid as
//! number or string, numbers as strings, Python's `NaN`/`Infinity`, invalid
//! UTF-8 (repaired, not rejected). Broken JSON is a syntax error (the trace
//! cannot be read); a field of the wrong type makes the event malformed
//! (counted and skipped).

use std::borrow::Cow;

use super::kind::EventKind;
use super::lex::{fast_decimal, number_len, plain_string_len, skip_ws};

/// A string that tolerates invalid UTF-8 (replaced, not rejected).
#[derive(Debug, Clone, PartialEq)]
pub struct Text<'a>(pub Cow<'a, str>);

/// The categories Kineto writes, as constants: a `cat` among them is
/// neither checked as UTF-8 nor kept borrowed from its block.
fn known_cat(b: &[u8]) -> Option<&'static str> {
    Some(match b {
        b"cpu_op" => "cpu_op",
        b"kernel" => "kernel",
        b"cuda_runtime" => "cuda_runtime",
        b"cuda_driver" => "cuda_driver",
        b"ac2g" => "ac2g",
        b"async_cpu_to_gpu" => "async_cpu_to_gpu",
        b"user_annotation" => "user_annotation",
        b"gpu_user_annotation" => "gpu_user_annotation",
        b"gpu_memcpy" => "gpu_memcpy",
        b"gpu_memset" => "gpu_memset",
        b"python_function" => "python_function",
        b"cpu_instant_event" => "cpu_instant_event",
        b"cuda_sync" => "cuda_sync",
        b"Trace" => "Trace",
        b"Operator" => "Operator",
        b"Runtime" => "Runtime",
        b"Kernel" => "Kernel",
        b"Memcpy" => "Memcpy",
        b"Memset" => "Memset",
        _ => return None,
    })
}

/// A number that may arrive as integer, float, numeric string or null.
/// Stored as one `f64`, NaN for "none" (a trace's numbers are finite or
/// not used): half the size of an `Option<f64>`, and an event carries a
/// dozen of these through the parsing threads.
#[derive(Debug, Clone, Copy)]
pub struct Num(f64);

impl Default for Num {
    fn default() -> Num {
        Num::NONE
    }
}

impl PartialEq for Num {
    fn eq(&self, other: &Num) -> bool {
        self.get() == other.get()
    }
}

impl Num {
    const NONE: Num = Num(f64::NAN);

    /// A finite value, else none.
    pub fn new(v: Option<f64>) -> Num {
        v.filter(|v| v.is_finite()).map_or(Num::NONE, Num)
    }
    pub fn get(self) -> Option<f64> {
        (!self.0.is_nan()).then_some(self.0)
    }
    /// As an integer id (correlation, stream, device).
    pub fn id(self) -> Option<i64> {
        self.get().filter(|v| v.fract() == 0.0 && v.abs() < 9.0e15).map(|v| v as i64)
    }
}

/// A pid or tid: integers in new traces, strings ("stream 7") in old ones.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id<'a> {
    Int(i64),
    Str(Cow<'a, str>),
}

impl<'a> Id<'a> {
    /// "25738" is the same thread as 25738; "stream 7" is stream 7.
    fn from_text(s: Cow<'a, str>) -> Id<'a> {
        let t = s.trim();
        if let Ok(v) = t.parse::<i64>() {
            return Id::Int(v);
        }
        if let Some(v) = t.strip_prefix("stream ").and_then(|r| r.trim().parse::<i64>().ok()) {
            return Id::Int(v);
        }
        Id::Str(s)
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Id::Int(v) => Some(*v),
            Id::Str(_) => None,
        }
    }
}

/// The `args` fields the analysis reads.
#[derive(Debug, Default)]
pub struct Args<'a> {
    pub correlation: Num,
    pub external_id: Num,
    pub stream: Num,
    pub device: Num,
    pub total_reserved: Num,
    pub total_allocated: Num,
    pub device_type: Num,
    pub device_id: Num,
    /// `[memory]` events: the allocation's size (negative: a free).
    pub bytes: Num,
    /// CPU ops under autograd: `Sequence number`, and on a backward op
    /// `Fwd thread id`, the thread of the forward op it differentiates.
    pub sequence: Num,
    pub fwd_thread: Num,
    /// A `cuda_sync` record of a wait on a CUDA event (`Stream Wait
    /// Event`, `Event Sync`): the stream the event was recorded on and the
    /// correlation of the `cudaEventRecord` call that recorded it.
    pub wait_on_stream: Num,
    pub wait_on_record: Num,
    /// What PyTorch records on NCCL kernels since 2.3 (docs/analysis.md §8):
    /// which collective, its message sizes and process group.
    pub collective: Option<Box<Collective<'a>>>,
    /// `record_shapes=True`: the raw JSON text of `Input Dims`, `Input
    /// type` and `Concrete Inputs`, parsed only for the ops the
    /// performance model knows (`analysis::work`).
    pub input_dims: Option<&'a [u8]>,
    pub input_types: Option<&'a [u8]>,
    pub concrete_inputs: Option<&'a [u8]>,
    /// ROCm launch calls: the kernel they put on the queue (a capture
    /// trace's only record of a captured kernel's name).
    pub kernel: Option<Text<'a>>,
    /// Kernels: the launch's `grid` and `block` (`[x, y, z]`; missing
    /// dimensions are 1).
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
}

/// The collective arguments of a communication kernel. Boxed: most
/// events carry none and `Args` stays small.
#[derive(Debug, Default, Clone)]
pub struct Collective<'a> {
    pub name: Option<Text<'a>>,
    pub in_nelems: Num,
    pub out_nelems: Num,
    pub group_size: Num,
    pub dtype: Option<Text<'a>>,
    pub group: Option<Text<'a>>,
}

/// One event of `traceEvents`.
#[derive(Debug, Default)]
pub struct Event<'a> {
    pub ph: Option<Text<'a>>,
    pub cat: Option<Text<'a>>,
    pub name: Option<Text<'a>>,
    pub pid: Option<Id<'a>>,
    pub tid: Option<Id<'a>>,
    pub ts: Num,
    pub dur: Num,
    pub args: Option<Args<'a>>,
    /// What it is, decided once its fields are read (the default,
    /// [`EventKind::NoSpan`], until then).
    pub kind: EventKind,
}

/// Why an event could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Not JSON: the trace itself is broken.
    Syntax { at: usize, what: &'static str },
    /// JSON, but not an event (a field of the wrong type, not an object).
    Shape(&'static str),
    /// The bytes end inside the event: more input is needed.
    Eof,
    /// `Shape`, from `parse_prefix`, with the bytes the object took.
    ShapeAt(&'static str, usize),
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Syntax { at, what } => write!(f, "{what} at offset {at} of the event"),
            ParseError::Shape(what) => f.write_str(what),
            ParseError::Eof => f.write_str("unexpected end of input inside an event"),
            ParseError::ShapeAt(what, _) => f.write_str(what),
        }
    }
}

impl std::error::Error for ParseError {}

impl<'a> Event<'a> {
    /// Parses `raw`, which must hold exactly one value.
    pub fn parse(raw: &'a [u8]) -> Result<Event<'a>, ParseError> {
        let mut p = Parser::new(raw);
        p.ws();
        if p.peek() != Some(b'{') {
            if p.skip_value().and_then(|()| p.end()).is_err() {
                return Err(p.take_error());
            }
            return Err(ParseError::Shape("an event must be a JSON object"));
        }
        let (ev, used) = Event::parse_prefix(raw).map_err(|e| match e {
            ParseError::Eof => {
                ParseError::Syntax { at: raw.len(), what: "unexpected end of the event" }
            }
            ParseError::ShapeAt(what, _) => ParseError::Shape(what),
            e => e,
        })?;
        let mut p = Parser::new(raw);
        p.i = used;
        match p.end() {
            Ok(()) => Ok(ev),
            Err(Stop) => Err(p.take_error()),
        }
    }

    /// Parses the object at the start of `raw` (after whitespace) and
    /// returns it with the number of bytes it took. `Eof` means `raw` ends
    /// inside it. A field of the wrong type gives `Shape` once the whole
    /// object has been read, so the caller can skip it.
    pub fn parse_prefix(raw: &'a [u8]) -> Result<(Event<'a>, usize), ParseError> {
        let mut ev = Event::default();
        let used = Event::parse_prefix_into(raw, &mut ev)?;
        Ok((ev, used))
    }

    /// [`Event::parse_prefix`] into `ev` (which must be the default),
    /// where it is to stay: an event is a few hundred bytes, and the
    /// parallel reader parses each straight into its block's list.
    pub fn parse_prefix_into(raw: &'a [u8], ev: &mut Event<'a>) -> Result<usize, ParseError> {
        let mut p = Parser::new(raw);
        let mut shape: Option<&'static str> = None;
        let parsed = p.object(|p, key| {
            match key {
                b"ph" => p.text_field(&mut ev.ph, &mut shape, "`ph` must be a string", no_known)?,
                b"cat" => {
                    p.text_field(&mut ev.cat, &mut shape, "`cat` must be a string", known_cat)?
                }
                b"name" => {
                    p.text_field(&mut ev.name, &mut shape, "`name` must be a string", no_known)?
                }
                b"pid" => p.id_into(&mut ev.pid)?,
                b"tid" => p.id_into(&mut ev.tid)?,
                b"ts" => ev.ts = p.num()?,
                b"dur" => ev.dur = p.num()?,
                b"args" if p.peek() == Some(b'{') => {
                    // Filled where it stays (built aside, its 128 bytes
                    // were copied in: a hot store on the parsing threads).
                    let a = ev.args.insert(Args::default());
                    p.object(|p, key| {
                        let text = |p: &mut Parser<'a>| -> PResult<Option<Text<'a>>> {
                            if p.peek() == Some(b'"') {
                                p.text().map(Some)
                            } else {
                                p.skip_value().map(|_| None)
                            }
                        };
                        let slot = match key {
                            b"Collective name" | b"dtype" | b"Process Group Name" => {
                                let t = text(p)?;
                                let c = a.collective.get_or_insert_default();
                                match key {
                                    b"dtype" => c.dtype = t,
                                    b"Process Group Name" => c.group = t,
                                    _ => c.name = t,
                                }
                                return Ok(());
                            }
                            b"kernel" => {
                                a.kernel = text(p)?;
                                return Ok(());
                            }
                            b"Input Dims" | b"Input type" | b"Concrete Inputs" => {
                                let raw = Some(p.raw()?);
                                match key {
                                    b"Input Dims" => a.input_dims = raw,
                                    b"Input type" => a.input_types = raw,
                                    _ => a.concrete_inputs = raw,
                                }
                                return Ok(());
                            }
                            b"grid" => {
                                a.grid = p.dims()?;
                                return Ok(());
                            }
                            b"block" => {
                                a.block = p.dims()?;
                                return Ok(());
                            }
                            b"In msg nelems" => &mut a.collective.get_or_insert_default().in_nelems,
                            b"Out msg nelems" => {
                                &mut a.collective.get_or_insert_default().out_nelems
                            }
                            b"Group size" => &mut a.collective.get_or_insert_default().group_size,
                            b"correlation" => &mut a.correlation,
                            b"External id" | b"external id" => &mut a.external_id,
                            b"stream" => &mut a.stream,
                            b"device" => &mut a.device,
                            b"Total Reserved" => &mut a.total_reserved,
                            b"Total Allocated" => &mut a.total_allocated,
                            b"Device Type" => &mut a.device_type,
                            b"Device Id" => &mut a.device_id,
                            b"Bytes" => &mut a.bytes,
                            b"Sequence number" => &mut a.sequence,
                            b"Fwd thread id" => &mut a.fwd_thread,
                            b"wait_on_stream" => &mut a.wait_on_stream,
                            b"wait_on_cuda_event_record_corr_id" => &mut a.wait_on_record,
                            _ => return p.skip_value(),
                        };
                        *slot = p.num()?;
                        Ok(())
                    })?;
                }
                _ => p.skip_value()?,
            }
            Ok(())
        });
        if parsed.is_err() {
            return Err(p.take_error());
        }
        match shape {
            Some(what) => Err(ParseError::ShapeAt(what, p.i)),
            None => {
                ev.kind = EventKind::of(ev.ph(), ev.cat(), ev.name());
                Ok(p.i)
            }
        }
    }

    pub fn ph(&self) -> &str {
        self.ph.as_ref().map_or("", |t| &t.0)
    }
    pub fn cat(&self) -> &str {
        self.cat.as_ref().map_or("", |t| &t.0)
    }
    pub fn name(&self) -> &str {
        self.name.as_ref().map_or("", |t| &t.0)
    }
    pub fn correlation(&self) -> Option<i64> {
        self.args.as_ref().and_then(|a| a.correlation.id())
    }
    /// A GPU event's device: `args.device`, else its pid (old traces).
    pub fn gpu_device(&self) -> i64 {
        self.args
            .as_ref()
            .and_then(|a| a.device.id())
            .or_else(|| self.pid.as_ref().and_then(Id::as_int))
            .unwrap_or(0)
    }
    /// A GPU event's stream: `args.stream`, else its tid (old traces).
    pub fn gpu_stream(&self) -> i64 {
        self.args
            .as_ref()
            .and_then(|a| a.stream.id())
            .or_else(|| self.tid.as_ref().and_then(Id::as_int))
            .unwrap_or(0)
    }
}

/// Text with escapes or invalid UTF-8, owned (and repaired).
#[cold]
#[inline(never)]
fn repaired<'a>(b: &[u8]) -> Cow<'a, str> {
    Cow::Owned(String::from_utf8_lossy(b).into_owned())
}

fn no_known(_: &[u8]) -> Option<&'static str> {
    None
}

/// Every ASCII character: one-byte strings (every `ph`) borrow from it
/// without a UTF-8 check.
const ASCII: &str = {
    const BYTES: [u8; 128] = {
        let mut b = [0u8; 128];
        let mut i = 0;
        while i < 128 {
            b[i] = i as u8;
            i += 1;
        }
        b
    };
    match std::str::from_utf8(&BYTES) {
        Ok(s) => s,
        Err(_) => panic!("ASCII is UTF-8"),
    }
};

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    /// Arrays and objects open around the cursor, below the event itself.
    depth: u32,
    /// Why the parse stopped, once it has.
    error: Option<ParseError>,
}

/// The parse stopped, for the reason in [`Parser::error`]. Zero-sized, so
/// that each `?` on the hot path tests a flag instead of moving a
/// 32-byte error through every return.
struct Stop;

/// Deepest nesting read inside an event (serde_json's limit too): real
/// events nest a few levels; a hostile one must not exhaust the stack.
pub const MAX_DEPTH: u32 = 128;

/// Said when an event nests deeper than [`MAX_DEPTH`].
pub const TOO_DEEP: &str = "nesting too deep (more than 128 levels of arrays/objects)";

type PResult<T> = Result<T, Stop>;

/// `": "` and `, "` read as [`Parser::word`] reads them.
const COLON_SPACE: u32 = u16::from_le_bytes(*b": ") as u32;
const COMMA_SPACE_QUOTE: u32 = u32::from_le_bytes(*b", \"\0");

impl<'a> Parser<'a> {
    fn new(b: &'a [u8]) -> Parser<'a> {
        Parser { b, i: 0, depth: 0, error: None }
    }

    /// Stops the parse with `e`.
    #[cold]
    fn fail<T>(&mut self, e: ParseError) -> PResult<T> {
        self.error = Some(e);
        Err(Stop)
    }

    /// Why the parse stopped.
    fn take_error(&mut self) -> ParseError {
        self.error.take().unwrap_or(ParseError::Syntax { at: self.i, what: "invalid JSON" })
    }

    /// A syntax error, or `Eof` when the input simply ran out.
    #[cold]
    fn err<T>(&mut self, what: &'static str) -> PResult<T> {
        if self.i >= self.b.len() {
            self.fail(ParseError::Eof)
        } else {
            self.fail(ParseError::Syntax { at: self.i, what })
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// [`skip_ws`] on the cursor in place: through the function, `i` made
    /// a round trip that cost 0.4 % of a read's instructions (callgrind).
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8, what: &'static str) -> PResult<()> {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            self.err(what)
        }
    }

    /// Only whitespace may follow the value.
    fn end(&mut self) -> PResult<()> {
        self.ws();
        if self.i == self.b.len() { Ok(()) } else { self.err("data after the value") }
    }

    /// Walks an object, calling `f` with each key; `f` must consume the value.
    fn object(&mut self, mut f: impl FnMut(&mut Self, &[u8]) -> PResult<()>) -> PResult<()> {
        self.eat(b'{', "expected '{'")?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        if self.peek() != Some(b'"') {
            return self.err("expected an object key");
        }
        loop {
            // At the key's opening quote.
            let key = self.string()?;
            // Kineto and json.dumps write `": "` and `, "` between tokens:
            // one compare of four bytes stands for the byte-by-byte checks
            // of the separator and the whitespace around it (those were a
            // quarter of the event parser's instructions).
            match self.word() {
                Some(w) if w & 0xFFFF == COLON_SPACE && (w >> 16) as u8 > b' ' => self.i += 2,
                _ => {
                    self.eat(b':', "expected ':'")?;
                    self.ws();
                }
            }
            f(self, &key)?;
            match self.word() {
                Some(w) if w & 0xFF_FFFF == COMMA_SPACE_QUOTE => self.i += 2,
                _ => {
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return self.err("expected ',' or '}'"),
                    }
                    self.ws();
                    if self.peek() != Some(b'"') {
                        return self.err("expected an object key");
                    }
                }
            }
        }
    }

    /// The four bytes from the cursor, first byte lowest.
    #[inline(always)]
    fn word(&self) -> Option<u32> {
        let w = self.b.get(self.i..self.i + 4)?;
        Some(u32::from_le_bytes(w.try_into().expect("four bytes")))
    }

    /// A string's content, borrowed when it has no escapes. Always inlined:
    /// out of line, its result went through memory (7% of a read's
    /// instructions, callgrind).
    #[inline(always)]
    fn string(&mut self) -> PResult<Cow<'a, [u8]>> {
        let start = self.i + 1; // after the opening quote
        let rest = &self.b[start..];
        match plain_string_len(rest) {
            Ok(k) => {
                self.i = start + k + 1;
                // SAFETY: `plain_string_len` gives a position inside `rest`.
                Ok(Cow::Borrowed(unsafe { rest.get_unchecked(..k) }))
            }
            Err(found) => self.escaped_string(start, found),
        }
    }

    /// Skips a string: [`Parser::string`] without building its content.
    #[inline(always)]
    fn skip_string(&mut self) -> PResult<()> {
        let start = self.i + 1;
        let rest = &self.b[start..];
        match plain_string_len(rest) {
            Ok(k) => {
                self.i = start + k + 1;
                Ok(())
            }
            Err(found) => self.escaped_string(start, found).map(drop),
        }
    }

    /// The rest of [`Parser::string`] from its first backslash (or its end
    /// missing), `found` bytes after `start`.
    #[cold]
    #[inline(never)]
    fn escaped_string(&mut self, start: usize, found: Option<usize>) -> PResult<Cow<'a, [u8]>> {
        let Some(k) = found else {
            self.i = self.b.len();
            return self.err("unterminated string");
        };
        if self.b[start + k] == b'"' {
            self.i = start + k + 1;
            return Ok(Cow::Borrowed(&self.b[start..start + k]));
        }
        let mut out = self.b[start..start + k].to_vec();
        self.i = start + k;
        loop {
            let Some(&c) = self.b.get(self.i) else { return self.err("unterminated string") };
            self.i += 1;
            match c {
                b'"' => return Ok(Cow::Owned(out)),
                b'\\' => {
                    let Some(&e) = self.b.get(self.i) else {
                        return self.err("unterminated escape");
                    };
                    self.i += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp)
                                && self.b[self.i..].starts_with(b"\\u")
                            {
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                }
                            }
                            let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return self.err("invalid escape"),
                    }
                }
                c => out.push(c),
            }
        }
    }

    /// A value's JSON text, borrowed, checked for syntax only.
    fn raw(&mut self) -> PResult<&'a [u8]> {
        self.ws();
        let start = self.i;
        if self.peek() == Some(b'[') && self.skip_plain_array() {
            return Ok(&self.b[start..self.i]);
        }
        self.i = start;
        self.skip_value()?;
        Ok(&self.b[start..self.i])
    }

    /// Skips the array at the cursor if it holds only numbers, strings
    /// without escapes and such arrays (the shape of every `Input Dims`
    /// and `Input type`), in one loop instead of a call per value. False,
    /// the cursor anywhere, on anything else: the caller then reads the
    /// value from its start with [`Parser::skip_value`], which accepts the
    /// same arrays and says what is wrong with the rest.
    fn skip_plain_array(&mut self) -> bool {
        let b = self.b;
        // From the array's own `[`, read as the first value.
        let (mut i, mut depth) = (self.i, 0u32);
        // Two places in the grammar, one loop each, so that each branch
        // sees one kind of byte (one jump table over both mispredicted:
        // half of this function's time in perf). `[]` is read whole.
        'value: loop {
            match b.get(i) {
                Some(b' ' | b'\n' | b'\r' | b'\t') => {
                    i += 1;
                    continue 'value;
                }
                Some(b'"') => match plain_string_len(&b[i + 1..]) {
                    Ok(k) => i += k + 2,
                    Err(_) => return false,
                },
                Some(b'[') => {
                    depth += 1;
                    // Deep nesting is left to the general skip's limit.
                    if self.depth + depth >= MAX_DEPTH {
                        return false;
                    }
                    i = skip_ws(b, i + 1);
                    if b.get(i) != Some(&b']') {
                        continue 'value;
                    }
                    i += 1;
                    depth -= 1;
                    if depth == 0 {
                        self.i = i;
                        return true;
                    }
                }
                Some(b'-' | b'0'..=b'9') => i += number_len(&b[i..]),
                _ => return false,
            }
            // After a value: `,` and the next one (Kineto writes `, `), or `]`.
            loop {
                match b.get(i) {
                    Some(b',') => {
                        i += 1;
                        if b.get(i) == Some(&b' ') {
                            i += 1;
                        }
                        continue 'value;
                    }
                    Some(b' ' | b'\n' | b'\r' | b'\t') => i += 1,
                    Some(b']') => {
                        i += 1;
                        depth -= 1;
                        if depth == 0 {
                            self.i = i;
                            return true;
                        }
                    }
                    _ => return false,
                }
            }
        }
    }

    fn hex4(&mut self) -> PResult<u32> {
        let Some(h) = self.b.get(self.i..self.i + 4) else {
            self.i = self.b.len();
            return self.err("short \\u escape");
        };
        let s = std::str::from_utf8(h).ok().and_then(|s| u32::from_str_radix(s, 16).ok());
        match s {
            Some(v) => {
                self.i += 4;
                Ok(v)
            }
            None => self.err("invalid \\u escape"),
        }
    }

    fn text(&mut self) -> PResult<Text<'a>> {
        self.text_or(no_known)
    }

    /// A string, as the constant `known` gives for its bytes if any.
    #[inline(always)]
    fn text_or(&mut self, known: fn(&[u8]) -> Option<&'static str>) -> PResult<Text<'a>> {
        // Borrowed text is chosen as a plain `&str` and wrapped once: a
        // `Cow` per arm was built in memory and copied (see `text_field`).
        let s: &'a str = match self.string()? {
            Cow::Borrowed(&[c]) if c.is_ascii() => &ASCII[usize::from(c)..usize::from(c) + 1],
            Cow::Borrowed(b) => match known(b) {
                Some(k) => k,
                // Names are short and nearly always ASCII, which `is_ascii`
                // tells in a fraction of `from_utf8`'s instructions on them.
                // SAFETY: ASCII bytes are UTF-8.
                None if b.is_ascii() => unsafe { std::str::from_utf8_unchecked(b) },
                // The validating check is faster than the lossy one; repair
                // only when it fails.
                None => match std::str::from_utf8(b) {
                    Ok(s) => s,
                    Err(_) => return Ok(Text(repaired(b))),
                },
            },
            Cow::Owned(v) => return Ok(Text(repaired(&v))),
        };
        Ok(Text(Cow::Borrowed(s)))
    }

    /// A string field into `slot`; anything else marks the event malformed.
    /// Written where it stays, like [`Parser::id_into`]: returned through
    /// `Result` and `Option`, the text went through the stack as two
    /// halves read back as one, which stalls store forwarding (perf: ~5%
    /// of a read on the stores after those loads).
    #[inline(always)]
    fn text_field(
        &mut self,
        slot: &mut Option<Text<'a>>,
        shape: &mut Option<&'static str>,
        what: &'static str,
        known: fn(&[u8]) -> Option<&'static str>,
    ) -> PResult<()> {
        match self.peek() {
            Some(b'"') => *slot = Some(self.text_or(known)?),
            Some(b'n') => {
                self.skip_value()?;
                *slot = None;
            }
            _ => {
                self.skip_value()?;
                shape.get_or_insert(what);
                *slot = None;
            }
        }
        Ok(())
    }

    /// A pid or tid into `slot` (see [`Parser::text_field`] for why in place).
    #[inline(always)]
    fn id_into(&mut self, slot: &mut Option<Id<'a>>) -> PResult<()> {
        if let Some(b'-' | b'0'..=b'9') = self.peek() {
            if let Some((v, used)) = fast_decimal(&self.b[self.i..]) {
                self.i += used;
                *slot = Some(Id::Int(v as i64));
                return Ok(());
            }
        }
        *slot = self.id_slow()?;
        Ok(())
    }

    /// [`Parser::id_into`] past its fast path, out of line so that the inlined
    /// fast path stays small.
    #[inline(never)]
    fn id_slow(&mut self) -> PResult<Option<Id<'a>>> {
        match self.peek() {
            Some(b'"') => Ok(Some(Id::from_text(self.text()?.0))),
            _ => Ok(self.num()?.get().map(|v| Id::Int(v as i64))),
        }
    }

    /// A kernel's `grid` or `block`: `[x, y, z]`, up to three integers
    /// that fit `u32` (missing ones are 1), read in one pass; any other
    /// value is skipped and reads as missing.
    fn dims(&mut self) -> PResult<Option<[u32; 3]>> {
        self.ws();
        let (b, start) = (self.b, self.i);
        let ws = |i: &mut usize| {
            while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(*i) {
                *i += 1;
            }
        };
        if b.get(start) == Some(&b'[') {
            let (mut i, mut out) = (start + 1, [1u32; 3]);
            for slot in &mut out {
                ws(&mut i);
                let digits = b[i.min(b.len())..].iter().take_while(|c| c.is_ascii_digit()).count();
                let v = (1..=10).contains(&digits).then(|| {
                    b[i..i + digits].iter().fold(0u64, |v, &d| v * 10 + u64::from(d - b'0'))
                });
                let Some(v) = v.and_then(|v| u32::try_from(v).ok()) else { break };
                *slot = v;
                i += digits;
                ws(&mut i);
                match b.get(i) {
                    Some(b',') => i += 1,
                    Some(b']') => {
                        self.i = i + 1;
                        return Ok(Some(out));
                    }
                    _ => break,
                }
            }
        }
        self.skip_value()?;
        Ok(None)
    }

    /// A number, a numeric string, or null; other values read as missing.
    #[inline(always)]
    fn num(&mut self) -> PResult<Num> {
        if let Some(b'-' | b'0'..=b'9') = self.peek() {
            if let Some((v, used)) = fast_decimal(&self.b[self.i..]) {
                self.i += used;
                return Ok(Num(v));
            }
        }
        self.num_slow()
    }

    /// [`Parser::num`] past its fast path.
    #[inline(never)]
    fn num_slow(&mut self) -> PResult<Num> {
        match self.peek() {
            Some(b'"') => {
                let t = self.text()?;
                Ok(Num::new(t.0.trim().parse::<f64>().ok()))
            }
            Some(b'-' | b'0'..=b'9' | b'N' | b'I') => {
                let start = self.i;
                if let Some((v, used)) = fast_decimal(&self.b[start..]) {
                    self.i += used;
                    return Ok(Num(v));
                }
                self.scan_number()?;
                let tok = &self.b[start..self.i];
                match tok {
                    b"NaN" | b"Infinity" | b"-Infinity" => return Ok(Num::NONE),
                    _ => {}
                }
                match std::str::from_utf8(tok).ok().and_then(|s| s.parse::<f64>().ok()) {
                    Some(v) => Ok(Num::new(Some(v))),
                    None => {
                        self.i = start;
                        self.err("invalid number")
                    }
                }
            }
            _ => {
                self.skip_value()?;
                Ok(Num::NONE)
            }
        }
    }

    /// Moves past a number token (or NaN/Infinity) without converting it.
    fn scan_number(&mut self) -> PResult<()> {
        self.i += number_len(&self.b[self.i..]);
        if self.i == self.b.len() {
            return self.fail(ParseError::Eof); // the number may go on
        }
        Ok(())
    }

    /// Skips any value: strings and numbers here, inlined where the
    /// skipped fields are met; the rest in [`Parser::skip_other`].
    #[inline(always)]
    fn skip_value(&mut self) -> PResult<()> {
        self.ws();
        match self.peek() {
            Some(b'"') => self.skip_string(),
            Some(b'-' | b'0'..=b'9') => self.scan_number(),
            _ => self.skip_other(),
        }
    }

    /// [`Parser::skip_value`] for containers, literals and what is not a value.
    #[inline(never)]
    fn skip_other(&mut self) -> PResult<()> {
        match self.peek() {
            Some(b'{' | b'[') => {
                // Recursion is bounded: past the limit the trace is refused,
                // whether or not more input would follow.
                if self.depth >= MAX_DEPTH {
                    let at = self.i;
                    return self.fail(ParseError::Syntax { at, what: TOO_DEEP });
                }
                self.depth += 1;
                let r = self.skip_container();
                self.depth -= 1;
                r
            }
            Some(b'"') => self.skip_string(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9' | b'N' | b'I') => self.scan_number(),
            _ => self.err("expected a value"),
        }
    }

    /// Skips the array or object at the cursor.
    fn skip_container(&mut self) -> PResult<()> {
        match self.peek() {
            Some(b'{') => self.object(|p, _| p.skip_value()),
            _ => {
                self.i += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.skip_value()?;
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return self.err("expected ',' or ']'"),
                    }
                }
            }
        }
    }

    fn literal(&mut self, lit: &'static [u8]) -> PResult<()> {
        let rest = &self.b[self.i..];
        if rest.starts_with(lit) {
            self.i += lit.len();
            Ok(())
        } else if lit.starts_with(rest) {
            self.fail(ParseError::Eof)
        } else {
            self.err("invalid literal")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_new_and_old_event_shapes() {
        let new = br#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4458676983543.183, "dur": 41.407, "args": {"External id": 12353, "correlation": 57541, "stream": 7, "grid": [1,2,3], "nested": {"a": [true, false, null]}}}"#;
        let e = Event::parse(new).unwrap();
        assert_eq!((e.ph(), e.cat(), e.name()), ("X", "kernel", "k"));
        assert_eq!(e.tid, Some(Id::Int(7)));
        assert_eq!(e.ts.get(), Some(4458676983543.183));
        assert_eq!(e.correlation(), Some(57541));
        assert_eq!(e.args.as_ref().unwrap().external_id.id(), Some(12353));
        assert_eq!(e.args.as_ref().unwrap().grid, Some([1, 2, 3]));

        let old = br#"{"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 1623142623531625, "dur": 2, "args": {"correlation": 34441, "external id": 544}}"#;
        let e = Event::parse(old).unwrap();
        assert_eq!(e.tid, Some(Id::Int(7)));
        assert_eq!(e.ts.get(), Some(1623142623531625.0));
        assert_eq!(e.args.as_ref().unwrap().external_id.id(), Some(544));
    }

    #[test]
    fn a_launch_configuration_reads_as_three_numbers_or_not_at_all() {
        let dims = |v: &str| {
            let raw = format!(r#"{{"args": {{"grid": {v}, "stream": 7}}}}"#);
            let e = Event::parse(raw.as_bytes()).unwrap();
            let a = e.args.unwrap();
            assert_eq!(a.stream.id(), Some(7), "{v}: the fields after it are read");
            a.grid
        };
        assert_eq!(dims("[1024, 1, 1]"), Some([1024, 1, 1]));
        assert_eq!(dims(" [ 7 ,2 ]"), Some([7, 2, 1]));
        assert_eq!(dims("[4294967295,1,1]"), Some([u32::MAX, 1, 1]));
        for bad in
            ["[4294967296,1,1]", "[1,2,3,4]", "[-1,1,1]", "[1.5,1,1]", "[]", "\"64\"", "null"]
        {
            assert_eq!(dims(bad), None, "{bad}");
        }
        // Cut short: the same error as any other value.
        assert!(Event::parse(br#"{"args": {"grid": [1, 2"#).is_err());
    }

    #[test]
    fn decodes_escapes_and_tolerates_invalid_utf8() {
        let e = Event::parse(br#"{"name": "a\"b\\c\u00e9\ud83d\ude00\n"}"#).unwrap();
        assert_eq!(e.name(), "a\"b\\c\u{e9}\u{1F600}\n");
        let mut raw = br#"{"name": "bad "#.to_vec();
        raw.extend_from_slice(&[0xff, 0xfe]);
        raw.extend_from_slice(br#"", "ts": "12.5", "dur": null, "pid": NaN, "tid": -Infinity}"#);
        let e = Event::parse(&raw).unwrap();
        assert!(e.name().starts_with("bad ") && e.name().contains('\u{FFFD}'));
        assert_eq!(e.ts.get(), Some(12.5));
        assert_eq!(e.dur.get(), None);
        assert_eq!((e.pid.clone(), e.tid.clone()), (None, None));
    }

    #[test]
    fn wrong_types_are_malformed_and_broken_json_is_a_syntax_error() {
        for shape in [&br#"{"name": 5}"#[..], br#"[1,2]"#, br#""x""#, br#"{"cat": ["a"]}"#] {
            assert!(
                matches!(Event::parse(shape), Err(ParseError::Shape(_))),
                "{}",
                String::from_utf8_lossy(shape)
            );
        }
        for broken in [
            &br#"{"name": "x""#[..],
            br#"{"name" "x"}"#,
            br#"{"ts": 1.2.3.}"#,
            br#"{"a": tru}"#,
            br#"{"a": 1} x"#,
            br#"{"a": "\q"}"#,
        ] {
            assert!(
                matches!(Event::parse(broken), Err(ParseError::Syntax { .. })),
                "{}",
                String::from_utf8_lossy(broken)
            );
        }
    }

    #[test]
    fn nesting_past_the_limit_is_refused_not_a_stack_overflow() {
        let deep = |n: usize| {
            format!(r#"{{"name": "k", "args": {{"x": {}{}}}}}"#, "[".repeat(n), "]".repeat(n))
        };
        assert!(Event::parse(deep(100).as_bytes()).is_ok());
        for raw in [deep(100_000), "[".repeat(100_000) + &"]".repeat(100_000)] {
            match Event::parse(raw.as_bytes()) {
                Err(ParseError::Syntax { what, .. }) => assert_eq!(what, TOO_DEEP),
                other => panic!("{other:?}"),
            }
        }
        // Cut short, it is still refused rather than waiting for more input.
        let open = format!(r#"{{"args": {{"x": {}"#, "{\"a\": ".repeat(1000));
        assert!(matches!(
            Event::parse_prefix(open.as_bytes()),
            Err(ParseError::Syntax { what: TOO_DEEP, .. })
        ));
    }

    #[test]
    fn plain_arrays_skip_as_the_general_parser_does() {
        // Where the one-loop skip of `Input Dims` stops, or that the value
        // is refused and why, equals the general skip's answer: on real
        // shapes, broken ones, and every string of up to 7 bytes over an
        // alphabet of JSON's array bytes.
        let check = |raw: &[u8]| {
            let answer = |p: &mut Parser<'_>, r: PResult<()>| match r {
                Ok(()) => Ok(p.i),
                Err(Stop) => Err(format!("{:?}", p.take_error())),
            };
            let mut fast = Parser::new(raw);
            let r = fast.raw().map(drop);
            let mut general = Parser::new(raw);
            general.ws();
            let g = general.skip_value();
            assert_eq!(
                answer(&mut fast, r),
                answer(&mut general, g),
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        };
        for raw in [
            &br#"[[1, 3, 640, 640], [64, 3, 3, 3], [], [], []]"#[..],
            br#"["float", "", "Scalar", "ScalarList"]"#,
            br#" [ [ ] , [-1.5e3] ] ,"#,
            br#"[1,]"#,
            br#"[,1]"#,
            br#"[1 2]"#,
            br#"[[1],,[2]]"#,
            br#"["a\"b", 1]"#,
            br#"[NaN, Infinity]"#,
            br#"[true, null, {"a": 1}]"#,
            br#"[[1, 2]"#,
            br#"[12"#,
            br#"["abc"#,
        ] {
            check(raw);
        }
        let deep = [vec![b'['; 200], vec![b']'; 200]].concat();
        check(&deep);
        check(&deep[..254]);
        let alphabet = b"[], \"1-a\\{";
        let mut raw = Vec::new();
        for len in 1..=7u32 {
            for mut n in 0..alphabet.len().pow(len - 1) {
                raw.clear();
                raw.push(b'[');
                for _ in 1..len {
                    raw.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                check(&raw);
            }
        }
    }

    #[test]
    fn agrees_with_serde_json_on_the_values_it_reads() {
        let raw = br#"{"ph":"X","cat":"cpu_op","name":"aten::conv2d","pid":25427,"tid":25427,"ts":5083520025517.753,"dur":1e3,"args":{"External id":3,"Input Dims":[[1,3,640,640],[]],"Ev Idx":7,"correlation":-4}}"#;
        let ours = Event::parse(raw).unwrap();
        let theirs: serde_json::Value = serde_json::from_slice(raw).unwrap();
        assert_eq!(ours.ts.get(), theirs["ts"].as_f64());
        assert_eq!(ours.dur.get(), theirs["dur"].as_f64());
        assert_eq!(ours.name(), theirs["name"].as_str().unwrap());
        assert_eq!(ours.correlation(), theirs["args"]["correlation"].as_i64());
    }
}
