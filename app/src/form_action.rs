//! A form an island posts to a server function: the browser's own form data, sent as the plain
//! form would send it (URL-encoded, the pressed button's name and value included), and the
//! function's answer read back as a result.
//!
//! Leptos' `ActionForm` with a `ServerAction` does the same by way of the function's typed
//! arguments: it decodes the form into them and encodes them again (`serde_qs`), and carries a
//! typed client for each function. Per function that was code in the WASM: for the twelve
//! functions the islands post to, 35 KiB of the bundle (brotli, 265 → 230 KiB). The server decodes
//! what arrives in one place either way, the function's own decoding, the same one a post without
//! WASM meets.

use leptos::prelude::*;
#[cfg(not(feature = "hydrate"))]
use leptos::server::ServerActionError;
#[cfg(not(feature = "hydrate"))]
use leptos::server_fn::error::ServerFnUrlError;
use leptos::server_fn::ServerFn;

use crate::error::AppError;

/// The state of one form's posts: how many have finished, the last one's result, and whether
/// one is under way. Every function these forms post to answers with nothing but success or an
/// [`AppError`] (or sends the browser elsewhere).
#[derive(Clone, Copy)]
pub struct FormAction {
    url: &'static str,
    version: RwSignal<usize>,
    value: RwSignal<Option<Result<(), AppError>>>,
    pending: RwSignal<bool>,
    changes: RwSignal<usize>,
}

impl FormAction {
    /// A form for the server function `F`.
    pub fn new<F: ServerFn>() -> FormAction {
        FormAction {
            url: F::url(),
            version: RwSignal::new(0),
            value: RwSignal::new(failed_post(F::PATH)),
            pending: RwSignal::new(false),
            changes: RwSignal::new(0),
        }
    }

    /// Counts the posts that finished and may have changed something: all but those refused
    /// field by field (`AppError::InvalidEdit`, `AppError::InvalidAnswer`), after which what the reader typed stays in the
    /// form beside the sentences, to be corrected, instead of the form being drawn again.
    pub fn changes(&self) -> ReadSignal<usize> {
        self.changes.read_only()
    }

    /// Counts the posts that have finished, successful or not.
    pub fn version(&self) -> ReadSignal<usize> {
        self.version.read_only()
    }

    /// The result of the last post that finished.
    pub fn value(&self) -> ReadSignal<Option<Result<(), AppError>>> {
        self.value.read_only()
    }

    /// Whether a post is under way.
    pub fn pending(&self) -> ReadSignal<bool> {
        self.pending.read_only()
    }

    #[cfg(feature = "hydrate")]
    fn submit(self, event: leptos::ev::SubmitEvent) {
        use wasm_bindgen::JsCast;

        let Some(form) = event.target().and_then(|target| target.dyn_into::<web_sys::HtmlFormElement>().ok()) else {
            return;
        };
        let body = (|| {
            let data = web_sys::FormData::new_with_form(&form).ok()?;
            let pressed = event.submitter().and_then(|button| button.dyn_into::<web_sys::HtmlButtonElement>().ok());
            if let Some(button) = pressed.filter(|button| !button.name().is_empty()) {
                data.append_with_str(&button.name(), &button.value()).ok()?;
            }
            web_sys::UrlSearchParams::new_with_str_sequence_sequence(&data).ok()
        })();
        // Without a body the form goes as a plain post, which the server answers as well.
        let Some(body) = body else { return };
        event.prevent_default();
        self.pending.set(true);
        leptos::task::spawn_local(async move {
            let result = post(self.url, body).await;
            let refused_per_field = matches!(result, Err(AppError::InvalidEdit(_) | AppError::InvalidAnswer(_)));
            self.value.set(Some(result));
            self.version.update(|version| *version += 1);
            if !refused_per_field {
                self.changes.update(|changes| *changes += 1);
            }
            self.pending.set(false);
        });
    }
}

/// After a post without WASM that failed, the page it comes back to says why: the function's
/// error travels in the address (`__path`, `__err`), as with Leptos' own `ServerAction`. The
/// server's router reads it from the request; in the browser an island has no router, so it reads
/// the address itself, and both render the same refusal.
fn failed_post(path: &str) -> Option<Result<(), AppError>> {
    #[cfg(feature = "hydrate")]
    let (error, from) = {
        let query = web_sys::UrlSearchParams::new_with_str(&window().location().search().ok()?).ok()?;
        (query.get("__err")?, query.get("__path")?)
    };
    #[cfg(not(feature = "hydrate"))]
    let (error, from) = {
        let error = use_context::<ServerActionError>()?;
        (error.err().to_string(), error.path().to_string())
    };
    (from == path).then(|| Err(url_error(&error)))
}

/// The error in `__err`: its JSON in URL-safe base64, as the framework writes it.
#[cfg(not(feature = "hydrate"))]
fn url_error(encoded: &str) -> AppError {
    ServerFnUrlError::<AppError>::decode_err(encoded)
}

/// The same, read with the browser's own base64 (`atob`): the framework's decoder brought a
/// base64 crate into the WASM for this one use (about 1 KiB). Anything unreadable is a
/// transport error, as there.
#[cfg(feature = "hydrate")]
fn url_error(encoded: &str) -> AppError {
    let standard: String = encoded
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    // `atob` gives each byte as one character below 256.
    let bytes = window().atob(&standard).ok().map(|text| text.chars().map(|c| c as u8).collect::<Vec<u8>>());
    bytes
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| serde_json::from_str::<AppError>(&text).ok())
        .unwrap_or(AppError::Transport)
}

/// Posts `body` to the function at `url` and reads its answer: success, its error, or a move to
/// the page it names.
#[cfg(feature = "hydrate")]
async fn post(url: &str, body: web_sys::UrlSearchParams) -> Result<(), AppError> {
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;

    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(&body);
    let headers = web_sys::Headers::new().map_err(|_| AppError::Transport)?;
    headers.set("accept", "application/json").map_err(|_| AppError::Transport)?;
    init.set_headers(&headers);
    let response = JsFuture::from(window().fetch_with_str_and_init(url, &init))
        .await
        .ok()
        .and_then(|response| response.dyn_into::<web_sys::Response>().ok())
        .ok_or(AppError::Transport)?;
    let headers = response.headers();
    // A function that sends the reader elsewhere says so in a header of its own (not a
    // redirect the fetch would follow).
    if headers.has("serverfnredirect").unwrap_or(false) {
        if let Ok(Some(location)) = headers.get("location") {
            let _ = window().location().set_href(&location);
        }
    }
    if response.ok() {
        return Ok(());
    }
    let text = match response.text() {
        Ok(text) => JsFuture::from(text).await.ok().and_then(|text| text.as_string()),
        Err(_) => None,
    };
    Err(text.and_then(|text| serde_json::from_str::<AppError>(&text).ok()).unwrap_or(AppError::Transport))
}

/// A form that posts to `action`'s function: a plain form before (and without) the WASM.
#[component]
pub fn PostForm(action: FormAction, class: &'static str, children: Children) -> impl IntoView {
    view! {
        <form
            action=action.url
            method="post"
            class=class
            on:submit=move |event| {
                #[cfg(feature = "hydrate")]
                action.submit(event);
                #[cfg(not(feature = "hydrate"))]
                let _ = event;
            }
        >
            {children()}
        </form>
    }
}
