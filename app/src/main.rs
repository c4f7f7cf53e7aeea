//! The `libreyolo` binary: parses the command line and hands each
//! subcommand to the crate that owns it. Errors become the group's exit
//! codes here and nowhere else.

use std::process::ExitCode;

use clap::Parser;
use libreyolo_core::cli::{self, Cli, ProfileCommand, TopCommand};
use libreyolo_core::error::{exit, Error, Result};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::from(exit::OK as u8),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(msg) = cli::refuse_key_value(&args) {
        return Err(Error::usage(msg));
    }
    let parsed = match Cli::try_parse_from(&args) {
        Ok(p) => p,
        Err(e) => {
            // --help and --version are successes; everything else is usage.
            let code = if e.use_stderr() { exit::USAGE } else { exit::OK };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let TopCommand::Profile(profile) = parsed.command;
    let Some(command) = profile.command else {
        return cli::print_stdout(&cli::subcommand_list());
    };
    match command.into_reader() {
        Ok(reader) => cli::print_stdout(&cli::run_reader(&reader)?),
        #[cfg(feature = "capture")]
        Err(ProfileCommand::Infer(args)) => cli::print_stdout(&libreyolo_capture::infer(&args)?),
        #[cfg(not(feature = "capture"))]
        Err(ProfileCommand::Infer(_)) => Err(no_capture()),
        #[cfg(not(feature = "capture"))]
        Err(ProfileCommand::Run(_)) => Err(no_capture()),
        #[cfg(feature = "capture")]
        Err(ProfileCommand::Run(args)) => cli::print_stdout(&libreyolo_capture::train::run(&args)?),
        Err(ProfileCommand::Explore(args)) => libreyolo_ui::run(&args),
        Err(_) => unreachable!("every reader command converts"),
    }
}

#[cfg(not(feature = "capture"))]
fn no_capture() -> Error {
    Error::failed(
        "this build has no capture engine: build with the `capture` feature (see README) to run `profile run` / `profile infer`",
    )
}
