//! Every refusal of `approve` and `submit_input`, each leaving the run waiting on the same pause,
//! which can still be answered afterwards.

use std::sync::Arc;

use runtime::{
    ApprovalDecision, AskChoiceTool, InputSubmission, InvalidSubmission, PauseView, Refusal, RunStatus, RuntimeError,
    ToolEffect,
};
use serde_json::json;
use uuid::Uuid;

use crate::support::*;

async fn assert_still_waiting(h: &Harness, run_id: Uuid, status: RunStatus, digest: &str) {
    let view = status_of(&h.runtime, run_id).await;
    assert_eq!(view.status, status);
    let shown = match view.pause {
        Some(PauseView::Approval(pause)) => pause.digest,
        Some(PauseView::Input(pause)) => pause.digest,
        other => panic!("expected a readable pause, got {other:?}"),
    };
    assert_eq!(shown, digest, "the pause is unchanged");
}

/// A harness whose first run waits for approval of one write.
async fn waiting_for_approval(write: Arc<TestTool>) -> (Harness, Uuid, String) {
    let h = Harness::new(
        vec![write, Arc::new(AskChoiceTool)],
        vec![calls(vec![call("w1", "apply_change", json!({"value": "v"}))]), text("Applied.")],
    )
    .await;
    let result = h.runtime.run(request()).await.unwrap();
    let digest = approval_pause(&result).digest;
    (h, result.run_id, digest)
}

async fn waiting_for_input() -> (Harness, Uuid, String) {
    let h = Harness::new(
        vec![Arc::new(AskChoiceTool), TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc()],
        vec![calls(vec![ask("q1", "Which?", &["a", "b"])]), text("Fine.")],
    )
    .await;
    let result = h.runtime.run(request()).await.unwrap();
    let digest = input_pause(&result).digest;
    (h, result.run_id, digest)
}

#[tokio::test]
async fn not_waiting_covers_the_wrong_pause_kind_unknown_and_ended_runs() {
    let (h, run_id, digest) = waiting_for_input().await;
    let refused = h.runtime.approve(&OWNER, run_id, ApprovalDecision::approve(&digest)).await;
    assert!(matches!(refused, Err(Refusal::NotWaiting { expected: RunStatus::WaitingForApproval })), "{refused:?}");
    let unknown = h.runtime.submit_input(&OWNER, Uuid::new_v4(), submission(json!({"answer": "a"}), &digest)).await;
    assert!(matches!(unknown, Err(Refusal::NotWaiting { .. })), "{unknown:?}");
    assert_still_waiting(&h, run_id, RunStatus::WaitingForInput, &digest).await;

    h.runtime.submit_input(&OWNER, run_id, submission(json!({"answer": "a"}), &digest)).await.unwrap();
    let again = h.runtime.submit_input(&OWNER, run_id, submission(json!({"answer": "a"}), &digest)).await;
    assert!(matches!(again, Err(Refusal::NotWaiting { expected: RunStatus::WaitingForInput })), "{again:?}");
    assert_eq!(again.unwrap_err().code(), "not_waiting");
}

#[tokio::test]
async fn another_user_is_denied_access() {
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let (h, run_id, digest) = waiting_for_approval(write.clone()).await;
    let refused = h.runtime.approve(&OTHER, run_id, ApprovalDecision::approve(&digest)).await;
    assert!(matches!(refused, Err(Refusal::AccessDenied)), "{refused:?}");
    assert!(h.runtime.status(&OTHER, run_id).await.unwrap().is_none(), "a stranger cannot see the run");
    assert_still_waiting(&h, run_id, RunStatus::WaitingForApproval, &digest).await;

    let (h, run_id, digest) = waiting_for_input().await;
    let refused = h.runtime.submit_input(&OTHER, run_id, submission(json!({"answer": "a"}), &digest)).await;
    assert!(matches!(refused, Err(Refusal::AccessDenied)), "{refused:?}");
    assert_still_waiting(&h, run_id, RunStatus::WaitingForInput, &digest).await;
    // An admin may act on an ordinary run.
    h.runtime.submit_input(&ADMIN, run_id, submission(json!({"answer": "b"}), &digest)).await.unwrap();
    assert_eq!(write.executions(), 0);
    assert_eq!(status_of(&h.runtime, run_id).await.status, RunStatus::Completed);
}

#[tokio::test]
async fn a_deactivated_configuration_refuses_decisions_denials_and_answers() {
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let (h, run_id, digest) = waiting_for_approval(write.clone()).await;
    h.runtime.set_configuration_active(CONFIG, false).await.unwrap();
    for decision in [ApprovalDecision::approve(&digest), ApprovalDecision::deny(&digest, None)] {
        let refused = h.runtime.approve(&OWNER, run_id, decision).await;
        assert!(matches!(refused, Err(Refusal::ConfigurationInactive)), "{refused:?}");
    }
    assert_still_waiting(&h, run_id, RunStatus::WaitingForApproval, &digest).await;
    let new_run = h.runtime.enqueue(request()).await;
    assert!(matches!(new_run, Err(RuntimeError::ConfigurationInactive(_))), "{new_run:?}");

    h.runtime.set_configuration_active(CONFIG, true).await.unwrap();
    h.runtime.approve(&OWNER, run_id, ApprovalDecision::approve(&digest)).await.unwrap();
    assert_eq!(write.executions(), 1);

    let (h, run_id, digest) = waiting_for_input().await;
    h.runtime.set_configuration_active(CONFIG, false).await.unwrap();
    let refused = h.runtime.submit_input(&OWNER, run_id, submission(json!({"answer": "a"}), &digest)).await;
    assert!(matches!(refused, Err(Refusal::ConfigurationInactive)), "{refused:?}");
    assert_still_waiting(&h, run_id, RunStatus::WaitingForInput, &digest).await;
}

#[tokio::test]
async fn invalid_submissions_are_refused_for_structure_and_options() {
    let (h, run_id, digest) = waiting_for_input().await;
    for values in [json!({}), json!({"answer": 7}), json!({"answer": ["a"]})] {
        let refused = h.runtime.submit_input(&OWNER, run_id, submission(values.clone(), &digest)).await;
        assert!(
            matches!(refused, Err(Refusal::InvalidSubmission(InvalidSubmission::Structure { .. }))),
            "{values}: {refused:?}"
        );
    }
    let outside = h.runtime.submit_input(&OWNER, run_id, submission(json!({"answer": "c"}), &digest)).await;
    assert!(matches!(outside, Err(Refusal::InvalidSubmission(_))), "{outside:?}");
    assert_eq!(outside.unwrap_err().code(), "invalid_submission");
    assert_still_waiting(&h, run_id, RunStatus::WaitingForInput, &digest).await;
    // Nothing was recorded for the refused answers.
    let events = h.runtime.events(&OWNER, run_id, -1).await.unwrap();
    assert!(events.iter().all(|e| e.kind != runtime::EventKind::Input));
    h.runtime.submit_input(&OWNER, run_id, submission(json!({"answer": "a"}), &digest)).await.unwrap();
}

#[tokio::test]
async fn a_stale_missing_or_empty_digest_is_refused_after_the_claim_and_released() {
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let (h, run_id, digest) = waiting_for_approval(write.clone()).await;
    let stale = "0".repeat(64);
    let decisions = [
        ApprovalDecision::approve(&stale),
        ApprovalDecision::new(true, None, None).unwrap(),
        ApprovalDecision::approve(""),
        ApprovalDecision::deny(&stale, None),
    ];
    for decision in decisions {
        let refused = h.runtime.approve(&OWNER, run_id, decision).await;
        assert!(matches!(refused, Err(Refusal::StaleTurn)), "{refused:?}");
        assert_still_waiting(&h, run_id, RunStatus::WaitingForApproval, &digest).await;
    }
    assert_eq!(write.executions(), 0);

    let (h, run_id, digest) = waiting_for_input().await;
    let refused = h
        .runtime
        .submit_input(
            &OWNER,
            run_id,
            InputSubmission::values(json!({"answer": "a"}).as_object().cloned().unwrap(), None),
        )
        .await;
    assert!(matches!(refused, Err(Refusal::StaleTurn)), "{refused:?}");
    // An approval digest of the same turn is not the input digest.
    let wrong_kind = runtime::digest::approval_digest(&[ask("q1", "Which?", &["a", "b"])]);
    let refused = h.runtime.submit_input(&OWNER, run_id, submission(json!({"answer": "a"}), &wrong_kind)).await;
    assert!(matches!(refused, Err(Refusal::StaleTurn)), "{refused:?}");
    assert_still_waiting(&h, run_id, RunStatus::WaitingForInput, &digest).await;
    h.runtime.submit_input(&OWNER, run_id, submission(json!({"answer": "a"}), &digest)).await.unwrap();
}

#[tokio::test]
async fn an_approver_who_could_not_run_the_write_is_refused() {
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).deny(ADMIN.user_id).arc();
    let (h, run_id, digest) = waiting_for_approval(write.clone()).await;
    let refused = h.runtime.approve(&ADMIN, run_id, ApprovalDecision::approve(&digest)).await;
    assert!(matches!(refused, Err(Refusal::ApproverNotPermitted)), "{refused:?}");
    assert_still_waiting(&h, run_id, RunStatus::WaitingForApproval, &digest).await;
    assert_eq!(write.executions(), 0);
    h.runtime.approve(&OWNER, run_id, ApprovalDecision::approve(&digest)).await.unwrap();
    assert_eq!(write.executions(), 1);
}

#[tokio::test]
async fn a_submitter_who_could_not_run_the_turn_is_refused() {
    // The admin may not run the read that waits beside the question.
    let read = TestTool::read("read_page").deny(ADMIN.user_id).arc();
    let h = Harness::new(
        vec![read.clone(), Arc::new(AskChoiceTool)],
        vec![calls(vec![call("r1", "read_page", json!({})), ask("q1", "Which?", &["a", "b"])]), text("Ok.")],
    )
    .await;
    let result = h.runtime.run(request()).await.unwrap();
    let digest = input_pause(&result).digest;
    let refused = h.runtime.submit_input(&ADMIN, result.run_id, submission(json!({"answer": "a"}), &digest)).await;
    assert!(matches!(refused, Err(Refusal::SubmitterNotPermitted)), "{refused:?}");
    assert_still_waiting(&h, result.run_id, RunStatus::WaitingForInput, &digest).await;
    assert_eq!(read.executions(), 0);
    h.runtime.submit_input(&OWNER, result.run_id, submission(json!({"answer": "a"}), &digest)).await.unwrap();
    assert_eq!(read.executions(), 1);
}

#[tokio::test]
async fn an_unreadable_state_is_refused_and_keeps_the_run_waiting() {
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let (h, run_id, digest) = waiting_for_approval(write).await;
    h.exec("UPDATE runs SET suspended_state = '{broken' WHERE id = $1", &[&run_id.to_string()]).await;
    let refused = h.runtime.approve(&OWNER, run_id, ApprovalDecision::approve(&digest)).await;
    assert!(matches!(refused, Err(Refusal::CorruptState)), "{refused:?}");
    let view = status_of(&h.runtime, run_id).await;
    assert_eq!(view.status, RunStatus::WaitingForApproval);
    assert_eq!(view.pause, Some(PauseView::Unreadable));
    // A run nobody can decide can still be withdrawn.
    assert!(h.runtime.cancel_if_waiting(&OWNER, run_id).await.unwrap().cancelled);
}

/// A source whose tools are listed only when the test says (an MCP server still connecting after
/// a restart): until then a lookup finds nothing, and `first_listing` waits, saying it does.
#[derive(Default)]
struct LateSource {
    tools: std::sync::Mutex<Vec<runtime::RegisteredTool>>,
    listed: tokio::sync::watch::Sender<bool>,
    waited: tokio::sync::Notify,
}

impl LateSource {
    fn list(&self, tools: Vec<Arc<dyn runtime::Tool>>) {
        *self.tools.lock().unwrap() =
            tools.into_iter().map(|tool| runtime::ToolRegistry::check(tool).unwrap()).collect();
        self.listed.send_replace(true);
    }
}

#[async_trait::async_trait]
impl runtime::ToolSource for LateSource {
    fn tools(&self) -> Vec<runtime::RegisteredTool> {
        self.tools.lock().unwrap().clone()
    }

    async fn first_listing(&self) {
        self.waited.notify_one();
        let _ = self.listed.subscribe().wait_for(|listed| *listed).await;
    }

    fn still_listing(&self, name: &str) -> bool {
        !*self.listed.borrow() && name.starts_with("late.")
    }
}

fn with_source(source: Arc<LateSource>, tools: Vec<Arc<dyn runtime::Tool>>) -> Arc<runtime::ToolRegistry> {
    let mut registry = runtime::ToolRegistry::new();
    for tool in tools {
        registry.register(tool).unwrap();
    }
    registry.add_source(source);
    Arc::new(registry)
}

#[tokio::test]
async fn a_tool_that_is_gone_is_refused_as_gone_never_as_a_permission() {
    // A card whose write's tool is no longer registered after a restart.
    let write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let (h, run_id, digest) = waiting_for_approval(write.clone()).await;
    let h = h.restart(vec![Arc::new(AskChoiceTool)], vec![text("Without it.")]).await;
    let view = status_of(&h.runtime, run_id).await;
    let Some(PauseView::Approval(card)) = view.pause else { panic!("a card") };
    assert!(!card.pending_calls[0].tool_registered, "the card says the tool is gone");
    let refused = h.runtime.approve(&OWNER, run_id, ApprovalDecision::approve(&digest)).await;
    assert!(matches!(&refused, Err(Refusal::ToolGone { name }) if name == "apply_change"), "{refused:?}");
    assert_still_waiting(&h, run_id, RunStatus::WaitingForApproval, &digest).await;
    // A denial needs no tool.
    h.runtime.approve(&OWNER, run_id, ApprovalDecision::deny(&digest, None)).await.unwrap();
    assert_eq!(write.executions(), 0);

    // A question whose turn holds a read that is gone.
    let read = TestTool::read("read_page").arc();
    let (h, run_id, digest) = asking_beside(read.clone()).await;
    let h = h.restart(vec![Arc::new(AskChoiceTool)], vec![text("Ok.")]).await;
    let refused = h.runtime.submit_input(&OWNER, run_id, submission(json!({"answer": "a"}), &digest)).await;
    assert!(matches!(&refused, Err(Refusal::ToolGone { name }) if name == "read_page"), "{refused:?}");
    assert_eq!(refused.unwrap_err().code(), "tool_gone");
    assert_still_waiting(&h, run_id, RunStatus::WaitingForInput, &digest).await;
    assert_eq!(read.executions(), 0);
}

/// A harness whose first run waits on a question beside a call of `read` in the same turn.
async fn asking_beside(read: Arc<TestTool>) -> (Harness, Uuid, String) {
    let name = runtime::Tool::spec(&*read).name;
    let h = Harness::new(
        vec![read, Arc::new(AskChoiceTool)],
        vec![calls(vec![call("r1", &name, json!({})), ask("q1", "Which?", &["a", "b"])]), text("Ok.")],
    )
    .await;
    let result = h.runtime.run(request()).await.unwrap();
    let digest = input_pause(&result).digest;
    (h, result.run_id, digest)
}

#[tokio::test]
async fn a_decision_and_an_answer_wait_for_a_source_still_listing_its_tools_and_then_run() {
    // The card's write comes from a source; after a restart the source has not listed it yet.
    let write = TestTool::write("late.apply_change", ToolEffect::IdempotentWrite).arc();
    let h = Harness::new(
        vec![write.clone(), Arc::new(AskChoiceTool)],
        vec![calls(vec![call("w1", "late.apply_change", json!({"value": "v"}))]), text("Applied.")],
    )
    .await;
    let result = h.runtime.run(request()).await.unwrap();
    let (run_id, digest) = (result.run_id, approval_pause(&result).digest);
    let source = Arc::new(LateSource::default());
    let h = h.restart_with(with_source(source.clone(), vec![Arc::new(AskChoiceTool)]), vec![text("Applied.")]).await;
    // Not listed yet is not gone: the card says nothing of the kind.
    let view = status_of(&h.runtime, run_id).await;
    let Some(PauseView::Approval(card)) = view.pause else { panic!("a card") };
    assert!(card.pending_calls[0].tool_registered, "a tool not listed yet is not shown as gone");

    let runtime = h.runtime.clone();
    let approving =
        tokio::spawn(async move { runtime.approve(&OWNER, run_id, ApprovalDecision::approve(&digest)).await });
    // The decision waits for the listing instead of being refused for a tool it cannot see.
    source.waited.notified().await;
    assert!(!approving.is_finished());
    source.list(vec![write.clone()]);
    let approved = approving.await.unwrap().unwrap();
    assert!(matches!(approved.outcome, runtime::RunOutcome::Completed { .. }), "{:?}", approved.outcome);
    assert_eq!(write.executions(), 1);

    // The same for an answer whose turn holds a read from the source.
    let read = TestTool::read("late.read_page").arc();
    let (h, run_id, digest) = asking_beside(read.clone()).await;
    let source = Arc::new(LateSource::default());
    let h = h.restart_with(with_source(source.clone(), vec![Arc::new(AskChoiceTool)]), vec![text("Ok.")]).await;
    let runtime = h.runtime.clone();
    let answering =
        tokio::spawn(
            async move { runtime.submit_input(&OWNER, run_id, submission(json!({"answer": "a"}), &digest)).await },
        );
    source.waited.notified().await;
    source.list(vec![read.clone()]);
    let answered = answering.await.unwrap().unwrap();
    assert!(matches!(answered.outcome, runtime::RunOutcome::Completed { .. }), "{:?}", answered.outcome);
    assert_eq!(read.executions(), 1);
}
