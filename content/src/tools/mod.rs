//! The tour's tools over the content store: reads that list, read and analyse pages and suggest
//! changes, and two writes that go through the user's approval.
//!
//! Results are compact JSON, so a real model and the scripted demo model read the same thing. The
//! arguments are model-chosen and therefore untrusted: every problem with them is a
//! [`runtime::ToolError::Rejected`] sentence the model can act on; store failures become
//! [`runtime::ToolError::Failed`], which the runtime never shows the model (they may carry SQL).

use std::sync::Arc;

use runtime::{Tool, ToolRegistry};

use crate::store::ContentStore;
use analyse::{AnalysePage, SuggestChange};
use reads::{ListPages, ReadPage};
use writes::{SetAltText, UpdatePageField};

mod analyse;
mod arguments;
mod reads;
mod replies;
mod writes;

pub const LIST_PAGES: &str = "list_pages";
pub const READ_PAGE: &str = "read_page";
pub const ANALYSE_PAGE: &str = "analyse_page";
pub const SUGGEST_CHANGE: &str = "suggest_change";
pub const UPDATE_PAGE_FIELD: &str = "update_page_field";
pub const SET_ALT_TEXT: &str = "set_alt_text";

/// Registers the content tools. Called once at start-up with the server's pool.
pub fn register(registry: &mut ToolRegistry, store: ContentStore) {
    let tools: [Arc<dyn Tool>; 6] = [
        Arc::new(ListPages(store.clone())),
        Arc::new(ReadPage(store.clone())),
        Arc::new(AnalysePage(store.clone())),
        Arc::new(SuggestChange(store.clone())),
        Arc::new(UpdatePageField(store.clone())),
        Arc::new(SetAltText(store)),
    ];
    for tool in tools {
        // Like the built-in tools: a clash of names is a programming error that must stop the boot.
        registry.register(tool).expect("the content tools have distinct, valid declarations");
    }
}

#[cfg(test)]
mod tests {
    use runtime::{Actor, ToolContext, ToolEffect, ToolError};
    use serde_json::Value;
    use uuid::Uuid;

    use super::*;
    use crate::seed::seed_if_empty;
    use crate::store::tests::content_store;
    use crate::Page;

    pub(super) const HOME: i64 = 1;

    pub(super) async fn seeded() -> (ToolRegistry, ContentStore) {
        let store = content_store().await;
        seed_if_empty(&store).await.expect("seed");
        let mut registry = ToolRegistry::new();
        register(&mut registry, store.clone());
        (registry, store)
    }

    pub(super) fn context() -> ToolContext {
        ToolContext::new(Uuid::nil(), Actor::user(1), 1)
    }

    pub(super) async fn call(registry: &ToolRegistry, name: &str, arguments: Value) -> Result<String, ToolError> {
        let tool = registry.get(name).unwrap_or_else(|| panic!("{name} is registered"));
        tool.tool.execute(arguments, &context()).await
    }

    pub(super) async fn call_json(registry: &ToolRegistry, name: &str, arguments: Value) -> Value {
        let text = call(registry, name, arguments).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} answers JSON: {e}: {text}"))
    }

    pub(super) fn rejected(result: Result<String, ToolError>) -> String {
        match result {
            Err(ToolError::Rejected(message)) => message,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    pub(super) async fn home(store: &ContentStore) -> Page {
        store.page(HOME).await.expect("read").expect("home")
    }

    #[tokio::test]
    async fn tools_are_registered_with_their_effects() {
        let (registry, _) = seeded().await;
        let tools = registry.all();
        let effects: Vec<(&str, ToolEffect)> =
            tools.iter().map(|tool| (tool.spec.name.as_str(), tool.spec.effect)).collect();
        assert_eq!(
            effects,
            [
                (ANALYSE_PAGE, ToolEffect::ReadOnly),
                (LIST_PAGES, ToolEffect::ReadOnly),
                (READ_PAGE, ToolEffect::ReadOnly),
                (SET_ALT_TEXT, ToolEffect::IdempotentWrite),
                (SUGGEST_CHANGE, ToolEffect::ReadOnly),
                (UPDATE_PAGE_FIELD, ToolEffect::IdempotentWrite),
            ]
        );
        assert!(tools.iter().all(|tool| tool.spec.parameters["type"] == "object" && !tool.spec.asks_input()));
    }
}
