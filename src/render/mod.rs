//! Printing lens results: `text` for people, `json` for scripts (`schema`:
//! the JSON Schemas of its documents), `table` for Markdown and CSV (`doc`
//! where the result is several tables and prose), `flame` for the tree's
//! stacks and flame graph. All take the lens structs as they are; none
//! computes a figure of its own.

pub mod doc;
pub mod flame;
pub mod json;
pub mod schema;
pub mod table;
pub mod text;

pub use json::json;

use std::borrow::Cow;

/// What a reader prints on stdout (`--format`; docs/spec.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for a terminal
    #[default]
    Text,
    /// The whole result, as `--json`
    Json,
    /// GitHub-flavoured Markdown to paste into a PR comment: a table (summary of one trace,
    /// compare, what-if: a short document of tables)
    Md,
    /// RFC 4180 CSV, one table with a header of the JSON field names, for DuckDB or pandas
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

/// Text safe to print on a terminal: control characters (ESC sequences, a
/// carriage return, C1 codes) that a trace put in a kernel or op name are
/// shown escaped (`\u{1b}`), never sent raw. Line breaks are kept, so this
/// applies to whole outputs; JSON output is unchanged (serde escapes them).
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if hidden(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A name on one row of a text table: a line break a trace put in it is
/// shown escaped (`\n`), as [`printable`] shows the other controls.
pub fn one_line(s: &str) -> Cow<'_, str> {
    if s.contains('\n') { Cow::Owned(s.replace('\n', "\\n")) } else { Cow::Borrowed(s) }
}

/// Characters shown escaped: control characters but the line break, and
/// the Unicode bidirectional controls, which reorder what a terminal shows
/// (U+202E turns `evil_txt.exe` into something else): U+061C, U+200E/F,
/// U+202A–U+202E, U+2066–U+2069.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_line_breaks_kept() {
        assert!(matches!(printable("gemm_kernel\nnext"), Cow::Borrowed(_)));
        assert_eq!(
            printable("k\u{1b}[2J\u{1b}]0;x\u{7}\r\t\u{9b}é\n"),
            "k\\u{1b}[2J\\u{1b}]0;x\\u{7}\\r\\t\\u{9b}é\n"
        );
        assert_eq!(
            printable("a\u{202e}b\u{2066}c\u{200f}d\u{61c}e→"),
            "a\\u{202e}b\\u{2066}c\\u{200f}d\\u{61c}e→"
        );
    }
}
