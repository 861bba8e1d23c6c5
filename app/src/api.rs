//! Server functions. They stay thin: find the user and the backend, call one service method,
//! map the error to a status. Stable endpoints keep curl, tests and other clients independent of
//! the checkout path (the default endpoint carries a hash of it).

use leptos::prelude::*;

use crate::error::AppError;
use crate::model::{ConversationSummary, ConversationView, SessionView};
use crate::text_json::TextJson;

#[server(endpoint = "login")]
pub async fn login(username: String, password: String) -> Result<(), AppError> {
    use crate::backend::{auth, client_info, device_cookie, fail, session_cookie};
    let session = auth()?.login(&username, &password, &client_info()).await.map_err(fail)?;
    let response = expect_context::<leptos_axum::ResponseOptions>();
    let device = session.device_token.as_ref().map(|token| device_cookie(token, session.device_max_age_seconds));
    for cookie in std::iter::once(session_cookie(&session.token, session.max_age_seconds)).chain(device) {
        if let Ok(value) = axum::http::HeaderValue::from_str(&cookie) {
            response.append_header(axum::http::header::SET_COOKIE, value);
        }
    }
    leptos_axum::redirect("/");
    Ok(())
}

#[server(endpoint = "logout")]
pub async fn logout() -> Result<(), AppError> {
    use crate::backend::{auth, fail, session_cookie, session_token};
    if let Some(token) = session_token() {
        auth()?.logout(&token).await.map_err(fail)?;
    }
    let response = expect_context::<leptos_axum::ResponseOptions>();
    let cookie = session_cookie("", 0);
    if let Ok(value) = axum::http::HeaderValue::from_str(&cookie) {
        response.append_header(axum::http::header::SET_COOKIE, value);
    }
    leptos_axum::redirect("/login");
    Ok(())
}

#[server(endpoint = "session")]
pub async fn session_info() -> Result<SessionView, AppError> {
    use crate::backend::{auth, fail, signed_in};
    let user = signed_in()?;
    auth()?.session(&user, crate::reader::request_lang()).await.map_err(fail)
}

#[server(endpoint = "conversations", output = TextJson)]
pub async fn list_conversations() -> Result<Vec<ConversationSummary>, AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.list_conversations(&user).await.map_err(fail)
}

#[server(endpoint = "create_conversation")]
pub async fn create_conversation(skill: Option<String>) -> Result<String, AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    let skill = skill.filter(|skill| !skill.is_empty());
    let id = chat()?.create_conversation(&user, skill.as_deref()).await.map_err(fail)?;
    leptos_axum::redirect(&format!("/c/{id}"));
    Ok(id)
}

#[server(endpoint = "conversation", output = TextJson)]
pub async fn get_conversation(id: String) -> Result<ConversationView, AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.conversation(&user, &id, crate::reader::request_lang()).await.map_err(fail)
}

/// The conversation as the page loads it again: `known` is the number of messages it shows and
/// `digest` their digest from the last load ([`crate::model::digests`]). When those are still the
/// conversation's first messages, unchanged, only the ones after them come back; otherwise all.
#[server(endpoint = "conversation_since", output = TextJson)]
pub async fn get_conversation_since(
    id: String,
    known: usize,
    digest: String,
) -> Result<crate::model::ConversationPart, AppError> {
    use crate::backend::{chat, fail, signed_in};
    use crate::model::{digests, ConversationPart};
    let user = signed_in()?;
    let mut view = chat()?.conversation(&user, &id, crate::reader::request_lang()).await.map_err(fail)?;
    let (prefix, whole) = digests(&view.messages, known);
    let from = if known > 0 && prefix.as_deref() == Some(digest.as_str()) { known } else { 0 };
    view.messages.drain(..from);
    Ok(ConversationPart { from, digest: whole, view })
}

/// The cheap poll: `after` is the number of messages the client already shows. The browser calls
/// it as a server function; the server answers its endpoint with a plain handler of the same
/// form and answers (`server::poll_route`, where the reason is), and this body only when told to
/// (`TOURGUIDE_POLL_ROUTE=server-fn`, to measure the two).
#[server(endpoint = "poll", output = TextJson)]
pub async fn poll_conversation(id: String, after: usize) -> Result<crate::model::PollView, AppError> {
    use crate::backend::{chat, fail, session_token};
    use crate::reader::browser_lang;
    let token = session_token().ok_or(AppError::Unauthenticated).map_err(fail)?;
    chat()?.poll(&token, &id, after, browser_lang()).await.map_err(fail)
}

#[server(endpoint = "send_message")]
pub async fn send_message(conversation_id: String, content: String) -> Result<(), AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.send_message(&user, &conversation_id, &content).await.map_err(fail)
}

/// Sets the reader's language ("" follows the browser) and reloads the page in it.
#[server(endpoint = "set_language")]
pub async fn set_language(language: String) -> Result<(), AppError> {
    use crate::backend::{auth, fail, signed_in};
    use crate::i18n::{Lang, Text};
    let user = signed_in()?;
    let language = match language.as_str() {
        "" => None,
        code => Some(Lang::parse(code).ok_or(AppError::Invalid(Text::Language)).map_err(fail)?),
    };
    auth()?.set_language(&user, language).await.map_err(fail)
}

/// Answers the question the conversation waits on: a button (`choice`, the option's value as JSON),
/// typed text (`free_text`) or a filled form (`fields`), exactly one of them; or `decline` for a
/// question that offers declining.
#[server(endpoint = "answer")]
pub async fn answer(
    conversation_id: String,
    digest: String,
    choice: Option<String>,
    free_text: Option<String>,
    fields: Option<std::collections::BTreeMap<String, String>>,
    decline: Option<String>,
    run: Option<String>,
) -> Result<(), AppError> {
    use crate::backend::{chat, fail, session_token};
    use crate::reader::browser_lang;
    use question::form::InputAnswer;
    // Its session is checked with the conversation it answers (`ANSWER_PATH`), not before.
    let token = session_token().ok_or(AppError::Unauthenticated).map_err(fail)?;
    let declined = decline.is_some_and(|decline| !decline.is_empty());
    let given = (choice.filter(|c| !c.is_empty()), free_text.filter(|t| !t.is_empty()), fields, declined);
    let answer = match given {
        (Some(choice), None, None, false) => {
            // Anything that is not JSON cannot equal an offered value.
            let value = serde_json::from_str(&choice).map_err(|_| fail(AppError::AnswerNotOffered))?;
            InputAnswer::Choice(value)
        }
        (None, Some(text), None, false) => InputAnswer::FreeText(text),
        (None, None, Some(fields), false) => InputAnswer::FormFields(fields),
        // A declining form may carry the fields it shows; they are not sent anywhere.
        (None, None, _, true) => InputAnswer::Decline,
        _ => return Err(fail(AppError::AnswerNotOffered)),
    };
    match run.filter(|run| !run.is_empty()) {
        Some(run) => {
            let user = chat()?.session_user(&token).await.map_err(fail)?;
            let lang = user.language.unwrap_or_else(browser_lang);
            chat()?.answer_run(&user, &conversation_id, &run, &digest, answer, lang).await
        }
        None => chat()?.answer(&token, &conversation_id, &digest, answer, browser_lang()).await,
    }
    .map_err(fail)
}

/// Decides on the approval card: `approve`, `deny`, `respond` (deny with `message` for the
/// model), `approve_edited` (with `edits`, see `model::edit_key`), or in a process run `variant`
/// or `skip` (with an optional `message`). `always` (`conversation` or `mine`) with an approval
/// approves the card's tools from now on.
#[server(endpoint = "decide")]
#[allow(clippy::too_many_arguments)]
pub async fn decide(
    conversation_id: String,
    digest: String,
    decision: String,
    run: Option<String>,
    message: Option<String>,
    edits: Option<std::collections::BTreeMap<String, String>>,
    always: Option<String>,
) -> Result<(), AppError> {
    use crate::backend::{chat, fail, signed_in};
    use crate::i18n::Text;
    use crate::model::{AlwaysScope, CardDecision, CardExtras};
    use crate::reader::request_lang;
    let user = signed_in()?;
    let decision = CardDecision::parse(&decision).ok_or(AppError::Invalid(Text::ErrorTransport)).map_err(fail)?;
    let always = match always.filter(|always| !always.is_empty()) {
        Some(always) => Some(AlwaysScope::parse(&always).ok_or(AppError::Invalid(Text::ErrorTransport)).map_err(fail)?),
        None => None,
    };
    // Only what the chosen answer takes: a plain Apply ignores the editing fields it posts beside.
    let edits = edits.filter(|_| decision == CardDecision::ApproveEdited).unwrap_or_default();
    let extras = CardExtras { message, edits, always };
    match run.filter(|run| !run.is_empty()) {
        Some(run) => chat()?.decide_run(&user, &conversation_id, &run, &digest, decision, extras, request_lang()).await,
        None => chat()?.decide(&user, &conversation_id, &digest, decision, extras, request_lang()).await,
    }
    .map_err(fail)
}

/// The reader's standing approvals ("always allow").
#[server(endpoint = "policies")]
pub async fn policies() -> Result<Vec<crate::model::PolicyView>, AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.policies(&user).await.map_err(fail)
}

/// Revokes one of the reader's standing approvals.
#[server(endpoint = "revoke_policy")]
pub async fn revoke_policy(policy: i64) -> Result<(), AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.revoke_policy(&user, policy).await.map_err(fail)?;
    if let Some(back) = crate::backend::plain_form_referer() {
        leptos_axum::redirect(&back);
    }
    Ok(())
}

/// Permits (`permitted` = "true") or withdraws "always for me" for a tool; admins only.
#[server(endpoint = "set_policy_permit")]
pub async fn set_policy_permit(tool: String, permitted: String) -> Result<(), AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.set_policy_permit(&user, &tool, permitted == "true").await.map_err(fail)?;
    if let Some(back) = crate::backend::plain_form_referer() {
        leptos_axum::redirect(&back);
    }
    Ok(())
}

/// Forgets the reader's sign-in to an OAuth MCP server (the shared one: admins only); its tokens
/// are deleted.
#[server(endpoint = "disconnect_mcp")]
pub async fn disconnect_mcp(server: String) -> Result<(), AppError> {
    use crate::backend::{fail, signed_in, tools};
    let user = signed_in()?;
    tools()?.disconnect(&user, &server).await.map_err(fail)?;
    if let Some(back) = crate::backend::plain_form_referer() {
        leptos_axum::redirect(&back);
    }
    Ok(())
}

/// The reader's runs that wait for a decision or an answer, in any conversation.
#[server(endpoint = "inbox", output = TextJson)]
pub async fn inbox() -> Result<crate::model::InboxView, AppError> {
    use crate::backend::{chat, fail, signed_in};
    use crate::reader::request_lang;
    let user = signed_in()?;
    chat()?.inbox(&user, request_lang()).await.map_err(fail)
}

/// How many runs wait for the reader, for the header (then kept up to date by `/events/user`).
#[server(endpoint = "waiting", output = TextJson)]
pub async fn waiting() -> Result<crate::model::WaitingView, AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.waiting(&user).await.map_err(fail)
}

/// Dismisses one of the reader's waiting runs from the runs inbox: it is cancelled without a
/// decision, with a line in its conversation and an audit row.
#[server(endpoint = "dismiss")]
pub async fn dismiss(conversation_id: String, run: String) -> Result<(), AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.dismiss_run(&user, &conversation_id, &run).await.map_err(fail)
}

/// The audit log's rows the reader may see, filtered and paged (see `model::AuditQuery`).
#[server(endpoint = "audit")]
pub async fn audit_log(
    user: Option<String>,
    tool: Option<String>,
    from: Option<String>,
    to: Option<String>,
    page: Option<u32>,
) -> Result<crate::model::AuditPageView, AppError> {
    use crate::backend::{audit, fail, signed_in};
    use crate::reader::request_lang;
    let reader = signed_in()?;
    let query = crate::model::AuditQuery { user, tool, from, to, page };
    audit()?.audit(&reader, &query, request_lang()).await.map_err(fail)
}

/// Runs a failed turn again over the transcript as it is.
#[server(endpoint = "retry")]
pub async fn retry(conversation_id: String) -> Result<(), AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.retry(&user, &conversation_id).await.map_err(fail)
}

/// Edits one of the reader's messages and runs the conversation again from it.
#[server(endpoint = "edit_message")]
pub async fn edit_message(conversation_id: String, message_id: i64, content: String) -> Result<(), AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.edit_message(&user, &conversation_id, message_id, &content).await.map_err(fail)?;
    // A plain form goes back to where it came from, by default with the editor still open
    // (`?edit=`); the page then shows the conversation the edit started.
    if let Some(back) = crate::backend::plain_form_referer() {
        leptos_axum::redirect(&crate::model::without_query_param(&back, "edit"));
    }
    Ok(())
}

/// Takes back a file attached for the next message.
#[server(endpoint = "remove_attachment")]
pub async fn remove_attachment(conversation_id: String, attachment_id: i64) -> Result<(), AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.remove_attachment(&user, &conversation_id, attachment_id).await.map_err(fail)
}

/// Stops the reply the assistant is writing.
#[server(endpoint = "stop")]
pub async fn stop_reply(conversation_id: String) -> Result<(), AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.stop(&user, &conversation_id).await.map_err(fail)
}

/// Starts a guided tour of a content page and opens its conversation.
/// With `panel` set, the tour opens in the floating panel beside the page; else on the chat page.
#[server(endpoint = "start_tour")]
pub async fn start_tour(page_id: i64, panel: Option<String>) -> Result<String, AppError> {
    use crate::backend::{chat, fail, signed_in};
    use crate::reader::request_lang;
    let user = signed_in()?;
    let id = chat()?.start_tour(&user, page_id, request_lang()).await.map_err(fail)?;
    if panel.is_some_and(|panel| !panel.is_empty()) {
        leptos_axum::redirect(&format!("/pages/{page_id}?c={id}"));
    } else {
        leptos_axum::redirect(&format!("/c/{id}"));
    }
    Ok(id)
}

#[server(endpoint = "pages", output = TextJson)]
pub async fn list_pages() -> Result<Vec<crate::model::PageSummaryView>, AppError> {
    use crate::backend::{content, fail, signed_in};
    let user = signed_in()?;
    content()?.list_pages(&user).await.map_err(fail)
}

#[server(endpoint = "page", output = TextJson)]
pub async fn get_page(id: i64) -> Result<crate::model::PageView, AppError> {
    use crate::backend::{content, fail, signed_in};
    let user = signed_in()?;
    content()?.page(&user, id).await.map_err(fail)
}

#[server(endpoint = "rename_conversation")]
pub async fn rename_conversation(conversation_id: String, title: String) -> Result<(), AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.rename_conversation(&user, &conversation_id, &title).await.map_err(fail)
}

/// Deletes a conversation for good and goes back to the chat page.
#[server(endpoint = "delete_conversation")]
pub async fn delete_conversation(conversation_id: String) -> Result<(), AppError> {
    use crate::backend::{chat, fail, signed_in};
    let user = signed_in()?;
    chat()?.delete_conversation(&user, &conversation_id).await.map_err(fail)?;
    leptos_axum::redirect("/");
    Ok(())
}

#[server(endpoint = "tools")]
pub async fn list_tools() -> Result<crate::model::ToolsView, AppError> {
    use crate::backend::{fail, signed_in, tools};
    let user = signed_in()?;
    tools()?.tools(&user).await.map_err(fail)
}

/// A checkbox sends its value when ticked and nothing otherwise.
#[cfg(feature = "ssr")]
fn ticked(value: Option<String>) -> bool {
    value.is_some_and(|value| !value.is_empty() && value != "false")
}

#[server(endpoint = "admin_accounts")]
pub async fn admin_accounts() -> Result<Vec<crate::model::AccountView>, AppError> {
    use crate::backend::{admin, fail, signed_in};
    let user = signed_in()?;
    admin()?.accounts(&user).await.map_err(fail)
}

#[server(endpoint = "admin_add_account")]
pub async fn admin_add_account(
    username: String,
    password: String,
    admin: Option<String>,
    may_approve_own: Option<String>,
) -> Result<(), AppError> {
    use crate::backend::{fail, signed_in};
    let user = signed_in()?;
    crate::backend::admin()?
        .add_account(&user, &username, &password, ticked(admin), ticked(may_approve_own))
        .await
        .map_err(fail)
}

#[server(endpoint = "admin_set_role")]
pub async fn admin_set_role(
    account: i64,
    admin: Option<String>,
    may_approve_own: Option<String>,
) -> Result<(), AppError> {
    use crate::backend::{fail, signed_in};
    let user = signed_in()?;
    crate::backend::admin()?.set_role(&user, account, ticked(admin), ticked(may_approve_own)).await.map_err(fail)
}

#[server(endpoint = "admin_set_password")]
pub async fn admin_set_password(account: i64, password: String) -> Result<(), AppError> {
    use crate::backend::{admin, fail, signed_in};
    let user = signed_in()?;
    admin()?.set_password(&user, account, &password).await.map_err(fail)
}

#[server(endpoint = "admin_end_sessions")]
pub async fn admin_end_sessions(account: i64) -> Result<(), AppError> {
    use crate::backend::{admin, fail, signed_in};
    let user = signed_in()?;
    admin()?.end_sessions(&user, account).await.map_err(fail)
}

#[server(endpoint = "admin_webhooks")]
pub async fn admin_webhooks() -> Result<crate::model::WebhooksView, AppError> {
    use crate::backend::{admin, fail, signed_in};
    let user = signed_in()?;
    admin()?.webhooks(&user).await.map_err(fail)
}

/// A webhook: its URL, its events (a checkbox each), and the secret the page showed (a new one
/// when none is given). Answers with the secret, once.
#[server(endpoint = "admin_add_webhook")]
pub async fn admin_add_webhook(
    url: String,
    waiting: Option<String>,
    decided: Option<String>,
    expired: Option<String>,
    failed: Option<String>,
    reminder: Option<String>,
    secret: Option<String>,
) -> Result<crate::model::WebhookCreated, AppError> {
    use crate::backend::{admin, fail, signed_in};
    let user = signed_in()?;
    let mut chosen = Vec::new();
    for (kind, checkbox) in [
        ("run.waiting", waiting),
        ("run.decided", decided),
        ("run.expired", expired),
        ("run.failed", failed),
        ("run.reminder", reminder),
    ] {
        if ticked(checkbox) {
            chosen.push(kind.to_string());
        }
    }
    let secret = secret.filter(|secret| !secret.trim().is_empty());
    admin()?.add_webhook(&user, &url, chosen, secret).await.map_err(fail)
}

#[server(endpoint = "admin_remove_webhook")]
pub async fn admin_remove_webhook(webhook: i64) -> Result<(), AppError> {
    use crate::backend::{admin, fail, signed_in};
    let user = signed_in()?;
    admin()?.remove_webhook(&user, webhook).await.map_err(fail)
}

#[server(endpoint = "admin_resend_delivery")]
pub async fn admin_resend_delivery(delivery: i64) -> Result<(), AppError> {
    use crate::backend::{admin, fail, signed_in};
    let user = signed_in()?;
    admin()?.resend_delivery(&user, delivery).await.map_err(fail)
}

/// The reader's e-mail address and whether they want mail of their waiting runs.
#[server(endpoint = "mail_settings")]
pub async fn mail_settings() -> Result<crate::model::MailSettingsView, AppError> {
    use crate::backend::{auth, fail, signed_in};
    let user = signed_in()?;
    auth()?.mail_settings(&user).await.map_err(fail)
}

/// Sets the reader's e-mail address ("" for none) and the opt-in (a checkbox).
#[server(endpoint = "set_mail")]
pub async fn set_mail(address: String, notify: Option<String>) -> Result<(), AppError> {
    use crate::backend::{auth, fail, signed_in};
    let user = signed_in()?;
    auth()?.set_mail(&user, &address, ticked(notify)).await.map_err(fail)?;
    if let Some(back) = crate::backend::plain_form_referer() {
        leptos_axum::redirect(&back);
    }
    Ok(())
}

/// The reader's sessions, this one marked.
#[server(endpoint = "sessions")]
pub async fn my_sessions() -> Result<Vec<crate::model::SessionItemView>, AppError> {
    use crate::backend::{auth, fail, session_token, signed_in};
    use crate::reader::request_lang;
    let user = signed_in()?;
    auth()?.sessions(&user, session_token().as_deref(), request_lang()).await.map_err(fail)
}

#[server(endpoint = "end_session")]
pub async fn end_session(handle: String) -> Result<(), AppError> {
    use crate::backend::{auth, fail, signed_in};
    let user = signed_in()?;
    auth()?.end_session(&user, &handle).await.map_err(fail)
}

#[server(endpoint = "end_other_sessions")]
pub async fn end_other_sessions() -> Result<(), AppError> {
    use crate::backend::{auth, fail, session_token, signed_in};
    let user = signed_in()?;
    let token = session_token().ok_or(AppError::Unauthenticated).map_err(fail)?;
    auth()?.end_other_sessions(&user, &token).await.map_err(fail)
}
