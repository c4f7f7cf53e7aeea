//! Reading Chrome / Kineto traces: plain or gzipped, bare-array or
//! `traceEvents` object, in one streaming pass (docs/spec.md §5, docs/analysis.md §1).

pub mod event;
pub mod foreign;
mod inflate;
pub mod input;
pub mod kind;
pub(crate) mod lex;
mod options;
pub mod parallel;
pub mod scan;
pub mod seekgz;

use std::path::Path;

use serde::Deserialize;

use crate::budget::Budget;
use crate::error::{Error, Result};
pub use event::Event;
pub use foreign::Foreign;
pub use input::Source;
pub use kind::{EventKind, GpuWork, RuntimeCall, SyncKind};
pub use options::{BLOCK, Progress, ReadOptions, available_threads};
use scan::Scanner;

/// Receives the events of a trace, one at a time.
pub trait EventSink {
    fn event(&mut self, ev: &Event<'_>);
    /// An element of `traceEvents` that is valid JSON but not a usable event.
    fn malformed(&mut self);
    /// The byte offset (in the decompressed stream) where the next element
    /// of `traceEvents` starts: what [`read_spans`] can start again from.
    fn at(&mut self, _offset: u64) {}
    /// The document's top-level `schema` string, met before its events:
    /// `true` ends the read there, the document being something the sink
    /// reads otherwise (a profile: [`Document::Declined`]).
    fn declines(&mut self, _schema: &str) -> bool {
        false
    }
}

/// Two sinks fed by one pass: each gets every call, the first one first
/// (the explorer's read feeds the analysis and the Timeline's index).
pub struct Tee<'a>(pub &'a mut dyn EventSink, pub &'a mut dyn EventSink);

impl EventSink for Tee<'_> {
    fn event(&mut self, ev: &Event<'_>) {
        self.0.event(ev);
        self.1.event(ev);
    }
    fn malformed(&mut self) {
        self.0.malformed();
        self.1.malformed();
    }
    fn at(&mut self, offset: u64) {
        self.0.at(offset);
        self.1.at(offset);
    }
    fn declines(&mut self, schema: &str) -> bool {
        self.0.declines(schema) | self.1.declines(schema)
    }
}

/// What the top level of a JSON file turned out to be.
#[derive(Debug)]
pub enum Document {
    /// A Chrome trace; its events went to the sink.
    Trace(TraceInfo),
    /// A JSON object whose `schema` the sink declined
    /// ([`EventSink::declines`]): nothing was sent to it.
    Declined,
}

/// Top-level facts of a trace besides its events.
#[derive(Debug, Default)]
pub struct TraceInfo {
    pub events: u64,
    pub devices: Vec<DeviceProps>,
    /// Top-level keys only ROCm builds write (`hip_runtime_version`,
    /// `roctracer_version`).
    pub rocm: bool,
    /// Top-level keys only CUDA builds write (`cuda_runtime_version`,
    /// `cupti_version`).
    pub cuda: bool,
    /// Kineto's `trace_id`: one per recorded trace.
    pub trace_id: Option<String>,
    /// Kineto's `traceName`: the path the profiler exported to.
    pub trace_name: Option<String>,
    /// `distributedInfo`: the rank of a distributed job that wrote it.
    pub distributed: Option<Distributed>,
}

/// A trace's `distributedInfo`: which rank of which job wrote it.
#[derive(Debug, Clone, Default, serde::Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Distributed {
    pub rank: Option<u32>,
    pub world_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
}

/// One entry of the trace's `deviceProperties`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct DeviceProps {
    pub id: i64,
    pub name: String,
    #[serde(rename = "totalGlobalMem")]
    pub total_global_mem: f64,
    /// 64 on AMD CDNA (wavefront), 32 on NVIDIA.
    #[serde(rename = "warpSize")]
    pub warp_size: Option<i64>,
    /// CUDA compute capability (8.0 for A100, 9.0 for H100); on ROCm the
    /// gfx version (9.0 for gfx90a, 9.4 for gfx942, 9.5 for gfx950).
    #[serde(rename = "computeMajor")]
    pub compute_major: Option<i64>,
    #[serde(rename = "computeMinor")]
    pub compute_minor: Option<i64>,
    /// Streaming multiprocessors (compute units on AMD).
    #[serde(rename = "numSms")]
    pub num_sms: Option<i64>,
}

/// Streams the trace at `path` into `sink`.
pub fn read(path: &Path, sink: &mut dyn EventSink, opts: &ReadOptions) -> Result<Document> {
    read_source(&Source::path(path)?, sink, opts)
}

thread_local! {
    static PASSES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many passes over a trace this thread has begun: what a test of
/// "read once" counts.
pub fn passes_on_this_thread() -> u64 {
    PASSES.with(std::cell::Cell::get)
}

/// Streams the trace `src` holds into `sink`.
pub fn read_source(src: &Source, sink: &mut dyn EventSink, opts: &ReadOptions) -> Result<Document> {
    match src.open_pass(opts)? {
        input::Opened::Mapped(file) => read_scanned(Scanner::mapped(file), sink, opts),
        input::Opened::Stream(reader) => read_scanned(Scanner::new(reader), sink, opts),
    }
}

/// [`read_source`] over the gzip file `path`, leaving checkpoints for
/// later random access in `into` ([`seekgz`]),
/// `spacing` inflated bytes apart ([`seekgz::SPACING`] in the explorer).
pub fn read_gz_recording(
    path: &Path,
    into: std::sync::Arc<std::sync::Mutex<seekgz::Checkpoints>>,
    spacing: u64,
    sink: &mut dyn EventSink,
    opts: &ReadOptions,
) -> Result<Document> {
    read_scanned(Scanner::new(input::open_gz_recording(path, into, spacing, opts)?), sink, opts)
}

/// One pass over a document from its first byte.
fn read_scanned(
    mut s: Scanner<Box<dyn std::io::Read>>,
    sink: &mut dyn EventSink,
    opts: &ReadOptions,
) -> Result<Document> {
    PASSES.with(|p| p.set(p.get() + 1));
    s.skip_bom()?;
    let mut scratch = Vec::new();
    let mut info = TraceInfo::default();
    match s.peek()? {
        None => return Err(Error::failed("the file is empty")),
        Some(b'[') => {
            s.expect(b'[')?;
            // Another tool's bare array (a memory timeline) is refused at
            // its first element, not read as malformed events.
            s.peek()?;
            if let Some(f) = Foreign::of_first_element(s.window().0) {
                return Err(f.error());
            }
            stream_events_after_bracket(&mut s, sink, &mut info, opts)?;
        }
        Some(b'{') => {
            s.expect(b'{')?;
            let mut first = true;
            let mut saw_events = false;
            while let Some(key) = s.next_key(first, &mut scratch)? {
                first = false;
                // Another tool's JSON, refused at its key (the value may
                // be gigabytes).
                if !saw_events && let Some(f) = Foreign::of_key(&key) {
                    return Err(f.error());
                }
                match key.as_str() {
                    "traceEvents" => {
                        if s.peek()? != Some(b'[') {
                            return Err(Error::failed("`traceEvents` is not an array"));
                        }
                        stream_events(&mut s, sink, &mut info, opts)?;
                        saw_events = true;
                    }
                    "schema" => {
                        let raw = s.value(&mut scratch)?;
                        let id: Option<String> = serde_json::from_slice(raw).ok();
                        if id.is_some_and(|id| sink.declines(&id)) {
                            if saw_events {
                                return Err(Error::failed(
                                    "a profile schema id next to trace events",
                                ));
                            }
                            return Ok(Document::Declined);
                        }
                    }
                    "trace_id" | "traceName" => {
                        let raw = s.value(&mut scratch)?;
                        let v: Option<String> = serde_json::from_slice(raw).ok();
                        if key == "trace_id" {
                            info.trace_id = v;
                        } else {
                            info.trace_name = v;
                        }
                    }
                    "distributedInfo" => {
                        let raw = s.value(&mut scratch)?;
                        // Optional metadata: a malformed record is ignored.
                        info.distributed = serde_json::from_slice(raw).ok();
                    }
                    "deviceProperties" => {
                        let raw = s.value(&mut scratch)?;
                        // Optional metadata: a malformed list is ignored.
                        info.devices = serde_json::from_slice(raw).unwrap_or_default();
                    }
                    "hip_runtime_version" | "hip_driver_version" | "roctracer_version" => {
                        info.rocm = true;
                        s.skip_value()?;
                    }
                    "cuda_runtime_version" | "cuda_driver_version" | "cupti_version" => {
                        info.cuda = true;
                        s.skip_value()?;
                    }
                    _ => s.skip_value()?,
                }
            }
            if !saw_events {
                return Err(Error::failed(
                    "not a PyTorch trace or a libreyolo profile: the JSON object has no `traceEvents` array and no libreyolo `schema`",
                ));
            }
        }
        Some(c) => {
            return Err(Error::failed(format!(
                "not a PyTorch trace or a libreyolo profile: the file starts with '{}', expected '{{' or '['",
                char::from(c).escape_default()
            )));
        }
    }
    if !s.at_end()? {
        return Err(Error::failed(format!(
            "invalid JSON at byte {}: data after the end of the document",
            s.offset()
        )));
    }
    Ok(Document::Trace(info))
}

fn stream_events(
    s: &mut Scanner<Box<dyn std::io::Read>>,
    sink: &mut dyn EventSink,
    info: &mut TraceInfo,
    opts: &ReadOptions,
) -> Result<()> {
    s.expect(b'[')?;
    stream_events_after_bracket(s, sink, info, opts)
}

/// [`stream_events`] with its `[` consumed.
fn stream_events_after_bracket(
    s: &mut Scanner<Box<dyn std::io::Read>>,
    sink: &mut dyn EventSink,
    info: &mut TraceInfo,
    opts: &ReadOptions,
) -> Result<()> {
    let mut first = true;
    if opts.threads > 1 {
        match parallel::stream_events(s, sink, info, opts)? {
            parallel::AfterEvents::Closed => return Ok(()),
            parallel::AfterEvents::Elements { first: f } => first = f,
        }
    }
    stream_elements(s, sink, info, first, &opts.budget)
}

/// The elements of `traceEvents` on this thread, from an element boundary
/// (`first`: just after the `[`).
fn stream_elements<R: std::io::Read>(
    s: &mut Scanner<R>,
    sink: &mut dyn EventSink,
    info: &mut TraceInfo,
    mut first: bool,
    budget: &Budget,
) -> Result<()> {
    let mut scratch = Vec::new();
    loop {
        first = events_in_window(s, sink, info, first, budget)?;
        if !s.next_element(first)? {
            return Ok(());
        }
        first = false;
        info.events += 1;
        if info.events % crate::budget::CHECK_EVERY == 0 {
            budget.check(info.events, s.offset())?;
        }
        sink.at(s.offset());
        one_event(s, sink, info.events, &mut scratch)?;
    }
}

/// The events that lie whole in the bytes the scanner holds, read without
/// its checks per element (which cost a tenth as much as the events' own
/// parse). Stops before anything else, for [`stream_elements`]' general
/// path to read and to say: the array's end, an element that is not an
/// object, an event the held bytes cut, an error. Returns `first` as it
/// stands after the events read.
fn events_in_window<R: std::io::Read>(
    s: &mut Scanner<R>,
    sink: &mut dyn EventSink,
    info: &mut TraceInfo,
    mut first: bool,
    budget: &Budget,
) -> Result<bool> {
    use event::ParseError;
    let (bytes, base) = s.window();
    // Up to the end of the last event read.
    let mut done = 0;
    loop {
        let mut at = lex::skip_ws(bytes, done);
        if !first {
            if bytes.get(at) != Some(&b',') {
                break;
            }
            at = lex::skip_ws(bytes, at + 1);
        }
        if bytes.get(at) != Some(&b'{') {
            break;
        }
        let mut ev = Event::default();
        let parsed = Event::parse_prefix_into(&bytes[at..], &mut ev);
        let used = match parsed {
            Ok(used) | Err(ParseError::ShapeAt(_, used)) => used,
            Err(_) => break,
        };
        info.events += 1;
        let offset = base + at as u64;
        if info.events % crate::budget::CHECK_EVERY == 0 {
            budget.check(info.events, offset)?;
        }
        sink.at(offset);
        match parsed {
            Ok(_) => sink.event(&ev),
            Err(_) => sink.malformed(),
        }
        (done, first) = (at + used, false);
    }
    s.consume(done);
    Ok(first)
}

/// Reads the element of `traceEvents` at the scanner into `sink`; `n` is
/// its number, for messages.
fn one_event<R: std::io::Read>(
    s: &mut Scanner<R>,
    sink: &mut dyn EventSink,
    n: u64,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    use event::ParseError;
    {
        if s.peek()? != Some(b'{') {
            // Not an object: valid JSON (checked) but not an event.
            let raw = s.value(scratch)?;
            if let Err(e @ ParseError::Syntax { .. }) = Event::parse(raw) {
                return Err(Error::failed(format!("invalid JSON in event {n}: {e}")).caused_by(e));
            }
            sink.malformed();
            return Ok(());
        }
        s.parse_in_place(n, |bytes| {
            // Parsed where it stays: moving an event out (~300 bytes) was
            // 2-3% of a read.
            let mut ev = Event::default();
            match Event::parse_prefix_into(bytes, &mut ev) {
                Ok(used) => {
                    sink.event(&ev);
                    Ok(Some(used))
                }
                Err(ParseError::ShapeAt(_, used)) => {
                    sink.malformed();
                    Ok(Some(used))
                }
                Err(ParseError::Eof) => Ok(None),
                Err(e) => {
                    Err(Error::failed(format!("invalid JSON in event {n}: {e}")).caused_by(e))
                }
            }
        })?;
    }
    Ok(())
}

/// Reads again the events of `traceEvents` that start in the byte spans
/// `[from, to)` (offsets given by [`EventSink::at`] on an earlier pass,
/// sorted, not overlapping). A plain file is entered by seeking; a gzipped
/// one or a stream is decompressed from the start up to each span (gzip
/// cannot seek), which costs in proportion to how far into it the span is.
/// A gzip file with `checkpoints` (taken by [`read_gz_recording`]) resumes
/// at the last checkpoint before each span instead of inflating from the
/// start.
pub fn read_spans(
    src: &Source,
    spans: &[(u64, u64)],
    checkpoints: Option<&seekgz::Checkpoints>,
    sink: &mut dyn EventSink,
    opts: &ReadOptions,
) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    let plain = src
        .file_path()
        .filter(|p| !input::is_gzip_file(p))
        .and_then(|p| std::fs::File::open(p).ok());
    let mut scratch = Vec::new();
    if let (None, Some(points), Some(path)) = (&plain, checkpoints, src.file_path()) {
        let cannot = |e: std::io::Error| Error::failed(format!("cannot read {}: {e}", src.label()));
        let mut at: Option<Scanner<seekgz::GzReader>> = None;
        for &(from, to) in spans {
            // Go on reading forward when that is no longer than resuming.
            let near = |s: &Scanner<seekgz::GzReader>| {
                s.offset() <= from && points.before(from).is_none_or(|c| c <= s.offset())
            };
            if !at.as_ref().is_some_and(near) {
                at = points
                    .resume(path, from)
                    .map_err(cannot)?
                    .map(|(r, base)| Scanner::starting_at(r, base));
            }
            let Some(s) = at.as_mut() else {
                return Err(Error::failed(format!(
                    "{}: no gzip checkpoint before byte {from}",
                    src.label()
                )));
            };
            s.skip_to(from)?;
            span_events(s, to, sink, &mut scratch)?;
        }
        return Ok(());
    }
    let Some(f) = plain else {
        // One decompressed stream, read forward through every span.
        let mut s = Scanner::new(src.open(&opts.with_progress(Progress::Off))?);
        for &(from, to) in spans {
            s.skip_to(from)?;
            span_events(&mut s, to, sink, &mut scratch)?;
        }
        return Ok(());
    };
    for &(from, to) in spans {
        let mut f = f.try_clone().map_err(|e| {
            Error::failed(format!("cannot reopen {}: {e}", src.label())).caused_by(e)
        })?;
        f.seek(SeekFrom::Start(from)).map_err(|e| {
            Error::failed(format!("cannot seek in {}: {e}", src.label())).caused_by(e)
        })?;
        let mut s = Scanner::starting_at(f, from);
        span_events(&mut s, to, sink, &mut scratch)?;
    }
    Ok(())
}

/// The elements from the scanner's position while they start before `to`.
fn span_events<R: std::io::Read>(
    s: &mut Scanner<R>,
    to: u64,
    sink: &mut dyn EventSink,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let mut first = true;
    let mut n = 0;
    while s.offset() < to && s.next_element(first)? {
        if s.offset() >= to {
            break;
        }
        first = false;
        n += 1;
        sink.at(s.offset());
        one_event(s, sink, n, scratch)?;
    }
    Ok(())
}

/// Kineto's `trace_id` of the trace at `path`, read from the keys before
/// `traceEvents` (where Kineto writes it): cheap on any size of trace.
/// `None` when the trace has none there or cannot be read. A capture
/// records it in its measured sidecar, which ties the two together.
pub fn trace_id(path: &Path) -> Option<String> {
    header_value(path, "trace_id")
}

/// `distributedInfo.rank` of the trace at `path`, when Kineto wrote it
/// before `traceEvents` (it does): lets `--ranks` skip a rank unread.
pub fn header_rank(path: &Path) -> Option<u32> {
    header_value::<Distributed>(path, "distributedInfo")?.rank
}

/// The value of a top-level `key` that comes before `traceEvents`, read
/// without touching the events; `None` when it is not there or unreadable.
fn header_value<T: serde::de::DeserializeOwned>(path: &Path, key: &str) -> Option<T> {
    // One thread: a header is a few bytes, not worth an inflating thread.
    let mut s =
        Scanner::new(input::open(path, &ReadOptions::default().with_threads(1, BLOCK)).ok()?);
    s.skip_bom().ok()?;
    let mut scratch = Vec::new();
    s.expect(b'{').ok()?;
    let mut first = true;
    while let Some(k) = s.next_key(first, &mut scratch).ok()? {
        first = false;
        if k.as_str() == key {
            return serde_json::from_slice(s.value(&mut scratch).ok()?).ok();
        }
        if k.as_str() == "traceEvents" {
            return None;
        }
        s.skip_value().ok()?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_id_is_read_from_the_header_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        std::fs::write(
            &p,
            "\u{feff}{\"schemaVersion\": 1, \"trace_id\": \"11CE\", \"traceEvents\": [",
        )
        .unwrap();
        assert_eq!(
            trace_id(&p).as_deref(),
            Some("11CE"),
            "truncated after the header: still found"
        );
        std::fs::write(&p, r#"{"traceEvents": [], "trace_id": "late"}"#).unwrap();
        assert_eq!(trace_id(&p), None, "not read past the events");
        std::fs::write(&p, "[]").unwrap();
        assert_eq!(trace_id(&p), None);
    }

    /// Counts events.
    struct Count(u64);
    impl EventSink for Count {
        fn event(&mut self, _ev: &Event<'_>) {
            self.0 += 1;
        }
        fn malformed(&mut self) {}
    }

    /// A read whose stop flag is set ends at the pass's next check, on
    /// one thread or several, plain or gzip; unset, it reads to the end.
    #[test]
    fn a_read_asked_to_stop_stops_at_its_next_check() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;
        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("t.json.gz");
        let plain = dir.path().join("t.json");
        let mut text = String::from("[");
        let n = 3 * crate::budget::CHECK_EVERY;
        for i in 0..n {
            let sep = if i == 0 { "" } else { "," };
            text.push_str(&format!(
                "{sep}{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":{i},\"dur\":1}}"
            ));
        }
        text.push(']');
        std::fs::write(&plain, &text).unwrap();
        let mut w = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        std::io::Write::write_all(&mut w, text.as_bytes()).unwrap();
        w.finish().unwrap();
        for path in [&plain, &gz] {
            for threads in [1, 2] {
                let mut opts = ReadOptions::default().with_threads(threads, 1 << 16);
                opts.budget = Budget::NONE;
                let mut all = Count(0);
                read(path, &mut all, &opts).unwrap();
                assert_eq!(all.0, n, "{} on {threads}", path.display());
                opts.budget.stop = Some(Arc::new(AtomicBool::new(true)));
                let mut some = Count(0);
                let e = read(path, &mut some, &opts).unwrap_err();
                assert!(e.message().contains("the read was cancelled"), "{e}");
                assert!(some.0 < n, "{} on {threads}: stopped early", path.display());
            }
        }
    }
}
