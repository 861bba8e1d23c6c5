//! "Always allow" at work: when a run comes to a card every call of which a standing approval of
//! the conversation's owner covers, the worker records the owner's approval by that policy (a
//! line, the audit's `auto_approved` row, a job) instead of parking the conversation on the card,
//! and delivers it like any decision. Never for an owner whose changes wait for a second person
//! (four-eyes), nor for a card whose preview failed (nothing was shown that could be approved),
//! nor for a call that could send the conversation's outside content away.

use runtime::ApprovalPause;
use uuid::Uuid;

use app::i18n::{Lang, Text};

use crate::audit::{self, Surface};
use crate::conversation::DecisionDetail;
use crate::turn::{TurnError, Turns};

impl Turns {
    /// True when the card was approved by a policy (and its delivery queued): the caller then
    /// leaves the conversation `processing` instead of settling it on the card.
    pub(crate) async fn auto_approve(
        &self,
        conversation_id: &str,
        run: Uuid,
        pause: &ApprovalPause,
    ) -> Result<bool, TurnError> {
        // A tool that is gone runs nothing: its card waits for a person, who is told why. A call
        // that waits because the run holds outside content (it could send the conversation out)
        // is a card every time: a standing approval was given for the tool, not for whatever a
        // file or a server's result may steer it to send. The admin's lever for a tool trusted
        // not to carry text away is the MCP configuration's `closedWorld` (each such call is
        // logged), which keeps the call from waiting at all.
        if pause.preview_failed()
            || pause.pending_calls.is_empty()
            || pause.pending_calls.iter().any(|call| !call.tool_registered || call.sends_out)
        {
            return Ok(false);
        }
        let Some(conversation) = self.store.conversation(conversation_id).await? else { return Ok(false) };
        let Some(owner) = self.store.user_by_id(conversation.user_id).await? else { return Ok(false) };
        if !owner.approves_own_changes() {
            return Ok(false);
        }
        let mut policy = None;
        for call in &pause.pending_calls {
            match self.store.covering_policy(owner.id, conversation_id, &call.name).await? {
                Some(id) => {
                    policy.get_or_insert(id);
                }
                None => return Ok(false),
            }
        }
        let Some(policy) = policy else { return Ok(false) };
        let detail = DecisionDetail { policy: Some(policy), ..DecisionDetail::default() };
        let entry = audit::decision_entry(true, None, &detail, owner.id, Surface::Worker, run, pause);
        let mut tools: Vec<&str> = pause.pending_calls.iter().map(|call| call.name.as_str()).collect();
        tools.dedup();
        let lang = owner.language.as_deref().and_then(Lang::parse).unwrap_or_default();
        let line = lang.t(Text::DecisionAutoApproved).replace("{}", &tools.join(", "));
        let recorded = self
            .store
            .record_auto_approval(conversation_id, run, &pause.digest, policy, owner.id, &line, &entry)
            .await?;
        if recorded {
            tracing::info!(conversation = %conversation_id, %run, policy, "card approved by a standing approval");
        }
        Ok(recorded)
    }
}
