//! The `libreyolo` binary: parses the command line and hands each
//! subcommand to the crate that owns it. Readers, the explorer and the MCP
//! server run in this process, which never links libtorch; `infer` and
//! `run` are handed, whole, to the capture engine's own executable (see
//! `capture_engine`).

mod capture_engine;

use std::ffi::OsString;
use std::process::ExitCode;

use libreyolo_core::cli::{self, Command, ProfileCommand};
use libreyolo_core::error::Result;
use libreyolo_core::trace::Progress;

fn main() -> ExitCode {
    cli::exit_status(run())
}

fn run() -> Result<()> {
    libreyolo_core::budget::keep_large_blocks_mapped();
    let args: Vec<OsString> = std::env::args_os().collect();
    let Some(cli::Parsed { command, read }) = cli::parse(&args)? else {
        return cli::print_stdout(&cli::subcommand_list());
    };
    match command {
        Command::Profile(ProfileCommand::Reader(reader)) => {
            let read = read.with_progress(Progress::Terminal);
            cli::print_stdout(&cli::run_reader(&reader, &read)?)
        }
        Command::Profile(ProfileCommand::Explore(args)) => libreyolo_ui::run(&args, &read),
        // Parsed here first, so a bad flag or `--help` never needs capture.
        Command::Profile(ProfileCommand::Infer(_) | ProfileCommand::Run(_)) => {
            capture_engine::hand_over(&args)
        }
        Command::Mcp(mcp) => libreyolo_mcp::serve(&mcp, read),
    }
}
