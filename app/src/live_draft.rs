//! The reply the model is writing, as the open page holds it: the draft the page loaded, grown by
//! the pieces the event stream brings. Pieces carry the draft's key and the byte offset where
//! their text goes, so a piece that arrives twice, late, or before the text in front of it is
//! handled without guessing. No Leptos in here: the rules are plain functions, tested as such.

use serde::Deserialize;

use crate::model::DraftView;

/// One "piece" event.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Piece {
    pub draft: String,
    pub offset: usize,
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveDraft {
    pub key: String,
    pub text: String,
    /// Pieces that came before the text in front of them (a page opened mid-stream loaded a
    /// draft a little behind): kept until that text arrives with the next load.
    pending: Vec<Piece>,
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
        match current {
            Some(draft) if draft.key == loaded.key => {
                if loaded.text.len() > draft.text.len() && loaded.text.starts_with(&draft.text) {
                    draft.text = loaded.text;
                }
                draft.take_pending();
            }
            _ => *current = Some(LiveDraft { key: loaded.key, text: loaded.text, pending: Vec::new() }),
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
        LiveDraft::merge_loaded(&mut live, DraftView { key: "k".into(), text: "Hello".into() });
        // The database was behind: " there" (5..11) was never heard, the next piece is at 11.
        assert_eq!(LiveDraft::apply(&mut live, piece("k", 11, ", friend")), Applied::Gap);
        assert!(live.as_ref().unwrap().has_gap());
        assert_eq!(live.as_ref().unwrap().text, "Hello");
        LiveDraft::merge_loaded(&mut live, DraftView { key: "k".into(), text: "Hello there".into() });
        assert_eq!(live.as_ref().unwrap().text, "Hello there, friend");
        assert!(!live.as_ref().unwrap().has_gap());
        // A load that is behind what the page has does not take text away.
        LiveDraft::merge_loaded(&mut live, DraftView { key: "k".into(), text: "Hello".into() });
        assert_eq!(live.as_ref().unwrap().text, "Hello there, friend");
    }

    #[test]
    fn a_new_key_starts_over() {
        let mut live = None;
        LiveDraft::apply(&mut live, piece("first", 0, "Checking the page"));
        assert_eq!(LiveDraft::apply(&mut live, piece("second", 0, "Done")), Applied::Grew);
        assert_eq!(live.as_ref().unwrap().text, "Done");
        LiveDraft::merge_loaded(&mut live, DraftView { key: "third".into(), text: "Again".into() });
        assert_eq!(live.as_ref().unwrap().key, "third");
        assert_eq!(live.as_ref().unwrap().text, "Again");
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
