//! The runs inbox: every run of the reader's that waits for a decision or an answer, with the
//! same card and reply options as in the chat (and the same server checks), also for runs a chat
//! moved on from. Deciding here carries the run on; its chat shows that on its next load or event.

use leptos::prelude::*;

use crate::api::{inbox, Answer, Decide, Dismiss};
use crate::components::approval_card::ApprovalCard;
use crate::components::reply_options::ReplyOptions;
use crate::form_action::{FormAction, PostForm};
use crate::i18n::Text;
use crate::model::InboxItemView;
use crate::pages::header::Header;
use crate::use_lang;

#[component]
pub fn InboxPage() -> impl IntoView {
    let lang = use_lang();
    view! {
        <div class="app">
            <Header/>
            <main class="inbox">
                <h1>{lang.t(Text::InboxTitle)}</h1>
                <p class="lead">{lang.t(Text::InboxLead)}</p>
                <InboxItems/>
            </main>
        </div>
    }
}

/// The waiting runs with their cards and questions: the part of the inbox the browser runs.
#[island]
fn InboxItems() -> impl IntoView {
    provide_context(crate::initial_lang());
    let lang = use_lang();
    let decide = FormAction::new::<Decide>();
    let answer = FormAction::new::<Answer>();
    let dismiss = FormAction::new::<Dismiss>();
    // After every decision or answer the list is read again: the run left it, or came back with
    // the reason it was not taken. So it is when the runs that wait changed elsewhere (the
    // header's count heard it).
    let elsewhere = RwSignal::new(0u32);
    let _ = window_event_listener_untyped(crate::components::waiting::WAITING_EVENT, move |_| {
        elsewhere.update(|changes| *changes += 1)
    });
    let items = Resource::new(
        // Not after edits refused field by field: the card keeps what was typed.
        move || (decide.changes().get(), answer.version().get(), dismiss.version().get(), elsewhere.get()),
        |_| inbox(),
    );
    let refused = move || {
        let failed = decide
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| answer.value().get().and_then(Result::err))
            .or_else(|| dismiss.value().get().and_then(Result::err));
        failed.map(|error| view! { <p class="error" role="alert">{error.message(lang)}</p> })
    };
    view! {
        {refused}
        <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
            {move || Suspend::new(async move {
                match items.await {
                    Ok(inbox) if inbox.items.is_empty() => {
                        view! { <p class="muted empty-inbox">{lang.t(Text::InboxEmpty)}</p> }.into_any()
                    }
                    Ok(inbox) => view! {
                        <ul class="inbox-items">
                            {inbox
                                .items
                                .into_iter()
                                .map(|item| view! { <InboxItem item decide answer dismiss/> })
                                .collect_view()}
                        </ul>
                    }
                    .into_any(),
                    Err(error) => view! { <p class="error" role="alert">{error.message(lang)}</p> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn InboxItem(item: InboxItemView, decide: FormAction, answer: FormAction, dismiss: FormAction) -> impl IntoView {
    let lang = use_lang();
    let kind = if item.card.is_some() { Text::InboxWaitsApproval } else { Text::InboxWaitsAnswer };
    let id = item.conversation_id.clone();
    // Only the owner takes a run away; a reviewer's item is another owner's card.
    let (dismiss_id, dismiss_run) = (id.clone(), item.run_id.clone());
    let dismissible = item.review_of.is_none().then(move || {
        view! {
            <PostForm action=dismiss class="dismiss">
                <input type="hidden" name="conversation_id" value=dismiss_id/>
                <input type="hidden" name="run" value=dismiss_run/>
                <button type="submit" class="link dismiss" title=lang.t(Text::InboxDismissTitle)>
                    {lang.t(Text::InboxDismiss)}
                </button>
            </PostForm>
        }
    });
    view! {
        <li class="inbox-item" data-run-id=item.run_id.clone()>
            <div class="inbox-head">
                <a class="conversation-link" href=format!("/c/{}", item.conversation_id)>{item.conversation_title}</a>
                <span class="waits">{lang.t(kind)} " · " {lang.t(Text::InboxWaitingFor)} " " {item.waiting_for}</span>
                {dismissible}
            </div>
            {item.moved_on.then(|| view! { <p class="moved-on">{lang.t(Text::InboxMovedOn)}</p> })}
            {item.review_of.map(|owner| view! { <p class="review-of">{lang.t(Text::InboxReview)} " " <strong>{owner}</strong></p> })}
            {item.error.map(|error| view! { <p class="error notice" role="alert">{error}</p> })}
            {item.card.map(|card| view! { <ApprovalCard conversation_id=id.clone() card decide/> })}
            {item.question.map(|question| {
                view! {
                    <div class="inbox-question">
                        <p class="question-text">{question.form.question().to_string()}</p>
                        <ReplyOptions conversation_id=id.clone() question answer/>
                    </div>
                }
            })}
        </li>
    }
}
