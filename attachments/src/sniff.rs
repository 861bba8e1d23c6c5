//! Recognises content by its first bytes, to check it against the name and to say what a
//! mismatched file really is.

const PDF_MAGIC: &[u8] = b"%PDF-";
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
const EMPTY_ZIP_MAGIC: &[u8] = b"PK\x05\x06";
/// Compound File Binary: legacy .doc/.xls, and also what Office writes for password-protected
/// .docx/.xlsx files.
const CFB_MAGIC: &[u8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";

pub(crate) fn is_pdf(bytes: &[u8]) -> bool {
    bytes.starts_with(PDF_MAGIC)
}

pub(crate) fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(ZIP_MAGIC) || bytes.starts_with(EMPTY_ZIP_MAGIC)
}

/// A short phrase for [`crate::AttachmentError::WrongContent::found`].
pub(crate) fn describe(bytes: &[u8]) -> &'static str {
    if is_pdf(bytes) {
        "a PDF document"
    } else if is_zip(bytes) {
        "a ZIP archive"
    } else if bytes.starts_with(CFB_MAGIC) {
        "a password-protected or old-format (.doc/.xls) Office file"
    } else if is_image(bytes) {
        "an image"
    } else {
        describe_text(bytes)
    }
}

/// Why `bytes` is not acceptable text, or "plain text" when it is.
pub(crate) fn describe_text(bytes: &[u8]) -> &'static str {
    if bytes.contains(&0) {
        "binary data"
    } else if std::str::from_utf8(bytes).is_err() {
        "text that is not UTF-8"
    } else {
        "plain text"
    }
}

fn is_image(bytes: &[u8]) -> bool {
    const MAGICS: [&[u8]; 4] = [b"\x89PNG\r\n\x1a\n", b"\xFF\xD8\xFF", b"GIF87a", b"GIF89a"];
    MAGICS.iter().any(|magic| bytes.starts_with(magic))
}
