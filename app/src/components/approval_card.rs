//! The approval card: the pending calls of a turn, what each would change, and the answers the
//! server says it offers. Used by the chat and by the runs inbox.

use leptos::ev::MouseEvent;
use leptos::prelude::*;

use crate::components::reply_options::Field;
use crate::error::{AppError, FieldProblem};
use crate::form_action::{FormAction, PostForm};
use crate::i18n::Text;
use crate::model::{
    edit_key, AlwaysOffer, ApprovalCardView, CallEdit, CardAnswers, CardDecision, ChangeView, DiffKind, DiffView,
    PendingCallView, PreviewView,
};
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
    // Edits refused field by field, for this card only: the form's post count once this card's
    // last post is back (the inbox's cards share one form action), or the refusal a post without
    // WASM came back to the page with (count 0; the address does not say which card sent it).
    let mine = RwSignal::new(None::<usize>);
    let problems = Memo::new(move |_| {
        let version = decide.version().get();
        match decide.value().get() {
            Some(Err(AppError::InvalidEdit(problems))) if version == 0 || mine.get() == Some(version) => problems,
            _ => Vec::new(),
        }
    });
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
    // The answers' buttons stand in one row after Apply; what opens more (a sentence, Edit,
    // Respond, Always allow) goes below them, in the same order for the eye and for Tab.
    let (denials, denial_more) = match card.answers {
        // The two answers of a guided process stay; either may carry a sentence for the model.
        CardAnswers::Process => (
            view! {
                {button(CardDecision::Variant, Text::ApprovalVariant, "secondary")}
                {button(CardDecision::Skip, Text::ApprovalSkip, "secondary")}
            }
            .into_any(),
            view! {
                <label class="card-sentence">
                    <span>{lang.t(Text::ApprovalSentenceOptional)}</span>
                    <textarea name="message" rows="2" maxlength="2000"></textarea>
                </label>
            }
            .into_any(),
        ),
        CardAnswers::Plain => (
            button(CardDecision::Deny, Text::ApprovalCancel, "secondary").into_any(),
            view! {
                <details class="card-respond">
                    <summary>{lang.t(Text::ApprovalRespond)}</summary>
                    <label>
                        <span>{lang.t(Text::ApprovalRespondLabel)}</span>
                        <textarea name="message" rows="3" maxlength="2000"></textarea>
                    </label>
                    {button(CardDecision::Respond, Text::ApprovalRespondSend, "secondary")}
                </details>
            }
            .into_any(),
        ),
        // A reviewer approves or leaves it: denying is the owner's.
        CardAnswers::Review => (().into_any(), ().into_any()),
    };
    // Editing is offered where the reader may approve: the same form, its own submit button.
    let edits: Vec<(usize, PendingCallView)> = card
        .calls
        .iter()
        .enumerate()
        .filter(|(_, call)| call.edit.is_some())
        .map(|(index, call)| (index, call.clone()))
        .collect();
    let editor = (!card.needs_reviewer && !edits.is_empty()).then(|| {
        view! {
            <details class="card-edit" open=move || !problems.get().is_empty()>
                <summary>{lang.t(Text::ApprovalEdit)}</summary>
                {edits.into_iter().map(|(index, call)| view! { <CallEditor index call problems/> }).collect_view()}
                {button(CardDecision::ApproveEdited, Text::ApprovalApplyEdited, "primary")}
            </details>
        }
    });
    let always = card.always.clone().filter(|_| !card.needs_reviewer).map(|offer| view! { <Always offer/> });
    // Approving a card whose preview failed only makes the previews again (the runtime never
    // applies what nobody saw), so the button says that.
    let approve = if card.preview_failed { Text::PreviewRetry } else { Text::ApprovalApply };
    let heading_id = format!("approval-card-title-{}", &card.digest[..card.digest.len().min(12)]);
    let labelled_by = heading_id.clone();
    view! {
        // An article, not a region: the runs inbox shows many cards with the same heading, and
        // landmarks must have names of their own (axe's `landmark-unique`).
        <article
            class="approval-card"
            aria-labelledby=labelled_by
            aria-busy=move || pending.get().to_string()
            on:submit=move |_| mine.set(Some(decide.version().get_untracked() + 1))
        >
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
                <div class="card-more">{always}{editor}{denial_more}</div>
            </PostForm>
        </article>
    }
}

/// "Always allow": one box for this conversation, or a choice with "for me" where an admin
/// permits it. Posted as `always`, taken with an approval only.
#[component]
fn Always(offer: AlwaysOffer) -> impl IntoView {
    let lang = use_lang();
    let here = lang.t(Text::ApprovalAlwaysHere).replace("{}", &offer.tools);
    if !offer.mine {
        return view! {
            <label class="card-always">
                <input type="checkbox" name="always" value="conversation"/>
                {here}
            </label>
        }
        .into_any();
    }
    let mine = lang.t(Text::ApprovalAlwaysMine).replace("{}", &offer.tools);
    view! {
        <fieldset class="card-always">
            <label>
                <input type="radio" name="always" value="" checked=true/>
                {lang.t(Text::ApprovalAlwaysAsk)}
            </label>
            <label>
                <input type="radio" name="always" value="conversation"/>
                {here}
            </label>
            <label>
                <input type="radio" name="always" value="mine"/>
                {mine}
            </label>
        </fieldset>
    }
    .into_any()
}

/// One call's arguments, editable: the proposed text in place, the schema's form, or JSON. No
/// field is `required` here: the plain Apply of the same form must not be held up by it. Each
/// field the server refused gets its sentence beside it (`problems`, of every call of the card);
/// one that matches no field shown (JSON, a nested value) goes below the call's fields.
#[component]
fn CallEditor(index: usize, call: PendingCallView, problems: Memo<Vec<FieldProblem>>) -> impl IntoView {
    let lang = use_lang();
    let Some(edit) = call.edit else { return ().into_any() };
    let field_problem = move |name: String| {
        Signal::derive(move || {
            problems.with(|problems| {
                problems
                    .iter()
                    .find(|problem| problem.call == Some(index) && problem.field == name)
                    .map(|problem| problem.message.clone())
            })
        })
    };
    let shown: Vec<String> = match &edit {
        CallEdit::Text { argument, .. } => vec![argument.clone()],
        CallEdit::Form { fields } => fields.iter().map(|field| field.name.clone()).collect(),
        CallEdit::Json { .. } => Vec::new(),
    };
    let others = move || {
        problems.with(|problems| {
            problems
                .iter()
                .filter(|problem| problem.call == Some(index) && !shown.contains(&problem.field))
                .map(|problem| {
                    let sentence = match problem.field.as_str() {
                        "" => problem.message.clone(),
                        field => format!("{field}: {}", problem.message),
                    };
                    view! { <p class="field-problem" role="alert" data-field=problem.field.clone()>{sentence}</p> }
                })
                .collect_view()
        })
    };
    let body = match edit {
        CallEdit::Text { argument, text } => {
            let problem = field_problem(argument.clone());
            view! {
                <label class="field">
                    <span>{lang.t(Text::ApprovalEditText)}</span>
                    <textarea name=format!("edits[{}]", edit_key(index, Some(&argument))) rows="4">{text}</textarea>
                    {move || {
                        problem
                            .get()
                            .map(|sentence| view! { <span class="field-problem" role="alert" data-field=argument.clone()>{sentence}</span> })
                    }}
                </label>
            }
            .into_any()
        }
        CallEdit::Form { fields } => {
            let prefix = edit_key(index, Some(""));
            fields
                .into_iter()
                .map(|field| {
                    let problem = field_problem(field.name.clone());
                    let field = question::form::FormField { required: false, ..field };
                    view! { <Field field edit=prefix.clone() problem/> }
                })
                .collect_view()
                .into_any()
        }
        CallEdit::Json { text } => view! {
            <label class="field">
                <span>{lang.t(Text::ApprovalEditJson)}</span>
                <textarea name=format!("edits[{}]", edit_key(index, None)) rows="6" spellcheck="false">{text}</textarea>
            </label>
        }
        .into_any(),
    };
    view! {
        <fieldset class="call-edit">
            <legend><code>{call.name}</code></legend>
            {body}
            {others}
        </fieldset>
    }
    .into_any()
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
