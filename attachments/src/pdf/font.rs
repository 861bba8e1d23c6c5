//! What the text walker needs to know of a font: how its codes map to Unicode (lopdf's job) and
//! roughly how wide its glyphs are, to tell a word gap from a kerning nudge.

use lopdf::{Dictionary, Document, Object};

use super::{number, Budget, Exhausted};

/// Width assumed when a font gives none: about an average Latin glyph, in glyph units.
const GUESSED_WIDTH: f64 = 500.0;
/// A simple font has one-byte codes; more widths than that are junk.
const MAX_SIMPLE_CODES: usize = 256;

pub(super) struct Font<'a> {
    /// `None` when lopdf cannot decode the font's text; its text is then skipped, not guessed.
    pub(super) encoding: Option<lopdf::Encoding<'a>>,
    /// Composite (Type0) fonts; their codes are read as two bytes, as Identity-H has them.
    pub(super) two_byte: bool,
    widths: Widths,
}

impl<'a> Font<'a> {
    pub(super) fn load(doc: &'a Document, dict: &'a Dictionary, budget: &mut Budget) -> Result<Self, Exhausted> {
        let two_byte = dict.get(b"Subtype").and_then(Object::as_name).is_ok_and(|s| s == b"Type0");
        // The encoding decodes the ToUnicode map without telling how big it was; decode it once
        // more here, bounded, so that it is charged to the budget like every other stream.
        if let Ok(stream) = dict.get_deref(b"ToUnicode", doc).and_then(Object::as_stream) {
            match stream.decompressed_content_with_limit(budget.remaining()) {
                Ok(data) => budget.charge(data.len())?,
                Err(e) if super::is_over_limit(&e) => return Err(Exhausted),
                Err(_) => {}
            }
        }
        let encoding = match dict.get_font_encoding_with_limit(doc, budget.remaining()) {
            Ok(encoding) => Some(encoding),
            Err(e) if super::is_over_limit(&e) => return Err(Exhausted),
            Err(_) => None,
        };
        let widths = if two_byte { Widths::composite(doc, dict) } else { Widths::simple(doc, dict) };
        Ok(Font { encoding, two_byte, widths })
    }

    /// The character codes in a shown string.
    pub(super) fn codes<'b>(&self, bytes: &'b [u8]) -> impl Iterator<Item = u32> + 'b {
        let step = if self.two_byte { 2 } else { 1 };
        bytes.chunks(step).map(|chunk| chunk.iter().fold(0, |code, &b| (code << 8) | u32::from(b)))
    }

    /// Glyph width in thousandths of the font size.
    pub(super) fn width(&self, code: u32) -> f64 {
        self.widths.get(code)
    }
}

/// Widths by code, as sorted inclusive ranges so that a hostile `W` array naming a range of
/// four billion codes costs one entry.
struct Widths {
    ranges: Vec<(u32, u32, f64)>,
    default: f64,
}

impl Widths {
    fn simple(doc: &Document, dict: &Dictionary) -> Self {
        let first = dict.get_deref(b"FirstChar", doc).ok().and_then(number).unwrap_or(0.0);
        let first = if (0.0..=255.0).contains(&first) { first as u32 } else { 0 };
        let widths = dict.get_deref(b"Widths", doc).and_then(Object::as_array).map(Vec::as_slice).unwrap_or(&[]);
        let ranges = widths
            .iter()
            .take(MAX_SIMPLE_CODES)
            .enumerate()
            .filter_map(|(i, w)| {
                Some((first + i as u32, first + i as u32, doc.dereference(w).ok().and_then(|o| number(o.1))?))
            })
            .collect();
        let missing = dict
            .get_deref(b"FontDescriptor", doc)
            .and_then(|d| d.as_dict())
            .and_then(|d| d.get_deref(b"MissingWidth", doc))
            .ok()
            .and_then(number)
            .filter(|w| *w > 0.0);
        Widths { ranges, default: missing.unwrap_or(GUESSED_WIDTH) }.sorted()
    }

    /// A Type0 font keeps its widths in its descendant CID font: a default `DW` and a `W` array
    /// of `first [w1 w2 ...]` and `first last w` groups.
    fn composite(doc: &Document, dict: &Dictionary) -> Self {
        let descendant = dict
            .get_deref(b"DescendantFonts", doc)
            .and_then(Object::as_array)
            .ok()
            .and_then(|fonts| fonts.first())
            .and_then(|font| doc.dereference(font).ok())
            .and_then(|(_, font)| font.as_dict().ok());
        let Some(descendant) = descendant else {
            return Widths { ranges: Vec::new(), default: 1000.0 };
        };
        let default = descendant.get_deref(b"DW", doc).ok().and_then(number).unwrap_or(1000.0);
        let items = descendant.get_deref(b"W", doc).and_then(Object::as_array).map(Vec::as_slice).unwrap_or(&[]);
        Widths { ranges: cid_ranges(doc, items), default }.sorted()
    }

    fn sorted(mut self) -> Self {
        self.ranges.sort_by_key(|range| range.0);
        self
    }

    fn get(&self, code: u32) -> f64 {
        let after = self.ranges.partition_point(|range| range.0 <= code);
        match after.checked_sub(1).map(|i| self.ranges[i]) {
            Some((_, last, width)) if code <= last => width,
            _ => self.default,
        }
    }
}

fn cid_ranges(doc: &Document, items: &[Object]) -> Vec<(u32, u32, f64)> {
    let value = |i: usize| items.get(i).and_then(|o| doc.dereference(o).ok()).map(|(_, o)| o);
    let code = |o: &Object| number(o).filter(|n| (0.0..=f64::from(u32::MAX)).contains(n)).map(|n| n as u32);
    let mut ranges = Vec::new();
    let mut i = 0;
    while let Some(first) = value(i).and_then(code) {
        match value(i + 1) {
            Some(Object::Array(widths)) => {
                let each = widths.iter().filter_map(|w| doc.dereference(w).ok().and_then(|o| number(o.1)));
                for (offset, width) in each.enumerate() {
                    let at = first.saturating_add(offset as u32);
                    ranges.push((at, at, width));
                }
                i += 2;
            }
            Some(last) => {
                let (Some(last), Some(width)) = (code(last), value(i + 2).and_then(number)) else { break };
                ranges.push((first, last, width));
                i += 3;
            }
            None => break,
        }
    }
    ranges
}
