//! Races with real concurrency on a real database file: exactly one contender wins each one.

use std::sync::Arc;
use std::time::Duration;

use runtime::{ApprovalDecision, Completion, CompletionRequest, Refusal, Role, RunOutcome, RunStatus, ToolEffect};
use serde_json::json;
use tokio::sync::Barrier;

use crate::support::*;

const ROUNDS: usize = 12;

fn name_schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
}

/// A model that calls `tool` on a user message and answers once it has seen a tool result, so
/// every run behaves the same however the race before it ended.
fn call_then_answer(tool: &'static str) -> impl Fn(&CompletionRequest) -> Completion + Send + Sync {
    move |request| match request.messages.last().map(|m| m.role) {
        Some(Role::Tool) => Completion { content: "Done.".into(), tool_calls: Vec::new() },
        _ => Completion { content: String::new(), tool_calls: vec![call("c1", tool, json!({"value": "v"}))] },
    }
}

/// Starts the cancel a little later each round, so the rounds span "cancel first", a true photo
/// finish, and "decision first" instead of always landing on the same side.
async fn stagger(round: usize, step_micros: u64) {
    if round > 0 {
        tokio::time::sleep(Duration::from_micros(step_micros * round as u64)).await;
    }
}

/// Finer than a timer tick: give the other contender a few scheduler turns per round.
async fn stagger_by_yields(round: usize, per_round: usize) {
    for _ in 0..round * per_round {
        tokio::task::yield_now().await;
    }
}

fn lost(refusal: &Refusal) -> bool {
    matches!(refusal, Refusal::AlreadyResuming | Refusal::NotWaiting { .. })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_concurrent_submits_have_exactly_one_winner() {
    let asking = TestTool::asking("ask_name", name_schema()).arc();
    let provider = ScriptedProvider::responding(call_then_answer("ask_name"));
    let h = Harness::with_provider(vec![asking.clone()], provider, fast_settings()).await;
    for round in 0..ROUNDS {
        let first = h.runtime.run(request()).await.unwrap();
        let digest = input_pause(&first).digest;
        let barrier = Arc::new(Barrier::new(2));
        let contenders: Vec<_> = (0..2)
            .map(|i| {
                let (runtime, barrier, digest) = (h.runtime.clone(), barrier.clone(), digest.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    runtime
                        .submit_input(&OWNER, first.run_id, submission(json!({"name": format!("n{i}")}), &digest))
                        .await
                })
            })
            .collect();
        let mut results = Vec::new();
        for contender in contenders {
            results.push(contender.await.unwrap());
        }
        let winners = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(winners, 1, "round {round}: {results:?}");
        for result in &results {
            match result {
                Ok(done) => assert_eq!(answer(done), "Done."),
                Err(refusal) => assert!(lost(refusal), "round {round}: {refusal:?}"),
            }
        }
        assert_eq!(asking.executions(), round + 1, "the answer was applied exactly once");
        assert_eq!(status_of(&h.runtime, first.run_id).await.status, RunStatus::Completed);
    }
}

/// Holds the database's write lock while both contenders pass their checks, so both reach the claim
/// with the run still waiting: the loser must get the lost-race refusal, not "not waiting".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_loser_of_a_claim_race_is_told_already_resuming() {
    let asking = TestTool::asking("ask_name", name_schema()).arc();
    let provider = ScriptedProvider::responding(call_then_answer("ask_name"));
    let h = Harness::with_provider(vec![asking.clone()], provider, fast_settings()).await;
    let first = h.runtime.run(request()).await.unwrap();
    let digest = input_pause(&first).digest;

    let lock = h.hold_write_lock().await;
    let contenders: Vec<_> = (0..2)
        .map(|i| {
            let (runtime, digest) = (h.runtime.clone(), digest.clone());
            tokio::spawn(async move {
                runtime.submit_input(&OWNER, first.run_id, submission(json!({"name": format!("n{i}")}), &digest)).await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    lock.release().await;

    let mut results = Vec::new();
    for contender in contenders {
        results.push(contender.await.unwrap());
    }
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "{results:?}");
    let refusal = results.into_iter().find_map(Result::err).unwrap();
    assert!(matches!(refusal, Refusal::AlreadyResuming), "{refusal:?}");
    assert_eq!(refusal.code(), "already_resuming");
    assert_eq!(asking.executions(), 1);
    assert_eq!(status_of(&h.runtime, first.run_id).await.status, RunStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn submit_against_cancel_if_waiting_has_exactly_one_winner() {
    let asking = TestTool::asking("ask_name", name_schema()).arc();
    let provider = ScriptedProvider::responding(call_then_answer("ask_name"));
    let h = Harness::with_provider(vec![asking.clone()], provider, fast_settings()).await;
    let mut executed = 0;
    for round in 0..ROUNDS {
        let first = h.runtime.run(request()).await.unwrap();
        let digest = input_pause(&first).digest;
        let barrier = Arc::new(Barrier::new(2));
        let submit = tokio::spawn({
            let (runtime, barrier) = (h.runtime.clone(), barrier.clone());
            async move {
                barrier.wait().await;
                runtime.submit_input(&OWNER, first.run_id, submission(json!({"name": "Ada"}), &digest)).await
            }
        });
        let cancel = tokio::spawn({
            let (runtime, barrier) = (h.runtime.clone(), barrier.clone());
            async move {
                barrier.wait().await;
                stagger_by_yields(round, 8).await;
                runtime.cancel_if_waiting(&OWNER, first.run_id).await.unwrap()
            }
        });
        let (submitted, cancelled) = (submit.await.unwrap(), cancel.await.unwrap());
        let final_status = status_of(&h.runtime, first.run_id).await.status;
        if cancelled.cancelled {
            assert_eq!(cancelled.status, Some(RunStatus::Cancelled));
            assert!(submitted.as_ref().is_err_and(lost), "round {round}: {submitted:?}");
            assert_eq!(final_status, RunStatus::Cancelled);
        } else {
            executed += 1;
            assert_eq!(answer(submitted.as_ref().unwrap()), "Done.", "round {round}");
            // What the cancel read back: the answer was being carried on, or had already ended.
            assert!(matches!(cancelled.status, Some(RunStatus::Running | RunStatus::Completed)), "{cancelled:?}");
            assert_eq!(final_status, RunStatus::Completed);
        }
        assert_eq!(asking.executions(), executed, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn approve_against_cancel_has_exactly_one_winner() {
    let write = TestTool::write("apply_change", ToolEffect::NonIdempotentWrite).arc();
    let provider = ScriptedProvider::responding(call_then_answer("apply_change"));
    let h = Harness::with_provider(vec![write.clone()], provider, fast_settings()).await;
    for round in 0..ROUNDS {
        let first = h.runtime.run(request()).await.unwrap();
        let digest = approval_pause(&first).digest;
        let executed_before = write.executions();
        let barrier = Arc::new(Barrier::new(2));
        let approve = tokio::spawn({
            let (runtime, barrier, digest) = (h.runtime.clone(), barrier.clone(), digest.clone());
            async move {
                barrier.wait().await;
                runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(digest)).await
            }
        });
        let cancel = tokio::spawn({
            let (runtime, barrier) = (h.runtime.clone(), barrier.clone());
            async move {
                barrier.wait().await;
                stagger(round, 1000).await;
                runtime.cancel(&OWNER, first.run_id).await.unwrap()
            }
        });
        let (approved, cancelled) = (approve.await.unwrap(), cancel.await.unwrap());
        let completed = matches!(&approved, Ok(result) if matches!(result.outcome, RunOutcome::Completed { .. }));
        assert!(cancelled ^ completed, "round {round}: cancel {cancelled}, approve {approved:?}");
        let final_status = status_of(&h.runtime, first.run_id).await.status;
        if cancelled {
            assert_eq!(final_status, RunStatus::Cancelled, "a late settle never resurrects the run");
            match &approved {
                Ok(result) => assert_eq!(result.outcome, RunOutcome::Cancelled, "round {round}"),
                Err(refusal) => {
                    assert!(lost(refusal), "round {round}: {refusal:?}");
                    assert_eq!(write.executions(), executed_before, "a refused approval runs nothing");
                }
            }
        } else {
            assert_eq!(final_status, RunStatus::Completed);
            assert_eq!(write.executions(), executed_before + 1);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_concurrent_approvals_run_the_write_once() {
    let write = TestTool::write("apply_change", ToolEffect::NonIdempotentWrite).arc();
    let provider = ScriptedProvider::responding(call_then_answer("apply_change"));
    let h = Harness::with_provider(vec![write.clone()], provider, fast_settings()).await;
    for round in 0..ROUNDS {
        let first = h.runtime.run(request()).await.unwrap();
        let digest = approval_pause(&first).digest;
        let barrier = Arc::new(Barrier::new(2));
        let contenders: Vec<_> = (0..2)
            .map(|_| {
                let (runtime, barrier, digest) = (h.runtime.clone(), barrier.clone(), digest.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(digest)).await
                })
            })
            .collect();
        let mut results = Vec::new();
        for contender in contenders {
            results.push(contender.await.unwrap());
        }
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "round {round}: {results:?}");
        assert!(results.iter().filter_map(|r| r.as_ref().err()).all(lost));
        assert_eq!(write.executions(), round + 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_claim_a_queued_run_once() {
    let provider = ScriptedProvider::responding(|_| Completion { content: "Hi.".into(), tool_calls: Vec::new() });
    let h = Harness::with_provider(vec![], provider.clone(), fast_settings()).await;
    for round in 0..ROUNDS {
        let run_id = h.runtime.enqueue(request()).await.unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (runtime, barrier) = (h.runtime.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    runtime.run_queued(run_id).await.unwrap()
                })
            })
            .collect();
        let mut claimed = 0;
        for worker in workers {
            if let Some(result) = worker.await.unwrap() {
                claimed += 1;
                assert_eq!(answer(&result), "Hi.");
            }
        }
        assert_eq!(claimed, 1, "round {round}");
        assert_eq!(provider.requests().len(), round + 1);
    }
}
