//! Shared UI: the HTML shell, routes, pages, server functions and view models. Compiled twice:
//! with `ssr` into the server, with `hydrate` into the WASM frontend.

pub mod api;
pub mod components;
pub mod error;
pub mod form_action;
pub mod i18n;
pub mod live_draft;
mod markup_fields;
pub mod model;
pub mod page_data;
pub mod pages;
pub mod text_json;

#[cfg(feature = "ssr")]
pub mod backend;
#[cfg(feature = "ssr")]
pub mod reader;

use std::sync::Arc;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{path, SsrMode};

use crate::components::waiting::{COUNT_SCRIPT, NOTIFY_SCRIPT};
use crate::i18n::{Lang, Text};
use crate::pages::account::AccountPage;
use crate::pages::admin::AdminPage;
use crate::pages::audit::AuditPage;
use crate::pages::chat::ChatPage;
use crate::pages::content::{ContentPage, PagesPage};
use crate::pages::inbox::InboxPage;
use crate::pages::login::LoginPage;
use crate::pages::tools::ToolsPage;
use crate::pages::webhooks::WebhooksPage;

/// The built files a page loads, named once per process by the server. Leptos'
/// `HashedStylesheet` and `HydrationScripts` would read the build's hash file from disk again for
/// every page they render.
#[derive(Debug, Clone)]
pub struct SiteFiles {
    /// URL of the stylesheet.
    pub stylesheet: Arc<str>,
    /// URL of the WASM's JS glue.
    pub script: Arc<str>,
    /// URL of the WASM.
    pub wasm: Arc<str>,
    /// The module script that loads both and hydrates the page.
    pub hydrate: Arc<str>,
}

impl SiteFiles {
    pub fn new(stylesheet: String, script: String, wasm: String) -> SiteFiles {
        // What Leptos' island script does, without the wait for an idle moment and the nested
        // islands this app does not have; then the mark that tests and scripts wait for before
        // they click (a click on markup not hydrated yet would be a plain form post).
        let hydrate = format!(
            "{PAGE_SCRIPT}{NOTIFY_SCRIPT}import({script:?}).then(mod => mod.default({{module_or_path: {wasm:?}}}).then(() => {{\
             mod.hydrate();\
             for (const island of document.querySelectorAll('leptos-island')) {{\
             const hydrate = mod[island.dataset.component];\
             if (hydrate) hydrate(island); else console.warn('no WASM for the island', island.dataset.component);\
             }}\
             document.body.setAttribute('data-hydrated', 'true');\
             {COUNT_SCRIPT}\
             }}));"
        );
        SiteFiles { stylesheet: stylesheet.into(), script: script.into(), wasm: wasm.into(), hydrate: hydrate.into() }
    }
}

/// What every page does in plain JS, before the WASM loads and without it: the theme the reader
/// chose in this browser (`data-theme` on `<html>`; none chosen, or no JS, leaves the system's,
/// `prefers-color-scheme` in the stylesheet), the choice on /account (hidden until this shows
/// it), and Escape, which closes the open `<details>` menu or message editor around the focus.
/// Here and not in the WASM, which is near its size budget; here and not in an inline script of
/// its own, which the CSP would need another nonce for. A storage that throws (blocked by the
/// browser) leaves the system's theme and must not stop the hydration after it.
const PAGE_SCRIPT: &str = "try{const root=document.documentElement,theme=localStorage.getItem('tourguide-theme');\
if(theme)root.dataset.theme=theme;\
const choice=document.querySelector('.theme-choice');\
if(choice){choice.hidden=false;\
for(const input of choice.querySelectorAll('input'))input.checked=input.value===(theme||'system');\
choice.addEventListener('change',event=>{const value=event.target.value;\
if(value==='system'){localStorage.removeItem('tourguide-theme');delete root.dataset.theme}\
else{localStorage.setItem('tourguide-theme',value);root.dataset.theme=value}})}}catch(error){}\
document.addEventListener('keydown',event=>{if(event.key!=='Escape'||!event.target.closest)return;\
const editor=event.target.closest('.edit-form');\
if(editor){editor.querySelector('.edit-actions a')?.click();return}\
const menu=event.target.closest('details[open]');\
if(menu){menu.open=false;menu.querySelector('summary')?.focus()}});";

pub fn shell(options: LeptosOptions, files: SiteFiles) -> impl IntoView {
    // Islands: only what an `#[island]` renders is hydrated, so only that writes hydration data
    // (what Leptos' `HydrationScripts` does with `islands=true`).
    if let Some(context) = Owner::current_shared_context() {
        context.set_is_hydrating(false);
    }
    let lang = initial_lang();
    // Under a content security policy, the nonce lets the script run (as Leptos' own does).
    let nonce = use_nonce();
    view! {
        <!DOCTYPE html>
        <html lang=lang.code()>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <AutoReload options/>
                <link id="leptos" rel="stylesheet" href=files.stylesheet/>
                <link rel="modulepreload" href=files.script crossorigin="anonymous"/>
                <link
                    rel="preload"
                    href=files.wasm
                    r#as="fetch"
                    r#type="application/wasm"
                    crossorigin="anonymous"
                />
                <script type="module" nonce=nonce>{files.hydrate}</script>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The reader's language: decided by the server for the request and written into `<html lang>`,
/// from where the hydrating client reads it back, so both render the same words.
pub fn initial_lang() -> Lang {
    #[cfg(feature = "ssr")]
    {
        reader::request_lang()
    }
    #[cfg(not(feature = "ssr"))]
    {
        document()
            .document_element()
            .and_then(|root| root.get_attribute("lang"))
            .and_then(|code| Lang::parse(&code))
            .unwrap_or_default()
    }
}

pub fn use_lang() -> Lang {
    use_context::<Lang>().unwrap_or_default()
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    provide_context(initial_lang());
    view! {
        <Title text="Tourguide"/>
        <Router>
            <Routes fallback=|| view! { <NotFound/> }>
                <Route path=path!("/") view=ChatPage ssr=SsrMode::Async/>
                <Route path=path!("/c/:id") view=ChatPage ssr=SsrMode::Async/>
                <Route path=path!("/login") view=LoginPage ssr=SsrMode::Async/>
                <Route path=path!("/pages") view=PagesPage ssr=SsrMode::Async/>
                <Route path=path!("/pages/:id") view=ContentPage ssr=SsrMode::Async/>
                <Route path=path!("/tools") view=ToolsPage ssr=SsrMode::Async/>
                <Route path=path!("/runs") view=InboxPage ssr=SsrMode::Async/>
                <Route path=path!("/admin") view=AdminPage ssr=SsrMode::Async/>
                <Route path=path!("/admin/webhooks") view=WebhooksPage ssr=SsrMode::Async/>
                <Route path=path!("/account") view=AccountPage ssr=SsrMode::Async/>
                <Route path=path!("/audit") view=AuditPage ssr=SsrMode::Async/>
            </Routes>
        </Router>
    }
}

#[component]
fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(axum::http::StatusCode::NOT_FOUND);
        }
    }
    let lang = use_lang();
    view! {
        <main class="not-found">
            <h1>{lang.t(Text::NotFoundTitle)}</h1>
            <a href="/">{lang.t(Text::BackToChat)}</a>
        </main>
    }
}
