//! All SQL of the chat lives here, with the migrations of its tables. Every status change is one
//! conditional UPDATE on the status it expects, so concurrent requests and the worker cannot both
//! win. Rows leave this module typed (`conversation`), and unreadable ones are refused.
//!
//! One module per job, importing each other in one direction only (`scripts/check-circles`):
//! `args` (bound values) and `rows` (rows into `conversation` types) at the bottom; `guarded` (the
//! guarded write) over `audit`; `conversations`, `turns`, `snapshot`, `drafts`, `attachments`
//! and `jobs` over those; `page_head` (what a page reads with its session) over `snapshot`,
//! `waiting` and `users`; what the delivery queues share (`outbox`, `deliveries`) under
//! `webhooks` and `mail`.

use db::{Db, Migrations};

/// The migrations of the chat's tables: users, sessions, conversations, messages, jobs.
pub fn migrations() -> Migrations {
    Migrations::new(sqlx::migrate!("../migrations/sqlite/chat"), sqlx::migrate!("../migrations/postgres/chat"))
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Db(#[from] db::DbError),
    #[error("a stored value cannot be read: {0}")]
    Corrupt(String),
    /// An account has this name already, or one with the same key (`names::key`).
    #[error("the user name is taken")]
    NameTaken,
}

#[derive(Clone, Debug)]
pub struct Store {
    db: Db,
}

impl Store {
    pub fn new(db: Db) -> Self {
        Store { db }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }
}

mod args;
mod rows;

mod guarded;
pub use guarded::CHANGED_CHANNEL;

mod conversations;
pub use conversations::{conversation_list_sql, LIST_LIMIT};

mod page_head;
pub use page_head::{PageHead, PageShows};

mod snapshot;
pub use snapshot::{ConversationSnapshot, PollHead, PG_POLL_WHOLE, POLL_HEAD, SQLITE_POLL_WHOLE};

mod turns;
pub use turns::{pg_answer_statement, sqlite_answer_batch, AnswerWrite, Decision, Settle, StartTurn, ANSWER_UPDATE};

mod drafts;

mod attachments;
pub use attachments::{Attachment, AttachmentText, NewAttachment};

mod jobs;
pub use jobs::{Job, JobCounts, JobKind};

mod audit;
/// For the bench's answer reference, which writes an answer's audit and outbox rows as the store does.
pub use audit::sqlite_statements as sqlite_audit_statements;

mod inbox;
pub use inbox::RunDecision;

mod policies;
pub use policies::{NewPolicies, Policy};

mod waiting;
pub use waiting::{LatestWaiting, WaitingCount};

mod users;
pub use users::{session_handle, Role, SessionRow, SessionUser, UserRow, UserSummary};

mod outbox;
pub use outbox::{outbox_select, OutboxEvent};

mod deliveries;
pub use deliveries::{AttemptOutcome, DeliveryState};

mod mail;
pub use mail::{ClaimedMail, MailSettings};

mod mcp_tokens;
pub use mcp_tokens::{NewSignIn, SignIn, SIGN_IN_SECONDS};

mod webhooks;
pub use webhooks::{ClaimedDelivery, Delivery, FannedOut, Webhook, WorkDue, EVENT_KINDS};
