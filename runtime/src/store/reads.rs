//! Reads of runs: one run, the waiting ones, and counts. None of them changes a row.

use db::on_read;
use uuid::Uuid;

use super::records::{RunRecord, RunRow};
use super::{Store, StoreError};
use crate::run::RunStatus;

#[derive(sqlx::FromRow)]
struct RunWithConfiguration {
    #[sqlx(flatten)]
    run: RunRow,
    configuration_active: Option<bool>,
}

impl Store {
    pub async fn get(&self, id: Uuid) -> Result<Option<RunRecord>, StoreError> {
        self.one(concat!("SELECT ", run_columns!(), " FROM runs WHERE id = $1"), id).await
    }

    /// [`Store::get`] without the transcript (`checkpoint` is `None`), for a view of the run.
    pub async fn get_view(&self, id: Uuid) -> Result<Option<RunRecord>, StoreError> {
        self.one(concat!("SELECT ", run_view_columns!(), " FROM runs WHERE id = $1"), id).await
    }

    async fn one(&self, sql: &'static str, id: Uuid) -> Result<Option<RunRecord>, StoreError> {
        let row: Option<RunRow> =
            on_read!(&self.db, pool => sqlx::query_as(sql).bind(id.to_string()).fetch_optional(pool).await)?;
        row.map(RunRecord::try_from).transpose()
    }

    /// [`Store::get`] with whether the run's configuration is active, in one read: every decision
    /// needs both before it claims.
    pub async fn get_with_configuration(&self, id: Uuid) -> Result<Option<(RunRecord, bool)>, StoreError> {
        let row: Option<RunWithConfiguration> = on_read!(&self.db, pool => sqlx::query_as(
            concat!(
                "SELECT ",
                run_columns!(),
                ", (SELECT active FROM run_configurations WHERE name = runs.configuration) AS configuration_active
                 FROM runs WHERE id = $1"
            ),
        )
        .bind(id.to_string())
        .fetch_optional(pool)
        .await)?;
        row.map(|row| Ok((RunRecord::try_from(row.run)?, row.configuration_active.unwrap_or(true)))).transpose()
    }

    /// Every run that waits for an answer, without its transcript: the worker looks through them
    /// every second for questions whose tool stopped waiting, and a busy server has many.
    pub async fn waiting_for_input(&self) -> Result<Vec<RunRecord>, StoreError> {
        let rows: Vec<RunRow> = on_read!(&self.db, pool => sqlx::query_as(
            concat!("SELECT ", run_view_columns!(), " FROM runs WHERE status = 'waiting_for_input'"),
        )
        .fetch_all(pool)
        .await)?;
        rows.into_iter().map(RunRecord::try_from).collect()
    }

    /// An owner's runs that wait for an approval or an answer, the longest waiting first, without
    /// their transcripts.
    pub async fn waiting_of(&self, owner_user_id: i64, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        let rows: Vec<RunRow> = on_read!(&self.db, pool => sqlx::query_as(
            concat!("SELECT ", run_view_columns!(), " FROM runs WHERE owner_user_id = $1 AND status IN ('waiting_for_approval', 'waiting_for_input')
             ORDER BY updated_at, id LIMIT $2"),
        )
        .bind(owner_user_id)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await)?;
        rows.into_iter().map(RunRecord::try_from).collect()
    }

    /// Runs of other owners than this one that wait for an approval, not process runs, without
    /// their transcripts.
    pub async fn approvals_not_of(&self, owner_user_id: i64, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        let rows: Vec<RunRow> = on_read!(&self.db, pool => sqlx::query_as(
            concat!("SELECT ", run_view_columns!(), " FROM runs WHERE owner_user_id <> $1 AND status = 'waiting_for_approval' AND process = $2
             ORDER BY updated_at, id LIMIT $3"),
        )
        .bind(owner_user_id)
        .bind(false)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await)?;
        rows.into_iter().map(RunRecord::try_from).collect()
    }

    /// Runs that have waited since before `cutoff`, with their owners.
    pub async fn waiting_since_before(&self, cutoff: i64, limit: u32) -> Result<Vec<(Uuid, i64)>, StoreError> {
        let rows: Vec<(String, i64)> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT id, owner_user_id FROM runs
             WHERE status IN ('waiting_for_approval', 'waiting_for_input') AND updated_at < $1
             ORDER BY updated_at, id LIMIT $2",
        )
        .bind(cutoff)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await)?;
        rows.into_iter()
            .map(|(id, owner)| {
                Uuid::parse_str(&id).map(|id| (id, owner)).map_err(|_| StoreError::Corrupt(format!("run id {id:?}")))
            })
            .collect()
    }

    /// Runs waiting since before `cutoff` (Unix seconds), the most recent first, with their
    /// owners and since when they wait: the reminder's candidates (the oldest were reminded of
    /// before).
    pub async fn waiting_since_newest(&self, cutoff: i64, limit: u32) -> Result<Vec<(Uuid, i64, i64)>, StoreError> {
        let rows: Vec<(String, i64, i64)> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT id, owner_user_id, updated_at FROM runs
             WHERE status IN ('waiting_for_approval', 'waiting_for_input') AND updated_at < $1
             ORDER BY updated_at DESC, id LIMIT $2",
        )
        .bind(cutoff)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await)?;
        rows.into_iter()
            .map(|(id, owner, since)| {
                Uuid::parse_str(&id)
                    .map(|id| (id, owner, since))
                    .map_err(|_| StoreError::Corrupt(format!("run id {id:?}")))
            })
            .collect()
    }

    /// How many runs are in each status; statuses this build does not know are left out.
    pub async fn count_by_status(&self) -> Result<Vec<(RunStatus, i64)>, StoreError> {
        let rows: Vec<(String, i64)> = on_read!(&self.db, pool => sqlx::query_as("SELECT status, COUNT(*) FROM runs GROUP BY status").fetch_all(pool).await)?;
        Ok(rows
            .into_iter()
            .filter_map(|(status, count)| RunStatus::parse(&status).map(|status| (status, count)))
            .collect())
    }

    /// Whether any of these runs held outside content. Asked in chunks: a conversation may have
    /// many runs, and a statement only so many parameters.
    pub async fn any_outside_content(&self, ids: &[Uuid]) -> Result<bool, StoreError> {
        for chunk in ids.chunks(200) {
            // Only numbered placeholders go into the text; the ids are bound.
            let placeholders: Vec<String> = (1..=chunk.len()).map(|n| format!("${n}")).collect();
            let sql =
                format!("SELECT COUNT(*) FROM runs WHERE outside_content AND id IN ({})", placeholders.join(", "));
            let found: i64 = on_read!(&self.db, pool => {
                let mut query = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.as_str()));
                for id in chunk {
                    query = query.bind(id.to_string());
                }
                query.fetch_one(pool).await
            })?;
            if found > 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    pub async fn status(&self, id: Uuid) -> Result<Option<RunStatus>, StoreError> {
        let status: Option<String> = on_read!(&self.db, pool => sqlx::query_scalar("SELECT status FROM runs WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(pool)
            .await)?;
        status.map(|s| RunStatus::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("run status {s:?}")))).transpose()
    }
}

#[cfg(test)]
mod tests {
    use db::Db;

    use super::*;
    use crate::store::{migrations, NewRun};

    #[tokio::test]
    async fn a_view_of_a_run_leaves_its_transcript_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let db = match db::scratch_postgres().await.unwrap() {
            Some(url) => Db::open_postgres(&url).await.unwrap(),
            None => Db::open_sqlite(&dir.path().join("reads.sqlite")).await.unwrap(),
        };
        db.migrate(&migrations()).await.unwrap();
        let store = Store::new(db);
        let (id, transcript) = (Uuid::new_v4(), format!("[{}]", r#"{"role":"user","content":"a long story"}"#));
        let run = NewRun {
            id,
            owner_user_id: 7,
            owner_admin: false,
            configuration: "default",
            process: false,
            allowed_tools: None,
            max_rounds: 5,
            checkpoint: transcript.clone(),
            outside_content: false,
        };
        store.insert_queued(run).await.unwrap();
        assert_eq!(store.get(id).await.unwrap().unwrap().checkpoint.as_deref(), Some(transcript.as_str()));
        let view = store.get_view(id).await.unwrap().unwrap();
        assert_eq!((view.checkpoint, view.owner_user_id, view.status), (None, 7, RunStatus::Queued));
        assert!(store.get_view(Uuid::new_v4()).await.unwrap().is_none());
    }
}
