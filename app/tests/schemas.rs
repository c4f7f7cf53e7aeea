//! The `--json` interface (docs/spec.md §3.4): every document of every
//! reader starts with `schema_version` and validates against its schema in
//! docs/schemas/, which is the one the types generate.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::{first_trace, fixtures, run, traces};
use libreyolo_core::render::json::SCHEMA_VERSION;
use serde_json::Value;

/// docs/schemas/
fn shipped() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/schemas"))
}

/// The documents' names, as `profile schema` lists them.
fn names() -> Vec<String> {
    let r = run(&["profile", "schema"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    r.stdout.lines().map(|l| l.split_whitespace().next().unwrap().to_string()).collect()
}

/// The shipped schemas, compiled.
struct Validator {
    schemas: boon::Schemas,
    index: HashMap<String, boon::SchemaIndex>,
}

impl Validator {
    fn new() -> Validator {
        let (mut schemas, mut compiler) = (boon::Schemas::new(), boon::Compiler::new());
        let mut index = HashMap::new();
        for name in names() {
            let path = shipped().join(format!("{name}.json"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SCHEMAS=1 writes it)", path.display()));
            let url = format!("file:///schemas/{name}.json");
            compiler.add_resource(&url, serde_json::from_str(&text).unwrap()).unwrap();
            let i = compiler.compile(&url, &mut schemas).unwrap_or_else(|e| panic!("{name}: {e}"));
            index.insert(name, i);
        }
        Validator { schemas, index }
    }

    /// Why `doc` is not a `name` document, if it is not.
    fn errors(&self, name: &str, doc: &Value) -> Option<String> {
        let i = self.index.get(name).unwrap_or_else(|| panic!("no schema named {name}"));
        self.schemas.validate(doc, *i).err().map(|e| format!("{e:#}"))
    }

    /// `profile <args> --json`, exit 0, is a valid `name` document whose
    /// first key is `schema_version`; the document.
    fn check(&self, name: &str, args: &[&str]) -> Value {
        self.output(name, args, 0).expect("exit 0")
    }

    /// As [`Validator::check`], where `allowed` is a documented exit code
    /// that prints nothing (`modules` of a trace without modules: 1).
    fn output(&self, name: &str, args: &[&str], allowed: i32) -> Option<Value> {
        let mut all = vec!["profile"];
        all.extend_from_slice(args);
        all.push("--json");
        let r = run(&all);
        if r.code != 0 && r.code == allowed && r.stdout.is_empty() {
            return None;
        }
        assert_eq!(r.code, 0, "{all:?}: {}", r.stderr);
        let doc: Value = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("{all:?}: not JSON ({e}): {}", r.stdout));
        let first = doc.as_object().and_then(|o| o.iter().next());
        assert_eq!(
            first,
            Some((&"schema_version".to_string(), &Value::from(SCHEMA_VERSION))),
            "{all:?}: schema_version is not the first key"
        );
        if let Some(e) = self.errors(name, &doc) {
            panic!("{all:?} is not a valid {name} document:\n{e}");
        }
        Some(doc)
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn shipped_schemas_are_the_generated_ones() {
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
    let names = names();
    assert!(names.len() >= 19, "{names:?}");
    for name in &names {
        let r = run(&["profile", "schema", name]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let path = shipped().join(format!("{name}.json"));
        if update {
            std::fs::write(&path, &r.stdout).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == r.stdout,
            "{} differs from `libreyolo profile schema {name}`: the types changed. Rewrite the files with UPDATE_SCHEMAS=1 cargo test --release -p libreyolo --test schemas, and step SCHEMA_VERSION as docs/spec.md §3.4 says",
            path.display()
        );
    }
    // Nothing else there: a document that went away takes its file along.
    for f in std::fs::read_dir(shipped()).unwrap() {
        let f = f.unwrap().path();
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        if update && !names.contains(&stem) {
            std::fs::remove_file(&f).unwrap();
            continue;
        }
        assert!(names.contains(&stem), "{} is no document's schema", f.display());
    }
    let r = run(&["profile", "schema", "no-such-document"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("summary-job"), "the names are listed: {}", r.stderr);
}

#[test]
fn a_document_of_another_shape_is_refused() {
    let v = Validator::new();
    let trace = first_trace("hta_trace_diff_a100_2022");
    let good = v.check("summary", &["summary", s(&trace)]);
    let bad = |f: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut doc = good.clone();
        f(doc.as_object_mut().unwrap());
        v.errors("summary", &doc)
    };
    // A field of another type, at the top and deep inside.
    assert!(bad(&|d| _ = d.insert("step_ms".into(), "fast".into())).is_some());
    assert!(bad(&|d| d["top_kernels"][0]["tensorcore"] = "yes".into()).is_some());
    // A required field missing.
    assert!(bad(&|d| _ = d.shift_remove("bound")).is_some());
    // Another major version; a later minor only adds, and still reads.
    assert!(bad(&|d| _ = d.insert("schema_version".into(), "2.0".into())).is_some());
    assert!(bad(&|d| _ = d.insert("schema_version".into(), "1.7".into())).is_none());
    assert!(bad(&|d| _ = d.insert("a_field_of_1_7".into(), 1.into())).is_none());
    // A document is checked against its own shape.
    assert!(v.errors("kernels", &good).is_some());
    let names = v.check("get-names", &["get", s(&trace)]);
    assert!(v.errors("get", &names).is_some(), "a list of names is no metric");
}

#[test]
fn summary_and_get_of_every_trace() {
    let v = Validator::new();
    for t in traces() {
        v.check("summary", &["summary", s(&t)]);
        v.check("get-names", &["get", s(&t)]);
        v.check("get", &["get", s(&t), "step_ms"]);
    }
    // Every metric, of a trace and of a repeat file.
    let repeats = fixtures().join("reference/infer_repeat3");
    for input in [first_trace("hta_trace_diff_a100_2022"), repeats] {
        let names = v.check("get-names", &["get", s(&input)]);
        for m in names["metrics"].as_array().unwrap() {
            let m = m.as_str().unwrap();
            let got = v.check("get", &["get", s(&input), m]);
            assert_eq!(got.as_object().unwrap().len(), 2, "{got}");
            assert!(got.get(m).is_some(), "{got}");
        }
    }
}

#[test]
fn table_readers_of_every_trace() {
    let v = Validator::new();
    let mut modules = 0;
    for t in traces() {
        v.check("phases", &["phases", s(&t)]);
        v.check("kernels", &["kernels", s(&t), "--top", "1000"]);
        v.check("ops", &["ops", s(&t), "--top", "1000"]);
        v.check("tree", &["tree", s(&t), "--min-pct", "0"]);
        v.check("tree", &["tree", s(&t), "--bottom-up", "--by", "op"]);
        modules += v.output("modules", &["modules", s(&t), "--min-pct", "0"], 1).is_some() as u32;
        v.check("collectives", &["collectives", s(&t)]);
        v.check("memory", &["memory", s(&t)]);
    }
    assert!(modules >= 10, "modules read on {modules} traces");
}

#[test]
fn what_if_of_every_trace() {
    let v = Validator::new();
    for t in traces() {
        v.check("what-if-all", &["what-if", s(&t), "--all"]);
        v.check("what-if", &["what-if", s(&t), "--remove-launches", "1"]);
        v.check("what-if", &["what-if", s(&t), "--remove-category", "elementwise"]);
    }
}

#[test]
fn compare_of_fixture_pairs() {
    let v = Validator::new();
    let all = traces();
    for pair in all.windows(2) {
        v.check("compare", &["compare", s(&pair[0]), s(&pair[1])]);
    }
    // Repeats (a significance call) and gates.
    let reference = fixtures().join("reference");
    let (a, b) = (reference.join("train_repeat3"), reference.join("train_b4"));
    let c = v.check("compare", &["compare", s(&a), s(&b), "--fail-on", "gpu_util:-90pts"]);
    assert_eq!(c["gates"].as_array().unwrap().len(), 1);
}

#[test]
fn the_reference_profiles() {
    // Inference (latency, stages), repeat files (a spread), no trace.
    let v = Validator::new();
    for run in
        ["infer_b1", "infer_b4", "infer_notrace", "infer_repeat3", "train_b4", "train_repeat3"]
    {
        let p = fixtures().join("reference").join(run);
        v.check("summary", &["summary", s(&p)]);
        v.check("get-names", &["get", s(&p)]);
        v.check("phases", &["phases", s(&p)]);
        v.check("kernels", &["kernels", s(&p)]);
        v.check("ops", &["ops", s(&p)]);
        v.check("memory", &["memory", s(&p)]);
    }
}

#[test]
fn the_readers_of_a_job() {
    let v = Validator::new();
    let job = fixtures().join("traces/param_dlrm_v100_8rank");
    let j = s(&job);
    v.check("summary-job", &["summary", j]);
    v.check("kernels-job", &["kernels", j]);
    v.check("collectives", &["collectives", j]);
    v.check("compare-job", &["compare", j, j]);
    v.check("what-if-job", &["what-if", j]);
    v.check("what-if-job", &["what-if", j, "--remove-category", "communication"]);
    v.check("what-if-all", &["what-if", j, "--all"]);
    // One rank of it, as one trace.
    v.check("summary", &["summary", j, "--rank", "3"]);
    v.check("what-if-all", &["what-if", j, "--rank", "3", "--all"]);
    let out = tempfile::tempdir().unwrap();
    let merged = out.path().join("job.json.gz");
    v.check("merge", &["merge", j, "-o", s(&merged)]);
}

#[test]
fn the_capture_report() {
    // `infer --json` and `run --json` print this report of the profile they
    // wrote (their run needs libtorch: the reference captures stand in).
    use libreyolo_core::input::{LoadOptions, load};
    use libreyolo_core::lens::capture::Capture;
    let v = Validator::new();
    for (run, training) in [("infer_b1", false), ("infer_repeat3", false), ("train_b4", true)] {
        let dir = fixtures().join("reference").join(run);
        let p = load(&dir, LoadOptions::default()).unwrap().input.profile;
        let report = if training {
            Capture::training(&p, &dir.join("profile.json"))
        } else {
            Capture::inference(&p, &dir.join("profile.json"))
        };
        let doc: Value =
            serde_json::from_str(&libreyolo_core::render::json(&report).unwrap()).unwrap();
        assert_eq!(doc.as_object().unwrap().keys().next().unwrap(), "schema_version");
        if let Some(e) = v.errors("capture", &doc) {
            panic!("{run}: not a valid capture document:\n{e}");
        }
    }
}
