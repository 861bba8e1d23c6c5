//! Approval cards: the calls a card shows with their previews and edits, the answers it offers,
//! what its form sends back, and the standing approvals an "always" leaves.

use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
    // wasm-size (issue 40): read through their wire structs, written by serde's tagged derive.
    #[test]
    fn edits_read_back_from_the_json_they_write() {
        use super::CallEdit;
        use serde_json::json;
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
    }
}
