//! What the routes outside the server functions share: the reader's language, and a refusal as
//! JSON that reads as a server function's does.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use app::backend::CurrentUser;
use app::error::AppError;
use app::i18n::Lang;

pub(crate) fn reader_lang(user: Option<&CurrentUser>, request_language: Option<&str>) -> Lang {
    user.and_then(|user| user.language)
        .or_else(|| request_language.and_then(Lang::from_accept_language))
        .unwrap_or_default()
}

pub(crate) fn error_response(error: AppError, lang: Lang) -> Response {
    let status = StatusCode::from_u16(error.status_code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut body = json!({ "error": error.message(lang), "code": error.code() });
    // A refusal field by field names each field and its sentence, as a server function's does.
    if let AppError::InvalidEdit(fields) | AppError::InvalidAnswer(fields) = &error {
        body["fields"] = json!(fields);
    }
    (status, Json(body)).into_response()
}
