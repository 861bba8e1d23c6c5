//! A conversation's title: the one it gets from its first message, and the one a reader sees.

use app::i18n::{Lang, Text};

/// The stored title of a conversation nobody named yet: no words of any language, so each reader
/// sees "New conversation" in their own (`shown_title`), and a title a user chose never reads as
/// untitled (a rename is never empty), so the first message's title never overwrites it.
pub const UNTITLED: &str = "";

/// A title from the first message is about this long, cut at a word.
const TITLE_CHARS: usize = 40;

/// A conversation's title from its first message: its first words up to about [`TITLE_CHARS`],
/// cut at a word (inside one only when the first word alone is longer), "…" where it was cut.
pub(super) fn title_from(content: &str) -> String {
    let mut title = String::new();
    let mut length = 0;
    for word in content.split_whitespace() {
        let words = word.chars().count();
        let longer = length + usize::from(length > 0) + words;
        if longer > TITLE_CHARS {
            if length == 0 {
                title.extend(word.chars().take(TITLE_CHARS));
            }
            title.push('…');
            return title;
        }
        if length > 0 {
            title.push(' ');
        }
        title.push_str(word);
        length = longer;
    }
    title
}

/// The title a reader sees: an untitled conversation's in their language.
pub(crate) fn shown_title(title: String, lang: Lang) -> String {
    if title == UNTITLED {
        lang.t(Text::NewConversation).to_string()
    } else {
        title
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_come_from_the_first_line_and_are_cut() {
        assert_eq!(title_from("\n  Hello   world \nsecond"), "Hello world second");
        // Cut at a word, never inside one, with "…" where it was cut.
        let sentence = "Which opening hours should the bakery show on its front page?";
        assert_eq!(title_from(sentence), "Which opening hours should the bakery…");
        assert!(title_from(sentence).chars().count() <= TITLE_CHARS + 1);
        // One word longer than a title is cut inside it.
        let long = "x".repeat(80);
        assert_eq!(title_from(&long), format!("{}…", "x".repeat(TITLE_CHARS)));
        assert_eq!(title_from("Kurz"), "Kurz");
        assert_eq!(title_from("   "), UNTITLED);
    }
}
