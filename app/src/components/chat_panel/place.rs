//! Where a panel is drawn, and the addresses its editor opens and closes by.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// Where the panel is drawn: the page's address without `?edit=`, and the message that address
/// opens for editing. The server reads both from the router; a panel is part of an island, which
/// has no router in the browser, so they reach it as the island's props.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PanelPlace {
    pub page: String,
    pub editing: Option<i64>,
}

impl PanelPlace {
    /// The place of the page being rendered (called on the server, outside any island).
    pub fn from_router() -> PanelPlace {
        let location = leptos_router::hooks::use_location();
        let (path, search) = (location.pathname.get_untracked(), location.search.get_untracked());
        let here = if search.is_empty() { path } else { format!("{path}?{search}") };
        let editing = leptos_router::hooks::use_query_map()
            .with_untracked(|query| query.get_str("edit").and_then(|id| id.parse::<i64>().ok()));
        // The rule a plain form's edit goes back by (`edit_message`), so the two agree.
        PanelPlace { page: crate::model::without_query_param(&here, "edit"), editing }
    }

    /// The place of the panel around the caller (the panel provides it).
    pub(super) fn here() -> PanelPlace {
        use_context::<PanelPlace>().unwrap_or_default()
    }

    /// This page with `?edit=` set to `message_id` (or dropped), its other parameters kept (the
    /// panel beside a content page lives at `/pages/{id}?c=…`): how the editor opens and closes
    /// without WASM.
    pub(super) fn edit_href(&self, message_id: Option<i64>) -> String {
        let page = &self.page;
        match message_id {
            Some(id) => format!("{page}{}edit={id}#m{id}", if page.contains('?') { '&' } else { '?' }),
            None => page.clone(),
        }
    }
}
