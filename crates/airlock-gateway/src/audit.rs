//! Signed checkpoints of the audit log: after every `every` events, after a quiet
//! minute with new events, and at shutdown, the gateway signs (size, tree root) as a
//! C2SP signed note and appends it to a file outside the database (and to its log), so
//! that cutting events off the log's tail is caught too, not only edits. Where the
//! operator names a directory off the data dir (`[audit] publish_dir`), each note is
//! appended there too as it is signed: someone who can rewrite the data dir, chain
//! and local checkpoints included, cannot rewrite what was published.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use airlock_audit::{Checkpoint, Frontier, SigningKey, merkle};
use airlock_store::{AuditRecord, Store, StoreError};
use tokio::io::AsyncWriteExt as _;
use tokio::time::Instant;

/// How many events a slow feed reader may fall behind before it is told it missed
/// some (it can read them from the store by `seq`).
pub(crate) const FEED_DEPTH: usize = 1024;

/// How often the feed looks for other processes' events when the store sends no
/// wake-ups (SQLite), or as a backstop for missed ones (Postgres: [`FOLLOW_BACKSTOP`]).
pub const FOLLOW_POLL: Duration = Duration::from_secs(1);
/// How often the feed looks when the store wakes it on every append.
pub(crate) const FOLLOW_BACKSTOP: Duration = Duration::from_secs(5);
// Events read per look.
const FOLLOW_BATCH: u32 = 500;

/// An audit event as the gateway's live feed carries it: already redacted, in the
/// log's order.
pub type FeedEvent = Arc<AuditRecord>;

/// Where and how checkpoints are signed.
#[derive(Clone)]
pub struct Checkpoints {
    /// The log's name: the note's origin line and its signer.
    pub name: String,
    /// The signing key (`audit.key` in the data dir).
    pub key: Arc<SigningKey>,
    /// The file notes are appended to.
    pub path: PathBuf,
    /// Events between checkpoints.
    pub every: u64,
    /// A directory off the data dir each note is also appended to (its file is
    /// [`PUBLISHED_FILE`]).
    pub publish_dir: Option<PathBuf>,
}

/// The file in `publish_dir` published checkpoints are appended to.
pub const PUBLISHED_FILE: &str = "airlock.checkpoints";

impl fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checkpoints")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("every", &self.every)
            .field("publish_dir", &self.publish_dir)
            .finish_non_exhaustive()
    }
}

/// A log quiet this long after an event gets a checkpoint over it: what a tamperer
/// could cut off the log's tail unseen is at most a few seconds of events.
pub(crate) const QUIET: Duration = Duration::from_secs(2);

/// The tree the gateway grows as events are appended (by it or by another writer).
pub(crate) struct Trail {
    config: Checkpoints,
    state: tokio::sync::Mutex<State>,
}

struct State {
    tree: Frontier,
    // Whether the tree was read from the store once (it starts empty).
    synced: bool,
    signed: u64,
    last_signed: Instant,
    // When this gateway last appended an event, and whether any came since the last
    // checkpoint (the quiet signer reads no store while nothing happens).
    last_event: Instant,
    dirty: bool,
}

impl Trail {
    pub(crate) fn new(config: Checkpoints) -> Trail {
        Trail {
            config,
            state: tokio::sync::Mutex::new(State {
                tree: Frontier::default(),
                synced: false,
                signed: 0,
                last_signed: Instant::now(),
                last_event: Instant::now(),
                dirty: false,
            }),
        }
    }

    /// Takes in an event just appended (and any another writer appended before it);
    /// signs a checkpoint when one is due.
    pub(crate) async fn appended(
        &self,
        store: &Store,
        record: &AuditRecord,
    ) -> Result<(), StoreError> {
        let mut state = self.state.lock().await;
        state.last_event = Instant::now();
        state.dirty = true;
        if record.seq <= state.tree.size() && state.synced {
            return Ok(());
        }
        catch_up(store, &mut state, record.seq - 1).await?;
        if state.tree.size() + 1 == record.seq {
            state.tree.push(merkle::leaf_hash(record.body.as_bytes()));
        }
        if state.tree.size() >= state.signed + self.config.every {
            self.sign(&mut state).await?;
        }
        Ok(())
    }

    /// Signs a checkpoint if events came since the last and `force` (shutdown) or the
    /// log has been quiet for `QUIET` since its last event (the quiet signer's tick).
    pub(crate) async fn settle(&self, store: &Store, force: bool) -> Result<(), StoreError> {
        let mut state = self.state.lock().await;
        if !force && (!state.dirty || state.last_event.elapsed() < QUIET) {
            return Ok(());
        }
        state.dirty = false;
        let Some(last) = store.audit_tail(1).await?.pop() else {
            return Ok(());
        };
        catch_up(store, &mut state, last.seq).await?;
        if state.tree.size() > state.signed {
            self.sign(&mut state).await?;
        }
        Ok(())
    }

    async fn sign(&self, state: &mut State) -> Result<(), StoreError> {
        let checkpoint = Checkpoint {
            origin: self.config.name.clone(),
            size: state.tree.size(),
            root: state.tree.root(),
        };
        let note = checkpoint.sign(&self.config.name, &self.config.key);
        append_note(&self.config.path, &note).await?;
        // On one line: the note's own lines, escaped.
        tracing::info!(size = checkpoint.size, note = ?note, "audit checkpoint");
        // Off the box: a failure is loud but does not stop the log (the next
        // checkpoint covers everything before it, so it publishes what this missed).
        if let Some(dir) = &self.config.publish_dir
            && let Err(error) = append_note(&dir.join(PUBLISHED_FILE), &note).await
        {
            tracing::error!(%error, dir = %dir.display(), size = checkpoint.size, "could not publish an audit checkpoint");
        }
        state.signed = checkpoint.size;
        state.last_signed = Instant::now();
        Ok(())
    }
}

// Appends one note to the file at `path` (0600, created), durably.
async fn append_note(path: &std::path::Path, note: &str) -> std::io::Result<()> {
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .await?;
    file.write_all(note.as_bytes()).await?;
    file.sync_data().await
}

// Grows the tree with the store's events up to `seq` (the first time: all of them).
async fn catch_up(store: &Store, state: &mut State, seq: u64) -> Result<(), StoreError> {
    state.synced = true;
    while state.tree.size() < seq {
        let page = store.audit_events(state.tree.size(), 10_000).await?;
        if page.is_empty() {
            break;
        }
        for record in page {
            if record.seq > seq {
                break;
            }
            state.tree.push(merkle::leaf_hash(record.body.as_bytes()));
        }
    }
    Ok(())
}

/// The audit log as the gateway writes it: appends of typed events (every string
/// through the writer's redactor first, when it has one), the live feed each written
/// event goes to, and the signed checkpoints over the log. One per gateway; whatever
/// writes events (an agent session's pipeline, the session registry's journal, the
/// operator's actions) is handed this, not the gateway; readers of the feed (the
/// event stream, the webhook, metrics) reach it by [`crate::Gateway::audit`].
pub struct AuditLog {
    store: Option<Store>,
    trail: Option<Trail>,
    // Every event of the log, whoever wrote it, in the log's order.
    feed: tokio::sync::broadcast::Sender<FeedEvent>,
    // The seq `feed` has carried up to (`None` until the first look).
    fed: tokio::sync::Mutex<Option<u64>>,
    // The events this process appended.
    here: tokio::sync::broadcast::Sender<FeedEvent>,
    // The deployment's own secrets, hidden in every event whoever writes it.
    own: Option<Arc<airlock_vault::Redactor>>,
}

impl AuditLog {
    /// A log in `store` (none: events are not kept), signed as `checkpoints` say.
    pub(crate) fn new(
        store: Option<Store>,
        checkpoints: Option<Checkpoints>,
        own: Option<Arc<airlock_vault::Redactor>>,
    ) -> AuditLog {
        AuditLog {
            own,
            store,
            trail: checkpoints.map(Trail::new),
            feed: tokio::sync::broadcast::channel(FEED_DEPTH).0,
            fed: tokio::sync::Mutex::new(None),
            here: tokio::sync::broadcast::channel(FEED_DEPTH).0,
        }
    }

    /// Whether it signs checkpoints.
    pub(crate) fn signs(&self) -> bool {
        self.trail.is_some()
    }

    /// Audit events as they are written, from now on, by any process sharing the
    /// store (other replicas, the CLI), in the log's order: this process's own at
    /// once, others' on the store's wake-up or within [`FOLLOW_POLL`]. A reader
    /// that falls more than 1,024 events behind gets `Lagged` and may fill the gap
    /// with [`AuditLog::events_after`].
    pub fn feed(&self) -> tokio::sync::broadcast::Receiver<FeedEvent> {
        self.feed.subscribe()
    }

    /// The events this process appends, from now on: what is announced once per
    /// event however many replicas share the log (the webhook) or counted per
    /// process (metrics).
    pub fn appended_here(&self) -> tokio::sync::broadcast::Receiver<FeedEvent> {
        self.here.subscribe()
    }

    /// Carries on `feed` what the store holds past what it carried (others'
    /// appends): the follower's tick, or a wake-up from the store.
    pub(crate) async fn follow(&self) {
        let Some(store) = &self.store else {
            return;
        };
        let mut fed = self.fed.lock().await;
        if let Err(e) = self.carry(store, &mut fed, None).await {
            tracing::warn!(error = %e, "could not follow the audit log");
        }
    }

    // Sends on `feed` the events after `fed`, reading the store for any it has not
    // seen; `just` is one just appended here (sent without a read when it is next).
    async fn carry(
        &self,
        store: &Store,
        fed: &mut Option<u64>,
        just: Option<&FeedEvent>,
    ) -> Result<(), StoreError> {
        let Some(after) = *fed else {
            // The first look: the feed starts now, not at the log's beginning.
            *fed = Some(match just {
                Some(record) => {
                    let _ = self.feed.send(record.clone());
                    record.seq
                }
                None => store.audit_tail(1).await?.last().map_or(0, |e| e.seq),
            });
            return Ok(());
        };
        if let Some(record) = just {
            if record.seq <= after {
                return Ok(());
            }
            if record.seq == after + 1 {
                let _ = self.feed.send(record.clone());
                *fed = Some(record.seq);
                return Ok(());
            }
        }
        let mut after = after;
        loop {
            let events = store.audit_events(after, FOLLOW_BATCH).await?;
            let full = events.len() == FOLLOW_BATCH as usize;
            for event in events {
                after = event.seq;
                let _ = self.feed.send(Arc::new(event));
            }
            *fed = Some(after);
            if !full {
                return Ok(());
            }
        }
    }

    /// Up to `limit` audit events after `seq`, oldest first, and of those the
    /// tenant's: a feed reader catching up (the seq read up to moves past other
    /// tenants' events too). `None` when there were none after `seq`.
    pub async fn events_after(
        &self,
        tenant: &str,
        seq: u64,
        limit: u32,
    ) -> crate::Result<Option<(u64, Vec<FeedEvent>)>> {
        let events = self
            .kept()?
            .audit_events(seq, limit)
            .await
            .map_err(unanswered)?;
        let Some(last) = events.last().map(|e| e.seq) else {
            return Ok(None);
        };
        Ok(Some((
            last,
            events
                .into_iter()
                .filter(|e| e.tenant == tenant)
                .map(Arc::new)
                .collect(),
        )))
    }

    /// The newest audit event's seq (0 for an empty log): a feed reader that wants no
    /// history starts after it.
    pub async fn last_event_seq(&self) -> crate::Result<u64> {
        let tail = self.kept()?.audit_tail(1).await.map_err(unanswered)?;
        Ok(tail.last().map_or(0, |e| e.seq))
    }

    fn kept(&self) -> crate::Result<&Store> {
        self.store.as_ref().ok_or_else(|| {
            crate::Error::Internal("this gateway keeps no store, so it has no audit log".to_owned())
        })
    }

    /// Appends `entry`, every string of it through `redact` first when given; durable
    /// when this returns. `None` when the log keeps nothing (no store).
    pub(crate) async fn append(
        &self,
        entry: &airlock_audit::Entry,
        redact: Option<&(dyn Fn(&str) -> String + Sync)>,
    ) -> Result<Option<FeedEvent>, StoreError> {
        let Some(store) = &self.store else {
            return Ok(None);
        };
        let mut fields = serde_json::Value::Object(entry.fields());
        if let Some(redact) = redact {
            redact_strings(&mut fields, redact);
        }
        if let Some(own) = &self.own {
            redact_strings(&mut fields, &|text: &str| own.redact(text).into_owned());
        }
        let serde_json::Value::Object(fields) = fields else {
            return Ok(None);
        };
        let record = Arc::new(store.append_audit(&fields).await?);
        // No reader is no error: the feeds are for whoever listens now.
        let _ = self.here.send(record.clone());
        {
            let mut fed = self.fed.lock().await;
            if let Err(e) = self.carry(store, &mut fed, Some(&record)).await {
                tracing::warn!(error = %e, "could not follow the audit log");
            }
        }
        if let Some(trail) = &self.trail
            && let Err(e) = trail.appended(store, &record).await
        {
            tracing::error!(error = %e, "could not write an audit checkpoint");
        }
        Ok(Some(record))
    }

    /// Signs a checkpoint over the log's tail if it has been quiet a while (or now,
    /// when `force`: at shutdown).
    pub(crate) async fn settle(&self, force: bool) {
        if let (Some(trail), Some(store)) = (&self.trail, &self.store)
            && let Err(e) = trail.settle(store, force).await
        {
            tracing::error!(error = %e, "could not write an audit checkpoint");
        }
    }
}

fn unanswered(e: StoreError) -> crate::Error {
    tracing::error!(error = %e, "the store failed an audit log read");
    crate::Error::Internal("the store could not answer".to_owned())
}

// Every string inside `value`, redacted in place.
pub(crate) fn redact_strings(value: &mut serde_json::Value, redact: &dyn Fn(&str) -> String) {
    match value {
        serde_json::Value::String(text) => *text = redact(text),
        serde_json::Value::Array(items) => {
            for item in items {
                redact_strings(item, redact);
            }
        }
        serde_json::Value::Object(map) => {
            for item in map.values_mut() {
                redact_strings(item, redact);
            }
        }
        _ => {}
    }
}
