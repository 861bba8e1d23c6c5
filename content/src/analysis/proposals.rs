//! The changes that would address a point: per kind of point, candidate values for the field it
//! is about (a title cut or extended, a description from the page's paragraphs, a heading's level,
//! an alt text from the image's name and neighbours, a link text from where it goes, a paragraph
//! with its long sentences split), each checked as a stored value would be, distinct, and ordered
//! so that those after which the analysis no longer finds the point come first.

use super::labels::{is_file_name_like, is_useless_alt, is_vague_link_text};
use super::points::analyse;
use super::readability::{page_language, split_sentences};
use super::rewrite::{capitalize, rewrite_paragraph, Rewrite};
use super::shortening::{ellipsize, first_segment, lead_within, truncate_clauses, truncate_words};
use super::{Point, PointKind, Proposal, Target, DESCRIPTION_RECOMMENDED, TITLE_RECOMMENDED};
use crate::{validate, Block, EditTarget, Lang, Page, PageField};

/// The `variant`-th (0-based) proposal for a point, or `None` when there are not that many. Every
/// proposal differs from the current value and from the other variants; those that make the point
/// go away entirely come first.
pub fn propose(page: &Page, point: &Point, variant: usize) -> Option<Proposal> {
    proposals(page, point).into_iter().nth(variant)
}

/// All proposals for a point, in the order [`propose`] numbers them.
pub fn proposals(page: &Page, point: &Point) -> Vec<Proposal> {
    let mut resolving = Vec::new();
    let mut others = Vec::new();
    for (target, value) in candidates(page, point) {
        let Ok(current) = page.value_of(target) else { continue };
        let Ok(proposed) = validate(target, &value) else { continue };
        // An empty description is valid to store but never a fix.
        if proposed.is_empty() {
            continue;
        }
        let proposal = Proposal { target, current, proposed };
        if proposal.proposed == proposal.current || resolving.contains(&proposal) || others.contains(&proposal) {
            continue;
        }
        let mut trial = page.clone();
        if trial.apply(target, &proposal.proposed).is_err() {
            continue;
        }
        let resolves = !analyse(&trial).points.iter().any(|after| after.target == point.target);
        if resolves {
            resolving.push(proposal);
        } else {
            others.push(proposal);
        }
    }
    resolving.extend(others);
    resolving
}

fn candidates(page: &Page, point: &Point) -> Vec<(EditTarget, String)> {
    let lang = page_language(page);
    let title = EditTarget::Field(PageField::Title);
    let description = EditTarget::Field(PageField::Description);
    match (point.kind, point.target) {
        (PointKind::TitleTooLong, _) => {
            title_shortenings(&page.title).into_iter().map(|value| (title, value)).collect()
        }
        (PointKind::TitleTooShort, _) => title_extensions(page).into_iter().map(|value| (title, value)).collect(),
        (PointKind::DescriptionMissing | PointKind::DescriptionTooShort, _) => {
            description_from_content(page).into_iter().map(|value| (description, value)).collect()
        }
        (PointKind::DescriptionTooLong, _) => {
            description_shortenings(&page.description).into_iter().map(|value| (description, value)).collect()
        }
        (PointKind::NoH1, _) => headings(page)
            .map(|(index, _, _)| (EditTarget::Field(PageField::HeadingLevel { block: index }), "1".to_string()))
            .collect(),
        (PointKind::MultipleH1, Target::Block { index }) => {
            let mut list = vec![(EditTarget::Field(PageField::HeadingLevel { block: index }), "2".to_string())];
            if let Some((first, _, _)) = headings(page).find(|(_, level, _)| *level == 1) {
                list.push((EditTarget::Field(PageField::HeadingLevel { block: first }), "2".to_string()));
            }
            list
        }
        (PointKind::SkippedHeadingLevel, Target::Block { index }) => heading_level_fixes(page, index),
        (PointKind::AltMissing | PointKind::AltUseless, Target::Block { index }) => {
            alt_texts(page, index).into_iter().map(|value| (EditTarget::AltText { block: index }, value)).collect()
        }
        (PointKind::VagueLinkText, Target::Block { index }) => link_texts(page, index, lang)
            .into_iter()
            .map(|value| (EditTarget::Field(PageField::LinkText { block: index }), value))
            .collect(),
        (PointKind::LongSentences, Target::Block { index }) => match page.blocks.get(index) {
            Some(Block::Paragraph { text }) => [Rewrite::Middle, Rewrite::EveryClause, Rewrite::Shorten]
                .into_iter()
                .map(|rewrite| {
                    (EditTarget::Field(PageField::Paragraph { block: index }), rewrite_paragraph(text, rewrite))
                })
                .collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

fn headings(page: &Page) -> impl Iterator<Item = (usize, u8, &str)> {
    page.blocks.iter().enumerate().filter_map(|(index, block)| match block {
        Block::Heading { level, text } => Some((index, *level, text.as_str())),
        _ => None,
    })
}

fn heading_level_fixes(page: &Page, index: usize) -> Vec<(EditTarget, String)> {
    let Some((_, level, _)) = headings(page).find(|(at, _, _)| *at == index) else { return Vec::new() };
    let Some((previous_index, previous, _)) = headings(page).take_while(|(at, _, _)| *at < index).last() else {
        return Vec::new();
    };
    let this = EditTarget::Field(PageField::HeadingLevel { block: index });
    let mut list = vec![(this, (previous + 1).to_string())];
    // Only headings below the h1 may move: turning the h1 into an h2 would trade one point for another.
    if previous >= 2 {
        list.push((this, previous.to_string()));
        list.push((EditTarget::Field(PageField::HeadingLevel { block: previous_index }), (level - 1).to_string()));
    }
    if level - 1 > previous + 1 {
        list.push((this, (level - 1).to_string()));
    }
    list
}

fn title_fit(text: &str) -> String {
    let max = *TITLE_RECOMMENDED.end();
    if text.chars().count() <= max {
        return text.to_string();
    }
    let clauses = truncate_clauses(text, max);
    if clauses.chars().count() >= *TITLE_RECOMMENDED.start() {
        clauses
    } else {
        truncate_words(text, max)
    }
}

fn title_shortenings(title: &str) -> Vec<String> {
    let max = *TITLE_RECOMMENDED.end();
    vec![truncate_clauses(title, max), truncate_words(title, max), first_segment(title), truncate_words(title, 45)]
}

fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

fn paragraphs(page: &Page) -> impl Iterator<Item = &str> {
    page.blocks.iter().filter_map(|block| match block {
        Block::Paragraph { text } => Some(text.as_str()),
        _ => None,
    })
}

fn title_extensions(page: &Page) -> Vec<String> {
    let title = page.title.trim();
    let mut list = Vec::new();
    for (_, _, heading) in headings(page) {
        if !contains_ignoring_case(title, heading) {
            list.push(title_fit(&format!("{title} – {heading}")));
        }
    }
    let description = split_sentences(&page.description).first().copied();
    let paragraph = paragraphs(page).next().and_then(|text| split_sentences(text).first().copied());
    for sentence in description.into_iter().chain(paragraph) {
        let sentence = sentence.trim_end_matches(['.', '!', '?']);
        // "Brot: Brot" says nothing more than "Brot".
        if !contains_ignoring_case(title, sentence) {
            list.push(title_fit(&format!("{title}: {sentence}")));
        }
    }
    list
}

fn description_from_content(page: &Page) -> Vec<String> {
    let max = *DESCRIPTION_RECOMMENDED.end();
    let text = paragraphs(page).collect::<Vec<_>>().join(" ");
    let current = page.description.trim();
    let title = page.title.trim();
    let mut list = vec![lead_within(&text, max), ellipsize(&text, max)];
    let lead = lead_within(&text, max.saturating_sub(title.chars().count() + 3));
    if !lead.is_empty() {
        let separator = if title.contains(':') { " – " } else { ": " };
        list.push(format!("{title}{separator}{lead}"));
    }
    if !current.is_empty() {
        let more = lead_within(&text, max.saturating_sub(current.chars().count() + 1));
        if !more.is_empty() {
            list.push(format!("{current} {more}"));
        }
    }
    list
}

fn description_shortenings(description: &str) -> Vec<String> {
    let max = *DESCRIPTION_RECOMMENDED.end();
    // A shorter cut as the last resort, so there is a second variant even for one endless word.
    vec![lead_within(description, max), ellipsize(description, max), ellipsize(description, max - 20)]
}

/// Words from an image's file name ("sauerteig-brot.jpg" gives "Sauerteig brot"), unless the name
/// is a camera's number.
fn file_name_words(src: &str) -> Option<String> {
    let name = src.split(['?', '#']).next()?.rsplit('/').next()?;
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    if is_file_name_like(stem) {
        return None;
    }
    let words = stem.replace(['-', '_'], " ");
    let words = words.split_whitespace().collect::<Vec<_>>().join(" ");
    (words.chars().filter(|c| c.is_alphabetic()).count() >= 3).then(|| capitalize(&words))
}

fn nearest_heading(page: &Page, index: usize) -> Option<&str> {
    let before = page.blocks[..index.min(page.blocks.len())].iter().rev();
    let after = page.blocks.iter().skip(index + 1);
    before.chain(after).find_map(|block| match block {
        Block::Heading { text, .. } => Some(text.as_str()),
        _ => None,
    })
}

fn nearest_paragraph(page: &Page, index: usize) -> Option<&str> {
    let after = page.blocks.iter().skip(index + 1);
    let before = page.blocks[..index.min(page.blocks.len())].iter().rev();
    after.chain(before).find_map(|block| match block {
        Block::Paragraph { text } => Some(text.as_str()),
        _ => None,
    })
}

/// Alt texts are read aloud in full; a proposal longer than this would be a caption.
const ALT_PROPOSAL_MAX: usize = 120;

fn alt_texts(page: &Page, index: usize) -> Vec<String> {
    let Some(Block::Image { src, .. }) = page.blocks.get(index) else { return Vec::new() };
    let mut list = Vec::new();
    list.extend(file_name_words(src));
    list.extend(nearest_heading(page, index).map(str::to_string));
    if let Some(sentence) = nearest_paragraph(page, index).and_then(|text| split_sentences(text).first().copied()) {
        let sentence = sentence.trim_end_matches(['.', '!', '?']);
        list.push(match truncate_clauses(sentence, ALT_PROPOSAL_MAX) {
            _ if sentence.chars().count() <= ALT_PROPOSAL_MAX => sentence.to_string(),
            short if !short.is_empty() => short,
            _ => truncate_words(sentence, ALT_PROPOSAL_MAX),
        });
    }
    list.push(page.title.trim().to_string());
    list.retain(|alt| !is_useless_alt(alt));
    list
}

/// A readable name for where a link goes: the last path segment, a mail address, or the host.
fn href_label(href: &str, lang: Lang) -> Option<String> {
    let href = href.trim();
    if let Some(address) = href.strip_prefix("mailto:") {
        return address.split('?').next().filter(|address| !address.is_empty()).map(str::to_string);
    }
    if let Some(number) = href.strip_prefix("tel:") {
        return (!number.is_empty()).then(|| number.to_string());
    }
    let (host, path) = match href.split_once("://") {
        Some((_, rest)) => match rest.split_once('/') {
            Some((host, path)) => (Some(host), path),
            None => (Some(rest), ""),
        },
        None => (None, href),
    };
    let anchor = path.split_once('#').map(|(_, anchor)| anchor).filter(|anchor| !anchor.is_empty());
    let path = path.split(['?', '#']).next().unwrap_or("");
    let segment = path.split('/').rfind(|segment| !segment.is_empty()).or(anchor);
    match segment {
        Some(segment) => {
            let (stem, extension) = match segment.rsplit_once('.') {
                Some((stem, extension)) if !stem.is_empty() && extension.len() <= 4 => (stem, Some(extension)),
                _ => (segment, None),
            };
            let words = stem.replace(['-', '_'], " ").split_whitespace().collect::<Vec<_>>().join(" ");
            if words.is_empty() {
                return None;
            }
            let words = capitalize(&words);
            Some(match extension {
                Some(extension) if extension.eq_ignore_ascii_case("pdf") => format!("{words} (PDF)"),
                _ => words,
            })
        }
        None => match host {
            Some(host) => Some(host.trim_start_matches("www.").to_string()),
            None => Some(match lang {
                Lang::En => "Home page".to_string(),
                Lang::De => "Startseite".to_string(),
            }),
        },
    }
}

fn link_texts(page: &Page, index: usize, lang: Lang) -> Vec<String> {
    let Some(Block::Link { href, .. }) = page.blocks.get(index) else { return Vec::new() };
    let mut list = Vec::new();
    let label = href_label(href, lang);
    let heading = nearest_heading(page, index);
    if let Some(label) = &label {
        list.push(label.clone());
        list.push(match lang {
            Lang::En => format!("Open the page “{label}”"),
            Lang::De => format!("Zur Seite „{label}“"),
        });
    }
    if let Some(heading) = heading {
        list.push(match lang {
            Lang::En => format!("More about “{heading}”"),
            Lang::De => format!("Mehr zu „{heading}“"),
        });
    }
    list.retain(|text| !is_vague_link_text(text));
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::*;

    /// A page with one point of every kind, each with enough context for alternatives.
    fn flawed() -> Page {
        page(
            "Bäckerei Sonnenkorn Freiburg – frisches Brot, Brötchen, Kuchen, Torten und Kaffee seit 1952",
            "Brot.",
            vec![
                heading(2, "Unser Brot"),
                paragraph(
                    "Wir backen jeden Morgen frisches Brot aus Mehl von Mühlen der Region, und unser Sauerteig reift \
                     zwei Tage lang in der kühlen Backstube, bevor er in den Ofen kommt, und deshalb schmeckt das Brot \
                     mild und bleibt lange frisch, auch wenn man es erst am Wochenende anschneidet.",
                ),
                heading(2, "Brötchen"),
                heading(4, "Laugenbrezeln"),
                image(""),
                Block::Image { src: "/images/sauerteig-laib.jpg".into(), alt: "IMG_1234.jpg".into() },
                link("Hier klicken"),
                heading(2, "Torten"),
            ],
        )
    }

    #[test]
    fn content_proposals_are_deterministic_distinct_and_change_something() {
        let page = flawed();
        let analysis = analyse(&page);
        let mut seen_kinds = Vec::new();
        for point in &analysis.points {
            seen_kinds.push(point.kind);
            let all = proposals(&page, point);
            assert!(all.len() >= 2, "{point:?} has {all:?}");
            assert_eq!(all, proposals(&page.clone(), point), "not deterministic");
            for (variant, proposal) in all.iter().enumerate() {
                assert_eq!(propose(&page, point, variant).as_ref(), Some(proposal));
                assert_ne!(proposal.proposed, proposal.current, "{proposal:?}");
                assert!(!proposal.proposed.trim().is_empty(), "{proposal:?}");
                assert_eq!(page.value_of(proposal.target).as_ref(), Ok(&proposal.current));
                assert_eq!(all.iter().filter(|other| *other == proposal).count(), 1, "{proposal:?} twice");
            }
            assert_eq!(propose(&page, point, all.len()), None);
            let mut trial = page.clone();
            trial.apply(all[0].target, &all[0].proposed).expect("applies");
            assert!(
                !analyse(&trial).points.iter().any(|after| after.target == point.target),
                "{:?} does not fix {point:?}",
                all[0]
            );
        }
        use PointKind::*;
        assert_eq!(
            seen_kinds,
            [
                TitleTooLong,
                DescriptionTooShort,
                NoH1,
                LongSentences,
                SkippedHeadingLevel,
                AltMissing,
                AltUseless,
                VagueLinkText
            ]
        );
    }

    #[test]
    fn content_proposals_for_the_remaining_kinds() {
        let short = page(
            "Brot",
            "x".repeat(200).as_str(),
            vec![
                heading(1, "Frisches Brot aus Freiburg"),
                heading(1, "Brötchen"),
                paragraph("Wir backen jeden Morgen. Der Laden öffnet um sieben."),
            ],
        );
        let analysis = analyse(&short);
        use PointKind::*;
        assert_eq!(
            analysis.points.iter().map(|point| point.kind).collect::<Vec<_>>(),
            [TitleTooShort, DescriptionTooLong, MultipleH1]
        );
        for point in &analysis.points {
            let first = propose(&short, point, 0).expect("first");
            let second = propose(&short, point, 1).expect("second");
            assert_ne!(first, second);
            assert_ne!(first.proposed, first.current);
            assert_ne!(second.proposed, second.current);
        }
        let title = propose(&short, &analysis.points[0], 0).expect("title");
        assert_eq!(title.proposed, "Brot – Frisches Brot aus Freiburg");
        let description = propose(&short, &analysis.points[1], 0).expect("description");
        assert!(description.proposed.chars().count() <= 160, "{description:?}");
        let missing = page("Brot", "", vec![heading(1, "Brot"), paragraph("Wir backen jeden Morgen frisches Brot aus regionalem Mehl. Der Laden in der Talstraße öffnet um sieben Uhr.")]);
        let point = analyse(&missing).points.into_iter().find(|point| point.kind == DescriptionMissing).expect("point");
        let proposal = propose(&missing, &point, 0).expect("description");
        assert_eq!(proposal.current, "");
        assert!(DESCRIPTION_RECOMMENDED.contains(&proposal.proposed.chars().count()), "{proposal:?}");
        assert!(propose(&missing, &point, 1).is_some());
    }

    #[test]
    fn content_link_labels_come_from_the_target() {
        assert_eq!(href_label("/kontakt", Lang::De).as_deref(), Some("Kontakt"));
        assert_eq!(
            href_label("https://example.com/files/speisekarte-sommer.pdf", Lang::De).as_deref(),
            Some("Speisekarte sommer (PDF)")
        );
        assert_eq!(href_label("https://www.openstreetmap.org", Lang::En).as_deref(), Some("openstreetmap.org"));
        assert_eq!(
            href_label("mailto:hallo@example.com?subject=Torte", Lang::De).as_deref(),
            Some("hallo@example.com")
        );
        assert_eq!(href_label("/", Lang::De).as_deref(), Some("Startseite"));
        assert_eq!(href_label("/seite#oeffnungszeiten", Lang::De).as_deref(), Some("Seite"));
    }
}
