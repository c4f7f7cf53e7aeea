//! `traceEvents` parsed on several threads, handed over in file order
//! (docs/analysis.md §1, docs/design.md).
//!
//! The calling thread reads the input in blocks and cuts each just after
//! an event's closing brace (a `}` followed by `,` and `{`, whitespace
//! between). Parsing threads take blocks from one queue, whichever is free,
//! and turn them into events; the calling thread gives them to the sink in
//! file order — so the sink, and every figure made from it, sees what a
//! one-thread read gives, event for event. When the block whose turn it is
//! is not ready, the calling thread parses one from the queue itself
//! rather than wait, so a budget of N threads spawns N − 1 parsers.
//!
//! A cut is a guess: the pattern can lie inside a string or in an event's
//! nested array. Block 0 starts at the array's first byte; a block's parse
//! is trusted when the block before it, itself trusted, ended exactly at
//! the cut — so every trusted block starts at a real event boundary. A
//! block that ends inside an element has its tail joined to the next block
//! and parsed again here. On anything else (a syntax error, an element that
//! is not an object, an event over the size limit, input that ends before
//! the array), the one-thread scanner reads on from the last trusted
//! boundary, and says what it says on a one-thread read.

use std::collections::VecDeque;
use std::io::{self, Cursor, Read};
use std::sync::mpsc;

use yoke::either::EitherCart;
use yoke::{Yoke, Yokeable};

use super::event::{Event, ParseError};
use super::input::MappedFile;
use super::lex::skip_ws;
use super::options::ReadOptions;
use super::scan::{MAX_VALUE, Scanner, Unread};
use super::{EventSink, TraceInfo};
use crate::budget::Budget;
use crate::error::{Error, Result};

pub use super::options::BLOCK;
/// Blocks read ahead of the sink, per thread that parses. With two, the
/// parsing threads and the sink waited on each other for ~15 % of two
/// cores on a 1 GB trace; with four, ~10 %, and 6 % less time. The peak
/// RSS is unchanged: it comes later, in the analysis.
const AHEAD: usize = 4;
/// Parsing threads spawned for one trace, whatever the budget. One thread
/// hands every event to the analysis in order, and beyond four parsers it is
/// the bound: on a 16-core host, a 326 MB trace took 0.27 s on 4 threads,
/// 0.32–0.35 s on 8 and 0.33 s on 16, while each thread adds [`AHEAD`]
/// blocks in flight (peak RSS at 1 GB: 59, 76, 112, 183 MB on 2, 4, 8,
/// 16 threads; BENCHMARKS.md).
const MAX_PARSERS: usize = 4;
/// Emptied blocks kept for reuse.
const POOL: usize = 64;
/// A block with no cut in this many bytes (one event near the size limit)
/// goes to the one-thread scanner, which holds or refuses it.
const NO_CUT: usize = MAX_VALUE + BLOCK;

/// Where the caller goes on after [`stream_events`], on the scanner it
/// was given (now over the input's remaining bytes).
pub(super) enum AfterEvents {
    /// The array ended: the scanner is at the byte after its `]`.
    Closed,
    /// The one-thread scanner reads on, at an element boundary: `first`
    /// when no element has been read yet (a `]` may close the array).
    Elements { first: bool },
}

/// The state at an element boundary.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Just after the array's `[`.
    First,
    /// Just after an element: `,` or `]` comes next.
    Separator,
}

/// A block's events, borrowing from its bytes.
#[derive(Yokeable)]
struct Batch<'a> {
    items: Vec<Item<'a>>,
    end: End,
}

struct Item<'a> {
    /// Where the element starts in its block.
    at: u32,
    /// `None`: valid JSON but not a usable event (counted as malformed).
    event: Option<Event<'a>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Every byte parsed, the last an element's end: the cut was real.
    Clean,
    /// The array's `]`, ending just before this offset.
    Closed(usize),
    /// The bytes end inside the element after the boundary at this offset.
    Short(usize, State),
    /// What only the one-thread scanner says the same way (a syntax error,
    /// an element not an object, an event over the limit), after the
    /// boundary at this offset.
    Refused(usize, State),
}

/// A block's bytes: read into a buffer of ours, or lying in a mapped file
/// (parsed where they are: nothing is copied).
type Cart<'m> = EitherCart<Vec<u8>, &'m [u8]>;

type Parsed<'m> = Yoke<Batch<'static>, Cart<'m>>;

/// A block for the parsing threads: its sequence number, the state it
/// starts in, its bytes.
type Job<'m> = (u64, State, Cart<'m>);

/// A block parsed, by sequence number; `None` when its thread panicked.
type Done<'m> = (u64, Option<Parsed<'m>>);

/// Says that a parsing thread's block will not come, if the thread
/// unwinds while parsing it: the sink, waiting for that block, would
/// otherwise wait for ever on the threads still running.
struct Undone<'r, 'm> {
    seq: Option<u64>,
    results: &'r mpsc::Sender<Done<'m>>,
}

impl Drop for Undone<'_, '_> {
    fn drop(&mut self) {
        if let Some(seq) = self.seq {
            let _ = self.results.send((seq, None));
        }
    }
}

/// Event lists emptied after delivery, for the parsing threads to fill
/// again. An emptied list borrows nothing: its lifetime is changed by
/// collecting it in place (the same allocation; `Vec`'s in-place
/// `collect`, or a new empty list where that does not apply).
type ItemPool = std::sync::Mutex<Vec<Vec<Item<'static>>>>;

/// `items` emptied, for another block's events.
fn emptied<'b>(mut items: Vec<Item<'_>>) -> Vec<Item<'b>> {
    items.clear();
    items.into_iter().map(|_| unreachable!("the list is empty")).collect()
}

/// A cart's bytes as a buffer of ours.
fn into_vec(cart: Cart<'_>) -> Vec<u8> {
    match cart {
        EitherCart::A(v) => v,
        EitherCart::B(b) => b.to_vec(),
    }
}

/// Parses the elements of a block that starts at a boundary in `start`.
fn parse_block(b: &[u8], start: State) -> Batch<'_> {
    parse_block_into(b, start, Vec::with_capacity(b.len() / 256))
}

/// [`parse_block`] into `items` (empty), an event list used before: a
/// fresh one for every block cost its page faults and their zeroing, on
/// the threads that are the reader's bottleneck on two cores.
fn parse_block_into<'a>(b: &'a [u8], start: State, mut items: Vec<Item<'a>>) -> Batch<'a> {
    let (mut boundary, mut state) = (0, start);
    let mut i = 0;
    loop {
        i = skip_ws(b, i);
        match (b.get(i), state) {
            (None, State::Separator) => return Batch { items, end: End::Clean },
            (None, State::First) => return Batch { items, end: End::Short(boundary, state) },
            (Some(b']'), _) => return Batch { items, end: End::Closed(i + 1) },
            (Some(b','), State::Separator) => i = skip_ws(b, i + 1),
            (Some(_), State::First) => {}
            (Some(_), State::Separator) => {
                return Batch { items, end: End::Refused(boundary, state) };
            }
        }
        match b.get(i) {
            None => return Batch { items, end: End::Short(boundary, state) },
            Some(b'{') => {}
            Some(_) => return Batch { items, end: End::Refused(boundary, state) },
        }
        // Made in its place: pushed, the event was built on the stack
        // and copied (3 % of a parsing thread).
        items.extend(std::iter::once_with(|| Item { at: i as u32, event: Some(Event::default()) }));
        let Some(Item { event: Some(slot), .. }) = items.last_mut() else {
            return Batch { items, end: End::Refused(boundary, state) };
        };
        let end = match Event::parse_prefix_into(&b[i..], slot) {
            Ok(used) if used <= MAX_VALUE => {
                i += used;
                None
            }
            Err(ParseError::ShapeAt(_, used)) if used <= MAX_VALUE => {
                if let Some(last) = items.last_mut() {
                    last.event = None;
                }
                i += used;
                None
            }
            Err(ParseError::Eof) if b.len() - i <= MAX_VALUE => Some(End::Short(boundary, state)),
            _ => Some(End::Refused(boundary, state)),
        };
        if let Some(end) = end {
            items.pop();
            return Batch { items, end };
        }
        (boundary, state) = (i, State::Separator);
    }
}

/// The last cut in `buf` whose `{` lies at or after `from`: the offset
/// just after a `}` that `,` and `{` follow.
fn find_cut(buf: &[u8], from: usize) -> Option<usize> {
    let ws = |c: u8| matches!(c, b' ' | b'\n' | b'\r' | b'\t');
    let mut hi = buf.len();
    while let Some(q) = memchr::memrchr(b'{', &buf[from.min(hi)..hi]).map(|k| k + from.min(hi)) {
        hi = q;
        let mut j = q;
        while j > 0 && ws(buf[j - 1]) {
            j -= 1;
        }
        if j == 0 || buf[j - 1] != b',' {
            continue;
        }
        j -= 1;
        while j > 0 && ws(buf[j - 1]) {
            j -= 1;
        }
        if j > 0 && buf[j - 1] == b'}' {
            return Some(j);
        }
    }
    None
}

/// A block read and cut, waiting for its turn.
struct Block<'m> {
    /// Stream offset of its first byte.
    base: u64,
    state: State,
    /// Its place in the parsing threads' queue; `None`: held here (no
    /// cut in [`NO_CUT`] bytes).
    seq: Option<u64>,
    /// The bytes of a block no worker parses.
    held: Cart<'m>,
}

/// The input after the array's `[`, read in blocks.
struct Input<'m> {
    reader: Box<dyn Read>,
    /// A mapped file's bytes, which blocks borrow instead of `reader`'s.
    map: Option<&'m [u8]>,
    /// The reader ended, or failed: then the error, for the scanner to say.
    ended: bool,
    failed: Option<io::Error>,
    /// Bytes read past the last cut.
    carry: Vec<u8>,
    /// Stream offset of `carry[0]`.
    offset: u64,
    pool: Vec<Vec<u8>>,
    block: usize,
    /// The state the next block starts in.
    state: State,
}

impl<'m> Input<'m> {
    /// Appends up to `n` bytes to `buf`.
    fn read(&mut self, buf: &mut Vec<u8>, n: usize) {
        match (&mut self.reader).take(n as u64).read_to_end(buf) {
            Ok(got) if got < n => self.ended = true,
            Ok(_) => {}
            Err(e) => {
                self.ended = true;
                self.failed = Some(e);
            }
        }
    }

    /// The next block, cut after an event; `None` once the input ended.
    fn next(&mut self) -> Option<(u64, State, Cart<'m>, bool)> {
        if self.carry.is_empty() && self.ended {
            return None;
        }
        if let Some(map) = self.map {
            return Some(self.next_mapped(map));
        }
        // A fresh buffer costs a page fault per 4 KiB and copies as it
        // grows: blocks come back to the pool once delivered.
        let mut buf =
            self.pool.pop().unwrap_or_else(|| Vec::with_capacity(self.block + self.block / 4));
        buf.clear();
        buf.append(&mut self.carry);
        let (base, state) = (self.offset, self.state);
        self.state = State::Separator;
        let mut want = self.block.max(buf.len() + 1);
        let mut searched = 0;
        loop {
            if !self.ended {
                let n = want - buf.len();
                self.read(&mut buf, n);
            }
            if self.ended {
                self.offset = base + buf.len() as u64;
                return Some((base, state, EitherCart::A(buf), true));
            }
            if let Some(cut) = find_cut(&buf, searched) {
                self.carry.extend_from_slice(&buf[cut..]);
                buf.truncate(cut);
                self.offset = base + cut as u64;
                return Some((base, state, EitherCart::A(buf), true));
            }
            if buf.len() >= NO_CUT {
                self.offset = base + buf.len() as u64;
                return Some((base, state, EitherCart::A(buf), false));
            }
            searched = buf.len();
            want = (buf.len() * 2).min(NO_CUT);
        }
    }

    /// [`Input::next`] over a mapped file, whose bytes from `offset` on
    /// are all there: the same cuts, found in place.
    fn next_mapped(&mut self, map: &'m [u8]) -> (u64, State, Cart<'m>, bool) {
        let (base, state) = (self.offset, self.state);
        self.state = State::Separator;
        let start = base as usize;
        let mut len = self.block.min(map.len() - start);
        let mut searched = 0;
        let (len, cut) = loop {
            let bytes = &map[start..start + len];
            if start + len == map.len() {
                self.ended = true;
                break (len, true);
            }
            if let Some(cut) = find_cut(bytes, searched) {
                break (cut, true);
            }
            if len >= NO_CUT {
                break (len, false);
            }
            searched = len;
            len = (len * 2).min(NO_CUT).min(map.len() - start);
        };
        self.offset = base + len as u64;
        (base, state, EitherCart::B(&map[start..start + len]), cut)
    }

    fn recycle(&mut self, buf: Cart<'_>) {
        let EitherCart::A(buf) = buf else { return };
        // Enough for every block in flight; an outsized one (a long
        // event's) is let go.
        if self.pool.len() < POOL && buf.capacity() <= 2 * self.block {
            self.pool.push(buf);
        }
    }
}

/// Reads the error a failed reader returned, once, after the bytes before it.
struct Failed(Option<io::Error>);

impl Read for Failed {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        match self.0.take() {
            Some(e) => Err(e),
            None => Ok(0),
        }
    }
}

/// Streams the elements of `traceEvents` after its `[` from `s` into
/// `sink`, parsed on the thread budget's threads (this one among them),
/// then leaves `s` over the rest of the input (see [`AfterEvents`]).
pub(super) fn stream_events(
    s: &mut Scanner<Box<dyn Read>>,
    sink: &mut dyn EventSink,
    info: &mut TraceInfo,
    opts: &ReadOptions,
) -> Result<AfterEvents> {
    let (threads, block, budget) = (opts.threads, opts.block, opts.budget.clone());
    // The calling thread parses too, whenever its next block is not ready
    // (`Driver::take`): on two cores, two parsers beside it shared the
    // cores with it three ways, and the sink waited for nearly every block
    // (0.26–0.37 s of a 1 GB read) while they waited for work (0.33–0.55
    // s); one parser and a calling thread that parses while it would wait
    // took 0.94 s where they took 1.09 (medians; BENCHMARKS.md).
    let parsers = (threads - 1).clamp(1, MAX_PARSERS);
    let (offset, unread) = std::mem::replace(s, Scanner::new(Box::new(io::empty()))).into_parts();
    let (carry, reader, ended, file) = match unread {
        Unread::Read { carry, reader, ended } => (carry, reader, ended, None),
        Unread::Mapped(file) => {
            (Vec::new(), Box::new(io::empty()) as Box<dyn Read>, false, Some(file))
        }
    };
    let mut input = Input {
        reader,
        map: file.as_ref().map(MappedFile::bytes),
        ended,
        failed: None,
        carry,
        offset,
        pool: Vec::new(),
        block,
        state: State::First,
    };
    let pool = ItemPool::default();
    // One queue of blocks that every parsing thread takes from: a thread
    // that is done takes the next block whoever's turn it was, so none
    // waits while another lags (round-robin queues left a core idle while
    // the sink waited on the slower thread).
    let (job_tx, job_rx) = mpsc::channel::<Job<'_>>();
    let (res_tx, results) = mpsc::channel::<Done<'_>>();
    let job_rx = std::sync::Mutex::new(job_rx);
    let (bytes, base, first) = std::thread::scope(|scope| {
        for _ in 0..parsers {
            let (job_rx, res_tx, pool) = (&job_rx, res_tx.clone(), &pool);
            std::thread::Builder::new()
                .name("parse".into())
                .spawn_scoped(scope, move || {
                    let mut on_panic = Undone { seq: None, results: &res_tx };
                    loop {
                        // The lock is held only to take a block.
                        let job = job_rx.lock().ok().and_then(|rx| rx.recv().ok());
                        let Some((seq, state, bytes)) = job else { return };
                        on_panic.seq = Some(seq);
                        let parsed = parse_job(state, bytes, pool);
                        on_panic.seq = None;
                        if res_tx.send((seq, Some(parsed))).is_err() {
                            return;
                        }
                    }
                })
                .map_err(|e| {
                    Error::failed(format!("cannot start a parsing thread: {e}")).caused_by(e)
                })?;
        }
        drop(res_tx);
        let mut d = Driver {
            input: &mut input,
            pool: &pool,
            file: file.as_ref(),
            jobs: job_tx,
            queue: &job_rx,
            results,
            arrived: Vec::new(),
            pending: VecDeque::new(),
            next_seq: 0,
            parsing: (parsers + 1).min(MAX_PARSERS),
            budget,
        };
        let rest = d.run(sink, info)?;
        let (head, base, first) = match rest {
            Resume::Array { head, base } => (head, base, None),
            Resume::Elements { head, base, state } => (head, base, Some(state == State::First)),
        };
        let mut bytes = head;
        d.drain_into(&mut bytes);
        bytes.append(&mut d.input.carry);
        Ok::<_, Error>((bytes, base, first))
    })?;
    drop(job_rx);
    // The scanner goes on from `base`: the bytes held here, then the rest
    // of the input.
    let Input { failed, reader, offset, .. } = input;
    *s = match (failed, file) {
        (Some(e), _) => {
            Scanner::starting_at(Box::new(Cursor::new(bytes).chain(Failed(Some(e)))), base)
        }
        (None, Some(file)) => Scanner::mapped_from(file, offset, bytes, base),
        (None, None) => Scanner::starting_at(Box::new(Cursor::new(bytes).chain(reader)), base),
    };
    Ok(match first {
        None => AfterEvents::Closed,
        Some(first) => AfterEvents::Elements { first },
    })
}

/// Where the one-thread scanner takes over: the bytes from there that the
/// driver holds, and their stream offset.
enum Resume {
    Array { head: Vec<u8>, base: u64 },
    Elements { head: Vec<u8>, base: u64, state: State },
}

/// A block parsed into an event list from the pool, if it has one.
fn parse_job<'m>(state: State, bytes: Cart<'m>, pool: &ItemPool) -> Parsed<'m> {
    let spare = pool.lock().ok().and_then(|mut p| p.pop());
    Yoke::<Batch<'static>, Cart<'_>>::attach_to_cart(bytes, |b: &[u8]| match spare {
        Some(items) => parse_block_into(b, state, emptied(items)),
        None => parse_block(b, state),
    })
}

struct Driver<'i, 'm> {
    input: &'i mut Input<'m>,
    pool: &'i ItemPool,
    /// The mapped file the blocks borrow from, if any: its pages are given
    /// back as blocks are delivered.
    file: Option<&'m MappedFile>,
    jobs: mpsc::Sender<Job<'m>>,
    /// The parsing threads' queue, which the sink takes a block from
    /// instead of waiting ([`Driver::take`]).
    queue: &'i std::sync::Mutex<mpsc::Receiver<Job<'m>>>,
    results: mpsc::Receiver<Done<'m>>,
    /// Blocks parsed before their turn, by sequence number.
    arrived: Vec<Done<'m>>,
    pending: VecDeque<Block<'m>>,
    next_seq: u64,
    /// Threads that parse, this one included ([`AHEAD`] blocks each).
    parsing: usize,
    /// The memory budget, checked every [`crate::budget::CHECK_EVERY`] events.
    budget: Budget,
}

impl<'m> Driver<'_, 'm> {
    /// Reads ahead until [`AHEAD`] blocks per thread are in flight.
    fn fill(&mut self) {
        while self.pending.len() < AHEAD * self.parsing {
            let Some((base, state, bytes, cut)) = self.input.next() else { return };
            if !cut {
                self.pending.push_back(Block { base, state, seq: None, held: bytes });
                return; // the scanner takes over there
            }
            let seq = self.next_seq;
            self.next_seq += 1;
            match self.jobs.send((seq, state, bytes)) {
                Ok(()) => self.pending.push_back(Block {
                    base,
                    state,
                    seq: Some(seq),
                    held: EitherCart::A(Vec::new()),
                }),
                // The queue's end is gone (it outlives the parsing
                // threads, so this is only defensive): hold the bytes,
                // the scanner reads them.
                Err(mpsc::SendError((_, _, bytes))) => {
                    self.pending.push_back(Block { base, state, seq: None, held: bytes });
                    return;
                }
            }
        }
    }

    /// The next block's bytes and, when a worker parsed it, its events.
    fn take(&mut self, block: &mut Block<'m>) -> Option<Parsed<'m>> {
        let seq = block.seq.take()?;
        loop {
            if let Some(k) = self.arrived.iter().position(|d| d.0 == seq) {
                // `None`: the thread died (a panic, which the scope raises again).
                return self.arrived.swap_remove(k).1;
            }
            match self.results.try_recv() {
                Ok(done) => {
                    self.arrived.push(done);
                    continue;
                }
                Err(mpsc::TryRecvError::Disconnected) => return None,
                Err(mpsc::TryRecvError::Empty) => {}
            }
            // Rather than wait, parse a block no thread has taken yet (the
            // queue is locked only while a parser takes one or waits on an
            // empty queue: then every block is taken and results will come).
            let job = self.queue.try_lock().ok().and_then(|rx| rx.try_recv().ok());
            if let Some((stolen, state, bytes)) = job {
                self.arrived.push((stolen, Some(parse_job(state, bytes, self.pool))));
                continue;
            }
            self.arrived.push(self.results.recv().ok()?);
        }
    }

    /// Appends a block's bytes to `head`.
    fn append(&mut self, head: &mut Vec<u8>, block: &Block<'m>, parsed: Option<Parsed<'m>>) {
        match parsed {
            Some(p) => {
                let cart = p.into_backing_cart();
                head.extend_from_slice(&cart);
                self.input.recycle(cart);
            }
            None => head.extend_from_slice(&block.held),
        }
    }

    /// Every block still in flight, appended in order (the scanner's input).
    fn drain_into(&mut self, out: &mut Vec<u8>) {
        while let Some(mut b) = self.pending.pop_front() {
            match self.take(&mut b) {
                Some(parsed) => out.extend_from_slice(parsed.backing_cart()),
                None => out.extend_from_slice(&b.held),
            }
        }
    }

    fn run(&mut self, sink: &mut dyn EventSink, info: &mut TraceInfo) -> Result<Resume> {
        // A tail that ended inside an element, to join to the next block.
        let mut tail: Option<(Vec<u8>, u64, State)> = None;
        loop {
            self.fill();
            let Some(mut block) = self.pending.pop_front() else {
                // The input ended before the array: the scanner says how.
                return Ok(match tail {
                    Some((head, base, state)) => Resume::Elements { head, base, state },
                    None => Resume::Elements {
                        head: Vec::new(),
                        base: self.input.offset,
                        state: self.input.state,
                    },
                });
            };
            let held = block.seq.is_none();
            let (base, parsed) = match (tail.take(), self.take(&mut block)) {
                (None, Some(parsed)) => (block.base, parsed),
                (None, None) => {
                    return Ok(Resume::Elements {
                        head: into_vec(block.held),
                        base: block.base,
                        state: block.state,
                    });
                }
                (Some((mut head, base, state)), parsed) => {
                    // Parsed again from the tail's boundary: join blocks
                    // until the bytes double, so that an element spanning
                    // many blocks costs O(its length), not one parse per block.
                    let want = head.len().saturating_mul(2);
                    let (mut block, mut parsed, mut held) = (block, parsed, held);
                    loop {
                        self.append(&mut head, &block, parsed);
                        if held || head.len() > NO_CUT {
                            return Ok(Resume::Elements { head, base, state });
                        }
                        if head.len() >= want {
                            break;
                        }
                        self.fill();
                        let Some(mut next) = self.pending.pop_front() else { break };
                        held = next.seq.is_none();
                        parsed = self.take(&mut next);
                        block = next;
                    }
                    let head = EitherCart::A(head);
                    (base, Yoke::attach_to_cart(head, |b: &[u8]| parse_block(b, state)))
                }
            };
            let (mut delivered, mut end, mut spare) = (Ok(()), End::Clean, None);
            let bytes = parsed
                .map_project::<(), _>(|batch, _| {
                    let mut items = batch.items;
                    delivered = deliver(&mut items, base, sink, info, &self.budget);
                    end = batch.end;
                    spare = Some(emptied(items));
                })
                .into_backing_cart();
            delivered?;
            if let (Some(items), Ok(mut pool)) = (spare, self.pool.lock()) {
                if pool.len() < AHEAD * self.parsing + 1 && items.capacity() > 0 {
                    pool.push(items);
                }
            }
            if let Some(file) = self.file {
                file.advance((base + bytes.len() as u64) as usize);
            }
            match end {
                End::Clean => self.input.recycle(bytes),
                End::Short(at, state) => {
                    tail = Some((bytes[at..].to_vec(), base + at as u64, state))
                }
                End::Closed(at) => {
                    return Ok(Resume::Array {
                        head: bytes[at..].to_vec(),
                        base: base + at as u64,
                    });
                }
                End::Refused(at, state) => {
                    return Ok(Resume::Elements {
                        head: bytes[at..].to_vec(),
                        base: base + at as u64,
                        state,
                    });
                }
            }
        }
    }
}

/// How many events ahead of the sink [`prefetch`] reaches: a few of the
/// sink's events' time, the latency of a line from the other core.
const PREFETCH: usize = 8;

/// Asks for an event's lines (and its name's first) ahead of the sink. A
/// parsing thread wrote them on another core; fetched on demand, the sink
/// stalled on them (the name's hash alone took 17 % of its time on two
/// cores, 1 % on one). On x86_64; elsewhere nothing.
#[inline(always)]
fn prefetch(item: &Item<'_>) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let at = (item as *const Item<'_>).cast::<i8>();
        let name = item.event.as_ref().and_then(|e| e.name.as_ref()).map(|n| n.0.as_ptr());
        // SAFETY: a prefetch is a hint that never faults, whatever the
        // address; these are in the item and the name it borrows.
        unsafe {
            for line in (0..size_of::<Item<'_>>()).step_by(64) {
                _mm_prefetch(at.wrapping_add(line), _MM_HINT_T0);
            }
            if let Some(name) = name {
                _mm_prefetch(name.cast::<i8>(), _MM_HINT_T0);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = item;
}

/// Gives a block's events to the sink, as the one-thread loop does, and
/// drops each once given: while its lines are still at hand, rather than
/// in a second walk over the block's list.
fn deliver(
    items: &mut Vec<Item<'_>>,
    base: u64,
    sink: &mut dyn EventSink,
    info: &mut TraceInfo,
    budget: &Budget,
) -> Result<()> {
    let mut items = items.drain(..);
    while let Some(item) = items.next() {
        if let Some(ahead) = items.as_slice().get(PREFETCH - 1) {
            prefetch(ahead);
        }
        info.events += 1;
        let at = base + u64::from(item.at);
        if info.events % crate::budget::CHECK_EVERY == 0 {
            budget.check(info.events, at)?;
        }
        sink.at(at);
        match &item.event {
            Some(ev) => sink.event(ev),
            None => sink.malformed(),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_only_after_a_closing_brace_before_an_object() {
        assert_eq!(find_cut(br#"{"a": 1}, {"b": 2}"#, 0), Some(8));
        assert_eq!(find_cut(b"{\"a\": 1}\n ,\n\t{\"b\"", 0), Some(8));
        assert_eq!(
            find_cut(br#"{"a": [1, {"b": 2}]}"#, 0),
            None,
            "`, {{` after a number is not a cut"
        );
        assert_eq!(find_cut(br#"{"a": {"b": 2}}"#, 0), None);
        assert_eq!(find_cut(br#"{"x": "}, {"}, {"#, 0), Some(13), "the last one wins");
    }

    #[test]
    fn an_emptied_event_list_keeps_its_allocation() {
        let b = br#"{"name": "a"}, {"name": "b"}"#;
        let batch = parse_block(b, State::First);
        assert_eq!(batch.items.len(), 2);
        let (cap, ptr) = (batch.items.capacity(), batch.items.as_ptr() as usize);
        let items: Vec<Item<'static>> = emptied(batch.items);
        assert_eq!((items.len(), items.capacity(), items.as_ptr() as usize), (0, cap, ptr));
        let again = parse_block_into(br#"{"name": "c"}"#, State::First, emptied(items));
        assert_eq!(again.items.len(), 1);
        assert_eq!(again.items[0].event.as_ref().map(Event::name), Some("c"));
    }

    #[test]
    fn a_block_says_where_it_ended() {
        let b = br#"{"name": "a"}, {"name": 5}, {"name": "c"}"#;
        let batch = parse_block(b, State::First);
        assert_eq!(batch.items.len(), 3);
        assert!(batch.items[1].event.is_none(), "a field of the wrong type is malformed");
        assert_eq!(batch.end, End::Clean);
        let batch = parse_block(br#", {"name": "a"}, {"name": "b"#, State::Separator);
        assert_eq!((batch.items.len(), batch.end), (1, End::Short(15, State::Separator)));
        let batch = parse_block(br#", {"name": "a"}] , "k": 1"#, State::Separator);
        assert_eq!(batch.end, End::Closed(16));
        assert_eq!(
            parse_block(br#", {"name": "a"}, ]"#, State::Separator).end,
            End::Refused(15, State::Separator)
        );
        assert_eq!(parse_block(br#", 3"#, State::Separator).end, End::Refused(0, State::Separator));
        assert_eq!(parse_block(br#"]"#, State::First).end, End::Closed(1));
        assert_eq!(
            parse_block(br#", {"a": 1 2}"#, State::Separator).end,
            End::Refused(0, State::Separator)
        );
    }
}
