//! Runs from start to end: plain answers, questions, approvals, process turns, tool failures,
//! the round cap, retries and cancellation.

use std::sync::Arc;

use runtime::{
    ApprovalDecision, AskChoiceTool, DenialReason, EventKind, FailureReason, PauseView, Role, RunOutcome, RunStatus,
    ToolEffect,
};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn completes_without_tools_and_keeps_the_answer() {
    let h = Harness::new(vec![], vec![text("Hello there.")]).await;
    let result = h.runtime.run(request()).await.unwrap();
    assert_eq!(answer(&result), "Hello there.");
    assert_eq!(result.messages.last().map(|m| (m.role, m.content.as_str())), Some((Role::Assistant, "Hello there.")));
    // No tools registered: the provider must not be offered an empty tool list.
    assert!(h.provider.last_request().tools.is_empty());
    let view = status_of(&h.runtime, result.run_id).await;
    assert_eq!(view.status, RunStatus::Completed);
    assert_eq!(view.answer.as_deref(), Some("Hello there."));
    assert_eq!(view.rounds, 1);
    assert!(view.pause.is_none());
}

#[tokio::test]
async fn a_run_that_asks_continues_with_the_answer() {
    let h = Harness::new(
        vec![Arc::new(AskChoiceTool)],
        vec![
            calls(vec![ask("c1", "Which point first?", &["Title", "Body"])]),
            text("Then let us start with the body."),
        ],
    )
    .await;
    let run_id = h.runtime.enqueue(request()).await.unwrap();
    assert_eq!(status_of(&h.runtime, run_id).await.status, RunStatus::Queued);
    let first = h.runtime.run_queued(run_id).await.unwrap().expect("claimed");
    let pause = input_pause(&first);
    assert_eq!(pause.tool_name, "ask_choice");
    assert_eq!(pause.call_id, "c1");
    assert_eq!(pause.question(), Some("Which point first?"));
    assert_eq!(pause.schema["properties"]["answer"]["enum"], json!(["Title", "Body"]));

    let view = status_of(&h.runtime, run_id).await;
    assert_eq!(view.status, RunStatus::WaitingForInput);
    assert_eq!(view.pause, Some(PauseView::Input(pause.clone())));
    // Where the run stands alone, for its owner only.
    assert_eq!(h.runtime.run_status(&OWNER, run_id).await.unwrap(), Some(RunStatus::WaitingForInput));
    assert_eq!(h.runtime.run_status(&OTHER, run_id).await.unwrap(), None);

    let done =
        h.runtime.submit_input(&OWNER, run_id, submission(json!({"answer": "Body"}), &pause.digest)).await.unwrap();
    assert_eq!(answer(&done), "Then let us start with the body.");
    let second = h.provider.last_request();
    assert_eq!(tool_result(&second, "c1"), "The user picked: Body");
    assert_eq!(status_of(&h.runtime, run_id).await.status, RunStatus::Completed);

    // The event stream records who answered, never what.
    let events = h.runtime.events(&OWNER, run_id, -1).await.unwrap();
    let input = events.iter().find(|e| e.kind == EventKind::Input).expect("input event");
    assert_eq!(input.payload, json!({"submitted_by": 1}));
    assert!(events.windows(2).all(|w| w[0].sequence < w[1].sequence));
    // The whole trail, in the order it happened (events are written in batches, never reordered).
    let trail: Vec<String> = events
        .iter()
        .map(|e| match e.payload.get("status").and_then(|status| status.as_str()) {
            Some(status) => format!("{}:{status}", e.kind.as_str()),
            None => e.kind.as_str().to_string(),
        })
        .collect();
    assert_eq!(
        trail,
        [
            "status:queued",
            "status:running",
            "request",
            "llm",
            "status:waiting_for_input",
            "input",
            "tool",
            "request",
            "llm",
            "status:completed"
        ]
    );
    assert!(!serde_json::to_string(&events).unwrap().contains("Body"));
    let later = h.runtime.events(&OWNER, run_id, events[2].sequence).await.unwrap();
    assert_eq!(later.len(), events.len() - 3);
    assert!(h.runtime.events(&OTHER, run_id, -1).await.unwrap().is_empty());
}

#[tokio::test]
async fn whole_turn_approval_runs_the_read_and_the_write_together() {
    let read = TestTool::read("read_page").arc();
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let h = Harness::new(
        vec![read.clone(), write.clone()],
        vec![
            calls(vec![
                call("r1", "read_page", json!({"page": "home"})),
                call("w1", "apply_change", json!({"value": "x"})),
            ]),
            text("Applied."),
        ],
    )
    .await;
    let first = h.runtime.run(request()).await.unwrap();
    let pause = approval_pause(&first);
    let summary: Vec<_> =
        pause.pending_calls.iter().map(|c| (c.call_id.as_str(), c.declares_write, c.tool_registered)).collect();
    assert_eq!(summary, [("r1", false, true), ("w1", true, true)]);
    assert!(!pause.offers_denial_reason(), "an ordinary run has no reasons on its card");
    assert_eq!(read.executions(), 0, "the read waits with the write");

    let done = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(&pause.digest)).await.unwrap();
    assert_eq!(answer(&done), "Applied.");
    assert_eq!((read.executions(), write.executions()), (1, 1));
    let second = h.provider.last_request();
    assert_eq!(tool_result(&second, "r1"), "read_page done");
    assert_eq!(tool_result(&second, "w1"), "apply_change done");
    let approval =
        h.runtime.events(&OWNER, first.run_id, -1).await.unwrap().into_iter().find(|e| e.kind == EventKind::Approval);
    assert_eq!(approval.unwrap().payload, json!({"approved": true, "decided_by": 1, "reason": null}));
}

#[tokio::test]
async fn a_denial_runs_nothing_and_tells_the_model_who_and_why() {
    let read = TestTool::read("read_page").arc();
    let write = TestTool::write("apply_change", ToolEffect::NonIdempotentWrite).arc();
    let h = Harness::new(
        vec![read.clone(), write.clone()],
        vec![
            calls(vec![call("r1", "read_page", json!({})), call("w1", "apply_change", json!({"value": "x"}))]),
            text("Understood, skipping."),
            calls(vec![call("w2", "apply_change", json!({"value": "y"}))]),
            text("I will ask."),
        ],
    )
    .await;
    let first = h.runtime.run(request()).await.unwrap();
    let pause = approval_pause(&first);
    let decision = ApprovalDecision::new(false, Some(pause.digest.clone()), Some(DenialReason::Skip)).unwrap();
    let done = h.runtime.approve(&OWNER, first.run_id, decision).await.unwrap();
    assert_eq!(answer(&done), "Understood, skipping.");
    assert_eq!((read.executions(), write.executions()), (0, 0));
    let seen = h.provider.last_request();
    let write_result = tool_result(&seen, "w1");
    assert!(
        write_result.starts_with("Error: approval_denied (decided_by: run_owner, reason: skip). The approval for tool \"apply_change\" was declined by the run owner. Nothing was executed."),
        "{write_result}"
    );
    // The reason belongs to the proposal only; the read is simply not run.
    assert!(
        tool_result(&seen, "r1").starts_with("Error: approval_denied (decided_by: run_owner). "),
        "{}",
        tool_result(&seen, "r1")
    );

    // A second run denied by someone else (an admin) says so.
    let second = h.runtime.run(request()).await.unwrap();
    let pause = approval_pause(&second);
    h.runtime.approve(&ADMIN, second.run_id, ApprovalDecision::deny(&pause.digest, None)).await.unwrap();
    let seen = h.provider.last_request();
    assert!(tool_result(&seen, "w2").starts_with("Error: approval_denied (decided_by: other_user). "));
    assert!(tool_result(&seen, "w2").contains("declined by another user"));
    assert_eq!(write.executions(), 0);
}

#[tokio::test]
async fn approval_decision_rejects_a_reason_on_an_approval() {
    assert!(ApprovalDecision::new(true, Some("d".into()), Some(DenialReason::Variant)).is_err());
    assert!(ApprovalDecision::new(true, Some("d".into()), None).is_ok());
    assert!(ApprovalDecision::new(false, None, Some(DenialReason::Variant)).is_ok());
}

#[tokio::test]
async fn a_process_turn_runs_reads_first_and_proposes_one_write() {
    let read = TestTool::read("read_page").arc();
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let other_write = TestTool::write("delete_block", ToolEffect::NonIdempotentWrite).arc();
    let h = Harness::new(
        vec![read.clone(), write.clone(), other_write.clone(), Arc::new(AskChoiceTool)],
        vec![
            calls(vec![
                call("w0", "delete_block", json!({})),
                call("r1", "read_page", json!({})),
                call("w1", "apply_change", json!({"value": "v"})),
                ask("q1", "Next?", &["a", "b"]),
            ]),
            text("Proposal applied."),
        ],
    )
    .await;
    let mut process = request();
    process.process = true;
    let first = h.runtime.run(process).await.unwrap();
    let pause = approval_pause(&first);
    assert!(pause.process && pause.offers_denial_reason());
    assert_eq!(pause.pending_calls.len(), 1);
    // The first write of the turn is the proposal; the read ran before the suspend.
    assert_eq!(pause.pending_calls[0].call_id, "w0");
    assert_eq!(read.executions(), 1);

    // The stored turn is reordered: settled calls first, the pending one last.
    let turn = first.messages.iter().rev().find(|m| m.role == Role::Assistant).unwrap();
    let order: Vec<_> = turn.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(order, ["r1", "w1", "q1", "w0"]);

    // Only the initiator decides a process run, admins included.
    let refused = h.runtime.approve(&ADMIN, first.run_id, ApprovalDecision::approve(&pause.digest)).await;
    assert!(matches!(refused, Err(runtime::Refusal::InitiatorOnly)), "{refused:?}");

    let done = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(&pause.digest)).await.unwrap();
    assert_eq!(answer(&done), "Proposal applied.");
    assert_eq!((other_write.executions(), write.executions()), (1, 0));
    let seen = h.provider.last_request();
    assert!(tool_result(&seen, "w1").contains("another proposal waits for approval"));
    assert_eq!(tool_result(&seen, "q1"), "Error: tool \"ask_choice\" requires input that was not provided.");
    assert_eq!(tool_result(&seen, "r1"), "read_page done");
}

#[tokio::test]
async fn a_second_question_in_one_turn_is_refused() {
    let h = Harness::new(
        vec![Arc::new(AskChoiceTool)],
        vec![calls(vec![ask("q1", "First?", &["a", "b"]), ask("q2", "Second?", &["c", "d"])]), text("Noted.")],
    )
    .await;
    let first = h.runtime.run(request()).await.unwrap();
    let pause = input_pause(&first);
    assert_eq!(pause.call_id, "q1");
    let done =
        h.runtime.submit_input(&OWNER, first.run_id, submission(json!({"answer": "b"}), &pause.digest)).await.unwrap();
    assert_eq!(answer(&done), "Noted.");
    let seen = h.provider.last_request();
    assert_eq!(tool_result(&seen, "q1"), "The user picked: b");
    assert_eq!(tool_result(&seen, "q2"), "Error: tool \"ask_choice\" requires input that was not provided.");
}

#[tokio::test]
async fn the_answer_overlays_only_schema_fields_of_the_asking_call() {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let asking = TestTool::asking("ask_name", schema).arc();
    let read = TestTool::read("read_page").arc();
    let h = Harness::new(
        vec![asking.clone(), read.clone()],
        vec![
            calls(vec![
                call("a1", "ask_name", json!({"name": "model-chosen", "context": "kept"})),
                call("r1", "read_page", json!({})),
            ]),
            text("Hello."),
        ],
    )
    .await;
    let first = h.runtime.run(request()).await.unwrap();
    let pause = input_pause(&first);
    assert_eq!(read.executions(), 0, "the whole turn waits for the answer");
    let values = json!({"name": "Ada", "context": "smuggled"});
    h.runtime.submit_input(&OWNER, first.run_id, submission(values, &pause.digest)).await.unwrap();
    assert_eq!(asking.arguments(), [json!({"name": "Ada", "context": "kept"})]);
    assert_eq!(read.executions(), 1, "the other read of the turn runs on resume");
}

#[tokio::test]
async fn tool_errors_become_result_text_without_internals() {
    let failing = TestTool::read("fetch").failing().arc();
    let h = Harness::new(
        vec![failing.clone(), Arc::new(AskChoiceTool)],
        vec![
            calls(vec![
                call("f1", "fetch", json!({})),
                call("u1", "no_such_tool", json!({})),
                // Bad arguments: no pause, an error result instead.
                call("q1", "ask_choice", json!({"question": "Only one?", "options": ["a"]})),
            ]),
            text("Sorry."),
        ],
    )
    .await;
    let result = h.runtime.run(request()).await.unwrap();
    assert_eq!(answer(&result), "Sorry.");
    let seen = h.provider.last_request();
    assert_eq!(tool_result(&seen, "f1"), "Error: tool \"fetch\" failed.");
    assert_eq!(tool_result(&seen, "u1"), "Error: unknown tool \"no_such_tool\"");
    assert_eq!(
        tool_result(&seen, "q1"),
        "Error: tool \"ask_choice\" rejected its arguments: options must list 2 to 10 choices."
    );
    let transcript = serde_json::to_string(&result.messages).unwrap();
    assert!(!transcript.contains("hunter2"));
    assert_eq!(failing.executions(), 1);
}

#[tokio::test]
async fn the_allow_list_narrows_what_is_offered_and_run() {
    let read = TestTool::read("read_page").arc();
    let hidden = TestTool::read("secret_read").arc();
    let h = Harness::new(
        vec![read.clone(), hidden.clone()],
        vec![calls(vec![call("s1", "secret_read", json!({}))]), text("Done.")],
    )
    .await;
    let mut narrowed = request();
    narrowed.allowed_tools = Some(vec!["read_page".into()]);
    h.runtime.run(narrowed).await.unwrap();
    let offered: Vec<_> = h.provider.requests()[0].tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(offered, ["read_page"]);
    assert_eq!(tool_result(&h.provider.last_request(), "s1"), "Error: tool \"secret_read\" not permitted");
    assert_eq!(hidden.executions(), 0);
}

#[tokio::test]
async fn the_round_cap_ends_with_a_closing_answer_without_tools() {
    let read = TestTool::read("read_page").arc();
    let h = Harness::new(
        vec![read.clone()],
        vec![
            calls(vec![call("r1", "read_page", json!({}))]),
            calls(vec![call("r2", "read_page", json!({}))]),
            text("Here is what I found so far."),
        ],
    )
    .await;
    let mut capped = request();
    capped.max_rounds = Some(2);
    let result = h.runtime.run(capped).await.unwrap();
    assert_eq!(
        result.outcome,
        RunOutcome::Completed { answer: "Here is what I found so far.".into(), truncated: true }
    );
    let requests = h.provider.requests();
    assert_eq!(requests.len(), 3);
    assert!(!requests[1].tools.is_empty());
    assert!(requests[2].tools.is_empty(), "the closing call offers no tools");
    assert_eq!(read.executions(), 2);
    let view = status_of(&h.runtime, result.run_id).await;
    assert!(view.truncated);
    assert_eq!(view.termination_reason.as_deref(), Some("max_iterations"));

    // A cap above the limit is clamped.
    let mut huge = request();
    huge.max_rounds = Some(500);
    assert_eq!(huge.effective_max_rounds(), 20);
}

#[tokio::test]
async fn a_retryable_provider_failure_requeues_and_a_fatal_one_fails() {
    let h = Harness::new(vec![], vec![Step::Fail(503), text("Back again."), Step::Fail(401)]).await;
    let run_id = h.runtime.enqueue(request()).await.unwrap();
    let first = h.runtime.run_queued(run_id).await.unwrap().unwrap();
    assert_eq!(first.outcome, RunOutcome::Requeued);
    assert_eq!(status_of(&h.runtime, run_id).await.status, RunStatus::Queued);
    assert_eq!(h.runtime.due_queued_runs(10).await.unwrap(), [run_id]);
    let second = h.runtime.run_queued(run_id).await.unwrap().unwrap();
    assert_eq!(answer(&second), "Back again.");
    assert_eq!(status_of(&h.runtime, run_id).await.requeue_count, 1);

    // A 401 is the server refusing the request (a wrong key): told as such, not as "unreachable".
    let failed = h.runtime.run(request()).await.unwrap();
    assert_eq!(failed.outcome, RunOutcome::Failed { reason: FailureReason::ModelRejected });
    assert_eq!(status_of(&h.runtime, failed.run_id).await.status, RunStatus::Failed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_running_run_at_its_next_boundary() {
    let gate = Gate::new();
    let read = TestTool::read("read_page").arc();
    let h = Harness::new(
        vec![read.clone()],
        vec![Step::Gated(
            gate.clone(),
            runtime::Completion { content: String::new(), tool_calls: vec![call("r1", "read_page", json!({}))] },
        )],
    )
    .await;
    let (run_id, worker) = h.run_in_background().await;
    gate.wait_entered().await;
    assert_eq!(status_of(&h.runtime, run_id).await.status, RunStatus::Running);
    assert!(!h.runtime.cancel(&OTHER, run_id).await.unwrap(), "a stranger cannot cancel");
    assert!(h.runtime.cancel(&OWNER, run_id).await.unwrap());
    gate.open();
    let result = worker.await.unwrap().unwrap().unwrap();
    assert_eq!(result.outcome, RunOutcome::Cancelled);
    assert_eq!(read.executions(), 0, "the turn after the cancel never ran");
    assert_eq!(status_of(&h.runtime, run_id).await.status, RunStatus::Cancelled);
    assert!(!h.runtime.cancel(&OWNER, run_id).await.unwrap(), "an ended run cannot be cancelled again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_during_a_tool_call_stops_the_calls_after_it() {
    let gate = Gate::new();
    let first = TestTool::read("read_page").gated(gate.clone()).arc();
    let second = TestTool::read("read_menu").arc();
    let h = Harness::new(
        vec![first.clone(), second.clone()],
        vec![calls(vec![call("r1", "read_page", json!({})), call("r2", "read_menu", json!({}))]), text("Done.")],
    )
    .await;
    let (run_id, worker) = h.run_in_background().await;
    gate.wait_entered().await;
    assert!(h.runtime.cancel(&OWNER, run_id).await.unwrap());
    gate.open();
    let result = worker.await.unwrap().unwrap().unwrap();
    assert_eq!(result.outcome, RunOutcome::Cancelled);
    assert_eq!(first.executions(), 1);
    assert_eq!(second.executions(), 0, "the call after the cancel never ran");
    assert_eq!(status_of(&h.runtime, run_id).await.status, RunStatus::Cancelled);
}

#[tokio::test]
async fn status_marks_unregistered_tools_as_writes() {
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let h = Harness::new(vec![write.clone()], vec![calls(vec![call("w1", "apply_change", json!({}))])]).await;
    let first = h.runtime.run(request()).await.unwrap();
    let digest = approval_pause(&first).digest;
    // After a restart without the tool, the card still shows the call, as a write nobody can run.
    let h = h.restart(vec![], vec![text("Nothing to do.")]).await;
    let view = status_of(&h.runtime, first.run_id).await;
    let Some(PauseView::Approval(pause)) = view.pause else { panic!("expected an approval pause") };
    assert_eq!(pause.digest, digest);
    assert!(pause.pending_calls[0].declares_write && !pause.pending_calls[0].tool_registered);
    let refused = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(&digest)).await;
    // Gone is gone, not a permission the approver lacks (issue 55).
    assert!(matches!(refused, Err(runtime::Refusal::ToolGone { .. })), "{refused:?}");
    // A denial needs no permission and tells the model.
    h.runtime
        .approve(&OWNER, first.run_id, ApprovalDecision::deny(&digest, Some(DenialReason::Variant)))
        .await
        .unwrap();
    assert!(tool_result(&h.provider.last_request(), "w1").contains("reason: variant"));
    assert_eq!(write.executions(), 0);
}

/// A database failure must stay an error: read as "no status", it would tell a chat that the run
/// had ended while it may still wait.
#[tokio::test]
async fn cancel_if_waiting_reports_a_store_failure_as_an_error() {
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let h = Harness::new(vec![write.clone()], vec![calls(vec![call("w1", "apply_change", json!({}))])]).await;
    let waiting = h.runtime.run(request()).await.unwrap();
    h.exec("ALTER TABLE runs RENAME TO runs_away", &[]).await;
    let failed = h.runtime.cancel_if_waiting(&OWNER, waiting.run_id).await;
    assert!(matches!(failed, Err(runtime::RuntimeError::Store(_))), "{failed:?}");
    h.exec("ALTER TABLE runs_away RENAME TO runs", &[]).await;
    assert_eq!(status_of(&h.runtime, waiting.run_id).await.status, RunStatus::WaitingForApproval);
    assert_eq!(write.executions(), 0);
}

#[tokio::test]
async fn cancel_if_waiting_reports_what_it_found() {
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let h = Harness::new(
        vec![write.clone()],
        vec![calls(vec![call("w1", "apply_change", json!({}))]), text("Plain answer.")],
    )
    .await;
    let waiting = h.runtime.run(request()).await.unwrap();
    let nothing = runtime::GuardedCancelResult { cancelled: false, status: None };
    // A stranger and an unknown run look the same.
    assert_eq!(h.runtime.cancel_if_waiting(&OTHER, waiting.run_id).await.unwrap(), nothing);
    assert_eq!(h.runtime.cancel_if_waiting(&OWNER, uuid::Uuid::new_v4()).await.unwrap(), nothing);
    assert_eq!(status_of(&h.runtime, waiting.run_id).await.status, RunStatus::WaitingForApproval);

    let ended = h.runtime.run(request()).await.unwrap();
    assert_eq!(answer(&ended), "Plain answer.");
    let found = h.runtime.cancel_if_waiting(&OWNER, ended.run_id).await.unwrap();
    assert_eq!(found, runtime::GuardedCancelResult { cancelled: false, status: Some(RunStatus::Completed) });

    let cancelled = h.runtime.cancel_if_waiting(&ADMIN, waiting.run_id).await.unwrap();
    assert_eq!(cancelled, runtime::GuardedCancelResult { cancelled: true, status: Some(RunStatus::Cancelled) });
    let view = status_of(&h.runtime, waiting.run_id).await;
    assert_eq!((view.status, view.pause), (RunStatus::Cancelled, None));
    let digest = approval_pause(&waiting).digest;
    let late = h.runtime.approve(&OWNER, waiting.run_id, ApprovalDecision::approve(&digest)).await;
    assert!(matches!(late, Err(runtime::Refusal::NotWaiting { .. })), "{late:?}");
    assert_eq!(write.executions(), 0);
}

#[tokio::test]
async fn the_approval_scan_comes_before_the_question_and_approval_carries_no_input() {
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let h = Harness::new(
        vec![write.clone(), Arc::new(AskChoiceTool)],
        vec![calls(vec![ask("q1", "Which?", &["a", "b"]), call("w1", "apply_change", json!({}))]), text("Ok.")],
    )
    .await;
    let first = h.runtime.run(request()).await.unwrap();
    let pause = approval_pause(&first);
    let ids: Vec<_> = pause.pending_calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["q1", "w1"], "the whole turn waits on the approval, the question included");
    h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(&pause.digest)).await.unwrap();
    let seen = h.provider.last_request();
    assert_eq!(tool_result(&seen, "q1"), "Error: tool \"ask_choice\" requires input that was not provided.");
    assert_eq!(tool_result(&seen, "w1"), "apply_change done");
}
