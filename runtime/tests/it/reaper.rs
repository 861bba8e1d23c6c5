//! Leases and the reaper: stale segments are requeued or failed, interrupted non-idempotent writes
//! are never retried, and a segment that lost its lease writes nothing more.

use std::sync::Arc;
use std::time::Duration;

use runtime::{ApprovalDecision, Completion, RunOutcome, RunStatus, RuntimeSettings, ToolEffect};
use serde_json::json;

use crate::support::*;

/// Comfortably past any lease taken during the test.
fn after_lease() -> i64 {
    db::now() + RuntimeSettings::default().lease_seconds + 60
}

fn gated_text(gate: &Arc<Gate>, content: &str) -> Step {
    Step::Gated(gate.clone(), Completion { content: content.into(), tool_calls: Vec::new() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_run_is_requeued_and_its_old_segment_writes_nothing() {
    let gate = Gate::new();
    let h = Harness::new(vec![], vec![gated_text(&gate, "Late answer."), text("Fresh answer.")]).await;
    let (run_id, worker) = h.run_in_background().await;
    gate.wait_entered().await;

    assert_eq!(h.runtime.reap_stale(db::now()).await.unwrap(), Default::default(), "a live lease is left alone");
    let report = h.runtime.reap_stale(after_lease()).await.unwrap();
    assert_eq!(report.requeued, [run_id]);
    assert!(report.failed.is_empty());
    assert_eq!(status_of(&h.runtime, run_id).await.status, RunStatus::Queued);

    gate.open();
    let stopped = worker.await.unwrap().unwrap().unwrap();
    assert_eq!(stopped.outcome, RunOutcome::LeaseLost);
    let view = status_of(&h.runtime, run_id).await;
    assert_eq!((view.status, view.answer), (RunStatus::Queued, None), "the old segment settled nothing");

    let retried = h.runtime.run_queued(run_id).await.unwrap().unwrap();
    assert_eq!(answer(&retried), "Fresh answer.");
    let view = status_of(&h.runtime, run_id).await;
    assert_eq!((view.status, view.requeue_count), (RunStatus::Completed, 1));
}

/// A dead worker's run is taken over as soon as its lease ran out; a run that keeps losing its
/// segment waits out a growing backoff.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_takeover_is_due_at_once_and_later_ones_back_off() {
    let (first, second) = (Gate::new(), Gate::new());
    let settings = RuntimeSettings { retry_backoff_seconds: 30, ..fast_settings() };
    let script = vec![gated_text(&first, "Lost."), gated_text(&second, "Lost again."), text("Done.")];
    let h = Harness::with_settings(vec![], script, settings).await;
    let run_id = h.runtime.enqueue(request()).await.unwrap();
    let start = |runtime: Arc<runtime::Runtime>| tokio::spawn(async move { runtime.run_queued(run_id).await });

    let dying = start(h.runtime.clone());
    first.wait_entered().await;
    assert_eq!(h.runtime.reap_stale(after_lease()).await.unwrap().requeued, [run_id]);
    assert_eq!(h.runtime.due_queued_runs(10).await.unwrap(), [run_id], "taken over at once");

    let dying_again = start(h.runtime.clone());
    second.wait_entered().await;
    assert_eq!(h.runtime.reap_stale(after_lease()).await.unwrap().requeued, [run_id]);
    assert!(h.runtime.due_queued_runs(10).await.unwrap().is_empty(), "the second takeover waits out a backoff");

    first.open();
    second.open();
    assert_eq!(dying.await.unwrap().unwrap().unwrap().outcome, RunOutcome::LeaseLost);
    assert_eq!(dying_again.await.unwrap().unwrap().unwrap().outcome, RunOutcome::LeaseLost);
    assert_eq!(status_of(&h.runtime, run_id).await.status, RunStatus::Queued);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_run_without_retries_left_is_failed() {
    let gate = Gate::new();
    let settings = RuntimeSettings { max_requeues: 0, ..fast_settings() };
    let h = Harness::with_settings(vec![], vec![gated_text(&gate, "Too late.")], settings).await;
    let (run_id, worker) = h.run_in_background().await;
    gate.wait_entered().await;
    let report = h.runtime.reap_stale(after_lease()).await.unwrap();
    assert_eq!(report.failed, [run_id]);
    gate.open();
    assert_eq!(worker.await.unwrap().unwrap().unwrap().outcome, RunOutcome::LeaseLost);
    let view = status_of(&h.runtime, run_id).await;
    assert_eq!(view.status, RunStatus::Failed);
    assert_eq!(view.termination_reason.as_deref(), Some("retries_exhausted"));
}

/// Approves a write whose execution is held at the gate, then reaps the run while the write runs.
async fn reap_during_write(
    effect: ToolEffect,
) -> (Harness, Arc<TestTool>, uuid::Uuid, runtime::ReapReport, RunOutcome) {
    let gate = Gate::new();
    let write = TestTool::write("apply_change", effect).gated(gate.clone()).arc();
    let provider = ScriptedProvider::responding(|request| match request.messages.last().map(|m| m.role) {
        Some(runtime::Role::Tool) => Completion { content: "Done.".into(), tool_calls: Vec::new() },
        _ => Completion { content: String::new(), tool_calls: vec![call("w1", "apply_change", json!({"value": "v"}))] },
    });
    let h = Harness::with_provider(vec![write.clone()], provider, fast_settings()).await;
    let first = h.runtime.run(request()).await.unwrap();
    let digest = approval_pause(&first).digest;
    let approve = tokio::spawn({
        let runtime = h.runtime.clone();
        async move { runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(digest)).await }
    });
    gate.wait_entered().await;
    let report = h.runtime.reap_stale(after_lease()).await.unwrap();
    gate.open();
    let outcome = tokio::time::timeout(Duration::from_secs(20), approve).await.unwrap().unwrap().unwrap().outcome;
    (h, write, first.run_id, report, outcome)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_non_idempotent_write_is_dead_lettered_not_retried() {
    let (h, write, run_id, report, outcome) = reap_during_write(ToolEffect::NonIdempotentWrite).await;
    assert_eq!(report.failed, [run_id]);
    assert!(report.requeued.is_empty());
    assert_eq!(outcome, RunOutcome::LeaseLost);
    let view = status_of(&h.runtime, run_id).await;
    assert_eq!(view.status, RunStatus::Failed);
    assert_eq!(view.termination_reason.as_deref(), Some("not_retryable"));
    assert!(h.runtime.due_queued_runs(10).await.unwrap().is_empty());
    assert_eq!(write.executions(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_idempotent_write_is_requeued_and_asks_again() {
    let (h, write, run_id, report, outcome) = reap_during_write(ToolEffect::IdempotentWrite).await;
    assert_eq!(report.requeued, [run_id]);
    assert_eq!(outcome, RunOutcome::LeaseLost);
    // The retry restarts from the last checkpoint, before the approved turn: a new proposal needs a
    // new approval rather than reusing the old one.
    let retried = h.runtime.run_queued(run_id).await.unwrap().unwrap();
    approval_pause(&retried);
    assert_eq!(write.executions(), 1);
}

#[tokio::test]
async fn waiting_runs_hold_no_lease_and_are_never_reaped() {
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let h = Harness::new(vec![write], vec![calls(vec![call("w1", "apply_change", json!({}))])]).await;
    let first = h.runtime.run(request()).await.unwrap();
    assert_eq!(h.runtime.reap_stale(after_lease()).await.unwrap(), Default::default());
    assert_eq!(status_of(&h.runtime, first.run_id).await.status, RunStatus::WaitingForApproval);
}
