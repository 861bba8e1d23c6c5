//! The full chat page: conversation list on the left, the selected conversation on the right.

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::api::{list_conversations, CreateConversation};
use crate::components::chat_panel::{ChatPanel, ConversationChanged};
use crate::i18n::Text;
use crate::model::{ConversationStatus, ConversationSummary};
use crate::pages::header::Header;
use crate::use_lang;

#[component]
pub fn ChatPage() -> impl IntoView {
    let lang = use_lang();
    let params = use_params_map();
    let selected = Memo::new(move |_| params.read().get("id"));
    let create = ServerAction::<CreateConversation>::new();
    let changed = RwSignal::new(0u64);
    provide_context(ConversationChanged(changed));

    let conversations = Resource::new(move || (create.version().get(), changed.get()), |_| list_conversations());

    view! {
        <div class="app">
            <Header/>
            <div class="chat-layout">
                <aside class="sidebar" aria-label=lang.t(Text::Conversations)>
                    <ActionForm action=create attr:class="new-conversation">
                        <button type="submit" class="primary">{lang.t(Text::NewConversation)}</button>
                    </ActionForm>
                    <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                        {move || Suspend::new(async move {
                            let list = conversations.await;
                            // Read here, so the list is drawn again when another conversation
                            // is opened: one subscriber for the list instead of one per entry.
                            // A hundred of those took a sixth of a long conversation's page.
                            let current = selected.get();
                            match list {
                                Ok(list) => view! { <ConversationList list current/> }.into_any(),
                                Err(error) => {
                                    view! { <p class="error" role="alert">{error.message(lang)}</p> }.into_any()
                                }
                            }
                        })}
                    </Transition>
                </aside>
                <section class="conversation" aria-label=lang.t(Text::Conversation)>
                    <ChatPanel conversation_id=selected/>
                </section>
            </div>
        </div>
    }
}

#[component]
fn ConversationList(list: Vec<ConversationSummary>, current: Option<String>) -> impl IntoView {
    let lang = use_lang();
    if list.is_empty() {
        return view! { <p class="muted">{lang.t(Text::NoConversations)}</p> }.into_any();
    }
    view! {
        <ul class="conversation-list">
            {list
                .into_iter()
                .map(|item| {
                    let is_current = current.as_deref() == Some(item.id.as_str());
                    let href = format!("/c/{}", item.id);
                    view! {
                        <li>
                            <a href=href aria-current=is_current.then_some("page")>
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

fn status_label(status: ConversationStatus) -> Option<Text> {
    match status {
        ConversationStatus::Idle => None,
        ConversationStatus::Processing => Some(Text::StatusWorking),
        ConversationStatus::AwaitingApproval => Some(Text::StatusAwaitingApproval),
        ConversationStatus::AwaitingInput => Some(Text::StatusAwaitingInput),
        ConversationStatus::Failed => Some(Text::StatusFailed),
    }
}
