//! The core reads in one direction (docs/design.md §1, "Layers"): every
//! module of `src/` imports only from layers below its own, and no two
//! files import each other, directly or around a circle. Read from the
//! sources themselves: every `crate::…` and `super::…` path outside the
//! test modules (a test may drive the code from the top: the command line
//! that writes the tables it reads back).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules of `src/`, lowest layer first. A module may use
/// its own layer's and lower ones', never a higher one's.
const LAYERS: &[&[&str]] = &[
    &["error", "util", "tempfiles", "budget", "files"],
    &["trace"],
    &["hardware", "conditions"],
    &["profile"],
    &["analysis"],
    &["lens"],
    &["input"],
    &["merge"],
    &["render"],
    &["tables"],
    &["cli"],
    &["lib"],
];

fn layer(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&module))
        .unwrap_or_else(|| panic!("src/{module}: a module no layer names; add it to LAYERS"))
}

/// A source file as its module path (`["analysis", "idle"]`; `[]` is lib.rs).
type Module = Vec<String>;

fn modules(root: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(root).unwrap().with_extension("");
            let mut m: Module = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            if m.last().is_some_and(|l| l == "mod" || l == "lib") {
                m.pop();
            }
            out.insert(m, p);
        }
    }
    out
}

/// The source without its test modules (each file keeps them last) and
/// its line comments.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let tests =
        regex::Regex::new(r"#\[cfg\((test|all\(test[^\]]*)\)\]\s*(pub(\(crate\))? )?mod \w+ \{")
            .unwrap();
    let end = tests.find(&text).map_or(text.len(), |m| m.start());
    let comment = regex::Regex::new(r"//[^\n]*").unwrap();
    comment.replace_all(&text[..end], "").into_owned()
}

/// The files `m` imports: each `crate::`/`super::`/`self::` path (and each
/// branch of a `{…}` group after one) resolved to the longest module that
/// exists.
fn imports(m: &Module, path: &Path, all: &BTreeMap<Module, PathBuf>) -> BTreeSet<Module> {
    let re = regex::Regex::new(r"\b(crate|super|self)((?:::\w+)*)(?:::\{([^;]*?)\})?").unwrap();
    let is_mod_file = path.file_name().is_some_and(|f| f == "mod.rs" || f == "lib.rs");
    let text = code(path);
    let mut out = BTreeSet::new();
    for c in re.captures_iter(&text) {
        let mut rest: Vec<String> =
            c[2].split("::").filter(|s| !s.is_empty()).map(String::from).collect();
        let mut base: Module = match &c[1] {
            "crate" => Vec::new(),
            "self" => m.clone(),
            _ => m[..m.len().saturating_sub(usize::from(!is_mod_file))].to_vec(),
        };
        if &c[1] == "super" {
            if is_mod_file {
                base.pop();
            }
            while rest.first().is_some_and(|r| r == "super") {
                rest.remove(0);
                base.pop();
            }
        }
        let mut paths = Vec::new();
        match c.get(3) {
            Some(group) => {
                for item in group.as_str().split(',') {
                    let words: Vec<String> = item
                        .split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                        .filter(|w| !w.is_empty() && *w != "self" && *w != "as")
                        .take(2)
                        .map(String::from)
                        .collect();
                    paths.push([base.clone(), rest.clone(), words].concat());
                }
            }
            None => paths.push([base.clone(), rest].concat()),
        }
        for p in paths {
            // What resolves to lib.rs alone is one of its re-exports
            // (`crate::Result`), not lib.rs's own code.
            let found = (1..=p.len()).rev().map(|n| p[..n].to_vec()).find(|q| all.contains_key(q));
            if let Some(f) = found.filter(|f| f != m) {
                out.insert(f);
            }
        }
    }
    out
}

fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let all = modules(&root);
    all.iter().map(|(m, p)| (m.clone(), imports(m, p, &all))).collect()
}

fn name(m: &Module) -> String {
    if m.is_empty() { "lib".into() } else { m.join("/") }
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let mut upward = Vec::new();
    for (m, uses) in graph() {
        let from = m.first().map_or("lib", String::as_str);
        for u in uses {
            let to = u.first().map_or("lib", String::as_str);
            if layer(to) > layer(from) {
                upward.push(format!("{} uses {}", name(&m), name(&u)));
            }
        }
    }
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn no_files_import_each_other_around_a_circle() {
    let g = graph();
    // A file in a circle reaches itself; its circle is every file it
    // reaches that reaches it back (~100 files: plain searches do).
    let nodes: Vec<&Module> = g.keys().collect();
    let at: BTreeMap<&Module, usize> = nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let edges: Vec<Vec<usize>> =
        nodes.iter().map(|m| g[*m].iter().filter_map(|u| at.get(u).copied()).collect()).collect();
    let circles: BTreeSet<String> = (0..nodes.len())
        .filter(|&n| reaches(&edges, n, n))
        .map(|n| {
            let members: Vec<String> = (0..nodes.len())
                .filter(|&k| reaches(&edges, n, k) && reaches(&edges, k, n))
                .map(|k| name(nodes[k]))
                .collect();
            members.join(" <-> ")
        })
        .collect();
    assert!(
        circles.is_empty(),
        "files that import each other:\n{}",
        circles.into_iter().collect::<Vec<_>>().join("\n")
    );
}

fn reaches(edges: &[Vec<usize>], from: usize, to: usize) -> bool {
    let mut seen = vec![false; edges.len()];
    let mut stack = edges[from].clone();
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if !std::mem::replace(&mut seen[n], true) {
            stack.extend(&edges[n]);
        }
    }
    false
}

/// The reading of the sources finds what it must: a circle written on
/// purpose is seen, and an upward edge too (the checks above cannot pass
/// by reading nothing).
#[test]
fn the_import_reader_sees_paths_groups_and_super() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let all = modules(&root);
    let g = graph();
    let m = |s: &str| -> Module { s.split('/').map(String::from).collect() };
    // `use super::cpulog::{CpuLog, …}` in idle.rs; `crate::profile::{…}`.
    assert!(g[&m("analysis/idle")].contains(&m("analysis/cpulog")));
    assert!(g[&m("analysis/idle")].contains(&m("profile")));
    // `use crate::input::{self, LoadOptions, Loaded, ranks}` in cli.
    assert!(g[&m("cli")].contains(&m("input/ranks")), "{:?}", g[&m("cli")]);
    assert!(all.len() > 60, "{} files", all.len());
    // The test modules are left out: tables' tests read what cli writes.
    assert!(!g[&m("tables")].contains(&m("cli")));
}
