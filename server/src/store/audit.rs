//! The audit log's SQL, both backends: an entry written as a step of a guarded write (SQLite's
//! batch, PostgreSQL's statement) or inside another transaction, with its webhook event in
//! `webhook_outbox` when its action is announced; and the rows a reader may see. Rows are only
//! ever inserted: nothing here updates or deletes one (and the table's triggers refuse it).

use db::{on_read, Backend};

use super::args::Arg;
use super::{Store, StoreError};
use crate::audit::{Action, Entry, Filter, Row, Surface};

/// An entry's values as bound: made once before the write, so its statement can borrow them.
#[derive(Debug, Clone)]
pub(super) struct Prepared {
    action: &'static str,
    surface: &'static str,
    actor: Option<i64>,
    run: Option<String>,
    tools: Option<String>,
    arguments: Option<String>,
    arguments_run: Option<String>,
    preview: Option<String>,
    answer: Option<String>,
    reason: Option<String>,
    event_id: String,
    kind: Option<&'static str>,
}

impl Prepared {
    /// The same row with no webhook event beside it (the bench's reference measures the outbox
    /// row's cost by leaving it out).
    pub(super) fn without_event(mut self) -> Prepared {
        self.kind = None;
        self
    }

    pub(super) fn of(entry: &Entry) -> Prepared {
        Prepared {
            action: entry.action.as_str(),
            surface: entry.surface.as_str(),
            actor: entry.actor,
            run: entry.run_id.map(|run| run.to_string()),
            tools: entry.tools_text(),
            arguments: entry.arguments.as_ref().map(ToString::to_string),
            arguments_run: entry.arguments_run.as_ref().map(ToString::to_string),
            preview: entry.preview.clone(),
            answer: entry.answer.clone(),
            reason: entry.reason.clone(),
            event_id: entry.event_id.to_string(),
            kind: entry.action.webhook_kind(),
        }
    }

    /// The audit INSERT's values after the time, from `$first` on.
    pub(super) fn args(&self, at: i64) -> Vec<Arg<'_>> {
        vec![
            Arg::Int(at),
            Arg::Text(self.action),
            Arg::MaybeInt(self.actor),
            Arg::MaybeText(self.run.as_deref()),
            Arg::Text(self.surface),
            Arg::MaybeText(self.tools.as_deref()),
            Arg::MaybeText(self.arguments.as_deref()),
            Arg::MaybeText(self.arguments_run.as_deref()),
            Arg::MaybeText(self.preview.as_deref()),
            Arg::MaybeText(self.answer.as_deref()),
            Arg::MaybeText(self.reason.as_deref()),
        ]
    }
}

const ENTRY_ARGS: usize = 11;

/// The audit INSERT, its values from `$first` on, reading the conversation `c` from `source`
/// (a FROM clause): its owner and title, and the people's names, as they are in this write.
fn insert_sql(first: usize, source: &str) -> String {
    let n = |offset: usize| format!("${}", first + offset);
    format!(
        "INSERT INTO audit_log (at, action, actor_id, actor_name, owner_id, owner_name, conversation_id,
             conversation_title, run_id, surface, tools, arguments, arguments_run, preview, answer, reason)
         SELECT {at}, {action}, {actor}, (SELECT username FROM users WHERE id = {actor}), c.user_id,
             (SELECT username FROM users WHERE id = c.user_id), c.id, c.title, {run}, {surface}, {tools},
             {arguments}, {arguments_run}, {preview}, {answer}, {reason}
         {source}",
        at = n(0),
        action = n(1),
        actor = n(2),
        run = n(3),
        surface = n(4),
        tools = n(5),
        arguments = n(6),
        arguments_run = n(7),
        preview = n(8),
        answer = n(9),
        reason = n(10),
    )
}

/// The webhook event's JSON object, made from the audit row `a` in the database's own JSON
/// functions (keys without a value left out); `kind` is the event's kind (an expression). Made
/// when the event is fanned out (`Store::fan_out`), not in the answer's or decision's write.
pub(super) fn payload_sql(backend: Backend, kind: &str) -> String {
    let pairs = format!(
        "'conversation_id', a.conversation_id, 'title', a.conversation_title, 'run_id', a.run_id,
         'owner', a.owner_name, 'owner_id', a.owner_id, 'tool', a.tools,
         'decision', CASE WHEN {kind} = 'run.decided' THEN a.action END,
         'decided_by', CASE WHEN {kind} = 'run.decided' THEN a.actor_name END,
         'reason', a.reason, 'at', a.at, 'url', '/c/' || a.conversation_id"
    );
    match backend {
        // RFC 7396: a null in the patch removes its key.
        Backend::Sqlite => format!("json_patch('{{}}', json_object({pairs}))"),
        Backend::Postgres => format!("json_strip_nulls(json_build_object({pairs}))::text"),
    }
}

/// The outbox INSERT for the audit row(s) `a` of `source`, its event id and kind at `$first`, `$first+1`.
fn outbox_sql(first: usize, source: &str) -> String {
    format!(
        "INSERT INTO webhook_outbox (event_id, kind, audit_id, created_at)
         SELECT ${first}, ${}, a.id, a.at {source}",
        first + 1
    )
}

/// The audit INSERT and its outbox INSERT as SQLite runs them one after the other: the audit row
/// for the conversation `c` of `conversation` (a FROM clause), then the event for the row just
/// inserted, if `guard` (a condition, may be empty) holds. Values from `$first` on: the entry's
/// eleven (at, action, actor, run, surface, tools, arguments, arguments as run, preview, answer,
/// reason), then the event's id and kind. Public so the bench's answer reference writes an
/// answer's rows with this very text.
pub fn sqlite_statements(first: usize, conversation: &str, guard: &str) -> (String, String) {
    let outbox = outbox_sql(first + ENTRY_ARGS, &format!("FROM audit_log a WHERE a.id = last_insert_rowid(){guard}"));
    (insert_sql(first, conversation), outbox)
}

/// A guarded write's audit step on SQLite (the claimed conversation is in `temp.claimed`):
/// the statements and their values from `$first` on.
pub(super) fn batch_step<'a>(prepared: &'a Prepared, first: usize, at: i64) -> (String, Vec<Arg<'a>>) {
    // Only when the audit row went in: `last_insert_rowid()` keeps an older row's id otherwise.
    let (insert, outbox) = sqlite_statements(
        first,
        "FROM conversations c WHERE c.id IN (SELECT id FROM temp.claimed)",
        " AND EXISTS (SELECT 1 FROM temp.claimed)",
    );
    let mut sql = insert + ";";
    let mut args = prepared.args(at);
    if let Some(kind) = prepared.kind {
        sql.push_str(&outbox);
        sql.push(';');
        args.extend([Arg::Text(&prepared.event_id), Arg::Text(kind)]);
    }
    (sql, args)
}

/// A guarded write's audit step on PostgreSQL: CTEs named after `name`, reading the claimed
/// conversation from `claimed`.
pub(super) fn statement_step<'a>(prepared: &'a Prepared, name: &str, first: usize, at: i64) -> (String, Vec<Arg<'a>>) {
    let mut sql = format!(
        ", {name} AS ({} RETURNING *)",
        insert_sql(first, "FROM conversations c WHERE c.id IN (SELECT id FROM claimed)")
    );
    let mut args = prepared.args(at);
    if let Some(kind) = prepared.kind {
        sql.push_str(&format!(", {name}_out AS ({})", outbox_sql(first + ENTRY_ARGS, &format!("FROM {name} a"))));
        args.extend([Arg::Text(&prepared.event_id), Arg::Text(kind)]);
    }
    (sql, args)
}

/// Writes an entry (and its webhook event) for the conversation inside a transaction `$conn`
/// the caller holds, on either backend; evaluates to false when there is no such conversation.
/// A macro, not a function: the connection's type differs per backend.
macro_rules! write_entry {
    ($conn:expr, $conversation_id:expr, $entry:expr) => {{
        let prepared = $crate::store::audit::Prepared::of($entry);
        let args = prepared.args(db::now());
        let query = $crate::store::args::bind_args!(
            sqlx::query_scalar(sqlx::AssertSqlSafe($crate::store::audit::standalone_insert())),
            &args
        )
        .bind($conversation_id);
        let written: Option<i64> = query.fetch_optional(&mut *$conn).await?;
        if let (Some(id), Some(kind)) = (written, prepared.kind()) {
            sqlx::query(sqlx::AssertSqlSafe($crate::store::audit::standalone_outbox()))
                .bind(prepared.event_id())
                .bind(kind)
                .bind(id)
                .execute(&mut *$conn)
                .await?;
        }
        let written = written.is_some();
        written
    }};
}
pub(super) use write_entry;

impl Prepared {
    pub(super) fn kind(&self) -> Option<&'static str> {
        self.kind
    }

    pub(super) fn event_id(&self) -> &str {
        &self.event_id
    }
}

/// [`write_entry!`]'s audit INSERT: the conversation is the value after the entry's.
pub(super) fn standalone_insert() -> String {
    let mut sql = insert_sql(1, &format!("FROM conversations c WHERE c.id = ${}", ENTRY_ARGS + 1));
    sql.push_str(" RETURNING id");
    sql
}

/// [`write_entry!`]'s outbox INSERT for the audit row `$3`.
pub(super) fn standalone_outbox() -> String {
    outbox_sql(1, "FROM audit_log a WHERE a.id = $3")
}

/// The columns a [`Row`] is read from.
const ROW_COLUMNS: &str = "id, at, action, actor_id, actor_name, owner_id, owner_name, conversation_id,
     conversation_title, run_id, surface, tools, arguments, arguments_run, preview, answer, reason";

/// `text` as a LIKE pattern that matches it literally (with `ESCAPE '\'`).
fn like_literal(text: &str) -> String {
    text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

#[derive(sqlx::FromRow)]
struct RowRecord {
    id: i64,
    at: i64,
    action: String,
    actor_id: Option<i64>,
    actor_name: Option<String>,
    owner_id: Option<i64>,
    owner_name: Option<String>,
    conversation_id: String,
    conversation_title: String,
    run_id: Option<String>,
    surface: String,
    tools: Option<String>,
    arguments: Option<String>,
    arguments_run: Option<String>,
    preview: Option<String>,
    answer: Option<String>,
    reason: Option<String>,
}

impl TryFrom<RowRecord> for Row {
    type Error = StoreError;

    fn try_from(row: RowRecord) -> Result<Row, StoreError> {
        let corrupt =
            |what: &str, value: &str| StoreError::Corrupt(format!("{what} {value:?} of audit row {}", row.id));
        Ok(Row {
            action: Action::parse(&row.action).ok_or_else(|| corrupt("action", &row.action))?,
            surface: Surface::parse(&row.surface).ok_or_else(|| corrupt("surface", &row.surface))?,
            tools: row.tools.map(|tools| tools.split(',').map(str::to_string).collect()).unwrap_or_default(),
            id: row.id,
            at: row.at,
            actor_id: row.actor_id,
            actor_name: row.actor_name,
            owner_id: row.owner_id,
            owner_name: row.owner_name,
            conversation_id: row.conversation_id,
            conversation_title: row.conversation_title,
            run_id: row.run_id,
            arguments: row.arguments,
            arguments_run: row.arguments_run,
            preview: row.preview,
            answer: row.answer,
            reason: row.reason,
        })
    }
}

impl Store {
    /// The rows `filter` lets through, newest first: `limit` of them after skipping `offset`.
    pub async fn audit_rows(&self, filter: &Filter, limit: i64, offset: i64) -> Result<Vec<Row>, StoreError> {
        // Each condition is off when its value is NULL, so one statement serves every filter.
        let sql = format!(
            "SELECT {ROW_COLUMNS} FROM audit_log
             WHERE ($1 IS NULL OR owner_id = $1)
               AND ($2 IS NULL OR lower(actor_name) = lower($2) OR lower(owner_name) = lower($2))
               AND ($3 IS NULL OR (',' || tools || ',') LIKE $3 ESCAPE '\\')
               AND ($4 IS NULL OR at >= $4)
               AND ($5 IS NULL OR at < $5)
             ORDER BY id DESC LIMIT $6 OFFSET $7"
        );
        let user = filter.user.as_deref().map(str::trim).filter(|user| !user.is_empty());
        let tool = filter
            .tool
            .as_deref()
            .map(str::trim)
            .filter(|tool| !tool.is_empty())
            .map(|tool| format!("%,{},%", like_literal(tool)));
        let rows: Vec<RowRecord> = on_read!(&self.db, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(filter.owner)
            .bind(user)
            .bind(tool)
            .bind(filter.from)
            .bind(filter.until)
            .bind(limit)
            .bind(offset)
            .fetch_all(pool)
            .await)?;
        rows.into_iter().map(Row::try_from).collect()
    }

    /// Writes an entry for the conversation on its own (its state changed elsewhere: in the
    /// runtime's tables). False when the conversation is gone.
    pub async fn record_entry(&self, conversation_id: &str, entry: &Entry) -> Result<bool, StoreError> {
        db::on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            let written = write_entry!(tx, conversation_id, entry);
            tx.commit().await?;
            Ok::<bool, sqlx::Error>(written)
        }
        .await)
        .map_err(StoreError::from)
    }
}
