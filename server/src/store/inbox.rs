//! The runs inbox's SQL: which conversation each run belongs to, decisions and answers given in
//! the inbox for runs their conversation moved on from, and the lines such runs leave in it.

use db::{now, on, on_read};
use runtime::DenialReason;
use uuid::Uuid;

use super::args::Arg;
use super::audit::write_entry;
use super::guarded::{clear_recorded, stored_rendering, Then};
use super::rows::{select_conversations, ConversationRow};
use super::{Store, StoreError};
use crate::audit::Entry;
use crate::conversation::{
    Conversation, DecisionDetail, ErrorCode, MessageRole, Notice, PendingDecision, Recorded, Reply,
};
use crate::markdown::RENDERER_VERSION;

/// A decision or answer given in the inbox, waiting for the worker or refused by the runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct RunDecision {
    pub run_id: Uuid,
    pub conversation_id: String,
    pub recorded: Recorded,
    /// Set once the runtime refused it; the run still waits and may be decided again.
    pub refused: Option<ErrorCode>,
    /// A reviewer who approved the owner's change (four-eyes); `None`: the owner decided.
    pub decided_by: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct RunDecisionRow {
    run_id: String,
    conversation_id: String,
    kind: String,
    digest: String,
    deny_reason: Option<String>,
    reply: Option<String>,
    error_code: Option<String>,
    decided_by: Option<i64>,
    message: Option<String>,
    edits: Option<String>,
}

impl TryFrom<RunDecisionRow> for RunDecision {
    type Error = StoreError;

    fn try_from(row: RunDecisionRow) -> Result<Self, StoreError> {
        let corrupt = |what: &str, value: &str| StoreError::Corrupt(format!("{what} {value:?} of run {}", row.run_id));
        let run_id = Uuid::parse_str(&row.run_id).map_err(|_| corrupt("run id", &row.run_id))?;
        let kind = PendingDecision::parse(&row.kind).ok_or_else(|| corrupt("decision", &row.kind))?;
        let recorded = match kind {
            PendingDecision::Input => {
                let raw = row.reply.clone().unwrap_or_default();
                let reply = Reply::decode(&raw).ok_or_else(|| corrupt("answer", &raw))?;
                Recorded::Answer { digest: row.digest.clone(), reply }
            }
            PendingDecision::Approve | PendingDecision::Deny => {
                let reason = match row.deny_reason.as_deref() {
                    None => None,
                    Some(reason) => Some(DenialReason::parse(reason).ok_or_else(|| corrupt("deny reason", reason))?),
                };
                let edits = DecisionDetail::decode_edits(row.edits.as_deref())
                    .ok_or_else(|| corrupt("edits", row.edits.as_deref().unwrap_or_default()))?;
                let detail = DecisionDetail { message: row.message.clone(), edits, policy: None };
                let approve = kind == PendingDecision::Approve;
                Recorded::Decision { approve, digest: row.digest.clone(), reason, detail }
            }
        };
        let refused = match row.error_code.as_deref() {
            None => None,
            Some(code) => Some(ErrorCode::parse(code).ok_or_else(|| corrupt("error code", code))?),
        };
        Ok(RunDecision { run_id, conversation_id: row.conversation_id, recorded, refused, decided_by: row.decided_by })
    }
}

macro_rules! select_run_decisions {
    ($tail:literal) => {
        concat!(
            "SELECT run_id, conversation_id, kind, digest, deny_reason, reply, error_code, decided_by, message, edits \
             FROM run_decisions ",
            $tail
        )
    };
}

impl Store {
    /// Remembers that `run_id` carries a turn of the conversation, for as long as both exist.
    pub async fn map_run(&self, conversation_id: &str, run_id: Uuid) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO conversation_runs (run_id, conversation_id, created_at) VALUES ($1, $2, $3)
             ON CONFLICT (run_id) DO NOTHING",
        )
        .bind(run_id.to_string())
        .bind(conversation_id)
        .bind(now())
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// Every run that carried a turn of the conversation: what one of them read (an MCP result)
    /// may live on in its answer, so the next turn asks the runtime about them.
    pub async fn runs_of(&self, conversation_id: &str) -> Result<Vec<Uuid>, StoreError> {
        let ids: Vec<String> = on_read!(&self.db, pool => sqlx::query_scalar(
            "SELECT run_id FROM conversation_runs WHERE conversation_id = $1",
        )
        .bind(conversation_id)
        .fetch_all(pool)
        .await)?;
        ids.iter().map(|id| Uuid::parse_str(id).map_err(|_| StoreError::Corrupt(format!("run id {id:?}")))).collect()
    }

    /// The conversation a run belongs to, whether it still carries it or moved on from it.
    pub async fn conversation_of_any_run(&self, run_id: Uuid) -> Result<Option<Conversation>, StoreError> {
        let run = run_id.to_string();
        let row: Option<ConversationRow> = on_read!(&self.db, pool => sqlx::query_as(select_conversations!(
            "WHERE id = (SELECT conversation_id FROM conversation_runs WHERE run_id = $1) OR run_id = $2 LIMIT 1"
        ))
        .bind(&run)
        .bind(&run)
        .fetch_optional(pool)
        .await)?;
        row.map(Conversation::try_from).transpose()
    }

    /// Records a decision or answer given in the inbox for a run its conversation moved on from,
    /// by its owner or (`decided_by`) a reviewer, and queues its delivery. False when one is
    /// recorded already and not refused: exactly one of two at once wins, by the primary key.
    /// False too when `still_waits`, asked after the insert and before the commit, says the run
    /// no longer waits: an earlier decision may have been delivered and its row dropped between
    /// the caller's look at the pause and this insert, and a decision recorded then would win
    /// nothing.
    pub async fn record_run_decision<E>(
        &self,
        conversation_id: &str,
        run_id: Uuid,
        recorded: &Recorded,
        decided_by: Option<i64>,
        entry: &Entry,
        still_waits: impl std::future::Future<Output = Result<bool, E>>,
    ) -> Result<Result<bool, E>, StoreError> {
        let none = DecisionDetail::default();
        let (kind, digest, reason, reply, detail) = match recorded {
            Recorded::Answer { digest, reply } => (PendingDecision::Input, digest, None, Some(reply.encode()), &none),
            Recorded::Decision { approve, digest, reason, detail } => {
                let kind = if *approve { PendingDecision::Approve } else { PendingDecision::Deny };
                (kind, digest, reason.map(DenialReason::as_str), None, detail)
            }
        };
        let at = now();
        let upsert = "INSERT INTO run_decisions (run_id, conversation_id, kind, digest, deny_reason, reply, error_code, created_at, decided_by, message, edits)
             VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8, $9, $10)
             ON CONFLICT (run_id) DO UPDATE SET kind = excluded.kind, digest = excluded.digest,
                 deny_reason = excluded.deny_reason, reply = excluded.reply, error_code = NULL,
                 created_at = excluded.created_at, decided_by = excluded.decided_by,
                 message = excluded.message, edits = excluded.edits
             WHERE run_decisions.error_code IS NOT NULL";
        let job = "INSERT INTO jobs (conversation_id, kind, created_at) VALUES ($1, 'run_decision', $2)";
        on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            let won = sqlx::query(upsert)
                .bind(run_id.to_string())
                .bind(conversation_id)
                .bind(kind.as_str())
                .bind(digest)
                .bind(reason)
                .bind(reply)
                .bind(at)
                .bind(decided_by)
                .bind(detail.message.as_deref())
                .bind(detail.encode_edits())
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if !won {
                tx.rollback().await?;
                return Ok::<Result<bool, E>, sqlx::Error>(Ok(false));
            }
            // The run's state is committed before a delivered decision's row is dropped, so a
            // row dropped before this insert shows here as a run that no longer waits.
            match still_waits.await {
                Ok(true) => {}
                other => {
                    tx.rollback().await?;
                    return Ok(other);
                }
            }
            sqlx::query(job).bind(conversation_id).bind(at).execute(&mut *tx).await?;
            write_entry!(tx, conversation_id, entry);
            tx.commit().await?;
            Ok(Ok(true))
        }
        .await)
        .map_err(StoreError::from)
    }

    /// Queues the delivery of the conversation's inbox decisions unless it is queued already.
    pub async fn ensure_run_decision_job(&self, conversation_id: &str) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO jobs (conversation_id, kind, created_at)
             SELECT $1, 'run_decision', $2
             WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE conversation_id = $3 AND kind = 'run_decision' AND state = 'queued')",
        )
        .bind(conversation_id)
        .bind(now())
        .bind(conversation_id)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// Inbox decisions of the conversation that wait for the worker.
    pub async fn pending_run_decisions(&self, conversation_id: &str) -> Result<Vec<RunDecision>, StoreError> {
        let rows: Vec<RunDecisionRow> = on_read!(&self.db, pool => sqlx::query_as(select_run_decisions!(
            "WHERE conversation_id = $1 AND error_code IS NULL ORDER BY created_at, run_id"
        ))
        .bind(conversation_id)
        .fetch_all(pool)
        .await)?;
        rows.into_iter().map(RunDecision::try_from).collect()
    }

    /// The inbox decision on a run, pending or refused.
    pub async fn run_decision(&self, run_id: Uuid) -> Result<Option<RunDecision>, StoreError> {
        let row: Option<RunDecisionRow> = on_read!(&self.db, pool => sqlx::query_as(select_run_decisions!("WHERE run_id = $1"))
        .bind(run_id.to_string())
        .fetch_optional(pool)
        .await)?;
        row.map(RunDecision::try_from).transpose()
    }

    /// The runtime refused it and the run waits: the inbox shows why, and takes a new decision.
    pub async fn refuse_run_decision(&self, run_id: Uuid, code: ErrorCode) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query("UPDATE run_decisions SET error_code = $1 WHERE run_id = $2")
            .bind(code.as_str())
            .bind(run_id.to_string())
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// Delivered (or moot: the run no longer waits).
    pub async fn drop_run_decision(&self, run_id: Uuid) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query("DELETE FROM run_decisions WHERE run_id = $1")
            .bind(run_id.to_string())
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// A line a run the conversation moved on from leaves in it (its answer after a decision in
    /// the inbox, or that it expired). It joins the transcript whatever the conversation does.
    /// `entry`, if given, is the audit's row for it, written in the same transaction.
    pub async fn append_line(
        &self,
        conversation_id: &str,
        role: MessageRole,
        content: &str,
        notice: Notice,
        entry: Option<&Entry>,
    ) -> Result<(), StoreError> {
        let html = if notice == Notice::Dismissed { None } else { stored_rendering(role, content) };
        on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO messages (conversation_id, role, content, notice, created_at, html, html_version)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(conversation_id)
            .bind(role.as_str())
            .bind(content)
            .bind(notice.as_str())
            .bind(now())
            .bind(html.as_deref())
            .bind(html.as_ref().map(|_| RENDERER_VERSION))
            .execute(&mut *tx)
            .await?;
            if let Some(entry) = entry {
                write_entry!(tx, conversation_id, entry);
            }
            tx.commit().await
        }
        .await)?;
        Ok(())
    }

    /// An inbox decision that can no longer be delivered (its run was cancelled or failed first:
    /// a dismissal or an expiry that raced it) is dropped with the audit's row that says so, so
    /// the log never shows the decision as taking effect. The row only with the drop: of two
    /// workers, one writes it.
    pub async fn drop_undelivered_run_decision(
        &self,
        conversation_id: &str,
        run_id: Uuid,
        entry: &Entry,
    ) -> Result<bool, StoreError> {
        let dropped = on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            let dropped = sqlx::query("DELETE FROM run_decisions WHERE run_id = $1")
                .bind(run_id.to_string())
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if dropped {
                write_entry!(tx, conversation_id, entry);
            }
            tx.commit().await?;
            Ok::<bool, sqlx::Error>(dropped)
        }
        .await)?;
        Ok(dropped)
    }

    /// An inbox decision was delivered and its run waits again (on a new question or card): the
    /// decision's row goes, and the audit's `waiting` row comes, together.
    pub async fn waits_again(&self, conversation_id: &str, run_id: Uuid, entry: &Entry) -> Result<(), StoreError> {
        on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            sqlx::query("DELETE FROM run_decisions WHERE run_id = $1")
                .bind(run_id.to_string())
                .execute(&mut *tx)
                .await?;
            write_entry!(tx, conversation_id, entry);
            tx.commit().await
        }
        .await)?;
        Ok(())
    }

    /// A waiting run expired: the conversation that still waits on it is idle again, with a line
    /// that says so. Guarded on it still waiting on that run (a decision recorded first wins).
    pub async fn expire_waiting(&self, conversation_id: &str, run_id: Uuid, entry: &Entry) -> Result<bool, StoreError> {
        let run = run_id.to_string();
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET status = 'idle', run_id = NULL, error_code = NULL, ",
                clear_recorded!(),
                ", updated_at = $1
                 WHERE id = $2 AND run_id = $3 AND status IN ('awaiting_approval', 'awaiting_input')"
            ),
            &[Arg::Int(now()), Arg::Text(conversation_id), Arg::Text(&run)],
            &[
                Then::Message { role: MessageRole::Assistant, content: "", notice: Some(Notice::Expired) },
                Then::Audit(entry),
            ],
        )
        .await
    }

    /// The owner dismissed the run the conversation waits on from the runs inbox: it is idle
    /// again, with a line naming who did it (`name`) and the audit's row. Guarded, as an expiry,
    /// on the conversation still waiting on that run, so of a dismissal and a decision (or a second
    /// dismissal) exactly one wins.
    pub async fn dismiss_waiting(
        &self,
        user_id: i64,
        conversation_id: &str,
        run_id: Uuid,
        name: &str,
        entry: &Entry,
    ) -> Result<bool, StoreError> {
        let run = run_id.to_string();
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET status = 'idle', run_id = NULL, error_code = NULL, ",
                clear_recorded!(),
                ", updated_at = $1
                 WHERE id = $2 AND user_id = $3 AND run_id = $4 AND status IN ('awaiting_approval', 'awaiting_input')"
            ),
            &[Arg::Int(now()), Arg::Text(conversation_id), Arg::Int(user_id), Arg::Text(&run)],
            &[
                Then::Message { role: MessageRole::Assistant, content: name, notice: Some(Notice::Dismissed) },
                Then::Audit(entry),
            ],
        )
        .await
    }
}
