//! The runs table's rows as types: what each read returns and what each write takes.

use uuid::Uuid;

use super::StoreError;
use crate::run::RunStatus;
use crate::tool::ToolEffect;

#[derive(sqlx::FromRow, serde::Deserialize)]
pub(super) struct RunRow {
    id: String,
    status: String,
    owner_user_id: i64,
    owner_admin: bool,
    configuration: String,
    process: bool,
    allowed_tools: Option<String>,
    max_rounds: i64,
    checkpoint: Option<String>,
    suspended_state: Option<String>,
    claimed_by: Option<String>,
    requeue_count: i64,
    pending_effect: Option<String>,
    rounds: i64,
    truncated: bool,
    termination_reason: Option<String>,
    answer: Option<String>,
    created_at: i64,
    started_at: Option<i64>,
    finished_at: Option<i64>,
    updated_at: i64,
    outside_content: bool,
}

/// A run row with its columns typed. JSON columns stay text: decoding them is the caller's
/// business, so an unreadable blob never hides the rest of the row.
#[derive(Debug, Clone)]
pub(crate) struct RunRecord {
    pub id: Uuid,
    pub status: RunStatus,
    pub owner_user_id: i64,
    pub owner_admin: bool,
    pub configuration: String,
    pub process: bool,
    pub allowed_tools: Option<String>,
    pub max_rounds: u32,
    pub checkpoint: Option<String>,
    pub suspended_state: Option<String>,
    pub claimed_by: Option<String>,
    pub requeue_count: u32,
    pub pending_effect: Option<ToolEffect>,
    pub rounds: u32,
    pub truncated: bool,
    pub termination_reason: Option<String>,
    pub answer: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub updated_at: i64,
    /// The run holds content from outside; sticky (see the migration that adds it).
    pub outside_content: bool,
}

pub(super) fn small(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}

/// A run read as [`pg_run_json`] gives it.
pub(crate) fn record_from_json(json: &str) -> Result<RunRecord, StoreError> {
    let row: RunRow =
        serde_json::from_str(json).map_err(|error| StoreError::Corrupt(format!("a run as JSON: {error}")))?;
    RunRecord::try_from(row)
}

impl TryFrom<RunRow> for RunRecord {
    type Error = StoreError;

    fn try_from(row: RunRow) -> Result<Self, StoreError> {
        let id = Uuid::parse_str(&row.id).map_err(|_| StoreError::Corrupt(format!("run id {:?}", row.id)))?;
        let status =
            RunStatus::parse(&row.status).ok_or_else(|| StoreError::Corrupt(format!("run status {:?}", row.status)))?;
        let pending_effect = match row.pending_effect.as_deref() {
            None => None,
            Some(value) => {
                Some(ToolEffect::parse(value).ok_or_else(|| StoreError::Corrupt(format!("pending effect {value:?}")))?)
            }
        };
        Ok(RunRecord {
            id,
            status,
            owner_user_id: row.owner_user_id,
            owner_admin: row.owner_admin,
            configuration: row.configuration,
            process: row.process,
            allowed_tools: row.allowed_tools,
            max_rounds: small(row.max_rounds),
            checkpoint: row.checkpoint,
            suspended_state: row.suspended_state,
            claimed_by: row.claimed_by,
            requeue_count: small(row.requeue_count),
            pending_effect,
            rounds: small(row.rounds),
            truncated: row.truncated,
            termination_reason: row.termination_reason,
            answer: row.answer,
            created_at: row.created_at,
            started_at: row.started_at,
            finished_at: row.finished_at,
            updated_at: row.updated_at,
            outside_content: row.outside_content,
        })
    }
}

pub(crate) struct NewRun<'a> {
    pub id: Uuid,
    pub owner_user_id: i64,
    pub owner_admin: bool,
    pub configuration: &'a str,
    pub process: bool,
    pub allowed_tools: Option<String>,
    pub max_rounds: u32,
    pub checkpoint: String,
    pub outside_content: bool,
}

/// How a settle ends a run.
pub(crate) struct Settle<'a> {
    pub status: RunStatus,
    pub reason: Option<&'a str>,
    pub answer: Option<&'a str>,
    /// `None` keeps the stored count (a failure before any round of this segment ran).
    pub rounds: Option<u32>,
    pub truncated: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct StaleRun {
    pub id: Uuid,
    pub requeue_count: u32,
    pub pending_effect: Option<ToolEffect>,
}
