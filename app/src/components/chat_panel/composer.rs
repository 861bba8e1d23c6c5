//! The box a message is written in, with what it takes from a drop or a paste.

use leptos::prelude::*;

use super::attachments::Uploads;
use crate::form_action::{FormAction, PostForm};
use crate::i18n::Text;
use crate::use_lang;

#[component]
pub(super) fn Composer(
    conversation_id: String,
    send: FormAction,
    answer: FormAction,
    uploads: Uploads,
) -> impl IntoView {
    let lang = use_lang();
    // A file dropped on the composer or pasted into its box is attached as the paperclip would.
    let upload_to = StoredValue::new(format!("/ai-chat/conversations/{conversation_id}/attachments"));
    let on_drop = move |event: leptos::ev::DragEvent| {
        event.prevent_default();
        #[cfg(feature = "hydrate")]
        uploads.send_files(upload_to.get_value(), event.data_transfer().and_then(|data| data.files()));
    };
    let on_paste = move |event: leptos::ev::ClipboardEvent| {
        #[cfg(feature = "hydrate")]
        {
            let files = event.clipboard_data().and_then(|data| data.files()).filter(|files| files.length() > 0);
            if files.is_some() {
                event.prevent_default();
                uploads.send_files(upload_to.get_value(), files);
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (event, uploads, upload_to);
    };
    let textarea = NodeRef::<leptos::html::Textarea>::new();
    // Send waits for text. False until the WASM has read the box: the page's own button (and a
    // post without WASM, which the box's `required` guards) is never disabled.
    let empty = RwSignal::new(false);
    // A sent message leaves the box empty and the reader in it; a refused one keeps the text so
    // nothing is lost. Only a post made since the box was drawn counts.
    Effect::new(move |seen: Option<usize>| {
        let version = send.version().get();
        if let Some(element) = textarea.get() {
            if seen.is_some_and(|seen| seen != version) && matches!(send.value().get_untracked(), Some(Ok(()))) {
                element.set_value("");
                let _ = element.focus();
            }
            empty.set(element.value().trim().is_empty());
        }
        version
    });
    // An answered question's buttons or form go away with it: the reader goes on typing here.
    Effect::new(move |seen: Option<usize>| {
        let version = answer.version().get();
        if seen.is_some_and(|seen| seen != version) && matches!(answer.value().get_untracked(), Some(Ok(()))) {
            if let Some(element) = textarea.get_untracked() {
                let _ = element.focus();
            }
        }
        version
    });
    let input_id = format!("composer-{conversation_id}");
    view! {
        <div class="drop-zone" on:dragover=|event: leptos::ev::DragEvent| event.prevent_default() on:drop=on_drop>
            <PostForm action=send class="composer">
                <input type="hidden" name="conversation_id" value=conversation_id/>
                <label class="visually-hidden" for=input_id.clone()>{lang.t(Text::Message)}</label>
                <textarea
                    id=input_id
                    name="content"
                    node_ref=textarea
                    rows="3"
                    required
                    placeholder=lang.t(Text::MessagePlaceholder)
                    on:input=move |_| {
                        if let Some(element) = textarea.get_untracked() {
                            empty.set(element.value().trim().is_empty());
                        }
                    }
                    on:keydown=move |event| send_on_enter(event, empty, send)
                    on:paste=on_paste
                ></textarea>
                <button type="submit" class="primary" disabled=move || send.pending().get() || empty.get()>
                    {lang.t(Text::Send)}
                </button>
            </PostForm>
        </div>
    }
}

/// Enter sends, Shift+Enter breaks the line. A key pressed while an input method composes (its
/// Enter picks the characters; Chromium reports it as key code 229) never sends.
fn send_on_enter(event: leptos::ev::KeyboardEvent, empty: RwSignal<bool>, send: FormAction) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;

        if event.key() != "Enter" || event.shift_key() || event.is_composing() || event.key_code() == 229 {
            return;
        }
        event.prevent_default();
        if empty.get_untracked() || send.pending().get_untracked() {
            return;
        }
        let form = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .and_then(|element| element.closest("form").ok().flatten())
            .and_then(|form| form.dyn_into::<web_sys::HtmlFormElement>().ok());
        if let Some(form) = form {
            // As the Send button would: the form's own submit, which `PostForm` hears.
            let _ = form.request_submit();
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (event, empty, send);
}
