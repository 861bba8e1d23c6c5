//! The chat service: what a signed-in user may do with their conversations. It implements the
//! `ChatBackend` seam that `app`'s server functions call. Requests only check and record; the
//! worker talks to the runtime. The domain's state (`conversation`) becomes view models here.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;

use app::backend::{ChatBackend, CurrentUser};
use app::error::{AppError, FieldProblem};
use app::i18n::{Lang, Text};
use app::model::{
    AlwaysOffer, AlwaysScope, ApprovalCardView, AttachmentView, CardAnswers, CardDecision, CardExtras, ChangeView,
    ConversationSummary, ConversationView, DiffKind, DiffView, DraftView, InboxItemView, InboxView, MessageView,
    PendingCallView, PolicyView, PollView, PreviewView, QuestionView,
};
use content::store::ContentStore;
use question::form::{AnswerRefused, FieldErrorKind, InputAnswer, InputPauseForm, TextFormat, YesNo};
use runtime::{Actor, DenialReason, PauseView, RunStatus, Runtime};

use crate::audit::{self, Action, Entry, Surface};
use crate::continue_intent::is_continue_intent;
use crate::conversation::{
    Conversation, ConversationStatus, DecisionDetail, ErrorCode, MessageRole, Notice, Recorded, Reply,
};
use crate::corrections;
use crate::drafts::Drafts;
use crate::events::ConversationEvents;
use crate::handback;
use crate::skills::{ProcessRunDetector, SkillCatalogue};
use crate::store::NewPolicies;
use crate::store::{Attachment, ConversationSnapshot, Decision, NewAttachment, StartTurn, Store, StoreError};
use crate::worker::WorkerHandle;

/// The stored title of a conversation nobody named yet: no words of any language, so each reader
/// sees "New conversation" in their own (`shown_title`), and a title a user chose never reads as
/// untitled (a rename is never empty), so the first message's title never overwrites it.
pub const UNTITLED: &str = "";
/// Longer messages are refused rather than cut, so nothing the user wrote is lost silently.
pub const MAX_MESSAGE_CHARS: usize = 8_000;
/// A title from the first message is about this long, cut at a word.
const TITLE_CHARS: usize = 40;
/// A tour's title names its page, cut at this length.
const PAGE_TITLE_CHARS: usize = 60;
/// The sidebar lists this many of the latest conversations; an older one stays reachable by its
/// address. Without a bound the list (and every page that shows it) grows with the account.
pub const LIST_LIMIT: i64 = 100;

#[derive(Clone)]
pub struct ChatService {
    store: Store,
    worker: WorkerHandle,
    runtime: Arc<Runtime>,
    skills: Arc<SkillCatalogue>,
    content: ContentStore,
    events: ConversationEvents,
    /// How long a recorded answer may wait without a job before `reconcile` hands it back.
    reconcile_grace: Duration,
    /// The largest file a reader may attach, in bytes.
    attachment_limit: usize,
    /// The replies this process's worker is streaming, for a Stop to record what was seen.
    drafts: Option<Drafts>,
}

/// Files that may wait for one message.
pub const MAX_PENDING_ATTACHMENTS: usize = 5;

/// Why an attachment was refused, as the sentence the reader gets.
fn attachment_refusal(error: &attachments::AttachmentError) -> AppError {
    use attachments::AttachmentError as E;
    AppError::Invalid(match error {
        E::TooLarge { .. } => Text::ErrorAttachmentTooLarge,
        E::Empty => Text::ErrorAttachmentEmpty,
        E::UnsupportedType { .. } => Text::ErrorAttachmentType,
        E::WrongContent { .. } => Text::ErrorAttachmentWrongContent,
        E::EncryptedPdf => Text::ErrorAttachmentEncrypted,
        E::Damaged { .. } => Text::ErrorAttachmentDamaged,
        E::ZipBomb { .. } => Text::ErrorAttachmentBomb,
        E::NoText { .. } => Text::ErrorAttachmentNoText,
    })
}

pub(crate) fn internal(error: StoreError) -> AppError {
    tracing::error!(%error, "store failure");
    AppError::Internal
}

pub(crate) fn content_failure(error: content::store::ContentError) -> AppError {
    tracing::error!(%error, "content store failure");
    AppError::Internal
}

fn runtime_failure(error: runtime::RuntimeError) -> AppError {
    tracing::error!(%error, "runtime failure");
    AppError::Internal
}

/// A conversation's title from its first message: its first words up to about [`TITLE_CHARS`],
/// cut at a word (inside one only when the first word alone is longer), "…" where it was cut.
fn title_from(content: &str) -> String {
    let mut title = String::new();
    let mut length = 0;
    for word in content.split_whitespace() {
        let words = word.chars().count();
        let longer = length + usize::from(length > 0) + words;
        if longer > TITLE_CHARS {
            if length == 0 {
                title.extend(word.chars().take(TITLE_CHARS));
            }
            title.push('…');
            return title;
        }
        if length > 0 {
            title.push(' ');
        }
        title.push_str(word);
        length = longer;
    }
    title
}

/// The title a reader sees: an untitled conversation's in their language.
pub(crate) fn shown_title(title: String, lang: Lang) -> String {
    if title == UNTITLED {
        lang.t(Text::NewConversation).to_string()
    } else {
        title
    }
}

fn attachment_view(file: &Attachment) -> AttachmentView {
    AttachmentView {
        id: file.id,
        file_name: file.file_name.clone(),
        kind: file.kind.clone(),
        size: u64::try_from(file.size).unwrap_or_default(),
        truncated: file.truncated,
    }
}

/// The runs inbox lists at most this many waiting runs.
pub const INBOX_LIMIT: u32 = 100;

/// A question as the reader sees it.
fn question_view(pause: runtime::InputPause, lang: Lang) -> QuestionView {
    let connect = pause.schema[mcp::CONNECT_KEY]["server"].as_str().map(str::to_string);
    let mut form = InputPauseForm::parse(&pause.schema);
    // A connect question is ours, not the server's: its one button speaks the reader's language.
    if let (Some(_), InputPauseForm::Choice(choice)) = (&connect, &mut form) {
        for option in &mut choice.options {
            option.label = lang.t(Text::McpConnectContinue).to_string();
        }
    }
    QuestionView {
        connect,
        link: link_view(&pause.schema),
        form,
        declinable: pause.asked_while_running,
        asked_by: pause.asked_by,
        digest: pause.digest,
        run: None,
    }
}

/// The link an MCP server asks the reader to open (`mcp::LINK_KEY`), read again here with the
/// parser browsers follow, so the host shown is the host the click goes to. `None` for anything
/// but a plain `http`/`https` address (the question then shows as its bare "Done").
fn link_view(schema: &serde_json::Value) -> Option<app::model::LinkView> {
    let link = schema.get(mcp::LINK_KEY)?;
    let url = url::Url::parse(link["url"].as_str()?).ok()?;
    let plain = matches!(url.scheme(), "https" | "http") && url.username().is_empty() && url.password().is_none();
    let host = url.host_str().filter(|host| plain && !host.is_empty())?;
    let host = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    Some(app::model::LinkView { server: link["server"].as_str()?.to_string(), url: url.to_string(), host })
}

/// An answer checked against the question as it stands (digest, options, field types), and the
/// line it reads as in the transcript.
fn checked_reply(
    pause: &runtime::InputPause,
    digest: &str,
    answer: InputAnswer,
    lang: Lang,
) -> Result<(Reply, String), AppError> {
    if !runtime::digest::digests_match(&pause.digest, Some(digest)) {
        return Err(AppError::QuestionChanged);
    }
    if let InputAnswer::FreeText(text) = &answer {
        if text.chars().count() > MAX_MESSAGE_CHARS {
            return Err(AppError::Invalid(Text::ErrorMessageTooLong));
        }
    }
    match answer {
        // Only a question a tool asked while it ran can be declined.
        InputAnswer::Decline if pause.asked_while_running => Ok((Reply::Decline, lang.t(Text::Declined).to_string())),
        InputAnswer::Decline => Err(AppError::AnswerNotOffered),
        answer => {
            let form = InputPauseForm::parse(&pause.schema);
            let words = YesNo { yes: lang.t(Text::Yes), no: lang.t(Text::No) };
            // The schema's own check too: what it would refuse later is named field by field now.
            let schema_check = |form: &question::form::Form, values: &serde_json::Map<String, serde_json::Value>| {
                question::schema::field_errors(&pause.schema, form, values)
            };
            let accepted = form.check_with(&answer, words, &schema_check).map_err(|refused| match refused {
                AnswerRefused::NotOffered => AppError::AnswerNotOffered,
                AnswerRefused::Fields(fields) => AppError::InvalidAnswer(
                    fields
                        .into_iter()
                        .map(|error| FieldProblem {
                            message: field_sentence(&error.kind, lang),
                            field: error.field,
                            call: None,
                        })
                        .collect(),
                ),
            })?;
            // The one answer of a link or connect question is ours, not the server's: its line in
            // the transcript is in the reader's language, as the button was.
            let display = if pause.schema.get(mcp::LINK_KEY).is_some() {
                lang.t(Text::McpLinkDone).to_string()
            } else if pause.schema.get(mcp::CONNECT_KEY).is_some() {
                lang.t(Text::McpConnectContinue).to_string()
            } else {
                accepted.display
            };
            Ok((Reply::Values(accepted.data), display))
        }
    }
}

/// What a form's field wants instead of the value it got, in the reader's language.
fn field_sentence(kind: &FieldErrorKind, lang: Lang) -> String {
    let with = |text: Text, value: &str| lang.t(text).replace("{}", value);
    match kind {
        FieldErrorKind::Required => lang.t(Text::AnswerFieldRequired).to_string(),
        FieldErrorKind::WholeNumber => lang.t(Text::AnswerFieldWholeNumber).to_string(),
        FieldErrorKind::Number => lang.t(Text::AnswerFieldNumber).to_string(),
        FieldErrorKind::YesOrNo => lang.t(Text::AnswerFieldYesOrNo).to_string(),
        FieldErrorKind::Text => lang.t(Text::AnswerFieldText).to_string(),
        FieldErrorKind::OneOf(options) => with(Text::AnswerFieldOneOf, &options.join(", ")),
        FieldErrorKind::TooLong(max) => with(Text::AnswerFieldTooLong, &max.to_string()),
        FieldErrorKind::TooFew(min) => with(Text::AnswerFieldTooFew, &min.to_string()),
        FieldErrorKind::TooMany(max) => with(Text::AnswerFieldTooMany, &max.to_string()),
        FieldErrorKind::AtLeast(limit) => with(Text::AnswerFieldAtLeast, limit),
        FieldErrorKind::AtMost(limit) => with(Text::AnswerFieldAtMost, limit),
        FieldErrorKind::Above(limit) => with(Text::AnswerFieldAbove, limit),
        FieldErrorKind::Below(limit) => with(Text::AnswerFieldBelow, limit),
        FieldErrorKind::MultipleOf(step) => with(Text::AnswerFieldMultipleOf, step),
        FieldErrorKind::TooShort(min) => with(Text::AnswerFieldTooShort, &min.to_string()),
        FieldErrorKind::Pattern => lang.t(Text::AnswerFieldPattern).to_string(),
        FieldErrorKind::Format(format) => lang
            .t(match format {
                TextFormat::Email => Text::AnswerFieldEmail,
                TextFormat::Uri => Text::AnswerFieldUri,
                TextFormat::Date => Text::AnswerFieldDate,
                TextFormat::DateTime => Text::AnswerFieldDateTime,
            })
            .to_string(),
        FieldErrorKind::Other => lang.t(Text::AnswerFieldOther).to_string(),
    }
}

/// A decision checked against the card as it stands: approve, deny, and a reason only where the
/// card offers one (else a plain denial); the reason's label for the transcript.
fn checked_decision(
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

/// How long something has waited, roughly, in the reader's language.
pub(crate) fn waited(seconds: i64, lang: Lang) -> String {
    let (count, one, many) = match seconds.max(0) {
        s if s < 3600 => ((s / 60).max(1), Text::Minute, Text::Minutes),
        s if s < 86_400 => (s / 3600, Text::Hour, Text::Hours),
        s => (s / 86_400, Text::Day, Text::Days),
    };
    format!("{count} {}", lang.t(if count == 1 { one } else { many }))
}

/// Four-eyes: the reader's own card that writes waits for a reviewer when they may not approve
/// their own changes. The one rule for the card (no Apply) and for the refusal of an approval.
fn waits_for_reviewer(pause: &runtime::ApprovalPause, user: &CurrentUser) -> bool {
    pause.any_write() && !user.approves_own_changes()
}

/// The distinct tools of a card's calls, in the card's order.
fn tool_names(pause: &runtime::ApprovalPause) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for call in &pause.pending_calls {
        if !names.contains(&call.name) {
            names.push(call.name.clone());
        }
    }
    names
}

/// A card as the reader sees it, in their language.
pub(crate) fn card_view(pause: runtime::ApprovalPause, answers: CardAnswers, lang: Lang) -> ApprovalCardView {
    let preview_failed = pause.preview_failed();
    let calls = pause
        .pending_calls
        .into_iter()
        .map(|call| PendingCallView {
            arguments: serde_json::to_string_pretty(&call.arguments).unwrap_or_default(),
            preview: call.preview.map(|preview| preview_view(preview, lang)),
            // Where the text would go: the tool's source, else the tool itself.
            sends_out_to: call.sends_out.then(|| call.origin.clone().unwrap_or_else(|| call.name.clone())),
            origin: call.origin,
            name: call.name,
            declares_write: call.declares_write,
            tool_registered: call.tool_registered,
            edit: None,
        })
        .collect();
    ApprovalCardView {
        digest: pause.digest,
        answers,
        calls,
        preview_failed,
        run: None,
        needs_reviewer: false,
        always: None,
    }
}

fn preview_view(preview: runtime::CallPreview, lang: Lang) -> PreviewView {
    match preview {
        runtime::CallPreview::Failed { reason } => PreviewView::Failed { reason },
        runtime::CallPreview::Ready(preview) => PreviewView::Ready {
            subject: preview.subject,
            changes: preview
                .changes
                .into_iter()
                .map(|change| ChangeView {
                    label: field_label(&change.field, lang).map_or(change.label, str::to_string),
                    diff: change
                        .diff
                        .into_iter()
                        .map(|part| match part {
                            runtime::DiffPart::Same(text) => DiffView { kind: DiffKind::Same, text },
                            runtime::DiffPart::Removed(text) => DiffView { kind: DiffKind::Removed, text },
                            runtime::DiffPart::Added(text) => DiffView { kind: DiffKind::Added, text },
                        })
                        .collect(),
                })
                .collect(),
        },
    }
}

/// The fields the content tools preview, named in the reader's language; another tool's field
/// keeps the label its tool gave.
fn field_label(field: &str, lang: Lang) -> Option<&'static str> {
    Some(lang.t(match field {
        "title" => Text::FieldTitle,
        "description" => Text::FieldDescription,
        "heading" => Text::FieldHeading,
        "heading_level" => Text::FieldHeadingLevel,
        "paragraph" => Text::FieldParagraph,
        "link_text" => Text::FieldLinkText,
        "alt_text" => Text::FieldAltText,
        _ => return None,
    }))
}

/// What starts the new turn once a waiting run is out of the way.
#[derive(Clone, Copy)]
enum NewTurn<'a> {
    Message(&'a str),
    Edit { message_id: i64, content: &'a str },
}

/// A poll's answer that carries the whole conversation.
fn whole_poll(view: ConversationView) -> PollView {
    PollView { status: view.status, total: view.messages.len(), conversation: Some(view) }
}

/// The status as the page shows it.
fn status_view(status: ConversationStatus) -> app::model::ConversationStatus {
    match status {
        ConversationStatus::Idle => app::model::ConversationStatus::Idle,
        ConversationStatus::Processing => app::model::ConversationStatus::Processing,
        ConversationStatus::AwaitingApproval => app::model::ConversationStatus::AwaitingApproval,
        ConversationStatus::AwaitingInput => app::model::ConversationStatus::AwaitingInput,
        ConversationStatus::Failed => app::model::ConversationStatus::Failed,
    }
}

impl ChatService {
    pub fn new(
        store: Store,
        worker: WorkerHandle,
        runtime: Arc<Runtime>,
        skills: Arc<SkillCatalogue>,
        content: ContentStore,
        events: ConversationEvents,
        reconcile_grace: Duration,
    ) -> Self {
        ChatService {
            store,
            worker,
            runtime,
            skills,
            content,
            events,
            reconcile_grace,
            attachment_limit: attachments::Limits::default().max_bytes,
            drafts: None,
        }
    }

    pub fn with_drafts(mut self, drafts: Drafts) -> Self {
        self.drafts = Some(drafts);
        self
    }

    pub fn with_attachment_limit(mut self, limit: usize) -> Self {
        self.attachment_limit = limit;
        self
    }

    pub fn attachment_limit(&self) -> usize {
        self.attachment_limit
    }

    /// Takes a file for the reader's next message: its kind checked against its content and its
    /// text extracted (off the async threads: a big PDF takes a while), then stored as pending.
    /// A refused file changes nothing.
    pub async fn attach(&self, user: &CurrentUser, id: &str, file_name: &str, bytes: Vec<u8>) -> Result<i64, AppError> {
        let row = self.owned(user, id).await?;
        let pending = self.store.attachments(&row.id).await.map_err(internal)?;
        if pending.iter().filter(|attachment| attachment.message_id.is_none()).count() >= MAX_PENDING_ATTACHMENTS {
            return Err(AppError::Invalid(Text::ErrorTooManyAttachments));
        }
        let limits = attachments::Limits { max_bytes: self.attachment_limit, ..attachments::Limits::default() };
        let name = file_name.to_string();
        let (bytes, extracted) = tokio::task::spawn_blocking(move || {
            let extracted = attachments::extract(&name, &bytes, &limits);
            (bytes, extracted)
        })
        .await
        .map_err(|error| {
            tracing::error!(%error, "text extraction did not finish");
            AppError::Internal
        })?;
        let extracted = extracted.map_err(|error| {
            tracing::info!(%error, conversation = %id, "attachment refused");
            attachment_refusal(&error)
        })?;
        let file = NewAttachment {
            file_name,
            kind: extracted.kind.as_str(),
            content: &bytes,
            text: &extracted.text,
            truncated: extracted.truncated,
        };
        let stored = self.store.add_attachment(user.id, id, &file).await.map_err(internal)?;
        let attachment_id = stored.ok_or(AppError::NotFound)?;
        self.events.changed(id);
        Ok(attachment_id)
    }

    /// The file as uploaded, for its owner.
    pub async fn attachment_file(
        &self,
        user: &CurrentUser,
        attachment_id: i64,
    ) -> Result<(String, String, Vec<u8>), AppError> {
        self.store.attachment_file(user.id, attachment_id).await.map_err(internal)?.ok_or(AppError::NotFound)
    }

    async fn owned(&self, user: &CurrentUser, id: &str) -> Result<Conversation, AppError> {
        self.store.conversation_of(user.id, id).await.map_err(internal)?.ok_or(AppError::NotFound)
    }

    /// Records a decision on the conversation's card by `decider`: its owner, or a reviewer of
    /// the owner's changes (four-eyes), who may only approve.
    #[allow(clippy::too_many_arguments)]
    async fn decide_on(
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
    fn decision_detail(
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

    /// A card of the reader's own, with what they may do beyond yes or no: edit each call, and
    /// always allow its tools (never where their changes wait for a second person).
    async fn owner_card(
        &self,
        user: &CurrentUser,
        pause: runtime::ApprovalPause,
        answers: CardAnswers,
        lang: Lang,
    ) -> Result<ApprovalCardView, AppError> {
        let needs_reviewer = waits_for_reviewer(&pause, user);
        let tools = self.runtime.tools();
        let edits: Vec<_> = pause
            .pending_calls
            .iter()
            .map(|call| {
                let tool = tools.get(&call.name);
                corrections::call_edit(call, tool.as_ref().map(|tool| &tool.spec.parameters))
            })
            .collect();
        let names = tool_names(&pause);
        let always = if needs_reviewer || !pause.pending_calls.iter().all(|call| call.tool_registered) {
            None
        } else {
            let mine = self.store.policy_permits_all(&names).await.map_err(internal)?;
            Some(AlwaysOffer { tools: names.join(", "), mine })
        };
        let mut card = card_view(pause, answers, lang);
        if !needs_reviewer {
            for (call, edit) in card.calls.iter_mut().zip(edits) {
                call.edit = Some(edit);
            }
        }
        Ok(ApprovalCardView { needs_reviewer, always, ..card })
    }

    /// A standing approval the reader asks for with their approval, checked before anything is
    /// recorded: never for a reader whose changes wait for a second person, and "for me" only for
    /// tools an admin permits it for.
    async fn policy_request(
        &self,
        user: &CurrentUser,
        conversation_id: &str,
        pause: &runtime::ApprovalPause,
        scope: AlwaysScope,
    ) -> Result<NewPolicies, AppError> {
        if !user.approves_own_changes() {
            return Err(AppError::Invalid(Text::PolicyFourEyes));
        }
        let tools = tool_names(pause);
        if scope == AlwaysScope::Mine && !self.store.policy_permits_all(&tools).await.map_err(internal)? {
            return Err(AppError::Invalid(Text::PolicyNotPermitted));
        }
        let conversation_id = (scope == AlwaysScope::Conversation).then(|| conversation_id.to_string());
        Ok(NewPolicies { user_id: user.id, tools, conversation_id })
    }

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

    async fn pause_of_run(&self, row: &Conversation, run_id: Uuid) -> Result<Option<PauseView>, AppError> {
        let view = self.runtime.status(&Actor::user(row.user_id), run_id).await.map_err(runtime_failure)?;
        Ok(view.and_then(|view| view.pause))
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

    /// What the run waits on, read live: the question and card are always the ones as they stand.
    async fn pause_of(&self, row: &Conversation) -> Result<Option<PauseView>, AppError> {
        let Some(run_id) = row.run_id else { return Ok(None) };
        self.pause_of_run(row, run_id).await
    }

    fn card_answers(&self, row: &Conversation, pause: &runtime::ApprovalPause) -> CardAnswers {
        if self.skills.is_process_run(row) && pause.any_write() {
            CardAnswers::Process
        } else {
            CardAnswers::Plain
        }
    }

    /// A recorded answer or decision that sat past the grace period may have lost its job.
    fn may_need_reconcile(&self, row: &Conversation) -> bool {
        row.status == ConversationStatus::Processing && self.past_grace(row.recorded.is_some(), row.updated_at)
    }

    /// Whether an answer or decision is recorded (`recorded`) and the row, last changed at
    /// `updated_at`, sat past the grace period: with the status `processing`, what
    /// [`Self::may_need_reconcile`] asks, apart so the poll can ask it of its narrow read.
    fn past_grace(&self, recorded: bool, updated_at: i64) -> bool {
        let age = db::now().saturating_sub(updated_at);
        let grace = i64::try_from(self.reconcile_grace.as_secs()).unwrap_or(i64::MAX);
        recorded && age >= grace
    }

    /// Hands a recorded answer or decision back when no worker took it: the conversation has been
    /// `processing` for longer than the grace period, no job exists for it, and the run still
    /// waits. Runs on every read of the conversation, so the reader never waits on a lost dispatch.
    pub async fn reconcile(&self, row: &Conversation) -> Result<bool, AppError> {
        if !self.may_need_reconcile(row) {
            return Ok(false);
        }
        if self.store.has_job(&row.id).await.map_err(internal)? {
            return Ok(false);
        }
        let (Some(run_id), Some(recorded)) = (row.run_id, &row.recorded) else { return Ok(false) };
        let status = self.runtime.run_status(&Actor::user(row.user_id), run_id).await.map_err(runtime_failure)?;
        if status != Some(recorded.waiting_run_status()) {
            return Ok(false);
        }
        tracing::warn!(conversation = %row.id, "no worker took the recorded answer or decision; handing it back");
        let pause = self.pause_of_run(row, run_id).await.ok().flatten();
        let waiting = crate::turn::waiting_entry(run_id, pause.as_ref(), Some(ErrorCode::NotDelivered));
        self.store
            .hand_back(&row.id, recorded.waiting_status(), ErrorCode::NotDelivered, Some(&waiting))
            .await
            .map_err(internal)
    }

    /// The user's conversation as the page shows it: the row, its transcript and its files read
    /// in one snapshot, and again after a reconcile that changed the row.
    async fn view_of(&self, user: &CurrentUser, id: &str, lang: Lang) -> Result<ConversationView, AppError> {
        self.view_from(user, self.snapshot(user, id).await?, lang).await
    }

    async fn snapshot(&self, user: &CurrentUser, id: &str) -> Result<ConversationSnapshot, AppError> {
        self.store.conversation_snapshot(user.id, id).await.map_err(internal)?.ok_or(AppError::NotFound)
    }

    /// The view of a conversation from a snapshot of it already read.
    async fn view_from(
        &self,
        user: &CurrentUser,
        mut read: ConversationSnapshot,
        lang: Lang,
    ) -> Result<ConversationView, AppError> {
        if self.reconcile(&read.conversation).await? {
            read = self.snapshot(user, &read.conversation.id).await?;
        }
        let ConversationSnapshot { conversation: row, messages, attachments: files, draft } = read;
        let status = row.status;
        let pause = if status.is_waiting() { self.pause_of(&row).await? } else { None };
        let (question, card) = match pause {
            Some(PauseView::Input(pause)) if status == ConversationStatus::AwaitingInput => {
                (Some(question_view(pause, lang)), None)
            }
            Some(PauseView::Approval(pause)) if status == ConversationStatus::AwaitingApproval => {
                let answers = self.card_answers(&row, &pause);
                (None, Some(self.owner_card(user, pause, answers, lang).await?))
            }
            _ => (None, None),
        };
        let files_of = |message_id: Option<i64>| -> Vec<AttachmentView> {
            files.iter().filter(|file| file.message_id == message_id).map(attachment_view).collect()
        };
        let pending = files_of(None);
        let draft = draft.filter(|_| status == ConversationStatus::Processing).map(|(key, text)| DraftView {
            html: Some(crate::markdown::to_safe_html(&text)),
            key,
            text,
        });
        Ok(ConversationView {
            draft,
            pending_attachments: pending,
            attachment_limit_mib: u32::try_from(self.attachment_limit / (1024 * 1024)).unwrap_or(u32::MAX),
            status: status_view(status),
            error: row.error.map(|code| handback::sentence(code, lang).to_string()),
            question,
            card,
            process_run: self.skills.is_process_run(&row),
            messages: messages
                .into_iter()
                .map(|mut message| {
                    // A dismissal's line holds only who dismissed it; the page says the rest.
                    let dismissed_by = if message.notice == Some(Notice::Dismissed) {
                        message.html = Some(String::new());
                        std::mem::take(&mut message.content)
                    } else {
                        String::new()
                    };
                    // The reader's own messages are never interpreted. An assistant's line goes
                    // as HTML alone: stored when the line was written, made here only for a line
                    // written before that or by another renderer version.
                    let html = (message.role == MessageRole::Assistant).then(|| {
                        message.html.take().unwrap_or_else(|| crate::markdown::to_safe_html(&message.content))
                    });
                    // Not tied to the status: a line that changed with every turn's start and
                    // end would make each load after it fetch the whole transcript again (its
                    // digest no longer matching). The page leaves "Edit" out while the assistant
                    // works; `edit_message` refuses it then.
                    let editable = message.is_editable();
                    let content = if html.is_some() { String::new() } else { message.content };
                    MessageView {
                        editable,
                        // A card was approved after this line: an edit here does not undo what it applied.
                        decided_after: row.approved_through.is_some_and(|through| message.id <= through),
                        attachments: files_of(Some(message.id)),
                        id: message.id,
                        role: match message.role {
                            MessageRole::User => app::model::MessageRole::User,
                            MessageRole::Assistant => app::model::MessageRole::Assistant,
                        },
                        html,
                        stopped: message.notice == Some(Notice::Stopped),
                        note: match message.notice {
                            Some(Notice::DecidedElsewhere) => Some(lang.t(Text::NoteDecidedElsewhere).to_string()),
                            Some(Notice::ElsewhereFailed) => Some(lang.t(Text::NoteElsewhereFailed).to_string()),
                            Some(Notice::Expired) => Some(lang.t(Text::RunExpired).to_string()),
                            Some(Notice::Dismissed) => Some(lang.t(Text::NoteDismissed).replace("{}", &dismissed_by)),
                            _ => None,
                        },
                        content,
                    }
                })
                .collect(),
            id: row.id,
            title: shown_title(row.title, lang),
        })
    }

    /// A turn that started goes to the worker; one that did not says why.
    fn started(&self, conversation_id: &str, outcome: StartTurn) -> Result<(), AppError> {
        match outcome {
            StartTurn::Started => {
                self.wake_announced(conversation_id);
                Ok(())
            }
            StartTurn::NotFound => Err(AppError::NotFound),
            StartTurn::Busy => Err(AppError::Busy),
        }
    }

    /// Hands recorded work to the worker and tells open pages that the conversation changed.
    fn wake(&self, conversation_id: &str) {
        self.worker.wake();
        self.events.changed(conversation_id);
    }

    /// [`Self::wake`] after a write that announced its change itself on PostgreSQL
    /// (`store::Then::Announce`): no NOTIFY of its own there.
    fn wake_announced(&self, conversation_id: &str) {
        self.worker.wake();
        self.events.announced(conversation_id);
    }

    fn validate_message(content: &str) -> Result<&str, AppError> {
        let content = content.trim();
        if content.is_empty() {
            return Err(AppError::Invalid(Text::ErrorEmptyMessage));
        }
        if content.chars().count() > MAX_MESSAGE_CHARS {
            return Err(AppError::Invalid(Text::ErrorMessageTooLong));
        }
        Ok(content)
    }

    /// A message while a process run waits: claim the conversation first, then cancel the run only
    /// if it still waits. If the run is being carried on (or a decision on it won), the claim is
    /// given back and the message is refused as busy.
    async fn message_in_process_run(
        &self,
        row: &Conversation,
        run_id: Uuid,
        turn: NewTurn<'_>,
    ) -> Result<(), AppError> {
        // For the audit's row only: where the run stands is asked again, under the claim.
        let pause = self.pause_of_run(row, run_id).await.ok().flatten();
        if !self.store.claim_waiting(row.user_id, &row.id, row.status).await.map_err(internal)? {
            return Err(AppError::Busy);
        }
        let result = match self.runtime.cancel_if_waiting(&Actor::user(row.user_id), run_id).await {
            Ok(result) => result,
            // Where the run stands is unknown: it may still wait, so the claim goes back.
            Err(error) => {
                tracing::error!(%error, conversation = %row.id, "could not tell whether the waiting run ended");
                self.store.release_claim(&row.id, row.status).await.map_err(internal)?;
                return Err(AppError::Unavailable);
            }
        };
        let released = result.cancelled || result.status.is_none_or(RunStatus::is_terminal);
        if !released {
            self.store.release_claim(&row.id, row.status).await.map_err(internal)?;
            return Err(AppError::Busy);
        }
        // The audit's row goes with the new turn's write, which the claim makes sure wins.
        let cancelled = result.cancelled.then(|| {
            Entry::new(Action::Cancelled, Surface::Chat, Some(row.user_id), Some(run_id)).with_pause(pause.as_ref())
        });
        let started = match turn {
            NewTurn::Message(content) => {
                let title = title_from(content);
                self.store.start_claimed_turn(&row.id, content, &title, UNTITLED, cancelled.as_ref()).await
            }
            NewTurn::Edit { message_id, content } => {
                self.store.restart_claimed_from(&row.id, message_id, content, cancelled.as_ref()).await
            }
        };
        if !started.map_err(internal)? {
            return Err(AppError::Busy);
        }
        self.wake(&row.id);
        Ok(())
    }
}

// On record: answers by surface, and dismissing from the runs inbox.
impl ChatService {
    /// An answer to the question the conversation waits on, from `surface` (the chat, the runs
    /// inbox, the JSON input route): checked against the question as it stands, recorded with its
    /// audit row in one guarded write.
    pub async fn answer_from(
        &self,
        user: &CurrentUser,
        id: &str,
        digest: &str,
        answer: InputAnswer,
        lang: Lang,
        surface: Surface,
    ) -> Result<(), AppError> {
        // The conversation and, on PostgreSQL, its run in one read.
        let read = self.store.conversation_with_run_of(user.id, id).await.map_err(internal)?;
        let (row, run) = read.ok_or(AppError::NotFound)?;
        if row.status != ConversationStatus::AwaitingInput {
            return Err(AppError::NotAwaitingInput);
        }
        let pause = match run {
            Some(run) => {
                let view = self.runtime.status_from_json(&Actor::user(row.user_id), &run).map_err(runtime_failure)?;
                view.and_then(|view| view.pause)
            }
            None => self.pause_of(&row).await?,
        };
        let (Some(run_id), Some(PauseView::Input(pause))) = (row.run_id, pause) else {
            return Err(AppError::NotAwaitingInput);
        };
        let (reply, display) = checked_reply(&pause, digest, answer, lang)?;
        let entry = audit::answer_entry(&reply, &display, user.id, surface, run_id, &pause);
        let recorded = self
            .store
            .record_answer(user.id, id, &pause.digest, &reply, Some(&display), &entry, pause.held_by.as_deref())
            .await
            .map_err(internal)?;
        if !recorded {
            return Err(AppError::NotAwaitingInput);
        }
        self.wake_announced(id);
        Ok(())
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
}

#[async_trait]
impl ChatBackend for ChatService {
    async fn list_conversations(&self, user: &CurrentUser) -> Result<Vec<ConversationSummary>, AppError> {
        let rows = self.store.conversations_of(user.id, LIST_LIMIT).await.map_err(internal)?;
        let lang = app::backend::request_lang();
        Ok(rows
            .into_iter()
            .map(|row| ConversationSummary {
                status: status_view(row.status),
                id: row.id,
                title: shown_title(row.title, lang),
            })
            .collect())
    }

    async fn create_conversation(&self, user: &CurrentUser, skill: Option<&str>) -> Result<String, AppError> {
        if skill.is_some() && !user.approves_own_changes() {
            return Err(AppError::Invalid(Text::ErrorTourFourEyes));
        }
        if let Some(skill) = skill {
            if self.skills.find(skill).is_none() {
                return Err(AppError::Invalid(Text::ErrorTransport));
            }
        }
        let id = Uuid::new_v4().to_string();
        self.store.create_conversation(&id, user.id, UNTITLED, skill, None).await.map_err(internal)?;
        Ok(id)
    }

    async fn poll(
        &self,
        session_token: &str,
        id: &str,
        after: usize,
        browser_lang: Lang,
    ) -> Result<PollView, AppError> {
        let hash = crate::auth::token_hash(session_token);
        // The rare path: tell an ended session (401) from a conversation that is not theirs (404).
        let refused = || async {
            Err(match self.store.user_for_session(&hash).await.map_err(internal)? {
                Some(_) => AppError::NotFound,
                None => AppError::Unauthenticated,
            })
        };
        // A client that shows nothing yet needs everything: read it with the session at once.
        if after == 0 {
            let Some((user, read)) = self.store.poll_whole(&hash, id).await.map_err(internal)? else {
                return refused().await;
            };
            let user = crate::auth::current_user(user);
            return Ok(whole_poll(self.view_from(&user, read, user.language.unwrap_or(browser_lang)).await?));
        }
        let Some(head) = self.store.poll_head(&hash, id).await.map_err(internal)? else {
            return refused().await;
        };
        let user = crate::auth::current_user(head.user);
        // Only a working turn takes the fast path: a pause must reach the client with its question
        // or card on the first poll that sees it, and a candidate for reconcile must be looked at.
        if head.status == ConversationStatus::Processing
            && !self.past_grace(head.recorded, head.updated_at)
            && usize::try_from(head.messages).is_ok_and(|total| total == after)
        {
            let status = status_view(ConversationStatus::Processing);
            return Ok(PollView { status, total: after, conversation: None });
        }
        let lang = user.language.unwrap_or(browser_lang);
        Ok(whole_poll(self.view_of(&user, id, lang).await?))
    }

    async fn conversation(&self, user: &CurrentUser, id: &str, lang: Lang) -> Result<ConversationView, AppError> {
        self.view_of(user, id, lang).await
    }

    async fn send_message(&self, user: &CurrentUser, id: &str, content: &str) -> Result<(), AppError> {
        let content = Self::validate_message(content)?;
        let row = self.owned(user, id).await?;
        match row.status {
            ConversationStatus::Processing => return Err(AppError::Busy),
            ConversationStatus::AwaitingApproval if is_continue_intent(content) => {
                return Err(AppError::ApprovalStillPending);
            }
            // Where the question takes free text, typed text in the chat input is the answer.
            ConversationStatus::AwaitingInput => {
                let mut holds_a_tool = false;
                if let Some(PauseView::Input(pause)) = self.pause_of(&row).await? {
                    if InputPauseForm::parse(&pause.schema).takes_free_text() {
                        let answer = InputAnswer::FreeText(content.to_string());
                        return self.answer(user, id, &pause.digest, answer, Lang::default()).await;
                    }
                    holds_a_tool = pause.asked_while_running;
                }
                // A question a tool asked while it ran holds that tool's call open: a message of
                // one's own ends the run, and the tool hears that its question was cancelled.
                if self.skills.is_process_run(&row) || holds_a_tool {
                    if let Some(run_id) = row.run_id {
                        return self.message_in_process_run(&row, run_id, NewTurn::Message(content)).await;
                    }
                }
            }
            ConversationStatus::AwaitingApproval if self.skills.is_process_run(&row) => {
                if let Some(run_id) = row.run_id {
                    return self.message_in_process_run(&row, run_id, NewTurn::Message(content)).await;
                }
            }
            // An ordinary chat keeps its waiting run: the new turn only forgets it.
            _ => {}
        }
        let outcome = self
            .store
            .start_turn(user.id, id, row.status, content, &title_from(content), UNTITLED)
            .await
            .map_err(internal)?;
        self.started(id, outcome)
    }

    async fn answer(
        &self,
        user: &CurrentUser,
        id: &str,
        digest: &str,
        answer: InputAnswer,
        lang: Lang,
    ) -> Result<(), AppError> {
        self.answer_from(user, id, digest, answer, lang, Surface::Chat).await
    }

    async fn decide(
        &self,
        user: &CurrentUser,
        id: &str,
        digest: &str,
        decision: CardDecision,
        extras: CardExtras,
        lang: Lang,
    ) -> Result<(), AppError> {
        let row = self.owned(user, id).await?;
        self.decide_on(row, user, digest, decision, extras, lang, Surface::Chat).await
    }

    async fn answer_run(
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

    async fn decide_run(
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

    async fn inbox(&self, user: &CurrentUser, lang: Lang) -> Result<InboxView, AppError> {
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

    async fn waiting(&self, user: &CurrentUser) -> Result<app::model::WaitingView, AppError> {
        let count = self.store.waiting_count(user.id, user.reviews()).await.map_err(internal)?;
        Ok(crate::waiting_events::view(count, None))
    }

    async fn policies(&self, user: &CurrentUser) -> Result<Vec<PolicyView>, AppError> {
        let policies = self.store.policies_of(user.id).await.map_err(internal)?;
        Ok(policies
            .into_iter()
            .map(|policy| PolicyView {
                id: policy.id,
                tool: policy.tool,
                conversation: policy.conversation_id.map(|id| (id, policy.title.unwrap_or_default())),
            })
            .collect())
    }

    async fn revoke_policy(&self, user: &CurrentUser, policy: i64) -> Result<(), AppError> {
        if !self.store.revoke_policy(user.id, policy).await.map_err(internal)? {
            return Err(AppError::NotFound);
        }
        Ok(())
    }

    async fn policy_permits(&self, user: &CurrentUser) -> Result<Vec<String>, AppError> {
        if !user.admin {
            return Err(AppError::Forbidden);
        }
        self.store.policy_permits().await.map_err(internal)
    }

    async fn set_policy_permit(&self, user: &CurrentUser, tool: &str, permitted: bool) -> Result<(), AppError> {
        if !user.admin {
            return Err(AppError::Forbidden);
        }
        let Some(found) = self.runtime.tools().get(tool.trim()) else { return Err(AppError::NotFound) };
        // Four-eyes needs no refusal here: it is the owner's, not the tool's, and a standing
        // approval is neither given to nor used for an owner whose changes wait for a second
        // person. A tool that never waits for a card is refused: the permit could never apply.
        if permitted && !crate::toolbox::can_wait_for_card(&found.spec) {
            return Err(AppError::Invalid(Text::PolicyPermitNeverWaits));
        }
        self.store.set_policy_permit(tool.trim(), user.id, permitted).await.map_err(internal)
    }

    async fn dismiss_run(&self, user: &CurrentUser, id: &str, run: &str) -> Result<(), AppError> {
        self.dismiss(user, id, run).await
    }

    async fn retry(&self, user: &CurrentUser, id: &str) -> Result<(), AppError> {
        let row = self.owned(user, id).await?;
        match row.status {
            ConversationStatus::Failed => {}
            ConversationStatus::Processing if row.recorded.is_some() => return Err(AppError::DecisionInFlight),
            ConversationStatus::Processing => return Err(AppError::Busy),
            _ => return Err(AppError::NotResumable),
        }
        if !self.store.claim_retry(user.id, id).await.map_err(internal)? {
            return Err(AppError::Busy);
        }
        self.wake(id);
        Ok(())
    }

    async fn edit_message(&self, user: &CurrentUser, id: &str, message_id: i64, content: &str) -> Result<(), AppError> {
        let content = Self::validate_message(content)?;
        let row = self.owned(user, id).await?;
        if row.status == ConversationStatus::Processing {
            return Err(if row.recorded.is_some() { AppError::DecisionInFlight } else { AppError::Busy });
        }
        let messages = self.store.messages(id).await.map_err(internal)?;
        let editable = messages.iter().any(|message| message.id == message_id && message.is_editable());
        if !editable {
            return Err(AppError::Invalid(Text::ErrorNotEditable));
        }
        // As with a new message: a waiting process run, or a tool holding its question open, is
        // cancelled first (the tool hears its question was cancelled); an ordinary chat's waiting
        // run is only forgotten.
        let cancel_first = match row.status {
            ConversationStatus::AwaitingInput => {
                self.skills.is_process_run(&row)
                    || matches!(self.pause_of(&row).await?, Some(PauseView::Input(pause)) if pause.asked_while_running)
            }
            ConversationStatus::AwaitingApproval => self.skills.is_process_run(&row),
            _ => false,
        };
        if let (true, Some(run_id)) = (cancel_first, row.run_id) {
            return self.message_in_process_run(&row, run_id, NewTurn::Edit { message_id, content }).await;
        }
        if !self.store.restart_from(user.id, id, row.status, message_id, content).await.map_err(internal)? {
            return Err(AppError::Busy);
        }
        self.wake(id);
        Ok(())
    }

    async fn remove_attachment(&self, user: &CurrentUser, id: &str, attachment_id: i64) -> Result<(), AppError> {
        if !self.store.remove_pending_attachment(user.id, id, attachment_id).await.map_err(internal)? {
            return Err(AppError::NotFound);
        }
        self.events.changed(id);
        Ok(())
    }

    async fn stop(&self, user: &CurrentUser, id: &str) -> Result<(), AppError> {
        // The worker may attach the turn's run between the read and the guarded write; the write
        // then misses and is tried again on the row as it is now.
        for _ in 0..3 {
            let row = self.owned(user, id).await?;
            if row.status != ConversationStatus::Processing {
                // The reply was recorded, or a question or card came first: that one won.
                return Err(AppError::NothingToStop);
            }
            if let (Some(drafts), Some(run_id)) = (&self.drafts, row.run_id) {
                drafts.save_now(run_id).await;
            }
            let cancelled = Entry::new(Action::Cancelled, Surface::Chat, Some(user.id), row.run_id);
            if !self.store.stop(user.id, id, row.run_id, &cancelled).await.map_err(internal)? {
                continue;
            }
            if let Some(run_id) = row.run_id {
                // If this fails the run goes on unseen until its worker finds the conversation
                // moved on and lets go of it (`Turns::let_go`).
                if let Err(error) = self.runtime.cancel(&Actor::user(row.user_id), run_id).await {
                    tracing::warn!(%error, conversation = %id, "a stopped reply's run could not be cancelled yet");
                }
            }
            self.events.changed(id);
            return Ok(());
        }
        Err(AppError::Busy)
    }

    async fn rename_conversation(&self, user: &CurrentUser, id: &str, title: &str) -> Result<(), AppError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(AppError::Invalid(Text::ErrorEmptyTitle));
        }
        if title.chars().count() > 200 {
            return Err(AppError::Invalid(Text::ErrorMessageTooLong));
        }
        if !self.store.rename_conversation(user.id, id, title).await.map_err(internal)? {
            return Err(AppError::NotFound);
        }
        self.events.changed(id);
        Ok(())
    }

    async fn delete_conversation(&self, user: &CurrentUser, id: &str) -> Result<(), AppError> {
        let row = self.owned(user, id).await?;
        // A run that waits on this conversation would wait for ever: end it first. If where it
        // stands cannot be read, nothing is deleted.
        // So would one the chat moved on from (listed in the inbox until now).
        let owner = Actor::user(row.user_id);
        let mut waiting: Vec<Uuid> = row.run_id.filter(|_| row.status.is_waiting()).into_iter().collect();
        for run in self.runtime.waiting_runs(&owner, INBOX_LIMIT).await.map_err(runtime_failure)? {
            let belongs = self.store.conversation_of_any_run(run.run_id).await.map_err(internal)?;
            if belongs.is_some_and(|belongs| belongs.id == row.id) && !waiting.contains(&run.run_id) {
                waiting.push(run.run_id);
            }
        }
        let mut cancelled = Vec::new();
        for run_id in waiting {
            let pause = self.pause_of_run(&row, run_id).await.ok().flatten();
            match self.runtime.cancel_if_waiting(&owner, run_id).await {
                Ok(result) if result.cancelled => {
                    let entry = Entry::new(Action::Cancelled, Surface::Chat, Some(user.id), Some(run_id));
                    cancelled.push(entry.with_pause(pause.as_ref()));
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::error!(%error, conversation = %row.id, "could not end the waiting run");
                    return Err(AppError::Unavailable);
                }
            }
        }
        if !self.store.delete_conversation(user.id, id, &cancelled).await.map_err(internal)? {
            return Err(AppError::Busy);
        }
        Ok(())
    }

    async fn start_tour(&self, user: &CurrentUser, page_id: i64, lang: Lang) -> Result<String, AppError> {
        // A guided process is decided only by the one who started it, so it cannot wait for a
        // reviewer: four-eyes accounts do not start one.
        if !user.approves_own_changes() {
            return Err(AppError::Invalid(Text::ErrorTourFourEyes));
        }
        let page = self.content.page(page_id).await.map_err(content_failure)?.ok_or(AppError::NotFound)?;
        let id = Uuid::new_v4().to_string();
        let title =
            format!("{}: {}", lang.t(Text::TourTitle), page.title.chars().take(PAGE_TITLE_CHARS).collect::<String>());
        self.store
            .create_conversation(&id, user.id, &title, Some(crate::skills::PAGE_TOUR), Some(page.id))
            .await
            .map_err(internal)?;
        let first = lang.t(Text::TourFirstMessage);
        let outcome = self
            .store
            .start_turn(user.id, &id, ConversationStatus::Idle, first, &title, UNTITLED)
            .await
            .map_err(internal)?;
        self.started(&id, outcome)?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_come_from_the_first_line_and_are_cut() {
        assert_eq!(title_from("\n  Hello   world \nsecond"), "Hello world second");
        // Cut at a word, never inside one, with "…" where it was cut.
        let sentence = "Which opening hours should the bakery show on its front page?";
        assert_eq!(title_from(sentence), "Which opening hours should the bakery…");
        assert!(title_from(sentence).chars().count() <= TITLE_CHARS + 1);
        // One word longer than a title is cut inside it.
        let long = "x".repeat(80);
        assert_eq!(title_from(&long), format!("{}…", "x".repeat(TITLE_CHARS)));
        assert_eq!(title_from("Kurz"), "Kurz");
        assert_eq!(title_from("   "), UNTITLED);
    }
}
