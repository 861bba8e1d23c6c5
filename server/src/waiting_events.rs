//! `GET /events/user`: the reader's own event stream. It says "waiting", with how many runs wait
//! for the reader (the header's count, `store::waiting`), when the stream opens and whenever that
//! number or the set of runs changes, so every open page shows it at once and an open inbox loads
//! again; when the count went up it names the run that began to wait last (a notification).
//!
//! Nothing new announces it: a run starts or stops waiting only with a change of its
//! conversation, and every such change already reaches every process as "changed" (`events`,
//! NOTIFY on PostgreSQL, whichever process made it). A stream counts again on a change of one of
//! the reader's conversations, or for a reviewer of another owner's, a few together as one.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use app::backend::CurrentUser;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use futures::stream::{self, Stream};
use tokio::sync::broadcast;

use crate::chat::waiting_view;
use crate::events::{Change, ConversationEvents, Owners, EVERY};
use crate::session_watch::{is_sessions_ended, SessionWatch, IDLE_LOOK};
use crate::store::{Store, WaitingCount};

pub const PATH: &str = "/events/user";

/// Changes that come this soon after the one a stream heard are counted with it.
const GATHER: Duration = Duration::from_millis(50);
pub async fn stream(
    State(store): State<Store>,
    State(events): State<ConversationEvents>,
    user: Option<Extension<CurrentUser>>,
    headers: HeaderMap,
) -> Response {
    let Some(Extension(user)) = user else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let mut shutdown = events.shutdown();
    let until_shutdown = async move {
        let _ = shutdown.wait_for(|stopped| *stopped).await;
    };
    let open = crate::telemetry::OpenStream::open();
    let reader = Reader {
        changes: events.subscribe(),
        owners: events.owners().clone(),
        watch: SessionWatch::new(store.clone(), &headers, user.id),
        store,
        user: user.id,
        reviews: user.reviews(),
        last: None,
    };
    let events = futures::StreamExt::take_until(counts(reader), until_shutdown);
    // The guard goes with the stream: however the stream ends, dropping it closes the count.
    let events = futures::StreamExt::map(events, move |event| {
        let _ = &open;
        event
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}

struct Reader {
    changes: broadcast::Receiver<Change>,
    owners: Owners,
    /// The stream ends with its session.
    watch: SessionWatch,
    store: Store,
    user: i64,
    reviews: bool,
    /// What this stream sent last; `None` before the first.
    last: Option<WaitingCount>,
}

fn counts(reader: Reader) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(reader, |mut reader| async move {
        let event = reader.next().await?;
        Some((Ok(event), reader))
    })
}

impl Reader {
    /// The next "waiting" event: at once for the first, then after a change that moves the count.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if self.last.is_some() {
                self.changed().await?;
            }
            let now = match self.store.waiting_count(self.user, self.reviews).await {
                Ok(now) => now,
                Err(error) => {
                    tracing::warn!(%error, "cannot count the runs that wait for a reader");
                    // The next change tries again; the page keeps the count it shows.
                    self.last.get_or_insert(WaitingCount { count: -1, mark: String::new() });
                    continue;
                }
            };
            if self.last.as_ref() == Some(&now) {
                continue;
            }
            let rose = self.last.as_ref().is_some_and(|last| last.count >= 0 && now.count > last.count);
            let latest = if rose {
                self.store.latest_waiting(self.user, self.reviews).await.unwrap_or_else(|error| {
                    tracing::warn!(%error, "cannot read the run that began to wait");
                    None
                })
            } else {
                None
            };
            self.last = Some(now.clone());
            if !self.watch.open(false).await {
                return None;
            }
            let data = serde_json::to_string(&waiting_view(now, latest)).unwrap_or_default();
            return Some(Event::default().event("waiting").data(data));
        }
    }

    /// Waits for a change that may move the reader's count, then gathers the ones right behind
    /// it. `None` once the server's changes end.
    async fn changed(&mut self) -> Option<()> {
        loop {
            let received = tokio::select! {
                received = self.changes.recv() => received,
                () = tokio::time::sleep(IDLE_LOOK) => {
                    if !self.watch.open(true).await {
                        return None;
                    }
                    continue;
                }
            };
            match received {
                // Sessions ended: this stream's, perhaps; nobody's count moved.
                Ok(Change::Changed(payload)) if is_sessions_ended(&payload) => {
                    if self.watch.concerns(&payload) && !self.watch.open(true).await {
                        return None;
                    }
                }
                Ok(Change::Changed(conversation)) => {
                    if self.concerns(conversation).await {
                        break;
                    }
                }
                Ok(Change::Piece(_)) => {}
                // Missed some: count again to be safe, and look at the session (what was missed
                // may have said it ended).
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if !self.watch.open(true).await {
                        return None;
                    }
                    break;
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
        tokio::time::sleep(GATHER).await;
        // The changes gathered are counted together; a session's end among them is not passed over.
        let mut look = false;
        loop {
            match self.changes.try_recv() {
                Ok(Change::Changed(payload)) if self.watch.concerns(&payload) => look = true,
                Ok(_) => {}
                Err(broadcast::error::TryRecvError::Lagged(_)) => look = true,
                Err(_) => break,
            }
        }
        if look && !self.watch.open(true).await {
            return None;
        }
        Some(())
    }

    /// Whether a change of this conversation may move the count: it is the reader's, or another
    /// owner's whose card a reviewer may approve. A conversation gone (deleted) or unreadable
    /// may have been the reader's.
    async fn concerns(&self, conversation: Arc<str>) -> bool {
        if *conversation == *EVERY {
            return true;
        }
        let owner = match self.owners.get(&conversation) {
            Some(owner) => owner,
            None => match self.store.conversation(&conversation).await {
                Ok(Some(row)) => {
                    self.owners.remember(conversation, row.user_id);
                    row.user_id
                }
                Ok(None) | Err(_) => return true,
            },
        };
        owner == self.user || self.reviews
    }
}
