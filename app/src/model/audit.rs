//! On record (issue 39): the audit log's page and exports.

use serde::{Deserialize, Serialize};

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
