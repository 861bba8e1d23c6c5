//! A finished call's result as the model reads it: its text blocks, other blocks as JSON, or its
//! structured content when it has no blocks. Both the call that ends and a live question's watcher,
//! which sees a call end without its answer, read a result this way.

use rmcp::model::{CallToolResponse, ContentBlock};
use serde_json::Value;

pub(crate) fn text_of_result(result: &rmcp::model::CallToolResult) -> String {
    let texts: Vec<String> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            other => serde_json::to_string(other).unwrap_or_default(),
        })
        .collect();
    if texts.is_empty() {
        return result.structured_content.as_ref().map(Value::to_string).unwrap_or_default();
    }
    texts.join("\n")
}

/// A finished call's result as the model reads it.
pub(crate) fn text_of_response(response: &CallToolResponse) -> String {
    match response {
        CallToolResponse::Complete(result) => text_of_result(result),
        _ => "the server asked again".to_string(),
    }
}
