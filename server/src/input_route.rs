//! `POST /ai-chat/conversations/input`: the answer to a question as JSON, for clients other than
//! the Leptos UI (which uses the `answer` server function). Both end in `ChatService::answer`.

use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use app::backend::CurrentUser;
use app::error::AppError;
use app::i18n::Text;
use app::model::ConversationStatus;
use question::form::InputAnswer;

use crate::audit::Surface;
use crate::chat::ChatService;
use crate::route_reply::{error_response, reader_lang};

pub const PATH: &str = "/ai-chat/conversations/input";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputRequest {
    pub conversation_id: String,
    pub turn_digest: String,
    #[serde(default)]
    pub choice: Option<Value>,
    #[serde(default)]
    pub free_text: Option<String>,
    #[serde(default)]
    pub fields: Option<Map<String, Value>>,
}

pub async fn submit(
    State(chat): State<Arc<ChatService>>,
    user: Option<Extension<CurrentUser>>,
    headers: HeaderMap,
    body: Result<Json<InputRequest>, JsonRejection>,
) -> Response {
    let language = headers.get(header::ACCEPT_LANGUAGE).and_then(|value| value.to_str().ok());
    let user = user.map(|Extension(user)| user);
    let lang = reader_lang(user.as_ref(), language);
    let Some(user) = user else {
        return error_response(AppError::Unauthenticated, lang);
    };
    let body = match body {
        Ok(Json(body)) => body,
        Err(rejection) => {
            let status = rejection.status();
            return (status, Json(json!({ "error": lang.t(Text::ErrorTransport), "code": "Malformed" })))
                .into_response();
        }
    };
    let answer = match (body.choice, body.free_text, body.fields) {
        (Some(choice), None, None) => InputAnswer::Choice(choice),
        (None, Some(text), None) => InputAnswer::FreeText(text),
        (None, None, Some(fields)) => InputAnswer::Fields(fields),
        // Exactly one of the three is an answer; none or several is not.
        _ => return error_response(AppError::AnswerNotOffered, lang),
    };
    match chat.answer_from(&user, &body.conversation_id, &body.turn_digest, answer, lang, Surface::Api).await {
        Ok(()) => {
            (StatusCode::ACCEPTED, Json(json!({ "status": ConversationStatus::Processing.as_str() }))).into_response()
        }
        Err(error) => error_response(error, lang),
    }
}
