//! PostgreSQL's plans for the polls on a young database (PostgreSQL only). Autovacuum's first
//! ANALYZE of a fresh install can meet `messages` holding one conversation: its statistics then
//! say every message is of that conversation, and the polls' count of a conversation's messages
//! read the whole table, slower with every message (the bench's one-process polls fell 4,249 →
//! 2,042/s over three turns at 4× the CPU, issue 45). The migrations tell the planner what the
//! column holds (`n_distinct`), so no such ANALYZE turns the index away.

use std::sync::Arc;

use db::Location;
use server::store::{PG_POLL_WHOLE, POLL_HEAD};

use crate::harness::{location_in, TestServer};

/// Messages in the conversations other than the polled one, added after the unlucky ANALYZE.
const LATER: i64 = 12_000;

#[tokio::test]
async fn the_polls_read_a_conversations_messages_by_index_after_an_analyze_of_one_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let Location::Postgres(url) = location_in(&dir).await else { return };
    let server = TestServer::start_in(dir, Arc::new(demo::DemoProvider)).await;
    let client = server.signed_in("demo").await;
    let polled = client.create_conversation().await;
    let mut others = Vec::new();
    for _ in 0..20 {
        others.push(client.create_conversation().await);
    }
    let db = db::Db::open(&Location::Postgres(url)).await.unwrap();
    let db::Db::Postgres(pool) = &db else { unreachable!("a PostgreSQL location") };
    let insert = "INSERT INTO messages (conversation_id, role, content, created_at)
                  SELECT $1, 'user', 'line ' || n, 0 FROM generate_series(1, $2) n";
    sqlx::query(insert).bind(&polled).bind(101_i64).execute(pool).await.unwrap();
    // Autovacuum's first visit, while the table holds one conversation's lines.
    sqlx::query("ANALYZE messages").execute(pool).await.unwrap();
    for other in &others {
        sqlx::query(insert).bind(other).bind(LATER / 20).execute(pool).await.unwrap();
    }

    for (name, sql) in [("the fast poll", POLL_HEAD), ("the full poll", PG_POLL_WHOLE)] {
        let explain = format!("EXPLAIN {sql}");
        let query = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(explain)).bind("no session").bind(0_i64);
        let query = query.bind(&polled);
        let query = if sql == PG_POLL_WHOLE { query.bind(server::markdown::RENDERER_VERSION) } else { query };
        let plan = query.fetch_all(pool).await.unwrap().join("\n");
        assert!(!plan.contains("Seq Scan on messages"), "{name} reads the whole table:\n{plan}");
        assert!(plan.contains("messages_conversation"), "{name} without the index:\n{plan}");
    }
    db.close().await;
    server.stop().await;
}
