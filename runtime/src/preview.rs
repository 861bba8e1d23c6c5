//! What a write would change, shown on its approval card before anyone decides.
//!
//! A tool that can say what its call would change offers a [`Preview`] (see
//! [`crate::Tool::preview`]). Previews are made when the run suspends, stored with the pause and
//! bound by its digest; on approval they are made again, and any difference refuses the approval
//! before anything runs (the card comes back with the fresh preview). A preview that failed never
//! lets its card apply.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A call's change, as its tool describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    /// What the change is made to, for people (e.g. a page's title).
    pub subject: String,
    pub changes: Vec<FieldChange>,
    /// What the preview was made from (e.g. the page's id and version). Handed to the call as
    /// [`crate::ToolContext::approved_basis`] when it runs, so it can refuse a record that moved.
    pub basis: Value,
}

/// One field's current and proposed value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    /// A stable key a reader's language can name (e.g. `description`); `label` when it cannot.
    pub field: String,
    pub label: String,
    /// `None` when the field is new.
    pub current: Option<String>,
    pub proposed: String,
    /// Word by word, from `current` to `proposed`.
    pub diff: Vec<DiffPart>,
}

impl FieldChange {
    pub fn new(field: &str, label: &str, current: Option<&str>, proposed: &str) -> Self {
        FieldChange {
            field: field.to_string(),
            label: label.to_string(),
            current: current.map(str::to_string),
            proposed: proposed.to_string(),
            diff: word_diff(current.unwrap_or_default(), proposed),
        }
    }
}

/// A run of words that stays, goes or comes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "text", rename_all = "snake_case")]
pub enum DiffPart {
    Same(String),
    Removed(String),
    Added(String),
}

/// A word-level diff (whitespace kept with the words), neighbouring parts of one kind joined.
pub fn word_diff(old: &str, new: &str) -> Vec<DiffPart> {
    let diff = similar::TextDiff::configure().algorithm(similar::Algorithm::Patience).diff_words(old, new);
    let mut parts: Vec<DiffPart> = Vec::new();
    for change in diff.iter_all_changes() {
        let text = change.value();
        let part = match change.tag() {
            similar::ChangeTag::Equal => DiffPart::Same(text.to_string()),
            similar::ChangeTag::Delete => DiffPart::Removed(text.to_string()),
            similar::ChangeTag::Insert => DiffPart::Added(text.to_string()),
        };
        match (parts.last_mut(), part) {
            (Some(DiffPart::Same(last)), DiffPart::Same(more))
            | (Some(DiffPart::Removed(last)), DiffPart::Removed(more))
            | (Some(DiffPart::Added(last)), DiffPart::Added(more)) => last.push_str(&more),
            (_, part) => parts.push(part),
        }
    }
    parts
}

/// A pending call's preview as the card shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CallPreview {
    Ready(Preview),
    /// No preview could be made; `reason` is safe to show (a tool's refusal, or a fixed sentence).
    Failed {
        reason: String,
    },
}

impl CallPreview {
    pub fn failed(&self) -> bool {
        matches!(self, CallPreview::Failed { .. })
    }
}

/// The preview stored for one pending call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPreview {
    pub call_id: String,
    pub preview: CallPreview,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(parts: &[DiffPart]) -> String {
        parts
            .iter()
            .map(|part| match part {
                DiffPart::Same(text) => text.clone(),
                DiffPart::Removed(text) => format!("[-{text}]"),
                DiffPart::Added(text) => format!("[+{text}]"),
            })
            .collect()
    }

    #[test]
    fn a_word_diff_marks_words_not_letters_and_keeps_both_texts() {
        let old = "Fresh bread every morning from our oven.";
        let new = "Fresh sourdough bread every morning, baked in our oven.";
        let parts = word_diff(old, new);
        let shown = render(&parts);
        assert!(shown.starts_with("Fresh "), "{shown}");
        assert!(shown.contains("[+sourdough ]") || shown.contains("[+sourdough]"), "{shown}");
        assert!(shown.contains("[-morning ]") || shown.contains("[-morning]") || shown.contains("[-from]"), "{shown}");
        let before: String = parts.iter().filter(|p| !matches!(p, DiffPart::Added(_))).map(text).collect();
        let after: String = parts.iter().filter(|p| !matches!(p, DiffPart::Removed(_))).map(text).collect();
        assert_eq!(before, old);
        assert_eq!(after, new);
    }

    fn text(part: &DiffPart) -> &str {
        match part {
            DiffPart::Same(text) | DiffPart::Removed(text) | DiffPart::Added(text) => text,
        }
    }

    #[test]
    fn an_unchanged_text_is_one_part_and_a_new_field_is_all_added() {
        assert_eq!(word_diff("same words", "same words"), vec![DiffPart::Same("same words".into())]);
        assert_eq!(FieldChange::new("alt", "Alt text", None, "A loaf").diff, vec![DiffPart::Added("A loaf".into())]);
    }
}
