//! The SQLite pools (the writer, the readers): sqlx's `SqlitePool`, with two things of ours on top.
//!
//! - A queue for background work ([`in_background`]): the worker's statements wait for a
//!   connection at most one at a time, so a request queues behind at most one of them.
//! - Batches ([`Connections::fetch_batch`]): statements that begin and commit a transaction of
//!   their own in one round trip to the connection's thread. One that fails or is cancelled part
//!   way has left its transaction open, and sqlx's pool would hand the connection out again as it
//!   is; its connection is closed instead, which rolls the transaction back.
//!
//! Our own pool stood here until issue 41: it spared each statement the ping sqlx sends as a
//! connection goes back, and won 1.19x on answers/s, not the 1.5x that would justify keeping a
//! pool of our own (bench/RESULTS.md, "What the own pieces win").
//!
//! The bodies of [`on!`](crate::on) and [`on_read!`](crate::on_read) use it as they use a
//! PostgreSQL pool: `.execute(pool)`, `pool.begin()`, `pool.begin_with("BEGIN IMMEDIATE")`.

use std::sync::Arc;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::sqlite::{Sqlite, SqliteConnectOptions, SqlitePool, SqlitePoolOptions, SqliteRow};
use sqlx::{Execute, Executor, SqlSafeStr, Transaction};

tokio::task_local! {
    static BACKGROUND: ();
}

/// Runs `work` as background work (the worker carrying runs on): while it waits for a SQLite
/// connection, at most one of its kind stands in the queue, so a request that someone waits for
/// queues behind at most one background statement, not behind every run in flight. Background
/// work still gets each connection in turn when no request wants it. PostgreSQL has no such
/// queue: its writers go side by side.
pub async fn in_background<F: std::future::Future>(work: F) -> F::Output {
    BACKGROUND.scope((), work).await
}

fn is_background() -> bool {
    BACKGROUND.try_with(|_| ()).is_ok()
}

/// How long a statement waits for a connection before it fails: a store that asked for the
/// writer while holding it gets an error instead of waiting for ever.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// Up to `size` connections to one SQLite database (sqlx's pool). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Connections {
    pool: SqlitePool,
    /// Held by the one background task that may wait for a connection (see [`in_background`]).
    background: Arc<tokio::sync::Mutex<()>>,
}

/// A connection taken from [`Connections`]; it goes back when this is dropped.
pub type Checkout = PoolConnection<Sqlite>;
/// A transaction on a connection of [`Connections`]; dropped unended, it is rolled back.
pub type Tx = Transaction<'static, Sqlite>;

impl Connections {
    /// A pool of at most `size` connections, configured as well as sqlx's pool allows: no test
    /// before a checkout, connections kept open (a closed in-memory connection would lose its
    /// database). One is opened now, so a database that cannot be opened fails here and not at
    /// the first statement.
    pub async fn open(options: SqliteConnectOptions, size: u32) -> Result<Connections, sqlx::Error> {
        let pool = SqlitePoolOptions::new()
            .max_connections(size.max(1))
            .min_connections(1)
            .test_before_acquire(false)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await?;
        Ok(Connections { pool, background: Arc::new(tokio::sync::Mutex::new(())) })
    }

    /// A connection of this pool, for as long as the checkout lives; waits while all are out.
    pub async fn acquire(&self) -> Result<Checkout, sqlx::Error> {
        if let Some(connection) = self.pool.try_acquire() {
            return Ok(connection);
        }
        let _turn = match is_background() {
            true => Some(self.background.lock().await),
            false => None,
        };
        self.pool.acquire().await
    }

    /// Runs `batch`, statements that begin and commit a transaction of their own, in one round
    /// trip to the connection's thread instead of one per statement, and returns the rows its
    /// statements gave. A batch that fails or is cancelled part-way has left its transaction open,
    /// so its connection is closed, which rolls the transaction back, instead of going back to the
    /// pool.
    pub async fn fetch_batch<'q, E>(&self, batch: E) -> Result<Vec<SqliteRow>, sqlx::Error>
    where
        E: 'q + Execute<'q, Sqlite>,
    {
        struct CloseUnlessDone(Option<Checkout>);
        impl Drop for CloseUnlessDone {
            fn drop(&mut self) {
                if let Some(connection) = &mut self.0 {
                    connection.close_on_drop();
                }
            }
        }
        let mut guard = CloseUnlessDone(Some(self.acquire().await?));
        let connection = guard.0.as_mut().expect("just taken");
        let rows = connection.fetch_all(batch).await?;
        // Done: the connection goes back to the pool.
        drop(guard.0.take());
        Ok(rows)
    }

    /// A transaction on a connection of this pool (`BEGIN`, which SQLite starts deferred).
    pub async fn begin(&self) -> Result<Tx, sqlx::Error> {
        Transaction::begin(self.acquire().await?, None).await
    }

    /// A transaction begun by `statement`, such as `BEGIN IMMEDIATE`.
    pub async fn begin_with(&self, statement: impl SqlSafeStr) -> Result<Tx, sqlx::Error> {
        Transaction::begin(self.acquire().await?, Some(statement.into_sql_str())).await
    }

    /// Refuses further checkouts and waits for the connections to close.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

crate::executor::executor_by_checkout!(Connections, Sqlite);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite_options;
    use std::sync::Mutex;

    async fn pool(dir: &tempfile::TempDir, size: u32) -> Connections {
        let pool = Connections::open(sqlite_options(dir.path().join("t.db")), size).await.unwrap();
        sqlx::query("CREATE TABLE IF NOT EXISTS t (n INTEGER)").execute(&pool).await.unwrap();
        pool
    }

    async fn count(pool: &Connections) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM t").fetch_one(pool).await.unwrap()
    }

    #[tokio::test]
    async fn a_transaction_dropped_unended_is_rolled_back_before_the_connection_serves_again() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(&dir, 1).await;
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
        sqlx::query("INSERT INTO t VALUES (1)").execute(&mut *tx).await.unwrap();
        drop(tx);
        // The one connection comes back with the rollback queued ahead of this statement.
        assert_eq!(count(&pool).await, 0);
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO t VALUES (2)").execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
        let tx = pool.begin().await.unwrap();
        tx.rollback().await.unwrap();
        assert_eq!(count(&pool).await, 1);
    }

    #[tokio::test]
    async fn with_every_connection_out_the_next_statement_waits_for_one_to_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(&dir, 1).await;
        let held = pool.acquire().await.unwrap();
        let waiting = tokio::spawn({
            let pool = pool.clone();
            async move { sqlx::query("INSERT INTO t VALUES (1)").execute(&pool).await.map(|done| done.rows_affected()) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "the statement waits while the only connection is out");
        drop(held);
        assert_eq!(waiting.await.unwrap().unwrap(), 1);
        // One connection served both: the pool opened no second one.
        assert_eq!(pool.pool.size(), 1);
    }

    #[tokio::test]
    async fn a_request_waits_behind_at_most_one_background_statement() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(&dir, 1).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = pool.acquire().await.unwrap();
        let take = |name: &'static str| {
            let (pool, order) = (pool.clone(), order.clone());
            async move {
                let _connection = pool.acquire().await.unwrap();
                order.lock().unwrap().push(name);
            }
        };
        let mut waiting = Vec::new();
        // Three runs of the worker queue first, then a request.
        for name in ["background 1", "background 2", "background 3"] {
            waiting.push(tokio::spawn(in_background(take(name))));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        waiting.push(tokio::spawn(take("request")));
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(held);
        for task in waiting {
            task.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(order[..2], ["background 1", "request"], "{order:?}");
        assert_eq!(order.len(), 4);
    }

    #[tokio::test]
    async fn readers_open_connections_up_to_the_size_and_reuse_them() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(&dir, 3).await;
        let out: Vec<Checkout> =
            vec![pool.acquire().await.unwrap(), pool.acquire().await.unwrap(), pool.acquire().await.unwrap()];
        assert!(pool.pool.try_acquire().is_none(), "a fourth would exceed the size");
        drop(out);
        let rows: Vec<i64> = sqlx::query_scalar("SELECT n FROM t").fetch_all(&pool).await.unwrap();
        assert!(rows.is_empty());
        assert_eq!(pool.pool.size(), 3, "the three were kept, and one of them served the read");
    }

    #[tokio::test]
    async fn a_closed_pool_refuses_statements_and_closes_a_connection_that_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(&dir, 2).await;
        let out = pool.acquire().await.unwrap();
        // Closing waits for the connection that is out.
        let closing = tokio::spawn({
            let pool = pool.clone();
            async move { pool.close().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!closing.is_finished());
        let refused = sqlx::query("SELECT 1").execute(&pool).await;
        assert!(matches!(refused, Err(sqlx::Error::PoolClosed)), "{refused:?}");
        drop(out);
        tokio::time::timeout(Duration::from_secs(5), closing).await.unwrap().unwrap();
        assert_eq!(pool.pool.size(), 0);
    }

    /// Rows of `t` as another connection sees them (committed ones only).
    async fn committed(dir: &tempfile::TempDir) -> Vec<i64> {
        let other = Connections::open(sqlite_options(dir.path().join("t.db")), 1).await.unwrap();
        let rows = sqlx::query_scalar("SELECT n FROM t ORDER BY n").fetch_all(&other).await.unwrap();
        other.close().await;
        rows
    }

    #[tokio::test]
    async fn a_batch_runs_its_statements_in_one_go_and_returns_their_rows() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(&dir, 1).await;
        let rows = pool
            .fetch_batch(
                sqlx::query(
                    "BEGIN; INSERT INTO t VALUES ($1); INSERT INTO t VALUES ($2); SELECT count(*) FROM t; COMMIT;",
                )
                .bind(1)
                .bind(2),
            )
            .await
            .unwrap();
        let counted: Vec<i64> = rows.iter().map(|row| sqlx::Row::get(row, 0)).collect();
        assert_eq!(counted, [2]);
        assert_eq!(committed(&dir).await, [1, 2]);
        // The connection went back, and serves the next statement.
        assert_eq!(count(&pool).await, 2);
        assert_eq!(pool.pool.size(), 1);
    }

    #[tokio::test]
    async fn a_batch_that_fails_part_way_writes_nothing_and_leaves_no_transaction_open() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(&dir, 1).await;
        sqlx::query("CREATE TABLE u (n INTEGER NOT NULL)").execute(&pool).await.unwrap();
        let failed = pool
            .fetch_batch(sqlx::query("BEGIN; INSERT INTO t VALUES (1); INSERT INTO u VALUES (NULL); COMMIT;"))
            .await;
        assert!(failed.is_err(), "{failed:?}");
        sqlx::query("INSERT INTO t VALUES (2)").execute(&pool).await.unwrap();
        assert_eq!(committed(&dir).await, [2], "the failed batch's first row is gone, the next statement committed");
    }

    #[tokio::test]
    async fn a_batch_cancelled_part_way_writes_nothing_and_leaves_no_transaction_open() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(&dir, 1).await;
        // The insert, then a count long enough to be cancelled in.
        let slow = "BEGIN; INSERT INTO t VALUES (1);
                    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c;
                    COMMIT;";
        let cancelled = tokio::time::timeout(Duration::from_millis(30), pool.fetch_batch(sqlx::query(slow))).await;
        assert!(cancelled.is_err(), "the batch was still running when it was cancelled");
        // The next writer waits (busy timeout) until the old connection has closed and rolled back.
        sqlx::query("INSERT INTO t VALUES (2)").execute(&pool).await.unwrap();
        assert_eq!(committed(&dir).await, [2]);
    }
}
