//! The fields of a conversation's views that a server-rendered page's markup already carries (an
//! assistant line's HTML, a reader's line's text), and whether they are being left out: only while
//! the panel's resource is written as the page's hydration data (`page_data::PageCodec`). The view
//! models name these serializers; the codec raises the flag.

use std::cell::Cell;

use serde::{Serialize, Serializer};

thread_local! {
    /// Set while [`left_out`] runs (serialising is synchronous, so no other value's serialisation
    /// can see it on this thread).
    static IN_PAGE_DATA: Cell<bool> = const { Cell::new(false) };
}

/// Runs `write` with the markup's fields left out.
pub(crate) fn left_out<T>(write: impl FnOnce() -> T) -> T {
    /// Lowers the flag however serialising ends: left up, it would strip the HTML from this
    /// thread's next server-function answer.
    struct Lower;
    impl Drop for Lower {
        fn drop(&mut self) {
            IN_PAGE_DATA.set(false);
        }
    }
    IN_PAGE_DATA.set(true);
    let _lower = Lower;
    write()
}

/// `MessageView::html` as written: `""` in a page's data, where the markup carries it.
pub(crate) fn serialize_html<S: Serializer>(html: &Option<String>, serializer: S) -> Result<S::Ok, S::Error> {
    match html {
        Some(_) if IN_PAGE_DATA.get() => serializer.serialize_some(""),
        _ => html.serialize(serializer),
    }
}

/// Whether `MessageView::content` is left out: when empty, and always in a page's data (where
/// only the reader's lines have any, and the markup carries it as text).
pub(crate) fn skip_content(content: &str) -> bool {
    content.is_empty() || IN_PAGE_DATA.get()
}
