//! Our YOLOv9-t has exactly LibreYOLO 1.6's state-dict names and shapes: the
//! inference model (`keys_t.json`) and the training model with the PGI
//! auxiliary branch its trainer attaches (`keys_t_aux.json`, after
//! `enable_aux(weight=0.25)`). Both lists were written by
//! capture/parity/parity.py. Needs libtorch but no Python.

use libreyolo_capture::model::Yolo9;
use libreyolo_core::cli::ModelSize;

fn assert_same_keys(model: &Yolo9, text: &str) {
    let want: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).unwrap();
    let want: Vec<(String, Vec<i64>)> = want
        .into_iter()
        .map(|(k, v)| (k, v.as_array().unwrap().iter().map(|d| d.as_i64().unwrap()).collect()))
        .collect();
    let got = model.state_shapes();
    let missing: Vec<&String> =
        want.iter().filter(|w| !got.iter().any(|g| g.0 == w.0)).map(|w| &w.0).collect();
    let extra: Vec<&String> =
        got.iter().filter(|g| !want.iter().any(|w| w.0 == g.0)).map(|g| &g.0).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing: {missing:?}\nextra: {extra:?}");
    for (name, shape) in &want {
        let ours = &got.iter().find(|g| &g.0 == name).unwrap().1;
        assert_eq!(ours, shape, "{name}");
    }
}

#[test]
fn yolo9_t_state_dict_matches_libreyolo_1_6() {
    let model = Yolo9::new(ModelSize::T, 80, tch::Device::Cpu).unwrap();
    assert_same_keys(&model, include_str!("../parity/keys_t.json"));
}

#[test]
fn yolo9_t_training_state_dict_with_pgi_matches_libreyolo_1_6() {
    let mut model = Yolo9::new(ModelSize::T, 80, tch::Device::Cpu).unwrap();
    model.enable_aux(0.25);
    let text = include_str!("../parity/keys_t_aux.json");
    assert!(
        text.contains("\"aux.spp.cv1.conv.weight\"") && text.contains("\"aux_head.cv3.2.2.bias\"")
    );
    assert_same_keys(&model, text);
}

#[test]
fn every_size_builds_and_runs() {
    for size in ModelSize::ALL {
        let model = Yolo9::new(size, 3, tch::Device::Cpu).unwrap();
        let out = model
            .forward(&tch::Tensor::zeros([1, 3, 64, 64], (tch::Kind::Float, tch::Device::Cpu)));
        let anchors = 8 * 8 + 4 * 4 + 2 * 2;
        assert_eq!(out.predictions.size(), [1, 4 + 3, anchors], "{size}");
        assert_eq!(out.raw[0].size(), [1, 64 + 3, 8, 8], "{size}");
    }
    assert_eq!(ModelSize::parse("x"), None, "a size YOLOv9 does not have names no model");
}
