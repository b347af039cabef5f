//! `browser_run_task` over MCP, in process (an rmcp client over a duplex pipe to the
//! real server) against real Chromium and a scripted model endpoint on loopback: the
//! tool is listed only with a model configured; a task reports one progress
//! notification per step and ends with one result and one image; the client's
//! cancellation stops it.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_config::Tasks;
use airlock_gateway::{Gateway, GatewayConfig};
use airlock_mcp::AirlockMcp;
use airlock_test_support::{Harness, ModelServer, Reply, calls, finish, with_browser};
use rmcp::ServiceExt as _;
use rmcp::model::{
    CallToolRequestParams, NumberOrString, ProgressNotificationParam, ProgressToken,
    RequestMetaObject,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use serde_json::{Value, json};

// A client that keeps every progress notification.
#[derive(Clone, Default)]
struct Client {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl rmcp::ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

async fn connect(
    h: &Harness,
    tasks: &Tasks,
) -> (Arc<Gateway>, RunningService<RoleClient, Client>, Client) {
    let gateway = Gateway::new(
        h.host().await,
        GatewayConfig::with_policy(h.site.policy())
            .store(airlock_store::Store::open_in_memory().await.unwrap()),
    );
    let runner = (!tasks.models.is_empty())
        .then(|| Arc::new(airlock_task::Runner::new(tasks, None).unwrap()));
    let server =
        AirlockMcp::new(gateway.clone(), airlock_config::ToolProfile::Browser).with_tasks(runner);
    let (server_end, client_end) = tokio::io::duplex(1 << 22);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    let client = Client::default();
    let running = client.clone().serve(client_end).await.unwrap();
    (gateway, running, client)
}

fn request(args: Value, progress: bool) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("browser_run_task")
        .with_arguments(args.as_object().cloned().unwrap());
    if progress {
        let mut meta = RequestMetaObject::default();
        meta.set_progress_token(ProgressToken(NumberOrString::String("t1".into())));
        params.meta = Some(meta);
    }
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_over_mcp_reports_each_step_and_ends_with_one_result_and_one_image() {
    with_browser(|h| async move {
        // No model: no tool.
        let (_, bare, _) = connect(&h, &Tasks::default()).await;
        let listed = bare.list_all_tools().await.unwrap();
        assert!(!listed.iter().any(|t| t.name == "browser_run_task"));

        let model = ModelServer::start(vec![
            calls(&[("browser_click", json!({"role": "link", "name": "Page two"}))]),
            calls(&[("browser_snapshot", json!({}))]),
            finish("on page two"),
        ])
        .await;
        let (gateway, client, seen) = connect(&h, &model.tasks(None)).await;
        let listed = client.list_all_tools().await.unwrap();
        let tool = listed
            .iter()
            .find(|t| t.name == "browser_run_task")
            .unwrap();
        assert!(
            tool.input_schema
                .get("properties")
                .unwrap()
                .get("instruction")
                .is_some()
        );

        let result = client
            .call_tool(request(
                json!({"instruction": "go to page two", "start_url": h.site.url("index.html")}),
                true,
            ))
            .await
            .unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
        let structured = result.structured_content.clone().unwrap();
        assert_eq!(structured["status"], "finished", "{structured}");
        assert_eq!(structured["answer"], "on page two");
        assert_eq!(structured["steps"], 2);
        assert!(structured["trace"]["session"].is_string());
        let images = result
            .content
            .iter()
            .filter(|c| c.as_image().is_some())
            .count();
        assert_eq!(images, 1, "one final screenshot, no other");

        let progress = seen.progress.lock().unwrap().clone();
        let steps: Vec<f64> = progress.iter().map(|p| p.progress).collect();
        assert_eq!(steps, vec![1.0, 2.0], "{progress:?}");
        assert!(
            progress[0]
                .message
                .as_deref()
                .unwrap()
                .contains("browser_click ok")
        );

        // A bad argument is the catalogue's refusal.
        let refused = client
            .call_tool(request(
                json!({"instruction": "x", "max_steps": 500}),
                false,
            ))
            .await
            .unwrap();
        assert_eq!(refused.is_error, Some(true));
        assert_eq!(
            refused.structured_content.unwrap()["error"]["code"],
            "invalid_argument"
        );
        drop(gateway);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_cancellation_stops_a_task() {
    with_browser(|h| async move {
        let model = ModelServer::start(vec![Reply::Hang]).await;
        let (gateway, client, _) = connect(&h, &model.tasks(None)).await;
        let peer = client.peer().clone();
        let call = tokio::spawn(async move {
            peer.call_tool(request(
                json!({"instruction": "wait", "start_url": h.site.url("index.html")}),
                false,
            ))
            .await
        });
        let mut feed = gateway.audit().appended_here();
        model.requests(1).await;
        // Dropping the request sends notifications/cancelled.
        call.abort();
        let ended = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let record = feed.recv().await.unwrap();
                let event: Value = serde_json::from_str(&record.body).unwrap();
                if event["kind"] == "task_ended" {
                    return event;
                }
            }
        })
        .await
        .expect("the task did not end");
        assert_eq!(ended["status"], "cancelled");
    })
    .await;
}
