//! An open event stream lives as long as the session it was opened with: sign-out, "end other
//! sessions", a password change, a lock or a removed account close it, instead of leaving it
//! streaming the conversation's changes and its reply. Whatever ends sessions says so through the
//! events (`ConversationEvents::sessions_ended`, heard by every process); a stream then looks at
//! once whether its own is still there. It also looks before it sends anything, at most every few
//! seconds, and when idle every half minute, which catches what ends sessions without saying so
//! (the operator's command line on SQLite, a session's own expiry).

use std::time::{Duration, Instant};

use axum::http::HeaderMap;

use crate::store::Store;

/// How long a look at the session counts for before a stream sends an event.
const LOOKED_FOR: Duration = Duration::from_secs(5);
/// How often an idle stream looks.
pub(crate) const IDLE_LOOK: Duration = Duration::from_secs(30);

/// The change that says some sessions of a user ended.
const SESSIONS_ENDED: &str = "sessions-ended:";

/// What a change says sessions of `user` ended carries as its payload.
pub(crate) fn sessions_ended_payload(user: i64) -> String {
    format!("{SESSIONS_ENDED}{user}")
}

/// Whether a change's payload says sessions ended (of anyone: not a conversation's id).
pub(crate) fn is_sessions_ended(payload: &str) -> bool {
    payload.starts_with(SESSIONS_ENDED)
}

pub(crate) struct SessionWatch {
    store: Store,
    /// The hash of the stream's session token; `None` (no cookie) is no session.
    token_hash: Option<String>,
    user: i64,
    looked: Instant,
}

impl SessionWatch {
    pub(crate) fn new(store: Store, headers: &HeaderMap, user: i64) -> SessionWatch {
        let token_hash = app::backend::session_token_in(headers).map(|token| crate::auth::token_hash(&token));
        SessionWatch { store, token_hash, user, looked: Instant::now() }
    }

    /// Whether a change (its payload) says some of this stream's user's sessions ended.
    pub(crate) fn concerns(&self, payload: &str) -> bool {
        payload == sessions_ended_payload(self.user)
    }

    /// Whether the session is still open: looked up now when `now`, else when the last look is
    /// older than a few seconds. A store that cannot answer does not end a stream.
    pub(crate) async fn open(&mut self, now: bool) -> bool {
        if !now && self.looked.elapsed() < LOOKED_FOR {
            return true;
        }
        self.looked = Instant::now();
        let Some(hash) = &self.token_hash else { return false };
        match self.store.session_open(hash, self.user).await {
            Ok(open) => open,
            Err(error) => {
                tracing::warn!(%error, "a stream's session could not be looked up; it stays open");
                true
            }
        }
    }
}
