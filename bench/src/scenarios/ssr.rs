//! Server-side rendering of a 200-message conversation, beside the SQLite page reference.

use std::time::{Duration, Instant};

use crate::process::{Client, ServerProcess};
use crate::reference::Reference;
use crate::reference_data::LONG;
use crate::report::Report;
use crate::stats::{millis, ms, Sample};
use crate::summary::{Better, Figure};

use super::shared::{insert_messages, LONG_CONVERSATION};

/// Requests of each page, in `SSR_TURNS` turns with its reference.
const SSR_ROUNDS: usize = 1_000;
const SSR_TURNS: usize = 5;
/// Requests of each page before the measured ones (connections open, caches warm).
const SSR_WARM_UP: usize = 20;
/// Entries in the conversation list beside the page (the server shows at most 100): the list is
/// full whatever ran before, as the reference's is.
const SSR_LISTED: usize = 100;

/// `rounds` requests of the reference's long conversation's page, one after another, with the
/// client Tourguide's pages are fetched with: the time of each.
async fn reference_pages(reference: &Reference, rounds: usize) -> Vec<Duration> {
    let url = format!("{}/c/{LONG}", reference.client.base);
    let mut durations = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        let response = reference.client.http.get(&url).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let html = response.text().await.unwrap();
        durations.push(started.elapsed());
        assert!(
            html.contains(&format!("Answer {}", LONG_CONVERSATION - 1)),
            "the reference page carries the conversation"
        );
    }
    durations
}

pub async fn ssr_of_a_long_conversation(
    report: &mut Report,
    server: &ServerProcess,
    client: &Client,
    reference: &Reference,
) {
    let id = client.create_conversation().await;
    insert_messages(server, &id, LONG_CONVERSATION).await;
    let (status, listed) = client.call_json("conversations", &[]).await;
    assert_eq!(status, 200, "{listed}");
    for _ in listed.as_array().expect("a list").len()..SSR_LISTED {
        client.create_conversation().await;
    }
    let url = format!("{}/c/{id}", client.base);
    let mut size = 0;
    let mut page = async |rounds: usize| {
        let mut durations = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let started = Instant::now();
            let response = client.http.get(&url).send().await.unwrap();
            assert_eq!(response.status(), 200);
            let html = response.text().await.unwrap();
            durations.push(started.elapsed());
            assert!(
                html.contains(&format!("Answer {}", LONG_CONVERSATION - 1)),
                "the page carries the whole conversation"
            );
            assert_eq!(html.matches("<li><a href=\"/c/").count(), SSR_LISTED, "the list beside it is full");
            size = html.len();
        }
        durations
    };
    page(SSR_WARM_UP).await;
    reference_pages(reference, SSR_WARM_UP).await;
    // In turns, so both meet the machine's ups and downs alike.
    let (mut ours, mut bare) = (Vec::with_capacity(SSR_ROUNDS), Vec::with_capacity(SSR_ROUNDS));
    // The server's CPU time over Tourguide's turns: what a page costs it, apart from how long the
    // host makes the page wait.
    let mut cpu = Duration::ZERO;
    for _ in 0..SSR_TURNS {
        let before = server.cpu_time();
        ours.extend(page(SSR_ROUNDS / SSR_TURNS).await);
        cpu += server.cpu_time().saturating_sub(before);
        bare.extend(reference_pages(reference, SSR_ROUNDS / SSR_TURNS).await);
    }
    let cpu_per_page = cpu.as_secs_f64() * 1e6 / SSR_ROUNDS as f64;
    let (sample, bare) = (Sample::new(ours), Sample::new(bare));
    report.section(
        "Server-side rendering of a 200-message conversation",
        &format!(
            "`GET /c/{{id}}` of a conversation with {LONG_CONVERSATION} messages (half of them Markdown with lists, code \
             and quotes, rendered and sanitised once when written, as the server does), the full page with a list of \
             {SSR_LISTED} conversations beside it; {SSR_ROUNDS} requests one after another, in {SSR_TURNS} turns with \
             the reference's, after {SSR_WARM_UP} of each not counted; time to the last byte. **Limit reference**, measured in the same run: a bare \
             handler that reads the latest 100 titles and the messages with the session in one batch to a reader, and \
             writes them into a page with `format!` (stored HTML as is, user lines escaped; `bench/src/sqlite_reference.rs`, a process of its own)."
        ),
    );
    report.table(
        &["server", "requests", "HTML size", "p50", "p99"],
        &[
            vec![
                "Tourguide".into(),
                sample.len().to_string(),
                format!("{:.1} KiB", size as f64 / 1024.0),
                ms(sample.p50()),
                ms(sample.p99()),
            ],
            vec!["limit reference".into(), bare.len().to_string(), String::new(), ms(bare.p50()), ms(bare.p99())],
        ],
    );
    report.figure(
        Figure::new(
            "ssr_200_p50_ms",
            "page of a 200-message conversation, p50",
            millis(sample.p50()),
            "ms",
            Better::Lower,
        )
        .reference(millis(bare.p50()))
        // A multiple of the reference (issue 41), which writes the page as one string: Tourguide
        // renders it with Leptos, with hydration data and the header's parts; 1.5 ms, the target
        // before, was met on our own SQLite pool against a reference inside the bench's process.
        .target(4.0 * millis(bare.p50())),
    );
    report.line(&format!(
        "\nThe server's CPU time (user + system, `/proc`) over Tourguide's turns: {cpu_per_page:.0} µs per page."
    ));
    report.figure(Figure::new("ssr_cpu_us", "server CPU per page of 200 messages", cpu_per_page, "µs", Better::Lower));
}
