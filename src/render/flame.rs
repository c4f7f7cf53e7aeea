//! `tree --format folded|svg`: the tree's [`Stacks`] as collapsed stacks
//! (one line per stack, `root;child;leaf <ns per step>`, as FlameGraph,
//! inferno and speedscope read them) and as a flame graph SVG drawn by
//! inferno.

use crate::error::{Error, Result};
use crate::lens::tree::{Stacks, Weight};

/// One frame's name as a folded line can hold it: `;` separates frames, so
/// it becomes `:` (as FlameGraph's stackcollapse scripts do); line breaks
/// and tabs become spaces; a name ending in a space and a number
/// (`layer 3`) gets `_` for that space, since FlameGraph reads a second
/// number at the end of a line as a differential count; a leading `# `
/// (a comment line to FlameGraph) drops its space; an empty name is `?`.
pub fn frame_name(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| match c {
            ';' => ':',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    s = s.trim().to_string();
    if let Some(i) = s.rfind(' ') {
        let tail = &s[i + 1..];
        if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit() || c == '.') {
            s.replace_range(i..=i, "_");
        }
    }
    if let Some(rest) = s.strip_prefix("# ") {
        s = format!("#{rest}");
    }
    if s.is_empty() { "?".to_string() } else { s }
}

/// The collapsed stacks: one line per stack, in the tree's order.
pub fn folded(s: &Stacks) -> String {
    let mut out = String::new();
    for st in &s.stacks {
        let frames: Vec<String> = st.frames.iter().map(|f| frame_name(f)).collect();
        out.push_str(&frames.join(";"));
        out.push(' ');
        out.push_str(&st.ns_per_step.to_string());
        out.push('\n');
    }
    out
}

/// A flame graph of the stacks (inferno's SVG, with its search and zoom
/// script): colours by name, so the same tree draws the same file.
pub fn svg(s: &Stacks) -> Result<String> {
    let q = &s.query;
    let what = match s.weight {
        Weight::Gpu => "GPU time",
        Weight::Cpu => "CPU time",
    };
    let how = if q.bottom_up { "bottom-up: callees below their callers" } else { "top-down" };
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = format!("{what} by {}, {how}", q.by.as_str());
    let mut sub: Vec<String> = s.trace.iter().cloned().collect();
    sub.extend(q.phase.as_ref().map(|p| format!("phase {p}")));
    sub.extend(q.focus.as_ref().map(|f| format!("focus {f}")));
    sub.push(format!(
        "{} ms per step",
        crate::render::text::num(s.total_ns_per_step as f64 / 1e6, 3)
    ));
    opts.subtitle = Some(sub.join("  ·  "));
    opts.count_name = "ns/step".to_string();
    opts.name_type = String::new();
    opts.hash = true;
    opts.deterministic = true;
    let text = folded(s);
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, text.lines(), &mut out)
        .map_err(|e| Error::failed(format!("cannot draw the flame graph: {e}")).caused_by(e))?;
    String::from_utf8(out)
        .map_err(|e| Error::failed(format!("cannot draw the flame graph: {e}")).caused_by(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_break_a_folded_line() {
        assert_eq!(frame_name("aten::add"), "aten::add");
        assert_eq!(frame_name("a;b"), "a:b");
        assert_eq!(frame_name("x\ny\tz"), "x y z");
        assert_eq!(frame_name("model.0 Conv"), "model.0 Conv");
        assert_eq!(frame_name("layer 3"), "layer_3");
        assert_eq!(frame_name("step 1.5"), "step_1.5");
        assert_eq!(frame_name("# warmup"), "#warmup");
        assert_eq!(frame_name(" \n"), "?");
    }
}
