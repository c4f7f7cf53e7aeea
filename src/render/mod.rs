//! Printing lens results: `text` for people, `json` for scripts. Both take
//! the lens structs as they are; neither computes a figure of its own.

pub mod text;

use serde::Serialize;

use crate::error::{Error, Result};

/// Pretty JSON of any lens result.
pub fn json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(|e| Error::failed(format!("cannot encode JSON: {e}")))
}
