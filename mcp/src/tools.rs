//! The tools' parameters and how a call becomes the reader's command line.
//! Each parameter is named after the reader's flag (`min_pct` is
//! `--min-pct`), so one rule turns any tool's parameters into `libreyolo
//! profile <reader> --json --flag=value … -- PATHS`, which the reader's own
//! argument definitions then check: a tool takes what the command line
//! takes, with the same defaults and the same refusals.

use std::ffi::OsString;
use std::sync::Arc;

use clap::{Parser, ValueEnum};
use libreyolo_core::cli::{Cli, ProfileCommand, ReaderCommand, TopCommand};
use libreyolo_core::error::{Error, Result};
use libreyolo_core::lens::kernels::Sort;
use libreyolo_core::lens::tree::By;
use libreyolo_core::profile::IdleCause;
use rmcp::model::JsonObject;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::roots::Roots;

/// A tool's parameters: its fields are the reader's flags, but for the
/// positional ones named here, in their command-line order.
pub trait Params: Serialize + Send + 'static {
    /// The fields that are paths, each checked against the roots.
    const PATHS: &[&str];
    /// Positional fields after the paths that are not paths (`get`'s field).
    const AFTER: &[&str] = &[];
}

/// The JSON Schema of a tool's output (its reader's `--json` document,
/// any of its shapes: docs/schemas/), given to clients with the tool and
/// the structured copy of each answer.
pub fn output_schema(tool: &str) -> Option<Arc<JsonObject>> {
    let documents: &[&str] = match tool {
        "summary" => &["summary", "summary-job"],
        "get" => &["get", "get-names"],
        "kernels" => &["kernels", "kernels-job"],
        "compare" => &["compare", "compare-job"],
        "what-if" => &["what-if", "what-if-all", "what-if-job"],
        "phases" | "ops" | "tree" | "modules" | "memory" | "collectives" => &[tool],
        _ => return None,
    };
    let title = format!("libreyolo profile {tool} --json");
    match libreyolo_core::render::schema::any_of(&title, documents)? {
        Value::Object(o) => Some(Arc::new(o)),
        _ => None,
    }
}

/// The reader command of a call of `tool` (a reader's name) with `params`,
/// its paths resolved under `roots`; or the error the command line would
/// exit with.
pub fn command<P: Params>(tool: &str, params: &P, roots: &Roots) -> Result<ReaderCommand> {
    reader_command(&argv(tool, params, roots)?)
}

/// `libreyolo profile TOOL --json --flag=value … -- POSITIONALS`: a value
/// joined to its flag, and the positionals after `--`, so that a value
/// starting with `-` is never read as a flag.
fn argv<P: Params>(tool: &str, params: &P, roots: &Roots) -> Result<Vec<OsString>> {
    let Ok(Value::Object(fields)) = serde_json::to_value(params) else {
        return Err(Error::failed(format!("{tool}: parameters that are not an object")));
    };
    let mut argv: Vec<OsString> =
        ["libreyolo", "profile", tool, "--json"].iter().map(OsString::from).collect();
    let positional = |name: &str| P::PATHS.contains(&name) || P::AFTER.contains(&name);
    for (name, value) in fields.iter().filter(|(name, _)| !positional(name)) {
        let flag = name.replace('_', "-");
        match value {
            Value::Null | Value::Bool(false) => {}
            Value::Bool(true) => argv.push(format!("--{flag}").into()),
            Value::String(s) => argv.push(format!("--{flag}={s}").into()),
            other => argv.push(format!("--{flag}={other}").into()),
        }
    }
    argv.push("--".into());
    for name in P::PATHS {
        let given = match fields.get(*name) {
            Some(Value::Array(paths)) => paths.iter().filter_map(Value::as_str).collect(),
            Some(Value::String(path)) => vec![path.as_str()],
            _ => Vec::new(),
        };
        for path in given {
            argv.push(roots.resolve(path)?.into_os_string());
        }
    }
    argv.extend(P::AFTER.iter().filter_map(|n| fields.get(*n)?.as_str()).map(OsString::from));
    Ok(argv)
}

/// The reader command `argv` is, parsed by the command line's definitions;
/// clap's refusal as a usage error in one line, without its usage banner.
fn reader_command(argv: &[OsString]) -> Result<ReaderCommand> {
    let parsed = Cli::try_parse_from(argv).map_err(|e| {
        let text = e.render().to_string();
        let lines: Vec<&str> = text.lines().map(str::trim).take_while(|l| !l.is_empty()).collect();
        Error::usage(lines.join(" ").trim_start_matches("error: ").to_string())
    })?;
    match parsed.command {
        TopCommand::Profile(p) => match p.into_command() {
            Some(ProfileCommand::Reader(reader)) => Ok(reader),
            _ => Err(Error::failed("not a reader command")),
        },
        _ => Err(Error::failed("not a reader command")),
    }
}

/// An optional string parameter's schema: one of the names the flag's
/// values have on the command line, or null (as every optional one).
fn one_of<E: ValueEnum>(_: &mut SchemaGenerator) -> Schema {
    let mut names: Vec<Value> = E::value_variants()
        .iter()
        .filter_map(|v| Some(v.to_possible_value()?.get_name().into()))
        .collect();
    names.push(Value::Null);
    json_schema!({ "type": ["string", "null"], "enum": names })
}

/// The input of a reader of one rank, and the parameters of those with
/// no options of their own (`phases`, `memory`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Input {
    /// A trace (.json / .json.gz), a profile.json, or a folder standing for one
    pub path: String,
    /// Of a folder of a job's rank traces: read rank N [default: the lowest]
    pub rank: Option<u32>,
}

impl Params for Input {
    const PATHS: &[&str] = &["path"];
}

/// How a job's rank traces are read.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RankSet {
    /// Of a job: only these ranks, e.g. `0-3,7`
    pub ranks: Option<String>,
    /// Of a job: an unreadable rank fails the call [default: a warning, and the job is the rest]
    #[serde(default)]
    pub strict: bool,
}

/// The input of a reader of a trace or a whole job, and the parameters of
/// those with no options of their own (`summary`, `collectives`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Job {
    /// A trace (.json / .json.gz), a profile.json, or a folder standing for one; several traces, or a folder of them, are the ranks of one distributed job (collectives of one trace: without skew)
    #[schemars(length(min = 1))]
    pub paths: Vec<String>,
    /// Of a job: read rank N alone, as one trace [default: the whole job]
    pub rank: Option<u32>,
    #[serde(flatten)]
    pub set: RankSet,
}

impl Params for Job {
    const PATHS: &[&str] = &["paths"];
}

/// `get`'s parameters.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Get {
    #[serde(flatten)]
    pub input: Input,
    /// The metric (e.g. step_ms, gpu_util, img_per_s); omit it to list the metric names
    pub field: Option<String>,
}

impl Params for Get {
    const PATHS: &[&str] = &["path"];
    const AFTER: &[&str] = &["field"];
}

/// `kernels`' parameters.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Kernels {
    #[serde(flatten)]
    pub job: Job,
    /// Rows to return [default: 20]
    pub top: Option<usize>,
    /// A kernel category, as a substring: gemm, attention, communication, layout, norm, softmax, elementwise, other
    pub category: Option<String>,
    /// Regex on the kernel name (case-insensitive)
    pub grep: Option<String>,
    /// Only Tensor Core kernels
    #[serde(default)]
    pub tensorcore: bool,
    /// Order [default: time]; efficiency: time lost against the roofline, where the trace recorded shapes
    #[serde(default)]
    #[schemars(schema_with = "one_of::<Sort>")]
    pub sort: Option<String>,
    /// Only this phase (forward, backward, …; an unknown one is refused with the trace's phases)
    pub phase: Option<String>,
}

impl Params for Kernels {
    const PATHS: &[&str] = &["paths"];
}

/// `ops`' parameters.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Ops {
    #[serde(flatten)]
    pub input: Input,
    /// Rows to return [default: 20]
    pub top: Option<usize>,
    /// Only this phase (forward, backward, …)
    pub phase: Option<String>,
    /// Regex on the op name (case-insensitive)
    pub grep: Option<String>,
    /// Order [default: time, the op's CPU time]; gpu: the kernel time launched inside it
    #[serde(default)]
    #[schemars(schema_with = "one_of::<Sort>")]
    pub sort: Option<String>,
}

impl Params for Ops {
    const PATHS: &[&str] = &["path"];
}

/// `tree`'s parameters.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Tree {
    #[serde(flatten)]
    pub input: Input,
    /// Which host records are nodes [default: module]: module (annotations, nn.Modules, ops), frame (every Python frame too) or op (annotations and ops)
    #[serde(default)]
    #[schemars(schema_with = "one_of::<By>")]
    pub by: Option<String>,
    /// Only this phase (forward, backward, …)
    pub phase: Option<String>,
    /// Levels to return below the roots
    pub depth: Option<usize>,
    /// Hide the nodes under this % of both the GPU and the CPU total [default: 1]
    pub min_pct: Option<f64>,
    /// Regex (case-insensitive): only the paths through a matching node
    pub focus: Option<String>,
    /// Callers under each node: where a kernel's or an op's cost comes from
    #[serde(default)]
    pub bottom_up: bool,
}

impl Params for Tree {
    const PATHS: &[&str] = &["path"];
}

/// `modules`' parameters.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Modules {
    #[serde(flatten)]
    pub input: Input,
    /// Levels to return below the top modules
    pub depth: Option<usize>,
    /// Hide the modules under this % of both the GPU and the CPU total [default: 1]
    pub min_pct: Option<f64>,
    /// Regex (case-insensitive): only the paths through a matching module
    pub focus: Option<String>,
}

impl Params for Modules {
    const PATHS: &[&str] = &["path"];
}

/// `compare`'s parameters.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Compare {
    /// The baseline: a trace, a profile.json, a folder standing for one, or a folder of a job's rank traces
    pub baseline: String,
    /// The changed run, of the same kind as the baseline
    pub candidate: String,
    /// Compare rank N alone on each side that is a job [default: the whole jobs]
    pub rank: Option<u32>,
    #[serde(flatten)]
    pub set: RankSet,
}

impl Params for Compare {
    const PATHS: &[&str] = &["baseline", "candidate"];
}

/// `what-if`'s parameters: `all`, or one change (with `scale`), or of a
/// job nothing (the straggler's lateness removed) or `straggler`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct WhatIf {
    /// A trace (or a profile beside its trace), or a folder of a job's rank traces
    pub path: String,
    /// The standard changes, each re-timed on the step model, largest saving first; give it alone
    #[serde(default)]
    pub all: bool,
    /// Remove one kernel category (substring: gemm, attention, communication, layout, norm, elementwise, other, memcpy)
    pub remove_category: Option<String>,
    /// Remove the GPU work whose kernel name matches this regex
    pub grep: Option<String>,
    /// Remove the CPU ops whose name matches this regex: their host time, launches and the GPU work they launched (a trace, not a profile)
    pub op: Option<String>,
    /// With remove_category, grep or op: keep this share of the work's time instead of removing it (0.5: twice as fast)
    pub scale: Option<f64>,
    /// Remove N launch calls per step (kernel launches and memcpy/memset calls) and the dispatch between them (an op-fusion win)
    pub remove_launches: Option<u64>,
    /// Set one idle cause to zero (python, cpu_op, dataloader, allocator: that host time; sync: syncs return at once; launch: no launch overhead; dependency: no cross-stream waits)
    #[serde(default)]
    #[schemars(schema_with = "one_of::<IdleCause>")]
    pub remove_idle: Option<String>,
    /// Run one kernel category's priced work at the device's roofline (traces that recorded shapes): an upper bound
    pub at_roofline: Option<String>,
    /// Fuse each chain of memory-bound kernels (elementwise, norm, copy) a stream runs between two matrix kernels into one kernel as long as its longest, launched once (a trace, not a profile)
    #[serde(default)]
    pub fuse_chains: bool,
    /// Of a job: remove this rank's lateness at the collectives [default: the rank the others wait for]
    pub straggler: Option<u32>,
    /// Of a job: read rank N alone and change it [default: a change is made on every rank and the job re-timed]
    pub rank: Option<u32>,
    #[serde(flatten)]
    pub set: RankSet,
}

impl Params for WhatIf {
    const PATHS: &[&str] = &["path"];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots() -> (tempfile::TempDir, Roots) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.json"), "{}").unwrap();
        let roots = Roots::new(&[dir.path().to_path_buf()]).unwrap();
        (dir, roots)
    }

    /// Every parameter of every tool, alone beside the paths, is a flag its
    /// reader takes: a field named unlike its flag fails here.
    #[test]
    fn every_parameter_is_a_flag_of_its_reader() {
        fn each<P: Params + JsonSchema + serde::de::DeserializeOwned>(tool: &str) {
            let (_dir, roots) = roots();
            let schema = schemars::schema_for!(P);
            let props = schema.get("properties").and_then(Value::as_object).unwrap();
            for (name, prop) in props {
                let mut params = serde_json::Map::new();
                for path in P::PATHS {
                    let is_list = props[*path]["type"] == "array";
                    let t = Value::from("t.json");
                    params.insert(path.to_string(), if is_list { Value::from(vec![t]) } else { t });
                }
                let value = match prop.get("enum").and_then(Value::as_array) {
                    Some(names) => names[0].clone(),
                    None => match prop["type"].as_array().map_or(&prop["type"], |t| &t[0]) {
                        Value::String(t) if t == "boolean" => Value::from(true),
                        Value::String(t) if t == "integer" || t == "number" => Value::from(1),
                        Value::String(t) if t == "array" => continue,
                        _ => Value::from("x"),
                    },
                };
                if !P::PATHS.contains(&name.as_str()) {
                    params.insert(name.clone(), value);
                }
                let p: P = serde_json::from_value(Value::Object(params)).unwrap();
                let line = argv(tool, &p, &roots).unwrap();
                if let Err(e) = reader_command(&line) {
                    panic!("{tool} {name}: {e} ({line:?})");
                }
            }
        }
        each::<Job>("summary");
        each::<Get>("get");
        each::<Input>("phases");
        each::<Input>("memory");
        each::<Kernels>("kernels");
        each::<Ops>("ops");
        each::<Tree>("tree");
        each::<Modules>("modules");
        each::<Job>("collectives");
        each::<Compare>("compare");
        each::<WhatIf>("what-if");
    }

    #[test]
    fn values_are_never_read_as_flags() {
        let (dir, roots) = roots();
        let p = Kernels {
            job: Job {
                paths: vec!["t.json".into()],
                rank: None,
                set: RankSet { ranks: None, strict: false },
            },
            top: Some(3),
            category: None,
            grep: Some("--json".into()),
            tensorcore: false,
            sort: None,
            phase: None,
        };
        let line = argv("kernels", &p, &roots).unwrap();
        let ReaderCommand::Kernels(k) = reader_command(&line).unwrap() else { panic!() };
        assert_eq!(k.grep.as_deref(), Some("--json"));
        assert_eq!(k.top, 3);
        assert_eq!(k.traces, [dir.path().canonicalize().unwrap().join("t.json")]);
        let bad = Kernels { sort: Some("bogus".into()), ..p };
        let e = reader_command(&argv("kernels", &bad, &roots).unwrap()).unwrap_err();
        assert!(e.to_string().contains("possible values"), "{e}");
        assert!(!e.to_string().contains("Usage"), "{e}");
    }
}
