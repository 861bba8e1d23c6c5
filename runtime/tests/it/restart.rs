//! A restart drops the runtime and every connection; what was waiting or queued is still there.

use std::sync::Arc;

use runtime::{ApprovalDecision, AskChoiceTool, PauseView, RunStatus, ToolEffect};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn a_waiting_question_survives_a_restart_and_can_be_answered() {
    let h = Harness::new(
        vec![Arc::new(AskChoiceTool)],
        vec![calls(vec![ask("q1", "Summary or next page?", &["Summary", "Next page"])])],
    )
    .await;
    let first = h.runtime.run(request()).await.unwrap();
    let before = input_pause(&first);

    let h = h.restart(vec![Arc::new(AskChoiceTool)], vec![text("Here is the summary.")]).await;
    let view = status_of(&h.runtime, first.run_id).await;
    assert_eq!(view.status, RunStatus::WaitingForInput);
    assert_eq!(view.pause, Some(PauseView::Input(before.clone())), "same question, same digest");

    let done = h
        .runtime
        .submit_input(&OWNER, first.run_id, submission(json!({"answer": "Summary"}), &before.digest))
        .await
        .unwrap();
    assert_eq!(answer(&done), "Here is the summary.");
    // The new provider was given the whole stored transcript, not just the answer.
    let seen = h.provider.last_request();
    assert_eq!(seen.messages[0].content, "You are a guide.");
    assert_eq!(tool_result(&seen, "q1"), "The user picked: Summary");
    assert_eq!(status_of(&h.runtime, first.run_id).await.status, RunStatus::Completed);
}

#[tokio::test]
async fn a_waiting_approval_survives_a_restart() {
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let h =
        Harness::new(vec![write.clone()], vec![calls(vec![call("w1", "apply_change", json!({"value": "v"}))])]).await;
    let first = h.runtime.run(request()).await.unwrap();
    let before = approval_pause(&first);

    let after_restart = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let h = h.restart(vec![after_restart.clone()], vec![text("Applied after the restart.")]).await;
    assert_eq!(status_of(&h.runtime, first.run_id).await.pause, Some(PauseView::Approval(before.clone())));
    let done = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(&before.digest)).await.unwrap();
    assert_eq!(answer(&done), "Applied after the restart.");
    assert_eq!((write.executions(), after_restart.executions()), (0, 1));
    assert_eq!(after_restart.arguments(), [json!({"value": "v"})]);
}

#[tokio::test]
async fn a_queued_run_survives_a_restart() {
    let h = Harness::new(vec![], vec![]).await;
    let run_id = h.runtime.enqueue(request()).await.unwrap();
    let h = h.restart(vec![], vec![text("Picked up later.")]).await;
    assert_eq!(h.runtime.due_queued_runs(10).await.unwrap(), [run_id]);
    let result = h.runtime.run_queued(run_id).await.unwrap().expect("claimed after the restart");
    assert_eq!(answer(&result), "Picked up later.");
    assert!(h.runtime.due_queued_runs(10).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_call_that_became_a_write_is_not_run_on_the_answer_path() {
    let h = Harness::new(
        vec![Arc::new(AskChoiceTool), TestTool::read("sync_page").arc()],
        vec![calls(vec![ask("q1", "Which?", &["a", "b"]), call("s1", "sync_page", json!({}))])],
    )
    .await;
    let first = h.runtime.run(request()).await.unwrap();
    let digest = input_pause(&first).digest;
    // After an upgrade the same tool name writes: an answer is no approval for it.
    let now_writes = TestTool::write("sync_page", ToolEffect::IdempotentWrite).arc();
    let h = h.restart(vec![Arc::new(AskChoiceTool), now_writes.clone()], vec![text("Ok.")]).await;
    h.runtime.submit_input(&OWNER, first.run_id, submission(json!({"answer": "a"}), &digest)).await.unwrap();
    let seen = h.provider.last_request();
    assert_eq!(tool_result(&seen, "s1"), "Error: tool \"sync_page\" requires approval that was not given.");
    assert_eq!(tool_result(&seen, "q1"), "The user picked: a");
    assert_eq!(now_writes.executions(), 0);
}
