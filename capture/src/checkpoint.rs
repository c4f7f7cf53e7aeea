//! LibreYOLO checkpoints: a `torch.save`d zip whose `data.pkl` holds a dict
//! (`model` = state dict as an OrderedDict, `schema_version`,
//! `libreyolo_version`, `model_family`, `size`, `task`, `nc`, `names`,
//! `imgsz`) and whose tensors live in `data/<key>` entries. libtorch's own
//! unpickler turns the OrderedDict into None, so the pickle is read here
//! ([`crate::pickle`]) and the torch parts are interpreted: persistent ids
//! `('storage', torch.<Kind>Storage, key, location, numel)`,
//! `torch._utils._rebuild_tensor_v2` and `_rebuild_parameter`.
//! A bare state dict (an OrderedDict at the top) loads too, with no metadata.
//!
//! Nothing in the file is trusted before it is checked: zip entries are read
//! with a cap (the pickle's [`MAX_PICKLE_BYTES`], a storage's own size from
//! its persistent id) whatever their header declares, and every tensor's
//! size, stride and offset are checked against its storage and
//! [`MAX_TENSOR_BYTES`] before tch sees them (tch panics on a view past its
//! storage). Each refusal is one line naming the entry.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value as Json};
use tch::{Kind, Tensor};

use crate::pickle::{self, PickleError, Value};

/// A loaded checkpoint.
pub struct Checkpoint {
    /// Every top-level field but the state dict, as JSON.
    pub meta: Map<String, Json>,
    /// The state dict in file order (CPU tensors).
    pub state: Vec<(String, Tensor)>,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("meta", &self.meta)
            .field("tensors", &self.state.len())
            .finish()
    }
}

impl Checkpoint {
    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta.get(key)?.as_str()
    }
    pub fn meta_int(&self, key: &str) -> Option<i64> {
        self.meta.get(key)?.as_i64()
    }
    /// Class names in index order, from a list or an {index: name} dict.
    pub fn names(&self) -> Option<Vec<String>> {
        match self.meta.get("names")? {
            Json::Array(a) => Some(
                a.iter()
                    .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
                    .collect(),
            ),
            Json::Object(o) => {
                let mut v: Vec<(i64, String)> = o
                    .iter()
                    .filter_map(|(k, n)| Some((k.parse().ok()?, n.as_str()?.to_string())))
                    .collect();
                v.sort();
                Some(v.into_iter().map(|(_, n)| n).collect())
            }
            _ => None,
        }
    }
    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.state.iter().find(|(k, _)| k == name).map(|(_, t)| t)
    }
}

/// A name read from the file, as an error message shows it: its control
/// characters escaped, so that the message stays one line (a damaged
/// pickle's name may hold a newline).
fn clean(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() })
        .collect()
}

/// Why a checkpoint could not be read; each says it in one line.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot open: {0}")]
    Open(std::io::Error),
    #[error("not a torch.save zip archive ({0})")]
    NotZip(zip::result::ZipError),
    #[error("no data.pkl in the archive: not a torch.save checkpoint")]
    NoPickle,
    #[error("missing {} in the archive ({})", clean(.0), .1)]
    MissingEntry(String, zip::result::ZipError),
    #[error("cannot read {}: {}", clean(.0), .1)]
    ReadEntry(String, std::io::Error),
    #[error(transparent)]
    Pickle(#[from] PickleError),
    #[error("the pickle does not hold a dict")]
    NotDict,
    #[error("`model` is not a state dict")]
    NotStateDict,
    #[error("state dict entry {} is not a tensor", clean(.0))]
    NotTensor(String),
    #[error("unsupported storage type {}", clean(.0))]
    UnsupportedStorage(String),
    /// A tensor's pickled form is not the shape torch.save writes.
    #[error("{0}")]
    BadTensor(&'static str),
    /// A zip entry larger than it may be, declared or as read.
    #[error("{} holds more than {limit} bytes{why}", clean(name))]
    TooLarge { name: String, limit: u64, why: &'static str },
    /// A tensor whose layout does not fit its storage or the bounds.
    #[error("tensor {}: {why}", clean(name))]
    Layout { name: String, why: String },
    #[error("the tensors' storages pass {} MiB in all, more than any YOLOv9 checkpoint holds", MAX_TOTAL_BYTES >> 20)]
    TotalTooLarge,
}

/// The most a `data.pkl` may hold: a YOLOv9-c checkpoint's is under 1 MB.
pub const MAX_PICKLE_BYTES: u64 = 64 << 20;
/// The most one tensor may hold once made contiguous: YOLOv9-c's largest
/// weight is about 10 MB. A zero stride can make a tiny storage stand for a
/// huge tensor, so this is checked on the tensor, not only on its storage.
pub const MAX_TENSOR_BYTES: u64 = 256 << 20;
/// The most the storages read, and the tensors made from them, may hold
/// (each): YOLOv9-c's state dict is about 100 MB.
pub const MAX_TOTAL_BYTES: u64 = 2 << 30;
/// The most dimensions a tensor may have (YOLOv9's have four at most).
pub const MAX_RANK: usize = 32;

type Result<T> = std::result::Result<T, CheckpointError>;

/// Reads a checkpoint. Errors are one line that says what is wrong.
pub fn load(path: &Path) -> Result<Checkpoint> {
    let file = std::fs::File::open(path).map_err(CheckpointError::Open)?;
    let mut zip = zip::ZipArchive::new(file).map_err(CheckpointError::NotZip)?;
    let pkl_name = (0..zip.len())
        .filter_map(|i| zip.name_for_index(i).map(str::to_string))
        .find(|n| n == "data.pkl" || n.ends_with("/data.pkl"))
        .ok_or(CheckpointError::NoPickle)?;
    let prefix = pkl_name.trim_end_matches("data.pkl").to_string();
    let pkl = read_entry(&mut zip, &pkl_name, MAX_PICKLE_BYTES)?;
    let root = pickle::parse(&pkl)?;
    drop(pkl);

    let mut store = Storages { flat: HashMap::new(), read: 0, made: 0 };
    let mut tensor_of = |name: &str, v: &Value| -> Result<Option<Tensor>> {
        rebuild(name, v, &mut zip, &prefix, &mut store)
    };

    let (state_val, meta_pairs): (&Value, Vec<&(Value, Value)>) = match &root {
        Value::Dict(d) if d.iter().any(|(k, _)| k.as_str() == Some("model")) => {
            let model = root.get("model").unwrap();
            (model, d.iter().filter(|(k, _)| k.as_str() != Some("model")).collect())
        }
        Value::Dict(_) => (&root, Vec::new()),
        _ => return Err(CheckpointError::NotDict),
    };
    let Value::Dict(entries) = state_val else {
        return Err(CheckpointError::NotStateDict);
    };
    let mut state = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        let Some(name) = k.as_str() else { continue };
        match tensor_of(name, v)? {
            Some(t) => state.push((name.to_string(), t)),
            None => return Err(CheckpointError::NotTensor(name.to_string())),
        }
    }
    let mut meta = Map::new();
    for (k, v) in meta_pairs {
        if let Some(key) = k.as_str() {
            meta.insert(key.to_string(), to_json(v));
        }
    }
    Ok(Checkpoint { meta, state })
}

/// Reads a zip entry of at most `limit` bytes: refused on its declared
/// size before anything is read, and on what it really inflates to (a
/// header can lie) as soon as that passes the limit.
fn read_entry<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
    limit: u64,
) -> Result<Vec<u8>> {
    let f = zip.by_name(name).map_err(|e| CheckpointError::MissingEntry(name.to_string(), e))?;
    let too_large = |why| CheckpointError::TooLarge { name: name.to_string(), limit, why };
    if f.size() > limit {
        return Err(too_large(" (its declared size)"));
    }
    // A declared size within the limit may still be a lie (a 200-byte file
    // can claim 2 GiB): reserve at most 64 MiB up front, grow with the data.
    let mut out = Vec::with_capacity(f.size().min(64 << 20) as usize);
    f.take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| CheckpointError::ReadEntry(name.to_string(), e))?;
    if out.len() as u64 > limit {
        return Err(too_large(" once inflated"));
    }
    Ok(out)
}

/// The storages read so far, as flat tensors, and what the bounds count.
struct Storages {
    flat: HashMap<String, Tensor>,
    /// Bytes of storage read.
    read: u64,
    /// Bytes of the tensors made.
    made: u64,
}

/// Checks a tensor's layout: `size` and `stride` of one length, nothing
/// negative, at most [`MAX_TENSOR_BYTES`] once contiguous, and every
/// element it addresses inside a storage of `storage_numel` elements.
/// Returns the tensor's bytes.
pub fn check_layout(
    size: &[i64],
    stride: &[i64],
    offset: i64,
    storage_numel: u64,
    elem: usize,
) -> std::result::Result<u64, String> {
    if size.len() != stride.len() {
        return Err(format!("{} sizes but {} strides", size.len(), stride.len()));
    }
    if size.len() > MAX_RANK {
        return Err(format!("{} dimensions, more than {MAX_RANK}", size.len()));
    }
    if let Some(v) = size.iter().find(|v| **v < 0) {
        return Err(format!("negative size {v} in {size:?}"));
    }
    if let Some(v) = stride.iter().find(|v| **v < 0) {
        return Err(format!("negative stride {v} in {stride:?}"));
    }
    if offset < 0 {
        return Err(format!("negative storage offset {offset}"));
    }
    let too_big = || format!("size {size:?} would hold more than {} MiB", MAX_TENSOR_BYTES >> 20);
    let numel = size.iter().try_fold(1u64, |n, &s| n.checked_mul(s as u64)).ok_or_else(too_big)?;
    let bytes =
        numel.checked_mul(elem as u64).filter(|b| *b <= MAX_TENSOR_BYTES).ok_or_else(too_big)?;
    // The last element addressed; an empty tensor addresses none.
    let last = if numel == 0 {
        Some(offset as u64)
    } else {
        size.iter().zip(stride).try_fold(offset as u64, |at, (&s, &st)| {
            at.checked_add((s as u64 - 1).checked_mul(st as u64)?)
        })
    };
    match last {
        Some(l) if (numel == 0 && l <= storage_numel) || l < storage_numel => Ok(bytes),
        _ => Err(format!(
            "size {size:?}, stride {stride:?} and offset {offset} reach past its storage of {storage_numel} elements"
        )),
    }
}

fn storage_kind(name: &str) -> Option<Kind> {
    Some(match name {
        "FloatStorage" => Kind::Float,
        "DoubleStorage" => Kind::Double,
        "HalfStorage" => Kind::Half,
        "BFloat16Storage" => Kind::BFloat16,
        "LongStorage" => Kind::Int64,
        "IntStorage" => Kind::Int,
        "ShortStorage" => Kind::Int16,
        "CharStorage" => Kind::Int8,
        "ByteStorage" => Kind::Uint8,
        "BoolStorage" => Kind::Bool,
        _ => return None,
    })
}

fn ints(v: &Value) -> Result<Vec<i64>> {
    let bad = CheckpointError::BadTensor;
    v.items()
        .ok_or(bad("expected a tuple of ints"))?
        .iter()
        .map(|x| x.as_int().ok_or(bad("expected an int")))
        .collect()
}

/// Turns a `_rebuild_tensor_v2` / `_rebuild_parameter` call into tensor
/// `name`; `None` when `v` is not a tensor.
fn rebuild<R: Read + std::io::Seek>(
    name: &str,
    v: &Value,
    zip: &mut zip::ZipArchive<R>,
    prefix: &str,
    store: &mut Storages,
) -> Result<Option<Tensor>> {
    let Value::Call { func, args, .. } = v else { return Ok(None) };
    let Value::Global(module, fname) = func.as_ref() else { return Ok(None) };
    match (module.as_str(), fname.as_str()) {
        ("torch._utils", "_rebuild_parameter")
        | ("torch._utils", "_rebuild_parameter_with_state") => {
            let data = args
                .first()
                .ok_or(CheckpointError::BadTensor("_rebuild_parameter without data"))?;
            rebuild(name, data, zip, prefix, store)
        }
        ("torch._utils", "_rebuild_tensor_v2") | ("torch._utils", "_rebuild_tensor") => {
            let [storage, offset, size, stride, ..] = args.as_slice() else {
                return Err(CheckpointError::BadTensor(
                    "_rebuild_tensor_v2 with too few arguments",
                ));
            };
            let Value::PersId(pid) = storage else {
                return Err(CheckpointError::BadTensor("tensor storage is not a persistent id"));
            };
            let pid =
                pid.items().ok_or(CheckpointError::BadTensor("persistent id is not a tuple"))?;
            let (Some(Value::Global(_, storage_type)), Some(key)) =
                (pid.get(1), pid.get(2).and_then(Value::as_str))
            else {
                return Err(CheckpointError::BadTensor("unexpected storage persistent id"));
            };
            let kind = storage_kind(storage_type)
                .ok_or_else(|| CheckpointError::UnsupportedStorage(storage_type.clone()))?;
            let elem = kind.elt_size_in_bytes();
            let offset = offset
                .as_int()
                .ok_or(CheckpointError::BadTensor("storage offset is not an int"))?;
            let size = ints(size)?;
            let stride = ints(stride)?;
            let bad = |why: String| CheckpointError::Layout { name: name.to_string(), why };
            // The storage's element count as torch.save records it (the
            // persistent id's fifth item): the layout is checked against it
            // before the storage is read, and the entry must hold exactly it.
            let declared = match pid.get(4) {
                Some(n) => {
                    let n =
                        n.as_int().filter(|n| *n >= 0).ok_or_else(|| {
                            bad("its storage's element count is not a count".into())
                        })? as u64;
                    check_layout(&size, &stride, offset, n, elem).map_err(bad)?;
                    Some(n)
                }
                None => None,
            };
            if !store.flat.contains_key(key) {
                let entry = format!("{prefix}data/{key}");
                let left = MAX_TOTAL_BYTES - store.read;
                let limit = match declared {
                    Some(n) => n
                        .checked_mul(elem as u64)
                        .filter(|b| *b <= left)
                        .ok_or(CheckpointError::TotalTooLarge)?,
                    None => left,
                };
                let bytes = read_entry(zip, &entry, limit).map_err(|e| match (&e, declared) {
                    (CheckpointError::TooLarge { .. }, None) => CheckpointError::TotalTooLarge,
                    _ => e,
                })?;
                if declared.is_some_and(|_| bytes.len() as u64 != limit) {
                    return Err(bad(format!(
                        "storage {entry} holds {} bytes, not the {limit} its {} elements need",
                        bytes.len(),
                        limit / elem as u64
                    )));
                }
                if bytes.len() % elem != 0 {
                    return Err(bad(format!(
                        "storage {entry} holds {} bytes, not a whole number of {elem}-byte elements",
                        bytes.len()
                    )));
                }
                store.read += bytes.len() as u64;
                let numel = (bytes.len() / elem) as i64;
                store.flat.insert(key.to_string(), Tensor::from_data_size(&bytes, &[numel], kind));
            }
            let flat = &store.flat[key];
            let bytes =
                check_layout(&size, &stride, offset, flat.numel() as u64, elem).map_err(bad)?;
            store.made = store.made.saturating_add(bytes);
            if store.made > MAX_TOTAL_BYTES {
                return Err(CheckpointError::TotalTooLarge);
            }
            let t = flat
                .f_as_strided(&size, &stride, offset)
                .and_then(|t| t.f_contiguous())
                .map_err(|e| bad(e.to_string()))?;
            Ok(Some(t))
        }
        _ => Ok(None),
    }
}

fn to_json(v: &Value) -> Json {
    match v {
        Value::None | Value::Mark => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Float(f) => serde_json::Number::from_f64(*f).map(Json::Number).unwrap_or(Json::Null),
        Value::Str(s) => Json::String(s.clone()),
        Value::Bytes(b) => Json::String(String::from_utf8_lossy(b).into_owned()),
        Value::List(l) | Value::Tuple(l) | Value::Set(l) => {
            Json::Array(l.iter().map(to_json).collect())
        }
        Value::Dict(d) => Json::Object(
            d.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::Str(s) => s.clone(),
                        Value::Int(i) => i.to_string(),
                        other => format!("{other:?}"),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Value::Global(m, n) => Json::String(format!("{m}.{n}")),
        Value::Call { .. } | Value::PersId(_) => Json::String("<object>".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name with a newline (a damaged pickle, found by checkpoint_fuzz)
    /// still gives a one-line message.
    #[test]
    fn names_from_the_file_keep_messages_on_one_line() {
        let e = CheckpointError::NotTensor("a.half\nq$X\u{1}".into()).to_string();
        assert_eq!(e, "state dict entry a.half\\nq$X\\u{1} is not a tensor");
        assert_eq!(clean("model.0.conv.weight"), "model.0.conv.weight");
    }
}
