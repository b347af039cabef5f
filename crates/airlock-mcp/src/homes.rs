//! Stateful MCP sessions (`Mcp-Session-Id`, the 2025-11-25 era) that any replica
//! serves. rmcp keeps a session's running service in one process's memory; on a
//! shared store Airlock also keeps what it takes to make that service again
//! elsewhere, in the session's home (`airlock_gateway::homes`): the client's
//! `initialize` parameters, whose session it is and the nonce it was told. A request
//! that reaches a replica without the session in memory has rmcp replay the
//! handshake from the home ([`HomeStore`]); the agent then finds its browser session
//! by the home and adopts it. A `DELETE` on any replica ends the home, and every
//! other replica answers 404 from then on ([`Sessions::has_session`]). Only the
//! caller that began a session may end it ([`Sessions::owns`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use airlock_core::sync::lock;
use airlock_gateway::{Gateway, Principal, mcp_home};
use futures_util::Stream;
use rmcp::model::GetExtensions as _;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionState, SessionStore,
    SessionStoreError,
};
use rmcp::transport::streamable_http_server::{SessionManager, SessionRestoreMarker};

/// Longest `Mcp-Session-Id` looked up in the store (rmcp's are UUIDs).
const MAX_ID_CHARS: usize = 128;

/// Marks the `initialize` request of a session this replica just created, with its
/// id: the handler makes the session's home then.
#[derive(Debug, Clone)]
pub(crate) struct NewSession(pub(crate) SessionId);

/// rmcp's in-memory sessions, told apart from those a client ended through another
/// replica, with the caller each belongs to.
pub struct Sessions {
    local: LocalSessionManager,
    gateway: Arc<Gateway>,
    // Who began each session held here ([`Principal::caller`]).
    owners: Mutex<HashMap<SessionId, String>>,
    // What a call waiting on a human in a session watches for its end: told the
    // moment a `DELETE` ends it (rmcp stops the session's service only later).
    ending: Mutex<HashMap<String, tokio::sync::watch::Sender<bool>>>,
}

impl Sessions {
    pub(crate) fn new(gateway: &Arc<Gateway>) -> Sessions {
        Sessions {
            local: LocalSessionManager::default(),
            gateway: gateway.clone(),
            owners: Mutex::default(),
            ending: Mutex::default(),
        }
    }

    /// Turns true when session `id` is ended here.
    pub(crate) fn ending(&self, id: &str) -> tokio::sync::watch::Receiver<bool> {
        let mut ending = lock(&self.ending);
        // Sessions that ended without a word from here (idle, the transport) hold
        // nothing once their calls are done.
        ending.retain(|_, tell| tell.receiver_count() > 0);
        ending
            .entry(id.to_owned())
            .or_insert_with(|| tokio::sync::watch::Sender::new(false))
            .subscribe()
    }

    /// Whether the session `id` is there and `caller` began it (so may use it, and
    /// end it with `DELETE`). Another caller's session and no session at all answer
    /// alike, and take alike: both ask the store, so neither what comes back nor
    /// how soon says whether an id is someone's.
    pub async fn owns(&self, id: &str, caller: &Principal) -> bool {
        let held = lock(&self.owners).get(id).cloned();
        if held.as_deref() == Some(caller.caller().as_str()) {
            return true;
        }
        let home = self.gateway.find_home(&mcp_home(id)).await;
        match (held, home) {
            (Some(_), _) => false,
            (None, Ok(Some(home))) => home.owner == caller.caller(),
            // Nothing is served or ended on a guess.
            (None, Ok(None) | Err(_)) => false,
        }
    }

    // Who `message` (an `initialize`, or rmcp's replay of one) makes `id`'s owner:
    // the caller that sent it, or for a session made again here, its home's owner.
    async fn owner_of(&self, id: &SessionId, message: &ClientJsonRpcMessage) -> Option<String> {
        let rmcp::model::JsonRpcMessage::Request(request) = message else {
            return None;
        };
        let extensions = request.request.extensions();
        if extensions.get::<SessionRestoreMarker>().is_some() {
            return match self.gateway.find_home(&mcp_home(id)).await {
                Ok(home) => home.map(|h| h.owner),
                Err(_) => None,
            };
        }
        let parts = extensions.get::<http::request::Parts>()?;
        parts.extensions.get::<Principal>().map(Principal::caller)
    }
}

impl SessionManager for Sessions {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    fn create_session(
        &self,
    ) -> impl Future<Output = Result<(SessionId, Self::Transport), Self::Error>> + Send {
        self.local.create_session()
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        if let Some(owner) = self.owner_of(id, &message).await {
            // Sessions rmcp let go of (idle past its keep-alive) go from here too.
            let held = self.local.sessions.read().await;
            let mut owners = lock(&self.owners);
            owners.retain(|known, _| held.contains_key(known));
            owners.insert(id.clone(), owner);
        }
        message.insert_extension(NewSession(id.clone()));
        self.local.initialize_session(id, message).await
    }

    // In memory here, and (on a shared store) not ended through another replica: an
    // ended one goes from memory too, and rmcp answers 404.
    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        if !self.local.has_session(id).await? {
            return Ok(false);
        }
        if !self.gateway.has_homes() {
            return Ok(true);
        }
        match self.gateway.find_home(&mcp_home(id)).await {
            Ok(Some(_)) => Ok(true),
            Ok(None) => {
                self.close_session(id).await?;
                Ok(false)
            }
            // The store does not answer: what this replica holds still serves.
            Err(_) => Ok(true),
        }
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.owners).remove(id);
        if let Some(tell) = lock(&self.ending).remove(id.as_ref()) {
            tell.send_replace(true);
        }
        self.local.close_session(id).await
    }

    fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.local.create_stream(id, message)
    }

    fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.local.accept_message(id, message)
    }

    fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.local.create_standalone_stream(id)
    }

    fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.local.resume(id, last_event_id)
    }

    fn restore_session(
        &self,
        id: SessionId,
    ) -> impl Future<Output = Result<RestoreOutcome<Self::Transport>, Self::Error>> + Send {
        self.local.restore_session(id)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.local.event_store()
    }
}

/// What rmcp keeps of a session for another replica to make it again: the client's
/// `initialize` parameters, in the session's home.
pub(crate) struct HomeStore(pub(crate) Arc<Gateway>);

#[async_trait::async_trait]
impl SessionStore for HomeStore {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        if session_id.is_empty() || session_id.len() > MAX_ID_CHARS {
            return Ok(None);
        }
        let Some(home) = self.0.find_home(&mcp_home(session_id)).await? else {
            return Ok(None);
        };
        // A home whose parameters were never written cannot be made again.
        match home.state {
            Some(state) => Ok(Some(serde_json::from_str(&state)?)),
            None => Ok(None),
        }
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let state = serde_json::to_string(state)?;
        Ok(self.0.set_home_state(&mcp_home(session_id), &state).await?)
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self.0.end_home(&mcp_home(session_id)).await?)
    }
}
