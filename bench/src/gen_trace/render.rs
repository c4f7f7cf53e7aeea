//! Rendering: the events as `torch.profiler` writes them, in Kineto's
//! pretty-printed layout. A top-level object with `schemaVersion`,
//! `deviceProperties` (a job's ranks: `distributedInfo`) and
//! `traceEvents`: the CPU section, then, as Kineto orders it, the GPU
//! section (for each CUDA runtime call in time order, the kernel / memcpy /
//! memset record with its `ac2g` flow end, followed by the `cuda_runtime`
//! record with its flow start, both carrying the same `args.correlation`),
//! the `gpu_user_annotation` mirrors, the `M` metadata and the trailer.
//! Bytes per event and the event mix are close to the real traces (about
//! 280 B/event; cpu_op ≈ 35 %, cuda_runtime ≈ 20 %, flows ≈ 30 %, kernels
//! ≈ 8 %). `Out` counts what is written, for the size and the ground truth.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;

use crate::events::{CpuKind, GpuEv};
use crate::generator::Gen;
use crate::job::JobSpec;
use crate::model::{COMPUTE_STREAM, DEVICE, SMS, STREAMS, TOTAL_GLOBAL_MEM};

fn put_us(out: &mut Vec<u8>, ns: i64) {
    let (us, frac) = (ns.div_euclid(1000), ns.rem_euclid(1000));
    let _ = write!(out, "{us}");
    if frac != 0 {
        let d =
            [b'0' + (frac / 100) as u8, b'0' + (frac / 10 % 10) as u8, b'0' + (frac % 10) as u8];
        let n = if d[2] != b'0' {
            3
        } else if d[1] != b'0' {
            2
        } else {
            1
        };
        out.push(b'.');
        out.extend_from_slice(&d[..n]);
    }
}

#[derive(Default)]
pub(super) struct Renderer {
    /// The CPU events' `Ev Idx`, counted across chunks.
    ev_idx: u64,
}

impl Renderer {
    /// Renders one chunk's CPU section; `each` receives every event.
    pub(super) fn cpu(&mut self, g: &mut Gen, mut each: impl FnMut(&[u8]), buf: &mut Vec<u8>) {
        g.cpu.sort_by_key(|e| (e.ts, std::cmp::Reverse(e.dur)));
        for e in &g.cpu {
            buf.clear();
            match e.kind {
                CpuKind::Op | CpuKind::Annotation => {
                    let cat = if e.kind == CpuKind::Op { "cpu_op" } else { "user_annotation" };
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {},\n    \"ts\": ",
                        e.name, g.pid, e.tid
                    );
                    put_us(buf, e.ts);
                    buf.extend_from_slice(b", \"dur\": ");
                    put_us(buf, e.dur);
                    let _ = write!(
                        buf,
                        ",\n    \"args\": {{\n      \"External id\": {},\"Record function id\": 0, {}\"Ev Idx\": {}\n    }}\n  }}",
                        e.ext, e.args, self.ev_idx
                    );
                }
                CpuKind::Memory => {
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\",\n    \"pid\": {}, \"tid\": {},\n    \"ts\": ",
                        g.pid, e.tid
                    );
                    put_us(buf, e.ts);
                    let _ = write!(
                        buf,
                        ",\n    \"args\": {{\n      {}, \"Ev Idx\": {}\n    }}\n  }}",
                        e.args, self.ev_idx
                    );
                }
            }
            self.ev_idx += 1;
            each(buf);
        }
    }

    pub(super) fn gpu(&mut self, g: &Gen, mut each: impl FnMut(&[u8]), buf: &mut Vec<u8>) {
        for e in &g.gpu {
            match *e {
                GpuEv::Runtime { ts, dur, tid, name, cbid, ext, corr, launch } => {
                    buf.clear();
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{name}\", \"pid\": {}, \"tid\": {tid},\n    \"ts\": ",
                        g.pid
                    );
                    put_us(buf, ts);
                    buf.extend_from_slice(b", \"dur\": ");
                    put_us(buf, dur);
                    let _ = write!(
                        buf,
                        ",\n    \"args\": {{\n      \"External id\": {ext},      \"cbid\": {cbid}, \"correlation\": {corr}\n    }}\n  }}"
                    );
                    each(buf);
                    buf.clear();
                    let ph = if launch { "s" } else { "f" };
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"{ph}\", \"id\": {corr}, \"pid\": {}, \"tid\": {tid}, \"ts\": ",
                        g.pid
                    );
                    put_us(buf, ts);
                    let bp = if launch { "" } else { ", \"bp\": \"e\"" };
                    let _ = write!(buf, ",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"{bp}\n  }}");
                    each(buf);
                }
                GpuEv::Kernel { ts, dur, stream, k, ext, corr } => {
                    let ks = &g.model.kernels[k];
                    let name = &g.model.names[ks.name as usize].0;
                    buf.clear();
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{name}\", \"pid\": {DEVICE}, \"tid\": {stream},\n    \"ts\": "
                    );
                    put_us(buf, ts);
                    buf.extend_from_slice(b", \"dur\": ");
                    put_us(buf, dur);
                    let blocks = (ks.grid[0] as u64 * ks.grid[1] as u64 * ks.grid[2] as u64) as f64;
                    let bps = blocks / SMS;
                    let wps = bps * (ks.block[0] as f64 / 32.0);
                    let occ = (wps / 64.0 * 100.0).min(100.0) as u32;
                    // What PyTorch ≥ 2.3 records on NCCL kernels.
                    let coll = match g.job {
                        Some(j) if ks.nelems > 0 => format!(
                            ",      \"Collective name\": \"allreduce\", \"In msg nelems\": {n}, \"Out msg nelems\": {n}, \"Group size\": {}, \"dtype\": \"Float\", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\"",
                            j.world,
                            n = ks.nelems
                        ),
                        _ => String::new(),
                    };
                    let _ = write!(
                        buf,
                        ",\n    \"args\": {{\n      \"External id\": {ext},      \"queued\": 0, \"device\": {DEVICE}, \"context\": 1,      \"stream\": {stream}, \"correlation\": {corr},      \"registers per thread\": {},      \"shared memory\": {},      \"blocks per SM\": {:.6},      \"warps per SM\": {:.6},      \"grid\": [{}, {}, {}],      \"block\": [{}, {}, {}],      \"est. achieved occupancy %\": {occ}{coll}\n    }}\n  }}",
                        ks.regs,
                        ks.smem,
                        bps,
                        wps,
                        ks.grid[0],
                        ks.grid[1],
                        ks.grid[2],
                        ks.block[0],
                        ks.block[1],
                        ks.block[2]
                    );
                    each(buf);
                    flow_end(buf, corr, stream, ts);
                    each(buf);
                }
                GpuEv::Copy { ts, dur, stream, name, bytes, ext, corr, memset } => {
                    buf.clear();
                    let cat = if memset { "gpu_memset" } else { "gpu_memcpy" };
                    let _ = write!(
                        buf,
                        "  {{\n    \"ph\": \"X\", \"cat\": \"{cat}\", \"name\": \"{name}\", \"pid\": {DEVICE}, \"tid\": {stream},\n    \"ts\": "
                    );
                    put_us(buf, ts);
                    buf.extend_from_slice(b", \"dur\": ");
                    put_us(buf, dur);
                    let bw = bytes as f64 / dur as f64;
                    let _ = write!(
                        buf,
                        ",\n    \"args\": {{\n      \"External id\": {ext},      \"device\": {DEVICE}, \"context\": 1,      \"stream\": {stream}, \"correlation\": {corr},      \"bytes\": {bytes}, \"memory bandwidth (GB/s)\": {bw}\n    }}\n  }}"
                    );
                    each(buf);
                    flow_end(buf, corr, stream, ts);
                    each(buf);
                }
            }
        }
    }

    pub(super) fn annotations(&mut self, g: &Gen, mut each: impl FnMut(&[u8]), buf: &mut Vec<u8>) {
        for a in &g.ann {
            buf.clear();
            let _ = write!(
                buf,
                "  {{\n    \"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"{}\", \"pid\": {DEVICE}, \"tid\": {COMPUTE_STREAM},\n    \"ts\": ",
                a.name
            );
            put_us(buf, a.ts);
            buf.extend_from_slice(b", \"dur\": ");
            put_us(buf, a.dur);
            let _ = write!(buf, ",\n    \"args\": {{\n      \"External id\": 0\n    }}\n  }}");
            each(buf);
        }
    }
}

fn flow_end(buf: &mut Vec<u8>, corr: u64, stream: i64, ts: i64) {
    buf.clear();
    let _ = write!(
        buf,
        "  {{\n    \"ph\": \"f\", \"id\": {corr}, \"pid\": {DEVICE}, \"tid\": {stream}, \"ts\": "
    );
    put_us(buf, ts);
    let _ = write!(buf, ",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }}");
}

/// The output: counts uncompressed bytes and events, writes the separators.
pub(super) struct Out {
    pub(super) w: Box<dyn Write>,
    pub(super) bytes: u64,
    pub(super) events: u64,
    pub(super) by_kind: BTreeMap<String, u64>,
}

impl Out {
    pub(super) fn new(w: Box<dyn Write>) -> Out {
        Out { w, bytes: 0, events: 0, by_kind: BTreeMap::new() }
    }
    pub(super) fn raw(&mut self, b: &[u8]) -> Result<()> {
        self.w.write_all(b)?;
        self.bytes += b.len() as u64;
        Ok(())
    }
    pub(super) fn event(&mut self, b: &[u8]) -> Result<()> {
        if self.events > 0 {
            self.raw(b",\n")?;
        }
        self.events += 1;
        *self.by_kind.entry(kind_of(b)).or_insert(0) += 1;
        self.raw(b)
    }
}

/// "X/cpu_op", "s/ac2g", "M", ... from a rendered event (for the summary).
fn kind_of(b: &[u8]) -> String {
    let s = std::str::from_utf8(&b[..b.len().min(120)]).unwrap_or("");
    let field = |key: &str| -> Option<&str> {
        let i = s.find(key)? + key.len();
        let rest = &s[i..];
        let j = rest.find('"')?;
        Some(&rest[..j])
    };
    match (field("\"ph\": \""), field("\"cat\": \"")) {
        (Some(ph), Some(cat)) => format!("{ph}/{cat}"),
        (Some(ph), None) => ph.to_string(),
        _ => "?".into(),
    }
}

/// Size of an event as written, separator included.
pub(super) fn sized(total: &mut u64) -> impl FnMut(&[u8]) + '_ {
    move |b| *total += b.len() as u64 + 2
}

pub(super) fn header(pid_name: &str, job: Option<JobSpec>) -> String {
    let dist = job.map_or(String::new(), |j| {
        format!(
            "  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}}},\n",
            j.rank, j.world
        )
    });
    format!(
        "\n{{\n  \"schemaVersion\": 1,\n{dist}  \"deviceProperties\": [\n    {{\n      \"id\": 0, \"name\": \"{pid_name}\", \"totalGlobalMem\": {TOTAL_GLOBAL_MEM},\n      \"computeMajor\": 9, \"computeMinor\": 0,\n      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n      \"regsPerBlock\": 65536, \"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, \"numSms\": 132\n    , \"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": 232448, \"sharedMemPerMultiprocessor\": 233472\n    }}\n  ],\n  \"cupti_version\": 24,\n  \"cuda_runtime_version\": 12040,\n  \"cuda_driver_version\": 12040,\n  \"traceEvents\": [\n"
    )
}

pub(super) fn metadata(g: &Gen, end_ts: i64) -> Vec<String> {
    let mut out = Vec::new();
    let mut m = |name: &str, pid: String, tid: String, args: String| {
        let mut b = Vec::new();
        let _ = write!(b, "  {{\n    \"name\": \"{name}\", \"ph\": \"M\", \"ts\": ");
        put_us(&mut b, g.start_ts);
        let _ = write!(
            b,
            ", \"pid\": {pid}, \"tid\": {tid},\n    \"args\": {{\n      {args}\n    }}\n  }}"
        );
        out.push(String::from_utf8(b).unwrap_or_default());
    };
    m("process_name", g.pid.to_string(), "0".into(), "\"name\": \"python3.11\"".into());
    m("process_labels", g.pid.to_string(), "0".into(), "\"labels\": \"CPU\"".into());
    m("process_sort_index", g.pid.to_string(), "0".into(), format!("\"sort_index\": {}", g.pid));
    m("process_name", DEVICE.to_string(), "0".into(), "\"name\": \"python3.11\"".into());
    m("process_labels", DEVICE.to_string(), "0".into(), format!("\"labels\": \"GPU {DEVICE}\""));
    m(
        "process_sort_index",
        DEVICE.to_string(),
        "0".into(),
        format!("\"sort_index\": {}", 5_000_000 + DEVICE),
    );
    for s in STREAMS {
        m("thread_name", DEVICE.to_string(), s.to_string(), format!("\"name\": \"stream {s} \""));
        m("thread_sort_index", DEVICE.to_string(), s.to_string(), format!("\"sort_index\": {s}"));
    }
    for (tid, what) in [(g.main_tid, "pt_main_thread"), (g.bwd_tid, "pt_autograd_0")] {
        m(
            "thread_name",
            g.pid.to_string(),
            tid.to_string(),
            format!("\"name\": \"thread {tid} ({what})\""),
        );
        m(
            "thread_sort_index",
            g.pid.to_string(),
            tid.to_string(),
            format!("\"sort_index\": {tid}"),
        );
    }
    let mut b = Vec::new();
    let _ = write!(b, "  {{\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
    put_us(&mut b, g.start_ts);
    b.extend_from_slice(b", \"dur\": ");
    put_us(&mut b, end_ts - g.start_ts);
    let _ = write!(
        b,
        ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {{\n      \"Op count\": 0\n    }}\n  }}"
    );
    out.push(String::from_utf8(b).unwrap_or_default());
    let mut b = Vec::new();
    let _ = write!(
        b,
        "  {{\n    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": "
    );
    put_us(&mut b, g.start_ts);
    b.extend_from_slice(b"\n  }");
    out.push(String::from_utf8(b).unwrap_or_default());
    let mut b = Vec::new();
    let _ = write!(
        b,
        "  {{\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": "
    );
    put_us(&mut b, end_ts);
    b.extend_from_slice(b"\n  }");
    out.push(String::from_utf8(b).unwrap_or_default());
    out
}

pub(super) const TRAILER: &str = "\n  ],\n  \"traceName\": \"/tmp/libreyolo_gen_trace.json\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1700000000000000000\n}\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_keep_nanoseconds() {
        for (ns, s) in [
            (1_500, "1.5"),
            (2_000, "2"),
            (4_458_676_983_543_183, "4458676983543.183"),
            (10, "0.01"),
            (1_001, "1.001"),
        ] {
            let mut b = Vec::new();
            put_us(&mut b, ns);
            assert_eq!(String::from_utf8(b).unwrap(), s);
        }
    }
}
