//! Files: those of a message, and those attached for the next one with the uploads that add them.

use leptos::prelude::*;

use crate::form_action::{FormAction, PostForm};
use crate::i18n::Text;
use crate::model::AttachmentView;
use crate::use_lang;

fn size_label(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{} KiB", bytes / 1024),
        // In tenths, rounded, without formatting a float: that alone brought Rust's float
        // formatting (`flt2dec`) into the WASM.
        _ => {
            let tenths = (bytes * 10 + 524_288) / 1_048_576;
            format!("{}.{} MiB", tenths / 10, tenths % 10)
        }
    }
}

/// The files of a message, each a download of what was uploaded.
#[component]
pub(super) fn AttachmentList(files: Vec<AttachmentView>) -> impl IntoView {
    let lang = use_lang();
    view! {
        <ul class="attachments">
            {files
                .into_iter()
                .map(|file| {
                    view! {
                        <li class="attachment">
                            <a href=format!("/ai-chat/attachments/{}", file.id) download>{file.file_name}</a>
                            <span class="meta">{format!(" {} · {}", file.kind.to_ascii_uppercase(), size_label(file.size))}</span>
                            {file.truncated.then(|| view! { <span class="meta">{format!(" · {}", lang.t(Text::TextCut))}</span> })}
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
}

/// Files for the next message: the ones attached so far, as chips with a remove button, and a
/// multipart form for another. Without the WASM it is a plain form (the server sends the page back,
/// or a page with the refusal); with it a chosen file goes by `fetch` at once, its own button gone,
/// and a refusal shows here, beside the form. The paperclip is the file input's label, so it opens
/// the chooser either way.
#[component]
pub(super) fn AttachBar(
    conversation_id: String,
    pending: Vec<AttachmentView>,
    limit_mib: u32,
    remove: FormAction,
    uploads: Uploads,
) -> impl IntoView {
    let lang = use_lang();
    let Uploads { refused, sending, .. } = uploads;
    let on_submit = move |event: leptos::ev::SubmitEvent| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            event.prevent_default();
            if let Some(form) = event.target().and_then(|target| target.dyn_into::<web_sys::HtmlFormElement>().ok()) {
                uploads.send_form(form);
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (event, uploads);
    };
    let on_change = move |event: leptos::ev::Event| {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            let form = event
                .target()
                .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
                .and_then(|input| input.closest("form").ok().flatten())
                .and_then(|form| form.dyn_into::<web_sys::HtmlFormElement>().ok());
            if let Some(form) = form {
                uploads.send_form(form);
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = event;
    };
    let input_id = format!("attach-{conversation_id}");
    let listed = (!pending.is_empty()).then(|| {
        let conversation_id = conversation_id.clone();
        view! {
            <div class="pending-attachments">
                <span class="hint">{lang.t(Text::AttachedForNext)}</span>
                <ul class="attachments chips">
                    {pending
                        .into_iter()
                        .map(|file| {
                            let owner = conversation_id.clone();
                            let remove_label = format!("{} {}", lang.t(Text::Remove), file.file_name);
                            view! {
                                <li class="attachment chip">
                                    <span class="name">{file.file_name}</span>
                                    <span class="meta">{size_label(file.size)}</span>
                                    <PostForm action=remove class="remove-attachment">
                                        <input type="hidden" name="conversation_id" value=owner/>
                                        <input type="hidden" name="attachment_id" value=file.id.to_string()/>
                                        <button type="submit" aria-label=remove_label.clone() title=remove_label>
                                            "×"
                                        </button>
                                    </PostForm>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            </div>
        }
    });
    view! {
        <div class="attach-bar">
            {listed}
            <form
                class="attach-form"
                method="post"
                enctype="multipart/form-data"
                action=format!("/ai-chat/conversations/{conversation_id}/attachments")
                on:submit=on_submit
            >
                <input
                    id=input_id.clone()
                    class="visually-hidden"
                    type="file"
                    name="file"
                    required
                    accept=".pdf,.docx,.xlsx,.txt,.md,.markdown"
                    on:change=on_change
                />
                <label for=input_id class="attach-button" class:sending=move || sending.get()>
                    <svg aria-hidden="true" viewBox="0 0 24 24" width="18" height="18">
                        <path d="M21 11.5l-8.5 8.5a5 5 0 0 1-7-7l9-9a3.5 3.5 0 0 1 5 5l-9 9a2 2 0 0 1-3-3l8-8"></path>
                    </svg>
                    <span>{lang.t(Text::Attach)}</span>
                </label>
                <span class="hint">{format!("{} {limit_mib} MiB", lang.t(Text::AttachHint))}</span>
                <button type="submit" class="attach-submit" disabled=move || sending.get()>{lang.t(Text::Attach)}</button>
            </form>
            {move || refused.get().map(|sentence| view! { <p class="error" role="alert">{sentence}</p> })}
        </div>
    }
}

/// The state of uploads in one panel, shared by the attach form and the composer (a file dropped
/// or pasted there): the last refusal, whether one is on its way, and the tick that reloads the
/// conversation (which lists a stored file).
#[derive(Clone, Copy)]
// The server draws the forms but never sends a file.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
pub(super) struct Uploads {
    pub(super) refused: RwSignal<Option<String>>,
    pub(super) sending: RwSignal<bool>,
    pub(super) reload: RwSignal<u64>,
    pub(super) lang: crate::i18n::Lang,
}

#[cfg(feature = "hydrate")]
impl Uploads {
    /// Sends the form's file as the plain form would; the form is emptied once it is stored.
    fn send_form(self, form: web_sys::HtmlFormElement) {
        let Ok(data) = web_sys::FormData::new_with_form(&form) else { return };
        self.send(form.action(), vec![data], Some(form));
    }

    /// Sends dropped or pasted files, one request each, to the route the plain form posts to.
    pub(super) fn send_files(self, action: String, files: Option<web_sys::FileList>) {
        let parts: Vec<_> = (0..files.as_ref().map_or(0, |files| files.length()))
            .filter_map(|index| files.as_ref()?.get(index))
            .filter_map(|file| {
                let data = web_sys::FormData::new().ok()?;
                data.append_with_blob_and_filename("file", &file, &file.name()).ok()?;
                Some(data)
            })
            .collect();
        if !parts.is_empty() {
            self.send(action, parts, None);
        }
    }

    /// Posts each part in turn asking for JSON back: every stored file reloads the conversation, a
    /// refused one shows the server's sentence and stops the rest.
    fn send(self, action: String, parts: Vec<web_sys::FormData>, form: Option<web_sys::HtmlFormElement>) {
        self.sending.set(true);
        leptos::task::spawn_local(async move {
            let mut refusal = None;
            for data in parts {
                if let Err(sentence) = post_file(&action, &data, self.lang).await {
                    refusal = Some(sentence);
                    break;
                }
                self.reload.update(|tick| *tick += 1);
            }
            self.sending.set(false);
            if let (None, Some(form)) = (&refusal, form) {
                form.reset();
            }
            self.refused.set(refusal);
        });
    }
}

/// One file to the upload route: `Ok` once stored, else the sentence to show.
#[cfg(feature = "hydrate")]
async fn post_file(action: &str, data: &web_sys::FormData, lang: crate::i18n::Lang) -> Result<(), String> {
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;

    let transport = || lang.t(Text::ErrorTransport).to_string();
    let request = (|| {
        let headers = web_sys::Headers::new().ok()?;
        headers.set("accept", "application/json").ok()?;
        let init = web_sys::RequestInit::new();
        init.set_method("POST");
        init.set_body(data);
        init.set_headers(&headers);
        web_sys::Request::new_with_str_and_init(action, &init).ok()
    })();
    let window = web_sys::window().ok_or_else(transport)?;
    let response = JsFuture::from(window.fetch_with_request(&request.ok_or_else(transport)?))
        .await
        .ok()
        .and_then(|response| response.dyn_into::<web_sys::Response>().ok())
        .ok_or_else(transport)?;
    if response.ok() {
        return Ok(());
    }
    let body = match response.text() {
        Ok(promise) => JsFuture::from(promise).await.ok().and_then(|text| text.as_string()),
        Err(_) => None,
    };
    let sentence = body
        .and_then(|body| serde_json::from_str::<serde_json::Value>(&body).ok())
        .and_then(|value| value["error"].as_str().map(str::to_string));
    Err(sentence.unwrap_or_else(transport))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_the_unit_that_fits() {
        assert_eq!(size_label(1023), "1023 B");
        assert_eq!(size_label(1024), "1 KiB");
        assert_eq!(size_label(1_048_575), "1023 KiB");
        assert_eq!(size_label(1_048_576), "1.0 MiB");
        assert_eq!(size_label(1_572_864), "1.5 MiB");
        assert_eq!(size_label(10 * 1_048_576 - 1), "10.0 MiB");
        assert_eq!(size_label(2_621_440 - 52_429), "2.4 MiB");
    }
}
