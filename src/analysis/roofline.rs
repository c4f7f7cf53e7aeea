//! How close to the hardware (docs/analysis.md §13): each priced op call's
//! kernels, found through the runtime call that launched them, give it a
//! GPU time; with its FLOPs and bytes (`work/`) and the device's peaks
//! (`hardware.rs`) that is an achieved rate, a roofline time and the time
//! lost against it — per op, per kernel and per kernel category.
//!
//! Everything here comes from what the single pass kept: the ops of the
//! CPU log, the priced calls and the kernel spans with their launches.

use rustc_hash::FxHashMap as HashMap;

use super::PassRecord;
use super::placed::GpuTables;
use super::pricing::OpWork;
use super::ranges::PlaceCache;
use super::work::Dtype;
use crate::hardware::{PeakClass, Peaks};
use crate::profile::{
    Achieved, Category, CategoryEfficiency, Efficiency, MatrixEfficiency, OpEfficiency,
    RooflineBound, UnmodelledRow, UnpricedCategory,
};
use crate::trace::DeviceProps;
use crate::util::{partition_point_from, round, round_share};

/// Achieved work over some GPU time, and its roofline time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    pub flops: f64,
    pub bytes: f64,
    /// GPU kernel time of the calls (ns).
    pub ns: f64,
    /// The same work at the device's roofline (ns); 0 without peaks.
    pub roof_ns: f64,
    /// The part of `roof_ns` where compute, not memory, is the limit.
    pub compute_roof_ns: f64,
    /// Roofline time past the calls' own time, which `roof_ns` leaves out:
    /// work the model counts that ran faster than the device's roofline
    /// allows (the cache served part of its bytes).
    pub past_roof_ns: f64,
    /// Whether every call had the device's peaks.
    pub peaked: bool,
    pub calls: u64,
}

impl Rates {
    fn add(&mut self, other: &Rates) {
        self.peaked = if self.calls == 0 { other.peaked } else { self.peaked && other.peaked };
        self.flops += other.flops;
        self.bytes += other.bytes;
        self.ns += other.ns;
        self.roof_ns += other.roof_ns;
        self.compute_roof_ns += other.compute_roof_ns;
        self.past_roof_ns += other.past_roof_ns;
        self.calls += other.calls;
    }

    /// Achieved TFLOP/s and TB/s (per ns × 1e-3).
    pub fn tflops(&self) -> f64 {
        if self.ns > 0.0 { self.flops / self.ns / 1e3 } else { 0.0 }
    }
    pub fn tbps(&self) -> f64 {
        if self.ns > 0.0 { self.bytes / self.ns / 1e3 } else { 0.0 }
    }
    /// Roofline time over actual time, in percent; None without peaks.
    pub fn pct_of_peak(&self) -> Option<f64> {
        (self.peaked && self.ns > 0.0).then(|| self.roof_ns / self.ns * 100.0)
    }
    /// Time lost against the roofline (ns); None without peaks.
    pub fn lost_ns(&self) -> Option<f64> {
        (self.peaked && self.ns > 0.0).then(|| (self.ns - self.roof_ns).max(0.0))
    }
    pub fn compute_bound(&self) -> Option<bool> {
        (self.peaked && self.roof_ns > 0.0).then_some(self.compute_roof_ns * 2.0 >= self.roof_ns)
    }
    /// Its rates are past its roofline (by more than 1 %: not rounding):
    /// its work, as the model counts it, could not have run in its time.
    pub fn past_roofline(&self) -> bool {
        self.peaked && self.roof_ns + self.past_roof_ns > 1.01 * self.ns
    }
}

/// The account over the measured steps.
#[derive(Debug, Default)]
pub struct Roofline {
    /// Per op name: every priced call of it, nested or not, with the
    /// kernels launched inside it.
    pub ops: HashMap<u32, Rates>,
    pub ops_by_phase: HashMap<(u16, u32), Rates>,
    /// Per op name, the formula inputs of its costliest call (interned).
    pub op_inputs: HashMap<u32, (u32, f64)>,
    /// Per kernel name: the share of its owning call's work (the outermost
    /// priced op above its launch), by the kernel's share of that call's time.
    pub kernels: HashMap<u32, Rates>,
    pub kernels_by_phase: HashMap<(u16, u32), Rates>,
    /// Per owning op name (outermost priced ops only: no double counting),
    /// and whether it is matrix work.
    pub owners: HashMap<u32, (Rates, bool)>,
    /// Matrix work (GEMM, convolution, attention) by the format its peak
    /// was taken for.
    pub matrix: Vec<(PeakClass, Rates)>,
    /// Kernel time in steps under no priced op, by the innermost CPU op
    /// above the launch (None: no CPU op or no launch in the trace).
    pub unmodelled: HashMap<Option<u32>, f64>,
    /// Kernel time of owning calls below [`LOW_EFFICIENCY`] of their roofline.
    pub low_ns: f64,
    pub modelled_ns: f64,
    /// The time of the arithmetic kernels (GEMM, convolution, attention)
    /// of the owning matrix calls: what `matrix` rests on.
    pub matrix_arith_ns: f64,
}

/// "Far from the roofline": below this share of it.
pub const LOW_EFFICIENCY: f64 = 0.30;

/// The peak format an op call's FLOPs are judged against: matrix work on
/// Tensor / Matrix Cores by its element type (fp32 there is TF32 on NVIDIA,
/// the fp32 matrix rate on AMD); everything else by the vector fp32 rate.
pub fn peak_class(dtype: Dtype, matrix: bool, tensor_core: bool, peaks: &Peaks) -> PeakClass {
    let want = match (dtype, matrix) {
        (Dtype::F64, _) => PeakClass::Fp64,
        (_, false) => PeakClass::Fp32,
        (Dtype::F32, true) if tensor_core => {
            if peaks.tflops(PeakClass::Fp32Matrix).is_some() {
                PeakClass::Fp32Matrix
            } else {
                PeakClass::Tf32
            }
        }
        (Dtype::Bf16, true) => PeakClass::Bf16,
        (Dtype::F16, true) => PeakClass::Fp16,
        (Dtype::Fp8, true) => PeakClass::Fp8,
        (Dtype::Int8 | Dtype::Uint8, true) => PeakClass::Int8,
        _ => PeakClass::Fp32,
    };
    if peaks.tflops(want).is_some() { want } else { PeakClass::Fp32 }
}

/// The ops that enclose an in-step launch of their thread, swept with the
/// launches (`launches`, by thread and time) as the log gives them: no
/// other op can own a kernel or name one's place, nor keep one that does
/// off the sweep's stack (it ends before the next launch). Each priced one
/// gets its call in the pass's order (its `call`).
///
/// A thread's ops are taken by start, the longest first on ties (the
/// parent before its child), then in the pass's order. The log gives them
/// so nearly always (Kineto writes a thread's ops by start; ties at the
/// clock's resolution come in either order and are put in place on the
/// stack), so only each thread's open ops are held. When a thread's ops
/// go back in time, the sweep starts over from each thread's ops sorted
/// (24 bytes an op until the sweep ends).
fn sweep_ops(
    a: &PassRecord,
    launches: &[(u32, i64, u32)],
    tensor_core: &dyn Fn(u32) -> bool,
) -> PricedCalls {
    let with = SweepInput { a, launches, tensor_core };
    match sweep_in_log_order(&with) {
        Some(given) => given,
        None => sweep_sorted(&with),
    }
}

/// What the sweep reads: the pass, its in-step launches by thread and
/// time, and whether a kernel (by name) ran on tensor cores.
struct SweepInput<'w> {
    a: &'w PassRecord,
    launches: &'w [(u32, i64, u32)],
    tensor_core: &'w dyn Fn(u32) -> bool,
}

/// What the sweep gives.
struct PricedCalls {
    /// Each priced call around a launch, in the pass's order.
    calls: Vec<Call>,
    /// By launch: its outermost priced call ([`NO_CALL`]: none).
    owner: Vec<u32>,
    /// The kernel time no priced call owns, by the innermost op around it.
    /// (Sums of whole nanoseconds: the same in any order.)
    unmodelled: HashMap<Option<u32>, f64>,
}

/// Each launching thread's place in the sweep, by thread id.
fn thread_sweeps(launches: &[(u32, i64, u32)]) -> HashMap<u32, ThreadSweep> {
    let mut threads: HashMap<u32, ThreadSweep> = HashMap::default();
    for (i, l) in launches.iter().enumerate() {
        let t = threads.entry(l.0).or_insert_with(|| ThreadSweep {
            first: i,
            end: i,
            hint: 0,
            next: i,
            stack: Vec::new(),
            last_start: i64::MIN,
        });
        t.end = i + 1;
    }
    threads
}

/// [`sweep_ops`] on the log's order; None when a thread's ops go back in
/// time.
fn sweep_in_log_order(with: &SweepInput<'_>) -> Option<PricedCalls> {
    let mut threads = thread_sweeps(with.launches);
    let mut given = PricedCalls::new(with.launches.len());
    let mut places = PlaceCache::default();
    for o in with.a.op_records() {
        let Some(t) = threads.get_mut(&o.thread) else { continue };
        let Some(op) = t.enclosing(with, &o, &mut places, &mut given.calls) else { continue };
        if !t.take(op, with, &mut given) {
            return None;
        }
    }
    for t in threads.values_mut() {
        t.give(i64::MAX, with, &mut given);
    }
    Some(given)
}

/// [`sweep_ops`] on each thread's ops sorted: all of them held at once.
fn sweep_sorted(with: &SweepInput<'_>) -> PricedCalls {
    let mut threads = thread_sweeps(with.launches);
    let mut given = PricedCalls::new(with.launches.len());
    let mut ops: HashMap<u32, Vec<RoofOp>> = HashMap::default();
    let mut places = PlaceCache::default();
    for o in with.a.op_records() {
        let Some(t) = threads.get_mut(&o.thread) else { continue };
        if let Some(op) = t.enclosing(with, &o, &mut places, &mut given.calls) {
            ops.entry(o.thread).or_default().push(op);
        }
    }
    for (thread, mut mine) in ops {
        let t = threads.get_mut(&thread).expect("a launching thread");
        // A stable sort: equal keys keep the pass's order.
        mine.sort_by_key(|o| (o.start, std::cmp::Reverse(o.dur)));
        for op in mine {
            let in_order = t.take(op, with, &mut given);
            debug_assert!(in_order, "sorted ops are in order");
        }
    }
    for t in threads.values_mut() {
        t.give(i64::MAX, with, &mut given);
    }
    given
}

impl PricedCalls {
    fn new(launches: usize) -> PricedCalls {
        PricedCalls {
            calls: Vec::new(),
            owner: vec![NO_CALL; launches],
            unmodelled: HashMap::default(),
        }
    }
}

/// The most ops from the same start an op is put under: real traces have
/// one or two; a hostile one with thousands is sorted instead (putting
/// each in place would take their square).
const MAX_TIE: usize = 32;

/// One launching thread in the sweep.
struct ThreadSweep {
    /// Its launches: `first..end` of the sweep's.
    first: usize,
    end: usize,
    /// Where its last op's search for a launch ended, among its launches
    /// (ops come in time order: the next search starts there).
    hint: usize,
    /// Its next launch to give its ops to.
    next: usize,
    /// The ops open at the sweep's time, outermost first.
    stack: Vec<RoofOp>,
    /// The start of the last op taken (ops must not go back before it).
    last_start: i64,
}

impl ThreadSweep {
    /// The op `o` as the sweep reads it when it encloses one of this
    /// thread's launches; its call, when priced, added to `calls`.
    fn enclosing(
        &mut self,
        with: &SweepInput<'_>,
        o: &super::cpulog::CpuRec,
        places: &mut PlaceCache,
        calls: &mut Vec<Call>,
    ) -> Option<RoofOp> {
        let mine = &with.launches[self.first..self.end];
        let i = partition_point_from(mine, self.hint, |l| l.1 < o.start);
        self.hint = i;
        if mine.get(i).is_none_or(|l| l.1 > o.start + o.dur) {
            return None;
        }
        let call = o.model().map_or(NO_CALL, |model| {
            let phase = with.a.ranges.cpu_phase_cached(places, o.thread, o.start);
            calls.push(Call { name: o.name, model, phase, ..Call::default() });
            calls.len() as u32 - 1
        });
        Some(RoofOp { name: o.name, start: o.start, dur: o.dur, call })
    }

    /// Takes this thread's next op; false when it starts before the last
    /// one taken, or would go under more than [`MAX_TIE`] ops from its
    /// start.
    fn take(&mut self, op: RoofOp, with: &SweepInput<'_>, given: &mut PricedCalls) -> bool {
        if op.start < self.last_start {
            return false;
        }
        self.last_start = op.start;
        // The launches before it see the stack without it.
        self.give(op.start, with, given);
        // On a tie the longer op goes first: under the shorter ones taken
        // at the same start (they would have been pushed after it, and
        // none of them can have been popped by it).
        let stack = &mut self.stack;
        let mut at = stack.len();
        while at > 0 && stack[at - 1].start == op.start && stack[at - 1].dur < op.dur {
            if stack.len() - at == MAX_TIE {
                return false;
            }
            at -= 1;
        }
        if at < stack.len() {
            stack.insert(at, op);
        } else {
            while stack.last().is_some_and(|top| top.start + top.dur <= op.start) {
                stack.pop();
            }
            stack.push(op);
            at = stack.len() - 1;
        }
        // A priced call under one of its own name (above it on the stack:
        // inside it) is counted once, as the outermost.
        let same = |o: &RoofOp| o.name == op.name && o.call != NO_CALL;
        if op.call != NO_CALL && stack[..at].iter().any(same) {
            given.calls[op.call as usize].nested = true;
        }
        for o in stack[at + 1..].iter().filter(|o| same(o)) {
            given.calls[o.call as usize].nested = true;
        }
        true
    }

    /// Gives this thread's launches before `until` the ops open around
    /// them: each priced call around a launch adds its kernel's time, the
    /// outermost owns it; without one, the innermost op is where the time
    /// goes unmodelled.
    fn give(&mut self, until: i64, with: &SweepInput<'_>, given: &mut PricedCalls) {
        while self.next < self.end && with.launches[self.next].1 < until {
            let (_, at, k) = with.launches[self.next];
            let stack = &mut self.stack;
            while stack.last().is_some_and(|top| top.start + top.dur < at) {
                stack.pop();
            }
            let span = &with.a.gpu.kernel_spans[k as usize];
            let dur = (span.end - span.start) as f64;
            let encloses = |o: &&RoofOp| o.start <= at && at <= o.start + o.dur;
            let mut outermost = None;
            for o in stack.iter().filter(encloses) {
                if o.call == NO_CALL {
                    continue;
                }
                let c = &mut given.calls[o.call as usize];
                c.ns += dur;
                c.tensor_core |= (with.tensor_core)(span.name);
                if c.queue == NO_QUEUE {
                    c.queue = span.queue;
                }
                outermost.get_or_insert(o.call);
            }
            match outermost {
                Some(call) => given.owner[self.next] = call,
                None => {
                    let inner = stack.iter().rev().find(encloses).map(|o| o.name);
                    *given.unmodelled.entry(inner).or_insert(0.0) += dur;
                }
            }
            self.next += 1;
        }
    }
}

/// An op the sweep reads (24 bytes; held while open, or all of a thread's
/// when its ops go back in time).
#[derive(Debug, Clone, Copy)]
struct RoofOp {
    start: i64,
    dur: i64,
    name: u32,
    /// Its index among the priced calls here; [`NO_CALL`] when the model
    /// did not price it.
    call: u32,
}

const NO_CALL: u32 = u32::MAX;

/// One priced call (24 bytes): what and where it is, and its kernels as
/// they are gathered.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Call {
    ns: f64,
    name: u32,
    /// Its entry in `OpPricing::works`.
    model: u32,
    /// The (device, stream) of its first kernel, by index in
    /// `GpuLog::queues`; [`NO_QUEUE`] before it has one.
    queue: u32,
    /// The phase its start is placed in.
    phase: u16,
    tensor_core: bool,
    /// Inside a priced call of the same name (`aten::div` calling
    /// `aten::div`): the `ops` table counts the outermost once, so its
    /// figures leave this one out.
    nested: bool,
}

const NO_QUEUE: u32 = u32::MAX;

impl Default for Call {
    fn default() -> Call {
        Call {
            ns: 0.0,
            name: 0,
            model: 0,
            queue: NO_QUEUE,
            phase: 0,
            tensor_core: false,
            nested: false,
        }
    }
}

/// Each in-step launch as (thread, start, kernel), sorted; and the time of
/// the in-step kernels no launch is known for.
fn in_step_launches(a: &PassRecord) -> (Vec<(u32, i64, u32)>, f64) {
    let mut launches: Vec<(u32, i64, u32)> = Vec::new();
    let mut unlaunched = 0.0;
    let mut places = PlaceCache::default();
    for (k, span) in a.gpu.kernel_spans.iter().enumerate() {
        match span.launch() {
            Some(l) if a.ranges.in_step_cached(&mut places, l.start) => {
                launches.push((l.thread, l.start, k as u32))
            }
            Some(_) => {}
            None if a.ranges.in_step_cached(&mut places, span.start) => {
                unlaunched += (span.end - span.start) as f64
            }
            None => {}
        }
    }
    launches.sort_unstable();
    (launches, unlaunched)
}

/// Runs the account. `tensor_core` answers for a kernel name id, and
/// `arithmetic` whether it is one that does a matrix op's arithmetic (a
/// GEMM, convolution or attention kernel, not a layout helper); `peaks`
/// for a device id.
pub fn account(
    a: &PassRecord,
    tensor_core: &dyn Fn(u32) -> bool,
    arithmetic: &dyn Fn(u32) -> bool,
    peaks: &dyn Fn(i64) -> Option<Peaks>,
) -> Option<Roofline> {
    if a.pricing.works.is_empty() {
        return None;
    }
    let (launches, unlaunched) = in_step_launches(a);
    let PricedCalls { calls, owner, mut unmodelled } = sweep_ops(a, &launches, tensor_core);
    let priced = calls.len();
    if unlaunched > 0.0 {
        *unmodelled.entry(None).or_insert(0.0) += unlaunched;
    }

    // Each device's peaks, looked up once; each queue's, borrowed from them
    // (a call's rates are worked out per kernel it owns: no copy there).
    let mut by_device: HashMap<i64, Option<Peaks>> = HashMap::default();
    for q in &a.gpu.queues {
        by_device.entry(q.0).or_insert_with(|| peaks(q.0));
    }
    let queue_peaks: Vec<Option<&Peaks>> =
        a.gpu.queues.iter().map(|q| by_device.get(&q.0).and_then(Option::as_ref)).collect();
    // A call's rates, the peak format its FLOPs were judged against (None
    // without the device's peaks), and its compute and memory times at the
    // roofline (ns).
    let rates_of = |w: &OpWork, c: &Call| -> (Rates, Option<PeakClass>, (f64, f64)) {
        let p = queue_peaks.get(c.queue as usize).copied().flatten();
        let mut r = Rates {
            flops: w.flops,
            bytes: w.bytes,
            ns: c.ns,
            calls: 1,
            peaked: p.is_some(),
            ..Rates::default()
        };
        let mut terms = (0.0, 0.0);
        let class = p.map(|p| {
            let cl = peak_class(w.dtype, w.matrix, c.tensor_core, p);
            let compute = p.tflops(cl).map_or(0.0, |t| w.flops / (t * 1e3));
            let memory = if p.mem_tbps > 0.0 { w.bytes / (p.mem_tbps * 1e3) } else { 0.0 };
            // A call that ran faster than its roofline moved part of its
            // data through the cache, which the byte count leaves out: it
            // is at its roofline, not beyond it (docs/analysis.md §13.2).
            r.roof_ns = compute.max(memory).min(c.ns);
            r.past_roof_ns = compute.max(memory) - r.roof_ns;
            r.compute_roof_ns = if compute >= memory { r.roof_ns } else { 0.0 };
            terms = (compute, memory);
            cl
        });
        (r, class, terms)
    };

    let mut out = Roofline { unmodelled, ..Roofline::default() };
    let mut matrix: HashMap<PeakClass, Rates> = HashMap::default();
    for c in &calls {
        if c.ns <= 0.0 || c.nested {
            continue; // launched nothing in the steps, or counted in its own
        }
        let w = &a.pricing.works[c.model as usize];
        let (r, _, _) = rates_of(w, c);
        out.ops.entry(c.name).or_default().add(&r);
        out.ops_by_phase.entry((c.phase, c.name)).or_default().add(&r);
        let best = out.op_inputs.entry(c.name).or_insert((w.inputs, 0.0));
        if c.ns > best.1 {
            *best = (w.inputs, c.ns);
        }
    }
    // The time of each owning call's kernels that do its arithmetic: a
    // matrix op's FLOPs are theirs alone, not its layout helpers'.
    let mut arith_ns: Vec<f64> = vec![0.0; priced];
    for (&(_, _, k), &call) in launches.iter().zip(&owner) {
        let span = &a.gpu.kernel_spans[k as usize];
        if let Some(ns) = arith_ns.get_mut(call as usize).filter(|_| arithmetic(span.name)) {
            *ns += (span.end - span.start) as f64;
        }
    }
    // Owners: each kernel's share of its outermost priced call (whose rates
    // are worked out again rather than kept: a trace has many).
    let mut owned: Vec<bool> = vec![false; priced];
    let mut places = PlaceCache::default();
    for (&(t, at, k), &call) in launches.iter().zip(&owner) {
        let Some(c) = calls.get(call as usize).filter(|c| c.ns > 0.0) else { continue };
        let phase = a.ranges.cpu_phase_cached(&mut places, t, at);
        let w = &a.pricing.works[c.model as usize];
        let (r, class, terms) = rates_of(w, c);
        let span = &a.gpu.kernel_spans[k as usize];
        let ns = (span.end - span.start) as f64;
        let part = kernel_part(&r, terms, ns, w.matrix.then_some(arith_ns[call as usize]), || {
            arithmetic(span.name)
        });
        out.kernels.entry(span.name).or_default().add(&part);
        out.kernels_by_phase.entry((phase, span.name)).or_default().add(&part);
        if !std::mem::replace(&mut owned[call as usize], true) {
            let is_matrix = a.pricing.works[c.model as usize].matrix;
            let owner = out.owners.entry(c.name).or_default();
            owner.0.add(&r);
            owner.1 |= is_matrix;
            out.modelled_ns += r.ns;
            if r.pct_of_peak().is_some_and(|p| p < LOW_EFFICIENCY * 100.0) {
                out.low_ns += r.ns;
            }
            if let (true, Some(class)) = (is_matrix, class) {
                matrix.entry(class).or_default().add(&r);
                out.matrix_arith_ns += arith_ns[call as usize];
            }
        }
    }
    let mut matrix: Vec<(PeakClass, Rates)> = matrix.into_iter().collect();
    matrix.sort_by(|x, y| y.1.ns.total_cmp(&x.1.ns));
    out.matrix = matrix;
    Some(out)
}

/// One kernel's part of its owning call `r` (with its roofline's compute
/// and memory `terms`): its time, the call's bytes by its share of the
/// call's time, and the FLOPs by its share of the call's arithmetic time
/// when the call is a matrix op with kernels that do it (`arith_ns`): a
/// transpose beside a GEMM moves bytes and does none of its FLOPs. Its
/// roofline is its own FLOPs' and bytes' (docs/analysis.md §13.2).
fn kernel_part(
    r: &Rates,
    terms: (f64, f64),
    ns: f64,
    arith_ns: Option<f64>,
    is_arithmetic: impl FnOnce() -> bool,
) -> Rates {
    let share = ns / r.ns;
    let flop_share = match arith_ns.filter(|t| *t > 0.0) {
        Some(t) if is_arithmetic() => ns / t,
        Some(_) => 0.0,
        None => share,
    };
    let (compute, memory) = (terms.0 * flop_share, terms.1 * share);
    // (Both 0 without peaks.) At most its own time, as a call's.
    let roof_ns = compute.max(memory).min(ns);
    Rates {
        flops: r.flops * flop_share,
        bytes: r.bytes * share,
        ns,
        roof_ns,
        past_roof_ns: compute.max(memory) - roof_ns,
        compute_roof_ns: if compute >= memory { roof_ns } else { 0.0 },
        ..*r
    }
}

// --- into the profile.

const MS: f64 = 1e6; // ns per ms

/// A row's figures per step from its rates (None: nothing priced), at full
/// precision: `--json` and the tables keep it, the text rounds (a small
/// op's 0.00016 GFLOP is not 0 beside its TFLOP/s).
pub fn achieved(r: Option<&Rates>, n_steps: f64) -> Achieved {
    let Some(r) = r.filter(|r| r.ns > 0.0) else { return Achieved::default() };
    Achieved {
        modelled_ms_per_step: Some(r.ns / MS / n_steps),
        gflop_per_step: Some(r.flops / 1e9 / n_steps),
        gb_per_step: Some(r.bytes / 1e9 / n_steps),
        tflops: Some(r.tflops()),
        tbps: Some(r.tbps()),
        pct_of_peak: r.pct_of_peak(),
        lost_ms_per_step: r.lost_ns().map(|l| l / MS / n_steps),
        roofline_bound: r
            .compute_bound()
            .map(|c| if c { RooflineBound::Compute } else { RooflineBound::Memory }),
        past_roofline: r.past_roofline().then_some(true),
    }
}

/// Said when no CPU op of the trace carries shapes.
pub const NO_SHAPES: &str =
    "no shapes recorded (record_shapes=False): FLOPs, bytes and rates need the ops' input shapes";

/// Owning ops listed as the least efficient (by time lost).
const LEAST_EFFICIENT: usize = 5;

/// The profile's efficiency account: the device's peaks, the matrix work's
/// share of its peak, the kernel categories, what the model could not price.
pub fn efficiency(
    a: &PassRecord,
    roof: Option<&Roofline>,
    category: &dyn Fn(u32) -> Category,
    device: Option<(&DeviceProps, Option<Peaks>)>,
    n_steps: f64,
    kernel_ns: i64,
) -> Efficiency {
    let mut e = Efficiency {
        priced_calls: a.pricing.counts.priced,
        unpriced_calls: a.pricing.counts.no_shapes,
        ..Efficiency::default()
    };
    if a.pricing.counts.with_shapes == 0 {
        e.notes.push(NO_SHAPES.to_string());
    }
    if let Some(problem) = crate::hardware::user_file_problem() {
        e.notes.push(format!("the user's device table is ignored: {problem}"));
    }
    match &device {
        Some((_, Some(p))) => {
            e.device = Some(p.name.clone());
            e.peak_tflops = p.tflops.iter().map(|(c, v)| (c.as_str().to_string(), *v)).collect();
            e.peak_tbps = Some(p.mem_tbps);
            e.peak_source = Some(p.source.clone());
        }
        Some((props, None)) => {
            let name = props.name.trim();
            let name = if name.is_empty() { "the trace's device (unnamed)" } else { name };
            e.notes.push(format!("{name} is not in the device peak table, so no % of peak (docs/analysis.md §13.3 says how to add it)"));
        }
        None => e
            .notes
            .push("the trace names no device (deviceProperties), so no % of peak".to_string()),
    }
    let Some(roof) = roof else { return e };
    let share =
        |ns: f64| if kernel_ns > 0 { round_share(ns / kernel_ns as f64 * 100.0, 1) } else { 0.0 };
    e.modelled_pct_of_gpu = share(roof.modelled_ns);
    let matrix = roof.matrix.iter().fold(Rates::default(), |mut acc, (_, r)| {
        acc.add(r);
        acc
    });
    if let Some((_, Some(p))) = &device {
        if let Some((class, _)) = roof.matrix.first() {
            // All GEMM/conv/attention kernel time, priced or not: how much
            // of it the headline rests on.
            let matrix_kernel_ns: i64 = a
                .gpu_tables
                .kernels
                .iter()
                .filter(|(n, _)| matches!(category(**n), Category::GemmConv | Category::Attention))
                .map(|(_, k)| k.ns)
                .sum();
            let peak_tflops = p.tflops(*class).unwrap_or(0.0);
            e.matrix = matrix.pct_of_peak().map(|pct| MatrixEfficiency {
                format: *class,
                peak_tflops,
                tflops: matrix.tflops(),
                pct_of_peak: if peak_tflops > 0.0 {
                    matrix.tflops() / peak_tflops * 100.0
                } else {
                    0.0
                },
                pct_of_roofline: pct,
                ms_per_step: matrix.ns / MS / n_steps,
                pct_of_matrix_time: if matrix_kernel_ns > 0 {
                    roof.matrix_arith_ns / matrix_kernel_ns as f64 * 100.0
                } else {
                    0.0
                },
            });
        }
        e.below_30_pct_of_gpu = Some(share(roof.low_ns));
    }
    let mut by_cat: indexmap::IndexMap<Category, Rates> = indexmap::IndexMap::new();
    let mut kernels: Vec<(&u32, &Rates)> = roof.kernels.iter().collect();
    kernels.sort_by_key(|(n, _)| **n);
    for (name, r) in kernels {
        by_cat.entry(category(*name)).or_default().add(r);
    }
    let mut cats: Vec<CategoryEfficiency> = by_cat
        .iter()
        .map(|(c, r)| CategoryEfficiency {
            category: c.clone(),
            achieved: achieved(Some(r), n_steps),
        })
        .collect();
    cats.sort_by(|x, y| {
        y.achieved
            .modelled_ms_per_step
            .unwrap_or(0.0)
            .total_cmp(&x.achieved.modelled_ms_per_step.unwrap_or(0.0))
            .then(x.category.cmp(&y.category))
    });
    e.unpriced_by_category = unpriced_by_category(&a.gpu_tables, roof, category, n_steps);
    e.categories = cats;
    let mut owners: Vec<(&u32, &(Rates, bool))> =
        roof.owners.iter().filter(|(_, (r, _))| r.lost_ns().is_some()).collect();
    owners.sort_by(|x, y| {
        y.1.0.lost_ns().unwrap_or(0.0).total_cmp(&x.1.0.lost_ns().unwrap_or(0.0)).then(x.0.cmp(y.0))
    });
    e.least_efficient = owners
        .iter()
        .take(LEAST_EFFICIENT)
        .map(|(n, (r, matrix))| OpEfficiency {
            op: a.names.get(**n).to_string(),
            matrix: *matrix,
            pct_of_gpu: share(r.ns),
            achieved: achieved(Some(r), n_steps),
            shape: roof.op_inputs.get(*n).map(|(inputs, _)| a.names.get(*inputs).to_string()),
        })
        .collect();
    let mut unmodelled: Vec<(&Option<u32>, &f64)> = roof.unmodelled.iter().collect();
    unmodelled.sort_by(|x, y| y.1.total_cmp(x.1).then(x.0.cmp(y.0)));
    e.unmodelled = unmodelled
        .iter()
        .take(UNMODELLED_SHOWN)
        .map(|(op, ns)| UnmodelledRow {
            op: op.map(|n| a.names.get(n).to_string()),
            ms_per_step: round(**ns / MS / n_steps, 4),
        })
        .collect();
    e
}

/// Unpriced ops listed, largest first.
const UNMODELLED_SHOWN: usize = 8;

/// Each category's kernel time (`a.kernels`) that no priced op accounts
/// for (`roof.kernels` holds the priced part), communication left out.
fn unpriced_by_category(
    tables: &GpuTables,
    roof: &Roofline,
    category: &dyn Fn(u32) -> Category,
    n_steps: f64,
) -> Vec<UnpricedCategory> {
    let mut by: indexmap::IndexMap<Category, (f64, f64)> = indexmap::IndexMap::new();
    let mut names: Vec<&u32> = tables.kernels.keys().collect();
    names.sort_unstable();
    for name in names {
        let c = category(*name);
        if c == Category::Communication {
            continue;
        }
        let total = tables.kernels[name].ns as f64;
        let priced = roof.kernels.get(name).map_or(0.0, |r| r.ns);
        let e = by.entry(c).or_default();
        e.0 += total;
        e.1 += (total - priced).max(0.0);
    }
    let mut out: Vec<UnpricedCategory> = by
        .into_iter()
        .filter(|(_, (total, unpriced))| *total > 0.0 && *unpriced > 0.0)
        .map(|(category, (total, unpriced))| UnpricedCategory {
            category,
            ms_per_step: round(unpriced / MS / n_steps, 4),
            pct_of_category: round_share(unpriced / total * 100.0, 1),
        })
        .filter(|u| u.ms_per_step > 0.0)
        .collect();
    out.sort_by(|x, y| y.ms_per_step.total_cmp(&x.ms_per_step).then(x.category.cmp(&y.category)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analyzer;
    use crate::trace;

    /// The pass over `events` (a JSON array), with its ranges final.
    fn pass(events: &str) -> PassRecord {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        std::fs::write(&path, events).unwrap();
        let src = trace::Source::path(&path).unwrap();
        let mut a = Analyzer::default();
        trace::read_source(&src, &mut a, &Default::default()).unwrap();
        a.place_leftovers_by_time();
        a.rec.ranges.freeze();
        a.rec
    }

    /// A step; `aten::linear` around `aten::mm` from the same microsecond
    /// (written in `ops`' order); `my_op` (not priced) later; a launch
    /// inside both GEMMs, one inside the linear only, one inside `my_op`.
    fn trace(ops: &[&str]) -> String {
        let dims = |d: &str, n: usize| {
            format!(
                r#""args": {{"Input Dims": {d}, "Input type": [{}]}}"#,
                vec![r#""float""#; n].join(", ")
            )
        };
        let linear = format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 10, "dur": 30, {}}}"#,
            dims("[[64, 32], [16, 32], [16]]", 3)
        );
        let mm = format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 10, {}}}"#,
            dims("[[64, 32], [32, 16]]", 2)
        );
        let mine = r#"{"ph": "X", "cat": "cpu_op", "name": "my_op", "pid": 1, "tid": 1, "ts": 50, "dur": 20}"#;
        let op = |n: &str| match n {
            "linear" => linear.clone(),
            "mm" => mm.clone(),
            _ => mine.to_string(),
        };
        let launch = |ts: u32, corr: u32| {
            format!(
                r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {ts}, "dur": 2, "args": {{"correlation": {corr}}}}}"#
            )
        };
        let kernel = |ts: u32, dur: u32, corr: u32| {
            format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "k{corr}", "pid": 0, "tid": 7, "ts": {ts}, "dur": {dur}, "args": {{"correlation": {corr}, "device": 0, "stream": 7}}}}"#
            )
        };
        let mut events = vec![
            r#"{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}"#.to_string(),
        ];
        events.extend(ops.iter().map(|n| op(n)));
        events.extend([launch(12, 1), launch(35, 2), launch(55, 3)]);
        events.extend([kernel(100, 50, 1), kernel(200, 20, 2), kernel(300, 10, 3)]);
        format!("[{}]", events.join(",\n"))
    }

    /// Each launch's owner as the op's name with the call's kernel time,
    /// and the time not owned by the op around it.
    fn owners(a: &PassRecord, given: &PricedCalls) -> (Vec<String>, Vec<String>) {
        let owned = given
            .owner
            .iter()
            .map(|&c| match given.calls.get(c as usize) {
                Some(c) => format!("{} ({} ns)", a.names.get(c.name), c.ns),
                None => "none".to_string(),
            })
            .collect();
        let mut unowned: Vec<String> = given
            .unmodelled
            .iter()
            .map(|(n, ns)| format!("{} ({ns} ns)", n.map_or("-", |n| a.names.get(n))))
            .collect();
        unowned.sort();
        (owned, unowned)
    }

    /// Thousands of ops from one start, each longer than the last: put in
    /// place one by one they would take their square; they are sorted
    /// instead, and the innermost still names the launch's place.
    #[test]
    fn a_pile_of_ops_from_one_start_is_sorted_instead() {
        let op = |dur: usize| {
            format!(
                r#"{{"ph": "X", "cat": "cpu_op", "name": "op{dur}", "pid": 1, "tid": 1, "ts": 10, "dur": {dur}}}"#
            )
        };
        let mut events = vec![
            r#"{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 10000}"#.to_string(),
        ];
        events.extend((1..=2000).map(op));
        events.push(r#"{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 1, "args": {"correlation": 1}}"#.to_string());
        events.push(r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"correlation": 1}}"#.to_string());
        let a = pass(&format!("[{}]", events.join(",\n")));
        let (launches, _) = in_step_launches(&a);
        let with = SweepInput { a: &a, launches: &launches, tensor_core: &|_| false };
        assert!(sweep_in_log_order(&with).is_none());
        let given = sweep_ops(&a, &launches, &|_| false);
        assert_eq!(
            owners(&a, &given),
            (vec!["none".to_string()], vec!["op1 (5000 ns)".to_string()])
        );
    }

    /// Ops as the log gives them, the child written before its parent at
    /// the same microsecond, or going back in time: the sweep on the log's
    /// order gives what the sweep on sorted ops gives, worked out by hand.
    #[test]
    fn ops_in_any_order_own_the_same_kernels() {
        let owned = ["aten::linear (70000 ns)", "aten::linear (70000 ns)", "none"];
        let want = (owned.map(String::from).to_vec(), vec!["my_op (10000 ns)".to_string()]);
        for (ops, streamed) in [
            (&["linear", "mm", "mine"][..], true),
            (&["mm", "linear", "mine"][..], true),
            (&["mine", "linear", "mm"][..], false),
        ] {
            let a = pass(&trace(ops));
            let (launches, unlaunched) = in_step_launches(&a);
            assert_eq!((launches.len(), unlaunched), (3, 0.0), "{ops:?}");
            let with = SweepInput { a: &a, launches: &launches, tensor_core: &|_| false };
            let sorted = sweep_sorted(&with);
            assert_eq!(owners(&a, &sorted), want, "{ops:?}");
            // The mm's call has its one kernel (50 us).
            let mm = sorted.calls.iter().find(|c| a.names.get(c.name) == "aten::mm").unwrap();
            assert_eq!(mm.ns, 50_000.0);
            match sweep_in_log_order(&with) {
                Some(given) => {
                    assert!(streamed, "{ops:?} go back in time");
                    assert_eq!(owners(&a, &given), want, "{ops:?}");
                    assert_eq!(given.owner, sorted.owner, "{ops:?}");
                    assert_eq!(given.calls, sorted.calls, "{ops:?}");
                }
                None => assert!(!streamed, "{ops:?} are in order"),
            }
        }
    }
}
