//! The lethal trifecta: a run that holds outside content (an attachment, a result of an outside
//! tool) must not send it out through an open-world tool nobody saw the call of. Such a call waits
//! on an approval card like a write, saying why; without outside content, and for tools that stay
//! inside, nothing changes.

use std::sync::Arc;

use runtime::{ApprovalDecision, PauseView, RunOutcome, RunRequest, RunStatus};
use serde_json::json;

use crate::support::*;

fn with_outside_content() -> RunRequest {
    RunRequest { outside_content: true, ..request() }
}

#[tokio::test]
async fn an_open_world_read_runs_at_once_until_its_result_is_in_the_run() {
    let search = TestTool::read("search").open_world().arc();
    let h = Harness::new(
        vec![search.clone()],
        vec![
            calls(vec![call("s1", "search", json!({"page": "bakery"}))]),
            calls(vec![call("s2", "search", json!({"page": "what the user wrote"}))]),
            text("Found."),
        ],
    )
    .await;
    let first = h.runtime.run(request()).await.unwrap();
    // The first search ran without a card; what it brought back is outside content, so the next
    // one waits.
    assert_eq!(search.arguments(), [json!({"page": "bakery"})]);
    let pause = approval_pause(&first);
    assert_eq!(pause.pending_calls.len(), 1);
    let pending = &pause.pending_calls[0];
    assert_eq!((pending.call_id.as_str(), pending.declares_write, pending.sends_out), ("s2", false, true));
    assert!(!pause.any_write(), "a read: no denial reasons, no reviewer");

    let done = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(&pause.digest)).await.unwrap();
    assert_eq!(answer(&done), "Found.");
    assert_eq!(search.executions(), 2);
}

#[tokio::test]
async fn with_outside_content_an_open_world_read_waits_and_a_denial_runs_nothing() {
    let search = TestTool::read("search").open_world().arc();
    let h = Harness::new(
        vec![search.clone()],
        vec![
            calls(vec![call("s1", "search", json!({"page": "secret"}))]),
            text("Not searched."),
            calls(vec![call("s2", "search", json!({"page": "ok"}))]),
            text("Searched."),
        ],
    )
    .await;
    let first = h.runtime.run(with_outside_content()).await.unwrap();
    let pause = approval_pause(&first);
    assert!(pause.pending_calls[0].sends_out);
    assert_eq!(search.executions(), 0, "nothing left before the card was decided");
    // The card is bound to what it shows, like any other.
    let stale = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve("not the digest")).await;
    assert!(stale.is_err());
    assert_eq!(search.executions(), 0);

    let denied = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::deny(&pause.digest, None)).await.unwrap();
    assert_eq!(answer(&denied), "Not searched.");
    assert_eq!(search.executions(), 0);
    assert!(tool_result(&h.provider.last_request(), "s1").starts_with("Error: approval_denied"));
    // One decision per pause: the same card cannot be decided again.
    let again = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(&pause.digest)).await;
    assert!(again.is_err());
    assert_eq!(search.executions(), 0);

    let second = h.runtime.run(with_outside_content()).await.unwrap();
    let pause = approval_pause(&second);
    let done = h.runtime.approve(&OWNER, second.run_id, ApprovalDecision::approve(&pause.digest)).await.unwrap();
    assert_eq!(answer(&done), "Searched.");
    assert_eq!(search.arguments(), [json!({"page": "ok"})]);
}

#[tokio::test]
async fn a_read_that_stays_inside_never_waits() {
    let read = TestTool::read("read_page").arc();
    let h = Harness::new(
        vec![read.clone()],
        vec![calls(vec![call("r1", "read_page", json!({"page": "home"}))]), text("Read.")],
    )
    .await;
    let done = h.runtime.run(with_outside_content()).await.unwrap();
    assert_eq!(answer(&done), "Read.");
    assert_eq!(read.executions(), 1);
}

#[tokio::test]
async fn a_run_taken_up_again_after_a_restart_still_knows_what_it_read() {
    // A source's tool that stays inside brings outside content all the same (its server's words).
    let lookup = || TestTool::read("docs.lookup").of_source("MCP server docs").arc();
    let search = || TestTool::read("search").open_world().arc();
    let h = Harness::new(
        vec![lookup(), search()],
        vec![calls(vec![call("l1", "docs.lookup", json!({"page": "faq"}))]), Step::Fail(503)],
    )
    .await;
    let first = h.runtime.run(request()).await.unwrap();
    assert_eq!(first.outcome, RunOutcome::Requeued, "the model failed after the lookup's round");

    // Another process takes the run up from its checkpoint: the search it asks for waits.
    let search_after = search();
    let h = h
        .restart(
            vec![lookup(), search_after.clone()],
            vec![calls(vec![call("s1", "search", json!({"page": "faq text"}))]), text("Done.")],
        )
        .await;
    let taken_up = h.runtime.run_queued(first.run_id).await.unwrap().expect("due at once");
    let pause = approval_pause(&taken_up);
    assert!(pause.pending_calls[0].sends_out);
    assert_eq!(search_after.executions(), 0);

    // And a restart while it waits shows the same card, reason included, and it can be approved.
    let search_last = search();
    let h = h.restart(vec![lookup(), search_last.clone()], vec![text("Done.")]).await;
    let view = status_of(&h.runtime, first.run_id).await;
    assert_eq!(view.status, RunStatus::WaitingForApproval);
    assert_eq!(view.pause, Some(PauseView::Approval(pause.clone())));
    let done = h.runtime.approve(&OWNER, first.run_id, ApprovalDecision::approve(&pause.digest)).await.unwrap();
    assert_eq!(answer(&done), "Done.");
    assert_eq!(search_last.executions(), 1);
}

#[tokio::test]
async fn what_a_run_read_counts_for_the_next_one() {
    let lookup = TestTool::read("docs.lookup").of_source("MCP server docs").arc();
    let h = Harness::new(
        vec![lookup.clone(), Arc::new(TestTool::read("search").open_world())],
        vec![calls(vec![call("l1", "docs.lookup", json!({}))]), text("Looked it up."), text("Plain.")],
    )
    .await;
    let looked = h.runtime.run(request()).await.unwrap();
    assert_eq!(answer(&looked), "Looked it up.");
    let plain = h.runtime.run(request()).await.unwrap();
    assert_eq!(answer(&plain), "Plain.");
    assert!(h.runtime.any_held_outside_content(&[plain.run_id, looked.run_id]).await.unwrap());
    assert!(!h.runtime.any_held_outside_content(&[plain.run_id]).await.unwrap());
    assert!(!h.runtime.any_held_outside_content(&[]).await.unwrap());
}
