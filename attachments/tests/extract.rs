//! Each kind's text comes out, and each way of refusing a file is reached.

mod common;

use std::io::{Cursor, Write};
use std::time::{Duration, Instant};

use attachments::{extract, AttachmentError, Extracted, Kind, Limits};
use common::*;

fn ok(name: &str, bytes: &[u8]) -> Extracted {
    extract(name, bytes, &Limits::default()).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

fn err(name: &str, bytes: &[u8]) -> AttachmentError {
    match extract(name, bytes, &Limits::default()) {
        Ok(extracted) => panic!("{name} was accepted: {extracted:?}"),
        Err(e) => e,
    }
}

fn wrong_content(named: Kind, error: AttachmentError) -> &'static str {
    match error {
        AttachmentError::WrongContent { named: n, found } if n == named => found,
        other => panic!("expected WrongContent for {named:?}, got {other:?}"),
    }
}

// --- plain text and Markdown ---

#[test]
fn text_comes_out_without_bom_and_with_unix_line_ends() {
    let got = ok("notes.TXT", "\u{feff}first line\r\nsecond line\rthird\n".as_bytes());
    assert_eq!(got, Extracted { kind: Kind::Text, text: "first line\nsecond line\nthird".into(), truncated: false });
}

#[test]
fn markdown_is_kept_as_written() {
    let source = "# Title\n\n- item *one*\n- item `two`\n";
    let got = ok("README.markdown", source.as_bytes());
    assert_eq!(got.kind, Kind::Markdown);
    assert_eq!(got.text, source.trim_end());
    assert_eq!(ok("a.md", b"x").kind, Kind::Markdown);
}

#[test]
fn text_that_is_not_utf8_is_wrong_content() {
    let latin1 = b"caf\xe9 cr\xe8me";
    assert_eq!(wrong_content(Kind::Text, err("menu.txt", latin1)), "text that is not UTF-8");
}

#[test]
fn binary_named_txt_is_wrong_content() {
    assert_eq!(wrong_content(Kind::Text, err("data.txt", b"abc\0def")), "binary data");
    // UTF-16 has NULs in every ASCII character.
    let utf16: Vec<u8> = "\u{feff}hello".encode_utf16().flat_map(u16::to_le_bytes).collect();
    assert_eq!(wrong_content(Kind::Markdown, err("x.md", &utf16)), "binary data");
    assert_eq!(wrong_content(Kind::Text, err("x.txt", b"\x89PNG\r\n\x1a\n\0\0")), "an image");
}

#[test]
fn whitespace_only_text_has_no_text() {
    assert_eq!(err("blank.txt", b" \n\t\n"), AttachmentError::NoText { kind: Kind::Text });
}

#[test]
fn long_text_is_cut_at_the_character_limit() {
    let limits = Limits { max_text_chars: 10, ..Limits::default() };
    let got = extract("long.txt", "ééééé ééééé ééééé".as_bytes(), &limits).unwrap();
    assert_eq!(got.text, "ééééé éééé");
    assert_eq!(got.text.chars().count(), 10);
    assert!(got.truncated);
}

#[test]
fn text_that_fits_exactly_is_not_truncated() {
    let limits = Limits { max_text_chars: 5, ..Limits::default() };
    let got = extract("fit.txt", b"12345\n\n", &limits).unwrap();
    assert_eq!((got.text.as_str(), got.truncated), ("12345", false));
}

// --- checks common to every kind ---

#[test]
fn empty_files_are_refused() {
    for name in ["a.pdf", "a.docx", "a.xlsx", "a.txt", "a.md"] {
        assert_eq!(err(name, b""), AttachmentError::Empty, "{name}");
    }
}

#[test]
fn oversized_files_are_refused_before_being_read() {
    let limits = Limits { max_bytes: 8, ..Limits::default() };
    assert_eq!(extract("a.txt", b"123456789", &limits), Err(AttachmentError::TooLarge { size: 9, limit: 8 }));
    assert!(extract("a.txt", b"12345678", &limits).is_ok());
}

#[test]
fn unsupported_extensions_are_refused() {
    assert_eq!(err("photo.JPG", b"\xFF\xD8\xFF"), AttachmentError::UnsupportedType { extension: "jpg".into() });
    assert_eq!(err("Makefile", b"all:"), AttachmentError::UnsupportedType { extension: String::new() });
    assert_eq!(err("old.doc", b"x"), AttachmentError::UnsupportedType { extension: "doc".into() });
}

#[test]
fn kind_names_and_mime_types() {
    assert_eq!(Kind::parse("docx"), Some(Kind::Docx));
    assert_eq!(Kind::Xlsx.as_str(), "xlsx");
    assert_eq!(Kind::Pdf.mime_type(), "application/pdf");
    assert!(Kind::Docx.mime_type().ends_with("wordprocessingml.document"));
}

#[test]
fn errors_read_well() {
    let message = AttachmentError::WrongContent { named: Kind::Pdf, found: "a ZIP archive" }.to_string();
    assert_eq!(message, "the file is named as PDF but contains a ZIP archive");
}

// --- DOCX ---

#[test]
fn docx_paragraphs_become_lines() {
    let body = format!(
        "{}{}<w:p><w:r><w:t>Tab</w:t><w:tab/><w:t>bed</w:t><w:br/><w:t>broken &amp; joined</w:t></w:r></w:p>",
        para("Hello Word"),
        para("Second paragraph")
    );
    let got = ok("letter.docx", &docx(&body));
    assert_eq!(got.kind, Kind::Docx);
    assert_eq!(got.text, "Hello Word\nSecond paragraph\nTab\tbed\nbroken & joined");
}

#[test]
fn docx_tables_put_cells_between_tabs_and_rows_on_lines() {
    let cell = |text: &str| format!("<w:tc>{}</w:tc>", para(text));
    let row = |cells: &[&str]| format!("<w:tr>{}</w:tr>", cells.iter().map(|c| cell(c)).collect::<String>());
    let table = format!("<w:tbl>{}{}</w:tbl>", row(&["Name", "Price"]), row(&["Tea", "3.50"]));
    let got = ok("menu.docx", &docx(&format!("{}{table}{}", para("Menu"), para("End"))));
    assert_eq!(got.text, "Menu\nName\tPrice\nTea\t3.50\nEnd");
}

#[test]
fn docx_line_breaks_inside_a_cell_stay_on_the_row() {
    let cell =
        "<w:tc><w:p><w:r><w:t>one</w:t><w:br/><w:t>two</w:t></w:r></w:p><w:p><w:r><w:t>three</w:t></w:r></w:p></w:tc>";
    let table = format!("<w:tbl><w:tr>{cell}<w:tc>{}</w:tc></w:tr></w:tbl>", para("next"));
    assert_eq!(ok("cell.docx", &docx(&table)).text, "one two three\tnext");
}

#[test]
fn docx_leaves_out_deleted_text_and_field_codes() {
    let body = "<w:p><w:r><w:t>kept</w:t></w:r><w:del><w:r><w:delText>gone</w:delText></w:r></w:del>\
                <w:r><w:instrText>PAGE</w:instrText></w:r></w:p>";
    assert_eq!(ok("a.docx", &docx(body)).text, "kept");
}

#[test]
fn docx_without_text_has_no_text() {
    assert_eq!(err("empty.docx", &docx("<w:p/>")), AttachmentError::NoText { kind: Kind::Docx });
}

#[test]
fn docx_with_broken_xml_is_damaged() {
    let bytes = zip(&[("word/document.xml", b"<w:document><w:body><w:p>".as_slice())]);
    assert!(matches!(err("a.docx", &bytes), AttachmentError::Damaged { kind: Kind::Docx, .. }));
}

#[test]
fn docx_that_is_something_else_is_wrong_content() {
    let pdf = text_pdf(&[b"BT /F1 12 Tf (x) Tj ET"], &[], "");
    assert_eq!(wrong_content(Kind::Docx, err("report.docx", &pdf)), "a PDF document");
    let workbook = xlsx(&[("S", "")], &[]);
    assert_eq!(wrong_content(Kind::Docx, err("report.docx", &workbook)), "an Excel workbook (XLSX)");
    let other_zip = zip(&[("hello.txt", b"hi".as_slice())]);
    assert_eq!(wrong_content(Kind::Docx, err("report.docx", &other_zip)), "a ZIP archive that is not a Word document");
    let cfb = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1rest";
    assert!(wrong_content(Kind::Docx, err("locked.docx", cfb)).contains("password-protected"));
}

#[test]
fn a_zip_that_is_not_a_zip_inside_is_damaged() {
    let mut bytes = docx(&para("x"));
    bytes.truncate(bytes.len() / 2);
    assert!(matches!(err("cut.docx", &bytes), AttachmentError::Damaged { kind: Kind::Docx, .. }));
}

// --- XLSX ---

#[test]
fn xlsx_sheets_become_headings_and_tab_separated_rows() {
    let first = r#"<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>
                   <row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>3.5</v></c></row>
                   <row r="4"><c r="A4" t="inlineStr"><is><t>gap</t></is></c><c r="C4"><v>7</v></c></row>"#;
    let second = r#"<row r="1"><c r="B1" t="b"><v>1</v></c></row>"#;
    let got = ok("prices.xlsx", &xlsx(&[("Prices", first), ("Flags", second)], &["Item", "Cost", "Tea"]));
    assert_eq!(got.kind, Kind::Xlsx);
    assert_eq!(got.text, "## Prices\nItem\tCost\nTea\t3.5\ngap\t\t7\n\n## Flags\n\ttrue");
}

#[test]
fn xlsx_dates_are_written_as_dates() {
    let data = r#"<row r="1"><c r="A1" s="1"><v>46143</v></c><c r="B1" s="1"><v>46143.5</v></c><c r="C1" s="1"><v>0.75</v></c></row>"#;
    assert_eq!(ok("dates.xlsx", &xlsx(&[("D", data)], &[])).text, "## D\n2026-05-01\t2026-05-01 12:00:00\t18:00:00");
}

#[test]
fn xlsx_cells_far_apart_do_not_cost_a_bounding_box() {
    // A1 and XFD1048576: a materialised range would be 17 billion cells.
    let data = r#"<row r="1"><c r="A1"><v>1</v></c></row><row r="1048576"><c r="XFD1048576"><v>2</v></c></row>"#;
    let limits = Limits { max_text_chars: 1_000, ..Limits::default() };
    let started = Instant::now();
    let got = extract("wide.xlsx", &xlsx(&[("S", data)], &[]), &limits).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    // The second cell's 16383 leading tabs use up the 1000 characters before it is reached.
    assert_eq!(got.text, "## S\n1");
    assert!(got.truncated);
}

#[test]
fn xlsx_with_an_empty_sheet_still_names_it() {
    // The sheet name alone tells the model something about the workbook, so it is kept.
    let got = ok("empty.xlsx", &xlsx(&[("Only", "")], &[]));
    assert_eq!(got.text, "## Only");
}

#[test]
fn xlsx_that_is_a_docx_is_wrong_content() {
    assert_eq!(wrong_content(Kind::Xlsx, err("sheet.xlsx", &docx(&para("x")))), "a Word document (DOCX)");
    assert_eq!(wrong_content(Kind::Xlsx, err("sheet.xlsx", b"a,b,c\n1,2,3\n")), "plain text");
}

// --- ZIP bombs ---

/// One entry of `size` zero bytes, deflated, next to a valid DOCX main part.
fn zeros_docx(size: usize) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    writer.start_file("word/document.xml", deflated()).unwrap();
    writer.write_all(docx_document(&para("x")).as_bytes()).unwrap();
    writer.start_file("word/media/zeros.xml", deflated()).unwrap();
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..size / chunk.len() {
        writer.write_all(&chunk).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

fn docx_document(body: &str) -> String {
    format!(
        r#"<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    )
}

#[test]
fn a_zip_bomb_is_refused_by_its_declared_size() {
    let bomb = zeros_docx(200 << 20);
    assert!(bomb.len() < 1 << 20, "the bomb itself is small: {} bytes", bomb.len());
    assert_eq!(err("bomb.docx", &bomb), AttachmentError::ZipBomb { kind: Kind::Docx });
}

#[test]
fn an_absurd_compression_ratio_is_refused_below_the_size_limit() {
    let bomb = zeros_docx(20 << 20);
    let limits = Limits { max_unpacked_bytes: 100 << 20, ..Limits::default() };
    assert_eq!(extract("ratio.docx", &bomb, &limits), Err(AttachmentError::ZipBomb { kind: Kind::Docx }));
}

#[test]
fn a_zip_whose_headers_lie_about_the_size_is_refused_while_reading() {
    let mut bomb = zeros_docx(16 << 20);
    lie_about_size(&mut bomb, b"word/media/zeros.xml", 1000);
    let started = Instant::now();
    assert_eq!(err("liar.docx", &bomb), AttachmentError::ZipBomb { kind: Kind::Docx });
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_lying_entry_of_any_name_is_caught_in_a_workbook() {
    // calamine reads whatever part the relationships name, so no entry may escape measuring.
    let workbook = xlsx(&[("S", "")], &[]);
    let mut archive = zip::ZipArchive::new(Cursor::new(workbook)).unwrap();
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for i in 0..archive.len() {
        writer.raw_copy_file(archive.by_index(i).unwrap()).unwrap();
    }
    writer.start_file("xl/strings.bin", deflated()).unwrap();
    writer.write_all(&vec![b'<'; 8 << 20]).unwrap();
    let mut bomb = writer.finish().unwrap().into_inner();
    lie_about_size(&mut bomb, b"xl/strings.bin", 1000);
    assert_eq!(err("liar.xlsx", &bomb), AttachmentError::ZipBomb { kind: Kind::Xlsx });
}

/// Rewrites an entry's uncompressed size in its local header (offset 22) and its central
/// directory header (offset 24).
fn lie_about_size(zip: &mut [u8], entry: &[u8], claimed: u32) {
    for (signature, size_at, name_at) in [(b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)] {
        let mut at = 0;
        while let Some(found) = find(&zip[at..], signature) {
            let header = at + found;
            if zip[header + name_at..].starts_with(entry) {
                zip[header + size_at..header + size_at + 4].copy_from_slice(&claimed.to_le_bytes());
            }
            at = header + 4;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn too_many_entries_are_refused() {
    let names: Vec<String> = (0..30).map(|i| format!("word/part{i}.xml")).collect();
    let mut entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), b"<x/>".as_slice())).collect();
    let document = docx_document(&para("x"));
    entries.push(("word/document.xml", document.as_bytes()));
    let limits = Limits { max_zip_entries: 20, ..Limits::default() };
    assert_eq!(extract("many.docx", &zip(&entries), &limits), Err(AttachmentError::ZipBomb { kind: Kind::Docx }));
}

#[test]
fn a_workbook_part_over_the_unpacked_limit_is_refused() {
    let big_row = format!(r#"<row r="1"><c r="A1" t="inlineStr"><is><t>{}</t></is></c></row>"#, "x".repeat(300_000));
    let limits = Limits { max_unpacked_bytes: 100_000, ..Limits::default() };
    let result = extract("big.xlsx", &xlsx(&[("S", &big_row)], &[]), &limits);
    assert_eq!(result, Err(AttachmentError::ZipBomb { kind: Kind::Xlsx }));
}

// --- PDF ---

#[test]
fn pdf_text_comes_out_line_by_line() {
    let content = b"BT /F1 12 Tf 72 720 Td (Hello PDF world) Tj 0 -14 Td (Second line) Tj ET";
    let got = ok("doc.pdf", &text_pdf(&[content], &[], ""));
    assert_eq!(got, Extracted { kind: Kind::Pdf, text: "Hello PDF world\nSecond line".into(), truncated: false });
}

#[test]
fn pdf_word_gaps_made_by_positioning_become_spaces() {
    // LaTeX-style: no space glyphs, words separated by TJ adjustments and by moves on the line.
    let content = b"BT /F1 10 Tf 72 700 Td [(Kerned)-20(Text)-333(has)-333(gaps)] TJ ET \
                    BT /F1 10 Tf 200 700 Td (same line) Tj ET";
    assert_eq!(ok("tex.pdf", &text_pdf(&[content], &[], "")).text, "KernedText has gaps same line");
}

#[test]
fn pdf_pages_are_separated_by_blank_lines() {
    let got = ok("two.pdf", &text_pdf(&[b"BT /F1 12 Tf (Page one) Tj ET", b"BT /F1 12 Tf (Page two) Tj ET"], &[], ""));
    assert_eq!(got.text, "Page one\n\nPage two");
}

#[test]
fn pdf_compressed_content_is_read() {
    let compressed = flate(b"BT /F1 12 Tf 72 720 Td (Squeezed text) Tj ET");
    let objects = [
        obj("<< /Type /Catalog /Pages 2 0 R >>"),
        obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
        obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"),
        stream("/Filter /FlateDecode", &compressed),
        obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
    ];
    assert_eq!(ok("z.pdf", &pdf(&objects, "")).text, "Squeezed text");
}

#[test]
fn pdf_text_inside_form_xobjects_is_read() {
    let form = stream(
        "/Type /XObject /Subtype /Form /BBox [0 0 600 800] /Resources << /Font << /F1 3 0 R >> >>",
        b"BT /F1 12 Tf 72 500 Td (Inside the form) Tj ET",
    );
    let content = b"BT /F1 12 Tf 72 720 Td (On the page) Tj ET /Fm1 Do";
    let got = ok("form.pdf", &text_pdf(&[content], &[form], "/XObject << /Fm1 4 0 R >>"));
    assert_eq!(got.text, "On the page\nInside the form");
}

#[test]
fn pdf_forms_that_draw_themselves_end() {
    // Object 4 is a form whose own resources name itself; drawing it must not recurse forever.
    let form = stream(
        "/Type /XObject /Subtype /Form /BBox [0 0 600 800] /Resources << /Font << /F1 3 0 R >> /XObject << /Me 4 0 R >> >>",
        b"BT /F1 12 Tf 72 500 Td (Loop) Tj ET /Me Do /Me Do",
    );
    let got = ok("cycle.pdf", &text_pdf(&[b"/Fm1 Do"], &[form], "/XObject << /Fm1 4 0 R >>"));
    assert_eq!(got.text, "Loop");
}

#[test]
fn pdf_without_a_text_layer_has_no_text() {
    // What a scan looks like: the page only paints an image.
    let image = stream(
        "/Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8",
        b"\x80",
    );
    let bytes = text_pdf(&[b"q 612 0 0 792 0 0 cm /Im1 Do Q"], &[image], "/XObject << /Im1 4 0 R >>");
    assert_eq!(err("scan.pdf", &bytes), AttachmentError::NoText { kind: Kind::Pdf });
}

#[test]
fn pdf_page_cap_truncates() {
    let pages: Vec<&[u8]> =
        vec![b"BT /F1 12 Tf (One) Tj ET", b"BT /F1 12 Tf (Two) Tj ET", b"BT /F1 12 Tf (Three) Tj ET"];
    let limits = Limits { max_pdf_pages: 2, ..Limits::default() };
    let got = extract("three.pdf", &text_pdf(&pages, &[], ""), &limits).unwrap();
    assert_eq!((got.text.as_str(), got.truncated), ("One\n\nTwo", true));
}

#[test]
fn pdf_long_text_is_cut() {
    let content = format!("BT /F1 12 Tf ({}) Tj ET", "word ".repeat(1000));
    let limits = Limits { max_text_chars: 100, ..Limits::default() };
    let got = extract("long.pdf", &text_pdf(&[content.as_bytes()], &[], ""), &limits).unwrap();
    // 100 characters end in a space, which is trimmed.
    assert_eq!(got.text, "word ".repeat(20).trim_end());
    assert!(got.truncated);
}

#[test]
fn encrypted_pdf_is_refused() {
    let objects = [
        obj("<< /Type /Catalog /Pages 2 0 R >>"),
        obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
        obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>"),
        stream("", b"BT /F1 12 Tf (secret) Tj ET"),
        obj(&format!("<< /Filter /Standard /V 1 /R 2 /O <{}> /U <{}> /P -44 >>", "ab".repeat(32), "cd".repeat(32))),
    ];
    let id = "0123456789abcdef0123456789abcdef";
    let bytes = pdf(&objects, &format!("/Encrypt 5 0 R /ID [<{id}> <{id}>]"));
    assert_eq!(err("locked.pdf", &bytes), AttachmentError::EncryptedPdf);
}

#[test]
fn a_pdf_that_opens_without_a_password_but_is_encrypted_is_refused_too() {
    use lopdf::{EncryptionState, EncryptionVersion, Object, Permissions};
    let plain = text_pdf(&[b"BT /F1 12 Tf (secret) Tj ET"], &[], "");
    let mut doc = lopdf::Document::load_mem(&plain).unwrap();
    let id = Object::string_literal(b"0123456789abcdef".to_vec());
    doc.trailer.set("ID", Object::Array(vec![id.clone(), id]));
    let version = EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner",
        user_password: "",
        key_length: 128,
        permissions: Permissions::PRINTABLE,
    };
    let state = EncryptionState::try_from(version).unwrap();
    doc.encrypt(&state).unwrap();
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    assert!(!bytes.windows(6).any(|w| w == b"secret"), "the fixture really is encrypted");
    assert_eq!(err("restricted.pdf", &bytes), AttachmentError::EncryptedPdf);
}

#[test]
fn pdf_named_file_with_other_content_is_wrong_content() {
    assert_eq!(wrong_content(Kind::Pdf, err("doc.pdf", &docx(&para("x")))), "a ZIP archive");
    assert_eq!(wrong_content(Kind::Pdf, err("doc.pdf", b"just some text")), "plain text");
    assert_eq!(wrong_content(Kind::Pdf, err("doc.pdf", b"\x00\x01\x02")), "binary data");
}

#[test]
fn truncated_or_garbage_pdfs_are_damaged() {
    let whole = text_pdf(&[b"BT /F1 12 Tf (Hello) Tj ET"], &[], "");
    for bytes in [&whole[..40], &whole[..12], b"%PDF-1.7\n garbage \xff\xfe and nothing else".as_slice()] {
        assert!(
            matches!(err("bad.pdf", bytes), AttachmentError::Damaged { kind: Kind::Pdf, .. }),
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn a_pdf_decompression_bomb_is_refused() {
    let bomb = flate(&vec![b' '; 8 << 20]);
    let objects = [
        obj("<< /Type /Catalog /Pages 2 0 R >>"),
        obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
        obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>"),
        stream("/Filter /FlateDecode", &bomb),
    ];
    let limits = Limits { max_unpacked_bytes: 1 << 20, ..Limits::default() };
    assert_eq!(extract("bomb.pdf", &pdf(&objects, ""), &limits), Err(AttachmentError::ZipBomb { kind: Kind::Pdf }));
}

#[test]
fn a_pdf_printed_by_chromium_reads_as_the_page_does() {
    // tests/fixtures/chrome-print.html printed with `chromium --headless --print-to-pdf`: subset
    // TrueType fonts as Type0/Identity-H with ToUnicode maps, compressed streams, a table.
    let got = ok("chrome-print.pdf", include_bytes!("fixtures/chrome-print.pdf"));
    let expected = "Tourguide test – Überschrift\n\
                    The quick brown fox jumps over the lazy dog. Ünïcödé text, “quotes”, and ligatures: office, affinity,\n\
                    fluffy.\n\
                    Name Price\n\
                    Tea 3.50 €\n\
                    Coffee 4.20 €\n\
                    Serif paragraph with bold and italic words in it.";
    assert_eq!(got.text, expected);
}

#[test]
fn pdf_text_after_an_inline_image_is_kept() {
    let content = b"BT /F1 12 Tf 72 720 Td (before) Tj ET\nBI /W 2 /H 1 /CS /G /BPC 8 ID \x80\xff\nEI\nBT /F1 12 Tf 72 700 Td (after) Tj ET";
    assert_eq!(ok("inline.pdf", &text_pdf(&[content], &[], "")).text, "before\nafter");
}
