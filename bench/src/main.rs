//! `scripts/bench` runs this against the release server binary and writes `bench/RESULTS.md`.
//!
//! Every figure comes from real requests over loopback to real server processes on a real SQLite
//! file (and, side by side, on PostgreSQL with two web processes and a worker, when
//! `TOURGUIDE_TEST_POSTGRES` names a server); the model is an OpenAI-compatible stand-in that
//! answers at once (see `model`), so the figures are the server's own. Loops are bounded by a
//! count, never by time.

#[macro_use]
mod seed;

mod browser;
mod model;
mod postgres_reference;
mod process;
mod reference;
mod reference_data;
mod report;
mod scenarios;
mod sqlite_reference;
mod sse_reference;
mod stats;
mod summary;

use std::path::PathBuf;

use report::Report;

/// The server binary's allocator, so the SSE reference (this binary) is measured on the same one.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The names `--only` takes.
const SCENARIOS: [&str; 12] = [
    "wasm",
    "memory",
    "continuation",
    "streaming",
    "browser",
    "load",
    "outbox",
    "poll",
    "first-load",
    "ssr",
    "growth",
    "round-trips",
];

/// Measures Tourguide against its limit references and writes the report.
#[derive(clap::Parser)]
#[command(name = "bench")]
struct Args {
    /// The release server binary to measure.
    #[arg(long, default_value = "target/release/server")]
    server: PathBuf,
    /// The site it serves (the optimised WASM, whose size is reported).
    #[arg(long, default_value = "target/bench-site")]
    site: PathBuf,
    /// Where the report goes (with `--only`: target/bench-partial.md unless given).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The figures of this run, which the next run compares against as committed.
    #[arg(long, default_value = "bench/figures.json")]
    figures: PathBuf,
    /// The WASM limit reference (`bench/wasm-reference`), built and optimised as the site's is.
    #[arg(long, default_value = "target/wasm-reference/reference_bg.wasm")]
    wasm_reference: PathBuf,
    /// How the WASM was built, for the report.
    #[arg(long, default_value = "")]
    wasm_note: String,
    /// Just these scenarios, comma-separated (`memory,ssr`, or `poll`: the polls of `load` alone),
    /// for trying a change; no figures file is written.
    #[arg(long, value_delimiter = ',', value_parser = SCENARIOS)]
    only: Option<Vec<String>>,
}

impl Args {
    fn wants(&self, scenario: &str) -> bool {
        // A scenario `--only` cannot name would never run alone.
        assert!(SCENARIOS.contains(&scenario), "{scenario} is missing from SCENARIOS");
        self.only.as_ref().is_none_or(|only| only.iter().any(|name| name == scenario))
    }

    fn out(&self) -> PathBuf {
        match (&self.out, &self.only) {
            (Some(out), _) => out.clone(),
            (None, Some(_)) => PathBuf::from("target/bench-partial.md"),
            (None, None) => PathBuf::from("bench/RESULTS.md"),
        }
    }
}

/// 1,000 event streams need 1,000 sockets on each side; a default soft limit of 1,024 is too
/// close. The server inherits the raised limit.
fn raise_open_file_limit() {
    if let Err(error) = rlimit::increase_nofile_limit(8_192) {
        println!("could not raise the open file limit: {error}");
    }
}

fn main() {
    // The limit references run as processes of their own: this binary again, with their flag.
    match std::env::args().nth(1).as_deref() {
        Some(sse_reference::FLAG) => return sse_reference::serve(),
        Some(sqlite_reference::FLAG) => return sqlite_reference::serve(),
        Some(postgres_reference::FLAG) => return postgres_reference::serve(),
        _ => {}
    }
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(measure());
}

async fn measure() {
    let args = <Args as clap::Parser>::parse();
    raise_open_file_limit();
    let mut report = Report::new();
    report.machine();
    // A scenario of its own, so `--only` runs without the WASM reference built.
    if args.wants("wasm") {
        report.wasm(&args.site, &args.wasm_reference, &args.wasm_note);
    }

    let dir = tempfile::tempdir().unwrap();
    let (model, model_url) = model::Model::start().await;
    let server = process::ServerProcess::start(&args.server, &args.site, dir.path(), &model_url).await;
    let client = process::Client::signed_in(&server.base, "demo").await;
    let reference_dir = tempfile::tempdir().unwrap();
    // Seeding it takes a while: only when a scenario measures against it.
    let reference = match ["load", "outbox", "poll", "ssr"].iter().any(|scenario| args.wants(scenario)) {
        true => Some(
            reference::Reference::sqlite(
                reference_dir.path(),
                scenarios::REFERENCE_ANSWERS,
                scenarios::POLLED_HISTORY + 1,
                scenarios::LONG_CONVERSATION,
            )
            .await,
        ),
        false => None,
    };
    let sqlite_reference = || reference.as_ref().expect("the SQLite reference runs");

    if args.wants("memory") {
        eprintln!("memory and 1,000 event streams");
        // The same server binary once more, its allocator told to return freed pages at once.
        let purging_dir = tempfile::tempdir().unwrap();
        let purging = process::ServerProcess::start_with(
            &args.server,
            &args.site,
            purging_dir.path(),
            &model_url,
            &[(scenarios::PURGE_NOW.0, scenarios::PURGE_NOW.1)],
        )
        .await;
        let purging_client = process::Client::signed_in(&purging.base, "demo").await;
        scenarios::memory_and_event_streams(&mut report, (&server, &client), (&purging, &purging_client)).await;
        purging.stop().await;
    }
    if args.wants("continuation") {
        eprintln!("answer → continuation latency");
        scenarios::answer_to_continuation(&mut report, &client, &model).await;
    }
    if args.wants("streaming") {
        eprintln!("streamed replies");
        scenarios::streaming(&mut report, &server, &client, &model).await;
    }
    // Before the loads: they leave a turn the stand-in model holds for good, in one of the
    // worker's slots.
    if args.wants("browser") {
        eprintln!("state change → DOM in Chromium");
        scenarios::browser(&mut report, &server).await;
    }
    // The SQLite loads, kept for the PostgreSQL side by side, which runs last: the database
    // server's work after its loads (vacuum, checkpoints) took the cores from the scenarios after it
    // (the page's p50 and the fast poll's growth moved by a third in a full run).
    let mut sqlite_loads = None;
    if args.wants("load") {
        eprintln!("answer throughput");
        let reference = sqlite_reference();
        let (answers, carried, bare_answers) =
            scenarios::answer_throughput(&mut report, &server, &client, &model, reference).await;
        eprintln!("poll throughput");
        let [fast, full, bare_fast, bare_full] =
            scenarios::poll_throughput(&mut report, &server, &client, reference).await;
        sqlite_loads = Some((answers, carried, bare_answers, fast, full, bare_fast, bare_full));
    }
    if args.wants("outbox") {
        eprintln!("audit and outbox rows on answers");
        scenarios::outbox_cost(&mut report, sqlite_reference()).await;
    }
    // `load` measures the polls too; `poll` alone is for trying a change to them.
    if args.wants("poll") && !args.wants("load") {
        eprintln!("poll throughput");
        scenarios::poll_throughput(&mut report, &server, &client, sqlite_reference()).await;
    }
    if args.wants("first-load") {
        eprintln!("first load");
        scenarios::first_load(&mut report, &server, &client).await;
    }
    if args.wants("ssr") {
        eprintln!("server-side rendering");
        scenarios::ssr_of_a_long_conversation(&mut report, &server, &client, sqlite_reference()).await;
    }
    if args.wants("growth") {
        eprintln!("growth to a million messages and 10,000 users");
        scenarios::growth(&mut report, &server).await;
    }
    if let Some((answers, carried, bare_answers, fast, full, bare_fast, bare_full)) = sqlite_loads {
        match db::scratch_postgres().await.expect("a database on the bench's PostgreSQL server") {
            Some(url) => {
                eprintln!("the same on PostgreSQL: one process, 2 web processes + 1 worker, and its reference");
                let described = db::Location::parse(&url).describe();
                let start = async |url: &str, role| {
                    process::ServerProcess::spawn(&args.server, &args.site, url, &model_url, role).await
                };
                let scratch = async || {
                    db::scratch_postgres().await.expect("a database on the bench's PostgreSQL server").expect("set")
                };
                let sqlite = scenarios::Sqlite {
                    answers: &answers,
                    fast: &fast,
                    full: &full,
                    carried: &carried,
                    reference: [bare_answers.rate(), bare_fast.rate(), bare_full.rate()],
                };
                scenarios::postgres_side_by_side(&mut report, start, scratch, &model, sqlite, &described).await;
            }
            None => report.line("\n(No PostgreSQL server was given: `TOURGUIDE_TEST_POSTGRES` unset.)"),
        }
    }
    // `load` counts them too; alone, for trying a change to a request's statements.
    if args.wants("round-trips") && !args.wants("load") {
        eprintln!("round trips to PostgreSQL per request");
        let start = async |url: &str, role| {
            process::ServerProcess::spawn(&args.server, &args.site, url, &model_url, role).await
        };
        let scratch = async || {
            db::scratch_postgres()
                .await
                .expect("a database on the bench's PostgreSQL server")
                .expect("TOURGUIDE_TEST_POSTGRES")
        };
        scenarios::round_trips(&mut report, &start, &scratch).await;
    }
    report.line(&format!("\nServer RSS after the whole run: {} MiB.", server.rss_kib() / 1024));
    server.stop().await;
    let committed = summary::Committed::at_head(&args.figures);
    if let Some(reference) = reference {
        reference.stop().await;
    }
    let (results, figures, findings) = report.finish(&committed);
    let out = args.out();
    std::fs::write(&out, results).unwrap();
    if args.only.is_none() {
        std::fs::write(&args.figures, figures).unwrap();
    }
    println!("wrote {}", out.display());
    for regression in &findings.regressions {
        println!("REGRESSION against the committed figures: {regression}");
    }
    for row in &findings.not_limits {
        println!("REFERENCE IS NOT A LIMIT: {row}");
    }
    // A reference Tourguide beats does more than the least work: its rows claim nothing. Exit
    // code 2 (not 1, a panic's), so `scripts/bench-compare` tells it from a failed run.
    if !findings.not_limits.is_empty() {
        std::process::exit(2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn only_takes_every_scenario_and_refuses_others() {
        let args = Args::try_parse_from(["bench", "--only", &SCENARIOS.join(",")]).unwrap();
        assert!(SCENARIOS.iter().all(|scenario| args.wants(scenario)));
        assert_eq!(args.out(), PathBuf::from("target/bench-partial.md"));
        let some = Args::try_parse_from(["bench", "--only", "first-load,poll"]).unwrap();
        assert!(some.wants("first-load") && some.wants("poll") && !some.wants("load"));
        assert!(Args::try_parse_from(["bench", "--only", "firstload"]).is_err());
        // A partial run measures just what it names: not the WASM, whose reference it may not have built.
        let outbox = Args::try_parse_from(["bench", "--only", "outbox"]).unwrap();
        assert!(outbox.wants("outbox") && !outbox.wants("wasm") && !outbox.wants("load"));
        assert!(Args::try_parse_from(["bench"]).unwrap().wants("wasm"));
        assert_eq!(Args::try_parse_from(["bench"]).unwrap().out(), PathBuf::from("bench/RESULTS.md"));
    }
}
