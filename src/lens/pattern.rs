//! The regex options of the readers (`--grep`, `--focus`, `--op`): one way
//! to compile them, for every lens.

use regex::{Regex, RegexBuilder};

use crate::error::{Error, Result};

/// Compiles a `--grep` pattern (exit 2 on a bad one).
pub fn compile_grep(pattern: &str) -> Result<Regex> {
    compile_pattern("--grep", pattern)
}

/// Compiles the pattern of option `flag` (`--grep`, `--focus`, `--op`):
/// case-insensitive, size-limited; a bad one is a usage error naming it.
pub fn compile_pattern(flag: &str, pattern: &str) -> Result<Regex> {
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| Error::usage(format!("invalid {flag} regex '{pattern}': {e}")).caused_by(e))
}

/// A regex that matches `name` alone (a kernel label, an op): how one
/// view focuses on another's row.
pub fn exactly(name: &str) -> String {
    format!("^{}$", regex::escape(name))
}
