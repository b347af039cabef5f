//! `/metrics`: Prometheus (OpenMetrics text) figures an operator can graph and alert
//! on, with `prometheus-client`. Tool calls come from the gateway as a
//! [`CallObserver`] (never blocking the call); sessions, approvals and
//! authentication failures from its audit feed; live sessions and pending approvals
//! are read at scrape time. Every label has a bounded set of values (tool names,
//! error codes, refusal reasons, statuses); no tenant, URL or name is a label.

use airlock_audit::Event;
use std::sync::Arc;

use airlock_gateway::{CallObserver, CallRecord, Gateway};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpenLabels {
    isolation: String,
    start: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CloseLabels {
    reason: String,
    isolation: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StartLabel {
    start: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScopeLabel {
    scope: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RiskLabel {
    risk: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SurfaceLabel {
    surface: String,
}

#[derive(Default)]
struct Seen {
    launches: u64,
    quota: std::collections::BTreeMap<&'static str, u64>,
}

/// The gateway's figures.
pub(crate) struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    latency: Family<ToolLabel, Histogram>,
    egress_refused: Family<ReasonLabel, Counter>,
    sessions_opened: Family<OpenLabels, Counter>,
    sessions_closed: Family<CloseLabels, Counter>,
    sessions_live: Gauge,
    fleet_sessions: Gauge,
    session_open: Family<StartLabel, Histogram>,
    browser_launches: Counter,
    browser_crashes: Counter,
    quota_refusals: Family<ScopeLabel, Counter>,
    // What the gateway's own counts were at the last scrape (counters grow by the
    // difference).
    seen: std::sync::Mutex<Seen>,
    approvals_requested: Family<RiskLabel, Counter>,
    approvals_decided: Family<StatusLabel, Counter>,
    approvals_pending: Gauge,
    auth_failures: Family<SurfaceLabel, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Registers the figures, observes the gateway's calls and follows its feed
    /// until it stops.
    pub(crate) fn install(gateway: &Arc<Gateway>) -> Arc<Metrics> {
        let mut registry = Registry::with_prefix("airlock");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "Tool calls finished, by tool and outcome (ok or the error code)",
            calls.clone(),
        );
        // 5 ms to ~80 s: a snapshot, a click, a navigation, an approval's wait.
        let latency = Family::<ToolLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.005, 2.0, 15))
        });
        registry.register(
            "tool_call_duration_seconds",
            "How long tool calls took, admission to result, by tool",
            latency.clone(),
        );
        let egress_refused = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "egress_refused_requests",
            "Requests of pages the egress policy (or the outbound secret guard) refused, by reason",
            egress_refused.clone(),
        );
        let sessions_opened = Family::<OpenLabels, Counter>::default();
        registry.register(
            "sessions_opened",
            "Browser sessions opened, by isolation and whether the pool had one warm",
            sessions_opened.clone(),
        );
        let sessions_closed = Family::<CloseLabels, Counter>::default();
        registry.register(
            "sessions_closed",
            "Browser sessions ended, by reason (closed, idle, lifetime, browser lost, shutdown, gateway gone) and isolation",
            sessions_closed.clone(),
        );
        // 1 ms (warm) to ~16 s (a cold Chromium on a loaded machine).
        let session_open = Family::<StartLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.001, 2.0, 15))
        });
        registry.register(
            "session_open_duration_seconds",
            "How long opening a browser session took, by start (warm from the pool, or cold)",
            session_open.clone(),
        );
        let browser_launches = Counter::default();
        registry.register(
            "browser_launches",
            "Chromium processes launched (the shared one, relaunches, one per process session)",
            browser_launches.clone(),
        );
        let browser_crashes = Counter::default();
        registry.register(
            "browser_crashes",
            "Calls that found their tab's renderer or their Chromium crashed",
            browser_crashes.clone(),
        );
        let quota_refusals = Family::<ScopeLabel, Counter>::default();
        registry.register(
            "quota_refusals",
            "New browser sessions refused over a cap, by scope (user, tenant, total, memory)",
            quota_refusals.clone(),
        );
        let fleet_sessions = Gauge::default();
        registry.register(
            "fleet_sessions",
            "Live browser sessions over every control-plane replica sharing the store (Postgres only): what worker autoscaling reads",
            fleet_sessions.clone(),
        );
        let sessions_live = Gauge::default();
        registry.register(
            "sessions_live",
            "Browser sessions open now",
            sessions_live.clone(),
        );
        let approvals_requested = Family::<RiskLabel, Counter>::default();
        registry.register(
            "approvals_requested",
            "Calls held for a human's approval, by risk",
            approvals_requested.clone(),
        );
        let approvals_decided = Family::<StatusLabel, Counter>::default();
        registry.register(
            "approvals_decided",
            "Approval requests ended, by status (approved, denied, expired)",
            approvals_decided.clone(),
        );
        let approvals_pending = Gauge::default();
        registry.register(
            "approvals_pending",
            "Approval requests waiting for a decision now",
            approvals_pending.clone(),
        );
        let auth_failures = Family::<SurfaceLabel, Counter>::default();
        registry.register(
            "auth_failures",
            "Requests refused for a missing or wrong credential, by surface",
            auth_failures.clone(),
        );
        let metrics = Arc::new(Metrics {
            registry,
            calls,
            latency,
            egress_refused,
            sessions_opened,
            sessions_closed,
            sessions_live,
            fleet_sessions,
            session_open,
            browser_launches,
            browser_crashes,
            quota_refusals,
            seen: std::sync::Mutex::default(),
            approvals_requested,
            approvals_decided,
            approvals_pending,
            auth_failures,
        });
        gateway.observe(Arc::new(Observer(metrics.clone())));
        tokio::spawn(follow(gateway.clone(), metrics.clone()));
        metrics
    }

    /// The figures now, as OpenMetrics text.
    pub(crate) async fn render(&self, gateway: &Gateway) -> String {
        self.sessions_live.set(gateway.leases().len() as i64);
        if let Some(n) = gateway.fleet_sessions().await {
            self.fleet_sessions.set(n as i64);
        }
        let launches = gateway.host().launches().await;
        {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            self.browser_launches
                .inc_by(launches.saturating_sub(seen.launches));
            seen.launches = launches;
            for (scope, n) in gateway.quota_refusals() {
                let before = seen.quota.insert(scope, n).unwrap_or(0);
                self.quota_refusals
                    .get_or_create(&ScopeLabel {
                        scope: scope.to_owned(),
                    })
                    .inc_by(n.saturating_sub(before));
            }
        }
        if let Ok(pending) = gateway.approvals().pending().await {
            self.approvals_pending.set(pending as i64);
        }
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::error!(error = %e, "could not encode the metrics");
        }
        text
    }
}

struct Observer(Arc<Metrics>);

impl CallObserver for Observer {
    fn call_finished(&self, record: &CallRecord<'_>) {
        let tool = record.context.tool.to_owned();
        let outcome = record.error.map_or("ok", |e| e.as_str()).to_owned();
        if record.error == Some(airlock_core::ErrorCode::BrowserCrashed) {
            self.0.browser_crashes.inc();
        }
        self.0
            .calls
            .get_or_create(&CallLabels {
                tool: tool.clone(),
                outcome,
            })
            .inc();
        self.0
            .latency
            .get_or_create(&ToolLabel { tool })
            .observe(record.duration.as_secs_f64());
        for (reason, n) in &record.context.blocked_by {
            self.0
                .egress_refused
                .get_or_create(&ReasonLabel {
                    reason: (*reason).to_owned(),
                })
                .inc_by(*n);
        }
    }
}

// Counts what the audit feed announces; ends when the gateway stops.
async fn follow(gateway: Arc<Gateway>, metrics: Arc<Metrics>) {
    use tokio::sync::broadcast::error::RecvError;
    let mut feed = gateway.audit().appended_here();
    loop {
        let event = tokio::select! {
            event = feed.recv() => event,
            () = gateway.stopped() => return,
        };
        let event = match event {
            Ok(event) => event,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "metrics fell behind the audit feed");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let Ok(entry) = airlock_audit::Entry::parse(&event.body) else {
            continue;
        };
        let word = |w: &Option<String>| w.clone().unwrap_or_else(|| "unknown".to_owned());
        match entry.event {
            Event::SessionOpen(open) => {
                let labels = OpenLabels {
                    isolation: word(&open.isolation),
                    start: word(&open.start),
                };
                metrics.sessions_opened.get_or_create(&labels).inc();
                if let Some(ms) = open.open_ms {
                    metrics
                        .session_open
                        .get_or_create(&StartLabel {
                            start: word(&open.start),
                        })
                        .observe(ms as f64 / 1000.0);
                }
            }
            Event::SessionClose(close) => {
                let labels = CloseLabels {
                    reason: word(&close.reason),
                    isolation: word(&close.isolation),
                };
                metrics.sessions_closed.get_or_create(&labels).inc();
            }
            Event::ApprovalRequested(requested) => {
                let labels = RiskLabel {
                    risk: requested.risk,
                };
                metrics.approvals_requested.get_or_create(&labels).inc();
            }
            Event::ApprovalDecided(decided) => {
                let labels = StatusLabel {
                    status: decided.status.to_string(),
                };
                metrics.approvals_decided.get_or_create(&labels).inc();
            }
            Event::AuthFailure(failure) => {
                let labels = SurfaceLabel {
                    surface: failure.surface,
                };
                metrics.auth_failures.get_or_create(&labels).inc();
            }
            _ => {}
        };
    }
}
