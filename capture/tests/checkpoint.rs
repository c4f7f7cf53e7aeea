//! Checkpoint reading on checkpoints made here with plain torch.

mod common;

use libreyolo_capture::checkpoint;
use tch::{Kind, Tensor};

const MAKE: &str = r#"
import sys, json, collections, torch
torch.manual_seed(0)
base = torch.randn(4, 6)
sd = collections.OrderedDict()
sd["backbone.conv0.conv.weight"] = torch.nn.Parameter(torch.randn(8, 3, 3, 3))
sd["backbone.conv0.bn.running_mean"] = torch.randn(8)
sd["backbone.conv0.bn.num_batches_tracked"] = torch.tensor(7)
sd["t.transposed"] = base.t()            # non-contiguous view
sd["t.slice"] = base[1:3, 2:]            # storage offset
sd["t.half"] = torch.randn(5).half()
sd["t.bf16"] = torch.randn(5).bfloat16()
sd["t.int"] = torch.arange(6, dtype=torch.int32).reshape(2, 3)
sd["t.bool"] = torch.tensor([True, False, True])
ckpt = {
    "model": sd,
    "schema_version": "1.0",
    "libreyolo_version": "1.6.0",
    "model_family": "yolo9",
    "size": "s",
    "task": "detect",
    "nc": 3,
    "names": {0: "person", 1: "bicycle", 2: "car"},
    "imgsz": 320,
}
torch.save(ckpt, sys.argv[1])
torch.save(sd, sys.argv[2])
print(json.dumps({k: v.float().flatten().tolist() for k, v in sd.items()}))
"#;

#[test]
fn reads_a_libreyolo_checkpoint_and_a_bare_state_dict() {
    let py = common::torch_python();
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("ckpt.pt");
    let bare = dir.path().join("state.pt");
    let out = common::run_python(&py, MAKE, &[full.to_str().unwrap(), bare.to_str().unwrap()]);
    let expected: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(out.trim()).unwrap();

    let ck = checkpoint::load(&full).unwrap();
    assert_eq!(ck.meta_str("model_family"), Some("yolo9"));
    assert_eq!(ck.meta_str("size"), Some("s"));
    assert_eq!(ck.meta_int("nc"), Some(3));
    assert_eq!(ck.meta_int("imgsz"), Some(320));
    assert_eq!(ck.names().unwrap(), ["person", "bicycle", "car"]);
    let keys: Vec<&str> = ck.state.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, expected.keys().map(String::as_str).collect::<Vec<_>>(), "order and names");

    for (name, t) in &ck.state {
        let want: Vec<f64> =
            expected[name].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        let got: Vec<f64> = Vec::<f64>::try_from(t.to_kind(Kind::Double).flatten(0, -1)).unwrap();
        assert_eq!(got.len(), want.len(), "{name}");
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-6, "{name}: {g} vs {w}");
        }
    }
    assert_eq!(ck.tensor("t.transposed").unwrap().size(), [6, 4]);
    assert_eq!(ck.tensor("t.slice").unwrap().size(), [2, 4]);
    assert_eq!(ck.tensor("t.half").unwrap().kind(), Kind::Half);
    assert_eq!(ck.tensor("t.bf16").unwrap().kind(), Kind::BFloat16);
    assert_eq!(ck.tensor("backbone.conv0.bn.num_batches_tracked").unwrap().kind(), Kind::Int64);
    assert_eq!(ck.tensor("t.int").unwrap().kind(), Kind::Int);
    assert_eq!(ck.tensor("t.bool").unwrap().kind(), Kind::Bool);

    let bare = checkpoint::load(&bare).unwrap();
    assert!(bare.meta.is_empty());
    assert_eq!(bare.state.len(), ck.state.len());
    let a: &Tensor = bare.tensor("backbone.conv0.conv.weight").unwrap();
    assert!(a.equal(ck.tensor("backbone.conv0.conv.weight").unwrap()));
}

#[test]
fn corrupt_and_foreign_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.pt");
    std::fs::write(&junk, b"definitely not a zip").unwrap();
    let err = checkpoint::load(&junk).unwrap_err().to_string();
    assert!(err.contains("not a torch.save zip"), "{err}");
    let missing = checkpoint::load(&dir.path().join("nope.pt")).unwrap_err().to_string();
    assert!(missing.contains("cannot open"), "{missing}");
}
