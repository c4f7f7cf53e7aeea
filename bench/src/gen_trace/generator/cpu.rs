//! The CPU side of a chunk: ranges (`cpu_op`s, `user_annotation`s, the
//! `step/<phase>` ranges) nested as the profiler records them, the
//! caching allocator's `[memory]` events, and the ops' recorded arguments.

use super::Gen;
use crate::events::{CpuEv, CpuKind};
use crate::model::{DEVICE, PHASES};

impl Gen {
    /// A CPU-side range: an op (`cpu_op`) or a `user_annotation`, with its
    /// children emitted by `body`. Children get later start times, so the
    /// parent starts strictly first, as Kineto sorts them.
    fn range(&mut self, kind: CpuKind, name: &str, args: String, body: impl FnOnce(&mut Gen)) {
        let start = self.tick(600);
        self.ext += 1;
        let ext = self.ext;
        let idx = self.cpu.len();
        self.cpu.push(CpuEv {
            ts: start,
            dur: 0,
            tid: self.tid,
            kind,
            name: name.to_string(),
            ext,
            args,
        });
        let outer = std::mem::replace(&mut self.cur_ext, ext);
        body(self);
        self.tick(if kind == CpuKind::Op { 1_500 } else { 400 });
        self.cur_ext = outer;
        self.cpu[idx].dur = self.now - start;
        if kind == CpuKind::Op && self.in_step {
            self.truth.cpu_ops += 1;
            if let Some(p) = self.phase {
                self.truth.phases[p].ops += 1;
            }
        }
    }

    pub(super) fn op(&mut self, name: &str, args: String, body: impl FnOnce(&mut Gen)) {
        self.range(CpuKind::Op, name, args, body)
    }

    pub(super) fn leaf(&mut self, name: &str, args: String) {
        self.range(CpuKind::Op, name, args, |g| {
            g.tick(1_800);
        })
    }

    pub(super) fn annotation(&mut self, name: &str, body: impl FnOnce(&mut Gen)) {
        self.range(CpuKind::Annotation, name, String::new(), body)
    }

    /// A `step/<phase>` range; GPU work launched inside belongs to the phase.
    pub(super) fn phase(&mut self, p: usize, body: impl FnOnce(&mut Gen)) {
        let name = format!("step/{}", PHASES[p]);
        let outer = self.phase.replace(p);
        let start_idx = self.cpu.len();
        let slow = self.slow_kernel.filter(|_| {
            self.in_step && self.job.and_then(|j| j.slow).is_some_and(|(sp, _)| sp == p)
        });
        // First in the phase: the optimizer's own work ends in a sync.
        self.annotation(&name, |g| {
            if let Some(k) = slow {
                g.launch_fixed(k);
            }
            body(g);
        });
        self.phase = outer;
        if self.in_step {
            self.truth.phases[p].wall_ns += self.cpu[start_idx].dur;
        }
    }

    /// A CUDA caching-allocator event (`[memory]`), inside the current op.
    pub(super) fn memory(&mut self, bytes: i64) {
        self.alloc += bytes;
        if self.alloc > self.reserved {
            self.reserved = (self.alloc / (20 << 20) + 1) * (20 << 20);
        }
        let ts = self.tick(300);
        self.addr = self.addr.wrapping_add((bytes.unsigned_abs() + 511) & !511);
        let args = format!(
            "\"Total Reserved\": {}, \"Total Allocated\": {}, \"Bytes\": {}, \"Addr\": {}, \"Device Id\": {DEVICE}, \"Device Type\": 1",
            self.reserved, self.alloc, bytes, self.addr
        );
        self.cpu.push(CpuEv {
            ts,
            dur: 0,
            tid: self.tid,
            kind: CpuKind::Memory,
            name: "[memory]".into(),
            ext: 0,
            args,
        });
        if self.in_step {
            self.truth.peak_reserved_bytes = self.truth.peak_reserved_bytes.max(self.reserved);
            self.truth.peak_allocated_bytes = self.truth.peak_allocated_bytes.max(self.alloc);
        }
    }

    pub(super) fn empty(&mut self, name: &str, dims: &str, bytes: i64) {
        let args = format!(
            "\"Input Dims\": [{dims}, [], [], [], [], []], \"Input type\": [\"ScalarList\", \"Scalar\", \"\", \"Device\", \"Scalar\", \"\"], "
        );
        self.op(name, args, |g| {
            g.tick(900);
            // Small allocations come from the allocator's cache silently
            // (as when `profile_memory` rounds them away); large ones show.
            if bytes.abs() >= 256 << 10 {
                g.memory(bytes);
            } else {
                g.alloc += bytes;
            }
        });
    }

    pub(super) fn seq_args(&mut self, dims: &str, types: &str) -> String {
        self.seq_nr += 1;
        format!(
            "\"Sequence number\": {}, \"Fwd thread id\": 0, \"Input Dims\": [{dims}], \"Input type\": [{types}], ",
            self.seq_nr
        )
    }
}
