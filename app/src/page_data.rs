//! The conversation as a server-rendered page hands it to the hydrating client: without the HTML
//! of its assistant lines and the text of the reader's, which the page's markup already holds.
//! They were most of the data of a long conversation, escaped twice (JSON, then a script's
//! string), and all the page carried twice; the client reads them back from the markup instead.
//!
//! The list of conversations beside it is written as HTML too, and its data is left out whole:
//! the client reads each entry back from its link ([`ListCodec`]).
//!
//! Server functions send the conversation and the list whole: only [`PageCodec`] and
//! [`ListCodec`], the codecs of the two resources, leave them out.

use leptos::server::codee::{Decoder, Encoder};

use crate::error::AppError;
use crate::markup_fields;
use crate::model::{ConversationSummary, ConversationView};

/// What the panel's resource holds.
pub type PanelData = Result<Option<ConversationView>, AppError>;

/// What the list's resource holds.
pub type ListData = Result<Vec<ConversationSummary>, AppError>;

/// The codec of the panel's resource: JSON, an assistant line's HTML and a reader's line's text
/// left out on the server and taken from the page's markup in the browser.
pub struct PageCodec;

impl Encoder<PanelData> for PageCodec {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &PanelData) -> Result<String, serde_json::Error> {
        markup_fields::left_out(|| serde_json::to_string(value))
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

/// A list in a page's data: "read me from the markup". Not a list's JSON, which is an object.
const LIST_IN_MARKUP: &str = "\"markup\"";

/// The codec of the list's resource: a list is all in its markup (a hundred entries were a tenth
/// of a long conversation's page, as data beside the same in HTML), an error is sent as JSON.
pub struct ListCodec;

impl Encoder<ListData> for ListCodec {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &ListData) -> Result<String, serde_json::Error> {
        match value {
            Ok(_) => Ok(LIST_IN_MARKUP.to_string()),
            Err(_) => serde_json::to_string(value),
        }
    }
}

impl Decoder<ListData> for ListCodec {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(encoded: &str) -> Result<ListData, serde_json::Error> {
        if encoded != LIST_IN_MARKUP {
            return serde_json::from_str(encoded);
        }
        #[cfg(feature = "hydrate")]
        return Ok(Ok(list_from_markup()));
        // Only a browser decodes a page's data.
        #[cfg(not(feature = "hydrate"))]
        Ok(Ok(Vec::new()))
    }
}

/// The entries of the list the server rendered (`crate::pages::chat`): each link's address ends in
/// the conversation's id, its `.title` holds the title as text and its `.status` names the status
/// in a class. A page without entries has no list: an empty one.
#[cfg(feature = "hydrate")]
fn list_from_markup() -> Vec<ConversationSummary> {
    use crate::model::ConversationStatus;
    use wasm_bindgen::JsCast;
    let document = leptos::prelude::document();
    let Ok(links) = document.query_selector_all(".conversation-list > li > a") else {
        return Vec::new();
    };
    let mut list = Vec::with_capacity(links.length() as usize);
    for index in 0..links.length() {
        let Some(link) = links.item(index).and_then(|node| node.dyn_into::<web_sys::Element>().ok()) else {
            continue;
        };
        let part = |selector: &str| link.query_selector(selector).ok().flatten();
        let id = link.get_attribute("href").and_then(|href| href.strip_prefix("/c/").map(str::to_string));
        let title = part(".title").and_then(|title| title.text_content());
        let status = part(".status").and_then(|status| {
            let class = status.get_attribute("class")?;
            class.split(' ').find_map(|class| class.strip_prefix("status-").and_then(ConversationStatus::parse))
        });
        if let (Some(id), Some(title), Some(status)) = (id, title, status) {
            list.push(ConversationSummary { id, title, status });
        }
    }
    list
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

    #[test]
    fn a_page_leaves_the_list_to_its_markup_but_not_an_error() {
        use crate::model::ConversationStatus;
        let list: ListData =
            Ok(vec![ConversationSummary { id: "c1".into(), title: "Plans".into(), status: ConversationStatus::Idle }]);
        let page = ListCodec::encode(&list).unwrap();
        assert!(!page.contains("Plans") && !page.contains("c1"), "{page}");
        // Its server function still sends the list.
        assert!(serde_json::to_string(&list).unwrap().contains("Plans"));
        let error: ListData = Err(AppError::Unauthenticated);
        let encoded = ListCodec::encode(&error).unwrap();
        assert_eq!(<ListCodec as Decoder<ListData>>::decode(&encoded).unwrap(), error);
    }
}
