//! The limit reference for the WASM bundle (`bench`'s "WASM size"): the smallest Leptos app that
//! hydrates with the kinds of work Tourguide's pages do, built as the frontend is. Two routes and a
//! link between them, a title, a list loaded through a server function (JSON) and shown with
//! `For`, a form posted through another (`ActionForm`), and an event stream whose messages load
//! the list again. Only its size is measured: it is never served.

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, Title};
use leptos_router::components::{Route, Router, Routes, A};
use leptos_router::path;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub id: i64,
    pub text: String,
    pub done: bool,
}

#[server(endpoint = "items")]
pub async fn items() -> Result<Vec<Item>, ServerFnError> {
    Ok(Vec::new())
}

#[server(endpoint = "add")]
pub async fn add(text: String) -> Result<(), ServerFnError> {
    let _ = text;
    Ok(())
}

#[component]
fn List() -> impl IntoView {
    let add = ServerAction::<Add>::new();
    let changed = RwSignal::new(0_u32);
    let items = Resource::new(move || (changed.get(), add.version().get()), |_| items());
    Effect::new(move |_| {
        if let Ok(events) = web_sys::EventSource::new("/events") {
            let on_message = wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::MessageEvent)>::new(
                move |_: web_sys::MessageEvent| changed.update(|n| *n += 1),
            );
            events.set_onmessage(Some(wasm_bindgen::JsCast::unchecked_ref(on_message.as_ref())));
            on_message.forget();
        }
    });
    view! {
        <Title text="List"/>
        <ActionForm action=add>
            <input name="text" required/>
            <button>"Add"</button>
        </ActionForm>
        <Suspense fallback=|| view! { <p>"Loading"</p> }>
            <ul>
                {move || items.get().map(|items| match items {
                    Ok(items) => view! {
                        <For each=move || items.clone() key=|item| item.id let:item>
                            <li class:done=item.done>{item.text}</li>
                        </For>
                    }.into_any(),
                    Err(error) => view! { <li class="error">{error.to_string()}</li> }.into_any(),
                })}
            </ul>
        </Suspense>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Router>
            <nav><A href="/">"List"</A><A href="/about">"About"</A></nav>
            <main>
                <Routes fallback=|| "Not found">
                    <Route path=path!("/") view=List/>
                    <Route path=path!("/about") view=|| view! { <Title text="About"/><p>"About"</p> }/>
                </Routes>
            </main>
        </Router>
    }
}

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    hydrate_body(App);
}
