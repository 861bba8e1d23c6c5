//! Push: `GET /events/conversations/{id}` is a server-sent event stream that says "changed"
//! whenever the conversation may look different, so an open page loads it at once, and carries
//! the pieces of a reply while the model writes it ("piece": draft key, byte offset, text), so
//! the reply grows in place without a reload per piece, and the reply so far rendered as markdown
//! ("html", at most ten times a second, as a change to the one before: `live_html`), since the
//! browser has no markdown parser of its own. Pages poll while the assistant works
//! anyway; the stream only makes updates immediate, so a proxy that buffers streams costs
//! latency, not correctness (a page that misses pieces sees the draft on its next load).
//!
//! Where the change happens and where the page listens may be different processes. On SQLite
//! (one process, or a web process beside one worker whose changes the pages poll for) the fan-out
//! is an in-process channel. On PostgreSQL every change is a `NOTIFY`, and each process keeps one
//! `LISTEN` connection that feeds its own streams; when that connection drops it is made again
//! with a growing pause, and every open page is told to look once, since it may have missed
//! something meanwhile.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use db::{Db, PgConnections};
use futures::stream::{self, Stream};
use serde::{Deserialize, Serialize};
use sqlx::postgres::PgListener;
use tokio::sync::{broadcast, mpsc, watch};

use app::backend::CurrentUser;

use crate::live_html::LiveHtml;
use crate::session_watch::{SessionWatch, IDLE_LOOK};
use crate::store::Store;

pub const PATH: &str = "/events/conversations/{id}";

/// The PostgreSQL channel every process listens on; the payload is the conversation's id. Named by
/// the store, whose guarded writes send it too.
pub(crate) use crate::store::CHANGED_CHANNEL as CHANNEL;
/// The channel of reply pieces; the payload is a [`Piece`] as JSON.
const PIECES: &str = "tourguide_pieces";
/// Sent by the database whenever a job is queued (a trigger on `jobs`, in the queueing
/// transaction); no payload.
const JOBS: &str = "tourguide_jobs";
/// NOTIFY takes at most 8000 bytes; a piece of 3000 stays below that even when JSON doubles every
/// character (newlines, quotes).
const PIECE_PAYLOAD_LIMIT: usize = 3000;
/// Sent to every stream of a process: it may have missed changes (its listener reconnected).
pub(crate) const EVERY: &str = "*";
const FIRST_RETRY: Duration = Duration::from_millis(250);
const LAST_RETRY: Duration = Duration::from_secs(30);

/// Owners remembered per process before the memory starts again (a conversation never changes
/// owner, so what is remembered stays true).
const OWNERS_KEPT: usize = 50_000;

/// Whose each conversation that changed is, so a reader's stream (`waiting_events`) asks the
/// database only the first time.
#[derive(Clone, Default)]
pub struct Owners(Arc<Mutex<HashMap<Arc<str>, i64>>>);

impl Owners {
    pub(crate) fn get(&self, conversation: &str) -> Option<i64> {
        self.0.lock().ok()?.get(conversation).copied()
    }

    pub(crate) fn remember(&self, conversation: Arc<str>, owner: i64) {
        if let Ok(mut owners) = self.0.lock() {
            if owners.len() >= OWNERS_KEPT {
                owners.clear();
            }
            owners.insert(conversation, owner);
        }
    }
}

/// A piece of a reply while the model writes it: `text` goes at byte `offset` of the draft
/// named `draft` (one streamed model turn).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Piece {
    pub conversation: String,
    pub draft: String,
    pub offset: usize,
    pub text: String,
}

/// What reaches a process's streams.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    /// The conversation (or, for [`EVERY`], any) may look different: load it again.
    Changed(Arc<str>),
    Piece(Arc<Piece>),
}

/// Fan-out of "this conversation changed" and of reply pieces. Slow or gone listeners only miss
/// wake-ups, which the page's polling covers; nobody ever waits on a listener.
#[derive(Clone)]
pub struct ConversationEvents {
    sender: broadcast::Sender<Change>,
    /// On PostgreSQL, changes go out as NOTIFY through this queue and come back through LISTEN,
    /// the same way for this process as for every other.
    notify: Option<mpsc::UnboundedSender<Change>>,
    /// Open streams end when the server shuts down; a graceful shutdown waits for every open
    /// connection, and a stream would otherwise keep it waiting for ever.
    shutdown: watch::Receiver<bool>,
    /// Whose each changed conversation is, for the readers' own streams (`waiting_events`).
    owners: Owners,
    /// On PostgreSQL, a job was queued (heard on [`JOBS`]), or may have been while the listener
    /// was away.
    queued: Arc<tokio::sync::Notify>,
}

impl ConversationEvents {
    /// Must be called inside the Tokio runtime: on PostgreSQL it starts the notifier and the
    /// listener of this process. Only a process that runs the worker (`jobs`) listens for queued
    /// jobs: every answer and message queues one, and a web process would be woken by each for
    /// nothing.
    pub fn new(shutdown: watch::Receiver<bool>, db: &Db, jobs: bool) -> Self {
        let sender = broadcast::channel(1024).0;
        let queued = Arc::new(tokio::sync::Notify::new());
        let notify = match db {
            Db::Sqlite(_) => None,
            Db::Postgres(pool) => {
                let (queue, changes) = mpsc::unbounded_channel();
                tokio::spawn(notifier(pool.clone(), changes));
                let heard = Heard { changes: sender.clone(), queued: queued.clone() };
                let channels: &'static [&'static str] =
                    if jobs { &[CHANNEL, PIECES, JOBS] } else { &[CHANNEL, PIECES] };
                tokio::spawn(listener(pool.clone(), heard, channels, shutdown.clone()));
                Some(queue)
            }
        };
        ConversationEvents { sender, notify, shutdown, owners: Default::default(), queued }
    }

    pub fn changed(&self, conversation_id: &str) {
        self.send(Change::Changed(Arc::from(conversation_id)));
    }

    /// Some of `user`'s sessions ended (a sign-out, "end other sessions", a new password): every
    /// process's streams of that user look whether theirs is still open, and end if not.
    pub fn sessions_ended(&self, user: i64) {
        self.changed(&crate::session_watch::sessions_ended_payload(user));
    }

    /// A change its own write announced on PostgreSQL (`store::Then::Announce`, a NOTIFY in the
    /// write's statement); on SQLite it goes out here, as [`Self::changed`].
    pub fn announced(&self, conversation_id: &str) {
        if self.notify.is_none() {
            self.changed(conversation_id);
        }
    }

    pub fn piece(&self, piece: Piece) {
        self.send(Change::Piece(Arc::new(piece)));
    }

    fn send(&self, change: Change) {
        match &self.notify {
            Some(queue) => {
                let _ = queue.send(change);
            }
            None => {
                let _ = self.sender.send(change);
            }
        }
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.sender.subscribe()
    }

    pub(crate) fn shutdown(&self) -> watch::Receiver<bool> {
        self.shutdown.clone()
    }

    pub(crate) fn owners(&self) -> &Owners {
        &self.owners
    }

    /// Told whenever a job is queued, in any process (heard on [`JOBS`]); `None` on SQLite, where
    /// no job is announced.
    pub(crate) fn queued_jobs(&self) -> Option<Arc<tokio::sync::Notify>> {
        self.notify.as_ref().map(|_| self.queued.clone())
    }
}

/// The NOTIFYs of a batch in one statement, in the arrays' order: a function scan of `unnest`
/// gives its rows in order, and the notifications of one transaction reach the listeners in the
/// order they were sent, at its commit (identical ones, a conversation changed twice, as one).
const NOTIFY_BATCH: &str =
    "SELECT pg_notify(t.channel, t.payload) FROM unnest($1::text[], $2::text[]) AS t(channel, payload)";

/// Sends the queued changes as NOTIFY, a batch after the other, so they arrive in order. The
/// changes that queued up while a batch was on its way go out together, in one statement: one
/// round trip per batch, not per change (pieces of one draft joined as well). A failed NOTIFY is
/// only a missed wake-up.
async fn notifier(pool: PgConnections, mut changes: mpsc::UnboundedReceiver<Change>) {
    let mut batch = Vec::new();
    while changes.recv_many(&mut batch, 256).await > 0 {
        let (channels, payloads): (Vec<&str>, Vec<String>) = payloads(std::mem::take(&mut batch)).into_iter().unzip();
        let sent = sqlx::query(NOTIFY_BATCH).bind(channels).bind(payloads).execute(&pool).await;
        if let Err(error) = sent {
            tracing::warn!(%error, "changes could not be announced; open pages will see them when they poll");
        }
    }
}

/// The NOTIFYs for a batch of changes, in order, with consecutive pieces of one draft joined.
fn payloads(batch: Vec<Change>) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    let mut pending: Option<Piece> = None;
    // A piece too long for one NOTIFY (a server that sent its reply in one chunk) goes in parts.
    let flush = |pending: &mut Option<Piece>, out: &mut Vec<(&'static str, String)>| {
        let Some(piece) = pending.take() else { return };
        let mut offset = piece.offset;
        let mut rest = piece.text.as_str();
        while !rest.is_empty() {
            let mut cut = rest.len().min(PIECE_PAYLOAD_LIMIT);
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            let part = Piece {
                conversation: piece.conversation.clone(),
                draft: piece.draft.clone(),
                offset,
                text: rest[..cut].to_string(),
            };
            out.push((PIECES, serde_json::to_string(&part).unwrap_or_default()));
            offset += cut;
            rest = &rest[cut..];
        }
    };
    for change in batch {
        match change {
            Change::Changed(id) => {
                flush(&mut pending, &mut out);
                out.push((CHANNEL, id.to_string()));
            }
            Change::Piece(piece) => {
                let piece = Arc::unwrap_or_clone(piece);
                match &mut pending {
                    Some(joined)
                        if joined.conversation == piece.conversation
                            && joined.draft == piece.draft
                            && joined.offset + joined.text.len() == piece.offset
                            && joined.text.len() + piece.text.len() <= PIECE_PAYLOAD_LIMIT =>
                    {
                        joined.text.push_str(&piece.text);
                    }
                    _ => {
                        flush(&mut pending, &mut out);
                        pending = Some(piece);
                    }
                }
            }
        }
    }
    flush(&mut pending, &mut out);
    out
}

/// Where the listener hands what it hears: the streams' changes, and the worker's wake-up.
struct Heard {
    changes: broadcast::Sender<Change>,
    queued: Arc<tokio::sync::Notify>,
}

/// This process's one LISTEN connection, fanned out to its streams. A dropped connection is made
/// again after a pause that doubles up to half a minute.
async fn listener(
    pool: PgConnections,
    heard: Heard,
    channels: &'static [&'static str],
    mut shutdown: watch::Receiver<bool>,
) {
    let sender = &heard.changes;
    let mut retry = FIRST_RETRY;
    let mut lost = false;
    loop {
        if *shutdown.borrow() {
            return;
        }
        match connect(&pool, channels).await {
            Ok(mut listener) => {
                retry = FIRST_RETRY;
                if lost {
                    tracing::info!("listening for changes again");
                    let _ = sender.send(Change::Changed(Arc::from(EVERY)));
                    heard.queued.notify_one();
                }
                loop {
                    tokio::select! {
                        received = listener.try_recv() => match received {
                            Ok(Some(notification)) if notification.channel() == JOBS => heard.queued.notify_one(),
                            Ok(Some(notification)) => {
                                let change = if notification.channel() == PIECES {
                                    match serde_json::from_str::<Piece>(notification.payload()) {
                                        Ok(piece) => Change::Piece(Arc::new(piece)),
                                        Err(_) => continue,
                                    }
                                } else {
                                    Change::Changed(Arc::from(notification.payload()))
                                };
                                let _ = sender.send(change);
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

async fn connect(pool: &PgConnections, channels: &[&str]) -> Result<PgListener, sqlx::Error> {
    let mut listener = pool.listener().await?;
    listener.listen_all(channels.iter().copied()).await?;
    Ok(listener)
}

pub async fn stream(
    State(store): State<Store>,
    State(events): State<ConversationEvents>,
    user: Option<Extension<CurrentUser>>,
    headers: axum::http::HeaderMap,
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
    let open = crate::telemetry::OpenStream::open();
    let watch = SessionWatch::new(store.clone(), &headers, user.id);
    let events = futures::StreamExt::take_until(changes(events.subscribe(), id, store, watch), until_shutdown);
    // The guard goes with the stream: however the stream ends, dropping it closes the count.
    let events = futures::StreamExt::map(events, move |event| {
        let _ = &open;
        event
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}

/// What one page's stream holds: its conversation, and the reply being written as it renders it.
struct Listening {
    receiver: broadcast::Receiver<Change>,
    id: String,
    store: Store,
    live: LiveHtml,
    /// The stream ends with its session.
    watch: SessionWatch,
}

fn changes(
    receiver: broadcast::Receiver<Change>,
    id: String,
    store: Store,
    watch: SessionWatch,
) -> impl Stream<Item = Result<Event, Infallible>> {
    // Browsers drop an event whose data is empty, so every event carries data.
    let ready_id = id.clone();
    let ready = stream::once(async move { Ok(Event::default().event("ready").data(ready_id)) });
    let listening = Listening { receiver, id, store, live: LiveHtml::default(), watch };
    let changed = stream::unfold(listening, |mut state| async move {
        let event = state.next().await?;
        Some((Ok(event), state))
    });
    futures::StreamExt::chain(ready, changed)
}

impl Listening {
    /// The next event for the page, while its session is open (`None` ends the stream).
    async fn next(&mut self) -> Option<Event> {
        let event = self.next_event().await?;
        self.watch.open(false).await.then_some(event)
    }

    /// The next event for the page: a change, a piece of the reply, or the reply rendered so far
    /// (issue 40: as markdown while it grows) when one is due. `None` when the fan-out closed or
    /// the stream's session ended.
    async fn next_event(&mut self) -> Option<Event> {
        loop {
            let due = self.live.due();
            let received = tokio::select! {
                received = self.receiver.recv() => Some(received),
                _ = tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now)), if due.is_some() => None,
                () = tokio::time::sleep(IDLE_LOOK) => {
                    if !self.watch.open(true).await {
                        return None;
                    }
                    continue;
                }
            };
            let Some(received) = received else {
                match self.rendered().await {
                    Some(event) => return Some(event),
                    None => continue,
                }
            };
            match received {
                Ok(Change::Changed(changed)) if self.watch.concerns(&changed) => {
                    if !self.watch.open(true).await {
                        return None;
                    }
                }
                Ok(Change::Changed(changed)) if *changed == *self.id || &*changed == EVERY => {
                    return Some(Event::default().event("changed").data(self.id.as_str()));
                }
                Ok(Change::Piece(piece)) if piece.conversation == self.id => {
                    self.live.piece(&piece.draft, piece.offset, &piece.text);
                    let data = serde_json::json!({ "draft": piece.draft, "offset": piece.offset, "text": piece.text });
                    return Some(Event::default().event("piece").data(data.to_string()));
                }
                Ok(_) => continue,
                // Missed some: say "changed" to be safe, the page reloads once; and look at the
                // session, since what was missed may have said it ended.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if !self.watch.open(true).await {
                        return None;
                    }
                    return Some(Event::default().event("changed").data(self.id.as_str()));
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The reply rendered so far, as an "html" event, if there is something new to show. A stream
    /// that joined the reply mid-way first reads the text in front from the saved draft; when the
    /// draft is not that far yet, the next piece tries again.
    async fn rendered(&mut self) -> Option<Event> {
        if self.live.behind() {
            match self.store.draft(&self.id).await {
                Ok(Some((key, text))) => self.live.saved(key, text),
                Ok(None) => {}
                Err(error) => tracing::warn!(%error, "the reply so far could not be read for an open page"),
            }
        }
        let rendered = self.live.render()?;
        Some(Event::default().event("html").data(serde_json::to_string(&rendered).ok()?))
    }
}

/// Where a service that ends sessions says so (`None` in a service built without events).
#[derive(Clone, Default)]
pub(crate) struct SessionEnds(Option<ConversationEvents>);

impl SessionEnds {
    pub(crate) fn new(events: ConversationEvents) -> SessionEnds {
        SessionEnds(Some(events))
    }

    /// Some of `user`'s sessions ended: their streams look whether they still may go on.
    pub(crate) fn ended(&self, user: i64) {
        if let Some(events) = &self.0 {
            events.sessions_ended(user);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(draft: &str, offset: usize, text: &str) -> Change {
        Change::Piece(Arc::new(Piece { conversation: "c".into(), draft: draft.into(), offset, text: text.into() }))
    }

    #[test]
    fn consecutive_pieces_of_a_draft_go_out_as_one_notify_and_order_is_kept() {
        let batch = vec![
            piece("d1", 0, "Hel"),
            piece("d1", 3, "lo"),
            Change::Changed(Arc::from("c")),
            piece("d1", 5, "!"),
            piece("d2", 0, "New"),
            piece("d2", 9, "gap"),
        ];
        let sent = payloads(batch);
        let read = |index: usize| serde_json::from_str::<Piece>(&sent[index].1).unwrap();
        assert_eq!(sent.len(), 5, "{sent:?}");
        assert_eq!((read(0).offset, read(0).text.as_str()), (0, "Hello"));
        assert_eq!(sent[1], (CHANNEL, "c".to_string()));
        assert_eq!((read(2).draft.as_str(), read(2).text.as_str()), ("d1", "!"));
        assert_eq!((read(3).draft.as_str(), read(3).text.as_str()), ("d2", "New"));
        assert_eq!((read(4).offset, read(4).text.as_str()), (9, "gap"));
    }

    /// Changes queued while a batch was on its way go out in one round trip, and the listeners
    /// hear them in the order they were queued (PostgreSQL only).
    #[tokio::test]
    async fn a_batch_of_changes_is_one_round_trip_heard_in_order() {
        let Some(url) = db::scratch_postgres().await.unwrap() else { return };
        let proxy = db::RoundTrips::proxy(&url).await.unwrap();
        let Db::Postgres(pool) = Db::open_postgres(&proxy.url(&url)).await.unwrap() else { unreachable!() };
        let mut heard = PgListener::connect(&url).await.unwrap();
        heard.listen_all([CHANNEL, PIECES]).await.unwrap();
        let (queue, changes) = mpsc::unbounded_channel();
        for change in [
            Change::Changed(Arc::from("a")),
            piece("d", 0, "Hel"),
            piece("d", 3, "lo"),
            Change::Changed(Arc::from("b")),
            Change::Changed(Arc::from("a")),
        ] {
            queue.send(change).unwrap();
        }
        proxy.settle().await;
        let before = proxy.count();
        tokio::spawn(notifier(pool.clone(), changes));
        let mut order = Vec::new();
        loop {
            let wait = Duration::from_millis(if order.len() < 3 { 5000 } else { 300 });
            let Ok(notification) = tokio::time::timeout(wait, heard.recv()).await else { break };
            let notification = notification.unwrap();
            order.push(match notification.channel() {
                PIECES => serde_json::from_str::<Piece>(notification.payload()).unwrap().text,
                _ => notification.payload().to_string(),
            });
        }
        // "a" changed again after "b": one "a" at the commit, after both changes were made, is
        // all a reader needs (PostgreSQL sends a transaction's identical notifications once).
        assert_eq!(order, ["a", "Hello", "b"]);
        proxy.settle().await;
        // One statement, and its prepare on the connection's first use of it; one each, 5.
        assert!(proxy.count() - before <= 2, "the batch's NOTIFYs in one statement: {}", proxy.count() - before);
    }

    #[test]
    fn a_piece_too_long_for_one_notify_goes_in_parts_that_follow_on() {
        let long = "ü".repeat(PIECE_PAYLOAD_LIMIT);
        let sent = payloads(vec![piece("d", 7, &long)]);
        assert!(sent.len() >= 2);
        let mut offset = 7;
        let mut text = String::new();
        for (channel, payload) in &sent {
            assert_eq!(*channel, PIECES);
            assert!(payload.len() < 8000, "{}", payload.len());
            let part: Piece = serde_json::from_str(payload).unwrap();
            assert_eq!(part.offset, offset);
            offset += part.text.len();
            text.push_str(&part.text);
        }
        assert_eq!(text, long);
    }
}
