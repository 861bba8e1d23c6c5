//! How a panel stays current: loading the conversation again on top of what it has, cheap polls
//! while the assistant works, and the event stream with the reply's pieces as they are written.

use std::time::Duration;

use leptos::prelude::*;

use crate::api::poll_conversation;
#[cfg(feature = "hydrate")]
use crate::live_draft::LiveDraft;
use crate::model::ConversationView;

/// How often the panel asks again while the assistant works: often without a push stream, rarely
/// (as a safety net) while the stream is open.
const POLL_INTERVAL: Duration = Duration::from_millis(500);
const POLL_INTERVAL_LIVE: Duration = Duration::from_secs(3);
/// A gap in the pieces is filled by loading the draft again once the server has saved it (it
/// saves a few times a second).
#[cfg(feature = "hydrate")]
const RESYNC_AFTER: Duration = Duration::from_millis(300);

/// The last conversation loaded and its messages' digest.
pub(super) type Loaded = StoredValue<Option<(ConversationView, String)>>;

/// Loads the conversation in the browser: only what came after the messages the page has (or
/// everything, when those are no longer current; see `get_conversation_since`).
#[cfg(feature = "hydrate")]
pub(super) async fn load(id: String, loaded: Loaded) -> Result<Option<ConversationView>, crate::error::AppError> {
    let known = loaded.try_update_value(Option::take).flatten().filter(|(view, _)| view.id == id);
    let (count, digest) =
        known.as_ref().map(|(view, digest)| (view.messages.len(), digest.clone())).unwrap_or_default();
    let part = crate::api::get_conversation_since(id, count, digest).await?;
    let digest = part.digest.clone();
    let view = part.merged(known.as_ref().map(|(view, _)| view));
    loaded.set_value(Some((view.clone(), digest)));
    Ok(Some(view))
}

/// Rendering a page on the server starts from nothing and keeps nothing for the browser (its first
/// load starts from nothing too): the whole conversation, no digest made.
#[cfg(not(feature = "hydrate"))]
pub(super) async fn load(id: String, _loaded: Loaded) -> Result<Option<ConversationView>, crate::error::AppError> {
    crate::api::get_conversation(id).await.map(Some)
}

/// One round of cheap polls while the assistant works: each asks only "anything new since
/// `known` messages?", and the first answer that says yes (or fails) loads the conversation.
pub(super) struct FastPoll {
    pub(super) id: String,
    pub(super) known: usize,
    pub(super) round: u64,
    pub(super) rounds: StoredValue<u64>,
    pub(super) poll: RwSignal<u64>,
    pub(super) live: RwSignal<bool>,
}

pub(super) fn poll_until_changed(state: FastPoll) {
    let interval = if state.live.get_untracked() { POLL_INTERVAL_LIVE } else { POLL_INTERVAL };
    set_timeout(
        move || {
            leptos::task::spawn_local(async move {
                if state.rounds.try_get_value() != Some(state.round) {
                    return;
                }
                match poll_conversation(state.id.clone(), state.known).await {
                    Ok(crate::model::PollView { conversation: None, .. }) => poll_until_changed(state),
                    _ => {
                        if state.rounds.try_get_value() == Some(state.round) {
                            state.poll.update(|tick| *tick += 1);
                        }
                    }
                }
            })
        },
        interval,
    );
}

/// Opens the conversation's event stream in the browser; every "changed" loads it again, and
/// every "piece" grows the reply being written. A piece whose text in front is missing (the page
/// loaded a draft the database had not caught up on) loads the conversation once more, shortly.
#[cfg(feature = "hydrate")]
pub(super) fn listen(
    conversation_id: Signal<Option<String>>,
    poll: RwSignal<u64>,
    live: RwSignal<bool>,
    draft: RwSignal<Option<LiveDraft>>,
) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    let current = StoredValue::new_local(None::<web_sys::EventSource>);
    let close = move || {
        if let Some(source) = current.try_update_value(Option::take).flatten() {
            source.close();
        }
        live.set(false);
    };
    Effect::new(move |_| {
        close();
        let Some(id) = conversation_id.get() else { return };
        let Ok(source) = web_sys::EventSource::new(&format!("/events/conversations/{id}")) else { return };
        let on_changed = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |_| poll.update(|tick| *tick += 1));
        let resync = StoredValue::new(false);
        let on_piece = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
            let Some(data) = event.data().as_string() else { return };
            let Ok(piece) = serde_json::from_str::<crate::live_draft::Piece>(&data) else { return };
            let mut applied = crate::live_draft::Applied::Ignored;
            draft.update(|current| applied = LiveDraft::apply(current, piece));
            if applied == crate::live_draft::Applied::Gap && !resync.get_value() {
                resync.set_value(true);
                set_timeout(
                    move || {
                        resync.set_value(false);
                        poll.update(|tick| *tick += 1);
                    },
                    RESYNC_AFTER,
                );
            }
        });
        // The reply rendered so far, as changes to the rendering this stream sent before.
        let rendered_before = StoredValue::new(None::<(String, String)>);
        let on_html = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
            let Some(data) = event.data().as_string() else { return };
            let Ok(rendered) = serde_json::from_str::<crate::live_draft::Rendered>(&data) else { return };
            let (key, upto) = (rendered.draft.clone(), rendered.upto);
            let Some(html) = rendered_before.try_update_value(|before| rendered.onto(before)).flatten() else { return };
            draft.update(|current| LiveDraft::show_rendered(current, &key, upto, html));
        });
        let on_open = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
            // A stream opened again starts its renderings over.
            rendered_before.set_value(None);
            live.set(true)
        });
        let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| live.set(false));
        let _ = source.add_event_listener_with_callback("changed", on_changed.as_ref().unchecked_ref());
        let _ = source.add_event_listener_with_callback("piece", on_piece.as_ref().unchecked_ref());
        let _ = source.add_event_listener_with_callback("html", on_html.as_ref().unchecked_ref());
        source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        // The callbacks live as long as the page; one set per opened conversation.
        on_changed.forget();
        on_piece.forget();
        on_html.forget();
        on_open.forget();
        on_error.forget();
        current.set_value(Some(source));
    });
    on_cleanup(close);
}
