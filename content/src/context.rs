//! The sentence that tells a model which page a conversation is about. The chat writes it into
//! the system prompt, and the demo model reads the page from it, so both take it from here.

const LEAD: &str = "This conversation is about the page with id ";

/// The sentence for `page_id`, e.g. "This conversation is about the page with id 3."
pub fn page_sentence(page_id: i64) -> String {
    format!("{LEAD}{page_id}.")
}

/// The page a text names with [`page_sentence`], wherever in the text the sentence stands.
pub fn page_named_in(text: &str) -> Option<i64> {
    let start = text.find(LEAD)? + LEAD.len();
    let rest = &text[start..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if !rest[digits.len()..].starts_with('.') {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_reads_back_as_its_page() {
        assert_eq!(page_named_in(&format!("You are a guide.\n\n{}", page_sentence(42))), Some(42));
        assert_eq!(page_named_in("This conversation is about the page with id 42"), None);
        assert_eq!(page_named_in("This conversation is about the page with id x."), None);
        assert_eq!(page_named_in("Nothing here."), None);
    }
}
