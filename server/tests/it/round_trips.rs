//! Round trips to PostgreSQL per request, counted on the wire: a proxy between the web process and
//! the database counts what the process sends. Each Sync (the end of an extended-protocol
//! exchange: a statement, a prepare, sqlx's ping) and each simple Query is one round trip: the
//! client waits for the server's ReadyForQuery before it goes on. PostgreSQL only.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use db::Location;
use server::Services;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::harness::{config_in, location_in, Client, TestServer};
use crate::scripted::{services, Effects};

/// The startup messages that carry no type byte: SSL and GSS encryption requests (answered with one
/// byte), a cancel request (the connection ends), and the startup message itself.
const SSL_REQUEST: u32 = 80_877_103;
const GSS_REQUEST: u32 = 80_877_104;
const PROTOCOL_3: u32 = 196_608;

/// A TCP proxy to `upstream` that counts the round trips its clients start.
async fn counting_proxy(upstream: String, count: Arc<AtomicU64>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(&upstream).await else { continue };
            let count = count.clone();
            tokio::spawn(async move {
                let (mut client_read, client_write) = client.into_split();
                let (server_read, mut server_write) = server.into_split();
                let mut server_read = server_read;
                let mut client_write = client_write;
                tokio::spawn(async move { tokio::io::copy(&mut server_read, &mut client_write).await });
                let _ = forward_counting(&mut client_read, &mut server_write, &count).await;
            });
        }
    });
    address
}

/// Forwards the client's messages one by one, counting Sync ('S') and Query ('Q').
async fn forward_counting(
    from: &mut (impl AsyncReadExt + Unpin),
    to: &mut (impl AsyncWriteExt + Unpin),
    count: &AtomicU64,
) -> std::io::Result<()> {
    loop {
        let length = from.read_u32().await?;
        let mut body = vec![0; length as usize - 4];
        from.read_exact(&mut body).await?;
        to.write_u32(length).await?;
        to.write_all(&body).await?;
        let code = u32::from_be_bytes(body[..4].try_into().unwrap_or_default());
        if code == PROTOCOL_3 {
            break;
        }
        if code != SSL_REQUEST && code != GSS_REQUEST {
            return Ok(());
        }
    }
    loop {
        let kind = from.read_u8().await?;
        let length = from.read_u32().await?;
        let mut body = vec![0; length as usize - 4];
        from.read_exact(&mut body).await?;
        if kind == b'S' || kind == b'Q' {
            count.fetch_add(1, Ordering::SeqCst);
        }
        to.write_u8(kind).await?;
        to.write_u32(length).await?;
        to.write_all(&body).await?;
    }
}

/// `url` with its host and port replaced by `address`.
fn through(url: &str, address: &str) -> String {
    let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
    let original = format!("{}:{}", options.get_host(), options.get_port());
    assert!(url.contains(&original), "{url} names its server as {original}");
    url.replacen(&original, address, 1)
}

/// The round trips `request` costs: the fewest over `times` tries (the first use of a statement on
/// a connection prepares it, a round trip more), and the most.
async fn counted<F, Fut>(count: &AtomicU64, times: usize, mut request: F) -> (u64, u64)
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (mut fewest, mut most) = (u64::MAX, 0);
    for time in 0..times {
        settle(count).await;
        let before = count.load(Ordering::SeqCst);
        request(time).await;
        // sqlx pings a connection after it went back to the pool, in a task of its own.
        settle(count).await;
        let spent = count.load(Ordering::SeqCst) - before;
        fewest = fewest.min(spent);
        most = most.max(spent);
    }
    (fewest, most)
}

/// Waits until nothing has been sent for a while.
async fn settle(count: &AtomicU64) {
    let mut last = count.load(Ordering::SeqCst);
    loop {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let now = count.load(Ordering::SeqCst);
        if now == last {
            return;
        }
        last = now;
    }
}

const QUESTIONS: usize = 6;

#[tokio::test]
async fn each_request_kind_costs_its_round_trips_on_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let Location::Postgres(url) = location_in(&dir).await else { return };
    let effects = Effects::default();

    // Conversations that wait on a question, made by a process with a worker.
    let asking = TestServer::start_services(dir, services(&effects)).await;
    let client = asking.signed_in("demo").await;
    let mut waiting = Vec::new();
    for _ in 0..QUESTIONS {
        let id = client.create_conversation().await;
        let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", "ask me")]).await;
        assert_eq!(status, 200, "{body}");
        let conversation = client.settled_conversation(&id).await;
        assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
        let digest = conversation["question"]["digest"].as_str().unwrap().to_string();
        waiting.push((id, digest));
    }
    let dir = asking.stop().await;

    // A web process without a worker, on the database through the counting proxy.
    let count = Arc::new(AtomicU64::new(0));
    let upstream = {
        let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
        format!("{}:{}", options.get_host(), options.get_port())
    };
    let proxy = counting_proxy(upstream, count.clone()).await;
    let mut config = config_in(&dir, false).await;
    config.database = Location::Postgres(through(&url, &proxy));
    let mut services: Services = services(&effects);
    services.reconcile_grace = Duration::from_secs(600);
    let running = server::serve(&config, services).await.expect("server starts");
    let base = format!("http://{}", running.address.unwrap());
    let client = Client::new(&base);
    client.sign_in("demo").await;
    // What the database announces meanwhile, heard beside the process.
    let mut heard = sqlx::postgres::PgListener::connect(&url).await.unwrap();
    heard.listen_all(["tourguide_changed", "tourguide_jobs"]).await.unwrap();

    // A turn that works (no worker takes it), for the polls.
    let working = client.create_conversation().await;
    let (status, body) = client.call_json("send_message", &[("conversation_id", &working), ("content", "hello")]).await;
    assert_eq!(status, 200, "{body}");

    let fast_poll = counted(&count, 10, |_| async {
        let (status, poll) = client.call_json("poll", &[("id", &working), ("after", "1")]).await;
        assert_eq!(status, 200, "{poll}");
        assert!(poll["conversation"].is_null(), "the fast path: {poll}");
    })
    .await;
    let full_poll = counted(&count, 10, |_| async {
        let (status, poll) = client.call_json("poll", &[("id", &working), ("after", "0")]).await;
        assert_eq!(status, 200, "{poll}");
        assert_eq!(poll["conversation"]["messages"][0]["content"], "hello", "{poll}");
    })
    .await;
    let page = counted(&count, 10, |_| async {
        let response = client.http.get(format!("{base}/c/{working}")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.text().await.unwrap().contains("hello"));
    })
    .await;
    let answer = counted(&count, QUESTIONS, |time| {
        let (id, digest) = waiting[time].clone();
        let client = &client;
        async move {
            let (status, body) = client
                .call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("choice", "\"Images\"")])
                .await;
            assert_eq!(status, 200, "{body}");
        }
    })
    .await;
    let mut idle = Vec::new();
    for _ in 0..QUESTIONS {
        idle.push(client.create_conversation().await);
    }
    let message = counted(&count, QUESTIONS, |time| {
        let id = idle[time].clone();
        let client = &client;
        async move {
            let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", "hi")]).await;
            assert_eq!(status, 200, "{body}");
        }
    })
    .await;
    running.stop().await;

    // Each answer's write announced its conversation itself (no NOTIFY of its own: the count
    // above), and each queued job was announced for the workers.
    let mut changed = Vec::new();
    let mut jobs = 0;
    while let Ok(Ok(notification)) = tokio::time::timeout(Duration::from_millis(300), heard.recv()).await {
        match notification.channel() {
            "tourguide_jobs" => jobs += 1,
            _ => changed.push(notification.payload().to_string()),
        }
    }
    for (id, _) in &waiting {
        assert_eq!(changed.iter().filter(|heard| *heard == id).count(), 1, "{id} in {changed:?}");
    }
    for id in &idle {
        assert_eq!(changed.iter().filter(|heard| *heard == id).count(), 1, "{id} in {changed:?}");
    }
    assert_eq!(jobs, 1 + 2 * QUESTIONS, "each message's job and each answer's, nothing for the reads");

    // Every answer was recorded once, with its job.
    let check = db::Db::open(&Location::Postgres(url)).await.unwrap();
    let jobs: i64 =
        db::on!(&check, pool => sqlx::query_scalar("SELECT COUNT(*) FROM jobs").fetch_one(pool).await).unwrap();
    assert_eq!(jobs, 1 + 2 * QUESTIONS as i64, "one per message and one per answer");
    check.close().await;

    // A page reads everything it shows with its session, in one statement (`Store::page_head`:
    // the user, the header's count of waiting runs, the list and the open conversation's
    // snapshot). It took 4, one per part of the page.
    let figures: Vec<(&str, (u64, u64), u64)> = vec![
        ("fast poll", fast_poll, 1),
        ("full poll", full_poll, 1),
        ("answer", answer, 3),
        ("page", page, 1),
        ("message", message, 3),
    ];
    for (name, (fewest, most), _) in &figures {
        println!("round trips on PostgreSQL, {name}: {fewest} (at most {most} with a statement's first use)");
    }
    for (name, (fewest, _), aim) in figures {
        assert!(fewest <= aim, "{name}: {fewest} round trips, the aim is {aim}");
    }
}
