//! An executing segment: its claim token, its lease renewed while it runs, and the events written
//! outside one.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use db::now;
use uuid::Uuid;

use super::Runtime;
use crate::actor::Actor;
use crate::message::ChatMessage;
use crate::run::{clamp_rounds, EventKind};
use crate::store::{NewEvent, RunRecord};
use crate::tool_loop::{write_events, Segment};

pub(super) fn segment_token(kind: &str) -> String {
    format!("{kind}:{}", Uuid::new_v4())
}

impl Runtime {
    pub(super) fn segment(&self, record: &RunRecord, token: String, transcript: Vec<ChatMessage>) -> Segment<'_> {
        let allowed_tools = record.allowed_tools.as_deref().map(|raw| {
            // An unreadable allow-list offers nothing rather than everything.
            serde_json::from_str::<Vec<String>>(raw).unwrap_or_default().into_iter().collect::<HashSet<_>>()
        });
        Segment {
            store: &self.store,
            registry: &self.tools,
            provider: self.provider.as_ref(),
            run_id: record.id,
            token,
            lease_seconds: self.settings.lease_seconds,
            owner: Actor { user_id: record.owner_user_id, admin: record.owner_admin },
            allowed_tools,
            max_rounds: clamp_rounds(Some(record.max_rounds)),
            process: record.process,
            outside: record.outside_content,
            rounds: record.rounds,
            transcript,
            question_check: self.question_check.as_ref(),
            text: self.text.as_ref(),
            cancels: &self.cancels,
            approved_bases: HashMap::new(),
            // Made right after the claim it carries on from.
            verified: AtomicBool::new(true),
            events: Mutex::new(Vec::new()),
        }
    }

    /// Drives a segment while renewing its lease every third of it, so a lease can be short: a
    /// long model call is not a dead worker. The renewals end with the segment; a segment that
    /// lost its run meanwhile notices at its next step, as it would without them.
    pub(super) async fn leased<F: std::future::Future>(&self, run_id: Uuid, token: &str, segment: F) -> F::Output {
        let seconds = u64::try_from(self.settings.lease_seconds.max(1)).unwrap_or(u64::MAX);
        let every = std::time::Duration::from_millis(seconds.saturating_mul(1000) / 3);
        let renewals = async {
            loop {
                tokio::time::sleep(every).await;
                if let Err(error) = self.store.heartbeat(run_id, token, self.lease_until()).await {
                    tracing::warn!(run = %run_id, %error, "could not renew the lease");
                }
            }
        };
        tokio::select! {
            end = segment => end,
            () = renewals => unreachable!("the renewals never end"),
        }
    }

    pub(super) async fn event(&self, run_id: Uuid, kind: EventKind, round: u32, payload: serde_json::Value) {
        write_events(&self.store, run_id, &[NewEvent { kind, round, payload }]).await;
    }

    pub(super) fn lease_until(&self) -> i64 {
        now().saturating_add(self.settings.lease_seconds)
    }
}
