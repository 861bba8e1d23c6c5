//! Short reads of a SQLite file on the calling thread, for the one hot read that is a single
//! indexed statement (the poll that finds nothing new).
//!
//! Why: a pooled SQLite connection is a thread of its own (sqlx), and each statement on it is a
//! round trip to that thread: the asking task wakes it (a futex wake-up), it runs the statement and
//! wakes the task again. For a statement that takes a few microseconds that hop is most of the
//! cost: in a profile of the fast poll the connection threads spent more time being woken and
//! going back to sleep than in SQLite. Here the statement runs where the request already runs, on
//! a connection of that thread's own, opened the first time the thread reads this database.
//!
//! Only for reads that cannot wait long: the caller's thread runs the event loop of other
//! requests. A WAL reader does not wait for the writer, so a point read takes microseconds; a
//! read that returns many rows or scans belongs on the pool ([`crate::on_read!`]).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

pub use rusqlite;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::DbError;

/// Prepared statements a thread's connection keeps: the few hot reads, with room to spare.
const STATEMENTS: usize = 16;
/// How long a read here waits for a lock. A WAL reader waits only while the file is recovered or
/// its WAL reset, which takes milliseconds; the pool's 10 s would hold up every request of the
/// thread's event loop behind it, so a read that waits longer fails instead.
const BUSY_TIMEOUT: Duration = Duration::from_secs(1);

/// One SQLite file, read on the calling thread. Cheap to clone; each thread that reads opens its
/// own connection, closed when the thread ends or, once the last clone is dropped (the database
/// closed), at the thread's next read of any database.
#[derive(Clone, Debug)]
pub struct Here(Arc<PathBuf>);

thread_local! {
    /// This thread's connections, each with the database it reads (dead once its `Here` is gone).
    static OPEN: RefCell<Vec<(Weak<PathBuf>, Connection)>> = const { RefCell::new(Vec::new()) };
}

impl Here {
    pub(crate) fn new(path: &Path) -> Here {
        Here(Arc::new(path.to_path_buf()))
    }

    /// Runs `read` on this thread's connection to the database, opening it if this is the
    /// thread's first read of it. `read` must not read through a `Here` again.
    pub fn read<T>(&self, read: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, DbError> {
        OPEN.with(|open| {
            let mut open = open.borrow_mut();
            // A few entries: dropping those of closed databases costs less than the read.
            open.retain(|(place, _)| place.strong_count() > 0);
            let mine = Arc::as_ptr(&self.0);
            let index = match open.iter().position(|(place, _)| Weak::as_ptr(place) == mine) {
                Some(index) => index,
                None => {
                    open.push((Arc::downgrade(&self.0), connect(&self.0)?));
                    open.len() - 1
                }
            };
            Ok(read(&open[index].1)?)
        })
    }

    /// The one row of `sql` with `parameters`, if any, read by `row`: the point read this is for,
    /// its statement prepared once per thread's connection.
    pub fn fetch_optional<T>(
        &self,
        sql: &str,
        parameters: impl rusqlite::Params,
        row: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>, DbError> {
        self.read(|connection| connection.prepare_cached(sql)?.query_row(parameters, row).optional())
    }
}

/// A reading connection: a busy timeout ([`BUSY_TIMEOUT`]) and no writes (`query_only`). Journal
/// mode and synchronous belong to the file and its writer.
fn connect(path: &Path) -> Result<Connection, DbError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(path, flags)?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    connection.pragma_update(None, "query_only", true)?;
    connection.set_prepared_statement_cache_capacity(STATEMENTS);
    Ok(connection)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{on, Db, Sqlite};

    fn here(db: &Db) -> &Here {
        let Db::Sqlite(Sqlite { here: Some(here), .. }) = db else { panic!("a SQLite file") };
        here
    }

    fn lines(here: &Here) -> i64 {
        here.fetch_optional("SELECT COUNT(*) FROM lines", [], |row| row.get(0)).unwrap().expect("a count")
    }

    async fn write(db: &Db, sql: &str) {
        on!(db, pool => sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).execute(pool).await.map(|_| ())).unwrap();
    }

    /// The thread's connections, open or to a database that is gone.
    fn open_here() -> usize {
        OPEN.with(|open| open.borrow().len())
    }

    /// A read on the calling thread sees each commit of the writer made before it (its statement
    /// holds no read transaction open between reads), and cannot write.
    #[tokio::test]
    async fn a_read_here_sees_every_commit_before_it_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open_sqlite(&dir.path().join("app.db")).await.unwrap();
        write(&db, "CREATE TABLE lines (text TEXT)").await;
        assert_eq!(lines(here(&db)), 0);
        for n in 1..=3 {
            write(&db, "INSERT INTO lines VALUES ('a line')").await;
            assert_eq!(lines(here(&db)), n, "the read after the commit sees it");
        }
        let refused = here(&db).read(|connection| connection.execute("INSERT INTO lines VALUES ('mine')", []));
        assert!(matches!(refused, Err(DbError::Here(_))), "{refused:?}");
        assert_eq!(lines(here(&db)), 3);
        // A table made after the connection was: its cached statements are prepared again.
        write(&db, "ALTER TABLE lines ADD COLUMN at INTEGER").await;
        write(&db, "INSERT INTO lines VALUES ('later', 1)").await;
        assert_eq!(lines(here(&db)), 4);
    }

    /// A thread keeps one connection per database it reads, and lets go of those whose database
    /// was closed (dropped) at its next read.
    #[tokio::test]
    async fn a_thread_keeps_connections_only_to_databases_still_open() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (
            Db::open_sqlite(&dir.path().join("first.db")).await.unwrap(),
            Db::open_sqlite(&dir.path().join("second.db")).await.unwrap(),
        );
        for db in [&first, &second] {
            write(db, "CREATE TABLE lines (text TEXT)").await;
        }
        assert_eq!(open_here(), 0);
        lines(here(&first));
        lines(here(&first));
        assert_eq!(open_here(), 1, "one connection for both reads");
        lines(here(&second));
        assert_eq!(open_here(), 2);
        first.close().await;
        drop(first);
        lines(here(&second));
        assert_eq!(open_here(), 1, "the closed database's connection is gone");
    }
}
