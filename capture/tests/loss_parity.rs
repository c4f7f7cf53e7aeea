//! The YOLOv9 loss against LibreYOLO 1.6's own `loss.py` on the same head
//! maps and targets. Needs the torch venv and LibreYOLO 1.6's sources: the
//! unpacked wheel (`pip download libreyolo==1.6.0 --no-deps`, unzip) named
//! by `LIBREYOLO_REF_DIR`, else the parity venv's installed package
//! (capture/parity/README.md). Ignored unless asked for (`--ignored`;
//! scripts/test.sh does in CI or with `--parity`), and then it fails when
//! they are missing. Their module is loaded on its own with its two package
//! imports stubbed (the IoU helper is theirs too).

mod common;

use libreyolo_capture::train::loss::{Gains, yolo9_loss};
use serde_json::Value;
use tch::{Kind, Tensor};

const SCRIPT: &str = r#"import sys, types, json, torch
ref = sys.argv[1]; out_path = sys.argv[2]
# Load loss.py standalone with its two imports stubbed.
import importlib.util
box = importlib.util.spec_from_file_location('box_ops', ref + '/libreyolo/utils/box_ops.py')
bm = importlib.util.module_from_spec(box); box.loader.exec_module(bm)
for name in ['libreyolo', 'libreyolo.data', 'libreyolo.training', 'libreyolo.training.distributed', 'libreyolo.utils', 'libreyolo.utils.box_ops']:
    sys.modules[name] = types.ModuleType(name)
sys.modules['libreyolo.data'].default_oks_sigmas = None
sys.modules['libreyolo.training.distributed'].all_reduce_avg_scalar_tensor = lambda t: t.detach().float().clamp_min(1.0)
sys.modules['libreyolo.utils.box_ops'].compute_iou = bm.compute_iou
spec = importlib.util.spec_from_file_location('loss', ref + '/libreyolo/models/yolo9/loss.py')
L = importlib.util.module_from_spec(spec); spec.loader.exec_module(L)
torch.manual_seed(0)
nc = 3; S = 128; B = 2
raw = [torch.randn(B, 64 + nc, S // s, S // s) * 0.5 for s in (8, 16, 32)]
tg = torch.zeros(B, 6, 5); tg[:, :, 0] = -1
tg[0, 0] = torch.tensor([1, 0.1, 0.2, 0.5, 0.6]); tg[0, 1] = torch.tensor([2, 0.4, 0.4, 0.9, 0.8]); tg[0, 2] = torch.tensor([0, 0.45, 0.42, 0.88, 0.82])
tg[1, 0] = torch.tensor([0, 0.3, 0.3, 0.35, 0.36])
loss = L.YOLO9Loss(nc, 16, [8, 16, 32], [S, S], torch.device('cpu'), distributed_normalize=False)
out = loss(raw, tg)
json.dump({"raw": [r.flatten().tolist() for r in raw], "shapes": [list(r.shape) for r in raw], "tg": tg.flatten().tolist()}, open(out_path, "w"))

print(json.dumps({k: float(out[k]) for k in ('box', 'dfl', 'cls', 'num_fg', 'total_loss')}))
"#;

#[test]
#[ignore = "needs LibreYOLO 1.6's sources: scripts/test.sh --parity, or LIBREYOLO_REF_DIR=<unpacked libreyolo 1.6.0 wheel>; then --ignored"]
fn loss_matches_libreyolo_on_the_same_maps() {
    let py = common::torch_python();
    let ref_dir = common::libreyolo_sources();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.json");
    let out =
        common::run_python(&py, SCRIPT, &[ref_dir.to_str().unwrap(), input.to_str().unwrap()]);
    let want: Value = serde_json::from_str(out.trim().lines().last().unwrap()).unwrap();
    let data: Value = serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    let to_t = |v: &Value, shape: &[i64]| {
        let f: Vec<f32> =
            v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        Tensor::from_slice(&f).view(shape)
    };
    let raw: Vec<Tensor> = (0..3)
        .map(|i| {
            let shape: Vec<i64> =
                data["shapes"][i].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect();
            to_t(&data["raw"][i], &shape)
        })
        .collect();
    let tg = to_t(&data["tg"], &[2, 6, 5]);
    let l = yolo9_loss(&raw, &tg, (128, 128), 3, &Gains::default());
    let got = |t: &Tensor| f64::try_from(t.to_kind(Kind::Double)).unwrap();
    for (name, ours) in [
        ("box", got(&l.box_loss)),
        ("dfl", got(&l.dfl_loss)),
        ("cls", got(&l.cls_loss)),
        ("total_loss", got(&l.total)),
    ] {
        let theirs = want[name].as_f64().unwrap();
        assert!(
            (ours - theirs).abs() <= 1e-4 * theirs.abs().max(1.0),
            "{name}: ours {ours} theirs {theirs}"
        );
    }
    assert_eq!(l.fg_per_image, want["num_fg"].as_f64().unwrap());
}
