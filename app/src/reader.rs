//! Who a request is for: the signed-in user the server's session middleware put on it, and the
//! language to answer in. Below the backends and the errors, which both need them (an error's
//! sentence on the wire is written in the reader's language).

use leptos::prelude::*;

use crate::i18n::Lang;

/// The signed-in user, put into the request's extensions by the server's session middleware.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentUser {
    pub id: i64,
    pub username: String,
    /// The language the user chose; `None` follows the browser.
    pub language: Option<Lang>,
    /// Manages accounts and reviews other users' changes.
    pub admin: bool,
    /// May approve changes in their own conversations (else a reviewer decides them).
    pub may_approve_own: bool,
}

impl CurrentUser {
    /// Four-eyes: without this a write in the user's own conversation waits for a reviewer.
    pub fn approves_own_changes(&self) -> bool {
        self.admin || self.may_approve_own
    }

    /// May approve another user's change that waits for a reviewer.
    pub fn reviews(&self) -> bool {
        self.admin || self.may_approve_own
    }
}

/// The reader's language: their own setting, else the browser's `Accept-Language`, else English.
pub fn request_lang() -> Lang {
    let Some(parts) = use_context::<axum::http::request::Parts>() else { return Default::default() };
    match parts.extensions.get::<CurrentUser>().and_then(|user| user.language) {
        Some(language) => language,
        None => browser_lang_of(&parts),
    }
}

/// The browser's language (`Accept-Language`), else English: for a reader who chose none.
pub fn browser_lang() -> Lang {
    use_context::<axum::http::request::Parts>().map(|parts| browser_lang_of(&parts)).unwrap_or_default()
}

fn browser_lang_of(parts: &axum::http::request::Parts) -> Lang {
    browser_lang_in(&parts.headers)
}

/// The language the browser asks for in `Accept-Language`, from a request's headers.
pub fn browser_lang_in(headers: &axum::http::HeaderMap) -> Lang {
    headers
        .get(axum::http::header::ACCEPT_LANGUAGE)
        .and_then(|value| value.to_str().ok())
        .and_then(Lang::from_accept_language)
        .unwrap_or_default()
}
