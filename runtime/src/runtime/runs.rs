//! Starting runs: enqueue, and a worker's claim of a queued run that it then drives.

use serde_json::json;
use uuid::Uuid;

use super::segments::segment_token;
use super::Runtime;
use crate::message::ChatMessage;
use crate::refusal::RuntimeError;
use crate::run::{clamp_rounds, EventKind, FailureReason, RunRequest, RunResult};
use crate::store::{NewEvent, NewRun, StoreError};
use crate::tool_loop::write_events;

/// The stored transcript of a run; a struct so it can gain fields without a migration.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
struct Checkpoint(Vec<ChatMessage>);

impl Runtime {
    /// Stores a QUEUED run; a worker then calls [`Runtime::run_queued`].
    pub async fn enqueue(&self, request: RunRequest) -> Result<Uuid, RuntimeError> {
        if !self.store.configuration_active(&request.configuration).await? {
            return Err(RuntimeError::ConfigurationInactive(request.configuration));
        }
        let id = Uuid::new_v4();
        let checkpoint = encode(&Checkpoint(request.messages.clone()))?;
        let allowed_tools = request.allowed_tools.as_ref().map(encode).transpose()?;
        self.store
            .insert_queued(NewRun {
                id,
                owner_user_id: request.owner.user_id,
                owner_admin: request.owner.admin,
                configuration: &request.configuration,
                process: request.process,
                allowed_tools,
                max_rounds: clamp_rounds(request.max_rounds),
                checkpoint,
                outside_content: request.outside_content,
            })
            .await?;
        self.event(id, EventKind::Status, 0, json!({ "status": "queued" })).await;
        Ok(id)
    }

    /// Enqueue and run in this task; for callers without a separate worker.
    pub async fn run(&self, request: RunRequest) -> Result<RunResult, RuntimeError> {
        let id = self.enqueue(request).await?;
        self.run_queued(id).await?.ok_or(RuntimeError::ClaimLost)
    }

    /// Worker entry: claims a QUEUED run and drives it until it settles, suspends or stops.
    /// `None` when the run is not queued (or not due yet) or another worker claimed it.
    pub async fn run_queued(&self, run_id: Uuid) -> Result<Option<RunResult>, RuntimeError> {
        // The tools offered and called are the process's, not those listed so far.
        self.tools.first_listing().await;
        let token = segment_token("worker");
        let Some(record) = self.store.claim_queued(run_id, &token, self.lease_until()).await? else {
            return Ok(None);
        };
        let running =
            NewEvent { kind: EventKind::Status, round: record.rounds, payload: json!({ "status": "running" }) };
        let messages = record
            .checkpoint
            .as_deref()
            .and_then(|raw| serde_json::from_str::<Checkpoint>(raw).ok())
            .map(|checkpoint| checkpoint.0);
        let Some(messages) = messages else {
            tracing::warn!(run = %run_id, "queued run has no readable transcript");
            let mut events = vec![running];
            let outcome = self.settle_failed(&record, &token, FailureReason::StateUnreadable, &mut events).await;
            write_events(&self.store, run_id, &events).await;
            return Ok(Some(RunResult { run_id, outcome, messages: Vec::new() }));
        };
        let mut segment = self.segment(&record, token.clone(), messages);
        segment.note(running);
        let end = self.leased(run_id, &token, segment.run()).await;
        Ok(Some(self.conclude(&record, segment, end).await))
    }
}

fn encode<T: serde::Serialize>(value: &T) -> Result<String, RuntimeError> {
    serde_json::to_string(value).map_err(|e| RuntimeError::Store(StoreError::Corrupt(format!("not encodable: {e}"))))
}
