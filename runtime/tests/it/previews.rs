//! Approval cards that show what a write changes: previews made at the pause, made again on
//! approval, and a card handed back (nothing run) when the record moved or no preview is possible.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use runtime::{
    ApprovalDecision, CallPreview, FieldChange, PauseView, Preview, Refusal, RunStatus, Tool, ToolContext, ToolEffect,
    ToolError, ToolSpec,
};
use serde_json::{json, Value};

use crate::support::*;

/// A record with a version, written by the tool only if it still is at the version the approved
/// preview showed. `None` is a record that is gone.
#[derive(Default)]
struct Record {
    state: Mutex<Option<(i64, String)>>,
    writes: Mutex<Vec<(String, Option<Value>)>>,
}

impl Record {
    fn new(text: &str) -> Arc<Self> {
        Arc::new(Record { state: Mutex::new(Some((1, text.to_string()))), writes: Mutex::default() })
    }

    fn edit_elsewhere(&self, text: &str) {
        let mut state = self.state.lock().unwrap();
        let version = state.as_ref().map_or(0, |(version, _)| *version);
        *state = Some((version + 1, text.to_string()));
    }

    fn remove(&self) {
        *self.state.lock().unwrap() = None;
    }

    fn text(&self) -> Option<String> {
        self.state.lock().unwrap().as_ref().map(|(_, text)| text.clone())
    }

    fn writes(&self) -> Vec<(String, Option<Value>)> {
        self.writes.lock().unwrap().clone()
    }
}

struct EditTool(Arc<Record>);

#[async_trait]
impl Tool for EditTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("edit", "Edits the record.", json!({ "type": "object" })).with_effect(ToolEffect::IdempotentWrite)
    }

    async fn preview(&self, arguments: &Value, _context: &ToolContext) -> Result<Option<Preview>, ToolError> {
        let Some((version, current)) = self.0.state.lock().unwrap().clone() else {
            return Err(ToolError::Rejected("The record is gone.".to_string()));
        };
        let proposed = arguments["text"].as_str().unwrap_or_default();
        Ok(Some(Preview {
            subject: "The record".to_string(),
            changes: vec![FieldChange::new("text", "Text", Some(&current), proposed)],
            basis: json!({ "version": version }),
        }))
    }

    async fn execute(&self, arguments: Value, context: &ToolContext) -> Result<String, ToolError> {
        let text = arguments["text"].as_str().unwrap_or_default().to_string();
        self.0.writes.lock().unwrap().push((text.clone(), context.approved_basis.clone()));
        let mut state = self.0.state.lock().unwrap();
        let Some((version, _)) = state.clone() else { return Err(ToolError::Rejected("gone".into())) };
        *state = Some((version + 1, text));
        Ok("written".to_string())
    }
}

fn preview_of(pause: &runtime::ApprovalPause) -> &CallPreview {
    pause.pending_calls[0].preview.as_ref().expect("the write shows a preview")
}

fn waiting_pause(view: &runtime::RunView) -> runtime::ApprovalPause {
    assert_eq!(view.status, RunStatus::WaitingForApproval);
    match &view.pause {
        Some(PauseView::Approval(pause)) => pause.clone(),
        other => panic!("expected an approval pause, got {other:?}"),
    }
}

async fn harness(record: &Arc<Record>) -> Harness {
    let script = vec![calls(vec![call("w1", "edit", json!({ "text": "New words here" }))]), text("Done.")];
    Harness::new(vec![Arc::new(EditTool(record.clone()))], script).await
}

#[tokio::test]
async fn a_card_shows_the_preview_and_an_approval_applies_it_on_the_version_shown() {
    let record = Record::new("Old words here");
    let h = harness(&record).await;
    let first = h.runtime.run(request()).await.unwrap();
    let pause = approval_pause(&first);
    let CallPreview::Ready(preview) = preview_of(&pause) else { panic!("a ready preview") };
    assert_eq!(preview.changes[0].current.as_deref(), Some("Old words here"));
    assert_eq!(preview.changes[0].proposed, "New words here");
    assert_eq!(preview.basis, json!({ "version": 1 }));
    // Stored with the pause: a later read shows the same preview under the same digest.
    assert_eq!(waiting_pause(&status_of(&h.runtime, first.run_id).await), pause);

    let done = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(pause.digest.clone())).await.unwrap();
    assert_eq!(answer(&done), "Done.");
    assert_eq!(record.writes(), vec![("New words here".to_string(), Some(json!({ "version": 1 })))]);
    assert_eq!(record.text().as_deref(), Some("New words here"));
}

#[tokio::test]
async fn an_approval_after_the_record_changed_is_refused_and_the_card_comes_back_fresh() {
    let record = Record::new("Old words here");
    let h = harness(&record).await;
    let first = h.runtime.run(request()).await.unwrap();
    let shown = approval_pause(&first);
    record.edit_elsewhere("Edited by someone else");

    let refused = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(shown.digest.clone())).await;
    assert!(matches!(refused, Err(Refusal::PreviewStale)), "{refused:?}");
    assert!(record.writes().is_empty(), "nothing ran");
    let fresh = waiting_pause(&status_of(&h.runtime, first.run_id).await);
    assert_ne!(fresh.digest, shown.digest, "the fresh preview is a new card");
    let CallPreview::Ready(preview) = preview_of(&fresh) else { panic!("a ready preview") };
    assert_eq!(preview.changes[0].current.as_deref(), Some("Edited by someone else"));
    assert_eq!(preview.basis, json!({ "version": 2 }));

    // The old card (another tab) can no longer be approved; the fresh one can.
    let old = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(shown.digest.clone())).await;
    assert!(matches!(old, Err(Refusal::StaleTurn)), "{old:?}");
    h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(fresh.digest.clone())).await.unwrap();
    assert_eq!(record.writes(), vec![("New words here".to_string(), Some(json!({ "version": 2 })))]);
}

#[tokio::test]
async fn a_failed_preview_blocks_apply_until_a_preview_succeeds_but_a_denial_goes_through() {
    let record = Record::new("Old words here");
    record.remove();
    let h = harness(&record).await;
    let first = h.runtime.run(request()).await.unwrap();
    let shown = approval_pause(&first);
    assert_eq!(preview_of(&shown), &CallPreview::Failed { reason: "The record is gone.".to_string() });
    assert!(shown.preview_failed());

    let refused = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(shown.digest.clone())).await;
    assert!(matches!(refused, Err(Refusal::PreviewFailed)), "{refused:?}");
    assert!(record.writes().is_empty());
    let still = waiting_pause(&status_of(&h.runtime, first.run_id).await);
    assert_eq!(still.digest, shown.digest, "the same failure is the same card");

    // Back again: approving does not apply what nobody saw, it brings the preview.
    *record.state.lock().unwrap() = Some((7, "Back again".to_string()));
    let refused = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(still.digest.clone())).await;
    assert!(matches!(refused, Err(Refusal::PreviewStale)), "{refused:?}");
    assert!(record.writes().is_empty());
    let ready = waiting_pause(&status_of(&h.runtime, first.run_id).await);
    assert!(!ready.preview_failed());

    // A denial needs no preview.
    record.remove();
    let denied = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::deny(ready.digest.clone(), None)).await;
    assert_eq!(answer(&denied.unwrap()), "Done.");
    assert!(record.writes().is_empty());
}
