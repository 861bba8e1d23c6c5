//! A deployment of four processes on one database: two web processes that only record, two
//! workers that share the queue (on PostgreSQL; on SQLite, where a second worker is refused, one
//! worker). The guarantees of one process hold across all four: a decision and the message that
//! cancels its run, sent through different web processes, have exactly one winner; a worker
//! killed with kill -9 in the middle of a continuation loses no answer, and nothing runs twice.

use std::sync::atomic::Ordering;
use std::time::Duration;

use db::{Db, Location};

use crate::crash::{answer_soft, ask, assert_answered_once};
use crate::harness::{location_in, texts, Client};
use crate::processes::{Held, ModelHandle, ServerProcess, NEW_TITLE};

struct Deployment {
    web: [ServerProcess; 2],
    /// Two on PostgreSQL, one on SQLite.
    workers: Vec<ServerProcess>,
    /// A browser session on each web process.
    a: Client,
    b: Client,
}

/// The workers first (so that nothing waits for one), then the two web processes.
async fn deploy(dir: &tempfile::TempDir, model: &ModelHandle, environment: &[(&str, String)]) -> Deployment {
    let worker = || ServerProcess::spawn_with(dir, model, false, true, environment);
    let mut workers = vec![worker().await.expect("the worker starts")];
    match worker().await {
        Ok(second) => workers.push(second),
        Err(said) => {
            assert!(!on_postgres(dir).await, "PostgreSQL takes any number of workers: {said}");
            assert!(said.contains("another worker already runs on this database"), "{said}");
        }
    }
    let web = [ServerProcess::start(dir, model, false).await, ServerProcess::start(dir, model, false).await];
    let (a, b) = (web[0].signed_in().await, web[1].signed_in().await);
    Deployment { web, workers, a, b }
}

impl Deployment {
    async fn kill_9(self) {
        for process in self.web.into_iter().chain(self.workers) {
            process.kill_9().await;
        }
    }
}

async fn on_postgres(dir: &tempfile::TempDir) -> bool {
    matches!(location_in(dir).await, Location::Postgres(_))
}

/// The run a conversation waits in.
async fn run_of(db: &Db, conversation: &str) -> String {
    let sql = "SELECT run_id FROM conversations WHERE id = $1";
    let run: Option<String> =
        db::on!(db, pool => sqlx::query_scalar(sql).bind(conversation).fetch_one(pool).await).unwrap();
    run.expect("the conversation waits in a run")
}

async fn run_status(db: &Db, run: &str) -> String {
    let sql = "SELECT status FROM runs WHERE id = $1";
    db::on!(db, pool => sqlx::query_scalar(sql).bind(run).fetch_one(pool).await).unwrap()
}

/// Runs that some worker still holds or has yet to take.
async fn unfinished_runs(db: &Db) -> i64 {
    let sql = "SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running')";
    db::on!(db, pool => sqlx::query_scalar(sql).fetch_one(pool).await).unwrap()
}

async fn page_version(client: &Client) -> i64 {
    let (status, page) = client.call_json("page", &[("id", "1")]).await;
    assert_eq!(status, 200, "{page}");
    page["version"].as_i64().expect("a page version")
}

/// A guided process run (there a message cancels the waiting run) waiting on the card of a write.
async fn card(client: &Client) -> (String, String) {
    let (status, id) = client.call_json("create_conversation", &[("skill", "page-tour")]).await;
    assert!(status < 400, "{id}");
    let id = id.as_str().unwrap().to_string();
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", "write it")]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "awaiting_approval", "{conversation}");
    assert_eq!(conversation["process_run"], true, "{conversation}");
    let digest = conversation["card"]["digest"].as_str().expect("a card digest").to_string();
    (id, digest)
}

/// Approve through web A and a new message (which cancels the waiting run) through web B, at the
/// same moment: one of them wins, the write runs once if the approval won and never otherwise,
/// and the old run ends the way the winner says.
#[tokio::test]
async fn approve_through_one_web_process_and_a_cancelling_message_through_another_have_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelHandle::start(1).await;
    model.hold.store(false, Ordering::SeqCst);
    let deployment = deploy(&dir, &model, &[]).await;
    let (a, b) = (&deployment.a, &deployment.b);
    let db = Db::open(&location_in(&dir).await).await.unwrap();
    // On SQLite a worker hears of new work by polling the file: a round takes longer there.
    let rounds = if on_postgres(&dir).await { 8 } else { 4 };
    let mut outcomes = Vec::new();
    for round in 0..rounds {
        let (id, digest) = card(a).await;
        let run = run_of(&db, &id).await;
        assert_eq!(run_status(&db, &run).await, "waiting_for_approval");
        let version = page_version(a).await;
        let continuations = model.continuations.load(Ordering::SeqCst);
        // One side a little later each round, so the rounds span "message first" to "approval first".
        let stagger = Duration::from_micros(500 * round);
        let (approve_delay, message_delay) =
            if round % 2 == 0 { (Duration::ZERO, stagger) } else { (stagger, Duration::ZERO) };
        let decision = [("conversation_id", id.as_str()), ("digest", &digest), ("decision", "approve")];
        let message = [("conversation_id", id.as_str()), ("content", "something else")];
        let ((approved, approve_body), (sent, message_body)) = tokio::join!(
            async {
                tokio::time::sleep(approve_delay).await;
                a.call_json("decide", &decision).await
            },
            async {
                tokio::time::sleep(message_delay).await;
                b.call_json("send_message", &message).await
            },
        );
        let conversation = a.settled_conversation(&id).await;
        assert_eq!(conversation["status"], "idle", "round {round}: {conversation}");
        let texts = texts(&conversation);
        let written = page_version(a).await - version;
        let answered = model.continuations.load(Ordering::SeqCst) - continuations;
        let old_run = run_status(&db, &run).await;
        let applied = |texts: &[String]| texts.iter().filter(|text| text.starts_with("Noted: ")).count();
        match (approved, sent) {
            (200, 409) => {
                assert!(
                    message_body["code"].is_string(),
                    "round {round}: a refusal the reader can read: {message_body}"
                );
                assert_eq!(written, 1, "round {round}: the approval won and wrote once");
                assert_eq!(answered, 1, "round {round}: the write's result reached the model once");
                assert_eq!(applied(&texts), 1, "round {round}: {texts:?}");
                assert!(texts.last().unwrap().contains(NEW_TITLE), "round {round}: {texts:?}");
                assert!(
                    !texts.iter().any(|text| text == "something else"),
                    "round {round}: the refused message is not recorded"
                );
                assert_eq!(old_run, "completed", "round {round}");
            }
            (409, 200) => {
                assert!(
                    approve_body["code"].is_string(),
                    "round {round}: a refusal the reader can read: {approve_body}"
                );
                assert_eq!(written, 0, "round {round}: the message won, nothing was written");
                assert_eq!(answered, 0, "round {round}: no write result reached the model");
                assert_eq!(applied(&texts), 0, "round {round}: {texts:?}");
                assert_eq!(texts[texts.len() - 2..], ["something else", "You said: something else"], "round {round}");
                assert_eq!(old_run, "cancelled", "round {round}: the proposal cannot be decided any more");
            }
            // The message came after the approved turn had settled: it raced nothing and started a
            // turn of its own, after the applied one.
            (200, 200) => {
                assert_eq!(written, 1, "round {round}: the approval won and wrote once");
                assert_eq!(answered, 1, "round {round}");
                assert_eq!(applied(&texts), 1, "round {round}: {texts:?}");
                assert_eq!(texts[texts.len() - 2..], ["something else", "You said: something else"], "round {round}");
                assert!(texts[texts.len() - 3].contains(NEW_TITLE), "round {round}: {texts:?}");
                assert_eq!(old_run, "completed", "round {round}");
            }
            other => panic!("round {round}: exactly one must win, got {other:?}: {approve_body} {message_body}"),
        }
        outcomes.push((approved, sent));
    }
    assert_eq!(model.writes_proposed.load(Ordering::SeqCst), rounds as usize, "each card was proposed once");
    assert_eq!(unfinished_runs(&db).await, 0, "every run ended");
    // Not asserted (timing decides), but worth seeing when the test is run by hand.
    eprintln!("(approve, message) statuses over the rounds: {outcomes:?}");
    deployment.kill_9().await;
}

/// Questions answered through both web processes while one of the two workers is killed with
/// kill -9 in the middle of a continuation: every answer reaches the model exactly once (the dead
/// worker's continuation is asked again by the survivor, and only that one), no question is asked
/// twice, and the surviving worker carries every run to its end. On SQLite the one worker is
/// killed and a new one comes up.
#[tokio::test]
async fn answers_through_two_web_processes_survive_a_worker_killed_mid_continuation_once_each() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = ModelHandle::start(1).await;
    // One job at a time per worker: with the first held continuation one worker is full, so the
    // second goes to the other one, and each worker holds exactly one when the kill comes.
    let mut deployment = deploy(&dir, &model, &[("TOURGUIDE_WORKER_JOBS", "1".to_string())]).await;
    let (a, b) = (&deployment.a, &deployment.b);
    let db = Db::open(&location_in(&dir).await).await.unwrap();

    let mut asked = Vec::new();
    for round in 0..6 {
        asked.push(ask(if round % 2 == 0 { a } else { b }).await);
    }
    // Each question is answered through the web process it was not asked through.
    let other = |index: usize| if index.is_multiple_of(2) { b } else { a };
    let mut held: Vec<Held> = Vec::new();
    for (index, (id, question)) in asked.iter().enumerate().take(deployment.workers.len()) {
        answer_soft(other(index), id, question).await;
        let continuation = model.held_continuation().await;
        assert!(continuation.content.contains("Soft"), "{}", continuation.content);
        held.push(continuation);
    }
    // Two more recorded while every worker is busy: they wait in the queue.
    for (index, (id, question)) in asked.iter().enumerate().take(4).skip(deployment.workers.len()) {
        answer_soft(other(index), id, question).await;
    }

    deployment.workers.remove(0).kill_9().await;
    // The dead worker's call goes away with its connection; the survivor's stays.
    let dead = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(index) = held.iter().position(Held::gone) {
                return index;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the killed worker's call to the model went away");
    held.remove(dead);
    assert!(held.iter().all(|call| !call.gone()), "only one worker was killed");
    model.hold.store(false, Ordering::SeqCst);
    for call in held {
        call.release();
    }
    if deployment.workers.is_empty() {
        // SQLite: the one worker is gone; the next one is a new process.
        deployment.workers.push(ServerProcess::worker(&dir, &model).await);
    }

    // The last two answers come in while the dead worker's run waits for its lease to run out.
    let (id_4, question_4) = &asked[4];
    let (id_5, question_5) = &asked[5];
    tokio::join!(answer_soft(b, id_4, question_4), answer_soft(a, id_5, question_5));

    for (index, (id, _)) in asked.iter().enumerate() {
        let conversation = other(index).settled_conversation(id).await;
        assert_answered_once(&conversation);
        // The page of the other web process shows the same.
        let (_, same) = if index.is_multiple_of(2) { a } else { b }.conversation(id).await;
        assert_eq!(same["messages"], conversation["messages"]);
    }
    let questions = asked.len();
    assert_eq!(model.questions_asked.load(Ordering::SeqCst), questions, "no question was asked twice");
    assert_eq!(model.continuations.load(Ordering::SeqCst), questions, "each answer reached the model once");
    assert_eq!(
        model.requests.load(Ordering::SeqCst),
        2 * questions + 1,
        "one call per question and per answer, and once more only the continuation that died with its worker"
    );
    assert_eq!(unfinished_runs(&db).await, 0, "the surviving worker carried every run to its end");
    deployment.kill_9().await;
}
