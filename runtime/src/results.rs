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

/// The result text for a declined call of `tool`.
pub fn denial_text(tool: &str, decider: Decider, reason: Option<DenialReason>) -> String {
    let (token, who) = match decider {
        Decider::RunOwner => ("run_owner", "by the run owner"),
        Decider::OtherUser => ("other_user", "by another user"),
    };
    let reason_token = reason.map(|r| format!(", reason: {}", r.as_str())).unwrap_or_default();
    let advice = match reason {
        Some(DenialReason::Variant) => "Propose a different version of this change.",
        Some(DenialReason::Skip) => "Do not propose this change again; move on.",
        None => "Ask whether the change should be proposed again.",
    };
    format!(
        "{DENIED} (decided_by: {token}{reason_token}). The approval for tool \"{tool}\" was declined {who}. Nothing \
         was executed. {advice}"
    )
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
                assert_eq!(read_denial(&denial_text("update_page_field", decider, reason)), Some(reason));
            }
        }
        assert_eq!(read_denial("Changed the title."), None);
        let rejected = rejected_text("analyse_page", "There is no page with id 9.");
        assert!(is_error(&rejected));
        assert_eq!(read_rejected(&rejected), Some("There is no page with id 9."));
        assert_eq!(read_rejected("Error: tool \"x\" failed."), None);
        assert_eq!(
            denial_text("t", Decider::RunOwner, Some(DenialReason::Skip)),
            "Error: approval_denied (decided_by: run_owner, reason: skip). The approval for tool \"t\" was declined \
             by the run owner. Nothing was executed. Do not propose this change again; move on."
        );
    }
}
