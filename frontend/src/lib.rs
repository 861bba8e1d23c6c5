//! The WASM entry point: readies the reactive system for the page's islands, which the page's
//! script then hydrates one by one (each `#[island]` in `app` is exported under its own name).

// Links `app`, whose islands are this module's exports, though nothing here names them.
extern crate app;

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
}
