//! The answers to a question, above the chat input: reply buttons for a choice, a small form, or a
//! plain sentence that the chat cannot show the question. Both chat surfaces render this one.

use leptos::ev::MouseEvent;
use leptos::prelude::*;

use crate::error::AppError;
use crate::form_action::{FormAction, PostForm};
use crate::i18n::Text;
use crate::model::QuestionView;
use crate::use_lang;
use question::form::{multi_select_key, Choice, FieldKind, Form, FormField, InputPauseForm};

/// Names the run the question belongs to when it is answered outside its conversation (the
/// runs inbox), so the server can tell a question the chat moved on from.
fn run_input(run: Option<String>) -> impl IntoView {
    run.map(|run| view! { <input type="hidden" name="run" value=run/> })
}

/// While an answer travels the buttons stay focusable (focus stays where it is) but do nothing.
fn guard(pending: Memo<bool>) -> impl Fn(MouseEvent) + Clone + 'static {
    move |event: MouseEvent| {
        if pending.get_untracked() {
            event.prevent_default();
        }
    }
}

#[component]
pub fn ReplyOptions(conversation_id: String, question: QuestionView, answer: FormAction) -> impl IntoView {
    let pending = Memo::new(move |_| answer.pending().get());
    let lang = use_lang();
    let asked_by = question.asked_by.clone().map(|source| {
        view! { <p class="asked-by">{lang.t(Text::AskedBy)} " " <strong>{source}</strong></p> }
    });
    // A per-user MCP server the reader has not connected: the link to connect it (in a tab of its
    // own, so the conversation stays), then Continue.
    let connect = question.connect.clone().map(|server| {
        view! {
            <form class="connect-first" method="post" action=crate::model::MCP_CONNECT_PATH target="_blank">
                <input type="hidden" name="server" value=server.clone()/>
                <button type="submit" class="mcp-connect">
                    {lang.t(Text::McpConnectServer).replacen("{}", &server, 1)}
                </button>
                " "
                <span class="hint">{lang.t(Text::McpConnectThenContinue)}</span>
            </form>
        }
    });
    let decline = question.declinable.then(|| {
        view! { <DeclineButton conversation_id=conversation_id.clone() digest=question.digest.clone() run=question.run.clone() answer pending/> }
    });
    let options = match (question.link, question.form) {
        (Some(link), _) => {
            view! { <LinkCard conversation_id digest=question.digest run=question.run link answer pending/> }.into_any()
        }
        (None, InputPauseForm::Choice(choice)) => {
            view! { <ChoiceButtons conversation_id digest=question.digest run=question.run choice answer pending/> }
                .into_any()
        }
        (None, InputPauseForm::Form(form)) => {
            view! { <AnswerForm conversation_id digest=question.digest run=question.run form answer pending/> }
                .into_any()
        }
        (None, InputPauseForm::Unsupported { .. }) => view! {
            <div class="reply-options unsupported" role="group" aria-label=lang.t(Text::ReplyOptions)>
                <p>{lang.t(Text::InputUnsupported)}</p>
                <p class="hint">{lang.t(Text::MessageEndsQuestion)}</p>
            </div>
        }
        .into_any(),
    };
    view! { <div class="question">{asked_by} {connect} {options} {decline}</div> }
}

/// A page an MCP server asks the reader to open: who asks, the host the link goes to (in full),
/// and the address itself; Open is a plain link into a new tab that knows nothing of this one
/// (the reader's click, never opened for them), Done answers the question once they are through.
#[component]
fn LinkCard(
    conversation_id: String,
    digest: String,
    run: Option<String>,
    link: crate::model::LinkView,
    answer: FormAction,
    pending: Memo<bool>,
) -> impl IntoView {
    let lang = use_lang();
    let done = serde_json::to_string("done").unwrap_or_default();
    view! {
        <div class="reply-options link-question" role="group" aria-label=lang.t(Text::ReplyOptions) aria-busy=move || pending.get().to_string()>
            <p class="link-host">
                {lang.t(Text::McpLinkAsks).replacen("{}", &link.server, 1)} " " <strong class="host">{link.host}</strong>
            </p>
            <p class="link-url"><code>{link.url.clone()}</code></p>
            <PostForm action=answer class="reply-buttons">
                <input type="hidden" name="conversation_id" value=conversation_id/>
                <input type="hidden" name="digest" value=digest/>
                {run_input(run)}
                <a class="button link-open" href=link.url target="_blank" rel="noopener noreferrer">
                    {lang.t(Text::McpLinkOpen)}
                </a>
                <button
                    type="submit"
                    class="reply-option"
                    name="choice"
                    value=done
                    aria-disabled=move || pending.get().to_string()
                    on:click=guard(pending)
                >
                    {lang.t(Text::McpLinkDone)}
                </button>
            </PostForm>
            <p class="hint">{lang.t(Text::McpLinkHint)}</p>
        </div>
    }
}

/// "Decline" for a question a tool asked while it ran: the tool is told no, nothing else is sent.
#[component]
fn DeclineButton(
    conversation_id: String,
    digest: String,
    run: Option<String>,
    answer: FormAction,
    pending: Memo<bool>,
) -> impl IntoView {
    let lang = use_lang();
    view! {
        <PostForm action=answer class="decline-form">
            <input type="hidden" name="conversation_id" value=conversation_id/>
            <input type="hidden" name="digest" value=digest/>
                {run_input(run)}
            <button
                type="submit"
                class="secondary"
                name="decline"
                value="true"
                aria-disabled=move || pending.get().to_string()
                on:click=guard(pending)
            >
                {lang.t(Text::Decline)}
            </button>
        </PostForm>
    }
}

#[component]
fn ChoiceButtons(
    conversation_id: String,
    digest: String,
    run: Option<String>,
    choice: Choice,
    answer: FormAction,
    pending: Memo<bool>,
) -> impl IntoView {
    let lang = use_lang();
    let hint = if choice.free_text_property.is_some() { Text::FreeTextHint } else { Text::MessageEndsQuestion };
    view! {
        <div class="reply-options" role="group" aria-label=lang.t(Text::ReplyOptions) aria-busy=move || pending.get().to_string()>
            <PostForm action=answer class="reply-buttons">
                <input type="hidden" name="conversation_id" value=conversation_id/>
                <input type="hidden" name="digest" value=digest/>
                {run_input(run)}
                {choice
                    .options
                    .into_iter()
                    .map(|option| {
                        let value = serde_json::to_string(&option.value).unwrap_or_default();
                        view! {
                            <button
                                type="submit"
                                class="reply-option"
                                name="choice"
                                value=value
                                aria-disabled=move || pending.get().to_string()
                                on:click=guard(pending)
                            >
                                {option.label}
                            </button>
                        }
                    })
                    .collect_view()}
            </PostForm>
            <p class="hint">{lang.t(hint)}</p>
        </div>
    }
}

#[component]
fn AnswerForm(
    conversation_id: String,
    digest: String,
    run: Option<String>,
    form: Form,
    answer: FormAction,
    pending: Memo<bool>,
) -> impl IntoView {
    let lang = use_lang();
    view! {
        <div class="reply-options form" role="group" aria-label=lang.t(Text::ReplyOptions)>
            <PostForm action=answer class="answer-form">
                <input type="hidden" name="conversation_id" value=conversation_id/>
                <input type="hidden" name="digest" value=digest/>
                {run_input(run)}
                {form
                    .fields
                    .into_iter()
                    .map(|field| {
                        let problem = answer_problem(answer, field.name.clone());
                        view! { <Field field problem/> }
                    })
                    .collect_view()}
                <button
                    type="submit"
                    class="primary"
                    aria-disabled=move || pending.get().to_string()
                    on:click=guard(pending)
                >
                    {lang.t(Text::FormSubmit)}
                </button>
            </PostForm>
            <p class="hint">{lang.t(Text::MessageEndsQuestion)}</p>
        </div>
    }
}

/// Why the server refused the value last posted in field `name` of this form, if it did (after a
/// post without WASM too: the refusal comes back in the address, see `form_action`).
fn answer_problem(answer: FormAction, name: String) -> Signal<Option<String>> {
    Signal::derive(move || match answer.value().get() {
        Some(Err(AppError::InvalidAnswer(problems))) => {
            problems.into_iter().find(|problem| problem.field == name).map(|problem| problem.message)
        }
        _ => None,
    })
}

/// The sentence beside a field whose value was refused; `id` is what the field's
/// `aria-describedby` names.
fn problem_line(field_name: String, id: String, problem: Option<Signal<Option<String>>>) -> impl IntoView {
    problem.map(|problem| {
        move || {
            problem.get().map(|sentence| {
                view! { <p class="field-problem" role="alert" id=id.clone() data-field=field_name.clone()>{sentence}</p> }
            })
        }
    })
}

/// A refused field's `aria-invalid` and `aria-describedby` (its sentence, `problem_id`); neither
/// while it has no sentence.
fn invalid_marks(
    problem: Option<Signal<Option<String>>>,
    problem_id: String,
) -> (impl Fn() -> Option<&'static str> + Clone, impl Fn() -> Option<String> + Clone) {
    let refused = move || problem.is_some_and(|problem| problem.with(Option::is_some));
    (move || refused().then_some("true"), move || refused().then(|| problem_id.clone()))
}

/// The text a value pre-fills an input with.
fn shown(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// One field of a form read from a schema. `edit`: the field edits argument `name` of the call
/// whose posted key prefix this is (`edits[<prefix><name>]`, see `model::edit_key`), else it
/// answers a question (`fields[<name>]`). `problem`: why the server refused the value posted in
/// it, shown beside it.
#[component]
pub(crate) fn Field(
    field: FormField,
    #[prop(optional)] edit: Option<String>,
    #[prop(optional)] problem: Option<Signal<Option<String>>>,
) -> impl IntoView {
    let lang = use_lang();
    let (name, id) = match &edit {
        Some(prefix) => {
            (format!("edits[{prefix}{}]", field.name), format!("edit-{}{}", prefix.replace('/', "-"), field.name))
        }
        None => (format!("fields[{}]", field.name), format!("field-{}", field.name)),
    };
    let label = view! {
        <label for=id.clone()>
            {field.label.clone()}
            {field.required.then(|| view! { <span class="required">" (" {lang.t(Text::Required)} ")"</span> })}
        </label>
    };
    let description = field.description.clone().map(|text| view! { <small class="description">{text}</small> });
    let default = field.default.clone();
    let prefill = default.as_ref().map(shown);
    let problem_id = format!("{id}-problem");
    let (invalid, described) = invalid_marks(problem, problem_id.clone());
    let control = match field.kind {
        FieldKind::Boolean => {
            let checked = default == Some(serde_json::Value::Bool(true));
            view! {
                <input
                    type="checkbox"
                    id=id
                    name=name
                    value="true"
                    checked=checked
                    aria-invalid=invalid
                    aria-describedby=described
                />
            }
            .into_any()
        }
        FieldKind::Select => view! {
            <select id=id name=name required=field.required aria-invalid=invalid aria-describedby=described>
                <option value="">"—"</option>
                {field
                    .options
                    .into_iter()
                    .map(|option| {
                        let selected = default.as_ref() == Some(&option.value);
                        view! { <option value=shown(&option.value) selected=selected>{option.label}</option> }
                    })
                    .collect_view()}
            </select>
        }
        .into_any(),
        // A group of checkboxes is named by its legend (in `MultiSelect` below), not a label.
        FieldKind::MultiSelect => {
            let marks = (invalid, described);
            let problem = problem_line(field.name.clone(), problem_id, problem).into_any();
            return view! { <MultiSelect field problem marks/> }.into_any();
        }
        FieldKind::Integer => view! {
            <input
                type="number"
                step="1"
                inputmode="numeric"
                id=id
                name=name
                required=field.required
                value=prefill
                aria-invalid=invalid
                aria-describedby=described
            />
        }
        .into_any(),
        FieldKind::Number => view! {
            <input
                type="number"
                step="any"
                inputmode="decimal"
                id=id
                name=name
                required=field.required
                value=prefill
                aria-invalid=invalid
                aria-describedby=described
            />
        }
        .into_any(),
        FieldKind::Text => {
            let max = field.max_length.map(|max| max.to_string());
            view! {
                <input
                    type="text"
                    id=id
                    name=name
                    required=field.required
                    maxlength=max
                    value=prefill
                    aria-invalid=invalid
                    aria-describedby=described
                />
            }
            .into_any()
        }
    };
    let problem = problem_line(field.name.clone(), problem_id, problem);
    view! { <div class="field">{label} {control} {description} {problem}</div> }.into_any()
}

/// Several of the options: one checkbox each, in a fieldset its legend names; the schema's
/// default comes ticked. `marks`: `aria-invalid` for each box, `aria-describedby` for the group.
#[component]
fn MultiSelect<I, D>(field: FormField, problem: AnyView, marks: (I, D)) -> impl IntoView
where
    I: Fn() -> Option<&'static str> + Clone + Send + Sync + 'static,
    D: Fn() -> Option<String> + Clone + Send + Sync + 'static,
{
    let (invalid, described) = marks;
    let lang = use_lang();
    let picked = field.default.as_ref().and_then(|value| value.as_array().cloned()).unwrap_or_default();
    let field_name = field.name.clone();
    view! {
        <fieldset class="field checkboxes" id=format!("field-{}", field.name) aria-describedby=described>
            <legend>
                {field.label.clone()}
                {field.required.then(|| view! { <span class="required">" (" {lang.t(Text::Required)} ")"</span> })}
            </legend>
            {field
                .options
                .into_iter()
                .enumerate()
                .map(|(index, option)| {
                    let checked = picked.contains(&option.value);
                    let name = format!("fields[{}]", multi_select_key(&field_name, index));
                    view! {
                        <label class="checkbox">
                            <input type="checkbox" name=name value="on" checked=checked aria-invalid=invalid.clone()/>
                            {option.label}
                        </label>
                    }
                })
                .collect_view()}
            {field.description.map(|text| view! { <small class="description">{text}</small> })}
            {problem}
        </fieldset>
    }
}
