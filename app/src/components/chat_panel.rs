//! One conversation: its transcript, the question or card it waits on, and the input. The full
//! chat page and the floating panel beside a content page both render this component.

mod attachments;
mod composer;
mod conversation;
mod editor;
mod live;
mod message_line;
mod place;

use leptos::prelude::*;

use self::attachments::Uploads;
use self::composer::Composer;
use self::conversation::Conversation;
#[cfg(feature = "hydrate")]
use self::live::listen;
use self::live::{load, poll_until_changed, FastPoll, Loaded};
pub use self::place::PanelPlace;
use crate::api::{
    Answer, Decide, DeleteConversation, EditMessage, RemoveAttachment, RenameConversation, Retry, SendMessage,
    StopReply,
};
use crate::form_action::FormAction;
use crate::i18n::Text;
use crate::live_draft::LiveDraft;
use crate::model::{ConversationStatus, ConversationView};
use crate::page_data::{PageCodec, PanelData};
use crate::use_lang;

/// Bumped whenever the panel's conversation may have changed, so the page around it (the list of
/// conversations, a content page) can load again.
#[derive(Clone, Copy)]
pub struct ConversationChanged(pub RwSignal<u64>);

#[component]
pub fn ChatPanel(#[prop(into)] conversation_id: Signal<Option<String>>, place: PanelPlace) -> impl IntoView {
    let lang = use_lang();
    let send = FormAction::new::<SendMessage>();
    let answer = FormAction::new::<Answer>();
    let decide = FormAction::new::<Decide>();
    let retry = FormAction::new::<Retry>();
    let rename = FormAction::new::<RenameConversation>();
    let delete = FormAction::new::<DeleteConversation>();
    let stop = FormAction::new::<StopReply>();
    let edit = FormAction::new::<EditMessage>();
    let remove = FormAction::new::<RemoveAttachment>();
    // The one message being edited. The page renders its editor only (`?edit=` without WASM):
    // a form under every message of a long conversation made up half of the page's weight.
    let editing = RwSignal::new(place.editing);
    provide_context(place);
    Effect::new(move |_| {
        if let Some(Ok(())) = edit.value().get() {
            editing.set(None);
        }
    });
    let poll = RwSignal::new(0u64);
    let uploads = Uploads { refused: RwSignal::new(None), sending: RwSignal::new(false), reload: poll, lang };
    let changed = use_context::<ConversationChanged>();
    let live = RwSignal::new(false);
    let fast_polls = StoredValue::new(0u64);
    // The reply being written, grown in place by the stream's pieces between loads.
    let draft = RwSignal::new(None::<LiveDraft>);
    #[cfg(feature = "hydrate")]
    listen(conversation_id, poll, live, draft);

    // The last conversation loaded and its messages' digest, for the next load to build on.
    let loaded: Loaded = StoredValue::new(None);
    let conversation = Resource::<PanelData, PageCodec>::new_with_options(
        move || {
            (
                conversation_id.get(),
                send.version().get(),
                // Not after answers or edits refused field by field: the form or card keeps what
                // was typed, beside the sentences.
                answer.changes().get(),
                decide.changes().get(),
                retry.version().get(),
                rename.version().get(),
                stop.version().get(),
                edit.version().get(),
                remove.version().get(),
                poll.get(),
            )
        },
        move |(id, ..)| async move {
            match id {
                Some(id) => load(id, loaded).await,
                None => Ok(None),
            }
        },
        false,
    );

    // issue 40: what a screen reader hears when a question or a card appears, live or on load.
    let announce = RwSignal::new(None::<String>);
    Effect::new(move |before: Option<()>| {
        let current = conversation.get();
        let heard = current.as_ref().and_then(|result| result.as_ref().ok()).and_then(Option::as_ref);
        let heard = heard.and_then(|view| announcement(view, lang));
        // The same question again (a poll's load) is not news.
        if announce.get_untracked() != heard {
            announce.set(heard);
        }
        // Not at the first run: the page around the panel was drawn with it, from the same
        // moment, so loading it again then (every page's hydration did) would bring nothing new.
        if let (Some(ConversationChanged(signal)), Some(())) = (changed, before) {
            signal.update(|tick| *tick += 1);
        }
        // Every load starts a new round of polls and retires the one before it.
        let round = fast_polls.get_value() + 1;
        fast_polls.set_value(round);
        let working = current
            .and_then(|result| result.ok())
            .flatten()
            .filter(|view| view.status == ConversationStatus::Processing);
        match working.as_ref().and_then(|view| view.draft.clone()) {
            Some(loaded) => draft.update(|live| LiveDraft::merge_loaded(live, loaded)),
            // A new turn without text yet keeps pieces that may have come before this load.
            None if working.is_some() => {}
            None => draft.set(None),
        }
        if let Some(view) = working {
            poll_until_changed(FastPoll {
                id: view.id,
                known: view.messages.len(),
                round,
                rounds: fast_polls,
                poll,
                live,
            });
        }
    });

    let action_error = move || {
        let errors = [
            send.value().get().and_then(Result::err),
            answer.value().get().and_then(Result::err),
            decide.value().get().and_then(Result::err),
            retry.value().get().and_then(Result::err),
            rename.value().get().and_then(Result::err),
            delete.value().get().and_then(Result::err),
            stop.value().get().and_then(Result::err),
            edit.value().get().and_then(Result::err),
            remove.value().get().and_then(Result::err),
        ];
        errors
            .into_iter()
            .flatten()
            .next()
            .map(|error| view! { <p class="error" role="alert">{error.message(lang)}</p> })
    };

    view! {
        <div class="chat-panel">
            <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                {move || Suspend::new(async move {
                    match conversation.await {
                        Ok(Some(view)) => {
                            view! {
                                <Conversation
                                    conversation=view
                                    answer
                                    decide
                                    retry
                                    rename
                                    delete
                                    stop
                                    edit
                                    editing
                                    remove
                                    draft
                                    uploads
                                />
                            }
                                .into_any()
                        }
                        Ok(None) => view! { <EmptyState/> }.into_any(),
                        Err(error) => {
                            view! { <p class="error" role="alert">{error.message(lang)}</p> }.into_any()
                        }
                    }
                })}
            </Transition>
            {action_error}
            // Outside the transcript, which is drawn again on each load: a live region is heard
            // only when it changes, not when it comes with its text.
            <div class="visually-hidden announcer" role="status" aria-live="polite" aria-atomic="true">
                {move || announce.get().map(|text| view! { <p>{text}</p> })}
            </div>
            {move || conversation_id.get().map(|id| view! { <Composer conversation_id=id send answer uploads/> })}
        </div>
    }
}

/// The sentence a screen reader hears for the question or card the conversation waits on.
fn announcement(view: &ConversationView, lang: crate::i18n::Lang) -> Option<String> {
    if let Some(question) = &view.question {
        let asked = question.form.question().trim();
        return Some(if asked.is_empty() {
            lang.t(Text::AnnounceQuestionPlain).to_string()
        } else {
            lang.t(Text::AnnounceQuestion).replace("{}", asked)
        });
    }
    let card = view.card.as_ref()?;
    let mut tools: Vec<&str> = Vec::new();
    for call in &card.calls {
        if !tools.contains(&call.name.as_str()) {
            tools.push(&call.name);
        }
    }
    Some(lang.t(Text::AnnounceApproval).replace("{}", &tools.join(", ")))
}

#[component]
fn EmptyState() -> impl IntoView {
    let lang = use_lang();
    view! {
        <div class="empty-state">
            <h1>{lang.t(Text::WelcomeTitle)}</h1>
            <p>{lang.t(Text::WelcomeBody)}</p>
        </div>
    }
}
