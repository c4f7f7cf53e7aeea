//! The step model on small windows whose answer follows by hand, and on
//! random ones: with no change the trace's times come back.

use proptest::prelude::*;

use super::host::{HostCause, HostCauses};
use super::*;

const US: i64 = 1_000;
const GEMM: u8 = 2;
const ELT: u8 = 5;
const NORM: u8 = 3;
const SOFTMAX: u8 = 6;

/// A kernel on `stream` of device 0, launched by thread 1 at `launch`
/// (a 5 µs call).
fn kernel(stream: i64, class: u8, start: i64, dur: i64, launch: i64) -> GpuWork {
    GpuWork {
        start: start * US,
        end: (start + dur) * US,
        device: 0,
        stream,
        class,
        name: u32::from(class),
        launch: Some((1, launch * US, (launch + 5) * US)),
        op: NONE,
    }
}

fn model(gpu: Vec<GpuWork>, syncs: Vec<SyncCall>, step: (i64, i64), host: HostCauses) -> StepModel {
    build(gpu, syncs, step, host, Recorded::default())
}

fn recorded_model(
    gpu: Vec<GpuWork>,
    syncs: Vec<SyncCall>,
    step: (i64, i64),
    recorded: Recorded,
) -> StepModel {
    build(gpu, syncs, step, HostCauses::default(), recorded)
}

/// A window; device 0 records its waits where `recorded` has any. Where
/// the GPU works past the step's end, thread 1 waits for it there (a
/// `cudaDeviceSynchronize` returning as the last work ends), and the step
/// ends as it returns: GPU work after the step's end is no step's
/// ([`StepModel::saved_by`]), so a GPU-bound step is one the host waits in.
fn build(
    gpu: Vec<GpuWork>,
    mut syncs: Vec<SyncCall>,
    step: (i64, i64),
    host: HostCauses,
    mut recorded: Recorded,
) -> StepModel {
    let mut steps = vec![(step.0 * US, step.1 * US)];
    let last = gpu.iter().map(|g| g.end).max().unwrap_or(0);
    if last > steps[0].1 {
        syncs.push((1, steps[0].1, last));
        steps[0].1 = last;
    }
    let names = (0..8).map(|c| format!("kernel{c}")).collect();
    if !recorded.waits.is_empty() || !recorded.sync_on.is_empty() {
        recorded.devices = vec![0];
    }
    let (loop_thread, ops) = (Some(1), None);
    StepModel::build(Inputs { gpu, syncs, steps, loop_thread, host, names, ops, recorded }).unwrap()
}

/// Stream `stream` waits (the call at `wait_at` µs) for the event recorded
/// on `on_stream` at `record_at` µs.
fn wait(stream: i64, wait_at: i64, on_stream: i64, record_at: i64) -> StreamWait {
    StreamWait { device: 0, stream, wait_at: wait_at * US, on_stream, record_at: record_at * US }
}

fn saved_us(m: &StepModel, change: &Change) -> i64 {
    m.saving(change) / US
}

fn without(class: u8) -> Change {
    let mut c = Change::default();
    c.class_factor[usize::from(class)] = 0.0;
    c
}

/// No host time of `cause`.
fn without_host(cause: HostCause) -> Change {
    let mut c = Change::default();
    c.host_removed[cause as usize] = 1.0;
    c
}

/// Three 1 ms GEMMs on stream 7 from 100 µs on, launched in the first
/// 30 µs: the GPU busy to 3.1 ms.
fn three_gemms() -> Vec<GpuWork> {
    (0..3).map(|k| kernel(7, GEMM, 100 + k * 1000, 1000, 5 + k * 10)).collect()
}

/// `n` 5 µs GEMMs on stream 7 launched by thread 2 (the autograd
/// engine's, say) every `every` µs from `from` µs on, each 10 µs after its
/// launch.
fn launched_by_thread_2(n: i64, from: i64, every: i64) -> Vec<GpuWork> {
    (0..n)
        .map(|k| {
            let at = from + k * every;
            let mut g = kernel(7, GEMM, at + 10, 5, at);
            g.launch = Some((2, at * US, (at + 5) * US));
            g
        })
        .collect()
}

/// The replay with no change gives every node its own times, and the
/// critical path's parts sum to the span.
fn check_null(m: &StepModel) {
    let r = m.replay(&Change::default());
    for (i, n) in m.nodes.iter().enumerate() {
        assert_eq!((r.start[i], r.end[i]), (n.start, n.end), "node {i}: {n:?}");
    }
    let path = m.critical_path();
    assert_eq!(path.parts.iter().map(|p| p.1).sum::<i64>(), path.span, "{:?}", path.parts);
    assert_eq!(m.saving(&Change::default()), 0);
}

/// GPU-bound: three kernels back to back, launched well ahead. Removing
/// one saves its time; running it twice as fast, half.
#[test]
fn a_gpu_bound_stretch_saves_the_kernels_removed() {
    let gpu = vec![
        kernel(7, GEMM, 20, 1000, 0),
        kernel(7, ELT, 1020, 1000, 10),
        kernel(7, GEMM, 2020, 1000, 20),
    ];
    let m = model(gpu, vec![], (0, 100), HostCauses::default());
    check_null(&m);
    assert_eq!(saved_us(&m, &without(ELT)), 1000);
    // Both GEMMs gone, the ELT kernel waits for its launch as launches
    // usually wait (20 µs here): 1990, not 2000.
    assert_eq!(saved_us(&m, &without(GEMM)), 1990);
    let mut half = Change::default();
    half.class_factor[usize::from(ELT)] = 0.5;
    assert_eq!(saved_us(&m, &half), 500);
    let path = m.critical_path();
    assert_eq!(path.parts[0], (PathPart::Gpu(GEMM), 2000 * US));
    assert_eq!(path.span, 3020 * US);
    // The host's own time is not on the path: removing it saves nothing
    // but the 20 µs before the first kernel.
    let fast_host = Change { launch_factor: 0.0, ..Change::default() };
    assert!(saved_us(&m, &fast_host) <= 20);
}

/// Inputs of one window as the trace gives it, without [`build`]'s wait
/// at the end: `loop_thread` marks the steps where it is given.
fn window(gpu: Vec<GpuWork>, step: (i64, i64), host: HostCauses, marked: bool) -> StepModel {
    let names = (0..8).map(|c| format!("kernel{c}")).collect();
    StepModel::build(Inputs {
        gpu,
        syncs: vec![],
        steps: vec![(step.0 * US, step.1 * US)],
        loop_thread: marked.then_some(1),
        host,
        names,
        ops: None,
        recorded: Recorded::default(),
    })
    .unwrap()
}

/// An asynchronous inference step: the host launches three 900 µs GEMMs
/// in its first 35 µs and ends its 1 ms step while the GPU runs on until
/// 2.8 ms. That tail is no step's: taking the GEMMs away saves nothing
/// of the step (it once "saved" 1.8 ms of the 1 ms step), and no change
/// saves more than the step.
#[test]
fn gpu_work_after_the_last_step_is_no_step_s_saving() {
    let gpu: Vec<GpuWork> =
        (0..3).map(|k| kernel(7, GEMM, 100 + k * 900, 900, 5 + k * 10)).collect();
    let host = HostCauses::of(std::iter::once((1, 0, 40 * US, HostCause::CpuOp)), true);
    let m = window(gpu, (0, 1000), host, true);
    check_null(&m);
    assert_eq!(m.end(), 2800 * US);
    assert_eq!(saved_us(&m, &without(GEMM)), 0);
    let mut all = Change { launch_factor: 0.0, sync_waits: false, ..Change::default() };
    all.host_removed = [1.0; 5];
    all.class_factor = [0.0; CLASSES];
    assert!(saved_us(&m, &all) <= 1000, "{}", saved_us(&m, &all));
}

/// A window without step markers is the span of its events: here the
/// host's work ends at 60 µs and the GPU's at 3.1 ms. Its end is the
/// GPU's, so taking the GEMMs away saves their time (it once saved
/// nothing: the window's end was held as the host's own time).
#[test]
fn a_window_without_markers_ends_with_its_last_work() {
    let gpu = three_gemms();
    let host = HostCauses::of(std::iter::once((1, 0, 60 * US, HostCause::CpuOp)), true);
    let m = window(gpu, (0, 3100), host, false);
    check_null(&m);
    // Without the GEMMs the window ends with the last (now empty) kernel,
    // after its launch (25 µs) and the latency the trace shows (75 µs),
    // or with the host's work at 60 µs.
    assert_eq!(saved_us(&m, &without(GEMM)), 3100 - 120);
    assert_eq!(m.critical_path().parts[0], (PathPart::Gpu(GEMM), 3000 * US));
}

/// Without markers, a thread that launches nothing may end the window: a
/// 2 ms op on thread 2 after the GPU's last kernel. It holds the window
/// (the GEMMs taken away save nothing; its op taken away saves down to the
/// GPU's end), and the time before its first record is no host cause.
/// (Its op once went unmodelled: every change, none included, "saved"
/// its 1.9 ms.)
#[test]
fn a_thread_that_ends_a_window_without_markers_holds_it() {
    let gpu = three_gemms();
    let recs = [(1, 0, 60 * US, HostCause::CpuOp), (2, 3000 * US, 5000 * US, HostCause::CpuOp)];
    let m = window(gpu, (0, 5000), HostCauses::of(recs.into_iter(), true), false);
    check_null(&m);
    assert_eq!(saved_us(&m, &without(GEMM)), 0);
    let no_ops = without_host(HostCause::CpuOp);
    assert_eq!(saved_us(&m, &no_ops), 5000 - 3100);
    let path = m.critical_path();
    assert!(path.parts.contains(&(PathPart::Host(HostCause::Other), 3000 * US)), "{path:?}");
    // Thread 2 launches nothing: the profile says it holds the window,
    // 1.9 ms past the GPU's last work.
    assert_eq!(m.held_by_idle_thread(), Some(1900 * US));
}

/// The same window, thread 2's op running from the start (0–4 ms): it
/// took up its work before thread 1 stopped (60 µs in), so it waited for
/// nothing; its op taken away, the window ends with the GPU's work at
/// 3.1 ms. (Work taken up 60 µs before the other stopped once counted as
/// "resumed as it stopped": a wait on thread 1 held the window, and the
/// op taken away saved nothing.)
#[test]
fn work_taken_up_before_another_thread_stops_waits_for_nothing() {
    let gpu = three_gemms();
    let recs = [(1, 0, 60 * US, HostCause::CpuOp), (2, 0, 4000 * US, HostCause::CpuOp)];
    let m = window(gpu, (0, 4000), HostCauses::of(recs.into_iter(), true), false);
    check_null(&m);
    assert_eq!(m.thread_waits, 0);
    let no_ops = without_host(HostCause::CpuOp);
    assert_eq!(saved_us(&m, &no_ops), 4000 - 3100);
}

/// Host-bound: a kernel every millisecond, 10 µs each, Python between
/// the launches. Removing the kernels saves nothing; removing the Python
/// saves the gaps.
#[test]
fn a_host_bound_stretch_saves_nothing_when_kernels_go() {
    let gpu: Vec<GpuWork> = (0..3).map(|k| kernel(7, ELT, k * 1000 + 8, 10, k * 1000)).collect();
    let host = HostCauses::of(std::iter::once((1, 0, 3000 * US, HostCause::Python)), true);
    let m = model(gpu, vec![], (0, 3000), host);
    check_null(&m);
    assert_eq!(saved_us(&m, &without(ELT)), 0);
    let no_python = without_host(HostCause::Python);
    // The three gaps of 995 µs go: the step ends 38 µs in (the kernels,
    // each after its launch and the one before it) instead of at 3000.
    assert_eq!(saved_us(&m, &no_python), 3000 - 38);
    let path = m.critical_path();
    assert_eq!(path.parts[0].0, PathPart::Host(HostCause::Python));
}

/// A sync that waits for a long kernel returns when it ends: without the
/// kernel it returns at once, and the host's next launch comes earlier.
#[test]
fn a_sync_that_waits_on_a_removed_kernel_returns_earlier() {
    let gpu = vec![
        kernel(7, GEMM, 10, 5000, 0),
        // Launched after the sync returned.
        kernel(7, ELT, 5035, 100, 5030),
    ];
    let syncs = vec![(1, 100 * US, 5020 * US)];
    let m = model(gpu, syncs, (0, 5200), HostCauses::default());
    check_null(&m);
    let sync = m.nodes.iter().position(|n| n.kind == NodeKind::Sync).unwrap();
    assert_eq!(m.nodes[sync].bind, Bind::Wait);
    // The sync's own part is the usual short one (none measured: 5 µs);
    // everything after it moves 4.9 ms earlier, bar the step's end marker
    // which follows the host.
    let saved = saved_us(&m, &without(GEMM));
    assert!((4800..=5000).contains(&saved), "saved {saved} µs");
    // A sync that does not wait lets the host run ahead, but the GPU
    // still does its work: the step then ends with the GPU's, 90 µs
    // before the host's end marker did.
    let no_wait = Change { sync_waits: false, ..Change::default() };
    assert_eq!(saved_us(&m, &no_wait), 5200 - 5110);
}

/// Two streams side by side: removing one saves nothing while the other
/// still runs; removing both saves the overlap.
#[test]
fn two_overlapped_streams_hide_each_other() {
    let gpu = vec![kernel(7, GEMM, 10, 1000, 0), kernel(8, ELT, 15, 1000, 5)];
    let m = model(gpu, vec![], (0, 50), HostCauses::default());
    check_null(&m);
    assert!(saved_us(&m, &without(GEMM)) <= 5);
    assert_eq!(saved_us(&m, &without(ELT)), 5);
    let mut both = without(GEMM);
    both.class_factor[usize::from(ELT)] = 0.0;
    // The host's wait at the step's end (from 50 µs) keeps its own 5 µs.
    assert_eq!(saved_us(&m, &both), 1015 - 55);
}

/// A kernel that starts long after its launch and its stream, when work
/// on another stream ends: it waited for that work (inferred).
#[test]
fn a_wait_on_another_stream_is_inferred_and_replayed() {
    let gpu = vec![kernel(7, GEMM, 10, 2000, 0), kernel(8, ELT, 2012, 100, 5)];
    let m = model(gpu, vec![], (0, 50), HostCauses::default());
    check_null(&m);
    assert_eq!(m.inferred_waits, 1);
    // Without the GEMM the waiting kernel starts when its launch lets it
    // (5 µs + the usual 10), ending at 115 µs.
    assert_eq!(saved_us(&m, &without(GEMM)), 2112 - 115);
    // Without the wait it runs beside the GEMM, which then ends the step.
    let free = Change { dependencies: false, ..Change::default() };
    assert_eq!(saved_us(&m, &free), 2112 - 2010);
    assert!(m.critical_path().parts.iter().any(|p| p.0 == PathPart::Dependency));
}

/// A random window: one or two host threads launching kernels on two
/// streams, with syncs and recorded waits between the streams, each
/// kernel after its launch, its stream and what it waits for.
fn random_window() -> impl Strategy<Value = Inputs> {
    let calls = prop::collection::vec(
        (
            (0u32..2, 1i64..400, 1i64..50, 0i64..300),
            (1i64..900, 0i64..2, 0u8..8, any::<bool>(), any::<bool>()),
        ),
        1..40,
    );
    calls.prop_map(|calls| {
        let mut host_at = [0i64; 2];
        let mut stream_free = [0i64; 2];
        let mut gpu = Vec::new();
        let mut syncs = Vec::new();
        let mut recorded = Recorded::default();
        for ((thread, gap, call, delay), (dur, stream, class, sync, waits)) in calls {
            let t = thread as usize;
            let s = host_at[t] + gap * US;
            let e = s + call * US;
            host_at[t] = e;
            let st = stream as usize;
            let mut start = (s + delay * US).max(stream_free[st]);
            // Just before the launch, an event recorded on the other
            // stream and this one made to wait for it (as recorded).
            if waits {
                let other = 1 - stream;
                let (record_at, wait_at) = (s - 2, s - 1);
                recorded.waits.push(StreamWait {
                    device: 0,
                    stream,
                    wait_at,
                    on_stream: other,
                    record_at,
                });
                recorded.devices = vec![0];
                start = start.max(stream_free[other as usize]);
            }
            stream_free[st] = start + dur * US;
            gpu.push(GpuWork {
                start,
                end: start + dur * US,
                device: 0,
                stream,
                class,
                name: 0,
                launch: Some((thread, s, e)),
                op: NONE,
            });
            if sync {
                let until = stream_free[st].max(host_at[t]) + 3 * US;
                syncs.push((thread, host_at[t] + US, until));
                host_at[t] = until;
            }
        }
        let end = host_at.iter().max().copied().unwrap_or(0) + US;
        Inputs {
            gpu,
            syncs,
            steps: vec![(0, end)],
            loop_thread: Some(0),
            host: HostCauses::default(),
            names: vec!["k".into()],
            ops: None,
            recorded,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Re-timing with no change reproduces the trace's own times; any
    /// removal saves no more than the work it takes away, and removing a
    /// class never saves less than halving it.
    #[test]
    fn no_change_reproduces_the_trace(inputs in random_window(), class in 0u8..8) {
        let m = StepModel::build(inputs).unwrap();
        check_null(&m);
        let gone = without(class);
        let mut half = Change::default();
        half.class_factor[usize::from(class)] = 0.5;
        let removed: i64 = m.nodes.iter().filter(|n| n.kind == NodeKind::Gpu && n.class == class).map(Node::dur).sum();
        let (s_gone, s_half) = (m.saving(&gone), m.saving(&half));
        prop_assert!(s_gone <= removed, "saved {s_gone} > removed {removed}");
        prop_assert!(s_gone >= s_half, "removing saved {s_gone} < halving {s_half}");
    }
}

/// The loop thread sits in `backward()` (no records) while another thread
/// launches and runs ops, and goes on as that thread stops: it waited for
/// it. Shortening the other thread's work moves the loop thread on; its own
/// "Python" gap was waiting, not work, and removing Python saves only its
/// real Python after.
#[test]
fn a_thread_that_waits_for_another_follows_it() {
    let mut gpu = vec![kernel(7, ELT, 10, 5, 0)];
    gpu.extend(launched_by_thread_2(13, 100, 400));
    gpu.push(kernel(7, ELT, 5010, 5, 5000));
    let recs = vec![(2, 100 * US, 4990 * US, HostCause::CpuOp)];
    let host = HostCauses::of(recs.into_iter(), true);
    let m = model(gpu, vec![], (0, 6000), host);
    check_null(&m);
    // The loop thread waits for thread 2, whose first call, 100 µs in
    // after sitting idle, went on from the loop thread's launch before.
    assert_eq!(m.thread_waits, 2);
    assert!(m.critical_path().parts.iter().any(|p| p.0 == PathPart::ThreadWait));
    let no_ops = without_host(HostCause::CpuOp);
    // Thread 2's calls come back to back (100 … 165 µs), the loop thread
    // 95 µs after its last, and the step's end 995 µs after that.
    assert_eq!(saved_us(&m, &no_ops), 6000 - (165 + 95 + 5 + 995));
    // Without the 995 µs of Python at the end the step ends with its last
    // kernel, at 5015 µs.
    let no_python = without_host(HostCause::Python);
    assert_eq!(saved_us(&m, &no_python), 6000 - 5015);
}

/// One training step: the loop thread waits 5 ms on its DataLoader,
/// launches the forward and hands the backward to the autograd engine's
/// thread, whose first call in the window (1 ms later) launches it.
/// Without the wait the forward comes 5 ms sooner and the backward with
/// it: the step saves 5 ms (the worker's first call once kept its trace
/// time, and the window's end with it: nothing saved).
#[test]
fn a_worker_s_first_call_comes_when_the_loop_thread_hands_it_work() {
    let mut backward = kernel(7, GEMM, 6010, 500, 6000);
    backward.launch = Some((2, 6000 * US, 6005 * US));
    let gpu = vec![kernel(7, GEMM, 5010, 500, 5000), backward];
    let recs = [(1, 0, 5000 * US, HostCause::Dataloader)];
    let m = model(gpu, vec![], (0, 7000), HostCauses::of(recs.into_iter(), true));
    check_null(&m);
    assert_eq!(m.thread_waits, 1);
    let no_loader = without_host(HostCause::Dataloader);
    assert_eq!(saved_us(&m, &no_loader), 5000);
    let path = m.critical_path();
    assert!(path.parts.contains(&(PathPart::Host(HostCause::Dataloader), 5000 * US)), "{path:?}");
}

/// `loss.backward()` with its `## backward ##` scope open: the loop
/// thread hands the autograd thread its work (the seed's launch at 50 µs),
/// sits in the scope while that thread runs ops and launches (100 … 3050
/// µs), and goes on when it stops — 120 µs later it is in the optimizer's
/// ops (1 ms) before its next launch. The open scope covers the wait, so
/// only the handing over shows it: the wait is the other thread's, up to
/// 3050 µs; the loop thread's Python and ops after that are its own.
#[test]
fn a_thread_in_an_open_scope_goes_on_when_the_thread_it_handed_work_stops() {
    let mut gpu = vec![kernel(7, ELT, 10, 5, 0), kernel(7, ELT, 60, 5, 50)];
    gpu.extend(launched_by_thread_2(15, 100, 200));
    gpu.push(kernel(7, ELT, 4160, 5, 4150));
    let recs = [
        (1, 55 * US, 3160 * US, HostCause::Python),
        (1, 3170 * US, 4150 * US, HostCause::CpuOp),
        (2, 100 * US, 3050 * US, HostCause::CpuOp),
    ];
    let m = model(gpu, vec![], (0, 5000), HostCauses::of(recs.into_iter(), true));
    check_null(&m);
    assert_eq!(m.thread_waits, 2);
    // Walking back from the step's end: the loop thread's Python tail
    // (845 µs), its launch, its own time after the autograd thread
    // stopped (120 µs Python, 980 µs ops), the wait from that thread's
    // last call (2905 µs) to its stop, that thread's 15 launches and 14
    // gaps of ops (195 µs), its wait for the seed (45 µs), and the loop
    // thread's two launches and the dispatch between them.
    let path = m.critical_path();
    let part = |p: PathPart| path.parts.iter().find(|x| x.0 == p).map_or(0, |x| x.1 / US);
    assert_eq!(part(PathPart::ThreadWait), 145 + 45, "{path:?}");
    assert_eq!(part(PathPart::Host(HostCause::Python)), 845 + 120, "{path:?}");
    assert_eq!(part(PathPart::Host(HostCause::CpuOp)), 980 + 14 * 195, "{path:?}");
    // Without ops the autograd thread's launches come back to back (the
    // last ends at 175 µs); the loop thread follows 145 µs later plus its
    // 120 µs of Python, and the step ends 5 + 845 µs after that: every
    // µs of ops on the path is saved.
    assert_eq!(saved_us(&m, &without_host(HostCause::CpuOp)), 5000 - (175 + 145 + 120 + 5 + 845));
    // Without Python the loop thread still waits for the autograd thread
    // (to 3050 µs) and its ops: its launch at 4030 µs, its kernel ends
    // the step at 4045 µs.
    assert_eq!(saved_us(&m, &without_host(HostCause::Python)), 5000 - 4045);
}

/// A prefetch thread that copies its next batch when its own data is
/// ready, 3 ms after the loop thread's last launch, while the loop thread
/// waits in a sync for that copy: the loop thread handed it nothing, so
/// taking the loop thread's 4.9 ms of ops away saves only what the copy
/// leaves of them (it once moved the copy with them: 4.9 ms "saved").
#[test]
fn a_thread_the_loop_thread_hands_nothing_goes_on_by_itself() {
    let mut copy = kernel(13, COPY_CLASS, 8020, 480, 8000);
    copy.launch = Some((3, 8000 * US, 8005 * US));
    let gpu = vec![kernel(7, GEMM, 4960, 500, 4950), copy];
    let syncs = vec![(1, 5100 * US, 8520 * US)];
    let recs = [(1, 10 * US, 4910 * US, HostCause::CpuOp)];
    let m = model(gpu, syncs, (0, 8600), HostCauses::of(recs.into_iter(), true));
    check_null(&m);
    assert_eq!(m.thread_waits, 0);
    let no_ops = without_host(HostCause::CpuOp);
    assert!(saved_us(&m, &no_ops) < 500, "{}", saved_us(&m, &no_ops));
}

/// A launch call that loads GPU code lazily (5 ms, no GPU work ending
/// while it runs) holds back its own kernel, which starts 8 µs after the
/// call returns. Removing the loading (the `cpu_op` cause, as `warm-up`
/// would) launches that kernel 5 ms sooner, and the step after it.
#[test]
fn a_kernel_loaded_lazily_goes_when_its_launch_returns() {
    let mut lazy = kernel(7, ELT, 5108, 5, 100);
    lazy.launch = Some((1, 100 * US, 5100 * US));
    let gpu = vec![kernel(7, ELT, 10, 5, 0), lazy, kernel(7, ELT, 5210, 5, 5200)];
    let m = model(gpu, vec![], (0, 5300), HostCauses::default());
    check_null(&m);
    let no_loading = without_host(HostCause::CpuOp);
    // Every call and kernel after the loading moves 5 ms earlier, the
    // step's end with them.
    assert_eq!(saved_us(&m, &no_loading), 5000);
    let r = m.replay(&no_loading);
    let (i, _) = m.nodes.iter().enumerate().find(|(_, n)| n.start == 5108 * US).unwrap();
    assert_eq!(r.start[i], 108 * US);
}

/// The inferred case's window, with the wait recorded: the same edge, now
/// from the trace, which only a change to the recorded waits drops.
#[test]
fn a_recorded_wait_replaces_the_inference() {
    let gpu = vec![kernel(7, GEMM, 10, 2000, 0), kernel(8, ELT, 2012, 100, 5)];
    let rec = Recorded { waits: vec![wait(8, 3, 7, 2)], ..Recorded::default() };
    let m = recorded_model(gpu, vec![], (0, 50), rec);
    check_null(&m);
    assert_eq!((m.recorded_waits, m.inferred_waits), (1, 0));
    let waiter = m.nodes.iter().find(|n| n.kind == NodeKind::Gpu && n.class == ELT).unwrap();
    assert!(waiter.recorded && waiter.bind == Bind::Wait);
    assert_eq!(saved_us(&m, &without(GEMM)), 2112 - 115);
    // Dropping inferred waits leaves a recorded one alone.
    let inferred_gone = Change { dependencies: false, ..Change::default() };
    assert_eq!(saved_us(&m, &inferred_gone), 0);
    let free = Change { recorded_waits: false, ..Change::default() };
    assert_eq!(saved_us(&m, &free), 2112 - 2010);
    assert_eq!(m.waits_from(), "recorded by the trace");
}

/// An event recorded before the other stream's work was launched does
/// not wait for it; and where the device records its waits, a late start
/// is not explained by an inferred one.
#[test]
fn an_event_recorded_before_the_work_waits_for_nothing() {
    let gpu = vec![kernel(7, GEMM, 10, 2000, 2), kernel(8, ELT, 2012, 100, 9)];
    let rec = Recorded { waits: vec![wait(8, 8, 7, 1)], ..Recorded::default() };
    let m = recorded_model(gpu, vec![], (0, 50), rec);
    check_null(&m);
    assert_eq!((m.recorded_waits, m.inferred_waits), (0, 0));
    assert!(m.nodes.iter().all(|n| n.wait == NONE));
}

/// A start that waits on two streams waits for both: without the later
/// one it starts when the earlier one ends, not at its launch.
#[test]
fn a_start_waiting_on_two_streams_waits_for_both() {
    let gpu = vec![
        kernel(7, GEMM, 10, 1000, 0),
        kernel(9, ELT, 12, 1998, 6),
        kernel(8, ELT + 1, 2012, 100, 30),
    ];
    let rec =
        Recorded { waits: vec![wait(8, 25, 7, 20), wait(8, 26, 9, 21)], ..Recorded::default() };
    let m = recorded_model(gpu, vec![], (0, 50), rec);
    check_null(&m);
    assert_eq!(m.recorded_waits, 2);
    // The ELT kernel gone, the last one still waits for the GEMM's end.
    assert_eq!(saved_us(&m, &without(ELT)), 2112 - 1110);
    // No waits: it runs at once, and the ELT kernel on stream 9 ends last.
    let free = Change { recorded_waits: false, ..Change::default() };
    assert_eq!(saved_us(&m, &free), 2112 - 2010);
}

/// A stream sync waits for its stream only: work on another stream that
/// ended just before it returned is not what it waited for (the device-wide
/// guess says it is).
#[test]
fn a_recorded_stream_sync_waits_for_its_stream() {
    let gpu = || vec![kernel(7, GEMM, 10, 1000, 0), kernel(8, ELT, 10, 1005, 1)];
    let sync = (1, 100 * US, 1020 * US);
    let rec = Recorded {
        sync_on: [(sync, SyncOn::Stream { device: 0, stream: 7 })].into_iter().collect(),
        ..Recorded::default()
    };
    let m = recorded_model(gpu(), vec![sync], (0, 1100), rec);
    check_null(&m);
    assert_eq!(m.recorded_syncs, 1);
    let s = m.nodes.iter().find(|n| n.kind == NodeKind::Sync).unwrap();
    assert_eq!(m.nodes[s.cross as usize].class, GEMM);
    // The other stream's kernel shorter: the sync returns no earlier.
    let mut half = Change::default();
    half.class_factor[usize::from(ELT)] = 0.5;
    let end_of_sync = |m: &StepModel| {
        let i = m.nodes.iter().position(|n| n.kind == NodeKind::Sync).unwrap();
        m.replay(&half).end[i]
    };
    assert_eq!(end_of_sync(&m), 1020 * US);
    let guessed = model(gpu(), vec![sync], (0, 1100), HostCauses::default());
    assert!(end_of_sync(&guessed) < 1020 * US);
}

/// Two ranks, two collectives (class 0). Rank 0 arrives at the first at
/// 10 µs and waits for rank 1, whose host work brings it there at 1000;
/// both transfer 10 µs, run a 100 µs GEMM and meet again at 1110.
fn two_ranks() -> (StepModel, StepModel, Vec<Vec<job::Member>>) {
    let comm = |start, dur, launch| kernel(7, 0, start, dur, launch);
    let rank0 = vec![comm(10, 1000, 0), kernel(7, GEMM, 1010, 100, 20), comm(1110, 10, 30)];
    let rank1 = vec![comm(1000, 10, 995), kernel(7, GEMM, 1010, 100, 1001), comm(1110, 10, 1002)];
    let host = || HostCauses::of(std::iter::once((1, 0, 995 * US, HostCause::Python)), true);
    let m0 = build(rank0, vec![], (0, 1050), HostCauses::default(), Recorded::default());
    let m1 = build(rank1, vec![], (0, 1050), host(), Recorded::default());
    let member = |rank, start, end| job::Member { rank, start: start * US, end: end * US };
    let links = vec![
        vec![member(0, 10, 1010), member(1, 1000, 1010)],
        vec![member(0, 1110, 1120), member(1, 1110, 1120)],
    ];
    (m0, m1, links)
}

/// Joined, with no change the job's times come back in one round; a
/// rank made faster alone still waits for the other at the next
/// collective, where re-timed alone it would have saved.
#[test]
fn ranks_joined_at_collectives_wait_for_each_other() {
    let (m0, m1, links) = two_ranks();
    let job = job::JobModel::new(vec![Some(&m0), Some(&m1)], &links);
    assert_eq!((job.links(), job.unlinked), (2, 0));
    let same = job.replay(&[], None);
    assert!(same.settled && same.rounds == 1);
    for (m, x) in [&m0, &m1].iter().zip(&same.ranks) {
        let x = x.as_ref().unwrap();
        for (i, n) in m.nodes.iter().enumerate() {
            assert_eq!((x.start[i], x.end[i]), (n.start, n.end));
        }
    }
    // Rank 0's GEMM twice as fast: alone it saves 50 µs, joined nothing
    // (it meets rank 1 at 1110 µs all the same).
    let mut half = Change::default();
    half.class_factor[usize::from(GEMM)] = 0.5;
    assert_eq!(saved_us(&m0, &half), 50);
    let joined = job.replay(&[half], None);
    let span0 = joined.ranks[0].as_ref().unwrap().span;
    assert_eq!(span0, m0.end() - m0.window.0);
    // Rank 1's lateness removed: rank 0 transfers at once (10 → 20 µs),
    // runs its GEMM (launched at 20 µs, starting the usual 10 µs after:
    // 30 → 130) and meets nobody at the second: it ends at 140 µs.
    let free = job.replay(&[], Some(1));
    assert!(free.settled);
    let second = m0.nodes.iter().position(|n| n.class == 0 && n.start == 1110 * US).unwrap();
    assert_eq!(free.ranks[0].as_ref().unwrap().end[second], 140 * US);
    // (Rank 0's step still ends with its host's wait, begun at 1050 µs,
    // which keeps its own 5 µs.)
    assert_eq!(free.ranks[0].as_ref().unwrap().span, 1055 * US);
    assert_eq!(free.ranks[1].as_ref().unwrap().span, 1120 * US);
    // Its first collective waited 990 µs and now waits none; at the
    // second it arrives first (130 µs) and meets only itself.
    assert_eq!(free.waits_removed, vec![990 * US, 0]);
}

/// The path through the joined ranks: from rank 0's end back to its first
/// collective, which waited 990 µs for rank 1; on from rank 1's arrival
/// through its launch and the Python before it. The legs tile the span.
#[test]
fn the_job_s_path_crosses_to_the_rank_waited_for() {
    let (m0, m1, links) = two_ranks();
    let job = job::JobModel::new(vec![Some(&m0), Some(&m1)], &links);
    let path = job.critical_path().unwrap();
    let ranks: Vec<usize> = path.legs.iter().map(|l| l.rank).collect();
    assert_eq!(ranks, vec![0, 1]);
    assert_eq!(path.legs[0].waited_at, Some((0, 990 * US)));
    let python = |l: &job::Leg| {
        l.parts.iter().find(|p| p.0 == PathPart::Host(HostCause::Python)).map_or(0, |p| p.1)
    };
    assert_eq!(python(&path.legs[1]), 995 * US);
    let total: i64 = path.legs.iter().flat_map(|l| l.parts.iter().map(|p| p.1)).sum();
    assert_eq!((total, path.span), (1120 * US, 1120 * US));
    // Alone, rank 0's own path holds the wait as its collective's time.
    let alone = m0.critical_path();
    assert_eq!(alone.parts[0], (PathPart::Gpu(0), 1010 * US));
}

/// A kernel that waited under 20 µs for the other rank arrived with it:
/// the path stays on its own rank.
#[test]
fn a_wait_within_the_noise_keeps_the_path_on_its_rank() {
    let comm = |start, dur, launch| kernel(7, 0, start, dur, launch);
    let rank0 = vec![comm(990, 20, 980)];
    let rank1 = vec![comm(1000, 10, 995)];
    // The steps end before the kernels do: the path starts at rank 0's.
    let m0 = build(rank0, vec![], (0, 1000), HostCauses::default(), Recorded::default());
    let m1 = build(rank1, vec![], (0, 1000), HostCauses::default(), Recorded::default());
    let member = |rank, start, end| job::Member { rank, start: start * US, end: end * US };
    let links = vec![vec![member(0, 990, 1010), member(1, 1000, 1010)]];
    let job = job::JobModel::new(vec![Some(&m0), Some(&m1)], &links);
    let path = job.critical_path().unwrap();
    assert_eq!(path.legs.len(), 1, "{:?}", path.legs);
    assert_eq!(path.legs[0].waited_at, None);
}

/// One stream: GEMM, two memory-bound kernels, GEMM, one kernel, GEMM,
/// softmax between two elementwise kernels, GEMM, then two elementwise
/// kernels with no GEMM after them. One chain: a lone kernel is none, a
/// softmax breaks one, and the tail ends at no matrix kernel. Fused, the
/// chain runs as its longest kernel: on a GPU-bound stream the shorter
/// one's 300 µs are saved.
#[test]
fn a_chain_between_matrix_kernels_fuses_into_its_longest() {
    let gpu = vec![
        kernel(7, GEMM, 100, 1000, 0),
        kernel(7, ELT, 1100, 300, 5),
        kernel(7, NORM, 1400, 500, 10),
        kernel(7, GEMM, 1900, 1000, 15),
        kernel(7, ELT, 2900, 200, 20),
        kernel(7, GEMM, 3100, 1000, 25),
        kernel(7, ELT, 4100, 100, 30),
        kernel(7, SOFTMAX, 4200, 100, 35),
        kernel(7, ELT, 4300, 100, 40),
        kernel(7, GEMM, 4400, 1000, 45),
        kernel(7, ELT, 5400, 200, 50),
        kernel(7, ELT, 5600, 200, 55),
    ];
    let m = model(gpu, vec![], (0, 100), HostCauses::default());
    let chains = m.chains();
    assert_eq!(chains.len(), 1, "{chains:?}");
    let c = &chains[0];
    assert_eq!(c.kernels, vec![u32::from(ELT), u32::from(NORM)]);
    assert_eq!((c.count, c.ns, c.fused_ns), (1, 800 * US, 500 * US));
    assert_eq!(c.between, (u32::from(GEMM), u32::from(GEMM)));
    let fused = m.chains_fused().expect("a chain");
    assert_eq!(fused.flags, FUSE_CHAINS);
    assert_eq!(saved_us(&m, &fused.change), 300);
}

/// On a trace without ops (GPU only), a convolution library's own layout
/// kernels (MIOpen's `batched_transpose_*`) are its call's, not a chain's:
/// they end one as matrix kernels do — the channels-last lever claims
/// them (the MI210 trace's chain ran from one convolution's output
/// transpose to the next one's input transposes).
#[test]
fn a_conv_library_s_layout_kernels_end_a_chain() {
    const COPY: u8 = 4;
    let gpu = vec![
        kernel(7, GEMM, 100, 1000, 0),
        kernel(7, COPY, 1100, 100, 5),
        kernel(7, NORM, 1200, 100, 10),
        kernel(7, ELT, 1300, 100, 15),
        kernel(7, COPY, 1400, 100, 20),
        kernel(7, GEMM, 1500, 1000, 25),
    ];
    let mut m = model(gpu, vec![], (0, 100), HostCauses::default());
    assert_eq!(m.chains()[0].kernels.len(), 4, "a plain copy is a chain's");
    m.names[usize::from(COPY)] = "batched_transpose_64x16_pack_4x1_ediv_2x1_half".into();
    let chains = m.chains();
    assert_eq!(chains.len(), 1, "{chains:?}");
    assert_eq!(chains[0].kernels, vec![u32::from(NORM), u32::from(ELT)]);
    assert_eq!(chains[0].between, (u32::from(COPY), u32::from(COPY)));
}

/// A kernel a matrix op launches beside its GEMM (a bias copy) is the
/// op's, not a chain's: the chain starts after it, and names the op.
#[test]
fn a_matrix_op_s_helper_kernel_ends_a_chain() {
    let op = |mut g: GpuWork, op: u32| {
        g.op = op;
        g
    };
    let (mm, add, mul) = (7, 0, 1);
    let gpu = vec![
        op(kernel(7, GEMM, 100, 1000, 0), mm),
        op(kernel(7, ELT, 1100, 100, 5), mm),
        op(kernel(7, ELT, 1200, 100, 10), add),
        op(kernel(7, ELT, 1300, 100, 15), mul),
        op(kernel(7, GEMM, 1400, 1000, 20), mm),
    ];
    let m = model(gpu, vec![], (0, 100), HostCauses::default());
    let chains = m.chains();
    assert_eq!(chains.len(), 1, "{chains:?}");
    assert_eq!(chains[0].ops, vec![add, mul]);
    // Before it: the helper, named by its op.
    assert_eq!(chains[0].between, (mm, u32::from(GEMM)));
}
