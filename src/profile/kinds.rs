//! The named values of a profile: its verdict, its mode and the kernel
//! categories. Each is an enum whose serde names are the strings
//! `profile.json` has always held, so files read and written are the same
//! bytes; a verdict or category another writer named is kept as written
//! (`Named`), so such a file still loads and prints as before.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// A named value as `profile.json` holds it: each variant with its one
/// string (serde's name, `as_str`, `ALL` in order, all from one list), and
/// `Named` for a name another writer used, kept as written. Compared,
/// hashed and ordered by name, as the strings were.
macro_rules! named_values {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)+
            /// A name another writer used, kept as written (empty: none).
            #[serde(untagged)]
            Named(String),
        }

        impl $name {
            /// Every value we decide, in order.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];

            /// The name in JSON and text.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)+
                    $name::Named(s) => s,
                }
            }
        }

        impl Default for $name {
            fn default() -> $name {
                $name::Named(String::new())
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &$name) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl Eq for $name {}

        impl std::hash::Hash for $name {
            fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
                self.as_str().hash(h);
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &$name) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $name {
            fn cmp(&self, other: &$name) -> std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}

named_values! {
    /// The bottleneck verdict (docs/analysis.md §10), decided once when the
    /// profile is built (`analysis::verdict::decide`).
    Verdict {
        MemoryPressure = "memory-pressure",
        Dataloader = "dataloader",
        Compute = "compute",
        /// The host-side verdicts, one per idle cause (docs/analysis.md §10,
        /// §12). Before the idle account every one of them was `host / launch`.
        HostLaunch = "host / launch",
        HostPython = "host / python",
        HostSync = "host / sync",
        HostCpuOp = "host / cpu op",
        HostAllocator = "host / allocator",
        Dependency = "gpu / dependency",
        /// A GPU idle for reasons the trace cannot show (no CPU side).
        IdleUnexplained = "idle / unexplained",
        Communication = "communication",
        NmsPostprocess = "nms / postprocess",
        Preprocess = "preprocess",
        /// Repeat trials that disagree.
        Mixed = "mixed",
        /// The window cannot support a verdict (a health check says why:
        /// docs/analysis.md §15).
        CannotTell = "cannot tell",
    }
}

impl Verdict {
    /// One of the host-side verdicts (the GPU waits on the host).
    pub fn is_host(&self) -> bool {
        matches!(
            self,
            Verdict::HostLaunch
                | Verdict::HostPython
                | Verdict::HostSync
                | Verdict::HostCpuOp
                | Verdict::HostAllocator
        )
    }
}

/// What a profile measures, decided from its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Training,
    Inference,
    /// A trace with no CPU side (GPU events only): nothing says which.
    Unknown,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Training => "training",
            Mode::Inference => "inference",
            Mode::Unknown => "unknown",
        }
    }

    /// The mode a file names; `None` for a name this reader does not know.
    pub fn parse(name: &str) -> Option<Mode> {
        [Mode::Training, Mode::Inference, Mode::Unknown].into_iter().find(|m| m.as_str() == name)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A `mode` field as a file holds it: a name this reader does not know
/// reads as absent, and the mode is then inferred from the content
/// ([`crate::profile::Profile::mode`]), as for a file without one.
pub fn mode_or_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Mode>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.as_deref().and_then(Mode::parse))
}

named_values! {
    /// A kernel's category (docs/analysis.md §7; the patterns are in
    /// `analysis::kernels`), in the order the kernel mix lists them when
    /// tied.
    Category {
        Communication = "communication",
        Attention = "attention",
        GemmConv = "gemm / conv",
        ReductionNorm = "reduction / norm",
        LayoutCopy = "layout / copy",
        Elementwise = "elementwise",
        /// Eager softmax kernels: what fused attention does without
        /// (`facts::SOFTMAX_KERNEL`), apart from other reductions.
        Softmax = "softmax",
        Other = "other",
    }
}

impl Category {
    /// The position in [`Category::ALL`]; `None` for another writer's.
    pub fn index(&self) -> Option<usize> {
        Category::ALL.iter().position(|c| c == self)
    }
}

named_values! {
    /// What a trace-health check found about the window (docs/analysis.md
    /// §15): something that makes its figures or its verdict less true.
    HealthCheck {
        /// GPU work queued before the recording ran inside the steps.
        Backlog = "backlog",
        /// The GPU falls behind the host: host markers understate the step.
        GpuBehind = "gpu-behind",
        /// A step marker runs past the last recorded event.
        StepPastEnd = "step-past-end",
        /// The last step is a stub: the profiler stopped as it began.
        StepStub = "step-stub",
        /// The first step is much slower than the others (warm-up).
        SlowFirstStep = "slow-first-step",
        /// A window without steps spends much of itself in one runtime
        /// call before any GPU work: the GPU's start-up.
        StartUp = "start-up",
        /// The window records CUDA/HIP graph captures.
        GraphCapture = "graph-capture",
        /// torch.compile compiling or autotuning inside the window.
        Compilation = "compilation",
        /// Events of a device this reader does not read.
        UnreadDevice = "unread-device",
        /// Kernel launches without any GPU timing (a counter-only trace).
        NoGpuTimings = "no-gpu-timings",
        /// Launch calls in the steps whose GPU work was not recorded.
        LostGpuEvents = "lost-gpu-events",
        /// GPU work that starts before the call that launched it: the
        /// host's and the GPU's clocks disagree.
        ClockSkew = "clock-skew",
        /// Step names recorded at times far apart (recordings joined):
        /// each is merged into one step spanning them.
        RepeatedSteps = "repeated-steps",
        /// Every step marker lasts no time.
        EmptySteps = "empty-steps",
    }
}

named_values! {
    /// A lever: one change a user can make (docs/analysis.md §16).
    LeverKind {
        CudaGraphs = "cuda-graphs",
        ReduceOverhead = "reduce-overhead",
        TorchCompile = "torch-compile",
        CompiledHostWork = "compiled-host-work",
        DataloaderWorkers = "dataloader-workers",
        FasterLoading = "faster-loading",
        RemoveSyncs = "remove-syncs",
        MovePython = "move-python",
        WarmUpAllocator = "warm-up-allocator",
        OverlapCommunication = "overlap-communication",
        FuseElementwise = "fuse-elementwise",
        Sdpa = "sdpa",
        Amp = "amp",
        MatrixShapes = "matrix-shapes",
        AttentionShapes = "attention-shapes",
        ChannelsLast = "channels-last",
        StreamStructure = "stream-structure",
        WarmUp = "warm-up",
        InputOnGpu = "input-on-gpu",
    }
}

named_values! {
    /// How much a health finding weighs on the verdict.
    Severity {
        /// Some figures include work that is not the steps' own, or miss some.
        Caution = "caution",
        /// The window cannot support a verdict: the verdict is `cannot tell`.
        CannotTell = "cannot tell",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_foreign_ones_are_kept() {
        for v in [
            Verdict::Compute,
            Verdict::HostCpuOp,
            Verdict::Mixed,
            Verdict::Named("gpu-bound".into()),
            Verdict::default(),
        ] {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.as_str()));
            assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), v);
        }
        assert_eq!(
            serde_json::from_str::<Verdict>("\"host / launch\"").unwrap(),
            Verdict::HostLaunch
        );
        for c in Category::ALL.into_iter().chain([Category::Named("gemm/conv".into())]) {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<Category>(&json).unwrap(), c);
        }
        assert_eq!(Category::Named("x".into()).index(), None);
        assert_eq!(Category::GemmConv.index(), Some(2));
        assert_eq!(Mode::parse("inference"), Some(Mode::Inference));
        assert_eq!(Mode::parse("eval"), None);
    }
}
