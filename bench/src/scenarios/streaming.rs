//! Streamed replies: the model's first token to the page's stream, and the server's CPU per token.

use std::time::{Duration, Instant};

use crate::model::Model;
use crate::process::{Client, ServerProcess};
use crate::report::Report;
use crate::stats::{millis, ms, Sample};
use crate::summary::{Better, Figure};

const FIRST_TOKEN_ROUNDS: usize = 40;
/// Enough tokens that the CPU time, read in 10 ms ticks, resolves 0.1 µs per token.
const COST_TOKENS: usize = 100_000;

/// The time from the model writing a reply's first token to that token arriving on the page's
/// event stream, and the server's CPU time per streamed token.
pub async fn streaming(report: &mut Report, server: &ServerProcess, client: &Client, model: &Model) {
    let mut latencies = Vec::with_capacity(FIRST_TOKEN_ROUNDS);
    for round in 0..FIRST_TOKEN_ROUNDS {
        let tag = format!("first-{round}");
        let id = client.create_conversation().await;
        let mut events = client.http.get(format!("{}/events/conversations/{id}", client.base)).send().await.unwrap();
        let mut seen = String::new();
        read_until(&mut events, &mut seen, "event: ready").await;
        let written = model.first_token_of(&tag);
        // A pause before each token, so the first is alone on the wire when it is timed.
        client.send(&id, &format!("stream {tag} 5 20")).await;
        read_until(&mut events, &mut seen, "event: piece").await;
        let arrived = Instant::now();
        let written = tokio::time::timeout(Duration::from_secs(10), written).await.expect("the model streams").unwrap();
        latencies.push(arrived.saturating_duration_since(written));
        client.settled(&id).await;
    }
    let first = Sample::new(latencies);

    let id = client.create_conversation().await;
    let mut events = client.http.get(format!("{}/events/conversations/{id}", client.base)).send().await.unwrap();
    read_until(&mut events, &mut String::new(), "event: ready").await;
    let before = server.cpu_time();
    let started = Instant::now();
    client.send(&id, &format!("stream cost {COST_TOKENS} 0")).await;
    let view = settled_by_events(client, &id, &mut events).await;
    let elapsed = started.elapsed();
    let used = server.cpu_time().saturating_sub(before);
    let answer = view["messages"][1]["html"].as_str().unwrap_or_default();
    assert!(answer.contains(&format!("tok{}", COST_TOKENS - 1)), "the whole reply was recorded");
    report.section(
        "Streamed replies",
        &format!(
            "First token: {FIRST_TOKEN_ROUNDS} replies, one at a time, each from a fresh conversation with its event \
             stream open (as a page has it), the model pausing 20 ms before each of 5 tokens. Measured from the \
             stand-in model writing the first token to that token's `piece` event arriving on the stream: the \
             server's client reading the chunk, the worker handing it to the drafts, the event fan-out and the SSE \
             write. (In the browser the event then grows the reply in place; that step is not timed here.) Cost: \
             one reply of {COST_TOKENS} tokens sent as fast as the model can, its conversation's event stream open \
             (as a page has it; the end of the turn is told by the stream's `changed`, not by polling); the server \
             process's CPU time (user + system, `/proc/PID/stat`) over the whole turn, divided by the tokens, so it \
             includes the turn's own fixed cost."
        ),
    );
    report.table(
        &["measure", "value"],
        &[
            vec!["model writes first token → page's stream has it, p50".into(), ms(first.p50())],
            vec!["… p99".into(), ms(first.p99())],
            vec![
                format!("server CPU per streamed token ({COST_TOKENS} tokens)"),
                format!("{:.1} µs", used.as_secs_f64() * 1e6 / COST_TOKENS as f64),
            ],
            vec![format!("{COST_TOKENS}-token reply, send → recorded"), ms(elapsed)],
        ],
    );
    report.figure(Figure::new(
        "first_token_p50_ms",
        "model's first token → page's stream, p50",
        millis(first.p50()),
        "ms",
        Better::Lower,
    ));
    // A key of its own since the page's stream is open while it is measured: the figure before
    // (`cpu_per_token_us`) had none, and polled, so the two do not compare.
    report.figure(Figure::new(
        "cpu_per_token_with_stream_us",
        "server CPU per streamed token, page's stream open",
        used.as_secs_f64() * 1e6 / COST_TOKENS as f64,
        "µs",
        Better::Lower,
    ));
}

/// The conversation once its turn has ended, told by its open event stream: read again only
/// after a `changed`, never polled while the reply streams, so the server's CPU time is the turn's.
async fn settled_by_events(client: &Client, id: &str, events: &mut reqwest::Response) -> serde_json::Value {
    const MARKER: &str = "event: changed";
    // The end of the last chunk, for a marker split across two.
    let mut tail = String::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(60), events.chunk()).await.expect("an event").unwrap();
        let text = format!("{tail}{}", String::from_utf8_lossy(&chunk.expect("the stream stays open")));
        if text.contains(MARKER) {
            let (status, view) = client.call_json("conversation", &[("id", id)]).await;
            assert_eq!(status, 200, "{view}");
            if view["status"] != "processing" {
                return view;
            }
        }
        let cut = text.len().saturating_sub(MARKER.len());
        let cut = (cut..=text.len()).find(|&at| text.is_char_boundary(at)).unwrap_or(text.len());
        tail = text[cut..].to_string();
    }
}

async fn read_until(events: &mut reqwest::Response, seen: &mut String, marker: &str) {
    loop {
        if let Some(at) = seen.find(marker) {
            seen.drain(..at + marker.len());
            return;
        }
        let chunk = tokio::time::timeout(Duration::from_secs(10), events.chunk()).await.expect("an event").unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk.expect("the stream stays open")));
    }
}
