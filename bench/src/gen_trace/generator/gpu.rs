//! The GPU side of a chunk: CUDA runtime calls and the kernels, copies and
//! memsets they start, queued on the compute and NCCL streams, each with
//! the ground truth it adds to; and the straggler of a job: its extra
//! kernel, or the all-reduces that wait for it.

use super::Gen;
use crate::events::GpuEv;
use crate::model::{COMM_STREAM, COMPUTE_STREAM};

impl Gen {
    /// A CUDA runtime call that launches nothing (it still has a correlation).
    pub(super) fn runtime(&mut self, name: &'static str, cbid: u32, dur: i64) {
        let ts = self.tick(500);
        let dur = self.rng.jitter(dur, 0.5);
        self.corr += 1;
        self.gpu.push(GpuEv::Runtime {
            ts,
            dur,
            tid: self.tid,
            name,
            cbid,
            ext: self.cur_ext,
            corr: self.corr,
            launch: false,
        });
        self.now = ts + dur;
    }

    fn gpu_extent(&mut self, start: i64, end: i64) {
        if let Some(p) = self.phase {
            let e = self.phase_gpu[p].get_or_insert((start, end));
            e.0 = e.0.min(start);
            e.1 = e.1.max(end);
        }
    }

    /// `cudaLaunchKernel` of kernel `k` on `stream`, and the kernel itself.
    pub(super) fn launch(&mut self, k: usize, stream: i64) {
        if self.rng.chance(0.35) {
            self.runtime("cudaStreamIsCapturing", 317, 900);
        }
        if self.rng.chance(0.12) {
            self.runtime("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 251, 1_200);
            self.runtime("cudaFuncSetAttribute", 239, 1_000);
        }
        let ts = self.tick(700);
        let dur = self.rng.jitter(5_500, 0.5);
        let si = if stream == COMPUTE_STREAM { 0 } else { 1 };
        let start = (ts + self.rng.jitter(4_000, 0.5))
            .max(self.stream_free[si] + self.rng.range(1_000, 2_500));
        let mut kdur = self.rng.jitter(self.model.kernels[k].dur, 0.08);
        if si == 0 && self.stretch_next > 0 {
            kdur += std::mem::take(&mut self.stretch_next);
            self.stretched = Some(k);
        }
        // Waiting in a collective for a later rank: it ends when theirs does.
        if let Some((s, d)) =
            self.wait_until.take().filter(|(s, d)| si == 1 && s + d > start + kdur)
        {
            if self.in_step {
                self.waited_ns += (s - start).max(0);
            }
            kdur = s + d - start;
        }
        self.stream_free[si] = start + kdur;
        self.launched(k, stream, (ts, dur), (start, kdur));
    }

    /// A gradient all-reduce. Under `--slow-mode stretch` each waits for the
    /// compute stream (its gradients) on every rank; the
    /// straggler records when each of its all-reduces ran, and the others'
    /// kernel lasts until the straggler's ends (they wait in it, as NCCL
    /// makes them), which the end of backward passes on to their compute.
    pub(super) fn launch_allreduce(&mut self, k: usize) {
        let Some((_, slow)) = self.job.and_then(|j| j.stretch) else {
            return self.launch(k, COMM_STREAM);
        };
        // Each waits for its gradients (`cudaStreamWaitEvent`).
        self.first_allreduce = false;
        self.stream_free[1] = self.stream_free[1].max(self.stream_free[0]);
        if !slow {
            self.wait_until = self.wait_for.get(self.arrivals.len()).copied();
        }
        self.launch(k, COMM_STREAM);
        // Every rank counts its all-reduces in `arrivals` (the others'
        // entries are their own, unused): the k-th matches the k-th.
        if let Some(GpuEv::Kernel { ts, dur, .. }) =
            self.gpu.iter().rev().find(|e| matches!(e, GpuEv::Kernel { .. }))
        {
            self.arrivals.push((*ts, *dur));
        }
    }

    /// The straggler's extra kernel: launched like any other but drawing
    /// nothing from the RNG, so the rest of its trace stays the same as the
    /// other ranks'. It starts after everything queued on both streams.
    pub(super) fn launch_fixed(&mut self, k: usize) {
        self.now += 700;
        let (ts, dur) = (self.now, 5_500);
        let start = (ts + 4_000).max(self.stream_free[0].max(self.stream_free[1]) + 1_500);
        let kdur = self.model.kernels[k].dur;
        self.stream_free[0] = start + kdur;
        self.launched(k, COMPUTE_STREAM, (ts, dur), (start, kdur));
    }

    /// Kernel `k` launched at `launch` (ts, dur) and run at `run` (start,
    /// dur) on `stream`: its two events, and the ground truth it adds to.
    fn launched(
        &mut self,
        k: usize,
        stream: i64,
        (ts, dur): (i64, i64),
        (start, kdur): (i64, i64),
    ) {
        self.corr += 1;
        self.gpu.push(GpuEv::Kernel {
            ts: start,
            dur: kdur,
            stream,
            k,
            ext: self.cur_ext,
            corr: self.corr,
        });
        self.gpu.push(GpuEv::Runtime {
            ts,
            dur,
            tid: self.tid,
            name: "cudaLaunchKernel",
            cbid: 211,
            ext: self.cur_ext,
            corr: self.corr,
            launch: true,
        });
        self.now = ts + dur;
        self.spans.push((start, start + kdur));
        self.gpu_extent(start, start + kdur);
        let t = &mut self.truth;
        if self.in_step {
            let name = self.model.kernels[k].name;
            t.kernels += 1;
            t.kernel_ns += kdur;
            t.gpu_events_in_steps += 1;
            t.names.insert(name);
            if self.model.names[name as usize].1 {
                t.tensorcore_ns += kdur;
            }
            if let Some(p) = self.phase {
                let ph = &mut t.phases[p];
                ph.kernels += 1;
                ph.kernel_ns += kdur;
                ph.names.insert(name);
            }
        } else {
            t.gpu_events_outside_steps += 1;
        }
        t.runtime_launches += 1;
    }

    /// `cudaMemcpyAsync` / `cudaMemsetAsync` and the GPU copy it starts.
    pub(super) fn copy(
        &mut self,
        name: &'static str,
        bytes: u64,
        gbps: f64,
        memset: bool,
        stream: i64,
    ) {
        let ts = self.tick(800);
        let dur = self.rng.jitter(if memset { 4_000 } else { 9_000 }, 0.4);
        self.corr += 1;
        let si = if stream == COMPUTE_STREAM { 0 } else { 1 };
        let start = (ts + self.rng.jitter(3_000, 0.5)).max(self.stream_free[si] + 1_000);
        let cdur = self.rng.jitter((bytes as f64 / gbps).max(1_100.0) as i64, 0.05);
        self.stream_free[si] = start + cdur;
        self.gpu.push(GpuEv::Copy {
            ts: start,
            dur: cdur,
            stream,
            name,
            bytes,
            ext: self.cur_ext,
            corr: self.corr,
            memset,
        });
        let (rname, cbid) = if memset { ("cudaMemsetAsync", 51) } else { ("cudaMemcpyAsync", 41) };
        self.gpu.push(GpuEv::Runtime {
            ts,
            dur,
            tid: self.tid,
            name: rname,
            cbid,
            ext: self.cur_ext,
            corr: self.corr,
            launch: true,
        });
        self.now = ts + dur;
        self.gpu_extent(start, start + cdur);
        let t = &mut self.truth;
        if self.in_step {
            t.memcpy_events += 1;
            t.memcpy_ns += cdur;
            t.gpu_events_in_steps += 1;
            if let Some(p) = self.phase {
                t.phases[p].memcpy_events += 1;
                t.phases[p].memcpy_ns += cdur;
            }
        } else {
            t.gpu_events_outside_steps += 1;
        }
        t.runtime_launches += 1;
    }
}
