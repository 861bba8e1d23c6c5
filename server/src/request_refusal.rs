//! The request checks' answers, apart from both the checks (`auth`'s among them) and the layer
//! that runs them (`edge`), which would otherwise import each other.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

/// Why a request does not reach its handler; each check's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 413: the body is over the limit it declared (see `edge::limit_body`).
    TooLarge,
    /// 403: a state-changing request a browser sent from another site.
    CrossSite,
    /// 415: a server function's arguments not sent as a form.
    NotAForm,
    /// A page that needs a user, without one: to the sign-in page.
    SignInFirst,
    /// The sign-in page with a user signed in: to the start page.
    SignedIn,
    /// 500: the session could not be looked up.
    SessionUnreadable,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "The request body is too large.").into_response(),
            Refusal::CrossSite => (StatusCode::FORBIDDEN, "Cross-site request refused").into_response(),
            Refusal::NotAForm => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Send the arguments as a form (application/x-www-form-urlencoded).",
            )
                .into_response(),
            Refusal::SignInFirst => Redirect::to("/login").into_response(),
            Refusal::SignedIn => Redirect::to("/").into_response(),
            Refusal::SessionUnreadable => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    }
}
