//! What several scenarios share: the sizes of the loads (which the references are seeded for too)
//! and the conversations the loads run on.

use db::on;

use crate::process::{Client, ServerProcess};

pub const THROUGHPUT_ANSWERS: usize = 1_000;
/// Each throughput load is measured this many times, in turns with its reference; the report
/// keeps the median run.
pub const RUNS: usize = 3;
/// The outbox's cost is a difference of two throughputs, each a load of a third of a second at
/// the answers row's size: run-to-run spread (a few tenths) buried it. Longer loads, many turns,
/// and the cost taken per turn, between loads run one right after the other, so the machine's
/// and the database's drift between turns (WAL checkpoints, other work) cancels.
pub const OUTBOX_ANSWERS: usize = 3_000;
pub const OUTBOX_RUNS: usize = 11;
/// The SQLite answer reference's waiting conversations: `RUNS` loads for the answers row, then
/// `3 * OUTBOX_RUNS` for the rows' cost (without them, the audit row, both). Seeded alike
/// whatever runs, so the answers row's reference meets the same database either way.
pub const REFERENCE_ANSWERS: usize = RUNS * THROUGHPUT_ANSWERS + 3 * OUTBOX_RUNS * OUTBOX_ANSWERS;
/// The PostgreSQL reference's: `RUNS` loads for its answers row.
pub const PG_REFERENCE_ANSWERS: usize = RUNS * THROUGHPUT_ANSWERS;
/// Concurrent clients of every throughput load.
pub const CONCURRENCY: usize = 8;
/// Messages the poll scenario puts before the working turn, so "full" has a transcript to carry.
pub const POLLED_HISTORY: usize = 100;
/// Messages of the conversation whose page is rendered.
pub const LONG_CONVERSATION: usize = 200;

/// A conversation whose turn stays in flight (the model holds its answer), with one message.
pub async fn working_conversation(client: &Client) -> String {
    let id = client.create_conversation().await;
    client.send(&id, "hold this turn").await;
    let (status, poll) = client.call_json("poll", &[("id", &id), ("after", "1")]).await;
    assert_eq!(status, 200);
    assert!(poll["conversation"].is_null(), "the fast path answers a working turn: {poll}");
    id
}

/// Appends `count` messages (alternating question and Markdown answer) straight to the database.
pub async fn insert_messages(server: &ServerProcess, id: &str, count: usize) {
    let db = server.open_database().await;
    on!(&db, pool => {
        let mut tx = pool.begin().await.unwrap();
        insert_transcript!(tx, id, count);
        tx.commit().await.unwrap();
    });
    db.close().await;
}

/// A working conversation with `POLLED_HISTORY` messages before its turn.
pub async fn polled_conversation(server: &ServerProcess, client: &Client) -> String {
    let id = working_conversation(client).await;
    insert_messages(server, &id, POLLED_HISTORY).await;
    id
}
