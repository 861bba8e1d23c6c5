//! Files attached to a message. `POST /ai-chat/conversations/{id}/attachments` takes one file as
//! `multipart/form-data` (field `file`): from the page's plain form, which is sent back to the page
//! it came from (or shown a sentence when the file is refused), or from a script asking for JSON.
//! `GET /ai-chat/attachments/{id}` gives the file back to its owner, as a download.

use std::sync::Arc;

use axum::extract::multipart::{Multipart, MultipartError, MultipartRejection};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Json};
use html_escape::encode_double_quoted_attribute;
use serde_json::json;

use app::backend::CurrentUser;
use app::error::AppError;
use app::i18n::{Lang, Text};

use crate::assets::SiteAssets;
use crate::chat::ChatService;
use crate::route_reply::{error_response, reader_lang};

pub const UPLOAD_PATH: &str = "/ai-chat/conversations/{id}/attachments";
pub const FILE_PATH: &str = "/ai-chat/attachments/{id}";

/// Multipart framing and the other form fields on top of the file itself.
const UPLOAD_OVERHEAD: usize = 64 * 1024;

/// Whether `path` is [`UPLOAD_PATH`], whose body may be as large as a file.
pub fn is_upload(path: &str) -> bool {
    path.strip_prefix("/ai-chat/conversations/")
        .and_then(|rest| rest.strip_suffix("/attachments"))
        .is_some_and(|id| !id.is_empty() && !id.contains('/'))
}

/// The largest upload body for files of up to `attachment_limit` bytes.
pub fn body_limit(attachment_limit: usize) -> usize {
    attachment_limit.saturating_add(UPLOAD_OVERHEAD)
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"))
}

fn field_error(error: MultipartError) -> AppError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        AppError::Invalid(Text::ErrorAttachmentTooLarge)
    } else {
        AppError::Invalid(Text::ErrorTransport)
    }
}

async fn read_and_attach(
    chat: &ChatService,
    user: &CurrentUser,
    id: &str,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<i64, AppError> {
    let mut multipart = multipart.map_err(|_| AppError::Invalid(Text::ErrorNoFile))?;
    while let Some(field) = multipart.next_field().await.map_err(field_error)? {
        if field.name() != Some("file") {
            continue;
        }
        let name = field.file_name().unwrap_or_default().to_string();
        let bytes = field.bytes().await.map_err(field_error)?;
        // A form sent without choosing a file has a file part with no name and no bytes.
        if name.is_empty() && bytes.is_empty() {
            return Err(AppError::Invalid(Text::ErrorNoFile));
        }
        return chat.attach(user, id, &name, bytes.to_vec()).await;
    }
    Err(AppError::Invalid(Text::ErrorNoFile))
}

pub async fn upload(
    State(chat): State<Arc<ChatService>>,
    State(assets): State<Arc<SiteAssets>>,
    user: Option<Extension<CurrentUser>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Response {
    let language = headers.get(header::ACCEPT_LANGUAGE).and_then(|value| value.to_str().ok());
    let user = user.map(|Extension(user)| user);
    let lang = reader_lang(user.as_ref(), language);
    let json = wants_json(&headers);
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    let too_large = declared.is_some_and(|length| length > body_limit(chat.attachment_limit()));
    let result = match &user {
        None => Err(AppError::Unauthenticated),
        // Refused before a byte of it is read.
        Some(_) if too_large => Err(AppError::Invalid(Text::ErrorAttachmentTooLarge)),
        Some(user) => read_and_attach(&chat, user, &id, multipart).await,
    };
    let back = format!("/c/{id}");
    match result {
        Ok(attachment_id) if json => (StatusCode::CREATED, Json(json!({ "id": attachment_id }))).into_response(),
        Ok(_) => Redirect::to(&back).into_response(),
        Err(error) if json => error_response(error, lang),
        Err(error) => refused_page(&error, lang, &back, &assets.stylesheet_href()),
    }
}

/// For the plain form: the sentence, and the way back. Nothing was stored.
fn refused_page(error: &AppError, lang: Lang, back: &str, stylesheet: &str) -> Response {
    let status = StatusCode::from_u16(error.status_code()).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
    let sentence = encode_double_quoted_attribute(error.message(lang));
    // The way back holds the conversation id from the address, which is anyone's to write.
    let back = encode_double_quoted_attribute(back);
    let link = lang.t(Text::BackToChat);
    let page = format!(
        "<!DOCTYPE html><html lang=\"{code}\"><head><meta charset=\"utf-8\"><title>{sentence}</title>\
         <link rel=\"stylesheet\" href=\"{stylesheet}\"></head><body><main class=\"not-found\">\
         <p class=\"error\" role=\"alert\">{sentence}</p><p><a href=\"{back}\">{link}</a></p></main></body></html>",
        code = lang.code(),
    );
    (status, Html(page)).into_response()
}

pub async fn download(
    State(chat): State<Arc<ChatService>>,
    user: Option<Extension<CurrentUser>>,
    Path(id): Path<i64>,
) -> Response {
    let Some(Extension(user)) = user else { return StatusCode::UNAUTHORIZED.into_response() };
    match chat.attachment_file(&user, id).await {
        Ok((file_name, kind, bytes)) => {
            let mime = attachments::Kind::parse(&kind).map_or("application/octet-stream", |kind| kind.mime_type());
            let headers = [
                (header::CONTENT_TYPE, HeaderValue::from_static(mime)),
                (header::CONTENT_DISPOSITION, disposition(&file_name)),
                (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
            ];
            (headers, bytes).into_response()
        }
        Err(error) => StatusCode::from_u16(error.status_code()).unwrap_or(StatusCode::NOT_FOUND).into_response(),
    }
}

/// Always a download, never shown inline (a PDF or a text file from the reader's own upload runs
/// nothing, but the browser need not be trusted with that). The name as given, percent-encoded,
/// with a plain ASCII fallback.
fn disposition(file_name: &str) -> HeaderValue {
    let fallback: String =
        file_name.chars().map(|c| if c.is_ascii_alphanumeric() || ".-_ ".contains(c) { c } else { '_' }).collect();
    let encoded: String = file_name
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' => (byte as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect();
    HeaderValue::from_str(&format!("attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}"))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_conversation_s_upload_path_gets_the_file_sized_limit() {
        assert!(is_upload("/ai-chat/conversations/0b7c/attachments"));
        assert!(!is_upload("/ai-chat/conversations//attachments"));
        assert!(!is_upload("/ai-chat/conversations/a/b/attachments"));
        assert!(!is_upload("/api/send_message"));
        assert_eq!(body_limit(10), 10 + UPLOAD_OVERHEAD);
    }
}
