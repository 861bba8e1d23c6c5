//! The webhook outbox (`webhook_outbox`, made by the audit log's migration): the events the state
//! changes write, read here oldest first; the fan-out (`store::webhooks`) deletes them.

use db::Backend;

use super::audit;

/// An outbox row: one event, not yet fanned out to the webhooks.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OutboxEvent {
    pub id: i64,
    pub event_id: String,
    pub kind: String,
    pub payload: String,
    pub created_at: i64,
}

/// The outbox's oldest events with their JSON: an event about an audit row gets it made from that
/// row now (`audit::payload_sql`), so the write that recorded it did not. On PostgreSQL the events
/// are locked (`SKIP LOCKED`), so two workers never take one.
pub fn outbox_select(backend: Backend) -> String {
    let lock = match backend {
        Backend::Sqlite => "",
        Backend::Postgres => " FOR UPDATE OF o SKIP LOCKED",
    };
    format!(
        "SELECT o.id, o.event_id, o.kind, COALESCE(o.payload, {}) AS payload, o.created_at
         FROM webhook_outbox o LEFT JOIN audit_log a ON a.id = o.audit_id
         ORDER BY o.id LIMIT $1{lock}",
        audit::payload_sql(backend, "o.kind")
    )
}
