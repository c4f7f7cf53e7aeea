//! What the host threads did, kept once and packed: every CPU op, and the
//! annotations, long Python frames and synchronising or allocator calls the
//! idle account reads, in the order the pass met them.
//!
//! Three readers share it: counting again under the final ranges
//! (docs/analysis.md §1) and the roofline account read the ops, the idle
//! account reads every record with a duration as a host span. Each op used
//! to be kept twice (a 32-byte replay record and a 32-byte host span), the
//! largest state of the pass. Here a record is a header byte and LEB128
//! varints — thread, name, start as the zigzag difference from the
//! previous record's, duration, and a priced op's model entry — about 8
//! bytes, in fixed blocks that are never copied as the log grows.

use integer_encoding::VarInt;

use crate::profile::NodeKind;
use crate::trace::RuntimeCall;

/// Bytes per block: a record never straddles two.
const BLOCK: usize = 64 << 10;
/// The longest record: the header and seven varints of up to 10 bytes.
const MAX_RECORD: usize = 1 + 7 * 10;

/// What a host record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostKind {
    Op,
    Python,
    /// A `record_function` / user annotation other than the step and phase
    /// ranges.
    Annotation,
    /// `enumerate(DataLoader)#…__next__`.
    Dataload,
    /// A synchronising runtime call or blocking copy.
    Sync,
    /// An allocator call.
    Alloc,
}

impl HostKind {
    /// The host record a runtime call makes, if it is one the account
    /// needs: synchronising calls and blocking copies, allocator calls.
    /// Launches are kept with their kernels instead; other calls (queries,
    /// event records) count as the op around them.
    pub fn of_call(call: &RuntimeCall) -> Option<HostKind> {
        if call.sync {
            Some(HostKind::Sync)
        } else if call.alloc {
            Some(HostKind::Alloc)
        } else {
            None
        }
    }
}

/// `nn.Module: Conv2d_0`: the frame PyTorch's Python tracer records for a
/// module's forward (kept whatever its length).
pub fn is_module_frame(name: &str) -> bool {
    name.starts_with("nn.Module: ")
}

/// One record as read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CpuRec {
    pub kind: RecKind,
    pub thread: u32,
    pub name: u32,
    pub start: i64,
    pub dur: i64,
}

/// An op's place in autograd: its sequence number (`Sequence number`,
/// counted per forward thread), and for a backward op the forward thread
/// whose op it differentiates (`Fwd thread id`: autograd's own number of
/// it, not the trace's tid). A backward op shares its forward op's
/// sequence number (docs/analysis.md §17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Autograd {
    pub seq: u64,
    pub fwd_thread: Option<u32>,
}

/// What a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RecKind {
    /// A CPU op: its entry in `OpPricing::works` when the performance model
    /// priced it, whether its name makes it DataLoader work (its host
    /// kind), and its place in autograd.
    Op { model: Option<u32>, dataload: bool, autograd: Option<Autograd> },
    /// Any other host record (never [`HostKind::Op`]).
    Host(HostKind),
}

impl CpuRec {
    /// Its kind as a host span.
    pub fn host_kind(&self) -> HostKind {
        match self.kind {
            RecKind::Op { dataload: true, .. } => HostKind::Dataload,
            RecKind::Op { .. } => HostKind::Op,
            RecKind::Host(k) => k,
        }
    }

    /// An op's place in autograd.
    pub fn autograd(&self) -> Option<Autograd> {
        match self.kind {
            RecKind::Op { autograd, .. } => autograd,
            RecKind::Host(_) => None,
        }
    }

    /// The call tree's node for it: ops, annotations and Python frames
    /// nest; synchronising and allocator calls do not.
    pub fn tree_kind(&self) -> Option<NodeKind> {
        match self.host_kind() {
            HostKind::Op | HostKind::Dataload => Some(NodeKind::Op),
            HostKind::Annotation => Some(NodeKind::Annotation),
            HostKind::Python => Some(NodeKind::Frame),
            HostKind::Sync | HostKind::Alloc => None,
        }
    }

    /// A priced op's entry in `OpPricing::works`.
    pub fn model(&self) -> Option<u32> {
        match self.kind {
            RecKind::Op { model, .. } => model,
            RecKind::Host(_) => None,
        }
    }
}

// Header byte: bit 0 an op, bit 1 priced, bit 2 a DataLoader op, bit 3
// a sequence number follows, bit 4 a forward thread follows; a host
// record's kind in bits 3..6.
const OP: u8 = 1;
const PRICED: u8 = 2;
const DATALOAD: u8 = 4;
const SEQ: u8 = 8;
const FWD: u8 = 16;

fn host_code(k: HostKind) -> u8 {
    match k {
        HostKind::Op => 0,
        HostKind::Python => 1,
        HostKind::Annotation => 2,
        HostKind::Dataload => 3,
        HostKind::Sync => 4,
        HostKind::Alloc => 5,
    }
}

fn host_of(code: u8) -> HostKind {
    match code {
        1 => HostKind::Python,
        2 => HostKind::Annotation,
        3 => HostKind::Dataload,
        4 => HostKind::Sync,
        5 => HostKind::Alloc,
        _ => HostKind::Op,
    }
}

/// The log. Ops are kept whatever their duration (they are counted);
/// other records only when they last.
#[derive(Debug, Default)]
pub struct CpuLog {
    blocks: Vec<Vec<u8>>,
    /// One per block: what a read can know of it without decoding it.
    heads: Vec<BlockHead>,
    last_start: i64,
    /// Records with a duration: the host spans.
    spans: u64,
    /// Host spans other than synchronising and allocator calls (a trace
    /// with CPU-side work of its own, not only the runtime's).
    cpu_side_spans: u64,
    /// Python frames kept.
    python_spans: u64,
    /// The longest op's duration: whether any needs clipping is known
    /// without reading the log.
    longest_op: i64,
    /// Python frames too short to keep.
    pub short_python: u64,
    /// Per thread, how its nesting records came (the call tree's sweep).
    order: Vec<ThreadOrder>,
}

/// How a thread's nesting records (ops, annotations, Python frames) came
/// in the log: whether in start order, the longer first on a tie, and
/// whether any is a backward op. Kept as they are added so that the call
/// tree knows, before it reads the log, which threads it can sweep as
/// they come and which it must sort or sweep last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadOrder {
    last: (i64, i64),
    seen: bool,
    pub unsorted: bool,
    pub backward: bool,
}

/// Threads are the pass's dense ids; one past this is always "unsorted"
/// (a guard against a sparse id growing the table).
const MAX_ORDERED_THREAD: u32 = 1 << 16;

/// Where a record sits in the log, to be read again without the records
/// before it (given its start). Ordered as the log is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct RecPos {
    block: u32,
    /// Within a block of [`BLOCK`] bytes.
    at: u16,
}

const _: () = assert!(BLOCK <= 1 << 16, "a record's place in its block fits a u16");

/// A block's first record's start is a delta from `start_before`, and its
/// records' threads are among `threads` ([`thread_bit`]s): a read that wants
/// none of them skips the block and goes on exactly.
#[derive(Debug, Clone, Copy)]
struct BlockHead {
    start_before: i64,
    threads: u64,
}

/// `thread`'s bit in a [`BlockHead`]'s set (threads 64 apart share one).
pub(super) fn thread_bit(thread: u32) -> u64 {
    1 << (thread % 64)
}

impl CpuLog {
    /// Adds a CPU op; `model` is its entry in `OpPricing::works` when the
    /// performance model priced it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn op(
        &mut self,
        thread: u32,
        name: u32,
        start: i64,
        dur: i64,
        model: Option<u32>,
        dataload: bool,
        autograd: Option<Autograd>,
    ) {
        let mut head = OP;
        if model.is_some() {
            head |= PRICED;
        }
        if dataload {
            head |= DATALOAD;
        }
        if let Some(a) = autograd {
            head |= SEQ;
            if a.fwd_thread.is_some() {
                head |= FWD;
            }
        }
        self.longest_op = self.longest_op.max(dur);
        self.note_order(thread, start, dur, autograd.is_some_and(|a| a.fwd_thread.is_some()));
        if dur > 0 {
            self.spans += 1;
            self.cpu_side_spans += 1;
        }
        self.push(head, thread, name, start, dur, model, autograd);
    }

    /// Adds a host record other than an op, if it lasts.
    pub(super) fn host(&mut self, thread: u32, start: i64, end: i64, name: u32, kind: HostKind) {
        if end <= start {
            return;
        }
        self.spans += 1;
        if !matches!(kind, HostKind::Sync | HostKind::Alloc) {
            self.cpu_side_spans += 1;
        }
        if kind == HostKind::Python {
            self.python_spans += 1;
        }
        if matches!(kind, HostKind::Python | HostKind::Annotation | HostKind::Dataload) {
            self.note_order(thread, start, end - start, false);
        }
        self.push(host_code(kind) << 3, thread, name, start, end - start, None, None);
    }

    /// Notes a nesting record's place in its thread's order.
    fn note_order(&mut self, thread: u32, start: i64, dur: i64, backward: bool) {
        let Some(i) = (thread < MAX_ORDERED_THREAD).then_some(thread as usize) else {
            return;
        };
        if i >= self.order.len() {
            self.order.resize(i + 1, ThreadOrder::default());
        }
        let o = &mut self.order[i];
        let (s, d) = o.last;
        o.unsorted |= o.seen && (start < s || (start == s && dur > d));
        o.backward |= backward;
        o.last = (start, dur);
        o.seen = true;
    }

    /// How a thread's nesting records came: in start order (the longer
    /// first on a tie) unless `unsorted`, which a thread past the table is.
    /// The threads that ran backward ops (the autograd engine's).
    pub fn backward_threads(&self) -> impl Iterator<Item = u32> + '_ {
        self.order.iter().enumerate().filter(|(_, o)| o.backward).map(|(i, _)| i as u32)
    }

    pub fn thread_order(&self, thread: u32) -> ThreadOrder {
        match self.order.get(thread as usize) {
            Some(o) if thread < MAX_ORDERED_THREAD => *o,
            _ => ThreadOrder { unsorted: true, backward: true, ..ThreadOrder::default() },
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        head: u8,
        thread: u32,
        name: u32,
        start: i64,
        dur: i64,
        model: Option<u32>,
        autograd: Option<Autograd>,
    ) {
        let block = match self.blocks.last_mut() {
            Some(b) if b.capacity() - b.len() >= MAX_RECORD => b,
            _ => {
                self.blocks.push(Vec::with_capacity(BLOCK));
                self.heads.push(BlockHead { start_before: self.last_start, threads: 0 });
                self.blocks.last_mut().expect("just pushed")
            }
        };
        if let Some(h) = self.heads.last_mut() {
            h.threads |= thread_bit(thread);
        }
        let mut buf = [0u8; MAX_RECORD];
        buf[0] = head;
        let mut n = 1;
        n += thread.encode_var(&mut buf[n..]);
        n += name.encode_var(&mut buf[n..]);
        n += start.wrapping_sub(self.last_start).encode_var(&mut buf[n..]);
        n += dur.encode_var(&mut buf[n..]);
        if let Some(m) = model {
            n += m.encode_var(&mut buf[n..]);
        }
        if let Some(a) = autograd {
            n += a.seq.encode_var(&mut buf[n..]);
            if let Some(t) = a.fwd_thread {
                n += t.encode_var(&mut buf[n..]);
            }
        }
        // The whole buffer, then cut to the record: a copy of known length
        // is a few moves, where one of `n` bytes was a call to memcpy (a
        // percent of the sink's time). The block has room for it.
        let len = block.len();
        block.extend_from_slice(&buf);
        block.truncate(len + n);
        self.last_start = start;
    }

    /// Whether the log holds any host span.
    pub fn has_spans(&self) -> bool {
        self.spans > 0
    }

    /// Whether a span other than a synchronising or allocator call was
    /// kept.
    pub fn has_cpu_side_spans(&self) -> bool {
        self.cpu_side_spans > 0
    }

    /// Whether a Python frame was kept.
    pub fn has_python(&self) -> bool {
        self.python_spans > 0
    }

    /// The longest op's duration (0 without ops).
    pub fn longest_op(&self) -> i64 {
        self.longest_op
    }

    /// Bytes held.
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(Vec::capacity).sum()
    }

    /// Every record, in the order it was added.
    pub(super) fn iter(&self) -> Records<'_> {
        self.iter_on(u64::MAX)
    }

    /// The records in blocks holding a thread of `threads` (a union of
    /// [`thread_bit`]s), in order: every record of those threads, and
    /// others that share their blocks. A multi-GPU trace's devices explained
    /// by threads of their own read only the blocks those threads wrote.
    pub(super) fn iter_on(&self, threads: u64) -> Records<'_> {
        let mut r = Records {
            blocks: &self.blocks,
            heads: &self.heads,
            want: threads,
            block: 0,
            at: 0,
            last_start: 0,
        };
        r.skip_blocks();
        r
    }

    /// The ops, in order.
    pub(super) fn ops(&self) -> impl Iterator<Item = CpuRec> + '_ {
        self.iter().filter(|r| matches!(r.kind, RecKind::Op { .. }))
    }

    /// The ops, in order, those longer than `clip` counted as lasting it.
    pub(super) fn ops_clipped(&self, clip: Option<i64>) -> impl Iterator<Item = CpuRec> + '_ {
        self.ops().map(move |mut r| {
            if let Some(w) = clip.filter(|&w| r.dur > w) {
                r.dur = w;
            }
            r
        })
    }

    /// The host spans (records with a duration), in order, in the blocks
    /// [`CpuLog::iter_on`] reads (`u64::MAX`: all).
    pub(super) fn spans_on(&self, threads: u64) -> impl Iterator<Item = CpuRec> + '_ {
        self.iter_on(threads).filter(|r| r.dur > 0)
    }
}

/// The varint at `bytes[*n..]`, `n` moved past it. Most are one byte
/// (threads, common names): that case is tested first, inline.
#[inline]
fn unsigned(bytes: &[u8], n: &mut usize) -> u64 {
    let b = bytes[*n];
    if b < 0x80 {
        *n += 1;
        return u64::from(b);
    }
    // The log wrote these bytes itself: a short read is a bug.
    let (v, len) = u64::decode_var(&bytes[*n..]).expect("a varint the log wrote");
    *n += len;
    v
}

/// A zigzag varint (what `i64::encode_var` writes), as [`unsigned`].
#[inline]
fn signed(bytes: &[u8], n: &mut usize) -> i64 {
    let v = unsigned(bytes, n);
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// The records of a [`CpuLog`], decoded in order.
pub(super) struct Records<'a> {
    blocks: &'a [Vec<u8>],
    heads: &'a [BlockHead],
    want: u64,
    block: usize,
    at: usize,
    last_start: i64,
}

impl Records<'_> {
    /// Moves to the next block, from the current one, that holds a wanted
    /// thread, where its first record's start is known.
    fn skip_blocks(&mut self) {
        while self.heads.get(self.block).is_some_and(|h| h.threads & self.want == 0) {
            self.block += 1;
        }
        if let Some(h) = self.heads.get(self.block) {
            self.last_start = h.start_before;
        }
    }
}

impl Records<'_> {
    /// The next record and where it sits.
    #[inline]
    fn next_at(&mut self) -> Option<(RecPos, CpuRec)> {
        let mut b = self.blocks.get(self.block)?;
        if self.at >= b.len() {
            self.block += 1;
            self.at = 0;
            self.skip_blocks();
            b = self.blocks.get(self.block)?;
        }
        let pos = RecPos { block: self.block as u32, at: self.at as u16 };
        let (rec, n) = decode(&b[self.at..], self.last_start);
        self.at += n;
        self.last_start = rec.start;
        Some((pos, rec))
    }
}

impl Iterator for Records<'_> {
    type Item = CpuRec;

    #[inline]
    fn next(&mut self) -> Option<CpuRec> {
        self.next_at().map(|(_, r)| r)
    }
}

impl CpuLog {
    /// The records [`CpuLog::iter_on`] reads, each with where it sits.
    pub(super) fn iter_at(&self, threads: u64) -> impl Iterator<Item = (RecPos, CpuRec)> + '_ {
        let mut r = self.iter_on(threads);
        std::iter::from_fn(move || r.next_at())
    }

    /// The record at `pos`, whose start is `start` (as read before).
    pub(super) fn record_at(&self, pos: RecPos, start: i64) -> CpuRec {
        let bytes = &self.blocks[pos.block as usize][pos.at as usize..];
        // Its start is its delta from the one before: decode with any
        // base and put the known start back.
        let (mut rec, _) = decode(bytes, 0);
        rec.start = start;
        rec
    }
}

/// One record from the start of `bytes`, after a record that started at
/// `last_start`; and its length.
#[inline]
fn decode(bytes: &[u8], last_start: i64) -> (CpuRec, usize) {
    let head = bytes[0];
    let mut n = 1;
    let thread = unsigned(bytes, &mut n) as u32;
    let name = unsigned(bytes, &mut n) as u32;
    let delta = signed(bytes, &mut n);
    let dur = signed(bytes, &mut n);
    let op = head & OP != 0;
    let model = (op && head & PRICED != 0).then(|| unsigned(bytes, &mut n) as u32);
    let autograd = (op && head & SEQ != 0).then(|| {
        let seq = unsigned(bytes, &mut n);
        let fwd_thread = (head & FWD != 0).then(|| unsigned(bytes, &mut n) as u32);
        Autograd { seq, fwd_thread }
    });
    let start = last_start.wrapping_add(delta);
    let kind = if op {
        RecKind::Op { model, dataload: head & DATALOAD != 0, autograd }
    } else {
        RecKind::Host(host_of(head >> 3))
    };
    (CpuRec { kind, thread, name, start, dur }, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_as_written_across_blocks() {
        let mut log = CpuLog::default();
        let mut want = Vec::new();
        // Enough records for several blocks; starts that go back in time,
        // the extremes of every field.
        for i in 0..40_000i64 {
            let start = if i % 7 == 0 { i * 1_000 - 5_000_000 } else { i * 1_000 };
            let (thread, name) = ((i % 5) as u32, (i * 31 % 70_000) as u32);
            if i % 3 == 0 {
                log.host(thread, start, start + i, name, HostKind::Python);
                if i > 0 {
                    let kind = RecKind::Host(HostKind::Python);
                    want.push(CpuRec { kind, thread, name, start, dur: i });
                }
            } else {
                let model = (i % 2 == 0).then_some((i * 7 % 100_000) as u32);
                let dur = if i % 11 == 0 { 0 } else { i * 10 };
                let autograd = (i % 4 == 1).then_some(Autograd {
                    seq: (i * 977) as u64,
                    fwd_thread: (i % 8 == 1).then_some((i % 3) as u32),
                });
                log.op(thread, name, start, dur, model, i % 13 == 0, autograd);
                want.push(CpuRec {
                    kind: RecKind::Op { model, dataload: i % 13 == 0, autograd },
                    thread,
                    name,
                    start,
                    dur,
                });
            }
        }
        let autograd = Some(Autograd { seq: u64::MAX, fwd_thread: Some(u32::MAX) });
        log.op(u32::MAX, u32::MAX, i64::MIN / 2, i64::MAX / 2, None, false, autograd);
        want.push(CpuRec {
            kind: RecKind::Op { model: None, dataload: false, autograd },
            thread: u32::MAX,
            name: u32::MAX,
            start: i64::MIN / 2,
            dur: i64::MAX / 2,
        });
        log.host(1, i64::MAX / 2, i64::MAX / 2 + 10, 2, HostKind::Sync);
        want.push(CpuRec {
            kind: RecKind::Host(HostKind::Sync),
            thread: 1,
            name: 2,
            start: i64::MAX / 2,
            dur: 10,
        });
        assert!(log.blocks.len() > 2, "{} blocks", log.blocks.len());
        let got: Vec<CpuRec> = log.iter().collect();
        assert_eq!(got.len(), want.len());
        assert_eq!(got, want);
        // Reading only thread 3's blocks: here every block holds every
        // thread, so nothing is skipped.
        let bit = thread_bit(3);
        let on: Vec<CpuRec> = log.iter_on(bit).collect();
        assert_eq!(on, want);
        // Each record read again from where it sits, given its start.
        for (pos, r) in log.iter_at(u64::MAX) {
            assert_eq!(log.record_at(pos, r.start), r);
        }
        // Small: a few bytes per record (a quarter of them carry a
        // sequence number), far from two 32-byte records.
        assert!(log.heap_bytes() < want.len() * 14, "{} bytes", log.heap_bytes());
    }

    #[test]
    fn a_read_of_some_threads_skips_the_blocks_of_others_exactly() {
        // Threads 1, 2 and 65 (which shares thread 1's bit) in runs long
        // enough to fill blocks of their own; starts that go back.
        let mut log = CpuLog::default();
        let mut all = Vec::new();
        for (run, thread) in [1u32, 2, 65, 1].into_iter().enumerate() {
            for i in 0..30_000i64 {
                let start = run as i64 * 1_000_000_000 + (i % 97) * 1_000 - i;
                log.op(thread, (i % 50) as u32, start, 10 + i % 7, None, false, None);
                all.push((thread, start));
            }
        }
        assert!(log.blocks.len() > 5, "{} blocks", log.blocks.len());
        let read = |mask: u64| -> Vec<(u32, i64)> {
            log.iter_on(mask).map(|r| (r.thread, r.start)).collect()
        };
        let of = |threads: &[u32]| -> Vec<(u32, i64)> {
            all.iter().copied().filter(|(t, _)| threads.contains(t)).collect()
        };
        let only = |mask: u64, threads: &[u32]| -> Vec<(u32, i64)> {
            read(mask).into_iter().filter(|(t, _)| threads.contains(t)).collect()
        };
        assert_eq!(only(thread_bit(2), &[2]), of(&[2]));
        assert_eq!(only(thread_bit(1), &[1, 65]), of(&[1, 65]));
        assert_eq!(read(u64::MAX), all);
        // Thread 2's read decodes its blocks, not the others': only the two
        // blocks its run shares with its neighbours hold anything else (a
        // record takes at least 5 bytes).
        let extra = read(thread_bit(2)).len() - of(&[2]).len();
        assert!(extra <= 2 * BLOCK / 5, "{extra} other records read");
        assert!(read(thread_bit(2)).len() < all.len() / 2);
        assert!(read(thread_bit(7)).is_empty());
    }

    #[test]
    fn each_threads_order_is_known_as_records_are_added() {
        let mut log = CpuLog::default();
        let bwd = Some(Autograd { seq: 4, fwd_thread: Some(1) });
        // Thread 0: in start order, the longer first on a tie.
        log.op(0, 1, 100, 50, None, false, None);
        log.host(0, 100, 120, 2, HostKind::Python);
        log.op(0, 1, 130, 5, None, false, Some(Autograd { seq: 4, fwd_thread: None }));
        // Thread 1: a shorter record, then a longer one at the same start.
        log.op(1, 1, 100, 10, None, false, None);
        log.host(1, 100, 150, 2, HostKind::Annotation);
        // Thread 2: in order, with a backward op; a sync call that goes back
        // in time is not a nesting record and does not count.
        log.op(2, 1, 200, 10, None, false, bwd);
        log.host(2, 50, 60, 3, HostKind::Sync);
        log.op(2, 1, 210, 10, None, false, None);
        // Thread 3: goes back in time.
        log.host(3, 300, 310, 2, HostKind::Python);
        log.op(3, 1, 290, 5, None, false, None);
        let o = |t| log.thread_order(t);
        assert!(!o(0).unsorted && !o(0).backward);
        assert!(o(1).unsorted && !o(1).backward);
        assert!(!o(2).unsorted && o(2).backward);
        assert!(o(3).unsorted);
        // A thread never seen, or past the table, is sorted to be safe.
        assert!(o(9).unsorted && o(MAX_ORDERED_THREAD + 1).unsorted);
    }
}
