//! Round trips to PostgreSQL per request, counted on the wire (`db::RoundTrips`, the proxy the
//! test `server/tests/it/round_trips.rs` holds Tourguide to the same counts with), for Tourguide's
//! web process and for the PostgreSQL limit reference.

use db::RoundTrips;

use crate::process::{Client, Role, ServerProcess};
use crate::reference::Reference;
use crate::reference_data::{Answer, POLLED};
use crate::report::Report;
use crate::summary::{Better, Figure, ROUND_TRIPS};

use super::answers::{answer, asked, reference_answer_load};
use super::shared::{polled_conversation, LONG_CONVERSATION, POLLED_HISTORY};

/// Each request kind is counted this many times, one at a time on a quiet server; the fewest is
/// its count (the first use of a statement on a connection prepares it: one more), the most is
/// shown beside it.
const TRIES: usize = 8;

/// The fewest and the most round trips each request kind took.
struct Counts {
    fast: (u64, u64),
    full: (u64, u64),
    answer: (u64, u64),
    page: Option<(u64, u64)>,
    /// The worker's, per answered run it carried on (Tourguide only).
    continuation: Option<f64>,
}

/// Tourguide's web process on the database through the proxy, its worker (asking the questions
/// answered here and carrying the answered runs on) beside it, straight to the database: the
/// counts are the requests' own.
async fn tourguide(start: &impl AsyncFn(&str, Role) -> ServerProcess, url: &str) -> Counts {
    let worker_proxy = RoundTrips::proxy(url).await.expect("the counting proxy listens");
    let worker = start(&worker_proxy.url(url), Role::Worker).await;
    let proxy = RoundTrips::proxy(url).await.expect("the counting proxy listens");
    let web = start(&proxy.url(url), Role::Web).await;
    let client = Client::signed_in(&web.base, "demo").await;
    let questions = asked(&client, TRIES, "round-trips-").await;
    let polled = polled_conversation(&web, &client).await;
    let known = (POLLED_HISTORY + 1).to_string();
    let fast = proxy.of(TRIES, |_| poll(&client, &polled, &known)).await;
    let full = proxy.of(TRIES, |_| poll(&client, &polled, "0")).await;
    worker_proxy.settle().await;
    let before = worker_proxy.count();
    let answered = proxy.of(TRIES, |time| answer(&client, &questions[time])).await;
    worker_proxy.settle().await;
    let continuation = Some((worker_proxy.count() - before) as f64 / TRIES as f64);
    let counts = Counts {
        fast,
        full,
        answer: answered,
        continuation,
        page: Some(
            proxy
                .of(TRIES, |_| async {
                    let response = client.http.get(format!("{}/c/{polled}", client.base)).send().await.unwrap();
                    assert_eq!(response.status(), 200);
                    response.bytes().await.unwrap();
                })
                .await,
        ),
    };
    web.stop().await;
    worker.stop().await;
    counts
}

async fn poll(client: &Client, id: &str, after: &str) {
    let (status, body) = client.call_json("poll", &[("id", id), ("after", after)]).await;
    assert_eq!(status, 200, "{body}");
}

/// The PostgreSQL limit reference on the database through the proxy.
async fn reference(url: &str) -> Counts {
    let proxy = RoundTrips::proxy(url).await.expect("the counting proxy listens");
    let reference = Reference::postgres(&proxy.url(url), TRIES, POLLED_HISTORY + 1, LONG_CONVERSATION).await;
    let known = (POLLED_HISTORY + 1).to_string();
    let bare = &reference;
    let counts = Counts {
        fast: proxy.of(TRIES, |_| poll(&reference.client, POLLED, &known)).await,
        full: proxy.of(TRIES, |_| poll(&reference.client, POLLED, "0")).await,
        answer: proxy
            .of(TRIES, |time| async move {
                reference_answer_load(bare, Answer::Audited, time, 1).await;
            })
            .await,
        page: None,
        continuation: None,
    };
    reference.stop().await;
    counts
}

/// Counts both, each on a database of its own made by `scratch`, and reports them beside issue
/// 45's aims: fast poll 1, full poll 1, answer ≤ 3, page ≤ 2.
pub async fn round_trips(
    report: &mut Report,
    start: &impl AsyncFn(&str, Role) -> ServerProcess,
    scratch: &impl AsyncFn() -> String,
) {
    let ours = tourguide(start, &scratch().await).await;
    let bare = reference(&scratch().await).await;
    report.line(&format!(
        "\n**Round trips to PostgreSQL per request**, counted on the wire: a proxy between the process and the \
         database (`db::RoundTrips`) counts each Sync and each simple Query the process sends (a statement, a \
         prepare, a ping: each waits for the server's ReadyForQuery). Tourguide's web process (its worker beside \
         it) and the limit reference, each request sent {TRIES} times one at a time on \
         a quiet server; the count is the fewest, the most in brackets (a statement's first use on a connection \
         prepares it). The same counts are a test (`server/tests/it/round_trips.rs`). The worker (through a \
         proxy of its own) took {:.1} round trips per answered run it carried on, from its wake to the run's next \
         stop.\n",
        ours.continuation.unwrap_or_default()
    ));
    let cell = |(fewest, most): (u64, u64)| format!("{fewest} ({most})");
    let rows = [
        ("fast poll", "fast_poll", ours.fast, Some(bare.fast), 1.0),
        ("full poll", "full_poll", ours.full, Some(bare.full), 1.0),
        ("answer", "answer", ours.answer, Some(bare.answer), 3.0),
        ("page of a conversation", "page", ours.page.expect("Tourguide serves pages"), bare.page, 2.0),
    ];
    report.table(
        &["request", "Tourguide (web process)", "limit reference", "aim (issue 45)"],
        &rows
            .iter()
            .map(|&(name, _, ours, bare, aim)| {
                vec![name.to_string(), cell(ours), bare.map(cell).unwrap_or_else(|| "—".into()), format!("≤ {aim}")]
            })
            .collect::<Vec<_>>(),
    );
    for (name, key, (fewest, _), bare, aim) in rows {
        let mut figure = Figure::new(
            Box::leak(format!("pg_round_trips_{key}").into_boxed_str()),
            format!("round trips to PostgreSQL per {name}"),
            fewest as f64,
            ROUND_TRIPS,
            Better::Lower,
        )
        .target(aim);
        if let Some((bare, _)) = bare {
            figure = figure.reference(bare as f64);
        }
        report.figure(figure);
    }
}
