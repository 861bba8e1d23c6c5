//! `POST /api/poll`, the `poll` server function's endpoint, answered by a plain axum handler, as
//! the routes outside the server functions are (issue 45). Leptos' dispatch of a server function
//! (a reactive owner of its own, the request's parts and the response options put into context,
//! the codec) took over a quarter of a fast poll's server CPU on SQLite: side by side in one
//! run, 18.7 against 26 µs, 1.36× the fast polls a second (52,700/s against 38,700/s), and on
//! PostgreSQL 1.08× (12,300/s against 11,400/s: 89 % of the limit reference, where issue 45
//! asks 80 %; the server function's 78 %). Figures: bench/RESULTS.md, "What the own pieces win".
//! The poll is the one request every open conversation sends again and again.
//!
//! The browser still calls it through the server function's client (`app::api::poll_conversation`),
//! so this answers exactly as the server function did: the same form, `PollView` as JSON, and an
//! error as `AppError` in the reader's language with its status and the framework's error header.
//! The route list leaves the endpoint out (`lib.rs`, `routes`), so the framework does not
//! register it. `TOURGUIDE_POLL_ROUTE=server-fn` serves it by the server function again, to
//! measure the two side by side (`scripts/bench-compare`).

use std::sync::Arc;

use axum::extract::rejection::FormRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;
use serde::Deserialize;

use app::backend::{session_token_in, ChatBackend, POLL_PATH};
use app::error::AppError;
use app::i18n::Lang;
use app::reader::browser_lang_in;

use crate::chat::ChatService;

/// The header by which a server function's client tells an error from an answer.
const SERVER_FN_ERROR: HeaderName = HeaderName::from_static("serverfnerror");

/// Whether this handler serves the poll (the default), not the server function.
pub fn serves_poll() -> bool {
    std::env::var("TOURGUIDE_POLL_ROUTE").map_or(true, |value| value != "server-fn")
}

/// The server function's arguments.
#[derive(Deserialize)]
pub struct PollForm {
    id: String,
    after: usize,
}

pub async fn poll(
    State(chat): State<Arc<ChatService>>,
    headers: HeaderMap,
    form: Result<Form<PollForm>, FormRejection>,
) -> Response {
    // The session is the poll's own read (`Store::poll_head`); a reader's chosen language is not
    // read, as with the server function: the browser's says an error.
    let lang = browser_lang_in(&headers);
    let form = match form {
        Ok(Form(form)) => form,
        Err(rejection) => {
            tracing::warn!(error = %rejection, "a poll's arguments were refused");
            return refused(AppError::BadRequest, lang);
        }
    };
    let Some(token) = session_token_in(&headers) else { return refused(AppError::Unauthenticated, lang) };
    match ChatBackend::poll(&*chat, &token, &form.id, form.after, lang).await {
        Ok(view) => match serde_json::to_vec(&view) {
            Ok(body) => ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response(),
            Err(_) => refused(AppError::Internal, lang),
        },
        Err(error) => refused(error, lang),
    }
}

fn refused(error: AppError, lang: Lang) -> Response {
    let status = StatusCode::from_u16(error.status_code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::to_vec(&error.in_lang(lang)).unwrap_or_default();
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
        (SERVER_FN_ERROR, HeaderValue::from_static(POLL_PATH)),
    ];
    (status, headers, body).into_response()
}
