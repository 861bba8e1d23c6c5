//! A conversation as the chat shows it: its lines, their files, the reply being written, and the
//! parts a page loads again or polls for.

use serde::{Deserialize, Serialize};

use super::cards::ApprovalCardView;
use super::questions::QuestionView;

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
    /// Left out of a page's hydration data too, which takes it from the markup ([`crate::markup_fields`]).
    #[serde(default, skip_serializing_if = "crate::markup_fields::skip_content")]
    pub content: String,
    /// The assistant's markdown, rendered and sanitised on the server. Left out of a page's
    /// hydration data, which takes it from the markup ([`crate::markup_fields`]).
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "crate::markup_fields::serialize_html")]
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
    /// The text as the server renders it (the recorded line's sanitiser): the browser has no
    /// markdown parser of its own.
    #[serde(default)]
    pub html: Option<String>,
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
