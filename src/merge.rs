//! `profile merge`: one Chrome trace for a whole job, each rank its own
//! process, the ranks' clocks aligned on a collective every rank ran
//! (docs/spec.md §7, docs/design.md §5).
//!
//! Two passes, neither holding a rank's events:
//!
//! 1. *Offsets.* The ranks are read as `summary DIR` reads them
//!    ([`crate::profile::ranks`]: in parallel, each in the memory of one
//!    trace) and their collectives matched across the ranks
//!    ([`crate::lens::collectives`]); the first collective matched on every
//!    rank gives each rank's clock offset.
//! 2. *Copy.* Each rank's trace is streamed again, element by element,
//!    with the trace reader's [`Scanner`] (`parse_in_place`: the event's
//!    bytes where they lie in its buffer), and every event is written out
//!    as it is read, its raw JSON kept and only `pid`, `tid`, `ts` and a
//!    flow's `id` rewritten; another thread compresses and writes. The parsed [`crate::trace::Event`] the
//!    analysis gets cannot be written back (it keeps a few fields), and
//!    re-encoding through `serde_json::Value` would cost more and round
//!    timestamps; a top-level split of the event's bytes rewrites those
//!    four values and copies the rest byte for byte.
//!
//! Memory: one event, a few 1 MiB chunks in flight, and per rank a map of
//! its threads.

use std::io::Write;
use std::path::{Path, PathBuf};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use schemars::JsonSchema;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::profile::ranks::RankSet;
use crate::trace::ReadOptions;
use crate::trace::lex::{sanitize_nonfinite, skip_ws, string_end};
use crate::trace::scan::Scanner;

/// What was merged, for the text and `--json` outputs.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Merged {
    pub output: String,
    pub gzip: bool,
    /// The collective the clocks were aligned on; `None`: left as recorded.
    pub aligned_on: Option<AlignedOn>,
    /// Events written, all ranks.
    pub events: u64,
    pub ranks: Vec<MergedRank>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct AlignedOn {
    pub group: String,
    /// Its position in the group, as `collectives` numbers it.
    pub seq: usize,
    pub collective: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct MergedRank {
    pub rank: u32,
    /// The process this rank is in the merged trace.
    pub pid: u32,
    pub file: String,
    /// Added to every timestamp of this rank, µs.
    pub offset_us: f64,
    /// Events written: the rank's own, less the process metadata replaced,
    /// plus the three of the rank's process (name, sort index, labels).
    pub events: u64,
    /// The rank's `process_name`/`process_labels`/`process_sort_index`
    /// events, replaced by the rank's own.
    pub metadata_replaced: u64,
    /// Elements of `traceEvents` that are not objects (not events), left out.
    pub left_out: u64,
    /// Threads (and GPU streams) the rank's process holds.
    pub threads: usize,
}

/// Process metadata of a rank's own processes: replaced by the rank's.
const PROCESS_METADATA: [&[u8]; 4] = [
    b"\"process_name\"",
    b"\"process_labels\"",
    b"\"process_sort_index\"",
    b"\"process_uptime_seconds\"",
];

/// Writes one Chrome trace of the ranks of `set` to `output` (gzipped when
/// its name ends in `.gz`), atomically. `align`: shift each rank's clock so
/// that the first collective matched on every rank ends at the same time.
pub fn merge(set: &RankSet, output: &Path, align: bool, read: &ReadOptions) -> Result<Merged> {
    let gzip = output.to_string_lossy().ends_with(".gz");
    let mut notes = Vec::new();
    let (offsets, aligned_on) = offsets(set, align, &mut notes, read)?;
    let mut ranks: Vec<MergedRank> = set
        .ranks
        .iter()
        .zip(&offsets)
        .map(|(r, off)| MergedRank {
            rank: r.rank,
            pid: r.rank,
            file: r.input.path.display().to_string(),
            offset_us: *off as f64 / 1e3,
            events: 0,
            metadata_replaced: 0,
            left_out: 0,
            threads: 0,
        })
        .collect();
    let stride = 10i64.pow(digits(set.ranks.iter().map(|r| r.rank).max().unwrap_or(0)));
    crate::files::write_atomic_with(output, &mut |w| {
        // The events are rewritten on this thread and compressed and
        // written on another: a few chunks in flight at most.
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
            let writer = scope.spawn(move || -> Result<()> {
                if gzip {
                    let mut gz =
                        flate2::write::GzEncoder::new(w, flate2::Compression::new(GZIP_LEVEL));
                    for chunk in rx {
                        gz.write_all(&chunk).map_err(|e| write_error(output, e))?;
                    }
                    gz.finish().map(drop).map_err(|e| write_error(output, e))
                } else {
                    for chunk in rx {
                        w.write_all(&chunk).map_err(|e| write_error(output, e))?;
                    }
                    Ok(())
                }
            });
            let mut chunks = Chunks(Some(tx));
            let copied = write_merged(
                &mut chunks,
                (output, read),
                set,
                &offsets,
                stride,
                aligned_on.as_ref(),
                &mut ranks,
            );
            // Closing the channel ends the writer; its error, if any, says why a send failed.
            chunks.0 = None;
            let written = writer.join().unwrap_or_else(|_| {
                Err(Error::failed(format!("cannot write {}: the writer failed", output.display())))
            });
            written.and(copied)
        })
    })?;
    let events = ranks.iter().map(|r| r.events).sum();
    Ok(Merged { output: output.display().to_string(), gzip, aligned_on, events, ranks, notes })
}

/// The merged trace into `w`: the header, each rank's events, the trailer.
fn write_merged(
    w: &mut dyn Write,
    (path, read): (&Path, &ReadOptions),
    set: &RankSet,
    offsets: &[i64],
    stride: i64,
    aligned_on: Option<&AlignedOn>,
    ranks: &mut [MergedRank],
) -> Result<()> {
    let buf = Vec::with_capacity(OUT_CHUNK + (64 << 10));
    let mut out = Out { w, buf, first: true, path, read };
    out.header(ranks, aligned_on)?;
    let mut base = None;
    for (k, ((r, off), row)) in set.ranks.iter().zip(offsets).zip(ranks.iter_mut()).enumerate() {
        let b =
            RankCopy { rank: r.rank, delta_ns: *off, stride }.run(&r.input.path, &mut out, row)?;
        // The merged clock is the first rank's (its offset is 0).
        if k == 0 {
            base = b;
        }
    }
    out.trailer(base)?;
    out.flush()
}

/// 1 MiB chunks handed to the writer thread while it writes earlier ones.
const IN_FLIGHT: usize = 4;

/// The sending end of the writer thread's channel, as a `Write`.
struct Chunks(Option<std::sync::mpsc::SyncSender<Vec<u8>>>);

impl Write for Chunks {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let stopped = || std::io::Error::other("the writer stopped");
        self.0.as_ref().ok_or_else(stopped)?.send(buf.to_vec()).map_err(|_| stopped())?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// zlib level 1: the merged 8 × 100 MB job shrinks 7.5× (741 → 99 MB);
/// level 6 makes it 30% smaller still but takes 1.7× as long (gzip(1) on
/// 200 MB of it: 2.2 s against 3.7 s), and compression, on its own thread,
/// already takes longer than the copy it overlaps.
const GZIP_LEVEL: u32 = 1;

/// Bytes gathered before a write: few, large writes into the encoder.
const OUT_CHUNK: usize = 1 << 20;

fn digits(n: u32) -> u32 {
    n.checked_ilog10().map_or(1, |d| d + 1)
}

fn write_error(path: &Path, e: std::io::Error) -> Error {
    Error::failed(format!("cannot write {}: {e}", path.display())).caused_by(e)
}

/// Each rank's clock offset, ns, in the set's order. Aligned: the first
/// collective matched on every rank ends at the same time on every clock
/// (the lowest rank's is kept). Its end, not its start: a collective ends
/// when its last rank has arrived and the transfer is done, the same moment
/// everywhere, while the ranks' starts differ by their real arrival skew,
/// which the merged timeline should show. Otherwise each trace's
/// `baseTimeNanoseconds` (where recorded) puts the ranks on one clock.
fn offsets(
    set: &RankSet,
    align: bool,
    notes: &mut Vec<String>,
    read: &ReadOptions,
) -> Result<(Vec<i64>, Option<AlignedOn>)> {
    let n = set.ranks.len();
    if n > 1 && align {
        let c = crate::lens::collectives::of_ranks(set);
        let first = c
            .collectives
            .iter()
            .filter(|m| m.ranks.len() == n)
            .min_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
        if let Some(m) = first {
            let end = |k: usize| -> Option<i64> {
                let at = m.ranks.iter().find(|x| x.rank == set.ranks[k].rank)?;
                let call = set.ranks[k].input.profile.collectives.get(at.call)?;
                Some(call.start_ns + call.dur_ns)
            };
            let ends: Option<Vec<i64>> = (0..n).map(end).collect();
            if let Some(ends) = ends {
                let on = AlignedOn {
                    group: m.group.clone(),
                    seq: m.seq,
                    collective: m.collective.clone(),
                };
                return Ok((ends.iter().map(|e| ends[0] - e).collect(), Some(on)));
            }
        }
        notes.push(
            "no collective was matched on every rank: the clocks are left as recorded".to_string(),
        );
    } else if n > 1 {
        notes.push("--no-align: the clocks are left as recorded".to_string());
    }
    // As recorded: each trace's timestamps are relative to its
    // `baseTimeNanoseconds`, where it has one.
    let bases: Vec<Option<i128>> =
        set.ranks.iter().map(|r| base_time(&r.input.path, read)).collect::<Result<_>>()?;
    let reference = bases.first().copied().flatten().unwrap_or(0);
    Ok((bases.iter().map(|b| (b.unwrap_or(0) - reference) as i64).collect(), None))
}

/// The trace's `baseTimeNanoseconds`. Kineto writes it after
/// `traceEvents`, so the events are streamed past (not parsed) to find it.
fn base_time(path: &Path, read: &ReadOptions) -> Result<Option<i128>> {
    let mut s = Scanner::new(crate::trace::input::open(path, read)?);
    s.skip_bom()?;
    if s.peek()? != Some(b'{') {
        return Ok(None);
    }
    s.expect(b'{')?;
    let mut scratch = Vec::new();
    let mut first = true;
    while let Some(key) = s.next_key(first, &mut scratch)? {
        first = false;
        if key == "baseTimeNanoseconds" {
            return Ok(integer(s.value(&mut scratch)?));
        }
        s.skip_value()?;
    }
    Ok(None)
}

/// A JSON integer (or numeric string), as Kineto writes `baseTimeNanoseconds`.
fn integer(raw: &[u8]) -> Option<i128> {
    let raw = raw.strip_prefix(b"\"").and_then(|r| r.strip_suffix(b"\"")).unwrap_or(raw);
    std::str::from_utf8(raw).ok()?.trim().parse().ok()
}

/// The merged trace being written.
struct Out<'w> {
    w: &'w mut dyn Write,
    buf: Vec<u8>,
    /// No event written yet (no ',' before the next).
    first: bool,
    path: &'w Path,
    /// How the ranks' traces are read again.
    read: &'w ReadOptions,
}

impl Out<'_> {
    fn header(&mut self, ranks: &[MergedRank], on: Option<&AlignedOn>) -> Result<()> {
        #[derive(Serialize)]
        struct Info<'a> {
            tool: &'static str,
            aligned_on: Option<&'a AlignedOn>,
            ranks: Vec<serde_json::Value>,
        }
        let info = Info {
            tool: concat!("libreyolo profile merge ", env!("CARGO_PKG_VERSION")),
            aligned_on: on,
            ranks: ranks
                .iter()
                .map(|r| serde_json::json!({"rank": r.rank, "pid": r.pid, "file": r.file, "offset_us": r.offset_us}))
                .collect(),
        };
        let info = serde_json::to_string(&info).map_err(|e| {
            Error::failed(format!("cannot encode the merge header: {e}")).caused_by(e)
        })?;
        self.buf.extend_from_slice(
            b"{\n  \"schemaVersion\": 1,\n  \"displayTimeUnit\": \"ms\",\n  \"libreyoloMerge\": ",
        );
        self.buf.extend_from_slice(info.as_bytes());
        self.buf.extend_from_slice(b",\n  \"traceEvents\": [\n");
        Ok(())
    }

    fn trailer(&mut self, base: Option<i128>) -> Result<()> {
        self.buf.extend_from_slice(b"\n  ]");
        if let Some(b) = base {
            self.buf.extend_from_slice(format!(",\n  \"baseTimeNanoseconds\": {b}").as_bytes());
        }
        self.buf.extend_from_slice(b"\n}\n");
        Ok(())
    }

    /// Starts the next event in the buffer.
    fn next(&mut self) {
        if !self.first {
            self.buf.extend_from_slice(b",\n");
        }
        self.first = false;
    }

    fn maybe_flush(&mut self) -> Result<()> {
        if self.buf.len() >= OUT_CHUNK { self.flush() } else { Ok(()) }
    }

    fn flush(&mut self) -> Result<()> {
        self.w.write_all(&self.buf).map_err(|e| write_error(self.path, e))?;
        self.buf.clear();
        Ok(())
    }
}

/// A pid or tid as the reader takes it: `"25738"` is 25738, `"stream 7"`
/// is 7; other strings stay strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum IdKey {
    None,
    Int(i64),
    Str(Vec<u8>),
}

fn id_key(raw: Option<&[u8]>) -> IdKey {
    let Some(raw) = raw else { return IdKey::None };
    let text: std::borrow::Cow<'_, str> = if raw.first() == Some(&b'"') {
        match serde_json::from_slice::<String>(raw) {
            Ok(s) => s.into(),
            Err(_) => String::from_utf8_lossy(raw).into_owned().into(),
        }
    } else {
        String::from_utf8_lossy(raw)
    };
    let t = text.trim();
    if let Ok(v) = t.parse::<i64>() {
        return IdKey::Int(v);
    }
    if let Some(v) = t.parse::<f64>().ok().filter(|v| v.fract() == 0.0 && v.abs() < 9e15) {
        return IdKey::Int(v as i64);
    }
    if let Some(v) = t.strip_prefix("stream ").and_then(|r| r.trim().parse::<i64>().ok()) {
        return IdKey::Int(v);
    }
    IdKey::Str(raw.to_vec())
}

/// One rank's copy into the merged trace.
struct RankCopy {
    rank: u32,
    delta_ns: i64,
    /// Flow ids become `id × stride + rank`.
    stride: i64,
}

/// The threads of one rank's process: each (pid, tid) of its trace keeps
/// its tid where no other (pid, tid) of the rank took it first (a second
/// device's `stream 7`), else gets one counted down from `i32::MAX`.
#[derive(Default)]
struct Threads {
    map: HashMap<(IdKey, IdKey), i64>,
    taken: HashSet<i64>,
    fresh: i64,
}

impl Threads {
    fn tid(&mut self, pid: IdKey, tid: IdKey) -> i64 {
        if let Some(t) = self.map.get(&(pid.clone(), tid.clone())) {
            return *t;
        }
        let t = match tid {
            IdKey::Int(t) if !self.taken.contains(&t) && (0..=i64::from(i32::MAX)).contains(&t) => {
                t
            }
            _ => loop {
                self.fresh = if self.fresh == 0 { i64::from(i32::MAX) } else { self.fresh - 1 };
                if !self.taken.contains(&self.fresh) {
                    break self.fresh;
                }
            },
        };
        self.taken.insert(t);
        self.map.insert((pid, tid), t);
        t
    }
}

impl RankCopy {
    /// Streams the trace at `path` into `out`; returns its
    /// `baseTimeNanoseconds` where it has one.
    fn run(&self, path: &Path, out: &mut Out<'_>, row: &mut MergedRank) -> Result<Option<i128>> {
        let label = path.display().to_string();
        let mut s = Scanner::new(crate::trace::input::open(path, out.read)?);
        s.skip_bom()?;
        let mut threads = Threads::default();
        self.preamble(out, path);
        row.events += 3;
        let mut base = None;
        let mut scratch = Vec::new();
        match s.peek()? {
            Some(b'[') => self.events(&mut s, out, row, &mut threads)?,
            Some(b'{') => {
                s.expect(b'{')?;
                let mut first = true;
                while let Some(key) = s.next_key(first, &mut scratch)? {
                    first = false;
                    match key.as_str() {
                        "traceEvents" => self.events(&mut s, out, row, &mut threads)?,
                        "baseTimeNanoseconds" => base = integer(s.value(&mut scratch)?),
                        _ => s.skip_value()?,
                    }
                }
            }
            _ => {
                return Err(Error::failed(format!(
                    "{label}: not a Chrome trace (read before, changed since?)"
                )));
            }
        }
        row.threads = threads.map.len();
        Ok(base)
    }

    /// The rank's process: its name, its place in the list, and its file.
    fn preamble(&self, out: &mut Out<'_>, path: &Path) {
        let r = self.rank;
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let label = serde_json::to_string(&file).unwrap_or_else(|_| "\"\"".into());
        for ev in [
            format!(
                r#"{{"name": "process_name", "ph": "M", "ts": 0, "pid": {r}, "tid": 0, "args": {{"name": "rank {r}"}}}}"#
            ),
            format!(
                r#"{{"name": "process_sort_index", "ph": "M", "ts": 0, "pid": {r}, "tid": 0, "args": {{"sort_index": {r}}}}}"#
            ),
            format!(
                r#"{{"name": "process_labels", "ph": "M", "ts": 0, "pid": {r}, "tid": 0, "args": {{"labels": {label}}}}}"#
            ),
        ] {
            out.next();
            out.buf.extend_from_slice(ev.as_bytes());
        }
    }

    /// The elements of `traceEvents`, each split and written where the
    /// scanner holds it (one pass over its bytes, no copy of the event).
    fn events<R: std::io::Read>(
        &self,
        s: &mut Scanner<R>,
        out: &mut Out<'_>,
        row: &mut MergedRank,
        threads: &mut Threads,
    ) -> Result<()> {
        let mut scratch = Vec::new();
        let mut fields = Vec::new();
        let mut clean = Vec::new();
        s.expect(b'[')?;
        let mut first = true;
        let mut n = 0u64;
        while s.next_element(first)? {
            first = false;
            n += 1;
            if s.peek()? != Some(b'{') {
                // Valid JSON (the first pass read it) but not an event.
                s.value(&mut scratch)?;
                row.left_out += 1;
                continue;
            }
            s.parse_in_place(n, |bytes| {
                let (end, nonfinite) = match split(bytes, &mut fields) {
                    Split::More => return Ok(None),
                    Split::Bad => {
                        return Err(Error::failed(format!(
                            "event {n} is not the JSON the first pass read (did the file change?)"
                        )));
                    }
                    Split::Done { end, nonfinite } => (end, nonfinite),
                };
                let raw = if nonfinite {
                    // Python's NaN / Infinity are not JSON: Perfetto refuses them.
                    sanitize_nonfinite(&bytes[..end], &mut clean);
                    if !matches!(split(&clean, &mut fields), Split::Done { .. }) {
                        return Err(Error::failed(format!(
                            "event {n}: cannot rewrite its NaN or Infinity"
                        )));
                    }
                    &clean[..]
                } else {
                    &bytes[..end]
                };
                let get = |k: &[u8]| {
                    fields
                        .iter()
                        .find(|f| &raw[f.key.0..f.key.1] == k)
                        .map(|f| &raw[f.val.0..f.val.1])
                };
                if get(b"ph") == Some(b"\"M\"")
                    && get(b"name").is_some_and(|n| PROCESS_METADATA.contains(&n))
                {
                    row.metadata_replaced += 1;
                } else {
                    let tid = threads.tid(id_key(get(b"pid")), id_key(get(b"tid")));
                    self.write_event(raw, &fields, tid, out);
                    row.events += 1;
                }
                Ok(Some(end))
            })?;
            out.maybe_flush()?;
        }
        Ok(())
    }

    /// One event, its fields in their order, `pid`/`tid`/`ts`/`id` rewritten.
    fn write_event(&self, raw: &[u8], fields: &[Field], tid: i64, out: &mut Out<'_>) {
        out.next();
        let b = &mut out.buf;
        b.push(b'{');
        let mut sep = false;
        let mut put = |b: &mut Vec<u8>, key: &[u8]| {
            if sep {
                b.extend_from_slice(b", ");
            }
            sep = true;
            b.push(b'"');
            b.extend_from_slice(key);
            b.extend_from_slice(b"\": ");
        };
        let has = |k: &[u8]| fields.iter().any(|f| &raw[f.key.0..f.key.1] == k);
        if !has(b"pid") {
            put(b, b"pid");
            b.extend_from_slice(self.rank.to_string().as_bytes());
        }
        if !has(b"tid") {
            put(b, b"tid");
            b.extend_from_slice(tid.to_string().as_bytes());
        }
        for f in fields {
            let key = &raw[f.key.0..f.key.1];
            let val = &raw[f.val.0..f.val.1];
            put(b, key);
            match key {
                b"pid" => b.extend_from_slice(self.rank.to_string().as_bytes()),
                b"tid" => b.extend_from_slice(tid.to_string().as_bytes()),
                b"ts" => {
                    if self.delta_ns == 0 || !shift_ts(val, self.delta_ns, b) {
                        b.extend_from_slice(val);
                    }
                }
                b"id" => self.flow_id(val, b),
                b"args" => self.args(val, b),
                _ => b.extend_from_slice(val),
            }
        }
        b.push(b'}');
    }

    /// An event's `args` with the ids that pair events within a process —
    /// a launch and its kernel (`correlation`), an op and its launches
    /// (`External id`), an event's record and its waits — made unique to
    /// the rank as flow ids are: every rank numbers them from 1, and a
    /// kernel paired with another rank's launch is a kernel launched after
    /// it ran. Copied as it is where it does not split.
    fn args(&self, val: &[u8], b: &mut Vec<u8>) {
        const IDS: [&[u8]; 4] =
            [b"correlation", b"External id", b"external id", b"wait_on_cuda_event_record_corr_id"];
        let mut fields = Vec::new();
        let whole = matches!(split(val, &mut fields), Split::Done { end, .. } if end == val.len());
        if !whole || !fields.iter().any(|f| IDS.contains(&&val[f.key.0..f.key.1])) {
            return b.extend_from_slice(val);
        }
        b.push(b'{');
        for (k, f) in fields.iter().enumerate() {
            if k > 0 {
                b.extend_from_slice(b", ");
            }
            let (key, v) = (&val[f.key.0..f.key.1], &val[f.val.0..f.val.1]);
            b.push(b'"');
            b.extend_from_slice(key);
            b.extend_from_slice(b"\": ");
            let joined = IDS
                .contains(&key)
                .then(|| std::str::from_utf8(v).ok()?.parse::<i64>().ok())
                .flatten()
                .filter(|&id| id >= 0)
                .and_then(|id| id.checked_mul(self.stride)?.checked_add(i64::from(self.rank)))
                .filter(|v| v.unsigned_abs() <= 1 << 53);
            match joined {
                Some(id) => b.extend_from_slice(id.to_string().as_bytes()),
                None => b.extend_from_slice(v),
            }
        }
        b.push(b'}');
    }

    /// A flow's (or async event's) id, made unique to the rank: every
    /// rank numbers its flows from 1.
    fn flow_id(&self, val: &[u8], b: &mut Vec<u8>) {
        let as_int = std::str::from_utf8(val).ok().and_then(|t| t.parse::<i64>().ok());
        let joined = as_int
            .and_then(|v| v.checked_mul(self.stride)?.checked_add(i64::from(self.rank)))
            .filter(|v| v.unsigned_abs() <= 1 << 53);
        match joined {
            Some(v) => b.extend_from_slice(v.to_string().as_bytes()),
            None => {
                // A string (or a number too large to scale): a string unique to the rank.
                let inner =
                    val.strip_prefix(b"\"").and_then(|v| v.strip_suffix(b"\"")).unwrap_or(val);
                b.push(b'"');
                b.extend_from_slice(inner);
                b.extend_from_slice(format!(":rank{}\"", self.rank).as_bytes());
            }
        }
    }
}

/// A top-level field of an event: the key's bytes (inside the quotes) and
/// the value's, as ranges of the event.
struct Field {
    key: (usize, usize),
    val: (usize, usize),
}

/// What [`split`] found.
#[derive(Debug, PartialEq)]
enum Split {
    /// An object, `end` bytes long; `nonfinite`: a value holds a bare
    /// `NaN` or `Infinity`.
    Done { end: usize, nonfinite: bool },
    /// The bytes end inside the object: more are needed.
    More,
    /// Not an object, or not JSON.
    Bad,
}

/// Splits the object at the start of `raw` (after whitespace) into its
/// top-level fields. The trace was read whole in the first pass, so this
/// only finds boundaries: strings (with their escapes) and nesting.
fn split(raw: &[u8], fields: &mut Vec<Field>) -> Split {
    fields.clear();
    let mut nonfinite = false;
    let mut i = skip_ws(raw, 0);
    match raw.get(i) {
        Some(b'{') => i += 1,
        Some(_) => return Split::Bad,
        None => return Split::More,
    }
    loop {
        i = skip_ws(raw, i);
        match raw.get(i) {
            None => return Split::More,
            Some(b'}') => return Split::Done { end: i + 1, nonfinite },
            Some(b',') => i = skip_ws(raw, i + 1),
            Some(_) => {}
        }
        match raw.get(i) {
            None => return Split::More,
            Some(b'"') => {}
            Some(_) => return Split::Bad,
        }
        let Some(key_end) = string_end(raw, i) else { return Split::More };
        let key = (i + 1, key_end);
        i = skip_ws(raw, key_end + 1);
        match raw.get(i) {
            None => return Split::More,
            Some(b':') => {}
            Some(_) => return Split::Bad,
        }
        let start = skip_ws(raw, i + 1);
        let mut depth = 0usize;
        let mut j = start;
        loop {
            let Some(&c) = raw.get(j) else { return Split::More };
            match c {
                b'"' => match string_end(raw, j) {
                    Some(e) => j = e,
                    None => return Split::More,
                },
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth == 0 => break,
                b'}' | b']' => depth -= 1,
                b',' if depth == 0 => break,
                b'N' | b'I' => nonfinite = true,
                _ => {}
            }
            j += 1;
        }
        let mut end = j;
        while end > start && matches!(raw[end - 1], b' ' | b'\n' | b'\r' | b'\t') {
            end -= 1;
        }
        if end == start {
            return Split::Bad;
        }
        fields.push(Field { key, val: (start, end) });
        i = j;
    }
}

/// Writes the timestamp `raw` (µs) plus `delta_ns` into `b`, exactly for
/// the decimals Kineto writes (up to three: ns); other spellings through
/// f64. False when `raw` is not a number (left as it is).
fn shift_ts(raw: &[u8], delta_ns: i64, b: &mut Vec<u8>) -> bool {
    let text = raw.strip_prefix(b"\"").and_then(|r| r.strip_suffix(b"\"")).unwrap_or(raw);
    let Ok(text) = std::str::from_utf8(text) else { return false };
    let text = text.trim();
    if let Some(ns) = exact_ns(text) {
        let v = ns + i128::from(delta_ns);
        let (sign, a) = if v < 0 { ("-", -v) } else { ("", v) };
        let frac = a % 1000;
        let s = if frac == 0 {
            format!("{sign}{}", a / 1000)
        } else {
            format!("{sign}{}.{frac:03}", a / 1000)
        };
        b.extend_from_slice(s.as_bytes());
        return true;
    }
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => {
            b.extend_from_slice(format!("{}", v + delta_ns as f64 / 1e3).as_bytes());
            true
        }
        _ => false,
    }
}

/// `123`, `-4.5`, `4458676522690.655` → ns; `None` for exponents or more
/// than three decimals.
fn exact_ns(t: &str) -> Option<i128> {
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    if whole.is_empty()
        || whole.len() > 30
        || frac.len() > 3
        || !whole.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let mut f: i128 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    for _ in frac.len()..3 {
        f *= 10;
    }
    let v = whole.parse::<i128>().ok()? * 1000 + f;
    Some(if neg { -v } else { v })
}

/// What [`input_files`] found: the rank traces, and notes for stderr.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub files: Vec<PathBuf>,
    pub notes: Vec<String>,
}

/// The files `merge` reads: a folder's traces (all of them, even one), or
/// the files named; the output file itself is never one of them (a second
/// run into the same folder).
pub fn input_files(args: &[PathBuf], output: &Path) -> Result<Inputs> {
    if args.iter().any(|a| a.as_os_str() == "-") {
        return Err(Error::usage(
            "merge reads each trace twice (offsets, then the copy): give files or a folder, not standard input",
        ));
    }
    let mut files = Vec::new();
    for a in args {
        let p = a.as_path();
        if p.is_dir() {
            files.extend(crate::input::json_files_in(p)?);
        } else {
            files.push(crate::input::resolve_input(a)?);
        }
    }
    let mut notes = Vec::new();
    let out = std::fs::canonicalize(output).ok();
    if let Some(out) = &out {
        let before = files.len();
        files.retain(|f| std::fs::canonicalize(f).ok().as_ref() != Some(out));
        if files.len() < before {
            notes.push(format!(
                "{} is the output, not a rank: left out of the inputs",
                output.display()
            ));
        }
    }
    if files.is_empty() {
        let named: Vec<String> = args.iter().map(|a| a.display().to_string()).collect();
        return Err(Error::usage(format!("no traces to merge in {}", named.join(" "))));
    }
    // The readers' rule for several traces (docs/spec.md §3.2): they are
    // one job's ranks, each naming its rank, or a usage error naming them.
    if files.len() > 1 {
        crate::input::what(&files)?;
    }
    Ok(Inputs { files, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_shift_exactly() {
        let shift = |raw: &str, d: i64| {
            let mut b = Vec::new();
            assert!(shift_ts(raw.as_bytes(), d, &mut b), "{raw}");
            String::from_utf8(b).unwrap()
        };
        assert_eq!(shift("1694128201426602", 1_500), "1694128201426603.500");
        assert_eq!(shift("4458676522690.655", -655), "4458676522690");
        assert_eq!(shift("4458676522690.6", 1), "4458676522690.601");
        assert_eq!(shift("\"12\"", -13_000), "-1");
        assert_eq!(shift("0.5", -1_000), "-0.500");
        assert_eq!(shift("1.5e3", 1_000), "1501");
        let mut b = Vec::new();
        assert!(!shift_ts(b"null", 5, &mut b));
    }

    #[test]
    fn events_split_at_their_top_level() {
        let raw = br#" { "ph": "X", "name": "a,}b\"", "args": {"x": [1, {"y": 2}], "z": "}"}, "ts" : 12.5 , "pid":3}"#;
        let mut f = Vec::new();
        assert_eq!(split(raw, &mut f), Split::Done { end: raw.len(), nonfinite: false });
        let pairs: Vec<(&str, &str)> = f
            .iter()
            .map(|f| {
                (
                    std::str::from_utf8(&raw[f.key.0..f.key.1]).unwrap(),
                    std::str::from_utf8(&raw[f.val.0..f.val.1]).unwrap(),
                )
            })
            .collect();
        assert_eq!(
            pairs,
            [
                ("ph", "\"X\""),
                ("name", r#""a,}b\"""#),
                ("args", r#"{"x": [1, {"y": 2}], "z": "}"}"#),
                ("ts", "12.5"),
                ("pid", "3")
            ]
        );
        // Cut anywhere, it asks for more.
        for k in 0..raw.len() {
            assert_eq!(split(&raw[..k], &mut f), Split::More, "{k}");
        }
        assert_eq!(
            split(br#"{"a": 1}, {"b": 2}"#, &mut f),
            Split::Done { end: 8, nonfinite: false }
        );
        assert_eq!(split(b"[1]", &mut f), Split::Bad);
        assert_eq!(split(b"{}", &mut f), Split::Done { end: 2, nonfinite: false });
        assert_eq!(
            split(br#"{"v": NaN, "n": "NaN"}"#, &mut f),
            Split::Done { end: 22, nonfinite: true }
        );
        let mut clean = Vec::new();
        sanitize_nonfinite(br#"{"v": NaN, "w": -Infinity, "n": "NaN"}"#, &mut clean);
        assert_eq!(clean, br#"{"v": null, "w": null, "n": "NaN"}"#);
    }

    #[test]
    fn threads_keep_their_tids_unless_taken() {
        let mut t = Threads::default();
        assert_eq!(t.tid(IdKey::Int(59811), IdKey::Int(59811)), 59811);
        assert_eq!(t.tid(IdKey::Int(0), IdKey::Int(7)), 7);
        let second = t.tid(IdKey::Int(1), IdKey::Int(7));
        assert_eq!(second, i64::from(i32::MAX), "device 1's stream 7 is another thread");
        assert_eq!(t.tid(IdKey::Int(1), IdKey::Int(7)), second, "and stays the same one");
        assert_eq!(
            t.tid(IdKey::Int(0), id_key(Some(b"\"stream 7\""))),
            7,
            "as the reader reads it"
        );
        assert_eq!(
            t.tid(id_key(Some(b"\"Spans\"")), id_key(Some(b"\"PyTorch Profiler\""))),
            i64::from(i32::MAX) - 1
        );
    }

    #[test]
    fn flow_ids_are_unique_to_their_rank() {
        let c = RankCopy { rank: 3, delta_ns: 0, stride: 10 };
        let id = |raw: &str| {
            let mut b = Vec::new();
            c.flow_id(raw.as_bytes(), &mut b);
            String::from_utf8(b).unwrap()
        };
        assert_eq!(id("1234"), "12343");
        assert_eq!(id("\"0x1f\""), "\"0x1f:rank3\"");
        assert_eq!(id("9007199254740993"), "\"9007199254740993:rank3\"");
    }

    #[test]
    fn correlations_are_unique_to_their_rank() {
        let c = RankCopy { rank: 3, delta_ns: 0, stride: 10 };
        let args = |raw: &str| {
            let mut b = Vec::new();
            c.args(raw.as_bytes(), &mut b);
            String::from_utf8(b).unwrap()
        };
        assert_eq!(
            args(r#"{"External id": 15,"stream": 7, "correlation": 15}"#),
            r#"{"External id": 153, "stream": 7, "correlation": 153}"#
        );
        // No id, -1 (none), a string, or not an object: as it was.
        assert_eq!(args(r#"{"stream": 7}"#), r#"{"stream": 7}"#);
        assert_eq!(
            args(r#"{"wait_on_cuda_event_record_corr_id": -1, "correlation": "x"}"#),
            r#"{"wait_on_cuda_event_record_corr_id": -1, "correlation": "x"}"#
        );
        assert_eq!(args("[1, 2]"), "[1, 2]");
    }
}
