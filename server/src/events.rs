//! Push: `GET /events/conversations/{id}` is a server-sent event stream that says "changed"
//! whenever the conversation may look different, so an open page loads it at once. Pages poll
//! while the assistant works anyway; the stream only makes updates immediate, so a proxy that
//! buffers streams costs latency, not correctness.
//!
//! Where the change happens and where the page listens may be different processes. On SQLite
//! (one process, or a web process beside one worker whose changes the pages poll for) the fan-out
//! is an in-process channel. On PostgreSQL every change is a `NOTIFY`, and each process keeps one
//! `LISTEN` connection that feeds its own streams; when that connection drops it is made again
//! with a growing pause, and every open page is told to look once, since it may have missed
//! something meanwhile.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use db::Db;
use futures::stream::{self, Stream};
use sqlx::postgres::{PgListener, PgPool};
use tokio::sync::{broadcast, mpsc, watch};

use app::backend::CurrentUser;

use crate::store::Store;

pub const PATH: &str = "/events/conversations/{id}";

/// The PostgreSQL channel every process listens on; the payload is the conversation's id.
const CHANNEL: &str = "tourguide_changed";
/// Sent to every stream of a process: it may have missed changes (its listener reconnected).
const EVERY: &str = "*";
const FIRST_RETRY: Duration = Duration::from_millis(250);
const LAST_RETRY: Duration = Duration::from_secs(30);

/// Fan-out of "this conversation changed". Slow or gone listeners only miss wake-ups, which the
/// page's polling covers; nobody ever waits on a listener.
#[derive(Clone)]
pub struct ConversationEvents {
    sender: broadcast::Sender<Arc<str>>,
    /// On PostgreSQL, changes go out as NOTIFY through this queue and come back through LISTEN,
    /// the same way for this process as for every other.
    notify: Option<mpsc::UnboundedSender<Arc<str>>>,
    /// Open streams end when the server shuts down; a graceful shutdown waits for every open
    /// connection, and a stream would otherwise keep it waiting for ever.
    shutdown: watch::Receiver<bool>,
}

impl ConversationEvents {
    /// Must be called inside the Tokio runtime: on PostgreSQL it starts the notifier and the
    /// listener of this process.
    pub fn new(shutdown: watch::Receiver<bool>, db: &Db) -> Self {
        let sender = broadcast::channel(256).0;
        let notify = match db {
            Db::Sqlite(_) => None,
            Db::Postgres(pool) => {
                let (queue, changes) = mpsc::unbounded_channel();
                tokio::spawn(notifier(pool.clone(), changes));
                tokio::spawn(listener(pool.clone(), sender.clone(), shutdown.clone()));
                Some(queue)
            }
        };
        ConversationEvents { sender, notify, shutdown }
    }

    pub fn changed(&self, conversation_id: &str) {
        match &self.notify {
            Some(queue) => {
                let _ = queue.send(Arc::from(conversation_id));
            }
            None => {
                let _ = self.sender.send(Arc::from(conversation_id));
            }
        }
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.sender.subscribe()
    }

    /// Wakes `worker` on every change that reaches this process. On PostgreSQL a web process
    /// records work and announces it; this is how a worker in another process hears of it at
    /// once instead of at its next idle look.
    pub fn wake_on_changes(&self, worker: crate::worker::WorkerHandle) {
        if self.notify.is_none() {
            return;
        }
        let mut changes = self.subscribe();
        let mut shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    change = changes.recv() => match change {
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => worker.wake(),
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                    _ = shutdown.changed() => return,
                }
            }
        });
    }
}

/// Sends the queued changes as NOTIFY, one after the other, so they arrive in order. A failed
/// NOTIFY is only a missed wake-up.
async fn notifier(pool: PgPool, mut changes: mpsc::UnboundedReceiver<Arc<str>>) {
    while let Some(id) = changes.recv().await {
        let sent = sqlx::query("SELECT pg_notify($1, $2)").bind(CHANNEL).bind(&*id).execute(&pool).await;
        if let Err(error) = sent {
            tracing::warn!(%error, "a change could not be announced; open pages will see it when they poll");
        }
    }
}

/// This process's one LISTEN connection, fanned out to its streams. A dropped connection is made
/// again after a pause that doubles up to half a minute.
async fn listener(pool: PgPool, sender: broadcast::Sender<Arc<str>>, mut shutdown: watch::Receiver<bool>) {
    let mut retry = FIRST_RETRY;
    let mut lost = false;
    loop {
        if *shutdown.borrow() {
            return;
        }
        match connect(&pool).await {
            Ok(mut listener) => {
                retry = FIRST_RETRY;
                if lost {
                    tracing::info!("listening for changes again");
                    let _ = sender.send(Arc::from(EVERY));
                }
                loop {
                    tokio::select! {
                        received = listener.try_recv() => match received {
                            Ok(Some(notification)) => {
                                let _ = sender.send(Arc::from(notification.payload()));
                            }
                            Ok(None) => {
                                tracing::warn!("the connection that listens for changes was lost");
                                break;
                            }
                            Err(error) => {
                                tracing::warn!(%error, "listening for changes failed");
                                break;
                            }
                        },
                        _ = shutdown.changed() => return,
                    }
                }
            }
            Err(error) => tracing::warn!(%error, retry_in = ?retry, "cannot listen for changes"),
        }
        lost = true;
        tokio::select! {
            _ = tokio::time::sleep(retry) => {}
            _ = shutdown.changed() => return,
        }
        retry = (retry * 2).min(LAST_RETRY);
    }
}

async fn connect(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

pub async fn stream(
    State(store): State<Store>,
    State(events): State<ConversationEvents>,
    user: Option<Extension<CurrentUser>>,
    Path(id): Path<String>,
) -> Response {
    let Some(Extension(user)) = user else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    match store.conversation_of(user.id, &id).await {
        Ok(Some(_)) => {}
        Ok(None) => return StatusCode::NOT_FOUND.into_response(),
        Err(error) => {
            tracing::error!(%error, "store failure");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    }
    let mut shutdown = events.shutdown.clone();
    let until_shutdown = async move {
        let _ = shutdown.wait_for(|stopped| *stopped).await;
    };
    Sse::new(futures::StreamExt::take_until(changes(events.subscribe(), id), until_shutdown))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

fn changes(receiver: broadcast::Receiver<Arc<str>>, id: String) -> impl Stream<Item = Result<Event, Infallible>> {
    // Browsers drop an event whose data is empty, so every event carries the conversation id.
    let ready_id = id.clone();
    let ready = stream::once(async move { Ok(Event::default().event("ready").data(ready_id)) });
    let changed = stream::unfold((receiver, id), |(mut receiver, id)| async move {
        loop {
            match receiver.recv().await {
                Ok(changed) if *changed == *id || &*changed == EVERY => {
                    return Some((Ok(Event::default().event("changed").data(id.as_str())), (receiver, id)));
                }
                Ok(_) => continue,
                // Missed some: say "changed" to be safe, the page reloads once.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    return Some((Ok(Event::default().event("changed").data(id.as_str())), (receiver, id)));
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    futures::StreamExt::chain(ready, changed)
}
