//! E-mail: a user's address and opt-in (`users.email`, `users.email_notify`), and each event's
//! mail to each user who should hear of it (`mail_deliveries`), written by the webhooks' fan-out
//! in its transaction ([`mail_fan_out_sql`]) and leased, retried and recorded as a webhook
//! delivery is.

use std::collections::HashMap;

use db::{now, on, on_read};
use serde_json::Value;

use super::deliveries::{claim_sql, outcome_columns, AttemptOutcome};
use super::outbox::OutboxEvent;
use super::{Store, StoreError};

/// A user's e-mail settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MailSettings {
    pub address: Option<String>,
    pub notify: bool,
}

/// A mail this worker holds under its lease, with whom it goes to as the account is now.
#[derive(Debug, Clone)]
pub struct ClaimedMail {
    pub id: i64,
    pub event_id: String,
    pub user_id: i64,
    pub kind: String,
    pub payload: String,
    /// Counting this one.
    pub attempts: i64,
    pub created_at: i64,
    /// `None` when the user has no address any more or no longer wants mail.
    pub address: Option<String>,
    pub language: Option<String>,
}

/// An outbox event as the mail fan-out reads it: whose run, and whether reviewers may be meant.
pub(super) struct MailEvent<'a> {
    pub event: &'a OutboxEvent,
    pub owner_id: i64,
    pub run_id: String,
    /// A card that may wait for a reviewer: reviewers hear of it when it waits (or still waits).
    pub reviewers: bool,
}

/// The events of `events` that can go to someone: those that name their run's owner. A decision
/// the owner made themselves is not mailed back to them.
pub(super) fn mail_events(events: &[OutboxEvent]) -> Vec<MailEvent<'_>> {
    events
        .iter()
        .filter_map(|event| {
            let payload: Value = serde_json::from_str(&event.payload).ok()?;
            let owner_id = payload.get("owner_id")?.as_i64()?;
            let text = |name: &str| payload.get(name).and_then(Value::as_str);
            if event.kind == "run.decided" && text("decided_by").is_some() && text("decided_by") == text("owner") {
                return None;
            }
            Some(MailEvent {
                event,
                owner_id,
                run_id: text("run_id").unwrap_or_default().to_string(),
                reviewers: matches!(event.kind.as_str(), "run.waiting" | "run.reminder"),
            })
        })
        .collect()
}

/// Values per event in [`mail_fan_out_sql`].
const MAIL_EVENT_ARGS: usize = 6;

/// One INSERT for the mails of `count` events (each bound as its fields in order): to the run's
/// owner, and for a card of an owner whose changes wait for a second person (four-eyes, as
/// `store::waiting` counts them) that still waits, to every reviewer; only users who want mail
/// and gave an address. One row per event and user.
pub(super) fn mail_fan_out_sql(count: usize, at: i64) -> String {
    let values: Vec<String> = (0..count)
        .map(|n| {
            let p = n * MAIL_EVENT_ARGS;
            format!("(${}, ${}, ${}, ${}, ${}, ${})", p + 1, p + 2, p + 3, p + 4, p + 5, p + 6)
        })
        .collect();
    format!(
        "WITH e (event_id, kind, payload, owner_id, run_id, reviewers) AS (VALUES {})
         INSERT INTO mail_deliveries (event_id, user_id, kind, payload, state, attempts, next_attempt_at, created_at)
         SELECT e.event_id, u.id, e.kind, e.payload, 'pending', 0, {at}, {at}
         FROM e JOIN users u ON u.email_notify = TRUE AND u.email IS NOT NULL
         WHERE u.id = e.owner_id
            OR (e.reviewers AND u.id <> e.owner_id AND (u.role = 'admin' OR u.may_approve_own = TRUE)
                AND EXISTS (SELECT 1 FROM runs r JOIN users o ON o.id = r.owner_user_id
                            WHERE r.id = e.run_id AND r.owner_user_id = e.owner_id
                              AND r.status = 'waiting_for_approval' AND r.process = FALSE
                              AND o.role <> 'admin' AND o.may_approve_own = FALSE))
         ON CONFLICT DO NOTHING",
        values.join(", ")
    )
}

/// Events per INSERT: SQLite takes at most 32766 values in a statement.
pub(super) const MAIL_CHUNK: usize = 100;

impl Store {
    pub async fn mail_settings(&self, user_id: i64) -> Result<MailSettings, StoreError> {
        let row: Option<(Option<String>, bool)> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT email, email_notify FROM users WHERE id = $1"
        )
        .bind(user_id)
        .fetch_optional(pool)
        .await)?;
        Ok(row.map(|(address, notify)| MailSettings { address, notify }).unwrap_or_default())
    }

    /// Stores a checked address (or none) and the opt-in.
    pub async fn set_mail_settings(&self, user_id: i64, settings: &MailSettings) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query("UPDATE users SET email = $1, email_notify = $2 WHERE id = $3")
            .bind(settings.address.as_deref())
            .bind(settings.notify)
            .bind(user_id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// Leases up to `limit` due mails to `worker`, as [`Store::claim_deliveries`] does.
    pub async fn claim_mails(
        &self,
        worker: &str,
        lease_until: i64,
        limit: i64,
    ) -> Result<Vec<ClaimedMail>, StoreError> {
        let at = now();
        let sql = claim_sql(
            "mail_deliveries",
            self.db.backend(),
            "id, event_id, user_id, kind, payload, attempts, created_at",
        );
        type Row = (i64, String, i64, String, String, i64, i64);
        let claimed: Vec<Row> = on!(&self.db, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(lease_until)
            .bind(worker)
            .bind(at)
            .bind(at)
            .bind(limit)
            .fetch_all(pool)
            .await)?;
        // The recipients' addresses in one read, not one per mail.
        let mut ids: Vec<i64> = claimed.iter().map(|row| row.2).collect();
        ids.sort_unstable();
        ids.dedup();
        let recipients: HashMap<i64, (Option<String>, bool, Option<String>)> = if ids.is_empty() {
            HashMap::new()
        } else {
            let places = (1..=ids.len()).map(|n| format!("${n}")).collect::<Vec<_>>().join(", ");
            let sql = format!("SELECT id, email, email_notify, language FROM users WHERE id IN ({places})");
            type Recipient = (i64, Option<String>, bool, Option<String>);
            let rows: Vec<Recipient> = on_read!(&self.db, pool => {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()));
                for id in &ids {
                    query = query.bind(*id);
                }
                query.fetch_all(pool).await
            })?;
            rows.into_iter().map(|(id, address, notify, language)| (id, (address, notify, language))).collect()
        };
        let mut mails = Vec::with_capacity(claimed.len());
        for (id, event_id, user_id, kind, payload, attempts, created_at) in claimed {
            let (address, language) = match recipients.get(&user_id).cloned() {
                Some((address, true, language)) => (address, language),
                Some((_, false, language)) => (None, language),
                None => (None, None),
            };
            mails.push(ClaimedMail { id, event_id, user_id, kind, payload, attempts, created_at, address, language });
        }
        Ok(mails)
    }

    /// Records a mail's attempt while `worker` still holds it (see [`Store::record_attempt`]).
    pub async fn record_mail_attempt(
        &self,
        id: i64,
        worker: &str,
        outcome: &AttemptOutcome,
    ) -> Result<bool, StoreError> {
        let at = now();
        // A mail has no HTTP status to keep.
        let (state, _, error, next, delivered_at) = outcome_columns(outcome, at);
        let done = on!(&self.db, pool => sqlx::query(
            "UPDATE mail_deliveries SET state = $1, last_error = $2, next_attempt_at = COALESCE($3, next_attempt_at),
                 delivered_at = $4, lease_until = NULL, leased_by = NULL
             WHERE id = $5 AND leased_by = $6 AND state = 'pending'",
        )
        .bind(state.as_str())
        .bind(error)
        .bind(next)
        .bind(delivered_at)
        .bind(id)
        .bind(worker)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(done == 1)
    }
}
