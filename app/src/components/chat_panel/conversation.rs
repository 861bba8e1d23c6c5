//! A loaded conversation: its head, the transcript with the reply being written, and what it
//! waits on or offers next (stop, the question or card, files, retry).

use leptos::prelude::*;

use super::attachments::{AttachBar, Uploads};
use super::editor::toggle_editor;
use super::message_line::{static_message_html, MessageLine};
use super::place::PanelPlace;
use crate::components::approval_card::ApprovalCard;
use crate::components::reply_options::ReplyOptions;
use crate::form_action::{FormAction, PostForm};
use crate::i18n::Text;
use crate::live_draft::LiveDraft;
use crate::model::{ConversationStatus, ConversationView, MessageRole};
use crate::use_lang;

#[component]
pub(super) fn Conversation(
    conversation: ConversationView,
    answer: FormAction,
    decide: FormAction,
    retry: FormAction,
    rename: FormAction,
    delete: FormAction,
    stop: FormAction,
    edit: FormAction,
    editing: RwSignal<Option<i64>>,
    remove: FormAction,
    draft: RwSignal<Option<LiveDraft>>,
    uploads: Uploads,
) -> impl IntoView {
    let lang = use_lang();
    let id = conversation.id.clone();
    let (rename_id, delete_id, question_id, card_id) = (id.clone(), id.clone(), id.clone(), id.clone());
    let (stop_id, attach_id) = (id.clone(), id.clone());
    let edit_id: std::sync::Arc<str> = id.as_str().into();
    // Read once for the whole transcript, not for every message.
    let place = PanelPlace::here();
    let (pending, limit_mib) = (conversation.pending_attachments.clone(), conversation.attachment_limit_mib);
    let loaded_draft = conversation.draft.as_ref().map(|draft| (draft.text.clone(), draft.html.clone()));
    let working = conversation.status == ConversationStatus::Processing;
    let failed = conversation.status == ConversationStatus::Failed;
    view! {
        <div class="conversation-head">
            <h1 class="conversation-title">{conversation.title.clone()}</h1>
            <details class="conversation-actions">
                <summary>{lang.t(Text::ConversationActions)}</summary>
                <PostForm action=rename class="rename">
                    <input type="hidden" name="conversation_id" value=rename_id/>
                    <label>
                        {lang.t(Text::Title)}
                        <input type="text" name="title" value=conversation.title.clone() required maxlength="200"/>
                    </label>
                    <button type="submit">{lang.t(Text::Rename)}</button>
                </PostForm>
                <PostForm action=delete class="delete">
                    <input type="hidden" name="conversation_id" value=delete_id/>
                    <p class="hint">{lang.t(Text::DeleteHint)}</p>
                    <button type="submit" class="danger" disabled=working>{lang.t(Text::Delete)}</button>
                </PostForm>
            </details>
        </div>
        <ol
            class="messages"
            aria-live="polite"
            data-status=conversation.status.as_str()
            on:click=move |event| toggle_editor(event, editing)
        >
            {conversation
                .messages
                .into_iter()
                .map(|message| {
                    let (class, who) = match message.role {
                        MessageRole::User => ("message user", lang.t(Text::You)),
                        MessageRole::Assistant => ("message assistant", lang.t(Text::Assistant)),
                    };
                    let class = if message.stopped { format!("{class} stopped") } else { class.to_string() };
                    let class = if message.note.is_some() { format!("{class} noted") } else { class };
                    let full = MessageLine {
                        class,
                        who,
                        lang,
                        conversation_id: edit_id.clone(),
                        edit_href: (message.editable && !working).then(|| place.edit_href(Some(message.id))),
                        edit,
                        editing,
                    };
                    if !message.attachments.is_empty() {
                        return full.view(message);
                    }
                    // Nothing in it reacts: one element whose content is written as HTML
                    // renders and hydrates as one node instead of one view per part (a long
                    // conversation's page is mostly these). Its "Edit" is a plain link, heard
                    // by the list; the one line being edited is drawn in full, with its editor.
                    let edit_link = full.edit_href.as_deref().map(|href| (href, lang.t(Text::Edit)));
                    let inner = static_message_html(&message, who, lang.t(Text::Stopped), edit_link);
                    if full.edit_href.is_none() {
                        return full.plain(message.id, inner);
                    }
                    let message_id = message.id;
                    (move || {
                        if editing.get() == Some(message_id) {
                            full.clone().view(message.clone())
                        } else {
                            full.plain(message_id, inner.clone())
                        }
                    })
                    .into_any()
                })
                .collect_view()}
            // As markdown while it grows (issue 40): the server's rendering of it, through the
            // recorded line's sanitiser; its text until the first rendering comes. The draft this
            // load brought shows until the live one has grown (and without WASM). Busy: a screen
            // reader hears the reply once, when it is recorded, not every rendering of it.
            {move || {
                draft
                    .with(|live| live.as_ref().map(|live| (live.text.clone(), live.html.clone().map(|(_, html)| html))))
                    .filter(|(text, _)| !text.is_empty())
                    .or_else(|| loaded_draft.clone())
                    .filter(|(text, _)| working && !text.is_empty())
                    .map(|(text, html)| {
                        let body = match html {
                            Some(html) => {
                                view! { <div class="body markdown streaming-text" inner_html=html></div> }.into_any()
                            }
                            None => view! { <div class="body streaming-text">{text}</div> }.into_any(),
                        };
                        view! {
                            <li class="message assistant streaming" aria-busy="true">
                                <span class="who">{lang.t(Text::Assistant)}</span>
                                {body}
                            </li>
                        }
                    })
            }}
        </ol>
        {working
            .then(|| {
                view! {
                    <div class="working-row">
                        <p class="working" role="status">{lang.t(Text::Working)}</p>
                        <PostForm action=stop class="stop">
                            <input type="hidden" name="conversation_id" value=stop_id/>
                            <button type="submit" title=lang.t(Text::StopHint) disabled=move || stop.pending().get()>
                                {lang.t(Text::Stop)}
                            </button>
                        </PostForm>
                    </div>
                }
            })}
        {conversation.error.map(|error| view! { <p class="error notice" role="alert">{error}</p> })}
        {conversation.question.map(|question| view! { <ReplyOptions conversation_id=question_id question answer/> })}
        {conversation.card.map(|card| view! { <ApprovalCard conversation_id=card_id card decide/> })}
        {(!working)
            .then(|| {
                view! { <AttachBar conversation_id=attach_id pending=pending limit_mib=limit_mib remove uploads/> }
            })}
        {failed
            .then(|| {
                view! {
                    <PostForm action=retry class="retry">
                        <input type="hidden" name="conversation_id" value=id/>
                        <button type="submit">{lang.t(Text::Retry)}</button>
                    </PostForm>
                }
            })}
    }
}
