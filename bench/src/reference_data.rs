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
/// The digest every waiting question of the reference has (it checks none).
pub const DIGEST: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// The size of a typical suspended state: a short transcript and the pending question.
const PAUSE_BYTES: usize = 2_048;

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

/// A message as a poll carries it (`snapshot_message_columns!` of the server's store).
#[derive(sqlx::FromRow, Serialize, Deserialize)]
pub struct MessageOut {
    pub id: i64,
    pub role: String,
    pub content: String,
    pub notice: Option<String>,
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
        for n in 0..answers {
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
