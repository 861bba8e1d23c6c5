//! The audit log for people: the page's rows (`AuditBackend`) and the exports of the same rows
//! as CSV and JSON (`/audit/export.csv`, `/audit/export.json`). Admins read every row, anyone
//! else the rows of their own conversations; the check is here, on every call. There is no
//! route that changes or removes a row.

use async_trait::async_trait;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde_json::{json, Value};

use app::backend::{AuditBackend, CurrentUser};
use app::error::AppError;
use app::i18n::{Lang, Text};
use app::model::{AuditPageView, AuditQuery, AuditRowView};

use crate::audit::{action_label, Filter, Row, Surface};
use crate::failures::internal;
use crate::route_reply::{error_response, reader_lang};
use crate::store::Store;

pub const CSV_PATH: &str = "/audit/export.csv";
pub const JSON_PATH: &str = "/audit/export.json";

/// Rows on one page.
pub const PAGE_ROWS: u32 = 50;
/// An export holds at most this many rows (the newest); a narrower filter gets the rest.
pub const EXPORT_ROWS: i64 = 10_000;

pub struct AuditService {
    store: Store,
}

impl AuditService {
    pub fn new(store: Store) -> AuditService {
        AuditService { store }
    }

    /// The rows `query` asks for that `reader` may see: `limit` from `offset` on, newest first.
    async fn rows(
        &self,
        reader: &CurrentUser,
        query: &AuditQuery,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<Row>, AppError> {
        let filter = filter_for(reader, query)?;
        self.store.audit_rows(&filter, limit, offset).await.map_err(internal)
    }
}

/// The store's filter for a reader: an admin's covers every conversation, anyone else's only
/// their own. A date that is not `YYYY-MM-DD` is refused.
pub fn filter_for(reader: &CurrentUser, query: &AuditQuery) -> Result<Filter, AppError> {
    let day = |value: &Option<String>| -> Result<Option<i64>, AppError> {
        match value.as_deref().map(str::trim).filter(|value| !value.is_empty()) {
            None => Ok(None),
            Some(value) => day_start(value).map(Some).ok_or(AppError::Invalid(Text::ErrorAuditDate)),
        }
    };
    Ok(Filter {
        owner: (!reader.admin).then_some(reader.id),
        user: query.user.clone(),
        tool: query.tool.clone(),
        from: day(&query.from)?,
        // Up to the end of that day.
        until: day(&query.to)?.map(|start| start + 86_400),
    })
}

/// The first second of a `YYYY-MM-DD` day (UTC).
fn day_start(value: &str) -> Option<i64> {
    let mut parts = value.splitn(3, '-');
    let (year, month, day) = (parts.next()?, parts.next()?, parts.next()?);
    if year.len() != 4 || month.len() != 2 || day.len() != 2 {
        return None;
    }
    let month = time::Month::try_from(month.parse::<u8>().ok()?).ok()?;
    let date = time::Date::from_calendar_date(year.parse().ok()?, month, day.parse().ok()?).ok()?;
    Some(date.midnight().assume_utc().unix_timestamp())
}

/// `YYYY-MM-DD HH:MM:SS UTC`.
fn timestamp(at: i64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    time::OffsetDateTime::from_unix_timestamp(at).ok().and_then(|at| at.format(format).ok()).unwrap_or_default()
}

fn surface_label(surface: Surface, lang: Lang) -> &'static str {
    lang.t(match surface {
        Surface::Chat => Text::AuditSurfaceChat,
        Surface::Inbox => Text::AuditSurfaceInbox,
        Surface::Api => Text::AuditSurfaceApi,
        Surface::Worker => Text::AuditSurfaceWorker,
    })
}

fn row_view(row: Row, lang: Lang) -> AuditRowView {
    AuditRowView {
        id: row.id,
        at: timestamp(row.at),
        action: row.action.as_str().to_string(),
        action_label: action_label(row.action, lang).to_string(),
        actor: row.actor_name,
        owner: row.owner_name,
        conversation_id: row.conversation_id,
        conversation_title: row.conversation_title,
        run_id: row.run_id,
        surface_label: surface_label(row.surface, lang).to_string(),
        tools: row.tools,
        arguments: row.arguments.map(pretty),
        arguments_run: row.arguments_run.map(pretty),
        preview: row.preview,
        answer: row.answer,
        reason: row.reason,
    }
}

/// Stored JSON, indented for people (as it is if it does not read as JSON).
fn pretty(raw: String) -> String {
    serde_json::from_str::<Value>(&raw).ok().and_then(|value| serde_json::to_string_pretty(&value).ok()).unwrap_or(raw)
}

#[async_trait]
impl AuditBackend for AuditService {
    async fn audit(&self, user: &CurrentUser, query: &AuditQuery, lang: Lang) -> Result<AuditPageView, AppError> {
        let page = query.page.unwrap_or(1).max(1);
        let offset = i64::from(page - 1) * i64::from(PAGE_ROWS);
        // One more than a page tells whether there are older rows.
        let mut rows = self.rows(user, query, i64::from(PAGE_ROWS) + 1, offset).await?;
        let has_older = rows.len() > PAGE_ROWS as usize;
        rows.truncate(PAGE_ROWS as usize);
        Ok(AuditPageView {
            rows: rows.into_iter().map(|row| row_view(row, lang)).collect(),
            all: user.admin,
            page,
            has_older,
        })
    }
}

/// A row as an export writes it: stored codes, not labels, and Unix seconds beside the time.
fn export_object(row: &Row) -> Value {
    let json_or_text = |raw: &Option<String>| match raw {
        Some(raw) => serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.clone())),
        None => Value::Null,
    };
    json!({
        "id": row.id,
        "at": row.at,
        "time": timestamp(row.at),
        "action": row.action.as_str(),
        "actor_id": row.actor_id,
        "actor": row.actor_name,
        "owner_id": row.owner_id,
        "owner": row.owner_name,
        "conversation_id": row.conversation_id,
        "conversation_title": row.conversation_title,
        "run_id": row.run_id,
        "surface": row.surface.as_str(),
        "tools": row.tools,
        "arguments": json_or_text(&row.arguments),
        "arguments_run": json_or_text(&row.arguments_run),
        "preview": row.preview,
        "answer": row.answer,
        "reason": row.reason,
    })
}

const CSV_COLUMNS: [&str; 17] = [
    "id",
    "time",
    "action",
    "actor_id",
    "actor",
    "owner_id",
    "owner",
    "conversation_id",
    "conversation_title",
    "run_id",
    "surface",
    "tools",
    "arguments",
    "arguments_run",
    "preview",
    "answer",
    "reason",
];

/// One CSV cell (RFC 4180), always quoted, quotes doubled: a quoted cell is one cell whatever
/// separator the spreadsheet assumes (German Excel splits an unquoted one on `;`). A cell a
/// spreadsheet would read as a formula gets a `'` in front, so opening an export runs nothing a
/// model or user wrote: one whose first character other than blanks and control characters is
/// `=`, `+`, `-`, `@` (or their full-width forms), or that starts with a tab or carriage return.
pub fn csv_cell(value: &str) -> String {
    let guarded = if reads_as_formula(value) { format!("'{value}") } else { value.to_string() };
    format!("\"{}\"", guarded.replace('"', "\"\""))
}

fn reads_as_formula(value: &str) -> bool {
    if value.starts_with(['\t', '\r']) {
        return true;
    }
    let first = value.chars().find(|c| !c.is_whitespace() && !c.is_control() && !is_invisible(*c));
    matches!(first, Some('=' | '+' | '-' | '@' | '\u{FF1D}' | '\u{FF0B}' | '\u{FF0D}' | '\u{FF20}'))
}

/// Characters that show as nothing, which a spreadsheet may skip before it reads a cell.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{00AD}')
}

fn csv_line(row: &Row) -> String {
    let opt = |value: &Option<String>| value.clone().unwrap_or_default();
    let num = |value: Option<i64>| value.map(|n| n.to_string()).unwrap_or_default();
    let cells = [
        row.id.to_string(),
        timestamp(row.at),
        row.action.as_str().to_string(),
        num(row.actor_id),
        opt(&row.actor_name),
        num(row.owner_id),
        opt(&row.owner_name),
        row.conversation_id.clone(),
        row.conversation_title.clone(),
        opt(&row.run_id),
        row.surface.as_str().to_string(),
        row.tools.join(","),
        opt(&row.arguments),
        opt(&row.arguments_run),
        opt(&row.preview),
        opt(&row.answer),
        opt(&row.reason),
    ];
    cells.iter().map(|cell| csv_cell(cell)).collect::<Vec<_>>().join(",")
}

/// The rows of an export, or the response that refuses it.
async fn export_rows(
    store: Store,
    user: Option<Extension<CurrentUser>>,
    headers: &HeaderMap,
    query: &AuditQuery,
) -> Result<Vec<Row>, Response> {
    let language = headers.get(header::ACCEPT_LANGUAGE).and_then(|value| value.to_str().ok());
    let user = user.map(|Extension(user)| user);
    let lang = reader_lang(user.as_ref(), language);
    let Some(user) = user else { return Err(error_response(AppError::Unauthenticated, lang)) };
    AuditService::new(store).rows(&user, query, EXPORT_ROWS, 0).await.map_err(|error| error_response(error, lang))
}

fn attachment(kind: &'static str, name: &'static str, body: String) -> Response {
    let disposition = format!("attachment; filename=\"{name}\"");
    (StatusCode::OK, [(header::CONTENT_TYPE, kind.to_string()), (header::CONTENT_DISPOSITION, disposition)], body)
        .into_response()
}

/// `GET /audit/export.csv?…`: the filtered rows the reader may see, as CSV.
pub async fn export_csv(
    State(store): State<Store>,
    user: Option<Extension<CurrentUser>>,
    headers: HeaderMap,
    Query(query): Query<AuditQuery>,
) -> Response {
    let rows = match export_rows(store, user, &headers, &query).await {
        Ok(rows) => rows,
        Err(refused) => return refused,
    };
    let mut body = CSV_COLUMNS.map(csv_cell).join(",");
    body.push_str("\r\n");
    for row in &rows {
        body.push_str(&csv_line(row));
        body.push_str("\r\n");
    }
    attachment("text/csv; charset=utf-8", "audit.csv", body)
}

/// `GET /audit/export.json?…`: the same rows as a JSON array.
pub async fn export_json(
    State(store): State<Store>,
    user: Option<Extension<CurrentUser>>,
    headers: HeaderMap,
    Query(query): Query<AuditQuery>,
) -> Response {
    let rows = match export_rows(store, user, &headers, &query).await {
        Ok(rows) => rows,
        Err(refused) => return refused,
    };
    let body = Value::Array(rows.iter().map(export_object).collect()).to_string();
    attachment("application/json", "audit.json", body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_quoted_and_formulas_are_defused() {
        assert_eq!(csv_cell("plain"), "\"plain\"");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("a;b"), "\"a;b\"", "one cell also where ; separates");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_cell("+1"), "\"'+1\"");
        assert_eq!(csv_cell("-2"), "\"'-2\"");
        assert_eq!(csv_cell("@SUM(A1)"), "\"'@SUM(A1)\"");
        assert_eq!(csv_cell(""), "\"\"");
        // Not only the first character: blanks, control and invisible characters before a formula.
        for formula in [" =1+1", "\u{A0}=1+1", "\n=1+1", "\u{200B}=1+1", "\u{FEFF}+1", "\t1", "\r1", "\u{FF1D}1+1"] {
            assert!(csv_cell(formula).starts_with("\"'"), "{formula:?} is defused: {}", csv_cell(formula));
        }
        for plain in ["a=b", "1-2", "x@y.example", "Grace"] {
            assert_eq!(csv_cell(plain), format!("\"{plain}\""));
        }
    }

    #[test]
    fn days_are_read_strictly() {
        assert_eq!(day_start("1970-01-02"), Some(86_400));
        for bad in ["2026-13-01", "2026-02-30", "26-01-01", "yesterday", "2026-1-1", "2026-01-01T00"] {
            assert_eq!(day_start(bad), None, "{bad}");
        }
        assert_eq!(timestamp(86_400 + 61), "1970-01-02 00:01:01 UTC");
    }
}
