//! Being told that runs wait: the header's link to the runs inbox with how many wait for the
//! reader, the count in the page's title, and browser notifications for those who asked for them.
//! The server renders the count with the page; the island keeps it up to date from the reader's
//! event stream (`/events/user`), and tells the page's other islands (the inbox) that the runs
//! changed by a window event, [`WAITING_EVENT`], so a page holds one stream, not one per island.

use leptos::prelude::*;

use crate::i18n::{Lang, Text};
use crate::model::WaitingView;

/// Dispatched on `window` when the runs that wait for the reader changed.
pub const WAITING_EVENT: &str = "tourguide-waiting";
/// Where this browser remembers that its reader wants notifications ("on").
#[cfg(feature = "hydrate")]
const NOTIFY_KEY: &str = "tourguide.notify";

/// "2 runs wait for you", for the count's accessible label.
pub fn waiting_label(count: u32, lang: Lang) -> String {
    if count == 1 {
        lang.t(Text::WaitingOne).to_string()
    } else {
        lang.t(Text::WaitingMany).replace("{}", &count.to_string())
    }
}

/// The page's title with the count in front while anything waits: "(2) Tourguide".
pub fn waiting_title(count: u32, lang: Lang) -> String {
    match count {
        0 => lang.t(Text::AppName).to_string(),
        count => format!("({count}) {}", lang.t(Text::AppName)),
    }
}

/// The header's link to the runs inbox, with the count while anything waits.
#[island]
pub fn WaitingLink(waiting: WaitingView) -> impl IntoView {
    let lang = crate::initial_lang();
    let count = RwSignal::new(waiting.count);
    #[cfg(feature = "hydrate")]
    listen(count, waiting.mark, lang);
    #[cfg(not(feature = "hydrate"))]
    let _ = waiting.mark;
    view! {
        <a href="/runs" class="waiting-link">
            {lang.t(Text::NavInbox)}
            {move || {
                let count = count.get();
                (count > 0)
                    .then(|| {
                        view! {
                            " "
                            <span class="count-badge" aria-hidden="true">{count}</span>
                            <span class="visually-hidden">{format!("({})", waiting_label(count, lang))}</span>
                        }
                    })
            }}
        </a>
    }
}

/// Opens the reader's event stream: each "waiting" sets the count and the title, tells the
/// page's other islands when the runs changed, and notifies when the count went up.
#[cfg(feature = "hydrate")]
fn listen(count: RwSignal<u32>, mark: String, lang: Lang) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    Effect::new(move |_| document().set_title(&waiting_title(count.get(), lang)));
    let Ok(source) = web_sys::EventSource::new("/events/user") else { return };
    let mark = StoredValue::new(mark);
    let on_waiting = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
        let Some(data) = event.data().as_string() else { return };
        let Ok(now) = serde_json::from_str::<WaitingView>(&data) else { return };
        let before = count.get_untracked();
        count.set(now.count);
        if now.mark != mark.get_value() {
            mark.set_value(now.mark.clone());
            if let Ok(event) = web_sys::Event::new(WAITING_EVENT) {
                let _ = window().dispatch_event(&event);
            }
        }
        if now.count > before {
            if let Some(latest) = now.latest {
                notify(&latest, lang);
            }
        }
    });
    let _ = source.add_event_listener_with_callback("waiting", on_waiting.as_ref().unchecked_ref());
    // The callback and the stream live as long as the page.
    on_waiting.forget();
    std::mem::forget(source);
}

#[cfg(feature = "hydrate")]
fn notifications_on() -> bool {
    let stored = window().local_storage().ok().flatten().and_then(|storage| storage.get_item(NOTIFY_KEY).ok());
    stored.flatten().as_deref() == Some("on")
}

#[cfg(feature = "hydrate")]
fn remember_notifications(on: bool) {
    if let Some(storage) = window().local_storage().ok().flatten() {
        let _ = if on { storage.set_item(NOTIFY_KEY, "on") } else { storage.remove_item(NOTIFY_KEY) };
    }
}

/// "Tourguide: a run waits for your approval — <title>"; a click brings the window forward on
/// the run's conversation. Tabs of one browser name the run alike, so it shows once.
#[cfg(feature = "hydrate")]
fn notify(latest: &crate::model::WaitingRunView, lang: Lang) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;
    use web_sys::{Notification, NotificationOptions, NotificationPermission};

    if !notifications_on() || Notification::permission() != NotificationPermission::Granted {
        return;
    }
    let what = if latest.approval { Text::NotifyApproval } else { Text::NotifyAnswer };
    let options = NotificationOptions::new();
    options.set_tag(&latest.run_id);
    let Ok(notification) = Notification::new_with_options(&format!("{} — {}", lang.t(what), latest.title), &options)
    else {
        return;
    };
    let href = format!("/c/{}", latest.conversation_id);
    let on_click = Closure::once_into_js(move || {
        let window = window();
        let _ = window.focus();
        let _ = window.location().set_href(&href);
    });
    notification.set_onclick(Some(on_click.unchecked_ref()));
}

/// Notifications in this browser, on or off: asks the browser's permission only when clicked,
/// and remembers the choice in this browser.
#[island]
pub fn NotifyToggle() -> impl IntoView {
    let lang = crate::initial_lang();
    let on = RwSignal::new(false);
    let refused = RwSignal::new(false);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| on.set(notifications_on()));
    let toggle = move |_| {
        refused.set(false);
        #[cfg(feature = "hydrate")]
        {
            if on.get_untracked() {
                remember_notifications(false);
                on.set(false);
            } else {
                ask_permission(on, refused);
            }
        }
    };
    view! {
        <section class="notify">
            <h2>{lang.t(Text::NotifyHeading)}</h2>
            <p class="lead">{lang.t(Text::NotifyLead)}</p>
            <button
                type="button"
                class="secondary notify-toggle"
                aria-pressed=move || if on.get() { "true" } else { "false" }
                on:click=toggle
            >
                {move || lang.t(if on.get() { Text::NotifyOff } else { Text::NotifyOn })}
            </button>
            {move || refused.get().then(|| view! { <p class="error" role="alert">{lang.t(Text::NotifyRefused)}</p> })}
        </section>
    }
}

#[cfg(feature = "hydrate")]
fn ask_permission(on: RwSignal<bool>, refused: RwSignal<bool>) {
    use web_sys::{Notification, NotificationPermission};

    let granted = move |granted: bool| {
        remember_notifications(granted);
        on.set(granted);
        refused.set(!granted);
    };
    match Notification::permission() {
        NotificationPermission::Granted => granted(true),
        NotificationPermission::Denied => granted(false),
        _ => {
            let Ok(asked) = Notification::request_permission() else { return granted(false) };
            leptos::task::spawn_local(async move {
                let answer = wasm_bindgen_futures::JsFuture::from(asked).await;
                granted(answer.ok().and_then(|answer| answer.as_string()).as_deref() == Some("granted"));
            });
        }
    }
}
