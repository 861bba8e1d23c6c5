//! Opens the ZIP container of a DOCX/XLSX and proves it is not a bomb before anything parses it.
//!
//! Declared sizes are checked first because that is cheap, but a header can lie, so every entry
//! is then really decompressed under a running byte budget. Decompression is deterministic, so
//! the parser that reads the same entries afterwards sees exactly what was measured.

use std::io::{self, Cursor, Read, Write};

use zip::ZipArchive;

use crate::{sniff, AttachmentError, Kind, Limits};

pub(crate) type Archive<'a> = ZipArchive<Cursor<&'a [u8]>>;

/// Entries smaller than this may compress as well as they like; only big ones can hurt.
const RATIO_CHECK_FLOOR: u64 = 1024 * 1024;
/// Deflate tops out near 1032:1 on runs of one byte; real OOXML parts stay far below this.
const MAX_RATIO: u64 = 500;

pub(crate) fn open<'a>(kind: Kind, bytes: &'a [u8], limits: &Limits) -> Result<Archive<'a>, AttachmentError> {
    if !sniff::is_zip(bytes) {
        return Err(AttachmentError::WrongContent { named: kind, found: sniff::describe(bytes) });
    }
    let mut archive = ZipArchive::new(Cursor::new(bytes)).map_err(|e| AttachmentError::damaged(kind, e))?;
    if archive.len() > limits.max_zip_entries {
        return Err(AttachmentError::ZipBomb { kind });
    }
    if archive.index_for_name(main_part(kind)).is_none() {
        return Err(AttachmentError::WrongContent { named: kind, found: describe_package(&archive, kind) });
    }
    check_declared_sizes(&archive, kind, limits)?;
    measure_entries(&mut archive, kind, limits)?;
    Ok(archive)
}

/// Reads one entry whole, never holding more than `limits.max_unpacked_bytes` of it.
pub(crate) fn read_entry(
    archive: &mut Archive<'_>,
    kind: Kind,
    name: &str,
    limits: &Limits,
) -> Result<Vec<u8>, AttachmentError> {
    let mut file = archive.by_name(name).map_err(|e| AttachmentError::damaged(kind, e))?;
    let declared = file.size();
    let mut out = Vec::new();
    let mut budget = limits.max_unpacked_bytes;
    copy_bounded(&mut file, &mut out, declared, &mut budget, kind)?;
    Ok(out)
}

fn main_part(kind: Kind) -> &'static str {
    match kind {
        Kind::Docx => "word/document.xml",
        _ => "xl/workbook.xml",
    }
}

/// What a ZIP without the expected main part is, for the error message.
fn describe_package(archive: &Archive<'_>, kind: Kind) -> &'static str {
    let has = |name| archive.index_for_name(name).is_some();
    if has("word/document.xml") {
        "a Word document (DOCX)"
    } else if has("xl/workbook.xml") {
        "an Excel workbook (XLSX)"
    } else if has("ppt/presentation.xml") {
        "a PowerPoint presentation (PPTX)"
    } else if has("content.xml") && has("mimetype") {
        "an OpenDocument file"
    } else if kind == Kind::Docx {
        "a ZIP archive that is not a Word document"
    } else {
        "a ZIP archive that is not an Excel workbook"
    }
}

fn check_declared_sizes(archive: &Archive<'_>, kind: Kind, limits: &Limits) -> Result<(), AttachmentError> {
    let mut total: u64 = 0;
    for index in 0..archive.len() {
        let entry = archive.by_index_data(index).map_err(|e| AttachmentError::damaged(kind, e))?;
        let (size, packed) = (entry.size(), entry.compressed_size());
        total = total.saturating_add(size);
        let absurd = size > RATIO_CHECK_FLOOR && size / packed.max(1) > MAX_RATIO;
        if absurd || total > limits.max_unpacked_bytes {
            return Err(AttachmentError::ZipBomb { kind });
        }
    }
    Ok(())
}

/// Decompresses every entry, against one budget for the whole archive. Not only the XML parts:
/// calamine follows the package's relationships to whatever part names they give, so a hostile
/// workbook can point its sheet or shared strings at `anything.bin`.
fn measure_entries(archive: &mut Archive<'_>, kind: Kind, limits: &Limits) -> Result<(), AttachmentError> {
    let mut budget = limits.max_unpacked_bytes;
    for index in 0..archive.len() {
        let mut file = archive.by_index(index).map_err(|e| AttachmentError::damaged(kind, e))?;
        let declared = file.size();
        copy_bounded(&mut file, &mut io::sink(), declared, &mut budget, kind)?;
    }
    Ok(())
}

/// Copies an entry, failing as a bomb as soon as it yields more than it declared (a lying
/// header) or more than the budget left, so memory and time stay bounded whatever the header
/// says.
fn copy_bounded(
    reader: &mut impl Read,
    writer: &mut impl Write,
    declared: u64,
    budget: &mut u64,
    kind: Kind,
) -> Result<(), AttachmentError> {
    let mut buf = vec![0; 64 * 1024];
    let mut copied: u64 = 0;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if is_size_lie(&e) => return Err(AttachmentError::ZipBomb { kind }),
            Err(e) => return Err(AttachmentError::damaged(kind, e)),
        };
        copied += n as u64;
        if copied > declared || copied > *budget {
            return Err(AttachmentError::ZipBomb { kind });
        }
        writer.write_all(&buf[..n]).map_err(|e| AttachmentError::damaged(kind, e))?;
    }
    *budget -= copied;
    Ok(())
}

/// The zip crate itself refuses to yield more than the declared size (and may do so before we
/// have seen a byte), with an error whose kind it shares with a checksum failure; only the
/// message tells them apart. Should the wording change,
/// the lie is still refused, only as `Damaged`.
fn is_size_lie(error: &io::Error) -> bool {
    error.to_string().contains("larger than its declared")
}
