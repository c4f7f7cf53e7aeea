//! Printing lens results: `text` for people, `json` for scripts. Both take
//! the lens structs as they are; neither computes a figure of its own.

pub mod text;

use std::borrow::Cow;

use serde::Serialize;

use crate::error::{Error, Result};

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
