//! The SQLite limit reference: the least a server on this machine can do for an answer, a poll and
//! a page. Bare axum handlers on Tourguide's own schema, in a SQLite file opened with the same
//! settings (`db::Db::open`), do the database work of each request and nothing else, in a process
//! of their own (`bench --sqlite-reference …`), reached over loopback with the client Tourguide's
//! loads use (`POST /api/…` forms, the session in a cookie jar):
//!
//! - answer: one joined read of the session, the conversation and its run's pause, on the
//!   request's own thread (`db::Here`); then one batch to the writer, in Tourguide's own SQL: the
//!   guarded UPDATE, the answer's line, the job, and (`Answer::Logged`, `Answer::Audited`) the
//!   audit row and its outbox row. Between them the least check that gives Tourguide's result
//!   (`reference_data::check_answer`: the question's digest and its options). No worker.
//! - fast poll: Tourguide's own statement (session, user, conversation, count) on the request's
//!   thread; a typed JSON answer.
//! - full poll: Tourguide's own batch (that head, the messages, files and draft, one round trip to
//!   a reader), serialised to JSON through typed structs.
//! - page: the latest 100 conversations' titles and one conversation's messages, read with the
//!   session in one batch to a reader, written into an HTML page with `format!`.

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use db::{Db, Location};
use sqlx::{FromRow, Row};

use crate::reference_data::{
    self, answer_entry, bind_entry, check_answer, session_token, Answer, AnswerForm, Attachment, ConversationOut,
    MessageOut, PageQuery, PollForm, PollOut, Seeding, POLL_HEAD,
};

/// The flag that makes the bench binary serve this reference instead of measuring.
pub const FLAG: &str = "--sqlite-reference";

/// The session `$1` (live at `$2`) joined to its user's conversation `$3`, if it waits on a
/// question, and that question's run: an answer's reads in one statement.
const ANSWER_READ: &str = "SELECT s.user_id, c.run_id, r.suspended_state
     FROM sessions s JOIN conversations c ON c.user_id = s.user_id JOIN runs r ON r.id = c.run_id
     WHERE s.token_hash = $1 AND s.expires_at > $2 AND c.id = $3 AND c.status = 'awaiting_input'";

/// The batch `Store::record_answer` sends to the writer for `work`, built by the store itself
/// (`server::store::sqlite_answer_batch`), so the two cannot drift: the guarded UPDATE
/// (`$1`–`$7`), the claim (`$8`), the line (`$9`–`$14`), the job (`$15`), then the audit row and its
/// outbox row from `$16` on.
fn answer_batch(work: Answer) -> String {
    server::store::sqlite_answer_batch(work, &answer_entry(0, "\"yes\""))
}

static BATCHES: LazyLock<[String; 3]> =
    LazyLock::new(|| [answer_batch(Answer::Bare), answer_batch(Answer::Logged), answer_batch(Answer::Audited)]);

fn batch(work: Answer) -> &'static str {
    let index = match work {
        Answer::Bare => 0,
        Answer::Logged => 1,
        Answer::Audited => 2,
    };
    BATCHES[index].as_str()
}

fn sqlite(db: &Db) -> &db::Sqlite {
    match db {
        Db::Sqlite(sqlite) => sqlite,
        Db::Postgres(_) => unreachable!("the SQLite reference opens a SQLite file"),
    }
}

async fn answer_with(db: &Db, headers: &HeaderMap, form: &AnswerForm, work: Answer) -> Result<StatusCode, db::DbError> {
    let here = db.here().expect("a SQLite file has a reader on the calling thread");
    // In a block of its own: the parameters' values must not live across the write's await.
    let read = {
        let token = session_token(headers);
        let parameters = db::rusqlite::named_params! { "$1": token, "$2": db::now(), "$3": &form.conversation_id };
        here.fetch_optional(ANSWER_READ, parameters, |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?, row.get::<_, Option<String>>(2)?))
        })?
    };
    let Some((user, run, Some(pause))) = read else { return Ok(StatusCode::CONFLICT) };
    if let Err(refused) = check_answer(&pause, form) {
        return Ok(refused);
    }
    let (now, id) = (db::now(), form.conversation_id.as_str());
    let query = sqlx::query(sqlx::AssertSqlSafe(batch(work)))
        .bind("input")
        .bind(&form.digest)
        .bind(&form.choice)
        .bind(now)
        .bind(id)
        .bind(user)
        .bind(db::now_ms())
        .bind(id)
        .bind("user")
        .bind(&form.choice)
        .bind("input_answer")
        .bind(now)
        .bind(None::<String>)
        .bind(None::<i64>)
        .bind(now);
    let query = if work == Answer::Bare {
        query
    } else {
        bind_entry!(query, &answer_entry(user, &form.choice), &run, now, work == Answer::Audited)
    };
    let rows = sqlite(db).write.fetch_batch(query).await?;
    let claimed: i64 = rows.first().map(|row| row.try_get(0)).transpose()?.unwrap_or(0);
    Ok(if claimed == 1 { StatusCode::OK } else { StatusCode::CONFLICT })
}

fn answer_route(work: Answer) -> axum::routing::MethodRouter<Db> {
    post(move |State(db): State<Db>, headers: HeaderMap, Form(form): Form<AnswerForm>| async move {
        answer_with(&db, &headers, &form, work).await.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    })
}

/// The conversation `$3` joined to the live session `$1` (`$2` now) and its user.
macro_rules! owned_through_session {
    () => {
        " FROM sessions s JOIN users u ON u.id = s.user_id JOIN conversations c ON c.user_id = u.id
         WHERE s.token_hash = $1 AND s.expires_at > $2 AND c.id = $3"
    };
}

/// Tourguide's full poll on SQLite: the head, then the messages, files and draft of a conversation
/// the session's user owns, in one batch (`$4` the renderer version).
use server::store::SQLITE_POLL_WHOLE as POLL_WHOLE;

async fn poll_whole(db: &Db, token: &str, id: &str) -> Result<Option<PollOut>, db::DbError> {
    let query = sqlx::query(POLL_WHOLE).bind(token).bind(db::now()).bind(id).bind(server::markdown::RENDERER_VERSION);
    let rows = sqlite(db).read.fetch_batch(query).await?;
    let (mut head, mut messages, mut attachments, mut draft) = (None, Vec::new(), Vec::new(), None);
    for row in &rows {
        match row.try_get::<i64, _>("part")? {
            0 => head = Some((row.try_get::<String, _>("title")?, row.try_get::<String, _>("status")?)),
            1 => messages.push(MessageOut::from_row(row)?),
            2 => attachments.push(Attachment::from_row(row)?),
            _ => draft = Some(row.try_get("content")?),
        }
    }
    let Some((title, status)) = head else { return Ok(None) };
    let total = i64::try_from(messages.len()).expect("a count");
    let conversation =
        ConversationOut { id: id.to_string(), title, status: status.clone(), messages, attachments, draft };
    Ok(Some(PollOut { status, total, conversation: Some(conversation) }))
}

async fn poll(State(db): State<Db>, headers: HeaderMap, Form(form): Form<PollForm>) -> Response {
    let token = session_token(&headers);
    let result: Result<Option<PollOut>, db::DbError> = async {
        if form.after > 0 {
            let here = db.here().expect("a SQLite file has a reader on the calling thread");
            let head = {
                let parameters = db::rusqlite::named_params! { "$1": &token, "$2": db::now(), "$3": &form.id };
                here.fetch_optional(POLL_HEAD, parameters, |row| {
                    Ok((row.get::<_, String>("status")?, row.get::<_, i64>("message_count")?))
                })?
            };
            let Some((status, total)) = head else { return Ok(None) };
            if status == "processing" && total == form.after {
                return Ok(Some(PollOut { status, total, conversation: None }));
            }
        }
        poll_whole(&db, &token, &form.id).await
    }
    .await;
    match result {
        Ok(Some(out)) => Json(out).into_response(),
        Ok(None) => StatusCode::UNAUTHORIZED.into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

// TODO(shared SQL): the page's batch is `SQLITE_CONVERSATION` (server/src/store/page_head.rs), which
// also reads the header's waiting count; the list's order is `conversation_list_sql`'s (its index).
/// A page's reads in one batch to a reader: the latest 100 conversations of the session's user
/// (`$1`, live at `$2`), then the messages of the conversation `$3` if it is theirs (`$4` the
/// renderer version: a stored rendering comes without its Markdown, as Tourguide reads it).
const PAGE: &str = concat!(
    "BEGIN;
     SELECT 0 AS part, c.id, c.title FROM conversations c
         WHERE c.user_id = (SELECT user_id FROM sessions WHERE token_hash = $1 AND expires_at > $2)
         ORDER BY c.updated_at DESC, c.rowid DESC LIMIT 100;
     SELECT 1 AS part, id, role, CASE WHEN html IS NOT NULL AND html_version = $4 THEN '' ELSE content END AS content,
         notice, html FROM messages WHERE conversation_id = $3 AND EXISTS (SELECT 1",
    owned_through_session!(),
    ") ORDER BY id;
     COMMIT;"
);

async fn page(State(db): State<Db>, headers: HeaderMap, Path(query): Path<PageQuery>) -> Response {
    let token = session_token(&headers);
    let result: Result<Response, sqlx::Error> = async {
        let batch =
            sqlx::query(PAGE).bind(&token).bind(db::now()).bind(&query.id).bind(server::markdown::RENDERER_VERSION);
        let rows = sqlite(&db).read.fetch_batch(batch).await?;
        let (mut titles, mut messages) = (Vec::new(), Vec::new());
        for row in &rows {
            match row.try_get::<i64, _>("part")? {
                0 => titles.push((row.try_get("id")?, row.try_get("title")?)),
                _ => messages.push(MessageOut::from_row(row)?),
            }
        }
        if titles.is_empty() {
            return Ok(StatusCode::UNAUTHORIZED.into_response());
        }
        Ok(Html(reference_data::page_html(&titles, &messages)).into_response())
    }
    .await;
    result.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Seeds the file named by the arguments, then serves until killed; prints `listens on ADDRESS`
/// once it accepts connections.
pub fn serve() {
    let seeding = Seeding::from_args();
    reference_data::serve(async move || {
        let db = Db::open(&Location::Sqlite(seeding.database.clone().into())).await.expect("the reference database");
        reference_data::seed(&db, seeding.answers, seeding.polled, seeding.long).await;
        Router::new()
            .route("/api/login", post(reference_data::login))
            .route("/api/answer", answer_route(Answer::Audited))
            .route("/api/answer-logged", answer_route(Answer::Logged))
            .route("/api/answer-bare", answer_route(Answer::Bare))
            .route("/api/poll", post(poll))
            .route("/c/{id}", get(page))
            .with_state(db)
    });
}
