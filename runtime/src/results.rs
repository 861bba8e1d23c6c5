//! The results a model reads for calls that did not run as asked: declined, or refused by the
//! tool. A model (the scripted demo among them) learns from them what to do next; this module
//! writes the texts and reads them back, so neither side matches words of its own.

use crate::run::DenialReason;

/// Every result of a call that did not run as asked starts with this.
pub const ERROR: &str = "Error: ";
/// Every denial result starts with this.
pub const DENIED: &str = "Error: approval_denied";
const REJECTED: &str = "rejected its arguments: ";

/// The result for a call whose tool refused its arguments with `problem` (the tool's sentence).
pub fn rejected_text(tool: &str, problem: &str) -> String {
    format!("{ERROR}tool \"{tool}\" {REJECTED}{problem}")
}

/// The tool's own sentence, if `result` says the tool refused its arguments.
pub fn read_rejected(result: &str) -> Option<&str> {
    result.strip_prefix(ERROR)?.split_once(REJECTED).map(|(_, problem)| problem)
}

/// Whether a result reports a call that did not run as asked.
pub fn is_error(result: &str) -> bool {
    result.starts_with(ERROR)
}

/// Who declined, as the model is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decider {
    RunOwner,
    OtherUser,
}

/// The result text for a declined call of `tool`; `said` is what the person told the model
/// instead (a respond), quoted so the model reads it as theirs.
pub fn denial_text(tool: &str, decider: Decider, reason: Option<DenialReason>, said: Option<&str>) -> String {
    let (token, who) = match decider {
        Decider::RunOwner => ("run_owner", "by the run owner"),
        Decider::OtherUser => ("other_user", "by another user"),
    };
    let reason_token = reason.map(|r| format!(", reason: {}", r.as_str())).unwrap_or_default();
    let advice = match (reason, said) {
        (Some(DenialReason::Variant), _) => "Propose a different version of this change.",
        (Some(DenialReason::Skip), _) => "Do not propose this change again; move on.",
        (None, Some(_)) => "Do what the person said instead.",
        (None, None) => "Ask whether the change should be proposed again.",
    };
    let said = said.map(|said| format!(" The person said: {}.", quoted(said))).unwrap_or_default();
    format!(
        "{DENIED} (decided_by: {token}{reason_token}). The approval for tool \"{tool}\" was declined {who}. Nothing \
         was executed.{said} {advice}"
    )
}

/// What the person said, if `result` is a denial that carries it.
pub fn read_denial_message(result: &str) -> Option<String> {
    result.strip_prefix(DENIED)?;
    let (_, rest) = result.split_once(" The person said: ")?;
    let end = rest.rfind("\". ")?;
    serde_json::from_str(&rest[..=end]).ok()
}

/// A person's words as a JSON string: quotes and line breaks in them cannot end the quote early.
fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

const EDITED: &str = "The person changed the arguments before approving: ";

/// The result of a call a person edited before approving it: what changed (each top-level
/// argument, as JSON, before → after), then the tool's own result for the edited call.
pub fn edited_text(original: &serde_json::Value, edited: &serde_json::Value, result: &str) -> String {
    let empty = serde_json::Map::new();
    let before = original.as_object().unwrap_or(&empty);
    let after = edited.as_object().unwrap_or(&empty);
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    let shown = |value: Option<&serde_json::Value>| match value {
        None => "(none)".to_string(),
        Some(value) => shorten(&value.to_string()),
    };
    let changes: Vec<String> = keys
        .into_iter()
        .filter(|key| before.get(*key) != after.get(*key))
        .map(|key| format!("{key}: {} → {}", shown(before.get(key)), shown(after.get(key))))
        .collect();
    let changes = if changes.is_empty() { "nothing".to_string() } else { changes.join("; ") };
    format!("{EDITED}{changes}. The change was applied as edited; do not apply the original. Result: {result}")
}

/// Whether a result reports a call a person edited before approving it.
pub fn is_edited(result: &str) -> bool {
    result.starts_with(EDITED)
}

fn shorten(text: &str) -> String {
    const MAX: usize = 400;
    if text.chars().count() <= MAX {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(MAX).collect();
    cut.push('…');
    cut
}

/// Reads a tool result: `None` if it is not a denial, else the reason it carries (if any).
pub fn read_denial(result: &str) -> Option<Option<DenialReason>> {
    let rest = result.strip_prefix(DENIED)?;
    let head = rest.split(')').next().unwrap_or_default();
    let reason = head.split_once(", reason: ").and_then(|(_, reason)| DenialReason::parse(reason.trim()));
    Some(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denial_reads_back_with_its_reason() {
        for reason in [None, Some(DenialReason::Variant), Some(DenialReason::Skip)] {
            for decider in [Decider::RunOwner, Decider::OtherUser] {
                assert_eq!(read_denial(&denial_text("update_page_field", decider, reason, None)), Some(reason));
                let said = "Use the \"formal\" tone). Please.";
                let text = denial_text("update_page_field", decider, reason, Some(said));
                assert_eq!(read_denial(&text), Some(reason));
                assert_eq!(read_denial_message(&text).as_deref(), Some(said));
            }
        }
        assert_eq!(read_denial("Changed the title."), None);
        let rejected = rejected_text("analyse_page", "There is no page with id 9.");
        assert!(is_error(&rejected));
        assert_eq!(read_rejected(&rejected), Some("There is no page with id 9."));
        assert_eq!(read_rejected("Error: tool \"x\" failed."), None);
        assert_eq!(
            denial_text("t", Decider::RunOwner, Some(DenialReason::Skip), None),
            "Error: approval_denied (decided_by: run_owner, reason: skip). The approval for tool \"t\" was declined \
             by the run owner. Nothing was executed. Do not propose this change again; move on."
        );
        assert_eq!(read_denial_message(&denial_text("t", Decider::RunOwner, None, None)), None);
    }

    #[test]
    fn an_edited_result_says_what_changed_and_what_the_tool_did() {
        let original = serde_json::json!({ "path": "x.txt", "content": "original" });
        let edited = serde_json::json!({ "path": "x.txt", "content": "edited", "mode": 1 });
        let text = edited_text(&original, &edited, "Wrote x.txt.");
        assert_eq!(
            text,
            "The person changed the arguments before approving: content: \"original\" → \"edited\"; mode: (none) → 1. \
             The change was applied as edited; do not apply the original. Result: Wrote x.txt."
        );
        assert!(is_edited(&text) && !is_error(&text));
    }
}
