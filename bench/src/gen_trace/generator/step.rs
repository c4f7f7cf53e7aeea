//! What a training step records, built from the CPU and GPU pieces: a
//! `ProfilerStep#N` range and `step/<phase>` ranges on the main thread,
//! nested `cpu_op`s with `External id` / `Input Dims`, the backward pass on
//! an autograd thread, `[memory]` events, the GPU mirrors of the step and
//! phase ranges; and the prelude and epilogue the profiler records outside
//! the steps.

use super::Gen;
use crate::events::Ann;
use crate::model::{COMPUTE_STREAM, PHASES};

/// ns per µs.
const US: i64 = 1000;

impl Gen {
    pub(crate) fn prelude(&mut self) {
        self.clear();
        // What the profiler records before the first step: a few tensor
        // factory calls and one fill kernel, outside every step.
        self.empty("aten::empty", "[1]", 512);
        self.op(
            "aten::zeros",
            "\"Input Dims\": [[], [], [], [], []], \"Input type\": [\"ScalarList\", \"Scalar\", \"\", \"Device\", \"Scalar\"], ".into(),
            |g| {
                g.empty("aten::empty", "[1]", 512);
                g.op("aten::zero_", "\"Input Dims\": [[1]], \"Input type\": [\"float\"], ".into(), |g| {
                    g.op("aten::fill_", "\"Input Dims\": [[1], []], \"Input type\": [\"float\", \"Scalar\"], ".into(), |g| {
                        let k = g.model.fill;
                        g.launch(k, COMPUTE_STREAM);
                    });
                });
            },
        );
        self.tick(40_000);
    }

    pub(crate) fn epilogue(&mut self) {
        self.clear();
        self.tick(30_000);
        self.op(
            "aten::zeros",
            "\"Input Dims\": [[], [], [], [], []], \"Input type\": [\"ScalarList\", \"Scalar\", \"\", \"Device\", \"Scalar\"], ".into(),
            |g| {
                g.empty("aten::empty", "[1]", 512);
                g.op("aten::fill_", "\"Input Dims\": [[1], []], \"Input type\": [\"float\", \"Scalar\"], ".into(), |g| {
                    let k = g.model.fill;
                    g.launch(k, COMPUTE_STREAM);
                });
            },
        );
        self.runtime("cudaDeviceSynchronize", 165, 30_000);
    }

    pub(crate) fn step(&mut self) {
        self.clear();
        self.first_allreduce = true;
        self.tick(3_000);
        let step_start_idx = self.cpu.len();
        let name = format!("ProfilerStep#{}", self.step_no);
        self.in_step = true;
        self.annotation(&name, |g| {
            g.phase(0, |g| g.dataload());
            g.phase(1, |g| g.copy_to_device());
            g.phase(2, |g| g.forward());
            g.phase(3, |g| g.backward());
            g.phase(4, |g| g.optimizer());
        });
        self.in_step = false;
        let (s, d) = (self.cpu[step_start_idx].ts, self.cpu[step_start_idx].dur);
        // GPU mirrors of the step and phase ranges (newer Kineto).
        self.ann.push(Ann { ts: s + 1_000, dur: d - 2_000, name: name.clone() });
        for (p, ext) in self.phase_gpu.iter().enumerate() {
            if let Some((a, b)) = ext {
                self.ann.push(Ann { ts: *a, dur: b - a, name: format!("step/{}", PHASES[p]) });
            }
        }
        // Ground truth for the step.
        let t = &mut self.truth;
        t.steps += 1;
        if t.steps == 1 {
            t.first_step = self.step_no;
        }
        t.step_wall_ns += d;
        self.spans.sort_unstable();
        let mut cur: Option<(i64, i64)> = None;
        for &(a, b) in &self.spans {
            assert!(a >= s && b <= s + d, "a kernel outside its step");
            match cur {
                Some((cs, ce)) if a <= ce => cur = Some((cs, ce.max(b))),
                Some((cs, ce)) => {
                    t.gpu_busy_ns += ce - cs;
                    cur = Some((a, b));
                }
                None => cur = Some((a, b)),
            }
        }
        if let Some((cs, ce)) = cur {
            t.gpu_busy_ns += ce - cs;
        }
        self.step_no += 1;
    }

    fn dataload(&mut self) {
        let wait = self.rng.range(300, 2_500) * US;
        self.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", |g| {
            g.now += wait;
        });
    }

    fn copy_to_device(&mut self) {
        let (b, s) = (self.model.batch, self.model.imgsz);
        let img_bytes = (b * 3 * s * s * 4) as u64;
        for (dims, bytes, name) in [
            (format!("[{b}, 3, {s}, {s}]"), img_bytes, "Memcpy HtoD (Pinned -> Device)"),
            ("[214, 6]".to_string(), 214 * 6 * 4, "Memcpy HtoD (Pinned -> Device)"),
        ] {
            let args = format!(
                "\"Input Dims\": [{dims}, [], [], [], [], []], \"Input type\": [\"float\", \"\", \"Scalar\", \"Scalar\", \"Scalar\", \"\"], "
            );
            self.op("aten::to", args.clone(), |g| {
                g.op("aten::_to_copy", args.clone(), |g| {
                    g.empty("aten::empty_strided", &format!("{dims}, []"), bytes as i64);
                    g.op(
                        "aten::copy_",
                        format!("\"Input Dims\": [{dims}, {dims}, []], \"Input type\": [\"float\", \"float\", \"Scalar\"], "),
                        |g| {
                            g.copy(name, bytes, 24.0, false, COMPUTE_STREAM);
                        },
                    );
                });
            });
        }
    }

    fn forward(&mut self) {
        let layers = self.model.layers.clone();
        let b = self.model.batch;
        let mut hw_in = self.model.imgsz;
        for l in &layers {
            let inp = format!("[{b}, {}, {hw_in}, {hw_in}]", l.cin);
            let w = format!("[{}, {}, {}, {}]", l.cout, l.cin, l.k, l.k);
            let out = format!("[{b}, {}, {}, {}]", l.cout, l.hw, l.hw);
            let pad = l.k / 2;
            let cargs = self.seq_args(
                &format!("{inp}, {w}, [], [{s}, {s}], [{pad}, {pad}], [1, 1], []", s = l.stride),
                "\"float\", \"float\", \"\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\"",
            );
            self.op("aten::conv2d", cargs, |g| {
                let a = format!("\"Input Dims\": [{inp}, {w}, [], [], [], [], [], [], []], \"Input type\": [\"float\", \"float\", \"\", \"ScalarList\", \"ScalarList\", \"ScalarList\", \"Scalar\", \"ScalarList\", \"Scalar\"], ");
                g.op("aten::convolution", a.clone(), |g| {
                    g.op("aten::_convolution", a.clone(), |g| {
                        g.op("aten::cudnn_convolution", format!("\"Input Dims\": [{inp}, {w}, [], [], [], [], [], [], []], "), |g| {
                            g.empty("aten::empty", &out, l.act_bytes);
                            for &k in &l.conv_fwd {
                                g.launch(k, COMPUTE_STREAM);
                            }
                        });
                    });
                });
            });
            let bargs = self.seq_args(
                &format!("{out}, [{c}], [{c}], [{c}], [{c}], [], [], [], []", c = l.cout),
                "\"float\", \"float\", \"float\", \"float\", \"float\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\"",
            );
            self.op("aten::batch_norm", bargs, |g| {
                let a = format!(
                    "\"Input Dims\": [{out}, [{c}], [{c}], [{c}], [{c}], [], [], [], []], ",
                    c = l.cout
                );
                g.op("aten::_batch_norm_impl_index", a.clone(), |g| {
                    g.op("aten::cudnn_batch_norm", a.clone(), |g| {
                        g.op(
                            "aten::empty_like",
                            format!("\"Input Dims\": [{out}, [], [], [], [], []], "),
                            |g| {
                                g.empty("aten::empty_strided", &format!("{out}, []"), l.act_bytes);
                            },
                        );
                        g.empty("aten::empty", &format!("[{}]", l.cout), l.cout as i64 * 8);
                        g.empty("aten::empty", "[0]", 0);
                        g.launch(l.bn_fwd, COMPUTE_STREAM);
                    });
                });
            });
            let sargs = self.seq_args(&out, "\"float\"");
            self.op("aten::silu_", sargs, |g| g.launch(l.act_fwd, COMPUTE_STREAM));
            hw_in = l.hw;
        }
        // Head and loss.
        let pred = format!("[{b}, 255, 8400]");
        self.op("aten::cat", format!("\"Input Dims\": [[[{b}, 255, 80, 80], [{b}, 255, 40, 40], [{b}, 255, 20, 20]], []], \"Input type\": [\"TensorList\", \"Scalar\"], "), |g| {
            g.empty("aten::empty", &pred, (b * 255 * 8400 * 4) as i64);
            let k = g.model.cat;
            g.launch(k, COMPUTE_STREAM);
        });
        let loss = self.model.loss.clone();
        for (name, k) in ["aten::sub", "aten::pow", "aten::mean"].iter().zip(loss) {
            let a =
                self.seq_args(&format!("{pred}, {pred}, []"), "\"float\", \"float\", \"Scalar\"");
            self.op(name, a, |g| {
                g.empty("aten::empty", &pred, 0);
                g.launch(k, COMPUTE_STREAM);
            });
        }
        self.op(
            "aten::zeros",
            "\"Input Dims\": [[], [], [], [], []], \"Input type\": [\"ScalarList\", \"Scalar\", \"\", \"Device\", \"Scalar\"], ".into(),
            |g| {
                g.empty("aten::empty", "[3]", 512);
                g.op("aten::zero_", "\"Input Dims\": [[3]], \"Input type\": [\"float\"], ".into(), |g| {
                    g.copy("Memset (Device)", 12, 0.004, true, COMPUTE_STREAM);
                });
            },
        );
    }

    fn backward(&mut self) {
        let b = self.model.batch;
        // The loop thread seeds the gradient, then the autograd engine's
        // thread runs the graph while the loop thread waits.
        self.op("aten::ones_like", "\"Input Dims\": [[], [], [], [], [], []], ".into(), |g| {
            g.op("aten::empty_like", "\"Input Dims\": [[], [], [], [], [], []], ".into(), |g| {
                g.empty("aten::empty_strided", "[], []", 512)
            });
            g.op(
                "aten::fill_",
                "\"Input Dims\": [[], []], \"Input type\": [\"float\", \"Scalar\"], ".into(),
                |g| {
                    let k = g.model.fill;
                    g.launch(k, COMPUTE_STREAM);
                },
            );
        });
        let saved = self.now;
        self.tid = self.bwd_tid;
        self.tick(8_000);
        let loss_bwd = self.model.loss_bwd.clone();
        for (name, k) in ["MeanBackward0", "PowBackward0"].iter().zip(loss_bwd) {
            let full = format!("autograd::engine::evaluate_function: {name}");
            self.op(&full, String::new(), |g| {
                let a = g.seq_args("[]", "\"float\"");
                g.op(name, a, |g| {
                    g.op("aten::mul", format!("\"Input Dims\": [[{b}, 255, 8400], []], \"Input type\": [\"float\", \"Scalar\"], "), |g| {
                        g.empty("aten::empty", "[]", 0);
                        g.launch(k, COMPUTE_STREAM);
                    });
                });
            });
        }
        let layers = self.model.layers.clone();
        for l in layers.iter().rev() {
            let out = format!("[{b}, {}, {}, {}]", l.cout, l.hw, l.hw);
            self.op("autograd::engine::evaluate_function: SiluBackward0", String::new(), |g| {
                let a = g.seq_args(&out, "\"float\"");
                g.op("SiluBackward0", a, |g| {
                    g.op("aten::silu_backward", format!("\"Input Dims\": [{out}, {out}], \"Input type\": [\"float\", \"float\"], "), |g| {
                        g.empty("aten::empty", &out, l.act_bytes);
                        g.launch(l.act_bwd, COMPUTE_STREAM);
                    });
                });
            });
            self.op("autograd::engine::evaluate_function: CudnnBatchNormBackward0", String::new(), |g| {
                let a = g.seq_args(&out, "\"float\"");
                g.op("CudnnBatchNormBackward0", a, |g| {
                    g.op(
                        "aten::cudnn_batch_norm_backward",
                        format!("\"Input Dims\": [{out}, {out}, [{c}], [{c}], [{c}], [{c}], [{c}], [], []], ", c = l.cout),
                        |g| {
                            g.op("aten::empty_like", format!("\"Input Dims\": [{out}, [], [], [], [], []], "), |g| {
                                g.empty("aten::empty_strided", &format!("{out}, []"), l.act_bytes);
                            });
                            g.empty("aten::empty", &format!("[{}]", l.cout), l.cout as i64 * 8);
                            g.launch(l.bn_bwd, COMPUTE_STREAM);
                        },
                    );
                });
                g.memory(-l.act_bytes);
            });
            self.op("autograd::engine::evaluate_function: ConvolutionBackward0", String::new(), |g| {
                let a = g.seq_args(&out, "\"float\"");
                g.op("ConvolutionBackward0", a, |g| {
                    g.op(
                        "aten::convolution_backward",
                        format!("\"Input Dims\": [{out}, [], [{}, {}, {}, {}], [], [], [], [], [], [], [], []], ", l.cout, l.cin, l.k, l.k),
                        |g| {
                            g.empty(
                                "aten::empty",
                                &format!("[{}, {}, {}, {}]", l.cout, l.cin, l.k, l.k),
                                (l.cout * l.cin * l.k * l.k) as i64 * 4,
                            );
                            for (i, &k) in l.conv_bwd.iter().enumerate() {
                                // `stretch`: the straggler's last kernel before the step's first all-reduce.
                                if let Some((d, true)) = g.job.and_then(|j| j.stretch)
                                    && g.first_allreduce
                                    && l.allreduce.is_some()
                                    && i + 1 == l.conv_bwd.len()
                                {
                                    g.stretch_next = d;
                                }
                                g.launch(k, COMPUTE_STREAM);
                            }
                        },
                    );
                });
                g.memory(-2 * l.act_bytes);
            });
            for _ in 0..3 {
                self.op(
                    "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                    String::new(),
                    |g| {
                        g.op("torch::autograd::AccumulateGrad", String::new(), |g| {
                            g.op(
                                "aten::detach",
                                format!(
                                    "\"Input Dims\": [[{}]], \"Input type\": [\"float\"], ",
                                    l.cout
                                ),
                                |g| g.leaf("detach", String::new()),
                            );
                        });
                    },
                );
            }
            if let Some(k) = l.allreduce {
                self.annotation("nccl:all_reduce", |g| {
                    g.op(
                        "record_param_comms",
                        "\"Input Dims\": [[[1]], [], [], [], [], [], [], [], [], [], [], []], "
                            .into(),
                        |g| {
                            g.op("c10d::allreduce_", String::new(), |g| {
                                g.runtime("cudaEventRecord", 135, 1_500);
                                g.runtime("cudaStreamWaitEvent", 147, 1_200);
                                g.launch_allreduce(k);
                                g.runtime("cudaEventRecord", 135, 1_500);
                            });
                        },
                    );
                });
            }
        }
        let bwd_end = self.now;
        self.tid = self.main_tid;
        self.now = saved.max(bwd_end) + self.rng.range(5, 20) * US;
        // The compute stream waits for the last gradient all-reduce.
        self.op("aten::record_stream", String::new(), |g| {
            g.runtime("cudaStreamWaitEvent", 147, 1_500);
            g.stream_free[0] = g.stream_free[0].max(g.stream_free[1]);
        });
    }

    fn optimizer(&mut self) {
        self.annotation("Optimizer.zero_grad#AdamW.zero_grad", |g| {
            g.tick(60_000);
        });
        let adam = self.model.adam.clone();
        self.annotation("Optimizer.step#AdamW.step", |g| {
            g.op("aten::_foreach_add_", "\"Input Dims\": [[[], [], []], []], \"Input type\": [\"TensorList\", \"Scalar\"], ".into(), |g| {
                let k = g.model.foreach_add;
                g.launch(k, COMPUTE_STREAM);
            });
            g.op(
                "aten::_fused_adamw_",
                "\"Input Dims\": [[[], [], []], [[], [], []], [[], [], []], [[], [], []], [], [], [], [], [], [], [], [], [], []], ".into(),
                |g| {
                    for &k in &adam {
                        g.launch(k, COMPUTE_STREAM);
                    }
                },
            );
        });
        // loss.item(): a device-to-host copy and a sync; the GPU drains.
        self.op("aten::item", "\"Input Dims\": [[]], \"Input type\": [\"float\"], ".into(), |g| {
            g.op(
                "aten::_local_scalar_dense",
                "\"Input Dims\": [[]], \"Input type\": [\"float\"], ".into(),
                |g| {
                    g.copy("Memcpy DtoH (Device -> Pinned)", 4, 0.002, false, COMPUTE_STREAM);
                    let wait = (g.stream_free[0].max(g.stream_free[1]) - g.now).max(0) + 2_000;
                    g.runtime("cudaStreamSynchronize", 131, wait);
                    g.now = g.now.max(g.stream_free[0].max(g.stream_free[1]) + 1_000);
                },
            );
        });
    }
}
