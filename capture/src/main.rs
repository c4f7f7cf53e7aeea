//! `libreyolo-capture`: the executable that links libtorch. The `libreyolo`
//! binary hands `profile infer` and `profile run` to it unchanged (same
//! arguments, argv[0] included), so it parses the same command line and
//! answers with the group's exit codes.

use std::ffi::OsString;
use std::process::ExitCode;

use libreyolo_core::cli::{self, ProfileCommand};
use libreyolo_core::error::{Error, Result};

fn main() -> ExitCode {
    // tch turns a libtorch failure it did not expect (an allocation of a
    // `--batch 1024 --imgsz 4096` batch the machine cannot give, say) into a
    // panic. It ends as any runtime failure does, one line and exit 1, not a
    // backtrace: the hook keeps the message, the unwinding drops the
    // temporary files on its way out.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        let at =
            info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        if let Ok(mut p) = PANIC.lock() {
            p.get_or_insert_with(|| panic_sentence(msg, &at));
        }
    }));
    let result = std::panic::catch_unwind(run).unwrap_or_else(|_| {
        let msg = PANIC
            .lock()
            .ok()
            .and_then(|mut p| p.take())
            .unwrap_or_else(|| "an internal error".into());
        Err(Error::failed(msg))
    });
    cli::exit_status(result)
}

/// The first panic's sentence (the one that started the unwinding).
static PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// A panic in one line: libtorch's own first line when tch carries one
/// (`Torch("DefaultCPUAllocator: can't allocate memory: ...\nException
/// raised from ...")`), else the message and where (a bug to report).
fn panic_sentence(msg: &str, at: &str) -> String {
    if let Some(i) = msg.find("Torch(\"") {
        let torch = &msg[i + 7..];
        let first = torch.split("\\n").next().unwrap_or(torch).split('\n').next().unwrap_or(torch);
        return format!("libtorch failed: {}", first.trim_end_matches("\")").trim_end_matches('"'));
    }
    let first = msg.lines().next().unwrap_or(msg);
    format!("internal error{at}: {first} (a bug: please report it)")
}

fn run() -> Result<()> {
    let args: Vec<OsString> = std::env::args_os().collect();
    // An interrupted capture leaves no temporary file behind.
    libreyolo_core::tempfiles::remove_on_signal().map_err(|e| {
        Error::failed(format!("cannot install the signal handler: {e}")).caused_by(e)
    })?;
    match cli::parse(&args)? {
        Some(ProfileCommand::Infer(a)) => cli::print_stdout(&libreyolo_capture::infer(&a)?),
        Some(ProfileCommand::Run(a)) => {
            libreyolo_capture::heap::keep_freed_memory();
            cli::print_stdout(&libreyolo_capture::train::run(&a)?)
        }
        _ => Err(Error::usage(
            "libreyolo-capture runs `profile infer` and `profile run`; the readers and the explorer are `libreyolo profile …`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::panic_sentence;

    #[test]
    fn a_tch_panic_is_libtorch_s_first_line() {
        let msg = "called `Result::unwrap()` on an `Err` value: Torch(\"DefaultCPUAllocator: can't allocate memory: you tried to allocate 491520000000 bytes. Error code 12 (Cannot allocate memory)\\nException raised from malloc at c10/core/impl/alloc_cpu.cpp:124 (most recent call first):\\nframe #0: ...\")";
        assert_eq!(
            panic_sentence(msg, " at x.rs:1"),
            "libtorch failed: DefaultCPUAllocator: can't allocate memory: you tried to allocate 491520000000 bytes. Error code 12 (Cannot allocate memory)"
        );
        assert_eq!(
            panic_sentence("index out of bounds\nmore", " at a.rs:3"),
            "internal error at a.rs:3: index out of bounds (a bug: please report it)"
        );
    }
}
