//! The limit references as the bench drives them: each a process of its own (this binary again,
//! see `sqlite_reference` and `postgres_reference`), seeded with the conversations the loads
//! need, and signed in with the client Tourguide's loads use, so a reference's figure and
//! Tourguide's differ only in the server.

use std::path::Path;
use std::time::Duration;

use db::{on_read, Db, Location};

use crate::process::{Client, ReferenceProcess};
use crate::reference_data::Seeding;

pub struct Reference {
    process: ReferenceProcess,
    /// Signed in as the reference's user (its session in the cookie jar).
    pub client: Client,
    database: String,
}

impl Reference {
    /// The SQLite reference on a file in `dir`: `answers` waiting conversations, a working one
    /// with `polled` messages and an idle one with `long` messages.
    pub async fn sqlite(dir: &Path, answers: usize, polled: usize, long: usize) -> Reference {
        let database = dir.join("reference.db").display().to_string();
        Self::start(crate::sqlite_reference::FLAG, Seeding { database, answers, polled, long }).await
    }

    /// The PostgreSQL reference on the (empty) database `url`, seeded as [`Reference::sqlite`].
    pub async fn postgres(url: &str, answers: usize, polled: usize, long: usize) -> Reference {
        let seeding = Seeding { database: url.to_string(), answers, polled, long };
        Self::start(crate::postgres_reference::FLAG, seeding).await
    }

    async fn start(flag: &str, seeding: Seeding) -> Reference {
        let process = ReferenceProcess::start(flag, &seeding.to_args()).await;
        let client = Client::signed_in(&process.base, "reference").await;
        Reference { process, client, database: seeding.database }
    }

    /// The reference process's CPU time so far (user + system).
    pub fn cpu_time(&self) -> Duration {
        self.process.cpu_time()
    }

    /// The audit rows of answers and the outbox events about the reference's user written so far:
    /// an `INSERT … SELECT` whose source matched nothing would write neither, without an error.
    pub async fn audited_rows(&self) -> (i64, i64) {
        let db = Db::open(&Location::parse(&self.database)).await.expect("the reference database opens");
        let counts: (i64, i64) = on_read!(&db, pool => sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM audit_log WHERE action = 'answered' AND owner_name = 'reference'),
                    (SELECT COUNT(*) FROM webhook_outbox o JOIN audit_log a ON a.id = o.audit_id
                        WHERE o.kind = 'run.decided' AND a.owner_name = 'reference' AND a.action = 'answered')",
        )
        .fetch_one(pool)
        .await)
        .expect("the rows are counted");
        db.close().await;
        counts
    }

    pub async fn stop(self) {
        self.process.stop().await;
    }
}
