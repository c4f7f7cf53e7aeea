//! The event parser (src/trace/event.rs, written by hand for speed) reads
//! what serde_json reads: on generated events — fields in any order, with
//! unknown ones, escapes and non-ASCII text, numbers written as numbers or
//! numeric strings, pids and tids as integers or strings — every field the
//! analysis uses comes out the same, and the event's kind is the one its
//! `ph`, `cat` and `name` decide.

use libreyolo_core::trace::EventKind;
use libreyolo_core::trace::event::{Event, Id};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const PH: &[&str] = &["X", "i", "I", "s", "f", "M", "B"];
const CAT: &[&str] = &[
    "cpu_op",
    "kernel",
    "cuda_runtime",
    "cuda_driver",
    "user_annotation",
    "gpu_user_annotation",
    "gpu_memcpy",
    "gpu_memset",
    "python_function",
    "Operator",
    "Runtime",
    "Kernel",
    "Memcpy",
    "ac2g",
    "Trace",
    "my \"cat\"",
    "é",
];
const NAME: &[&str] = &[
    "aten::mm",
    "ProfilerStep#4",
    "step/forward",
    "[memory]",
    "cudaLaunchKernel",
    "void at::native::kernel<float>(\"x\")",
    "tab\there",
    "snow ☃",
    "back\\slash",
    "",
];

/// A number as a trace may write it: integer, float, or a numeric string.
fn number() -> impl Strategy<Value = (Value, f64)> {
    prop_oneof![
        (0i64..4_000_000_000_000_000).prop_map(|v| (json!(v), v as f64)),
        (0.0f64..1e9).prop_map(|v| (json!(v), v)),
        (0i64..1_000_000).prop_map(|v| (json!(v.to_string()), v as f64)),
    ]
}

fn id() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..1 << 40).prop_map(|v| json!(v)),
        "[a-z ]{0,6}[0-9]{1,4}".prop_map(Value::from)
    ]
}

fn event() -> impl Strategy<Value = (Value, Option<f64>, Option<f64>, Option<i64>)> {
    (
        prop::sample::select(PH),
        prop::sample::select(CAT),
        prop::sample::select(NAME),
        id(),
        id(),
        prop::option::of(number()),
        prop::option::of(number()),
        prop::option::of(0i64..1 << 40),
        prop::collection::vec(("[a-zA-Z_]{1,8}", any::<i32>()), 0..4),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(ph, cat, name, pid, tid, ts, dur, corr, extra, shuffle)| {
            let mut fields: Vec<(String, Value)> = vec![
                ("ph".into(), json!(ph)),
                ("cat".into(), json!(cat)),
                ("name".into(), json!(name)),
                ("pid".into(), pid),
                ("tid".into(), tid),
            ];
            if let Some((v, _)) = &ts {
                fields.push(("ts".into(), v.clone()));
            }
            if let Some((v, _)) = &dur {
                fields.push(("dur".into(), v.clone()));
            }
            let mut args = Map::new();
            if let Some(c) = corr {
                args.insert("correlation".into(), json!(c));
            }
            for (k, v) in &extra {
                args.insert(format!("x_{k}"), json!(v));
            }
            fields.push(("args".into(), Value::Object(args)));
            for (k, v) in extra {
                fields.push((format!("unknown_{k}"), json!([v, {"nested": [v]}])));
            }
            let n = fields.len();
            fields.rotate_left(shuffle.index(n));
            (Value::Object(fields.into_iter().collect()), ts.map(|t| t.1), dur.map(|d| d.1), corr)
        })
}

/// The parser's id as serde_json's value reads.
fn id_matches(got: Option<&Id<'_>>, want: &Value) -> bool {
    match (got, want) {
        (Some(Id::Int(v)), Value::Number(n)) => n.as_i64() == Some(*v),
        (Some(Id::Int(v)), Value::String(s)) => {
            let t = s.trim();
            t.parse::<i64>().ok().or_else(|| t.strip_prefix("stream ")?.trim().parse().ok())
                == Some(*v)
        }
        (Some(Id::Str(s)), Value::String(w)) => s == w,
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn the_parser_reads_what_serde_json_reads((v, ts, dur, corr) in event()) {
        let text = serde_json::to_string(&v).unwrap();
        let ev = Event::parse(text.as_bytes()).unwrap();
        prop_assert_eq!(ev.ph(), v["ph"].as_str().unwrap());
        prop_assert_eq!(ev.cat(), v["cat"].as_str().unwrap());
        prop_assert_eq!(ev.name(), v["name"].as_str().unwrap());
        prop_assert!(id_matches(ev.pid.as_ref(), &v["pid"]), "pid {:?} vs {}", ev.pid, v["pid"]);
        prop_assert!(id_matches(ev.tid.as_ref(), &v["tid"]), "tid {:?} vs {}", ev.tid, v["tid"]);
        prop_assert_eq!(ev.ts.get(), ts);
        prop_assert_eq!(ev.dur.get(), dur);
        prop_assert_eq!(ev.correlation(), corr);
        prop_assert_eq!(ev.kind, EventKind::of(ev.ph(), ev.cat(), ev.name()));
    }
}
