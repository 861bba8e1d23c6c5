//! The report being written: its sections and tables, the machine it ran on, the WASM sizes, and
//! the headline figures the summary puts first.

use std::path::Path;

use crate::summary::{self, Better, Committed, Figure};

pub struct Report {
    body: String,
    figures: Vec<Figure>,
    commit: String,
    date: String,
    cpu: String,
}

impl Report {
    pub fn new() -> Report {
        Report {
            body: String::new(),
            figures: Vec::new(),
            commit: String::new(),
            date: String::new(),
            cpu: String::new(),
        }
    }

    /// A headline figure for the summary table (and `figures.json`).
    pub fn figure(&mut self, figure: Figure) {
        self.figures.push(figure);
    }

    pub fn line(&mut self, text: &str) {
        self.body.push_str(text);
        self.body.push('\n');
    }

    pub fn section(&mut self, title: &str, method: &str) {
        self.line(&format!("\n## {title}\n\n{method}\n"));
    }

    pub fn table(&mut self, head: &[&str], rows: &[Vec<String>]) {
        self.line(&format!("| {} |", head.join(" | ")));
        self.line(&format!("|{}|", head.iter().map(|_| "---").collect::<Vec<_>>().join("|")));
        for row in rows {
            self.line(&format!("| {} |", row.join(" | ")));
        }
    }

    pub fn machine(&mut self) {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu =
            cpuinfo.lines().find_map(|l| l.strip_prefix("model name")).map(|l| l.trim_start_matches([' ', '\t', ':']));
        self.cpu = cpu.unwrap_or_default().to_string();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:")).map(str::trim).unwrap_or("?");
        let command = |program: &str, args: &[&str]| {
            std::process::Command::new(program)
                .args(args)
                .output()
                .ok()
                .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
                .unwrap_or_default()
        };
        let now = time::OffsetDateTime::now_utc();
        self.date = now
            .format(time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC"))
            .unwrap_or_default();
        self.commit = command("git", &["rev-parse", "--short", "HEAD"]);
        // The report and figures files are what this run rewrites; anything else changed means
        // the figures are not the commit's.
        let changed = command("git", &["status", "--porcelain", "--untracked-files=no"]);
        if changed.lines().any(|line| !line.ends_with("bench/RESULTS.md") && !line.ends_with("bench/figures.json")) {
            self.commit.push_str(" with uncommitted changes");
        }
        self.section(
            "Machine",
            &format!(
                "- Date: {}\n- CPU: {} ({} logical cores available)\n- Memory: {memory}\n- Kernel: {}\n- Rust: {}\n- Commit: {}\n- Build: release server binary, release (`wasm-release`) frontend",
                self.date,
                cpu.unwrap_or("?"),
                std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
                command("uname", &["-sr"]),
                command("rustc", &["--version"]),
                self.commit,
            ),
        );
    }

    pub fn wasm(&mut self, site: &Path, reference: &Path, note: &str) {
        let wasm = std::fs::read(built_file(site, "wasm")).expect("the release site is built");
        let js = std::fs::read(built_file(site, "js")).expect("the release site is built");
        let reference = std::fs::read(reference).expect("the WASM reference is built (scripts/bench builds it)");
        self.section(
            "WASM size",
            &format!(
                "The hydrate bundle as served from `pkg/`. {note} Brotli at quality 11, window 22 (what the build's \
                 pre-compression step, `pack_site`, writes next to each file). **Limit reference**: \
                 `bench/wasm-reference`, the smallest Leptos app that hydrates with the kinds of work Tourguide's pages do \
                 (two routes and a link, a title, a list loaded through a server function and shown with `For`, a form \
                 posted through another, an event stream that loads the list again, the panic hook), built and optimised \
                 the same way: what the framework costs before any of Tourguide's own pages."
            ),
        );
        self.table(
            &["file", "raw", "brotli"],
            &[
                vec!["tourguide.<hash>.wasm".into(), kib(wasm.len()), kib(brotli_len(&wasm))],
                vec!["tourguide.<hash>.js".into(), kib(js.len()), kib(brotli_len(&js))],
                vec!["limit reference, WASM".into(), kib(reference.len()), kib(brotli_len(&reference))],
            ],
        );
        self.figure(
            Figure::new(
                "wasm_brotli_kib",
                "WASM bundle, brotli",
                brotli_len(&wasm) as f64 / 1024.0,
                "KiB",
                Better::Lower,
            )
            .reference(brotli_len(&reference) as f64 / 1024.0)
            .target(250.0),
        );
    }

    /// The report (the summary first), the figures for `figures.json`, and what the summary
    /// found wrong (regressions against `committed`, references that are not limits).
    pub fn finish(self, committed: &Committed) -> (String, String, summary::Findings) {
        let (summary, findings) = summary::render(&self.figures, committed, &self.cpu);
        let report = format!(
            "# Benchmark results\n\nWritten by `scripts/bench` (the `bench` crate) from one real run; nothing here is typed by hand. \
             Server and load generator share the machine's cores over loopback, so throughput figures are a floor for a \
             dedicated server. The model is a loopback stand-in that answers at once, so model time is not in any figure.\n{summary}{}",
            self.body
        );
        (report, summary::to_json(&self.figures, &self.commit, &self.date, &self.cpu), findings)
    }
}

/// A file of the built site by kind (`js`, `wasm`, `css`), under the hashed name `hash.txt` gives.
fn built_file(site: &Path, kind: &str) -> std::path::PathBuf {
    let hashes = std::fs::read_to_string(site.join("hash.txt")).expect("the site was built with hashed names");
    let hash = hashes
        .lines()
        .find_map(|line| line.strip_prefix(kind).and_then(|rest| rest.strip_prefix(':')))
        .unwrap_or_else(|| panic!("hash.txt names no {kind} file"))
        .trim();
    site.join(format!("pkg/tourguide.{hash}.{kind}"))
}

fn brotli_len(bytes: &[u8]) -> usize {
    let mut out = Vec::new();
    let params = brotli::enc::BrotliEncoderParams { quality: 11, lgwin: 22, ..Default::default() };
    brotli::BrotliCompress(&mut &bytes[..], &mut out, &params).unwrap();
    out.len()
}

pub fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

pub fn kib(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}
