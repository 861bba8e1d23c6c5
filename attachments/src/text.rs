//! Plain text and Markdown: accepted as they are when they are really UTF-8 text.

use crate::sink::Sink;
use crate::{sniff, AttachmentError, Kind};

const UTF8_BOM: &str = "\u{feff}";

pub(crate) fn extract(kind: Kind, bytes: &[u8], sink: &mut Sink) -> Result<(), AttachmentError> {
    let wrong = |found| AttachmentError::WrongContent { named: kind, found };
    // A NUL never occurs in text but is in nearly every binary format, including UTF-16 text,
    // which would otherwise reach the model as noise.
    if bytes.contains(&0) {
        return Err(wrong(sniff::describe(bytes)));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| wrong(sniff::describe(bytes)))?;
    let text = text.strip_prefix(UTF8_BOM).unwrap_or(text);
    push_lines(text, sink);
    Ok(())
}

/// Windows and old-Mac line ends become `\n`, so the model and the character limit see one form.
fn push_lines(text: &str, sink: &mut Sink) {
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        for (i, part) in line.split('\r').enumerate() {
            if i > 0 {
                sink.push_str("\n");
            }
            sink.push_str(part);
        }
        if lines.peek().is_some() {
            sink.push_str("\n");
        }
    }
}
