//! Server functions. They stay thin: find the user and the backend, call one service method,
//! map the error to a status. Stable endpoints keep curl, tests and other clients independent of
//! the checkout path (the default endpoint carries a hash of it).

use leptos::prelude::*;

use crate::error::AppError;
use crate::model::{ConversationSummary, ConversationView, SessionView};

#[server(endpoint = "login")]
pub async fn login(username: String, password: String) -> Result<(), AppError> {
    use crate::backend::{backend, fail, SESSION_COOKIE};
    let session = backend()?.login(&username, &password).await.map_err(fail)?;
    let response = expect_context::<leptos_axum::ResponseOptions>();
    let cookie = format!(
        "{SESSION_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}",
        session.token, session.max_age_seconds
    );
    if let Ok(value) = axum::http::HeaderValue::from_str(&cookie) {
        response.append_header(axum::http::header::SET_COOKIE, value);
    }
    leptos_axum::redirect("/");
    Ok(())
}

#[server(endpoint = "logout")]
pub async fn logout() -> Result<(), AppError> {
    use crate::backend::{backend, fail, session_token, SESSION_COOKIE};
    if let Some(token) = session_token() {
        backend()?.logout(&token).await.map_err(fail)?;
    }
    let response = expect_context::<leptos_axum::ResponseOptions>();
    let cookie = format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0");
    if let Ok(value) = axum::http::HeaderValue::from_str(&cookie) {
        response.append_header(axum::http::header::SET_COOKIE, value);
    }
    leptos_axum::redirect("/login");
    Ok(())
}

#[server(endpoint = "session")]
pub async fn session_info() -> Result<SessionView, AppError> {
    use crate::backend::{backend, current_user, fail};
    let user = current_user().map_err(fail)?;
    backend()?.session(&user, crate::backend::request_lang()).await.map_err(fail)
}

#[server(endpoint = "conversations")]
pub async fn list_conversations() -> Result<Vec<ConversationSummary>, AppError> {
    use crate::backend::{backend, current_user, fail};
    let user = current_user().map_err(fail)?;
    backend()?.list_conversations(&user).await.map_err(fail)
}

#[server(endpoint = "create_conversation")]
pub async fn create_conversation() -> Result<String, AppError> {
    use crate::backend::{backend, current_user, fail};
    let user = current_user().map_err(fail)?;
    let id = backend()?.create_conversation(&user).await.map_err(fail)?;
    leptos_axum::redirect(&format!("/c/{id}"));
    Ok(id)
}

#[server(endpoint = "conversation")]
pub async fn get_conversation(id: String) -> Result<ConversationView, AppError> {
    use crate::backend::{backend, current_user, fail};
    let user = current_user().map_err(fail)?;
    backend()?.conversation(&user, &id, crate::backend::request_lang()).await.map_err(fail)
}

#[server(endpoint = "send_message")]
pub async fn send_message(conversation_id: String, content: String) -> Result<(), AppError> {
    use crate::backend::{backend, current_user, fail};
    let user = current_user().map_err(fail)?;
    backend()?.send_message(&user, &conversation_id, &content).await.map_err(fail)
}

/// Sets the reader's language ("" follows the browser) and reloads the page in it.
#[server(endpoint = "set_language")]
pub async fn set_language(language: String) -> Result<(), AppError> {
    use crate::backend::{backend, current_user, fail};
    use crate::i18n::{Lang, Text};
    let user = current_user().map_err(fail)?;
    let language = match language.as_str() {
        "" => None,
        code => Some(Lang::parse(code).ok_or(AppError::Invalid(Text::Language)).map_err(fail)?),
    };
    backend()?.set_language(&user, language).await.map_err(fail)
}
