//! Letterbox as LibreYOLO's YOLOv9 does it: scale by
//! `min(imgsz/h, imgsz/w)` (sizes truncated), bilinear resize of the uint8
//! image (half-pixel centres, like cv2's INTER_LINEAR; torch's uint8
//! channels-last kernel, within one grey level of cv2 and as fast), pad with
//! 114 — top-left by default (the resized image in the corner, pad right and
//! bottom), `center` when the checkpoint says so — then, on the device,
//! scale to 0–1. Resizing in uint8 on the CPU and moving uint8 to the device
//! is what LibreYOLO does too (cv2 then `.to(device)`), with a quarter of
//! the bytes to copy.

use tch::{Device, Kind, Tensor};

/// Where the pad goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pad {
    TopLeft,
    Center,
}

impl Pad {
    /// LibreYOLO's names: `topleft` (default, and anything unknown), `center`.
    pub fn parse(v: Option<&str>) -> Pad {
        match v.map(|s| s.trim().to_ascii_lowercase().replace(['-', '_'], "")) {
            Some(s) if s == "center" || s == "centre" => Pad::Center,
            _ => Pad::TopLeft,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Pad::TopLeft => "topleft",
            Pad::Center => "center",
        }
    }
}

/// The geometry of one letterbox: scale and the offset of the resized image.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Letterbox {
    pub ratio: f64,
    pub new_w: i64,
    pub new_h: i64,
    pub pad_left: i64,
    pub pad_top: i64,
    pub orig_w: i64,
    pub orig_h: i64,
}

pub fn geometry(orig_w: i64, orig_h: i64, size: i64, pad: Pad) -> Letterbox {
    let ratio = (size as f64 / orig_h as f64).min(size as f64 / orig_w as f64);
    let new_h = ((orig_h as f64 * ratio) as i64).max(1);
    let new_w = ((orig_w as f64 * ratio) as i64).max(1);
    let (pad_left, pad_top) = match pad {
        Pad::TopLeft => (0, 0),
        Pad::Center => ((size - new_w) / 2, (size - new_h) / 2),
    };
    Letterbox { ratio, new_w, new_h, pad_left, pad_top, orig_w, orig_h }
}

/// Letterboxes a `(3, H, W)` uint8 image into a `(1, 3, size, size)` float
/// tensor in 0–1 on `device`.
pub fn letterbox(pixels: &Tensor, size: i64, pad: Pad, device: Device) -> (Tensor, Letterbox) {
    let (_, h, w) = pixels.size3().expect("a (3, H, W) image");
    let g = geometry(w, h, size, pad);
    let x = pixels.unsqueeze(0);
    let resized = if (g.new_h, g.new_w) == (h, w) {
        x
    } else {
        x.upsample_bilinear2d([g.new_h, g.new_w], false, None, None)
    };
    let (right, bottom) = (size - g.new_w - g.pad_left, size - g.pad_top - g.new_h);
    let canvas = resized.pad([g.pad_left, right, g.pad_top, bottom], "constant", Some(114.0));
    let x = canvas.to_device(device).to_kind(Kind::Float).contiguous() / 255.0;
    (x, g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_like_libreyolo() {
        let g = geometry(480, 360, 320, Pad::TopLeft);
        assert_eq!((g.new_w, g.new_h, g.pad_left, g.pad_top), (320, 240, 0, 0));
        let c = geometry(480, 360, 320, Pad::Center);
        assert_eq!((c.pad_left, c.pad_top), (0, 40));
        assert_eq!(Pad::parse(Some("Centre")), Pad::Center);
        assert_eq!(Pad::parse(None), Pad::TopLeft);
    }

    #[test]
    fn pad_is_114_and_scaled() {
        let img = Tensor::full([3, 10, 20], 200, (Kind::Uint8, Device::Cpu));
        let (x, g) = letterbox(&img, 32, Pad::TopLeft, Device::Cpu);
        assert_eq!(x.size(), [1, 3, 32, 32]);
        assert_eq!((g.new_w, g.new_h), (32, 16));
        let v = |y: i64, xx: i64| x.double_value(&[0, 0, y, xx]);
        assert!((v(0, 0) - 200.0 / 255.0).abs() < 1e-6);
        assert!((v(31, 31) - 114.0 / 255.0).abs() < 1e-6);
    }
}
