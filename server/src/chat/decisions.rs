//! Decisions on a card: checked against the card as it stands, by its owner or a reviewer, with
//! what they carry beyond yes or no, and recorded with their audit row.

use app::backend::CurrentUser;
use app::error::AppError;
use app::i18n::{Lang, Text};
use app::model::{CardAnswers, CardDecision, CardExtras};
use runtime::{DenialReason, PauseView};

use super::cards::waits_for_reviewer;
use super::ChatService;
use crate::audit::{self, Surface};
use crate::conversation::{Conversation, ConversationStatus, DecisionDetail};
use crate::corrections;
use crate::failures::internal;
use crate::store::Decision;

/// A decision checked against the card as it stands: approve, deny, and a reason only where the
/// card offers one (else a plain denial); the reason's label for the transcript.
pub(super) fn checked_decision(
    pause: &runtime::ApprovalPause,
    digest: &str,
    decision: CardDecision,
    offers_reasons: bool,
    lang: Lang,
) -> Result<(bool, Option<DenialReason>, Option<&'static str>), AppError> {
    if !runtime::digest::digests_match(&pause.digest, Some(digest)) {
        return Err(AppError::CardChanged);
    }
    Ok(match decision {
        CardDecision::Approve | CardDecision::ApproveEdited => (true, None, None),
        CardDecision::Deny | CardDecision::Respond => (false, None, None),
        CardDecision::Variant if offers_reasons => {
            (false, Some(DenialReason::Variant), Some(lang.t(Text::ApprovalVariant)))
        }
        CardDecision::Skip if offers_reasons => (false, Some(DenialReason::Skip), Some(lang.t(Text::ApprovalSkip))),
        CardDecision::Variant | CardDecision::Skip => (false, None, None),
    })
}

impl ChatService {
    /// Records a decision on the conversation's card by `decider`: its owner, or a reviewer of
    /// the owner's changes (four-eyes), who may only approve.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn decide_on(
        &self,
        row: Conversation,
        decider: &CurrentUser,
        digest: &str,
        decision: CardDecision,
        extras: CardExtras,
        lang: Lang,
        surface: Surface,
    ) -> Result<(), AppError> {
        if row.status != ConversationStatus::AwaitingApproval {
            return Err(if row.status == ConversationStatus::Processing && row.recorded.is_some() {
                AppError::DecisionInFlight
            } else {
                AppError::NotAwaitingApproval
            });
        }
        let Some(PauseView::Approval(pause)) = self.pause_of(&row).await? else {
            return Err(AppError::NotAwaitingApproval);
        };
        let reviewing = decider.id != row.user_id;
        // The server decides which answers a card has: a reason for a card that does not offer
        // one is a plain denial.
        let offers_reasons = !reviewing && self.card_answers(&row, &pause) == CardAnswers::Process;
        let (approve, reason, label) = checked_decision(&pause, digest, decision, offers_reasons, lang)?;
        if reviewing && !approve {
            // Denying a change stays with its owner.
            return Err(AppError::Forbidden);
        }
        if approve && !reviewing && waits_for_reviewer(&pause, decider) {
            return Err(AppError::NeedsReviewer);
        }
        // Corrections are the owner's: a reviewer approves what was proposed.
        let corrected = decision == CardDecision::ApproveEdited || extras.always.is_some();
        if reviewing && corrected {
            return Err(AppError::Forbidden);
        }
        let (detail, line) = self.decision_detail(&pause, decision, offers_reasons, &extras, lang)?;
        let always = match extras.always.filter(|_| approve) {
            Some(scope) => Some(self.policy_request(decider, &row.id, &pause, scope).await?),
            None => None,
        };
        let label = line.as_deref().or(label);
        let decision =
            Decision { approve, digest: &pause.digest, reason, label, decided_by: decider.id, detail: &detail };
        let run_id = row.run_id.ok_or(AppError::NotAwaitingApproval)?;
        let entry = audit::decision_entry(approve, reason, &detail, decider.id, surface, run_id, &pause);
        if !self.store.record_decision(row.user_id, &row.id, decision, &entry).await.map_err(internal)? {
            return Err(AppError::NotAwaitingApproval);
        }
        if let Some(request) = always {
            self.store.add_policies(&request).await.map_err(internal)?;
        }
        self.wake_announced(&row.id);
        Ok(())
    }

    /// What a decision carries beyond yes or no, checked: the sentence for the model (Respond, or
    /// with a process card's reason), the edited arguments (Apply edited); and the transcript line
    /// that says so, if any.
    pub(super) fn decision_detail(
        &self,
        pause: &runtime::ApprovalPause,
        decision: CardDecision,
        offers_reasons: bool,
        extras: &CardExtras,
        lang: Lang,
    ) -> Result<(DecisionDetail, Option<String>), AppError> {
        let mut detail = DecisionDetail::default();
        let line = match decision {
            CardDecision::Respond => {
                let said = corrections::checked_sentence(extras.message.as_deref(), true)?.unwrap_or_default();
                let line = lang.t(Text::DecisionResponded).replace("{}", &said);
                detail.message = Some(said);
                Some(line)
            }
            CardDecision::Variant | CardDecision::Skip if offers_reasons => {
                let said = corrections::checked_sentence(extras.message.as_deref(), false)?;
                let label =
                    lang.t(if decision == CardDecision::Variant { Text::ApprovalVariant } else { Text::ApprovalSkip });
                let line = said.as_ref().map(|said| format!("{label}: {said}"));
                detail.message = said;
                line
            }
            CardDecision::ApproveEdited => {
                detail.edits =
                    corrections::edited_arguments(&pause.pending_calls, self.runtime.tools(), &extras.edits, lang)?;
                Some(lang.t(Text::DecisionEdited).to_string())
            }
            _ => None,
        };
        Ok((detail, line))
    }
}
