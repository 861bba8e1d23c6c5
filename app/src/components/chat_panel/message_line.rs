//! One line of the transcript: as one element of static HTML, or drawn in full when it has files
//! or is the line being edited.

use leptos::prelude::*;

use super::attachments::AttachmentList;
use super::editor::MessageEditor;
use crate::form_action::FormAction;
use crate::i18n::Text;
use crate::model::MessageView;

/// One line of the transcript drawn in full: what a line with files, or the line being edited,
/// needs beyond its HTML.
#[derive(Clone)]
pub(super) struct MessageLine {
    pub(super) class: String,
    pub(super) who: &'static str,
    pub(super) lang: crate::i18n::Lang,
    pub(super) conversation_id: std::sync::Arc<str>,
    /// Where its "Edit" leads without WASM; none for a line that cannot be edited.
    pub(super) edit_href: Option<String>,
    pub(super) edit: FormAction,
    pub(super) editing: RwSignal<Option<i64>>,
}

impl MessageLine {
    /// The line as one element holding its parts as HTML (see `static_message_html`).
    pub(super) fn plain(&self, message_id: i64, inner: String) -> AnyView {
        crate::components::html_line::HtmlLine { class: self.class.clone(), id: message_id, inner }.into_any()
    }

    pub(super) fn view(self, message: MessageView) -> AnyView {
        let MessageLine { class, who, lang, conversation_id, edit_href, edit, editing } = self;
        let original = message.content.clone();
        let body = match message.html {
            Some(html) => view! { <div class="body markdown" inner_html=html></div> }.into_any(),
            None => view! { <div class="body">{message.content}</div> }.into_any(),
        };
        let note = message.note.map(|note| view! { <p class="note">{note}</p> });
        let (message_id, decided_after) = (message.id, message.decided_after);
        // The link is heard by the list around it (`toggle_editor`), as in a plain line.
        let editor = edit_href.map(|href| {
            view! {
                <a class="edit-message" href=href>
                    {lang.t(Text::Edit)}
                </a>
                {move || {
                    (editing.get() == Some(message_id))
                        .then(|| {
                            view! {
                                <MessageEditor
                                    conversation_id=conversation_id.to_string()
                                    message_id
                                    content=original.clone()
                                    decided_after
                                    edit
                                    editing
                                />
                            }
                        })
                }}
            }
        });
        let files = (!message.attachments.is_empty()).then(|| view! { <AttachmentList files=message.attachments/> });
        view! {
            <li class=class id=format!("m{message_id}") data-message-id=message_id>
                <span class="who">{who}</span>
                {note}
                {body}
                {files}
                {editor}
                {message.stopped.then(|| view! { <span class="stopped-mark">{lang.t(Text::Stopped)}</span> })}
            </li>
        }
        .into_any()
    }
}

/// The parts of a message without attachments, as `MessageLine::view` writes them: who, the
/// note, the body (the stored rendering, or the text escaped), "Edit" (its address and label) for
/// a line that can be edited, the stopped mark.
pub(super) fn static_message_html(
    message: &MessageView,
    who: &str,
    stopped: &str,
    edit: Option<(&str, &str)>,
) -> String {
    use html_escape::{encode_double_quoted_attribute, encode_text};
    let body = message.html.as_deref();
    let mut html = String::with_capacity(160 + body.map_or(message.content.len(), str::len));
    html.push_str("<span class=\"who\">");
    html.push_str(&encode_text(who));
    html.push_str("</span>");
    if let Some(note) = &message.note {
        html.push_str("<p class=\"note\">");
        html.push_str(&encode_text(note));
        html.push_str("</p>");
    }
    match body {
        Some(rendered) => {
            html.push_str("<div class=\"body markdown\">");
            html.push_str(rendered);
        }
        None => {
            html.push_str("<div class=\"body\">");
            html.push_str(&encode_text(&message.content));
        }
    }
    html.push_str("</div>");
    if let Some((href, label)) = edit {
        html.push_str("<a class=\"edit-message\" href=\"");
        html.push_str(&encode_double_quoted_attribute(href));
        html.push_str("\">");
        html.push_str(&encode_text(label));
        html.push_str("</a>");
    }
    if message.stopped {
        html.push_str("<span class=\"stopped-mark\">");
        html.push_str(&encode_text(stopped));
        html.push_str("</span>");
    }
    html
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MessageRole;

    #[test]
    fn a_static_line_escapes_the_readers_text_and_keeps_the_stored_rendering() {
        let mut own = MessageView::line(7, MessageRole::User, "<b>bold</b> & <script>", None);
        own.note = Some("edited <i>".into());
        assert_eq!(
            static_message_html(&own, "You", "Stopped", None),
            "<span class=\"who\">You</span><p class=\"note\">edited &lt;i&gt;</p>\
             <div class=\"body\">&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;</div>"
        );
        let mut editable = MessageView::line(9, MessageRole::User, "plain", None);
        editable.editable = true;
        assert_eq!(
            static_message_html(&editable, "You", "Stopped", Some(("/c/x?q=\"a\"&edit=9#m9", "Edit <me>"))),
            "<span class=\"who\">You</span><div class=\"body\">plain</div>\
             <a class=\"edit-message\" href=\"/c/x?q=&quot;a&quot;&amp;edit=9#m9\">Edit &lt;me&gt;</a>"
        );
        let mut reply = MessageView::line(8, MessageRole::Assistant, "", Some("<p>Hi <em>there</em></p>"));
        reply.stopped = true;
        assert_eq!(
            static_message_html(&reply, "Assistant & co", "Stopped", None),
            "<span class=\"who\">Assistant &amp; co</span>\
             <div class=\"body markdown\"><p>Hi <em>there</em></p></div><span class=\"stopped-mark\">Stopped</span>"
        );
    }
}
