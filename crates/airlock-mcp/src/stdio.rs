//! MCP over stdio, answering `initialize` before the engine is up.
//!
//! A stdio client spawns the server and waits for its answer to `initialize`. That
//! answer needs no store, vault or browser worker, and starting them (above all,
//! spawning the worker) is most of a cold start: they start beside the handshake,
//! and the first request that needs them waits for them.

use std::sync::Arc;

use airlock_config::ToolProfile;
use airlock_gateway::{Gateway, PageFence};
use futures_util::future::{BoxFuture, Shared};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListPromptsRequestMethod, ListPromptsResult,
    ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::AirlockMcp;

/// The engine being started: every clone resolves to the same gateway, or to the one
/// line saying why it could not start.
pub type Starting = Shared<BoxFuture<'static, Result<Arc<Gateway>, String>>>;

/// The engine `build` starts, as [`crate::serve_stdio`] and its caller both wait on it.
pub fn starting(
    build: impl std::future::Future<Output = Result<Arc<Gateway>, String>> + Send + 'static,
) -> Starting {
    use futures_util::FutureExt as _;
    build.boxed().shared()
}

/// The stdio server while (and after) its engine starts.
pub(crate) struct Deferred {
    starting: Starting,
    profile: ToolProfile,
    tasks: airlock_config::Tasks,
    fence: PageFence,
    ready: tokio::sync::OnceCell<AirlockMcp>,
}

impl Deferred {
    pub(crate) fn new(
        starting: Starting,
        profile: ToolProfile,
        tasks: airlock_config::Tasks,
    ) -> Deferred {
        Deferred {
            starting,
            profile,
            tasks,
            fence: PageFence::new(),
            ready: tokio::sync::OnceCell::new(),
        }
    }

    // The server proper, once its engine is up.
    async fn server(&self) -> Result<&AirlockMcp, ErrorData> {
        self.ready
            .get_or_try_init(|| async {
                let gateway = self.starting.clone().await.map_err(|why| {
                    ErrorData::internal_error(format!("Airlock could not start: {why}"), None)
                })?;
                let tasks = airlock_task::Runner::for_gateway(&self.tasks, &gateway);
                Ok(AirlockMcp::new(gateway, self.profile)
                    .fenced(self.fence.clone())
                    .with_tasks(tasks))
            })
            .await
    }
}

impl ServerHandler for Deferred {
    // The same words the server proper gives: its fence is this one.
    fn get_info(&self) -> ServerConfig {
        let mut info = crate::server::info(&self.fence);
        // As the server proper: `browser_run_task` as an MCP task when a model is set.
        if !self.tasks.models.is_empty() {
            info.capabilities = rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build();
        }
        info
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.server().await?.get_task(request, context).await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.server().await?.update_task(request, context).await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.server().await?.cancel_task(request, context).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.server().await?.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.server().await?.call_tool(request, context).await
    }

    // As the server proper: tools only (see `AirlockMcp`).
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Err(ErrorData::method_not_found::<ListPromptsRequestMethod>())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Err(ErrorData::method_not_found::<ListResourcesRequestMethod>())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Err(ErrorData::method_not_found::<
            ListResourceTemplatesRequestMethod,
        >())
    }
}
