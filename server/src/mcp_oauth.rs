//! Signing in to MCP servers that want OAuth 2.1 (`"auth": "oauth"` in the MCP configuration).
//!
//! `POST /mcp/oauth/start` with `server=NAME` (a form, so the origin check stands in front of it:
//! no other site's page can make a browser begin a sign-in; an admin for a shared server, any
//! signed-in user for their own account on a per-user one) finds the server's authorization
//! server, registers the client once per server and callback address if none is configured,
//! keeps what the callback needs (the PKCE verifier, the client, the authorization server found)
//! sealed under the hash of the `state`, bound to the session, and sends the browser there. The
//! callback address is `--public-url`'s; without it there is no sign-in (a Host header is the
//! client's to write).
//! `GET /mcp/oauth/callback` takes that back once, for the same session only, exchanges the code
//! and keeps the tokens sealed ([`Vault`]). A state that is not this session's, a refused consent
//! or a code the authorization server does not take is a page with a sentence, and stores
//! nothing. No token is ever on a page, in the log or in the clear in the database.
//!
//! A user's runs that wait for them to connect a per-user server ("Connect … to continue") go on
//! once they have: the callback answers each such question with Continue, as the user would.

use std::sync::Arc;

use async_trait::async_trait;
use axum::extract::{Form, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Extension;
use serde::Deserialize;

use app::backend::{session_token_in, ChatBackend, CurrentUser};
use app::i18n::{Lang, Text};
use mcp::{McpHub, OAuthMode, OAuthProblem, TokenOwner, TokenVault};

use crate::auth::token_hash;
use crate::chat::ChatService;
use crate::route_reply::reader_lang;
use crate::store::{NewSignIn, Store};
use crate::token_key::TokenKey;
use crate::AppState;

pub const START_PATH: &str = "/mcp/oauth/start";
pub const CALLBACK_PATH: &str = "/mcp/oauth/callback";

/// The MCP crate's token vault over the store: every value sealed with the token key, bound to
/// its server and owner.
pub struct Vault {
    store: Store,
    key: TokenKey,
}

impl Vault {
    pub fn new(store: Store, key: TokenKey) -> Vault {
        Vault { store, key }
    }
}

fn user_of(owner: TokenOwner) -> Option<i64> {
    match owner {
        TokenOwner::Shared => None,
        TokenOwner::User(id) => Some(id),
    }
}

/// What a sealed token row is bound to.
fn token_binding(server: &str, owner: TokenOwner) -> String {
    match owner {
        TokenOwner::Shared => format!("mcp-token/{server}/shared"),
        TokenOwner::User(id) => format!("mcp-token/{server}/user:{id}"),
    }
}

fn sign_in_binding(state_hash: &str) -> String {
    format!("mcp-sign-in/{state_hash}")
}

fn client_binding(server: &str, redirect_uri: &str) -> String {
    format!("mcp-client/{server}/{redirect_uri}")
}

#[async_trait]
impl TokenVault for Vault {
    async fn load(&self, server: &str, owner: TokenOwner) -> Result<Option<String>, String> {
        let Some(sealed) = self.store.mcp_token(server, user_of(owner)).await.map_err(|error| error.to_string())?
        else {
            return Ok(None);
        };
        // A sign-in sealed with another key (TOURGUIDE_TOKEN_KEY was changed) or damaged is no
        // sign-in: the server shows as not connected and Connect writes a fresh one over it,
        // instead of the Tools page and every call failing until someone edits the database.
        match self.key.open(&token_binding(server, owner), &sealed).map(String::from_utf8) {
            Ok(Ok(plain)) => Ok(Some(plain)),
            Ok(Err(_)) | Err(_) => {
                tracing::error!(
                    server,
                    "a stored MCP sign-in does not open with the token key; it counts as not connected"
                );
                Ok(None)
            }
        }
    }

    async fn save(&self, server: &str, owner: TokenOwner, credentials: &str) -> Result<(), String> {
        let sealed = self.key.seal(&token_binding(server, owner), credentials.as_bytes());
        self.store.save_mcp_token(server, user_of(owner), &sealed).await.map_err(|error| error.to_string())
    }

    async fn clear(&self, server: &str, owner: TokenOwner) -> Result<bool, String> {
        self.store.delete_mcp_token(server, user_of(owner)).await.map_err(|error| error.to_string())
    }

    async fn any_user(&self, server: &str) -> Result<Option<i64>, String> {
        self.store.any_mcp_user(server).await.map_err(|error| error.to_string())
    }

    async fn load_client(&self, server: &str, redirect_uri: &str) -> Result<Option<String>, String> {
        let found = self.store.mcp_client(server, redirect_uri).await.map_err(|error| error.to_string())?;
        // One that does not open (another key) is none: a new client is registered over it.
        Ok(found.and_then(|sealed| {
            self.key
                .open(&client_binding(server, redirect_uri), &sealed)
                .ok()
                .and_then(|plain| String::from_utf8(plain).ok())
        }))
    }

    async fn save_client(&self, server: &str, redirect_uri: &str, client: &str) -> Result<(), String> {
        let sealed = self.key.seal(&client_binding(server, redirect_uri), client.as_bytes());
        self.store.save_mcp_client(server, redirect_uri, &sealed).await.map_err(|error| error.to_string())
    }
}

/// What the two routes need.
pub struct SignIns {
    pub hub: McpHub,
    pub store: Store,
    pub key: TokenKey,
    /// `--public-url`'s origin: where the authorization server sends the browser back to.
    pub public_origin: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct StartQuery {
    #[serde(default)]
    server: String,
}

#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
    iss: Option<String>,
}

/// A page with one sentence and the way back to the tools.
fn page(lang: Lang, status: StatusCode, sentence: Text) -> Response {
    let title = lang.t(Text::OAuthTitle);
    let body = format!(
        "<!DOCTYPE html><html lang=\"{code}\"><head><meta charset=\"utf-8\"><title>{title}</title></head><body><main>\
         <h1>{title}</h1><p class=\"error\" role=\"alert\">{sentence}</p><p><a href=\"/tools\">{back}</a></p></main>\
         </body></html>",
        code = lang.code(),
        sentence = html_escape::encode_text(lang.t(sentence)),
        back = lang.t(Text::OAuthBackToTools),
    );
    (status, Html(body)).into_response()
}

fn problem_sentence(problem: OAuthProblem) -> (StatusCode, Text) {
    match problem {
        // One sentence for every step of finding the authorization server and registering with
        // it: which step failed would tell whoever controls a server's metadata what lies at the
        // addresses it names (the log has the detail).
        OAuthProblem::Discovery | OAuthProblem::Registration => (StatusCode::BAD_GATEWAY, Text::OAuthDiscovery),
        OAuthProblem::Exchange => (StatusCode::BAD_REQUEST, Text::OAuthExchange),
        OAuthProblem::IssuerMismatch => (StatusCode::BAD_REQUEST, Text::OAuthIssuer),
        OAuthProblem::Storage => (StatusCode::INTERNAL_SERVER_ERROR, Text::OAuthStorage),
        OAuthProblem::NotOAuth => (StatusCode::NOT_FOUND, Text::ErrorMcpNotOAuth),
    }
}

/// Where the authorization server sends the browser back: `--public-url`'s callback, or none
/// (a Host header is whatever the client wrote, and the code must come back here only).
fn redirect_uri(sign_ins: &SignIns) -> Option<String> {
    sign_ins.public_origin.as_ref().map(|origin| format!("{}{CALLBACK_PATH}", origin.trim_end_matches('/')))
}

/// What both ends of a sign-in need first: the reader signed in (else the sign-in page), the
/// language their pages are in, MCP sign-ins configured, and the session's token (else a page
/// that says the server signs in no other way).
fn signed_in<'a>(
    state: &'a AppState,
    user: Option<Extension<CurrentUser>>,
    headers: &HeaderMap,
) -> Result<(CurrentUser, Lang, &'a SignIns, String), Box<Response>> {
    let user = user.map(|Extension(user)| user);
    let lang = reader_lang(user.as_ref(), language(headers));
    let Some(user) = user else { return Err(Box::new(Redirect::to("/login").into_response())) };
    let (Some(sign_ins), Some(token)) = (&state.mcp_sign_ins, session_token_in(headers)) else {
        return Err(Box::new(page(lang, StatusCode::NOT_FOUND, Text::ErrorMcpNotOAuth)));
    };
    Ok((user, lang, sign_ins, token))
}

fn language(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::ACCEPT_LANGUAGE).and_then(|value| value.to_str().ok())
}

pub async fn start(
    State(state): State<AppState>,
    user: Option<Extension<CurrentUser>>,
    headers: HeaderMap,
    Form(query): Form<StartQuery>,
) -> Response {
    let (user, lang, sign_ins, token) = match signed_in(&state, user, &headers) {
        Ok(signed_in) => signed_in,
        Err(refused) => return *refused,
    };
    let Some(mode) = sign_ins.hub.oauth_mode(&query.server) else {
        return page(lang, StatusCode::NOT_FOUND, Text::ErrorMcpNotOAuth);
    };
    let shared = mode == OAuthMode::Shared;
    if shared && !user.admin {
        return page(lang, StatusCode::FORBIDDEN, Text::ErrorForbidden);
    }
    let Some(redirect_uri) = redirect_uri(sign_ins) else {
        tracing::warn!(server = %query.server, "an MCP sign-in needs --public-url for its callback address");
        return page(lang, StatusCode::SERVICE_UNAVAILABLE, Text::OAuthNeedsPublicUrl);
    };
    let started = match sign_ins.hub.begin_sign_in(&query.server, &redirect_uri).await {
        Ok(started) => started,
        Err(failure) => {
            tracing::warn!(server = %query.server, kind = ?failure.problem, detail = %failure.detail, "an MCP sign-in could not begin");
            let (status, sentence) = problem_sentence(failure.problem);
            return page(lang, status, sentence);
        }
    };
    let state_hash = token_hash(&started.state);
    let sealed = sign_ins.key.seal(&sign_in_binding(&state_hash), started.pending.as_bytes());
    let sign_in = NewSignIn {
        state_hash: &state_hash,
        session_hash: &token_hash(&token),
        user_id: user.id,
        server: &query.server,
        shared,
        sealed: &sealed,
    };
    if let Err(error) = sign_ins.store.begin_mcp_sign_in(&sign_in).await {
        tracing::error!(%error, "an MCP sign-in could not be kept");
        return page(lang, StatusCode::INTERNAL_SERVER_ERROR, Text::OAuthStorage);
    }
    Redirect::to(&started.url).into_response()
}

pub async fn callback(
    State(state): State<AppState>,
    user: Option<Extension<CurrentUser>>,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let (user, lang, sign_ins, token) = match signed_in(&state, user, &headers) {
        Ok(signed_in) => signed_in,
        Err(refused) => return *refused,
    };
    // Taken once, by the session that began it: a state of another session (or none, or an old
    // one) finds nothing and changes nothing.
    let taken = match &query.state {
        Some(value) => match sign_ins.store.take_mcp_sign_in(&token_hash(value), &token_hash(&token)).await {
            Ok(taken) => taken.filter(|taken| taken.user_id == user.id),
            Err(error) => {
                tracing::error!(%error, "an MCP sign-in could not be read back");
                return page(lang, StatusCode::INTERNAL_SERVER_ERROR, Text::OAuthStorage);
            }
        },
        None => None,
    };
    if let Some(error) = &query.error {
        // The person said no (`access_denied`), or the authorization server would not ask them.
        tracing::info!(%error, "an MCP sign-in came back refused");
        return page(lang, StatusCode::BAD_REQUEST, Text::OAuthDenied);
    }
    let Some(taken) = taken else {
        tracing::warn!(user = user.id, "an MCP sign-in came back with a state this session did not begin");
        return page(lang, StatusCode::BAD_REQUEST, Text::OAuthStateMismatch);
    };
    let Some(code) = query.code.as_deref().filter(|code| !code.is_empty()) else {
        return page(lang, StatusCode::BAD_REQUEST, Text::OAuthExchange);
    };
    let state_hash = token_hash(query.state.as_deref().unwrap_or_default());
    let pending = match sign_ins.key.open(&sign_in_binding(&state_hash), &taken.sealed).map(String::from_utf8) {
        Ok(Ok(pending)) => pending,
        _ => {
            tracing::error!(server = %taken.server, "a kept MCP sign-in does not open with the token key");
            return page(lang, StatusCode::INTERNAL_SERVER_ERROR, Text::OAuthStorage);
        }
    };
    let owner = if taken.shared { TokenOwner::Shared } else { TokenOwner::User(user.id) };
    match sign_ins.hub.finish_sign_in(&taken.server, owner, &pending, code, query.iss.as_deref()).await {
        Ok(()) => {
            if owner != TokenOwner::Shared {
                carry_on(&state.chat, &user, &taken.server, lang).await;
            }
            Redirect::to("/tools").into_response()
        }
        Err(failure) => {
            tracing::warn!(server = %taken.server, kind = ?failure.problem, detail = %failure.detail, "an MCP sign-in did not finish");
            let (status, sentence) = problem_sentence(failure.problem);
            page(lang, status, sentence)
        }
    }
}

/// Answers Continue to each of the user's questions that waited for them to connect `server`.
/// One that moved on meanwhile (answered, cancelled) is left as it is.
async fn carry_on(chat: &ChatService, user: &CurrentUser, server: &str, lang: Lang) {
    let inbox = match chat.inbox(user, lang).await {
        Ok(inbox) => inbox,
        Err(error) => {
            tracing::warn!(?error, "the runs that wait for an MCP sign-in cannot be listed");
            return;
        }
    };
    for item in inbox.items {
        let Some(question) = item.question.filter(|question| question.connect.as_deref() == Some(server)) else {
            continue;
        };
        let answer = question::form::InputAnswer::Choice(serde_json::json!(mcp::CONNECT_CONTINUE));
        let carried = chat.answer_run(user, &item.conversation_id, &item.run_id, &question.digest, answer, lang).await;
        if let Err(error) = carried {
            tracing::info!(run = %item.run_id, ?error, "a run that waited for an MCP sign-in did not go on");
        }
    }
}

/// The sign-ins of this process, when an MCP server wants OAuth.
pub fn sign_ins(
    hub: Option<&McpHub>,
    store: &Store,
    key: Option<&TokenKey>,
    public_origin: Option<String>,
) -> Option<Arc<SignIns>> {
    Some(Arc::new(SignIns { hub: hub?.clone(), store: store.clone(), key: key?.clone(), public_origin }))
}
