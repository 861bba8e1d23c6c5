//! The reply the model is writing, as the open page holds it: the draft the page loaded, grown by
//! the pieces the event stream brings. Pieces carry the draft's key and the byte offset where
//! their text goes, so a piece that arrives twice, late, or before the text in front of it is
//! handled without guessing. No Leptos in here: the rules are plain functions, tested as such.

use serde::{Deserialize, Serialize};

use crate::model::DraftView;

/// One "piece" event.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Piece {
    pub draft: String,
    pub offset: usize,
    pub text: String,
}

/// One "html" event: the server's rendering of the draft's first `upto` bytes, sent as a change
/// to the rendering the same stream sent before: its first `keep` bytes, then `html`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rendered {
    pub draft: String,
    pub upto: usize,
    pub keep: usize,
    pub html: String,
}

impl Rendered {
    /// The whole rendering, built on `before` (the key and HTML this stream sent last), which
    /// becomes it; `None` when it does not build on it.
    pub fn onto(self, before: &mut Option<(String, String)>) -> Option<String> {
        let kept = match before.as_ref() {
            _ if self.keep == 0 => "",
            Some((key, html)) if *key == self.draft => html.get(..self.keep)?,
            _ => return None,
        };
        let whole = format!("{kept}{}", self.html);
        *before = Some((self.draft, whole.clone()));
        Some(whole)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveDraft {
    pub key: String,
    pub text: String,
    /// Pieces that came before the text in front of them (a page opened mid-stream loaded a
    /// draft a little behind): kept until that text arrives with the next load.
    pending: Vec<Piece>,
    /// The server's rendering of the text's first bytes (how many, and the HTML), shown in
    /// place of the text once there is one.
    pub html: Option<(usize, String)>,
}

/// What a piece did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Grew,
    /// Already there (a repeat), or of a draft that is gone.
    Ignored,
    /// Text in front of it is missing: load the conversation again.
    Gap,
}

/// Where a piece went.
enum Placed {
    Grew,
    Ignored,
    Early(Piece),
}

/// Pieces kept while waiting for the text in front of them; beyond this the page reloads anyway.
const MAX_PENDING: usize = 512;

impl LiveDraft {
    pub fn apply(current: &mut Option<LiveDraft>, piece: Piece) -> Applied {
        match current {
            Some(draft) if draft.key == piece.draft => draft.add(piece),
            _ => {
                // A new turn of the model begins (or a retry): it starts over.
                let mut draft = LiveDraft { key: piece.draft.clone(), ..LiveDraft::default() };
                let applied = draft.add(piece);
                *current = Some(draft);
                applied
            }
        }
    }

    /// A load of the conversation brought `loaded` (the draft as the database had it).
    pub fn merge_loaded(current: &mut Option<LiveDraft>, loaded: DraftView) {
        let html = loaded.html.map(|html| (loaded.text.len(), html));
        match current {
            Some(draft) if draft.key == loaded.key => {
                if html.as_ref().is_some_and(|(upto, _)| draft.html.as_ref().is_none_or(|(have, _)| upto > have)) {
                    draft.html = html;
                }
                if loaded.text.len() > draft.text.len() && loaded.text.starts_with(&draft.text) {
                    draft.text = loaded.text;
                }
                draft.take_pending();
            }
            _ => *current = Some(LiveDraft { key: loaded.key, text: loaded.text, pending: Vec::new(), html }),
        }
    }

    /// The stream brought a rendering of the first `upto` bytes of draft `key`: shown unless it
    /// is of another draft or behind the one shown.
    pub fn show_rendered(current: &mut Option<LiveDraft>, key: &str, upto: usize, html: String) {
        let Some(draft) = current.as_mut().filter(|draft| draft.key == key) else { return };
        if draft.html.as_ref().is_none_or(|(have, _)| upto >= *have) {
            draft.html = Some((upto, html));
        }
    }

    fn add(&mut self, piece: Piece) -> Applied {
        match self.place(piece) {
            Placed::Grew => {
                self.take_pending();
                Applied::Grew
            }
            Placed::Ignored => Applied::Ignored,
            Placed::Early(piece) => {
                if self.pending.len() < MAX_PENDING {
                    self.pending.push(piece);
                }
                Applied::Gap
            }
        }
    }

    /// Adds what `piece` brings beyond the text so far, if it follows on from it.
    fn place(&mut self, piece: Piece) -> Placed {
        let have = self.text.len();
        if piece.offset > have {
            return Placed::Early(piece);
        }
        if piece.offset.saturating_add(piece.text.len()) <= have {
            return Placed::Ignored;
        }
        // Both are prefixes of one text, so the cut falls on a character boundary; a piece that
        // says otherwise does not belong to this text.
        match piece.text.get(have - piece.offset..) {
            Some(rest) => {
                self.text.push_str(rest);
                Placed::Grew
            }
            None => Placed::Ignored,
        }
    }

    /// Adds the pending pieces that now fit, in offset order; the others keep waiting.
    fn take_pending(&mut self) {
        self.pending.sort_by_key(|piece| piece.offset);
        for piece in std::mem::take(&mut self.pending) {
            if let Placed::Early(piece) = self.place(piece) {
                self.pending.push(piece);
            }
        }
    }

    pub fn has_gap(&self) -> bool {
        !self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(draft: &str, offset: usize, text: &str) -> Piece {
        Piece { draft: draft.into(), offset, text: text.into() }
    }

    #[test]
    fn pieces_in_order_grow_the_text_and_repeats_change_nothing() {
        let mut live = None;
        assert_eq!(LiveDraft::apply(&mut live, piece("k", 0, "Grüß")), Applied::Grew);
        assert_eq!(LiveDraft::apply(&mut live, piece("k", 6, " dich")), Applied::Grew);
        assert_eq!(LiveDraft::apply(&mut live, piece("k", 0, "Grüß")), Applied::Ignored);
        // Overlapping: only the new part is added.
        assert_eq!(LiveDraft::apply(&mut live, piece("k", 6, " dich!")), Applied::Grew);
        assert_eq!(live.as_ref().unwrap().text, "Grüß dich!");
    }

    #[test]
    fn a_page_opened_mid_stream_waits_for_the_missing_text_then_catches_up() {
        let mut live = None;
        LiveDraft::merge_loaded(&mut live, DraftView { key: "k".into(), text: "Hello".into(), html: None });
        // The database was behind: " there" (5..11) was never heard, the next piece is at 11.
        assert_eq!(LiveDraft::apply(&mut live, piece("k", 11, ", friend")), Applied::Gap);
        assert!(live.as_ref().unwrap().has_gap());
        assert_eq!(live.as_ref().unwrap().text, "Hello");
        LiveDraft::merge_loaded(&mut live, DraftView { key: "k".into(), text: "Hello there".into(), html: None });
        assert_eq!(live.as_ref().unwrap().text, "Hello there, friend");
        assert!(!live.as_ref().unwrap().has_gap());
        // A load that is behind what the page has does not take text away.
        LiveDraft::merge_loaded(&mut live, DraftView { key: "k".into(), text: "Hello".into(), html: None });
        assert_eq!(live.as_ref().unwrap().text, "Hello there, friend");
    }

    #[test]
    fn a_new_key_starts_over() {
        let mut live = None;
        LiveDraft::apply(&mut live, piece("first", 0, "Checking the page"));
        assert_eq!(LiveDraft::apply(&mut live, piece("second", 0, "Done")), Applied::Grew);
        assert_eq!(live.as_ref().unwrap().text, "Done");
        LiveDraft::merge_loaded(&mut live, DraftView { key: "third".into(), text: "Again".into(), html: None });
        assert_eq!(live.as_ref().unwrap().key, "third");
        assert_eq!(live.as_ref().unwrap().text, "Again");
    }

    #[test]
    fn renderings_build_on_the_one_before_and_the_newest_is_shown() {
        let mut before = None;
        let rendered = |keep: usize, html: &str| Rendered { draft: "k".into(), upto: 0, keep, html: html.into() };
        assert_eq!(rendered(0, "<p>Hi</p>").onto(&mut before).as_deref(), Some("<p>Hi</p>"));
        assert_eq!(rendered(5, " there</p>").onto(&mut before).as_deref(), Some("<p>Hi there</p>"));
        // Not on what this page has: another draft's, or past its end.
        assert_eq!(Rendered { draft: "x".into(), ..rendered(3, "a") }.onto(&mut before), None);
        assert_eq!(rendered(99, "a").onto(&mut before), None);
        assert_eq!(before.as_ref().map(|(_, html)| html.as_str()), Some("<p>Hi there</p>"));

        let mut live = None;
        LiveDraft::apply(&mut live, piece("k", 0, "**Hi** there"));
        LiveDraft::show_rendered(&mut live, "k", 6, "<p><strong>Hi</strong></p>".into());
        LiveDraft::show_rendered(&mut live, "k", 3, "<p>**H</p>".into());
        LiveDraft::show_rendered(&mut live, "other", 12, "<p>x</p>".into());
        assert_eq!(live.as_ref().unwrap().html, Some((6, "<p><strong>Hi</strong></p>".to_string())));
        // A load that rendered more takes over; one that rendered less does not.
        let loaded = |text: &str, html: &str| DraftView { key: "k".into(), text: text.into(), html: Some(html.into()) };
        LiveDraft::merge_loaded(&mut live, loaded("**H", "<p>**H</p>"));
        assert_eq!(live.as_ref().unwrap().html.as_ref().unwrap().0, 6);
        LiveDraft::merge_loaded(&mut live, loaded("**Hi** there", "<p><strong>Hi</strong> there</p>"));
        assert_eq!(live.unwrap().html, Some((12, "<p><strong>Hi</strong> there</p>".to_string())));
    }

    #[test]
    fn a_piece_that_splits_a_character_is_not_taken() {
        let mut live = None;
        LiveDraft::apply(&mut live, piece("k", 0, "ü"));
        // Offset 1 is inside "ü" (two bytes): "üx" from offset 1 is not this text.
        assert_eq!(LiveDraft::apply(&mut live, piece("k", 1, "üx")), Applied::Ignored);
        assert_eq!(live.unwrap().text, "ü");
    }
}
