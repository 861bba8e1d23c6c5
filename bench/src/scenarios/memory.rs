//! Server memory at rest and with 1,000 open event streams, beside the SSE limit reference.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::sync::mpsc;

use crate::process::{Client, ReferenceProcess, ServerProcess};
use crate::report::{mib, Report};
use crate::stats::{millis, ms, Sample};
use crate::summary::{Better, Figure};

/// How much more of the streams' memory than the reference may still be held a second after they
/// closed: both keep nearly all of it (mimalloc returns a thread's freed pages when it next
/// allocates), and the share moves by several points from run to run.
const KEPT_MARGIN: f64 = 1.1;

const STREAMS: usize = 1_000;
/// Streams being opened at once.
const OPENING: usize = 50;
/// Changes sent to the open streams; the fan-out figures pool what every stream heard of each.
/// One change alone left its median at the mercy of that moment's scheduling (7.5 and 9 ms for
/// the same server in two runs).
const FAN_OUT_ROUNDS: usize = 5;

/// What opening `STREAMS` event streams on one server did to it.
struct Streams {
    idle: u64,
    with_streams: u64,
    after_close: u64,
    opened_in: Duration,
    fan_out: Sample,
}

impl Streams {
    fn per_stream_kib(&self) -> f64 {
        self.with_streams.saturating_sub(self.idle) as f64 / STREAMS as f64
    }

    /// The share of what the open streams took that the process still holds a second after they
    /// closed; `None` when they took nothing beyond what the process held at rest (they fit in
    /// memory it had kept from starting), so there is no share to tell.
    fn kept_after_close(&self) -> Option<f64> {
        let took = self.with_streams.saturating_sub(self.idle);
        (took > 0).then(|| 100.0 * self.after_close.saturating_sub(self.idle) as f64 / took as f64)
    }
}

/// The memory as `STREAMS` open streams and one change leave it (`open_streams` with one round),
/// and the fan-out over `FAN_OUT_ROUNDS` changes, on streams opened again: more changes leave more
/// behind in the process, which the memory figures are not about.
async fn measure_streams(
    http: &reqwest::Client,
    url: &str,
    trigger: impl AsyncFn(),
    quiet: impl AsyncFn(),
    rss: impl Fn() -> u64,
) -> Streams {
    let memory = open_streams(http, url, 1, &trigger, &quiet, &rss).await;
    let fan_out = open_streams(http, url, FAN_OUT_ROUNDS, &trigger, &quiet, &rss).await.fan_out;
    Streams { fan_out, ..memory }
}

/// Opens `STREAMS` streams of `url` (each counted once it has its `ready` event), then `rounds`
/// times waits for `quiet` (the change before has run its course), calls `trigger` and waits until
/// every stream heard `changed`; then closes them. `rss` reads the server's memory at rest, with
/// the streams open and a second after they closed.
async fn open_streams(
    http: &reqwest::Client,
    url: &str,
    rounds: usize,
    trigger: impl AsyncFn(),
    quiet: impl AsyncFn(),
    rss: impl Fn() -> u64,
) -> Streams {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = rss();
    let ready = Arc::new(AtomicUsize::new(0));
    // The round being measured (0: none yet); each stream reports the first `changed` of each.
    let round = Arc::new(AtomicUsize::new(0));
    let (seen, mut first_changes) = mpsc::unbounded_channel::<(usize, Instant)>();
    // At most `OPENING` connections being opened at once: a thousand at once overflow the
    // kernel's accept queue, and the retried SYNs (one second later) would be the figure.
    let opening_slots = Arc::new(tokio::sync::Semaphore::new(OPENING));
    let opening = Instant::now();
    let mut streams = Vec::with_capacity(STREAMS);
    for _ in 0..STREAMS {
        let (http, url, ready, round, seen) =
            (http.clone(), url.to_string(), ready.clone(), round.clone(), seen.clone());
        let slot = opening_slots.clone().acquire_owned().await.unwrap();
        streams.push(tokio::spawn(async move {
            let response = http.get(&url).send().await.expect("the stream opens");
            drop(slot);
            assert_eq!(response.status(), 200, "event stream refused");
            let mut body = response.bytes_stream();
            let mut reported = 0;
            while let Some(Ok(chunk)) = body.next().await {
                let text = String::from_utf8_lossy(&chunk);
                if text.contains("event: ready") {
                    ready.fetch_add(1, Ordering::SeqCst);
                }
                let current = round.load(Ordering::SeqCst);
                if text.contains("event: changed") && current > reported {
                    reported = current;
                    let _ = seen.send((current, Instant::now()));
                }
            }
        }));
    }
    while ready.load(Ordering::SeqCst) < STREAMS {
        assert!(opening.elapsed() < Duration::from_secs(120), "only {} streams opened", ready.load(Ordering::SeqCst));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let opened_in = opening.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let with_streams = rss();

    let mut arrivals = Vec::with_capacity(STREAMS * rounds);
    for this_round in 1..=rounds {
        quiet().await;
        // What the change before still sends (a worker's later steps) goes out before this round.
        tokio::time::sleep(Duration::from_millis(200)).await;
        round.store(this_round, Ordering::SeqCst);
        let sent = Instant::now();
        trigger().await;
        let mut heard = 0;
        while heard < STREAMS {
            let (of, at) = tokio::time::timeout(Duration::from_secs(30), first_changes.recv())
                .await
                .expect("every stream hears of the change")
                .unwrap();
            if of == this_round {
                heard += 1;
                arrivals.push(at - sent);
            }
        }
    }
    let fan_out = Sample::new(arrivals);
    for stream in &streams {
        stream.abort();
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    Streams { idle, with_streams, after_close: rss(), opened_in, fan_out }
}

/// mimalloc's setting for returning freed memory to the system at once instead of after a delay
/// (which, on threads that then go quiet, it may never reach).
pub const PURGE_NOW: (&str, &str) = ("MIMALLOC_PURGE_DELAY", "0");

async fn streams_of(server: &ServerProcess, client: &Client) -> Streams {
    // One turn first, then as many reads at once as streams are opened at once: what the process
    // sets up on its first run and keeps (prepared statements, the Markdown sanitiser's tables),
    // and the database connections it opens as concurrent reads need them and keeps open (each a
    // thread with its page cache), are not the streams' memory.
    let warm_up = client.create_conversation().await;
    client.send(&warm_up, "hello").await;
    client.settled(&warm_up).await;
    let form = [("id", warm_up.as_str())];
    futures::future::join_all((0..OPENING).map(|_| client.call_json("conversation", &form))).await;
    let id = client.create_conversation().await;
    let url = format!("{}/events/conversations/{id}", client.base);
    let trigger = async || client.send(&id, "hello, all of you").await;
    // The turn a change starts runs to its end before the next change.
    let quiet = async || {
        client.settled(&id).await;
    };
    measure_streams(&client.http, &url, trigger, quiet, || server.rss_kib()).await
}

pub async fn memory_and_event_streams(
    report: &mut Report,
    (server, client): (&ServerProcess, &Client),
    (purging, purging_client): (&ServerProcess, &Client),
) {
    let ours = streams_of(server, client).await;
    let returning = streams_of(purging, purging_client).await;

    let reference = ReferenceProcess::start(crate::sse_reference::FLAG, &[]).await;
    let http = reqwest::Client::new();
    let send = format!("{}/send", reference.base);
    let trigger = async || assert_eq!(http.post(&send).send().await.unwrap().status(), 200);
    let bare =
        measure_streams(&http, &format!("{}/events", reference.base), trigger, async || {}, || reference.rss_kib())
            .await;
    reference.stop().await;

    report.section(
        "Server memory and 1,000 open event streams",
        &format!(
            "RSS is `VmRSS` of the server process from `/proc`. Idle: after start, signed in, one message's turn \
             run to its end and then 50 reads of a conversation at once (so what the first run sets up once, and the \
             database's read connections, which open as concurrent reads need them and stay, are there already), one \
             second later, nothing open. Then 1,000 `GET /events/conversations/{{id}}` streams of one session on one conversation (1,000 \
             TCP connections, at most 50 being opened at a time), each counted once it received its `ready` event; \
             then a message is sent and every stream must hear `changed`, and the streams are closed. The fan-out \
             figures come from 1,000 streams opened again the same way, to which {FAN_OUT_ROUNDS} messages are sent (each \
             once the turn before has ended); they pool every stream's arrival of each. *Returning pages*: the same \
             binary started with `{}={}`, so mimalloc returns freed pages to the system at once (by default it returns \
             them a second after they were freed, when the thread that freed them next allocates). **Limit \
             reference**, measured in the same run: a bare axum SSE fan-out in a process of its own on the same \
             allocator (one broadcast channel, `ready` \
             then `changed` on `POST /send`; no session, no database; `bench/src/sse_reference.rs`), opened and \
             triggered the same way, on the same upstream hyper. Its RSS per open stream is the target for \
             Tourguide's (issue 41: no worse than a bare axum SSE server on the same crates; it was ≤ 10 KiB, \
             which only a patched hyper met), and so is its share of the streams' memory still held a second \
             after they closed (it was ≤ 10 %, which only our own allocator housekeeping met; see \
             \"What the own pieces win\").",
            PURGE_NOW.0, PURGE_NOW.1
        ),
    );
    let row = |name: &str, value: &dyn Fn(&Streams) -> String| {
        vec![name.to_string(), value(&ours), value(&returning), value(&bare)]
    };
    report.table(
        &["measure", "Tourguide", "Tourguide, returning pages", "limit reference"],
        &[
            row("RSS idle", &|s| mib(s.idle)),
            row("RSS with 1,000 open streams", &|s| mib(s.with_streams)),
            row("per open stream", &|s| format!("{:.1} KiB", s.per_stream_kib())),
            row("RSS one second after closing them", &|s| mib(s.after_close)),
            row("… share of the streams' memory still held", &|s| match s.kept_after_close() {
                Some(kept) => format!("{kept:.0} %"),
                None => "— (they took none)".to_string(),
            }),
            row("time to open 1,000 streams", &|s| ms(s.opened_in)),
            row("message sent → `changed` at a stream, p50", &|s| ms(s.fan_out.p50())),
            row("message sent → `changed` at a stream, p99 / last", &|s| {
                format!("{} / {}", ms(s.fan_out.p99()), ms(s.fan_out.percentile(100.0)))
            }),
        ],
    );
    report.figure(
        Figure::new("idle_rss_mib", "RSS at rest", ours.idle as f64 / 1024.0, "MiB", Better::Lower)
            .reference(bare.idle as f64 / 1024.0),
    );
    report.figure(
        Figure::new(
            "idle_rss_returning_mib",
            "RSS at rest, returning pages",
            returning.idle as f64 / 1024.0,
            "MiB",
            Better::Lower,
        )
        .reference(bare.idle as f64 / 1024.0),
    );
    report.figure(
        Figure::new(
            "rss_per_stream_returning_kib",
            "RSS per open event stream, returning pages",
            returning.per_stream_kib(),
            "KiB",
            Better::Lower,
        )
        .reference(bare.per_stream_kib())
        .target(bare.per_stream_kib()),
    );
    // Beside the reference's share when it has one (its streams always take memory).
    let beside_reference = |figure: Figure| match bare.kept_after_close() {
        Some(kept) => figure.reference(kept),
        None => figure,
    };
    if let Some(kept) = returning.kept_after_close() {
        report.figure(beside_reference(
            Figure::new(
                "stream_memory_kept_returning_pct",
                "streams' memory still held 1 s after they closed, returning pages",
                kept,
                "%",
                Better::Lower,
            )
            .target(KEPT_MARGIN * bare.kept_after_close().unwrap_or(100.0)),
        ));
    }
    report.figure(
        Figure::new("rss_per_stream_kib", "RSS per open event stream", ours.per_stream_kib(), "KiB", Better::Lower)
            .reference(bare.per_stream_kib())
            .target(bare.per_stream_kib()),
    );
    if let Some(kept) = ours.kept_after_close() {
        report.figure(beside_reference(
            Figure::new(
                "stream_memory_kept_pct",
                "streams' memory still held 1 s after they closed",
                kept,
                "%",
                Better::Lower,
            )
            .target(KEPT_MARGIN * bare.kept_after_close().unwrap_or(100.0)),
        ));
    }
    report.figure(
        Figure::new("streams_open_ms", "time to open 1,000 event streams", millis(ours.opened_in), "ms", Better::Lower)
            .reference(millis(bare.opened_in)),
    );
    // Beside the reference's, not as a limit: the time is mostly the load generator's, which reads
    // the 1,000 streams on the same two cores as both servers: over the committed runs the
    // reference's own p50 went from 5.6 to 10.9 ms, and Tourguide's from 0.7× to 1.7× of it.
    report.figure(
        Figure::new(
            "changed_fan_out_p50_ms",
            "change → `changed` at 1,000 streams, p50 (beside it: the reference's; mostly the load generator's time)",
            millis(ours.fan_out.p50()),
            "ms",
            Better::Lower,
        )
        .comparison(millis(bare.fan_out.p50())),
    );
}
