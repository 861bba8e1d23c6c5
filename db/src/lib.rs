//! The database handle every store shares.
//!
//! One place decides how a connection is made (so tests run with the settings production uses),
//! what time a row is stamped with, and how the schema comes about: each store owns the
//! migrations of its own tables and applies them through [`Db::migrate`]. The stores dispatch on
//! the handle with [`on!`], so the SQL stays in the module that owns it while a second backend can
//! come in behind the handle.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

/// Connections per pool. SQLite writes one at a time anyway; readers run beside the writer (WAL).
const POOL_SIZE: u32 = 8;
/// How long a writer waits for another one before the statement fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    #[error("cannot create the database folder {path}: {source}")]
    Folder { path: String, source: std::io::Error },
}

/// A connection pool to the one database all stores share. Cheap to clone.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(SqlitePool),
}

/// The migrations of one owner's tables (the chat's, the runtime's, the content's).
///
/// The owners share one database and one table of applied migrations, so each set ignores the
/// versions the others applied; version numbers are unique across the sets.
#[derive(Debug)]
pub struct Migrations {
    sqlite: Migrator,
}

impl Migrations {
    /// Built from `sqlx::migrate!("../migrations/sqlite/OWNER")` in the owning crate.
    pub fn new(mut sqlite: Migrator) -> Self {
        sqlite.set_ignore_missing(true);
        Migrations { sqlite }
    }
}

/// Connection options that make concurrent writers wait for each other instead of failing: WAL,
/// a busy timeout, `synchronous = NORMAL` (durable at every checkpoint, safe with WAL), foreign
/// keys on. Every pool of the application and of its tests is made with these.
pub fn sqlite_options(path: impl AsRef<Path>) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(BUSY_TIMEOUT)
        .foreign_keys(true)
}

/// Unix seconds, the unit of every time column; a clock before 1970 counts as 0.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl Db {
    /// Opens (creating if needed) the SQLite file and its folder.
    pub async fn open_sqlite(path: &Path) -> Result<Db, DbError> {
        if let Some(folder) = path.parent().filter(|folder| !folder.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder)
                .map_err(|source| DbError::Folder { path: folder.display().to_string(), source })?;
        }
        let pool = SqlitePoolOptions::new().max_connections(POOL_SIZE).connect_with(sqlite_options(path)).await?;
        Ok(Db::Sqlite(pool))
    }

    /// An in-memory database: one connection, since each one would be a database of its own.
    pub async fn in_memory() -> Result<Db, DbError> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
        let pool = SqlitePoolOptions::new().max_connections(1).connect_with(options).await?;
        Ok(Db::Sqlite(pool))
    }

    /// Applies the owner's migrations that are not applied yet.
    pub async fn migrate(&self, migrations: &Migrations) -> Result<(), DbError> {
        match self {
            Db::Sqlite(pool) => migrations.sqlite.run(pool).await?,
        }
        Ok(())
    }

    /// Waits for the connections to close.
    pub async fn close(&self) {
        match self {
            Db::Sqlite(pool) => pool.close().await,
        }
    }
}

/// Runs `$body` with `$pool` bound to the handle's concrete pool. The body is compiled once per
/// backend, so the same store code serves each; where the SQL must differ, the body matches on
/// the handle itself.
#[macro_export]
macro_rules! on {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::Db::Sqlite($pool) => $body,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_database_gets_its_folder_and_the_shared_settings() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open_sqlite(&dir.path().join("nested/folder/app.db")).await.unwrap();
        let (journal, synchronous, foreign_keys, timeout): (String, i64, i64, i64) = on!(&db, pool => {
            let journal = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(pool).await.unwrap();
            let synchronous = sqlx::query_scalar("PRAGMA synchronous").fetch_one(pool).await.unwrap();
            let foreign_keys = sqlx::query_scalar("PRAGMA foreign_keys").fetch_one(pool).await.unwrap();
            let timeout = sqlx::query_scalar("PRAGMA busy_timeout").fetch_one(pool).await.unwrap();
            (journal, synchronous, foreign_keys, timeout)
        });
        assert_eq!(journal, "wal");
        assert_eq!(synchronous, 1, "NORMAL");
        assert_eq!(foreign_keys, 1);
        assert_eq!(timeout, 10_000);
    }

    #[test]
    fn the_clock_is_in_unix_seconds() {
        let now = now();
        assert!(now > 1_700_000_000 && now < 10_000_000_000, "{now}");
    }
}
