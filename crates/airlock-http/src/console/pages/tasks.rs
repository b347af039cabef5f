//! Server-side tasks as the audit log has them: a list of the tenant's tasks, and one
//! task's transcript (what it was asked, each step it took with the gate's word and
//! the step's stored screenshot, the approvals it waited for, how it ended).

use airlock_audit::{Event, TaskEnded, TaskStarted};
use airlock_gateway::AuditRecord;
use axum::response::Html;
use maud::html;

use super::{Login, Section, layout, safe, step_list, time};

/// One task as the record has it: how it began and, once it has, how it ended.
/// Either half may be missing (its start scrolled out of the scanned window; its end
/// not written yet, or never, by a gateway that went away).
pub(crate) struct TaskRow {
    pub(crate) id: String,
    started: Option<(i64, TaskStarted)>,
    ended: Option<(i64, TaskEnded)>,
}

impl TaskRow {
    /// The browser session it ran in.
    pub(crate) fn session(&self) -> Option<&str> {
        self.ended
            .as_ref()
            .and_then(|(_, e)| e.session.as_deref())
            .or_else(|| self.started.as_ref()?.1.session.as_deref())
    }

    fn time_ms(&self) -> i64 {
        self.started
            .as_ref()
            .map(|(t, _)| *t)
            .or_else(|| self.ended.as_ref().map(|(t, _)| *t))
            .unwrap_or_default()
    }

    // How it stands: its end's status; `running` while its session is open; and
    // said plainly when it has no end and its session is gone.
    fn status(&self, live: &[String]) -> &str {
        match &self.ended {
            Some((_, ended)) => &ended.status,
            None if self.session().is_some_and(|s| live.iter().any(|l| l == s)) => "running",
            None => "no end on record",
        }
    }
}

/// The tasks among `events` (task_started / task_ended, any order), newest first.
pub(crate) fn task_rows(events: &[AuditRecord]) -> Vec<TaskRow> {
    let mut rows: Vec<TaskRow> = Vec::new();
    for record in events {
        let Ok(entry) = airlock_audit::Entry::parse(&record.body) else {
            continue;
        };
        let (id, started, ended) = match entry.event {
            Event::TaskStarted(t) => (t.task.clone(), Some((record.time_ms, t)), None),
            Event::TaskEnded(t) => (t.task.clone(), None, Some((record.time_ms, t))),
            _ => continue,
        };
        let at = match rows.iter().position(|r| r.id == id) {
            Some(at) => at,
            None => {
                rows.push(TaskRow {
                    id,
                    started: None,
                    ended: None,
                });
                rows.len() - 1
            }
        };
        rows[at].started = rows[at].started.take().or(started);
        rows[at].ended = rows[at].ended.take().or(ended);
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.time_ms()));
    rows
}

// An instruction or answer in a table cell: cut, with invisible controls shown.
fn cut(text: &str, most: usize) -> String {
    let mut out: String = text.chars().take(most).collect();
    if text.chars().count() > most {
        out.push('…');
    }
    safe(&out)
}

/// The operator's tenant's server-side tasks, newest first.
pub(crate) fn tasks(login: &Login, rows: &[TaskRow], live: &[String]) -> Html<String> {
    let running = rows.iter().any(|r| r.status(live) == "running");
    layout(
        login,
        Section::Tasks,
        "Tasks",
        running,
        html! {
            @if rows.is_empty() {
                p { "No task on the record. An agent starts one with " code { "browser_run_task" } ", a backend with " code { "POST /api/v1/sessions/{id}/tasks" } ", an operator with " code { "airlock run" } "." }
            } @else {
                div class="scroll" {
                    table {
                        caption { (rows.len()) " on the record" }
                        thead { tr {
                            th scope="col" { "Task" } th scope="col" { "Started" } th scope="col" { "Instruction" }
                            th scope="col" { "Model" } th scope="col" { "Status" } th scope="col" { "Steps" }
                            th scope="col" { "Tokens" } th scope="col" { "Took" } th scope="col" { "" }
                        } }
                        tbody {
                            @for row in rows {
                                @let started = row.started.as_ref();
                                @let ended = row.ended.as_ref().map(|(_, e)| e);
                                tr {
                                    td { code { (row.id) } }
                                    td { @if let Some((t, _)) = started { (time(*t)) } @else { "—" } }
                                    td { @if let Some((_, s)) = started { (cut(&s.instruction, 120)) } @else { "—" } }
                                    td { @if let Some((_, s)) = started { (s.model) } @else { "—" } }
                                    td { (row.status(live)) @if let Some(code) = ended.and_then(|e| e.error.as_deref()) { " · " code { (code) } } }
                                    td { @if let Some(e) = ended { (e.steps) } @else { "—" } }
                                    td { @if let Some(e) = ended { (e.tokens) } @else { "—" } }
                                    td { @if let Some(e) = ended { (e.duration_ms) " ms" } @else { "—" } }
                                    td class="actions" {
                                        a href={ "/console/tasks/" (row.id) } aria-label={ "Transcript of " (row.id) } { "Transcript" }
                                        @if let Some(session) = row.session() {
                                            a href={ "/console/sessions/" (session) "/replay" } aria-label={ "Replay of the session of " (row.id) } { "Replay" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// One task's transcript: `events` are its own, oldest first.
pub(crate) fn task(
    login: &Login,
    row: &TaskRow,
    events: &[AuditRecord],
    live: &[String],
) -> Html<String> {
    let status = row.status(live);
    let started = row.started.as_ref().map(|(_, s)| s);
    let ended = row.ended.as_ref().map(|(_, e)| e);
    let steps: Vec<AuditRecord> = events
        .iter()
        .filter(|e| e.kind != "task_started" && e.kind != "task_ended")
        .cloned()
        .collect();
    layout(
        login,
        Section::Tasks,
        &format!("Task {}", row.id),
        status == "running",
        html! {
            dl class="task" {
                @if let Some(s) = started {
                    dt { "Instruction" } dd { (safe(&s.instruction)) }
                    dt { "Model" } dd { code { (s.model) } }
                    dt { "Asked by" } dd { (s.caller) " over " (s.surface) }
                    @if let Some(url) = &s.start_url { dt { "Started at" } dd { code { (safe(url)) } } }
                    dt { "Step limit" } dd { (s.max_steps) }
                }
                dt { "Status" } dd { (status) @if let Some(code) = ended.and_then(|e| e.error.as_deref()) { " · " code { (code) } } }
                @if let Some(e) = ended {
                    dt { "Steps" } dd { (e.steps) }
                    dt { "Tokens" } dd { (e.tokens) }
                    dt { "Took" } dd { (e.duration_ms) " ms" }
                    @if let Some(answer) = &e.answer { dt { "Answer" } dd { (safe(answer)) } }
                }
            }
            @if let Some(session) = row.session() {
                p class="actions" {
                    a href={ "/console/sessions/" (session) "/replay" } { "Replay the whole session" }
                    " "
                    a href={ "/console/audit?session=" (session) } { "Its audit events" }
                }
            }
            h2 { "Steps" }
            @if steps.is_empty() {
                p { "No step on the record yet." }
            } @else {
                (step_list(&steps))
            }
        },
    )
}
