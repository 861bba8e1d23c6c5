//! The limit reference for event streams: a bare axum SSE fan-out. `GET /events` sends `ready`,
//! then `changed` whenever `POST /send` is called, through one `tokio::sync::broadcast` channel;
//! nothing else (no session, no database, no conversation). It runs as a process of its own
//! (`bench --sse-reference`), on the server binary's allocator and settings, so its memory can be
//! read from `/proc` as the server's is.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::{get, post};
use axum::Router;
use futures::Stream;
use tokio::sync::broadcast;

/// The flag that makes the bench binary serve the reference instead of measuring.
pub const FLAG: &str = "--sse-reference";

async fn events(State(changes): State<broadcast::Sender<()>>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let receiver = changes.subscribe();
    let stream = futures::stream::unfold((receiver, true), |(mut receiver, first)| async move {
        if first {
            return Some((Ok(Event::default().event("ready").data("")), (receiver, false)));
        }
        match receiver.recv().await {
            Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                Some((Ok(Event::default().event("changed").data("")), (receiver, false)))
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

async fn send(State(changes): State<broadcast::Sender<()>>) {
    let _ = changes.send(());
}

/// Serves until killed; prints `listens on ADDRESS` once it accepts connections. On the references'
/// one setup (`reference_data::serve`: the server's runtime threads, transparent huge pages off,
/// TCP_NODELAY, which the server sets too and without which each event waits for the last one's ACK).
pub fn serve() {
    crate::reference_data::serve(async || {
        let (changes, _) = broadcast::channel(16);
        Router::new().route("/events", get(events)).route("/send", post(send)).with_state(changes)
    });
}
