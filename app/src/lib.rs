//! Shared UI: the HTML shell, routes, pages, server functions and view models. Compiled twice:
//! with `ssr` into the server, with `hydrate` into the WASM frontend.

pub mod api;
pub mod components;
pub mod error;
pub mod i18n;
pub mod live_draft;
pub mod model;
pub mod pages;

#[cfg(feature = "ssr")]
pub mod backend;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, HashedStylesheet, MetaTags, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{path, SsrMode};

use crate::i18n::{Lang, Text};
use crate::pages::account::AccountPage;
use crate::pages::admin::AdminPage;
use crate::pages::chat::ChatPage;
use crate::pages::content::{ContentPage, PagesPage};
use crate::pages::inbox::InboxPage;
use crate::pages::login::LoginPage;
use crate::pages::tools::ToolsPage;

pub fn shell(options: LeptosOptions) -> impl IntoView {
    let lang = initial_lang();
    view! {
        <!DOCTYPE html>
        <html lang=lang.code()>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <AutoReload options=options.clone()/>
                <HashedStylesheet options=options.clone() id="leptos"/>
                <HydrationScripts options/>
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
        backend::request_lang()
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
    // Tests and scripts wait for this marker before they click: a click on markup that has not
    // hydrated yet would be a plain form post.
    Effect::new(move |_| {
        if let Some(body) = document().body() {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });
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
                <Route path=path!("/account") view=AccountPage ssr=SsrMode::Async/>
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
