//! A run's events: appended in one statement, read back in order.

use db::{now, on, on_read};
use uuid::Uuid;

use super::records::small;
use super::{Store, StoreError};
use crate::run::{EventKind, RunEvent};

/// An event to append: its sequence number and time come from the statement that stores it.
#[derive(Debug, Clone)]
pub(crate) struct NewEvent {
    pub kind: EventKind,
    pub round: u32,
    pub payload: serde_json::Value,
}

#[derive(sqlx::FromRow)]
struct EventRow {
    sequence: i64,
    kind: String,
    round: i64,
    payload: String,
    created_at: i64,
}

/// How often an event append retries after another writer took the same sequence number. Each
/// collision means another append went in, so with N writers at once N tries always suffice.
const EVENT_ATTEMPTS: usize = 32;

impl Store {
    /// Appends events of one run in one statement, in the order given. The sequence numbers come
    /// from the statement that inserts. Two writers (two processes, or a database that runs
    /// writers side by side) may pick the same ones; the primary key refuses the second, which
    /// then takes the next numbers. Sequences stay strictly increasing per run.
    pub async fn append_events(&self, id: Uuid, events: &[NewEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let run_id = id.to_string();
        let payloads: Vec<String> = events.iter().map(|event| event.payload.to_string()).collect();
        // `VALUES` names its columns column1, column2, … on both databases.
        let rows: Vec<String> = (0..events.len())
            .map(|index| {
                let first = 3 + index * 3;
                format!("({index}, ${first}, ${}, ${})", first + 1, first + 2)
            })
            .collect();
        let sql = format!(
            "INSERT INTO run_events (run_id, sequence, kind, round, payload, created_at)
             SELECT $1, base.next + v.column1, v.column2, v.column3, v.column4, $2
             FROM (SELECT COALESCE(MAX(sequence) + 1, 0) AS next FROM run_events WHERE run_id = ${}) AS base,
                  (VALUES {}) AS v",
            3 + events.len() * 3,
            rows.join(", ")
        );
        let at = now();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let inserted = on!(&self.db, pool => {
                // Built from placeholders and row indexes only; every value is bound.
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.as_str())).bind(&run_id).bind(at);
                for (event, payload) in events.iter().zip(&payloads) {
                    query = query.bind(event.kind.as_str()).bind(i64::from(event.round)).bind(payload);
                }
                query.bind(&run_id).execute(pool).await.map(|done| done.rows_affected())
            });
            match inserted {
                Ok(_) => return Ok(()),
                Err(sqlx::Error::Database(error)) if error.is_unique_violation() && attempt < EVENT_ATTEMPTS => {}
                Err(error) => return Err(error.into()),
            }
        }
    }

    pub async fn events(&self, id: Uuid, after_sequence: i64) -> Result<Vec<RunEvent>, StoreError> {
        let rows: Vec<EventRow> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT sequence, kind, round, payload, created_at FROM run_events
             WHERE run_id = $1 AND sequence > $2 ORDER BY sequence",
        )
        .bind(id.to_string())
        .bind(after_sequence)
        .fetch_all(pool)
        .await)?;
        rows.into_iter()
            .map(|row| {
                let kind = EventKind::parse(&row.kind)
                    .ok_or_else(|| StoreError::Corrupt(format!("event kind {:?}", row.kind)))?;
                let payload = serde_json::from_str(&row.payload)
                    .map_err(|_| StoreError::Corrupt(format!("event payload of sequence {}", row.sequence)))?;
                Ok(RunEvent {
                    sequence: row.sequence,
                    kind,
                    round: small(row.round),
                    payload,
                    created_at: row.created_at,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use db::Db;

    use super::*;
    use crate::store::{migrations, NewRun};

    /// On the database the tests run on: a SQLite file, or PostgreSQL when
    /// `TOURGUIDE_TEST_POSTGRES` names a server (there the appends really collide).
    async fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let db = match db::scratch_postgres().await.unwrap() {
            Some(url) => Db::open_postgres(&url).await.unwrap(),
            None => Db::open_sqlite(&dir.path().join("events.sqlite")).await.unwrap(),
        };
        db.migrate(&migrations()).await.unwrap();
        (dir, Store::new(db))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn events_of_many_writers_at_once_get_distinct_increasing_sequences() {
        let (_dir, store) = store().await;
        let id = Uuid::new_v4();
        let run = NewRun {
            id,
            owner_user_id: 1,
            owner_admin: false,
            configuration: "default",
            process: false,
            allowed_tools: None,
            max_rounds: 5,
            checkpoint: "[]".into(),
            outside_content: false,
        };
        store.insert_queued(run).await.unwrap();
        // Each writer appends one, two or three events in one statement.
        let parts = |n: u32| n % 3 + 1;
        let writers: Vec<_> = (0..40)
            .map(|n| {
                let store = store.clone();
                let events: Vec<NewEvent> = (0..parts(n))
                    .map(|part| NewEvent {
                        kind: EventKind::Tool,
                        round: n,
                        payload: serde_json::json!({ "writer": n, "part": part }),
                    })
                    .collect();
                tokio::spawn(async move { store.append_events(id, &events).await })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap().unwrap();
        }
        let events = store.events(id, -1).await.unwrap();
        let total: u32 = (0..40).map(parts).sum();
        let sequences: Vec<i64> = events.iter().map(|event| event.sequence).collect();
        assert_eq!(sequences, (0..i64::from(total)).collect::<Vec<i64>>());
        // A writer's events stand together and in its order.
        let mut seen = Vec::new();
        for run in events.chunk_by(|a, b| a.payload["writer"] == b.payload["writer"]) {
            let writer = run[0].payload["writer"].as_u64().unwrap() as u32;
            let order: Vec<u64> = run.iter().map(|event| event.payload["part"].as_u64().unwrap()).collect();
            assert_eq!(order, (0..u64::from(parts(writer))).collect::<Vec<u64>>(), "writer {writer}");
            seen.push(writer);
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..40).collect::<Vec<u32>>(), "every append landed once, whole");
    }
}
