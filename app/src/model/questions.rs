//! The question a run waits on, as the chat and the inbox show it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionView {
    /// Binds the answer to this question; an answer with another digest is refused.
    pub digest: String,
    pub form: question::form::InputPauseForm,
    /// A tool asked while it ran (an MCP server): the question can be declined.
    #[serde(default)]
    pub declinable: bool,
    /// Who asks, for people (e.g. "MCP server files"), when it is not the assistant itself.
    #[serde(default)]
    pub asked_by: Option<String>,
    /// Set in the runs inbox: the run the question belongs to.
    #[serde(default)]
    pub run: Option<String>,
    /// The MCP server (per-user OAuth) the reader has to connect before the call goes on: the
    /// question shows the link to connect it beside Continue.
    #[serde(default)]
    pub connect: Option<String>,
    /// A page an MCP server asks the reader to open (URL mode): shown with the server's name and
    /// the link's host, opened only by the reader's click; "Done" answers it.
    #[serde(default)]
    pub link: Option<LinkView>,
}

/// A link an MCP server asks the reader to open, as the server read it (never from the browser).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkView {
    /// The MCP server that asks.
    pub server: String,
    /// The address as a browser reads it, `http` or `https`, without a user name.
    pub url: String,
    /// Its host, with the port when it names one: what the reader checks before opening.
    pub host: String,
}
