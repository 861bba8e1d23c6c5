//! The security headers of every response (OWASP Secure Headers, ASVS 4 level 2 §14.4).
//!
//! A page gets a strict Content-Security-Policy whose `script-src` names a nonce made for that
//! response: the request carries it (as Leptos' [`Nonce`]) into the render, where the page's own
//! script and Leptos' hydration data scripts bear it; a script that came from content cannot.
//! Nothing may frame the app (`frame-ancestors 'none'` and `X-Frame-Options: DENY`): approving a
//! card is one click, and a framing page could have it clicked. Signed-in pages and JSON are
//! never stored by a cache (`no-store`); the built files under `/pkg` keep their own
//! `immutable` caching.

use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, STRICT_TRANSPORT_SECURITY,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request};
use leptos::nonce::Nonce;

use crate::config::PublicUrl;

/// What a page may load: only this origin's files, its own nonce-bearing scripts (and the WASM
/// they compile), images from here or inline data (an outside image is a link, see `markdown`).
const PAGE_POLICY_BEFORE_NONCE: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval' 'nonce-";
const PAGE_POLICY_AFTER_NONCE: &str = "'; style-src 'self'; img-src 'self' data: blob:; font-src 'self'; \
     connect-src 'self'; media-src 'none'; object-src 'none'; frame-src 'none'; worker-src 'none'; \
     manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// What anything that is not a page may do if a browser opens it as a document: nothing.
const OTHER_POLICY: &str = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The browser features the app does not use, turned off for it and anything it could embed.
const PERMISSIONS_POLICY: &str = "accelerometer=(), autoplay=(), camera=(), display-capture=(), \
     encrypted-media=(), fullscreen=(), geolocation=(), gyroscope=(), magnetometer=(), microphone=(), \
     midi=(), payment=(), picture-in-picture=(), publickey-credentials-get=(), screen-wake-lock=(), \
     serial=(), usb=(), xr-spatial-tracking=()";

/// Two years, the HSTS preload list's minimum; only sent when the operator said the public
/// address is https (`--public-url`), never because a request claims it.
const HSTS: &str = "max-age=63072000";

static PERMISSIONS_POLICY_HEADER: HeaderName = HeaderName::from_static("permissions-policy");
/// Chromium may resolve a link's host when the pointer rests on it; a host name can carry data
/// (`secret.evil.example`), so a link in the model's text reaches no DNS server before a click.
static DNS_PREFETCH_HEADER: HeaderName = HeaderName::from_static("x-dns-prefetch-control");

/// How this server is reached, from its configuration.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// `--public-url https://…`: cookies are always `Secure`, and HSTS goes out.
    pub https: bool,
}

impl Policy {
    pub fn new(public_url: Option<&PublicUrl>) -> Policy {
        Policy { https: public_url.is_some_and(|url| url.https) }
    }
}

/// Puts a fresh nonce on the request, for the page's render and for [`apply`] afterwards.
pub fn with_nonce<B>(request: &mut Request<B>) -> Nonce {
    let nonce = Nonce::new();
    request.extensions_mut().insert(nonce.clone());
    nonce
}

/// The page's policy for this response's nonce.
pub fn page_policy(nonce: &str) -> String {
    let mut policy =
        String::with_capacity(PAGE_POLICY_BEFORE_NONCE.len() + nonce.len() + PAGE_POLICY_AFTER_NONCE.len());
    policy.push_str(PAGE_POLICY_BEFORE_NONCE);
    policy.push_str(nonce);
    policy.push_str(PAGE_POLICY_AFTER_NONCE);
    policy
}

/// Sets the security headers on a response of the app (pages, server functions, streams,
/// downloads). `nonce` is the one the page was rendered with.
pub fn apply(policy: &Policy, nonce: Option<&Nonce>, headers: &mut HeaderMap) {
    let is_page = headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| kind.trim_start().to_ascii_lowercase().starts_with("text/html"));
    let csp = match nonce.filter(|_| is_page) {
        Some(nonce) => HeaderValue::from_str(&page_policy(nonce)).ok(),
        None => Some(HeaderValue::from_static(OTHER_POLICY)),
    };
    if let Some(csp) = csp {
        headers.insert(CONTENT_SECURITY_POLICY, csp);
    }
    // Signed-in pages and JSON: a shared or back-button cache must not keep them. A route that
    // chose its own caching (a download) keeps it.
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    apply_common(policy, headers);
}

/// The headers every response carries, the built files included.
pub fn apply_common(policy: &Policy, headers: &mut HeaderMap) {
    if !headers.contains_key(CONTENT_SECURITY_POLICY) {
        headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(OTHER_POLICY));
    }
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("strict-origin-when-cross-origin"));
    headers.insert(PERMISSIONS_POLICY_HEADER.clone(), HeaderValue::from_static(PERMISSIONS_POLICY));
    headers.insert(DNS_PREFETCH_HEADER.clone(), HeaderValue::from_static("off"));
    if policy.https {
        headers.insert(STRICT_TRANSPORT_SECURITY, HeaderValue::from_static(HSTS));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page_headers() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        headers
    }

    #[test]
    fn a_page_gets_its_nonce_in_a_strict_policy() {
        let nonce = Nonce::from_value("abc123");
        let mut headers = page_headers();
        apply(&Policy::default(), Some(&nonce), &mut headers);
        let csp = headers[CONTENT_SECURITY_POLICY].to_str().unwrap();
        for directive in [
            "default-src 'self'",
            "script-src 'self' 'wasm-unsafe-eval' 'nonce-abc123'",
            "img-src 'self' data: blob:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.split("; ").any(|part| part == directive), "{directive} missing from {csp}");
        }
        assert!(!csp.contains("unsafe-inline") && !csp.contains("'unsafe-eval'"), "{csp}");
        assert_eq!(headers[X_FRAME_OPTIONS], "DENY");
        assert_eq!(headers[X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(headers[REFERRER_POLICY], "strict-origin-when-cross-origin");
        assert_eq!(headers[CACHE_CONTROL], "no-store");
        assert!(headers[&PERMISSIONS_POLICY_HEADER].to_str().unwrap().contains("camera=()"));
        assert_eq!(headers[&DNS_PREFETCH_HEADER], "off");
        assert!(!headers.contains_key(STRICT_TRANSPORT_SECURITY), "HSTS only for a configured https address");
    }

    #[test]
    fn json_gets_a_policy_that_allows_nothing_and_a_download_keeps_its_caching() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        apply(&Policy::default(), Some(&Nonce::from_value("n")), &mut headers);
        assert_eq!(headers[CONTENT_SECURITY_POLICY], OTHER_POLICY);
        assert_eq!(headers[CACHE_CONTROL], "no-store");

        let mut download = HeaderMap::new();
        download.insert(CACHE_CONTROL, HeaderValue::from_static("private, max-age=60"));
        apply(&Policy::default(), None, &mut download);
        assert_eq!(download[CACHE_CONTROL], "private, max-age=60");
        assert_eq!(download[X_FRAME_OPTIONS], "DENY");
    }

    #[test]
    fn hsts_follows_the_configured_public_url() {
        let https = PublicUrl { https: true, origin: "https://chat.example.com".into() };
        let mut headers = page_headers();
        apply(&Policy::new(Some(&https)), Some(&Nonce::from_value("n")), &mut headers);
        assert_eq!(headers[STRICT_TRANSPORT_SECURITY], HSTS);
        let plain = PublicUrl { https: false, origin: "http://chat.example.com".into() };
        let mut headers = page_headers();
        apply(&Policy::new(Some(&plain)), None, &mut headers);
        assert!(!headers.contains_key(STRICT_TRANSPORT_SECURITY));
    }

    #[test]
    fn each_request_gets_a_nonce_of_its_own() {
        let mut first = Request::new(());
        let mut second = Request::new(());
        let (a, b) = (with_nonce(&mut first), with_nonce(&mut second));
        assert_ne!(a, b);
        assert!(a.len() >= 22, "at least 128 bits: {a}");
        assert_eq!(first.extensions().get::<Nonce>(), Some(&a));
    }
}
