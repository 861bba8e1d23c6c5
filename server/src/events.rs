//! Push: `GET /events/conversations/{id}` is a server-sent event stream that says "changed"
//! whenever the conversation may look different, so an open page loads it at once. Pages poll
//! while the assistant works anyway; the stream only makes updates immediate, so a proxy that
//! buffers streams costs latency, not correctness.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use futures::stream::{self, Stream};
use tokio::sync::{broadcast, watch};

use app::backend::CurrentUser;

use crate::store::Store;

pub const PATH: &str = "/events/conversations/{id}";

/// Fan-out of "this conversation changed". Slow or gone listeners only miss wake-ups, which the
/// page's polling covers; nobody ever waits on a listener.
#[derive(Clone)]
pub struct ConversationEvents {
    sender: broadcast::Sender<Arc<str>>,
    /// Open streams end when the server shuts down; a graceful shutdown waits for every open
    /// connection, and a stream would otherwise keep it waiting for ever.
    shutdown: watch::Receiver<bool>,
}

impl ConversationEvents {
    pub fn new(shutdown: watch::Receiver<bool>) -> Self {
        ConversationEvents { sender: broadcast::channel(256).0, shutdown }
    }

    pub fn changed(&self, conversation_id: &str) {
        let _ = self.sender.send(Arc::from(conversation_id));
    }

    fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.sender.subscribe()
    }
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
                Ok(changed) if *changed == *id => {
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
