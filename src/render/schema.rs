//! The JSON Schemas of the `--json` documents, generated from the types the
//! readers serialize (schemars, draft 2020-12, as serialized: a field left
//! out when empty is optional, an `Option` otherwise is required and may be
//! `null`). Shipped under docs/schemas/ (`profile schema NAME` prints one);
//! a test keeps those files equal to these.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

use super::json::Versioned;
use crate::lens::{
    capture, collectives, compare, get, job, kernels, memory, modules, ops, phases, summary, tree,
    whatif,
};

/// One document shape: its name, the command that prints it, its schema.
struct Document {
    name: &'static str,
    command: &'static str,
    schema: fn() -> Schema,
}

/// Every document, by name: the reader, and after a dash the form whose
/// shape differs (`summary-job`: `summary` of a rank set).
const DOCUMENTS: &[Document] = &[
    doc("summary", "summary TRACE --json", of::<summary::Summary>),
    doc("summary-job", "summary RANKS… --json (a distributed job)", of::<job::Job>),
    doc("get", "get TRACE FIELD --json", of::<get::Metric>),
    doc("get-names", "get TRACE --json (the metric names)", of::<get::MetricNames>),
    doc("phases", "phases TRACE --json", of::<phases::Phases>),
    doc("kernels", "kernels TRACE --json", of::<kernels::Kernels>),
    doc("kernels-job", "kernels RANKS… --json (a distributed job)", of::<kernels::JobKernels>),
    doc("ops", "ops TRACE --json", of::<ops::Ops>),
    doc("tree", "tree TRACE --json", of::<tree::Tree>),
    doc("modules", "modules TRACE --json", of::<modules::Modules>),
    doc("collectives", "collectives TRACE… --json", of::<collectives::Collectives>),
    doc("compare", "compare BEFORE AFTER --json", of::<compare::Comparison>),
    doc("compare-job", "compare BEFORE AFTER --json (two jobs)", of::<job::JobComparison>),
    doc("what-if", "what-if TRACE CHANGE --json", of::<whatif::WhatIf>),
    doc("what-if-all", "what-if TRACE --all --json (a trace or a job)", of::<whatif::WhatIfAll>),
    doc(
        "what-if-job",
        "what-if RANKS… --json (a job: --straggler, or a change on every rank)",
        of::<whatif::JobWhatIf>,
    ),
    doc("memory", "memory TRACE --json", of::<memory::Memory>),
    doc("merge", "merge RANKS… -o FILE --json", of::<crate::merge::Merged>),
    doc("capture", "infer --json, run --json (the capture's report)", of::<capture::Capture>),
];

const fn doc(name: &'static str, command: &'static str, schema: fn() -> Schema) -> Document {
    Document { name, command, schema }
}

/// The documents' names and the commands that print them.
pub fn names() -> impl Iterator<Item = (&'static str, &'static str)> {
    DOCUMENTS.iter().map(|d| (d.name, d.command))
}

/// Every document's schema, by name, for whoever serves them (the files
/// under docs/schemas/, an MCP tool's output schema).
pub fn schemas() -> Vec<(&'static str, Value)> {
    DOCUMENTS.iter().map(|d| (d.name, titled(d))).collect()
}

/// The schema of the document named `name`.
pub fn schema(name: &str) -> Option<Value> {
    DOCUMENTS.iter().find(|d| d.name == name).map(titled)
}

/// The schema of the document named `name` as printed and shipped
/// (docs/schemas/NAME.json): pretty JSON and a line break.
pub fn text(name: &str) -> Option<String> {
    schema(name).map(|s| format!("{s:#}\n"))
}

/// One schema any of the documents `names` satisfies (a tool that prints
/// one of several shapes: `summary` of a trace or of a job): their bodies
/// under `anyOf`, their definitions merged at the root, where `$ref`s
/// look. None: a name unknown, or two documents defining one name two
/// ways.
pub fn any_of(title: &str, names: &[&str]) -> Option<Value> {
    let mut defs = Map::new();
    let mut bodies = Vec::new();
    let mut meta = None;
    for name in names {
        let Value::Object(mut s) = schema(name)? else { return None };
        meta = s.remove("$schema").or(meta);
        if let Some(Value::Object(d)) = s.remove("$defs") {
            for (k, v) in d {
                match defs.get(&k) {
                    Some(seen) if *seen != v => return None,
                    _ => {
                        defs.insert(k, v);
                    }
                }
            }
        }
        bodies.push(Value::Object(s));
    }
    let mut out = Map::new();
    out.extend(meta.map(|m| ("$schema".to_string(), m)));
    out.insert("title".into(), title.into());
    if bodies.len() == 1 {
        let Some(Value::Object(body)) = bodies.pop() else { return None };
        out.extend(body.into_iter().filter(|(k, _)| k != "title"));
    } else {
        // MCP wants an object at the top: every body is one.
        out.insert("type".into(), "object".into());
        out.insert("anyOf".into(), bodies.into());
    }
    if !defs.is_empty() {
        out.insert("$defs".into(), Value::Object(defs));
    }
    Some(Value::Object(out))
}

/// `$schema`, the title naming the command, then the generated schema.
fn titled(d: &Document) -> Value {
    let mut generated = (d.schema)();
    let mut out = Map::new();
    if let Some(meta) = generated.remove("$schema") {
        out.insert("$schema".into(), meta);
    }
    generated.remove("title");
    out.insert("title".into(), format!("libreyolo profile {}", d.command).into());
    out.extend(std::mem::take(generated.ensure_object()));
    Value::Object(out)
}

/// The schema of `T` as `render::json` prints it.
fn of<T: JsonSchema + 'static>() -> Schema {
    let generator = SchemaSettings::draft2020_12().for_serialize().into_generator();
    generator.into_root_schema_for::<Versioned<'static, T>>()
}
