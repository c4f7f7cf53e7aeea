//! JSON that other profilers write, which is no Chrome/Kineto trace:
//! recognised by its first top-level key or the first element of a bare
//! array, so that a multi-GB one is refused at its first bytes with what it
//! is and what to give instead (docs/spec.md §5).

use crate::error::Error;

/// What a PyTorch profiler (Kineto) trace is made with: every refusal of a
/// foreign file ends with it.
pub const KINETO_HOW: &str = "give a PyTorch profiler (Kineto) trace instead: \
    `torch.profiler.profile(...)` then `prof.export_chrome_trace(\"trace.json\")` \
    (or its `tensorboard_trace_handler`), or `libreyolo profile infer|run`";

/// A file of another tool's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Foreign {
    /// rocprofv3's JSON output (`--output-format json`): one object whose
    /// key `rocprofiler-sdk-tool` holds a record per process.
    Rocprofv3,
    /// PyTorch's execution trace (`ExecutionTraceObserver`, Chakra):
    /// `schema`, `pid`, `time`, `start_ts`, then the op graph in `nodes`.
    ExecutionTrace,
    /// PyTorch's memory timeline (`prof.export_memory_timeline`, as HTA and
    /// the memory-viz tooling use it): a bare array of arrays of numbers —
    /// `[times, sizes]`, or the raw `[[ts, action, bytes, category], …]`.
    MemoryTimeline,
}

impl Foreign {
    /// The format a top-level key of an object gives away (`None`: no
    /// other tool's). Kineto never writes these keys.
    pub fn of_key(key: &str) -> Option<Foreign> {
        match key {
            "rocprofiler-sdk-tool" => Some(Foreign::Rocprofv3),
            "nodes" => Some(Foreign::ExecutionTrace),
            _ => None,
        }
    }

    /// The format a bare array's first element gives away, from the bytes
    /// at that element: an array of numbers (`[[1700…, …], …]`), where a
    /// trace has event objects. Deeper nesting is no format of ours to
    /// name (the reader refuses it as too deep).
    pub fn of_first_element(bytes: &[u8]) -> Option<Foreign> {
        let ws = |b: &u8| matches!(b, b' ' | b'\n' | b'\r' | b'\t');
        let mut at = bytes.iter().skip_while(|b| ws(b));
        if at.next() != Some(&b'[') {
            return None;
        }
        match at.find(|b| !ws(b)) {
            Some(b'-' | b'0'..=b'9' | b']') => Some(Foreign::MemoryTimeline),
            _ => None,
        }
    }

    /// What the file is, for the refusal.
    pub fn what(self) -> &'static str {
        match self {
            Foreign::Rocprofv3 => "a rocprofv3 trace (rocprofiler-sdk's JSON output)",
            Foreign::ExecutionTrace => {
                "a PyTorch execution trace (ExecutionTraceObserver: the op graph, without timings)"
            }
            Foreign::MemoryTimeline => {
                "a PyTorch memory timeline (export_memory_timeline: memory over time, without ops or kernels)"
            }
        }
    }

    /// The way to the trace this format's users most likely have beside it.
    fn hint(self) -> &'static str {
        match self {
            Foreign::Rocprofv3 => {
                "; on ROCm, the PyTorch profiler records HIP kernels in the same Kineto format"
            }
            Foreign::ExecutionTrace => {
                "; the Kineto trace recorded with the execution trace (the same step) is the one to read"
            }
            Foreign::MemoryTimeline => {
                "; with `profile_memory=True` its memory events are in the trace, for `libreyolo profile memory`"
            }
        }
    }

    /// The refusal (exit 1: a file that exists but is of the wrong shape).
    pub fn error(self) -> Error {
        Error::failed(format!(
            "this is {}, not a PyTorch profiler trace: {KINETO_HOW}{}",
            self.what(),
            self.hint()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_timeline_is_told_from_nesting_and_from_events() {
        // The bytes at the first element of the bare array.
        for timeline in [&b"[1700, 1750], [[0, 4]]]"[..], b" [ -1, 2]", b"[], []]"] {
            assert_eq!(Foreign::of_first_element(timeline), Some(Foreign::MemoryTimeline));
        }
        for other in [&b"{\"ph\": \"X\"}"[..], b"[[[[", b"]", b"", b"1, 2"] {
            assert_eq!(Foreign::of_first_element(other), None, "{other:?}");
        }
    }
}
