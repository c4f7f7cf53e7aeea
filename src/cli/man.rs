//! Man pages (roff), one per command: what clap_mangen renders from the
//! clap definitions (name, synopsis, description, options, subcommands),
//! then the sections it has no source for — the exit status, examples and
//! the pages beside it — from the tables below.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

use super::args::Cli;
use crate::error::{Error, Result, exit};

/// The exit codes (docs/spec.md §1.1), briefly.
const EXIT_STATUS: [(i32, &str); 5] = [
    (exit::OK, "Success."),
    (
        exit::FAILURE,
        "A file that exists but cannot be read or analysed (empty, invalid JSON, truncated gzip, another profiler's JSON, no events), a read stopped at the memory budget (--max-memory), or a runtime failure.",
    ),
    (
        exit::USAGE,
        "A path that does not exist, or an argument that does not resolve (unknown metric, phase or category, a bad flag or value, a folder of traces that are not the ranks of one job).",
    ),
    (exit::NO_PROFILE, "profile run produced no profile (the dataset cannot fill the window)."),
    (exit::GATE, "compare --fail-on: a gate failed."),
];

/// Examples per command (its words after `libreyolo`): what it shows,
/// and the command line. Every command has some (a test says so) and
/// every line parses (another test).
pub const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    ("", &[("Where a trace's time goes", "libreyolo profile summary trace.json.gz")]),
    (
        "profile",
        &[
            ("Profile YOLOv9 inference on its built-in sample", "libreyolo profile infer"),
            ("Read any PyTorch profiler trace", "libreyolo profile summary trace.json.gz"),
        ],
    ),
    (
        "profile run",
        &[(
            "A short real training on generated images",
            "libreyolo profile run synthetic:64 --steps 20",
        )],
    ),
    (
        "profile infer",
        &[(
            "Inference on the built-in sample, 100 timed runs",
            "libreyolo profile infer --runs 100",
        )],
    ),
    (
        "profile summary",
        &[
            (
                "The verdict, headline figures and levers of one trace",
                "libreyolo profile summary trace.json.gz",
            ),
            ("A job: each rank, the stragglers and why", "libreyolo profile summary ranks/"),
            ("As Markdown for a PR comment", "libreyolo profile summary trace.json.gz --format md"),
        ],
    ),
    (
        "profile get",
        &[
            ("The metric names", "libreyolo profile get profile.json"),
            ("One metric, for a script", "libreyolo profile get profile.json step_ms"),
        ],
    ),
    ("profile phases", &[("GPU and wall time per phase", "libreyolo profile phases profile.json")]),
    (
        "profile kernels",
        &[(
            "The 20 costliest GEMM kernels",
            "libreyolo profile kernels trace.json.gz --top 20 --grep gemm",
        )],
    ),
    (
        "profile ops",
        &[("Ops by the GPU time they launch", "libreyolo profile ops trace.json.gz --sort gpu")],
    ),
    (
        "profile tree",
        &[
            (
                "The modules of a step, four levels deep",
                "libreyolo profile tree trace.json.gz --by module --depth 4",
            ),
            ("A flame graph of GPU time", "libreyolo profile tree trace.json.gz --format svg"),
        ],
    ),
    (
        "profile modules",
        &[(
            "Forward and backward GPU time per module",
            "libreyolo profile modules trace.json.gz --depth 3",
        )],
    ),
    (
        "profile compare",
        &[
            ("Before and after a change", "libreyolo profile compare before.json after.json"),
            (
                "A CI gate: fail (exit 4) when the step slows by more than 5 %",
                "libreyolo profile compare before.json after.json --fail-on step_ms:+5%",
            ),
        ],
    ),
    (
        "profile collectives",
        &[(
            "Arrival skew, waits and bus bandwidth across a job's ranks",
            "libreyolo profile collectives ranks/",
        )],
    ),
    (
        "profile what-if",
        &[
            (
                "Every standard change, largest saving first",
                "libreyolo profile what-if trace.json.gz --all",
            ),
            (
                "No DataLoader wait",
                "libreyolo profile what-if trace.json.gz --remove-idle dataloader",
            ),
            ("Elementwise chains fused", "libreyolo profile what-if trace.json.gz --fuse-chains"),
        ],
    ),
    (
        "profile memory",
        &[("Peaks and the op at the peak", "libreyolo profile memory profile.json")],
    ),
    (
        "profile merge",
        &[("One Perfetto trace of a whole job", "libreyolo profile merge ranks/ -o job.json.gz")],
    ),
    ("profile explore", &[("The interactive explorer", "libreyolo profile explore trace.json.gz")]),
    (
        "profile schema",
        &[
            ("The JSON documents and the commands that print them", "libreyolo profile schema"),
            ("The schema of summary --json", "libreyolo profile schema summary"),
        ],
    ),
    ("completions", &[("Bash completions for this user", "libreyolo completions bash")]),
    (
        "mcp",
        &[("Serve the traces under a folder to a coding agent", "libreyolo mcp --root traces/")],
    ),
    (
        "man",
        &[
            ("This page's command's page", "libreyolo man profile summary"),
            ("Every page into a folder", "libreyolo man --dir man1"),
        ],
    ),
];

/// Every command with a page, as its words after `libreyolo` (`""` is
/// `libreyolo` itself), and its clap definition, built (synopses and
/// page names filled in).
fn commands() -> Vec<(String, clap::Command)> {
    fn walk(cmd: &clap::Command, words: &str, out: &mut Vec<(String, clap::Command)>) {
        out.push((words.to_string(), cmd.clone()));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let w = if words.is_empty() {
                sub.get_name().to_string()
            } else {
                format!("{words} {}", sub.get_name())
            };
            walk(sub, &w, out);
        }
    }
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, "", &mut out);
    out
}

/// The page name of a command (`libreyolo-profile-summary`).
fn page_name(words: &str) -> String {
    if words.is_empty() {
        "libreyolo".into()
    } else {
        format!("libreyolo-{}", words.replace(' ', "-"))
    }
}

/// Text as roff: backslashes and hyphens escaped, a leading `.` or `'`
/// kept from being read as a request.
fn roff(s: &str) -> String {
    let t = s.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') { format!("\\&{t}") } else { t }
}

/// The page of the command `words` (its words after `libreyolo`).
pub fn page(words: &[String]) -> Result<String> {
    let want = words.join(" ");
    let all = commands();
    let Some((_, cmd)) = all.iter().find(|(w, _)| *w == want) else {
        let names: Vec<&str> =
            all.iter().map(|(w, _)| w.as_str()).filter(|w| !w.is_empty()).collect();
        return Err(Error::usage(format!("no man page for `{want}`: one of {}", names.join(", "))));
    };
    Ok(render(&want, cmd, &all))
}

fn render(words: &str, cmd: &clap::Command, all: &[(String, clap::Command)]) -> String {
    let mut out = Vec::new();
    // Rendering into memory cannot fail.
    let _ = clap_mangen::Man::new(cmd.clone()).render(&mut out);
    let mut page = String::from_utf8_lossy(&out).into_owned();
    page.push_str(".SH \"EXIT STATUS\"\n");
    for (code, what) in EXIT_STATUS {
        page.push_str(&format!(".TP\n\\fB{code}\\fR\n{}\n", roff(what)));
    }
    let examples = EXAMPLES.iter().find(|(w, _)| *w == words).map_or(&[][..], |(_, e)| e);
    if !examples.is_empty() {
        page.push_str(".SH EXAMPLES\n");
        for (what, line) in examples {
            page.push_str(&format!(".TP\n{}\n.EX\n{}\n.EE\n", roff(what), roff(line)));
        }
    }
    // The parent and the children.
    let parent = words
        .rsplit_once(' ')
        .map_or(if words.is_empty() { None } else { Some("") }, |(p, _)| Some(p));
    let children = all.iter().map(|(w, _)| w.as_str()).filter(|w| {
        w.rsplit_once(' ').map_or(!w.is_empty() && words.is_empty(), |(p, _)| p == words)
    });
    let beside: Vec<String> = parent
        .into_iter()
        .chain(children)
        .map(|w| format!("\\fB{}\\fR(1)", roff(&page_name(w))))
        .collect();
    if !beside.is_empty() {
        page.push_str(&format!(".SH \"SEE ALSO\"\n{}\n", beside.join(", ")));
    }
    page
}

/// Writes every page into `dir` (made if missing) as `<page name>.1`.
pub fn write_all(dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::failed(format!("cannot make {}: {e}", dir.display())).caused_by(e))?;
    let all = commands();
    let mut written = Vec::new();
    for (words, cmd) in &all {
        let path = dir.join(format!("{}.1", page_name(words)));
        std::fs::write(&path, render(words, cmd, &all)).map_err(|e| {
            Error::failed(format!("cannot write {}: {e}", path.display())).caused_by(e)
        })?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn every_command_has_a_page_with_its_options_exit_status_and_examples() {
        let all = commands();
        assert!(all.len() > 15, "{}", all.len());
        for (words, cmd) in &all {
            let page = render(words, cmd, &all);
            let name = page_name(words);
            assert!(
                page.starts_with(&format!(".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n.TH {name} 1")),
                "{name}: {}",
                &page[..80]
            );
            assert!(page.contains(".SH \"EXIT STATUS\"\n.TP\n\\fB0\\fR"), "{name}");
            assert!(page.contains(".SH EXAMPLES\n"), "{name} has no examples");
            for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                if let Some(long) = arg.get_long() {
                    assert!(page.contains(&roff(&format!("--{long}"))), "{name}: --{long}");
                }
            }
            if !words.is_empty() {
                assert!(page.contains(".SH \"SEE ALSO\""), "{name}");
            }
        }
        assert_eq!(page(&["profile".into(), "what-if".into()]).unwrap(), {
            let (w, c) = all.iter().find(|(w, _)| w == "profile what-if").unwrap();
            render(w, c, &all)
        });
        let e = page(&["profile".into(), "nope".into()]).unwrap_err();
        assert_eq!(e.exit_code(), exit::USAGE);
        assert!(e.to_string().contains("profile what-if"), "{e}");
    }

    #[test]
    fn every_example_is_a_command_line_that_parses() {
        let commands: Vec<String> = commands().into_iter().map(|(w, _)| w).collect();
        for (words, examples) in EXAMPLES {
            assert!(commands.iter().any(|c| c == words), "examples for `{words}`, no such command");
            for (_, line) in *examples {
                let args: Vec<&str> = line.split_whitespace().collect();
                assert_eq!(args[0], "libreyolo");
                if let Err(e) = Cli::try_parse_from(&args) {
                    panic!("{line}: {e}");
                }
                assert!(
                    line.starts_with(&format!("libreyolo {words}").trim_end().to_string()),
                    "{line} under `{words}`"
                );
            }
        }
    }

    #[test]
    fn every_page_goes_into_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let written = write_all(&dir.path().join("man1")).unwrap();
        assert_eq!(written.len(), commands().len());
        let summary =
            std::fs::read_to_string(dir.path().join("man1/libreyolo-profile-summary.1")).unwrap();
        assert!(summary.contains(&roff("libreyolo profile summary ranks/")), "{summary}");
    }
}
