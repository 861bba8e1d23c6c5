//! What the two delivery queues, `webhook_deliveries` and `mail_deliveries`, share: which rows are
//! due, how a lease is taken and let go, and how an attempt's outcome is recorded.

use db::{on, Backend};

use super::{Store, StoreError};

/// What `webhook_deliveries` and `mail_deliveries` share: due rows, leases, attempts. One text
/// for both, so the two queues cannot come to differ in how a lease is taken or run out.
pub(super) fn due_sql(table: &str) -> String {
    format!(
        "SELECT id FROM {table} WHERE state = 'pending' AND next_attempt_at <= $1
         AND (lease_until IS NULL OR lease_until < $2) LIMIT 1"
    )
}

/// Leases up to `$5` due rows of `table` to `$2` until `$1`, counting the attempt; `$3`, `$4`: now.
pub(super) fn claim_sql(table: &str, backend: Backend, returning: &str) -> String {
    let lock = match backend {
        Backend::Sqlite => "",
        Backend::Postgres => "FOR UPDATE SKIP LOCKED",
    };
    format!(
        "UPDATE {table} SET lease_until = $1, leased_by = $2, attempts = attempts + 1
         WHERE id IN (SELECT id FROM {table}
                      WHERE state = 'pending' AND next_attempt_at <= $3 AND (lease_until IS NULL OR lease_until < $4)
                      ORDER BY next_attempt_at, id LIMIT $5 {lock})
         RETURNING {returning}"
    )
}

/// An attempt's outcome as the columns record it: state, HTTP status, error, next attempt, when
/// delivered.
pub(super) fn outcome_columns(
    outcome: &AttemptOutcome,
    at: i64,
) -> (DeliveryState, Option<i64>, Option<&str>, Option<i64>, Option<i64>) {
    match outcome {
        AttemptOutcome::Delivered { status } => {
            (DeliveryState::Delivered, Some(i64::from(*status)), None, None, Some(at))
        }
        AttemptOutcome::Retry { status, error, next_attempt_at } => {
            (DeliveryState::Pending, status.map(i64::from), Some(error.as_str()), Some(*next_attempt_at), None)
        }
        AttemptOutcome::Failed { status, error } => {
            (DeliveryState::Failed, status.map(i64::from), Some(error.as_str()), None, None)
        }
    }
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryState {
    Pending,
    Delivered,
    Failed,
}

impl DeliveryState {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
        }
    }

    pub(super) fn parse(value: &str) -> Result<Self, StoreError> {
        match value {
            "pending" => Ok(DeliveryState::Pending),
            "delivered" => Ok(DeliveryState::Delivered),
            "failed" => Ok(DeliveryState::Failed),
            other => Err(StoreError::Corrupt(format!("delivery state {other:?}"))),
        }
    }
}

/// What became of one attempt.
#[derive(Debug, Clone)]
pub enum AttemptOutcome {
    Delivered {
        status: u16,
    },
    /// Tried again at `next_attempt_at`.
    Retry {
        status: Option<u16>,
        error: String,
        next_attempt_at: i64,
    },
    /// Given up: tried for as long as a delivery is tried.
    Failed {
        status: Option<u16>,
        error: String,
    },
}

impl Store {
    /// Lets go of every lease: on SQLite at start, when the one worker of the file knows the
    /// worker that held them is gone.
    pub async fn release_delivery_leases(&self) -> Result<u64, StoreError> {
        let mut released = 0;
        for sql in [
            "UPDATE webhook_deliveries SET lease_until = NULL, leased_by = NULL WHERE lease_until IS NOT NULL",
            "UPDATE mail_deliveries SET lease_until = NULL, leased_by = NULL WHERE lease_until IS NOT NULL",
        ] {
            released += on!(&self.db, pool => sqlx::query(sql).execute(pool).await.map(|done| done.rows_affected()))?;
        }
        Ok(released)
    }
}
