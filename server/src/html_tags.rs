//! The start tags of a piece of HTML with their attributes, read by html5ever's tokeniser (the one
//! browsers' parsers follow), so a payload shown as text or inside a quoted value is no tag, and
//! one that broke out of its place is. The sanitiser's tests and the page tests ask it what a
//! browser would see: a script, an element that fetches, an attribute it should not have.

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer};
use html5ever::TokenizerResult;

/// A start tag: its name and its attributes (names lower-cased, values with entities decoded).
pub type StartTag = (String, Vec<(String, String)>);

pub fn start_tags(html: &str) -> Vec<StartTag> {
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    let tokenizer = Tokenizer::new(Collector::default(), Default::default());
    while !matches!(tokenizer.feed(&input), TokenizerResult::Done) {}
    tokenizer.end();
    tokenizer.sink.tags.take()
}

#[derive(Default)]
struct Collector {
    tags: RefCell<Vec<StartTag>>,
}

impl TokenSink for Collector {
    type Handle = ();

    fn process_token(&self, token: Token, _line_number: u64) -> TokenSinkResult<()> {
        let Token::TagToken(tag) = token else { return TokenSinkResult::Continue };
        if tag.kind != TagKind::StartTag {
            return TokenSinkResult::Continue;
        }
        let name = tag.name.to_string();
        let attributes =
            tag.attrs.iter().map(|attribute| (attribute.name.local.to_string(), attribute.value.to_string())).collect();
        self.tags.borrow_mut().push((name.clone(), attributes));
        // The elements whose text a browser reads raw: a tag in their text is text.
        match name.as_str() {
            "script" => TokenSinkResult::RawData(RawKind::ScriptData),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
                TokenSinkResult::RawData(RawKind::Rawtext)
            }
            "textarea" | "title" => TokenSinkResult::RawData(RawKind::Rcdata),
            "plaintext" => TokenSinkResult::Plaintext,
            _ => TokenSinkResult::Continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_read_as_a_browser_reads_them() {
        let tags = start_tags(
            r#"<p class="a b">x &lt;img src=1&gt; <a title="y > z" href='/p?a=1&amp;b=2'>l</a><script>"<img src=2>"</script><IMG SRC=3>"#,
        );
        let names: Vec<&str> = tags.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["p", "a", "script", "img"]);
        assert_eq!(tags[1].1, [("title".into(), "y > z".into()), ("href".into(), "/p?a=1&b=2".into())]);
        assert_eq!(tags[3].1, [("src".to_string(), "3".to_string())]);
    }
}
