//! The release server binary as a child process (so its memory is its own), and a signed-in
//! HTTP client for it.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const PASSWORD: &str = "bench-password";

pub struct ServerProcess {
    child: Child,
    /// Where it serves HTTP (empty for a worker-only process).
    pub base: String,
    /// Its `--database`: a SQLite file or a postgres:// URL.
    pub database: String,
}

/// What one server process does.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Web server and worker: the embedded default.
    Both,
    Web,
    Worker,
}

impl ServerProcess {
    /// One process doing everything, on a SQLite file in `dir`.
    pub async fn start(binary: &Path, site_root: &Path, dir: &Path, model_url: &str) -> ServerProcess {
        let database = dir.join("bench.db").display().to_string();
        Self::spawn(binary, site_root, &database, model_url, Role::Both).await
    }

    pub async fn spawn(binary: &Path, site_root: &Path, database: &str, model_url: &str, role: Role) -> ServerProcess {
        Self::spawn_with(binary, site_root, database, model_url, role, &[]).await
    }

    /// One process doing everything on a SQLite file in `dir`, with extra environment variables.
    pub async fn start_with(
        binary: &Path,
        site_root: &Path,
        dir: &Path,
        model_url: &str,
        env: &[(&str, &str)],
    ) -> ServerProcess {
        let database = dir.join("bench.db").display().to_string();
        Self::spawn_with(binary, site_root, &database, model_url, Role::Both, env).await
    }

    async fn spawn_with(
        binary: &Path,
        site_root: &Path,
        database: &str,
        model_url: &str,
        role: Role,
        env: &[(&str, &str)],
    ) -> ServerProcess {
        let (web, worker) = match role {
            Role::Both => ("on", "on"),
            Role::Web => ("on", "off"),
            Role::Worker => ("off", "on"),
        };
        let mut child = Command::new(binary)
            .env("TOURGUIDE_DATABASE", database)
            .env("TOURGUIDE_ADDRESS", "127.0.0.1:0")
            .env("TOURGUIDE_WEB", web)
            .env("TOURGUIDE_WORKER", worker)
            .env("LEPTOS_SITE_ROOT", site_root)
            .env("TOURGUIDE_DEMO_PASSWORD", PASSWORD)
            // The bench signs many clients in as one user from one address.
            .env("TOURGUIDE_LOGIN_ATTEMPTS", "100000")
            .env("TOURGUIDE_OPENAI_MODEL", "bench-model")
            .env("TOURGUIDE_OPENAI_BASE_URL", model_url)
            .env("RUST_LOG", "error")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the server binary starts (build it with scripts/bench)");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let base = loop {
            let line = lines.next_line().await.unwrap().expect("the server exited before it was up");
            if let Some(address) = line.strip_prefix("Tourguide listens on ") {
                break address.trim().to_string();
            }
            if line.starts_with("Tourguide works on ") {
                break String::new();
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        ServerProcess { child, base, database: database.to_string() }
    }

    /// The database the process works on, opened by the bench to add rows directly.
    pub async fn open_database(&self) -> db::Db {
        db::Db::open(&db::Location::parse(&self.database)).await.expect("the bench opens the server's database")
    }

    /// Resident set size of the server process, from the kernel's own account.
    pub fn rss_kib(&self) -> u64 {
        rss_kib_of(self.child.id().expect("running"))
    }

    /// CPU time the server process has used so far (user + system), from `/proc/PID/stat`.
    pub fn cpu_time(&self) -> Duration {
        cpu_time_of(self.child.id().expect("running"))
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// CPU time process `pid` has used so far (user + system), from `/proc/PID/stat`; nothing for a
/// process that is gone.
pub fn cpu_time_of(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return Duration::ZERO };
    // Fields after the command name (which may hold spaces) start at ") ".
    let fields: Vec<&str> = stat.rsplit_once(") ").expect("a stat line").1.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

fn rss_kib_of(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// A limit reference as a process of its own: this binary again, with the reference's flag
/// (`sse_reference`, `sqlite_reference`, `postgres_reference`) and its arguments, so its memory and
/// CPU time are its own, read from `/proc` as the server's are.
pub struct ReferenceProcess {
    child: Child,
    pub base: String,
}

impl ReferenceProcess {
    pub async fn start(flag: &str, args: &[String]) -> ReferenceProcess {
        let mut child = Command::new(std::env::current_exe().expect("the bench binary's path"))
            .arg(flag)
            .args(args)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the reference starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let base = loop {
            let line = lines.next_line().await.unwrap().expect("the reference exited before it was up");
            if let Some(address) = line.strip_prefix("listens on ") {
                break address.trim().to_string();
            }
        };
        ReferenceProcess { child, base }
    }

    pub fn rss_kib(&self) -> u64 {
        rss_kib_of(self.child.id().expect("running"))
    }

    pub fn cpu_time(&self) -> Duration {
        cpu_time_of(self.child.id().expect("running"))
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
}

impl Client {
    pub async fn signed_in(base: &str, username: &str) -> Client {
        let http = reqwest::Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(64)
            .build()
            .unwrap();
        let client = Client { http, base: base.to_string() };
        let response = client.call("login", &[("username", username), ("password", PASSWORD)]).await;
        assert!(response.status().as_u16() < 400, "sign-in failed: {}", response.status());
        client
    }

    pub async fn call(&self, name: &str, form: &[(&str, &str)]) -> reqwest::Response {
        self.http.post(format!("{}/api/{name}", self.base)).form(form).send().await.expect("the server answers")
    }

    pub async fn call_json(&self, name: &str, form: &[(&str, &str)]) -> (u16, Value) {
        let response = self.call(name, form).await;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    pub async fn create_conversation(&self) -> String {
        let (status, id) = self.call_json("create_conversation", &[]).await;
        assert!(status < 400, "{status} {id}");
        id.as_str().unwrap().to_string()
    }

    pub async fn send(&self, id: &str, content: &str) {
        let (status, body) = self.call_json("send_message", &[("conversation_id", id), ("content", content)]).await;
        assert_eq!(status, 200, "{body}");
    }

    /// Waits until the conversation leaves `processing`.
    pub async fn settled(&self, id: &str) -> Value {
        for _ in 0..4_000 {
            let (status, view) = self.call_json("conversation", &[("id", id)]).await;
            assert_eq!(status, 200, "{view}");
            if view["status"] != "processing" {
                return view;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        panic!("conversation {id} never settled");
    }
}
