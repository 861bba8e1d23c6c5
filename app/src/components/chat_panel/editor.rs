//! The editor of the reader's one message being edited, and the links that open and close it.

use leptos::prelude::*;

use super::place::PanelPlace;
use crate::form_action::{FormAction, PostForm};
use crate::i18n::Text;
use crate::use_lang;

/// "Edit" under one of the reader's lines opens its editor, or closes it when open. One listener
/// on the list hears them all: most lines are HTML with no handlers of their own.
pub(super) fn toggle_editor(event: leptos::ev::MouseEvent, editing: RwSignal<Option<i64>>) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let closest = |element: &web_sys::Element, selector: &str| element.closest(selector).ok().flatten();
        let Some(link) = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .and_then(|target| closest(&target, "a.edit-message"))
        else {
            return;
        };
        let Some(message_id) = closest(&link, "li[data-message-id]")
            .and_then(|line| line.get_attribute("data-message-id"))
            .and_then(|id| id.parse::<i64>().ok())
        else {
            return;
        };
        event.prevent_default();
        editing.update(|open| *open = (*open != Some(message_id)).then_some(message_id));
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (event, editing);
}

/// "Edit" on one of the reader's messages: the text in a box, sent again as the new turn from
/// there. A plain form, so it works before (and without) the WASM.
#[component]
pub(super) fn MessageEditor(
    conversation_id: String,
    message_id: i64,
    content: String,
    decided_after: bool,
    edit: FormAction,
    editing: RwSignal<Option<i64>>,
) -> impl IntoView {
    let lang = use_lang();
    view! {
            <PostForm action=edit class="edit-form">
                <input type="hidden" name="conversation_id" value=conversation_id/>
                <input type="hidden" name="message_id" value=message_id.to_string()/>
                <label class="visually-hidden" for=format!("edit-{message_id}")>{lang.t(Text::Edit)}</label>
                <textarea id=format!("edit-{message_id}") name="content" rows="3" required autofocus>{content}</textarea>
                <p class="hint">{lang.t(Text::EditHint)}</p>
                {decided_after.then(|| view! { <p class="hint warning">{lang.t(Text::EditKeepsChanges)}</p> })}
                <div class="edit-actions">
                    <button type="submit" class="primary" disabled=move || edit.pending().get()>
                        {lang.t(Text::EditSubmit)}
                    </button>
                    <a
                        href=PanelPlace::here().edit_href(None)
                        on:click=move |event| {
                            event.prevent_default();
                            editing.set(None);
                        }
                    >
                        {lang.t(Text::EditCancel)}
                    </a>
                </div>
            </PostForm>
    }
}
