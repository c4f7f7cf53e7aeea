//! YOLO-format datasets: the dataset YAML (`path`, `train`, `val`, `names` as
//! a list or a map, optional `nc`), image folders or list files, labels in
//! `labels/` beside `images/`, and dataset names resolved from the local
//! datasets folders.
//!
//! Label handling follows LibreYOLO 1.6 (`parse_yolo_label_line`): an image
//! without a label file has no boxes; a line that is not `class cx cy w h`
//! (too few fields, not numbers, not finite), a class outside `0..nc`, or a
//! box with no area after clipping to the image is skipped. Rows with more
//! than five numbers are polygons: their bounding box is used. Skipped lines
//! are counted and reported once.
//!
//! The YAML reader covers what dataset files use: top-level `key: value`
//! scalars, block lists (`- item`) and maps (`0: name`) under a key, and
//! inline `[a, b]` / `{0: a, 1: b}`; comments and quotes are handled.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use libreyolo_core::{Error, Result};

/// The largest dataset YAML read (a 10 000-class `names` list is ~200 KB).
pub const MAX_YAML_BYTES: u64 = 16 << 20;
/// The largest label file read (300 boxes, or long polygons, are KBs).
pub const MAX_LABEL_BYTES: u64 = 16 << 20;
/// The largest image list file read (a million paths is ~60 MB).
pub const MAX_LIST_BYTES: u64 = 256 << 20;
/// The most classes a dataset may name: the model's bound.
pub const MAX_CLASSES: usize = crate::model::MAX_CLASSES as usize;

/// Why a text file was not read.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    #[error("no such file")]
    Missing,
    #[error("not a regular file")]
    NotFile,
    #[error("larger than {} MiB", .0 >> 20)]
    TooLarge(u64),
    #[error("not UTF-8 text")]
    NotUtf8,
    #[error("{0}")]
    Io(std::io::Error),
}

/// Reads a regular file of at most `cap` bytes as UTF-8 text, a leading
/// byte-order mark dropped. A device (`/dev/zero`), FIFO or huge file is
/// refused without being read to its end.
pub fn read_text(path: &Path, cap: u64) -> std::result::Result<String, TextError> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound { TextError::Missing } else { TextError::Io(e) }
    })?;
    if !f.metadata().map_err(TextError::Io)?.is_file() {
        return Err(TextError::NotFile);
    }
    let mut bytes = Vec::new();
    f.take(cap + 1).read_to_end(&mut bytes).map_err(TextError::Io)?;
    if bytes.len() as u64 > cap {
        return Err(TextError::TooLarge(cap));
    }
    let mut text = String::from_utf8(bytes).map_err(|_| TextError::NotUtf8)?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

/// A resolved dataset: its training images and label files, class names.
#[derive(Debug, Clone)]
pub struct YoloData {
    pub yaml: PathBuf,
    pub names: Vec<String>,
    pub images: Vec<PathBuf>,
}

/// A YAML value of the subset we read.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Scalar(String),
    List(Vec<String>),
    Map(Vec<(String, String)>),
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2
        && ((s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\'')))
    {
        s[1..s.len() - 1].to_string()
    } else {
        s.to_string()
    }
}

/// Drops a `#` comment that is not inside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if i == 0 || line[..i].ends_with(char::is_whitespace) => return &line[..i],
            _ => {}
        }
    }
    line
}

fn split_inline(s: &str) -> Vec<String> {
    s.split(',').map(unquote).filter(|v| !v.is_empty()).collect()
}

/// Parses the top level of a dataset YAML.
pub fn parse_yaml(text: &str) -> Result<Vec<(String, Value)>> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = strip_comment(raw).trim_end();
        if line.trim().is_empty() || line.trim() == "---" {
            continue;
        }
        let indented = line.starts_with(char::is_whitespace);
        let t = line.trim();
        if indented || t.starts_with("- ") || t == "-" {
            let Some((_, last)) = out.last_mut() else {
                return Err(Error::failed(format!(
                    "line {}: indented entry with no key above it",
                    n + 1
                )));
            };
            if let Some(item) = t.strip_prefix('-') {
                match last {
                    Value::List(v) => v.push(unquote(item)),
                    Value::Scalar(s) if s.is_empty() => *last = Value::List(vec![unquote(item)]),
                    _ => {
                        return Err(Error::failed(format!(
                            "line {}: a list item where a value was already given",
                            n + 1
                        )));
                    }
                }
            } else if let Some((k, v)) = t.split_once(':') {
                match last {
                    Value::Map(m) => m.push((unquote(k), unquote(v))),
                    Value::Scalar(s) if s.is_empty() => {
                        *last = Value::Map(vec![(unquote(k), unquote(v))])
                    }
                    _ => {
                        return Err(Error::failed(format!(
                            "line {}: a map entry where a value was already given",
                            n + 1
                        )));
                    }
                }
            }
            continue;
        }
        let Some((k, v)) = t.split_once(':') else {
            return Err(Error::failed(format!("line {}: expected `key: value`, got `{t}`", n + 1)));
        };
        let v = v.trim();
        let value = if let Some(inner) = v.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            Value::List(split_inline(inner))
        } else if let Some(inner) = v.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Value::Map(
                inner
                    .split(',')
                    .filter_map(|kv| kv.split_once(':'))
                    .map(|(k, v)| (unquote(k), unquote(v)))
                    .collect(),
            )
        } else {
            Value::Scalar(unquote(v))
        };
        out.push((unquote(k), value));
    }
    Ok(out)
}

const IMG_EXTS: &[&str] = &["jpg", "jpeg", "png", "bmp"];

fn is_image(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMG_EXTS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The images under `dir`, following symlinks but entering each directory
/// once (by device and inode): a symlink loop (`images/a -> .`) would
/// otherwise make the walk exponential.
fn walk(dir: &Path, out: &mut Vec<PathBuf>, seen: &mut HashSet<(u64, u64)>) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(dir) else { return };
    if !seen.insert((meta.dev(), meta.ino())) {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out, seen);
        } else if is_image(&p) && p.is_file() {
            out.push(p);
        }
    }
}

/// Images of a split entry: a folder (recursively), a list file, or an image.
fn split_images(entry: &Path) -> Result<Vec<PathBuf>> {
    if entry.is_dir() {
        let mut v = Vec::new();
        walk(entry, &mut v, &mut HashSet::new());
        v.sort();
        return Ok(v);
    }
    if entry.extension().is_some_and(|e| e == "txt") {
        let text = read_text(entry, MAX_LIST_BYTES)
            .map_err(|e| Error::usage(format!("image list {}: {e}", entry.display())))?;
        let base = entry.parent().unwrap_or(Path::new("."));
        let mut v: Vec<PathBuf> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| if Path::new(l).is_absolute() { PathBuf::from(l) } else { base.join(l) })
            .filter(|p| is_image(p))
            .collect();
        v.sort();
        return Ok(v);
    }
    if is_image(entry) && entry.is_file() {
        return Ok(vec![entry.to_path_buf()]);
    }
    Err(Error::usage(format!(
        "training images {}: no such folder, list file or image",
        entry.display()
    )))
}

/// The label file of an image: the last `images` path component becomes
/// `labels`, the extension `.txt`.
pub fn label_path(img: &Path) -> PathBuf {
    let comps: Vec<_> = img.components().collect();
    let idx = comps.iter().rposition(|c| c.as_os_str() == "images");
    let mut p = PathBuf::new();
    for (i, c) in comps.iter().enumerate() {
        if Some(i) == idx { p.push("labels") } else { p.push(c.as_os_str()) }
    }
    p.set_extension("txt");
    p
}

/// Where dataset names are looked up, in order.
pub fn dataset_dirs() -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(d) = std::env::var_os("LIBREYOLO_DATASETS_DIR") {
        v.push(PathBuf::from(d));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(c) = cache {
        v.push(c.join("libreyolo").join("datasets"));
    }
    v.push(PathBuf::from("datasets"));
    v
}

/// Resolves `data` (a YAML path or a dataset name) to a YAML file.
pub fn resolve(data: &str) -> Result<PathBuf> {
    let p = Path::new(data);
    let is_yaml = p.extension().is_some_and(|e| e == "yaml" || e == "yml");
    if is_yaml || p.components().count() > 1 {
        if p.is_file() {
            return Ok(p.to_path_buf());
        }
        if p.is_dir() {
            for f in ["data.yaml", "dataset.yaml"] {
                if p.join(f).is_file() {
                    return Ok(p.join(f));
                }
            }
        }
        return Err(Error::usage(format!("data {data}: no such dataset YAML")));
    }
    let dirs = dataset_dirs();
    for d in &dirs {
        for c in [
            d.join(format!("{data}.yaml")),
            d.join(data).join(format!("{data}.yaml")),
            d.join(data).join("data.yaml"),
        ] {
            if c.is_file() {
                return Ok(c);
            }
        }
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(Error::usage(format!(
        "data {data}: no dataset of that name (looked for {data}.yaml, {data}/{data}.yaml and {data}/data.yaml in {}). Give the path of a YOLO dataset YAML, put the dataset in one of those folders (or set LIBREYOLO_DATASETS_DIR), or use the built-in synthetic dataset",
        looked.join(", ")
    )))
}

/// Loads the YAML and lists the training images.
pub fn load(data: &str) -> Result<YoloData> {
    let yaml = resolve(data)?;
    let text = read_text(&yaml, MAX_YAML_BYTES)
        .map_err(|e| Error::usage(format!("{}: {e}", yaml.display())))?;
    let doc = parse_yaml(&text).map_err(|e| Error::usage(format!("{}: {e}", yaml.display())))?;
    let get = |k: &str| doc.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.clone());
    let base = yaml.parent().unwrap_or(Path::new(".")).to_path_buf();
    let root = match get("path") {
        Some(Value::Scalar(s)) if !s.is_empty() => {
            let p = PathBuf::from(&s);
            if p.is_absolute() { p } else { base.join(p) }
        }
        _ => base,
    };
    let mut names: Vec<String> = match get("names") {
        Some(Value::List(v)) => v,
        Some(Value::Map(m)) => {
            let mut m: Vec<(usize, String)> =
                m.into_iter().filter_map(|(k, v)| k.parse().ok().map(|k| (k, v))).collect();
            m.sort();
            m.into_iter().map(|(_, v)| v).collect()
        }
        _ => Vec::new(),
    };
    if names.len() > MAX_CLASSES {
        return Err(Error::usage(format!(
            "{}: {} names, more than the {MAX_CLASSES} classes a model is built for",
            yaml.display(),
            names.len()
        )));
    }
    if let Some(Value::Scalar(nc)) = get("nc") {
        let nc: usize = nc
            .parse()
            .map_err(|_| Error::usage(format!("{}: nc `{nc}` is not a number", yaml.display())))?;
        // Checked before `nc` class names are made up.
        if !(1..=MAX_CLASSES).contains(&nc) {
            return Err(Error::usage(format!(
                "{}: nc {nc}: expected 1 to {MAX_CLASSES} classes",
                yaml.display()
            )));
        }
        if names.is_empty() {
            names = (0..nc).map(|i| format!("class{i}")).collect();
        } else if names.len() != nc {
            return Err(Error::usage(format!(
                "{}: nc is {nc} but {} names are given",
                yaml.display(),
                names.len()
            )));
        }
    }
    if names.is_empty() {
        return Err(Error::usage(format!(
            "{}: no `names` (or `nc`): the class count is unknown",
            yaml.display()
        )));
    }
    let entries: Vec<String> = match get("train") {
        Some(Value::Scalar(s)) if !s.is_empty() => vec![s],
        Some(Value::List(v)) => v,
        _ => return Err(Error::usage(format!("{}: no `train` split", yaml.display()))),
    };
    let mut images = Vec::new();
    for e in entries {
        let p = PathBuf::from(&e);
        images.extend(split_images(&if p.is_absolute() { p } else { root.join(p) })?);
    }
    if images.is_empty() {
        return Err(Error::usage(format!("{}: the train split holds no images", yaml.display())));
    }
    Ok(YoloData { yaml, names, images })
}

/// Parses a label file's text for an image of `w`×`h` pixels, as
/// LibreYOLO does; returns `[class, x1, y1, x2, y2]` in pixels and the
/// number of lines skipped.
pub fn parse_labels(text: &str, w: f32, h: f32, nc: usize) -> (Vec<[f32; 5]>, usize) {
    let mut out = Vec::new();
    let mut skipped = 0;
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.is_empty() {
            continue;
        }
        let parsed = (|| {
            if parts.len() < 5 {
                return None;
            }
            let cls: i64 = parts[0].parse().ok()?;
            let nums: Vec<f32> =
                parts[1..].iter().map(|p| p.parse::<f32>().ok()).collect::<Option<_>>()?;
            if !nums.iter().all(|v| v.is_finite()) {
                return None;
            }
            let (cx, cy, bw, bh) = if nums.len() == 4 {
                (nums[0], nums[1], nums[2], nums[3])
            } else {
                if nums.len() < 6 || nums.len() % 2 != 0 {
                    return None;
                }
                let xs = nums.iter().step_by(2);
                let ys = nums.iter().skip(1).step_by(2);
                let (x0, x1) = xs.fold((f32::MAX, f32::MIN), |(a, b), &v| (a.min(v), b.max(v)));
                let (y0, y1) = ys.fold((f32::MAX, f32::MIN), |(a, b), &v| (a.min(v), b.max(v)));
                ((x0 + x1) / 2.0, (y0 + y1) / 2.0, x1 - x0, y1 - y0)
            };
            if cls < 0 || cls as usize >= nc {
                return None;
            }
            let x1 = ((cx - bw / 2.0) * w).clamp(0.0, w);
            let y1 = ((cy - bh / 2.0) * h).clamp(0.0, h);
            let x2 = ((cx + bw / 2.0) * w).clamp(0.0, w);
            let y2 = ((cy + bh / 2.0) * h).clamp(0.0, h);
            (x2 > x1 && y2 > y1).then_some([cls as f32, x1, y1, x2, y2])
        })();
        match parsed {
            Some(l) => out.push(l),
            None => skipped += 1,
        }
    }
    (out, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_subset_reads_dataset_files() {
        let doc = parse_yaml(
            "# comment\npath: ../data  # root\ntrain: images/train\nval: 'images/val'\nnames:\n  0: cat\n  1: \"dog # not a comment\"\nlist:\n- a\n- b\ninline: [x, 'y']\nmap: {0: p, 1: q}\nnc: 2\n",
        )
        .unwrap();
        let get = |k: &str| doc.iter().find(|(kk, _)| kk == k).unwrap().1.clone();
        assert_eq!(get("path"), Value::Scalar("../data".into()));
        assert_eq!(get("val"), Value::Scalar("images/val".into()));
        assert_eq!(
            get("names"),
            Value::Map(vec![
                ("0".into(), "cat".into()),
                ("1".into(), "dog # not a comment".into())
            ])
        );
        assert_eq!(get("list"), Value::List(vec!["a".into(), "b".into()]));
        assert_eq!(get("inline"), Value::List(vec!["x".into(), "y".into()]));
        assert_eq!(
            get("map"),
            Value::Map(vec![("0".into(), "p".into()), ("1".into(), "q".into())])
        );
    }

    #[test]
    fn labels_are_parsed_and_bad_lines_skipped_as_libreyolo() {
        let text = "0 0.5 0.5 0.5 0.5\n\n1 0.1 0.1 0.2\nx 0.5 0.5 0.1 0.1\n5 0.5 0.5 0.1 0.1\n1 0.5 0.5 nan 0.1\n1 0.0 0.0 0.0 0.0\n1 0.1 0.1 0.3 0.1 0.3 0.4\n";
        let (l, skipped) = parse_labels(text, 100.0, 200.0, 2);
        assert_eq!(skipped, 5);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0], [0.0, 25.0, 50.0, 75.0, 150.0]);
        // Polygon (0.1,0.1) (0.3,0.1) (0.3,0.4): its bounding box.
        assert!(
            (l[1][1] - 10.0).abs() < 1e-4
                && (l[1][3] - 30.0).abs() < 1e-4
                && (l[1][4] - 80.0).abs() < 1e-4,
            "{:?}",
            l[1]
        );
    }

    #[test]
    fn label_files_sit_beside_images() {
        assert_eq!(
            label_path(Path::new("/d/images/train/a.jpg")),
            PathBuf::from("/d/labels/train/a.txt")
        );
        assert_eq!(
            label_path(Path::new("d/images/x/images/b.png")),
            PathBuf::from("d/images/x/labels/b.txt")
        );
    }

    #[test]
    fn an_unknown_name_says_where_it_looked() {
        let err = resolve("no-such-dataset-anywhere").unwrap_err();
        assert_eq!(err.exit_code(), libreyolo_core::error::exit::USAGE);
        let msg = err.to_string();
        assert!(
            msg.contains("datasets")
                && msg.contains("LIBREYOLO_DATASETS_DIR")
                && msg.contains("synthetic"),
            "{msg}"
        );
    }
}
