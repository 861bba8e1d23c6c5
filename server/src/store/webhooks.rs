//! Webhooks: where events go (`webhooks`), the fan-out of the outbox's events (`store::outbox`) to
//! each webhook's delivery (`webhook_deliveries`; leased and retried as `store::deliveries` says)
//! and, in the same transaction, to their mails (`store::mail`), and which runs were reminded of
//! once (`reminded_runs`).

use db::{now, on, on_read, Backend};

use super::deliveries::{claim_sql, due_sql, outcome_columns, AttemptOutcome, DeliveryState};
use super::mail;
use super::outbox::{outbox_select, OutboxEvent};
use super::{Store, StoreError};

/// The kinds of event a webhook may be sent, as the outbox and the body name them.
pub const EVENT_KINDS: [&str; 5] = ["run.waiting", "run.decided", "run.expired", "run.failed", "run.reminder"];

/// A configured webhook.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Webhook {
    pub id: i64,
    pub url: String,
    /// Comma-separated kinds (see [`Webhook::wants`]).
    pub events: String,
    pub secret: String,
    pub created_at: i64,
    pub active: bool,
}

impl Webhook {
    pub fn wants(&self, kind: &str) -> bool {
        self.active && self.kinds().any(|wanted| wanted == kind)
    }

    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.events.split(',').map(str::trim).filter(|kind| !kind.is_empty())
    }
}

/// A delivery this worker holds under its lease, with where it goes.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    pub id: i64,
    pub event_id: String,
    pub body: String,
    /// Counting this one.
    pub attempts: i64,
    pub created_at: i64,
    pub url: String,
    pub secret: String,
}

/// A delivery as the admin's list shows it.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: i64,
    pub event_id: String,
    pub webhook_id: i64,
    pub url: String,
    pub kind: String,
    pub state: DeliveryState,
    pub attempts: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
    pub resent_from: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct DeliveryRow {
    id: i64,
    event_id: String,
    webhook_id: i64,
    url: String,
    kind: String,
    state: String,
    attempts: i64,
    last_status: Option<i64>,
    last_error: Option<String>,
    created_at: i64,
    delivered_at: Option<i64>,
    resent_from: Option<i64>,
}

impl TryFrom<DeliveryRow> for Delivery {
    type Error = StoreError;

    fn try_from(row: DeliveryRow) -> Result<Self, StoreError> {
        Ok(Delivery {
            state: DeliveryState::parse(&row.state)?,
            id: row.id,
            event_id: row.event_id,
            webhook_id: row.webhook_id,
            url: row.url,
            kind: row.kind,
            attempts: row.attempts,
            last_status: row.last_status,
            last_error: row.last_error,
            created_at: row.created_at,
            delivered_at: row.delivered_at,
            resent_from: row.resent_from,
        })
    }
}

/// Deliveries written by one INSERT (four values each).
const INSERT_CHUNK: usize = 100;

/// What the delivery worker has to do now ([`Store::work_due`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkDue {
    pub outbox: bool,
    pub deliveries: bool,
    pub mails: bool,
    /// A webhook is active: without one (and without mail) the outbox's events are only dropped
    /// ([`Store::drop_outbox`]).
    pub webhooks: bool,
}

/// What one fan-out did: the events it took from the outbox, and whether it queued deliveries and
/// mails (due at once).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FannedOut {
    pub events: usize,
    pub deliveries: bool,
    pub mails: bool,
}

impl Store {
    pub async fn add_webhook(&self, url: &str, events: &[&str], secret: &str) -> Result<i64, StoreError> {
        Ok(on!(&self.db, pool => sqlx::query_scalar(
            "INSERT INTO webhooks (url, events, secret, created_at, active) VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(url)
        .bind(events.join(","))
        .bind(secret)
        .bind(now())
        .bind(true)
        .fetch_one(pool)
        .await)?)
    }

    pub async fn webhooks(&self) -> Result<Vec<Webhook>, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_as(
            "SELECT id, url, events, secret, created_at, active FROM webhooks ORDER BY id"
        )
        .fetch_all(pool)
        .await)?)
    }

    /// Removes the webhook and its deliveries (pending ones are not sent); false when there is
    /// none of that id.
    pub async fn remove_webhook(&self, id: i64) -> Result<bool, StoreError> {
        let removed = on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            sqlx::query("DELETE FROM webhook_deliveries WHERE webhook_id = $1").bind(id).execute(&mut *tx).await?;
            let removed = sqlx::query("DELETE FROM webhooks WHERE id = $1").bind(id).execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            Ok::<u64, sqlx::Error>(removed)
        }
        .await)?;
        Ok(removed == 1)
    }

    /// Fans up to `limit` outbox events out: in one transaction, one pending delivery per active
    /// webhook that wants the event's kind (its body made by `body_of`), and the event's row
    /// deleted. An event no webhook wants is deleted too. On PostgreSQL the rows are taken with
    /// `SKIP LOCKED`, so two workers never fan one event out twice; a transaction that fails
    /// leaves the rows for the next look. Returns how many events were taken.
    pub async fn fan_out(&self, limit: i64, body_of: impl Fn(&OutboxEvent) -> String) -> Result<usize, StoreError> {
        Ok(self.fan_out_with_mail(limit, body_of, false).await?.events)
    }

    /// [`Store::fan_out`], and with `mail` (SMTP is configured) in the same transaction the
    /// event's mails to the users who want them (`store::mail`).
    pub async fn fan_out_with_mail(
        &self,
        limit: i64,
        body_of: impl Fn(&OutboxEvent) -> String,
        mail: bool,
    ) -> Result<FannedOut, StoreError> {
        let select = outbox_select(self.db.backend());
        let at = now();
        on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            let events: Vec<OutboxEvent> =
                sqlx::query_as(sqlx::AssertSqlSafe(select.clone())).bind(limit).fetch_all(&mut *tx).await?;
            if events.is_empty() {
                tx.rollback().await?;
                return Ok::<FannedOut, sqlx::Error>(FannedOut::default());
            }
            let webhooks: Vec<Webhook> =
                sqlx::query_as("SELECT id, url, events, secret, created_at, active FROM webhooks WHERE active = $1")
                    .bind(true)
                    .fetch_all(&mut *tx)
                    .await?;
            // (event, webhook, body): a statement per chunk, not per row, since on SQLite each
            // statement is a round trip to the writer's thread while every other writer waits.
            let mut rows: Vec<(&OutboxEvent, i64, std::sync::Arc<String>)> = Vec::new();
            for event in &events {
                let subscribed: Vec<i64> =
                    webhooks.iter().filter(|webhook| webhook.wants(&event.kind)).map(|webhook| webhook.id).collect();
                if !subscribed.is_empty() {
                    let body = std::sync::Arc::new(body_of(event));
                    rows.extend(subscribed.into_iter().map(|webhook| (event, webhook, body.clone())));
                }
            }
            for chunk in rows.chunks(INSERT_CHUNK) {
                let values: Vec<String> = (0..chunk.len())
                    .map(|n| {
                        let p = n * 4;
                        format!("(${}, ${}, ${}, ${}, 'pending', 0, {at}, {at})", p + 1, p + 2, p + 3, p + 4)
                    })
                    .collect();
                let sql = format!(
                    "INSERT INTO webhook_deliveries (event_id, webhook_id, kind, body, state, attempts, next_attempt_at, created_at)
                     VALUES {} ON CONFLICT DO NOTHING",
                    values.join(", ")
                );
                let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql));
                for (event, webhook, body) in chunk {
                    insert = insert.bind(&event.event_id).bind(*webhook).bind(&event.kind).bind(body.as_str());
                }
                insert.execute(&mut *tx).await?;
            }
            let mails = if mail { mail::mail_events(&events) } else { Vec::new() };
            for chunk in mails.chunks(mail::MAIL_CHUNK) {
                let mut insert = sqlx::query(sqlx::AssertSqlSafe(mail::mail_fan_out_sql(chunk.len(), at)));
                for event in chunk {
                    insert = insert
                        .bind(&event.event.event_id)
                        .bind(&event.event.kind)
                        .bind(&event.event.payload)
                        .bind(event.owner_id)
                        .bind(&event.run_id)
                        .bind(event.reviewers);
                }
                insert.execute(&mut *tx).await?;
            }
            let places: Vec<String> = (1..=events.len()).map(|n| format!("${n}")).collect();
            let mut delete =
                sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM webhook_outbox WHERE id IN ({})", places.join(", "))));
            for event in &events {
                delete = delete.bind(event.id);
            }
            delete.execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(FannedOut { events: events.len(), deliveries: !rows.is_empty(), mails: !mails.is_empty() })
        }
        .await)
        .map_err(StoreError::from)
    }

    /// Whether the outbox holds an event and whether a delivery or a mail is due, in one read (an
    /// idle worker does not take the writer, and looks once, not once per queue).
    pub async fn work_due(&self) -> Result<WorkDue, StoreError> {
        let at = now();
        let sql = format!(
            "SELECT EXISTS (SELECT 1 FROM webhook_outbox), EXISTS ({}), EXISTS ({}),
                    EXISTS (SELECT 1 FROM webhooks WHERE active = $3)",
            due_sql("webhook_deliveries"),
            due_sql("mail_deliveries")
        );
        let (outbox, deliveries, mails, webhooks): (bool, bool, bool, bool) = on_read!(&self.db, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(at).bind(at).bind(true).fetch_one(pool).await)?;
        Ok(WorkDue { outbox, deliveries, mails, webhooks })
    }

    /// Deletes up to `limit` outbox events while no webhook is active, and returns how many: with
    /// nobody to send them to and no mail to write, what [`Store::fan_out`] does with them, in one
    /// statement instead of its transaction (five round trips on PostgreSQL, for each look the
    /// worker takes after a run). A webhook made meanwhile keeps them for the fan-out.
    pub async fn drop_outbox(&self, limit: i64) -> Result<usize, StoreError> {
        let lock = match self.db.backend() {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        };
        let sql = format!(
            "DELETE FROM webhook_outbox
             WHERE id IN (SELECT id FROM webhook_outbox ORDER BY id LIMIT $1{lock})
               AND NOT EXISTS (SELECT 1 FROM webhooks WHERE active = $2)"
        );
        let dropped = on!(&self.db, pool => sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(limit)
            .bind(true)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(usize::try_from(dropped).unwrap_or(usize::MAX))
    }

    /// Leases up to `limit` due deliveries to `worker` until `lease_until`, counting the attempt
    /// now: a worker that dies mid-send has used one. A delivery whose lease ran out (its worker
    /// died) is due again. On PostgreSQL `SKIP LOCKED` passes over rows another worker is taking.
    pub async fn claim_deliveries(
        &self,
        worker: &str,
        lease_until: i64,
        limit: i64,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        let at = now();
        let sql =
            claim_sql("webhook_deliveries", self.db.backend(), "id, event_id, webhook_id, body, attempts, created_at");
        let claimed: Vec<(i64, String, i64, String, i64, i64)> = on!(&self.db, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(lease_until)
            .bind(worker)
            .bind(at)
            .bind(at)
            .bind(limit)
            .fetch_all(pool)
            .await)?;
        if claimed.is_empty() {
            return Ok(Vec::new());
        }
        let webhooks = self.webhooks().await?;
        Ok(claimed
            .into_iter()
            .filter_map(|(id, event_id, webhook_id, body, attempts, created_at)| {
                // Removed since: its deliveries went with it.
                let webhook = webhooks.iter().find(|webhook| webhook.id == webhook_id)?;
                Some(ClaimedDelivery {
                    id,
                    event_id,
                    body,
                    attempts,
                    created_at,
                    url: webhook.url.clone(),
                    secret: webhook.secret.clone(),
                })
            })
            .collect())
    }

    /// Records an attempt's outcome, while `worker` still holds the delivery (after its lease
    /// ran out another worker may have taken it; that one's outcome counts).
    pub async fn record_attempt(&self, id: i64, worker: &str, outcome: &AttemptOutcome) -> Result<bool, StoreError> {
        let at = now();
        let (state, status, error, next, delivered_at) = outcome_columns(outcome, at);
        let done = on!(&self.db, pool => sqlx::query(
            "UPDATE webhook_deliveries SET state = $1, last_status = $2, last_error = $3,
                 next_attempt_at = COALESCE($4, next_attempt_at), delivered_at = $5, lease_until = NULL, leased_by = NULL
             WHERE id = $6 AND leased_by = $7 AND state = 'pending'",
        )
        .bind(state.as_str())
        .bind(status)
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

    /// The newest deliveries, newest first.
    pub async fn recent_deliveries(&self, limit: i64) -> Result<Vec<Delivery>, StoreError> {
        let rows: Vec<DeliveryRow> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT d.id, d.event_id, d.webhook_id, w.url, d.kind, d.state, d.attempts, d.last_status, d.last_error,
                    d.created_at, d.delivered_at, d.resent_from
             FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
             ORDER BY d.id DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(pool)
        .await)?;
        rows.into_iter().map(Delivery::try_from).collect()
    }

    /// A new delivery of the same body under the same event id to the same webhook, due now;
    /// `None` when there is no delivery of that id.
    pub async fn resend_delivery(&self, id: i64) -> Result<Option<i64>, StoreError> {
        let at = now();
        Ok(on!(&self.db, pool => sqlx::query_scalar(
            "INSERT INTO webhook_deliveries (event_id, webhook_id, kind, body, state, attempts, next_attempt_at, created_at, resent_from)
             SELECT event_id, webhook_id, kind, body, 'pending', 0, $1, $2, id FROM webhook_deliveries WHERE id = $3
             RETURNING id",
        )
        .bind(at)
        .bind(at)
        .bind(id)
        .fetch_optional(pool)
        .await)?)
    }

    /// Runs of `candidates` that were not reminded of yet.
    pub async fn not_reminded(&self, candidates: &[String]) -> Result<Vec<String>, StoreError> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let places: Vec<String> = (1..=candidates.len()).map(|n| format!("${n}")).collect();
        let sql = format!("SELECT run_id FROM reminded_runs WHERE run_id IN ({})", places.join(", "));
        let reminded: Vec<String> = on_read!(&self.db, pool => {
            let mut query = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone()));
            for run in candidates {
                query = query.bind(run);
            }
            query.fetch_all(pool).await
        })?;
        Ok(candidates.iter().filter(|run| !reminded.contains(run)).cloned().collect())
    }

    /// Records that the run was reminded of and puts the reminder in the outbox, in one
    /// transaction; false (and no event) when it was reminded of already.
    pub async fn remind_once(&self, run_id: &str, event_id: &str, payload: &str) -> Result<bool, StoreError> {
        let at = now();
        let reminded = on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            let first = sqlx::query("INSERT INTO reminded_runs (run_id, reminded_at) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                .bind(run_id)
                .bind(at)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if !first {
                tx.rollback().await?;
                return Ok::<bool, sqlx::Error>(false);
            }
            sqlx::query("INSERT INTO webhook_outbox (event_id, kind, payload, created_at) VALUES ($1, 'run.reminder', $2, $3)")
                .bind(event_id)
                .bind(payload)
                .bind(at)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(true)
        }
        .await)?;
        Ok(reminded)
    }
}
