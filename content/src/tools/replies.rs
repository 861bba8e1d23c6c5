//! What the tools answer: compact JSON, shortened values, and the sentences a refusal gives the
//! model; and the page a tool answers about, or the sentence that there is none.

use runtime::ToolError;
use serde_json::Value;

use crate::store::{ContentError, ContentStore};
use crate::Page;

/// Long values (a paragraph can have 5 000 characters) are cut in results that only describe.
pub(super) const SHOWN_CHARS: usize = 300;

/// A refused edit is the model's to correct; anything else stays in the log.
pub(super) fn content_failure(error: ContentError) -> ToolError {
    match error {
        ContentError::Edit(edit) => ToolError::Rejected(sentence(&edit.to_string())),
        other => ToolError::failed(other),
    }
}

/// "the page has no block 9" → "The page has no block 9."
pub(super) fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    let mut out: String = chars.next().map(|first| first.to_uppercase().collect()).unwrap_or_default();
    out.push_str(chars.as_str());
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

pub(super) fn no_such_page(page_id: i64) -> ToolError {
    ToolError::Rejected(format!("There is no page with id {page_id}; list_pages shows the ids."))
}

pub(super) async fn load(store: &ContentStore, page_id: i64) -> Result<Page, ToolError> {
    store.page(page_id).await.map_err(content_failure)?.ok_or_else(|| no_such_page(page_id))
}

pub(super) fn shorten(text: &str) -> String {
    if text.chars().count() <= SHOWN_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(SHOWN_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

pub(super) fn json_text(value: &Value) -> Result<String, ToolError> {
    serde_json::to_string(value).map_err(ToolError::failed)
}
