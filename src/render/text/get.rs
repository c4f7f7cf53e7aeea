//! `profile get`: the metric names, or one metric's value as a script
//! wants it.

use std::fmt::Write;

use serde_json::Value;

use crate::lens::get::GetAnswer;

pub fn get(g: &GetAnswer) -> String {
    match g {
        GetAnswer::Names(names) => {
            let mut o = String::from("available metrics:\n");
            for n in &names.metrics {
                let _ = writeln!(o, "  {n}");
            }
            o
        }
        GetAnswer::Value(m) => format!("{}\n", scalar(&m.value)),
    }
}

/// A metric value as a script wants it: bare strings, `null` for missing.
pub fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
