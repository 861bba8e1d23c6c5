//! The points of a page: its title and description against what search results show, its
//! heading structure, each image's alt text, each link's text and each paragraph's sentence
//! lengths, numbered in one stable order, and the list a model reads.

use super::labels::{is_useless_alt, is_vague_link_text};
use super::readability::{page_language, reading_ease, split_sentences, word_count};
use super::{
    Analysis, Point, PointKind, Severity, Target, AVERAGE_SENTENCE_MAX, DESCRIPTION_RECOMMENDED, SENTENCE_MAX,
    TITLE_RECOMMENDED,
};
use crate::{Block, Lang, Page};

struct Finding {
    kind: PointKind,
    target: Target,
    severity: Severity,
    en: String,
    de: String,
    current: Option<String>,
}

pub fn analyse(page: &Page) -> Analysis {
    let lang = page_language(page);
    let mut findings = Vec::new();
    check_title(page, &mut findings);
    check_description(page, &mut findings);
    check_has_h1(page, &mut findings);
    let mut first_h1: Option<usize> = None;
    let mut previous_level: Option<u8> = None;
    for (index, block) in page.blocks.iter().enumerate() {
        match block {
            Block::Heading { level, text } => {
                check_heading(index, *level, text, first_h1, previous_level, &mut findings);
                if *level == 1 && first_h1.is_none() {
                    first_h1 = Some(index);
                }
                previous_level = Some(*level);
            }
            Block::Paragraph { text } => check_paragraph(index, text, lang, &mut findings),
            Block::Image { src, alt } => check_image(index, src, alt, &mut findings),
            Block::Link { text, href } => check_link(index, text, href, &mut findings),
        }
    }
    let points = findings
        .into_iter()
        .enumerate()
        .map(|(position, finding)| Point {
            number: position + 1,
            kind: finding.kind,
            target: finding.target,
            severity: finding.severity,
            message_en: finding.en,
            message_de: finding.de,
            current: finding.current,
        })
        .collect();
    Analysis { points }
}

fn length(text: &str) -> usize {
    text.trim().chars().count()
}

fn check_title(page: &Page, findings: &mut Vec<Finding>) {
    let n = length(&page.title);
    let (kind, en, de) = if n < *TITLE_RECOMMENDED.start() {
        (
            PointKind::TitleTooShort,
            format!("The title has only {n} characters; 30–60 are recommended, so that it says in search results what the page is about."),
            format!("Der Titel hat nur {n} Zeichen; empfohlen sind 30–60, damit er in Suchergebnissen sagt, worum es auf der Seite geht."),
        )
    } else if n > *TITLE_RECOMMENDED.end() {
        (
            PointKind::TitleTooLong,
            format!("The title has {n} characters; search results cut it off after about 60 (30–60 are recommended)."),
            format!("Der Titel hat {n} Zeichen; Suchergebnisse schneiden ihn nach etwa 60 ab (empfohlen sind 30–60)."),
        )
    } else {
        return;
    };
    findings.push(Finding {
        kind,
        target: Target::Title,
        severity: Severity::Medium,
        en,
        de,
        current: Some(page.title.clone()),
    });
}

fn check_description(page: &Page, findings: &mut Vec<Finding>) {
    let n = length(&page.description);
    let (kind, severity, en, de) = if n == 0 {
        (
            PointKind::DescriptionMissing,
            Severity::High,
            "The page has no meta description, so search results show a random excerpt instead; 70–160 characters are recommended.".to_string(),
            "Die Seite hat keine Meta-Beschreibung, also zeigen Suchergebnisse stattdessen einen zufälligen Ausschnitt; empfohlen sind 70–160 Zeichen.".to_string(),
        )
    } else if n < *DESCRIPTION_RECOMMENDED.start() {
        (
            PointKind::DescriptionTooShort,
            Severity::Medium,
            format!("The meta description has only {n} characters; 70–160 are recommended."),
            format!("Die Meta-Beschreibung hat nur {n} Zeichen; empfohlen sind 70–160."),
        )
    } else if n > *DESCRIPTION_RECOMMENDED.end() {
        (
            PointKind::DescriptionTooLong,
            Severity::Low,
            format!("The meta description has {n} characters; search results cut it off after about 160 (70–160 are recommended)."),
            format!("Die Meta-Beschreibung hat {n} Zeichen; Suchergebnisse schneiden sie nach etwa 160 ab (empfohlen sind 70–160)."),
        )
    } else {
        return;
    };
    let current = (n > 0).then(|| page.description.clone());
    findings.push(Finding { kind, target: Target::Description, severity, en, de, current });
}

fn check_has_h1(page: &Page, findings: &mut Vec<Finding>) {
    let mut levels = page.blocks.iter().filter_map(|block| match block {
        Block::Heading { level, .. } => Some(*level),
        _ => None,
    });
    let first = levels.next();
    if first == Some(1) || levels.any(|level| level == 1) {
        return;
    }
    let (en, de) = match first {
        Some(level) => (
            format!("The page has no main heading (h1); its first heading is an h{level}."),
            format!("Die Seite hat keine Hauptüberschrift (h1); ihre erste Überschrift ist eine h{level}."),
        ),
        None => (
            "The page has no headings at all, so neither readers nor search engines see its structure.".to_string(),
            "Die Seite hat gar keine Überschriften, also sehen weder Leser noch Suchmaschinen ihre Gliederung."
                .to_string(),
        ),
    };
    findings.push(Finding {
        kind: PointKind::NoH1,
        target: Target::Headings,
        severity: Severity::High,
        en,
        de,
        current: None,
    });
}

fn check_heading(
    index: usize,
    level: u8,
    text: &str,
    first_h1: Option<usize>,
    previous_level: Option<u8>,
    findings: &mut Vec<Finding>,
) {
    let target = Target::Block { index };
    let current = Some(text.to_string());
    if let (1, Some(first)) = (level, first_h1) {
        findings.push(Finding {
            kind: PointKind::MultipleH1,
            target,
            severity: Severity::Medium,
            en: format!("Block {index} is a second main heading (h1); a page should have exactly one, and the first is block {first}."),
            de: format!("Block {index} ist eine zweite Hauptüberschrift (h1); eine Seite sollte genau eine haben, und die erste ist Block {first}."),
            current,
        });
    } else if let Some(previous) = previous_level.filter(|previous| level > previous + 1) {
        let skipped = previous + 1;
        findings.push(Finding {
            kind: PointKind::SkippedHeadingLevel,
            target,
            severity: Severity::Low,
            en: format!("The heading in block {index} is an h{level} after an h{previous}, so level {skipped} is skipped; screen reader users navigate by these levels."),
            de: format!("Die Überschrift in Block {index} ist eine h{level} nach einer h{previous}, Ebene {skipped} wird also übersprungen; Screenreader-Nutzer navigieren über diese Ebenen."),
            current,
        });
    }
}

fn check_image(index: usize, src: &str, alt: &str, findings: &mut Vec<Finding>) {
    let target = Target::Block { index };
    if alt.trim().is_empty() {
        findings.push(Finding {
            kind: PointKind::AltMissing,
            target,
            severity: Severity::High,
            en: format!("The image in block {index} ({src}) has no alt text, so screen readers cannot describe it."),
            de: format!("Das Bild in Block {index} ({src}) hat keinen Alternativtext, also können Screenreader es nicht beschreiben."),
            current: None,
        });
    } else if is_useless_alt(alt) {
        findings.push(Finding {
            kind: PointKind::AltUseless,
            target,
            severity: Severity::Medium,
            en: format!(
                "The image in block {index} ({src}) has the alt text “{alt}”, which does not describe what it shows."
            ),
            de: format!(
                "Das Bild in Block {index} ({src}) hat den Alternativtext „{alt}“, der nicht beschreibt, was es zeigt."
            ),
            current: Some(alt.to_string()),
        });
    }
}

fn check_link(index: usize, text: &str, href: &str, findings: &mut Vec<Finding>) {
    if !is_vague_link_text(text) {
        return;
    }
    findings.push(Finding {
        kind: PointKind::VagueLinkText,
        target: Target::Block { index },
        severity: Severity::Medium,
        en: format!("The link in block {index} says “{text}”, which does not tell where it leads ({href}); many screen reader users jump from link to link."),
        de: format!("Der Link in Block {index} lautet „{text}“ und sagt nicht, wohin er führt ({href}); viele Screenreader-Nutzer springen von Link zu Link."),
        current: Some(text.to_string()),
    });
}

fn check_paragraph(index: usize, text: &str, lang: Lang, findings: &mut Vec<Finding>) {
    let counts: Vec<usize> = split_sentences(text).iter().map(|sentence| word_count(sentence)).collect();
    if counts.is_empty() {
        return;
    }
    let longest = counts.iter().copied().max().unwrap_or_default();
    let average = counts.iter().sum::<usize>() as f64 / counts.len() as f64;
    if average <= AVERAGE_SENTENCE_MAX as f64 && longest <= SENTENCE_MAX {
        return;
    }
    let ease = reading_ease(text, lang).unwrap_or_default();
    findings.push(Finding {
        kind: PointKind::LongSentences,
        target: Target::Block { index },
        severity: Severity::Low,
        en: format!("The paragraph in block {index} has long sentences: {average:.0} words on average, the longest {longest} (recommended: at most 25 on average, none over 35). Flesch reading ease ≈ {ease:.0} of 100."),
        de: format!("Der Absatz in Block {index} hat lange Sätze: im Schnitt {average:.0} Wörter, der längste {longest} (empfohlen: höchstens 25 im Schnitt, keiner über 35). Flesch-Lesbarkeit ≈ {ease:.0} von 100."),
        current: Some(text.to_string()),
    });
}

/// The numbered list a model reads: one line per point, with the current value where there is one.
pub fn render_points(analysis: &Analysis, lang: Lang) -> String {
    if analysis.points.is_empty() {
        return match lang {
            Lang::En => "No points found: title, description, headings, alt texts, links and sentence lengths look fine.",
            Lang::De => "Keine Punkte gefunden: Titel, Beschreibung, Überschriften, Alternativtexte, Links und Satzlängen sehen gut aus.",
        }
        .to_string();
    }
    let lines: Vec<String> = analysis
        .points
        .iter()
        .map(|point| {
            let mut line = format!("{}. {}", point.number, point.message(lang));
            if let Some(current) = &point.current {
                let current = shorten_for_display(current, 100);
                match lang {
                    Lang::En => line.push_str(&format!(" Current: “{current}”")),
                    Lang::De => line.push_str(&format!(" Aktuell: „{current}“")),
                }
            }
            line
        })
        .collect();
    lines.join("\n")
}

fn shorten_for_display(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::*;

    const GOOD_TITLE: &str = "Fresh sourdough bread from Freiburg"; // 35 characters
    const GOOD_DESCRIPTION: &str =
        "Our bakery in Freiburg bakes sourdough bread, rolls and cakes every morning, from regional flour only.";

    /// A page that passes every check, to which one flaw at a time is added.
    fn clean(blocks: Vec<Block>) -> Page {
        let mut all = vec![heading(1, "Our bread"), paragraph("We bake every morning. The shop opens at seven.")];
        all.extend(blocks);
        page(GOOD_TITLE, GOOD_DESCRIPTION, all)
    }

    fn kinds(page: &Page) -> Vec<PointKind> {
        analyse(page).points.into_iter().map(|point| point.kind).collect()
    }

    /// A sentence of `n` words without its full stop.
    fn words(n: usize) -> String {
        format!("Bread{}", " bread".repeat(n.saturating_sub(1)))
    }

    #[test]
    fn content_clean_page_has_no_points() {
        let page = clean(vec![
            heading(2, "Opening hours"),
            heading(3, "Holidays"),
            heading(2, "Contact"),
            image("A round sourdough loaf on a wooden board"),
            link("Contact and opening hours"),
        ]);
        assert_eq!(analyse(&page).points, []);
    }

    #[test]
    fn content_title_length() {
        let mut page = clean(vec![]);
        page.title = "x".repeat(29);
        assert_eq!(kinds(&page), [PointKind::TitleTooShort]);
        page.title = "x".repeat(30);
        assert_eq!(kinds(&page), []);
        page.title = "x".repeat(60);
        assert_eq!(kinds(&page), []);
        page.title = "x".repeat(61);
        assert_eq!(kinds(&page), [PointKind::TitleTooLong]);
        // Characters, not bytes: 40 umlauts are 80 bytes.
        page.title = "ü".repeat(40);
        assert_eq!(kinds(&page), []);
        let point = &analyse(&clean(vec![])).points;
        assert!(point.is_empty());
    }

    #[test]
    fn content_description_length() {
        let mut page = clean(vec![]);
        page.description = "  ".into();
        assert_eq!(kinds(&page), [PointKind::DescriptionMissing]);
        assert_eq!(analyse(&page).points[0].current, None);
        page.description = "x".repeat(69);
        assert_eq!(kinds(&page), [PointKind::DescriptionTooShort]);
        page.description = "x".repeat(70);
        assert_eq!(kinds(&page), []);
        page.description = "x".repeat(160);
        assert_eq!(kinds(&page), []);
        page.description = "x".repeat(161);
        assert_eq!(kinds(&page), [PointKind::DescriptionTooLong]);
    }

    #[test]
    fn content_heading_structure() {
        let no_h1 = page(GOOD_TITLE, GOOD_DESCRIPTION, vec![heading(2, "Bread"), heading(3, "Rye")]);
        assert_eq!(kinds(&no_h1), [PointKind::NoH1]);
        assert_eq!(analyse(&no_h1).points[0].target, Target::Headings);
        let no_headings = page(GOOD_TITLE, GOOD_DESCRIPTION, vec![paragraph("Only text.")]);
        assert_eq!(kinds(&no_headings), [PointKind::NoH1]);

        let two_h1 = clean(vec![heading(1, "Again")]);
        let points = analyse(&two_h1).points;
        assert_eq!(points.iter().map(|point| point.kind).collect::<Vec<_>>(), [PointKind::MultipleH1]);
        assert_eq!(points[0].target, Target::Block { index: 2 });
        assert_eq!(points[0].current.as_deref(), Some("Again"));

        let skipped = clean(vec![heading(3, "Rye")]);
        assert_eq!(kinds(&skipped), [PointKind::SkippedHeadingLevel]);
        // Going back up any number of levels is fine; only going down skips.
        let fine = clean(vec![heading(2, "A"), heading(3, "B"), heading(4, "C"), heading(2, "D")]);
        assert_eq!(kinds(&fine), []);
    }

    #[test]
    fn content_alt_texts() {
        assert_eq!(kinds(&clean(vec![image("")])), [PointKind::AltMissing]);
        assert_eq!(kinds(&clean(vec![image("   ")])), [PointKind::AltMissing]);
        for useless in ["image", "Bild", "Foto.", "IMG_1234.jpg", "IMG_1234", "DSC-0042", "brot.JPEG", "1234"] {
            assert_eq!(kinds(&clean(vec![image(useless)])), [PointKind::AltUseless], "{useless}");
        }
        for fine in ["Ein Laib Sauerteigbrot", "Image of the shop front at night", "Logo der Bäckerei"] {
            assert_eq!(kinds(&clean(vec![image(fine)])), [], "{fine}");
        }
    }

    #[test]
    fn content_vague_link_text() {
        for vague in [
            "click here",
            "Click here!",
            "Hier klicken",
            "mehr",
            "Mehr »",
            "read more",
            "Read more…",
            "here",
            "hier",
            "Link",
            " ",
        ] {
            assert_eq!(kinds(&clean(vec![link(vague)])), [PointKind::VagueLinkText], "{vague:?}");
        }
        for fine in ["Unsere Öffnungszeiten", "Read more about our sourdough", "Contact us"] {
            assert_eq!(kinds(&clean(vec![link(fine)])), [], "{fine}");
        }
    }

    #[test]
    fn content_long_sentences() {
        // Two sentences of 30 words: the average is too high although neither is over 35.
        let average = format!("{}. {}.", words(30), words(30));
        assert_eq!(kinds(&clean(vec![paragraph(&average)])), [PointKind::LongSentences]);
        // One sentence over 35 words among short ones: the average is fine, the longest is not.
        let longest = format!("{}. {}. {}. {}.", words(36), words(5), words(5), words(5));
        assert_eq!(kinds(&clean(vec![paragraph(&longest)])), [PointKind::LongSentences]);
        let fine = format!("{}. {}.", words(25), words(25));
        assert_eq!(kinds(&clean(vec![paragraph(&fine)])), []);
        let message = &analyse(&clean(vec![paragraph(&average)])).points[0].message_en;
        assert!(message.contains("30 words on average"), "{message}");
    }

    #[test]
    fn content_points_are_numbered_in_a_stable_order() {
        let page = page(
            "Short",
            "",
            vec![
                link("here"),
                heading(2, "Bread"),
                image(""),
                heading(4, "Rye"),
                paragraph(&format!("{}.", words(40))),
            ],
        );
        let analysis = analyse(&page);
        assert_eq!(analysis, analyse(&page.clone()));
        let summary: Vec<(usize, PointKind, Target)> =
            analysis.points.iter().map(|point| (point.number, point.kind, point.target)).collect();
        assert_eq!(
            summary,
            [
                (1, PointKind::TitleTooShort, Target::Title),
                (2, PointKind::DescriptionMissing, Target::Description),
                (3, PointKind::NoH1, Target::Headings),
                (4, PointKind::VagueLinkText, Target::Block { index: 0 }),
                (5, PointKind::AltMissing, Target::Block { index: 2 }),
                (6, PointKind::SkippedHeadingLevel, Target::Block { index: 3 }),
                (7, PointKind::LongSentences, Target::Block { index: 4 }),
            ]
        );
        assert_eq!(analysis.points[0].severity, Severity::Medium);
        assert_eq!(analysis.points[1].severity, Severity::High);
    }

    #[test]
    fn content_render_points_numbers_each_line() {
        let page = page("Short", "", vec![heading(1, "Bread"), link("hier")]);
        let english = render_points(&analyse(&page), Lang::En);
        let lines: Vec<&str> = english.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("1. The title has only 5 characters"), "{english}");
        assert!(lines[0].ends_with("Current: “Short”"), "{english}");
        assert!(lines[1].starts_with("2. The page has no meta description"), "{english}");
        assert!(lines[2].starts_with("3. The link in block 1 says “hier”"), "{english}");
        let german = render_points(&analyse(&page), Lang::De);
        assert!(german.starts_with("1. Der Titel hat nur 5 Zeichen"), "{german}");
        assert!(german.contains("\n3. Der Link in Block 1 lautet „hier“"), "{german}");
        assert!(render_points(&analyse(&clean(vec![])), Lang::En).starts_with("No points found"));
    }
}
