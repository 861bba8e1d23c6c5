//! The runs that wait for the reader: the header's count and the inbox.

use serde::{Deserialize, Serialize};

use super::cards::ApprovalCardView;
use super::questions::QuestionView;

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
