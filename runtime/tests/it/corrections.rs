//! Corrections on a card: arguments a person edited before approving (checked against the tool's
//! schema, previewed for the edited call, run instead of the model's, and told to the model), and
//! a denial that carries what the person said.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use runtime::results::{is_edited, read_denial, read_denial_message};
use runtime::{
    ApprovalDecision, CallPreview, FieldChange, Preview, Refusal, RunStatus, Tool, ToolContext, ToolEffect, ToolError,
    ToolSpec,
};
use serde_json::{json, Value};

use crate::support::*;

fn edits(call_id: &str, arguments: Value) -> BTreeMap<String, Value> {
    BTreeMap::from([(call_id.to_string(), arguments)])
}

fn writer() -> Arc<TestTool> {
    TestTool::write("save", ToolEffect::NonIdempotentWrite).arc()
}

async fn waiting_on_save(tool: &Arc<TestTool>) -> (Harness, runtime::RunResult) {
    let script = vec![calls(vec![call("c1", "save", json!({ "value": "original" }))]), text("Done.")];
    let h = Harness::new(vec![tool.clone()], script).await;
    let first = h.runtime.run(request()).await.unwrap();
    (h, first)
}

#[tokio::test]
async fn an_edited_call_runs_with_the_edited_arguments_and_the_model_is_told_what_changed() {
    let tool = writer();
    let (h, first) = waiting_on_save(&tool).await;
    let pause = approval_pause(&first);
    let decision = ApprovalDecision::approve_edited(pause.digest.clone(), edits("c1", json!({ "value": "edited" })));
    let done = h.runtime.approve(&OWNER, first.run_id, decision).await.unwrap();
    assert_eq!(answer(&done), "Done.");
    assert_eq!(tool.arguments(), vec![json!({ "value": "edited" })], "the edited call ran, once, not the original");
    let result = tool_result(&h.provider.last_request(), "c1");
    assert!(is_edited(&result), "{result}");
    assert!(result.contains(r#"value: "original" → "edited""#), "{result}");
    assert!(result.ends_with("Result: save done"), "{result}");
}

#[tokio::test]
async fn a_stale_digest_or_arguments_that_break_the_schema_are_refused_and_nothing_runs() {
    let tool = writer();
    let (h, first) = waiting_on_save(&tool).await;
    let pause = approval_pause(&first);
    let stale = ApprovalDecision::approve_edited("0".repeat(64), edits("c1", json!({ "value": "edited" })));
    let refused = h.runtime.approve(&OWNER, first.run_id, stale).await;
    assert!(matches!(refused, Err(Refusal::StaleTurn)), "{refused:?}");

    let broken = ApprovalDecision::approve_edited(pause.digest.clone(), edits("c1", json!({ "value": 7 })));
    let refused = h.runtime.approve(&OWNER, first.run_id, broken).await;
    assert!(matches!(refused, Err(Refusal::EditInvalid(_))), "{refused:?}");
    let unknown = ApprovalDecision::approve_edited(pause.digest.clone(), edits("c9", json!({ "value": "x" })));
    let refused = h.runtime.approve(&OWNER, first.run_id, unknown).await;
    assert!(matches!(refused, Err(Refusal::EditInvalid(_))), "{refused:?}");
    assert_eq!(tool.executions(), 0);
    let view = status_of(&h.runtime, first.run_id).await;
    assert_eq!(view.status, RunStatus::WaitingForApproval, "the card still waits, as it was");
    let Some(runtime::PauseView::Approval(still)) = view.pause else { panic!("a card") };
    assert_eq!(still.digest, pause.digest);
}

#[tokio::test]
async fn the_same_recorded_edit_delivered_twice_runs_once() {
    // A worker died after the decision was recorded; the next one (or two at once) delivers the
    // same recorded edit again: exactly one delivery runs it.
    let gate = Gate::new();
    let tool = TestTool::write("save", ToolEffect::NonIdempotentWrite).gated(gate.clone()).arc();
    let (h, first) = waiting_on_save(&tool).await;
    let pause = approval_pause(&first);
    let decision = ApprovalDecision::approve_edited(pause.digest.clone(), edits("c1", json!({ "value": "edited" })));
    let (a, b) = (h.runtime.clone(), h.runtime.clone());
    let (da, db) = (decision.clone(), decision.clone());
    let run_id = first.run_id;
    let one = tokio::spawn(async move { a.approve(&OWNER, run_id, da).await });
    let two = tokio::spawn(async move { b.approve(&OWNER, run_id, db).await });
    gate.wait_entered().await;
    gate.open();
    let results = [one.await.unwrap(), two.await.unwrap()];
    assert_eq!(results.iter().filter(|result| result.is_ok()).count(), 1, "{results:?}");
    let again = h.runtime.approve(&OWNER, run_id, decision).await;
    assert!(matches!(again, Err(Refusal::NotWaiting { .. })), "{again:?}");
    assert_eq!(tool.arguments(), vec![json!({ "value": "edited" })]);
}

#[tokio::test]
async fn a_denial_carries_what_the_person_said_to_the_model() {
    let tool = writer();
    let (h, first) = waiting_on_save(&tool).await;
    let pause = approval_pause(&first);
    let said = "Use the formal tone, and \"Sie\".".to_string();
    let decision = ApprovalDecision::deny(pause.digest.clone(), None).with_message(Some(said.clone()));
    h.runtime.approve(&OWNER, first.run_id, decision).await.unwrap();
    let result = tool_result(&h.provider.last_request(), "c1");
    assert_eq!(read_denial(&result), Some(None), "{result}");
    assert_eq!(read_denial_message(&result), Some(said));
    assert_eq!(tool.executions(), 0);
}

/// A write that previews its text; refuses to preview an empty one.
struct Previewed(Mutex<Vec<String>>);

#[async_trait]
impl Tool for Previewed {
    fn spec(&self) -> ToolSpec {
        let schema = json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] });
        ToolSpec::new("edit", "Edits the record.", schema).with_effect(ToolEffect::IdempotentWrite)
    }

    async fn preview(&self, arguments: &Value, _context: &ToolContext) -> Result<Option<Preview>, ToolError> {
        let proposed = arguments["text"].as_str().unwrap_or_default();
        if proposed.trim().is_empty() {
            return Err(ToolError::Rejected("The text may not be empty.".into()));
        }
        Ok(Some(Preview {
            subject: "The record".into(),
            changes: vec![FieldChange::new("text", "Text", Some("old"), proposed)],
            basis: json!({ "version": 1, "text": proposed }),
        }))
    }

    async fn execute(&self, arguments: Value, context: &ToolContext) -> Result<String, ToolError> {
        let basis = context.approved_basis.clone().unwrap_or_default();
        self.0.lock().unwrap().push(format!("{} @ {}", arguments["text"].as_str().unwrap_or_default(), basis["text"]));
        Ok("written".into())
    }
}

#[tokio::test]
async fn an_edited_write_is_previewed_as_edited_and_a_preview_it_refuses_hands_the_card_back() {
    let tool = Arc::new(Previewed(Mutex::new(Vec::new())));
    let script = vec![calls(vec![call("w1", "edit", json!({ "text": "model words" }))]), text("Done.")];
    let h = Harness::new(vec![tool.clone()], script).await;
    let first = h.runtime.run(request()).await.unwrap();
    let pause = approval_pause(&first);
    let Some(CallPreview::Ready(_)) = &pause.pending_calls[0].preview else { panic!("a preview") };

    let empty = ApprovalDecision::approve_edited(pause.digest.clone(), edits("w1", json!({ "text": " " })));
    let refused = h.runtime.approve(&OWNER, first.run_id, empty).await;
    assert!(matches!(refused, Err(Refusal::EditPreviewFailed)), "{refused:?}");
    assert!(tool.0.lock().unwrap().is_empty());

    let edited = ApprovalDecision::approve_edited(pause.digest.clone(), edits("w1", json!({ "text": "my words" })));
    h.runtime.approve(&OWNER, first.run_id, edited).await.unwrap();
    // The approved basis is the edited call's preview, not the model's.
    assert_eq!(*tool.0.lock().unwrap(), vec![r#"my words @ "my words""#.to_string()]);
}
