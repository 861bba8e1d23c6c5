//! First load of the chat page: the bytes transferred, before and after compression.

use crate::process::{Client, ServerProcess};
use crate::report::{kib, Report};
use crate::summary::{Better, Figure};

use super::shared::insert_messages;

const FIRST_LOAD_MESSAGES: usize = 20;
/// What Chromium sends on a first load.
const BROWSER_ENCODINGS: &str = "gzip, deflate, br, zstd";

/// The bytes of one response's body as sent (the client does not decode), and its encoding.
async fn transferred(client: &Client, url: &str, encodings: &str) -> (usize, String) {
    let response = client.http.get(url).header("accept-encoding", encodings).send().await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    let encoding = response
        .headers()
        .get("content-encoding")
        .map(|value| value.to_str().unwrap().to_string())
        .unwrap_or_else(|| "none".into());
    (response.bytes().await.unwrap().len(), encoding)
}

/// The chat page and every file it loads, as a browser's first visit fetches them: once asking for
/// no compression (what every response was before the static files were precompressed and pages
/// compressed), once with a browser's `Accept-Encoding`.
pub async fn first_load(report: &mut Report, server: &ServerProcess, client: &Client) {
    let id = client.create_conversation().await;
    insert_messages(server, &id, FIRST_LOAD_MESSAGES).await;
    let page = format!("{}/c/{id}", client.base);
    let html = client.http.get(&page).send().await.unwrap().text().await.unwrap();
    let mut files: Vec<String> =
        html.split('"').filter(|part| part.starts_with("/pkg/tourguide.")).map(str::to_string).collect();
    files.sort();
    files.dedup();
    assert_eq!(files.len(), 3, "the page loads a script, its WASM and a stylesheet: {files:?}");

    let mut rows = Vec::new();
    let (mut before_total, mut after_total, mut after_html) = (0, 0, 0);
    for (name, url) in std::iter::once(("chat page (HTML)".to_string(), page.clone()))
        .chain(files.iter().map(|file| (format!("`{file}`"), format!("{}{file}", client.base))))
    {
        let (before, _) = transferred(client, &url, "identity").await;
        let (after, encoding) = transferred(client, &url, BROWSER_ENCODINGS).await;
        if url == page {
            after_html = after;
        }
        before_total += before;
        after_total += after;
        rows.push(vec![name, kib(before), kib(after), encoding]);
    }
    rows.push(vec![
        "**first load**".into(),
        kib(before_total),
        kib(after_total),
        format!("{:.1} % of before", 100.0 * after_total as f64 / before_total as f64),
    ]);
    rows.push(vec![
        "**next load** (files cached as immutable)".into(),
        "—".into(),
        kib(after_html),
        "only the page".into(),
    ]);
    report.section(
        "First load of the chat page: bytes transferred",
        &format!(
            "`GET /c/{{id}}` of a conversation with {FIRST_LOAD_MESSAGES} messages and the three files the page loads, \
             response bodies as sent (headers not counted). *Before*: `Accept-Encoding: identity`, which is what every \
             response was before this build compressed anything. *After*: `Accept-Encoding: {BROWSER_ENCODINGS}` as \
             Chromium sends it: the page compressed as it is sent (brotli, quality 4), the files from their brotli \
             siblings made at build time (quality 11). The files have hashed names and `Cache-Control: immutable`, so \
             a later visit fetches only the page."
        ),
    );
    report.table(&["response", "before", "after", "encoding after"], &rows);
    report.figure(Figure::new(
        "first_load_kib",
        "first load of the chat page, transferred",
        after_total as f64 / 1024.0,
        "KiB",
        Better::Lower,
    ));
}
