//! The limit references: the least a server on this machine can do for an answer, a poll and a
//! page. Bare axum handlers on Tourguide's own schema (its migrations), in a SQLite file opened
//! with the same settings (`db::Db::open`), do the database work of each request and nothing else:
//!
//! - answer: the session check, the conversation and the run's pause read, then one transaction
//!   with the conversation's guarded UPDATE, the answer's line and the job. No digest or schema
//!   check, no view, no worker. Logged: the same, with the audit row an answer from the chat
//!   records; Audited: with that row and its webhook outbox row; each in the same transaction, in
//!   the store's SQL.
//! - fast poll: the session, the conversation row and its message count in one statement, on the
//!   request's own thread (as Tourguide's poll reads them, `db::Here`); a fixed JSON answer.
//! - full poll: that statement, then the conversation row and its messages in one read transaction,
//!   serialised to JSON as they are (the stored HTML included).
//! - page: the session, the latest 100 conversations' titles and one conversation's messages,
//!   written into an HTML page with `format!` (the stored HTML as is, user lines escaped).
//!
//! Tourguide's figure beside each says how far from the machine's limit the product runs. The
//! server runs on a runtime of its own with two worker threads, like the server binary, in this
//! process: the load generator shares the cores with it as it does with the server.

use std::path::Path;
use std::sync::{Arc, LazyLock};

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use db::{on, on_read, Db, Location};
use runtime::ASK_CHOICE;
use serde::Deserialize;
use server::audit::{Action, Entry, Surface};

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

fn session_token(headers: &HeaderMap) -> String {
    headers
        .get(header::COOKIE)
        .and_then(|value| value.to_str().ok())
        .and_then(|cookies| cookies.split(';').find_map(|pair| pair.trim().strip_prefix("session=")))
        .unwrap_or_default()
        .to_string()
}

/// The signed-in user, as every handler starts.
async fn session_user(db: &Db, headers: &HeaderMap) -> Result<Option<i64>, sqlx::Error> {
    let token = session_token(headers);
    on_read!(db, pool => sqlx::query_scalar("SELECT user_id FROM sessions WHERE token_hash = $1 AND expires_at > $2")
        .bind(&token)
        .bind(db::now())
        .fetch_optional(pool)
        .await)
}

/// Which answer the reference does: its database work as before issue 39, with the audit row
/// alone, or with the audit row and the outbox row every answer has written since.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Bare,
    Logged,
    Audited,
}

impl Answer {
    fn path(self) -> &'static str {
        match self {
            Answer::Bare => "/answer",
            Answer::Logged => "/answer-logged",
            Answer::Audited => "/answer-audited",
        }
    }
}

const JOB: &str = "INSERT INTO jobs (conversation_id, kind, created_at) VALUES ($1, 'turn', $2)";

/// The job, then the audit row and its outbox event in the store's own text
/// (`server::store::sqlite_audit_statements`), as its batch runs them after the job: the
/// conversation is `$1`, the entry's values from `$3` on (the reference's transaction has already
/// given up unless its UPDATE hit, so there is no guard). One round trip to the writer, as the
/// job's alone is: Tourguide's answer sends the rows in the batch it sends anyway.
static AUDITED_JOB: LazyLock<String> = LazyLock::new(|| {
    let (audit, outbox) = server::store::sqlite_audit_statements(3, "FROM conversations c WHERE c.id = $1", "");
    format!("{JOB}; {audit}; {outbox};")
});

/// The job and the audit row without its outbox event: what the outbox row alone costs is the
/// difference between this and `AUDITED_JOB`.
static LOGGED_JOB: LazyLock<String> = LazyLock::new(|| {
    let (audit, _) = server::store::sqlite_audit_statements(3, "FROM conversations c WHERE c.id = $1", "");
    format!("{JOB}; {audit};")
});

async fn answer(state: State<Db>, headers: HeaderMap, form: Form<AnswerForm>) -> StatusCode {
    answer_with(state, headers, form, Answer::Bare).await
}

async fn answer_logged(state: State<Db>, headers: HeaderMap, form: Form<AnswerForm>) -> StatusCode {
    answer_with(state, headers, form, Answer::Logged).await
}

async fn answer_audited(state: State<Db>, headers: HeaderMap, form: Form<AnswerForm>) -> StatusCode {
    answer_with(state, headers, form, Answer::Audited).await
}

async fn answer_with(
    State(db): State<Db>,
    headers: HeaderMap,
    Form(form): Form<AnswerForm>,
    work: Answer,
) -> StatusCode {
    let now = db::now();
    // Reads on the read pool, the transaction on the writer, as Tourguide's stores do.
    let read: Result<Result<(i64, String), StatusCode>, sqlx::Error> = on_read!(&db, pool => async {
        let Some(user) = session_user(&db, &headers).await? else { return Ok(Err(StatusCode::UNAUTHORIZED)) };
        let run: Option<Option<String>> =
            sqlx::query_scalar("SELECT run_id FROM conversations WHERE id = $1 AND user_id = $2 AND status = 'awaiting_input'")
                .bind(&form.conversation_id)
                .bind(user)
                .fetch_optional(pool)
                .await?;
        let Some(Some(run)) = run else { return Ok(Err(StatusCode::CONFLICT)) };
        let pause: Option<Option<String>> = sqlx::query_scalar("SELECT suspended_state FROM runs WHERE id = $1")
            .bind(&run)
            .fetch_optional(pool)
            .await?;
        if pause.flatten().is_none() {
            return Ok(Err(StatusCode::CONFLICT));
        }
        Ok(Ok((user, run)))
    }
    .await);
    let (user, run) = match read {
        Ok(Ok(read)) => read,
        Ok(Err(status)) => return status,
        Err(_) => return StatusCode::INTERNAL_SERVER_ERROR,
    };
    let result: Result<StatusCode, sqlx::Error> = on!(&db, pool => async {
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
        match work {
            Answer::Bare => {
                sqlx::query(JOB).bind(&form.conversation_id).bind(now).execute(&mut *tx).await?;
            }
            Answer::Logged | Answer::Audited => {
                // The entry an answer from the chat records (`audit::answer_entry`: the tool and the
                // answer; the question is on the run's `waiting` row), bound as the store binds it
                // (`Prepared`); its run is the reference's own, not a UUID.
                let mut entry = Entry::new(Action::Answered, Surface::Chat, Some(user), None);
                entry.tools = vec![ASK_CHOICE.to_string()];
                entry.answer = Some(form.choice.clone());
                let sql = if work == Answer::Audited { AUDITED_JOB.as_str() } else { LOGGED_JOB.as_str() };
                let query = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&form.conversation_id)
                    .bind(now)
                    .bind(now)
                    .bind(entry.action.as_str())
                    .bind(entry.actor)
                    .bind(&run)
                    .bind(entry.surface.as_str())
                    .bind(entry.tools_text())
                    .bind(entry.arguments.as_ref().map(ToString::to_string))
                    .bind(entry.arguments_run.as_ref().map(ToString::to_string))
                    .bind(&entry.preview)
                    .bind(&entry.answer)
                    .bind(&entry.reason);
                let query = if work == Answer::Audited {
                    query.bind(entry.event_id.to_string()).bind(entry.action.webhook_kind())
                } else {
                    query
                };
                query.execute(&mut *tx).await?;
            }
        }
        tx.commit().await?;
        Ok(StatusCode::OK)
    }
    .await);
    result.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

#[derive(Deserialize)]
struct PollQuery {
    id: String,
    after: i64,
}

#[derive(sqlx::FromRow, serde::Serialize)]
struct MessageRow {
    id: i64,
    role: String,
    content: String,
    notice: Option<String>,
    html: Option<String>,
}

const SELECT_MESSAGES: &str =
    "SELECT id, role, content, notice, html FROM messages WHERE conversation_id = $1 ORDER BY id";

/// The session, the conversation and its count in one statement, as Tourguide's poll reads them.
const POLL_HEAD: &str = "SELECT c.status, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id)
     FROM sessions s JOIN conversations c ON c.user_id = s.user_id
     WHERE s.token_hash = $1 AND s.expires_at > $2 AND c.id = $3";

/// [`POLL_HEAD`] read where Tourguide reads it: on SQLite on the request's own thread.
async fn poll_head(db: &Db, token: &str, id: &str) -> Result<Option<(String, i64)>, db::DbError> {
    if let Some(here) = db.here() {
        let parameters = db::rusqlite::named_params! { "$1": token, "$2": db::now(), "$3": id };
        return here.fetch_optional(POLL_HEAD, parameters, |row| Ok((row.get(0)?, row.get(1)?)));
    }
    Ok(on_read!(db, pool => sqlx::query_as(POLL_HEAD).bind(token).bind(db::now()).bind(id).fetch_optional(pool).await)?)
}

async fn poll(State(db): State<Db>, headers: HeaderMap, Query(query): Query<PollQuery>) -> Response {
    let result: Result<Response, db::DbError> = on_read!(&db, pool => async {
        let found = poll_head(&db, &session_token(&headers), &query.id).await?;
        let Some((status, total)) = found else {
            let code = match session_user(&db, &headers).await? {
                Some(_) => StatusCode::NOT_FOUND,
                None => StatusCode::UNAUTHORIZED,
            };
            return Ok(code.into_response());
        };
        if query.after > 0 && total == query.after {
            return Ok(Json(serde_json::json!({"status": status, "total": total, "conversation": null})).into_response());
        }
        let mut tx = pool.begin().await?;
        let title: String = sqlx::query_scalar("SELECT title FROM conversations WHERE id = $1")
            .bind(&query.id)
            .fetch_one(&mut *tx)
            .await?;
        let messages: Vec<MessageRow> = sqlx::query_as(SELECT_MESSAGES).bind(&query.id).fetch_all(&mut *tx).await?;
        tx.commit().await?;
        let total = messages.len();
        let conversation = serde_json::json!({"id": query.id, "title": title, "status": status, "messages": messages});
        Ok(Json(serde_json::json!({"status": status, "total": total, "conversation": conversation})).into_response())
    }
    .await);
    result.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn escaped(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

async fn page(State(db): State<Db>, headers: HeaderMap, Query(query): Query<PollQuery>) -> Response {
    let result: Result<Response, sqlx::Error> = on_read!(&db, pool => async {
        let Some(user) = session_user(&db, &headers).await? else { return Ok(StatusCode::UNAUTHORIZED.into_response()) };
        let titles: Vec<(String, String)> =
            sqlx::query_as("SELECT id, title FROM conversations WHERE user_id = $1 ORDER BY updated_at DESC, id DESC LIMIT 100")
                .bind(user)
                .fetch_all(pool)
                .await?;
        let messages: Vec<MessageRow> = sqlx::query_as(SELECT_MESSAGES).bind(&query.id).fetch_all(pool).await?;
        let mut html = String::from("<!DOCTYPE html><html><head><title>Reference</title></head><body><nav><ul>");
        for (id, title) in &titles {
            html.push_str(&format!("<li><a href=\"/c/{id}\">{}</a></li>", escaped(title)));
        }
        html.push_str("</ul></nav><main>");
        for message in &messages {
            let body = message.html.clone().unwrap_or_else(|| format!("<p>{}</p>", escaped(&message.content)));
            html.push_str(&format!("<article class=\"message {}\" id=\"m{}\">{body}</article>", message.role, message.id));
        }
        html.push_str("</main></body></html>");
        Ok(Html(html).into_response())
    }
    .await);
    result.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// A conversation of user 1 with `count` messages as the Tourguide scenarios make them.
async fn seed_conversation(db: &Db, id: &str, status: &str, count: usize) {
    on!(db, pool => async {
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO conversations (id, user_id, title, status, created_at, updated_at) VALUES ($1, 1, $2, $3, 0, $4)")
            .bind(id)
            .bind(format!("Conversation {id}"))
            .bind(status)
            .bind(db::now())
            .execute(&mut *tx)
            .await
            .unwrap();
        insert_transcript!(tx, id, count);
        tx.commit().await.unwrap();
    }
    .await);
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

/// The reference server, running on its own threads until the process ends.
pub struct Reference {
    base: String,
    http: reqwest::Client,
    location: Location,
}

/// The conversation the poll references read, and the one the page reference shows.
const POLLED: &str = "polled";
const LONG: &str = "long";

impl Reference {
    /// Starts the reference server on a database in `dir` with `answers` waiting conversations, a
    /// working one with `polled` messages and an idle one with `long` messages.
    pub async fn start(dir: &Path, answers: usize, polled: usize, long: usize) -> Reference {
        let location = Location::Sqlite(dir.join("reference.db"));
        let (ready, address) = tokio::sync::oneshot::channel();
        let served = location.clone();
        std::thread::spawn(move || {
            let executor = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            executor.block_on(async move {
                let db = Db::open(&served).await.expect("the reference database opens");
                for migrations in [server::store::migrations(), runtime::migrations()] {
                    db.migrate(&migrations).await.expect("the reference schema");
                }
                seed(&db, answers).await;
                seed_conversation(&db, POLLED, "processing", polled).await;
                seed_conversation(&db, LONG, "idle", long).await;
                let app = Router::new()
                    .route(Answer::Bare.path(), post(answer))
                    .route(Answer::Logged.path(), post(answer_logged))
                    .route(Answer::Audited.path(), post(answer_audited))
                    .route("/poll", get(poll))
                    .route("/page", get(page))
                    .with_state(db);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let _ = ready.send(listener.local_addr().unwrap());
                axum::serve(listener, app).await.unwrap();
            });
        });
        let base = format!("http://{}", address.await.expect("the reference server starts"));
        Reference { base, http: reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap(), location }
    }

    /// The audit rows of answers and the outbox events about the reference's user written so far:
    /// an `INSERT … SELECT` whose source matched nothing would write neither, without an error.
    pub async fn audited_rows(&self) -> (i64, i64) {
        let db = Db::open(&self.location).await.expect("the reference database opens");
        let counts: (i64, i64) = on_read!(&db, pool => sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM audit_log WHERE action = 'answered' AND owner_name = 'reference'),
                    (SELECT COUNT(*) FROM webhook_outbox o JOIN audit_log a ON a.id = o.audit_id
                        WHERE o.kind = 'run.decided' AND a.owner_name = 'reference' AND a.action = 'answered')",
        )
        .fetch_one(pool)
        .await)
        .expect("the rows are counted");
        db.close().await;
        counts
    }

    /// The waiting conversations `first..first + count` answered once each, `concurrency` at a
    /// time, with the database work of `work`.
    pub async fn answer_load(&self, work: Answer, first: usize, count: usize, concurrency: usize) -> Load {
        let (http, url) = (self.http.clone(), Arc::new(format!("{}{}", self.base, work.path())));
        let (sample, elapsed) = bounded(count, concurrency, move |i| {
            let (http, url, n) = (http.clone(), url.clone(), first + i);
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

    /// `total` polls of the working conversation, `concurrency` at a time; `after` as the
    /// Tourguide poll load sends it (the count the client has, or 0 for everything).
    pub async fn poll_load(&self, after: usize, total: usize, concurrency: usize) -> Load {
        let (http, url) = (self.http.clone(), Arc::new(format!("{}/poll?id={POLLED}&after={after}", self.base)));
        let (sample, elapsed) = bounded(total, concurrency, move |_| {
            let (http, url) = (http.clone(), url.clone());
            async move {
                let response =
                    http.get(url.as_str()).header(header::COOKIE, format!("session={SESSION}")).send().await.unwrap();
                assert_eq!(response.status(), 200);
                let body: serde_json::Value = response.json().await.unwrap();
                assert_eq!(body["conversation"].is_null(), after != 0, "{body}");
            }
        })
        .await;
        Load { sample, elapsed }
    }

    /// `rounds` requests of the long conversation's page, one after another: the time of each.
    pub async fn page_load(&self, rounds: usize) -> Vec<std::time::Duration> {
        let url = format!("{}/page?id={LONG}&after=0", self.base);
        let mut durations = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let started = std::time::Instant::now();
            let response =
                self.http.get(&url).header(header::COOKIE, format!("session={SESSION}")).send().await.unwrap();
            assert_eq!(response.status(), 200);
            let html = response.text().await.unwrap();
            durations.push(started.elapsed());
            assert!(html.contains("<article"), "the reference page carries the conversation");
        }
        durations
    }
}
