//! `libreyolo-capture`: the executable that links libtorch. The `libreyolo`
//! binary hands `profile infer` and `profile run` to it unchanged (same
//! arguments, argv[0] included), so it parses the same command line and
//! answers with the group's exit codes.

use std::ffi::OsString;
use std::process::ExitCode;

use libreyolo_core::cli::{self, Command, ProfileCommand};
use libreyolo_core::error::{Error, Result};

fn main() -> ExitCode {
    // A libtorch failure tch turns into a panic ends as any runtime failure
    // does, one line and exit 1, not a backtrace; the unwinding drops the
    // temporary files on its way out.
    libreyolo_capture::panics::install();
    let result = std::panic::catch_unwind(run).unwrap_or_else(|_| {
        Err(Error::failed(
            libreyolo_capture::panics::take().unwrap_or_else(|| "an internal error".into()),
        ))
    });
    cli::exit_status(result)
}

fn run() -> Result<()> {
    let args: Vec<OsString> = std::env::args_os().collect();
    // An interrupted capture leaves no temporary file behind.
    libreyolo_core::tempfiles::remove_on_signal().map_err(|e| {
        Error::failed(format!("cannot install the signal handler: {e}")).caused_by(e)
    })?;
    match cli::parse(&args)?.map(|p| p.command) {
        Some(Command::Profile(ProfileCommand::Infer(a))) => {
            cli::print_stdout(&libreyolo_capture::infer(&a)?)
        }
        Some(Command::Profile(ProfileCommand::Run(a))) => {
            libreyolo_capture::heap::keep_freed_memory();
            cli::print_stdout(&libreyolo_capture::train::run(&a)?)
        }
        _ => Err(Error::usage(
            "libreyolo-capture runs `profile infer` and `profile run`; the readers and the explorer are `libreyolo profile …`",
        )),
    }
}
