//! The SQLite connections of one pool (the writer, or the readers), handed out for one statement
//! or one transaction at a time.
//!
//! Why not sqlx's `SqlitePool`: as a connection goes back, it spawns a task that pings it
//! (sqlx-core's `return_to_pool`, unconditional). A SQLite connection is a thread of this process
//! and a ping a round trip to it, so every pooled statement woke that thread twice and spawned a
//! task; under the bench's poll load most of the server's time went to such wake-ups. A connection
//! here goes back as it is: the commands a cancelled statement or a dropped transaction left (its
//! rollback) wait in the connection's own queue ahead of the next user's, so there is nothing to
//! flush.
//!
//! The bodies of [`on!`](crate::on) and [`on_read!`](crate::on_read) use it as they use a
//! PostgreSQL pool: `.execute(pool)`, `pool.begin()`, `pool.begin_with("BEGIN IMMEDIATE")`.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use futures_util::TryStreamExt;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteConnection, SqlitePool, SqlitePoolOptions, SqliteQueryResult, SqliteRow,
    SqliteStatement, SqliteTransactionManager, SqliteTypeInfo,
};
use sqlx::{ConnectOptions, Connection, Either, Execute, Executor, SqlSafeStr, SqlStr};
use sqlx_core::ext::async_stream::TryAsyncStream;
use sqlx_core::transaction::TransactionManager;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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

/// How long a statement waits for a connection before it fails, as with sqlx's pool: a store that
/// asked for the writer while holding it gets an error instead of waiting for ever.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// Up to `size` connections to one SQLite database, opened when first needed. Cheap to clone.
#[derive(Clone)]
pub struct Connections(Arc<Shared>);

struct Shared {
    options: SqliteConnectOptions,
    idle: Mutex<Vec<SqliteConnection>>,
    /// One permit per connection that may be out; closed when the pool is.
    permits: Arc<Semaphore>,
    /// Held by the one background task that may wait for a permit (see [`in_background`]).
    background: tokio::sync::Mutex<()>,
    size: u32,
    /// sqlx's own pool in place of ours, for the bench's side-by-side comparison (see
    /// [`Connections::open_sqlx`]); the checkouts, transactions and background queue stay.
    sqlx: Option<SqlitePool>,
}

impl std::fmt::Debug for Connections {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Connections")
            .field("size", &self.0.size)
            .field("available", &self.0.permits.available_permits())
            .finish()
    }
}

impl Connections {
    /// A pool of at most `size` connections; one is opened now, so a database that cannot be
    /// opened fails here and not at the first statement.
    pub async fn open(options: SqliteConnectOptions, size: u32) -> Result<Connections, sqlx::Error> {
        let first = options.connect().await?;
        let size = size.max(1);
        Ok(Connections(Arc::new(Shared {
            options,
            idle: Mutex::new(vec![first]),
            permits: Arc::new(Semaphore::new(size as usize)),
            background: tokio::sync::Mutex::new(()),
            size,
            sqlx: None,
        })))
    }

    /// The same pool on sqlx's `SqlitePool`, configured as well as it allows: the same
    /// connection options (WAL, `synchronous = NORMAL`, statement cache, row buffer), no test
    /// before a checkout, connections kept open. It still pings each connection as it goes back
    /// (sqlx-core's `return_to_pool`, not configurable).
    pub async fn open_sqlx(options: SqliteConnectOptions, size: u32) -> Result<Connections, sqlx::Error> {
        let size = size.max(1);
        let pool = SqlitePoolOptions::new()
            .max_connections(size)
            .test_before_acquire(false)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options.clone())
            .await?;
        Ok(Connections(Arc::new(Shared {
            options,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(0)),
            background: tokio::sync::Mutex::new(()),
            size,
            sqlx: Some(pool),
        })))
    }

    /// A connection of sqlx's pool, with the same queue for background work as ours.
    async fn acquire_sqlx(&self, pool: &SqlitePool) -> Result<Checkout, sqlx::Error> {
        let pooled = match pool.try_acquire() {
            Some(pooled) => pooled,
            None => {
                let _turn = match is_background() {
                    true => Some(self.0.background.lock().await),
                    false => None,
                };
                pool.acquire().await?
            }
        };
        Ok(Checkout { connection: None, pooled: Some(pooled), shared: self.0.clone(), discard: false, _permit: None })
    }

    /// A connection of this pool, for as long as the checkout lives; waits while all are out.
    pub async fn acquire(&self) -> Result<Checkout, sqlx::Error> {
        if let Some(pool) = &self.0.sqlx {
            return self.acquire_sqlx(pool).await;
        }
        let permit = match self.0.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            // A timer only when there is something to wait for.
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                let wait = async {
                    let _turn = match is_background() {
                        true => Some(self.0.background.lock().await),
                        false => None,
                    };
                    self.0.permits.clone().acquire_owned().await
                };
                tokio::time::timeout(ACQUIRE_TIMEOUT, wait)
                    .await
                    .map_err(|_| sqlx::Error::PoolTimedOut)?
                    .map_err(|_| sqlx::Error::PoolClosed)?
            }
            Err(tokio::sync::TryAcquireError::Closed) => return Err(sqlx::Error::PoolClosed),
        };
        let idle = self.0.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let connection = match idle {
            Some(connection) => connection,
            None => self.0.options.connect().await?,
        };
        Ok(Checkout {
            connection: Some(connection),
            pooled: None,
            shared: self.0.clone(),
            discard: false,
            _permit: Some(permit),
        })
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
        let mut checkout = self.acquire().await?;
        checkout.discard = true;
        let rows = checkout.fetch_all(batch).await?;
        checkout.discard = false;
        Ok(rows)
    }

    /// A transaction on a connection of this pool (`BEGIN`, which SQLite starts deferred).
    pub async fn begin(&self) -> Result<Tx, sqlx::Error> {
        Tx::begin(self.acquire().await?, None).await
    }

    /// A transaction begun by `statement`, such as `BEGIN IMMEDIATE`.
    pub async fn begin_with(&self, statement: impl SqlSafeStr) -> Result<Tx, sqlx::Error> {
        Tx::begin(self.acquire().await?, Some(statement.into_sql_str())).await
    }

    /// Refuses further checkouts and closes the idle connections; one that is out is closed when
    /// it comes back.
    pub async fn close(&self) {
        if let Some(pool) = &self.0.sqlx {
            pool.close().await;
        }
        self.0.permits.close();
        let idle = std::mem::take(&mut *self.0.idle.lock().unwrap_or_else(PoisonError::into_inner));
        for connection in idle {
            let _ = connection.close().await;
        }
    }
}

/// A connection taken from [`Connections`]; it goes back when this is dropped.
pub struct Checkout {
    connection: Option<SqliteConnection>,
    /// In place of `connection` on sqlx's pool.
    pooled: Option<PoolConnection<Sqlite>>,
    shared: Arc<Shared>,
    /// Set while a batch runs: if it does not end, the connection is closed instead of returned.
    discard: bool,
    // Dropped after `drop` has put the connection back, so whoever it wakes finds it.
    _permit: Option<OwnedSemaphorePermit>,
}

impl Deref for Checkout {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        match &self.pooled {
            Some(pooled) => pooled,
            None => self.connection.as_ref().expect("a checkout holds its connection until dropped"),
        }
    }
}

impl DerefMut for Checkout {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        match &mut self.pooled {
            Some(pooled) => pooled,
            None => self.connection.as_mut().expect("a checkout holds its connection until dropped"),
        }
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if let Some(pooled) = &mut self.pooled {
            if self.discard {
                pooled.close_on_drop();
            }
            return;
        }
        let Some(connection) = self.connection.take() else { return };
        // A closed pool's connections end here (dropping one ends its thread, which closes it).
        if !self.shared.permits.is_closed() && !self.discard {
            self.shared.idle.lock().unwrap_or_else(PoisonError::into_inner).push(connection);
        }
    }
}

/// A transaction on a checked-out connection: [`Tx::commit`] or [`Tx::rollback`] ends it, and
/// dropping it unended rolls it back (queued on the connection ahead of its next user).
pub struct Tx {
    checkout: Checkout,
    open: bool,
}

impl Tx {
    async fn begin(mut checkout: Checkout, statement: Option<SqlStr>) -> Result<Tx, sqlx::Error> {
        SqliteTransactionManager::begin(&mut checkout, statement).await?;
        Ok(Tx { checkout, open: true })
    }

    pub async fn commit(mut self) -> Result<(), sqlx::Error> {
        SqliteTransactionManager::commit(&mut self.checkout).await?;
        self.open = false;
        Ok(())
    }

    pub async fn rollback(mut self) -> Result<(), sqlx::Error> {
        SqliteTransactionManager::rollback(&mut self.checkout).await?;
        self.open = false;
        Ok(())
    }
}

impl Deref for Tx {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        &self.checkout
    }
}

impl DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self.checkout
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        if self.open {
            SqliteTransactionManager::start_rollback(&mut self.checkout);
        }
    }
}

/// Each statement takes a connection for its own length, as it would from sqlx's pool.
impl<'p> Executor<'p> for &'_ Connections {
    type Database = Sqlite;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<SqliteQueryResult, SqliteRow>, sqlx::Error>>
    where
        E: 'q + Execute<'q, Sqlite>,
    {
        let pool = self.clone();
        Box::pin(TryAsyncStream::new(move |yielder| async move {
            let mut connection = pool.acquire().await?;
            let mut rows = connection.fetch_many(query);
            while let Some(row) = rows.try_next().await? {
                yielder.r#yield(row).await;
            }
            Ok(())
        }))
    }

    fn fetch_optional<'e, 'q: 'e, E>(self, query: E) -> BoxFuture<'e, Result<Option<SqliteRow>, sqlx::Error>>
    where
        E: 'q + Execute<'q, Sqlite>,
    {
        let pool = self.clone();
        Box::pin(async move { pool.acquire().await?.fetch_optional(query).await })
    }

    // The two every store uses most, without the stream of the default ones.
    fn execute<'e, 'q: 'e, E>(self, query: E) -> BoxFuture<'e, Result<SqliteQueryResult, sqlx::Error>>
    where
        E: 'q + Execute<'q, Sqlite>,
    {
        let pool = self.clone();
        Box::pin(async move { pool.acquire().await?.execute(query).await })
    }

    fn fetch_all<'e, 'q: 'e, E>(self, query: E) -> BoxFuture<'e, Result<Vec<SqliteRow>, sqlx::Error>>
    where
        E: 'q + Execute<'q, Sqlite>,
    {
        let pool = self.clone();
        Box::pin(async move { pool.acquire().await?.fetch_all(query).await })
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [SqliteTypeInfo],
    ) -> BoxFuture<'e, Result<SqliteStatement, sqlx::Error>>
    where
        'p: 'e,
    {
        let pool = self.clone();
        Box::pin(async move { pool.acquire().await?.prepare_with(sql, parameters).await })
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<sqlx::Describe<Sqlite>, sqlx::Error>> {
        let pool = self.clone();
        Box::pin(async move { pool.acquire().await?.describe(sql).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite_options;

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
        assert_eq!(pool.0.idle.lock().unwrap().len(), 1);
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
        assert!(pool.0.permits.clone().try_acquire_owned().is_err(), "a fourth would exceed the size");
        drop(out);
        assert_eq!(pool.0.idle.lock().unwrap().len(), 3);
        let rows: Vec<i64> = sqlx::query_scalar("SELECT n FROM t").fetch_all(&pool).await.unwrap();
        assert!(rows.is_empty());
        assert_eq!(pool.0.idle.lock().unwrap().len(), 3);
    }

    #[tokio::test]
    async fn a_closed_pool_refuses_statements_and_drops_a_connection_that_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(&dir, 2).await;
        let out = pool.acquire().await.unwrap();
        pool.close().await;
        let refused = sqlx::query("SELECT 1").execute(&pool).await;
        assert!(matches!(refused, Err(sqlx::Error::PoolClosed)), "{refused:?}");
        drop(out);
        assert!(pool.0.idle.lock().unwrap().is_empty());
    }

    /// The bench's comparison runs the stores on sqlx's pool through the same checkouts; there too
    /// a dropped transaction and a batch that failed part-way leave nothing behind.
    #[tokio::test]
    async fn on_sqlx_pool_a_dropped_transaction_and_a_failed_batch_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Connections::open_sqlx(sqlite_options(dir.path().join("t.db")), 1).await.unwrap();
        sqlx::query("CREATE TABLE t (n INTEGER NOT NULL)").execute(&pool).await.unwrap();
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
        sqlx::query("INSERT INTO t VALUES (1)").execute(&mut *tx).await.unwrap();
        drop(tx);
        let failed =
            pool.fetch_batch(sqlx::query("BEGIN; INSERT INTO t VALUES (2); INSERT INTO t VALUES (NULL); COMMIT;"));
        assert!(failed.await.is_err());
        let rows = pool.fetch_batch(sqlx::query("BEGIN; INSERT INTO t VALUES (3); COMMIT;")).await.unwrap();
        assert!(rows.is_empty());
        assert_eq!(committed(&dir).await, [3]);
        assert_eq!(count(&pool).await, 1);
        pool.close().await;
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
        assert_eq!(pool.0.idle.lock().unwrap().len(), 1);
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
        // Its connection is not the one that serves next: it was closed with its transaction.
        assert!(pool.0.idle.lock().unwrap().is_empty());
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
        assert!(pool.0.idle.lock().unwrap().is_empty());
        // The next writer waits (busy timeout) until the old connection has closed and rolled back.
        sqlx::query("INSERT INTO t VALUES (2)").execute(&pool).await.unwrap();
        assert_eq!(committed(&dir).await, [2]);
    }
}
