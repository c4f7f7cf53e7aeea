//! `--json`: every document a reader prints, its interface version first
//! (docs/spec.md §3.4), so a script can tell which shape it reads.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;

use crate::error::{Error, Result};

/// The version of the `--json` documents, `MAJOR.MINOR`: a field added is a
/// minor step, a field renamed, removed or given another type a major one;
/// every step is noted in CHANGELOG.md. The shipped schemas
/// (docs/schemas/) are generated from the types at this version.
pub const SCHEMA_VERSION: &str = "1.0";

// A document as printed: `schema_version`, then the lens result's own keys
// in their order. (Not a doc comment: the schema's description is then the
// lens result's own.)
#[derive(Serialize, JsonSchema)]
pub struct Versioned<'a, T> {
    #[schemars(schema_with = "version_schema")]
    schema_version: &'static str,
    #[serde(flatten)]
    value: &'a T,
}

/// Any version of this major: a document of a later minor only adds
/// fields, so a schema validates it too; one of another major is refused.
fn version_schema(_: &mut SchemaGenerator) -> Schema {
    let major = SCHEMA_VERSION.split('.').next().unwrap_or(SCHEMA_VERSION);
    json_schema!({
        "description": "The version of this document's shape, MAJOR.MINOR (docs/spec.md §3.4, CHANGELOG.md)",
        "type": "string",
        "pattern": format!("^{major}\\.[0-9]+$"),
    })
}

/// Pretty JSON of a lens result, `schema_version` its first key. The result
/// must serialize as an object (a struct or a map).
pub fn json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string_pretty(&Versioned { schema_version: SCHEMA_VERSION, value })
        .map_err(|e| Error::failed(format!("cannot encode JSON: {e}")).caused_by(e))
}
