//! A real capture on CPU: the profiler records our ranges around tch ops, the
//! trace it saves parses in the core, and the steps/phases are found.

mod common;

use libreyolo_capture::profiler::{self, Options, Session};
use tch::{Device, Kind, Tensor};

#[test]
fn ranges_and_ops_reach_the_trace() {
    let _turn = common::turn();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("profile_trace.json");
    let steps = 3u64;
    let x = Tensor::randn([1, 3, 32, 32], (Kind::Float, Device::Cpu));
    let w = Tensor::randn([8, 3, 3, 3], (Kind::Float, Device::Cpu));
    {
        let session = Session::start(Options {
            cuda: false,
            all_threads: true,
            memory: false,
            module_scopes: false,
        })
        .unwrap();
        assert!(profiler::is_running());
        assert!(Session::start(Options::default()).is_err(), "a second session must be refused");
        for n in 0..steps {
            let _step = session.step(n);
            let y = {
                let _r = session.range("step/preprocess");
                (&x * 2.0).contiguous()
            };
            let z = {
                let _r = session.range("step/forward");
                y.conv2d(&w, None::<Tensor>, [1, 1], [1, 1], [1, 1], 1).silu()
            };
            let _r = session.range("step/postprocess");
            let _ = z.sum(Kind::Float).double_value(&[]);
        }
        session.finish(&trace).unwrap();
    }
    assert!(!profiler::is_running());

    let input =
        libreyolo_core::input::load(trace.to_str().unwrap(), Default::default()).unwrap().input;
    let p = &input.profile;
    let phases: Vec<&str> = p.phase_names();
    assert!(phases.contains(&"forward"), "phases: {phases:?}");
    assert!(phases.contains(&"preprocess"), "phases: {phases:?}");
    assert!(!p.ops.is_empty(), "no ops recorded");
    assert!(
        p.ops.iter().any(|o| o.op.contains("conv")),
        "ops: {:?}",
        p.ops.iter().map(|o| &o.op).collect::<Vec<_>>()
    );
    assert_eq!(p.figures.window.real_steps, steps);
}

#[test]
fn dropped_session_stops_the_profiler() {
    let _turn = common::turn();
    {
        let _s = Session::start(Options::default()).unwrap();
    }
    // A new session can start: the first one was stopped by its Drop.
    let s = Session::start(Options::default()).unwrap();
    s.discard().unwrap();
}
