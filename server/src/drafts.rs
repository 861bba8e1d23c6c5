//! A reply while the model writes it. The runtime hands this process's worker every piece of a
//! model turn's text; each piece goes out at once to the open pages (an event with the draft's
//! key and the piece's byte offset) and the text so far goes to the database a few times a
//! second, so a page opened mid-stream, in any web process, starts from it and then follows.
//! The finished reply is recorded once, whole, by the turn that settles it; the draft is dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use runtime::RunTextObserver;
use tokio::sync::Notify;
use uuid::Uuid;

use crate::events::{ConversationEvents, Piece};
use crate::store::Store;

/// How often the text so far is written while pieces arrive. A page opened mid-stream misses at
/// most about this much, and loads again when the first piece it hears does not fit.
const SAVE_EVERY: Duration = Duration::from_millis(200);

#[derive(Clone)]
pub struct Drafts {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    events: ConversationEvents,
    dirty: Notify,
    store: Store,
}

#[derive(Default)]
struct State {
    /// Which conversation a run this worker carries belongs to.
    routes: HashMap<Uuid, String>,
    /// The current turn's text, per run.
    drafts: HashMap<Uuid, Draft>,
}

struct Draft {
    conversation: String,
    key: String,
    text: String,
    /// How much of `text` the database has.
    saved: usize,
}

impl Drafts {
    /// Starts the writer; must be called inside the Tokio runtime.
    pub fn new(store: Store, events: ConversationEvents) -> Self {
        let inner =
            Arc::new(Inner { state: Mutex::new(State::default()), events, dirty: Notify::new(), store: store.clone() });
        tokio::spawn(writer(inner.clone(), store));
        Drafts { inner }
    }

    /// The worker is about to carry `run_id` for `conversation_id`.
    pub fn follow(&self, run_id: Uuid, conversation_id: &str) {
        self.inner.lock().routes.insert(run_id, conversation_id.to_string());
    }

    /// Writes what `run_id` has said so far now, if this process carries it: a Stop records the text
    /// the reader saw, not the last periodic save.
    pub async fn save_now(&self, run_id: Uuid) {
        let current = {
            let state = self.inner.lock();
            state.drafts.get(&run_id).map(|draft| (draft.conversation.clone(), draft.key.clone(), draft.text.clone()))
        };
        let Some((conversation, key, text)) = current else { return };
        if let Err(error) = self.inner.store.save_draft(&conversation, &key, &text).await {
            tracing::warn!(%error, "a reply's text so far could not be saved before a stop");
        }
    }

    /// The worker is done with the conversation for now: whatever it followed for it goes.
    pub fn forget(&self, conversation_id: &str) {
        let mut state = self.inner.lock();
        state.routes.retain(|_, conversation| conversation != conversation_id);
        state.drafts.retain(|_, draft| draft.conversation != conversation_id);
    }

    /// The worker is done with `run_id` for now: the text its last turn got to, if any.
    pub fn finish(&self, run_id: Uuid) -> Option<String> {
        let mut state = self.inner.lock();
        state.routes.remove(&run_id);
        state.drafts.remove(&run_id).map(|draft| draft.text)
    }
}

impl Inner {
    /// A poisoned lock only means a panic elsewhere mid-update of plain maps; the maps stay usable.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl RunTextObserver for Drafts {
    fn begin(&self, run_id: Uuid, round: u32) {
        let mut state = self.inner.lock();
        let Some(conversation) = state.routes.get(&run_id).cloned() else { return };
        // A retried turn streams again from the start: a fresh key tells pages to start over.
        let key = format!("{run_id}.{round}.{}", Uuid::new_v4().simple());
        state.drafts.insert(run_id, Draft { conversation, key, text: String::new(), saved: 0 });
    }

    fn text(&self, run_id: Uuid, delta: &str) {
        let piece = {
            let mut state = self.inner.lock();
            let Some(draft) = state.drafts.get_mut(&run_id) else { return };
            let offset = draft.text.len();
            draft.text.push_str(delta);
            Piece {
                conversation: draft.conversation.clone(),
                draft: draft.key.clone(),
                offset,
                text: delta.to_string(),
            }
        };
        self.inner.events.piece(piece);
        self.inner.dirty.notify_one();
    }
}

/// Writes the drafts that grew, at most every [`SAVE_EVERY`], and only once a reply has been
/// streaming that long: a reply that comes at once (a model that does not stream) is recorded by
/// its settle without a draft ever being written. Lives as long as the Tokio runtime.
async fn writer(inner: Arc<Inner>, store: Store) {
    loop {
        inner.dirty.notified().await;
        tokio::time::sleep(SAVE_EVERY).await;
        for (run_id, conversation, key, text) in grown(&inner) {
            match store.save_draft(&conversation, &key, &text).await {
                Ok(()) => {
                    if let Some(draft) = inner.lock().drafts.get_mut(&run_id).filter(|draft| draft.key == key) {
                        draft.saved = draft.saved.max(text.len());
                    }
                }
                Err(error) => tracing::warn!(%error, "a reply's text so far could not be saved"),
            }
        }
    }
}

/// The drafts with text the database has not got yet: run, conversation, key and text so far.
fn grown(inner: &Inner) -> Vec<(Uuid, String, String, String)> {
    inner
        .lock()
        .drafts
        .iter()
        .filter(|(_, draft)| draft.text.len() > draft.saved)
        .map(|(run_id, draft)| (*run_id, draft.conversation.clone(), draft.key.clone(), draft.text.clone()))
        .collect()
}
