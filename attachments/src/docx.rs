//! Word documents: the text of `word/document.xml`, one paragraph per line, table cells
//! separated by tabs and table rows on lines of their own.
//!
//! Elements are matched by local name, so any namespace prefix works. Only `t` elements carry
//! text: deleted revisions (`delText`) and field codes (`instrText`) are left out, as Word does
//! when it shows the document.

use quick_xml::events::{BytesRef, Event};
use quick_xml::Reader;

use crate::sink::Sink;
use crate::{zipguard, AttachmentError, Kind, Limits};

const MAIN_PART: &str = "word/document.xml";

pub(crate) fn extract(bytes: &[u8], limits: &Limits, sink: &mut Sink) -> Result<(), AttachmentError> {
    let mut archive = zipguard::open(Kind::Docx, bytes, limits)?;
    let xml = zipguard::read_entry(&mut archive, Kind::Docx, MAIN_PART, limits)?;
    let xml = String::from_utf8(xml).map_err(|e| AttachmentError::damaged(Kind::Docx, e))?;
    let xml = xml.strip_prefix('\u{feff}').unwrap_or(&xml);
    Body::default().read(xml, sink).map_err(|e| AttachmentError::damaged(Kind::Docx, e))
}

#[derive(Debug, thiserror::Error)]
enum XmlError {
    #[error(transparent)]
    Syntax(#[from] quick_xml::Error),
    /// The reader reports the end of a cut-off part as a plain end of input.
    #[error("the document XML ends inside an element")]
    Unfinished,
}

/// Where the reader is in the document body.
#[derive(Default)]
struct Body {
    /// Inside a `t` element, whose character data is document text.
    in_text: bool,
    /// Inside a run (`r`); tabs and breaks outside runs are tab-stop and layout definitions.
    run_depth: usize,
    /// One entry per open table: how many cells the current row has had so far.
    rows: Vec<usize>,
    /// Elements open at this point.
    depth: usize,
}

impl Body {
    fn read(mut self, xml: &str, sink: &mut Sink) -> Result<(), XmlError> {
        let mut reader = Reader::from_str(xml);
        while !sink.is_truncated() {
            match reader.read_event()? {
                Event::Start(e) => {
                    self.depth += 1;
                    self.open(e.local_name().as_ref(), sink);
                }
                Event::Empty(e) => {
                    let name = e.local_name();
                    self.open(name.as_ref(), sink);
                    self.close(name.as_ref(), sink);
                }
                Event::End(e) => {
                    self.depth = self.depth.saturating_sub(1);
                    self.close(e.local_name().as_ref(), sink);
                }
                Event::Text(e) if self.in_text => sink.push_str(&e.xml10_content()),
                Event::CData(e) if self.in_text => sink.push_str(&e.xml10_content()),
                Event::GeneralRef(e) if self.in_text => push_reference(&e, sink)?,
                Event::Eof if self.depth > 0 => return Err(XmlError::Unfinished),
                Event::Eof => break,
                _ => {}
            }
        }
        Ok(())
    }

    fn open(&mut self, name: &str, sink: &mut Sink) {
        match name {
            "t" => self.in_text = true,
            "r" => self.run_depth += 1,
            "tbl" => {
                sink.line_break();
                self.rows.push(0);
            }
            "tr" => {
                if let Some(cells) = self.rows.last_mut() {
                    *cells = 0;
                }
            }
            "tc" => {
                if let Some(cells) = self.rows.last_mut() {
                    if *cells > 0 {
                        sink.tab();
                    }
                    *cells += 1;
                }
            }
            "tab" if self.run_depth > 0 => sink.tab(),
            // A break inside a table cell would split the row over lines.
            "br" | "cr" if self.run_depth > 0 && !self.rows.is_empty() => sink.space(),
            "br" | "cr" if self.run_depth > 0 => sink.line_break(),
            "noBreakHyphen" if self.run_depth > 0 => sink.push_str("-"),
            _ => {}
        }
    }

    fn close(&mut self, name: &str, sink: &mut Sink) {
        match name {
            "t" => self.in_text = false,
            "r" => self.run_depth = self.run_depth.saturating_sub(1),
            // Paragraphs inside a cell stay on the row's line.
            "p" if self.rows.is_empty() => sink.line_break(),
            "p" => sink.space(),
            "tr" => sink.line_break(),
            "tbl" => {
                self.rows.pop();
                sink.line_break();
            }
            _ => {}
        }
    }
}

/// `&amp;` and friends arrive as separate events; only the predefined entities and character
/// references exist in OOXML, and nothing else is ever expanded.
fn push_reference(reference: &BytesRef<'_>, sink: &mut Sink) -> Result<(), quick_xml::Error> {
    if let Some(c) = reference.resolve_char_ref()? {
        sink.push_char(c);
    } else if let Some(s) = quick_xml::escape::resolve_predefined_entity(&reference.xml10_content()) {
        sink.push_str(s);
    }
    Ok(())
}
