//! Peak rates of real devices (docs/analysis.md §13): the table in
//! `data/devices.toml` (each row citing its public source), extended by a
//! user's own file, and the recognition of a trace's device from its
//! `deviceProperties`.
//!
//! The built-in table is compiled in and parsed once. The user's file is
//! `$LIBREYOLO_DEVICES` if set, else `$XDG_CONFIG_HOME/libreyolo/devices.toml`,
//! else `~/.config/libreyolo/devices.toml`; it is read once, on first use,
//! and its rows are tried before the built-in ones. The first row that
//! matches wins. A user file that cannot be read or parsed is ignored as a
//! whole; [`user_file_problem`] says why.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::trace::DeviceProps;

/// The number formats a device's peak is quoted for (in a profile:
/// `efficiency.matrix.format`, named as [`PeakClass::as_str`] says).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, JsonSchema, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakClass {
    Fp64,
    #[default]
    Fp32,
    /// fp32 on Matrix Cores (AMD CDNA's MFMA rate, above its vector rate).
    Fp32Matrix,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
    Int8,
}

/// One device's dense peaks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Peaks {
    /// The device as the table names it (`NVIDIA H100 SXM5 80GB`).
    pub name: String,
    /// Dense TFLOP/s (TOP/s for int8) per format; None: not supported or
    /// not published.
    pub tflops: Vec<(PeakClass, f64)>,
    /// Memory bandwidth, TB/s.
    pub mem_tbps: f64,
    /// Where the figures come from (datasheet / whitepaper URL).
    pub source: String,
}

impl PeakClass {
    pub fn as_str(self) -> &'static str {
        match self {
            PeakClass::Fp64 => "fp64",
            PeakClass::Fp32 => "fp32",
            PeakClass::Fp32Matrix => "fp32_matrix",
            PeakClass::Tf32 => "tf32",
            PeakClass::Bf16 => "bf16",
            PeakClass::Fp16 => "fp16",
            PeakClass::Fp8 => "fp8",
            PeakClass::Int8 => "int8",
        }
    }
}

impl std::fmt::Display for PeakClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Peaks {
    pub fn tflops(&self, class: PeakClass) -> Option<f64> {
        self.tflops.iter().find(|(c, _)| *c == class).map(|(_, v)| *v)
    }
}

/// The peaks of the device a trace names, from the built-in table and the
/// user's file; None when the device is not in either.
pub fn recognise(device: &DeviceProps) -> Option<Peaks> {
    find(USER.table.as_ref(), &BUILTIN, device)
}

/// What is wrong with the user's device file, when it is set or present and
/// could not be read or parsed (its rows are then ignored): for a warning.
pub fn user_file_problem() -> Option<String> {
    USER.problem.clone()
}

/// The user's device file that was looked for (whether or not it exists).
pub fn user_file_path() -> Option<&'static Path> {
    USER.path.as_deref()
}

// ---------------------------------------------------------------------------
// The table.

/// The built-in rows, `data/devices.toml` (its format is described there).
static BUILTIN: LazyLock<Table> = LazyLock::new(|| {
    parse_table(include_str!("../data/devices.toml"), "data/devices.toml", None).unwrap_or_else(
        |e| panic!("the built-in device table is invalid (the tests check it): {e}"),
    )
});

static USER: LazyLock<UserFile> =
    LazyLock::new(|| load_user_file(|k| std::env::var_os(k), &BUILTIN));

/// Rows in the order they are tried.
#[derive(Debug)]
struct Table {
    rows: Vec<Row>,
}

#[derive(Debug, Clone)]
struct Row {
    peaks: Peaks,
    rules: Vec<Rule>,
}

/// One alternative of a row's `match`: every condition given must hold.
#[derive(Debug, Clone)]
struct Rule {
    name: Option<Regex>,
    sms: Option<i64>,
    compute: Option<(i64, i64)>,
    warp_size: Option<i64>,
    memory_gb_min: Option<f64>,
    memory_gb_max: Option<f64>,
}

impl Rule {
    fn matches(&self, d: &DeviceProps) -> bool {
        let gb = d.total_global_mem / 1e9;
        let has_mem = gb > 0.0;
        self.name.as_ref().is_none_or(|re| re.is_match(d.name.trim()))
            && self.sms.is_none_or(|n| d.num_sms == Some(n))
            && self.warp_size.is_none_or(|w| d.warp_size == Some(w))
            && self
                .compute
                .is_none_or(|(ma, mi)| d.compute_major == Some(ma) && d.compute_minor == Some(mi))
            && self.memory_gb_min.is_none_or(|lo| has_mem && gb >= lo)
            && self.memory_gb_max.is_none_or(|hi| has_mem && gb <= hi)
    }
}

impl Row {
    fn matches(&self, d: &DeviceProps) -> bool {
        self.rules.iter().any(|r| r.matches(d))
    }
}

/// The user's rows first, then the built-in ones; the first match wins.
fn find(user: Option<&Table>, builtin: &Table, device: &DeviceProps) -> Option<Peaks> {
    user.into_iter()
        .chain([builtin])
        .flat_map(|t| &t.rows)
        .find(|r| r.matches(device))
        .map(|r| r.peaks.clone())
}

// ---------------------------------------------------------------------------
// Parsing.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    device: Vec<RawRow>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRow {
    name: String,
    source: Option<String>,
    mem_tbps: f64,
    fp64: Option<f64>,
    fp32: Option<f64>,
    /// fp32 on AMD's Matrix Cores (MFMA), above the vector rate.
    fp32_matrix: Option<f64>,
    tf32: Option<f64>,
    bf16: Option<f64>,
    fp16: Option<f64>,
    fp8: Option<f64>,
    int8: Option<f64>,
    #[serde(default, rename = "match")]
    rules: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: Option<String>,
    sms: Option<i64>,
    compute: Option<String>,
    warp_size: Option<i64>,
    memory_gb_min: Option<f64>,
    memory_gb_max: Option<f64>,
}

/// Parses a table in the format of `data/devices.toml`. `origin` names it
/// in messages. With `builtin` (a user file), a row without `match` that
/// repeats a built-in row's name takes that row's rules: it corrects the
/// built-in figures.
fn parse_table(text: &str, origin: &str, builtin: Option<&Table>) -> Result<Table> {
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        Error::failed(format!("{origin}: {}", e.to_string().trim_end())).caused_by(e)
    })?;
    let rows = raw
        .device
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let what = format!("{origin}: device {} ({:?})", i + 1, r.name);
            parse_row(r, origin, builtin)
                .map_err(|e| Error::failed(format!("{what}: {e}")).caused_by(e))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Table { rows })
}

fn parse_row(r: RawRow, origin: &str, builtin: Option<&Table>) -> Result<Row> {
    let name = r.name.trim().to_string();
    if name.is_empty() {
        return Err(Error::failed("empty name"));
    }
    if !(r.mem_tbps.is_finite() && r.mem_tbps > 0.0) {
        return Err(Error::failed(format!(
            "mem_tbps must be a positive number, not {}",
            r.mem_tbps
        )));
    }
    let figures = [
        (PeakClass::Fp64, r.fp64),
        (PeakClass::Fp32, r.fp32),
        (PeakClass::Fp32Matrix, r.fp32_matrix),
        (PeakClass::Tf32, r.tf32),
        (PeakClass::Bf16, r.bf16),
        (PeakClass::Fp16, r.fp16),
        (PeakClass::Fp8, r.fp8),
        (PeakClass::Int8, r.int8),
    ];
    let mut tflops = Vec::new();
    for (class, v) in figures {
        let Some(v) = v else { continue };
        if !(v.is_finite() && v > 0.0) {
            return Err(Error::failed(format!(
                "{} must be a positive number, not {v}",
                class.as_str()
            )));
        }
        tflops.push((class, v));
    }
    if tflops.is_empty() {
        return Err(Error::failed(
            "no peak given (fp64, fp32, fp32_matrix, tf32, bf16, fp16, fp8 or int8)",
        ));
    }
    let rules = if r.rules.is_empty() {
        let inherited = builtin
            .and_then(|b| b.rows.iter().find(|row| row.peaks.name.eq_ignore_ascii_case(&name)));
        match inherited {
            Some(row) => row.rules.clone(),
            None if builtin.is_some() => {
                return Err(Error::failed(
                    "no `match`, and no built-in device of that name to take it from",
                ));
            }
            None => return Err(Error::failed("no `match`")),
        }
    } else {
        r.rules
            .into_iter()
            .enumerate()
            .map(|(i, m)| {
                parse_rule(m)
                    .map_err(|e| Error::failed(format!("match {}: {e}", i + 1)).caused_by(e))
            })
            .collect::<Result<_>>()?
    };
    let source = match r.source.map(|s| s.trim().to_string()) {
        Some(s) if !s.is_empty() => s,
        _ => origin.to_string(),
    };
    Ok(Row { peaks: Peaks { name, tflops, mem_tbps: r.mem_tbps, source }, rules })
}

fn parse_rule(m: RawRule) -> Result<Rule> {
    let name = match m.name {
        Some(pat) => Some(RegexBuilder::new(&pat).case_insensitive(true).build().map_err(|e| {
            Error::failed(format!("name {pat:?} is not a regex: {e}")).caused_by(e)
        })?),
        None => None,
    };
    let compute =
        match m.compute {
            Some(c) => {
                let parsed = c
                    .trim()
                    .split_once('.')
                    .and_then(|(ma, mi)| Some((ma.parse().ok()?, mi.parse().ok()?)));
                Some(parsed.ok_or_else(|| {
                    Error::failed(format!("compute {c:?} is not \"major.minor\""))
                })?)
            }
            None => None,
        };
    for (key, v) in [("memory_gb_min", m.memory_gb_min), ("memory_gb_max", m.memory_gb_max)] {
        if v.is_some_and(|v| !v.is_finite() || v < 0.0) {
            return Err(Error::failed(format!("{key} must be a number of GB")));
        }
    }
    let rule = Rule {
        name,
        sms: m.sms,
        compute,
        warp_size: m.warp_size,
        memory_gb_min: m.memory_gb_min,
        memory_gb_max: m.memory_gb_max,
    };
    let any = rule.name.is_some()
        || rule.sms.is_some()
        || rule.compute.is_some()
        || rule.warp_size.is_some()
        || rule.memory_gb_min.is_some()
        || rule.memory_gb_max.is_some();
    if !any {
        return Err(Error::failed(
            "no condition (name, sms, compute, warp_size, memory_gb_min, memory_gb_max)",
        ));
    }
    Ok(rule)
}

// ---------------------------------------------------------------------------
// The user's file.

#[derive(Debug, Default)]
struct UserFile {
    path: Option<PathBuf>,
    table: Option<Table>,
    problem: Option<String>,
}

/// Where the user's file is: `$LIBREYOLO_DEVICES` (explicit: it must
/// exist), else under `$XDG_CONFIG_HOME`, else under `~/.config` (optional).
/// `env` reads a variable; empty values count as unset.
fn user_file_location(env: impl Fn(&str) -> Option<OsString>) -> Option<(PathBuf, bool)> {
    let get = |k: &str| env(k).filter(|v| !v.is_empty());
    if let Some(p) = get("LIBREYOLO_DEVICES") {
        return Some((PathBuf::from(p), true));
    }
    let config = get("XDG_CONFIG_HOME").map(PathBuf::from).filter(|p| p.is_absolute());
    let config = config.or_else(|| get("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some((config.join("libreyolo").join("devices.toml"), false))
}

fn load_user_file(env: impl Fn(&str) -> Option<OsString>, builtin: &Table) -> UserFile {
    let Some((path, explicit)) = user_file_location(env) else { return UserFile::default() };
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            return UserFile { path: Some(path), ..UserFile::default() };
        }
        Err(e) => {
            let via = if explicit { " (LIBREYOLO_DEVICES)" } else { "" };
            return UserFile {
                problem: Some(format!("{shown}{via}: cannot read the device file: {e}")),
                path: Some(path),
                table: None,
            };
        }
    };
    let (table, problem) = parse_user_text(&text, &shown, builtin);
    UserFile { path: Some(path), table, problem }
}

/// A user file's text: its table, or what is wrong with it (then no rows at
/// all are taken from it).
fn parse_user_text(text: &str, origin: &str, builtin: &Table) -> (Option<Table>, Option<String>) {
    match parse_table(text, origin, Some(builtin)) {
        Ok(t) => (Some(t), None),
        Err(e) => (None, Some(format!("{e} (the file's devices are ignored)"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peak_class_is_written_as_it_is_named() {
        use PeakClass::*;
        for c in [Fp64, Fp32, Fp32Matrix, Tf32, Bf16, Fp16, Fp8, Int8] {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<PeakClass>(&json).unwrap(), c);
        }
    }

    fn props(json: &str) -> DeviceProps {
        serde_json::from_str(json).unwrap()
    }

    fn builtin(device: &DeviceProps) -> Option<Peaks> {
        find(None, &BUILTIN, device)
    }

    fn named(name: &str, sms: i64, mem: f64) -> DeviceProps {
        DeviceProps {
            name: name.into(),
            num_sms: Some(sms),
            total_global_mem: mem,
            ..DeviceProps::default()
        }
    }

    #[track_caller]
    fn expect(device: &DeviceProps, row: &str) -> Peaks {
        let p = builtin(device).unwrap_or_else(|| panic!("{:?} not recognised", device.name));
        assert_eq!(p.name, row, "{:?}", device.name);
        p
    }

    #[test]
    fn every_builtin_row_is_sound() {
        let rows = &BUILTIN.rows;
        assert!(rows.len() >= 30, "{} rows", rows.len());
        let mut names = std::collections::HashSet::new();
        for r in rows {
            let p = &r.peaks;
            assert!(names.insert(p.name.to_lowercase()), "{} twice", p.name);
            assert!(
                p.source.starts_with("https://") && p.source.len() > "https://".len(),
                "{}: source {:?}",
                p.name,
                p.source
            );
            assert!(p.mem_tbps > 0.0 && p.mem_tbps < 20.0, "{}: {} TB/s", p.name, p.mem_tbps);
            assert!(!p.tflops.is_empty(), "{}", p.name);
            assert!(!r.rules.is_empty(), "{}", p.name);
            if let (Some(h), Some(s)) = (p.tflops(PeakClass::Fp16), p.tflops(PeakClass::Fp32)) {
                assert!(h >= s, "{}: fp16 {h} < fp32 {s}", p.name);
            }
            // Dense figures keep the usual ladder: bf16 = fp16, fp8 = 2 x
            // fp16 at most, tf32 = fp16 / 2 at most. A sparse figure
            // copied by mistake breaks one of them.
            if let (Some(b), Some(h)) = (p.tflops(PeakClass::Bf16), p.tflops(PeakClass::Fp16)) {
                assert_eq!(b, h, "{}: bf16 vs fp16", p.name);
            }
            if let (Some(e), Some(h)) = (p.tflops(PeakClass::Fp8), p.tflops(PeakClass::Fp16)) {
                assert!(e <= 2.0 * h + 1.0, "{}: fp8 {e} > 2 x fp16 {h}", p.name);
            }
            if let (Some(t), Some(h)) = (p.tflops(PeakClass::Tf32), p.tflops(PeakClass::Fp16)) {
                assert!(t <= h / 2.0 + 0.5, "{}: tf32 {t} > fp16 {h} / 2", p.name);
            }
            // Formats listed in the table's order.
            let order: Vec<_> = p.tflops.iter().map(|(c, _)| *c as u8).collect();
            assert!(order.windows(2).all(|w| w[0] < w[1]), "{}", p.name);
        }
    }

    #[test]
    fn dense_not_sparse() {
        let h100 =
            expect(&named("NVIDIA H100 80GB HBM3", 132, 85018279936.0), "NVIDIA H100 SXM5 80GB");
        let bf16 = h100.tflops(PeakClass::Bf16).unwrap();
        assert!((989.0..990.0).contains(&bf16), "{bf16}");
        assert_eq!(h100.tflops(PeakClass::Fp8), Some(1979.0));
        assert_eq!(h100.tflops(PeakClass::Tf32), Some(494.5));
        let l4 = expect(&named("NVIDIA L4", 58, 23.8e9), "NVIDIA L4");
        assert_eq!(l4.tflops(PeakClass::Fp8), Some(242.5));
        let mi300 =
            expect(&named("AMD Instinct MI300X", 304, 206141652992.0), "AMD Instinct MI300X");
        assert_eq!(mi300.tflops(PeakClass::Bf16), Some(1307.4));
    }

    #[test]
    fn formats_a_device_lacks_are_absent() {
        let v100 = expect(&named("Tesla V100-SXM2-32GB", 80, 34e9), "NVIDIA Tesla V100 SXM2");
        assert_eq!(v100.tflops(PeakClass::Tf32), None);
        assert_eq!(v100.tflops(PeakClass::Bf16), None);
        assert_eq!(v100.tflops(PeakClass::Fp8), None);
        let t4 = expect(&named("Tesla T4", 40, 15.8e9), "NVIDIA T4");
        assert_eq!((t4.tflops(PeakClass::Tf32), t4.tflops(PeakClass::Fp8)), (None, None));
        let a100 = expect(&named("NVIDIA A100-SXM4-40GB", 108, 42.5e9), "NVIDIA A100 SXM4 40GB");
        assert_eq!(a100.tflops(PeakClass::Fp8), None);
        let mi210 = expect(&named("AMD Instinct MI210", 104, 68.7e9), "AMD Instinct MI210");
        assert_eq!((mi210.tflops(PeakClass::Tf32), mi210.tflops(PeakClass::Fp8)), (None, None));
        let mi355 = expect(&named("AMD Instinct MI355X", 256, 309e9), "AMD Instinct MI355X");
        assert_eq!(mi355.tflops(PeakClass::Tf32), None);
    }

    /// The `deviceProperties` entries of the fixture traces, verbatim.
    #[test]
    fn the_devices_of_real_traces() {
        let h100 = props(
            r#"{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936, "computeMajor": 9, "computeMinor": 0,
                "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
                "sharedMemPerBlock": 49152, "numSms": 132, "regsPerMultiprocessor": 65536,
                "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472}"#,
        );
        assert_eq!(
            (h100.compute_major, h100.compute_minor, h100.num_sms),
            (Some(9), Some(0), Some(132))
        );
        let p = expect(&h100, "NVIDIA H100 SXM5 80GB");
        assert_eq!((p.mem_tbps, p.tflops(PeakClass::Fp64)), (3.35, Some(67.0)));

        let mi300x = r#"{"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 206141652992, "computeMajor": 9, "computeMinor": 4,
            "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 131072, "warpSize": 64,
            "sharedMemPerBlock": 65536, "numSms": 304, "maxSharedMemoryPerMultiProcessor": 65536}"#;
        let vf = r#"{"id": 0, "name": "AMD Instinct MI300X VF", "totalGlobalMem": 205571227648, "computeMajor": 9, "computeMinor": 4,
            "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 64,
            "sharedMemPerBlock": 65536, "numSms": 304, "maxSharedMemoryPerMultiProcessor": 65536}"#;
        let unnamed = r#"{"id": 0, "name": "", "totalGlobalMem": 206141652992, "computeMajor": 9, "computeMinor": 4,
            "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 64,
            "sharedMemPerBlock": 65536, "numSms": 304, "maxSharedMemoryPerMultiProcessor": 65536}"#;
        for json in [mi300x, vf, unnamed] {
            let p = expect(&props(json), "AMD Instinct MI300X");
            assert_eq!((p.mem_tbps, p.tflops(PeakClass::Fp8)), (5.3, Some(2614.9)));
        }

        let pg509 = props(
            r#"{"id": 0, "name": "NVIDIA A100-PG509-200", "totalGlobalMem": 42297524224, "computeMajor": 8, "computeMinor": 0,
                "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
                "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
                "sharedMemPerMultiprocessor": 167936, "numSms": 108, "sharedMemPerBlockOptin": 166912}"#,
        );
        let p = expect(&pg509, "NVIDIA A100 SXM4 40GB");
        assert_eq!(
            (p.mem_tbps, p.tflops(PeakClass::Bf16), p.tflops(PeakClass::Fp64)),
            (1.555, Some(312.0), Some(19.5))
        );
        // The other PG509-200 trace reports a little more memory.
        expect(&DeviceProps { total_global_mem: 42505273344.0, ..pg509 }, "NVIDIA A100 SXM4 40GB");

        let sxm2 = props(
            r#"{"id": 0, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34079899648, "computeMajor": 7, "computeMinor": 0,
                "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
                "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
                "sharedMemPerMultiprocessor": 98304, "numSms": 80, "sharedMemPerBlockOptin": 98304}"#,
        );
        let p = expect(&sxm2, "NVIDIA Tesla V100 SXM2");
        assert_eq!(
            (p.mem_tbps, p.tflops(PeakClass::Fp16), p.tflops(PeakClass::Fp32)),
            (0.9, Some(125.0), Some(15.7))
        );
        let dgxs = props(
            r#"{"id": 0, "name": "Tesla V100-DGXS-32GB", "totalGlobalMem": 34084028416, "computeMajor": 7, "computeMinor": 0,
                "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
                "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
                "sharedMemPerMultiprocessor": 98304, "numSms": 80, "sharedMemPerBlockOptin": 98304}"#,
        );
        let p = expect(&dgxs, "NVIDIA Tesla V100 DGXS");
        assert_eq!(p.tflops(PeakClass::Fp64), Some(7.8));

        let mi210 = props(
            r#"{"id": 0, "name": "AMD Instinct MI210", "totalGlobalMem": 68702699520, "computeMajor": 9, "computeMinor": 0,
                "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 64,
                "sharedMemPerBlock": 65536, "numSms": 104, "maxSharedMemoryPerMultiProcessor": 65536}"#,
        );
        let p = expect(&mi210, "AMD Instinct MI210");
        assert_eq!(
            (p.mem_tbps, p.tflops(PeakClass::Fp16), p.tflops(PeakClass::Fp64)),
            (1.6384, Some(181.0), Some(45.3))
        );

        // An MI250 GCD under ROCm's fallback name (gfx90a, 104 CUs).
        let gcd = props(
            r#"{"id": 0, "name": "AMD Radeon Graphics", "totalGlobalMem": 68702699520, "computeMajor": 9, "computeMinor": 0,
                "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 64,
                "sharedMemPerBlock": 65536, "numSms": 104, "maxSharedMemoryPerMultiProcessor": 65536}"#,
        );
        let p = expect(&gcd, "AMD Instinct MI210 / MI250 (one GCD)");
        assert_eq!((p.mem_tbps, p.tflops(PeakClass::Bf16)), (1.6384, Some(181.0)));
    }

    #[test]
    fn mi250_rows_are_per_gcd() {
        let combined = "AMD Instinct MI250X / MI250";
        let mi250 = expect(&named(combined, 104, 68.7e9), "AMD Instinct MI250 (one GCD)");
        assert_eq!(mi250.tflops(PeakClass::Fp16), Some(181.05)); // package: 362.1
        let mi250x = expect(&named(combined, 110, 68.7e9), "AMD Instinct MI250X (one GCD)");
        assert_eq!((mi250x.tflops(PeakClass::Fp16), mi250x.mem_tbps), (Some(191.5), 1.6384)); // package: 383, 3.2 TB/s
        let unnamed = DeviceProps {
            compute_major: Some(9),
            compute_minor: Some(0),
            warp_size: Some(64),
            ..named("", 110, 68.7e9)
        };
        expect(&unnamed, "AMD Instinct MI250X (one GCD)");
    }

    #[test]
    fn amd_by_hardware_when_unnamed() {
        let amd = |major, minor, cus, gb: f64| DeviceProps {
            compute_major: Some(major),
            compute_minor: Some(minor),
            warp_size: Some(64),
            ..named("", cus, gb * 1e9)
        };
        expect(&amd(9, 4, 304, 274.9), "AMD Instinct MI325X");
        expect(&amd(9, 5, 256, 309.2), "AMD Instinct MI355X");
        assert_eq!(
            expect(&named("AMD Instinct MI325X", 304, 274.9e9), "AMD Instinct MI325X").mem_tbps,
            6.0
        );
        // MI300A (gfx942, 228 CUs) and a CPX partition of an MI300X (38 CUs).
        assert_eq!(builtin(&amd(9, 4, 228, 137.0)), None);
        assert_eq!(builtin(&named("AMD Instinct MI300X", 38, 25.7e9)), None);
        // Without the wavefront size an unnamed device is not claimed.
        assert_eq!(builtin(&DeviceProps { warp_size: None, ..amd(9, 4, 304, 206.1) }), None);
    }

    #[test]
    fn near_miss_names() {
        expect(&named("NVIDIA A10", 72, 23.7e9), "NVIDIA A10");
        expect(&named("NVIDIA A100-SXM4-80GB", 108, 85.1e9), "NVIDIA A100 SXM4 80GB");
        expect(&named("NVIDIA A100-PCIE-40GB", 108, 42.3e9), "NVIDIA A100 PCIe 40GB");
        let a100_80_pcie =
            expect(&named("NVIDIA A100 80GB PCIe", 108, 85.1e9), "NVIDIA A100 PCIe 80GB");
        assert_eq!(a100_80_pcie.mem_tbps, 1.935);
        assert_eq!(
            expect(&named("NVIDIA A100-SXM4-80GB", 108, 0.0), "NVIDIA A100 SXM4 80GB").mem_tbps,
            2.039
        );
        assert_eq!(builtin(&named("NVIDIA A10G", 80, 23.7e9)), None);

        expect(&named("NVIDIA L4", 58, 23.8e9), "NVIDIA L4");
        let l40s = expect(&named("NVIDIA L40S", 142, 47.7e9), "NVIDIA L40S");
        assert_eq!(l40s.tflops(PeakClass::Fp8), Some(733.0));
        assert_eq!(builtin(&named("NVIDIA L40", 142, 47.7e9)), None);

        expect(&named("NVIDIA H100 PCIe", 114, 85.0e9), "NVIDIA H100 PCIe");
        expect(&named("NVIDIA H100 NVL", 132, 100.0e9), "NVIDIA H100 NVL");
        expect(&named("NVIDIA H100 80GB HBM3", 132, 85.0e9), "NVIDIA H100 SXM5 80GB");
        // A MIG slice: the parent's name, a seventh of the SMs.
        assert_eq!(builtin(&named("NVIDIA H100 80GB HBM3", 16, 10.0e9)), None);

        assert_eq!(expect(&named("NVIDIA H200", 132, 150.0e9), "NVIDIA H200 SXM").mem_tbps, 4.8);
        assert_eq!(
            expect(&named("NVIDIA H200 NVL", 132, 150.0e9), "NVIDIA H200 NVL")
                .tflops(PeakClass::Bf16),
            Some(835.5)
        );
        assert_eq!(
            expect(&named("NVIDIA H800", 132, 85.0e9), "NVIDIA H800 SXM5").tflops(PeakClass::Fp64),
            Some(1.0)
        );
        assert_eq!(
            expect(&named("NVIDIA B200", 148, 191.0e9), "NVIDIA B200").tflops(PeakClass::Bf16),
            Some(2250.0)
        );
        assert_eq!(
            expect(&named("NVIDIA GB200", 152, 199.0e9), "NVIDIA GB200 (one GPU)")
                .tflops(PeakClass::Fp8),
            Some(5000.0)
        );

        expect(&named("Tesla V100-PCIE-16GB", 80, 16.9e9), "NVIDIA Tesla V100 PCIe");
        expect(&named("Tesla V100S-PCIE-32GB", 80, 34.0e9), "NVIDIA Tesla V100S PCIe");
        expect(&named("Tesla T4", 40, 15.8e9), "NVIDIA T4");
        expect(&named("NVIDIA GeForce RTX 3090", 82, 25.4e9), "NVIDIA GeForce RTX 3090");
        expect(&named("NVIDIA GeForce RTX 4090", 128, 25.4e9), "NVIDIA GeForce RTX 4090");
        expect(&named("NVIDIA RTX A6000", 84, 51.0e9), "NVIDIA RTX A6000");
        assert_eq!(builtin(&named("NVIDIA GeForce RTX 3090 Ti", 84, 25.4e9)), None);
        assert_eq!(builtin(&named("NVIDIA GeForce RTX 4090 D", 114, 25.4e9)), None);
    }

    #[test]
    fn unknown_devices() {
        let gp100 = props(
            r#"{"id": 0, "name": "Quadro GP100", "totalGlobalMem": 17069309952, "computeMajor": 6, "computeMinor": 0,
                "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
                "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
                "sharedMemPerMultiprocessor": 65536, "numSms": 56, "sharedMemPerBlockOptin": 49152}"#,
        );
        assert_eq!(builtin(&gp100), None);
        assert_eq!(builtin(&DeviceProps::default()), None);
        assert_eq!(recognise(&gp100), None);
    }

    const USER_FILE: &str = r#"
        # A device the table lacks.
        [[device]]
        name = "Lab card X1"
        mem_tbps = 1.2
        fp32 = 40.0
        bf16 = 300
        match = [{ name = '^Lab X1$' }]

        # A corrected built-in: its name, no match: the built-in's rules.
        [[device]]
        name = "nvidia h100 sxm5 80gb"
        source = "https://example.org/measured"
        mem_tbps = 3.0
        bf16 = 800.0
    "#;

    #[test]
    fn user_rows_add_and_override() {
        let (user, problem) =
            parse_user_text(USER_FILE, "/home/u/.config/libreyolo/devices.toml", &BUILTIN);
        assert_eq!(problem, None);
        let user = user.unwrap();
        let x1 = find(Some(&user), &BUILTIN, &named("Lab X1", 10, 8e9)).unwrap();
        assert_eq!(
            (x1.name.as_str(), x1.tflops(PeakClass::Bf16), x1.mem_tbps),
            ("Lab card X1", Some(300.0), 1.2)
        );
        assert_eq!(x1.source, "/home/u/.config/libreyolo/devices.toml");
        let h100 =
            find(Some(&user), &BUILTIN, &named("NVIDIA H100 80GB HBM3", 132, 85.0e9)).unwrap();
        assert_eq!(
            (h100.mem_tbps, h100.tflops(PeakClass::Bf16), h100.tflops(PeakClass::Fp8)),
            (3.0, Some(800.0), None)
        );
        assert_eq!(h100.source, "https://example.org/measured");
        // The other devices are still the table's.
        let a100 =
            find(Some(&user), &BUILTIN, &named("NVIDIA A100-SXM4-80GB", 108, 85.1e9)).unwrap();
        assert_eq!(a100.name, "NVIDIA A100 SXM4 80GB");
        // A user row with its own rules comes before a built-in one.
        let text = r#"[[device]]
            name = "My A100"
            mem_tbps = 1.0
            fp32 = 1.0
            match = [{ name = "A100" }]"#;
        let (user, _) = parse_user_text(text, "u", &BUILTIN);
        assert_eq!(
            find(user.as_ref(), &BUILTIN, &named("NVIDIA A100-SXM4-80GB", 108, 85.1e9))
                .unwrap()
                .name,
            "My A100"
        );
    }

    #[test]
    fn broken_user_files() {
        let cases = [
            ("[[device]\nname = 1", "devices.toml"),
            (
                "[[device]]\nname = \"X\"\nmem_tbps = 1.0\nfp32 = 1.0\nmatch = [{ name = '(' }]",
                "not a regex",
            ),
            (
                "[[device]]\nname = \"X\"\nmem_tbps = 1.0\nfp32 = 1.0\nmatch = [{ compute = \"nine\" }]",
                "major.minor",
            ),
            ("[[device]]\nname = \"X\"\nmem_tbps = 1.0\nfp32 = 1.0\nmatch = [{}]", "no condition"),
            ("[[device]]\nname = \"X\"\nmem_tbps = 1.0\nfp32 = 1.0", "no built-in device"),
            (
                "[[device]]\nname = \"X\"\nmem_tbps = 0\nfp32 = 1.0\nmatch = [{ sms = 1 }]",
                "mem_tbps",
            ),
            ("[[device]]\nname = \"X\"\nmem_tbps = 1.0\nmatch = [{ sms = 1 }]", "no peak"),
            (
                "[[device]]\nname = \"X\"\nmem_tbps = 1.0\nfp32 = -1.0\nmatch = [{ sms = 1 }]",
                "fp32",
            ),
            (
                "[[device]]\nname = \"X\"\nmem_tbps = 1.0\nbfloat16 = 1.0\nmatch = [{ sms = 1 }]",
                "bfloat16",
            ),
            ("[[device]]\nname = \"X\"\nmem_tbps = 1.0\nfp32 = 1.0\nmatch = [{ sm = 1 }]", "sm"),
            (
                "[[device]]\nname = \"\"\nmem_tbps = 1.0\nfp32 = 1.0\nmatch = [{ sms = 1 }]",
                "empty name",
            ),
            // One bad row spoils the file: none of its rows are used.
            (
                "[[device]]\nname = \"Good\"\nmem_tbps = 1.0\nfp32 = 1.0\nmatch = [{ sms = 132 }]\n\
                 [[device]]\nname = \"Bad\"\nmem_tbps = 1.0\nmatch = [{ sms = 1 }]",
                "device 2 (\"Bad\"): no peak",
            ),
        ];
        for (text, needle) in cases {
            let (table, problem) = parse_user_text(text, "/tmp/devices.toml", &BUILTIN);
            assert!(table.is_none(), "{text}");
            let problem = problem.unwrap();
            assert!(
                problem.contains(needle) && problem.contains("/tmp/devices.toml"),
                "{text}: {problem}"
            );
        }
        // A file with no rows is fine.
        assert!(
            matches!(parse_user_text("# nothing yet\n", "u", &BUILTIN), (Some(t), None) if t.rows.is_empty())
        );
    }

    #[test]
    fn user_file_is_found() {
        fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
            move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| OsString::from(v))
        }
        let all =
            [("LIBREYOLO_DEVICES", "/x/d.toml"), ("XDG_CONFIG_HOME", "/cfg"), ("HOME", "/home/u")];
        assert_eq!(user_file_location(env(&all)), Some((PathBuf::from("/x/d.toml"), true)));
        assert_eq!(
            user_file_location(env(&[
                ("LIBREYOLO_DEVICES", ""),
                ("XDG_CONFIG_HOME", "/cfg"),
                ("HOME", "/home/u")
            ])),
            Some((PathBuf::from("/cfg/libreyolo/devices.toml"), false))
        );
        // A relative XDG_CONFIG_HOME is ignored, as the spec says.
        assert_eq!(
            user_file_location(env(&[("XDG_CONFIG_HOME", "cfg"), ("HOME", "/home/u")])),
            Some((PathBuf::from("/home/u/.config/libreyolo/devices.toml"), false))
        );
        assert_eq!(user_file_location(env(&[])), None);
    }

    #[test]
    fn user_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("devices.toml");
        let path_str = path.to_str().unwrap().to_string();
        let env = |p: String| move |k: &str| (k == "LIBREYOLO_DEVICES").then(|| OsString::from(&p));

        // Set but absent: a problem, since the user asked for it.
        let u = load_user_file(env(path_str.clone()), &BUILTIN);
        assert!(
            u.table.is_none()
                && u.problem.as_deref().is_some_and(|p| p.contains("LIBREYOLO_DEVICES")),
            "{u:?}"
        );
        // The default place, absent: nothing to say.
        let home = dir.path().to_str().unwrap().to_string();
        let u =
            load_user_file(move |k: &str| (k == "HOME").then(|| OsString::from(&home)), &BUILTIN);
        assert!(u.table.is_none() && u.problem.is_none(), "{u:?}");

        std::fs::write(&path, USER_FILE).unwrap();
        let u = load_user_file(env(path_str.clone()), &BUILTIN);
        assert_eq!((u.problem.as_deref(), u.table.as_ref().map(|t| t.rows.len())), (None, Some(2)));
        assert_eq!(
            find(u.table.as_ref(), &BUILTIN, &named("Lab X1", 1, 1e9)).unwrap().name,
            "Lab card X1"
        );

        std::fs::write(&path, "[[device]]\nname = \"Broken\"\nmem_tbps = \"fast\"\n").unwrap();
        let u = load_user_file(env(path_str), &BUILTIN);
        assert!(u.table.is_none(), "{u:?}");
        assert!(
            u.problem.as_deref().is_some_and(|p| p.contains("mem_tbps") && p.contains("ignored")),
            "{u:?}"
        );
        // The built-in table still answers.
        assert!(
            find(u.table.as_ref(), &BUILTIN, &named("NVIDIA H100 80GB HBM3", 132, 85e9)).is_some()
        );
    }
}
