//! Property tests of the trace reader: whatever bytes it is given (a valid
//! trace cut, flipped or spliced anywhere), it returns a profile or an
//! error, never panics and never hangs.

use std::io::Write;

use libreyolo_core::profile;
use proptest::prelude::*;

const VALID: &str = r#"{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU", "totalGlobalMem": 1000000}],
"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "user_annotation", "name": "step/forward", "pid": 1, "tid": 1, "ts": 5, "dur": 500},
 {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": 10, "dur": 50, "args": {"External id": 4}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 4, "args": {"correlation": 9}},
 {"ph": "s", "id": 9, "pid": 1, "tid": 1, "ts": 12, "cat": "ac2g", "name": "ac2g"},
 {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_\"q\"\\x", "pid": 0, "tid": 7, "ts": 30, "dur": 300, "args": {"correlation": 9, "grid": [1, 2, 3]}},
 {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 40, "args": {"Total Reserved": 500, "Device Type": 1, "Device Id": 0}},
 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 400, "dur": 10, "args": {"correlation": 11}}
]}"#;

fn analyse(bytes: &[u8]) -> Result<profile::Input, libreyolo_core::Error> {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(bytes).unwrap();
    profile::load(f.path().to_str().unwrap(), false)
}

#[test]
fn the_valid_trace_reads() {
    let input = analyse(VALID.as_bytes()).unwrap();
    let p = input.profile;
    assert_eq!(p.window.real_steps, 1);
    assert_eq!(p.kernels_per_step, 1.0);
    assert_eq!(p.tensorcore_pct, 100.0);
    assert_eq!(p.phases[0].phase, "forward");
    assert_eq!(p.phases[0].kernels_per_step, 1.0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn truncated_traces_never_panic(cut in 0usize..VALID.len()) {
        let r = analyse(&VALID.as_bytes()[..cut]);
        // Only a cut that still ends the document can succeed.
        if cut < VALID.len() - 2 {
            prop_assert!(r.is_err());
        }
    }

    #[test]
    fn corrupted_bytes_never_panic(pos in 0usize..VALID.len(), byte in any::<u8>()) {
        let mut bytes = VALID.as_bytes().to_vec();
        bytes[pos] = byte;
        let _ = analyse(&bytes);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = analyse(&bytes);
    }

    #[test]
    fn spliced_events_never_panic(a in 0usize..VALID.len(), b in 0usize..VALID.len()) {
        let (a, b) = (a.min(b), a.max(b));
        let mut bytes = VALID.as_bytes()[..a].to_vec();
        bytes.extend_from_slice(&VALID.as_bytes()[b..]);
        let _ = analyse(&bytes);
    }
}
