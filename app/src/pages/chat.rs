//! The full chat page: conversation list on the left, the selected conversation on the right.

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::api::{list_conversations, CreateConversation};
use crate::components::chat_panel::{ChatPanel, ConversationChanged, PanelPlace};
use crate::form_action::{FormAction, PostForm};
use crate::i18n::{Lang, Text};
use crate::model::{ConversationStatus, ConversationSummary};
use crate::page_data::{ListCodec, ListData};
use crate::pages::header::Header;
use crate::use_lang;

#[component]
pub fn ChatPage() -> impl IntoView {
    let conversation_id = use_params_map().with_untracked(|params| params.get("id"));
    view! {
        <div class="app">
            <Header/>
            <ChatWorkspace conversation_id place=PanelPlace::from_router()/>
        </div>
    }
}

/// The list of conversations and the open one: the part of the chat page the browser runs.
#[island]
fn ChatWorkspace(conversation_id: Option<String>, place: PanelPlace) -> impl IntoView {
    provide_context(crate::initial_lang());
    let lang = use_lang();
    let selected = Signal::stored(conversation_id);
    let create = FormAction::new::<CreateConversation>();
    let changed = RwSignal::new(0u64);
    provide_context(ConversationChanged(changed));
    let list_open = RwSignal::new(false);

    // The list's data stays out of the page: the client reads it from the list's markup.
    let conversations = Resource::<ListData, ListCodec>::new_with_options(
        move || (create.version().get(), changed.get()),
        |_| list_conversations(),
        false,
    );

    view! {
        <div class="chat-layout">
            <aside class="sidebar" aria-label=lang.t(Text::Conversations)>
                <PostForm action=create class="new-conversation">
                    <button type="submit" class="primary">{lang.t(Text::NewConversation)}</button>
                </PostForm>
                // On a narrow screen the list waits behind its button (a `<details>`, so it opens
                // without WASM too); on a wide one the stylesheet shows it open and hides the button.
                <details class="conversations-toggle" on:toggle=move |event| list_open.set(is_open(&event))>
                    <summary aria-controls="conversation-list" aria-expanded=move || list_open.get().to_string()>
                        {lang.t(Text::Conversations)}
                    </summary>
                    <div id="conversation-list">
                        <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                            {move || Suspend::new(async move {
                                let list = conversations.await;
                                let current = selected.get();
                                match list {
                                    Ok(list) => view! { <ConversationList list current/> }.into_any(),
                                    Err(error) => {
                                        view! { <p class="error" role="alert">{error.message(lang)}</p> }.into_any()
                                    }
                                }
                            })}
                        </Transition>
                    </div>
                </details>
            </aside>
            // The page's one `main`: the list beside it is complementary.
            <main class="conversation" aria-label=lang.t(Text::Conversation)>
                <ChatPanel conversation_id=selected place/>
            </main>
        </div>
    }
}

/// Whether the `<details>` a toggle event came from is open now.
fn is_open(event: &leptos::ev::Event) -> bool {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .is_some_and(|details| details.has_attribute("open"))
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = event;
        false
    }
}

#[component]
fn ConversationList(list: Vec<ConversationSummary>, current: Option<String>) -> impl IntoView {
    let lang = use_lang();
    if list.is_empty() {
        return view! { <p class="muted">{lang.t(Text::NoConversations)}</p> }.into_any();
    }
    // Nothing in an entry reacts (the router hears every link's click), so the list is written
    // as HTML: one view instead of five for each of up to a hundred entries, on every page.
    view! { <ul class="conversation-list" inner_html=conversation_list_html(&list, current.as_deref(), lang)></ul> }
        .into_any()
}

/// The entries of the list: a link to each conversation with its title and, while it is not idle,
/// its status; the open one marked as the current page.
fn conversation_list_html(list: &[ConversationSummary], current: Option<&str>, lang: Lang) -> String {
    use html_escape::{encode_double_quoted_attribute, encode_text};
    let mut html = String::with_capacity(list.len() * 160);
    for item in list {
        html.push_str("<li><a href=\"/c/");
        html.push_str(&encode_double_quoted_attribute(&item.id));
        html.push('"');
        if current == Some(item.id.as_str()) {
            html.push_str(" aria-current=\"page\"");
        }
        html.push_str("><span class=\"title\">");
        html.push_str(&encode_text(&item.title));
        html.push_str("</span><span class=\"status status-");
        html.push_str(item.status.as_str());
        html.push_str("\">");
        if let Some(label) = status_label(item.status) {
            html.push_str(&encode_text(lang.t(label)));
        }
        html.push_str("</span></a></li>");
    }
    html
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_escapes_titles_and_marks_the_open_conversation() {
        let item = |id: &str, title: &str, status| ConversationSummary { id: id.into(), title: title.into(), status };
        let list = [
            item("a1", "<b>Plans</b> & more", ConversationStatus::Idle),
            item("b\"2", "Second", ConversationStatus::AwaitingInput),
        ];
        assert_eq!(
            conversation_list_html(&list, Some("a1"), Lang::En),
            "<li><a href=\"/c/a1\" aria-current=\"page\"><span class=\"title\">&lt;b&gt;Plans&lt;/b&gt; &amp; more</span>\
             <span class=\"status status-idle\"></span></a></li>\
             <li><a href=\"/c/b&quot;2\"><span class=\"title\">Second</span>\
             <span class=\"status status-awaiting_input\">waiting for your answer</span></a></li>"
        );
    }
}
