//! Tools that ask the user while they run (an MCP server's elicitation): the run waits on the
//! question, the reply carries the call on (it may ask again), a cancelled run lets the question
//! go, a question the chat cannot show is declined at once, and an expired one is withdrawn.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use runtime::{
    ApprovalDecision, InputReply, InputSubmission, PauseView, RunOutcome, RunStatus, Runtime, Tool, ToolContext,
    ToolEffect, ToolError, ToolOutput, ToolSpec,
};
use serde_json::{json, Value};

use crate::support::*;

fn question(title: &str) -> Value {
    json!({ "type": "object", "title": title, "properties": { "name": { "type": "string" } }, "required": ["name"] })
}

/// Asks `questions` one after another while it runs, then reports every reply it got.
struct Asker {
    effect: ToolEffect,
    questions: Vec<Value>,
    replies: Mutex<Vec<InputReply>>,
    abandoned: Mutex<Vec<Value>>,
    stopped_waiting: AtomicBool,
}

impl Asker {
    fn new(effect: ToolEffect, questions: Vec<Value>) -> Arc<Asker> {
        Arc::new(Asker {
            effect,
            questions,
            replies: Mutex::default(),
            abandoned: Mutex::default(),
            stopped_waiting: AtomicBool::new(false),
        })
    }

    fn next(&self, asked: usize) -> ToolOutput {
        match self.questions.get(asked) {
            Some(schema) => ToolOutput::Ask { schema: schema.clone(), state: json!({ "asked": asked + 1 }) },
            None => ToolOutput::Done(format!("replies: {:?}", self.replies.lock().unwrap())),
        }
    }
}

#[async_trait]
impl Tool for Asker {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("remote.ask", "asks while it runs", json!({})).with_effect(self.effect)
    }

    async fn execute(&self, _arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        unreachable!("an asking tool is called, not executed")
    }

    async fn call(&self, _arguments: Value, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(self.next(0))
    }

    async fn resume(
        &self,
        _arguments: Value,
        state: Value,
        reply: InputReply,
        _context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        self.replies.lock().unwrap().push(reply);
        Ok(self.next(state["asked"].as_u64().unwrap() as usize))
    }

    async fn abandon(&self, state: Value) {
        self.abandoned.lock().unwrap().push(state);
    }

    fn expired(&self, _state: &Value) -> Option<String> {
        self.stopped_waiting.load(Ordering::SeqCst).then(|| "the server stopped waiting".to_string())
    }
}

fn pause(result: &runtime::RunResult) -> runtime::InputPause {
    input_pause(result)
}

fn named(name: &str) -> InputReply {
    InputReply::Answer(json!({ "name": name }).as_object().cloned().unwrap())
}

async fn reply(h: &Harness, run: uuid::Uuid, digest: &str, reply: InputReply) -> runtime::RunResult {
    let submission = InputSubmission { reply, digest: Some(digest.to_string()) };
    h.runtime.submit_input(&OWNER, run, submission).await.unwrap()
}

#[tokio::test]
async fn a_tool_that_asks_while_it_runs_gets_each_reply_and_may_ask_again() {
    let asker = Asker::new(ToolEffect::ReadOnly, vec![question("Who are you?"), question("And your friend?")]);
    let h = Harness::new(vec![asker.clone()], vec![calls(vec![call("c1", "remote.ask", json!({}))]), text("Thanks.")])
        .await;
    let first = h.runtime.run(request()).await.unwrap();
    let asked = pause(&first);
    assert!(asked.asked_while_running);
    assert_eq!(asked.question(), Some("Who are you?"));
    let view = status_of(&h.runtime, first.run_id).await;
    assert_eq!((view.status, view.pause), (RunStatus::WaitingForInput, Some(PauseView::Input(asked.clone()))));

    // Its answer is checked against the question like any other.
    let wrong = InputSubmission {
        reply: InputReply::Answer(json!({ "name": 7 }).as_object().cloned().unwrap()),
        digest: Some(asked.digest.clone()),
    };
    assert!(matches!(
        h.runtime.submit_input(&OWNER, first.run_id, wrong).await,
        Err(runtime::Refusal::InvalidSubmission(_))
    ));

    let second = reply(&h, first.run_id, &asked.digest, named("Ada")).await;
    let again = pause(&second);
    assert_eq!(again.question(), Some("And your friend?"));
    assert_ne!(again.digest, asked.digest, "the next question has a digest of its own");
    // An answer to the first question does not answer the second.
    let stale = InputSubmission { reply: named("Ada"), digest: Some(asked.digest.clone()) };
    assert!(matches!(h.runtime.submit_input(&OWNER, first.run_id, stale).await, Err(runtime::Refusal::StaleTurn)));

    let done = reply(&h, first.run_id, &again.digest, InputReply::Decline).await;
    assert_eq!(answer(&done), "Thanks.");
    assert_eq!(*asker.replies.lock().unwrap(), [named("Ada"), InputReply::Decline]);
    assert_eq!(
        tool_result(&h.provider.last_request(), "c1"),
        format!("replies: {:?}", [named("Ada"), InputReply::Decline])
    );
    assert!(asker.abandoned.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_approved_write_that_asks_runs_the_rest_of_its_turn_after_the_answer() {
    let asker = Asker::new(ToolEffect::NonIdempotentWrite, vec![question("Which name?")]);
    let second_write = TestTool::write("apply_change", ToolEffect::IdempotentWrite).arc();
    let turn = vec![call("c1", "remote.ask", json!({})), call("c2", "apply_change", json!({ "value": "v" }))];
    let h = Harness::new(vec![asker.clone(), second_write.clone()], vec![calls(turn), text("Both done.")]).await;
    let card = h.runtime.run(request()).await.unwrap();
    let digest = approval_pause(&card).digest;
    let asked = h.runtime.approve(&OWNER, card.run_id, ApprovalDecision::approve(&digest)).await.unwrap();
    let question = pause(&asked);
    assert_eq!(question.question(), Some("Which name?"));
    assert_eq!(second_write.executions(), 0, "the rest of the turn waits for the answer");

    let done = reply(&h, card.run_id, &question.digest, named("Ada")).await;
    assert_eq!(answer(&done), "Both done.");
    assert_eq!(second_write.executions(), 1, "approved with the turn, it runs without a second card");
    assert_eq!(tool_result(&h.provider.last_request(), "c2"), "apply_change done");
}

#[tokio::test]
async fn cancelling_a_run_that_waits_on_such_a_question_lets_the_question_go() {
    let asker = Asker::new(ToolEffect::ReadOnly, vec![question("Who are you?")]);
    let h = Harness::new(vec![asker.clone()], vec![calls(vec![call("c1", "remote.ask", json!({}))])]).await;
    let waiting = h.runtime.run(request()).await.unwrap();
    assert!(h.runtime.cancel_if_waiting(&OWNER, waiting.run_id).await.unwrap().cancelled);
    assert_eq!(*asker.abandoned.lock().unwrap(), [json!({ "asked": 1 })]);
    assert!(asker.replies.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_question_the_chat_cannot_show_is_declined_at_once_and_the_model_told_why() {
    let asker = Asker::new(ToolEffect::ReadOnly, vec![question("Upload your files")]);
    let h = Harness::new(vec![], Vec::new()).await;
    let provider = ScriptedProvider::new(vec![calls(vec![call("c1", "remote.ask", json!({}))]), text("Understood.")]);
    let check: runtime::QuestionCheck = Arc::new(|schema: &Value| match schema["title"].as_str() {
        Some(title) if title.starts_with("Upload") => Err("it asks for files".to_string()),
        _ => Ok(()),
    });
    let runtime = Runtime::new(h.db.clone(), registry(vec![asker.clone()]), provider.clone(), fast_settings())
        .with_question_check(check);
    let done = runtime.run(request()).await.unwrap();
    assert_eq!(answer(&done), "Understood.");
    assert_eq!(*asker.replies.lock().unwrap(), [InputReply::Decline]);
    let result = tool_result(&provider.last_request(), "c1");
    assert!(result.contains("a question the chat cannot show (it asks for files), so it was declined"), "{result}");
    assert!(result.ends_with("replies: [Decline]"), "{result}");
}

#[tokio::test]
async fn an_expired_question_is_withdrawn_and_the_run_goes_on() {
    let asker = Asker::new(ToolEffect::ReadOnly, vec![question("Who are you?")]);
    let h =
        Harness::new(vec![asker.clone()], vec![calls(vec![call("c1", "remote.ask", json!({}))]), text("Moving on.")])
            .await;
    let waiting = h.runtime.run(request()).await.unwrap();
    assert!(h.runtime.expired_questions().await.unwrap().is_empty(), "a live question is left alone");

    asker.stopped_waiting.store(true, Ordering::SeqCst);
    let expired = h.runtime.expired_questions().await.unwrap();
    assert_eq!(expired, [(waiting.run_id, "the server stopped waiting".to_string())]);
    let result = h.runtime.withdraw_question(waiting.run_id, &expired[0].1).await.unwrap();
    assert!(matches!(result.outcome, RunOutcome::Completed { .. }), "{:?}", result.outcome);
    assert_eq!(*asker.replies.lock().unwrap(), [InputReply::Cancel]);
    assert_eq!(status_of(&h.runtime, waiting.run_id).await.status, RunStatus::Completed);
    // Withdrawn once: a second withdrawal, or a late answer, finds nothing waiting.
    assert!(h.runtime.withdraw_question(waiting.run_id, "again").await.is_err());
    assert!(h.runtime.expired_questions().await.unwrap().is_empty());
}
