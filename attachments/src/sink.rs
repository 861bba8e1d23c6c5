//! Collects extracted text up to the character limit.
//!
//! Separators (spaces, line and paragraph breaks) are held back until more text follows, so the
//! result never starts or ends with one, runs of them collapse, and a document whose text fits
//! exactly is not flagged as truncated because of a trailing newline.

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Separator {
    Space,
    Line,
    Paragraph,
}

#[derive(Debug)]
pub(crate) struct Sink {
    text: String,
    chars: usize,
    max_chars: usize,
    pending: Option<Separator>,
    truncated: bool,
}

impl Sink {
    pub(crate) fn new(max_chars: usize) -> Self {
        Self { text: String::new(), chars: 0, max_chars, pending: None, truncated: false }
    }

    /// True once nothing more fits; only whitespace may still be offered without loss.
    pub(crate) fn is_full(&self) -> bool {
        self.truncated || self.chars >= self.max_chars
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// True once text was actually dropped; extractors stop then.
    pub(crate) fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// Records that text was left out for a reason other than length (e.g. the page cap).
    pub(crate) fn mark_truncated(&mut self) {
        self.truncated = true;
    }

    pub(crate) fn space(&mut self) {
        self.separate(Separator::Space);
    }

    /// A cell boundary; unlike the other separators it is kept even when text already ends in
    /// whitespace, so empty cells keep their columns.
    pub(crate) fn tab(&mut self) {
        // A space left pending by the end of a cell's last paragraph would only pad the cell.
        if self.pending == Some(Separator::Space) {
            self.pending = None;
        }
        self.push_str("\t");
    }

    pub(crate) fn line_break(&mut self) {
        self.separate(Separator::Line);
    }

    pub(crate) fn paragraph_break(&mut self) {
        self.separate(Separator::Paragraph);
    }

    pub(crate) fn push_str(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        self.flush_pending();
        self.append(s);
    }

    pub(crate) fn push_char(&mut self, c: char) {
        let mut buf = [0; 4];
        self.push_str(c.encode_utf8(&mut buf));
    }

    pub(crate) fn finish(self) -> (String, bool) {
        let mut text = self.text;
        text.truncate(text.trim_end().len());
        (text, self.truncated)
    }

    pub(crate) fn ends_with_whitespace(&self) -> bool {
        self.pending.is_some() || self.text.ends_with(char::is_whitespace)
    }

    fn separate(&mut self, separator: Separator) {
        if self.text.is_empty() {
            return;
        }
        self.pending = self.pending.max(Some(separator));
    }

    fn flush_pending(&mut self) {
        let Some(separator) = self.pending.take() else { return };
        match separator {
            Separator::Space if !self.text.ends_with(char::is_whitespace) => self.append(" "),
            Separator::Line | Separator::Paragraph => {
                self.trim_trailing_spaces();
                let wanted = if separator == Separator::Line { "\n" } else { "\n\n" };
                let have = self.text.len() - self.text.trim_end_matches('\n').len();
                if have < wanted.len() {
                    self.append(&wanted[have..]);
                }
            }
            Separator::Space => {}
        }
    }

    fn trim_trailing_spaces(&mut self) {
        let kept = self.text.trim_end_matches(' ').len();
        self.chars -= self.text.len() - kept;
        self.text.truncate(kept);
    }

    /// Dropping only whitespace loses nothing, so it does not count as truncation.
    fn append(&mut self, s: &str) {
        if self.is_full() {
            self.truncated |= !s.trim().is_empty();
            return;
        }
        let room = self.max_chars - self.chars;
        match s.char_indices().nth(room) {
            Some((cut, _)) => {
                self.text.push_str(&s[..cut]);
                self.chars += room;
                self.truncated |= !s[cut..].trim().is_empty();
            }
            None => {
                self.text.push_str(s);
                self.chars += s.chars().count();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Sink;

    fn collect(max: usize, build: impl FnOnce(&mut Sink)) -> (String, bool) {
        let mut sink = Sink::new(max);
        build(&mut sink);
        sink.finish()
    }

    #[test]
    fn separators_collapse_and_never_lead_or_trail() {
        let (text, truncated) = collect(100, |s| {
            s.paragraph_break();
            s.push_str("a ");
            s.space();
            s.line_break();
            s.push_str("b");
            s.paragraph_break();
        });
        assert_eq!(text, "a\nb");
        assert!(!truncated);
    }

    #[test]
    fn cuts_at_a_character_boundary() {
        let (text, truncated) = collect(3, |s| s.push_str("héllo"));
        assert_eq!(text, "hél");
        assert!(truncated);
    }

    #[test]
    fn exact_fit_is_not_truncated() {
        let (text, truncated) = collect(3, |s| {
            s.push_str("abc");
            s.paragraph_break();
        });
        assert_eq!(text, "abc");
        assert!(!truncated);
    }
}
