//! The top bar of every signed-in page: navigation, the model that answers (labelled when it is
//! the demo), the language, and sign-out. Not an island: its forms are plain posts, answered with
//! a redirect (back to the page, now in the chosen language; to the sign-in page). The link to
//! the runs inbox shows how many runs wait for the reader, kept live by the page's script
//! (`components::waiting`).

use leptos::prelude::*;

use leptos_meta::Title;

use crate::api::{session_info, waiting, Logout, SetLanguage};
use crate::components::waiting::{waiting_title, WaitingLink};
use crate::i18n::{Lang, Text};
use crate::use_lang;

#[component]
pub fn Header() -> impl IntoView {
    let lang = use_lang();
    let session = Resource::new(|| (), |_| session_info());
    let waiting = Resource::new(|| (), |_| waiting());
    let logout = ServerAction::<Logout>::new();
    let set_language = ServerAction::<SetLanguage>::new();
    view! {
        <header class="topbar">
            <a class="brand" href="/">{lang.t(Text::AppName)}</a>
            <nav class="main-nav" aria-label=lang.t(Text::Navigation)>
                <a href="/">{lang.t(Text::NavChat)}</a>
                <a href="/pages">{lang.t(Text::NavPages)}</a>
                <Transition fallback=move || view! { <a href="/runs">{lang.t(Text::NavInbox)}</a> }>
                    {move || Suspend::new(async move {
                        let waiting = waiting.await.unwrap_or_default();
                        let title = waiting_title(waiting.count, lang);
                        let title = (waiting.count > 0).then(|| view! { <Title text=title/> });
                        view! { {title} <WaitingLink waiting/> }
                    })}
                </Transition>
                <a href="/tools">{lang.t(Text::NavTools)}</a>
                <a href="/audit">{lang.t(Text::NavAudit)}</a>
            </nav>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    session.await.ok().map(|session| {
                        view! {
                            <span class="model" class:demo=session.model_is_demo title=lang.t(Text::ModelTitle)>
                                {session.model_label.clone()}
                                {session.model_is_demo.then(|| view! { <span class="badge">{lang.t(Text::Demo)}</span> })}
                            </span>
                            {session.admin.then(|| view! { <a class="admin-link" href="/admin">{lang.t(Text::NavAdmin)}</a> })}
                            <a class="user" href="/account" title=lang.t(Text::SessionsTitle)>{session.username.clone()}</a>
                        }
                    })
                })}
            </Transition>
            <ActionForm action=set_language attr:class="language">
                <span class="visually-hidden">{lang.t(Text::Language)}</span>
                {Lang::ALL
                    .into_iter()
                    .map(|option| {
                        view! {
                            <button
                                type="submit"
                                class="link"
                                name="language"
                                value=option.code()
                                lang=option.code()
                                aria-pressed=if option == lang { "true" } else { "false" }
                                title=option.name()
                            >
                                {option.code().to_uppercase()}
                            </button>
                        }
                    })
                    .collect_view()}
            </ActionForm>
            <ActionForm action=logout attr:class="logout">
                <button type="submit" class="link">{lang.t(Text::SignOut)}</button>
            </ActionForm>
        </header>
    }
}
