//! The reader's account and the admin's list of accounts.

use serde::{Deserialize, Serialize};

// e-mail (issue 39)
/// The reader's e-mail settings on the account page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MailSettingsView {
    /// "" when none is stored.
    pub address: String,
    pub notify: bool,
    /// Whether this server sends mail at all (`--smtp-url`).
    pub available: bool,
}

/// Who is signed in and which model answers, for the page header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    pub username: String,
    /// The user's own language setting; `None` follows the browser.
    pub language: Option<crate::i18n::Lang>,
    pub model_label: String,
    pub model_is_demo: bool,
    /// Manages accounts: the header links the accounts page.
    #[serde(default)]
    pub admin: bool,
}

/// One of the reader's sessions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionItemView {
    pub handle: String,
    /// The browser it began in, as it named itself.
    pub agent: Option<String>,
    /// When it began and when it ends, in days and hours ago / from now, in the reader's language.
    pub began: String,
    pub ends: String,
    pub current: bool,
}

/// An account as the admin page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountView {
    pub id: i64,
    pub username: String,
    pub admin: bool,
    pub may_approve_own: bool,
    pub sessions: i64,
    /// The reader's own account (they cannot take their own admin role away).
    pub is_you: bool,
}
