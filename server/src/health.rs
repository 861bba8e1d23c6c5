//! What an operator's probes ask: `/healthz` (the process answers) and `/readyz` (the database
//! answers, every migration of this build is applied, and the worker runs when this process has
//! one). Both are plain GETs without a session.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use crate::AppState;

pub const HEALTH_PATH: &str = "/healthz";
pub const READY_PATH: &str = "/readyz";

/// Whether this process's worker loop is running: `None` for a web-only process.
#[derive(Clone, Default)]
pub struct WorkerAlive(pub Option<Arc<AtomicBool>>);

/// Marks the worker gone when its task ends, however it ends (a panic included).
pub struct AliveGuard(pub Arc<AtomicBool>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

pub async fn healthz() -> &'static str {
    "ok"
}

pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let db = state.store.db();
    let database = db.ping().await.is_ok();
    let migrations = database
        && db
            .migrated(&[crate::store::migrations(), runtime::migrations(), content::store::migrations()])
            .await
            .unwrap_or(false);
    let worker = match &state.worker.0 {
        None => "off",
        Some(alive) if alive.load(Ordering::SeqCst) => "ok",
        Some(_) => "stopped",
    };
    let ready = database && migrations && worker != "stopped";
    let word = |ok: bool| if ok { "ok" } else { "failing" };
    let body = json!({ "database": word(database), "migrations": word(migrations), "worker": worker });
    (if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE }, Json(body))
}
