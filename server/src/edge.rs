//! What every request of the app's router passes before its handler, in one layer: the body's
//! size, the origin check, the session, the form-only rule for server functions, and on the way
//! back the status of a framework error. Each `from_fn` layer clones the service inside it into
//! a new box and boxes a future, per request: as five layers, two of them took about a tenth of a
//! fast poll's server CPU. Each check stays a function of its own; this module only runs them in
//! order.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::request_refusal::Refusal;
use crate::store::Store;
use crate::{attachment_route, auth, headers, MAX_BODY_BYTES};

/// What the checks need.
#[derive(Clone)]
pub struct Edge {
    pub store: Store,
    pub attachment_limit: usize,
    pub headers: std::sync::Arc<headers::Policy>,
    pub proxies: std::sync::Arc<crate::proxies::TrustedProxies>,
}

pub async fn guard(State(edge): State<Edge>, mut request: Request, next: Next) -> Response {
    let nonce = headers::with_nonce(&mut request);
    if edge.headers.https || edge.proxies.forwarded_https(&request) {
        request.extensions_mut().insert(app::backend::Https);
    }
    let mut response = checked_run(&edge, request, next).await;
    headers::apply(&edge.headers, Some(&nonce), response.headers_mut());
    response
}

async fn checked_run(edge: &Edge, request: Request, next: Next) -> Response {
    let checked = async {
        let request = edge.proxies.resolve(request);
        let request = limit_body(request, edge.attachment_limit)?;
        auth::refuse_cross_site(&request)?;
        let request = auth::with_session(&edge.store, request).await?;
        form_bodies_only(&request)?;
        Ok::<_, Refusal>(request)
    };
    let request = match checked.await {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    let is_api = request.uri().path().starts_with("/api/");
    let response = next.run(request).await;
    if is_api {
        framework_error_status(response).await
    } else {
        response
    }
}

/// Bodies are small (64 KiB), except a file sent to the attachments route, which may be as large
/// as the configured limit. Over the limit is 413 before anything reads the body; a body without
/// a length, or longer than it said, is cut off where it passes the limit.
fn limit_body(request: Request, attachment_limit: usize) -> Result<Request, Refusal> {
    let upload = attachment_route::is_upload(request.uri().path());
    let limit = if upload { attachment_route::body_limit(attachment_limit) } else { MAX_BODY_BYTES };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    // The upload route tells an oversize file in the reader's language itself.
    if !upload && declared.is_some_and(|length| length > limit) {
        return Err(Refusal::TooLarge);
    }
    let (parts, body) = request.into_parts();
    Ok(Request::from_parts(parts, Body::new(http_body_util::Limited::new(body, limit))))
}

/// Server functions take their arguments as a form, the way both the WASM client and a plain HTML
/// form send them. The framework would also read a form out of a `text/plain` body (what a
/// cross-site form may send without a preflight); refusing every other type keeps that door shut
/// even behind the origin check.
fn form_bodies_only(request: &Request) -> Result<(), Refusal> {
    if request.method() == Method::POST && request.uri().path().starts_with("/api/") {
        let headers = request.headers();
        let is_form = headers
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.split(';').next())
            .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/x-www-form-urlencoded"));
        // No length and no chunked encoding is an empty body too (curl -X POST).
        let empty = match headers.get(header::CONTENT_LENGTH) {
            Some(length) => length == "0",
            None => !headers.contains_key(header::TRANSFER_ENCODING),
        };
        if !is_form && !empty {
            return Err(Refusal::NotAForm);
        }
    }
    Ok(())
}

/// Errors raised by the server-function framework itself (a missing or malformed argument) come
/// out as 500; they are the client's fault, so the status is taken from the error they decode to.
async fn framework_error_status(response: Response) -> Response {
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    if let Ok(error) = serde_json::from_slice::<app::error::AppError>(&bytes) {
        if let Ok(status) = StatusCode::from_u16(error.status_code()) {
            parts.status = status;
        }
    }
    Response::from_parts(parts, Body::from(bytes))
}
