//! Standing approvals ("always allow"): a user's approval of a tool in one conversation or in all
//! of theirs, and the tools an admin lets users always allow for themselves. The chat checks who
//! may hold one (never a user whose changes wait for a second person); the worker asks whether
//! one covers a card.

use db::{now, now_ms, on, on_read};
use uuid::Uuid;

use super::args::Arg;
use super::guarded::Then;
use super::{Store, StoreError};
use crate::audit::Entry;
use crate::conversation::{MessageRole, Notice};

/// Standing approvals to add, one per tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPolicies {
    pub user_id: i64,
    pub tools: Vec<String>,
    /// `None`: in all of the user's conversations.
    pub conversation_id: Option<String>,
}

/// A standing approval as the settings list it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Policy {
    pub id: i64,
    pub tool: String,
    pub conversation_id: Option<String>,
    /// The conversation's title, when it is about one.
    pub title: Option<String>,
}

impl Store {
    /// Adds the standing approvals; one that exists already stays as it is.
    pub async fn add_policies(&self, policies: &NewPolicies) -> Result<(), StoreError> {
        let at = now();
        on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            for tool in &policies.tools {
                sqlx::query(
                    "INSERT INTO approval_policies (user_id, tool, conversation_id, created_at)
                     SELECT $1, $2, $3, $4
                     WHERE NOT EXISTS (SELECT 1 FROM approval_policies
                         WHERE user_id = $5 AND tool = $6 AND COALESCE(conversation_id, '') = COALESCE($7, ''))",
                )
                .bind(policies.user_id)
                .bind(tool)
                .bind(policies.conversation_id.as_deref())
                .bind(at)
                .bind(policies.user_id)
                .bind(tool)
                .bind(policies.conversation_id.as_deref())
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await
        }
        .await)?;
        Ok(())
    }

    /// The user's standing approvals, those everywhere first.
    pub async fn policies_of(&self, user_id: i64) -> Result<Vec<Policy>, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_as(
            "SELECT p.id, p.tool, p.conversation_id, c.title FROM approval_policies p
             LEFT JOIN conversations c ON c.id = p.conversation_id
             WHERE p.user_id = $1 ORDER BY p.conversation_id IS NOT NULL, p.tool, p.id",
        )
        .bind(user_id)
        .fetch_all(pool)
        .await)?)
    }

    /// Revokes one of the user's standing approvals; false when they hold no such one.
    pub async fn revoke_policy(&self, user_id: i64, policy_id: i64) -> Result<bool, StoreError> {
        let done = on!(&self.db, pool => sqlx::query("DELETE FROM approval_policies WHERE id = $1 AND user_id = $2")
            .bind(policy_id)
            .bind(user_id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(done == 1)
    }

    /// A standing approval of the user's that covers `tool` in the conversation (its own, else
    /// one for everywhere that an admin still permits), if any.
    pub async fn covering_policy(
        &self,
        user_id: i64,
        conversation_id: &str,
        tool: &str,
    ) -> Result<Option<i64>, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_scalar(
            "SELECT p.id FROM approval_policies p
             WHERE p.user_id = $1 AND p.tool = $2
               AND (p.conversation_id = $3
                    OR (p.conversation_id IS NULL
                        AND EXISTS (SELECT 1 FROM approval_policy_permits a WHERE a.tool = p.tool)))
             ORDER BY p.conversation_id IS NULL, p.id LIMIT 1",
        )
        .bind(user_id)
        .bind(tool)
        .bind(conversation_id)
        .fetch_optional(pool)
        .await)?)
    }

    /// Whether an admin permits "always for me" for every one of `tools`.
    pub async fn policy_permits_all(&self, tools: &[String]) -> Result<bool, StoreError> {
        for tool in tools {
            // A count, not `SELECT 1`: PostgreSQL's 1 is an INT4, which an i64 does not decode.
            let permitted: i64 = on_read!(&self.db, pool => sqlx::query_scalar(
                "SELECT COUNT(*) FROM approval_policy_permits WHERE tool = $1",
            )
            .bind(tool)
            .fetch_one(pool)
            .await)?;
            if permitted == 0 {
                return Ok(false);
            }
        }
        Ok(!tools.is_empty())
    }

    /// The tools an admin permits "always for me" for.
    pub async fn policy_permits(&self) -> Result<Vec<String>, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_scalar(
            "SELECT tool FROM approval_policy_permits ORDER BY tool",
        )
        .fetch_all(pool)
        .await)?)
    }

    /// Permits (or withdraws) "always for me" for a tool. Withdrawing leaves the users' standing
    /// approvals for everywhere in place but unused (`covering_policy` asks for the permit).
    pub async fn set_policy_permit(&self, tool: &str, admin: i64, permitted: bool) -> Result<(), StoreError> {
        on!(&self.db, pool => {
            if permitted {
                sqlx::query(
                    "INSERT INTO approval_policy_permits (tool, permitted_by, created_at) VALUES ($1, $2, $3)
                     ON CONFLICT (tool) DO NOTHING",
                )
                .bind(tool)
                .bind(admin)
                .bind(now())
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
            } else {
                sqlx::query("DELETE FROM approval_policy_permits WHERE tool = $1")
                    .bind(tool)
                    .execute(pool)
                    .await
                    .map(|done| done.rows_affected())
            }
        })?;
        Ok(())
    }

    /// Records the owner's approval of the card the conversation's run just came to, given by
    /// the standing approval `policy` instead of a person, with its line and audit row, and
    /// queues its delivery like any decision. Guarded on the conversation still carrying `run`
    /// with nothing recorded: false when it moved on.
    #[allow(clippy::too_many_arguments)]
    pub async fn record_auto_approval(
        &self,
        conversation_id: &str,
        run: Uuid,
        digest: &str,
        policy: i64,
        owner: i64,
        line: &str,
        entry: &Entry,
    ) -> Result<bool, StoreError> {
        let run = run.to_string();
        let then = [
            Then::Message { role: MessageRole::User, content: line, notice: Some(Notice::Decision) },
            Then::Job,
            Then::Audit(entry),
        ];
        self.guarded(
            conversation_id,
            "UPDATE conversations
             SET approval_decision = 'approve', approval_turn_digest = $1, approval_deny_reason = NULL,
                 pending_input = NULL, error_code = NULL, updated_at = $2, approval_decided_by = $3,
                 recorded_at_ms = $4, approval_message = NULL, approval_edits = NULL, approval_policy = $5,
                 approved_through = (SELECT MAX(m.id) FROM messages m WHERE m.conversation_id = $6)
             WHERE id = $7 AND status = 'processing' AND run_id = $8 AND approval_decision IS NULL",
            &[
                Arg::Text(digest),
                Arg::Int(now()),
                Arg::Int(owner),
                Arg::Int(now_ms()),
                Arg::Int(policy),
                Arg::Text(conversation_id),
                Arg::Text(conversation_id),
                Arg::Text(&run),
            ],
            &then,
        )
        .await
    }
}
