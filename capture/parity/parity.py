#!/usr/bin/env python3
"""Numerical parity reference: LibreYOLO 1.6's YOLOv9, run in Python.

Builds `LibreYOLO9Model` (random init, fixed seed, BatchNorm statistics and
class priors randomised so the check is not trivial), saves it as a
LibreYOLO v1.0 checkpoint, runs its forward and its postprocess on a fixed
image and writes what came out, for `cargo test -p libreyolo-capture --test
parity` to compare against ours.

Needs libreyolo==1.6.0 in a separate venv (see capture/parity/README.md):

    python capture/parity/parity.py --size t --out /tmp/parity-t
    python capture/parity/parity.py --size t --keys capture/parity/keys_t.json
    python capture/parity/parity.py --size t --aux --keys capture/parity/keys_t_aux.json

Outputs in --out: checkpoint.pt, image.png, reference.pt (a torch.save'd dict:
input, raw0..raw2, predictions, boxes, scores, classes), keys.json.

With --aux the model carries the PGI auxiliary branch LibreYOLO attaches for
training (`enable_aux(weight=0.25)`, as its trainer does): the checkpoint then
holds `aux.*` / `aux_head.*` tensors too, and reference.pt adds aux0..aux2, the
auxiliary head's raw maps (eval-mode BatchNorm) on the same input, and
their training loss on that input with fixed targets (train-mode BatchNorm,
main + 0.25 · auxiliary): targets, loss_total_loss, loss_box, loss_dfl,
loss_cls, loss_num_fg.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
from PIL import Image

from libreyolo.models.yolo9.nn import LibreYOLO9Model
from libreyolo.preprocess.yolo9 import preprocess_image
from libreyolo.postprocess.yolo9 import postprocess


def build(size, nc, seed, aux=False):
    torch.manual_seed(seed)
    model = LibreYOLO9Model(config=size, nb_classes=nc)
    if aux:
        # Before the randomisation below, so the branch's BatchNorm
        # statistics and class priors are randomised as well.
        model.enable_aux(weight=0.25)
    with torch.no_grad():
        for name, mod in model.named_modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.normal_(0.0, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.normal_(0.0, 0.1)
        # Class priors around sigmoid(-3): some anchors pass conf 0.25, so
        # NMS has real work and boxes to compare.
        for head in (model.head, model.aux_head):
            for tower in head.cv3 if head is not None else ():
                tower[-1].bias.normal_(-3.0, 1.0)
    return model.eval()


def key_list(model):
    return {k: list(v.shape) for k, v in sorted(model.state_dict().items())}


def write_keys(path, model):
    """One `"name": [shape]` per line: small, and diffs read well."""
    keys = key_list(model)
    lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in keys.items()]
    with open(path, "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")


def fixed_image(path, w=640, h=640, seed=7):
    """A deterministic square picture (no letterbox padding) with texture
    everywhere: a random model then gives every anchor a distinct score, so
    float noise cannot reorder near-ties and change which box NMS keeps."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.stack([(xx * 255 // w), (yy * 255 // h), ((xx + yy) * 255 // (w + h))], -1).astype(np.int32)
    img += rng.integers(-40, 40, size=(h, w, 3))
    for _ in range(12):
        x0, y0 = rng.integers(0, w - 40), rng.integers(0, h - 40)
        bw, bh = rng.integers(20, 160), rng.integers(20, 160)
        img[y0:y0 + bh, x0:x0 + bw] += rng.integers(-80, 80, 3)
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="t", choices=["t", "s", "m", "c"])
    ap.add_argument("--nc", type=int, default=80)
    ap.add_argument("--imgsz", type=int, default=320)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--iou", type=float, default=0.45)
    ap.add_argument("--max-det", type=int, default=300)
    ap.add_argument("--image", help="image to use instead of the generated one")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--keys", help="write only the state-dict key list (name -> shape) here")
    ap.add_argument("--aux", action="store_true", help="attach the PGI auxiliary branch (enable_aux(0.25))")
    a = ap.parse_args()

    torch.set_num_threads(1)
    model = build(a.size, a.nc, a.seed, a.aux)
    if a.keys:
        write_keys(a.keys, model)
        return
    if not a.out:
        sys.exit("--out or --keys is required")
    os.makedirs(a.out, exist_ok=True)

    ckpt = {
        "model": model.state_dict(),
        "schema_version": "1.0",
        "libreyolo_version": "1.6.0",
        "model_family": "yolo9",
        "size": a.size,
        "task": "detect",
        "nc": a.nc,
        "names": {i: f"class{i}" for i in range(a.nc)},
        "imgsz": a.imgsz,
    }
    torch.save(ckpt, os.path.join(a.out, "checkpoint.pt"))

    image = a.image or os.path.join(a.out, "image.png")
    if not a.image:
        fixed_image(image)
    x, orig, size = preprocess_image(image, input_size=a.imgsz)
    with torch.no_grad():
        out = model(x)
    det = postprocess(out, conf_thres=a.conf, iou_thres=a.iou, input_size=a.imgsz,
                      original_size=size, max_det=a.max_det)
    ref = {"input": x, "predictions": out["predictions"],
           "boxes": torch.tensor(det["boxes"], dtype=torch.float32).reshape(-1, 4),
           "scores": torch.tensor(det["scores"], dtype=torch.float32),
           "classes": torch.tensor(det["classes"], dtype=torch.int64)}
    for i, r in enumerate(out["raw_outputs"]):
        ref[f"raw{i}"] = r
    if a.aux:
        # The auxiliary maps of their training graph (backbone with the
        # pre-SPP B5, AuxNeck, aux DDetect), in eval mode so BatchNorm uses
        # the running statistics: in eval DDetect returns (decoded, raw).
        with torch.no_grad():
            p3, p4, _, b5 = model.backbone(x, return_b5=True)
            _, aux_raw = model.aux_head(list(model.aux(p3, p4, b5)))
        for i, r in enumerate(aux_raw):
            ref[f"aux{i}"] = r
        # Their training forward with targets (train-mode BatchNorm, both
        # heads, each with its own YOLO9Loss, combined by
        # combine_aux_losses): the loss our training step must reproduce.
        # Last, since it updates BatchNorm running statistics.
        targets = torch.tensor([[[3, 0.10, 0.15, 0.45, 0.60],
                                 [17, 0.40, 0.35, 0.90, 0.85],
                                 [0, 0.62, 0.05, 0.75, 0.30]]], dtype=torch.float32)
        targets[..., 0] %= a.nc
        model.train()
        with torch.no_grad():
            losses = model(x, targets=targets)
        model.eval()
        ref["targets"] = targets
        for k in ("total_loss", "box", "dfl", "cls", "num_fg"):
            ref[f"loss_{k}"] = torch.as_tensor(losses[k], dtype=torch.float32).reshape(1)
    torch.save(ref, os.path.join(a.out, "reference.pt"))
    write_keys(os.path.join(a.out, "keys.json"), model)
    print(json.dumps({"size": a.size, "imgsz": a.imgsz, "orig_size": list(size),
                      "detections": det["num_detections"], "out": a.out}))


if __name__ == "__main__":
    main()
