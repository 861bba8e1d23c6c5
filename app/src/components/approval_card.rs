//! The approval card: the pending calls of a turn, what each would change, and the answers the
//! server says it offers. Used by the chat and by the runs inbox.

use leptos::ev::MouseEvent;
use leptos::prelude::*;

use crate::form_action::{FormAction, PostForm};
use crate::i18n::Text;
use crate::model::{ApprovalCardView, CardAnswers, CardDecision, ChangeView, DiffKind, DiffView, PreviewView};
use crate::use_lang;

#[component]
pub fn ApprovalCard(conversation_id: String, card: ApprovalCardView, decide: FormAction) -> impl IntoView {
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
        // A reviewer approves or leaves it: denying is the owner's.
        CardAnswers::Review => ().into_any(),
    };
    // Approving a card whose preview failed only makes the previews again (the runtime never
    // applies what nobody saw), so the button says that.
    let approve = if card.preview_failed { Text::PreviewRetry } else { Text::ApprovalApply };
    let heading_id = format!("approval-card-title-{}", &card.digest[..card.digest.len().min(12)]);
    let labelled_by = heading_id.clone();
    view! {
        <section class="approval-card" aria-labelledby=labelled_by aria-busy=move || pending.get().to_string()>
            <h2 id=heading_id>{lang.t(title)}</h2>
            <p class="pending-note">{lang.t(Text::ApprovalPending)}</p>
            {card.needs_reviewer.then(|| view! { <p class="reviewer-note" role="note">{lang.t(Text::ReviewerWaits)}</p> })}
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
                        let has_preview = call.preview.is_some();
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
                                {call
                                    .sends_out_to
                                    .map(|to| {
                                        let sentence = lang.t(Text::ApprovalSendsOut).replace("{}", &to);
                                        view! { <p class="warning sends-out" role="note">{sentence}</p> }
                                    })}
                                {call.preview.map(|preview| view! { <Preview preview/> })}
                                // With a preview the arguments are one click away; without one
                                // they are what there is to read.
                                <details open=!has_preview>
                                    <summary>
                                        {lang.t(if has_preview { Text::ApprovalDetails } else { Text::ApprovalArguments })}
                                    </summary>
                                    <pre class="arguments">{call.arguments}</pre>
                                </details>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
            <PostForm action=decide class="card-answers">
                <input type="hidden" name="conversation_id" value=conversation_id/>
                <input type="hidden" name="digest" value=card.digest/>
                // In the runs inbox: the run the card belongs to, so the server can tell a card
                // the chat moved on from.
                {card.run.map(|run| view! { <input type="hidden" name="run" value=run/> })}
                {(!card.needs_reviewer).then(|| button(CardDecision::Approve, approve, "primary"))}
                {denials}
            </PostForm>
        </section>
    }
}

#[component]
fn Preview(preview: PreviewView) -> impl IntoView {
    let lang = use_lang();
    match preview {
        PreviewView::Failed { reason } => view! {
            <div class="preview failed" role="note">
                <p class="warning">{lang.t(Text::PreviewFailed)} " " <span class="reason">{reason}</span></p>
            </div>
        }
        .into_any(),
        PreviewView::Ready { subject, changes } => view! {
            <div class="preview">
                <p class="preview-subject">{subject}</p>
                {changes.into_iter().map(|change| view! { <Change change/> }).collect_view()}
            </div>
        }
        .into_any(),
    }
}

/// A field's text before and after, side by side: what goes is struck through on the left, what
/// comes is marked on the right. Model-chosen text, so always text nodes, never markup.
#[component]
fn Change(change: ChangeView) -> impl IntoView {
    let lang = use_lang();
    let side = |parts: &[DiffView], drop: DiffKind| {
        let shown: Vec<_> = parts.iter().filter(|part| part.kind != drop).cloned().collect();
        if shown.iter().all(|part| part.text.is_empty()) {
            return view! { <span class="empty">{lang.t(Text::PreviewEmpty)}</span> }.into_any();
        }
        shown
            .into_iter()
            .map(|part| match part.kind {
                DiffKind::Same => view! { <span>{part.text}</span> }.into_any(),
                DiffKind::Removed => view! { <del>{part.text}</del> }.into_any(),
                DiffKind::Added => view! { <ins>{part.text}</ins> }.into_any(),
            })
            .collect_view()
            .into_any()
    };
    let before = side(&change.diff, DiffKind::Added);
    let after = side(&change.diff, DiffKind::Removed);
    view! {
        <div class="change">
            <p class="field">{change.label}</p>
            <div class="sides">
                <div class="before">
                    <span class="side-label">{lang.t(Text::PreviewCurrent)}</span>
                    <p class="text">{before}</p>
                </div>
                <div class="after">
                    <span class="side-label">{lang.t(Text::PreviewProposed)}</span>
                    <p class="text">{after}</p>
                </div>
            </div>
        </div>
    }
}
