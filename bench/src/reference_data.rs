//! What the SQLite and PostgreSQL limit references share: the rows they are seeded with, the
//! forms they take, the JSON they answer with, and the SQL they run where Tourguide's is already
//! the least that gives the same result (the store's own statements and builders, or copied where
//! it does not expose them yet: the `TODO(shared SQL)` notes). Both references are bare axum
//! servers in a process of their own (`sqlite_reference`, `postgres_reference`), reached with the
//! client Tourguide's loads use.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use db::{on, Db};
use serde::{Deserialize, Serialize};

/// The reference user's session token (stored as is: no hash, which is Tourguide's own work).
pub const SESSION: &str = "reference-session";
/// The working conversation the poll references read, and the idle one the page reference shows.
pub const POLLED: &str = "polled";
pub const LONG: &str = "long";
/// The size of a typical suspended state's transcript.
const TRANSCRIPT_BYTES: usize = 2_048;

/// The id of the reference's `n`th waiting conversation.
pub fn waiting(n: usize) -> String {
    format!("conversation-{n}")
}

/// Which answer a reference does: the database work of an answer before issue 39 (`Bare`), with
/// the audit row alone (`Logged`), or with the audit row and its outbox row (`Audited`), which is
/// what Tourguide's answer writes. The store's own kinds, whose batches it builds.
pub use server::store::AnswerWrite as Answer;

/// The server function's name of `work` (`POST /api/{name}`): Tourguide's own for the full answer.
pub fn answer_name(work: Answer) -> &'static str {
    match work {
        Answer::Bare => "answer-bare",
        Answer::Logged => "answer-logged",
        Answer::Audited => "answer",
    }
}

#[derive(Deserialize)]
pub struct AnswerForm {
    pub conversation_id: String,
    pub digest: String,
    pub choice: String,
}

#[derive(Deserialize)]
pub struct PollForm {
    pub id: String,
    pub after: i64,
}

#[derive(Deserialize)]
pub struct PageQuery {
    pub id: String,
}

/// The session token of the request's cookie jar.
pub fn session_token(headers: &HeaderMap) -> String {
    headers
        .get(header::COOKIE)
        .and_then(|value| value.to_str().ok())
        .and_then(|cookies| cookies.split(';').find_map(|pair| pair.trim().strip_prefix("session=")))
        .unwrap_or_default()
        .to_string()
}

/// `POST /api/login`: the session cookie, as Tourguide's sign-in sets one (no password check: the
/// sign-in is not measured).
pub async fn login() -> Response {
    let cookie = HeaderValue::from_str(&format!("session={SESSION}; Path=/; HttpOnly; SameSite=Lax")).unwrap();
    (StatusCode::OK, [(header::SET_COOKIE, cookie)], "true").into_response()
}

/// A message as a poll carries it (`snapshot_message_columns!` of the server's store), its JSON
/// as Tourguide's `MessageView` has it: what is empty or absent is left out (an assistant line's
/// text is sent as its HTML alone).
#[derive(sqlx::FromRow, Serialize, Deserialize)]
pub struct MessageOut {
    pub id: i64,
    pub role: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
}

/// A file of a message as the full poll carries it: the store's own row type.
pub use server::store::Attachment;

#[derive(Serialize)]
pub struct ConversationOut {
    pub id: String,
    pub title: String,
    pub status: String,
    pub messages: Vec<MessageOut>,
    pub attachments: Vec<Attachment>,
    pub draft: Option<String>,
}

/// A poll's answer, as Tourguide's `PollView` has it: typed, serialised once.
#[derive(Serialize)]
pub struct PollOut {
    pub status: String,
    pub total: i64,
    pub conversation: Option<ConversationOut>,
}

pub fn escaped(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The page of a conversation: the latest titles, then the messages (stored HTML as is, user lines
/// escaped), written with `format!`.
pub fn page_html(titles: &[(String, String)], messages: &[MessageOut]) -> String {
    let mut html = String::from("<!DOCTYPE html><html><head><title>Reference</title></head><body><nav><ul>");
    for (id, title) in titles {
        html.push_str(&format!("<li><a href=\"/c/{id}\">{}</a></li>", escaped(title)));
    }
    html.push_str("</ul></nav><main>");
    for message in messages {
        let body = match &message.html {
            Some(stored) => stored.clone(),
            None => format!("<p>{}</p>", escaped(&message.content)),
        };
        html.push_str(&format!("<article class=\"message {}\" id=\"m{}\">{body}</article>", message.role, message.id));
    }
    html.push_str("</main></body></html>");
    html
}

/// A poll's fast-path statement: Tourguide's `Store::poll_head` SQL, so the two cannot drift.
/// `$1` the session's hash, `$2` now, `$3` the conversation.
pub use server::store::POLL_HEAD;

/// The question the reference's `n`th conversation waits on, as the runtime stores it in its run's
/// `suspended_state` (a short transcript, the call that asked, the question), and its digest.
pub struct Question {
    pub state: String,
    pub digest: String,
}

/// What the bench's stand-in model asks for the tag `n`: `ask_choice` between `yes-n` and `no-n`,
/// the schema made by the tool itself.
pub fn question(n: usize) -> Question {
    use runtime::Tool;
    let arguments = serde_json::json!({ "question": format!("Go ahead with {n}?"),
                                        "options": [crate::model::option_of(&n.to_string()), format!("no-{n}")] });
    let schema = runtime::AskChoiceTool.input_schema_for(&arguments).ok().flatten().expect("a question");
    let call = runtime::ToolCall { id: "call_1".into(), name: runtime::ASK_CHOICE.into(), arguments };
    let state = serde_json::json!({
        "messages": [{ "role": "user", "content": "x".repeat(TRANSCRIPT_BYTES) },
                     { "role": "assistant", "content": "", "tool_calls": [&call] }],
        "pending_calls": [&call],
        "input": { "tool_name": runtime::ASK_CHOICE, "call_id": call.id, "schema": schema },
        "rounds": 1,
    });
    let digest =
        runtime::digest::input_digest(std::slice::from_ref(&call), runtime::ASK_CHOICE, &call.id, &schema, None);
    Question { state: state.to_string(), digest }
}

/// What an answer's check needs of a stored pause: the pending calls and the question; the
/// transcript is skipped over, not built, as the runtime reads a pause.
#[derive(Deserialize)]
struct StoredPause {
    #[allow(dead_code)]
    messages: serde::de::IgnoredAny,
    pending_calls: Vec<runtime::ToolCall>,
    input: Option<StoredInput>,
}

#[derive(Deserialize)]
struct StoredInput {
    tool_name: String,
    call_id: String,
    schema: serde_json::Value,
    #[serde(default)]
    asked: Option<serde_json::Value>,
}

/// The least check that gives an answer Tourguide's result: the question read out of its run's
/// pause, its digest (the runtime's own function) compared with the one sent, 409 when the question
/// changed, and the choice one of the question's options, 422 otherwise. Without it a reference
/// records a stale answer or one never offered, which Tourguide refuses.
pub fn check_answer(pause: &str, form: &AnswerForm) -> Result<(), StatusCode> {
    let pause: StoredPause = serde_json::from_str(pause).map_err(|_| StatusCode::CONFLICT)?;
    let input = pause.input.ok_or(StatusCode::CONFLICT)?;
    let digest = runtime::digest::input_digest(
        &pause.pending_calls,
        &input.tool_name,
        &input.call_id,
        &input.schema,
        input.asked.as_ref(),
    );
    if !runtime::digest::digests_match(&digest, Some(&form.digest)) {
        return Err(StatusCode::CONFLICT);
    }
    let choice: serde_json::Value = serde_json::from_str(&form.choice).map_err(|_| StatusCode::UNPROCESSABLE_ENTITY)?;
    let properties = input.schema["properties"].as_object();
    let offered = properties
        .into_iter()
        .flatten()
        .any(|(_, property)| property["enum"].as_array().is_some_and(|options| options.contains(&choice)));
    offered.then_some(()).ok_or(StatusCode::UNPROCESSABLE_ENTITY)
}

/// The entry an answer from the chat records (`audit::answer_entry`: the tool and the answer; the
/// question is on the run's `waiting` row); its run is the reference's own, not a UUID.
pub fn answer_entry(user: i64, choice: &str) -> server::audit::Entry {
    use server::audit::{Action, Entry, Surface};
    let mut entry = Entry::new(Action::Answered, Surface::Chat, Some(user), None);
    entry.tools = vec![runtime::ASK_CHOICE.to_string()];
    entry.answer = Some(choice.to_string());
    entry
}

/// Binds an answer's entry as the store binds it (`Prepared`), after the values bound before.
/// A macro: the query's type differs per backend.
macro_rules! bind_entry {
    ($query:expr, $entry:expr, $run:expr, $at:expr, $outbox:expr) => {{
        let entry = $entry;
        let query = $query
            .bind($at)
            .bind(entry.action.as_str())
            .bind(entry.actor)
            .bind($run)
            .bind(entry.surface.as_str())
            .bind(entry.tools_text())
            .bind(entry.arguments.as_ref().map(ToString::to_string))
            .bind(entry.arguments_run.as_ref().map(ToString::to_string))
            .bind(entry.preview.clone())
            .bind(entry.answer.clone())
            .bind(entry.reason.clone());
        if $outbox {
            query.bind(entry.event_id.to_string()).bind(entry.action.webhook_kind())
        } else {
            query
        }
    }};
}
pub(crate) use bind_entry;

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

/// Tourguide's schema (its migrations) on `db`, one user with a session, `answers` conversations
/// each waiting on a question of its own run, a working one with `polled` messages and an idle
/// one with `long` messages.
pub async fn seed(db: &Db, answers: usize, polled: usize, long: usize) {
    for migrations in [server::store::migrations(), runtime::migrations()] {
        db.migrate(&migrations).await.expect("the reference schema");
    }
    let now = db::now();
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
        for n in 0..answers {
            sqlx::query(
                "INSERT INTO runs (id, status, owner_user_id, configuration, max_rounds, suspended_state, created_at, updated_at)
                 VALUES ($1, 'waiting_for_input', 1, '{}', 8, $2, $3, $3)",
            )
            .bind(format!("run-{n}"))
            .bind(question(n).state)
            .bind(now)
            .execute(&mut *tx)
            .await
            .unwrap();
            sqlx::query(
                "INSERT INTO conversations (id, user_id, title, status, run_id, created_at, updated_at)
                 VALUES ($1, 1, 'reference', 'awaiting_input', $2, $3, $3)",
            )
            .bind(waiting(n))
            .bind(format!("run-{n}"))
            .bind(now)
            .execute(&mut *tx)
            .await
            .unwrap();
        }
        tx.commit().await.unwrap();
    }
    .await);
    seed_conversation(db, POLLED, "processing", polled).await;
    seed_conversation(db, LONG, "idle", long).await;
}

/// The arguments a reference process is started with: its database, then the seed's sizes.
pub struct Seeding {
    pub database: String,
    pub answers: usize,
    pub polled: usize,
    pub long: usize,
}

impl Seeding {
    pub fn to_args(&self) -> Vec<String> {
        vec![self.database.clone(), self.answers.to_string(), self.polled.to_string(), self.long.to_string()]
    }

    /// From the process's arguments after its flag.
    pub fn from_args() -> Seeding {
        let args: Vec<String> = std::env::args().skip(2).collect();
        let number = |index: usize| args[index].parse().expect("a count");
        Seeding { database: args[0].clone(), answers: number(1), polled: number(2), long: number(3) }
    }
}

/// Serves `app` as the server binary serves Tourguide: a runtime with its default threads (one
/// per core), off transparent huge pages, TCP_NODELAY on every connection; so the reference's CPU
/// and memory are read from `/proc` as the server's are. Prints `listens on ADDRESS` once it
/// accepts connections.
pub fn serve(app: impl AsyncFnOnce() -> axum::Router) {
    #[cfg(target_os = "linux")]
    rustix::thread::disable_transparent_huge_pages(true).expect("the kernel takes PR_SET_THP_DISABLE");
    let executor = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    executor.block_on(async move {
        let app = app().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("listens on http://{}", listener.local_addr().unwrap());
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream: &mut tokio::net::TcpStream| {
            let _ = stream.set_nodelay(true);
        });
        axum::serve(listener, app).await.unwrap();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(n: usize, digest: &str, choice: &str) -> AnswerForm {
        AnswerForm { conversation_id: waiting(n), digest: digest.into(), choice: choice.into() }
    }

    /// The references refuse what Tourguide refuses: a stale question and an answer not offered.
    #[test]
    fn the_references_check_takes_the_offered_answer_to_the_question_as_it_stands() {
        let (seven, eight) = (question(7), question(8));
        assert_ne!(seven.digest, eight.digest);
        let yes = serde_json::Value::String(crate::model::option_of("7")).to_string();
        assert_eq!(check_answer(&seven.state, &form(7, &seven.digest, &yes)), Ok(()));
        assert_eq!(check_answer(&seven.state, &form(7, &eight.digest, &yes)), Err(StatusCode::CONFLICT));
        assert_eq!(
            check_answer(&seven.state, &form(7, &seven.digest, "\"yes-8\"")),
            Err(StatusCode::UNPROCESSABLE_ENTITY)
        );
        assert_eq!(check_answer(&seven.state, &form(7, &seven.digest, "yes-7")), Err(StatusCode::UNPROCESSABLE_ENTITY));
        assert_eq!(check_answer(&seven.state, &form(7, &seven.digest, "\"no-7\"")), Ok(()));
        assert_eq!(check_answer("{\"transcript\":\"x\"}", &form(7, &seven.digest, &yes)), Err(StatusCode::CONFLICT));
    }
}
