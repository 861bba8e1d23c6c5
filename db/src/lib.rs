//! The database handle every store shares: SQLite (the embedded default) or PostgreSQL (for
//! several processes on one database).
//!
//! One place decides how a connection is made (so tests run with the settings production uses),
//! what time a row is stamped with, and how the schema comes about: each store owns the
//! migrations of its own tables, one set per backend, and applies them through [`Db::migrate`].
//! The stores dispatch on the handle with [`on!`]: the same store code is compiled for each
//! backend, and where the SQL must differ the store keeps both versions side by side.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};

mod connections;
mod executor;
mod here;
mod postgres;
mod wire;
pub use connections::{in_background, Checkout, Connections, Tx};
pub use here::{rusqlite, Here};
pub use postgres::{Manager as PgManager, PgCheckout, PgConnections, PgTx, CHECKED_AFTER_IDLE};
pub use wire::RoundTrips;

/// Connections per pool. PostgreSQL's and SQLite's readers; SQLite's writes have one connection of
/// their own (see [`Sqlite`]).
const POOL_SIZE: u32 = 8;
/// `TOURGUIDE_PG_POOL=sqlx` runs PostgreSQL on sqlx's `PgPool` instead of [`PgConnections`], for the
/// bench's side-by-side comparison (bench/RESULTS.md, "What the own pieces win").
const SQLX_PG_POOL: &str = "TOURGUIDE_PG_POOL";
/// How long a writer waits for another one before the statement fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// How many rows a SQLite connection's thread may hand over before the reading task takes them.
/// sqlx's default is 50: a longer read (a page's 200 messages, the list of 100 conversations)
/// filled the channel, and from then on each row the task took woke the connection's thread for
/// the next one, a futex wake-up per row. The buffer grows with the rows in it; none is set aside
/// in advance.
const ROW_BUFFER: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Here(#[from] rusqlite::Error),
    #[error("cannot create the database folder {path}: {source}")]
    Folder { path: String, source: std::io::Error },
}

/// A connection pool to the one database all stores share. Cheap to clone.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(Sqlite),
    Postgres(PgConnections),
}

/// A SQLite database as this process uses it: every write through one connection, reads on a
/// pool beside it (WAL lets them read while the writer writes).
///
/// SQLite takes one writer at a time. With writers on several connections, a writer that finds the
/// database locked waits in SQLite's busy handler, which sleeps 1, 2, 5, 10, … ms between tries:
/// under load most of an answer's time went there (the bench's p99 of 55 ms). On one connection
/// the writes queue in the process instead, in order, and start the moment the last one ends.
/// Other processes on the same file (the command line's `user`, `backup`) still meet the busy
/// timeout.
///
/// Stores write with [`on!`] (the writer) and read their hot paths with [`on_read!`] (the pool).
/// A store must not ask for the writer while it holds it (a second `on!` inside a transaction):
/// with one connection that would wait for itself.
#[derive(Clone, Debug)]
pub struct Sqlite {
    pub write: Connections,
    pub read: Connections,
    /// The file read on the calling thread ([`Here`]); none for an in-memory database, whose one
    /// connection is the database.
    pub here: Option<Here>,
}

/// Which database the handle talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Where the database is: a SQLite file, or a PostgreSQL server named by a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(std::path::PathBuf),
    Postgres(String),
}

impl Location {
    /// A `postgres://` or `postgresql://` URL is a PostgreSQL server; anything else is a file.
    pub fn parse(text: &str) -> Location {
        let trimmed = text.trim();
        let lower = trimmed.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            Location::Postgres(trimmed.to_string())
        } else {
            Location::Sqlite(std::path::PathBuf::from(text))
        }
    }

    /// A database URL as it may be shown: any password in it replaced by `***` (also when the
    /// URL is too broken to parse).
    pub fn redacted(url: &str) -> String {
        // `?password=…` as a parameter, too.
        let url = &match url.split_once('?') {
            Some((base, query)) => {
                let parameters: Vec<String> = query
                    .split('&')
                    .map(|pair| match pair.split_once('=') {
                        Some((name, _)) if name.eq_ignore_ascii_case("password") => format!("{name}=***"),
                        _ => pair.to_string(),
                    })
                    .collect();
                format!("{base}?{}", parameters.join("&"))
            }
            None => url.to_string(),
        };
        let Some(scheme_end) = url.find("://").map(|index| index + 3) else { return url.to_string() };
        let rest = &url[scheme_end..];
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let Some(at) = rest[..authority_end].rfind('@') else { return url.to_string() };
        match rest[..at].find(':') {
            Some(colon) => format!("{}{}:***{}", &url[..scheme_end], &rest[..colon], &rest[at..]),
            None => url.to_string(),
        }
    }

    /// For logs: the file, or the server and database without credentials.
    pub fn describe(&self) -> String {
        match self {
            Location::Sqlite(path) => format!("SQLite {}", path.display()),
            Location::Postgres(url) => match url.parse::<PgConnectOptions>() {
                Ok(options) => format!(
                    "PostgreSQL {}:{}/{}",
                    options.get_host(),
                    options.get_port(),
                    options.get_database().unwrap_or_default()
                ),
                Err(_) => "PostgreSQL".to_string(),
            },
        }
    }
}

/// The migrations of one owner's tables (the chat's, the runtime's, the content's), one set per
/// backend.
///
/// The owners share one database and one table of applied migrations, so each set ignores the
/// versions the others applied; version numbers are unique across the sets.
#[derive(Debug)]
pub struct Migrations {
    sqlite: Migrator,
    postgres: Migrator,
}

impl Migrations {
    /// Built from `sqlx::migrate!("../migrations/sqlite/OWNER")` and
    /// `sqlx::migrate!("../migrations/postgres/OWNER")` in the owning crate.
    pub fn new(mut sqlite: Migrator, mut postgres: Migrator) -> Self {
        sqlite.set_ignore_missing(true);
        postgres.set_ignore_missing(true);
        Migrations { sqlite, postgres }
    }
}

impl Db {
    /// Whether every migration of these sets is applied (a readiness check: a process that
    /// started on an older build's database before another process migrated it is not ready).
    pub async fn migrated(&self, sets: &[Migrations]) -> Result<bool, DbError> {
        let applied: Vec<i64> = match self {
            Db::Sqlite(pools) => {
                sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success").fetch_all(&pools.read).await?
            }
            Db::Postgres(pool) => {
                sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success").fetch_all(pool).await?
            }
        };
        let wanted = sets.iter().flat_map(|set| match self {
            Db::Sqlite(_) => set.sqlite.iter(),
            Db::Postgres(_) => set.postgres.iter(),
        });
        Ok(wanted
            .filter(|migration| !migration.migration_type.is_down_migration())
            .all(|migration| applied.contains(&migration.version)))
    }

    /// One round trip to the database.
    pub async fn ping(&self) -> Result<(), DbError> {
        match self {
            Db::Sqlite(pools) => {
                sqlx::query("SELECT 1").execute(&pools.write).await?;
                sqlx::query("SELECT 1").execute(&pools.read).await.map(|_| ())?
            }
            Db::Postgres(pool) => sqlx::query("SELECT 1").execute(pool).await.map(|_| ())?,
        }
        Ok(())
    }
}

/// Connection options that make concurrent writers wait for each other instead of failing: WAL,
/// a busy timeout, `synchronous = NORMAL` (durable at every checkpoint, safe with WAL), foreign
/// keys on; and a row buffer long enough for a whole page's read ([`ROW_BUFFER`]). Every pool of
/// the application and of its tests is made with these.
///
/// No `mmap_size`: a write empties every other connection's page cache, so under load the readers
/// read their pages again each time, and a memory map would spare those reads their copy. Measured
/// in turns with the same bench, it cost more than it saved: answers fell from about 3,700 to
/// 3,050 per second, and the polls did not change.
pub fn sqlite_options(path: impl AsRef<Path>) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(BUSY_TIMEOUT)
        .foreign_keys(true)
        .row_buffer_size(ROW_BUFFER)
}

/// Unix milliseconds, for the few columns that time something shorter than a second (their names
/// end in `_ms`).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Unix seconds, the unit of every time column; a clock before 1970 counts as 0.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl Db {
    /// Opens the database at `location`.
    pub async fn open(location: &Location) -> Result<Db, DbError> {
        match location {
            Location::Sqlite(path) => Db::open_sqlite(path).await,
            Location::Postgres(url) => Db::open_postgres(url).await,
        }
    }

    /// Connects to a PostgreSQL database; it must exist (the migrations create the tables).
    pub async fn open_postgres(url: &str) -> Result<Db, DbError> {
        let options: PgConnectOptions = url.parse()?;
        // Our own pool, not sqlx's: see `postgres` (no ping as each connection goes back).
        // `TOURGUIDE_PG_POOL=sqlx`: sqlx's pool, for the bench's side-by-side comparison.
        let pool = match std::env::var(SQLX_PG_POOL).as_deref() {
            Ok("sqlx") => PgConnections::open_sqlx(options, POOL_SIZE).await?,
            _ => PgConnections::open(options, POOL_SIZE).await?,
        };
        Ok(Db::Postgres(pool))
    }

    /// The SQLite file's reader on the calling thread ([`Here`]); none on PostgreSQL or in memory.
    pub fn here(&self) -> Option<&Here> {
        match self {
            Db::Sqlite(Sqlite { here, .. }) => here.as_ref(),
            Db::Postgres(_) => None,
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            Db::Sqlite(_) => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    /// Opens (creating if needed) the SQLite file and its folder.
    pub async fn open_sqlite(path: &Path) -> Result<Db, DbError> {
        if let Some(folder) = path.parent().filter(|folder| !folder.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder)
                .map_err(|source| DbError::Folder { path: folder.display().to_string(), source })?;
        }
        let write = Connections::open(sqlite_options(path), 1).await?;
        let read = Connections::open(sqlite_options(path), POOL_SIZE).await?;
        Ok(Db::Sqlite(Sqlite { write, read, here: Some(Here::new(path)) }))
    }

    /// An in-memory database: one connection, since each one would be a database of its own. The
    /// database has a name of its own in shared-cache mode, so a connection the pool opens again
    /// (after a failed batch closed the old one) finds it while another is open.
    pub async fn in_memory() -> Result<Db, DbError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let name = format!(
            "sqlite:file:tourguide-{}-{}?mode=memory&cache=shared",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let options = SqliteConnectOptions::from_str(&name)?.foreign_keys(true).row_buffer_size(ROW_BUFFER);
        let pool = Connections::open(options, 1).await?;
        Ok(Db::Sqlite(Sqlite { write: pool.clone(), read: pool, here: None }))
    }

    /// Applies the owner's migrations that are not applied yet.
    pub async fn migrate(&self, migrations: &Migrations) -> Result<(), DbError> {
        match self {
            Db::Sqlite(pools) => migrations.sqlite.run(&mut *pools.write.acquire().await?).await?,
            Db::Postgres(pool) => migrations.postgres.run(&mut *pool.acquire().await?).await?,
        }
        Ok(())
    }

    /// Waits for the connections to close.
    pub async fn close(&self) {
        match self {
            Db::Sqlite(pools) => {
                pools.read.close().await;
                pools.write.close().await;
            }
            Db::Postgres(pool) => pool.close().await,
        }
    }
}

/// The environment variable that points tests at a PostgreSQL server they may create databases on
/// (`scripts/test` starts a throw-away one). Unset, tests use SQLite files.
pub const TEST_POSTGRES: &str = "TOURGUIDE_TEST_POSTGRES";

/// For tests: a fresh, empty database on the PostgreSQL server named by `TOURGUIDE_TEST_POSTGRES`
/// (`None` when it is unset), as the URL of that database.
pub async fn scratch_postgres() -> Result<Option<String>, DbError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let Ok(admin) = std::env::var(TEST_POSTGRES) else { return Ok(None) };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or_default();
    let count = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("tg_{}_{count}_{nanos}", std::process::id());
    let options: PgConnectOptions = admin.parse()?;
    let mut connection = <sqlx::PgConnection as sqlx::Connection>::connect_with(&options).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut connection).await?;
    <sqlx::PgConnection as sqlx::Connection>::close(connection).await?;
    Ok(Some(with_database(&admin, &name)))
}

/// The URL with its database (the path) replaced, query kept.
fn with_database(url: &str, name: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (authority, tail) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash + 1..]),
        None => (rest, ""),
    };
    let query = tail.split_once('?').map(|(_, query)| format!("?{query}")).unwrap_or_default();
    format!("{scheme}://{authority}/{name}{query}")
}

/// Runs `$body` with `$pool` bound to the handle's concrete pool: on SQLite the one writer
/// connection. The body is compiled once per backend, so the same store code serves each; where
/// the SQL must differ, the body matches on the handle itself.
#[macro_export]
macro_rules! on {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::Db::Sqlite($crate::Sqlite { write: $pool, .. }) => $body,
            $crate::Db::Postgres($pool) => $body,
        }
    };
}

/// [`on!`] for a read that may run beside the writer: on SQLite a connection of the read pool.
/// A read that must see a write of the same task sees it (the write committed before it began).
#[macro_export]
macro_rules! on_read {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::Db::Sqlite($crate::Sqlite { read: $pool, .. }) => $body,
            $crate::Db::Postgres($pool) => $body,
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
    fn a_url_names_a_server_and_anything_else_a_file() {
        assert_eq!(Location::parse("postgres://u:secret@db:5433/app").describe(), "PostgreSQL db:5433/app");
        assert!(matches!(Location::parse("POSTGRESQL://localhost/app"), Location::Postgres(_)));
        assert_eq!(Location::parse("./data/tourguide.db"), Location::Sqlite("./data/tourguide.db".into()));
        assert!(!Location::parse("postgres://u:secret@db/app").describe().contains("secret"));
        assert_eq!(Location::redacted("postgres://u:secret@db:notaport/app"), "postgres://u:***@db:notaport/app");
        assert_eq!(Location::redacted("postgres://u:p@ss@db/app"), "postgres://u:***@db/app");
        assert_eq!(Location::redacted("postgres://db/app?user=u"), "postgres://db/app?user=u");
        assert_eq!(Location::redacted("postgres://db/app?user=u&password=x"), "postgres://db/app?user=u&password=***");
    }

    #[test]
    fn a_scratch_url_keeps_the_server_and_names_the_new_database() {
        assert_eq!(with_database("postgres://u@127.0.0.1:55432/postgres", "tg_1"), "postgres://u@127.0.0.1:55432/tg_1");
        assert_eq!(with_database("postgres://u@h/postgres?sslmode=disable", "x"), "postgres://u@h/x?sslmode=disable");
        assert_eq!(with_database("postgresql://h:5", "x"), "postgresql://h:5/x");
    }

    #[test]
    fn the_clock_is_in_unix_seconds() {
        let now = now();
        assert!(now > 1_700_000_000 && now < 10_000_000_000, "{now}");
    }
}
