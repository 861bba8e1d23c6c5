//! Hostile and broken input: whatever the bytes, `extract` returns (no panic escapes, no abort,
//! no hang), and a refusal is one of the typed errors.

mod common;

use attachments::{extract, AttachmentError, Limits};
use common::*;
use proptest::prelude::*;

const NAMES: [&str; 5] = ["x.pdf", "x.docx", "x.xlsx", "x.txt", "x.md"];

fn limits() -> Limits {
    // Small limits keep each case quick without changing which code runs.
    Limits { max_unpacked_bytes: 4 << 20, max_text_chars: 10_000, ..Limits::default() }
}

/// Runs one input and checks the outcome is well-formed.
fn check(name: &str, bytes: &[u8]) {
    match extract(name, bytes, &limits()) {
        Ok(extracted) => {
            assert!(!extracted.text.trim().is_empty());
            assert!(extracted.text.chars().count() <= limits().max_text_chars);
        }
        Err(AttachmentError::TooLarge { .. }) => panic!("{name}: small input called too large"),
        Err(_) => {}
    }
}

fn valid_files() -> Vec<(&'static str, Vec<u8>)> {
    let form = stream(
        "/Type /XObject /Subtype /Form /BBox [0 0 600 800] /Resources << /Font << /F1 3 0 R >> >>",
        b"BT /F1 12 Tf 72 500 Td [(In)-300(form)] TJ ET",
    );
    let compressed = flate(b"BT /F1 12 Tf 72 720 Td (Squeezed) Tj T* (text) ' ET");
    vec![
        (
            "a.pdf",
            text_pdf(
                &[b"BT /F1 12 Tf 72 720 Td (Hello) Tj 0 -14 Td (there) Tj ET /Fm1 Do"],
                &[form],
                "/XObject << /Fm1 4 0 R >>",
            ),
        ),
        (
            "b.pdf",
            pdf(
                &[
                    obj("<< /Type /Catalog /Pages 2 0 R >>"),
                    obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
                    obj("<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"),
                    stream("/Filter /FlateDecode", &compressed),
                    obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Widths [500 600] /FirstChar 32 >>"),
                ],
                "",
            ),
        ),
        (
            "c.docx",
            docx(&format!(
                "{}<w:tbl><w:tr><w:tc>{}</w:tc><w:tc>{}</w:tc></w:tr></w:tbl>",
                para("a &amp; b"),
                para("c"),
                para("d")
            )),
        ),
        (
            "d.xlsx",
            xlsx(&[("S", r#"<row r="1"><c r="A1" t="s"><v>0</v></c><c r="C1"><v>2.5</v></c></row>"#)], &["word"]),
        ),
        ("e.md", "# Title\n\nSome *text* — ünïcode\r\n".as_bytes().to_vec()),
    ]
}

#[test]
fn the_valid_fixtures_are_accepted() {
    for (name, bytes) in valid_files() {
        let got = extract(name, &bytes, &limits()).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert!(!got.text.is_empty(), "{name}");
    }
}

#[test]
fn every_prefix_of_a_valid_file_is_handled() {
    for (name, bytes) in valid_files() {
        // Every cut point of the small files, a sample of the larger ones.
        let step = (bytes.len() / 300).max(1);
        for end in (0..bytes.len()).step_by(step) {
            check(name, &bytes[..end]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_under_any_name(bytes in proptest::collection::vec(any::<u8>(), 0..2048), which in 0..NAMES.len()) {
        check(NAMES[which], &bytes);
    }

    /// Random bytes behind the right magic, so they get past sniffing into the parsers.
    #[test]
    fn random_bytes_behind_the_right_magic(tail in proptest::collection::vec(any::<u8>(), 0..2048), which in 0..3usize) {
        let (name, magic): (&str, &[u8]) = [("x.pdf", b"%PDF-1.7\n".as_slice()), ("x.docx", b"PK\x03\x04"), ("x.xlsx", b"PK\x05\x06")][which];
        let mut bytes = magic.to_vec();
        bytes.extend_from_slice(&tail);
        check(name, &bytes);
    }

    /// Valid files with bytes overwritten: damage that parsers meet deep inside.
    #[test]
    fn valid_files_with_bytes_overwritten(
        which in 0..5usize,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..12),
    ) {
        let (name, mut bytes) = valid_files().swap_remove(which);
        for (at, value) in edits {
            let at = at.index(bytes.len());
            bytes[at] = value;
        }
        check(name, &bytes);
    }

    /// PDF content streams of random operators and operands, through the text walker.
    #[test]
    fn random_pdf_content(ops in proptest::collection::vec(pdf_token(), 0..200)) {
        let content = ops.join(" ");
        let form = stream(
            "/Type /XObject /Subtype /Form /Resources << /Font << /F1 3 0 R >> /XObject << /Fm1 4 0 R >> >>",
            content.as_bytes(),
        );
        check("x.pdf", &text_pdf(&[content.as_bytes()], &[form], "/XObject << /Fm1 4 0 R >>"));
    }
}

fn pdf_token() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "BT",
            "ET",
            "q",
            "Q",
            "cm",
            "Tf",
            "Td",
            "TD",
            "Tm",
            "T*",
            "Tj",
            "TJ",
            "'",
            "\"",
            "Tc",
            "Tw",
            "Tz",
            "TL",
            "Do",
            "/F1",
            "/Fm1",
            "/Nope",
            "[",
            "]",
            "(",
            ")",
            "<<",
            ">>",
            "(text)",
            "<00ff>",
            "[(a)-500(b)]",
        ])
        .prop_map(str::to_owned),
        any::<f32>().prop_map(|f| f.to_string()),
        any::<i32>().prop_map(|i| i.to_string()),
    ]
}

// --- hand-made hostile PDFs: each must end, quickly, with a typed result ---

fn within_seconds(seconds: u64, name: &str, bytes: &[u8]) -> Result<attachments::Extracted, AttachmentError> {
    let started = std::time::Instant::now();
    let result = extract(name, bytes, &Limits::default());
    assert!(started.elapsed().as_secs() < seconds, "{name} took {:?}", started.elapsed());
    result
}

#[test]
fn deeply_nested_arrays_in_content_do_not_overflow_the_stack() {
    let mut content = "[".repeat(200_000).into_bytes();
    content.extend_from_slice(b" TJ BT /F1 12 Tf (after) Tj ET");
    let _ = within_seconds(20, "nested.pdf", &text_pdf(&[&content], &[], ""));
}

#[test]
fn deeply_nested_dictionaries_in_objects_do_not_overflow_the_stack() {
    let nested = format!("<< /Type /Catalog /Pages 2 0 R /X {} >>", "<< /A ".repeat(100_000));
    let objects = [obj(&nested), obj("<< /Type /Pages /Kids [] /Count 0 >>")];
    let _ = within_seconds(20, "nested.pdf", &pdf(&objects, ""));
}

#[test]
fn a_page_tree_that_contains_itself_ends() {
    let objects = [
        obj("<< /Type /Catalog /Pages 2 0 R >>"),
        obj("<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>"),
        obj("<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"),
        stream("", b"BT /F1 12 Tf (Hi) Tj ET"),
        obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
    ];
    let _ = within_seconds(20, "cycle.pdf", &pdf(&objects, ""));
}

#[test]
fn forms_that_draw_each_other_in_a_fan_stay_within_the_budget() {
    // Each of 8 forms draws the next one 10 times: 10^8 draws if nothing stopped it.
    let mut forms = Vec::new();
    for i in 0..8 {
        let next = if i < 7 { format!("/XObject << /N {} 0 R >>", 5 + i) } else { String::new() };
        let dict = format!("/Type /XObject /Subtype /Form /Resources << /Font << /F1 3 0 R >> {next} >>");
        forms
            .push(stream(&dict, b"BT /F1 12 Tf (x) Tj ET /N Do /N Do /N Do /N Do /N Do /N Do /N Do /N Do /N Do /N Do"));
    }
    let result = within_seconds(30, "fan.pdf", &text_pdf(&[b"/N Do"], &forms, "/XObject << /N 4 0 R >>"));
    assert!(matches!(result, Ok(ref got) if got.truncated), "{result:?}");
}

#[test]
fn ten_megabytes_of_pdf_shaped_garbage_end_quickly() {
    let mut bytes = b"%PDF-1.7\n".to_vec();
    let mut seed: u32 = 12345;
    while bytes.len() < 10 << 20 {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let piece: &[u8] = match seed >> 29 {
            0 => b" 1 0 obj << /Type /Page >> endobj ",
            1 => b"stream\n",
            2 => b"endstream ",
            3 => b"xref\n0 1\n0000000000 65535 f \n",
            4 => b"trailer << /Root 1 0 R >> ",
            _ => b"(garbage) [1 2 3] /Name ",
        };
        bytes.extend_from_slice(piece);
    }
    let _ = within_seconds(60, "big.pdf", &bytes);
}

/// A ZIP64 end record is trusted by nothing here: it claims a trillion entries in a directory
/// that lies far past the end of the file.
#[test]
fn a_zip64_end_record_claiming_a_trillion_entries_is_refused() {
    let mut bytes = b"PK\x03\x04".to_vec();
    bytes.resize(30, 0);
    let record_at = bytes.len() as u64;
    bytes.extend_from_slice(b"PK\x06\x06");
    bytes.extend_from_slice(&44u64.to_le_bytes());
    bytes.extend_from_slice(&[45, 0, 45, 0]);
    bytes.extend_from_slice(&[0; 8]); // this disk, disk with the directory
    bytes.extend_from_slice(&(1u64 << 40).to_le_bytes()); // entries on this disk
    bytes.extend_from_slice(&(1u64 << 40).to_le_bytes()); // entries in all
    bytes.extend_from_slice(&(1u64 << 50).to_le_bytes()); // directory size
    bytes.extend_from_slice(&(1u64 << 45).to_le_bytes()); // directory offset
    bytes.extend_from_slice(b"PK\x06\x07");
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&record_at.to_le_bytes());
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(b"PK\x05\x06");
    bytes.extend_from_slice(&[0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    bytes.extend_from_slice(&[0xff; 8]);
    bytes.extend_from_slice(&[0, 0]);
    for name in ["x.docx", "x.xlsx"] {
        assert!(within_seconds(10, name, &bytes).is_err(), "{name}");
    }
}
