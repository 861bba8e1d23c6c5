//! Approval cards as the reader sees them: the calls and their previews in the reader's language,
//! and what the reader may do with a card beyond yes or no.

use app::backend::CurrentUser;
use app::error::AppError;
use app::i18n::{Lang, Text};
use app::model::{
    AlwaysOffer, ApprovalCardView, CardAnswers, ChangeView, DiffKind, DiffView, PendingCallView, PreviewView,
};

use super::ChatService;
use crate::conversation::Conversation;
use crate::corrections;
use crate::failures::internal;
use crate::skills::ProcessRunDetector;

/// Four-eyes: the reader's own card that writes waits for a reviewer when they may not approve
/// their own changes. The one rule for the card (no Apply) and for the refusal of an approval.
pub(super) fn waits_for_reviewer(pause: &runtime::ApprovalPause, user: &CurrentUser) -> bool {
    pause.any_write() && !user.approves_own_changes()
}

/// The distinct tools of a card's calls, in the card's order.
pub(super) fn tool_names(pause: &runtime::ApprovalPause) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for call in &pause.pending_calls {
        if !names.contains(&call.name) {
            names.push(call.name.clone());
        }
    }
    names
}

/// A card as the reader sees it, in their language.
pub(super) fn card_view(pause: runtime::ApprovalPause, answers: CardAnswers, lang: Lang) -> ApprovalCardView {
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

impl ChatService {
    /// A card of the reader's own, with what they may do beyond yes or no: edit each call, and
    /// always allow its tools (never where their changes wait for a second person).
    pub(super) async fn owner_card(
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

    pub(super) fn card_answers(&self, row: &Conversation, pause: &runtime::ApprovalPause) -> CardAnswers {
        if self.skills.is_process_run(row) && pause.any_write() {
            CardAnswers::Process
        } else {
            CardAnswers::Plain
        }
    }
}
