//! The conversation as a server-rendered page hands it to the hydrating client: without the HTML
//! of its assistant lines and the text of the reader's, which the page's markup already holds.
//! They were most of the data of a long conversation, escaped twice (JSON, then a script's
//! string), and all the page carried twice; the client reads them back from the markup instead.
//!
//! Server functions send the conversation whole: only [`PageCodec`], the codec of the panel's
//! resource, leaves them out.

use std::cell::Cell;

use leptos::server::codee::{Decoder, Encoder};
use serde::{Serialize, Serializer};

use crate::error::AppError;
use crate::model::ConversationView;

/// What the panel's resource holds.
pub type PanelData = Result<Option<ConversationView>, AppError>;

thread_local! {
    /// Set while [`PageCodec`] writes (serialising is synchronous, so no other value's
    /// serialisation can see it on this thread).
    static IN_PAGE_DATA: Cell<bool> = const { Cell::new(false) };
}

/// `MessageView::html` as written: `""` in a page's data, where the markup carries it.
pub(crate) fn serialize_html<S: Serializer>(html: &Option<String>, serializer: S) -> Result<S::Ok, S::Error> {
    match html {
        Some(_) if IN_PAGE_DATA.get() => serializer.serialize_some(""),
        _ => html.serialize(serializer),
    }
}

/// Whether `MessageView::content` is left out: when empty, and always in a page's data (where
/// only the reader's lines have any, and the markup carries it as text).
pub(crate) fn skip_content(content: &str) -> bool {
    content.is_empty() || IN_PAGE_DATA.get()
}

/// The codec of the panel's resource: JSON, an assistant line's HTML and a reader's line's text
/// left out on the server and taken from the page's markup in the browser.
pub struct PageCodec;

impl Encoder<PanelData> for PageCodec {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &PanelData) -> Result<String, serde_json::Error> {
        /// Lowers the flag however serialising ends: left up, it would strip the HTML from this
        /// thread's next server-function answer.
        struct Lower;
        impl Drop for Lower {
            fn drop(&mut self) {
                IN_PAGE_DATA.set(false);
            }
        }
        IN_PAGE_DATA.set(true);
        let _lower = Lower;
        serde_json::to_string(value)
    }
}

impl Decoder<PanelData> for PageCodec {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(encoded: &str) -> Result<PanelData, serde_json::Error> {
        let value: PanelData = serde_json::from_str(encoded)?;
        #[cfg(feature = "hydrate")]
        let value = value.map(|view| view.map(restore_from_markup));
        Ok(value)
    }
}

/// Each assistant line's HTML and each of the reader's lines' text, from the body the server
/// rendered for it (`<li id="m{id}">`). The data is read while the page hydrates, so that markup
/// is the server's, untouched. (The text comes back as the browser parsed it: a line sent by a
/// plain form has `\r\n` where this has `\n`, which only the editor's box shows, as a browser's
/// box does anyway.)
#[cfg(feature = "hydrate")]
fn restore_from_markup(mut view: ConversationView) -> ConversationView {
    use crate::model::MessageRole;
    let document = leptos::prelude::document();
    let body = |id: i64| {
        document
            .get_element_by_id(&format!("m{id}"))
            .and_then(|line| line.query_selector(":scope > .body").ok().flatten())
    };
    for message in &mut view.messages {
        if message.html.as_deref() == Some("") {
            message.html = Some(body(message.id).map(|body| body.inner_html()).unwrap_or_default());
        } else if message.role == MessageRole::User && message.content.is_empty() {
            message.content = body(message.id).and_then(|body| body.text_content()).unwrap_or_default();
        }
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ConversationStatus, MessageRole, MessageView};

    fn view() -> ConversationView {
        let line =
            |id, role, html: Option<&str>| MessageView::line(id, role, if html.is_some() { "" } else { "Hello" }, html);
        ConversationView {
            id: "c".into(),
            title: "T".into(),
            status: ConversationStatus::Idle,
            messages: vec![
                line(1, MessageRole::User, None),
                line(2, MessageRole::Assistant, Some("<p>Answer with \"quotes\"</p>")),
            ],
            error: None,
            question: None,
            card: None,
            process_run: false,
            draft: None,
            pending_attachments: Vec::new(),
            attachment_limit_mib: 10,
        }
    }

    #[test]
    fn a_page_leaves_out_the_html_and_a_server_function_does_not() {
        let data: PanelData = Ok(Some(view()));
        let page = PageCodec::encode(&data).unwrap();
        assert!(!page.contains("Answer"), "{page}");
        assert!(!page.contains("Hello"), "{page}");
        let decoded = <PageCodec as Decoder<PanelData>>::decode(&page).unwrap().unwrap().unwrap();
        assert_eq!(decoded.messages[0].content, "", "restored from the markup in the browser");
        assert_eq!(decoded.messages[0].html, None, "the reader's line has no HTML to leave out");
        assert_eq!(decoded.messages[1].html.as_deref(), Some(""), "restored from the markup in the browser");
        // The flag is down again: everything else serialises whole, on this thread too.
        let whole = serde_json::to_string(&data).unwrap();
        assert!(whole.contains(r#"<p>Answer with \"quotes\"</p>"#), "{whole}");
        assert!(whole.contains(r#""content":"Hello""#), "{whole}");
    }
}
