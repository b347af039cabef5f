//! Approvals as stored: a held call's record and its one decision. Any process with
//! the database decides (the CLI today), and the waiting gateway reads the decision.

use crate::{Backend, Fields, Result, Store, on_pool};

pub use airlock_audit::{ApprovalStatus, UnknownStatus};

/// One approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRecord {
    /// Its id (`apr_…`).
    pub id: String,
    /// The caller's tenant.
    pub tenant: String,
    /// Who asked (tenant/key).
    pub caller: String,
    /// The browser session the call runs in.
    pub session: Option<String>,
    /// The tool.
    pub tool: String,
    /// The arguments as JSON, redacted.
    pub args: String,
    /// The resolved target as JSON, redacted.
    pub target: Option<String>,
    /// The page's URL when asked.
    pub page_url: Option<String>,
    /// The page's title when asked.
    pub page_title: Option<String>,
    /// The rule that held the call.
    pub rule: String,
    /// Its risk.
    pub risk: String,
    /// Hash binding the record to one call.
    pub binding: Vec<u8>,
    /// Where it stands.
    pub status: ApprovalStatus,
    /// Unix milliseconds.
    pub created_ms: i64,
    /// Undecided by then, it expires.
    pub expires_ms: i64,
    /// When it was decided.
    pub decided_ms: Option<i64>,
    /// Who decided (an OS user, an admin key's name).
    pub decided_by: Option<String>,
    /// The approver's note or reason.
    pub note: Option<String>,
    /// When the approved call ran on it (an approval is used once).
    pub used_ms: Option<i64>,
    /// Why the rule held it, in a person's words (what would flow from where to
    /// where; a model's safety check), redacted.
    pub detail: Option<String>,
    /// The replica (its `hosts` id) whose call waits for the decision.
    pub waiter: Option<String>,
}

/// What deciding did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decided {
    /// The decision was recorded.
    Done,
    /// No approval has that id.
    NotFound,
    /// It was decided already, or expired: its status.
    Closed(ApprovalStatus),
}

impl Store {
    /// Stores a new pending approval, with the screenshot (MIME type, bytes) an
    /// approver is shown.
    pub async fn insert_approval(
        &self,
        a: &ApprovalRecord,
        screenshot: Option<(&str, &[u8])>,
    ) -> Result<()> {
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(
            "INSERT INTO approvals (id, tenant, caller, session, tool, args, target, page_url, rule, risk,
                binding, status, created_ms, expires_ms, decided_ms, decided_by, note, page_title, detail, waiter)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
        )
        .bind(&a.id)
        .bind(&a.tenant)
        .bind(&a.caller)
        .bind(&a.session)
        .bind(&a.tool)
        .bind(&a.args)
        .bind(&a.target)
        .bind(&a.page_url)
        .bind(&a.rule)
        .bind(&a.risk)
        .bind(&a.binding)
        .bind(a.status.as_str())
        .bind(a.created_ms)
        .bind(a.expires_ms)
        .bind(a.decided_ms)
        .bind(&a.decided_by)
        .bind(&a.note)
        .bind(&a.page_title)
        .bind(&a.detail)
        .bind(&a.waiter)
        .execute(&mut *tx)
        .await?;
            if let Some((mime, data)) = screenshot {
                sqlx::query(
                    "INSERT INTO approval_screenshots (id, mime, data) VALUES ($1, $2, $3)",
                )
                .bind(&a.id)
                .bind(mime)
                .bind(data)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    /// The screenshot stored with an approval: its MIME type and bytes.
    pub async fn approval_screenshot(&self, id: &str) -> Result<Option<(String, Vec<u8>)>> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT mime, data FROM approval_screenshots WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?;
            row.map(|r| Ok((r.get("mime")?, r.get("data")?)))
                .transpose()
        })
    }

    /// The approval with this id.
    pub async fn approval(&self, id: &str) -> Result<Option<ApprovalRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT * FROM approvals WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?;
            row.map(|r| approval_row(&r)).transpose()
        })
    }

    /// The approval with this id if it is `tenant`'s (another tenant's reads as none).
    pub async fn tenant_approval(&self, tenant: &str, id: &str) -> Result<Option<ApprovalRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT * FROM approvals WHERE id = $1 AND tenant = $2")
                .bind(id)
                .bind(tenant)
                .fetch_optional(pool)
                .await?;
            row.map(|r| approval_row(&r)).transpose()
        })
    }

    /// Approvals, newest first, of one tenant (all when `None`) and status (all when
    /// `None`).
    pub async fn approvals(
        &self,
        tenant: Option<&str>,
        status: Option<ApprovalStatus>,
    ) -> Result<Vec<ApprovalRecord>> {
        on_pool!(self, |pool| {
            let rows = sqlx::query(
                "SELECT * FROM approvals WHERE ($1 IS NULL OR tenant = $1) AND ($2 IS NULL OR status = $2)
                 ORDER BY created_ms DESC",
            )
            .bind(tenant)
            .bind(status.map(ApprovalStatus::as_str))
            .fetch_all(pool)
            .await?;
            rows.iter().map(approval_row).collect()
        })
    }

    /// Records a decision on a pending approval that has not expired at `now_ms`: one
    /// conditional update, so of two racing decisions exactly one counts.
    pub async fn decide_approval(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        note: Option<&str>,
        now_ms: i64,
    ) -> Result<Decided> {
        let status = ApprovalStatus::decided(approve).as_str();
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE approvals SET status = $1, decided_ms = $2, decided_by = $3, note = $4
                 WHERE id = $5 AND status = 'pending' AND expires_ms > $6",
            )
            .bind(status)
            .bind(now_ms)
            .bind(by)
            .bind(note)
            .bind(id)
            .bind(now_ms)
            .execute(pool)
            .await?;
            if done.rows_affected() == 1 {
                if let Backend::Postgres(pool) = &self.backend {
                    crate::wakeups::notify(pool, crate::wakeups::APPROVALS_CHANNEL).await?;
                }
                return Ok(Decided::Done);
            }
            Ok(match self.approval(id).await? {
                None => Decided::NotFound,
                Some(a) if a.status == ApprovalStatus::Pending => {
                    Decided::Closed(ApprovalStatus::Expired)
                }
                Some(a) => Decided::Closed(a.status),
            })
        })
    }

    /// Uses an approved approval for the one run it allows: true for the first
    /// caller, false for any other (it was used, or is not approved).
    pub async fn use_approval(&self, id: &str, now_ms: i64) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE approvals SET used_ms = $1 WHERE id = $2 AND status = 'approved' AND used_ms IS NULL",
            )
            .bind(now_ms)
            .bind(id)
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Expires every approval still pending though it expired before `before_ms`
    /// (nobody waits on it any more: a stateless client that never came back, a
    /// gateway that stopped). Returns them as they are now.
    pub async fn expire_overdue(&self, before_ms: i64, now_ms: i64) -> Result<Vec<ApprovalRecord>> {
        on_pool!(self, |pool| {
            let rows = sqlx::query(
                "UPDATE approvals SET status = 'expired', decided_ms = $1
                 WHERE status = 'pending' AND expires_ms < $2 RETURNING *",
            )
            .bind(now_ms)
            .bind(before_ms)
            .fetch_all(pool)
            .await?;
            rows.iter().map(approval_row).collect()
        })
    }

    /// Marks a pending approval expired (its call stopped waiting).
    pub async fn expire_approval(&self, id: &str, now_ms: i64) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query(
                "UPDATE approvals SET status = 'expired', decided_ms = $1 WHERE id = $2 AND status = 'pending'",
            )
            .bind(now_ms)
            .bind(id)
            .execute(pool)
            .await?;
            Ok(())
        })
    }
}

impl Store {
    /// Closes pending approval `id` as expired with `note` saying why (its caller
    /// went away): an approver's card shows it, and it can no longer be decided.
    /// `false` when it was no longer pending.
    pub async fn withdraw_approval(&self, id: &str, now_ms: i64, note: &str) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE approvals SET status = 'expired', decided_ms = $1, note = $2 WHERE id = $3 AND status = 'pending'",
            )
            .bind(now_ms)
            .bind(note)
            .bind(id)
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }
}

impl Store {
    /// Closes as expired, with `note`, every pending approval whose call waits on
    /// `replica` (gone: nothing will run them); the ones it closed, for the record.
    pub async fn close_waits_of(
        &self,
        replica: &str,
        now_ms: i64,
        note: &str,
    ) -> Result<Vec<ApprovalRecord>> {
        on_pool!(self, |pool| {
            let rows = sqlx::query(
                "UPDATE approvals SET status = 'expired', decided_ms = $1, note = $2
                 WHERE status = 'pending' AND waiter = $3 RETURNING *",
            )
            .bind(now_ms)
            .bind(note)
            .bind(replica)
            .fetch_all(pool)
            .await?;
            rows.iter().map(approval_row).collect()
        })
    }
}

fn approval_row(row: &impl Fields) -> Result<ApprovalRecord> {
    Ok(ApprovalRecord {
        id: row.get("id")?,
        tenant: row.get("tenant")?,
        caller: row.get("caller")?,
        session: row.get("session")?,
        tool: row.get("tool")?,
        args: row.get("args")?,
        target: row.get("target")?,
        page_url: row.get("page_url")?,
        page_title: row.get("page_title")?,
        rule: row.get("rule")?,
        risk: row.get("risk")?,
        binding: row.get("binding")?,
        status: row.get::<String>("status")?.parse().map_err(|_| {
            crate::StoreError::Corrupt("an approval's status is unknown".to_owned())
        })?,
        created_ms: row.get("created_ms")?,
        expires_ms: row.get("expires_ms")?,
        decided_ms: row.get("decided_ms")?,
        decided_by: row.get("decided_by")?,
        note: row.get("note")?,
        used_ms: row.get("used_ms")?,
        detail: row.get("detail")?,
        waiter: row.get("waiter")?,
    })
}
