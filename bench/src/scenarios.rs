//! The measurements, each writing its part of the report.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use db::{on, Db};
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::model::{option_of, Model};
use crate::process::{Client, Role, ServerProcess, SseReferenceProcess};
use crate::reference::{Answer, Reference};
use crate::stats::{bounded, ms, per_second, Sample};
use crate::summary::{self, Better, Committed, Figure};

pub struct Report {
    body: String,
    figures: Vec<Figure>,
    commit: String,
    date: String,
    cpu: String,
}

impl Report {
    pub fn new() -> Report {
        Report {
            body: String::new(),
            figures: Vec::new(),
            commit: String::new(),
            date: String::new(),
            cpu: String::new(),
        }
    }

    /// A headline figure for the summary table (and `figures.json`).
    pub fn figure(&mut self, figure: Figure) {
        self.figures.push(figure);
    }

    pub fn line(&mut self, text: &str) {
        self.body.push_str(text);
        self.body.push('\n');
    }

    pub fn section(&mut self, title: &str, method: &str) {
        self.line(&format!("\n## {title}\n\n{method}\n"));
    }

    pub fn table(&mut self, head: &[&str], rows: &[Vec<String>]) {
        self.line(&format!("| {} |", head.join(" | ")));
        self.line(&format!("|{}|", head.iter().map(|_| "---").collect::<Vec<_>>().join("|")));
        for row in rows {
            self.line(&format!("| {} |", row.join(" | ")));
        }
    }

    pub fn machine(&mut self) {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu =
            cpuinfo.lines().find_map(|l| l.strip_prefix("model name")).map(|l| l.trim_start_matches([' ', '\t', ':']));
        self.cpu = cpu.unwrap_or_default().to_string();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:")).map(str::trim).unwrap_or("?");
        let command = |program: &str, args: &[&str]| {
            std::process::Command::new(program)
                .args(args)
                .output()
                .ok()
                .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
                .unwrap_or_default()
        };
        let now = time::OffsetDateTime::now_utc();
        self.date = now
            .format(time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC"))
            .unwrap_or_default();
        self.commit = command("git", &["rev-parse", "--short", "HEAD"]);
        // The report and figures files are what this run rewrites; anything else changed means
        // the figures are not the commit's.
        let changed = command("git", &["status", "--porcelain", "--untracked-files=no"]);
        if changed.lines().any(|line| !line.ends_with("bench/RESULTS.md") && !line.ends_with("bench/figures.json")) {
            self.commit.push_str(" with uncommitted changes");
        }
        self.section(
            "Machine",
            &format!(
                "- Date: {}\n- CPU: {} ({} logical cores available)\n- Memory: {memory}\n- Kernel: {}\n- Rust: {}\n- Commit: {}\n- Build: release server binary, release (`wasm-release`) frontend",
                self.date,
                cpu.unwrap_or("?"),
                std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
                command("uname", &["-sr"]),
                command("rustc", &["--version"]),
                self.commit,
            ),
        );
    }

    pub fn wasm(&mut self, site: &Path, reference: &Path, note: &str) {
        let wasm = std::fs::read(built_file(site, "wasm")).expect("the release site is built");
        let js = std::fs::read(built_file(site, "js")).expect("the release site is built");
        let reference = std::fs::read(reference).expect("the WASM reference is built (scripts/bench builds it)");
        self.section(
            "WASM size",
            &format!(
                "The hydrate bundle as served from `pkg/`. {note} Brotli at quality 11, window 22 (what the build's \
                 pre-compression step, `pack_site`, writes next to each file). **Limit reference**: \
                 `bench/wasm-reference`, the smallest Leptos app that hydrates with the kinds of work Tourguide's pages do \
                 (two routes and a link, a title, a list loaded through a server function and shown with `For`, a form \
                 posted through another, an event stream that loads the list again, the panic hook), built and optimised \
                 the same way: what the framework costs before any of Tourguide's own pages."
            ),
        );
        self.table(
            &["file", "raw", "brotli"],
            &[
                vec!["tourguide.<hash>.wasm".into(), kib(wasm.len()), kib(brotli_len(&wasm))],
                vec!["tourguide.<hash>.js".into(), kib(js.len()), kib(brotli_len(&js))],
                vec!["limit reference, WASM".into(), kib(reference.len()), kib(brotli_len(&reference))],
            ],
        );
        self.figure(
            Figure::new(
                "wasm_brotli_kib",
                "WASM bundle, brotli",
                brotli_len(&wasm) as f64 / 1024.0,
                "KiB",
                Better::Lower,
            )
            .reference(brotli_len(&reference) as f64 / 1024.0)
            .target(250.0),
        );
    }

    /// The report (the summary first), the figures for `figures.json`, and the regressions
    /// against `committed`.
    pub fn finish(self, committed: &Committed) -> (String, String, Vec<String>) {
        let (summary, regressions) = summary::render(&self.figures, committed, &self.cpu);
        let report = format!(
            "# Benchmark results\n\nWritten by `scripts/bench` (the `bench` crate) from one real run; nothing here is typed by hand. \
             Server and load generator share the machine's cores over loopback, so throughput figures are a floor for a \
             dedicated server. The model is a loopback stand-in that answers at once, so model time is not in any figure.\n{summary}{}",
            self.body
        );
        (report, summary::to_json(&self.figures, &self.commit, &self.date, &self.cpu), regressions)
    }
}

/// A file of the built site by kind (`js`, `wasm`, `css`), under the hashed name `hash.txt` gives.
fn built_file(site: &Path, kind: &str) -> std::path::PathBuf {
    let hashes = std::fs::read_to_string(site.join("hash.txt")).expect("the site was built with hashed names");
    let hash = hashes
        .lines()
        .find_map(|line| line.strip_prefix(kind).and_then(|rest| rest.strip_prefix(':')))
        .unwrap_or_else(|| panic!("hash.txt names no {kind} file"))
        .trim();
    site.join(format!("pkg/tourguide.{hash}.{kind}"))
}

fn brotli_len(bytes: &[u8]) -> usize {
    let mut out = Vec::new();
    let params = brotli::enc::BrotliEncoderParams { quality: 11, lgwin: 22, ..Default::default() };
    brotli::BrotliCompress(&mut &bytes[..], &mut out, &params).unwrap();
    out.len()
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

// --- memory and event streams -------------------------------------------------------------------

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

    let reference = SseReferenceProcess::start().await;
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
            .target(bare.kept_after_close().unwrap_or(100.0)),
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
            .target(bare.kept_after_close().unwrap_or(100.0)),
        ));
    }
    report.figure(
        Figure::new("streams_open_ms", "time to open 1,000 event streams", millis(ours.opened_in), "ms", Better::Lower)
            .reference(millis(bare.opened_in)),
    );
    report.figure(
        Figure::new(
            "changed_fan_out_p50_ms",
            "change → `changed` at 1,000 streams, p50",
            millis(ours.fan_out.p50()),
            "ms",
            Better::Lower,
        )
        .reference(millis(bare.fan_out.p50())),
    );
}

// --- answers ------------------------------------------------------------------------------------

struct Asked {
    id: String,
    digest: String,
    tag: String,
}

/// `count` conversations, each parked on a question of its own, set up `concurrency` at a time.
async fn asked(client: &Client, count: usize, prefix: &str) -> Vec<Asked> {
    let results = Arc::new(tokio::sync::Mutex::new(Vec::with_capacity(count)));
    let (client_, results_, prefix) = (client.clone(), results.clone(), prefix.to_string());
    bounded(count, 8, move |i| {
        let (client, results, tag) = (client_.clone(), results_.clone(), format!("{prefix}{i}"));
        async move {
            let id = client.create_conversation().await;
            client.send(&id, &format!("ask {tag}")).await;
            let view = client.settled(&id).await;
            assert_eq!(view["status"], "awaiting_input", "{view}");
            let digest = view["question"]["digest"].as_str().unwrap().to_string();
            results.lock().await.push(Asked { id, digest, tag });
        }
    })
    .await;
    Arc::try_unwrap(results).ok().unwrap().into_inner()
}

async fn answer(client: &Client, asked: &Asked) {
    let choice = serde_json::Value::String(option_of(&asked.tag)).to_string();
    let (status, body) = client
        .call_json("answer", &[("conversation_id", &asked.id), ("digest", &asked.digest), ("choice", &choice)])
        .await;
    assert_eq!(status, 200, "answer refused: {body}");
}

const LATENCY_ROUNDS: usize = 200;

pub async fn answer_to_continuation(report: &mut Report, client: &Client, model: &Model) {
    let questions = asked(client, LATENCY_ROUNDS, "latency-").await;
    let mut to_continuation = Vec::with_capacity(LATENCY_ROUNDS);
    let mut answer_calls = Vec::with_capacity(LATENCY_ROUNDS);
    for question in &questions {
        let continued = model.continuation_of(&question.tag);
        let sent = Instant::now();
        answer(client, question).await;
        answer_calls.push(sent.elapsed());
        let at = tokio::time::timeout(Duration::from_secs(30), continued).await.expect("the run continues").unwrap();
        to_continuation.push(at - sent);
        // One at a time on a quiet server: the next answer waits until this run has finished.
        let view = client.settled(&question.id).await;
        assert_eq!(view["status"], "idle", "{view}");
    }
    let (latency, calls) = (Sample::new(to_continuation), Sample::new(answer_calls));
    report.section(
        "Answer → continuation start",
        &format!(
            "{LATENCY_ROUNDS} questions answered one after another on an otherwise quiet server. Measured from sending \
             `POST /api/answer` to the moment the model receives the continuation request that carries the answer: \
             the check against the question, the record, the worker's wake-up and claim, the runtime's resume, and \
             the provider call."
        ),
    );
    report.table(
        &["measure", "p50", "p99"],
        &[
            vec!["answer sent → run continues (model called)".into(), ms(latency.p50()), ms(latency.p99())],
            vec!["`POST /api/answer` response".into(), ms(calls.p50()), ms(calls.p99())],
        ],
    );
    report.figure(Figure::new(
        "answer_to_continuation_p50_ms",
        "answer sent → run continues, p50",
        millis(latency.p50()),
        "ms",
        Better::Lower,
    ));
}

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

pub(crate) const THROUGHPUT_ANSWERS: usize = 1_000;
/// Each throughput load is measured this many times; the report keeps the median run.
pub(crate) const RUNS: usize = 3;
/// The outbox's cost is a difference of two throughputs, each a load of a third of a second at
/// the answers row's size: run-to-run spread (a few tenths) buried it. Longer loads, many turns,
/// and the cost taken per turn, between loads run one right after the other, so the machine's
/// and the database's drift between turns (WAL checkpoints, other work) cancels.
pub(crate) const OUTBOX_ANSWERS: usize = 3_000;
pub(crate) const OUTBOX_RUNS: usize = 11;
/// The answer reference's waiting conversations: `RUNS` loads for the answers row, then
/// `3 * OUTBOX_RUNS` for the rows' cost (without them, the audit row, both). Seeded alike
/// whatever runs, so the answers row's reference meets the same database either way.
pub(crate) const REFERENCE_ANSWERS: usize = RUNS * THROUGHPUT_ANSWERS + 3 * OUTBOX_RUNS * OUTBOX_ANSWERS;

/// The run with the median throughput.
fn median(mut runs: Vec<Load>) -> Load {
    runs.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
    runs.swap_remove(runs.len() / 2)
}

fn runs_of(runs: &[Load]) -> String {
    runs.iter().map(Load::throughput).collect::<Vec<_>>().join(", ")
}
const CONCURRENCY: usize = 8;

/// What a load loop measured: each call's latency, and the wall time of the whole loop.
pub struct Load {
    pub sample: Sample,
    pub elapsed: Duration,
}

impl Load {
    pub fn throughput(&self) -> String {
        per_second(self.sample.len(), self.elapsed)
    }
}

/// `THROUGHPUT_ANSWERS` distinct questions answered by `CONCURRENCY` clients, spread over the web
/// processes of `clients` (the first sets the questions up); returns once every run finished.
/// How far the worker had got with the answered runs: from the first answer sent until the model
/// had the last run's continuation, and each answer's time to its continuation.
pub struct Carried {
    pub elapsed: Duration,
    pub latency: Sample,
    /// The server's CPU time (user + system) from the first answer until every run was carried on,
    /// per answered run: the answer's request and the worker's continuation together.
    pub cpu_per_run: Option<Duration>,
}

impl Carried {
    fn rate(&self) -> f64 {
        self.latency.len() as f64 / self.elapsed.as_secs_f64()
    }
}

pub async fn answer_load(
    clients: &[Client],
    server: Option<&ServerProcess>,
    model: &Model,
    prefix: &str,
) -> (Load, Carried) {
    let questions = Arc::new(asked(&clients[0], THROUGHPUT_ANSWERS, prefix).await);
    let continued: Vec<_> = questions.iter().map(|question| model.continuation_of(&question.tag)).collect();
    let sent = Arc::new(std::sync::Mutex::new(vec![None; questions.len()]));
    let (clients_, questions_, sent_) = (Arc::new(clients.to_vec()), questions.clone(), sent.clone());
    let cpu_before = server.map(ServerProcess::cpu_time);
    let start = Instant::now();
    let (sample, elapsed) = bounded(THROUGHPUT_ANSWERS, CONCURRENCY, move |i| {
        let (clients, questions, sent) = (clients_.clone(), questions_.clone(), sent_.clone());
        async move {
            sent.lock().unwrap()[i] = Some(Instant::now());
            answer(&clients[i % clients.len()], &questions[i]).await
        }
    })
    .await;
    let mut latencies = Vec::with_capacity(continued.len());
    let mut last = start;
    for (i, at) in continued.into_iter().enumerate() {
        let at = tokio::time::timeout(Duration::from_secs(120), at).await.expect("every run continues").unwrap();
        latencies.push(at - sent.lock().unwrap()[i].expect("sent"));
        last = last.max(at);
    }
    // The model's reply ends each run at once; this leaves the last ones time to record it before
    // the CPU is read, and before the polls below (which cost the server CPU of their own).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cpu_per_run = server.zip(cpu_before).map(|(server, before)| {
        server.cpu_time().saturating_sub(before) / u32::try_from(questions.len()).expect("a count")
    });
    for question in questions.iter() {
        clients[0].settled(&question.id).await;
    }
    (Load { sample, elapsed }, Carried { elapsed: last - start, latency: Sample::new(latencies), cpu_per_run })
}

pub async fn answer_throughput(
    report: &mut Report,
    server: &ServerProcess,
    client: &Client,
    model: &Model,
    reference: &Reference,
) -> (Load, Carried) {
    // Tourguide and its reference in turns, so both meet the machine's ups and downs alike.
    let (mut ours, mut bare, mut carried) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..RUNS {
        let (load, carried_on) =
            answer_load(std::slice::from_ref(client), Some(server), model, &format!("load-{run}-")).await;
        ours.push(load);
        carried.push(carried_on);
        bare.push(reference.answer_load(Answer::Bare, run * THROUGHPUT_ANSWERS, THROUGHPUT_ANSWERS, CONCURRENCY).await);
    }
    let spread = format!("Tourguide {}; reference {}", runs_of(&ours), runs_of(&bare));
    carried.sort_by_key(|carried| carried.elapsed);
    let carried = carried.swap_remove(carried.len() / 2);
    let (load, reference) = (median(ours), median(bare));
    report.section(
        "Answer endpoint throughput",
        &format!(
            "{THROUGHPUT_ANSWERS} conversations each waiting on a question, answered by {CONCURRENCY} concurrent \
             clients, each answer a distinct question (every one accepted, checked and recorded). The worker carries \
             the answered runs on at the same time, on the same cores. **Limit reference**, measured in the same run: \
             a bare axum handler on Tourguide's schema and SQLite settings that does only an answer's database work \
             (session, conversation and pause read; one transaction with the guarded UPDATE, the line and the job), \
             no checks, no worker (`bench/src/reference.rs`). Each measured {RUNS} times, in turns; the table \
             shows the run with the median throughput (all runs: {spread})."
        ),
    );
    let ratio = |ours: f64, reference: f64| format!("{:.0} %", 100.0 * ours / reference);
    let row = |name: &str, load: &Load| {
        vec![
            name.into(),
            load.sample.len().to_string(),
            ms(load.elapsed),
            load.throughput(),
            ms(load.sample.p50()),
            ms(load.sample.p99()),
        ]
    };
    report.table(
        &["server", "answers", "wall time", "throughput", "p50", "p99"],
        &[
            row("Tourguide", &load),
            row("limit reference", &reference),
            vec![
                "Tourguide ÷ reference".into(),
                String::new(),
                String::new(),
                ratio(rate(&load), rate(&reference)),
                format!("{:.1}×", load.sample.p50().as_secs_f64() / reference.sample.p50().as_secs_f64()),
                format!("{:.1}×", load.sample.p99().as_secs_f64() / reference.sample.p99().as_secs_f64()),
            ],
        ],
    );
    report.figure(
        Figure::new("answers_per_s", "answers (8 clients, worker carrying on)", rate(&load), "/s", Better::Higher)
            .reference(rate(&reference))
            .target(3_000.0),
    );
    report.figure(
        Figure::new("answers_p99_ms", "answers, p99", millis(load.sample.p99()), "ms", Better::Lower)
            .reference(millis(reference.sample.p99()))
            .target(20.0),
    );
    let carried_rate = carried.rate();
    report.line(&format!(
        "\nThe worker meanwhile (it carries up to `--worker-jobs` runs side by side, 8 unless set, and on SQLite \
         its statements queue behind at most one of theirs while requests wait): the model had the last of the {THROUGHPUT_ANSWERS} runs' \
         continuations {} after the first answer was sent ({carried_rate:.0} runs/s, median of the {RUNS} runs); \
         answer sent → its run's continuation at the model p50 {}, p99 {}. The server's CPU time from the \
         first answer until every run had its reply recorded: {} per answered run (the answer's request and the \
         worker's continuation together).",
        ms(carried.elapsed),
        ms(carried.latency.p50()),
        ms(carried.latency.p99()),
        carried.cpu_per_run.map(|cpu| format!("{:.0} µs", cpu.as_secs_f64() * 1e6)).unwrap_or_default(),
    ));
    if let Some(cpu) = carried.cpu_per_run {
        report.figure(Figure::new(
            "answer_cpu_us",
            "server CPU per answered run (answer + continuation)",
            cpu.as_secs_f64() * 1e6,
            "µs",
            Better::Lower,
        ));
    }
    report.figure(Figure::new(
        "answers_carried_per_s",
        "answered runs carried on to the model (8 clients)",
        carried_rate,
        "/s",
        Better::Higher,
    ));
    (load, carried)
}

/// The target issue 39 set for the outbox's cost on answers/s, in percent.
const OUTBOX_TARGET_PCT: f64 = 10.0;

/// How much of `without`'s rate `with` loses, in percent.
fn cost_pct(without: &Load, with: &Load) -> f64 {
    100.0 * (1.0 - rate(with) / rate(without))
}

/// The sides of the rows' measurement, in the order of the first turn.
const OUTBOX_SIDES: [Answer; 3] = [Answer::Bare, Answer::Logged, Answer::Audited];

/// What every answer's audit row and webhook outbox row (issue 39) cost: the answer reference
/// without them, with the audit row alone, and with both, at the answers row's concurrency. The
/// outbox's cost (the target) is the third side against the second; the audit row's is reported
/// beside it. The database work alone, where their share is largest, so each share is an upper
/// bound on what the rows take from Tourguide's answers/s.
pub async fn outbox_cost(report: &mut Report, reference: &Reference) {
    let mut loads: [Vec<Load>; 3] = Default::default();
    // The conversations after the answers row's.
    let first = |load: usize| RUNS * THROUGHPUT_ANSWERS + load * OUTBOX_ANSWERS;
    for run in 0..OUTBOX_RUNS {
        // In turns, each side first in every third run, so no side always meets the database
        // (and the machine) as another has just left it.
        for slot in 0..OUTBOX_SIDES.len() {
            let side = (run + slot) % OUTBOX_SIDES.len();
            let load = reference
                .answer_load(OUTBOX_SIDES[side], first(OUTBOX_SIDES.len() * run + slot), OUTBOX_ANSWERS, CONCURRENCY)
                .await;
            loads[side].push(load);
        }
    }
    let answers = i64::try_from(OUTBOX_RUNS * OUTBOX_ANSWERS).expect("a count");
    assert_eq!(
        reference.audited_rows().await,
        (2 * answers, answers),
        "every logged answer wrote its audit row, every audited one its outbox row too"
    );
    let spread = format!(
        "without {}; audit row {}; audit + outbox rows {}",
        runs_of(&loads[0]),
        runs_of(&loads[1]),
        runs_of(&loads[2])
    );
    // Each share is the median of its turns' shares: a turn's loads ran one right after another.
    let per_turn = |without: usize, with: usize| {
        let mut costs: Vec<f64> =
            loads[without].iter().zip(&loads[with]).map(|(without, with)| cost_pct(without, with)).collect();
        costs.sort_by(f64::total_cmp);
        let shown = costs.iter().map(|cost| format!("{cost:.1}")).collect::<Vec<_>>().join(", ");
        (costs[costs.len() / 2], shown)
    };
    let ((audit_cost, audit_turns), (outbox_cost, outbox_turns), (both, _)) =
        (per_turn(0, 1), per_turn(1, 2), per_turn(0, 2));
    let [bare, logged, audited] = loads.map(median);
    report.section(
        "Audit and outbox rows on answers",
        &format!(
            "Since issue 39 every answer writes, in the transaction of its state change, an audit row (`audit_log`) \
             and a webhook event (`webhook_outbox`). Their cost: the answers row's **limit reference** (a bare axum \
             handler doing an answer's database work on Tourguide's schema and SQLite settings, \
             `bench/src/reference.rs`) without them, with the audit row alone, and with both, in the store's own \
             SQL (`server::store::sqlite_audit_statements`) with the values an answer from the chat records, in the \
             same transaction and the same round trip to the writer as the job. The outbox's cost (issue 39's \
             target) is what the outbox row takes from the audited answer's rate; the audit row is required on \
             its own (every decision on record) and its cost is reported beside it. {OUTBOX_ANSWERS} answers by \
             {CONCURRENCY} concurrent clients, each side measured {OUTBOX_RUNS} times, in turns (each side first in \
             every third turn). Each cost is the median of its {OUTBOX_RUNS} turns' costs, each between two loads \
             run one right after the other, so drift between turns cancels (the outbox row's, sorted, in %: \
             {outbox_turns}; the audit row's: {audit_turns}); the table shows each side's run with the median \
             throughput (all runs: {spread}); every answer's rows were counted afterwards. Only the database work is measured, where the rows' \
             share is largest: Tourguide's answer does more work around the same write, so while its answers/s is \
             bound by CPU the rows take at most this share of it."
        ),
    );
    let row = |name: &str, load: &Load| {
        vec![
            name.into(),
            load.sample.len().to_string(),
            ms(load.elapsed),
            load.throughput(),
            ms(load.sample.p50()),
            ms(load.sample.p99()),
        ]
    };
    let cost = |name: &str, pct: f64| {
        vec![name.into(), String::new(), String::new(), format!("{pct:.1} %"), String::new(), String::new()]
    };
    report.table(
        &["limit reference", "answers", "wall time", "throughput", "p50", "p99"],
        &[
            row("without the rows", &bare),
            row("with the audit row", &logged),
            row("with audit + outbox rows", &audited),
            cost("the audit row's cost", audit_cost),
            cost("the outbox row's cost", outbox_cost),
            cost("both rows' cost", both),
        ],
    );
    report.figure(
        Figure::new(
            "outbox_cost_pct",
            format!(
                "answers: the webhook outbox row adds (reference with the audit row: {:.0}/s, with both rows: {:.0}/s; \
                 database work alone, an upper bound on Tourguide's while CPU-bound, see the section)",
                rate(&logged),
                rate(&audited)
            ),
            outbox_cost,
            "%",
            Better::Lower,
        )
        .target(OUTBOX_TARGET_PCT)
        // Two rates' difference moves by points from run to run: under the target, a share
        // going from 3 % to 4 % is that spread, not a regression to defend.
        .saturating_at(OUTBOX_TARGET_PCT),
    );
    report.figure(Figure::new(
        "audit_cost_pct",
        format!(
            "answers: the audit row adds (reference without: {:.0}/s, with: {:.0}/s; no target, see the section)",
            rate(&bare),
            rate(&logged)
        ),
        audit_cost,
        "%",
        Better::Lower,
    ));
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}

fn rate(load: &Load) -> f64 {
    load.sample.len() as f64 / load.elapsed.as_secs_f64()
}

// --- polls --------------------------------------------------------------------------------------

const FAST_POLLS: usize = 5_000;
const FULL_POLLS: usize = 2_000;

/// A conversation whose turn stays in flight (the model holds its answer), with one message.
async fn working_conversation(client: &Client) -> String {
    let id = client.create_conversation().await;
    client.send(&id, "hold this turn").await;
    let (status, poll) = client.call_json("poll", &[("id", &id), ("after", "1")]).await;
    assert_eq!(status, 200);
    assert!(poll["conversation"].is_null(), "the fast path answers a working turn: {poll}");
    id
}

async fn poll_load(clients: &[Client], id: &str, after: &str, total: usize) -> Load {
    let (clients, id, after) = (Arc::new(clients.to_vec()), id.to_string(), after.to_string());
    let (sample, elapsed) = bounded(total, CONCURRENCY, move |i| {
        let (clients, id, after) = (clients.clone(), id.clone(), after.clone());
        async move {
            let (status, body) = clients[i % clients.len()].call_json("poll", &[("id", &id), ("after", &after)]).await;
            assert_eq!(status, 200);
            // `after=0` must always carry the conversation; a count that is up to date never does.
            assert_eq!(body["conversation"].is_null(), after != "0", "{body}");
        }
    })
    .await;
    Load { sample, elapsed }
}

/// Messages the poll scenario puts before the working turn, so "full" has a transcript to carry.
pub(crate) const POLLED_HISTORY: usize = 100;

/// Fast and full polls of one working conversation with a history, spread over `clients`.
/// A working conversation with `POLLED_HISTORY` messages before its turn.
async fn polled_conversation(server: &ServerProcess, client: &Client) -> String {
    let id = working_conversation(client).await;
    insert_messages(server, &id, POLLED_HISTORY).await;
    id
}

pub async fn poll_loads(server: &ServerProcess, clients: &[Client]) -> (Load, Load) {
    let id = polled_conversation(server, &clients[0]).await;
    let known = (POLLED_HISTORY + 1).to_string();
    let fast = poll_load(clients, &id, &known, FAST_POLLS).await;
    let full = poll_load(clients, &id, "0", FULL_POLLS).await;
    (fast, full)
}

pub async fn poll_throughput(
    report: &mut Report,
    server: &ServerProcess,
    client: &Client,
    reference: &Reference,
) -> (Load, Load) {
    let known = POLLED_HISTORY + 1;
    let id = polled_conversation(server, client).await;
    let clients = std::slice::from_ref(client);
    let (mut fasts, mut fulls, mut bare_fasts, mut bare_fulls) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // The server's CPU time over every run of each load: less at the mercy of a noisy machine than
    // a throughput is, so a change's effect shows in it.
    let (mut fast_cpu, mut full_cpu) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..RUNS {
        let cpu = server.cpu_time();
        fasts.push(poll_load(clients, &id, &known.to_string(), FAST_POLLS).await);
        fast_cpu += server.cpu_time() - cpu;
        bare_fasts.push(reference.poll_load(known, FAST_POLLS, CONCURRENCY).await);
        let cpu = server.cpu_time();
        fulls.push(poll_load(clients, &id, "0", FULL_POLLS).await);
        full_cpu += server.cpu_time() - cpu;
        bare_fulls.push(reference.poll_load(0, FULL_POLLS, CONCURRENCY).await);
    }
    let per_request = |cpu: Duration, polls: usize| cpu.as_secs_f64() * 1e6 / (RUNS * polls) as f64;
    let (fast_cpu, full_cpu) = (per_request(fast_cpu, FAST_POLLS), per_request(full_cpu, FULL_POLLS));
    let spread = format!(
        "fast {}, its reference {}; full {}, its reference {}",
        runs_of(&fasts),
        runs_of(&bare_fasts),
        runs_of(&fulls),
        runs_of(&bare_fulls)
    );
    let (fast, full, bare_fast, bare_full) = (median(fasts), median(fulls), median(bare_fasts), median(bare_fulls));
    report.section(
        "Poll throughput",
        &format!(
            "`POST /api/poll` on a conversation whose turn is working and which has {known} messages, {CONCURRENCY} \
             concurrent clients. Fast path: the client already has every message (`after={known}`), so the server \
             checks the session, ownership, status and the message count in one statement, and reads no message. \
             Full: `after=0`, the whole conversation as the page renders it (each assistant line's HTML as stored when \
             it was written). **Limit reference**, measured in the same run: bare handlers on the same schema and \
             settings (`bench/src/reference.rs`); fast: the same one statement; full: that statement, then the \
             conversation row and its messages in one read transaction, serialised to JSON as stored. Each measured {RUNS} times, in turns; the table shows the run with the median throughput \
             (all runs: {spread}). Server CPU per poll: the server process's user and system time (`/proc`) over \
             every run of the load, divided by its requests; the references run inside the bench process, beside \
             the load generator, so theirs is not told."
        ),
    );
    let row = |name: &str, load: &Load, cpu: Option<f64>| {
        vec![
            name.into(),
            load.sample.len().to_string(),
            load.throughput(),
            ms(load.sample.p50()),
            ms(load.sample.p99()),
            cpu.map(|us| format!("{us:.0} µs")).unwrap_or_default(),
        ]
    };
    report.table(
        &["poll", "requests", "throughput", "p50", "p99", "server CPU per poll, all runs"],
        &[
            row("fast path", &fast, Some(fast_cpu)),
            row("fast path, limit reference", &bare_fast, None),
            row("full", &full, Some(full_cpu)),
            row("full, limit reference", &bare_full, None),
        ],
    );
    report.figure(
        Figure::new("fast_poll_per_s", "fast poll", rate(&fast), "/s", Better::Higher)
            .reference(rate(&bare_fast))
            .target(20_000.0),
    );
    report.figure(
        Figure::new("full_poll_per_s", "full poll (101 messages)", rate(&full), "/s", Better::Higher)
            .reference(rate(&bare_full))
            .target(5_000.0),
    );
    report.figure(Figure::new("fast_poll_cpu_us", "server CPU per fast poll", fast_cpu, "µs", Better::Lower));
    report.figure(Figure::new("full_poll_cpu_us", "server CPU per full poll", full_cpu, "µs", Better::Lower));
    (fast, full)
}

/// The same answer and poll loads on PostgreSQL with two web processes and a separate worker
/// process, beside the figures the single SQLite process gave above.
pub async fn postgres_side_by_side(
    report: &mut Report,
    start: impl AsyncFn(Role) -> ServerProcess,
    model: &Model,
    sqlite: (&Load, &Load, &Load, &Carried),
    postgres: &str,
) {
    let worker = start(Role::Worker).await;
    let web_a = start(Role::Web).await;
    let web_b = start(Role::Web).await;
    let clients = [Client::signed_in(&web_a.base, "demo").await, Client::signed_in(&web_b.base, "demo").await];
    let (answers, carried) = answer_load(&clients, None, model, "load-pg-").await;
    let (fast, full) = poll_loads(&web_a, &clients).await;
    report.section(
        "SQLite and PostgreSQL side by side",
        &format!(
            "The answer and poll loads above, run again on PostgreSQL ({postgres}) with two web processes and a \
             separate worker process, the {CONCURRENCY} clients spread over both web processes, all on the same two \
             cores as the database server and the load generator. SQLite: the one process measured above."
        ),
    );
    let row = |name: &str, sqlite: &Load, postgres: &Load| {
        vec![
            name.into(),
            sqlite.throughput(),
            format!("{} / {}", ms(sqlite.sample.p50()), ms(sqlite.sample.p99())),
            postgres.throughput(),
            format!("{} / {}", ms(postgres.sample.p50()), ms(postgres.sample.p99())),
        ]
    };
    report.table(
        &["load", "SQLite, 1 process", "p50 / p99", "PostgreSQL, 2 web + 1 worker", "p50 / p99"],
        &[
            row("answers", sqlite.0, &answers),
            vec![
                "answered runs carried on to the model".into(),
                format!("{:.0}/s", sqlite.3.rate()),
                format!("{} / {}", ms(sqlite.3.latency.p50()), ms(sqlite.3.latency.p99())),
                format!("{:.0}/s", carried.rate()),
                format!("{} / {}", ms(carried.latency.p50()), ms(carried.latency.p99())),
            ],
            row("fast poll", sqlite.1, &fast),
            row("full poll", sqlite.2, &full),
        ],
    );
    report.line(
        "\nAnswered runs carried on: the latencies are from an answer sent to its run's continuation at the model; \
         the worker process carries up to `--worker-jobs` runs side by side (8 unless set), which takes its share \
         of the two cores while the answers come in.",
    );
    report.figure(
        Figure::new(
            "pg_carried_per_s",
            "answered runs carried on to the model on PostgreSQL (reference: SQLite)",
            carried.rate(),
            "/s",
            Better::Higher,
        )
        .reference(sqlite.3.rate()),
    );
    // The reference here is SQLite's figure: the scale-out issue's goal was PostgreSQL ≥ SQLite.
    for (key, name, sqlite, postgres) in [
        ("pg_answers_per_s", "answers on PostgreSQL (2 web + 1 worker; reference: SQLite)", sqlite.0, &answers),
        ("pg_fast_poll_per_s", "fast poll on PostgreSQL (reference: SQLite)", sqlite.1, &fast),
        ("pg_full_poll_per_s", "full poll on PostgreSQL (reference: SQLite)", sqlite.2, &full),
    ] {
        report.figure(Figure::new(key, name, rate(postgres), "/s", Better::Higher).reference(rate(sqlite)));
    }
    for process in [web_a, web_b, worker] {
        process.stop().await;
    }
}

// --- server-side rendering ----------------------------------------------------------------------

pub(crate) const LONG_CONVERSATION: usize = 200;
/// Requests of each page, in `SSR_TURNS` turns with its reference.
const SSR_ROUNDS: usize = 1_000;
const SSR_TURNS: usize = 5;
/// Requests of each page before the measured ones (connections open, caches warm).
const SSR_WARM_UP: usize = 20;
/// Entries in the conversation list beside the page (the server shows at most 100): the list is
/// full whatever ran before, as the reference's is.
const SSR_LISTED: usize = 100;

/// Appends `count` messages (alternating question and Markdown answer) straight to the database.
async fn insert_messages(server: &ServerProcess, id: &str, count: usize) {
    let db = server.open_database().await;
    on!(&db, pool => {
        let mut tx = pool.begin().await.unwrap();
        insert_transcript!(tx, id, count);
        tx.commit().await.unwrap();
    });
    db.close().await;
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
    reference.page_load(SSR_WARM_UP).await;
    // In turns, so both meet the machine's ups and downs alike.
    let (mut ours, mut bare) = (Vec::with_capacity(SSR_ROUNDS), Vec::with_capacity(SSR_ROUNDS));
    // The server's CPU time over Tourguide's turns: what a page costs it, apart from how long the
    // host makes the page wait.
    let mut cpu = Duration::ZERO;
    for _ in 0..SSR_TURNS {
        let before = server.cpu_time();
        ours.extend(page(SSR_ROUNDS / SSR_TURNS).await);
        cpu += server.cpu_time().saturating_sub(before);
        bare.extend(reference.page_load(SSR_ROUNDS / SSR_TURNS).await);
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
             handler that reads the session, the latest 100 titles and the messages, and writes them into a page \
             with `format!` (stored HTML as is, user lines escaped; `bench/src/reference.rs`)."
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
        .target(1.5),
    );
    report.line(&format!(
        "\nThe server's CPU time (user + system, `/proc`) over Tourguide's turns: {cpu_per_page:.0} µs per page."
    ));
    report.figure(Figure::new("ssr_cpu_us", "server CPU per page of 200 messages", cpu_per_page, "µs", Better::Lower));
}

// --- first load ----------------------------------------------------------------------------------

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

fn kib(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

// --- growth -------------------------------------------------------------------------------------

/// How the growth user's history and the rest of the database grow, one step after another.
#[derive(Clone, Copy)]
enum Grow {
    /// The growth user reaches this many conversations (2 messages each).
    Conversations(usize),
    /// Every conversation of the growth user but the measured idle one gets this many more
    /// messages.
    Messages(usize),
    /// This many other users, each with a session and 2 conversations of 2 messages.
    Users(usize),
}

const STEPS: [Grow; 6] = [
    Grow::Conversations(100),
    Grow::Conversations(1_000),
    Grow::Conversations(10_000),
    Grow::Conversations(100_000),
    Grow::Messages(8),
    Grow::Users(10_000),
];
const GROWTH_ROUNDS: usize = 200;
/// Blocks of GROWTH_ROUNDS per figure and step; the one with the lowest p50 is reported.
const GROWTH_BLOCKS: usize = 3;

fn conversation_id(n: usize) -> String {
    format!("{:08x}-0000-4000-8000-{:012x}", 0xbe_u32, n)
}

const GROWTH_LINES: [(&str, &str); 2] =
    [("user", "How do I word the opening hours?"), ("assistant", "One format, every day named.")];

/// Adds conversations `from..to` to the user, each with a question and an answer.
async fn add_conversations(db: &Db, user: i64, from: usize, to: usize, id_of: impl Fn(usize) -> String) {
    on!(db, pool => {
        let mut tx = pool.begin().await.unwrap();
        for n in from..to {
            let id = id_of(n);
            let at = 1_700_000_000 + n as i64;
            sqlx::query("INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)")
                .bind(&id)
                .bind(user)
                .bind(format!("Conversation {n}"))
                .bind(at)
                .bind(at)
                .execute(&mut *tx)
                .await
                .unwrap();
            for (role, content) in GROWTH_LINES {
                insert_message!(&mut *tx, &id, role, content, at);
            }
        }
        tx.commit().await.unwrap();
    });
}

/// `extra` more messages in each of the growth user's conversations `1..count` (the idle one,
/// number 0, keeps its two).
async fn add_messages(db: &Db, count: usize, extra: usize) {
    on!(db, pool => {
        let mut tx = pool.begin().await.unwrap();
        for n in 1..count {
            let id = conversation_id(n);
            for k in 0..extra {
                let (role, content) = GROWTH_LINES[k % 2];
                insert_message!(&mut *tx, &id, role, content, 1_700_000_000 + n as i64);
            }
        }
        tx.commit().await.unwrap();
    });
}

/// `count` other users, each with a session and two conversations of two messages.
async fn add_users(db: &Db, count: usize) {
    for chunk in (0..count).collect::<Vec<_>>().chunks(1_000) {
        for &n in chunk {
            let name = format!("member-{n}");
            let user: i64 = on!(db, pool => sqlx::query_scalar(
                "INSERT INTO users (username, password_hash, created_at) VALUES ($1, '-', 0) RETURNING id",
            )
            .bind(&name)
            .fetch_one(pool)
            .await)
            .unwrap();
            on!(db, pool => sqlx::query("INSERT INTO sessions (token_hash, user_id, expires_at) VALUES ($1, $2, $3)")
                .bind(format!("{n:064x}"))
                .bind(user)
                .bind(db::now() + 86_400)
                .execute(pool)
                .await
                .map(|_| ()))
            .unwrap();
            add_conversations(db, user, 0, 2, |k| format!("{:08x}-0000-4000-8000-{:012x}", 0xaa_u32, n * 2 + k)).await;
        }
    }
}

/// Requests of a kind made before they are timed, so the first row of the table does not carry the
/// first requests the server (and its connection pools, caches and the page cache) has seen.
const WARM_UP: usize = 50;

async fn timed(rounds: usize, mut call: impl AsyncFnMut()) -> Sample {
    for _ in 0..WARM_UP {
        call().await;
    }
    let mut durations = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        call().await;
        durations.push(started.elapsed());
    }
    Sample::new(durations)
}

pub async fn growth(report: &mut Report, server: &ServerProcess) {
    let db = server.open_database().await;
    let hash = server::auth::hash_password(crate::process::PASSWORD);
    let user: i64 = on!(&db, pool => sqlx::query_scalar(
        "INSERT INTO users (username, password_hash, created_at) VALUES ('growth', $1, 0) RETURNING id",
    )
    .bind(&hash)
    .fetch_one(pool)
    .await)
    .unwrap();
    let client = Client::signed_in(&server.base, "growth").await;
    let working = working_conversation(&client).await;
    let idle = conversation_id(0);
    let page = format!("{}/c/{idle}", client.base);

    let mut rows = Vec::new();
    let mut p50s: Vec<[f64; 4]> = Vec::new();
    let (mut conversations, mut messages, mut users) = (0, 0, 1);
    for step in STEPS {
        let adding = Instant::now();
        match step {
            Grow::Conversations(size) => {
                add_conversations(&db, user, conversations, size, conversation_id).await;
                messages += 2 * (size - conversations);
                conversations = size;
            }
            Grow::Messages(extra) => {
                add_messages(&db, conversations, extra).await;
                messages += extra * (conversations - 1);
            }
            Grow::Users(count) => {
                add_users(&db, count).await;
                users += count;
            }
        }
        let added_in = adding.elapsed();
        // Each figure is measured in turns with the others, GROWTH_BLOCKS times, and the block
        // with the lowest p50 is kept: the steps are minutes apart, and on a shared host a slow
        // minute read as growth (the same binary's fast poll ratio swung from 0.75× to 1.37×).
        let mut best: [Option<Sample>; 4] = Default::default();
        for _ in 0..GROWTH_BLOCKS {
            let samples = [
                timed(GROWTH_ROUNDS, async || {
                    let (status, list) = client.call_json("conversations", &[]).await;
                    assert_eq!(status, 200);
                    assert_eq!(list.as_array().unwrap().len(), (conversations + 1).min(100));
                })
                .await,
                timed(GROWTH_ROUNDS, async || {
                    let (status, poll) = client.call_json("poll", &[("id", &working), ("after", "1")]).await;
                    assert_eq!(status, 200);
                    assert!(poll["conversation"].is_null());
                })
                .await,
                timed(GROWTH_ROUNDS, async || {
                    let (status, poll) = client.call_json("poll", &[("id", &idle), ("after", "0")]).await;
                    assert_eq!(status, 200);
                    assert_eq!(poll["total"], 2);
                })
                .await,
                timed(GROWTH_ROUNDS, async || {
                    let response = client.http.get(&page).send().await.unwrap();
                    assert_eq!(response.status(), 200);
                    assert!(response.text().await.unwrap().contains("One format, every day named."));
                })
                .await,
            ];
            for (kept, sample) in best.iter_mut().zip(samples) {
                if kept.as_ref().is_none_or(|kept| sample.p50() < kept.p50()) {
                    *kept = Some(sample);
                }
            }
        }
        let [list, fast, full, rendered] = best.map(|sample| sample.expect("at least one block"));
        p50s.push([millis(list.p50()), millis(fast.p50()), millis(full.p50()), millis(rendered.p50())]);
        rows.push(vec![
            format!("{conversations}"),
            format!("{messages}"),
            format!("{users}"),
            format!("{} / {}", ms(list.p50()), ms(list.p99())),
            format!("{} / {}", ms(fast.p50()), ms(fast.p99())),
            format!("{} / {}", ms(full.p50()), ms(full.p99())),
            format!("{} / {}", ms(rendered.p50()), ms(rendered.p99())),
            format!("{:.1} s", added_in.as_secs_f64()),
        ]);
    }
    db.close().await;
    report.section(
        "List, poll and page latency as the database grows",
        &format!(
            "One user's history grows from 100 to 100,000 conversations of 2 messages, then to a million messages \
             (8 more in every conversation but the measured one: 999,992), then 10,000 other users join (each with a session \
             and 2 conversations), all inserted straight into the database between steps. {GROWTH_ROUNDS} sequential \
             requests per figure (p50 / p99), after {WARM_UP} unmeasured ones, in {GROWTH_BLOCKS} blocks taken in turns \
             with the other figures' blocks; the block with the lowest p50 is shown (the steps are minutes apart, and \
             a slow minute on a shared host is not growth). List: `POST /api/conversations` (the latest 100). Fast poll: a working \
             conversation, client up to date. Full poll: an idle 2-message conversation. Page: `GET /c/{{id}}` of \
             that conversation (server-side rendering with the conversation list)."
        ),
    );
    report.table(
        &["conversations", "messages", "users", "list", "fast poll", "full poll", "page", "(insert time)"],
        &rows,
    );
    let (smallest, largest) = (p50s[0], p50s[p50s.len() - 1]);
    let names = ["list", "fast poll", "full poll", "page"];
    let keys = ["growth_list_ratio", "growth_fast_poll_ratio", "growth_full_poll_ratio", "growth_page_ratio"];
    for (index, (key, name)) in keys.into_iter().zip(names).enumerate() {
        report.figure(
            Figure::new(
                key,
                format!("{name} p50 at {messages} messages and {users} users ÷ at 100 conversations"),
                largest[index] / smallest[index],
                "×",
                Better::Lower,
            )
            .target(1.2)
            .saturating_at(1.0),
        );
    }
}

// --- browser ------------------------------------------------------------------------------------

pub async fn browser(report: &mut Report, server: &ServerProcess) {
    let measured = crate::browser::dom_latency(&server.base).await;
    report.section(
        "Server state change → DOM in Chromium",
        "A signed-in page in Debian's Chromium (headless, Playwright; `end2end/bench/dom-latency.mjs`) is open on a \
         conversation, hydrated, its event stream connected. Each round a message is sent to that conversation from \
         outside the page (the script's own HTTP client with the page's cookies): the server records it and tells \
         the page's stream, the page fetches what changed and renders it. Measured from just before the sending \
         request to the moment a `MutationObserver` in the page sees the message's text in the DOM (both on this \
         machine's clock, `performance.timeOrigin + performance.now()`); the next round starts once the reply is in.",
    );
    let figure = Figure::unmeasured(
        "browser_change_to_dom_p50_ms",
        "server state change → DOM in Chromium, p50",
        "ms",
        Better::Lower,
    )
    .target(30.0);
    match measured {
        Ok(sample) => {
            report.table(&["rounds", "p50", "p99"], &crate::browser::describe(&sample));
            report.figure(Figure { value: Some(millis(sample.p50())), ..figure });
        }
        Err(reason) => {
            report.line(&format!("Not measured in this run: {reason}."));
            report.figure(figure);
        }
    }
}
