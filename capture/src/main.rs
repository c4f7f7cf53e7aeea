//! `libreyolo-capture`: the executable that links libtorch. The `libreyolo`
//! binary hands `profile infer` and `profile run` to it unchanged (same
//! arguments, argv[0] included), so it parses the same command line and
//! answers with the group's exit codes.

use std::ffi::OsString;
use std::process::ExitCode;

use libreyolo_core::cli::{self, ProfileCommand};
use libreyolo_core::error::{Error, Result};

fn main() -> ExitCode {
    cli::exit_status(run())
}

fn run() -> Result<()> {
    let args: Vec<OsString> = std::env::args_os().collect();
    // An interrupted capture leaves no temporary file behind.
    libreyolo_core::tempfiles::remove_on_signal().map_err(|e| Error::failed(format!("cannot install the signal handler: {e}")))?;
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
