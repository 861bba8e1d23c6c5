//! The PostgreSQL limit reference: a bare axum server on sqlx's connections in `deadpool`'s pool
//! (what Tourguide's `db::PgConnections` is: one round trip a statement), on Tourguide's schema in
//! a database of its own on the same cluster, each request in the fewest statements that give
//! Tourguide's result, in a process of its own (`bench --postgres-reference …`), reached with the
//! client Tourguide's loads use:
//!
//! - answer, two statements: one joined read of the session, the conversation and its run's pause,
//!   checked as Tourguide's result needs (`reference_data::check_answer`); one write, Tourguide's own (the guarded UPDATE, the line, the job, the audit row and its
//!   outbox row, and the NOTIFY other processes hear, as CTEs of one statement). The NOTIFY is
//!   heard: the reference keeps a LISTEN connection on its channel, as every Tourguide process does.
//! - fast poll, one statement: Tourguide's own (session, user, conversation, count).
//! - full poll, one statement: Tourguide's own (the session, the conversation, its transcript and
//!   files as JSON arrays and its draft), decoded and serialised again through typed structs.
//!
//! The pool is Tourguide's: its size, its manager (`db::PgManager`: a connection goes back as it
//! is, and one unused for half a second is pinged before it serves again), each statement on a
//! connection of its own taken for it, as Tourguide's stores take them. Not sqlx's `PgPool`: that
//! pings each connection as it goes back, two round trips a statement, which Tourguide no longer
//! pays, so it was no limit (bench/RESULTS.md of 2026-12-06).

use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Form, Json, Router};
use deadpool::managed::{Object, Pool, QueueMode};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener};
use sqlx::Row;

use crate::reference_data::{
    self, answer_entry, bind_entry, check_answer, session_token, AnswerForm, Attachment, ConversationOut, MessageOut,
    PollForm, PollOut, Seeding, POLL_HEAD,
};

/// The flag that makes the bench binary serve this reference instead of measuring.
pub const FLAG: &str = "--postgres-reference";
/// Tourguide's PostgreSQL pool size (`db`'s `POOL_SIZE`).
const POOL_SIZE: usize = 8;

/// The session `$1` (live at `$2`) joined to its user's conversation `$3`, if it waits on a
/// question, and that question's run: an answer's reads in one statement.
const ANSWER_READ: &str = "SELECT s.user_id, c.run_id, r.suspended_state
     FROM sessions s JOIN conversations c ON c.user_id = s.user_id JOIN runs r ON r.id = c.run_id
     WHERE s.token_hash = $1 AND s.expires_at > $2 AND c.id = $3 AND c.status = 'awaiting_input'";

/// The statement `Store::record_answer` runs on PostgreSQL, built by the store itself: the guarded
/// UPDATE (`$1`–`$7`), then as CTEs reading the claimed row the line (`$8`–`$13`), the job (`$14`),
/// the audit row (`$15`–`$25`) and its outbox row (`$26`, `$27`), and the NOTIFY.
fn answer_statement() -> String {
    server::store::pg_answer_statement(&answer_entry(0, "\"yes\""))
}

/// Tourguide's full poll on PostgreSQL (`$4` the renderer version).
use server::store::PG_POLL_WHOLE as POLL_WHOLE;

type PgPool = Pool<db::PgManager>;

/// A connection for one statement.
async fn connection(pool: &PgPool) -> Result<Object<db::PgManager>, sqlx::Error> {
    pool.get().await.map_err(|error| sqlx::Error::Protocol(error.to_string()))
}

#[derive(Clone)]
struct Server {
    pool: PgPool,
    answer: &'static str,
}

async fn answer(State(server): State<Server>, headers: HeaderMap, Form(form): Form<AnswerForm>) -> StatusCode {
    let result: Result<StatusCode, sqlx::Error> = async {
        let read: Option<(i64, String, Option<String>)> = sqlx::query_as(ANSWER_READ)
            .bind(session_token(&headers))
            .bind(db::now())
            .bind(&form.conversation_id)
            .fetch_optional(&mut *connection(&server.pool).await? as &mut PgConnection)
            .await?;
        let Some((user, run, Some(pause))) = read else { return Ok(StatusCode::CONFLICT) };
        if let Err(refused) = check_answer(&pause, &form) {
            return Ok(refused);
        }
        let (now, id) = (db::now(), form.conversation_id.as_str());
        let query = sqlx::query(sqlx::AssertSqlSafe(server.answer))
            .bind("input")
            .bind(&form.digest)
            .bind(&form.choice)
            .bind(now)
            .bind(id)
            .bind(user)
            .bind(db::now_ms())
            .bind("user")
            .bind(&form.choice)
            .bind("input_answer")
            .bind(now)
            .bind(None::<String>)
            .bind(None::<i64>)
            .bind(now);
        let query = bind_entry!(query, &answer_entry(user, &form.choice), &run, now, true);
        let claimed: i64 =
            query.fetch_one(&mut *connection(&server.pool).await? as &mut PgConnection).await?.try_get(0)?;
        Ok(if claimed == 1 { StatusCode::OK } else { StatusCode::CONFLICT })
    }
    .await;
    result.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

async fn poll_whole(pool: &PgPool, token: &str, id: &str) -> Result<Option<PollOut>, sqlx::Error> {
    let row = sqlx::query(POLL_WHOLE)
        .bind(token)
        .bind(db::now())
        .bind(id)
        .bind(server::markdown::RENDERER_VERSION)
        .fetch_optional(&mut *connection(pool).await? as &mut PgConnection)
        .await?;
    let Some(row) = row else { return Ok(None) };
    let sqlx::types::Json(messages): sqlx::types::Json<Vec<MessageOut>> = row.try_get("messages")?;
    let sqlx::types::Json(attachments): sqlx::types::Json<Vec<Attachment>> = row.try_get("attachments")?;
    let status: String = row.try_get("status")?;
    let total = i64::try_from(messages.len()).expect("a count");
    let conversation = ConversationOut {
        id: id.to_string(),
        title: row.try_get("title")?,
        status: status.clone(),
        messages,
        attachments,
        draft: row.try_get("draft_content")?,
    };
    Ok(Some(PollOut { status, total, conversation: Some(conversation) }))
}

async fn poll(State(server): State<Server>, headers: HeaderMap, Form(form): Form<PollForm>) -> Response {
    let token = session_token(&headers);
    let result: Result<Option<PollOut>, sqlx::Error> = async {
        if form.after > 0 {
            let mut checkout = connection(&server.pool).await?;
            let head = sqlx::query(POLL_HEAD).bind(&token).bind(db::now()).bind(&form.id);
            let Some(head) = head.fetch_optional(&mut *checkout as &mut PgConnection).await? else { return Ok(None) };
            drop(checkout);
            let (status, total): (String, i64) = (head.try_get("status")?, head.try_get("message_count")?);
            if status == "processing" && total == form.after {
                return Ok(Some(PollOut { status, total, conversation: None }));
            }
        }
        poll_whole(&server.pool, &token, &form.id).await
    }
    .await;
    match result {
        Ok(Some(out)) => Json(out).into_response(),
        Ok(None) => StatusCode::UNAUTHORIZED.into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The one LISTEN connection a Tourguide process keeps (`server::events`), on the channel the
/// answer's NOTIFY goes to, each notification read and dropped. Without it the NOTIFY reaches
/// nobody, and the reference would skip the work its result is for: every process that shows the
/// conversation hears of the answer. Tourguide's web process pays for that (its listener's backend
/// is woken by each answer, its own connection reads the notification); so does the reference.
/// Losing it ends the process: a reference that went on without it would measure less work.
async fn hear(mut listener: PgListener) {
    while let Ok(Some(_)) = listener.try_recv().await {}
    eprintln!("the reference's LISTEN connection was lost");
    std::process::exit(1);
}

/// Seeds the database named by the arguments (through Tourguide's own `db`), then serves on
/// Tourguide's pool until killed; prints `listens on ADDRESS` once it accepts connections.
pub fn serve() {
    let seeding = Seeding::from_args();
    reference_data::serve(async move || {
        let db = db::Db::open_postgres(&seeding.database).await.expect("the reference database");
        reference_data::seed(&db, seeding.answers, seeding.polled, seeding.long).await;
        db.close().await;
        let options: PgConnectOptions = seeding.database.parse().expect("a PostgreSQL URL");
        let pool = Pool::builder(db::PgManager(options))
            .max_size(POOL_SIZE)
            .queue_mode(QueueMode::Lifo)
            .runtime(deadpool::Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(30)))
            .build()
            .expect("a runtime is set");
        drop(connection(&pool).await.expect("the reference connects"));
        let mut listener = PgListener::connect(&seeding.database).await.expect("the reference listens");
        listener.listen(server::store::CHANGED_CHANNEL).await.expect("LISTEN");
        tokio::spawn(hear(listener));
        let statement: &'static str = Box::leak(answer_statement().into_boxed_str());
        Router::new()
            .route("/api/login", post(reference_data::login))
            .route("/api/answer", post(answer))
            .route("/api/poll", post(poll))
            .with_state(Server { pool, answer: statement })
    });
}
