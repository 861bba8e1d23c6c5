//! Decides what an uploaded chat attachment really is and extracts its plain text for the model,
//! or refuses it with a typed [`AttachmentError`].
//!
//! The kind comes from the file name's extension and must agree with the bytes: a `.pdf` has to
//! start with `%PDF-`, a `.docx`/`.xlsx` has to be a ZIP holding `word/document.xml` /
//! `xl/workbook.xml`, and `.txt`/`.md` have to be UTF-8 without NUL bytes. Every input is
//! hostile until read: sizes, unpacked sizes, entry counts, PDF pages and nesting are bounded, and
//! a panic inside a parser becomes [`AttachmentError::Damaged`] instead of taking the server down.
//!
//! # Why these crates
//! - **PDF: `lopdf` 0.47, used directly.** `pdf-extract` gives nicer text but pins lopdf 0.42,
//!   which predates lopdf's bounds on stream decompression and object-graph recursion, and it
//!   recurses into form XObjects without a depth limit, so a self-drawing form overflows the
//!   stack, which aborts the process and cannot be caught. The text walker in `pdf` is ours and
//!   bounded; lopdf does the parsing, decryption detection and font decoding.
//! - **DOCX: `zip` + `quick-xml`.** Only `word/document.xml` is needed, and a streaming XML
//!   reader never expands entities beyond the five predefined ones, so there is no entity bomb.
//!   Both are the versions calamine already depends on, so nothing is built twice.
//! - **XLSX: `calamine`.** Pure Rust, no default features, and its cell-by-cell reader lets us
//!   stream a sheet instead of materialising its bounding box (a sheet with cells at `A1` and
//!   `XFD1048576` would otherwise ask for billions of cells).
//!
//! What `catch_unwind` cannot catch (stack overflow, allocation failure) is prevented by the
//! bounds instead; see [`Limits`].

mod docx;
mod error;
mod kind;
mod pdf;
mod sink;
mod sniff;
mod text;
mod xlsx;
mod zipguard;

use std::panic::{self, AssertUnwindSafe};

pub use error::AttachmentError;
pub use kind::Kind;

/// What an attachment may cost. The defaults suit a chat upload; the server may tighten them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest upload accepted, in bytes.
    pub max_bytes: usize,
    /// Most characters of text handed to the model; longer text is cut and flagged.
    pub max_text_chars: usize,
    /// Most bytes that may be decompressed while reading one file: ZIP entries of a DOCX/XLSX,
    /// and the compressed streams of a PDF.
    pub max_unpacked_bytes: u64,
    /// Most entries a DOCX/XLSX archive may have.
    pub max_zip_entries: usize,
    /// Most PDF pages read; text of later pages is dropped and the result flagged as truncated.
    pub max_pdf_pages: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 10 * 1024 * 1024,
            max_text_chars: 200_000,
            max_unpacked_bytes: 50 * 1024 * 1024,
            max_zip_entries: 2_000,
            max_pdf_pages: 500,
        }
    }
}

/// The text of an accepted attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub kind: Kind,
    pub text: String,
    /// True when text was dropped to stay within [`Limits::max_text_chars`] or
    /// [`Limits::max_pdf_pages`].
    pub truncated: bool,
}

/// Works out what `bytes` (uploaded as `file_name`) is and extracts its text.
///
/// Never panics: a panic in a parser is caught and reported as [`AttachmentError::Damaged`].
pub fn extract(file_name: &str, bytes: &[u8], limits: &Limits) -> Result<Extracted, AttachmentError> {
    let kind = Kind::from_file_name(file_name)
        .ok_or_else(|| AttachmentError::UnsupportedType { extension: kind::extension(file_name) })?;
    if bytes.is_empty() {
        return Err(AttachmentError::Empty);
    }
    if bytes.len() > limits.max_bytes {
        return Err(AttachmentError::TooLarge { size: bytes.len(), limit: limits.max_bytes });
    }
    let mut sink = sink::Sink::new(limits.max_text_chars);
    guard_panics(kind, || extract_kind(kind, bytes, limits, &mut sink))?;
    finish(kind, sink)
}

/// The parsers (PDF parsers above all, which are known to panic on malformed files) run on bytes
/// a stranger chose. A panic must cost this one upload, not the request handler or the worker
/// thread, so it becomes [`AttachmentError::Damaged`]. `AssertUnwindSafe` is sound here: what
/// the closure mutates (the text sink) is thrown away when a panic is caught. The panic hook
/// still runs, so the panic is logged like any other.
fn guard_panics(kind: Kind, run: impl FnOnce() -> Result<(), AttachmentError>) -> Result<(), AttachmentError> {
    panic::catch_unwind(AssertUnwindSafe(run))
        .unwrap_or_else(|payload| Err(AttachmentError::Damaged { kind, detail: panic_message(payload.as_ref()) }))
}

fn extract_kind(kind: Kind, bytes: &[u8], limits: &Limits, sink: &mut sink::Sink) -> Result<(), AttachmentError> {
    match kind {
        Kind::Pdf => pdf::extract(bytes, limits, sink),
        Kind::Docx => docx::extract(bytes, limits, sink),
        Kind::Xlsx => xlsx::extract(bytes, limits, sink),
        Kind::Text | Kind::Markdown => text::extract(kind, bytes, sink),
    }
}

fn finish(kind: Kind, sink: sink::Sink) -> Result<Extracted, AttachmentError> {
    let (text, truncated) = sink.finish();
    if text.trim().is_empty() {
        return Err(AttachmentError::NoText { kind });
    }
    Ok(Extracted { kind, text, truncated })
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    format!("the parser panicked: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_parser_becomes_damaged() {
        let result = guard_panics(Kind::Pdf, || panic!("index out of bounds"));
        let expected = "the parser panicked: index out of bounds";
        assert_eq!(result, Err(AttachmentError::Damaged { kind: Kind::Pdf, detail: expected.into() }));
    }
}
