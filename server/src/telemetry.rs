//! `/metrics` in the Prometheus text format, through the `metrics` facade and its Prometheus
//! exporter.
//!
//! Two kinds of figure:
//! - **this process's**, recorded as things happen: model calls (latency by outcome, errors by
//!   kind), answer → continuation latency, open event streams;
//! - **the database's**, read at each scrape: runs by status and the job queue's depth. Every
//!   process on one database reports the same values; a dashboard takes `max` of them, not `sum`.
//!
//! Without `TOURGUIDE_METRICS_TOKEN` the endpoint is open, like `/healthz`; with it a scrape must
//! send `Authorization: Bearer <token>`.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use async_trait::async_trait;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use metrics::{counter, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use runtime::{Completion, CompletionRequest, ModelProvider, ProviderError, ProviderErrorKind, Runtime, TextSink};

use crate::store::Store;

pub const PATH: &str = "/metrics";

const MODEL_CALL: &str = "tourguide_model_call_duration_seconds";
const MODEL_ERRORS: &str = "tourguide_model_call_errors_total";
const CONTINUATION: &str = "tourguide_answer_to_continuation_seconds";
const EVENT_STREAMS: &str = "tourguide_event_streams_open";
const RUNS: &str = "tourguide_runs";
const JOBS: &str = "tourguide_jobs";

/// Latency buckets from a millisecond (an answer carried on at once) to two minutes (a long model
/// turn).
const BUCKETS: [f64; 16] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

/// The exporter's handle. The recorder is global to the process (the `metrics` macros write to
/// it), so it is installed once, by the first server this process starts.
fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &BUCKETS)
            .expect("the buckets are not empty");
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed; /metrics shows only the database's figures");
        }
        describe();
        handle
    })
}

fn describe() {
    metrics::describe_histogram!(MODEL_CALL, metrics::Unit::Seconds, "Model calls by outcome (ok or error).");
    metrics::describe_counter!(MODEL_ERRORS, "Model calls that failed, by kind of failure.");
    metrics::describe_histogram!(
        CONTINUATION,
        metrics::Unit::Seconds,
        "From an answer or a decision being recorded to the worker handing it to its run."
    );
    metrics::describe_gauge!(EVENT_STREAMS, "Event streams (SSE) this process holds open.");
    gauge!(EVENT_STREAMS).set(0.0);
    metrics::describe_gauge!(RUNS, "Runs in the database by status (the same in every process).");
    metrics::describe_gauge!(JOBS, "Jobs in the database by state: queued is the queue's depth.");
}

/// Installs the recorder; called when a server starts, so that the first scrape already lists
/// every metric.
pub fn install() {
    handle();
}

#[derive(Clone)]
pub struct MetricsState {
    pub store: Store,
    pub runtime: Arc<Runtime>,
    pub token: Option<Arc<str>>,
}

pub async fn metrics(State(state): State<MetricsState>, headers: HeaderMap) -> Response {
    if let Some(token) = &state.token {
        let sent = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
        let expected = format!("Bearer {token}");
        if !sent.is_some_and(|sent| constant_time_eq(sent.as_bytes(), expected.as_bytes())) {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "A metrics token is required.\n",
            )
                .into_response();
        }
    }
    let (runs, jobs) = tokio::join!(state.runtime.run_counts(), state.store.job_counts());
    let (runs, jobs) = match (runs, jobs) {
        (Ok(runs), Ok(jobs)) => (runs, jobs),
        (Err(error), _) => return unavailable(&error),
        (_, Err(error)) => return unavailable(&error),
    };
    for (status, count) in runs {
        gauge!(RUNS, "status" => status.as_str()).set(count as f64);
    }
    gauge!(JOBS, "state" => "queued").set(jobs.queued as f64);
    gauge!(JOBS, "state" => "running").set(jobs.running as f64);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], handle().render()).into_response()
}

fn unavailable(error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "metrics: the database did not answer");
    (StatusCode::SERVICE_UNAVAILABLE, "The database did not answer.\n").into_response()
}

/// A comparison whose time does not tell how much of a guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// An answer (`"answer"`) or a decision (`"decision"`) recorded at `recorded_at_ms` is being
/// handed to its run now. Rows recorded before the column existed have no time and are skipped.
pub fn continuation_started(kind: &'static str, recorded_at_ms: Option<i64>) {
    if let Some(recorded) = recorded_at_ms {
        let waited = (db::now_ms() - recorded).max(0) as f64 / 1000.0;
        histogram!(CONTINUATION, "kind" => kind).record(waited);
    }
}

/// Held by an open event stream; the gauge goes down when the stream is dropped, however it ends.
pub struct OpenStream(());

impl OpenStream {
    pub fn open() -> OpenStream {
        gauge!(EVENT_STREAMS).increment(1.0);
        OpenStream(())
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        gauge!(EVENT_STREAMS).decrement(1.0);
    }
}

/// The model provider with every call timed and every failure counted. A decorator, so the
/// runtime and the providers stay free of any metrics crate.
pub struct MeteredProvider(pub Arc<dyn ModelProvider>);

impl MeteredProvider {
    fn record<T>(started: Instant, result: &Result<T, ProviderError>) {
        let outcome = if result.is_ok() { "ok" } else { "error" };
        histogram!(MODEL_CALL, "outcome" => outcome).record(started.elapsed().as_secs_f64());
        if let Err(error) = result {
            counter!(MODEL_ERRORS, "kind" => error_kind(error.kind())).increment(1);
        }
    }
}

fn error_kind(kind: ProviderErrorKind) -> &'static str {
    match kind {
        ProviderErrorKind::Unreachable => "unreachable",
        ProviderErrorKind::TimedOut => "timed_out",
        ProviderErrorKind::RateLimited => "rate_limited",
        ProviderErrorKind::ContextTooLong => "context_too_long",
        ProviderErrorKind::BrokeOff => "broke_off",
        ProviderErrorKind::Rejected => "rejected",
    }
}

#[async_trait]
impl ModelProvider for MeteredProvider {
    fn label(&self) -> String {
        self.0.label()
    }

    fn is_demo(&self) -> bool {
        self.0.is_demo()
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, ProviderError> {
        let started = Instant::now();
        let result = self.0.complete(request).await;
        Self::record(started, &result);
        result
    }

    async fn stream(&self, request: CompletionRequest, sink: &dyn TextSink) -> Result<Completion, ProviderError> {
        let started = Instant::now();
        let result = self.0.stream(request, sink).await;
        Self::record(started, &result);
        result
    }
}
