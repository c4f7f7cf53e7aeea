//! `profile get`: one metric, or the list of metric names.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::profile::{Profile, metrics};

#[derive(Debug, Clone, PartialEq)]
pub enum Got {
    /// Every metric name, sorted.
    Names(Vec<String>),
    /// One metric.
    Value(String, Value),
}

/// `field = None` lists the names. An unknown field is a usage error that
/// points at the listing form (`input` is the path as the user typed it).
pub fn get(p: &Profile, field: Option<&str>, input: &str) -> Result<Got> {
    let m = metrics::of(p);
    match field {
        None => {
            let mut names: Vec<String> = m.keys().cloned().collect();
            names.sort();
            Ok(Got::Names(names))
        }
        Some(f) => m.get(f).map(|v| Got::Value(f.to_string(), v.clone())).ok_or_else(|| {
            Error::usage(format!(
                "unknown metric '{f}'. run 'libreyolo profile get {input}' to list metrics."
            ))
        }),
    }
}
