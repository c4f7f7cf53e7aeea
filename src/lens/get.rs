//! `profile get`: one metric, or the list of metric names.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::profile::{Profile, metrics};

#[derive(Debug, Clone, PartialEq)]
pub enum GetAnswer {
    /// Every metric name, sorted.
    Names(MetricNames),
    /// One metric.
    Value(Metric),
}

/// `get TRACE --json`: the metric names, sorted.
#[derive(Debug, Clone, PartialEq, serde::Serialize, JsonSchema)]
pub struct MetricNames {
    pub metrics: Vec<String>,
}

/// `get TRACE FIELD --json`: the metric under its own name
/// (`{"step_ms": 41.2}`), as scripts have read it since `get` has been.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: String,
    pub value: Value,
}

impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(&self.name, &self.value)?;
        m.end()
    }
}

/// As it is serialized: one key, the metric's name; its value a number, a
/// string (`bound`), a flag or `null` (not measured).
impl JsonSchema for Metric {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Metric".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The metric under its own name: `{\"step_ms\": 41.2}`",
            "type": "object",
            "additionalProperties": { "type": ["number", "string", "boolean", "null"] },
        })
    }
}

/// `field = None` lists the names. An unknown field is a usage error that
/// points at the listing form (`input` is the path as the user typed it).
pub fn get(p: &Profile, field: Option<&str>, input: &str) -> Result<GetAnswer> {
    let m = metrics::of(p);
    match field {
        None => {
            let mut names: Vec<String> = m.keys().cloned().collect();
            names.sort();
            Ok(GetAnswer::Names(MetricNames { metrics: names }))
        }
        Some(f) => m
            .get(f)
            .map(|v| GetAnswer::Value(Metric { name: f.to_string(), value: v.clone() }))
            .ok_or_else(|| {
                Error::usage(format!(
                    "unknown metric '{f}'. run 'libreyolo profile get {input}' to list metrics."
                ))
            }),
    }
}
