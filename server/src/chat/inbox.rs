//! The runs inbox: the runs that wait for the reader, in their conversations and in those the
//! chat moved on from, and, for a reviewer, other owners' cards; answered, decided or dismissed
//! there; and the count of them the header shows.

use app::backend::CurrentUser;
use app::error::AppError;
use app::i18n::{Lang, Text};
use app::model::{
    ApprovalCardView, CardAnswers, CardDecision, CardExtras, InboxItemView, InboxView, QuestionView, WaitingRunView,
    WaitingView,
};
use question::form::InputAnswer;
use runtime::{Actor, PauseView, RunStatus};
use uuid::Uuid;

use super::cards::{card_view, waits_for_reviewer};
use super::decisions::checked_decision;
use super::questions::{checked_reply, question_view};
use super::ChatService;
use crate::audit::{self, Action, Entry, Surface};
use crate::conversation::{Conversation, ConversationStatus, DecisionDetail, ErrorCode, MessageRole, Notice, Recorded};
use crate::failures::{internal, runtime_failure};
use crate::handback;
use crate::store::{LatestWaiting, WaitingCount};

/// The runs inbox lists at most this many waiting runs.
pub const INBOX_LIMIT: u32 = 100;

/// How long something has waited, roughly, in the reader's language.
pub(crate) fn waited(seconds: i64, lang: Lang) -> String {
    let (count, one, many) = match seconds.max(0) {
        s if s < 3600 => ((s / 60).max(1), Text::Minute, Text::Minutes),
        s if s < 86_400 => (s / 3600, Text::Hour, Text::Hours),
        s => (s / 86_400, Text::Day, Text::Days),
    };
    format!("{count} {}", lang.t(if count == 1 { one } else { many }))
}

/// The count as the page and the stream show it.
pub fn waiting_view(count: WaitingCount, latest: Option<LatestWaiting>) -> WaitingView {
    WaitingView {
        count: u32::try_from(count.count).unwrap_or(0),
        mark: count.mark,
        latest: latest.map(|latest| WaitingRunView {
            run_id: latest.run_id.to_string(),
            conversation_id: latest.conversation_id,
            title: latest.title,
            approval: latest.approval,
        }),
    }
}

impl ChatService {
    /// Another user's conversation whose card waits for a reviewer, for a reader who reviews:
    /// its owner may not approve their own changes. `None` for anything else.
    async fn under_review(&self, reviewer: &CurrentUser, id: &str) -> Result<Option<Conversation>, AppError> {
        if !reviewer.reviews() {
            return Ok(None);
        }
        let Some(row) = self.store.conversation(id).await.map_err(internal)? else { return Ok(None) };
        if row.user_id == reviewer.id || self.owner_under_review(row.user_id).await?.is_none() {
            return Ok(None);
        }
        Ok(Some(row))
    }

    /// A run the chat moved on from, as the inbox lists it: `None` while a decision given in the
    /// inbox is on its way to it, or once it no longer waits (not listed), else the refusal of the
    /// last one, if any.
    async fn undecided_in_inbox(&self, owner: i64, run_id: Uuid) -> Result<Option<Option<ErrorCode>>, AppError> {
        let refused = match self.store.run_decision(run_id).await.map_err(internal)? {
            Some(decision) if decision.refused.is_none() => return Ok(None),
            Some(decision) => decision.refused,
            None => None,
        };
        // The inbox lists the waiting runs before it reads their conversations: a decision or
        // answer given in the chat may have reached a run since and settled its conversation,
        // which then reads as moved on from the run. Only a run that still waits now has.
        let now = self.runtime.run_status(&Actor::user(owner), run_id).await.map_err(runtime_failure)?;
        Ok(now.is_some_and(RunStatus::is_waiting).then_some(refused))
    }

    /// The account, when its changes wait for a reviewer (it may not approve its own).
    async fn owner_under_review(&self, user_id: i64) -> Result<Option<crate::store::UserRow>, AppError> {
        let owner = self.store.user_by_id(user_id).await.map_err(internal)?;
        Ok(owner.filter(|owner| !owner.approves_own_changes()))
    }

    /// Other users' changes that wait for this reviewer: cards their owners may not approve.
    async fn reviews(&self, reviewer: &CurrentUser, lang: Lang) -> Result<Vec<InboxItemView>, AppError> {
        let actor = Actor::user(reviewer.id);
        let runs = self.runtime.approvals_of_others(&actor, INBOX_LIMIT).await.map_err(runtime_failure)?;
        let mut items = Vec::new();
        for view in runs {
            let Some(row) = self.store.conversation_of_any_run(view.run_id).await.map_err(internal)? else { continue };
            // The chat's card, or a card of a run the chat moved on from that no one decided yet.
            let moved_on = row.run_id != Some(view.run_id);
            let error = if moved_on {
                let Some(refused) = self.undecided_in_inbox(row.user_id, view.run_id).await? else { continue };
                refused
            } else if row.status == ConversationStatus::AwaitingApproval {
                None
            } else {
                continue;
            };
            let Some(owner) = self.owner_under_review(row.user_id).await? else { continue };
            let Some(PauseView::Approval(pause)) = view.pause else { continue };
            let card =
                ApprovalCardView { run: Some(view.run_id.to_string()), ..card_view(pause, CardAnswers::Review, lang) };
            items.push(InboxItemView {
                run_id: view.run_id.to_string(),
                conversation_id: row.id,
                conversation_title: row.title,
                waiting_for: waited(db::now().saturating_sub(view.updated_at), lang),
                moved_on,
                error: error.map(|code| handback::sentence(code, lang).to_string()),
                question: None,
                card: Some(card),
                review_of: Some(owner.username),
            });
        }
        Ok(items)
    }

    /// The conversation and one of its runs, for the runs inbox: unknown ids and another user's
    /// are alike not found.
    async fn run_of(&self, user: &CurrentUser, id: &str, run: &str) -> Result<(Conversation, Uuid), AppError> {
        let run_id = Uuid::parse_str(run.trim()).map_err(|_| AppError::NotFound)?;
        let row = self.owned(user, id).await?;
        if row.run_id != Some(run_id) {
            let owner = self.store.conversation_of_any_run(run_id).await.map_err(internal)?;
            if owner.is_none_or(|owner| owner.id != row.id) {
                return Err(AppError::NotFound);
            }
        }
        Ok((row, run_id))
    }

    /// Records a decision or answer given in the inbox for a run the chat moved on from, by its
    /// owner or a reviewer (`decided_by`); a second one for the same run loses.
    async fn record_run_decision(
        &self,
        row: &Conversation,
        run_id: Uuid,
        recorded: &Recorded,
        decided_by: Option<i64>,
        entry: &Entry,
    ) -> Result<(), AppError> {
        let waiting = recorded.waiting_run_status();
        let still_waits = async {
            let status = self.runtime.run_status(&Actor::user(row.user_id), run_id).await;
            status.map(|status| status == Some(waiting)).map_err(runtime_failure)
        };
        let won = self.store.record_run_decision(&row.id, run_id, recorded, decided_by, entry, still_waits).await;
        if !won.map_err(internal)?? {
            return Err(AppError::DecisionInFlight);
        }
        self.wake(&row.id);
        Ok(())
    }

    /// A reviewer's decision on a card of another user's conversation: the card the chat shows,
    /// or one of a run the chat moved on from. Approve only; denying stays with the owner.
    async fn review_run(
        &self,
        row: Conversation,
        reviewer: &CurrentUser,
        run: &str,
        digest: &str,
        decision: CardDecision,
        lang: Lang,
    ) -> Result<(), AppError> {
        let run_id = Uuid::parse_str(run.trim()).map_err(|_| AppError::NotFound)?;
        if row.run_id == Some(run_id) {
            return self.decide_on(row, reviewer, digest, decision, CardExtras::default(), lang, Surface::Inbox).await;
        }
        let owner = self.store.conversation_of_any_run(run_id).await.map_err(internal)?;
        if owner.is_none_or(|owner| owner.id != row.id) {
            return Err(AppError::NotFound);
        }
        let Some(PauseView::Approval(pause)) = self.pause_of_run(&row, run_id).await? else {
            return Err(AppError::NotAwaitingApproval);
        };
        let (approve, _, _) = checked_decision(&pause, digest, decision, false, lang)?;
        // Denying stays with the owner, and a process run's cards with whoever started it.
        if !approve || pause.offers_denial_reason() {
            return Err(AppError::Forbidden);
        }
        let recorded = Recorded::Decision {
            approve,
            digest: pause.digest.clone(),
            reason: None,
            detail: DecisionDetail::default(),
        };
        let none = DecisionDetail::default();
        let entry = audit::decision_entry(approve, None, &none, reviewer.id, Surface::Inbox, run_id, &pause);
        self.record_run_decision(&row, run_id, &recorded, Some(reviewer.id), &entry).await
    }

    /// Cancels one of the owner's waiting runs without deciding it, from the runs inbox (a
    /// question the chat cannot show, a card nobody will decide). The conversation's own run goes
    /// as an expiry does: one guarded write (idle, the line, the audit row), then the cancel; a run
    /// the chat moved on from is cancelled first, and the line and row follow only if that won. A
    /// run that no longer waits, or has a decision on its way, is refused and nothing changes.
    pub async fn dismiss(&self, user: &CurrentUser, id: &str, run: &str) -> Result<(), AppError> {
        // A reviewer may approve another owner's card, never take it away.
        if self.under_review(user, id).await?.is_some() {
            return Err(AppError::Forbidden);
        }
        let (row, run_id) = self.run_of(user, id, run).await?;
        let owner = Actor::user(row.user_id);
        let pause = match self.pause_of_run(&row, run_id).await? {
            Some(pause @ (PauseView::Input(_) | PauseView::Approval(_))) => pause,
            _ => return Err(AppError::NothingToDismiss),
        };
        let entry = Entry::new(Action::Dismissed, Surface::Inbox, Some(user.id), Some(run_id)).with_pause(Some(&pause));
        if row.run_id == Some(run_id) {
            if row.status == ConversationStatus::Processing && row.recorded.is_some() {
                return Err(AppError::DecisionInFlight);
            }
            if !self.store.dismiss_waiting(user.id, &row.id, run_id, &user.username, &entry).await.map_err(internal)? {
                return Err(AppError::NothingToDismiss);
            }
            // If this fails the run waits on unseen until it expires; the conversation is free.
            if let Err(error) = self.runtime.cancel_if_waiting(&owner, run_id).await {
                tracing::warn!(%error, conversation = %row.id, "a dismissed run could not be cancelled yet");
            }
        } else {
            let pending = self.store.run_decision(run_id).await.map_err(internal)?;
            if pending.is_some_and(|decision| decision.refused.is_none()) {
                return Err(AppError::DecisionInFlight);
            }
            let result = self.runtime.cancel_if_waiting(&owner, run_id).await.map_err(runtime_failure)?;
            if !result.cancelled {
                return Err(AppError::NothingToDismiss);
            }
            self.store
                .append_line(&row.id, MessageRole::Assistant, &user.username, Notice::Dismissed, Some(&entry))
                .await
                .map_err(internal)?;
        }
        self.events.changed(&row.id);
        Ok(())
    }

    pub(super) async fn answer_run(
        &self,
        user: &CurrentUser,
        id: &str,
        run: &str,
        digest: &str,
        answer: InputAnswer,
        lang: Lang,
    ) -> Result<(), AppError> {
        let (row, run_id) = self.run_of(user, id, run).await?;
        if row.run_id == Some(run_id) {
            return self.answer_from(user, id, digest, answer, lang, Surface::Inbox).await;
        }
        let Some(PauseView::Input(pause)) = self.pause_of_run(&row, run_id).await? else {
            return Err(AppError::NotAwaitingInput);
        };
        let (reply, display) = checked_reply(&pause, digest, answer, lang)?;
        let entry = audit::answer_entry(&reply, &display, user.id, Surface::Inbox, run_id, &pause);
        let recorded = Recorded::Answer { digest: pause.digest.clone(), reply };
        self.record_run_decision(&row, run_id, &recorded, None, &entry).await
    }

    // The seam's signature: `ChatBackend::decide_run` takes as many.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn decide_run(
        &self,
        user: &CurrentUser,
        id: &str,
        run: &str,
        digest: &str,
        decision: CardDecision,
        extras: CardExtras,
        lang: Lang,
    ) -> Result<(), AppError> {
        if let Some(row) = self.under_review(user, id).await? {
            return self.review_run(row, user, run, digest, decision, lang).await;
        }
        let (row, run_id) = self.run_of(user, id, run).await?;
        if row.run_id == Some(run_id) {
            return self.decide_on(row, user, digest, decision, extras, lang, Surface::Inbox).await;
        }
        let Some(PauseView::Approval(pause)) = self.pause_of_run(&row, run_id).await? else {
            return Err(AppError::NotAwaitingApproval);
        };
        let offers_reasons = pause.offers_denial_reason();
        let (approve, reason, _) = checked_decision(&pause, digest, decision, offers_reasons, lang)?;
        if approve && waits_for_reviewer(&pause, user) {
            return Err(AppError::NeedsReviewer);
        }
        let (detail, _) = self.decision_detail(&pause, decision, offers_reasons, &extras, lang)?;
        let always = match extras.always.filter(|_| approve) {
            Some(scope) => Some(self.policy_request(user, &row.id, &pause, scope).await?),
            None => None,
        };
        let entry = audit::decision_entry(approve, reason, &detail, user.id, Surface::Inbox, run_id, &pause);
        let recorded = Recorded::Decision { approve, digest: pause.digest.clone(), reason, detail };
        self.record_run_decision(&row, run_id, &recorded, None, &entry).await?;
        if let Some(request) = always {
            self.store.add_policies(&request).await.map_err(internal)?;
        }
        Ok(())
    }

    pub(super) async fn inbox(&self, user: &CurrentUser, lang: Lang) -> Result<InboxView, AppError> {
        let runs = self.runtime.waiting_runs(&Actor::user(user.id), INBOX_LIMIT).await.map_err(runtime_failure)?;
        let mut items = Vec::with_capacity(runs.len());
        for view in runs {
            let Some(row) = self.store.conversation_of_any_run(view.run_id).await.map_err(internal)? else { continue };
            if row.user_id != user.id {
                continue;
            }
            let moved_on = row.run_id != Some(view.run_id);
            let error = if moved_on {
                let Some(refused) = self.undecided_in_inbox(row.user_id, view.run_id).await? else { continue };
                refused
            } else if row.status.is_waiting() {
                row.error
            } else {
                // A decision or answer recorded in the chat is on its way.
                continue;
            };
            let run = Some(view.run_id.to_string());
            let (question, card) = match view.pause {
                Some(PauseView::Input(pause)) => (Some(QuestionView { run, ..question_view(pause, lang) }), None),
                Some(PauseView::Approval(pause)) => {
                    let answers = if moved_on {
                        if pause.offers_denial_reason() {
                            CardAnswers::Process
                        } else {
                            CardAnswers::Plain
                        }
                    } else {
                        self.card_answers(&row, &pause)
                    };
                    (None, Some(ApprovalCardView { run, ..self.owner_card(user, pause, answers, lang).await? }))
                }
                Some(PauseView::Unreadable) | None => continue,
            };
            items.push(InboxItemView {
                run_id: view.run_id.to_string(),
                conversation_id: row.id,
                conversation_title: row.title,
                waiting_for: waited(db::now().saturating_sub(view.updated_at), lang),
                moved_on,
                error: error.map(|code| handback::sentence(code, lang).to_string()),
                question,
                card,
                review_of: None,
            });
        }
        if user.reviews() {
            items.extend(self.reviews(user, lang).await?);
        }
        Ok(InboxView { items })
    }

    pub(super) async fn waiting(&self, user: &CurrentUser) -> Result<WaitingView, AppError> {
        // A page's count came with its session (`auth::page_head`).
        let count = match crate::auth::page_head(user) {
            Some(read) => read.head.waiting.clone(),
            None => self.store.waiting_count(user.id, user.reviews()).await.map_err(internal)?,
        };
        Ok(waiting_view(count, None))
    }
}
