//! Builds real fixture files in memory: minimal but valid PDFs, DOCX and XLSX packages.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::io::{Cursor, Write};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

pub fn deflated() -> SimpleFileOptions {
    SimpleFileOptions::default().compression_method(CompressionMethod::Deflated)
}

/// A ZIP of the given entries, deflated.
pub fn zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in entries {
        writer.start_file(*name, deflated()).unwrap();
        writer.write_all(data).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

const W_NS: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";

/// A DOCX whose `w:body` holds `body` (WordprocessingML with the `w:` prefix).
pub fn docx(body: &str) -> Vec<u8> {
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{W_NS}"><w:body>{body}</w:body></w:document>"#
    );
    zip(&[
        ("[Content_Types].xml", CONTENT_TYPES_DOCX.as_bytes()),
        ("_rels/.rels", ROOT_RELS_DOCX.as_bytes()),
        ("word/document.xml", document.as_bytes()),
    ])
}

/// A paragraph with one run of text.
pub fn para(text: &str) -> String {
    format!("<w:p><w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>")
}

const CONTENT_TYPES_DOCX: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;
const ROOT_RELS_DOCX: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;

/// An XLSX with one worksheet per `(name, sheetData inner XML)`, plus shared strings.
pub fn xlsx(sheets: &[(&str, &str)], shared_strings: &[&str]) -> Vec<u8> {
    let mut workbook_sheets = String::new();
    let mut rels = String::new();
    let mut overrides = String::new();
    let mut parts: Vec<(String, String)> = Vec::new();
    for (i, (name, data)) in sheets.iter().enumerate() {
        let n = i + 1;
        workbook_sheets.push_str(&format!(r#"<sheet name="{name}" sheetId="{n}" r:id="rId{n}"/>"#));
        rels.push_str(&format!(
            r#"<Relationship Id="rId{n}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet{n}.xml"/>"#
        ));
        overrides.push_str(&format!(
            r#"<Override PartName="/xl/worksheets/sheet{n}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>"#
        ));
        parts.push((
            format!("xl/worksheets/sheet{n}.xml"),
            format!(r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{S_NS}"><sheetData>{data}</sheetData></worksheet>"#),
        ));
    }
    // Style 1 is Excel's built-in short date format, so cells with s="1" hold dates.
    let styles_id = sheets.len() + 2;
    rels.push_str(&format!(
        r#"<Relationship Id="rId{styles_id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>"#
    ));
    parts.push((
        "xl/styles.xml".into(),
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="{S_NS}"><cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/></cellXfs></styleSheet>"#
        ),
    ));
    let strings_id = sheets.len() + 1;
    rels.push_str(&format!(
        r#"<Relationship Id="rId{strings_id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>"#
    ));
    let items: String = shared_strings.iter().map(|s| format!("<si><t>{s}</t></si>")).collect();
    parts.push((
        "xl/sharedStrings.xml".into(),
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{S_NS}" count="{0}" uniqueCount="{0}">{items}</sst>"#,
            shared_strings.len()
        ),
    ));
    parts.push((
        "xl/workbook.xml".into(),
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{S_NS}" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>{workbook_sheets}</sheets></workbook>"#
        ),
    ));
    parts.push((
        "xl/_rels/workbook.xml.rels".into(),
        format!(r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>"#),
    ));
    parts.push((
        "[Content_Types].xml".into(),
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>{overrides}</Types>"#
        ),
    ));
    parts.push((
        "_rels/.rels".into(),
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#.into(),
    ));
    let entries: Vec<(&str, &[u8])> = parts.iter().map(|(n, d)| (n.as_str(), d.as_bytes())).collect();
    zip(&entries)
}

const S_NS: &str = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";

/// A PDF from numbered object bodies (object 1 must be the catalog), with a correct xref table.
pub fn pdf(objects: &[Vec<u8>], trailer_extra: &str) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R {trailer_extra} >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1)
            .as_bytes(),
    );
    out
}

/// A stream object body.
pub fn stream(dict_extra: &str, content: &[u8]) -> Vec<u8> {
    let mut body = format!("<< /Length {} {dict_extra} >>\nstream\n", content.len()).into_bytes();
    body.extend_from_slice(content);
    body.extend_from_slice(b"\nendstream");
    body
}

pub fn obj(body: &str) -> Vec<u8> {
    body.as_bytes().to_vec()
}

/// A PDF with one page per content stream.
///
/// Objects: 1 catalog, 2 pages, 3 font, then `extra` (4, 5, ...), then per page a page object
/// and its content stream. Every page's resources are `/Font << /F1 3 0 R >>` plus
/// `resources_extra`.
pub fn text_pdf(contents: &[&[u8]], extra: &[Vec<u8>], resources_extra: &str) -> Vec<u8> {
    let first_page = 4 + extra.len();
    let kids: Vec<String> = (0..contents.len()).map(|i| format!("{} 0 R", first_page + 2 * i)).collect();
    let mut objects = vec![
        obj("<< /Type /Catalog /Pages 2 0 R >>"),
        obj(&format!("<< /Type /Pages /Kids [{}] /Count {} >>", kids.join(" "), contents.len())),
        obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"),
    ];
    objects.extend(extra.iter().cloned());
    for (i, content) in contents.iter().enumerate() {
        let page = first_page + 2 * i;
        objects.push(obj(&format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {} 0 R /Resources << /Font << /F1 3 0 R >> {resources_extra} >> >>",
            page + 1
        )));
        objects.push(stream("", content));
    }
    pdf(&objects, "")
}

/// Zlib-compresses, for PDF `/FlateDecode` streams.
pub fn flate(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}
