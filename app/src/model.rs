//! View models: what the components render. They cross the server-function boundary, so they are
//! plain serialisable data with no database or runtime types in them.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConversationStatus {
    Idle,
    Processing,
    AwaitingApproval,
    AwaitingInput,
    Failed,
}

impl ConversationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConversationStatus::Idle => "idle",
            ConversationStatus::Processing => "processing",
            ConversationStatus::AwaitingApproval => "awaiting_approval",
            ConversationStatus::AwaitingInput => "awaiting_input",
            ConversationStatus::Failed => "failed",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "idle" => ConversationStatus::Idle,
            "processing" => ConversationStatus::Processing,
            "awaiting_approval" => ConversationStatus::AwaitingApproval,
            "awaiting_input" => ConversationStatus::AwaitingInput,
            "failed" => ConversationStatus::Failed,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub status: ConversationStatus,
}

/// One line of the transcript. Fields at their default are left out of the JSON: a page carries
/// every line of a long conversation as data for hydration too, and most lines are neither
/// stopped, editable, decided after, noted nor carrying files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageView {
    pub id: i64,
    pub role: MessageRole,
    /// The line as plain text: the reader's own lines, which are never interpreted. Empty when
    /// `html` carries the line (the page shows only that, so the Markdown source is not sent).
    /// Left out of a page's hydration data too, which takes it from the markup ([`crate::page_data`]).
    #[serde(default, skip_serializing_if = "crate::page_data::skip_content")]
    pub content: String,
    /// The assistant's markdown, rendered and sanitised on the server. Left out of a page's
    /// hydration data, which takes it from the markup ([`crate::page_data`]).
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "crate::page_data::serialize_html")]
    pub html: Option<String>,
    /// A reply the reader stopped while it was written: its text as far as it got.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stopped: bool,
    /// The reader may edit this message and run the conversation again from it, once the
    /// assistant is not working (the conversation's status says that).
    #[serde(default, skip_serializing_if = "is_false")]
    pub editable: bool,
    /// A card was approved after this message: what it applied stays if the message is edited.
    #[serde(default, skip_serializing_if = "is_false")]
    pub decided_after: bool,
    /// Files sent with this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentView>,
    /// What the line is, when the transcript alone does not say it (an answer that came after a
    /// decision in the runs inbox, a run that expired), in the reader's language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[cfg(test)]
impl MessageView {
    /// A line for tests: the plain text, or the rendering of an assistant's line; no flags.
    pub(crate) fn line(id: i64, role: MessageRole, content: &str, html: Option<&str>) -> Self {
        MessageView {
            id,
            role,
            content: content.into(),
            html: html.map(str::to_string),
            stopped: false,
            editable: false,
            decided_after: false,
            attachments: Vec::new(),
            note: None,
        }
    }
}

fn is_false(value: &bool) -> bool {
    !value
}

/// A file attached to a message (or waiting for the next one), without its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentView {
    pub id: i64,
    pub file_name: String,
    /// `pdf`, `docx`, `xlsx`, `text` or `markdown`.
    pub kind: String,
    pub size: u64,
    /// The text given to the model was cut at the limit.
    pub truncated: bool,
}

/// The reply the model is writing, as far as it got. `key` names the streamed turn: the live
/// pieces the page hears carry it, with the byte offset where their text goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftView {
    pub key: String,
    pub text: String,
}

/// What a poll returns. On the fast path (the turn is still working and no message came since
/// the client's count) only the status and the count, without reading a message; otherwise the
/// whole conversation, so the first poll that sees a question or a card carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PollView {
    pub status: ConversationStatus,
    pub total: usize,
    pub conversation: Option<ConversationView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationView {
    pub id: String,
    pub title: String,
    pub status: ConversationStatus,
    pub messages: Vec<MessageView>,
    /// A sentence when the last turn failed or an answer was handed back; never provider or SQL
    /// internals.
    pub error: Option<String>,
    /// The question the run waits on, while the conversation is `awaiting_input`.
    pub question: Option<QuestionView>,
    /// The approval card, while the conversation is `awaiting_approval`.
    pub card: Option<ApprovalCardView>,
    /// True for a guided process run (a conversation started with a skill).
    pub process_run: bool,
    /// While the assistant works: the reply so far.
    #[serde(default)]
    pub draft: Option<DraftView>,
    /// Files attached for the next message.
    #[serde(default)]
    pub pending_attachments: Vec<AttachmentView>,
    /// The largest file that can be attached, in MiB.
    #[serde(default)]
    pub attachment_limit_mib: u32,
}

/// A conversation as the page asks for it again: only the messages it does not have yet, when the
/// ones it has are still as they were.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationPart {
    /// The index of `view.messages[0]` in the whole conversation: 0 for the whole of it.
    pub from: usize,
    /// The [`digests`] of the whole conversation's messages, for the next request.
    pub digest: String,
    pub view: ConversationView,
}

impl ConversationPart {
    /// The whole view: `known` (the page's messages before this part) with the new ones after
    /// the first `from`.
    pub fn merged(self, known: Option<&ConversationView>) -> ConversationView {
        let mut view = self.view;
        if self.from > 0 {
            let mut messages = known.map(|known| known.messages[..self.from].to_vec()).unwrap_or_default();
            messages.append(&mut view.messages);
            view.messages = messages;
        }
        view
    }
}

/// Digests of messages as the page shows them (every field of each): of the first `at` (when there
/// are that many) and of all of them, in one pass. Equal digests mean the page shows those
/// messages as they are. FNV-1a over each message's JSON; not a security boundary (the page reads
/// only its own conversation), only a check that what it has is current.
pub fn digests(messages: &[MessageView], at: usize) -> (Option<String>, String) {
    let finish = |hash: u64, count: usize| format!("{hash:016x}-{count}");
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut prefix = (at == 0).then(|| finish(hash, 0));
    for (index, message) in messages.iter().enumerate() {
        let json = serde_json::to_string(message).unwrap_or_default();
        for byte in json.bytes().chain([0xff]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        if index + 1 == at {
            prefix = Some(finish(hash, at));
        }
    }
    (prefix, finish(hash, messages.len()))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionView {
    /// Binds the answer to this question; an answer with another digest is refused.
    pub digest: String,
    pub form: question::form::InputPauseForm,
    /// A tool asked while it ran (an MCP server): the question can be declined.
    #[serde(default)]
    pub declinable: bool,
    /// Who asks, for people (e.g. "MCP server files"), when it is not the assistant itself.
    #[serde(default)]
    pub asked_by: Option<String>,
    /// Set in the runs inbox: the run the question belongs to.
    #[serde(default)]
    pub run: Option<String>,
}

/// Which answers a card offers. The server decides; the browser only renders it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CardAnswers {
    /// Approve or Abbrechen.
    Plain,
    /// A write in a process run: Übernehmen, Andere Variante or Überspringen.
    Process,
    /// Another user's change, shown to a reviewer: approve only (denying stays with its owner).
    Review,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalCardView {
    pub digest: String,
    pub answers: CardAnswers,
    pub calls: Vec<PendingCallView>,
    /// A call's preview failed: the card cannot apply, and its approve button asks for the
    /// preview again instead (the server's rule; the button only says so).
    #[serde(default)]
    pub preview_failed: bool,
    /// Set in the runs inbox: the run the card belongs to.
    #[serde(default)]
    pub run: Option<String>,
    /// Four-eyes: the reader may not approve this change of their own; a reviewer decides it.
    #[serde(default)]
    pub needs_reviewer: bool,
}

/// The reader's runs that wait for a decision or an answer, each with its card or question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InboxView {
    pub items: Vec<InboxItemView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InboxItemView {
    pub run_id: String,
    pub conversation_id: String,
    pub conversation_title: String,
    /// How long it waits, in the reader's language ("3 hours").
    pub waiting_for: String,
    /// The chat has moved on from it (a new message came): deciding here carries it on, and its
    /// answer joins the chat as a line of its own.
    pub moved_on: bool,
    /// Why the last decision or answer was not taken, in the reader's language.
    pub error: Option<String>,
    /// Another user's change that waits for a reviewer: whose it is.
    #[serde(default)]
    pub review_of: Option<String>,
    pub question: Option<QuestionView>,
    pub card: Option<ApprovalCardView>,
}

/// What a pending write would change, as its tool previewed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PreviewView {
    Ready {
        subject: String,
        changes: Vec<ChangeView>,
    },
    /// Why no preview could be made (the tool's words).
    Failed {
        reason: String,
    },
}

/// One field: its name in the reader's language, and the text before and after, word by word.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeView {
    pub label: String,
    pub diff: Vec<DiffView>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DiffKind {
    Same,
    Removed,
    Added,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffView {
    pub kind: DiffKind,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCallView {
    pub name: String,
    /// Where the tool comes from (e.g. "MCP server files"); `None` for a built-in tool.
    #[serde(default)]
    pub origin: Option<String>,
    /// The arguments as indented JSON: model-chosen, so always rendered as text, never as markup.
    pub arguments: String,
    pub declares_write: bool,
    pub tool_registered: bool,
    #[serde(default)]
    pub preview: Option<PreviewView>,
    /// The call waits because it could send the conversation's text out, to this (the tool's
    /// source): the conversation holds outside content, and the tool reaches the open world.
    #[serde(default)]
    pub sends_out_to: Option<String>,
}

/// Why a card was denied, in a process run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DenyReason {
    Variant,
    Skip,
}

impl DenyReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DenyReason::Variant => "variant",
            DenyReason::Skip => "skip",
        }
    }

    pub fn parse(value: &str) -> Option<DenyReason> {
        match value {
            "variant" => Some(DenyReason::Variant),
            "skip" => Some(DenyReason::Skip),
            _ => None,
        }
    }
}

/// Who is signed in and which model answers, for the page header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    pub username: String,
    /// The user's own language setting; `None` follows the browser.
    pub language: Option<crate::i18n::Lang>,
    pub model_label: String,
    pub model_is_demo: bool,
    /// Manages accounts: the header links the accounts page.
    #[serde(default)]
    pub admin: bool,
}

/// One of the reader's sessions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionItemView {
    pub handle: String,
    /// The browser it began in, as it named itself.
    pub agent: Option<String>,
    /// When it began and when it ends, in days and hours ago / from now, in the reader's language.
    pub began: String,
    pub ends: String,
    pub current: bool,
}

/// An account as the admin page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountView {
    pub id: i64,
    pub username: String,
    pub admin: bool,
    pub may_approve_own: bool,
    pub sessions: i64,
    /// The reader's own account (they cannot take their own admin role away).
    pub is_you: bool,
}

/// The button the reader pressed on an approval card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CardDecision {
    Approve,
    Deny,
    Variant,
    Skip,
}

impl CardDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            CardDecision::Approve => "approve",
            CardDecision::Deny => "deny",
            CardDecision::Variant => "variant",
            CardDecision::Skip => "skip",
        }
    }

    pub fn parse(value: &str) -> Option<CardDecision> {
        match value {
            "approve" => Some(CardDecision::Approve),
            "deny" => Some(CardDecision::Deny),
            "variant" => Some(CardDecision::Variant),
            "skip" => Some(CardDecision::Skip),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageSummaryView {
    pub id: i64,
    pub slug: String,
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockView {
    Heading {
        level: u8,
        text: String,
    },
    Paragraph {
        text: String,
    },
    Image {
        src: String,
        alt: String,
    },
    /// `href` is `None` when the stored target is not a safe link (e.g. `javascript:`).
    Link {
        text: String,
        href: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageView {
    pub id: i64,
    pub slug: String,
    pub title: String,
    pub description: String,
    pub blocks: Vec<BlockView>,
    pub version: i64,
}

/// What a tool does to the world, as the tools page says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolEffectView {
    Reads,
    /// Writes; safe to repeat.
    WritesIdempotent,
    /// Writes; an approval card comes first.
    Writes,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolView {
    pub name: String,
    pub description: String,
    pub effect: ToolEffectView,
    /// Whether a call waits for an approval card.
    pub needs_approval: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpServerStatus {
    Starting,
    Ready,
    /// Failed or gone; tried again in `retry_in_seconds`.
    Down {
        problem: McpProblemView,
        retry_in_seconds: u64,
    },
}

/// Why an MCP server is down, as a kind the page says in the reader's language (never the
/// library's text, which may carry the server's URL with its key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum McpProblemView {
    CannotStart,
    Exited,
    Unreachable,
    Disconnected,
    Refused { status: u16 },
    CredentialsRefused,
    Handshake,
    TimedOut,
    Protocol,
    Misconfigured,
}

/// Where an MCP server is, for an admin: the URL with query values and userinfo masked, or the
/// command's program name (no arguments, no environment).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpPlaceView {
    Url(String),
    Program(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerView {
    pub name: String,
    /// Only for an admin; an editor sees the name, the state and the tools.
    pub place: Option<McpPlaceView>,
    pub status: McpServerStatus,
    pub tools: Vec<ToolView>,
}

/// The tools the assistant is offered: the built-in ones and those of each MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolsView {
    pub built_in: Vec<ToolView>,
    pub servers: Vec<McpServerView>,
}

/// `path_and_query` without the parameter `key` (every occurrence), the rest as it was.
pub fn without_query_param(path_and_query: &str, key: &str) -> String {
    let Some((path, query)) = path_and_query.split_once('?') else { return path_and_query.to_string() };
    let kept: Vec<&str> =
        query.split('&').filter(|pair| !pair.is_empty() && pair.split('=').next() != Some(key)).collect();
    if kept.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::without_query_param;

    #[test]
    fn a_query_parameter_is_dropped_and_the_rest_kept() {
        assert_eq!(without_query_param("/c/abc?edit=12", "edit"), "/c/abc");
        assert_eq!(without_query_param("/pages/3?c=abc&edit=12", "edit"), "/pages/3?c=abc");
        assert_eq!(without_query_param("/pages/3?edit=1&c=abc&edit=2", "edit"), "/pages/3?c=abc");
        assert_eq!(without_query_param("/pages/3?editor=x&edit", "edit"), "/pages/3?editor=x");
        assert_eq!(without_query_param("/c/abc", "edit"), "/c/abc");
    }
}
