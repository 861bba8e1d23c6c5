//! Tourguide on PostgreSQL in both layouts (one process doing web and worker; two web processes
//! and a worker), beside the PostgreSQL limit reference on the same cluster, and that reference
//! beside the SQLite one: what the backend itself costs.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::model::Model;
use crate::process::{cpu_time_of, Client, Role, ServerProcess};
use crate::reference::Reference;
use crate::reference_data::{Answer, POLLED};
use crate::report::Report;
use crate::stats::{median, ms, runs_of, Load};
use crate::summary::{Better, Figure};

use super::answers::{answer_load, answers_sent, asked, reference_answer_load, Carried};
use super::polls::{poll_load, FAST_POLLS, FULL_POLLS};
use super::shared::{
    polled_conversation, CONCURRENCY, LONG_CONVERSATION, PG_REFERENCE_ANSWERS, POLLED_HISTORY, RUNS, THROUGHPUT_ANSWERS,
};

/// The target for Tourguide on PostgreSQL (one process) against the PostgreSQL reference, in % of
/// the reference's rate (issue 45).
const TARGET_PCT: f64 = 80.0;

/// A figure's key made of parts: keys live as long as the run.
fn leak(key: String) -> &'static str {
    Box::leak(key.into_boxed_str())
}

/// The CPU time so far of each PostgreSQL backend serving `database` (their process titles name
/// it: `postgres: USER DATABASE HOST(PORT) STATE`); a backend that has ended is not counted.
fn backends_cpu_each(database: &str) -> HashMap<u32, Duration> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return HashMap::new() };
    let needle = format!(" {database} ");
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let title = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let title = String::from_utf8_lossy(&title);
            title.starts_with("postgres: ") && title.contains(&needle)
        })
        .map(|pid| (pid, cpu_time_of(pid)))
        .collect()
}

/// Their sum.
fn backends_cpu(database: &str) -> Duration {
    backends_cpu_each(database).into_values().sum()
}

/// What the backends alive at `after` used since `before`: one that ended meanwhile (a stopped
/// process's, still exiting at `before`) takes none of its past time away.
fn backends_cpu_since(before: &HashMap<u32, Duration>, after: &HashMap<u32, Duration>) -> Duration {
    after.iter().map(|(pid, cpu)| cpu.saturating_sub(before.get(pid).copied().unwrap_or_default())).sum()
}

/// The database's name in a PostgreSQL URL.
fn database_of(url: &str) -> String {
    let path = url.split_once("://").map_or(url, |(_, rest)| rest);
    let name = path.split_once('/').map_or("", |(_, name)| name);
    name.split('?').next().unwrap_or_default().to_string()
}

/// One layout of Tourguide on its own database: its processes and a signed-in client per web
/// process.
struct Layout {
    processes: Vec<ServerProcess>,
    clients: Vec<Client>,
    database: String,
    polled: String,
    url: String,
}

impl Layout {
    async fn start(start: &impl AsyncFn(&str, Role) -> ServerProcess, url: &str, roles: &[Role]) -> Layout {
        let mut processes = Vec::new();
        for &role in roles {
            processes.push(start(url, role).await);
        }
        let mut clients = Vec::new();
        for process in processes.iter().filter(|process| !process.base.is_empty()) {
            clients.push(Client::signed_in(&process.base, "demo").await);
        }
        let web = processes.iter().find(|process| !process.base.is_empty()).expect("a web process");
        let polled = polled_conversation(web, &clients[0]).await;
        Layout { processes, clients, database: database_of(url), polled, url: url.to_string() }
    }

    /// The CPU time of its processes and of the database's backends.
    fn cpu(&self) -> Duration {
        self.processes.iter().map(ServerProcess::cpu_time).sum::<Duration>() + backends_cpu(&self.database)
    }

    async fn stop(self) {
        for process in self.processes {
            process.stop().await;
        }
    }
}

/// What one side measured over its runs: the loads, and the CPU per request over every run.
#[derive(Default)]
struct Side {
    answers: Vec<Load>,
    fast: Vec<Load>,
    full: Vec<Load>,
    carried: Vec<Carried>,
    answer_cpu: Duration,
    /// Of `answer_cpu`, the PostgreSQL backends' (where the two sides' statements differ).
    answer_backend_cpu: Duration,
    fast_cpu: Duration,
    full_cpu: Duration,
}

/// A side's medians.
struct Medians {
    answers: Load,
    fast: Load,
    full: Load,
    carried: Option<Carried>,
    /// CPU per answer, fast poll and full poll, in µs.
    cpu: [f64; 3],
    spread: String,
}

impl Side {
    fn medians(mut self) -> Medians {
        let spread =
            format!("answers {}; fast {}; full {}", runs_of(&self.answers), runs_of(&self.fast), runs_of(&self.full));
        self.carried.sort_by_key(|carried| carried.elapsed);
        let carried = (!self.carried.is_empty()).then(|| self.carried.swap_remove(self.carried.len() / 2));
        let per = |cpu: Duration, count: usize| cpu.as_secs_f64() * 1e6 / (RUNS * count) as f64;
        Medians {
            cpu: [
                per(self.answer_cpu, THROUGHPUT_ANSWERS),
                per(self.fast_cpu, FAST_POLLS),
                per(self.full_cpu, FULL_POLLS),
            ],
            answers: median(self.answers),
            fast: median(self.fast),
            full: median(self.full),
            carried,
            spread,
        }
    }
}

/// The answer and poll loads of one run on a Tourguide layout.
async fn run_layout(side: &mut Side, layout: &Layout, model: &Model, prefix: &str) {
    let cpu = || layout.cpu();
    // From the first answer on (the questions' setup is not the answers' cost), until every run
    // was carried on, as on SQLite.
    let (answers, carried) = answer_load(&layout.clients, Some(&cpu), model, prefix).await;
    let answered = u32::try_from(THROUGHPUT_ANSWERS).expect("a count");
    side.answer_cpu += carried.cpu_per_run.expect("the CPU was read") * answered;
    side.answers.push(answers);
    side.carried.push(carried);
    let known = (POLLED_HISTORY + 1).to_string();
    let before = cpu();
    side.fast.push(poll_load(&layout.clients, &layout.polled, &known, FAST_POLLS).await);
    side.fast_cpu += cpu().saturating_sub(before);
    let before = cpu();
    side.full.push(poll_load(&layout.clients, &layout.polled, "0", FULL_POLLS).await);
    side.full_cpu += cpu().saturating_sub(before);
}

/// The answers alone on a web process whose worker is stopped while they are sent (the questions
/// were asked with it running, and it carries the answered runs on after the load, before anything
/// else is measured): what an answer costs Tourguide without its run's continuation, the work the
/// reference does.
async fn run_web_alone(
    side: &mut Side,
    layout: &mut Layout,
    start: &impl AsyncFn(&str, Role) -> ServerProcess,
    model: &Model,
    prefix: &str,
) {
    let client = layout.clients[0].clone();
    let questions = Arc::new(asked(&client, THROUGHPUT_ANSWERS, prefix).await);
    let continued: Vec<_> = questions.iter().map(|question| model.continuation_of(&question.tag)).collect();
    let worker = layout.processes.remove(0);
    worker.stop().await;
    let web_cpu = || layout.processes.iter().map(ServerProcess::cpu_time).sum::<Duration>();
    let (before, backends_before) = (web_cpu(), backends_cpu_each(&layout.database));
    let (load, _) = answers_sent(std::slice::from_ref(&client), &questions).await;
    let backends = backends_cpu_since(&backends_before, &backends_cpu_each(&layout.database));
    side.answer_cpu += web_cpu().saturating_sub(before) + backends;
    side.answer_backend_cpu += backends;
    side.answers.push(load);
    layout.processes.insert(0, start(&layout.url, Role::Worker).await);
    for continuation in continued {
        tokio::time::timeout(Duration::from_secs(120), continuation).await.expect("every run continues").unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
}

async fn run_reference(side: &mut Side, reference: &Reference, database: &str, run: usize) {
    let cpu = || reference.cpu_time() + backends_cpu(database);
    let (before, backends_before) = (cpu(), backends_cpu(database));
    let first = run * THROUGHPUT_ANSWERS;
    side.answers.push(reference_answer_load(reference, Answer::Audited, first, THROUGHPUT_ANSWERS).await);
    side.answer_cpu += cpu().saturating_sub(before);
    side.answer_backend_cpu += backends_cpu(database).saturating_sub(backends_before);
    let clients = std::slice::from_ref(&reference.client);
    let known = (POLLED_HISTORY + 1).to_string();
    let before = cpu();
    side.fast.push(poll_load(clients, POLLED, &known, FAST_POLLS).await);
    side.fast_cpu += cpu().saturating_sub(before);
    let before = cpu();
    side.full.push(poll_load(clients, POLLED, "0", FULL_POLLS).await);
    side.full_cpu += cpu().saturating_sub(before);
}

/// What the SQLite side measured above, for the rows beside it.
pub struct Sqlite<'a> {
    pub answers: &'a Load,
    pub fast: &'a Load,
    pub full: &'a Load,
    pub carried: &'a Carried,
    /// The SQLite reference's answers, fast and full polls (median runs).
    pub reference: [f64; 3],
}

/// Tourguide on PostgreSQL, one process and 2 web + 1 worker, and the PostgreSQL reference, each
/// on a database of its own made by `scratch` on the same cluster; RUNS runs of each in turns.
pub async fn postgres_side_by_side(
    report: &mut Report,
    start: impl AsyncFn(&str, Role) -> ServerProcess,
    scratch: impl AsyncFn() -> String,
    model: &Model,
    sqlite: Sqlite<'_>,
    cluster: &str,
) {
    let (one_url, two_url, reference_url) = (scratch().await, scratch().await, scratch().await);
    let one = Layout::start(&start, &one_url, &[Role::Both]).await;
    let two = Layout::start(&start, &two_url, &[Role::Worker, Role::Web, Role::Web]).await;
    let alone_url = scratch().await;
    let mut alone = Layout::start(&start, &alone_url, &[Role::Worker, Role::Web]).await;
    let reference =
        Reference::postgres(&reference_url, PG_REFERENCE_ANSWERS, POLLED_HISTORY + 1, LONG_CONVERSATION).await;
    let reference_db = database_of(&reference_url);
    let (mut ones, mut twos, mut bares, mut alones) =
        (Side::default(), Side::default(), Side::default(), Side::default());
    for run in 0..RUNS {
        // In turns, each in another place in every run, so none always meets the machine (and the
        // cluster's checkpoints) as another has just left it.
        for slot in 0..4 {
            match (run + slot) % 4 {
                0 => run_layout(&mut ones, &one, model, &format!("pg-one-{run}-")).await,
                1 => run_layout(&mut twos, &two, model, &format!("pg-two-{run}-")).await,
                2 => run_web_alone(&mut alones, &mut alone, &start, model, &format!("pg-alone-{run}-")).await,
                _ => run_reference(&mut bares, &reference, &reference_db, run).await,
            }
        }
    }
    one.stop().await;
    two.stop().await;
    alone.stop().await;
    reference.stop().await;
    let alone_answers = {
        let spread = runs_of(&alones.answers);
        let cpu = alones.answer_cpu.as_secs_f64() * 1e6 / (RUNS * THROUGHPUT_ANSWERS) as f64;
        (median(alones.answers), cpu, spread)
    };
    let per_answer = |cpu: Duration| cpu.as_secs_f64() * 1e6 / (RUNS * THROUGHPUT_ANSWERS) as f64;
    let backends = [per_answer(alones.answer_backend_cpu), per_answer(bares.answer_backend_cpu)];
    let (one, two, bare) = (ones.medians(), twos.medians(), bares.medians());

    report.section(
        "SQLite and PostgreSQL side by side",
        &format!(
            "The answer and poll loads above on PostgreSQL ({cluster}), in two layouts: one process doing web and \
             worker (as on SQLite), and two web processes and a separate worker process (the {CONCURRENCY} clients \
             spread over both web processes); each layout on a database of its own, all on the same two cores as \
             the database server and the load generator. **Limit reference** on PostgreSQL, measured in the same \
             run: a bare axum server on sqlx's connections in Tourguide's pool (`deadpool`'s, with `db::PgManager`: \
             one round trip a statement, see the round trips below), in a process of its own, on a database of its own on the same cluster, sent the same forms by the same \
             client, each request in the fewest statements that give Tourguide's result, in Tourguide's own SQL \
             where that is already so (`bench/src/postgres_reference.rs`): answer 2 (one joined read of the session, \
             the conversation and its run's pause, checked as the SQLite reference checks it; one write with the line, the job, the audit and outbox rows and \
             the NOTIFY, which a LISTEN connection of the reference's own hears, as each Tourguide process keeps \
             one), fast poll 1, full poll 1. Each of the three measured {RUNS} times, in turns (each first in \
             every third turn); the table shows the median runs (all runs: one process: {}; 2 web + 1 worker: {}; \
             reference: {}). CPU per request: the user and system time (`/proc`) of the side's server processes \
             and of the PostgreSQL backends serving its database, over every run of the load, divided by its \
             requests; for answers on Tourguide it includes the worker's continuation of each run.",
            one.spread, two.spread, bare.spread
        ),
    );
    let cell = |load: &Load| format!("{} ({} / {})", load.throughput(), ms(load.sample.p50()), ms(load.sample.p99()));
    let cpu = |us: f64| format!("{us:.0} µs");
    let row = |name: &str, sqlite: &Load, index: usize, pick: &dyn Fn(&Medians) -> &Load| {
        vec![
            name.to_string(),
            cell(sqlite),
            format!("{} / {}", cell(pick(&one)), cpu(one.cpu[index])),
            format!("{} / {}", cell(pick(&two)), cpu(two.cpu[index])),
            format!("{} / {}", cell(pick(&bare)), cpu(bare.cpu[index])),
        ]
    };
    report.table(
        &[
            "load (rate, p50 / p99)",
            "SQLite, 1 process",
            "PostgreSQL, 1 process / CPU per request",
            "PostgreSQL, 2 web + 1 worker / CPU",
            "PostgreSQL limit reference / CPU",
        ],
        &[
            row("answers", sqlite.answers, 0, &|side| &side.answers),
            row("fast poll", sqlite.fast, 1, &|side| &side.fast),
            row("full poll", sqlite.full, 2, &|side| &side.full),
        ],
    );
    let (alone_load, alone_cpu, alone_spread) = &alone_answers;
    report.line(&format!(
        "\nAnswers on a web process alone (a layout of its own, a web process and a worker on a database of its \
         own; the worker stopped while the answers are sent, started again after the load to carry the answered \
         runs on before anything else is measured): what an answer itself costs Tourguide, the work the limit \
         reference does, without the run's continuation, which takes the cores' time in the layouts above. {} \
         ({} / {}), {alone_cpu:.0} µs of CPU an answer with its backends ({:.0} µs of it the backends'), against \
         the reference's {} ({} / {}), {:.0} µs ({:.0} µs the backends'); all runs: {alone_spread}.",
        alone_load.throughput(),
        ms(alone_load.sample.p50()),
        ms(alone_load.sample.p99()),
        backends[0],
        bare.answers.throughput(),
        ms(bare.answers.sample.p50()),
        ms(bare.answers.sample.p99()),
        bare.cpu[0],
        backends[1],
    ));
    report.figure(
        Figure::new(
            "pg_web_alone_answers_per_s",
            "answers on PostgreSQL, a web process alone (its worker stopped: no continuation)",
            alone_load.rate(),
            "/s",
            Better::Higher,
        )
        .reference(bare.answers.rate())
        .target(TARGET_PCT / 100.0 * bare.answers.rate()),
    );
    let carried = |side: &Medians| {
        side.carried
            .as_ref()
            .map(|carried| {
                format!("{:.0}/s ({} / {})", carried.rate(), ms(carried.latency.p50()), ms(carried.latency.p99()))
            })
            .unwrap_or_default()
    };
    report.line(&format!(
        "\nAnswered runs carried on to the model (answer sent → its run's continuation at the model, p50 / p99): \
         SQLite {:.0}/s ({} / {}); PostgreSQL one process {}; 2 web + 1 worker {}.",
        sqlite.carried.rate(),
        ms(sqlite.carried.latency.p50()),
        ms(sqlite.carried.latency.p99()),
        carried(&one),
        carried(&two),
    ));
    let loads = [
        ("answers", "answers", &one.answers, &two.answers, &bare.answers),
        ("fast poll", "fast_poll", &one.fast, &two.fast, &bare.fast),
        ("full poll", "full_poll", &one.full, &two.full, &bare.full),
    ];
    for (name, key, one_load, _, bare_load) in loads {
        report.figure(
            Figure::new(
                leak(format!("pg_one_{key}_per_s")),
                format!("{name} on PostgreSQL (one process)"),
                one_load.rate(),
                "/s",
                Better::Higher,
            )
            .reference(bare_load.rate())
            .target(TARGET_PCT / 100.0 * bare_load.rate()),
        );
    }
    for (name, key, _, two_load, bare_load) in loads {
        report.figure(
            Figure::new(
                leak(format!("pg_{key}_per_s")),
                format!("{name} on PostgreSQL (2 web + 1 worker)"),
                two_load.rate(),
                "/s",
                Better::Higher,
            )
            .reference(bare_load.rate()),
        );
    }
    // Not a limit beside it: what the backend itself costs, PostgreSQL's reference against SQLite's.
    for ((name, key, _, _, bare_load), sqlite_reference) in loads.into_iter().zip(sqlite.reference) {
        report.figure(
            Figure::new(
                leak(format!("pg_reference_{key}_per_s")),
                format!("{name}: PostgreSQL reference (beside it: the SQLite reference)"),
                bare_load.rate(),
                "/s",
                Better::Higher,
            )
            .comparison(sqlite_reference),
        );
    }
    let cpu_figures = [
        (
            "pg_one_answer_cpu_us",
            "server CPU per answered run on PostgreSQL (one process, with its backends)",
            one.cpu[0],
        ),
        (
            "pg_one_fast_poll_cpu_us",
            "server CPU per fast poll on PostgreSQL (one process, with its backends)",
            one.cpu[1],
        ),
        (
            "pg_one_full_poll_cpu_us",
            "server CPU per full poll on PostgreSQL (one process, with its backends)",
            one.cpu[2],
        ),
    ];
    for (key, name, value) in cpu_figures {
        report.figure(Figure::new(key, name, value, "µs", Better::Lower));
    }
    super::round_trips::round_trips(report, &start, &scratch).await;
    if let Some(carried) = &two.carried {
        report.figure(
            Figure::new(
                "pg_carried_per_s",
                "answered runs carried on to the model on PostgreSQL, 2 web + 1 worker (reference: SQLite)",
                carried.rate(),
                "/s",
                Better::Higher,
            )
            .comparison(sqlite.carried.rate()),
        );
    }
}
