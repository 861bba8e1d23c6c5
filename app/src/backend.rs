//! The seams between server functions (here, in `app`) and the services (in `server`).
//!
//! `app` must not know SQL or the runtime, so the server provides implementations of
//! [`AuthBackend`], [`ChatBackend`], [`ContentBackend`] and [`ToolsBackend`] as Leptos context ([`Backends`]), and
//! the signed-in user as a request extension.

use std::sync::Arc;

use async_trait::async_trait;
use leptos::prelude::*;

use crate::error::AppError;
use crate::i18n::Lang;
// Their old place: the server names them from here.
use crate::model::{
    CardDecision, ConversationSummary, ConversationView, PageSummaryView, PageView, PollView, SessionView, ToolsView,
};
pub use crate::reader::{request_lang, CurrentUser};
use question::form::InputAnswer;

/// A fresh session: the cookie value to hand to the browser.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub token: String,
    pub max_age_seconds: i64,
    /// The device cookie's new value ([`DEVICE_COOKIE`]), which replaces the one the browser had.
    pub device_token: Option<String>,
    pub device_max_age_seconds: i64,
}

/// Signing in and out, and what the header shows of the session.
#[async_trait]
pub trait AuthBackend: Send + Sync + 'static {
    async fn login(&self, username: &str, password: &str, client: &ClientInfo) -> Result<NewSession, AppError>;
    /// The user's sessions; `current_token` marks the one they ask from.
    async fn sessions(
        &self,
        user: &CurrentUser,
        current_token: Option<&str>,
        lang: Lang,
    ) -> Result<Vec<crate::model::SessionItemView>, AppError>;
    /// Ends one of the user's own sessions (404 for a handle they do not have).
    async fn end_session(&self, user: &CurrentUser, handle: &str) -> Result<(), AppError>;
    async fn end_other_sessions(&self, user: &CurrentUser, current_token: &str) -> Result<(), AppError>;
    async fn logout(&self, session_token: &str) -> Result<(), AppError>;
    async fn session(&self, user: &CurrentUser, lang: Lang) -> Result<SessionView, AppError>;
    async fn set_language(&self, user: &CurrentUser, language: Option<Lang>) -> Result<(), AppError>;
    // e-mail
    async fn mail_settings(&self, user: &CurrentUser) -> Result<crate::model::MailSettingsView, AppError>;
    /// Stores the reader's address ("" for none) and opt-in; a malformed address, or the opt-in
    /// without one, is refused and nothing changes.
    async fn set_mail(&self, user: &CurrentUser, address: &str, notify: bool) -> Result<(), AppError>;
}

/// Conversations, their questions and cards.
#[async_trait]
pub trait ChatBackend: Send + Sync + 'static {
    async fn list_conversations(&self, user: &CurrentUser) -> Result<Vec<ConversationSummary>, AppError>;
    async fn create_conversation(&self, user: &CurrentUser, skill: Option<&str>) -> Result<String, AppError>;
    async fn conversation(&self, user: &CurrentUser, id: &str, lang: Lang) -> Result<ConversationView, AppError>;
    /// The cheap poll. It gets the session's token rather than a user: it checks the session in
    /// the read it makes anyway (`POLL_PATH`). `browser_lang` is for a user who chose none.
    async fn poll(&self, session_token: &str, id: &str, after: usize, browser_lang: Lang)
        -> Result<PollView, AppError>;
    async fn send_message(&self, user: &CurrentUser, id: &str, content: &str) -> Result<(), AppError>;
    /// Answers the conversation's question. Like the poll it gets the session's token: the session
    /// is checked in the read of the conversation and its run (`ANSWER_PATH`), one round trip.
    async fn answer(
        &self,
        session_token: &str,
        id: &str,
        digest: &str,
        answer: InputAnswer,
        browser_lang: Lang,
    ) -> Result<(), AppError>;
    /// The signed-in user of `session_token`, for a request whose session the middleware left to it.
    async fn session_user(&self, session_token: &str) -> Result<CurrentUser, AppError>;
    async fn decide(
        &self,
        user: &CurrentUser,
        id: &str,
        digest: &str,
        decision: CardDecision,
        extras: crate::model::CardExtras,
        lang: Lang,
    ) -> Result<(), AppError>;
    /// [`ChatBackend::answer`] from the runs inbox, for one of the conversation's runs, which may
    /// be one the chat moved on from. The same checks.
    async fn answer_run(
        &self,
        user: &CurrentUser,
        id: &str,
        run: &str,
        digest: &str,
        answer: InputAnswer,
        lang: Lang,
    ) -> Result<(), AppError>;
    /// [`ChatBackend::decide`] from the runs inbox.
    #[allow(clippy::too_many_arguments)]
    async fn decide_run(
        &self,
        user: &CurrentUser,
        id: &str,
        run: &str,
        digest: &str,
        decision: CardDecision,
        extras: crate::model::CardExtras,
        lang: Lang,
    ) -> Result<(), AppError>;
    // corrections: standing approvals
    /// The reader's standing approvals ("always allow").
    async fn policies(&self, user: &CurrentUser) -> Result<Vec<crate::model::PolicyView>, AppError>;
    async fn revoke_policy(&self, user: &CurrentUser, policy: i64) -> Result<(), AppError>;
    /// The tools an admin permits "always for me" for (admins only).
    async fn policy_permits(&self, user: &CurrentUser) -> Result<Vec<String>, AppError>;
    async fn set_policy_permit(&self, user: &CurrentUser, tool: &str, permitted: bool) -> Result<(), AppError>;
    /// The reader's runs that wait for a decision or an answer.
    async fn inbox(&self, user: &CurrentUser, lang: Lang) -> Result<crate::model::InboxView, AppError>;
    /// How many runs wait for the reader: the ones [`ChatBackend::inbox`] lists, counted.
    async fn waiting(&self, user: &CurrentUser) -> Result<crate::model::WaitingView, AppError>;
    /// Cancels one of the reader's own waiting runs from the runs inbox without deciding it
    /// (owner only); a run that no longer waits is refused and nothing changes.
    async fn dismiss_run(&self, user: &CurrentUser, id: &str, run: &str) -> Result<(), AppError>;
    async fn retry(&self, user: &CurrentUser, id: &str) -> Result<(), AppError>;
    /// Replaces the transcript from one of the reader's messages on with its edited text, and
    /// runs the conversation again from there.
    async fn edit_message(&self, user: &CurrentUser, id: &str, message_id: i64, content: &str) -> Result<(), AppError>;
    /// Takes back a file attached for the next message.
    async fn remove_attachment(&self, user: &CurrentUser, id: &str, attachment_id: i64) -> Result<(), AppError>;
    /// Stops the reply being written; what it said so far stays, marked as stopped.
    async fn stop(&self, user: &CurrentUser, id: &str) -> Result<(), AppError>;
    async fn rename_conversation(&self, user: &CurrentUser, id: &str, title: &str) -> Result<(), AppError>;
    async fn delete_conversation(&self, user: &CurrentUser, id: &str) -> Result<(), AppError>;
    /// Starts a guided tour of a content page: a process run, begun with a first message.
    async fn start_tour(&self, user: &CurrentUser, page_id: i64, lang: Lang) -> Result<String, AppError>;
}

/// The content pages beside the chat.
#[async_trait]
pub trait ContentBackend: Send + Sync + 'static {
    async fn list_pages(&self, user: &CurrentUser) -> Result<Vec<PageSummaryView>, AppError>;
    async fn page(&self, user: &CurrentUser, id: i64) -> Result<PageView, AppError>;
}

/// The tools the assistant is offered, and how their MCP servers are doing.
#[async_trait]
pub trait ToolsBackend: Send + Sync + 'static {
    async fn tools(&self, user: &CurrentUser) -> Result<ToolsView, AppError>;
    /// Forgets the reader's sign-in to an OAuth MCP server (the shared one: admins only).
    async fn disconnect(&self, user: &CurrentUser, server: &str) -> Result<(), AppError>;
}

/// Accounts, for admins only: every call checks the role on the server.
#[async_trait]
pub trait AdminBackend: Send + Sync + 'static {
    async fn accounts(&self, user: &CurrentUser) -> Result<Vec<crate::model::AccountView>, AppError>;
    async fn add_account(
        &self,
        user: &CurrentUser,
        username: &str,
        password: &str,
        admin: bool,
        may_approve_own: bool,
    ) -> Result<(), AppError>;
    async fn set_password(&self, user: &CurrentUser, account: i64, password: &str) -> Result<(), AppError>;
    async fn set_role(
        &self,
        user: &CurrentUser,
        account: i64,
        admin: bool,
        may_approve_own: bool,
    ) -> Result<(), AppError>;
    async fn end_sessions(&self, user: &CurrentUser, account: i64) -> Result<(), AppError>;
    // webhooks
    async fn webhooks(&self, user: &CurrentUser) -> Result<crate::model::WebhooksView, AppError>;
    /// `secret`: the one the page showed, else a new one; either comes back once.
    async fn add_webhook(
        &self,
        user: &CurrentUser,
        url: &str,
        events: Vec<String>,
        secret: Option<String>,
    ) -> Result<crate::model::WebhookCreated, AppError>;
    async fn remove_webhook(&self, user: &CurrentUser, webhook: i64) -> Result<(), AppError>;
    /// A new delivery of the same body under the same event id.
    async fn resend_delivery(&self, user: &CurrentUser, delivery: i64) -> Result<(), AppError>;
}

/// The audit log: admins read every row, others the rows of their own conversations (the server
/// checks it on every call).
#[async_trait]
pub trait AuditBackend: Send + Sync + 'static {
    async fn audit(
        &self,
        user: &CurrentUser,
        query: &crate::model::AuditQuery,
        lang: Lang,
    ) -> Result<crate::model::AuditPageView, AppError>;
}

/// The services, provided as one context value.
#[derive(Clone)]
pub struct Backends {
    pub auth: Arc<dyn AuthBackend>,
    pub chat: Arc<dyn ChatBackend>,
    pub content: Arc<dyn ContentBackend>,
    pub tools: Arc<dyn ToolsBackend>,
    pub admin: Arc<dyn AdminBackend>,
    pub audit: Arc<dyn AuditBackend>,
}

fn backends() -> Result<Backends, AppError> {
    use_context::<Backends>().ok_or(AppError::Internal)
}

pub fn auth() -> Result<Arc<dyn AuthBackend>, AppError> {
    Ok(backends()?.auth)
}

pub fn chat() -> Result<Arc<dyn ChatBackend>, AppError> {
    Ok(backends()?.chat)
}

pub fn content() -> Result<Arc<dyn ContentBackend>, AppError> {
    Ok(backends()?.content)
}

pub fn tools() -> Result<Arc<dyn ToolsBackend>, AppError> {
    Ok(backends()?.tools)
}

pub fn admin() -> Result<Arc<dyn AdminBackend>, AppError> {
    Ok(backends()?.admin)
}

pub fn audit() -> Result<Arc<dyn AuditBackend>, AppError> {
    Ok(backends()?.audit)
}

/// The poll's path. The session middleware leaves its session unresolved (no `CurrentUser`):
/// `ChatBackend::poll` checks it in the same statement that reads the conversation, which makes
/// the most frequent request one read instead of three.
pub const POLL_PATH: &str = "/api/poll";
/// The answer's server function, which checks its session itself, as the poll does.
pub const ANSWER_PATH: &str = "/api/answer";

/// The name of the session cookie; the server's middleware reads it, `login` writes it.
pub const SESSION_COOKIE: &str = "tourguide_session";

pub fn current_user() -> Result<CurrentUser, AppError> {
    use_context::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<CurrentUser>().cloned())
        .ok_or(AppError::Unauthenticated)
}

/// The signed-in user of a server function, or a 401 for the caller.
pub fn signed_in() -> Result<CurrentUser, AppError> {
    current_user().map_err(fail)
}

/// Put on a request by the server when the browser reached it over TLS: the operator said so
/// (`--public-url https://…`), or a trusted proxy did. A request's own headers are not believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Https;

/// Whether the browser reached us over TLS, so cookies can be marked `Secure`.
pub fn request_is_https() -> bool {
    use_context::<axum::http::request::Parts>().is_some_and(|parts| parts.extensions.get::<Https>().is_some())
}

/// The `Set-Cookie` value for the session cookie (`Max-Age=0` removes it).
pub fn session_cookie(token: &str, max_age_seconds: i64) -> String {
    let secure = if request_is_https() { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_seconds}{secure}")
}

/// The name of the device cookie: a browser that signed in before, whose sign-ins the server lets
/// past the limit on attempts per user name, which anyone can use up. Sent to the sign-in alone.
pub const DEVICE_COOKIE: &str = "tourguide_device";

/// The `Set-Cookie` value for the device cookie.
pub fn device_cookie(token: &str, max_age_seconds: i64) -> String {
    let secure = if request_is_https() { "; Secure" } else { "" };
    format!("{DEVICE_COOKIE}={token}; Path=/api/login; HttpOnly; SameSite=Lax; Max-Age={max_age_seconds}{secure}")
}

/// Where a sign-in comes from: the client's address (for the limit on attempts), the browser it
/// names (shown in the user's list of sessions) and its device cookie, if it has one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientInfo {
    pub address: Option<std::net::IpAddr>,
    pub agent: Option<String>,
    pub device: Option<String>,
}

/// The request's client.
pub fn client_info() -> ClientInfo {
    let parts = use_context::<axum::http::request::Parts>();
    let agent = parts.as_ref().and_then(|parts| {
        let agent = parts.headers.get(axum::http::header::USER_AGENT)?.to_str().ok()?;
        Some(agent.chars().take(300).collect())
    });
    let device = parts.as_ref().and_then(|parts| cookie_in(&parts.headers, DEVICE_COOKIE));
    ClientInfo { address: client_address(), agent, device }
}

/// The client's address as the server resolved it (`--trusted-proxies`: the connection's peer,
/// or what a trusted proxy says in `X-Forwarded-For`), put into the request's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub std::net::IpAddr);

/// The address the request came from, for per-client limits and logs: the server's
/// [`ClientAddress`], else the peer of its connection.
pub fn client_address() -> Option<std::net::IpAddr> {
    let parts = use_context::<axum::http::request::Parts>()?;
    parts
        .extensions
        .get::<ClientAddress>()
        .map(|client| client.0)
        .or_else(|| parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>().map(|info| info.0.ip()))
}

/// The raw session token of this request, if it carries one.
pub fn session_token() -> Option<String> {
    session_token_in(&use_context::<axum::http::request::Parts>()?.headers)
}

/// The session token among a request's cookies; the one reading of the cookie, shared with the
/// server's session middleware.
pub fn session_token_in(headers: &axum::http::HeaderMap) -> Option<String> {
    cookie_in(headers, SESSION_COOKIE)
}

fn cookie_in(headers: &axum::http::HeaderMap, cookie: &str) -> Option<String> {
    headers.get_all(axum::http::header::COOKIE).iter().find_map(|value| {
        value.to_str().ok()?.split(';').find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == cookie).then(|| value.to_string())
        })
    })
}

/// Sets the response status from the error, so callers without the UI (curl, tests, a plain form
/// post) see a meaningful status code, and hands the error back.
pub fn fail(error: AppError) -> AppError {
    // A plain form post (no WASM) is answered with a redirect back to the page, which shows the
    // error; a status here would replace that redirect.
    if use_context::<axum::http::request::Parts>().is_some_and(|parts| is_plain_form_post(&parts)) {
        return error;
    }
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        if let Ok(status) = axum::http::StatusCode::from_u16(error.status_code()) {
            response.set_status(status);
        }
    }
    error
}

/// A form posted by the browser itself (no WASM): it wants a page back, not data.
fn is_plain_form_post(parts: &axum::http::request::Parts) -> bool {
    parts
        .headers
        .get(axum::http::header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.contains("text/html"))
}

/// For a plain form post, the path and query of the page it came from (`Referer`), which the
/// answer redirects back to by default.
pub fn plain_form_referer() -> Option<String> {
    let parts = use_context::<axum::http::request::Parts>()?;
    if !is_plain_form_post(&parts) {
        return None;
    }
    let referer = parts.headers.get(axum::http::header::REFERER)?.to_str().ok()?;
    let uri = referer.parse::<axum::http::Uri>().ok()?;
    // Only the path and query: a redirect never leaves this site.
    let path = uri.path_and_query()?.as_str();
    (path.starts_with('/') && !path.starts_with("//") && !path.starts_with("/\\")).then(|| path.to_string())
}
