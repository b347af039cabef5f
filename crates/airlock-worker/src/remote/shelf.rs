//! A worker's shelf: every session it runs, how many connections hold each, and the
//! places for new ones (`--sessions`, `--exit-after`, draining).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_browser::{Error, Result};

use super::{Admission, lock};
use crate::local::LocalSession;
use crate::proto::{AttachKey, Load};

/// Every session of a worker, with how many connections hold each, and the places
/// for new ones.
pub(super) struct Shelf {
    sessions: Mutex<HashMap<String, Shelved>>,
    grace: Duration,
    max_sessions: Option<usize>,
    exit_after: Option<usize>,
    places: Mutex<Places>,
    // Sessions held or being opened, for whoever waits for the worker to empty.
    pub(super) load: tokio::sync::watch::Sender<usize>,
    // What it refused, for the audit record.
    pub(super) refusals: super::refusals::Refusals,
    // Its sessions' requests waiting for a signature.
    pub(super) asks: Arc<super::signing::Asks>,
}

#[derive(Default)]
struct Places {
    opening: usize,
    opened: usize,
    draining: bool,
}

struct Shelved {
    session: Arc<LocalSession>,
    // What a connection that did not open it shows to attach.
    key: AttachKey,
    holders: usize,
    // Bumped at each release to none: a grace timer acts only on its own release.
    released: u64,
}

// A place taken for a session being opened; given back when dropped.
pub(super) struct Place<'a>(&'a Shelf);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        lock(&self.0.places).opening -= 1;
        self.0.publish();
    }
}

impl Shelf {
    pub(super) fn new(admission: &Admission) -> Shelf {
        Shelf {
            sessions: Mutex::default(),
            grace: admission.detached_grace,
            max_sessions: admission.max_sessions,
            exit_after: admission.exit_after,
            places: Mutex::default(),
            load: tokio::sync::watch::Sender::new(0),
            refusals: Default::default(),
            asks: Arc::default(),
        }
    }

    // A place for one more session, or why there is none.
    pub(super) fn admit(&self) -> Result<Place<'_>> {
        let held = lock(&self.sessions).len();
        let mut places = lock(&self.places);
        let refuse = |reason: String| Err(Error::BrowserUnavailable { reason });
        if places.draining {
            return refuse("this browser worker is stopping and takes no new session".to_owned());
        }
        if let Some(n) = self.exit_after
            && places.opened + places.opening >= n
        {
            return refuse(format!(
                "this browser worker serves {n} session(s) and then exits"
            ));
        }
        if let Some(most) = self.max_sessions
            && held + places.opening >= most
        {
            return refuse(format!(
                "this browser worker holds {most} session(s), the most it takes"
            ));
        }
        places.opening += 1;
        drop(places);
        self.publish();
        Ok(Place(self))
    }

    pub(super) fn drain(&self) {
        lock(&self.places).draining = true;
    }

    pub(super) fn load(&self) -> Load {
        let held = lock(&self.sessions).len();
        let places = lock(&self.places);
        let spent = self
            .exit_after
            .is_some_and(|n| places.opened + places.opening >= n);
        Load {
            sessions: (held + places.opening) as u64,
            capacity: self.max_sessions.map(|n| n as u64),
            closed: places.draining || spent,
            free_mib: airlock_browser::host::memory().map_or(0, |m| m.available_mib),
        }
    }

    // Served all the sessions it was to serve.
    pub(super) fn spent(&self) -> bool {
        self.exit_after
            .is_some_and(|n| lock(&self.places).opened >= n)
    }

    pub(super) fn publish(&self) {
        let load = lock(&self.sessions).len() + lock(&self.places).opening;
        self.load.send_replace(load);
    }

    pub(super) fn put(&self, _place: Place<'_>, id: String, key: AttachKey, session: LocalSession) {
        lock(&self.places).opened += 1;
        lock(&self.sessions).insert(
            id,
            Shelved {
                session: Arc::new(session),
                key,
                holders: 1,
                released: 0,
            },
        );
    }

    // Whether a session of that id is on the shelf.
    pub(super) fn has(&self, id: &str) -> bool {
        lock(&self.sessions).contains_key(id)
    }

    pub(super) fn get(&self, id: &str) -> Result<Arc<LocalSession>> {
        lock(&self.sessions)
            .get(id)
            .map(|s| s.session.clone())
            .ok_or(Error::SessionClosed)
    }

    // One holder more, when `key` is the session's: a wrong key is answered as a
    // session that is not there, so a guess learns nothing.
    pub(super) fn hold(&self, id: &str, key: &AttachKey) -> Result<Arc<LocalSession>> {
        let mut sessions = lock(&self.sessions);
        let shelved = sessions
            .get_mut(id)
            .filter(|s| s.key.matches(key))
            .ok_or(Error::SessionClosed)?;
        shelved.holders += 1;
        Ok(shelved.session.clone())
    }

    pub(super) fn take(&self, id: &str) -> Option<Arc<LocalSession>> {
        let taken = lock(&self.sessions).remove(id).map(|s| s.session);
        self.publish();
        taken
    }

    // One holder fewer; with none left the session is closed, now or after the
    // grace unless someone attaches first.
    pub(super) async fn release(self: &Arc<Self>, id: &str) {
        let generation = {
            let mut sessions = lock(&self.sessions);
            let Some(shelved) = sessions.get_mut(id) else {
                return;
            };
            shelved.holders = shelved.holders.saturating_sub(1);
            if shelved.holders > 0 {
                return;
            }
            shelved.released += 1;
            shelved.released
        };
        if self.grace.is_zero() {
            if let Some(session) = self.take(id) {
                session.close().await;
            }
            return;
        }
        let shelf = self.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(shelf.grace).await;
            let unheld = {
                let mut sessions = lock(&shelf.sessions);
                match sessions.get(&id) {
                    Some(s) if s.holders == 0 && s.released == generation => {
                        sessions.remove(&id).map(|s| s.session)
                    }
                    _ => None,
                }
            };
            shelf.publish();
            if let Some(session) = unheld {
                tracing::info!("no control plane took over a session in time: closing it");
                session.close().await;
            }
        });
    }

    pub(super) async fn close_all(&self) {
        let sessions: Vec<_> = lock(&self.sessions)
            .drain()
            .map(|(_, s)| s.session)
            .collect();
        self.publish();
        for session in sessions {
            session.close().await;
        }
    }
}
