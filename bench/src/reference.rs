//! The limit reference for answers: the least a server on this machine can do for one. A bare
//! axum handler on Tourguide's own schema (its migrations), in a SQLite file opened with the same
//! settings (`db::Db::open`), does the database work of an answer and nothing else: the session
//! check, the conversation and the run's pause read, then one transaction with the conversation's
//! guarded UPDATE, the answer's line and the job. No digest or schema check, no view, no worker.
//! Tourguide's figure beside it says how far from the machine's limit the product runs.
//!
//! It runs on a runtime of its own with two worker threads, like the server binary, in this
//! process: the load generator shares the cores with it as it does with the server.

use std::path::Path;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::routing::post;
use axum::{Form, Router};
use db::{on, Db, Location};
use serde::Deserialize;

use crate::scenarios::Load;
use crate::stats::bounded;

const SESSION: &str = "reference-session";
/// The size of a typical suspended state: a short transcript and the pending question.
const PAUSE_BYTES: usize = 2_048;

#[derive(Deserialize)]
struct AnswerForm {
    conversation_id: String,
    digest: String,
    choice: String,
}

async fn answer(State(db): State<Db>, headers: HeaderMap, Form(form): Form<AnswerForm>) -> StatusCode {
    let token = headers
        .get(header::COOKIE)
        .and_then(|value| value.to_str().ok())
        .and_then(|cookies| cookies.split(';').find_map(|pair| pair.trim().strip_prefix("session=")))
        .unwrap_or_default()
        .to_string();
    let now = db::now();
    let result: Result<StatusCode, sqlx::Error> = on!(&db, pool => async {
        let user: Option<i64> = sqlx::query_scalar("SELECT user_id FROM sessions WHERE token_hash = $1 AND expires_at > $2")
            .bind(&token)
            .bind(now)
            .fetch_optional(pool)
            .await?;
        let Some(user) = user else { return Ok(StatusCode::UNAUTHORIZED) };
        let run: Option<Option<String>> =
            sqlx::query_scalar("SELECT run_id FROM conversations WHERE id = $1 AND user_id = $2 AND status = 'awaiting_input'")
                .bind(&form.conversation_id)
                .bind(user)
                .fetch_optional(pool)
                .await?;
        let Some(Some(run)) = run else { return Ok(StatusCode::CONFLICT) };
        let pause: Option<Option<String>> = sqlx::query_scalar("SELECT suspended_state FROM runs WHERE id = $1")
            .bind(&run)
            .fetch_optional(pool)
            .await?;
        if pause.flatten().is_none() {
            return Ok(StatusCode::CONFLICT);
        }
        let mut tx = pool.begin().await?;
        let hit = sqlx::query(
            "UPDATE conversations SET status = 'processing', approval_decision = 'input', approval_turn_digest = $1,
                 pending_input = $2, updated_at = $3, recorded_at_ms = $4
             WHERE id = $5 AND user_id = $6 AND status = 'awaiting_input'",
        )
        .bind(&form.digest)
        .bind(&form.choice)
        .bind(now)
        .bind(db::now_ms())
        .bind(&form.conversation_id)
        .bind(user)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if hit != 1 {
            tx.rollback().await?;
            return Ok(StatusCode::CONFLICT);
        }
        sqlx::query(
            "INSERT INTO messages (conversation_id, role, content, notice, created_at) VALUES ($1, 'user', $2, 'input_answer', $3)",
        )
        .bind(&form.conversation_id)
        .bind(&form.choice)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        sqlx::query("INSERT INTO jobs (conversation_id, kind, created_at) VALUES ($1, 'turn', $2)")
            .bind(&form.conversation_id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(StatusCode::OK)
    }
    .await);
    result.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// `count` conversations of one user, each waiting on a question of its own run.
async fn seed(db: &Db, count: usize) {
    let now = db::now();
    let pause = format!("{{\"transcript\":\"{}\"}}", "x".repeat(PAUSE_BYTES));
    on!(db, pool => async {
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO users (id, username, password_hash, created_at) VALUES (1, 'reference', '-', $1)")
            .bind(now)
            .execute(&mut *tx)
            .await
            .unwrap();
        sqlx::query("INSERT INTO sessions (token_hash, user_id, expires_at) VALUES ($1, 1, $2)")
            .bind(SESSION)
            .bind(now + 86_400)
            .execute(&mut *tx)
            .await
            .unwrap();
        for n in 0..count {
            sqlx::query(
                "INSERT INTO runs (id, status, owner_user_id, configuration, max_rounds, suspended_state, created_at, updated_at)
                 VALUES ($1, 'waiting_for_input', 1, '{}', 8, $2, $3, $3)",
            )
            .bind(format!("run-{n}"))
            .bind(&pause)
            .bind(now)
            .execute(&mut *tx)
            .await
            .unwrap();
            sqlx::query(
                "INSERT INTO conversations (id, user_id, title, status, run_id, created_at, updated_at)
                 VALUES ($1, 1, 'reference', 'awaiting_input', $2, $3, $3)",
            )
            .bind(format!("conversation-{n}"))
            .bind(format!("run-{n}"))
            .bind(now)
            .execute(&mut *tx)
            .await
            .unwrap();
        }
        tx.commit().await.unwrap();
    }
    .await);
}

/// Starts the reference server on a database in `dir` with `count` waiting conversations, and
/// answers each once with `concurrency` clients, as the Tourguide load does.
pub async fn answer_load(dir: &Path, count: usize, concurrency: usize) -> Load {
    let location = Location::Sqlite(dir.join("reference.db"));
    let (ready, address) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let executor = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        executor.block_on(async move {
            let db = Db::open(&location).await.expect("the reference database opens");
            for migrations in [server::store::migrations(), runtime::migrations()] {
                db.migrate(&migrations).await.expect("the reference schema");
            }
            seed(&db, count).await;
            let app = Router::new().route("/answer", post(answer)).with_state(db);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let _ = ready.send(listener.local_addr().unwrap());
            axum::serve(listener, app).await.unwrap();
        });
    });
    let url = format!("http://{}/answer", address.await.expect("the reference server starts"));
    let http = reqwest::Client::new();
    let (http, url) = (Arc::new(http), Arc::new(url));
    let (sample, elapsed) = bounded(count, concurrency, move |n| {
        let (http, url) = (http.clone(), url.clone());
        async move {
            let form = [
                ("conversation_id", format!("conversation-{n}")),
                ("digest", "0".repeat(64)),
                ("choice", format!("\"Option {n}\"")),
            ];
            let response = http
                .post(url.as_str())
                .header(header::COOKIE, format!("session={SESSION}"))
                .form(&form)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "the reference refused answer {n}");
        }
    })
    .await;
    Load { sample, elapsed }
}
