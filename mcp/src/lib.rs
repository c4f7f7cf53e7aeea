//! `libreyolo mcp`: the readers as the tools of a Model Context Protocol
//! server on stdio, for coding agents (docs/spec.md §9).
//! A tool call is the reader's command line: its parameters become
//! `libreyolo profile <reader> … --json`, parsed by the same definitions
//! and run by the same [`libreyolo_core::cli::run_reader`], so a tool
//! answers the reader's `--json` document, or its error. Paths are
//! confined to the roots given at start ([`roots`]).

mod roots;
mod server;
mod tools;

use libreyolo_core::cli::McpArgs;
use libreyolo_core::error::{Error, Result};
use libreyolo_core::trace::ReadOptions;
use rmcp::ServiceExt;

/// Serves the readers on stdin and stdout until the client closes stdin.
/// `read` carries the memory budget and threads of every read.
pub fn serve(args: &McpArgs, read: ReadOptions) -> Result<()> {
    let roots = roots::Roots::new(&args.roots)?;
    let server = server::Server::new(roots, read);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::failed(format!("cannot start the server: {e}")).caused_by(e))?;
    runtime.block_on(async {
        let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| {
            Error::failed(format!("the MCP session did not start: {e}")).caused_by(e)
        })?;
        running.waiting().await.map_err(|e| {
            Error::failed(format!("the MCP session ended abnormally: {e}")).caused_by(e)
        })?;
        Ok(())
    })
}
