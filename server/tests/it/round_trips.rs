//! Round trips to PostgreSQL per request, counted on the wire (`db::RoundTrips`: a proxy between
//! the web process and the database). PostgreSQL only.

use std::time::Duration;

use db::{Location, RoundTrips};
use server::Services;

use crate::harness::{config_in, location_in, Client, TestServer};
use crate::scripted::{services, Effects};

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
    // The process with a worker listens for queued jobs, beside the changes its pages follow.
    let check = db::Db::open(&Location::Postgres(url.clone())).await.unwrap();
    assert_eq!(listened(&check).await, ["tourguide_changed", "tourguide_jobs", "tourguide_pieces"]);
    let dir = asking.stop().await;

    // A web process without a worker, on the database through the counting proxy.
    let proxy = RoundTrips::proxy(&url).await.unwrap();
    let mut config = config_in(&dir, false).await;
    config.database = Location::Postgres(proxy.url(&url));
    let mut services: Services = services(&effects);
    services.reconcile_grace = Duration::from_secs(600);
    let running = server::serve(&config, services).await.expect("server starts");
    let base = format!("http://{}", running.address.unwrap());
    let client = Client::new(&base);
    client.sign_in("demo").await;
    // What the database announces meanwhile, heard beside the process.
    let mut heard = sqlx::postgres::PgListener::connect(&url).await.unwrap();
    heard.listen_all(["tourguide_changed", "tourguide_jobs", "tourguide_heard_by_test"]).await.unwrap();

    // A turn that works (no worker takes it), for the polls.
    let working = client.create_conversation().await;
    let (status, body) = client.call_json("send_message", &[("conversation_id", &working), ("content", "hello")]).await;
    assert_eq!(status, 200, "{body}");

    let fast_poll = proxy
        .of(10, |_| async {
            let (status, poll) = client.call_json("poll", &[("id", &working), ("after", "1")]).await;
            assert_eq!(status, 200, "{poll}");
            assert!(poll["conversation"].is_null(), "the fast path: {poll}");
        })
        .await;
    let full_poll = proxy
        .of(10, |_| async {
            let (status, poll) = client.call_json("poll", &[("id", &working), ("after", "0")]).await;
            assert_eq!(status, 200, "{poll}");
            assert_eq!(poll["conversation"]["messages"][0]["content"], "hello", "{poll}");
        })
        .await;
    let page = proxy
        .of(10, |_| async {
            let response = client.http.get(format!("{base}/c/{working}")).send().await.unwrap();
            assert_eq!(response.status(), 200);
            assert!(response.text().await.unwrap().contains("hello"));
        })
        .await;
    let answer = proxy
        .of(QUESTIONS, |time| {
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
    let message = proxy
        .of(QUESTIONS, |time| {
            let id = idle[time].clone();
            let client = &client;
            async move {
                let (status, body) =
                    client.call_json("send_message", &[("conversation_id", &id), ("content", "hi")]).await;
                assert_eq!(status, 200, "{body}");
            }
        })
        .await;
    // A web process without a worker does not: every answer and message queues a job, and each
    // would wake its listener for nothing.
    assert_eq!(listened(&check).await, ["tourguide_changed", "tourguide_pieces"]);
    check.close().await;
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
    // snapshot). It took 4, one per part of the page. An answer reads its session, the
    // conversation and its run in one statement (`Store::answer_head`), then writes: 2, as the
    // bench's limit reference; it took 3 with the session read apart.
    let figures: Vec<(&str, (u64, u64), u64)> = vec![
        ("fast poll", fast_poll, 1),
        ("full poll", full_poll, 1),
        ("answer", answer, 2),
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

/// The channels the server's LISTEN connection listens on (its statement, as PostgreSQL shows it),
/// sorted; the test's own listener is not the server's.
async fn listened(check: &db::Db) -> Vec<String> {
    let sql = "SELECT query FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'
               AND query NOT LIKE '%tourguide_heard_by_test%'";
    // A stopped process's backend may linger a moment after it went.
    let mut statements: Vec<String> = Vec::new();
    for _ in 0..50 {
        statements = db::on!(check, pool => sqlx::query_scalar(sql).fetch_all(pool).await).unwrap();
        if statements.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(statements.len(), 1, "one listener: {statements:?}");
    let mut channels: Vec<String> = statements
        .pop()
        .unwrap()
        .split(';')
        .filter_map(|part| part.trim().strip_prefix("LISTEN "))
        .map(|channel| channel.trim_matches('"').to_string())
        .collect();
    channels.sort();
    channels
}
