//! The MCP server: one tool per reader, each run off the protocol's thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use libreyolo_core::error::Error;
use libreyolo_core::trace::ReadOptions;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, Implementation, JsonObject,
    ServerCapabilities, ServerInfo, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};

use crate::roots::Roots;
use crate::tools::{self, Params};

/// The readers as tools, over the roots and the read options given at start.
#[derive(Clone)]
pub struct Server {
    roots: Arc<Roots>,
    read: Arc<ReadOptions>,
    /// Held by the read under way: a read uses every core it is given, and
    /// the memory budget is the process's, which two reads at once would
    /// share without knowing it.
    one_read: Arc<Mutex<()>>,
    tool_router: ToolRouter<Server>,
}

tokio::task_local! {
    /// The stop flag of the call being answered: [`Server::read`] hands it
    /// to the reader's budget checks.
    static STOP: Arc<AtomicBool>;
}

#[tool_router]
impl Server {
    pub fn new(roots: Roots, read: ReadOptions) -> Server {
        let mut tool_router = Self::tool_router();
        for route in tool_router.map.values_mut() {
            let hints = ToolAnnotations::new().read_only(true).idempotent(true).open_world(false);
            route.attr.annotations = Some(hints);
            route.attr.output_schema = tools::output_schema(&route.attr.name);
        }
        Server {
            roots: Arc::new(roots),
            read: Arc::new(read),
            one_read: Arc::new(Mutex::new(())),
            tool_router,
        }
    }

    /// Runs a reader on the blocking pool, so that the protocol keeps
    /// answering; its failure (or a panic) is the call's error result. A
    /// call the client cancels stops its read at the pass's next check
    /// ([`STOP`]), freeing the reader for the next call.
    async fn read<P: Params>(&self, tool: &'static str, params: P) -> CallToolResult {
        let (roots, one) = (self.roots.clone(), self.one_read.clone());
        let mut read = (*self.read).clone();
        read.budget.stop = STOP.try_with(Arc::clone).ok();
        let ran = tokio::task::spawn_blocking(move || {
            // What the reader says (`note: …`, `warning: …`) is the agent's
            // too: the command line's stderr, here a block of the result.
            let said = Mutex::new(Vec::<String>::new());
            let say = |line: &str| {
                said.lock().unwrap_or_else(PoisonError::into_inner).push(line.to_string())
            };
            let out = (|| {
                let reader = tools::command(tool, &params, &roots)?;
                let _one = one.lock().unwrap_or_else(PoisonError::into_inner);
                libreyolo_core::cli::run_reader_saying(&reader, &read, &say)
            })();
            (out, said.into_inner().unwrap_or_else(PoisonError::into_inner))
        })
        .await;
        let (mut result, said) = match ran {
            Ok((Ok(json), said)) => {
                let structured =
                    tools::output_schema(tool).and_then(|_| serde_json::from_str(&json).ok());
                let mut result = CallToolResult::success(vec![ContentBlock::text(json)]);
                result.structured_content = structured;
                (result, said)
            }
            Ok((Err(e), said)) => (refusal(&e), said),
            Err(e) => (
                refusal(&Error::failed(format!("the reader stopped unexpectedly: {e}"))),
                Vec::new(),
            ),
        };
        if !said.is_empty() {
            result.content.push(ContentBlock::text(said.join("\n")));
        }
        result
    }

    /// Start here. Headline figures of a trace or profile: step time, throughput, GPU utilisation, the idle account (why the GPU waited), the levers ranked by projected saving, the verdict, the kernel mix. Of a distributed job (several rank traces, or a folder of them): the job, each rank, the stragglers and why, the critical path through the ranks.
    #[tool]
    async fn summary(&self, Parameters(p): Parameters<tools::Job>) -> CallToolResult {
        self.read("summary", p).await
    }

    /// One metric of a trace or profile (`{"step_ms": 41.2}`), or without `field` the list of metric names.
    #[tool]
    async fn get(&self, Parameters(p): Parameters<tools::Get>) -> CallToolResult {
        self.read("get", p).await
    }

    /// Per phase (forward, backward, optimizer, …): GPU ms, wall ms, GPU idle ms, kernels and ops per step.
    #[tool]
    async fn phases(&self, Parameters(p): Parameters<tools::Input>) -> CallToolResult {
        self.read("phases", p).await
    }

    /// Individual GPU kernels, filtered and sorted: share of GPU time, ms and calls per step, category, Tensor Core use and, where the trace recorded shapes, achieved TFLOP/s and % of the roofline. Of a job: job-wide rows.
    #[tool]
    async fn kernels(&self, Parameters(p): Parameters<tools::Kernels>) -> CallToolResult {
        self.read("kernels", p).await
    }

    /// aten/autograd ops by CPU time (host launch cost shows here), their self time and the GPU time of the kernels launched inside them.
    #[tool]
    async fn ops(&self, Parameters(p): Parameters<tools::Ops>) -> CallToolResult {
        self.read("ops", p).await
    }

    /// The call tree of a step: phases, annotations, nn.Modules, Python frames and ops down to the kernels each launched, with CPU and GPU time per node; `bottom_up` for the callers of each node. Use it to find which code launched the costly kernels.
    #[tool]
    async fn tree(&self, Parameters(p): Parameters<tools::Tree>) -> CallToolResult {
        self.read("tree", p).await
    }

    /// The model's nn.Modules and annotations: forward and backward GPU time side by side, calls, TFLOP/s, CPU time.
    #[tool]
    async fn modules(&self, Parameters(p): Parameters<tools::Modules>) -> CallToolResult {
        self.read("modules", p).await
    }

    /// Allocated and reserved GPU memory over the window, per device: the peaks, when they happened, the phase and CPU op at the allocated peak, each phase's peak (traces recorded with memory events).
    #[tool]
    async fn memory(&self, Parameters(p): Parameters<tools::Input>) -> CallToolResult {
        self.read("memory", p).await
    }

    /// Collectives matched across a job's ranks: per rank its waits and how often it arrived last, per collective the arrival skew, the last rank, the transfer time, message size and bus bandwidth.
    #[tool]
    async fn collectives(&self, Parameters(p): Parameters<tools::Job>) -> CallToolResult {
        self.read("collectives", p).await
    }

    /// Baseline against candidate: throughput, step time, GPU utilisation, host overhead, launches, idle, verdict, phases and kernel mix, each with its change and, when both sides have repeats, a significance call. Two jobs: the job and each rank.
    #[tool]
    async fn compare(&self, Parameters(p): Parameters<tools::Compare>) -> CallToolResult {
        self.read("compare", p).await
    }

    /// Projected step time and img/s if some work went away, re-timed on the trace's step model: `all` ranks the standard changes; or one change (a kernel category, kernels or ops by regex, launches, an idle cause, a category at the roofline). Of a job: the straggler's lateness removed, or a change made on every rank.
    #[tool(name = "what-if")]
    async fn what_if(&self, Parameters(p): Parameters<tools::WhatIf>) -> CallToolResult {
        self.read("what-if", p).await
    }
}

/// A reader's error as the tool's error result (the model reads it and can
/// correct the call), with the class the command line would exit with.
fn refusal(e: &Error) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "error (exit {}): {}",
        e.exit_code(),
        e.message()
    ))])
}

/// A parameter the tool does not take, as its error result: the
/// parameters share groups (`serde(flatten)`), which serde cannot check
/// for strays, so every call is checked here against its tool's schema.
fn unknown_parameter(tool: &Tool, arguments: Option<&JsonObject>) -> Option<CallToolResult> {
    let known = tool.input_schema.get("properties").and_then(|p| p.as_object())?;
    let stray = arguments?.keys().find(|k| !known.contains_key(*k))?;
    let names: Vec<&str> = known.keys().map(String::as_str).collect();
    Some(refusal(&Error::usage(format!(
        "unknown parameter `{stray}`: {} takes {}",
        tool.name,
        names.join(", ")
    ))))
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let tool = self.tool_router.get(&request.name);
        if let Some(stray) = tool.and_then(|t| unknown_parameter(t, request.arguments.as_ref())) {
            return Ok(stray);
        }
        // The call's stop flag, set when its client cancels it (rmcp
        // cancels the request's token on `notifications/cancelled`).
        let stop = Arc::new(AtomicBool::new(false));
        let (ct, flag) = (context.ct.clone(), stop.clone());
        let watch = tokio::spawn(async move {
            ct.cancelled().await;
            flag.store(true, Ordering::Relaxed);
        });
        let call = self.tool_router.call(ToolCallContext::new(self, request, context));
        let out = STOP.scope(stop, call).await;
        watch.abort();
        out
    }

    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("libreyolo", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "libreyolo reads PyTorch profiler traces (Chrome traces .json/.json.gz, \
                 libreyolo profile.json files, or a folder of one distributed job's rank traces) \
                 and says where the time of a training or inference step goes. Start with \
                 `summary` on a trace or a job's folder: the verdict, headline figures and the \
                 levers ranked by what they would save. Then drill down: `phases`, `kernels` \
                 (GPU), `ops` (CPU), `tree` (which code launched the time), `modules`, `memory`, \
                 `collectives` (a job's communication), `what-if` (the step if some work went \
                 away; `all: true` ranks the standard changes), `compare` (baseline against \
                 candidate); `get` returns one metric. Each tool answers what `libreyolo profile \
                 <tool> --json` prints; its parameters are the reader's flags (`min_pct` is \
                 `--min-pct`), as its errors name them. Paths must lie under these folders: {}; \
                 a relative path is taken from them. A large trace takes seconds to read; one \
                 read runs at a time.",
                self.roots.list()
            ))
    }
}
