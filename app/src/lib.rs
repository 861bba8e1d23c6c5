//! Shared UI: the HTML shell, routes, pages, server functions and view models. Compiled twice:
//! with `ssr` into the server, with `hydrate` into the WASM frontend.

pub mod api;
pub mod error;
pub mod input_form;
pub mod model;
pub mod pages;

#[cfg(feature = "ssr")]
pub mod backend;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{path, SsrMode};

use crate::pages::chat::ChatPage;
use crate::pages::login::LoginPage;

pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Tests and scripts wait for this marker before they click: a click on markup that has not
    // hydrated yet would be a plain form post.
    Effect::new(move |_| {
        if let Some(body) = document().body() {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });
    view! {
        <Stylesheet id="leptos" href="/pkg/tourguide.css"/>
        <Title text="Tourguide"/>
        <Router>
            <Routes fallback=|| view! { <NotFound/> }>
                <Route path=path!("/") view=ChatPage ssr=SsrMode::Async/>
                <Route path=path!("/c/:id") view=ChatPage ssr=SsrMode::Async/>
                <Route path=path!("/login") view=LoginPage ssr=SsrMode::Async/>
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
    view! {
        <main class="not-found">
            <h1>"Page not found"</h1>
            <a href="/">"Back to the chat"</a>
        </main>
    }
}
