//! Why the GPU waits (docs/analysis.md §12): every idle nanosecond inside
//! the steps, on the busiest device, split into a closed set of causes,
//! each with the ops, runtime calls, Python frames or kernels that account
//! for it.
//!
//! It needs two things of the pass: each kernel's interval with the runtime
//! call that launched it, and a compact log of what the host threads did
//! ([`CpuLog`]: one record per CPU op, synchronising or allocator call,
//! annotation and Python frame of at least [`PYTHON_MIN_NS`]). Kineto
//! writes every CPU event before the GPU ones, so gaps are known only at
//! the end: the account is computed then, from that state, in the same
//! single pass as everything else. Only the records that overlap a stretch
//! of a gap to explain are unpacked and sorted.
//!
//! For each gap between the device's busy intervals the next kernel says
//! who was late. Launched before the gap began: the GPU had work and
//! waited on something else (`dependency`). Launched during it: from the
//! gap's start to that launch the host was busy elsewhere, and what its
//! launching thread was doing then, instant by instant, is the cause; from
//! the launch call to the kernel's start is `launch`. Gaps shorter than
//! [`LAUNCH_GAP_NS`] in which the host was neither blocked nor allocating
//! are `launch` too: the host was dispatching as fast as it could.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

use super::PassRecord;
use super::busy::{merge, merge_sorted};
use super::cpulog::{CpuLog, CpuRec, HostKind, thread_bit};
use super::gpulog::{GpuLog, KernelSpan, Launch};
use super::kernel_index::{DeviceSpans, KernelIndex};
use super::names::Names;
use crate::profile::{DeviceIdle, IdleAccount, IdleCause, IdleCauseRow, IdlePlace};
use crate::util::{partition_point_from, round};

/// Python frames shorter than this are not kept (a `with_stack` trace holds
/// ~100 of them per kernel); none of them alone can explain much idle time,
/// and the frames that enclose them still name the place.
pub const PYTHON_MIN_NS: i64 = 10_000;

/// A gap shorter than this, in which the host was not blocked, allocating
/// or in the DataLoader, is dispatch cost (`launch`): eager PyTorch spends
/// 10–50 µs of host time per op between kernels, which is what CUDA graphs,
/// `torch.compile` and fusion remove. Longer gaps are real host work.
pub const LAUNCH_GAP_NS: i64 = 100_000;

/// A Python frame covering at least this share of the window wraps the
/// whole step (`<module>`, `main`, `train_step`): it explains nothing.
const WRAPPER_SHARE: f64 = 0.9;

/// Records open at once on one thread that the sweep follows (real stacks
/// of ops, calls and Python frames stay under a few hundred).
const MAX_DEPTH: usize = 512;

/// Places listed per cause.
const TOP_PLACES: usize = 6;

/// Ops that block the host until the GPU is done (`.item()`, `nonzero`).
const SYNC_OPS: [&str; 4] =
    ["aten::_local_scalar_dense", "aten::item", "aten::nonzero", "aten::is_nonzero"];

/// A host record as the sweep reads it (its thread is its list's).
#[derive(Debug, Clone, Copy)]
struct HostSpan {
    start: i64,
    end: i64,
    name: u32,
    kind: HostKind,
}

/// Host records per thread, by thread id.
type ThreadSpans = Vec<(u32, Vec<HostSpan>)>;

/// The host records that overlap a window, in the order the sweep reads
/// them: by thread, then start, outermost first; records that tie in the
/// order the pass met them (one list per thread, each sorted alone: only
/// the largest one's sort takes scratch). A record that overlaps no window
/// is never open at an instant the sweep looks at, nor the next to start
/// inside a window, so leaving it out changes nothing (and keeps the
/// account's memory to the records near the gaps). `windows` are sorted by
/// thread, then start, as the sweep reads them. `each`, when given, sees
/// every record on the way (and the log is read even with no windows).
fn overlapping(
    log: &CpuLog,
    windows: &[ThreadStretch],
    mut each: Option<&mut dyn FnMut(&CpuRec)>,
) -> ThreadSpans {
    if windows.is_empty() && each.is_none() {
        return Vec::new();
    }
    // Per thread, the windows by start with the latest end so far: a
    // record [s, e) overlaps one iff some window starting before e ends
    // after s. A slot per thread, in thread order.
    let mut slot_of: HashMap<u32, usize> = HashMap::default();
    let mut slots: Vec<Slot> = Vec::new();
    for w in windows {
        let i = *slot_of.entry(w.thread).or_insert_with(|| {
            slots.push(Slot { thread: w.thread, ..Slot::default() });
            slots.len() - 1
        });
        let s = &mut slots[i];
        s.ends.push(s.ends.last().map_or(w.end, |&e: &i64| e.max(w.end)));
        s.starts.push(w.start);
    }
    // Records come nearly in time order: each thread's search starts
    // where its last one ended. Without `each`, only the blocks the
    // windows' threads wrote are read. They come in runs of one thread,
    // whose slot is looked up once a run.
    let threads = match each {
        Some(_) => u64::MAX,
        None => slots.iter().fold(0, |m, s| m | thread_bit(s.thread)),
    };
    let mut last: Option<(u32, Option<usize>)> = None;
    for r in log.spans_on(threads) {
        if let Some(each) = each.as_mut() {
            each(&r);
        }
        let slot = match last {
            Some((t, slot)) if t == r.thread => slot,
            _ => {
                let slot = slot_of.get(&r.thread).copied();
                last = Some((r.thread, slot));
                slot
            }
        };
        let Some(i) = slot else { continue };
        let (s, e) = (r.start, r.start.saturating_add(r.dur));
        let slot = &mut slots[i];
        slot.met = true;
        let before = partition_point_from(&slot.starts, slot.hint, |&ws| ws < e);
        slot.hint = before;
        if before > 0 && slot.ends[before - 1] > s {
            slot.spans.push(HostSpan { start: s, end: e, name: r.name, kind: r.host_kind() });
        }
    }
    let mut spans: ThreadSpans =
        slots.into_iter().filter(|s| s.met).map(|s| (s.thread, s.spans)).collect();
    spans.sort_unstable_by_key(|t| t.0);
    for (_, mine) in &mut spans {
        mine.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    }
    spans
}

/// One thread's windows in [`overlapping`] and the records met near them.
#[derive(Default)]
struct Slot {
    thread: u32,
    starts: Vec<i64>,
    ends: Vec<i64>,
    /// Where the last search ended.
    hint: usize,
    /// Whether a record of this thread was read (its list is returned,
    /// empty or not).
    met: bool,
    spans: Vec<HostSpan>,
}

/// Where idle time went: a key made of interned names, formatted once at
/// the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum PlaceKey {
    /// Outermost and innermost op, and the runtime call inside them.
    Ops {
        outer: Option<u32>,
        inner: Option<u32>,
        call: Option<u32>,
    },
    /// An annotation, a DataLoader range or a kernel, by name.
    Name(u32),
    Kernel(u32),
    /// A node of the Python frame tree.
    Frame(u32),
    Text(&'static str),
}

const OUTSIDE_OPS: &str = "outside any recorded op or frame";

/// [`classify`]'s frame places before they are resolved to a node:
/// the active Python frames, or only those under the DataLoader range
/// (rooted at the range's name, so the loader's tree is its own).
const ALL_FRAMES: u32 = 0;
const UNDER_LOADER: u32 = 1;
const NO_HOST: &str = "no CPU op, annotation or Python frame in the trace";
const NOT_LAUNCHED: &str = "kernels whose launch the trace does not hold";

/// How a stretch of a gap is to be explained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Explain {
    /// By what the thread was doing; `short` gaps count as launch cost.
    Classify { short: bool },
    /// The launch call and its latency: `launch`, placed at the op.
    Launch,
    /// A launch call slower than a launch gap (lazy module loading on a
    /// first launch): the op's own CPU work, placed at op and call.
    SlowCall(u32),
}

/// A stretch of a gap to explain from one thread's records.
#[derive(Debug, Clone, Copy)]
struct ThreadStretch {
    thread: u32,
    start: i64,
    end: i64,
    mode: Explain,
    gap: u32,
}

/// One Python call path node.
#[derive(Debug, Clone, Copy)]
struct Frame {
    name: u32,
    parent: u32,
    depth: u32,
    /// Time in this frame and its callees once [`Tally::frame_totals`]
    /// ran; during the sweep, the time whose innermost frame it is.
    ns: i64,
}

const ROOT: u32 = u32::MAX;

/// The totals as the sweep builds them.
#[derive(Debug, Default)]
struct Tally {
    causes: HashMap<IdleCause, i64>,
    /// Gaps each cause took part in (counted once per gap), and a bit per
    /// gap id saying it is counted.
    cause_gaps: HashMap<IdleCause, (u64, Vec<u64>)>,
    places: HashMap<(IdleCause, PlaceKey), i64>,
    phases: HashMap<u16, i64>,
    /// Whether each gap (by id) is a step's first; time per cause in those.
    leading_gap: Vec<bool>,
    leading: HashMap<IdleCause, i64>,
    frames: Vec<Frame>,
    frame_ids: HashMap<(u32, u32), u32>,
    /// The last path met and its nodes: the stretches of a gap mostly
    /// share their callers (a `with_stack` trace's are dozens deep), whose
    /// nodes are then not looked up again.
    last_path: Vec<u32>,
    last_nodes: Vec<u32>,
    /// Each gap's interval, by id, and every stretch explained with its
    /// cause and place: kept only when asked ([`account`]'s `keep_gaps`),
    /// for the collectives' lead-ins and the Timeline.
    gap_spans: Vec<(i64, i64)>,
    gap_causes: Option<GapCauses>,
    /// The device's memcpy/memset intervals, merged: GPU work that is no
    /// kernel, so the idle account counts it as idle time. Each cause's
    /// time under them is kept (a sync waiting for a copy waits for work).
    copies: Vec<(i64, i64)>,
    copying: HashMap<IdleCause, i64>,
}

/// The stretches of the gaps, each 16 bytes: a trace has a few per gap and
/// a gap per kernel or two, so they are as many as the kernels.
#[derive(Debug, Default)]
struct GapCauses {
    stretches: Vec<Stretch>,
    /// Each distinct (cause, place), by the id the stretches carry.
    keys: Vec<(IdleCause, PlaceKey)>,
    ids: HashMap<(IdleCause, PlaceKey), u32>,
}

/// Time explained in a gap, by a (cause, place) of [`GapCauses::keys`].
#[derive(Debug, Clone, Copy)]
struct Stretch {
    ns: i64,
    gap: u32,
    key: u32,
}

impl Tally {
    fn add(
        &mut self,
        cause: IdleCause,
        place: PlaceKey,
        gap: u32,
        phase: u16,
        (t0, t1): (i64, i64),
    ) {
        let ns = t1 - t0;
        if ns <= 0 {
            return;
        }
        *self.causes.entry(cause).or_insert(0) += ns;
        if !self.copies.is_empty() {
            let under = super::busy::overlap_one(t0, t1, &self.copies);
            if under > 0 {
                *self.copying.entry(cause).or_insert(0) += under;
            }
        }
        // Each gap once per cause, however often the sweep's passes and
        // threads come back to it: a bit per gap.
        let g = self.cause_gaps.entry(cause).or_default();
        let (word, bit) = (gap as usize / 64, 1u64 << (gap % 64));
        if g.1.len() <= word {
            g.1.resize(word + 1, 0);
        }
        if g.1[word] & bit == 0 {
            g.1[word] |= bit;
            g.0 += 1;
        }
        *self.places.entry((cause, place)).or_insert(0) += ns;
        *self.phases.entry(phase).or_insert(0) += ns;
        if self.leading_gap.get(gap as usize) == Some(&true) {
            *self.leading.entry(cause).or_insert(0) += ns;
        }
        if let Some(g) = self.gap_causes.as_mut() {
            let next = g.keys.len() as u32;
            let key = *g.ids.entry((cause, place)).or_insert(next);
            if key == next {
                g.keys.push((cause, place));
            }
            g.stretches.push(Stretch { ns, gap, key });
        }
    }

    /// The node for `path` (outermost first), created as needed, with `ns`
    /// added to it (and, by [`Tally::frame_totals`], to every caller).
    fn frame_path(&mut self, path: &[u32], ns: i64) -> Option<u32> {
        let common = self.last_path.iter().zip(path).take_while(|(a, b)| a == b).count();
        self.last_path.truncate(common);
        self.last_nodes.truncate(common);
        let mut parent = self.last_nodes.last().copied().unwrap_or(ROOT);
        for (depth, &name) in path.iter().enumerate().skip(common) {
            let next = self.frames.len() as u32;
            let id = *self.frame_ids.entry((parent, name)).or_insert(next);
            if id == next {
                self.frames.push(Frame { name, parent, depth: depth as u32, ns: 0 });
            }
            self.last_path.push(name);
            self.last_nodes.push(id);
            parent = id;
        }
        let leaf = (parent != ROOT).then_some(parent)?;
        self.frames[leaf as usize].ns += ns;
        Some(leaf)
    }

    /// Adds each frame's time to its callers' (a caller is created before
    /// its callees, so one walk from the last frame suffices).
    fn frame_totals(&mut self) {
        for i in (0..self.frames.len()).rev() {
            let Frame { parent, ns, .. } = self.frames[i];
            if parent != ROOT {
                self.frames[parent as usize].ns += ns;
            }
        }
    }
}

/// A device: its id, its kernels (indices, by start), their merged busy
/// intervals and the busy time inside the steps.
type DeviceKernels<'a> = (i64, &'a [u32], Vec<(i64, i64)>, i64);

/// The idle account and the idle time per phase id, in ns over the window.
pub(super) struct Account {
    pub account: IdleAccount,
    pub phase_ns: HashMap<u16, i64>,
    /// The account's device's gaps with their causes, when kept.
    pub gaps: Option<Gaps>,
}

/// One GPU idle gap and, per cause, its time in it (ns) and the place that
/// took most of that (an op, call, frame or kernel), the largest first:
/// what the Timeline pane says of the gap before a kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct IdleGap {
    pub start: i64,
    pub end: i64,
    pub causes: Vec<(IdleCause, i64, String)>,
}

impl Gaps {
    /// Every gap with its causes and their places, in time order (`label`
    /// names a kernel).
    pub(super) fn each(&self, names: &Names, label: &dyn Fn(u32) -> String) -> Vec<IdleGap> {
        self.spans
            .iter()
            .enumerate()
            .map(|(id, &(start, end))| {
                let id = id as u32;
                let at = self.stretches.partition_point(|c| c.gap < id);
                // Per cause: its time, and per place its time.
                let mut causes: Vec<CauseIn> = Vec::new();
                for st in self.stretches[at..].iter().take_while(|c| c.gap == id) {
                    let ((cause, place), ns) = (self.keys[st.key as usize], st.ns);
                    let c = match causes.iter_mut().position(|c| c.0 == cause) {
                        Some(i) => &mut causes[i],
                        None => {
                            causes.push((cause, 0, Vec::new()));
                            causes.last_mut().expect("just pushed")
                        }
                    };
                    c.1 += ns;
                    match c.2.iter_mut().find(|p| p.0 == place) {
                        Some(p) => p.1 += ns,
                        None => c.2.push((place, ns)),
                    }
                }
                let mut out: Vec<(IdleCause, i64, String)> = causes
                    .into_iter()
                    .map(|(cause, ns, places)| {
                        let top = places
                            .into_iter()
                            .max_by_key(|p| p.1)
                            .map_or_else(String::new, |p| place_name(p.0, names, label));
                        (cause, ns, top)
                    })
                    .collect();
                out.sort_by_key(|c| (std::cmp::Reverse(c.1), c.0));
                IdleGap { start, end, causes: out }
            })
            .collect()
    }
}

/// A cause's time in one gap, and its time per place.
type CauseIn = (IdleCause, i64, Vec<(PlaceKey, i64)>);

/// A place's name: ops joined `outer > inner > call`, a frame's or
/// annotation's name, a kernel's label.
fn place_name(place: PlaceKey, names: &Names, label: &dyn Fn(u32) -> String) -> String {
    match place {
        PlaceKey::Ops { outer, inner, call } => {
            let parts: Vec<&str> =
                [outer, inner, call].into_iter().flatten().map(|n| names.get(n)).collect();
            if parts.is_empty() { OUTSIDE_OPS.to_string() } else { parts.join(" > ") }
        }
        PlaceKey::Name(n) | PlaceKey::Frame(n) => names.get(n).to_string(),
        PlaceKey::Kernel(n) => label(n),
        PlaceKey::Text(t) => t.to_string(),
    }
}

/// The gaps of the account's device, in time order, with the time each
/// cause took in each: what the host did before a collective
/// (`collectives::lead_ins`).
#[derive(Debug, Default)]
pub struct Gaps {
    pub device: i64,
    /// Each gap's interval, by id (in time order).
    pub spans: Vec<(i64, i64)>,
    /// Each stretch explained, by gap id.
    stretches: Vec<Stretch>,
    /// The (cause, place) of each stretch's key (a frame's place: by its
    /// name id).
    keys: Vec<(IdleCause, PlaceKey)>,
}

impl Gaps {
    /// The idle time per cause inside `[start, end)`, each gap's causes
    /// pro rata to the share of the gap inside it.
    pub fn within(&self, start: i64, end: i64) -> Vec<(IdleCause, i64)> {
        let mut out: Vec<(IdleCause, i64)> = Vec::new();
        let first = self.spans.partition_point(|g| g.1 <= start);
        // The stretches come by gap id: one search for the first gap's,
        // then a walk (a search per gap was most of a collective's time).
        let mut at = self.stretches.partition_point(|c| (c.gap as usize) < first);
        for (id, &(g0, g1)) in self.spans.iter().enumerate().skip(first) {
            if g0 >= end {
                break;
            }
            let id = id as u32;
            while self.stretches.get(at).is_some_and(|c| c.gap < id) {
                at += 1;
            }
            let inside = (g1.min(end) - g0.max(start)).max(0);
            if inside == 0 || g1 <= g0 {
                continue;
            }
            for st in self.stretches[at..].iter().take_while(|c| c.gap == id) {
                let (cause, ns) = (self.keys[st.key as usize].0, st.ns);
                let part = (ns as i128 * inside as i128 / (g1 - g0) as i128) as i64;
                match out.iter_mut().find(|c| c.0 == cause) {
                    Some(c) => c.1 += part,
                    None => out.push((cause, part)),
                }
            }
        }
        out
    }
}

/// Computes the account over `steps` (each step's interval, in time order,
/// not overlapping), per step over `n_steps`. `label` names a kernel.
/// With `keep_gaps`, the account's device's gaps are kept with their causes.
/// `beside.before_sweep` is called before the first sweep that explains
/// the gaps (the account's largest lists; `build` waits there for the
/// roofline); the device groups after the first are shared through
/// `beside.share`.
pub(super) fn account<'a>(
    a: &'a PassRecord,
    index: &'a KernelIndex,
    steps: &[(i64, i64)],
    n_steps: f64,
    label: &dyn Fn(u32) -> String,
    keep_gaps: bool,
    beside: Beside<'_, 'a>,
) -> Option<Account> {
    let Beside { before_sweep, share } = beside;
    let per_step = |ns: i64| round(ns as f64 / 1e6 / n_steps, 3);
    // Kernels per device, by start.
    let window = merged(steps);
    // (The busy union merged from the index directly: this runs beside
    // the roofline on two threads, and both add to the peak.)
    let mut devices: Vec<DeviceKernels> = index
        .devices()
        .map(|(d, ks)| {
            let spans = DeviceSpans { ks, all: &a.gpu.kernel_spans }.iter(0);
            let busy = merge_sorted(spans.map(|k| (k.start, k.end)));
            let in_steps = super::busy::overlap(&busy, &window);
            (d, ks, busy, in_steps)
        })
        .collect();
    if devices.is_empty() || steps.is_empty() {
        return None;
    }
    devices.sort_by_key(|d| (std::cmp::Reverse(d.3), d.0));
    let wall: i64 = steps.iter().map(|(s, e)| e - s).sum();
    let mut launchers: Vec<HashMap<u32, u64>> =
        devices.iter().map(|d| launch_threads(&a.gpu, d)).collect();
    // Devices whose gaps the same host threads explain read the log once
    // for all their windows (a multi-GPU process's log is decoded once, not
    // once per device): a record near another device's gap overlaps none
    // of this one's windows, so the shared list changes no device's sweep.
    // The first read also finds the Python frames that wrap whole steps.
    let python = a.cpu.has_python();
    let mut groups = sharing_threads(&launchers).into_iter();
    let first = groups.next().expect("a device, so a group");
    let mut plans: Vec<(usize, GapPlan)> = first
        .into_iter()
        .map(|i| (i, GapPlan::of(a, steps, &devices[i], &launchers[i], keep_gaps && i == 0)))
        .collect();
    // A device's busy list serves only its plan: freed before the log's
    // records near the gaps are gathered and swept.
    for (i, _) in &plans {
        devices[*i].2 = Vec::new();
    }
    let mut cover = FrameCover::default();
    let mut each = |r: &CpuRec| cover.add(r, &window);
    let spans = near_gaps(a, &plans, python.then_some(&mut each as &mut dyn FnMut(&CpuRec)));
    let host = HostFacts::of(a, &window, cover);
    before_sweep();
    for (_, plan) in &mut plans {
        sweep(a, &host, &spans, plan);
    }
    drop(spans);
    // The other groups (processes whose threads are their own), for
    // whichever thread is free.
    let rest: Vec<Group> = groups
        .map(|g| {
            g.into_iter()
                .map(|i| {
                    let (d, ks, busy, in_steps) = &mut devices[i];
                    (
                        i,
                        (*d, *ks, std::mem::take(busy), *in_steps),
                        std::mem::take(&mut launchers[i]),
                    )
                })
                .collect()
        })
        .collect();
    if !rest.is_empty() {
        let rest = share.pending.get_or_init(|| PendingGroups {
            a,
            steps: steps.to_vec(),
            host,
            groups: Mutex::new(rest.into_iter().map(Some).collect()),
            next: AtomicUsize::new(0),
            swept: Mutex::new((Vec::new(), 0)),
            all_swept: Condvar::new(),
        });
        rest.work();
        plans.extend(rest.wait());
    }
    let mut accounts: Vec<Option<DeviceAccount>> = devices.iter().map(|_| None).collect();
    for (i, plan) in plans {
        accounts[i] = Some(plan.finish(a, devices[i].0, n_steps, label));
    }
    let mut accounts = accounts.into_iter().map(|d| d.expect("every device's account"));
    let first = accounts.next().expect("the busiest device");
    let all_devices: Vec<DeviceIdle> = if devices.len() > 1 {
        let mut v: Vec<DeviceIdle> = std::iter::once(first.causes.clone())
            .chain(accounts.map(|d| d.causes))
            .zip(&devices)
            .map(|(causes, d)| DeviceIdle {
                device: d.0,
                ms_per_step: per_step(wall - d.3),
                causes,
            })
            .collect();
        v.sort_by_key(|d| d.device);
        v
    } else {
        Vec::new()
    };
    let device = devices[0].0;
    let DeviceAccount { idle_ns, gaps, leading, trailing, causes, phase_ns, gap_list } = first;
    Some(Account {
        account: IdleAccount {
            ms_per_step: per_step(idle_ns),
            device,
            gaps_per_step: round(gaps as f64 / n_steps, 2),
            before_first_kernel_ms_per_step: per_step(leading),
            after_last_kernel_ms_per_step: per_step(trailing),
            causes,
            devices: all_devices,
        },
        phase_ns,
        gaps: gap_list,
    })
}

/// One device's account: what [`account`] reports of the busiest device,
/// and of each device of a multi-GPU trace.
struct DeviceAccount {
    idle_ns: i64,
    gaps: u32,
    leading: i64,
    trailing: i64,
    causes: Vec<IdleCauseRow>,
    phase_ns: HashMap<u16, i64>,
    gap_list: Option<Gaps>,
}

/// How [`account`] runs beside the rest of the analysis: what it calls
/// before its first sweep (on two threads, the wait for the roofline's
/// end), and the groups it shares with a thread that is free.
pub(super) struct Beside<'s, 'a> {
    pub before_sweep: &'s dyn Fn(),
    pub share: &'s GroupSweeps<'a>,
}

/// A group's devices: index, kernels, launching threads.
type Group<'a> = Vec<(usize, DeviceKernels<'a>, HashMap<u32, u64>)>;

/// The device groups after the first (processes whose host threads are
/// their own: a merged trace's), each read and swept on its own, for
/// whichever thread is free: the account's, and on two threads the one
/// that ends the rest of the analysis (build/accounts.rs). A group's sweep reads
/// nothing of another's, so who sweeps it changes no figure.
#[derive(Default)]
pub(super) struct GroupSweeps<'a> {
    pending: OnceLock<PendingGroups<'a>>,
}

impl GroupSweeps<'_> {
    /// Sweeps the groups left, if the first one is done (else the
    /// account's thread sweeps them all).
    pub fn sweep_pending(&self) {
        if let Some(rest) = self.pending.get() {
            rest.work();
        }
    }
}

struct PendingGroups<'a> {
    a: &'a PassRecord,
    steps: Vec<(i64, i64)>,
    host: HostFacts,
    /// Each group, taken by the thread that sweeps it.
    groups: Mutex<Vec<Option<Group<'a>>>>,
    next: AtomicUsize,
    /// The plans swept, and how many groups are done (or given up).
    swept: Mutex<(Vec<(usize, GapPlan)>, usize)>,
    all_swept: Condvar,
}

impl PendingGroups<'_> {
    fn work(&self) {
        loop {
            let g = self.next.fetch_add(1, Ordering::Relaxed);
            let taken =
                self.groups.lock().ok().and_then(|mut v| v.get_mut(g).and_then(Option::take));
            let Some(group) = taken else { return };
            // Counted even if this thread unwinds, so that none waits for ever.
            let done = Counted(self);
            let mut plans: Vec<(usize, GapPlan)> = group
                .into_iter()
                .map(|(i, dev, launchers)| {
                    (i, GapPlan::of(self.a, &self.steps, &dev, &launchers, false))
                })
                .collect();
            let spans = near_gaps(self.a, &plans, None);
            for (_, plan) in &mut plans {
                sweep(self.a, &self.host, &spans, plan);
            }
            drop(spans);
            if let Ok(mut s) = self.swept.lock() {
                s.0.extend(plans);
            }
            drop(done);
        }
    }

    /// Every group's plans, once all are swept.
    fn wait(&self) -> Vec<(usize, GapPlan)> {
        let todo = self.groups.lock().map_or(0, |g| g.len());
        let Ok(mut s) = self.swept.lock() else { return Vec::new() };
        while s.1 < todo {
            s = match self.all_swept.wait(s) {
                Ok(s) => s,
                Err(_) => return Vec::new(),
            };
        }
        std::mem::take(&mut s.0)
    }
}

/// A group done: counted and said on drop.
struct Counted<'r, 'a>(&'r PendingGroups<'a>);

impl Drop for Counted<'_, '_> {
    fn drop(&mut self) {
        if let Ok(mut s) = self.0.swept.lock() {
            s.1 += 1;
        }
        self.0.all_swept.notify_all();
    }
}

/// The host records near the gaps of `plans` (one read of the log for
/// all of them), with every record read passed to `each`.
fn near_gaps(
    a: &PassRecord,
    plans: &[(usize, GapPlan)],
    each: Option<&mut dyn FnMut(&CpuRec)>,
) -> ThreadSpans {
    fn on_backward(p: &GapPlan) -> impl Iterator<Item = ThreadStretch> + '_ {
        p.backward.iter().flat_map(|e| e.windows.iter().copied())
    }
    match plans {
        [(_, one)] if one.backward.as_ref().is_none_or(|e| e.windows.is_empty()) => {
            overlapping(&a.cpu, &one.windows, each)
        }
        all => {
            let mut windows: Vec<ThreadStretch> = all
                .iter()
                .flat_map(|(_, p)| p.windows.iter().copied().chain(on_backward(p)))
                .collect();
            windows.sort_by_key(|w| (w.thread, w.start));
            overlapping(&a.cpu, &windows, each)
        }
    }
}

/// The host threads that launched `dev`'s kernels, with how many each:
/// the only threads its gaps' windows are on.
fn launch_threads(gpu: &GpuLog, dev: &DeviceKernels) -> HashMap<u32, u64> {
    let mut launchers: HashMap<u32, u64> = HashMap::default();
    for k in (DeviceSpans { ks: dev.1, all: &gpu.kernel_spans }).iter(0) {
        if let Some(l) = k.launch() {
            *launchers.entry(l.thread).or_insert(0) += 1;
        }
    }
    launchers
}

/// The devices (indices, each group in order, groups by their first)
/// that share a launching thread, directly or through others. Devices of
/// separate processes (a merged trace) stay apart: each group's read
/// holds only its own records.
fn sharing_threads(launchers: &[HashMap<u32, u64>]) -> Vec<Vec<usize>> {
    fn root(of: &mut [usize], mut i: usize) -> usize {
        while of[i] != i {
            of[i] = of[of[i]];
            i = of[i];
        }
        i
    }
    let mut of: Vec<usize> = (0..launchers.len()).collect();
    let mut first: HashMap<u32, usize> = HashMap::default();
    for (i, threads) in launchers.iter().enumerate() {
        for &t in threads.keys() {
            let j = *first.entry(t).or_insert(i);
            let (x, y) = (root(&mut of, i), root(&mut of, j));
            of[x.max(y)] = x.min(y);
        }
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of: HashMap<usize, usize> = HashMap::default();
    for i in 0..launchers.len() {
        let r = root(&mut of, i);
        let g = *group_of.entry(r).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    groups
}

/// The autograd engine's thread that launched most of a device's
/// kernels: while another thread only waits in `backward()` (its
/// innermost record, a range or frame around a whole backward pass), a gap
/// is what the engine's thread did — the DDP reducer's copies after the
/// last backward op on HTA's NCCL trace, 15 ms/step once read as Python.
struct Engine {
    thread: u32,
    /// The backward phase's ranges, by start, merged.
    passes: Vec<(i64, i64)>,
    /// The other threads' windows again, on the engine's thread, by start:
    /// its records near them are read with the windows'.
    windows: Vec<ThreadStretch>,
}

impl Engine {
    /// Whether `[s, e)` holds a whole backward pass.
    fn around_a_pass(&self, s: i64, e: i64) -> bool {
        let i = self.passes.partition_point(|p| p.0 < s);
        self.passes.get(i).is_some_and(|p| p.1 <= e)
    }
}

/// One device's gaps, those already explained in `tally`, and the windows
/// of host time the sweep is to explain.
struct GapPlan {
    tally: Tally,
    /// By thread, then start, as the sweep reads them.
    windows: Vec<ThreadStretch>,
    /// Where the loop thread waits in `backward()`: the engine's thread.
    backward: Option<Engine>,
    gaps: u32,
    leading: i64,
    trailing: i64,
}

impl GapPlan {
    /// `launchers`: [`launch_threads`] of `dev`.
    fn of(
        a: &PassRecord,
        steps: &[(i64, i64)],
        dev: &DeviceKernels,
        launchers: &HashMap<u32, u64>,
        keep_gaps: bool,
    ) -> GapPlan {
        let (device, ks, busy, _) = dev;
        let kernels = DeviceSpans { ks, all: &a.gpu.kernel_spans };

        let host_side = a.cpu.has_spans();
        // The thread that launched most of this device's kernels: the one
        // asked about gaps no launch explains (a step's tail).
        let main_thread =
            launchers.iter().max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t))).map(|(t, _)| *t);

        let mut copies: Vec<(i64, i64)> = a
            .gpu
            .copy_spans
            .iter()
            .filter(|c| c.device == *device)
            .map(|c| (c.start, c.end))
            .collect();
        let mut tally = Tally {
            gap_causes: keep_gaps.then(GapCauses::default),
            copies: merge(&mut copies),
            ..Tally::default()
        };
        let mut windows: Vec<ThreadStretch> = Vec::new();
        let (mut gaps, mut leading, mut trailing) = (0u32, 0i64, 0i64);
        // Where the last gap's next kernels were: gaps come in time order.
        let mut next_hint = 0;
        for &(s0, s1) in steps {
            let first = busy.partition_point(|b| b.1 <= s0);
            let mut at = s0;
            let mut k = first;
            loop {
                let next_busy = busy.get(k).filter(|b| b.0 < s1);
                let g1 = next_busy.map_or(s1, |b| b.0.max(s0));
                if g1 > at {
                    let gap = gaps;
                    gaps += 1;
                    tally.leading_gap.push(at == s0);
                    if keep_gaps {
                        tally.gap_spans.push((at, g1));
                    }
                    if at == s0 {
                        leading += g1 - at;
                    } else if next_busy.is_none() {
                        trailing += g1 - at;
                    }
                    explain_gap(
                        a,
                        *device,
                        kernels,
                        (at, g1),
                        &mut next_hint,
                        gap,
                        main_thread,
                        host_side,
                        &mut tally,
                        &mut windows,
                    );
                }
                match next_busy {
                    Some(b) => {
                        at = at.max(b.1.min(s1));
                        k += 1;
                    }
                    None => break,
                }
            }
        }
        windows.sort_by_key(|w| (w.thread, w.start));
        let backward = a.phases.get("backward").and_then(|bw| {
            let thread = a
                .cpu
                .backward_threads()
                .max_by_key(|t| (launchers.get(t).copied().unwrap_or(0), std::cmp::Reverse(*t)))?;
            let mut passes: Vec<(i64, i64)> = a
                .ranges
                .cpu_phase_spans()
                .filter(|&(_, _, _, p)| p == bw)
                .map(|(_, s, e, _)| (s, e))
                .collect();
            let passes = merge(&mut passes);
            let mut on_engine: Vec<ThreadStretch> = windows
                .iter()
                .filter(|w| w.thread != thread && matches!(w.mode, Explain::Classify { .. }))
                .map(|w| ThreadStretch { thread, ..*w })
                .collect();
            on_engine.sort_by_key(|w| w.start);
            (!passes.is_empty()).then_some(Engine { thread, passes, windows: on_engine })
        });
        GapPlan { tally, windows, backward, gaps, leading, trailing }
    }

    /// The account of `device`, once the sweep has explained the windows.
    fn finish(
        self,
        a: &PassRecord,
        device: i64,
        n_steps: f64,
        label: &dyn Fn(u32) -> String,
    ) -> DeviceAccount {
        let per_step = |ns: i64| round(ns as f64 / 1e6 / n_steps, 3);
        let GapPlan { mut tally, gaps, leading, trailing, .. } = self;
        tally.frame_totals();
        let idle_ns: i64 = tally.causes.values().sum();
        let mut causes: Vec<IdleCauseRow> = tally
            .causes
            .iter()
            .map(|(&cause, &ns)| IdleCauseRow {
                cause,
                ms_per_step: per_step(ns),
                gaps_per_step: round(
                    tally.cause_gaps.get(&cause).map_or(0, |g| g.0) as f64 / n_steps,
                    2,
                ),
                before_first_kernel_ms_per_step: per_step(
                    tally.leading.get(&cause).copied().unwrap_or(0),
                ),
                copy_ms_per_step: tally
                    .copying
                    .get(&cause)
                    .map(|&ns| per_step(ns))
                    .filter(|ms| *ms > 0.0),
                places: places(a, &tally, cause, ns, &per_step, label),
            })
            .collect();
        causes.sort_by(|x, y| y.ms_per_step.total_cmp(&x.ms_per_step).then(x.cause.cmp(&y.cause)));
        DeviceAccount {
            idle_ns,
            gaps,
            leading,
            trailing,
            causes,
            phase_ns: std::mem::take(&mut tally.phases),
            gap_list: tally.gap_causes.take().map(
                |GapCauses { mut stretches, mut keys, .. }| {
                    stretches.sort_by_key(|c| c.gap);
                    for k in &mut keys {
                        if let PlaceKey::Frame(f) = k.1 {
                            k.1 = PlaceKey::Frame(tally.frames[f as usize].name);
                        }
                    }
                    Gaps { device, spans: std::mem::take(&mut tally.gap_spans), stretches, keys }
                },
            ),
        }
    }
}

/// `steps` merged where they touch.
fn merged(steps: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut v = steps.to_vec();
    merge(&mut v)
}

/// Decides who was late for the gap `[g0, g1)`: a dependency, a launch, or
/// a host thread whose records the sweep will read (`windows`).
#[allow(clippy::too_many_arguments)]
fn explain_gap(
    a: &PassRecord,
    device: i64,
    kernels: DeviceSpans,
    (g0, g1): (i64, i64),
    next_hint: &mut usize,
    gap: u32,
    main_thread: Option<u32>,
    host_side: bool,
    tally: &mut Tally,
    windows: &mut Vec<ThreadStretch>,
) {
    // Charged to each phase the stretch crosses, so no phase's idle time
    // exceeds its wall time.
    let mut charge = |cause: IdleCause, place: PlaceKey, (mut t, end): (i64, i64)| {
        while t < end {
            let (phase, until) = a.ranges.gpu_phase_span(device, t);
            let t1 = until.min(end);
            tally.add(cause, place, gap, phase, (t, t1));
            t = t1;
        }
    };
    // The kernels that end the gap; the one launched last was waited for.
    // (Searched from the last gap's: a binary search over the device's
    // kernels, two loads a probe, was most of the gaps' planning.)
    let from =
        partition_point_from(kernels.ks, *next_hint, |&i| kernels.all[i as usize].start < g1);
    *next_hint = from;
    let next = || kernels.iter(from).take_while(|k| k.start == g1);
    let launched: Option<(&KernelSpan, Launch)> =
        next().filter_map(|k| Some((k, k.launch()?))).max_by_key(|(_, l)| (l.start, l.thread));
    let short = g1 - g0 < LAUNCH_GAP_NS;
    match launched {
        Some((k, l)) if l.end <= g0 => {
            charge(IdleCause::Dependency, PlaceKey::Kernel(k.name), (g0, g1))
        }
        Some((k, l)) => {
            let mut push = |start: i64, end: i64, mode: Explain| {
                if end > start {
                    windows.push(ThreadStretch { thread: l.thread, start, end, mode, gap });
                }
            };
            // Before the launch: what the host was doing instead.
            push(g0, l.start, Explain::Classify { short });
            let call = (l.start.max(g0), l.end.min(g1));
            let after = (l.end.max(g0), g1);
            if l.end - l.start >= LAUNCH_GAP_NS {
                push(call.0, call.1, Explain::SlowCall(l.name));
            } else if after.1 - after.0 < LAUNCH_GAP_NS {
                push(call.0, g1, Explain::Launch);
                return;
            } else {
                push(call.0, call.1, Explain::Launch);
            }
            // Launched, yet the kernel started only later: it was queued
            // behind something else, or started within launch latency.
            if after.1 - after.0 >= LAUNCH_GAP_NS {
                charge(IdleCause::Dependency, PlaceKey::Kernel(k.name), after);
            } else {
                push(after.0, after.1, Explain::Launch);
            }
        }
        None => match main_thread.filter(|_| host_side) {
            // A step's tail (no kernel ends the gap), or kernels with no
            // launch: what the loop thread did.
            Some(t) => windows.push(ThreadStretch {
                thread: t,
                start: g0,
                end: g1,
                mode: Explain::Classify { short: short && next().next().is_some() },
                gap,
            }),
            None => {
                let why = if host_side { NOT_LAUNCHED } else { NO_HOST };
                charge(IdleCause::Other, PlaceKey::Text(why), (g0, g1));
            }
        },
    }
}

/// Reads each window's thread records, instant by instant, and adds what
/// it finds to `tally`.
fn sweep(a: &PassRecord, host: &HostFacts, spans: &[(u32, Vec<HostSpan>)], plan: &mut GapPlan) {
    let GapPlan { windows, tally, backward, .. } = plan;
    let mut sweep = Sweep::new(a, host, spans);
    let mut waits = Vec::new();
    sweep.windows(windows, tally, Pass::Waits(backward.as_ref(), &mut waits));
    if !waits.is_empty() {
        // What the engine's thread did while another waited for it; where
        // it did nothing recorded, the waiting thread's own account.
        waits.sort_by_key(|(w, _)| w.start);
        let (on_engine, from): (Vec<ThreadStretch>, Vec<u32>) = waits.into_iter().unzip();
        let mut back = Vec::new();
        sweep.windows(&on_engine, tally, Pass::Engine(&from, &mut back));
        back.sort_by_key(|w| (w.thread, w.start));
        sweep.windows(&back, tally, Pass::Last);
    }
    // The windows serve only the sweep (plans wait for the other groups).
    *windows = Vec::new();
    *backward = None;
}

/// What a sweep over a list of windows does besides explaining them.
enum Pass<'p> {
    /// Sets aside, on the engine's thread, the stretches a thread only
    /// waits in `backward()`, with that thread.
    Waits(Option<&'p Engine>, &'p mut Vec<(ThreadStretch, u32)>),
    /// On the engine's thread (each window's waiting thread beside it):
    /// gives back, on the waiting thread, what the engine did not record.
    Engine(&'p [u32], &'p mut Vec<ThreadStretch>),
    Last,
}

/// The sweep's reading of the host records, over one list of windows at
/// a time.
struct Sweep<'s, 'a> {
    a: &'a PassRecord,
    host: &'s HostFacts,
    spans: &'s [(u32, Vec<HostSpan>)],
    sync_ops: HashMap<u32, bool>,
    places: super::ranges::PlaceCache,
}

impl<'s, 'a> Sweep<'s, 'a> {
    fn new(a: &'a PassRecord, host: &'s HostFacts, spans: &'s [(u32, Vec<HostSpan>)]) -> Self {
        Sweep { a, host, spans, sync_ops: HashMap::default(), places: Default::default() }
    }

    /// Explains `windows` (by thread, then start) into `tally`, with
    /// what `pass` asks besides.
    fn windows(&mut self, windows: &[ThreadStretch], tally: &mut Tally, mut pass: Pass<'_>) {
        let (a, spans) = (self.a, self.spans);
        let cpu_side = self.host.cpu_side;
        let wrappers = &self.host.wrappers;
        let places = &mut self.places;
        let sync_ops = &mut self.sync_ops;
        let mut is_sync_op = |name: u32| {
            *sync_ops.entry(name).or_insert_with(|| SYNC_OPS.contains(&a.names.get(name)))
        };
        let mut w = 0;
        while w < windows.len() {
            let thread = windows[w].thread;
            let spans = match spans.binary_search_by_key(&thread, |t| t.0) {
                Ok(i) => &spans[i].1[..],
                Err(_) => &[],
            };
            let mut p = 0;
            let mut active: Vec<HostSpan> = Vec::new();
            let mut path: Vec<u32> = Vec::new();
            while w < windows.len() && windows[w].thread == thread {
                let win = windows[w];
                w += 1;
                let mut t = win.start;
                loop {
                    while p < spans.len() && spans[p].start <= t {
                        // Deeper nesting than any real stack is a hostile trace:
                        // the records beyond it are ignored, not swept forever.
                        if spans[p].end > t && active.len() < MAX_DEPTH {
                            active.push(spans[p]);
                        }
                        p += 1;
                    }
                    active.retain(|s| s.end > t);
                    let next_start = spans.get(p).map_or(i64::MAX, |s| s.start);
                    let next_end = active.iter().map(|s| s.end).min().unwrap_or(i64::MAX);
                    // A stretch stops at a phase boundary too: each phase is
                    // charged what fell inside it.
                    let (phase, phase_end) = a.ranges.cpu_phase_span(places, thread, t);
                    let t1 = win.end.min(next_start).min(next_end).min(phase_end);
                    if t1 > t {
                        let (cause, place) = classify(&active, win.mode, cpu_side, &mut is_sync_op);
                        let set_aside = match &mut pass {
                            Pass::Waits(Some(e), waits)
                                if thread != e.thread
                                    && cause == IdleCause::Python
                                    && matches!(win.mode, Explain::Classify { .. })
                                    && active
                                        .last()
                                        .is_some_and(|s| e.around_a_pass(s.start, s.end)) =>
                            {
                                let on_engine =
                                    ThreadStretch { thread: e.thread, start: t, end: t1, ..win };
                                waits.push((on_engine, thread));
                                true
                            }
                            Pass::Engine(from, back) if active.is_empty() => {
                                back.push(ThreadStretch {
                                    thread: from[w - 1],
                                    start: t,
                                    end: t1,
                                    ..win
                                });
                                true
                            }
                            _ => false,
                        };
                        if set_aside {
                            t = t1;
                            if t >= win.end {
                                break;
                            }
                            continue;
                        }
                        let place = match place {
                            PlaceKey::Frame(which) => {
                                let loader = active
                                    .iter()
                                    .find(|s| s.kind == HostKind::Dataload)
                                    .filter(|_| which == UNDER_LOADER);
                                let mut frames = active.iter().filter(|s| {
                                    s.kind == HostKind::Python
                                        && loader.is_none_or(|l| s.start >= l.start)
                                });
                                path.clear();
                                path.extend(loader.map(|l| l.name));
                                path.extend(
                                    frames
                                        .clone()
                                        .filter(|s| !wrappers.contains(&s.name))
                                        .map(|s| s.name),
                                );
                                match tally.frame_path(&path, t1 - t) {
                                    Some(node) => PlaceKey::Frame(node),
                                    // Only wrappers of the whole step: the step's own
                                    // code, named by the innermost of them.
                                    None => frames
                                        .next_back()
                                        .map_or(PlaceKey::Text(OUTSIDE_OPS), |f| {
                                            PlaceKey::Name(f.name)
                                        }),
                                }
                            }
                            p => p,
                        };
                        tally.add(cause, place, win.gap, phase, (t, t1));
                    }
                    t = t1;
                    if t >= win.end {
                        break;
                    }
                }
            }
        }
    }
}

/// What the sweep asks of all the host records, not only those near a gap.
struct HostFacts {
    /// The trace has CPU-side records of its own (ops, frames,
    /// annotations), not only the runtime's calls.
    cpu_side: bool,
    /// Python frames that wrap the whole step (see [`WRAPPER_SHARE`]).
    wrappers: HashSet<u32>,
}

impl HostFacts {
    /// Over the account's merged `steps`, from each Python frame's time
    /// inside them (`cover`, by name: [`FrameCover`]).
    fn of(a: &PassRecord, steps: &[(i64, i64)], cover: FrameCover) -> HostFacts {
        let wall: i64 = steps.iter().map(|(s, e)| e - s).sum();
        let wrappers = cover
            .0
            .into_iter()
            .filter(|(_, ns)| *ns as f64 >= WRAPPER_SHARE * wall as f64 && wall > 0)
            .map(|(n, _)| n)
            .collect();
        HostFacts { cpu_side: a.evidence.cpu_ops > 0 || a.cpu.has_cpu_side_spans(), wrappers }
    }
}

/// Each Python frame's time inside the steps, by name, added up as the
/// sweep's one read of the log meets the frames.
#[derive(Default)]
struct FrameCover(HashMap<u32, i64>);

impl FrameCover {
    fn add(&mut self, r: &CpuRec, steps: &[(i64, i64)]) {
        if r.host_kind() == HostKind::Python {
            *self.0.entry(r.name).or_insert(0) +=
                super::busy::overlap_one(r.start, r.start.saturating_add(r.dur), steps);
        }
    }
}

/// The cause of one instant from the records active on the thread
/// (outermost first), and the place to charge it to.
fn classify(
    active: &[HostSpan],
    mode: Explain,
    cpu_side: bool,
    is_sync_op: &mut dyn FnMut(u32) -> bool,
) -> (IdleCause, PlaceKey) {
    // The outermost and (of two or more) innermost op; no list is built,
    // as this runs for every stretch of every gap.
    let ops = || active.iter().filter(|s| s.kind == HostKind::Op);
    let (mut outer, mut inner) = (None, None);
    for s in ops() {
        match outer {
            None => outer = Some(s.name),
            Some(_) => inner = Some(s.name),
        }
    }
    let has_ops = outer.is_some();
    let op_place = |call: Option<u32>| PlaceKey::Ops { outer, inner, call };
    let innermost = |kind: HostKind| active.iter().rev().find(|s| s.kind == kind);
    let python = innermost(HostKind::Python);
    // The op, else the Python frames (the tree, or for launch cost just the
    // innermost frame), else the annotation.
    let place = |tree: bool| {
        if has_ops {
            op_place(None)
        } else if let Some(f) = python {
            if tree { PlaceKey::Frame(ALL_FRAMES) } else { PlaceKey::Name(f.name) }
        } else if let Some(an) = innermost(HostKind::Annotation) {
            PlaceKey::Name(an.name)
        } else {
            PlaceKey::Text(OUTSIDE_OPS)
        }
    };
    match mode {
        Explain::Launch => return (IdleCause::Launch, place(false)),
        Explain::SlowCall(call) => return (IdleCause::CpuOp, op_place(Some(call))),
        Explain::Classify { .. } => {}
    }
    if let Some(i) = active.iter().position(|s| s.kind == HostKind::Dataload) {
        // Python frames recorded under the loader (`with_stack`): its
        // time is named frame by frame, as the Python cause's is.
        if active[i + 1..].iter().any(|s| s.kind == HostKind::Python) {
            return (IdleCause::Dataloader, PlaceKey::Frame(UNDER_LOADER));
        }
        return (IdleCause::Dataloader, PlaceKey::Name(active[i].name));
    }
    let sync_call = innermost(HostKind::Sync);
    if sync_call.is_some() || ops().any(|s| is_sync_op(s.name)) {
        return (IdleCause::Sync, op_place(sync_call.map(|s| s.name)));
    }
    if let Some(call) = innermost(HostKind::Alloc) {
        return (IdleCause::Allocator, op_place(Some(call.name)));
    }
    if mode == (Explain::Classify { short: true }) {
        return (IdleCause::Launch, place(false));
    }
    if has_ops {
        return (IdleCause::CpuOp, op_place(None));
    }
    if python.is_some() || active.iter().any(|s| s.kind == HostKind::Annotation) {
        return (IdleCause::Python, place(true));
    }
    if cpu_side {
        (IdleCause::Python, PlaceKey::Text(OUTSIDE_OPS))
    } else {
        (IdleCause::Other, PlaceKey::Text(NO_HOST))
    }
}

/// A cause's places, largest first; Python frames as the chain that holds
/// most of the time, then the largest others.
fn places(
    a: &PassRecord,
    tally: &Tally,
    cause: IdleCause,
    total: i64,
    per_step: &dyn Fn(i64) -> f64,
    label: &dyn Fn(u32) -> String,
) -> Vec<IdlePlace> {
    let name = |place: &PlaceKey| -> String {
        match *place {
            PlaceKey::Frame(f) => a.names.get(tally.frames[f as usize].name).to_string(),
            p => place_name(p, &a.names, label),
        }
    };
    let mut flat: Vec<(PlaceKey, i64)> = tally
        .places
        .iter()
        .filter(|((c, p), _)| *c == cause && !matches!(p, PlaceKey::Frame(_)))
        .map(|((_, p), ns)| (*p, *ns))
        .collect();
    // Python frames: the tree of the frames the cause's time was spent in.
    let frame_ns: i64 = tally
        .places
        .iter()
        .filter(|((c, p), _)| *c == cause && matches!(p, PlaceKey::Frame(_)))
        .map(|(_, ns)| *ns)
        .sum();
    let mut out: Vec<IdlePlace> = Vec::new();
    if frame_ns > 0 {
        // The tree is shared by the causes that name frames (Python, the
        // DataLoader's): only the roots this cause's time reached count.
        let root_of = |mut node: u32| {
            while tally.frames[node as usize].parent != ROOT {
                node = tally.frames[node as usize].parent;
            }
            node
        };
        let own_roots: Vec<u32> = tally
            .places
            .iter()
            .filter_map(|((c, p), _)| match p {
                PlaceKey::Frame(node) if *c == cause => Some(root_of(*node)),
                _ => None,
            })
            .collect();
        let own_roots = &own_roots;
        let children = |parent: u32| {
            tally
                .frames
                .iter()
                .enumerate()
                .filter(move |(i, f)| {
                    f.parent == parent && (parent != ROOT || own_roots.contains(&(*i as u32)))
                })
                .map(|(i, f)| (i as u32, f))
        };
        let mut chain: Vec<u32> = Vec::new();
        let mut at =
            children(ROOT).max_by_key(|(i, f)| (f.ns, std::cmp::Reverse(*i))).map(|(i, _)| i);
        while let Some(node) = at {
            chain.push(node);
            at = children(node)
                .filter(|(_, f)| f.ns as f64 >= 0.5 * frame_ns as f64)
                .max_by_key(|(i, f)| (f.ns, std::cmp::Reverse(*i)))
                .map(|(i, _)| i);
        }
        let mut others: Vec<(u32, i64)> = Vec::new();
        for c in chain.iter().copied().chain(std::iter::once(ROOT)) {
            others.extend(children(c).filter(|(i, _)| !chain.contains(i)).map(|(i, f)| (i, f.ns)));
        }
        others.sort_by_key(|(i, ns)| (std::cmp::Reverse(*ns), *i));
        let frame = |id: u32, path: bool| {
            let f = tally.frames[id as usize];
            IdlePlace {
                name: a.names.get(f.name).to_string(),
                ms_per_step: per_step(f.ns),
                depth: Some(f.depth),
                path,
            }
        };
        // A frame whose callee on the path holds nearly all of its time
        // (a decorator, `__call__`) adds nothing: the callee is shown.
        let ns = |id: u32| tally.frames[id as usize].ns;
        let shown: Vec<u32> = chain
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                chain.get(i + 1).is_none_or(|n| (ns(*n) as f64) < 0.99 * ns(**c) as f64)
            })
            .map(|(_, c)| *c)
            .collect();
        out.extend(shown.iter().map(|&c| frame(c, true)));
        let floor = total / 20; // 5% of the cause
        for (id, ns) in others {
            if ns < floor || out.len() >= TOP_PLACES {
                break;
            }
            out.push(frame(id, false));
        }
    }
    flat.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| name(&x.0).cmp(&name(&y.0))));
    let room = TOP_PLACES.saturating_sub(out.len()).max(1);
    let flat = &flat[..flat.len().min(room)];
    let mut named: Vec<String> = flat.iter().map(|(p, _)| name(p)).collect();
    // Kernels whose labels are cut the same: their whole names.
    for (i, (p, _)) in flat.iter().enumerate() {
        let same = |j: usize| j != i && named[j] == named[i];
        if let PlaceKey::Kernel(n) = p {
            if (0..named.len()).any(same) {
                named[i] = a.names.get(*n).to_string();
            }
        }
    }
    let flat: Vec<IdlePlace> = flat
        .iter()
        .zip(named)
        .map(|((_, ns), name)| IdlePlace {
            name,
            ms_per_step: per_step(*ns),
            depth: None,
            path: false,
        })
        .collect();
    // Frames first when they hold most of the cause, else the flat places.
    if frame_ns * 2 >= total {
        out.extend(flat);
        out
    } else {
        let mut v = flat;
        v.extend(out);
        v.truncate(TOP_PLACES);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each frame's time is that of every stretch whose path passes
    /// through it, whatever order the paths come in (the nodes of a path's
    /// callers are reused from the path before).
    #[test]
    fn a_frame_holds_the_time_of_every_path_through_it() {
        let paths: [(&[u32], i64); 8] = [
            (&[1, 2, 3], 5),
            (&[1, 2], 7),
            (&[1, 4], 11),
            (&[1, 2, 3], 13),
            (&[5], 17),
            (&[], 19),
            (&[1, 2, 3, 6], 23),
            (&[5, 2, 3], 29),
        ];
        let mut t = Tally::default();
        let leaves: Vec<Option<u32>> = paths.iter().map(|(p, ns)| t.frame_path(p, *ns)).collect();
        t.frame_totals();
        let chain = |mut id: u32| {
            let mut names = Vec::new();
            while id != ROOT {
                names.push(t.frames[id as usize].name);
                id = t.frames[id as usize].parent;
            }
            names.reverse();
            names
        };
        for (i, f) in t.frames.iter().enumerate() {
            let at = chain(i as u32);
            let want: i64 = paths.iter().filter(|(p, _)| p.starts_with(&at)).map(|p| p.1).sum();
            assert_eq!(f.ns, want, "frame {at:?}");
            assert_eq!(f.depth as usize, at.len() - 1);
        }
        assert_eq!(t.frames.len(), 8, "one node per distinct prefix");
        for ((p, _), leaf) in paths.iter().zip(&leaves) {
            assert_eq!(leaf.map(chain).unwrap_or_default(), p.to_vec());
        }
    }

    /// `overlapping` against the plain definition: every host span that
    /// shares an instant with a window of its thread, sorted by thread,
    /// start, longest first, ties in the order written.
    #[test]
    fn the_sweep_reads_exactly_the_records_that_overlap_a_window() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..50 {
            let mut log = CpuLog::default();
            let mut written = Vec::new();
            for _ in 0..400 {
                let (thread, start) = (next(3) as u32, next(10_000) as i64);
                let dur = next(300) as i64;
                let name = next(50) as u32;
                if next(2) == 0 {
                    log.op(thread, name, start, dur, None, false, None);
                } else {
                    log.host(thread, start, start + dur, name, HostKind::Python);
                }
                if dur > 0 {
                    written.push((thread, start, start + dur, name));
                }
            }
            let mut windows: Vec<ThreadStretch> = (0..next(20))
                .map(|_| {
                    let start = next(10_000) as i64;
                    ThreadStretch {
                        thread: next(4) as u32,
                        start,
                        end: start + 1 + next(200) as i64,
                        mode: Explain::Launch,
                        gap: 0,
                    }
                })
                .collect();
            windows.sort_by_key(|w| (w.thread, w.start));
            let mut want: Vec<(u32, i64, i64, u32)> = written
                .iter()
                .copied()
                .filter(|&(t, s, e, _)| {
                    windows.iter().any(|w| w.thread == t && w.start < e && w.end > s)
                })
                .collect();
            want.sort_by_key(|&(t, s, e, _)| (t, s, std::cmp::Reverse(e)));
            let got: Vec<(u32, i64, i64, u32)> = overlapping(&log, &windows, None)
                .iter()
                .flat_map(|(t, mine)| mine.iter().map(|s| (*t, s.start, s.end, s.name)))
                .collect();
            assert_eq!(got, want);
        }
    }
}
