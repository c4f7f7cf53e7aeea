//! The events of one chunk (the prelude, one step, the epilogue) as the
//! generator records them and the renderer writes them: CPU ranges and
//! `[memory]` instants, GPU work with its runtime call, GPU annotations.
//! A chunk is all the generator holds at a time, which keeps its memory
//! constant whatever the trace's size.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CpuKind {
    Op,
    Annotation,
    Memory,
}

#[derive(Debug)]
pub(super) struct CpuEv {
    pub(super) ts: i64,
    pub(super) dur: i64,
    pub(super) tid: i64,
    pub(super) kind: CpuKind,
    pub(super) name: String,
    pub(super) ext: u64,
    /// Pre-rendered extra args (after `External id`, before `Ev Idx`).
    pub(super) args: String,
}

#[derive(Debug)]
pub(super) enum GpuEv {
    Runtime {
        ts: i64,
        dur: i64,
        tid: i64,
        name: &'static str,
        cbid: u32,
        ext: u64,
        corr: u64,
        launch: bool,
    },
    Kernel {
        ts: i64,
        dur: i64,
        stream: i64,
        k: usize,
        ext: u64,
        corr: u64,
    },
    Copy {
        ts: i64,
        dur: i64,
        stream: i64,
        name: &'static str,
        bytes: u64,
        ext: u64,
        corr: u64,
        memset: bool,
    },
}

#[derive(Debug)]
pub(super) struct Ann {
    pub(super) ts: i64,
    pub(super) dur: i64,
    pub(super) name: String,
}
