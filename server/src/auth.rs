//! Passwords, session tokens, and the middleware that puts the signed-in user on each request and
//! refuses cross-site writes.

use std::sync::{Arc, Mutex};

use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use axum::extract::Request;
use axum::http::{header, Method};
use rand::RngCore;
use sha2::{Digest, Sha256};

use app::backend::{session_token_in, CurrentUser, ANSWER_PATH, POLL_PATH};

use crate::request_refusal::Refusal;
use crate::store::{ConversationSnapshot, PageHead, PageShows, Role, SessionUser, Store, StoreError};

pub const SESSION_SECONDS: i64 = 60 * 60 * 24 * 14;

/// How long a device cookie (a browser that signed in before) is remembered: a year.
pub const DEVICE_SECONDS: i64 = 60 * 60 * 24 * 365;

pub fn hash_password(password: &str) -> String {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2 hashing with default parameters cannot fail")
        .to_string()
}

pub fn verify_password(password: &str, hash: &str) -> bool {
    verify_password_or_dummy(password, Some(hash))
}

/// Checks a sign-in's password against the account's hash; `None` is a name with no account
/// (unknown, or removed). Argon2 runs either way: for no account, or one whose hash is no argon2
/// hash (a locked account), against [`dummy_hash`], and the answer is no. Without it a wrong name
/// answered in a millisecond and a wrong password in tens, and the time told which names exist.
pub fn verify_password_or_dummy(password: &str, hash: Option<&str>) -> bool {
    let (checked, real) = hash_to_check(hash);
    let matches = Argon2::default().verify_password(password.as_bytes(), &checked).is_ok();
    matches && real
}

/// The hash a sign-in is checked against, and whether it is the account's own.
fn hash_to_check(hash: Option<&str>) -> (PasswordHash<'_>, bool) {
    match hash.and_then(|hash| PasswordHash::new(hash).ok()) {
        Some(parsed) => (parsed, true),
        None => (PasswordHash::new(dummy_hash()).expect("the dummy hash is an argon2 hash"), false),
    }
}

/// A hash of a random password nobody knows, made once per process by [`hash_password`], so
/// checking it costs what checking a real one does.
pub fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| hash_password(&random_password()))
}

/// A random token for the cookie; only its hash is stored, so a leaked database opens no session.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

pub fn random_password() -> String {
    let mut bytes = [0u8; 9];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// The request's view of a session's user.
pub fn current_user(user: SessionUser) -> CurrentUser {
    CurrentUser {
        admin: user.role() == Role::Admin,
        may_approve_own: user.may_approve_own,
        id: user.id,
        username: user.username,
        language: user.language.as_deref().and_then(app::i18n::Lang::parse),
    }
}

/// The user of the session `token`, if it is live: the one reading of a session on its own, for
/// the middleware and for a server function that checks its session itself.
pub async fn session_user(store: &Store, token: &str) -> Result<Option<CurrentUser>, StoreError> {
    Ok(store.user_for_session(&token_hash(token)).await?.map(current_user))
}

/// Resolves the session cookie to a user and stores it in the request's extensions. Pages need a
/// user and send the visitor to the sign-in page without one (the `Err`); server functions answer
/// 401 themselves. The poll (`POLL_PATH`) and the answer (`ANSWER_PATH`) check their session
/// themselves, in the statement that reads the conversation. A page reads what it shows with the
/// session ([`Store::page_head`]: the header's count of waiting runs; on the chat page the list
/// and the open conversation) and keeps it in the extensions for the page's parts ([`page_head`],
/// [`take_page_snapshot`]): one round trip for the page instead of one for each part.
pub async fn with_session(store: &Store, mut request: Request) -> Result<Request, Refusal> {
    let path = request.uri().path();
    let is_page = request.method() == Method::GET
        && (path == "/"
            || path.starts_with("/c/")
            || path == "/pages"
            || path.starts_with("/pages/")
            || matches!(path, "/runs" | "/tools" | "/admin" | "/account" | "/audit"));
    let is_login = path == "/login";
    let token = session_token_in(request.headers()).filter(|_| path != POLL_PATH && path != ANSWER_PATH);
    let read = match token {
        Some(token) if is_page => store
            .page_head(&token_hash(&token), page_shows(path))
            .await
            .map(|found| found.map(|head| (current_user(head.user.clone()), Some(PageRead::from(head))))),
        Some(token) => session_user(store, &token).await.map(|found| found.map(|user| (user, None))),
        None => Ok(None),
    };
    let (user, head) = match read {
        Ok(Some((user, head))) => (Some(user), head),
        Ok(None) => (None, None),
        Err(error) => {
            tracing::error!(%error, "session lookup failed");
            return Err(Refusal::SessionUnreadable);
        }
    };
    if is_page && user.is_none() {
        return Err(Refusal::SignInFirst);
    }
    if is_login && user.is_some() {
        return Err(Refusal::SignedIn);
    }
    if let Some(user) = user {
        request.extensions_mut().insert(user);
    }
    if let Some(head) = head {
        request.extensions_mut().insert(Arc::new(head));
    }
    Ok(request)
}

/// What the page at `path` shows beside its header: the chat page (app: `ChatPage`, at `/` and
/// `/c/{id}`) the list, and the conversation its address names.
fn page_shows(path: &str) -> PageShows<'_> {
    match path.strip_prefix("/c/") {
        Some(id) if !id.is_empty() && !id.contains('/') => PageShows::Conversation(id),
        _ if path == "/" || path.starts_with("/c/") => PageShows::List,
        _ => PageShows::Header,
    }
}

/// A page's head as the session's read brought it, kept in the request's extensions: the count
/// and the list for whichever part asks, the conversation's snapshot for the one part that takes
/// it (a second look, after the page changed it, reads it anew).
pub struct PageRead {
    pub head: PageHead,
    snapshot: Mutex<Option<ConversationSnapshot>>,
}

impl From<PageHead> for PageRead {
    fn from(mut head: PageHead) -> Self {
        let snapshot = Mutex::new(head.snapshot.take());
        PageRead { head, snapshot }
    }
}

/// The head of the page being rendered ([`with_session`]), if this request is a page of `user`'s:
/// the page's parts take the list and the count from it instead of reading them again. `None`
/// outside a page (a server function, an event stream).
pub fn page_head(user: &CurrentUser) -> Option<Arc<PageRead>> {
    leptos::prelude::with_context::<axum::http::request::Parts, _>(|parts| {
        parts.extensions.get::<Arc<PageRead>>().filter(|read| read.head.user.id == user.id).cloned()
    })
    .flatten()
}

/// The snapshot of conversation `id` that the page's head read, taken: the first read of it on
/// the chat page costs no round trip of its own.
pub fn take_page_snapshot(user: &CurrentUser, id: &str) -> Option<ConversationSnapshot> {
    let read = page_head(user)?;
    let mut snapshot = read.snapshot.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    snapshot.take_if(|snapshot| snapshot.conversation.id == id)
}

/// Refuses state-changing requests that a browser sent from another site (CSRF). Browsers send
/// `Origin` on every POST; a request without it did not come from a page elsewhere.
pub fn refuse_cross_site(request: &Request) -> Result<(), Refusal> {
    let safe = matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe {
        let cross_site = request
            .headers()
            .get("sec-fetch-site")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value == "cross-site");
        let origin = request.headers().get(header::ORIGIN).and_then(|value| value.to_str().ok());
        let host = request.headers().get(header::HOST).and_then(|value| value.to_str().ok());
        let origin_mismatch = match (origin, host) {
            (Some("null"), _) => true,
            (Some(origin), Some(host)) => origin_host(origin) != Some(host),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if cross_site || origin_mismatch {
            return Err(Refusal::CrossSite);
        }
    }
    Ok(())
}

fn origin_host(origin: &str) -> Option<&str> {
    origin.split_once("://").map(|(_, rest)| rest.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_verify_only_against_their_own_hash() {
        let hash = hash_password("correct horse");
        assert!(verify_password("correct horse", &hash));
        assert!(!verify_password("wrong horse", &hash));
        assert!(!verify_password("correct horse", "not a hash"));
    }

    #[test]
    fn a_name_without_an_account_is_checked_against_the_dummy_hash() {
        for missing in [None, Some("!locked"), Some("")] {
            let (checked, real) = hash_to_check(missing);
            assert!(!real);
            assert_eq!(checked.to_string(), dummy_hash(), "{missing:?}");
            assert!(!verify_password_or_dummy("any-password", missing));
        }
        let hash = hash_password("correct horse");
        let (checked, real) = hash_to_check(Some(&hash));
        assert!(real);
        assert_eq!(checked.to_string(), hash);
        assert!(verify_password_or_dummy("correct horse", Some(&hash)));
    }

    #[test]
    fn the_dummy_hash_costs_what_a_real_one_does() {
        let dummy = PasswordHash::new(dummy_hash()).unwrap();
        let real_hash = hash_password("correct horse");
        let real = PasswordHash::new(&real_hash).unwrap();
        assert_eq!(dummy.algorithm, real.algorithm);
        assert_eq!(dummy.version, real.version);
        assert_eq!(dummy.params, real.params, "memory, iterations and lanes");
        assert_eq!(dummy.hash.map(|output| output.len()), real.hash.map(|output| output.len()));
        assert_eq!(dummy.salt.map(|salt| salt.len()), real.salt.map(|salt| salt.len()));
        assert_ne!(dummy.hash, real.hash);
    }

    #[test]
    fn origin_host_strips_the_scheme() {
        assert_eq!(origin_host("http://127.0.0.1:3000"), Some("127.0.0.1:3000"));
        assert_eq!(origin_host("garbage"), None);
    }
}
