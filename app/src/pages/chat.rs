//! The full chat page: conversation list on the left, the selected conversation on the right.

use std::time::Duration;

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::api::{
    get_conversation, list_conversations, session_info, CreateConversation, Logout, SendMessage, SetLanguage,
};
use crate::i18n::{Lang, Text};
use crate::model::{ConversationStatus, ConversationSummary, ConversationView, MessageRole};
use crate::use_lang;

/// How often the page asks again while the assistant works. SSE comes later; polling keeps working
/// behind proxies that buffer streams.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

#[component]
pub fn ChatPage() -> impl IntoView {
    let lang = use_lang();
    let params = use_params_map();
    let selected = Memo::new(move |_| params.read().get("id"));
    let create = ServerAction::<CreateConversation>::new();
    let send = ServerAction::<SendMessage>::new();
    let poll = RwSignal::new(0u64);

    let session = Resource::new(|| (), |_| session_info());
    let conversations = Resource::new(
        move || (create.version().get(), send.version().get(), poll.get()),
        |_| list_conversations(),
    );
    let conversation = Resource::new(
        move || (selected.get(), send.version().get(), poll.get()),
        |(id, _, _)| async move {
            match id {
                Some(id) => get_conversation(id).await.map(Some),
                None => Ok(None),
            }
        },
    );

    Effect::new(move |_| {
        let processing = conversation
            .get()
            .and_then(|result| result.ok())
            .flatten()
            .is_some_and(|view| view.status == ConversationStatus::Processing);
        if processing {
            set_timeout(move || poll.update(|tick| *tick += 1), POLL_INTERVAL);
        }
    });

    view! {
        <div class="app">
            <Header session/>
            <div class="chat-layout">
                <aside class="sidebar" aria-label=lang.t(Text::Conversations)>
                    <ActionForm action=create attr:class="new-conversation">
                        <button type="submit" class="primary">{lang.t(Text::NewConversation)}</button>
                    </ActionForm>
                    <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                        {move || Suspend::new(async move {
                            match conversations.await {
                                Ok(list) => view! { <ConversationList list selected/> }.into_any(),
                                Err(error) => {
                                    view! { <p class="error" role="alert">{error.message(lang)}</p> }
                                        .into_any()
                                }
                            }
                        })}
                    </Transition>
                </aside>
                <section class="conversation" aria-label=lang.t(Text::Conversation)>
                    <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                        {move || Suspend::new(async move {
                            match conversation.await {
                                Ok(Some(view)) => view! { <Transcript conversation=view/> }.into_any(),
                                Ok(None) => view! { <EmptyState/> }.into_any(),
                                Err(error) => {
                                    view! { <p class="error" role="alert">{error.message(lang)}</p> }
                                        .into_any()
                                }
                            }
                        })}
                    </Transition>
                    {move || selected.get().map(|id| view! { <Composer conversation_id=id send/> })}
                </section>
            </div>
        </div>
    }
}

#[component]
fn Header(session: Resource<Result<crate::model::SessionView, crate::error::AppError>>) -> impl IntoView {
    let lang = use_lang();
    let logout = ServerAction::<Logout>::new();
    let set_language = ServerAction::<SetLanguage>::new();
    // Every text on the page is in the old language: load it again in the new one.
    Effect::new(move |_| {
        if let Some(Ok(())) = set_language.value().get() {
            let _ = window().location().reload();
        }
    });
    view! {
        <header class="topbar">
            <a class="brand" href="/">"Tourguide"</a>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    session.await.ok().map(|session| {
                        view! {
                            <span class="model" class:demo=session.model_is_demo title=lang.t(Text::ModelTitle)>
                                {session.model_label.clone()}
                                {session.model_is_demo.then(|| view! { <span class="badge">{lang.t(Text::Demo)}</span> })}
                            </span>
                            <span class="user">{session.username.clone()}</span>
                        }
                    })
                })}
            </Transition>
            <ActionForm action=set_language attr:class="language">
                <span class="visually-hidden">{lang.t(Text::Language)}</span>
                {Lang::ALL
                    .into_iter()
                    .map(|option| {
                        view! {
                            <button
                                type="submit"
                                class="link"
                                name="language"
                                value=option.code()
                                lang=option.code()
                                aria-pressed=if option == lang { "true" } else { "false" }
                                title=option.name()
                            >
                                {option.code().to_uppercase()}
                            </button>
                        }
                    })
                    .collect_view()}
            </ActionForm>
            <ActionForm action=logout attr:class="logout">
                <button type="submit" class="link">{lang.t(Text::SignOut)}</button>
            </ActionForm>
        </header>
    }
}

#[component]
fn ConversationList(list: Vec<ConversationSummary>, selected: Memo<Option<String>>) -> impl IntoView {
    let lang = use_lang();
    if list.is_empty() {
        return view! { <p class="muted">{lang.t(Text::NoConversations)}</p> }.into_any();
    }
    view! {
        <ul class="conversation-list">
            {list
                .into_iter()
                .map(|item| {
                    let href = format!("/c/{}", item.id);
                    let id = item.id.clone();
                    let current = move || selected.get().as_deref() == Some(id.as_str());
                    view! {
                        <li>
                            <a href=href aria-current=move || current().then_some("page")>
                                <span class="title">{item.title}</span>
                                <span class=format!("status status-{}", item.status.as_str())>
                                    {status_label(item.status).map(|text| lang.t(text))}
                                </span>
                            </a>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
    .into_any()
}

#[component]
fn Transcript(conversation: ConversationView) -> impl IntoView {
    let lang = use_lang();
    let working = conversation.status == ConversationStatus::Processing;
    view! {
        <h1 class="conversation-title">{conversation.title.clone()}</h1>
        <ol class="messages" aria-live="polite" data-status=conversation.status.as_str()>
            {conversation
                .messages
                .into_iter()
                .map(|message| {
                    let (class, who) = match message.role {
                        MessageRole::User => ("message user", lang.t(Text::You)),
                        MessageRole::Assistant => ("message assistant", lang.t(Text::Assistant)),
                    };
                    view! {
                        <li class=class data-message-id=message.id>
                            <span class="who">{who}</span>
                            <div class="body">{message.content}</div>
                        </li>
                    }
                })
                .collect_view()}
        </ol>
        {working.then(|| view! { <p class="working" role="status">{lang.t(Text::Working)}</p> })}
        {conversation.error.map(|error| view! { <p class="error" role="alert">{error}</p> })}
    }
}

#[component]
fn Composer(conversation_id: String, send: ServerAction<SendMessage>) -> impl IntoView {
    let lang = use_lang();
    let textarea = NodeRef::<leptos::html::Textarea>::new();
    // A sent message leaves the box empty; a refused one keeps the text so nothing is lost.
    Effect::new(move |_| {
        if let Some(Ok(())) = send.value().get() {
            if let Some(element) = textarea.get() {
                element.set_value("");
            }
        }
    });
    let error = move || {
        send.value().get().and_then(|result| result.err()).map(|error| {
            view! { <p class="error" role="alert">{error.message(lang)}</p> }
        })
    };
    view! {
        <ActionForm action=send attr:class="composer">
            <input type="hidden" name="conversation_id" value=conversation_id/>
            <label class="visually-hidden" for="composer-input">{lang.t(Text::Message)}</label>
            <textarea
                id="composer-input"
                name="content"
                node_ref=textarea
                rows="3"
                required
                placeholder=lang.t(Text::MessagePlaceholder)
            ></textarea>
            <button type="submit" class="primary" disabled=move || send.pending().get()>{lang.t(Text::Send)}</button>
        </ActionForm>
        {error}
    }
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

fn status_label(status: ConversationStatus) -> Option<Text> {
    match status {
        ConversationStatus::Idle => None,
        ConversationStatus::Processing => Some(Text::StatusWorking),
        ConversationStatus::AwaitingApproval => Some(Text::StatusAwaitingApproval),
        ConversationStatus::AwaitingInput => Some(Text::StatusAwaitingInput),
        ConversationStatus::Failed => Some(Text::StatusFailed),
    }
}
