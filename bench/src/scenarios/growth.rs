//! List, poll and page latency as the database grows to a million messages and 10,000 users.

use std::time::Instant;

use db::{on, Db};

use crate::process::{Client, ServerProcess};
use crate::report::Report;
use crate::stats::{millis, ms, Sample};
use crate::summary::{Better, Figure};

use super::shared::working_conversation;

/// How the growth user's history and the rest of the database grow, one step after another.
#[derive(Clone, Copy)]
enum Grow {
    /// The growth user reaches this many conversations (2 messages each).
    Conversations(usize),
    /// Every conversation of the growth user but the measured idle one gets this many more
    /// messages.
    Messages(usize),
    /// This many other users, each with a session and 2 conversations of 2 messages.
    Users(usize),
}

const STEPS: [Grow; 6] = [
    Grow::Conversations(100),
    Grow::Conversations(1_000),
    Grow::Conversations(10_000),
    Grow::Conversations(100_000),
    Grow::Messages(8),
    Grow::Users(10_000),
];
const GROWTH_ROUNDS: usize = 200;
/// Blocks of GROWTH_ROUNDS per figure and step; the one with the lowest p50 is reported.
const GROWTH_BLOCKS: usize = 3;

fn conversation_id(n: usize) -> String {
    format!("{:08x}-0000-4000-8000-{:012x}", 0xbe_u32, n)
}

const GROWTH_LINES: [(&str, &str); 2] =
    [("user", "How do I word the opening hours?"), ("assistant", "One format, every day named.")];

/// Adds conversations `from..to` to the user, each with a question and an answer.
async fn add_conversations(db: &Db, user: i64, from: usize, to: usize, id_of: impl Fn(usize) -> String) {
    on!(db, pool => {
        let mut tx = pool.begin().await.unwrap();
        for n in from..to {
            let id = id_of(n);
            let at = 1_700_000_000 + n as i64;
            sqlx::query("INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)")
                .bind(&id)
                .bind(user)
                .bind(format!("Conversation {n}"))
                .bind(at)
                .bind(at)
                .execute(&mut *tx)
                .await
                .unwrap();
            for (role, content) in GROWTH_LINES {
                insert_message!(&mut *tx, &id, role, content, at);
            }
        }
        tx.commit().await.unwrap();
    });
}

/// `extra` more messages in each of the growth user's conversations `1..count` (the idle one,
/// number 0, keeps its two).
async fn add_messages(db: &Db, count: usize, extra: usize) {
    on!(db, pool => {
        let mut tx = pool.begin().await.unwrap();
        for n in 1..count {
            let id = conversation_id(n);
            for k in 0..extra {
                let (role, content) = GROWTH_LINES[k % 2];
                insert_message!(&mut *tx, &id, role, content, 1_700_000_000 + n as i64);
            }
        }
        tx.commit().await.unwrap();
    });
}

/// `count` other users, each with a session and two conversations of two messages.
async fn add_users(db: &Db, count: usize) {
    for chunk in (0..count).collect::<Vec<_>>().chunks(1_000) {
        for &n in chunk {
            let name = format!("member-{n}");
            let user: i64 = on!(db, pool => sqlx::query_scalar(
                "INSERT INTO users (username, password_hash, created_at) VALUES ($1, '-', 0) RETURNING id",
            )
            .bind(&name)
            .fetch_one(pool)
            .await)
            .unwrap();
            on!(db, pool => sqlx::query("INSERT INTO sessions (token_hash, user_id, expires_at) VALUES ($1, $2, $3)")
                .bind(format!("{n:064x}"))
                .bind(user)
                .bind(db::now() + 86_400)
                .execute(pool)
                .await
                .map(|_| ()))
            .unwrap();
            add_conversations(db, user, 0, 2, |k| format!("{:08x}-0000-4000-8000-{:012x}", 0xaa_u32, n * 2 + k)).await;
        }
    }
}

/// Requests of a kind made before they are timed, so the first row of the table does not carry the
/// first requests the server (and its connection pools, caches and the page cache) has seen.
const WARM_UP: usize = 50;

async fn timed(rounds: usize, mut call: impl AsyncFnMut()) -> Sample {
    for _ in 0..WARM_UP {
        call().await;
    }
    let mut durations = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        call().await;
        durations.push(started.elapsed());
    }
    Sample::new(durations)
}

pub async fn growth(report: &mut Report, server: &ServerProcess) {
    let db = server.open_database().await;
    let hash = server::auth::hash_password(crate::process::PASSWORD);
    let user: i64 = on!(&db, pool => sqlx::query_scalar(
        "INSERT INTO users (username, password_hash, created_at) VALUES ('growth', $1, 0) RETURNING id",
    )
    .bind(&hash)
    .fetch_one(pool)
    .await)
    .unwrap();
    let client = Client::signed_in(&server.base, "growth").await;
    let working = working_conversation(&client).await;
    let idle = conversation_id(0);
    let page = format!("{}/c/{idle}", client.base);

    let mut rows = Vec::new();
    let mut p50s: Vec<[f64; 4]> = Vec::new();
    let (mut conversations, mut messages, mut users) = (0, 0, 1);
    for step in STEPS {
        let adding = Instant::now();
        match step {
            Grow::Conversations(size) => {
                add_conversations(&db, user, conversations, size, conversation_id).await;
                messages += 2 * (size - conversations);
                conversations = size;
            }
            Grow::Messages(extra) => {
                add_messages(&db, conversations, extra).await;
                messages += extra * (conversations - 1);
            }
            Grow::Users(count) => {
                add_users(&db, count).await;
                users += count;
            }
        }
        let added_in = adding.elapsed();
        // Each figure is measured in turns with the others, GROWTH_BLOCKS times, and the block
        // with the lowest p50 is kept: the steps are minutes apart, and on a shared host a slow
        // minute read as growth (the same binary's fast poll ratio swung from 0.75× to 1.37×).
        let mut best: [Option<Sample>; 4] = Default::default();
        for _ in 0..GROWTH_BLOCKS {
            let samples = [
                timed(GROWTH_ROUNDS, async || {
                    let (status, list) = client.call_json("conversations", &[]).await;
                    assert_eq!(status, 200);
                    assert_eq!(list.as_array().unwrap().len(), (conversations + 1).min(100));
                })
                .await,
                timed(GROWTH_ROUNDS, async || {
                    let (status, poll) = client.call_json("poll", &[("id", &working), ("after", "1")]).await;
                    assert_eq!(status, 200);
                    assert!(poll["conversation"].is_null());
                })
                .await,
                timed(GROWTH_ROUNDS, async || {
                    let (status, poll) = client.call_json("poll", &[("id", &idle), ("after", "0")]).await;
                    assert_eq!(status, 200);
                    assert_eq!(poll["total"], 2);
                })
                .await,
                timed(GROWTH_ROUNDS, async || {
                    let response = client.http.get(&page).send().await.unwrap();
                    assert_eq!(response.status(), 200);
                    assert!(response.text().await.unwrap().contains("One format, every day named."));
                })
                .await,
            ];
            for (kept, sample) in best.iter_mut().zip(samples) {
                if kept.as_ref().is_none_or(|kept| sample.p50() < kept.p50()) {
                    *kept = Some(sample);
                }
            }
        }
        let [list, fast, full, rendered] = best.map(|sample| sample.expect("at least one block"));
        p50s.push([millis(list.p50()), millis(fast.p50()), millis(full.p50()), millis(rendered.p50())]);
        rows.push(vec![
            format!("{conversations}"),
            format!("{messages}"),
            format!("{users}"),
            format!("{} / {}", ms(list.p50()), ms(list.p99())),
            format!("{} / {}", ms(fast.p50()), ms(fast.p99())),
            format!("{} / {}", ms(full.p50()), ms(full.p99())),
            format!("{} / {}", ms(rendered.p50()), ms(rendered.p99())),
            format!("{:.1} s", added_in.as_secs_f64()),
        ]);
    }
    db.close().await;
    report.section(
        "List, poll and page latency as the database grows",
        &format!(
            "One user's history grows from 100 to 100,000 conversations of 2 messages, then to a million messages \
             (8 more in every conversation but the measured one: 999,992), then 10,000 other users join (each with a session \
             and 2 conversations), all inserted straight into the database between steps. {GROWTH_ROUNDS} sequential \
             requests per figure (p50 / p99), after {WARM_UP} unmeasured ones, in {GROWTH_BLOCKS} blocks taken in turns \
             with the other figures' blocks; the block with the lowest p50 is shown (the steps are minutes apart, and \
             a slow minute on a shared host is not growth). List: `POST /api/conversations` (the latest 100). Fast poll: a working \
             conversation, client up to date. Full poll: an idle 2-message conversation. Page: `GET /c/{{id}}` of \
             that conversation (server-side rendering with the conversation list)."
        ),
    );
    report.table(
        &["conversations", "messages", "users", "list", "fast poll", "full poll", "page", "(insert time)"],
        &rows,
    );
    let (smallest, largest) = (p50s[0], p50s[p50s.len() - 1]);
    let names = ["list", "fast poll", "full poll", "page"];
    let keys = ["growth_list_ratio", "growth_fast_poll_ratio", "growth_full_poll_ratio", "growth_page_ratio"];
    for (index, (key, name)) in keys.into_iter().zip(names).enumerate() {
        report.figure(
            Figure::new(
                key,
                format!("{name} p50 at {messages} messages and {users} users ÷ at 100 conversations"),
                largest[index] / smallest[index],
                "×",
                Better::Lower,
            )
            .target(1.2)
            .saturating_at(1.0),
        );
    }
}
