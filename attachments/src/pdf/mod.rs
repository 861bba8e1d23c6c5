//! PDF: lopdf parses the file; the walker in [`walker`] reads the text off the pages.
//!
//! Decoding is bounded by [`crate::Limits::max_unpacked_bytes`]: the streams lopdf decodes while
//! loading each get a share of it, and every stream decoded afterwards is charged to it. Pages
//! are capped, and form XObjects are followed only a few levels deep and never into themselves,
//! so a hostile file costs bounded time and memory.

mod font;
mod geometry;
mod walker;

use lopdf::{DecompressError, Document, LoadOptions, Object};

use crate::sink::Sink;
use crate::{sniff, AttachmentError, Kind, Limits};

/// lopdf decodes object and cross-reference streams while loading, each under one limit. Below
/// this the share of the budget per stream would start to refuse ordinary large documents.
const MIN_LOAD_STREAM_LIMIT: u64 = 256 * 1024;

pub(crate) fn extract(bytes: &[u8], limits: &Limits, sink: &mut Sink) -> Result<(), AttachmentError> {
    if !sniff::is_pdf(bytes) {
        return Err(AttachmentError::WrongContent { named: Kind::Pdf, found: sniff::describe(bytes) });
    }
    let doc = load(bytes, limits)?;
    // lopdf opens files whose user password is empty and then drops /Encrypt from the trailer,
    // so both traces count. Such files are refused too: the owner chose to restrict them.
    if doc.trailer.has(b"Encrypt") || doc.encryption_state.is_some() {
        return Err(AttachmentError::EncryptedPdf);
    }
    read_pages(&doc, limits, sink)
}

fn load(bytes: &[u8], limits: &Limits) -> Result<Document, AttachmentError> {
    let limit = usize::try_from(load_stream_limit(bytes, limits)).unwrap_or(usize::MAX);
    let options = LoadOptions { max_decompressed_size: Some(limit), ..LoadOptions::default() };
    Document::load_mem_with_options(bytes, options).map_err(|e| match e {
        e if is_over_limit(&e) => AttachmentError::ZipBomb { kind: Kind::Pdf },
        lopdf::Error::Decryption(_) | lopdf::Error::InvalidPassword => AttachmentError::EncryptedPdf,
        e => AttachmentError::damaged(Kind::Pdf, e),
    })
}

/// Shares the budget among the streams decoded at load time. Their dictionaries are plain text
/// in the file, so counting their type names finds them all (and some more, which only makes
/// the share smaller).
fn load_stream_limit(bytes: &[u8], limits: &Limits) -> u64 {
    let streams = count(bytes, b"/ObjStm") + count(bytes, b"/XRef");
    (limits.max_unpacked_bytes / streams.max(1)).max(MIN_LOAD_STREAM_LIMIT.min(limits.max_unpacked_bytes))
}

fn count(haystack: &[u8], needle: &[u8]) -> u64 {
    haystack.windows(needle.len()).filter(|window| *window == needle).count() as u64
}

fn read_pages(doc: &Document, limits: &Limits, sink: &mut Sink) -> Result<(), AttachmentError> {
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err(AttachmentError::damaged(Kind::Pdf, "no pages"));
    }
    let mut walker = walker::Walker::new(doc, Budget::new(limits.max_unpacked_bytes), sink);
    let (mut read, mut failed) = (0, 0);
    for page_id in pages.values() {
        if walker.sink().is_truncated() {
            break;
        }
        if read == limits.max_pdf_pages {
            walker.sink().mark_truncated();
            break;
        }
        read += 1;
        match walker.page(*page_id) {
            Ok(true) => {}
            Ok(false) => failed += 1,
            // Out of budget: what was read so far is still worth having; with nothing read,
            // the file was built to be expensive.
            Err(Exhausted) if walker.sink().is_empty() => return Err(AttachmentError::ZipBomb { kind: Kind::Pdf }),
            Err(Exhausted) => {
                walker.sink().mark_truncated();
                break;
            }
        }
        walker.sink().paragraph_break();
    }
    if failed == read {
        return Err(AttachmentError::damaged(Kind::Pdf, "no page could be read"));
    }
    Ok(())
}

/// The running allowance of decoded bytes for one document.
pub(super) struct Budget {
    remaining: u64,
}

/// The budget ran out.
#[derive(Debug)]
pub(super) struct Exhausted;

impl Budget {
    /// Every stream costs at least this much, so that a document cannot have us decode millions
    /// of tiny streams, e.g. one small form drawn thousands of times on every page.
    const MIN_COST: u64 = 4096;

    fn new(bytes: u64) -> Self {
        Budget { remaining: bytes }
    }

    pub(super) fn remaining(&self) -> usize {
        usize::try_from(self.remaining).unwrap_or(usize::MAX)
    }

    pub(super) fn charge(&mut self, bytes: usize) -> Result<(), Exhausted> {
        let cost = (bytes as u64).max(Self::MIN_COST);
        self.remaining = self.remaining.checked_sub(cost).ok_or(Exhausted)?;
        Ok(())
    }
}

pub(super) fn is_over_limit(error: &lopdf::Error) -> bool {
    matches!(error, lopdf::Error::Decompress(DecompressError::MemoryLimitExceeded { .. }))
}

pub(super) fn number(object: &Object) -> Option<f64> {
    match *object {
        Object::Integer(i) => Some(i as f64),
        Object::Real(r) => Some(f64::from(r)),
        _ => None,
    }
}
