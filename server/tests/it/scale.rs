//! Several real server processes on one database: web processes that only record, workers that
//! carry the runs on. The guarantees of one process hold across them: one winner per race, each
//! job done once, a dead worker's run carried on by another with nothing done twice, and (on
//! PostgreSQL) a page served by one process hears of a change recorded by another.
//!
//! Each story runs on the database the suite runs on. On SQLite one process runs the worker (a
//! second is refused) and changes reach other processes' pages through their polling; on
//! PostgreSQL any number of workers share the queue and changes travel by NOTIFY.

use std::sync::atomic::Ordering;
use std::time::Duration;

use db::Location;
use serde_json::Value;

use crate::crash::{answer_soft, ask, assert_answered_once};
use crate::events::next_event;
use crate::harness::{location_in, texts, Client, TestServer};
use crate::processes::{ModelHandle, ServerProcess};

async fn on_postgres(dir: &tempfile::TempDir) -> bool {
    matches!(location_in(dir).await, Location::Postgres(_))
}

/// Opens the event stream of a conversation on `client`'s process and waits for it to be ready.
async fn listen(client: &Client, id: &str) -> (reqwest::Response, String) {
    let mut stream = client.http.get(format!("{}/events/conversations/{id}", client.base)).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    let mut buffer = String::new();
    next_event(&mut stream, &mut buffer, "ready").await;
    (stream, buffer)
}

fn digest(question: &Value) -> String {
    question["question"]["digest"].as_str().expect("a question digest").to_string()
}

#[tokio::test]
async fn two_answers_through_two_web_processes_record_exactly_one() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelHandle::start(1).await;
    model.hold.store(false, Ordering::SeqCst);
    let worker = ServerProcess::worker(&dir, &model).await;
    let web_a = ServerProcess::start(&dir, &model, false).await;
    let web_b = ServerProcess::start(&dir, &model, false).await;
    let (page, other) = (web_a.signed_in().await, web_b.signed_in().await);
    let postgres = on_postgres(&dir).await;

    for round in 0..4 {
        let (id, question) = ask(&page).await;
        // The page is served by A; on PostgreSQL it hears of what B records at once.
        let mut stream = if postgres { Some(listen(&page, &id).await) } else { None };
        let digest = digest(&question);
        let answer = |client: &Client, choice: &'static str| {
            let form = [("conversation_id", id.clone()), ("digest", digest.clone()), ("choice", choice.to_string())];
            let client_http = client.http.clone();
            let url = format!("{}/api/answer", client.base);
            async move { client_http.post(url).form(&form).send().await.unwrap().status().as_u16() }
        };
        let (soft, crisp) = tokio::join!(answer(&page, "\"Soft\""), answer(&other, "\"Crisp\""));
        let winner = match (soft, crisp) {
            (200, 409) => "Soft",
            (409, 200) => "Crisp",
            other => panic!("round {round}: exactly one answer must be recorded, got {other:?}"),
        };
        if let Some((stream, buffer)) = stream.as_mut() {
            next_event(stream, buffer, "changed").await;
        }
        let conversation = page.settled_conversation(&id).await;
        let texts = texts(&conversation);
        assert_eq!(texts.len(), 4, "round {round}: ask, question, answer, reply: {texts:?}");
        assert_eq!(texts[2], winner, "round {round}: only the recorded answer is in the transcript");
        assert!(texts[3].contains(winner), "round {round}: the run continued with it: {texts:?}");
    }
    assert_eq!(model.continuations.load(Ordering::SeqCst), 4, "each answer was delivered once");
    for process in [web_a, web_b, worker] {
        process.kill_9().await;
    }
}

#[tokio::test]
async fn two_workers_take_each_job_once() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelHandle::start(1).await;
    model.hold.store(false, Ordering::SeqCst);
    let first = ServerProcess::worker(&dir, &model).await;
    let second = match ServerProcess::spawn(&dir, &model, false, true).await {
        Ok(second) => second,
        Err(said) => {
            // SQLite: one worker per database file, and a second one says so.
            assert!(!on_postgres(&dir).await, "PostgreSQL takes any number of workers: {said}");
            assert!(said.contains("another worker already runs on this database"), "{said}");
            first.kill_9().await;
            return;
        }
    };
    assert!(on_postgres(&dir).await, "a second worker on a SQLite file must be refused");
    let web = ServerProcess::start(&dir, &model, false).await;
    let client = web.signed_in().await;

    let mut ids = Vec::new();
    for _ in 0..24 {
        ids.push(client.create_conversation().await);
    }
    let sends = ids
        .iter()
        .map(|id| async { client.call_json("send_message", &[("conversation_id", id), ("content", "hello")]).await });
    for (status, body) in futures::future::join_all(sends).await {
        assert_eq!(status, 200, "{body}");
    }
    for id in &ids {
        let conversation = client.settled_conversation(id).await;
        assert_eq!(conversation["status"], "idle", "{conversation}");
        assert_eq!(texts(&conversation), ["hello", "You said: hello"], "answered once");
    }
    assert_eq!(model.requests.load(Ordering::SeqCst), ids.len(), "one model call per job: none was taken twice");
    for process in [web, first, second] {
        process.kill_9().await;
    }
}

#[tokio::test]
async fn a_dead_workers_run_is_carried_on_by_another_and_nothing_runs_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = ModelHandle::start(1).await;
    let dying = ServerProcess::worker(&dir, &model).await;
    let web = ServerProcess::start(&dir, &model, false).await;
    let client = web.signed_in().await;
    let (id, question) = ask(&client).await;
    answer_soft(&client, &id, &question).await;
    let delivered = model.continuation_in_flight().await;
    assert!(delivered.contains("Soft"), "{delivered}");

    // On PostgreSQL another worker is already running when the first dies; on SQLite, where one
    // worker runs per file, the worker that comes next is a restarted one.
    let postgres = on_postgres(&dir).await;
    let other = if postgres { Some(ServerProcess::worker(&dir, &model).await) } else { None };
    dying.kill_9().await;
    model.hold.store(false, Ordering::SeqCst);
    let other = match other {
        Some(other) => other,
        None => ServerProcess::worker(&dir, &model).await,
    };

    let conversation = client.settled_conversation(&id).await;
    assert_answered_once(&conversation);
    assert_eq!(model.questions_asked.load(Ordering::SeqCst), 1, "the question was not asked again");
    assert_eq!(model.continuations.load(Ordering::SeqCst), 1, "the continuation was answered once");
    for process in [web, other] {
        process.kill_9().await;
    }
}

/// PostgreSQL only: the database ends every connection of the pool (as a restart does). A pooled
/// connection that sat idle is checked before it is handed out, so the requests after it are
/// served on new connections instead of failing on dead ones.
#[tokio::test]
async fn requests_after_the_database_ended_the_pools_connections_are_served() {
    let server = TestServer::start().await;
    if server.store().db().backend() != db::Backend::Postgres {
        server.stop().await;
        return; // SQLite's connections are files of this process: nothing can end them from outside.
    }
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    // Several connections in the pool, all idle afterwards. Quick reads may all be served one
    // after another on one connection (a busy machine, tests beside this one), so statements
    // that overlap for certain open the others.
    let reads = (0..6).map(|_| client.call_json("conversations", &[]));
    for (status, _) in futures::future::join_all(reads).await {
        assert_eq!(status, 200);
    }
    let overlapping = (0..4).map(|_| async {
        db::on!(server.store().db(), pool => sqlx::query("SELECT pg_sleep(0.2)").execute(pool).await.map(|done| done.rows_affected())).unwrap();
    });
    futures::future::join_all(overlapping).await;
    let others = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                  WHERE datname = current_database() AND pid <> pg_backend_pid()";
    let ended: Vec<bool> =
        db::on!(server.store().db(), pool => sqlx::query_scalar(others).fetch_all(pool).await).unwrap();
    assert!(ended.len() >= 2, "the pool's other connections: {ended:?}");
    tokio::time::sleep(Duration::from_millis(700)).await;

    let reads = (0..6).map(|_| client.call_json("conversations", &[]));
    for (status, body) in futures::future::join_all(reads).await {
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = client.call_json("poll", &[("id", &id), ("after", "0")]).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", "after")]).await;
    assert_eq!(status, 200, "{body}");
    let texts = texts(&client.settled_conversation(&id).await);
    assert_eq!((texts.len(), texts[0].as_str()), (2, "after"), "{texts:?}");
    server.stop().await;
}

/// PostgreSQL only: the LISTEN connection of a web process is cut; the process makes it again,
/// tells its open pages to look (they may have missed something), and hears changes again.
#[tokio::test]
async fn a_web_process_listens_again_after_its_connection_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let Location::Postgres(url) = location_in(&dir).await else {
        return; // SQLite has no connection to cut: changes travel inside the process.
    };
    let model = ModelHandle::start(1).await;
    model.hold.store(false, Ordering::SeqCst);
    let worker = ServerProcess::worker(&dir, &model).await;
    let web_a = ServerProcess::start(&dir, &model, false).await;
    let web_b = ServerProcess::start(&dir, &model, false).await;
    let (page, other) = (web_a.signed_in().await, web_b.signed_in().await);
    let id = page.create_conversation().await;
    let (mut stream, mut buffer) = listen(&page, &id).await;

    let db = db::Db::open_postgres(&url).await.unwrap();
    let listeners = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                     WHERE datname = current_database() AND query LIKE 'LISTEN%'";
    let cut: Vec<bool> = db::on!(&db, pool => sqlx::query_scalar(listeners).fetch_all(pool).await).unwrap();
    assert_eq!(cut.len(), 3, "one listener per process (two web, one worker): {cut:?}");
    // Made again within the first pause: the page is told to look once.
    next_event(&mut stream, &mut buffer, "changed").await;

    let (status, body) = other.call_json("send_message", &[("conversation_id", &id), ("content", "hello")]).await;
    assert_eq!(status, 200, "{body}");
    next_event(&mut stream, &mut buffer, "changed").await;
    let conversation = page.settled_conversation(&id).await;
    assert_eq!(texts(&conversation), ["hello", "You said: hello"]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    for process in [web_a, web_b, worker] {
        process.kill_9().await;
    }
}
