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
    /// The MCP server (per-user OAuth) the reader has to connect before the call goes on: the
    /// question shows the link to connect it beside Continue.
    #[serde(default)]
    pub connect: Option<String>,
    /// A page an MCP server asks the reader to open (URL mode): shown with the server's name and
    /// the link's host, opened only by the reader's click; "Done" answers it.
    #[serde(default)]
    pub link: Option<LinkView>,
}

/// A link an MCP server asks the reader to open, as the server read it (never from the browser).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkView {
    /// The MCP server that asks.
    pub server: String,
    /// The address as a browser reads it, `http` or `https`, without a user name.
    pub url: String,
    /// Its host, with the port when it names one: what the reader checks before opening.
    pub host: String,
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
    /// "Always allow" beside Apply; `None` where it cannot be offered (four-eyes, a reviewer).
    #[serde(default)]
    pub always: Option<AlwaysOffer>,
}

// e-mail (issue 39)
/// The reader's e-mail settings on the account page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MailSettingsView {
    /// "" when none is stored.
    pub address: String,
    pub notify: bool,
    /// Whether this server sends mail at all (`--smtp-url`).
    pub available: bool,
}

/// How many runs wait for the reader (the header's count, the same runs as the inbox lists), as
/// the page is rendered with it and as `/events/user` sends it ("waiting") whenever it changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingView {
    pub count: u32,
    /// Changes whenever the set of waiting runs does (one leaves, another comes): an open inbox
    /// then loads again.
    pub mark: String,
    /// The run that began to wait last, sent when the count went up: what a notification names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest: Option<WaitingRunView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingRunView {
    pub run_id: String,
    pub conversation_id: String,
    pub title: String,
    /// A card; else a question.
    pub approval: bool,
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
    /// How the reader may edit the call before approving it; `None`: not at all (a reviewer's card).
    #[serde(default)]
    pub edit: Option<CallEdit>,
}

/// How a call's arguments are edited on its card. Posted as `edits[<call index>/<argument>]` for
/// a text or a form field, `edits[<call index>]` for the whole arguments as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", try_from = "CallEditWire")]
pub enum CallEdit {
    /// The proposed text of a write, editable in place: the argument that holds it.
    Text { argument: String, text: String },
    /// The tool's input schema read as a form (the reader questions use), each field holding the
    /// argument's value as its default.
    Form { fields: Vec<question::form::FormField> },
    /// What the form reader cannot show: the arguments as JSON.
    Json { text: String },
}

/// `CallEdit` as its JSON reads (see `question::form::FormWire`: serde's internally tagged
/// derive buffers the object, at a price in the WASM).
#[derive(Deserialize)]
struct CallEditWire {
    kind: CallEditKind,
    argument: Option<String>,
    text: Option<String>,
    fields: Option<Vec<question::form::FormField>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum CallEditKind {
    Text,
    Form,
    Json,
}

impl TryFrom<CallEditWire> for CallEdit {
    type Error = &'static str;

    fn try_from(wire: CallEditWire) -> Result<CallEdit, &'static str> {
        let CallEditWire { kind, argument, text, fields } = wire;
        let text = || text.ok_or("missing field `text`");
        Ok(match kind {
            CallEditKind::Text => {
                CallEdit::Text { argument: argument.ok_or("missing field `argument`")?, text: text()? }
            }
            CallEditKind::Form => CallEdit::Form { fields: fields.ok_or("missing field `fields`")? },
            CallEditKind::Json => CallEdit::Json { text: text()? },
        })
    }
}

/// The posted key of one edited argument of the call at `index` (`None`: the whole arguments as JSON).
pub fn edit_key(index: usize, argument: Option<&str>) -> String {
    match argument {
        // Not a bare number: the form decoder would read it as a list's index.
        Some(argument) => format!("call{index}/{argument}"),
        None => format!("call{index}"),
    }
}

/// Where a standing approval applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlwaysScope {
    /// Only in this conversation.
    Conversation,
    /// In all of the reader's conversations (where an admin permits it for the tool).
    Mine,
}

impl AlwaysScope {
    pub fn as_str(self) -> &'static str {
        match self {
            AlwaysScope::Conversation => "conversation",
            AlwaysScope::Mine => "mine",
        }
    }

    pub fn parse(value: &str) -> Option<AlwaysScope> {
        match value {
            "conversation" => Some(AlwaysScope::Conversation),
            "mine" => Some(AlwaysScope::Mine),
            _ => None,
        }
    }
}

/// What a card's form sends beside its decision.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CardExtras {
    /// A sentence for the model: with Respond (required), Another variant or Skip (optional).
    pub message: Option<String>,
    /// With Apply edited: the edited arguments as posted, by [`edit_key`].
    pub edits: std::collections::BTreeMap<String, String>,
    /// With an approval: from now on approve the card's tools without asking.
    pub always: Option<AlwaysScope>,
}

/// The offer to always allow a card's tools, shown beside Apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlwaysOffer {
    /// The tools' names as the checkbox names them.
    pub tools: String,
    /// An admin permits "always for me" for every one of them.
    pub mine: bool,
}

/// A standing approval, as the settings list it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyView {
    pub id: i64,
    pub tool: String,
    /// The conversation it applies in (id, title); `None`: everywhere.
    pub conversation: Option<(String, String)>,
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

/// The webhooks page (admins): the webhooks, the newest deliveries, and the secret the next
/// webhook added from the page gets (shown before it is added: afterwards only masked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhooksView {
    pub webhooks: Vec<WebhookView>,
    pub deliveries: Vec<DeliveryView>,
    pub new_secret: String,
    /// The kinds of event a webhook may be sent (`run.waiting`, …).
    pub kinds: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookView {
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    /// `whsec_` and its first characters.
    pub secret_masked: String,
    pub active: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryView {
    pub id: i64,
    pub event_id: String,
    pub url: String,
    pub kind: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    pub attempts: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
    pub resent: bool,
}

/// A webhook just added, with its secret: the only time it is shown whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookCreated {
    pub id: i64,
    pub secret: String,
}

/// The button the reader pressed on an approval card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CardDecision {
    Approve,
    Deny,
    Variant,
    Skip,
    /// Deny, telling the model what to do instead.
    Respond,
    /// Approve with the arguments the reader edited.
    ApproveEdited,
}

impl CardDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            CardDecision::Approve => "approve",
            CardDecision::Deny => "deny",
            CardDecision::Variant => "variant",
            CardDecision::Skip => "skip",
            CardDecision::Respond => "respond",
            CardDecision::ApproveEdited => "approve_edited",
        }
    }

    pub fn parse(value: &str) -> Option<CardDecision> {
        match value {
            "approve" => Some(CardDecision::Approve),
            "deny" => Some(CardDecision::Deny),
            "variant" => Some(CardDecision::Variant),
            "skip" => Some(CardDecision::Skip),
            "respond" => Some(CardDecision::Respond),
            "approve_edited" => Some(CardDecision::ApproveEdited),
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
#[serde(tag = "type", rename_all = "snake_case", try_from = "BlockWire")]
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

/// `BlockView` as its JSON reads (see `CallEditWire`).
#[derive(Deserialize)]
struct BlockWire {
    #[serde(rename = "type")]
    kind: BlockKind,
    level: Option<u8>,
    text: Option<String>,
    src: Option<String>,
    alt: Option<String>,
    href: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum BlockKind {
    Heading,
    Paragraph,
    Image,
    Link,
}

impl TryFrom<BlockWire> for BlockView {
    type Error = &'static str;

    fn try_from(wire: BlockWire) -> Result<BlockView, &'static str> {
        let BlockWire { kind, level, text, src, alt, href } = wire;
        let text = || text.ok_or("missing field `text`");
        Ok(match kind {
            BlockKind::Heading => BlockView::Heading { level: level.ok_or("missing field `level`")?, text: text()? },
            BlockKind::Paragraph => BlockView::Paragraph { text: text()? },
            BlockKind::Image => {
                BlockView::Image { src: src.ok_or("missing field `src`")?, alt: alt.ok_or("missing field `alt`")? }
            }
            BlockKind::Link => BlockView::Link { text: text()?, href },
        })
    }
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
    /// For an admin, of a tool whose calls can wait for a card: whether users may always allow it
    /// for themselves ("always for me"). `None` for everyone else and every other tool.
    #[serde(default)]
    pub permit: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpServerStatus {
    Starting,
    Ready,
    /// It signs in with OAuth and nobody has connected it yet.
    SignInNeeded,
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
    /// How the reader stands with it, when it signs in with OAuth.
    #[serde(default)]
    pub oauth: Option<McpOAuthView>,
}

/// An OAuth server's sign-in as the reader sees it (never a token).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpOAuthView {
    /// One sign-in for everyone, made by an admin; else each user connects their own account.
    pub shared: bool,
    /// The sign-in the reader's calls use exists.
    pub connected: bool,
    /// The reader may connect or disconnect it: their own account, or as an admin the shared one.
    pub may_change: bool,
}

/// Where a sign-in to an MCP server begins (a page the browser goes to).
pub fn mcp_connect_path(server: &str) -> String {
    format!("/mcp/oauth/start?server={server}")
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

    // wasm-size (issue 40): read through their wire structs, written by serde's tagged derive.
    #[test]
    fn blocks_and_edits_read_back_from_the_json_they_write() {
        use super::{BlockView, CallEdit};
        use serde_json::json;
        let blocks = vec![
            BlockView::Heading { level: 2, text: "Brot".into() },
            BlockView::Paragraph { text: "Jeden Tag".into() },
            BlockView::Image { src: "/b.jpg".into(), alt: "".into() },
            BlockView::Link { text: "mehr".into(), href: None },
            BlockView::Link { text: "mehr".into(), href: Some("/mehr".into()) },
        ];
        let written = serde_json::to_string(&blocks).unwrap();
        assert_eq!(serde_json::from_str::<Vec<BlockView>>(&written).unwrap(), blocks);
        assert_eq!(serde_json::to_value(&blocks[1]).unwrap(), json!({ "type": "paragraph", "text": "Jeden Tag" }));
        let edits = vec![
            CallEdit::Text { argument: "value".into(), text: "Neu".into() },
            CallEdit::Form { fields: Vec::new() },
            CallEdit::Json { text: "{}".into() },
        ];
        let written = serde_json::to_string(&edits).unwrap();
        assert_eq!(serde_json::from_str::<Vec<CallEdit>>(&written).unwrap(), edits);
        assert_eq!(serde_json::to_value(&edits[2]).unwrap(), json!({ "kind": "json", "text": "{}" }));
        let refused = serde_json::from_value::<CallEdit>(json!({ "kind": "text", "text": "x" })).unwrap_err();
        assert!(refused.to_string().contains("missing field `argument`"), "{refused}");
        assert!(serde_json::from_value::<BlockView>(json!({ "type": "heading", "text": "x" })).is_err());
    }
}

// On record (issue 39): the audit log's page and exports.

/// The audit page's filters, as its address carries them (`/audit?user=…&tool=…&from=…&to=…&page=…`),
/// so a filtered view is a link. Dates are `YYYY-MM-DD` (UTC); an empty value is no filter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditQuery {
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
    /// 1 for the newest rows.
    #[serde(default)]
    pub page: Option<u32>,
}

impl AuditQuery {
    /// The query string of these filters (without the page), for links that keep them.
    pub fn filters_query(&self) -> String {
        let pairs = [("user", &self.user), ("tool", &self.tool), ("from", &self.from), ("to", &self.to)];
        pairs
            .iter()
            .filter_map(|(name, value)| {
                let value = value.as_deref().map(str::trim).filter(|value| !value.is_empty())?;
                Some(format!("{name}={}", percent_encode(value)))
            })
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// A query value, percent-encoded (everything but unreserved characters).
fn percent_encode(value: &str) -> String {
    value
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// One audit row as the page shows it, its words in the reader's language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRowView {
    pub id: i64,
    /// `YYYY-MM-DD HH:MM:SS UTC`.
    pub at: String,
    /// The stored code (`approved`, …) and its label.
    pub action: String,
    pub action_label: String,
    /// Who did it; `None` for the system.
    pub actor: Option<String>,
    pub owner: Option<String>,
    pub conversation_id: String,
    pub conversation_title: String,
    pub run_id: Option<String>,
    pub surface_label: String,
    pub tools: Vec<String>,
    pub arguments: Option<String>,
    pub arguments_run: Option<String>,
    pub preview: Option<String>,
    pub answer: Option<String>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditPageView {
    pub rows: Vec<AuditRowView>,
    /// The reader sees every conversation's rows (an admin), not only their own.
    pub all: bool,
    pub page: u32,
    pub has_older: bool,
}
