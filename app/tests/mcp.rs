//! `libreyolo mcp` end to end, as an MCP client meets it: the real binary
//! spawned and spoken to in newline-delimited JSON-RPC on its stdin and
//! stdout (the protocol's stdio transport). The client is written here,
//! not taken from rmcp: the wire is then checked independently of the
//! library that writes it, and nothing more is built for the test.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{Value, json};

/// How long a response may take: the readers answer these fixtures in
/// milliseconds; a server that died or hangs fails the test instead.
const PATIENCE: Duration = Duration::from_secs(120);

/// A running `libreyolo mcp`, initialised.
struct Server {
    child: Child,
    stdin: ChildStdin,
    /// Every line the server writes on stdout, parsed: stdout is the
    /// protocol's channel, so a line that is not JSON fails the reading
    /// thread, and the test with it.
    lines: Receiver<Value>,
    next_id: u64,
    _stderr: tempfile::NamedTempFile,
}

impl Server {
    /// `libreyolo mcp --root ROOT… FLAGS…`, initialised.
    fn start(roots: &[&Path], flags: &[&str]) -> Server {
        let stderr = tempfile::NamedTempFile::new().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_libreyolo"));
        cmd.arg("mcp").args(flags);
        for r in roots {
            cmd.arg("--root").arg(r);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr.reopen().unwrap())
            .spawn()
            .expect("libreyolo mcp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let line = line.unwrap();
                let msg: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("stdout holds a line that is not JSON ({e}): {line}")
                });
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        let mut server = Server { child, stdin, lines, next_id: 1, _stderr: stderr };
        let init = server.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "libreyolo-tests", "version": "0" }
            }),
        );
        let result = &init["result"];
        assert_eq!(result["protocolVersion"], "2025-06-18", "{init}");
        assert_eq!(result["serverInfo"]["name"], "libreyolo", "{init}");
        assert!(result["capabilities"]["tools"].is_object(), "{init}");
        let instructions = result["instructions"].as_str().unwrap();
        assert!(instructions.contains("Start with `summary`"), "{instructions}");
        server.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        server
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns its response, whole (`result` or `error`).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            match self.lines.recv_timeout(PATIENCE) {
                Ok(msg) if msg["id"] == id => return msg,
                // A notification, or nothing else: the server writes only answers.
                Ok(msg) => assert!(msg.get("id").is_none(), "an answer to no request: {msg}"),
                Err(RecvTimeoutError::Timeout) => panic!("no answer to {method} in {PATIENCE:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("the server ended during {method}"),
            }
        }
    }

    /// Calls a tool: its result (`content`, `isError`).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({ "name": tool, "arguments": arguments }));
        assert!(r.get("error").is_none(), "{tool} {arguments}: a protocol error: {r}");
        r["result"].clone()
    }

    /// Calls a tool that must succeed: its JSON document.
    fn answer(&mut self, tool: &str, arguments: Value) -> Value {
        let r = self.call(tool, arguments.clone());
        document(tool, &arguments, &r)
    }

    /// Calls a tool that must fail: its message.
    fn refusal(&mut self, tool: &str, arguments: Value) -> String {
        let r = self.call(tool, arguments.clone());
        assert_eq!(r["isError"], true, "{tool} {arguments}: {r}");
        r["content"][0]["text"].as_str().unwrap().to_string()
    }
}

/// A successful result's JSON document (its text).
fn document(tool: &str, arguments: &Value, r: &Value) -> Value {
    assert_eq!(r["isError"], false, "{tool} {arguments}: {r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{tool}: not JSON ({e}): {text}"))
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fixture traces' folder, links resolved: the server names its files so.
fn traces() -> PathBuf {
    common::fixtures().join("traces").canonicalize().unwrap()
}

const TRAINING: &str = "hta_amd_mi250_rocm62/mi250_minitoy_train_ROCm6_2_kineto.json.gz";
const MEMORY: &str = "tracelens_h100_qwen_inference/gaunernst_bert-small-uncased__1016001.json.gz";
const JOB: &str = "param_dlrm_v100_8rank";
const RANK0: &str = "param_dlrm_v100_8rank/worker0_step_12.1694128201545.pt.trace.json.gz";
const RANK1: &str = "param_dlrm_v100_8rank/worker1_step_12.1694128201556.pt.trace.json.gz";

#[test]
fn every_tool_answers_what_the_command_line_prints() {
    let root = traces();
    let mut server = Server::start(&[&root], &[]);

    let list = server.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "collectives",
            "compare",
            "get",
            "kernels",
            "memory",
            "modules",
            "ops",
            "phases",
            "summary",
            "tree",
            "what-if"
        ]
    );
    for t in tools {
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{t}");
        let props = schema["properties"].as_object().unwrap();
        assert!(props.values().all(|p| p["description"].is_string()), "every parameter said: {t}");
        assert!(!t["description"].as_str().unwrap().is_empty(), "{t}");
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
        assert_eq!(t["outputSchema"]["type"], "object", "an output schema: {t}");
    }
    // spec.md §9's table lists each tool's parameters: those of its
    // input schema, no more, no fewer.
    let spec =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/spec.md")).unwrap();
    let table = spec.split("| tool | parameters").nth(1).expect("spec.md §9's tool table");
    let ticked = |cell: &str| -> Vec<String> {
        let mut v: Vec<String> = cell.split('`').skip(1).step_by(2).map(String::from).collect();
        v.sort();
        v
    };
    let mut listed = 0;
    for row in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').collect();
        for name in ticked(cells[1]) {
            let t = tools.iter().find(|t| t["name"] == name.as_str());
            let t =
                t.unwrap_or_else(|| panic!("spec.md lists `{name}`, the server has no such tool"));
            let mut props: Vec<String> =
                t["inputSchema"]["properties"].as_object().unwrap().keys().cloned().collect();
            props.sort();
            assert_eq!(ticked(cells[2]), props, "spec.md §9's parameters of `{name}`");
            listed += 1;
        }
    }
    assert_eq!(listed, tools.len(), "spec.md §9 lists every tool");
    // Each tool's output schema, compiled: every answer's structured copy
    // must satisfy it.
    let mut compiled = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    let mut output: std::collections::HashMap<String, boon::SchemaIndex> = Default::default();
    for t in tools {
        let name = t["name"].as_str().unwrap();
        let url = format!("file:///tools/{name}.json");
        compiler.add_resource(&url, t["outputSchema"].clone()).unwrap();
        let i = compiler.compile(&url, &mut compiled).unwrap_or_else(|e| panic!("{name}: {e}"));
        output.insert(name.to_string(), i);
    }

    // Each call beside the command line it stands for, on the same files:
    // the tool's document is the reader's `--json` document.
    let abs = |rel: &str| root.join(rel).to_str().unwrap().to_string();
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        ("summary", json!({ "paths": [TRAINING] }), vec![abs(TRAINING)]),
        (
            "summary",
            json!({ "paths": [JOB], "ranks": "0-3" }),
            vec![abs(JOB), "--ranks=0-3".into()],
        ),
        (
            "get",
            json!({ "path": abs(TRAINING), "field": "step_ms" }),
            vec![abs(TRAINING), "step_ms".into()],
        ),
        ("get", json!({ "path": TRAINING }), vec![abs(TRAINING)]),
        ("phases", json!({ "path": TRAINING }), vec![abs(TRAINING)]),
        (
            "kernels",
            json!({ "paths": [TRAINING], "top": 3, "sort": "count" }),
            vec![abs(TRAINING), "--top=3".into(), "--sort=count".into()],
        ),
        ("kernels", json!({ "paths": [JOB], "top": 5 }), vec![abs(JOB), "--top=5".into()]),
        (
            "ops",
            json!({ "path": TRAINING, "top": 5, "grep": "aten", "sort": "gpu" }),
            vec![abs(TRAINING), "--top=5".into(), "--grep=aten".into(), "--sort=gpu".into()],
        ),
        (
            "tree",
            json!({ "path": TRAINING, "by": "op", "depth": 2, "min_pct": 5.0 }),
            vec![abs(TRAINING), "--by=op".into(), "--depth=2".into(), "--min-pct=5".into()],
        ),
        (
            "tree",
            json!({ "path": TRAINING, "bottom_up": true }),
            vec![abs(TRAINING), "--bottom-up".into()],
        ),
        ("modules", json!({ "path": TRAINING }), vec![abs(TRAINING)]),
        ("memory", json!({ "path": MEMORY }), vec![abs(MEMORY)]),
        ("collectives", json!({ "paths": [JOB] }), vec![abs(JOB)]),
        // One rank's collectives: a note says what it cannot show.
        ("collectives", json!({ "paths": [RANK0] }), vec![abs(RANK0)]),
        ("compare", json!({ "baseline": RANK0, "candidate": RANK1 }), vec![abs(RANK0), abs(RANK1)]),
        ("what-if", json!({ "path": TRAINING, "all": true }), vec![abs(TRAINING), "--all".into()]),
        (
            "what-if",
            json!({ "path": TRAINING, "remove_category": "gemm", "scale": 0.5 }),
            vec![abs(TRAINING), "--remove-category=gemm".into(), "--scale=0.5".into()],
        ),
        ("what-if", json!({ "path": JOB }), vec![abs(JOB)]),
    ];
    let mut said_something = false;
    for (tool, arguments, cli) in cases {
        let result = server.call(tool, arguments.clone());
        let got = document(tool, &arguments, &result);
        assert_eq!(result["structuredContent"], got, "{tool}: the structured copy is the text");
        if let Err(e) = compiled.validate(&got, output[tool]) {
            panic!("{tool} {arguments}: not its output schema: {e:#}");
        }
        let mut argv = vec!["profile".to_string(), tool.to_string()];
        argv.extend(cli);
        argv.push("--json".into());
        let r = common::run(&argv);
        assert_eq!(r.code, 0, "{argv:?}: {}", r.stderr);
        let expected: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(got, expected, "{tool} {arguments} against {argv:?}");
        // What the command line says on stderr, the agent gets as a block.
        let said = result["content"].get(1).map_or("", |b| b["text"].as_str().unwrap());
        assert_eq!(said, r.stderr.trim_end(), "{tool} {arguments}: its notes");
        said_something |= !said.is_empty();
    }
    assert!(said_something, "some call's notes came back");
}

#[test]
fn refusals_are_tool_errors_and_the_server_answers_on() {
    // A root of its own: a trace, a malformed one, and a link out of it.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("links")).unwrap();
    std::fs::copy(traces().join(TRAINING), root.join("good.json.gz")).unwrap();
    std::fs::write(root.join("bad.json"), br#"{"traceEvents": [{"ph": "X", "na"#).unwrap();
    std::os::unix::fs::symlink(traces().join(TRAINING), root.join("links/out.json.gz")).unwrap();
    let outside = traces().join(TRAINING);
    // A profile in the root that records a trace outside it, none beside.
    std::fs::create_dir_all(root.join("profile")).unwrap();
    let wrote = common::run(&[
        "profile",
        "summary",
        outside.to_str().unwrap(),
        "--write-profile",
        root.join("profile/profile.json").to_str().unwrap(),
    ]);
    assert_eq!(wrote.code, 0, "{}", wrote.stderr);
    let mut server = Server::start(&[&root], &[]);

    let cases: Vec<(&str, Value, &str)> = vec![
        // Paths: outside the roots, through `..`, through a link, missing.
        ("summary", json!({ "paths": [outside] }), "error (exit 2): "),
        ("get", json!({ "path": "../root/good.json.gz" }), "`..` is not taken"),
        ("phases", json!({ "path": "links/out.json.gz" }), "outside the folders"),
        (
            "compare",
            json!({ "baseline": "good.json.gz", "candidate": outside }),
            "outside the folders",
        ),
        ("phases", json!({ "path": "absent.json" }), "error (exit 2): absent.json: no such file"),
        ("phases", json!({ "path": "-" }), "no such file"),
        // The input: the reader's own refusal, with its exit code.
        ("summary", json!({ "paths": ["bad.json"] }), "error (exit 1): "),
        ("get", json!({ "path": "good.json.gz", "field": "no_such_metric" }), "error (exit 2): "),
        ("kernels", json!({ "paths": ["good.json.gz"], "phase": "nowhere" }), "error (exit 2): "),
        ("what-if", json!({ "path": "good.json.gz" }), "error (exit 2): "),
        // A what-if the profile does not keep needs its trace: not read
        // where the profile records it, outside the roots.
        (
            "what-if",
            json!({ "path": "profile/profile.json", "op": "aten::mm" }),
            "this what-if needs the trace",
        ),
        // Parameters: of the wrong type, unknown, or a value the flag refuses.
        ("kernels", json!({ "paths": ["good.json.gz"], "top": "ten" }), "invalid type"),
        ("kernels", json!({ "paths": ["good.json.gz"], "topp": 3 }), "unknown parameter `topp`"),
        ("summary", json!({ "paths": ["good.json.gz"], "strikt": true }), "summary takes paths"),
        ("tree", json!({ "path": "good.json.gz", "by": "class" }), "possible values"),
        ("get", json!({}), "missing field `path`"),
        ("tree", json!({ "path": "good.json.gz", "rank": -1 }), "invalid value"),
    ];
    for (tool, arguments, says) in cases {
        let msg = server.refusal(tool, arguments.clone());
        assert!(msg.contains(says), "{tool} {arguments}: {msg}");
        assert!(!msg.contains("Usage:"), "one line, no usage banner: {msg}");
    }
    let outside_msg = server.refusal("get", json!({ "path": outside }));
    assert!(outside_msg.contains("outside the folders"), "{outside_msg}");

    // An unknown tool is a protocol error; a line that is not JSON-RPC is
    // passed over. Neither ends the server.
    let unknown = server.request("tools/call", json!({ "name": "flamegraph", "arguments": {} }));
    assert!(unknown["error"]["message"].is_string(), "{unknown}");
    server.stdin.write_all(b"this is not JSON\n").unwrap();
    assert_eq!(server.request("ping", json!({}))["result"], json!({}));
    let step = server.answer("get", json!({ "path": "good.json.gz", "field": "step_ms" }));
    assert!(step["step_ms"].as_f64().unwrap() > 0.0, "{step}");
}

#[test]
fn the_memory_budget_applies_to_every_read() {
    let root = traces();
    let mut server = Server::start(&[&root], &["--max-memory", "1M"]);
    // Looked at every 65536 events while reading: this trace has more,
    // and stops there; the next has fewer, and stops once read, before
    // the analysis goes on past the budget.
    let big = "kineto_resnet50_v100_2021jun/worker0.1623143089861.pt.trace.json.gz";
    let msg = server.refusal("summary", json!({ "paths": [big] }));
    assert!(msg.starts_with("error (exit 1): ") && msg.contains("stopped reading after"), "{msg}");
    let msg = server.refusal("get", json!({ "path": TRAINING, "field": "step_ms" }));
    assert!(msg.starts_with("error (exit 1): ") && msg.contains("stopped before"), "{msg}");
    // The server reads on: the same call with no budget answers.
    let mut free = Server::start(&[&root], &["--max-memory", "0"]);
    let step = free.answer("get", json!({ "path": TRAINING, "field": "step_ms" }));
    assert!(step["step_ms"].as_f64().unwrap() > 0.0, "{step}");
    assert_eq!(server.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn roots_are_checked_at_start() {
    let none = common::run(&["mcp"]);
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(none.stderr.contains("--root"), "{}", none.stderr);
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("absent");
    let r = common::run(&["mcp", "--root", absent.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--root") && r.stderr.contains("absent"), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}
