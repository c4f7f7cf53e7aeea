//! Printing lens results: `text` for people, `json` for scripts, `table`
//! for Markdown and CSV. All take the lens structs as they are; none
//! computes a figure of its own.

pub mod table;
pub mod text;

use std::borrow::Cow;

use serde::Serialize;

use crate::error::{Error, Result};

/// What a reader prints on stdout (`--format`; docs/spec.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for a terminal
    #[default]
    Text,
    /// The whole result, as `--json`
    Json,
    /// A GitHub-flavoured Markdown table, to paste into a PR comment
    Md,
    /// RFC 4180 CSV with a header of the JSON field names, for DuckDB or pandas
    Csv,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Md => "md",
            Format::Csv => "csv",
        }
    }
}

/// Pretty JSON of any lens result.
pub fn json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(|e| Error::failed(format!("cannot encode JSON: {e}")))
}

/// Text safe to print on a terminal: control characters (ESC sequences, a
/// carriage return, C1 codes) that a trace put in a kernel or op name are
/// shown escaped (`\u{1b}`), never sent raw. Line breaks are kept, so this
/// applies to whole outputs; JSON output is unchanged (serde escapes them).
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\n') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if c.is_control() && c != '\n' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_line_breaks_kept() {
        assert!(matches!(printable("gemm_kernel\nnext"), Cow::Borrowed(_)));
        assert_eq!(printable("k\u{1b}[2J\u{1b}]0;x\u{7}\r\t\u{9b}é\n"), "k\\u{1b}[2J\\u{1b}]0;x\\u{7}\\r\\t\\u{9b}é\n");
    }
}
