//! LibreYOLO checkpoints: a `torch.save`d zip whose `data.pkl` holds a dict
//! (`model` = state dict as an OrderedDict, `schema_version`,
//! `libreyolo_version`, `model_family`, `size`, `task`, `nc`, `names`,
//! `imgsz`) and whose tensors live in `data/<key>` entries. libtorch's own
//! unpickler turns the OrderedDict into None, so the pickle is read here
//! ([`crate::pickle`]) and the torch parts are interpreted: persistent ids
//! `('storage', torch.<Kind>Storage, key, location, numel)`,
//! `torch._utils._rebuild_tensor_v2` and `_rebuild_parameter`.
//! A bare state dict (an OrderedDict at the top) loads too, with no metadata.

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
        f.debug_struct("Checkpoint").field("meta", &self.meta).field("tensors", &self.state.len()).finish()
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
            Json::Array(a) => Some(a.iter().map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).collect()),
            Json::Object(o) => {
                let mut v: Vec<(i64, String)> = o.iter().filter_map(|(k, n)| Some((k.parse().ok()?, n.as_str()?.to_string()))).collect();
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

/// Why a checkpoint could not be read; each says it in one line.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot open: {0}")]
    Open(std::io::Error),
    #[error("not a torch.save zip archive ({0})")]
    NotZip(zip::result::ZipError),
    #[error("no data.pkl in the archive: not a torch.save checkpoint")]
    NoPickle,
    #[error("missing {0} in the archive ({1})")]
    MissingEntry(String, zip::result::ZipError),
    #[error("cannot read {0}: {1}")]
    ReadEntry(String, std::io::Error),
    #[error(transparent)]
    Pickle(#[from] PickleError),
    #[error("the pickle does not hold a dict")]
    NotDict,
    #[error("`model` is not a state dict")]
    NotStateDict,
    #[error("state dict entry {0} is not a tensor")]
    NotTensor(String),
    #[error("unsupported storage type {0}")]
    UnsupportedStorage(String),
    /// A tensor's pickled form is not the shape torch.save writes.
    #[error("{0}")]
    BadTensor(&'static str),
}

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
    let pkl = read_entry(&mut zip, &pkl_name)?;
    let root = pickle::parse(&pkl)?;

    let mut storages: HashMap<String, Vec<u8>> = HashMap::new();
    let mut tensor_of = |v: &Value| -> Result<Option<Tensor>> { rebuild(v, &mut zip, &prefix, &mut storages) };

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
        match tensor_of(v)? {
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

fn read_entry<R: Read + std::io::Seek>(zip: &mut zip::ZipArchive<R>, name: &str) -> Result<Vec<u8>> {
    let mut f = zip.by_name(name).map_err(|e| CheckpointError::MissingEntry(name.to_string(), e))?;
    let mut out = Vec::with_capacity(f.size() as usize);
    f.read_to_end(&mut out).map_err(|e| CheckpointError::ReadEntry(name.to_string(), e))?;
    Ok(out)
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
    v.items().ok_or(bad("expected a tuple of ints"))?.iter().map(|x| x.as_int().ok_or(bad("expected an int"))).collect()
}

/// Turns a `_rebuild_tensor_v2` / `_rebuild_parameter` call into a tensor;
/// `None` when `v` is not a tensor.
fn rebuild<R: Read + std::io::Seek>(
    v: &Value,
    zip: &mut zip::ZipArchive<R>,
    prefix: &str,
    storages: &mut HashMap<String, Vec<u8>>,
) -> Result<Option<Tensor>> {
    let Value::Call { func, args, .. } = v else { return Ok(None) };
    let Value::Global(module, name) = func.as_ref() else { return Ok(None) };
    match (module.as_str(), name.as_str()) {
        ("torch._utils", "_rebuild_parameter") | ("torch._utils", "_rebuild_parameter_with_state") => {
            let data = args.first().ok_or(CheckpointError::BadTensor("_rebuild_parameter without data"))?;
            rebuild(data, zip, prefix, storages)
        }
        ("torch._utils", "_rebuild_tensor_v2") | ("torch._utils", "_rebuild_tensor") => {
            let [storage, offset, size, stride, ..] = args.as_slice() else {
                return Err(CheckpointError::BadTensor("_rebuild_tensor_v2 with too few arguments"));
            };
            let Value::PersId(pid) = storage else { return Err(CheckpointError::BadTensor("tensor storage is not a persistent id")) };
            let pid = pid.items().ok_or(CheckpointError::BadTensor("persistent id is not a tuple"))?;
            let (Some(Value::Global(_, storage_type)), Some(key)) = (pid.get(1), pid.get(2).and_then(Value::as_str)) else {
                return Err(CheckpointError::BadTensor("unexpected storage persistent id"));
            };
            let kind = storage_kind(storage_type).ok_or_else(|| CheckpointError::UnsupportedStorage(storage_type.clone()))?;
            if !storages.contains_key(key) {
                let bytes = read_entry(zip, &format!("{prefix}data/{key}"))?;
                storages.insert(key.to_string(), bytes);
            }
            let bytes = &storages[key];
            let elem = kind.elt_size_in_bytes();
            let numel = (bytes.len() / elem) as i64;
            let offset = offset.as_int().ok_or(CheckpointError::BadTensor("storage offset is not an int"))?;
            let size = ints(size)?;
            let stride = ints(stride)?;
            let flat = Tensor::from_data_size(bytes, &[numel], kind);
            let t = flat.as_strided(&size, &stride, offset).contiguous();
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
        Value::List(l) | Value::Tuple(l) | Value::Set(l) => Json::Array(l.iter().map(to_json).collect()),
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
