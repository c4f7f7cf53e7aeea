//! Input images: a file, a directory of images, or the bundled sample
//! photograph. Images are decoded once, up front, into `(3, H, W)` uint8
//! tensors; the measured loop only letterboxes them.

use std::path::{Path, PathBuf};

use libreyolo_core::{Error, Result};
use tch::{Kind, Tensor};

/// The bundled sample: the astronaut Eileen Collins (NASA, public domain),
/// from scikit-image's sample data; see capture/assets/README.md.
const SAMPLE: &[u8] = include_bytes!("../assets/astronaut.jpg");
pub const SAMPLE_NAME: &str = "bundled:astronaut.jpg";

const EXTENSIONS: &[&str] = &["jpg", "jpeg", "png", "bmp"];

/// A decoded image.
pub struct Image {
    pub name: String,
    /// `(3, H, W)` uint8, RGB, a view of the decoded HWC buffer (channels-last
    /// strides: the layout torch's fast uint8 bilinear resize works on).
    pub pixels: Tensor,
    pub width: i64,
    pub height: i64,
}

/// The image files a source names: the file itself, or the images of a
/// directory (sorted, not recursive). Missing source or a directory with no
/// images → usage error (exit 2).
pub fn resolve(source: Option<&str>) -> Result<Vec<PathBuf>> {
    let Some(src) = source else { return Ok(Vec::new()) };
    let path = Path::new(src);
    let meta = std::fs::metadata(path).map_err(|_| Error::usage(format!("source not found: {src}")))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Error::failed(format!("cannot read directory {src}: {e}")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file() && p.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::usage(format!("no images in {src} (looked for {})", EXTENSIONS.join(", "))));
    }
    Ok(files)
}

/// Decodes the source's images (the bundled sample when `files` is empty).
/// An unreadable or corrupt image is a failure (exit 1) naming the file.
pub fn load(files: &[PathBuf]) -> Result<Vec<Image>> {
    if files.is_empty() {
        let img = image::load_from_memory(SAMPLE).map_err(|e| Error::failed(format!("bundled sample image: {e}")))?;
        return Ok(vec![to_tensor(SAMPLE_NAME.to_string(), img)]);
    }
    files
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p).map_err(|e| Error::failed(format!("cannot read image {}: {e}", p.display())))?;
            let img = image::load_from_memory(&bytes).map_err(|e| Error::failed(format!("cannot decode image {}: {e}", p.display())))?;
            Ok(to_tensor(p.display().to_string(), img))
        })
        .collect()
}

fn to_tensor(name: String, img: image::DynamicImage) -> Image {
    let rgb = img.to_rgb8();
    let (w, h) = (rgb.width() as i64, rgb.height() as i64);
    let pixels = Tensor::from_data_size(rgb.as_raw(), &[h, w, 3], Kind::Uint8).permute([2, 0, 1]);
    Image { name, pixels, width: w, height: h }
}
