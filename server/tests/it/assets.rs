//! Static files and compression: hashed names cached for good, precompressed variants chosen by
//! `Accept-Encoding`, pages and JSON compressed as they are sent, event streams never.

use std::io::Read;
use std::sync::Arc;

use reqwest::header::{ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, VARY};

use crate::harness::TestServer;

const JS: &str = "0123456789abcdef";
const WASM: &str = "fedcba9876543210";
const CSS: &str = "00aa11bb22cc33dd";

/// A built site as `pack_site` leaves it: hashed names, each with a `.br` and a `.gz` sibling
/// (here with contents that tell them apart), and one unhashed file.
fn write_site(dir: &tempfile::TempDir) {
    let pkg = dir.path().join("site/pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    for (hash, ext) in [(JS, "js"), (WASM, "wasm"), (CSS, "css")] {
        let name = format!("tourguide.{hash}.{ext}");
        std::fs::write(pkg.join(&name), format!("plain {ext}")).unwrap();
        std::fs::write(pkg.join(format!("{name}.br")), format!("brotli {ext}")).unwrap();
        std::fs::write(pkg.join(format!("{name}.gz")), format!("gzip {ext}")).unwrap();
    }
    std::fs::write(pkg.join("notes.txt"), "not hashed").unwrap();
    std::fs::write(dir.path().join("site/hash.txt"), format!("js: {JS}\nwasm: {WASM}\ncss: {CSS}\n")).unwrap();
}

async fn hashed_site() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    write_site(&dir);
    TestServer::start_in(dir, Arc::new(demo::DemoProvider)).await
}

#[tokio::test]
async fn pages_name_the_hashed_files() {
    let server = hashed_site().await;
    let html = reqwest::get(format!("{}/login", server.base)).await.unwrap().text().await.unwrap();
    for name in
        [format!("/pkg/tourguide.{JS}.js"), format!("/pkg/tourguide.{WASM}.wasm"), format!("/pkg/tourguide.{CSS}.css")]
    {
        assert!(html.contains(&name), "{name} missing from {html}");
    }
    assert!(!html.contains("tourguide_bg"), "{html}");

    // A site built without hashes (a development build) keeps the plain names.
    let plain = TestServer::start().await;
    let html = reqwest::get(format!("{}/login", plain.base)).await.unwrap().text().await.unwrap();
    assert!(html.contains("/pkg/tourguide.js") && html.contains("/pkg/tourguide.css"), "{html}");
}

#[tokio::test]
async fn hashed_files_are_immutable_and_precompressed_by_negotiation() {
    let server = hashed_site().await;
    let http = reqwest::Client::new();
    let url = format!("{}/pkg/tourguide.{WASM}.wasm", server.base);
    for (accept, encoding, body) in [
        (Some("br, gzip"), Some("br"), "brotli wasm"),
        (Some("gzip"), Some("gzip"), "gzip wasm"),
        (None, None, "plain wasm"),
    ] {
        let mut request = http.get(&url);
        if let Some(accept) = accept {
            request = request.header(ACCEPT_ENCODING, accept);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let headers = response.headers().clone();
        assert_eq!(headers.get(CACHE_CONTROL).unwrap(), "public, max-age=31536000, immutable", "{accept:?}");
        assert_eq!(headers.get(VARY).unwrap(), "accept-encoding");
        assert_eq!(headers.get(CONTENT_ENCODING).map(|v| v.to_str().unwrap()), encoding, "{accept:?}");
        assert_eq!(headers.get("content-type").unwrap(), "application/wasm");
        // The built files carry the headers every response does.
        assert_eq!(headers.get("x-content-type-options").unwrap(), "nosniff");
        assert_eq!(headers.get("x-frame-options").unwrap(), "DENY");
        assert!(headers.get("content-security-policy").unwrap().to_str().unwrap().contains("frame-ancestors 'none'"));
        assert_eq!(response.text().await.unwrap(), body, "{accept:?}");
    }

    // Anything else under /pkg is revalidated; a name that is not there is a plain 404.
    let response = http.get(format!("{}/pkg/notes.txt", server.base)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers().get(CACHE_CONTROL).unwrap(), "no-cache");
    let response = http.get(format!("{}/pkg/tourguide.{JS}0.js", server.base)).send().await.unwrap();
    assert_eq!(response.status(), 404);
    assert!(response.headers().get(CACHE_CONTROL).is_none());
}

#[tokio::test]
async fn pages_and_json_are_compressed_and_event_streams_are_not() {
    let server = hashed_site().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;

    let plain = client.http.get(format!("{}/c/{id}", server.base)).send().await.unwrap();
    assert!(plain.headers().get(CONTENT_ENCODING).is_none(), "nothing asked for");
    let plain = plain.text().await.unwrap();
    assert!(plain.contains("<!DOCTYPE html>"), "{plain}");

    let response =
        client.http.get(format!("{}/c/{id}", server.base)).header(ACCEPT_ENCODING, "br").send().await.unwrap();
    assert_eq!(response.headers().get(CONTENT_ENCODING).unwrap(), "br");
    let bytes = response.bytes().await.unwrap();
    let mut html = String::new();
    brotli::Decompressor::new(&bytes[..], 4096).read_to_string(&mut html).unwrap();
    // Each page has its own nonce, of one length: otherwise the two are the same page.
    assert_eq!(html.len(), plain.len(), "the page decompresses to what an uncompressed request gets");
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains(&format!("/c/{id}")), "{html}");
    assert!(bytes.len() * 2 < plain.len(), "{} compressed of {}", bytes.len(), plain.len());

    let read = || {
        client
            .http
            .post(format!("{}/api/conversation", server.base))
            .header(ACCEPT_ENCODING, "gzip")
            .form(&[("id", id.as_str())])
            .send()
    };
    // Under a KiB is not worth the CPU: an empty conversation's JSON goes out as it is.
    let small = read().await.unwrap();
    assert!(small.headers().get(CONTENT_ENCODING).is_none());
    assert!(small.bytes().await.unwrap().len() < 1024);
    let long = "a line to be compressed ".repeat(100);
    client.call_json("send_message", &[("conversation_id", &id), ("content", &long)]).await;
    client.settled_conversation(&id).await;
    let response = read().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers().get(CONTENT_ENCODING).unwrap(), "gzip");
    let bytes = response.bytes().await.unwrap();
    let mut json = String::new();
    flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut json).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["id"], id.as_str());

    // A compressor would hold events back until its buffer fills.
    let events = client
        .http
        .get(format!("{}/events/conversations/{id}", server.base))
        .header(ACCEPT_ENCODING, "br, gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    assert!(events.headers().get(CONTENT_ENCODING).is_none());
}
