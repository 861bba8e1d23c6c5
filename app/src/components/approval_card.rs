//! The approval card: the pending calls of a turn, and the answers the server says it offers.

use leptos::ev::MouseEvent;
use leptos::prelude::*;

use crate::api::Decide;
use crate::i18n::Text;
use crate::model::{ApprovalCardView, CardAnswers, CardDecision};
use crate::use_lang;

#[component]
pub fn ApprovalCard(conversation_id: String, card: ApprovalCardView, decide: ServerAction<Decide>) -> impl IntoView {
    let lang = use_lang();
    let pending = Memo::new(move |_| decide.pending().get());
    let guard = move |event: MouseEvent| {
        if pending.get_untracked() {
            event.prevent_default();
        }
    };
    let title = if card.calls.len() > 1 { Text::ApprovalTitleMany } else { Text::ApprovalTitle };
    let button = move |decision: CardDecision, text: Text, class: &'static str| {
        view! {
            <button
                type="submit"
                name="decision"
                value=decision.as_str()
                class=class
                aria-disabled=move || pending.get().to_string()
                on:click=guard
            >
                {lang.t(text)}
            </button>
        }
    };
    let denials = match card.answers {
        CardAnswers::Process => view! {
            {button(CardDecision::Variant, Text::ApprovalVariant, "secondary")}
            {button(CardDecision::Skip, Text::ApprovalSkip, "secondary")}
        }
        .into_any(),
        CardAnswers::Plain => button(CardDecision::Deny, Text::ApprovalCancel, "secondary").into_any(),
    };
    view! {
        <section class="approval-card" aria-labelledby="approval-card-title" aria-busy=move || pending.get().to_string()>
            <h2 id="approval-card-title">{lang.t(title)}</h2>
            <p class="pending-note">{lang.t(Text::ApprovalPending)}</p>
            <ul class="calls">
                {card
                    .calls
                    .into_iter()
                    .map(|call| {
                        let (marker_class, marker) = if call.declares_write {
                            ("marker write", Text::ApprovalWrites)
                        } else {
                            ("marker read", Text::ApprovalReads)
                        };
                        view! {
                            <li class="call">
                                <div class="call-head">
                                    <code class="tool">{call.name}</code>
                                    <span class=marker_class>{lang.t(marker)}</span>
                                </div>
                                {call
                                    .origin
                                    .map(|origin| view! { <p class="origin">{lang.t(Text::ProposedBy)} " " {origin}</p> })}
                                {(!call.tool_registered).then(|| view! { <p class="warning">{lang.t(Text::ApprovalToolGone)}</p> })}
                                <details open>
                                    <summary>{lang.t(Text::ApprovalArguments)}</summary>
                                    <pre class="arguments">{call.arguments}</pre>
                                </details>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
            <ActionForm action=decide attr:class="card-answers">
                <input type="hidden" name="conversation_id" value=conversation_id/>
                <input type="hidden" name="digest" value=card.digest/>
                {button(CardDecision::Approve, Text::ApprovalApply, "primary")}
                {denials}
            </ActionForm>
        </section>
    }
}
