//! Input images: a file, a directory of images, or the bundled sample
//! photograph. The images a capture's window takes are decoded once, up
//! front, into `(3, H, W)` uint8 tensors (so no decode is timed); the
//! measured loop only letterboxes them. What they will decode to is summed
//! from their headers first and held to the memory budget.

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
pub fn resolve(source: Option<&Path>) -> Result<Vec<PathBuf>> {
    let Some(path) = source else { return Ok(Vec::new()) };
    let src = path.display();
    let meta =
        std::fs::metadata(path).map_err(|_| Error::usage(format!("source not found: {src}")))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !meta.is_dir() {
        return Err(Error::usage(format!("source {src} is neither an image file nor a directory")));
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Error::failed(format!("cannot read directory {src}: {e}")).caused_by(e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::usage(format!(
            "no images in {src} (looked for {})",
            EXTENSIONS.join(", ")
        )));
    }
    Ok(files)
}

/// The largest image file read: a 16384² PNG is far less.
pub const MAX_IMAGE_FILE_BYTES: u64 = 256 << 20;

/// Reads an image file: a regular file of at most [`MAX_IMAGE_FILE_BYTES`].
pub fn read_image_file(p: &Path) -> std::result::Result<Vec<u8>, String> {
    use std::io::Read;
    let f = std::fs::File::open(p).map_err(|e| e.to_string())?;
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let mut bytes = Vec::new();
    f.take(MAX_IMAGE_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_IMAGE_FILE_BYTES {
        return Err(format!("larger than {} MiB", MAX_IMAGE_FILE_BYTES >> 20));
    }
    Ok(bytes)
}

/// Decodes an image, refusing a truncated JPEG (the decoder fills the
/// missing rows with grey and says nothing, so a capture would run on
/// half an image). The image crate's default limits (512 MiB per image)
/// bound what one image may decode to.
pub fn decode(bytes: &[u8]) -> std::result::Result<image::DynamicImage, String> {
    if bytes.starts_with(&[0xff, 0xd8]) && !jpeg_is_complete(bytes) {
        return Err("truncated JPEG (no end-of-image marker after its scans)".into());
    }
    image::load_from_memory(bytes).map_err(|e| e.to_string())
}

/// Whether a JPEG's marker segments run to its end-of-image marker: the
/// segments are skipped by their lengths (an EXIF thumbnail's own EOI
/// inside APP1 is not taken for the image's), entropy-coded data up to the
/// next marker (`FF` then neither `00` nor a restart marker).
pub fn jpeg_is_complete(b: &[u8]) -> bool {
    let mut i = 2;
    loop {
        // A marker: FF (fill bytes FF allowed) then its code.
        while b.get(i) == Some(&0xff) && b.get(i + 1) == Some(&0xff) {
            i += 1;
        }
        let (Some(&0xff), Some(&code)) = (b.get(i), b.get(i + 1)) else { return false };
        i += 2;
        match code {
            0xd9 => return true,
            // Markers without a length.
            0x01 | 0xd0..=0xd7 => continue,
            _ => {}
        }
        let Some(len) = b.get(i..i + 2).map(|l| u16::from_be_bytes([l[0], l[1]]) as usize) else {
            return false;
        };
        if len < 2 {
            return false;
        }
        i += len;
        if code == 0xda {
            // Entropy-coded data: up to the next real marker.
            loop {
                let Some(at) = b.get(i..).and_then(|rest| memchr::memchr(0xff, rest)) else {
                    return false;
                };
                i += at;
                match b.get(i + 1) {
                    Some(0x00 | 0xd0..=0xd7 | 0xff) => i += 1,
                    Some(_) => break,
                    None => return false,
                }
            }
        }
    }
}

/// Decodes the source's images (the bundled sample when `files` is empty).
/// An unreadable, corrupt or truncated image is a failure (exit 1) naming
/// the file; so are images that would decode to more than the memory
/// budget (`--max-memory`, default half the RAM), said from their headers
/// before any is decoded.
pub fn load(files: &[PathBuf], budget: &libreyolo_core::budget::Budget) -> Result<Vec<Image>> {
    if files.is_empty() {
        let img = image::load_from_memory(SAMPLE)
            .map_err(|e| Error::failed(format!("bundled sample image: {e}")).caused_by(e))?;
        return Ok(vec![to_tensor(SAMPLE_NAME.to_string(), img)]);
    }
    let budget = budget.limit.unwrap_or(u64::MAX);
    let mut decoded = 0u64;
    for p in files {
        let (w, h) = image::ImageReader::open(p)
            .and_then(|r| r.with_guessed_format())
            .map_err(|e| {
                Error::failed(format!("cannot read image {}: {e}", p.display())).caused_by(e)
            })?
            .into_dimensions()
            .map_err(|e| {
                Error::failed(format!("cannot decode image {}: {e}", p.display())).caused_by(e)
            })?;
        decoded = decoded.saturating_add(w as u64 * h as u64 * 3);
        if decoded > budget {
            use libreyolo_core::budget::human;
            return Err(Error::failed(format!(
                "the {} images decode to more than the {} the capture may use (--max-memory SIZE; default half the RAM), reached at {}: profile fewer or smaller images",
                files.len(),
                human(budget),
                p.display()
            )));
        }
    }
    files
        .iter()
        .map(|p| {
            let bytes = read_image_file(p).map_err(|e| {
                Error::failed(format!("cannot read image {}: {e}", p.display())).caused_by(e)
            })?;
            let img = decode(&bytes).map_err(|e| {
                Error::failed(format!("cannot decode image {}: {e}", p.display())).caused_by(e)
            })?;
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
