//! One conversation: its transcript, the question or card it waits on, and the input. The full
//! chat page and the floating panel beside a content page both render this component.

use std::time::Duration;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::api::{
    poll_conversation, Answer, Decide, DeleteConversation, EditMessage, RemoveAttachment, RenameConversation, Retry,
    SendMessage, StopReply,
};
use crate::components::approval_card::ApprovalCard;
use crate::components::reply_options::ReplyOptions;
use crate::form_action::{FormAction, PostForm};
use crate::i18n::Text;
use crate::live_draft::LiveDraft;
use crate::model::{AttachmentView, ConversationStatus, ConversationView, MessageRole, MessageView};
use crate::page_data::{PageCodec, PanelData};
use crate::use_lang;

/// How often the panel asks again while the assistant works: often without a push stream, rarely
/// (as a safety net) while the stream is open.
const POLL_INTERVAL: Duration = Duration::from_millis(500);
const POLL_INTERVAL_LIVE: Duration = Duration::from_secs(3);
/// A gap in the pieces is filled by loading the draft again once the server has saved it (it
/// saves a few times a second).
#[cfg(feature = "hydrate")]
const RESYNC_AFTER: Duration = Duration::from_millis(300);

/// Bumped whenever the panel's conversation may have changed, so the page around it (the list of
/// conversations, a content page) can load again.
#[derive(Clone, Copy)]
pub struct ConversationChanged(pub RwSignal<u64>);

/// Where the panel is drawn: the page's address without `?edit=`, and the message that address
/// opens for editing. The server reads both from the router; a panel is part of an island, which
/// has no router in the browser, so they reach it as the island's props.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PanelPlace {
    pub page: String,
    pub editing: Option<i64>,
}

impl PanelPlace {
    /// The place of the page being rendered (called on the server, outside any island).
    pub fn from_router() -> PanelPlace {
        let location = leptos_router::hooks::use_location();
        let (path, search) = (location.pathname.get_untracked(), location.search.get_untracked());
        let here = if search.is_empty() { path } else { format!("{path}?{search}") };
        let editing = leptos_router::hooks::use_query_map()
            .with_untracked(|query| query.get_str("edit").and_then(|id| id.parse::<i64>().ok()));
        // The rule a plain form's edit goes back by (`edit_message`), so the two agree.
        PanelPlace { page: crate::model::without_query_param(&here, "edit"), editing }
    }

    /// The place of the panel around the caller (the panel provides it).
    fn here() -> PanelPlace {
        use_context::<PanelPlace>().unwrap_or_default()
    }

    /// This page with `?edit=` set to `message_id` (or dropped), its other parameters kept (the
    /// panel beside a content page lives at `/pages/{id}?c=…`): how the editor opens and closes
    /// without WASM.
    fn edit_href(&self, message_id: Option<i64>) -> String {
        let page = &self.page;
        match message_id {
            Some(id) => format!("{page}{}edit={id}#m{id}", if page.contains('?') { '&' } else { '?' }),
            None => page.clone(),
        }
    }
}

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
fn Conversation(
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

fn size_label(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{} KiB", bytes / 1024),
        // In tenths, rounded, without formatting a float: that alone brought Rust's float
        // formatting (`flt2dec`) into the WASM.
        _ => {
            let tenths = (bytes * 10 + 524_288) / 1_048_576;
            format!("{}.{} MiB", tenths / 10, tenths % 10)
        }
    }
}

/// One line of the transcript drawn in full: what a line with files, or the line being edited,
/// needs beyond its HTML.
#[derive(Clone)]
struct MessageLine {
    class: String,
    who: &'static str,
    lang: crate::i18n::Lang,
    conversation_id: std::sync::Arc<str>,
    /// Where its "Edit" leads without WASM; none for a line that cannot be edited.
    edit_href: Option<String>,
    edit: FormAction,
    editing: RwSignal<Option<i64>>,
}

impl MessageLine {
    /// The line as one element holding its parts as HTML (see `static_message_html`).
    fn plain(&self, message_id: i64, inner: String) -> AnyView {
        super::html_line::HtmlLine { class: self.class.clone(), id: message_id, inner }.into_any()
    }

    fn view(self, message: MessageView) -> AnyView {
        let MessageLine { class, who, lang, conversation_id, edit_href, edit, editing } = self;
        let original = message.content.clone();
        let body = match message.html {
            Some(html) => view! { <div class="body markdown" inner_html=html></div> }.into_any(),
            None => view! { <div class="body">{message.content}</div> }.into_any(),
        };
        let note = message.note.map(|note| view! { <p class="note">{note}</p> });
        let (message_id, decided_after) = (message.id, message.decided_after);
        // The link is heard by the list around it (`toggle_editor`), as in a plain line.
        let editor = edit_href.map(|href| {
            view! {
                <a class="edit-message" href=href>
                    {lang.t(Text::Edit)}
                </a>
                {move || {
                    (editing.get() == Some(message_id))
                        .then(|| {
                            view! {
                                <MessageEditor
                                    conversation_id=conversation_id.to_string()
                                    message_id
                                    content=original.clone()
                                    decided_after
                                    edit
                                    editing
                                />
                            }
                        })
                }}
            }
        });
        let files = (!message.attachments.is_empty()).then(|| view! { <AttachmentList files=message.attachments/> });
        view! {
            <li class=class id=format!("m{message_id}") data-message-id=message_id>
                <span class="who">{who}</span>
                {note}
                {body}
                {files}
                {editor}
                {message.stopped.then(|| view! { <span class="stopped-mark">{lang.t(Text::Stopped)}</span> })}
            </li>
        }
        .into_any()
    }
}

/// "Edit" under one of the reader's lines opens its editor, or closes it when open. One listener
/// on the list hears them all: most lines are HTML with no handlers of their own.
fn toggle_editor(event: leptos::ev::MouseEvent, editing: RwSignal<Option<i64>>) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let closest = |element: &web_sys::Element, selector: &str| element.closest(selector).ok().flatten();
        let Some(link) = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .and_then(|target| closest(&target, "a.edit-message"))
        else {
            return;
        };
        let Some(message_id) = closest(&link, "li[data-message-id]")
            .and_then(|line| line.get_attribute("data-message-id"))
            .and_then(|id| id.parse::<i64>().ok())
        else {
            return;
        };
        event.prevent_default();
        editing.update(|open| *open = (*open != Some(message_id)).then_some(message_id));
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (event, editing);
}

/// The parts of a message without attachments, as `MessageLine::view` writes them: who, the
/// note, the body (the stored rendering, or the text escaped), "Edit" (its address and label) for
/// a line that can be edited, the stopped mark.
fn static_message_html(message: &MessageView, who: &str, stopped: &str, edit: Option<(&str, &str)>) -> String {
    use html_escape::{encode_double_quoted_attribute, encode_text};
    let body = message.html.as_deref();
    let mut html = String::with_capacity(160 + body.map_or(message.content.len(), str::len));
    html.push_str("<span class=\"who\">");
    html.push_str(&encode_text(who));
    html.push_str("</span>");
    if let Some(note) = &message.note {
        html.push_str("<p class=\"note\">");
        html.push_str(&encode_text(note));
        html.push_str("</p>");
    }
    match body {
        Some(rendered) => {
            html.push_str("<div class=\"body markdown\">");
            html.push_str(rendered);
        }
        None => {
            html.push_str("<div class=\"body\">");
            html.push_str(&encode_text(&message.content));
        }
    }
    html.push_str("</div>");
    if let Some((href, label)) = edit {
        html.push_str("<a class=\"edit-message\" href=\"");
        html.push_str(&encode_double_quoted_attribute(href));
        html.push_str("\">");
        html.push_str(&encode_text(label));
        html.push_str("</a>");
    }
    if message.stopped {
        html.push_str("<span class=\"stopped-mark\">");
        html.push_str(&encode_text(stopped));
        html.push_str("</span>");
    }
    html
}

/// The files of a message, each a download of what was uploaded.
#[component]
fn AttachmentList(files: Vec<AttachmentView>) -> impl IntoView {
    let lang = use_lang();
    view! {
        <ul class="attachments">
            {files
                .into_iter()
                .map(|file| {
                    view! {
                        <li class="attachment">
                            <a href=format!("/ai-chat/attachments/{}", file.id) download>{file.file_name}</a>
                            <span class="meta">{format!(" {} · {}", file.kind.to_ascii_uppercase(), size_label(file.size))}</span>
                            {file.truncated.then(|| view! { <span class="meta">{format!(" · {}", lang.t(Text::TextCut))}</span> })}
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
}

/// Files for the next message: the ones attached so far, as chips with a remove button, and a
/// multipart form for another. Without the WASM it is a plain form (the server sends the page back,
/// or a page with the refusal); with it a chosen file goes by `fetch` at once, its own button gone,
/// and a refusal shows here, beside the form. The paperclip is the file input's label, so it opens
/// the chooser either way.
#[component]
fn AttachBar(
    conversation_id: String,
    pending: Vec<AttachmentView>,
    limit_mib: u32,
    remove: FormAction,
    uploads: Uploads,
) -> impl IntoView {
    let lang = use_lang();
    let Uploads { refused, sending, .. } = uploads;
    let on_submit = move |event: leptos::ev::SubmitEvent| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            event.prevent_default();
            if let Some(form) = event.target().and_then(|target| target.dyn_into::<web_sys::HtmlFormElement>().ok()) {
                uploads.send_form(form);
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (event, uploads);
    };
    let on_change = move |event: leptos::ev::Event| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            let form = event
                .target()
                .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
                .and_then(|input| input.closest("form").ok().flatten())
                .and_then(|form| form.dyn_into::<web_sys::HtmlFormElement>().ok());
            if let Some(form) = form {
                uploads.send_form(form);
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = event;
    };
    let input_id = format!("attach-{conversation_id}");
    let listed = (!pending.is_empty()).then(|| {
        let conversation_id = conversation_id.clone();
        view! {
            <div class="pending-attachments">
                <span class="hint">{lang.t(Text::AttachedForNext)}</span>
                <ul class="attachments chips">
                    {pending
                        .into_iter()
                        .map(|file| {
                            let owner = conversation_id.clone();
                            let remove_label = format!("{} {}", lang.t(Text::Remove), file.file_name);
                            view! {
                                <li class="attachment chip">
                                    <span class="name">{file.file_name}</span>
                                    <span class="meta">{size_label(file.size)}</span>
                                    <PostForm action=remove class="remove-attachment">
                                        <input type="hidden" name="conversation_id" value=owner/>
                                        <input type="hidden" name="attachment_id" value=file.id.to_string()/>
                                        <button type="submit" aria-label=remove_label.clone() title=remove_label>
                                            "×"
                                        </button>
                                    </PostForm>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            </div>
        }
    });
    view! {
        <div class="attach-bar">
            {listed}
            <form
                class="attach-form"
                method="post"
                enctype="multipart/form-data"
                action=format!("/ai-chat/conversations/{conversation_id}/attachments")
                on:submit=on_submit
            >
                <input
                    id=input_id.clone()
                    class="visually-hidden"
                    type="file"
                    name="file"
                    required
                    accept=".pdf,.docx,.xlsx,.txt,.md,.markdown"
                    on:change=on_change
                />
                <label for=input_id class="attach-button" class:sending=move || sending.get()>
                    <svg aria-hidden="true" viewBox="0 0 24 24" width="18" height="18">
                        <path d="M21 11.5l-8.5 8.5a5 5 0 0 1-7-7l9-9a3.5 3.5 0 0 1 5 5l-9 9a2 2 0 0 1-3-3l8-8"></path>
                    </svg>
                    <span>{lang.t(Text::Attach)}</span>
                </label>
                <span class="hint">{format!("{} {limit_mib} MiB", lang.t(Text::AttachHint))}</span>
                <button type="submit" class="attach-submit" disabled=move || sending.get()>{lang.t(Text::Attach)}</button>
            </form>
            {move || refused.get().map(|sentence| view! { <p class="error" role="alert">{sentence}</p> })}
        </div>
    }
}

/// The state of uploads in one panel, shared by the attach form and the composer (a file dropped
/// or pasted there): the last refusal, whether one is on its way, and the tick that reloads the
/// conversation (which lists a stored file).
#[derive(Clone, Copy)]
// The server draws the forms but never sends a file.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
struct Uploads {
    refused: RwSignal<Option<String>>,
    sending: RwSignal<bool>,
    reload: RwSignal<u64>,
    lang: crate::i18n::Lang,
}

#[cfg(feature = "hydrate")]
impl Uploads {
    /// Sends the form's file as the plain form would; the form is emptied once it is stored.
    fn send_form(self, form: web_sys::HtmlFormElement) {
        let Ok(data) = web_sys::FormData::new_with_form(&form) else { return };
        self.send(form.action(), vec![data], Some(form));
    }

    /// Sends dropped or pasted files, one request each, to the route the plain form posts to.
    fn send_files(self, action: String, files: Option<web_sys::FileList>) {
        let parts: Vec<_> = (0..files.as_ref().map_or(0, |files| files.length()))
            .filter_map(|index| files.as_ref()?.get(index))
            .filter_map(|file| {
                let data = web_sys::FormData::new().ok()?;
                data.append_with_blob_and_filename("file", &file, &file.name()).ok()?;
                Some(data)
            })
            .collect();
        if !parts.is_empty() {
            self.send(action, parts, None);
        }
    }

    /// Posts each part in turn asking for JSON back: every stored file reloads the conversation, a
    /// refused one shows the server's sentence and stops the rest.
    fn send(self, action: String, parts: Vec<web_sys::FormData>, form: Option<web_sys::HtmlFormElement>) {
        self.sending.set(true);
        leptos::task::spawn_local(async move {
            let mut refusal = None;
            for data in parts {
                if let Err(sentence) = post_file(&action, &data, self.lang).await {
                    refusal = Some(sentence);
                    break;
                }
                self.reload.update(|tick| *tick += 1);
            }
            self.sending.set(false);
            if let (None, Some(form)) = (&refusal, form) {
                form.reset();
            }
            self.refused.set(refusal);
        });
    }
}

/// One file to the upload route: `Ok` once stored, else the sentence to show.
#[cfg(feature = "hydrate")]
async fn post_file(action: &str, data: &web_sys::FormData, lang: crate::i18n::Lang) -> Result<(), String> {
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;

    let transport = || lang.t(Text::ErrorTransport).to_string();
    let request = (|| {
        let headers = web_sys::Headers::new().ok()?;
        headers.set("accept", "application/json").ok()?;
        let init = web_sys::RequestInit::new();
        init.set_method("POST");
        init.set_body(data);
        init.set_headers(&headers);
        web_sys::Request::new_with_str_and_init(action, &init).ok()
    })();
    let window = web_sys::window().ok_or_else(transport)?;
    let response = JsFuture::from(window.fetch_with_request(&request.ok_or_else(transport)?))
        .await
        .ok()
        .and_then(|response| response.dyn_into::<web_sys::Response>().ok())
        .ok_or_else(transport)?;
    if response.ok() {
        return Ok(());
    }
    let body = match response.text() {
        Ok(promise) => JsFuture::from(promise).await.ok().and_then(|text| text.as_string()),
        Err(_) => None,
    };
    let sentence = body
        .and_then(|body| serde_json::from_str::<serde_json::Value>(&body).ok())
        .and_then(|value| value["error"].as_str().map(str::to_string));
    Err(sentence.unwrap_or_else(transport))
}

/// "Edit" on one of the reader's messages: the text in a box, sent again as the new turn from
/// there. A plain form, so it works before (and without) the WASM.
#[component]
fn MessageEditor(
    conversation_id: String,
    message_id: i64,
    content: String,
    decided_after: bool,
    edit: FormAction,
    editing: RwSignal<Option<i64>>,
) -> impl IntoView {
    let lang = use_lang();
    view! {
            <PostForm action=edit class="edit-form">
                <input type="hidden" name="conversation_id" value=conversation_id/>
                <input type="hidden" name="message_id" value=message_id.to_string()/>
                <label class="visually-hidden" for=format!("edit-{message_id}")>{lang.t(Text::Edit)}</label>
                <textarea id=format!("edit-{message_id}") name="content" rows="3" required autofocus>{content}</textarea>
                <p class="hint">{lang.t(Text::EditHint)}</p>
                {decided_after.then(|| view! { <p class="hint warning">{lang.t(Text::EditKeepsChanges)}</p> })}
                <div class="edit-actions">
                    <button type="submit" class="primary" disabled=move || edit.pending().get()>
                        {lang.t(Text::EditSubmit)}
                    </button>
                    <a
                        href=PanelPlace::here().edit_href(None)
                        on:click=move |event| {
                            event.prevent_default();
                            editing.set(None);
                        }
                    >
                        {lang.t(Text::EditCancel)}
                    </a>
                </div>
            </PostForm>
    }
}

#[component]
fn Composer(conversation_id: String, send: FormAction, answer: FormAction, uploads: Uploads) -> impl IntoView {
    let lang = use_lang();
    // A file dropped on the composer or pasted into its box is attached as the paperclip would.
    let upload_to = StoredValue::new(format!("/ai-chat/conversations/{conversation_id}/attachments"));
    let on_drop = move |event: leptos::ev::DragEvent| {
        event.prevent_default();
        #[cfg(feature = "hydrate")]
        uploads.send_files(upload_to.get_value(), event.data_transfer().and_then(|data| data.files()));
    };
    let on_paste = move |event: leptos::ev::ClipboardEvent| {
        #[cfg(feature = "hydrate")]
        {
            let files = event.clipboard_data().and_then(|data| data.files()).filter(|files| files.length() > 0);
            if files.is_some() {
                event.prevent_default();
                uploads.send_files(upload_to.get_value(), files);
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (event, uploads, upload_to);
    };
    let textarea = NodeRef::<leptos::html::Textarea>::new();
    // Send waits for text. False until the WASM has read the box: the page's own button (and a
    // post without WASM, which the box's `required` guards) is never disabled.
    let empty = RwSignal::new(false);
    // A sent message leaves the box empty and the reader in it; a refused one keeps the text so
    // nothing is lost. Only a post made since the box was drawn counts.
    Effect::new(move |seen: Option<usize>| {
        let version = send.version().get();
        if let Some(element) = textarea.get() {
            if seen.is_some_and(|seen| seen != version) && matches!(send.value().get_untracked(), Some(Ok(()))) {
                element.set_value("");
                let _ = element.focus();
            }
            empty.set(element.value().trim().is_empty());
        }
        version
    });
    // An answered question's buttons or form go away with it: the reader goes on typing here.
    Effect::new(move |seen: Option<usize>| {
        let version = answer.version().get();
        if seen.is_some_and(|seen| seen != version) && matches!(answer.value().get_untracked(), Some(Ok(()))) {
            if let Some(element) = textarea.get_untracked() {
                let _ = element.focus();
            }
        }
        version
    });
    let input_id = format!("composer-{conversation_id}");
    view! {
        <div class="drop-zone" on:dragover=|event: leptos::ev::DragEvent| event.prevent_default() on:drop=on_drop>
            <PostForm action=send class="composer">
                <input type="hidden" name="conversation_id" value=conversation_id/>
                <label class="visually-hidden" for=input_id.clone()>{lang.t(Text::Message)}</label>
                <textarea
                    id=input_id
                    name="content"
                    node_ref=textarea
                    rows="3"
                    required
                    placeholder=lang.t(Text::MessagePlaceholder)
                    on:input=move |_| {
                        if let Some(element) = textarea.get_untracked() {
                            empty.set(element.value().trim().is_empty());
                        }
                    }
                    on:keydown=move |event| send_on_enter(event, empty, send)
                    on:paste=on_paste
                ></textarea>
                <button type="submit" class="primary" disabled=move || send.pending().get() || empty.get()>
                    {lang.t(Text::Send)}
                </button>
            </PostForm>
        </div>
    }
}

/// Enter sends, Shift+Enter breaks the line. A key pressed while an input method composes (its
/// Enter picks the characters; Chromium reports it as key code 229) never sends.
fn send_on_enter(event: leptos::ev::KeyboardEvent, empty: RwSignal<bool>, send: FormAction) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;

        if event.key() != "Enter" || event.shift_key() || event.is_composing() || event.key_code() == 229 {
            return;
        }
        event.prevent_default();
        if empty.get_untracked() || send.pending().get_untracked() {
            return;
        }
        let form = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .and_then(|element| element.closest("form").ok().flatten())
            .and_then(|form| form.dyn_into::<web_sys::HtmlFormElement>().ok());
        if let Some(form) = form {
            // As the Send button would: the form's own submit, which `PostForm` hears.
            let _ = form.request_submit();
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (event, empty, send);
}

/// The last conversation loaded and its messages' digest.
type Loaded = StoredValue<Option<(ConversationView, String)>>;

/// Loads the conversation in the browser: only what came after the messages the page has (or
/// everything, when those are no longer current; see `get_conversation_since`).
#[cfg(feature = "hydrate")]
async fn load(id: String, loaded: Loaded) -> Result<Option<ConversationView>, crate::error::AppError> {
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
async fn load(id: String, _loaded: Loaded) -> Result<Option<ConversationView>, crate::error::AppError> {
    crate::api::get_conversation(id).await.map(Some)
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

/// One round of cheap polls while the assistant works: each asks only "anything new since
/// `known` messages?", and the first answer that says yes (or fails) loads the conversation.
struct FastPoll {
    id: String,
    known: usize,
    round: u64,
    rounds: StoredValue<u64>,
    poll: RwSignal<u64>,
    live: RwSignal<bool>,
}

fn poll_until_changed(state: FastPoll) {
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
fn listen(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_the_unit_that_fits() {
        assert_eq!(size_label(1023), "1023 B");
        assert_eq!(size_label(1024), "1 KiB");
        assert_eq!(size_label(1_048_575), "1023 KiB");
        assert_eq!(size_label(1_048_576), "1.0 MiB");
        assert_eq!(size_label(1_572_864), "1.5 MiB");
        assert_eq!(size_label(10 * 1_048_576 - 1), "10.0 MiB");
        assert_eq!(size_label(2_621_440 - 52_429), "2.4 MiB");
    }

    #[test]
    fn a_static_line_escapes_the_readers_text_and_keeps_the_stored_rendering() {
        let mut own = MessageView::line(7, MessageRole::User, "<b>bold</b> & <script>", None);
        own.note = Some("edited <i>".into());
        assert_eq!(
            static_message_html(&own, "You", "Stopped", None),
            "<span class=\"who\">You</span><p class=\"note\">edited &lt;i&gt;</p>\
             <div class=\"body\">&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;</div>"
        );
        let mut editable = MessageView::line(9, MessageRole::User, "plain", None);
        editable.editable = true;
        assert_eq!(
            static_message_html(&editable, "You", "Stopped", Some(("/c/x?q=\"a\"&edit=9#m9", "Edit <me>"))),
            "<span class=\"who\">You</span><div class=\"body\">plain</div>\
             <a class=\"edit-message\" href=\"/c/x?q=&quot;a&quot;&amp;edit=9#m9\">Edit &lt;me&gt;</a>"
        );
        let mut reply = MessageView::line(8, MessageRole::Assistant, "", Some("<p>Hi <em>there</em></p>"));
        reply.stopped = true;
        assert_eq!(
            static_message_html(&reply, "Assistant & co", "Stopped", None),
            "<span class=\"who\">Assistant &amp; co</span>\
             <div class=\"body markdown\"><p>Hi <em>there</em></p></div><span class=\"stopped-mark\">Stopped</span>"
        );
    }
}
