//! A turn's writes, each one guarded write on the state its caller read: a message starts a turn,
//! an answer or a decision is recorded for the worker, the run's outcome settles the
//! conversation, a refusal hands the question or card back, Stop ends the reply.

use db::{now, now_ms};
use runtime::DenialReason;
use uuid::Uuid;

use super::args::Arg;
use super::guarded::{clear_recorded, Then};
use super::{Store, StoreError};
use crate::audit::Entry;
use crate::conversation::{ConversationStatus, DecisionDetail, ErrorCode, MessageRole, Notice, PendingDecision, Reply};

/// A decision on an approval card, as recorded for the worker.
#[derive(Debug, Clone, Copy)]
pub struct Decision<'a> {
    pub approve: bool,
    pub digest: &'a str,
    /// Only for a card that offers reasons.
    pub reason: Option<DenialReason>,
    /// Who decided: the owner, or a reviewer (four-eyes).
    pub decided_by: i64,
    /// The reader's words for the reason, appended as their message.
    pub label: Option<&'a str>,
    /// The words for the model, the edited arguments, the deciding policy.
    pub detail: &'a DecisionDetail,
}

/// What a run came back with, as the conversation records it.
#[derive(Debug, Clone, Copy)]
pub enum Settle<'a> {
    Answered { answer: &'a str },
    AwaitingInput { question: Option<&'a str> },
    AwaitingApproval,
    Failed { code: ErrorCode },
}

/// What happened when a message tried to start a turn.
#[derive(Debug, PartialEq, Eq)]
pub enum StartTurn {
    Started,
    NotFound,
    Busy,
}

/// [`Store::record_answer`]'s guarded UPDATE; public for the bench's limit references.
pub const ANSWER_UPDATE: &str = "UPDATE conversations
     SET status = 'processing', approval_decision = $1, approval_turn_digest = $2,
         pending_input = $3, approval_deny_reason = NULL, error_code = NULL, updated_at = $4,
         recorded_at_ms = $7
     WHERE id = $5 AND user_id = $6 AND status = 'awaiting_input' AND run_id IS NOT NULL";

impl Store {
    /// Claims the conversation for a new turn, stores the user's message and queues the job, all
    /// or nothing. `expected` is the status the caller read; if it changed meanwhile nothing happens.
    /// The run the conversation waited on (if any) is left as it is: only its id is forgotten.
    pub async fn start_turn(
        &self,
        user_id: i64,
        conversation_id: &str,
        expected: ConversationStatus,
        content: &str,
        title_if_untitled: &str,
        untitled: &str,
    ) -> Result<StartTurn, StoreError> {
        let started = self
            .guarded(
                conversation_id,
                concat!(
                    "UPDATE conversations
                     SET status = 'processing', error_code = NULL, updated_at = $1, run_id = NULL, ",
                    clear_recorded!(),
                    ", title = CASE WHEN title = $2 THEN $3 ELSE title END
                     WHERE id = $4 AND user_id = $5 AND status = $6 AND status != 'processing'"
                ),
                &[
                    Arg::Int(now()),
                    Arg::Text(untitled),
                    Arg::Text(title_if_untitled),
                    Arg::Text(conversation_id),
                    Arg::Int(user_id),
                    Arg::Text(expected.as_str()),
                ],
                &[
                    Then::Message { role: MessageRole::User, content, notice: None },
                    Then::AttachPending,
                    Then::Job,
                    Then::Announce,
                ],
            )
            .await?;
        if started {
            return Ok(StartTurn::Started);
        }
        let exists = self.conversation_of(user_id, conversation_id).await?.is_some();
        Ok(if exists { StartTurn::Busy } else { StartTurn::NotFound })
    }

    /// Claims a waiting conversation without starting anything yet, keeping its run id: a process
    /// run must first be cancelled, and if that fails the claim is given back.
    pub async fn claim_waiting(
        &self,
        user_id: i64,
        conversation_id: &str,
        expected: ConversationStatus,
    ) -> Result<bool, StoreError> {
        self.update_one(
            "UPDATE conversations SET status = 'processing', updated_at = $1
             WHERE id = $2 AND user_id = $3 AND status = $4 AND status IN ('awaiting_approval', 'awaiting_input')",
            &[Arg::Int(now()), Arg::Text(conversation_id), Arg::Int(user_id), Arg::Text(expected.as_str())],
        )
        .await
    }

    /// Gives a claim back: the row returns to the waiting status it had.
    pub async fn release_claim(&self, conversation_id: &str, back_to: ConversationStatus) -> Result<bool, StoreError> {
        self.update_one(
            "UPDATE conversations SET status = $1, updated_at = $2
             WHERE id = $3 AND status = 'processing' AND approval_decision IS NULL",
            &[Arg::Text(back_to.as_str()), Arg::Int(now()), Arg::Text(conversation_id)],
        )
        .await
    }

    /// Starts a new turn on a conversation this request has claimed (see [`Store::claim_waiting`]).
    pub async fn start_claimed_turn(
        &self,
        conversation_id: &str,
        content: &str,
        title_if_untitled: &str,
        untitled: &str,
        cancelled: Option<&Entry>,
    ) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET error_code = NULL, updated_at = $1, run_id = NULL, ",
                clear_recorded!(),
                ", title = CASE WHEN title = $2 THEN $3 ELSE title END
                 WHERE id = $4 AND status = 'processing' AND approval_decision IS NULL"
            ),
            &[Arg::Int(now()), Arg::Text(untitled), Arg::Text(title_if_untitled), Arg::Text(conversation_id)],
            &[
                cancelled.map(Then::Audit),
                Some(Then::Message { role: MessageRole::User, content, notice: None }),
                Some(Then::AttachPending),
                Some(Then::Job),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>(),
        )
        .await
    }

    /// Edit and rerun: the transcript from `message_id` on is replaced by the edited message, and a
    /// new turn starts from there. Guarded like [`Store::start_turn`] on the status the caller
    /// read, never while a turn runs or a decision travels.
    pub async fn restart_from(
        &self,
        user_id: i64,
        conversation_id: &str,
        expected: ConversationStatus,
        message_id: i64,
        content: &str,
    ) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET status = 'processing', error_code = NULL, updated_at = $1, run_id = NULL, ",
                clear_recorded!(),
                " WHERE id = $2 AND user_id = $3 AND status = $4 AND status != 'processing'"
            ),
            &[Arg::Int(now()), Arg::Text(conversation_id), Arg::Int(user_id), Arg::Text(expected.as_str())],
            &Self::rerun_steps(message_id, content),
        )
        .await
    }

    /// [`Store::restart_from`] on a conversation this request has claimed (its waiting run was
    /// cancelled first; see [`Store::claim_waiting`]).
    pub async fn restart_claimed_from(
        &self,
        conversation_id: &str,
        message_id: i64,
        content: &str,
        cancelled: Option<&Entry>,
    ) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET error_code = NULL, updated_at = $1, run_id = NULL, ",
                clear_recorded!(),
                " WHERE id = $2 AND status = 'processing' AND approval_decision IS NULL"
            ),
            &[Arg::Int(now()), Arg::Text(conversation_id)],
            &cancelled.map(Then::Audit).into_iter().chain(Self::rerun_steps(message_id, content)).collect::<Vec<_>>(),
        )
        .await
    }

    fn rerun_steps(message_id: i64, content: &str) -> [Then<'_>; 4] {
        [Then::TruncateAfter(message_id), Then::Rewrite { message_id, content }, Then::DropDraft, Then::Job]
    }

    /// Records a reply to the question the conversation waits on, appends its line (if it has one)
    /// to the transcript and queues the delivery, guarded on the conversation still waiting for
    /// input. A question whose open call lives in one worker's memory names it (`holder`): its
    /// job is that worker's while it is alive.
    #[allow(clippy::too_many_arguments)]
    pub async fn record_answer(
        &self,
        user_id: i64,
        conversation_id: &str,
        digest: &str,
        reply: &Reply,
        display: Option<&str>,
        entry: &Entry,
        holder: Option<&str>,
    ) -> Result<bool, StoreError> {
        let encoded = reply.encode();
        let then = answer_steps(display, entry, holder);
        self.guarded(
            conversation_id,
            ANSWER_UPDATE,
            &[
                Arg::Text(PendingDecision::Input.as_str()),
                Arg::Text(digest),
                Arg::Text(&encoded),
                Arg::Int(now()),
                Arg::Text(conversation_id),
                Arg::Int(user_id),
                Arg::Int(now_ms()),
            ],
            &then,
        )
        .await
    }

    /// The question's tool stopped waiting: the question is withdrawn for the worker to tell the
    /// run, with the audit's row (`entry`), guarded on the conversation still waiting on that run.
    pub async fn record_withdrawal(
        &self,
        conversation_id: &str,
        run_id: Uuid,
        reason: &str,
        entry: &Entry,
        holder: Option<&str>,
    ) -> Result<bool, StoreError> {
        let encoded = Reply::Withdrawn(reason.to_string()).encode();
        let run = run_id.to_string();
        self.guarded(
            conversation_id,
            "UPDATE conversations
             SET status = 'processing', approval_decision = $1, approval_turn_digest = '',
                 pending_input = $2, approval_deny_reason = NULL, error_code = NULL, updated_at = $3
             WHERE id = $4 AND status = 'awaiting_input' AND run_id = $5",
            &[
                Arg::Text(PendingDecision::Input.as_str()),
                Arg::Text(&encoded),
                Arg::Int(now()),
                Arg::Text(conversation_id),
                Arg::Text(&run),
            ],
            &[holder.map_or(Then::Job, Then::JobHeldBy), Then::Audit(entry)],
        )
        .await
    }

    /// Records a decision on the approval card, with the reason's label in the transcript when
    /// there is one, and queues the delivery.
    pub async fn record_decision(
        &self,
        user_id: i64,
        conversation_id: &str,
        decision: Decision<'_>,
        entry: &Entry,
    ) -> Result<bool, StoreError> {
        let kind = if decision.approve { PendingDecision::Approve } else { PendingDecision::Deny };
        let label = decision.label.map(|label| Then::Message {
            role: MessageRole::User,
            content: label,
            notice: Some(Notice::Decision),
        });
        let then: Vec<Then<'_>> = label.into_iter().chain([Then::Job, Then::Audit(entry), Then::Announce]).collect();
        let edits = decision.detail.encode_edits();
        self.guarded(
            conversation_id,
            "UPDATE conversations
             SET status = 'processing', approval_decision = $1, approval_turn_digest = $2,
                 approval_deny_reason = $3, pending_input = NULL, error_code = NULL, updated_at = $4,
                 approval_decided_by = $8, recorded_at_ms = $9,
                 approval_message = $10, approval_edits = $11, approval_policy = $12,
                 approved_through = CASE WHEN $7
                     THEN (SELECT MAX(m.id) FROM messages m WHERE m.conversation_id = $5)
                     ELSE approved_through END
             WHERE id = $5 AND user_id = $6 AND status = 'awaiting_approval' AND run_id IS NOT NULL",
            &[
                Arg::Text(kind.as_str()),
                Arg::Text(decision.digest),
                Arg::MaybeText(decision.reason.map(DenialReason::as_str)),
                Arg::Int(now()),
                Arg::Text(conversation_id),
                Arg::Int(user_id),
                Arg::Bool(decision.approve),
                Arg::Int(decision.decided_by),
                Arg::Int(now_ms()),
                Arg::MaybeText(decision.detail.message.as_deref()),
                Arg::MaybeText(edits.as_deref()),
                Arg::MaybeInt(decision.detail.policy),
            ],
            &then,
        )
        .await
    }

    /// Retry of a failed turn over the transcript as it is. A conversation with a recorded
    /// decision in flight is `processing`, so it cannot be retried.
    pub async fn claim_retry(&self, user_id: i64, conversation_id: &str) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            "UPDATE conversations
             SET status = 'processing', error_code = NULL, run_id = NULL, updated_at = $1
             WHERE id = $2 AND user_id = $3 AND status = 'failed'",
            &[Arg::Int(now()), Arg::Text(conversation_id), Arg::Int(user_id)],
            &[Then::Job],
        )
        .await
    }

    /// Remembers which run carries the conversation's new turn, before the run executes, so a
    /// restart finds the run again instead of starting a second one.
    pub async fn attach_run(&self, conversation_id: &str, run_id: Uuid) -> Result<bool, StoreError> {
        let run = run_id.to_string();
        self.update_one(
            "UPDATE conversations SET run_id = $1, updated_at = $2
             WHERE id = $3 AND status = 'processing' AND run_id IS NULL AND approval_decision IS NULL",
            &[Arg::Text(&run), Arg::Int(now()), Arg::Text(conversation_id)],
        )
        .await
    }

    /// Applies what a run came back with, guarded on the conversation still carrying that run:
    /// a late result of an abandoned run changes nothing.
    /// `notice` stands beside a turn that went on (a question withdrawn on the way); a failure
    /// shows its own code instead.
    pub async fn settle(
        &self,
        conversation_id: &str,
        run_id: Uuid,
        settle: Settle<'_>,
        notice: Option<ErrorCode>,
        entry: Option<&Entry>,
    ) -> Result<bool, StoreError> {
        let (status, keep_run, error_code, message) = match settle {
            Settle::Answered { answer } => (ConversationStatus::Idle, false, notice, Some(answer)),
            Settle::AwaitingInput { question } => (ConversationStatus::AwaitingInput, true, notice, question),
            Settle::AwaitingApproval => (ConversationStatus::AwaitingApproval, true, notice, None),
            Settle::Failed { code } => (ConversationStatus::Failed, false, Some(code), None),
        };
        let message = message.filter(|text| !text.trim().is_empty()).map(|content| Then::Message {
            role: MessageRole::Assistant,
            content,
            notice: None,
        });
        let run = run_id.to_string();
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations
                 SET status = $1, run_id = CASE WHEN $2 THEN run_id ELSE NULL END, error_code = $3, ",
                clear_recorded!(),
                ", updated_at = $4
                 WHERE id = $5 AND status = 'processing' AND run_id = $6"
            ),
            &[
                Arg::Text(status.as_str()),
                Arg::Bool(keep_run),
                Arg::MaybeText(error_code.map(ErrorCode::as_str)),
                Arg::Int(now()),
                Arg::Text(conversation_id),
                Arg::Text(&run),
            ],
            &message.into_iter().chain([Then::DropDraft]).chain(entry.map(Then::Audit)).collect::<Vec<_>>(),
        )
        .await
    }

    /// Hands a question or card back after the runtime refused the recorded answer or decision:
    /// the waiting status returns, the undelivered line leaves the transcript, and the reason is
    /// stored as a code for the reader's language.
    pub async fn hand_back(
        &self,
        conversation_id: &str,
        back_to: ConversationStatus,
        code: ErrorCode,
        entry: Option<&Entry>,
    ) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET status = $1, error_code = $2, ",
                clear_recorded!(),
                ", updated_at = $3
                 WHERE id = $4 AND status = 'processing' AND approval_decision IS NOT NULL"
            ),
            &[Arg::Text(back_to.as_str()), Arg::Text(code.as_str()), Arg::Int(now()), Arg::Text(conversation_id)],
            &[Some(Then::DropUndelivered), entry.map(Then::Audit)].into_iter().flatten().collect::<Vec<_>>(),
        )
        .await
    }

    /// The recorded answer or decision has reached the run (an earlier attempt delivered it): it
    /// is no longer in flight, and the conversation follows the run from here.
    pub async fn mark_delivered(&self, conversation_id: &str) -> Result<bool, StoreError> {
        self.update_one(
            concat!(
                "UPDATE conversations SET ",
                clear_recorded!(),
                ", updated_at = $1
                 WHERE id = $2 AND status = 'processing' AND approval_decision IS NOT NULL"
            ),
            &[Arg::Int(now()), Arg::Text(conversation_id)],
        )
        .await
    }

    /// Fails a turn that cannot go on (a refusal that is not a hand-back, an unexpected error).
    /// Stops the reply being written: the conversation is idle again and the draft so far joins
    /// the transcript as a stopped reply. Guarded on the conversation still working on `run_id`
    /// (`None`: no run attached yet), so of Stop and a question or card settling, exactly one wins.
    pub async fn stop(
        &self,
        user_id: i64,
        conversation_id: &str,
        run_id: Option<Uuid>,
        cancelled: &Entry,
    ) -> Result<bool, StoreError> {
        let run = run_id.map(|run| run.to_string());
        // Jobs of the conversation are left: a job finds it idle and does nothing.
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET status = 'idle', run_id = NULL, error_code = NULL, ",
                clear_recorded!(),
                ", updated_at = $1
                 WHERE id = $2 AND user_id = $3 AND status = 'processing' AND run_id IS NOT DISTINCT FROM $4"
            ),
            &[Arg::Int(now()), Arg::Text(conversation_id), Arg::Int(user_id), Arg::MaybeText(run.as_deref())],
            &[Then::StoppedReply, Then::DropDraft, Then::Audit(cancelled)],
        )
        .await
    }

    /// The worker knew more of a stopped reply than the draft that was recorded (its pieces reach
    /// the database a few times a second): the stopped line gets the whole text, if it is still
    /// the conversation's last line.
    pub async fn complete_stopped_reply(&self, conversation_id: &str, content: &str) -> Result<bool, StoreError> {
        self.update_one(
            "UPDATE messages SET content = $1, html = NULL, html_version = NULL
             WHERE id = (SELECT id FROM messages WHERE conversation_id = $2 ORDER BY id DESC LIMIT 1)
               AND notice = 'stopped' AND length(content) < length($1)",
            &[Arg::Text(content), Arg::Text(conversation_id)],
        )
        .await
    }

    /// The turn failed before or outside its run (no run, none to be had, the worker's own
    /// failure), with the audit's `failed` row (`entry`) in the same write.
    pub async fn fail_conversation(
        &self,
        conversation_id: &str,
        code: ErrorCode,
        entry: &Entry,
    ) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET status = 'failed', error_code = $1, run_id = NULL, ",
                clear_recorded!(),
                ", updated_at = $2
                 WHERE id = $3 AND status = 'processing'"
            ),
            &[Arg::Text(code.as_str()), Arg::Int(now()), Arg::Text(conversation_id)],
            &[Then::Audit(entry)],
        )
        .await
    }
}

/// What an answer's guarded write does beside the update: its display line, the job (held by the
/// worker holding the question's open call, if one does), the audit row, the NOTIFY.
fn answer_steps<'a>(display: Option<&'a str>, entry: &'a Entry, holder: Option<&'a str>) -> Vec<Then<'a>> {
    let line =
        display.map(|content| Then::Message { role: MessageRole::User, content, notice: Some(Notice::InputAnswer) });
    let job = holder.map_or(Then::Job, Then::JobHeldBy);
    line.into_iter().chain([job, Then::Audit(entry), Then::Announce]).collect()
}

/// The statement [`Store::record_answer`] sends on PostgreSQL for an answer with its display line
/// and no holder, `entry` its audit row: [`ANSWER_UPDATE`] (`$1`–`$7`), the line (`$8`–`$13`),
/// the job (`$14`), the audit and outbox rows (`audit::statement_step`'s arguments from `$15`),
/// the NOTIFY. Built as `record_answer` builds it, for the bench's PostgreSQL reference, which so
/// cannot drift from it.
pub fn pg_answer_statement(entry: &Entry) -> String {
    let then = answer_steps(Some(""), entry, None);
    let (rendered, audits) = super::guarded::prepared(&then);
    super::guarded::guarded_statement(ANSWER_UPDATE, 7, &then, &rendered, &audits, 0).0
}

/// Which of an answer's rows a write takes, for the bench's references to measure what each costs:
/// all of them, as [`Store::record_answer`] writes (`Audited`), all but the outbox row (`Logged`),
/// or neither the audit row nor its outbox row (`Bare`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerWrite {
    Bare,
    Logged,
    Audited,
}

/// What the bench's SQLite reference writes for an answer: the batch [`Store::record_answer`]
/// sends to the writer, built as it builds it, with the rows `write` takes. [`ANSWER_UPDATE`]
/// (`$1`–`$7`), the claim (`$8`), the line (`$9`–`$14`), the job (`$15`), then the audit row and
/// its outbox row from `$16` on.
pub fn sqlite_answer_batch(write: AnswerWrite, entry: &Entry) -> String {
    let mut then = answer_steps(Some(""), entry, None);
    if write == AnswerWrite::Bare {
        then.retain(|step| !matches!(step, Then::Audit(_)));
    }
    let (rendered, mut audits) = super::guarded::prepared(&then);
    if write == AnswerWrite::Logged {
        audits = audits.into_iter().map(|audit| audit.map(super::audit::Prepared::without_event)).collect();
    }
    super::guarded::guarded_batch(ANSWER_UPDATE, 7, "", &then, &rendered, &audits, 0).0
}
