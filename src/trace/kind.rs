//! What an event is, decided once, where it is parsed: the analysis and
//! the Timeline match on [`EventKind`], never on Kineto's `ph`/`cat`
//! strings, and a second trace format would plug in here. Also the one
//! definition of what a runtime call does ([`RuntimeCall`]) and of a
//! plausible time ([`span_ns`]).

/// An event's kind, from its `ph`, `cat` and (for the two kinds a name
/// decides) its name. Kineto's categories old (2020–21: `Operator`,
/// `Runtime`, `Kernel`, …) and new (`cpu_op`, `cuda_runtime`, …) alike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EventKind {
    /// Not a complete event nor a memory instant: flows, metadata,
    /// counters, other instants.
    #[default]
    NoSpan,
    /// A `[memory]` instant of the allocator.
    Memory,
    /// A host-side range: `record_function` annotations, `ProfilerStep#N`
    /// and `step/<phase>` (old traces write those as `Operator`s).
    Annotation,
    /// The GPU-side mirror of an annotation (`gpu_user_annotation`).
    GpuAnnotation,
    /// A CPU op (`aten::…`, autograd, …).
    CpuOp,
    /// A CUDA or HIP runtime or driver call ([`RuntimeCall`] says what it
    /// does).
    Runtime,
    /// A Python frame (`with_stack=True`).
    Python,
    /// Work on the GPU.
    Gpu(GpuWork),
    /// CUPTI's record of a synchronisation (`cuda_sync`, recorded with
    /// `enable_cuda_sync_events`): at the host call's times, which stream,
    /// event or context it waited on ([`SyncKind`]).
    GpuSync(SyncKind),
    /// A complete event of any other category.
    OtherSpan,
}

/// What a `cuda_sync` record waited on, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncKind {
    /// `cudaStreamWaitEvent`: later work on the stream waits for the
    /// event's record on another stream.
    StreamWait,
    /// `cudaEventSynchronize`: the host waits for an event's record.
    EventSync,
    /// `cudaStreamSynchronize`: the host waits for one stream.
    StreamSync,
    /// `cudaDeviceSynchronize` / `cuCtxSynchronize`: the host waits for
    /// every stream of the device.
    ContextSync,
}

impl SyncKind {
    fn of(name: &str) -> Option<SyncKind> {
        Some(match name {
            "Stream Wait Event" => SyncKind::StreamWait,
            "Event Sync" => SyncKind::EventSync,
            "Stream Sync" => SyncKind::StreamSync,
            "Context Sync" | "Device Sync" => SyncKind::ContextSync,
            _ => return None,
        })
    }
}

/// What a GPU event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuWork {
    Kernel,
    Memcpy,
    Memset,
}

impl EventKind {
    /// The kind of an event with these fields.
    pub fn of(ph: &str, cat: &str, name: &str) -> EventKind {
        match ph {
            "X" => {}
            "i" | "I" if name == "[memory]" => return EventKind::Memory,
            _ => return EventKind::NoSpan,
        }
        match cat {
            "user_annotation" => EventKind::Annotation,
            "gpu_user_annotation" => EventKind::GpuAnnotation,
            "Operator" if name.starts_with("ProfilerStep#") || name.starts_with("step/") => {
                EventKind::Annotation
            }
            "cpu_op" | "Operator" => EventKind::CpuOp,
            "cuda_runtime" | "Runtime" | "cuda_driver" | "hip_runtime" | "hip_driver" => {
                EventKind::Runtime
            }
            "python_function" => EventKind::Python,
            "kernel" | "Kernel" => EventKind::Gpu(GpuWork::Kernel),
            "gpu_memcpy" | "Memcpy" => EventKind::Gpu(GpuWork::Memcpy),
            "gpu_memset" | "Memset" => EventKind::Gpu(GpuWork::Memset),
            "cuda_sync" => SyncKind::of(name).map_or(EventKind::OtherSpan, EventKind::GpuSync),
            _ => EventKind::OtherSpan,
        }
    }
}

/// What a runtime call does, from its name (`cudaLaunchKernel`,
/// `hipMemcpyWithStream`, `cuGraphLaunch`, …): worked out once per
/// distinct name by the reader that asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeCall {
    /// Puts work on the GPU (a kernel, copy or set, a graph), so it can be
    /// a correlation's launch. Others (syncs, queries) are not.
    pub launch: bool,
    /// Launches a CUDA/HIP graph: every kernel of the graph shares its
    /// correlation id.
    pub graph: bool,
    /// Launches one kernel (not a copy, a set or a graph).
    pub kernel: bool,
    /// Waits for the GPU: a `…Synchronize` call, or a copy without
    /// `Async` (`cudaMemcpy`, `hipMemcpyWithStream`).
    pub sync: bool,
    /// Records an event or makes a stream wait for one (`cudaEventRecord`,
    /// `cudaStreamWaitEvent`): what a `cuda_sync` record names.
    pub event: bool,
    /// Allocates or frees device or pinned memory.
    pub alloc: bool,
    /// Counted as an allocator call (`…Malloc…`/`…Free…`).
    pub malloc: bool,
    /// Begins a graph capture: what follows is recorded, not run.
    pub capture: bool,
    /// Ends a graph capture.
    pub capture_end: bool,
    /// A ROCm (`hip…`) or CUDA (`cuda…`, `cu…`) call.
    pub hip: bool,
    pub cuda: bool,
}

impl RuntimeCall {
    pub fn of(name: &str) -> RuntimeCall {
        let hip = name.starts_with("hip");
        const ALLOC: [&str; 6] = ["Malloc", "Free", "HostAlloc", "MemAlloc", "MemCreate", "MemMap"];
        RuntimeCall {
            launch: name.contains("Launch")
                || name.contains("Memcpy")
                || name.contains("Memset")
                || name.contains("Graph"),
            graph: name.contains("GraphLaunch"),
            kernel: name.contains("Launch") && !name.contains("Graph"),
            sync: name.contains("Synchronize")
                || (name.contains("Memcpy") && !name.contains("Async")),
            event: name.contains("EventRecord") || name.contains("StreamWaitEvent"),
            alloc: ALLOC.iter().any(|w| name.contains(w)),
            malloc: name.contains("Malloc") || name.contains("Free"),
            capture: name.contains("StreamBeginCapture"),
            capture_end: name.contains("StreamEndCapture"),
            hip,
            cuda: !hip && name.starts_with("cu"),
        }
    }
}

/// Longest duration taken as real, in µs (about 11.6 days): beyond it
/// (`1e26`, `1e308`) the event is malformed, not a kernel of negative or
/// infinite time once sums overflow.
pub const MAX_DUR_US: f64 = 1e12;
/// Timestamps beyond this (µs; epoch microseconds reach it in 2096) are
/// malformed: the ns arithmetic stays far inside i64.
pub const MAX_TS_US: f64 = 4e15;

/// An event's start and duration in ns, when both are there and plausible
/// (a duration from 0 to [`MAX_DUR_US`], a timestamp within
/// ±[`MAX_TS_US`]); `None` makes it malformed.
pub fn span_ns(ts: Option<f64>, dur: Option<f64>) -> Option<(i64, i64)> {
    let (ts, dur) = (ts?, dur?);
    if !(0.0..=MAX_DUR_US).contains(&dur) || ts.abs() > MAX_TS_US {
        return None;
    }
    Some((ns(ts), ns(dur)))
}

/// A timestamp alone, when plausible (instants: `[memory]`, flows).
pub fn ts_ns(ts: Option<f64>) -> Option<i64> {
    ts.filter(|t| t.abs() <= MAX_TS_US).map(ns)
}

/// µs (as written in traces) → integer ns. The whole µs are converted
/// apart from the fraction: epoch timestamps (1.7e15 µs) times 1000 are
/// beyond f64's exact integers and would be off by up to 128 ns.
pub fn ns(us: f64) -> i64 {
    // `trunc` and `round` are library calls on x86-64's baseline (no
    // SSE4.1): two per event were 1 % of a read's time. Casts truncate
    // inline and give the same integers wherever the value fits an i64.
    if us.is_nan() || us.abs() >= 9e18 {
        return ns_by_library(us);
    }
    let whole = us as i64;
    let milli = (us - whole as f64) * 1000.0; // in (-1000, 1000)
    let m = milli as i64;
    let rest = milli - m as f64; // exact: `m` is `milli` truncated
    // Halves away from zero, as `f64::round`.
    whole.wrapping_mul(1000).wrapping_add(m + i64::from(rest >= 0.5) - i64::from(rest <= -0.5))
}

/// [`ns`] with the library's `trunc` and `round` (NaN, ±∞, |µs| ≥ 9e18).
fn ns_by_library(us: f64) -> i64 {
    let whole = us.trunc();
    (whole as i64).wrapping_mul(1000).wrapping_add(((us - whole) * 1000.0).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_microseconds_convert_to_exact_nanoseconds() {
        // 1694128201424306 µs × 1000 is not an exact f64; split, it is.
        assert_eq!(ns(1_694_128_201_424_306.0), 1_694_128_201_424_306_000);
        assert_eq!(ns(4_458_677_009_853.422), 4_458_677_009_853_422);
        assert_eq!(ns(2.5), 2_500);
        assert_eq!(ns(-1.5), -1_500);
    }

    /// The inline conversion gives the library's integers: on halves of a
    /// nanosecond, either sign, every magnitude a trace writes, and
    /// arbitrary bit patterns (NaN and infinities included).
    #[test]
    fn nanoseconds_by_casts_are_those_of_trunc_and_round() {
        let mut values = vec![0.0, -0.0, 0.0005, -0.0005, 0.0015, 2.5e-4, f64::NAN, f64::INFINITY];
        values.extend([f64::NEG_INFINITY, 9e18, -9e18, 8.99e18, 1e300, f64::MIN_POSITIVE]);
        for k in [0.0, 1.0, 7.0, 1e6, 4_458_677_009_853.0, 1_694_128_201_424_306.0, 4e15] {
            for j in 0..4000 {
                let x = k + f64::from(j) / 2000.0;
                values.extend([x, -x, x.next_up(), x.next_down()]);
            }
        }
        let mut bits = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            bits = bits
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            values.push(f64::from_bits(bits));
            // Timestamps' range: up to 4e15 µs, any fraction.
            values.push((bits >> 11) as f64 / (1u64 << 53) as f64 * 8e15 - 4e15);
        }
        for us in values {
            assert_eq!(ns(us), ns_by_library(us), "{us:e}");
        }
    }

    #[test]
    fn kinds_old_and_new() {
        use EventKind::*;
        for (ph, cat, name, kind) in [
            ("X", "cpu_op", "aten::mm", CpuOp),
            ("X", "Operator", "aten::mm", CpuOp),
            ("X", "Operator", "ProfilerStep#3", Annotation),
            ("X", "Operator", "step/forward", Annotation),
            ("X", "cpu_op", "ProfilerStep#3", CpuOp),
            ("X", "user_annotation", "ProfilerStep#3", Annotation),
            ("X", "gpu_user_annotation", "ProfilerStep#3", GpuAnnotation),
            ("X", "cuda_runtime", "cudaLaunchKernel", Runtime),
            ("X", "Runtime", "cudaLaunchKernel", Runtime),
            ("X", "hip_driver", "hipModuleLaunchKernel", Runtime),
            ("X", "kernel", "k", Gpu(GpuWork::Kernel)),
            ("X", "Memcpy", "m", Gpu(GpuWork::Memcpy)),
            ("X", "gpu_memset", "m", Gpu(GpuWork::Memset)),
            ("X", "python_function", "f", Python),
            ("X", "Trace", "t", OtherSpan),
            ("X", "cuda_sync", "Stream Wait Event", GpuSync(SyncKind::StreamWait)),
            ("X", "cuda_sync", "Context Sync", GpuSync(SyncKind::ContextSync)),
            ("X", "cuda_sync", "Some Sync", OtherSpan),
            ("i", "cpu_instant_event", "[memory]", Memory),
            ("I", "", "[memory]", Memory),
            ("i", "cpu_instant_event", "other", NoSpan),
            ("s", "ac2g", "", NoSpan),
            ("", "kernel", "k", NoSpan),
        ] {
            assert_eq!(EventKind::of(ph, cat, name), kind, "{ph} {cat} {name}");
        }
    }

    #[test]
    fn runtime_calls_by_name() {
        let launch = RuntimeCall::of("cudaLaunchKernel");
        assert!(launch.launch && !launch.sync && launch.cuda && !launch.hip);
        let graph = RuntimeCall::of("hipGraphLaunch");
        assert!(graph.launch && graph.graph && graph.hip);
        let copy = RuntimeCall::of("cudaMemcpy");
        assert!(copy.launch && copy.sync, "a blocking copy launches and waits");
        assert!(!RuntimeCall::of("cudaMemcpyAsync").sync);
        assert!(RuntimeCall::of("cudaStreamSynchronize").sync);
        assert!(!RuntimeCall::of("cudaStreamSynchronize").launch);
        assert!(RuntimeCall::of("cudaFree").alloc && RuntimeCall::of("cuMemCreate").alloc);
        assert!(RuntimeCall::of("cudaStreamBeginCapture").capture);
    }

    #[test]
    fn implausible_times_are_refused() {
        assert_eq!(span_ns(Some(2.5), Some(1.0)), Some((2_500, 1_000)));
        assert_eq!(span_ns(Some(2.5), None), None);
        assert_eq!(span_ns(Some(2.5), Some(-1.0)), None);
        assert_eq!(span_ns(Some(2.5), Some(1e13)), None);
        assert_eq!(span_ns(Some(5e15), Some(1.0)), None);
        assert_eq!(ts_ns(Some(4e15)), Some(4_000_000_000_000_000_000));
    }
}
