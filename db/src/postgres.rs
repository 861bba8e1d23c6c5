//! The PostgreSQL connections of a process, handed out for one statement, one transaction or one
//! request at a time: [`crate::Connections`]' counterpart for PostgreSQL, on `deadpool`'s pool.
//!
//! Why not sqlx's `PgPool`: as a connection goes back it pings it (sqlx-core's `return_to_pool`,
//! unconditional, not configurable in 0.9), a Sync and a wait for ReadyForQuery, so every pooled
//! statement costs two round trips to the database, and a request's every statement one more
//! (counted on the wire in `server/tests/it/round_trips.rs`). `deadpool` leaves the check to the
//! manager below, and a connection goes back as it is: what a cancelled statement left (rows on
//! their way, its ReadyForQuery) is read and dropped by sqlx before the next user's statement
//! (`wait_until_ready` at the start of each command), and a transaction dropped unended queues its
//! ROLLBACK on the connection ahead of the next user's statement, so nothing needs flushing. The
//! ping stays where it is a real health check: before handing out a connection unused for
//! [`CHECKED_AFTER_IDLE`] or longer (HikariCP's rule), so one broken while it sat (a database
//! restart) is replaced before a request meets it.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use deadpool::managed::{self, Metrics, Object, PoolError, QueueMode, RecycleResult};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{
    PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions, PgTransactionManager, Postgres,
};
use sqlx::{ConnectOptions, Connection, SqlSafeStr, SqlStr};
use sqlx_core::transaction::TransactionManager;

/// A connection unused this long is pinged before it is handed out; one used more recently is
/// taken as it is (HikariCP's `aliveBypassWindowMs`, 500 ms).
pub const CHECKED_AFTER_IDLE: Duration = Duration::from_millis(500);
/// How long a statement waits for a connection before it fails, as with sqlx's pool.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// How `deadpool` opens and checks our connections.
#[derive(Debug)]
pub struct Manager(pub PgConnectOptions);

impl managed::Manager for Manager {
    type Type = PgConnection;
    type Error = sqlx::Error;

    async fn create(&self) -> Result<PgConnection, sqlx::Error> {
        self.0.connect().await
    }

    async fn recycle(&self, connection: &mut PgConnection, metrics: &Metrics) -> RecycleResult<sqlx::Error> {
        // `last_used` counts from the previous checkout, so a connection held long is checked too.
        if metrics.last_used() >= CHECKED_AFTER_IDLE {
            connection.ping().await?;
        }
        Ok(())
    }
}

/// Up to `size` connections to one PostgreSQL database, opened when first needed; the most
/// recently used is taken first, so a quiet process keeps using a few warm connections (their
/// prepared statements) and lets the others sit. Cheap to clone.
#[derive(Clone)]
pub struct PgConnections {
    pool: managed::Pool<Manager>,
    /// sqlx's own pool in place of ours (`TOURGUIDE_PG_POOL=sqlx`, see [`PgConnections::open_sqlx`]),
    /// for the bench's side-by-side comparison.
    sqlx: Option<PgPool>,
}

impl std::fmt::Debug for PgConnections {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("PgConnections").field("status", &self.pool.status()).finish()
    }
}

fn sqlx_error(error: PoolError<sqlx::Error>) -> sqlx::Error {
    match error {
        PoolError::Backend(error) => error,
        PoolError::Timeout(_) => sqlx::Error::PoolTimedOut,
        PoolError::Closed => sqlx::Error::PoolClosed,
        other => sqlx::Error::Configuration(other.to_string().into()),
    }
}

impl PgConnections {
    fn new(options: PgConnectOptions, size: u32, sqlx: Option<PgPool>) -> PgConnections {
        let pool = managed::Pool::builder(Manager(options))
            .max_size(size.max(1) as usize)
            .queue_mode(QueueMode::Lifo)
            .runtime(deadpool::Runtime::Tokio1)
            .wait_timeout(Some(ACQUIRE_TIMEOUT))
            .build()
            .expect("a runtime is set for the timeout");
        PgConnections { pool, sqlx }
    }

    /// A pool of at most `size` connections; one is opened now, so a database that cannot be
    /// reached fails here and not at the first statement.
    pub async fn open(options: PgConnectOptions, size: u32) -> Result<PgConnections, sqlx::Error> {
        let connections = PgConnections::new(options, size, None);
        drop(connections.pool.get().await.map_err(sqlx_error)?);
        Ok(connections)
    }

    /// The same on sqlx's `PgPool`, configured as well as it allows (no test before a checkout,
    /// connections kept open); it pings each connection as it goes back. For the bench's
    /// comparison (bench/RESULTS.md, "What the own pieces win").
    pub async fn open_sqlx(options: PgConnectOptions, size: u32) -> Result<PgConnections, sqlx::Error> {
        let pool = PgPoolOptions::new()
            .max_connections(size.max(1))
            .test_before_acquire(false)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options.clone())
            .await?;
        Ok(PgConnections::new(options, size, Some(pool)))
    }

    /// A connection of this pool, for as long as the checkout lives; waits while all are out.
    /// Holding one for a whole request spares nothing on the wire (the release costs nothing),
    /// but keeps the request's statements in order on one session.
    pub async fn acquire(&self) -> Result<PgCheckout, sqlx::Error> {
        let checkout = match &self.sqlx {
            Some(pool) => Checkout::Sqlx(pool.acquire().await?),
            None => Checkout::Ours(Some(self.pool.get().await.map_err(sqlx_error)?)),
        };
        Ok(PgCheckout { checkout, broken: false })
    }

    /// A transaction on a connection of this pool (`BEGIN`).
    pub async fn begin(&self) -> Result<PgTx, sqlx::Error> {
        PgTx::begin(self.acquire().await?, None).await
    }

    /// A transaction begun by `statement`, such as `BEGIN ISOLATION LEVEL REPEATABLE READ`.
    pub async fn begin_with(&self, statement: impl SqlSafeStr) -> Result<PgTx, sqlx::Error> {
        PgTx::begin(self.acquire().await?, Some(statement.into_sql_str())).await
    }

    /// A `LISTEN` connection of its own, beside the pool (it stays out for the process's life).
    pub async fn listener(&self) -> Result<PgListener, sqlx::Error> {
        let pool = PgPoolOptions::new().max_connections(1).connect_lazy_with(self.pool.manager().0.clone());
        PgListener::connect_with(&pool).await
    }

    /// Refuses further checkouts and closes the idle connections; one that is out is dropped when
    /// it comes back.
    pub async fn close(&self) {
        if let Some(pool) = &self.sqlx {
            pool.close().await;
        }
        let idle = self.pool.retain(|_, _| false).removed;
        self.pool.close();
        for connection in idle {
            let _ = connection.close().await;
        }
    }

    /// How many connections the pool holds, out or idle (for tests).
    pub fn size(&self) -> usize {
        self.pool.status().size
    }
}

enum Checkout {
    Ours(Option<Object<Manager>>),
    Sqlx(PoolConnection<Postgres>),
}

/// A connection taken from [`PgConnections`]; it goes back, as it is, when this is dropped.
pub struct PgCheckout {
    checkout: Checkout,
    /// Set when a statement on it failed as a broken connection does: it is closed, not returned.
    broken: bool,
}

impl crate::executor::Discard for PgCheckout {
    fn discard(&mut self) {
        match &mut self.checkout {
            Checkout::Sqlx(pooled) => pooled.close_on_drop(),
            Checkout::Ours(_) => self.broken = true,
        }
    }
}

impl Deref for PgCheckout {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        match &self.checkout {
            Checkout::Sqlx(pooled) => pooled,
            Checkout::Ours(object) => object.as_ref().expect("a checkout holds its connection until dropped"),
        }
    }
}

impl DerefMut for PgCheckout {
    fn deref_mut(&mut self) -> &mut PgConnection {
        match &mut self.checkout {
            Checkout::Sqlx(pooled) => pooled,
            Checkout::Ours(object) => object.as_mut().expect("a checkout holds its connection until dropped"),
        }
    }
}

impl Drop for PgCheckout {
    fn drop(&mut self) {
        if let (Checkout::Ours(object), true) = (&mut self.checkout, self.broken) {
            // Out of the pool for good (its slot is freed); the socket closes as it drops.
            if let Some(object) = object.take() {
                drop(Object::take(object));
            }
        }
    }
}

/// A transaction on a checked-out connection: [`PgTx::commit`] or [`PgTx::rollback`] ends it, and
/// dropping it unended rolls it back (queued on the connection ahead of its next user).
pub struct PgTx {
    checkout: PgCheckout,
    open: bool,
}

impl PgTx {
    async fn begin(mut checkout: PgCheckout, statement: Option<SqlStr>) -> Result<PgTx, sqlx::Error> {
        PgTransactionManager::begin(&mut checkout, statement).await?;
        Ok(PgTx { checkout, open: true })
    }

    pub async fn commit(mut self) -> Result<(), sqlx::Error> {
        let checkout = &mut self.checkout;
        crate::executor::discard_if_broken!(checkout, PgTransactionManager::commit(checkout).await)?;
        self.open = false;
        Ok(())
    }

    pub async fn rollback(mut self) -> Result<(), sqlx::Error> {
        let checkout = &mut self.checkout;
        crate::executor::discard_if_broken!(checkout, PgTransactionManager::rollback(checkout).await)?;
        self.open = false;
        Ok(())
    }
}

impl Deref for PgTx {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        &self.checkout
    }
}

impl DerefMut for PgTx {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.checkout
    }
}

impl Drop for PgTx {
    fn drop(&mut self) {
        if self.open {
            PgTransactionManager::start_rollback(&mut self.checkout);
        }
    }
}

crate::executor::executor_by_checkout!(PgConnections, Postgres);

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::TryStreamExt;

    /// A pool on a scratch database, or `None` without `TOURGUIDE_TEST_POSTGRES`.
    async fn pool(size: u32) -> Option<PgConnections> {
        let url = crate::scratch_postgres().await.unwrap()?;
        let pool = PgConnections::open(url.parse().unwrap(), size).await.unwrap();
        sqlx::query("CREATE TABLE t (n BIGINT)").execute(&pool).await.unwrap();
        Some(pool)
    }

    /// The bench's comparison runs the stores on sqlx's pool through the same checkouts; there too
    /// a dropped transaction leaves nothing behind.
    #[tokio::test]
    async fn on_sqlx_pool_a_dropped_transaction_leaves_nothing() {
        let Some(url) = crate::scratch_postgres().await.unwrap() else { return };
        let pool = PgConnections::open_sqlx(url.parse().unwrap(), 1).await.unwrap();
        sqlx::query("CREATE TABLE t (n BIGINT)").execute(&pool).await.unwrap();
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO t VALUES (1)").execute(&mut *tx).await.unwrap();
        drop(tx);
        sqlx::query("INSERT INTO t VALUES (2)").execute(&pool).await.unwrap();
        let rows: Vec<i64> = sqlx::query_scalar("SELECT n FROM t").fetch_all(&pool).await.unwrap();
        assert_eq!(rows, [2]);
        pool.close().await;
    }

    /// A connection the server ended (a restart, `pg_terminate_backend`) fails the statement that
    /// meets it, and is closed then: the next statement, at once, runs on a new one, though the
    /// dead one sat idle too briefly to be checked.
    #[tokio::test]
    async fn a_connection_the_server_ended_fails_one_statement_and_is_not_handed_out_again() {
        let Some(pool) = pool(1).await else { return };
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(&pool).await.unwrap();
        let url = crate::scratch_postgres().await.unwrap().unwrap();
        let mut other = <PgConnection as Connection>::connect(&url).await.unwrap();
        let ended: bool =
            sqlx::query_scalar("SELECT pg_terminate_backend($1)").bind(pid).fetch_one(&mut other).await.unwrap();
        assert!(ended);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let failed = sqlx::query_scalar::<_, i32>("SELECT pg_backend_pid()").fetch_one(&pool).await;
        assert!(failed.is_err(), "the ended connection was handed out (idle for less than the check)");
        let again: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(&pool).await.unwrap();
        assert_ne!(again, pid);
        pool.close().await;
    }

    async fn count(pool: &PgConnections) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM t").fetch_one(pool).await.unwrap()
    }

    #[tokio::test]
    async fn a_transaction_dropped_unended_is_rolled_back_before_the_connection_serves_again() {
        let Some(pool) = pool(1).await else { return };
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO t VALUES (1)").execute(&mut *tx).await.unwrap();
        drop(tx);
        assert_eq!(count(&pool).await, 0);
        let mut tx = pool.begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ").await.unwrap();
        sqlx::query("INSERT INTO t VALUES (2)").execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
        let tx = pool.begin().await.unwrap();
        tx.rollback().await.unwrap();
        assert_eq!(count(&pool).await, 1);
        pool.close().await;
    }

    #[tokio::test]
    async fn a_statement_cancelled_midway_leaves_nothing_for_the_next_user() {
        let Some(pool) = pool(1).await else { return };
        // Cancelled while the server still works on it: its reply arrives after the drop.
        let slow = sqlx::query("SELECT pg_sleep(0.3), 7::BIGINT").fetch_one(&pool);
        assert!(tokio::time::timeout(Duration::from_millis(50), slow).await.is_err());
        // The one connection serves again, with the next statement's own answer.
        let n: i64 = sqlx::query_scalar("SELECT 42::BIGINT").fetch_one(&pool).await.unwrap();
        assert_eq!(n, 42);
        // Rows read only in part.
        let mut rows = sqlx::query_scalar::<_, i64>("SELECT generate_series(1, 1000)::BIGINT").fetch(&pool);
        assert_eq!(rows.try_next().await.unwrap(), Some(1));
        drop(rows);
        assert_eq!(count(&pool).await, 0);
        pool.close().await;
    }

    #[tokio::test]
    async fn with_every_connection_out_the_next_statement_waits_for_one_to_come_back() {
        let Some(pool) = pool(1).await else { return };
        let held = pool.acquire().await.unwrap();
        let waiting = tokio::spawn({
            let pool = pool.clone();
            async move { sqlx::query("INSERT INTO t VALUES (1)").execute(&pool).await.map(|done| done.rows_affected()) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "the statement waits while the only connection is out");
        drop(held);
        assert_eq!(waiting.await.unwrap().unwrap(), 1);
        assert_eq!(pool.size(), 1, "one connection served both");
        pool.close().await;
    }
}
