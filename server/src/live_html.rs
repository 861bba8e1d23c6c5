//! The reply being written, as the HTML the open page shows while it grows: the pieces an event
//! stream carries, put together as the page does (`app::live_draft`), rendered through the same
//! markdown sanitiser as a recorded line (`markdown::to_safe_html`), so the browser needs no
//! markdown parser of its own. An unfinished code fence reads as code to the end of the text, as
//! CommonMark has it.
//!
//! Each stream renders for its own page, and only while pieces come: at most every
//! [`RENDER_EVERY`], the last piece always rendered. Each rendering goes out as a change to the
//! one before it on the same stream (the bytes both share at the start are kept, the rest is
//! sent), so a long reply is not sent again whole ten times a second.

use std::time::Duration;

use app::live_draft::{Applied, LiveDraft, Piece, Rendered};
use app::model::DraftView;
use tokio::time::Instant;

/// The most often a stream sends a new rendering of the reply.
pub const RENDER_EVERY: Duration = Duration::from_millis(100);

/// What one stream has of the reply and has sent of its rendering.
#[derive(Default)]
pub struct LiveHtml {
    draft: Option<LiveDraft>,
    /// The key, text length and HTML of the rendering sent last.
    sent: Option<(String, usize, String)>,
    last: Option<Instant>,
    /// When the next rendering is due: set by a piece, cleared when it goes out.
    due: Option<Instant>,
}

impl LiveHtml {
    /// Takes a piece the stream passes on; a rendering is due soon.
    pub fn piece(&mut self, draft: &str, offset: usize, text: &str) {
        let piece = Piece { draft: draft.to_string(), offset, text: text.to_string() };
        if LiveDraft::apply(&mut self.draft, piece) != Applied::Ignored {
            let earliest = self.last.map_or_else(Instant::now, |last| last + RENDER_EVERY);
            self.due.get_or_insert(earliest.max(Instant::now()));
        }
    }

    pub fn due(&self) -> Option<Instant> {
        self.due
    }

    /// Text in front of a piece is missing: the stream joined the reply mid-way (or missed a
    /// piece), and renders once the saved draft has it.
    pub fn behind(&self) -> bool {
        self.draft.as_ref().is_some_and(LiveDraft::has_gap)
    }

    /// The draft as the database had it (key and text), for a stream that is [`behind`](Self::behind).
    pub fn saved(&mut self, key: String, text: String) {
        LiveDraft::merge_loaded(&mut self.draft, DraftView { key, text, html: None });
    }

    /// The rendering now due, as a change to the one sent before; `None` when nothing new can be
    /// shown (nothing grew, or text in front is still missing).
    pub fn render(&mut self) -> Option<Rendered> {
        self.due = None;
        let draft = self.draft.as_ref().filter(|draft| !draft.has_gap())?;
        let same_key = self.sent.as_ref().filter(|(key, _, _)| *key == draft.key);
        if same_key.is_some_and(|(_, upto, _)| *upto >= draft.text.len()) {
            return None;
        }
        let html = crate::markdown::to_safe_html(&draft.text);
        let keep = same_key.map_or(0, |(_, _, before)| shared_start(before, &html));
        let rendered =
            Rendered { draft: draft.key.clone(), upto: draft.text.len(), keep, html: html[keep..].to_string() };
        self.sent = Some((draft.key.clone(), draft.text.len(), html));
        self.last = Some(Instant::now());
        Some(rendered)
    }
}

/// How many bytes at the start `before` and `now` share, cut back to a character's start.
fn shared_start(before: &str, now: &str) -> usize {
    let mut shared = before.bytes().zip(now.bytes()).take_while(|(a, b)| a == b).count();
    while !now.is_char_boundary(shared) {
        shared -= 1;
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the page holds after each rendering: what it had, its first `keep` bytes, the rest.
    fn page_after(page: &mut String, rendered: &Rendered) {
        *page = format!("{}{}", &page[..rendered.keep], rendered.html);
    }

    #[tokio::test]
    async fn a_growing_reply_is_rendered_as_markdown_and_sent_as_changes() {
        let mut live = LiveHtml::default();
        let mut page = String::new();
        let mut offset = 0;
        let mut text = String::new();
        let mut add = |live: &mut LiveHtml, piece: &str| {
            live.piece("k", offset, piece);
            offset += piece.len();
            text.push_str(piece);
        };
        add(&mut live, "Grüße, **bold** and\n\n- one\n");
        let first = live.render().expect("a first rendering");
        assert_eq!(first.keep, 0);
        page_after(&mut page, &first);
        assert_eq!(page, "<p>Grüße, <strong>bold</strong> and</p>\n<ul>\n<li>one</li>\n</ul>\n");
        assert_eq!(live.render(), None, "nothing new");

        add(&mut live, "- two\n\n```rust\nfn main() {\n    let a = 1 < 2;");
        let due = live.due().expect("due");
        assert_eq!(due, first_time(&live) + RENDER_EVERY, "not before a tenth of a second has passed");
        let second = live.render().unwrap();
        // Only what changed goes out: the list's end and the code, not the paragraph again.
        assert!(second.keep > "<p>Grüße, <strong>bold</strong> and</p>".len(), "{second:?}");
        page_after(&mut page, &second);
        assert_eq!(page, crate::markdown::to_safe_html(&text));
        // An unfinished fence is a code block to the end, its text escaped.
        assert!(page.ends_with("<pre><code>fn main() {\n    let a = 1 &lt; 2;</code></pre>\n"), "{page}");

        // A new turn starts over.
        live.piece("k2", 0, "# Done");
        let third = live.render().unwrap();
        assert_eq!((third.keep, third.html.as_str(), third.upto), (0, "<h1>Done</h1>\n", 6));
    }

    fn first_time(live: &LiveHtml) -> Instant {
        live.last.unwrap()
    }

    #[test]
    fn an_image_in_a_partial_reply_is_a_link_and_loads_nothing() {
        let mut live = LiveHtml::default();
        // Not started inside a runtime's time: a plain test has its own clock.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let _time = runtime.enter();
        live.piece("k", 0, "See ![chart](https://tracker.example/pixel.png?c=secret) and <img src=x onerror=alert(1)> ![half](https://tracker.example/b");
        let html = live.render().unwrap().html;
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("onerror"), "{html}");
        assert!(html.contains("Image from tracker.example"), "{html}");
        let tags = crate::html_tags::start_tags(&html);
        assert!(tags.iter().all(|(name, attributes)| name != "img" && attributes.iter().all(|(a, _)| a != "src")));
    }

    #[test]
    fn a_stream_that_joined_mid_way_renders_once_the_saved_draft_has_the_front() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let _time = runtime.enter();
        let mut live = LiveHtml::default();
        live.piece("k", 11, " world");
        assert!(live.behind());
        assert_eq!(live.render(), None, "nothing to show without the front");
        live.saved("k".into(), "*Hello*".into());
        assert!(live.behind(), "the saved draft is still short of the piece");
        live.saved("k".into(), "*Hello* big".into());
        assert!(!live.behind());
        assert_eq!(live.render().unwrap().html, "<p><em>Hello</em> big world</p>\n");
    }

    #[test]
    fn a_shared_start_never_splits_a_character() {
        assert_eq!(shared_start("<p>ä</p>", "<p>ö</p>"), 3);
        assert_eq!(shared_start("abc", "abd"), 2);
        assert_eq!(shared_start("", "x"), 0);
    }
}
