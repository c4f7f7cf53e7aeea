//! The explorer end to end: the real binary in a real terminal (tmux), driven
//! by keys, read back with capture-pane; those need tmux and are ignored
//! unless asked for. Also its refusals, which need no terminal: stdout not a
//! TTY, an unknown theme, a missing file (all exit 2).

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_libreyolo");
/// A raw H100 trace from tests/fixtures (BERT-small inference).
const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/traces/tracelens_h100_qwen_inference/gaunernst_bert-small-uncased__1016001.json.gz"
);
const PROFILE: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/reference/train_b4/profile.json");
/// A distributed job: the 8 rank traces of one DLRM training run.
const JOB: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/traces/param_dlrm_v100_8rank");

/// A tmux server of our own (`-L`), so the test never touches a user's.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().expect("run tmux")
    }
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "e2e"]).stdout).into_owned()
    }
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status.success());
    }
    /// Types text literally (no key-name lookup).
    fn text(&self, text: &str) {
        assert!(self.cmd(&["send-keys", "-t", "e2e", "-l", text]).status.success());
    }
    fn format(&self, f: &str) -> String {
        String::from_utf8_lossy(&self.cmd(&["display-message", "-p", "-t", "e2e", f]).stdout)
            .trim()
            .to_string()
    }
    /// Waits until the screen satisfies `ok`; panics with the screen if not.
    fn wait(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(30) {
                panic!("timed out waiting for {what}; the screen shows:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// The tests that drive tmux are `#[ignore]`d (tmux is not part of the Rust
/// toolchain); asked to run (`--ignored`: scripts/test.sh when tmux is there,
/// and always in CI), they fail when it is missing instead of passing.
fn need_tmux() {
    let ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    assert!(ok, "needs tmux: apt-get install -y tmux (scripts/test.sh installs it when it can)");
}

#[test]
#[ignore = "needs tmux (apt-get install -y tmux); scripts/test.sh runs it, or cargo test -p libreyolo --test explore_tmux -- --ignored"]
fn explorer_in_a_real_terminal() {
    need_tmux();
    assert!(Path::new(TRACE).is_file(), "missing {TRACE}");
    let t = Tmux { socket: format!("libreyolo-e2e-{}", std::process::id()) };
    // The shell line reports the exit status once the explorer has quit.
    let line =
        format!("TERM=xterm-256color {BIN} profile explore {TRACE}; echo EXITED=$?; sleep 60");
    let started = t.cmd(&["new-session", "-d", "-x", "120", "-y", "40", "-s", "e2e", &line]);
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));

    // Summary first: the verdict and the levers with their evidence, then
    // (a page down) the kernel mix.
    let s = t.wait("the summary", |s| s.contains("Levers, by what"));
    assert!(s.contains("1 Summary") && s.contains(">> HOST / LAUNCH"), "{s}");
    assert!(s.contains("cuda-graphs") && s.contains("ms/step of launch gaps"), "{s}");
    t.keys(&["PageDown"]);
    t.wait("the kernel mix", |s| s.contains("Kernel mix") && s.contains("gemm / conv"));
    assert_eq!(t.format("#{alternate_on}"), "1", "the explorer draws on the alternate screen");

    // Kernels, then a live regex filter.
    t.keys(&["3"]);
    t.wait("the kernels table", |s| s.contains("%GPU") && s.contains("11 of 11 match"));
    t.keys(&["/"]);
    t.text("layer_norm");
    let s = t.wait("the regex to apply", |s| {
        s.contains("1 of 11 match") || s.contains("Kernels regex /layer_norm")
    });
    assert!(s.contains("vectorized_layer_norm_kernel"), "{s}");
    t.keys(&["Enter"]);
    let s = t.wait("the status line", |s| s.contains("/layer_norm/ · 1 of 11 match"));
    assert!(!s.contains("cutlass"), "the GEMMs are filtered out:\n{s}");

    // Details of the one match, then the Phases and What-if panes.
    t.keys(&["Enter"]);
    t.wait("the detail view", |s| s.contains("full name") && s.contains("Tensor Core   no"));
    t.keys(&["Escape", "2"]);
    t.wait("the phases table", |s| s.contains("unphased") && s.contains("wall ms"));
    t.keys(&["Tab", "Tab", "Tab", "Tab"]);
    t.wait("what-if", |s| s.contains("change (Up/Down)") && s.contains("caveat"));
    // The Timeline reads its step on the loader thread, then draws lanes.
    t.keys(&["Tab"]);
    let s = t.wait("the timeline", |s| s.contains("GPU busy") && s.contains("legend"));
    assert!(s.contains("stream 7") && s.contains("(1 of 1)"), "{s}");
    let view = |s: &str| s.lines().find(|l| l.contains(" · view ")).unwrap_or("").to_string();
    let before = view(&s);
    t.keys(&["+"]);
    t.wait("the zoom to narrow the view", |s| !view(s).is_empty() && view(s) != before);
    t.keys(&["?"]);
    t.wait("the help", |s| s.contains("keys (any key closes)"));
    t.keys(&["Escape"]);
    t.wait("the help to close", |s| !s.contains("keys (any key closes)"));
    // The call tree, open down to a kernel.
    t.keys(&["9"]);
    let s = t.wait("the tree", |s| s.contains("by:module top-down") && s.contains("▾ unphased"));
    assert!(s.contains("self ms") && s.contains(" kernel "), "{s}");
    // Tab past the Tree: the modules, forward and backward side by side.
    t.keys(&["Tab"]);
    let s =
        t.wait("the modules", |s| s.contains("per step GPU") && s.contains("BertLMHeadModel_0"));
    assert!(s.contains("fwd ms") && s.contains("bwd ms") && s.contains("Modules"), "{s}");

    // Quit: the process exits 0 and the terminal is back to normal.
    t.keys(&["q"]);
    let s = t.wait("the explorer to exit", |s| s.contains("EXITED="));
    assert!(s.contains("EXITED=0"), "{s}");
    assert!(!s.contains("1 Summary"), "the explorer's screen is gone:\n{s}");
    assert_eq!(t.format("#{alternate_on}"), "0", "left the alternate screen");
    assert_eq!(t.format("#{cursor_flag}"), "1", "the cursor is visible again");
}

#[test]
#[ignore = "needs tmux (apt-get install -y tmux); scripts/test.sh runs it, or cargo test -p libreyolo --test explore_tmux -- --ignored"]
fn a_folder_of_rank_traces_opens_the_ranks_pane() {
    need_tmux();
    let t = Tmux { socket: format!("libreyolo-e2e-job-{}", std::process::id()) };
    let line = format!("{BIN} profile explore {JOB}; echo EXITED=$?; sleep 60");
    assert!(
        t.cmd(&["new-session", "-d", "-x", "80", "-y", "24", "-s", "e2e", &line]).status.success()
    );

    // The job's line and one row per rank, at 80x24; the others wait for
    // rank 7 (rank 1 has the longest step: it waits most).
    let s = t.wait("the ranks", |s| s.contains("job: 8 ranks of world size 8"));
    // Ten tabs in 80 columns: each key touches its title.
    assert!(
        s.contains("0Ranks")
            && s.contains("9Tree")
            && s.contains("stragglers (the others wait for them"),
        "{s}"
    );
    assert!(s.contains("step 19.90 ms (the others wait for rank 7)"), "{s}");
    let first_row =
        |s: &str| s.lines().skip_while(|l| !l.contains("exposed")).nth(1).unwrap_or("").to_string();
    assert!(first_row(&s).trim_start().starts_with('0'), "rank order first:\n{s}");

    // Sorted by step: the longest step first, not the rank waited for.
    t.keys(&["s"]);
    let s = t.wait("the step sort", |s| s.contains("sort: step"));
    assert!(first_row(&s).contains("19.90") && !first_row(&s).contains("awaited"), "{s}");
    t.keys(&["Home", "Down", "Enter"]);
    // (At 80x24 the levers fill the screen above the idle account.)
    let s = t.wait("rank 3's summary", |s| {
        s.contains("rank 3 of 8") && s.contains("Levers, by what the step model says each saves")
    });
    assert!(s.contains("19.31 ms"), "rank 3's step:\n{s}");

    // Its kernels, then Esc back to the ranks, then quit.
    t.keys(&["3"]);
    t.wait("rank 3's kernels", |s| s.contains("%GPU") && s.contains("rank 3 of 8"));
    t.keys(&["Escape"]);
    t.wait("the ranks again", |s| {
        s.contains("job: 8 ranks") && s.contains("Enter: rank 3's panes")
    });

    // `c`: the collectives matched across the ranks, largest skew first;
    // rank 7 arrives last at five of the eight.
    t.keys(&["c"]);
    // (Waiting for the status line too: tmux may show a frame half drawn.)
    let s = t.wait("the collectives", |s| {
        s.contains("collectives: 8 matched on 8 ranks of world size 8")
            && s.contains("8 collectives · sort:skew")
    });
    assert!(
        s.contains("group stream 84: 5 sendrecv, 3 allreduce")
            && s.contains("8 collectives · sort:skew"),
        "{s}"
    );
    assert!(s.contains("arrives last most often: rank 7 (5 of 8)"), "{s}");
    t.keys(&["s"]);
    t.wait("the wait sort", |s| s.contains("sort:wait"));
    t.keys(&["Enter"]);
    let s = t.wait("the collective rank by rank", |s| {
        s.contains("arrival µs") && s.contains("last: the others waited")
    });
    assert!(s.contains("Esc: the list"), "{s}");
    // One Esc at a time: two at once read as one Alt-Esc.
    t.keys(&["Escape"]);
    t.wait("the list", |s| s.contains("sort: wait (s)") && !s.contains("arrival µs"));
    t.keys(&["Escape"]);
    t.wait("the ranks view", |s| s.contains("job: 8 ranks") && s.contains("c: collectives"));
    t.keys(&["q"]);
    let s = t.wait("the explorer to exit", |s| s.contains("EXITED="));
    assert!(s.contains("EXITED=0"), "{s}");
    assert_eq!(t.format("#{alternate_on}"), "0", "left the alternate screen");
}

#[test]
#[ignore = "needs tmux (apt-get install -y tmux); scripts/test.sh runs it, or cargo test -p libreyolo --test explore_tmux -- --ignored"]
fn live_reload_and_a_broken_file() {
    need_tmux();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.json");
    std::fs::copy(PROFILE, &path).unwrap();
    let t = Tmux { socket: format!("libreyolo-e2e-reload-{}", std::process::id()) };
    let line = format!("{BIN} profile explore {}; echo EXITED=$?; sleep 60", path.display());
    assert!(
        t.cmd(&["new-session", "-d", "-x", "100", "-y", "30", "-s", "e2e", &line]).status.success()
    );
    t.wait("the summary", |s| s.contains("900.89 ms"));
    t.keys(&["4", "/"]);
    t.text("conv");
    t.keys(&["Enter"]);
    t.wait("the ops filter", |s| s.contains("/conv/"));

    // A new capture replaces the file: the view follows, pane and filter kept.
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"step_ms\": 900.89", "\"step_ms\": 450.0");
    assert!(text.contains("450.0"), "the fixture changed shape");
    let tmp = dir.path().join("profile.json.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    let s = t.wait("the reload", |s| s.contains("reloaded"));
    assert!(s.contains("/conv/") && s.contains("%cpu"), "still the filtered Ops pane:\n{s}");
    t.keys(&["1"]);
    t.wait("the new step time", |s| s.contains("450 ms"));

    // A broken rewrite keeps the last good data on screen.
    std::fs::write(&path, "{ not json").unwrap();
    t.wait("the failed reload", |s| s.contains("reload failed"));
    t.keys(&["q"]);
    assert!(t.wait("exit", |s| s.contains("EXITED=")).contains("EXITED=0"));

    // A file that cannot be read at all: the error on screen, then exit 1.
    let t = Tmux { socket: format!("libreyolo-e2e-broken-{}", std::process::id()) };
    let line = format!("{BIN} profile explore {}; echo EXITED=$?; sleep 60", path.display());
    assert!(
        t.cmd(&["new-session", "-d", "-x", "100", "-y", "30", "-s", "e2e", &line]).status.success()
    );
    let s = t.wait("the error screen", |s| s.contains("Could not open"));
    assert!(s.contains("invalid JSON"), "{s}");
    t.keys(&["q"]);
    let s = t.wait("exit", |s| s.contains("EXITED="));
    assert!(s.contains("EXITED=1") && s.contains("error: failed to analyse"), "{s}");
    assert_eq!(t.format("#{alternate_on}"), "0");
}

#[test]
#[ignore = "needs tmux (apt-get install -y tmux); scripts/test.sh runs it, or cargo test -p libreyolo --test explore_tmux -- --ignored"]
fn sigterm_and_sighup_restore_the_terminal() {
    need_tmux();
    for signal in ["TERM", "HUP"] {
        // A path of its own, so pkill finds this explorer and no other.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("sig{signal}.json"));
        std::fs::copy(PROFILE, &path).unwrap();
        let t = Tmux { socket: format!("libreyolo-e2e-sig{signal}-{}", std::process::id()) };
        let line = format!("{BIN} profile explore {}; echo EXITED=$?; sleep 60", path.display());
        assert!(
            t.cmd(&["new-session", "-d", "-x", "100", "-y", "30", "-s", "e2e", &line])
                .status
                .success()
        );
        t.wait("the summary", |s| s.contains("900.89 ms"));
        assert_eq!(t.format("#{alternate_on}"), "1");
        // Anchored: the pane's shell has the same path in its command line.
        let pattern = format!("^{BIN} profile explore {}$", path.display());
        let killed =
            Command::new("pkill").args([&format!("-{signal}"), "-f", &pattern]).status().unwrap();
        assert!(killed.success(), "pkill found the explorer");
        let s = t.wait("the explorer to exit", |s| s.contains("EXITED="));
        assert!(s.contains("EXITED=0"), "a signal is a clean quit:\n{s}");
        assert_eq!(t.format("#{alternate_on}"), "0", "SIG{signal}: left the alternate screen");
        assert_eq!(t.format("#{cursor_flag}"), "1", "SIG{signal}: the cursor is visible again");
    }
}

#[test]
fn refuses_without_a_terminal() {
    // stdout is a pipe here.
    let out = Command::new(BIN).args(["profile", "explore", PROFILE]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn unknown_theme_and_missing_file_are_usage_errors() {
    let out = Command::new(BIN)
        .args(["profile", "explore", PROFILE, "--theme", "neon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown theme 'neon'")
            && err.contains("dark")
            && err.contains("light")
            && err.contains("high-contrast"),
        "{err}"
    );

    let out =
        Command::new(BIN).args(["profile", "explore", "/no/such/profile.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
}
