//! Judging a page and proposing fixes, as pure functions: the same page always gives the same
//! numbered points and the same proposals, so a scripted demo model can play a tour from them and
//! a test can pin them down.
//!
//! Readability is measured in words per sentence (the rule of thumb the tour teaches) and, for
//! information, with the Flesch reading ease: for English `206.835 − 1.015·ASL − 84.6·ASW`, for
//! German Amstad's adaptation `180 − ASL − 58.5·ASW`, where ASL is words per sentence and ASW
//! syllables per word. Syllables are estimated as groups of consecutive vowels (ä, ö, ü and y
//! count as vowels; a final silent English "e" does not), which is rough but stable.

use std::ops::RangeInclusive;

use crate::Lang;
use serde::{Deserialize, Serialize};

use crate::{validate, Block, EditTarget, Page, PageField};

/// Search engines show about this many characters of a title and a description.
pub const TITLE_RECOMMENDED: RangeInclusive<usize> = 30..=60;
pub const DESCRIPTION_RECOMMENDED: RangeInclusive<usize> = 70..=160;
pub const AVERAGE_SENTENCE_MAX: usize = 25;
pub const SENTENCE_MAX: usize = 35;
/// Proposals split sentences longer than this, so the result is comfortably under the limits.
const SPLIT_TARGET: usize = 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub points: Vec<Point>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// 1-based, in the order of [`analyse`]: title, description, the page's headings, then the
    /// blocks from top to bottom.
    pub number: usize,
    pub kind: PointKind,
    pub target: Target,
    pub severity: Severity,
    pub message_en: String,
    pub message_de: String,
    pub current: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointKind {
    TitleTooShort,
    TitleTooLong,
    DescriptionMissing,
    DescriptionTooShort,
    DescriptionTooLong,
    NoH1,
    MultipleH1,
    SkippedHeadingLevel,
    AltMissing,
    AltUseless,
    VagueLinkText,
    LongSentences,
}

/// What a point is about. `Headings` is the page's heading structure as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "target", rename_all = "snake_case")]
pub enum Target {
    Title,
    Description,
    Headings,
    Block { index: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    High,
    Medium,
    Low,
}

/// One concrete change that would address a point; applying it is an approval-bound write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub target: EditTarget,
    pub current: String,
    pub proposed: String,
}

impl Point {
    pub fn message(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.message_en,
            Lang::De => &self.message_de,
        }
    }
}

// --- analysis ---------------------------------------------------------------------------------

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

// --- rules of thumb -----------------------------------------------------------------------------

const USELESS_ALT: &[&str] =
    &["image", "img", "picture", "pic", "photo", "graphic", "bild", "foto", "grafik", "abbildung", "symbolbild"];

const IMAGE_EXTENSIONS: &[&str] = &["jpg", "jpeg", "png", "gif", "webp", "svg", "avif", "heic", "tif", "tiff", "bmp"];

const CAMERA_PREFIXES: &[&str] =
    &["img", "dsc", "dscn", "dscf", "pxl", "image", "photo", "foto", "bild", "screenshot", "scan"];

const VAGUE_LINK_TEXT: &[&str] = &[
    "click here",
    "click",
    "here",
    "this link",
    "link",
    "read more",
    "more",
    "learn more",
    "details",
    "info",
    "go",
    "hier klicken",
    "klicken sie hier",
    "hier",
    "mehr",
    "mehr lesen",
    "weiterlesen",
    "weiter",
    "mehr erfahren",
    "mehr infos",
    "infos",
    "dieser link",
    "diesen link",
];

/// A file name, or what a camera calls its pictures ("IMG_1234", "DSC-0042").
pub fn is_file_name_like(text: &str) -> bool {
    let lower = text.trim().to_lowercase();
    if lower.is_empty() || lower.contains(char::is_whitespace) {
        return false;
    }
    if let Some((_, extension)) = lower.rsplit_once('.') {
        if IMAGE_EXTENSIONS.contains(&extension) {
            return true;
        }
    }
    CAMERA_PREFIXES.iter().any(|prefix| {
        lower.strip_prefix(prefix).is_some_and(|rest| {
            let rest = rest.trim_start_matches(['_', '-']);
            rest.starts_with(|c: char| c.is_ascii_digit())
                && rest.chars().all(|c| c.is_ascii_digit() || c == '_' || c == '-')
        })
    })
}

/// An alt text that is there but says nothing: a generic word, a file name, or no letters.
pub fn is_useless_alt(alt: &str) -> bool {
    let normal = alt.trim().trim_end_matches('.').to_lowercase();
    USELESS_ALT.contains(&normal.as_str()) || is_file_name_like(&normal) || !normal.chars().any(char::is_alphabetic)
}

/// Link text that only makes sense next to the text around it.
pub fn is_vague_link_text(text: &str) -> bool {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let normal = words.join(" ");
    let normal = normal.trim_matches(|c: char| !c.is_alphanumeric());
    normal.is_empty() || VAGUE_LINK_TEXT.contains(&normal)
}

const ABBREVIATIONS: &[&str] = &[
    "ca", "bzw", "usw", "etc", "dr", "nr", "str", "inkl", "ggf", "evtl", "vgl", "mr", "mrs", "ms", "st", "prof", "vs",
    "jh",
];

/// Splits text after `.`, `!`, `?` or `…` followed by a space and a word that does not start in
/// lowercase; not after known abbreviations, abbreviations with inner dots ("z.B.") or one- and
/// two-digit numbers (German ordinals: "am 3. Mai").
pub fn split_sentences(text: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut sentences = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let (position, c) = chars[i];
        if !matches!(c, '.' | '!' | '?' | '…') {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < chars.len()
            && matches!(chars[end].1, '.' | '!' | '?' | '…' | '"' | '\'' | '“' | '”' | '«' | '»' | ')')
        {
            end += 1;
        }
        let next_word = chars[end..].iter().map(|(_, c)| *c).find(|c| !c.is_whitespace());
        let followed_by_space = end == chars.len() || chars[end].1.is_whitespace();
        let before = text[start..position].split_whitespace().last().unwrap_or("");
        let before_lower = before.to_lowercase();
        let is_abbreviation = c == '.'
            && (ABBREVIATIONS.contains(&before_lower.as_str())
                || before.contains('.')
                || (!before.is_empty() && before.len() <= 2 && before.chars().all(|c| c.is_ascii_digit())));
        let ends = followed_by_space && !next_word.is_some_and(char::is_lowercase) && !is_abbreviation;
        if ends {
            let byte_end = chars.get(end).map_or(text.len(), |(at, _)| *at);
            let sentence = text[start..byte_end].trim();
            if !sentence.is_empty() {
                sentences.push(sentence);
            }
            start = byte_end;
        }
        i = end;
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        sentences.push(rest);
    }
    sentences
}

fn is_word(token: &str) -> bool {
    token.chars().any(char::is_alphanumeric)
}

pub fn word_count(text: &str) -> usize {
    text.split_whitespace().filter(|token| is_word(token)).count()
}

fn syllables(word: &str, lang: Lang) -> usize {
    let lower: Vec<char> = word.to_lowercase().chars().filter(|c| c.is_alphabetic()).collect();
    let is_vowel = |c: char| "aeiouyäöüéèêàâîôû".contains(c);
    let mut count = 0;
    let mut previous_vowel = false;
    for &c in &lower {
        let vowel = is_vowel(c);
        if vowel && !previous_vowel {
            count += 1;
        }
        previous_vowel = vowel;
    }
    let silent_e = lang == Lang::En && lower.ends_with(&['e']) && !lower.ends_with(&['l', 'e']) && count > 1;
    if silent_e {
        count -= 1;
    }
    count.max(1)
}

/// The Flesch reading ease of a text (see the module comment), clamped to 0–100; `None` without words.
pub fn reading_ease(text: &str, lang: Lang) -> Option<f64> {
    let sentences = split_sentences(text).len().max(1) as f64;
    let words: Vec<&str> = text.split_whitespace().filter(|token| is_word(token)).collect();
    if words.is_empty() {
        return None;
    }
    let syllable_count: usize = words.iter().map(|word| syllables(word, lang)).sum();
    let asl = words.len() as f64 / sentences;
    let asw = syllable_count as f64 / words.len() as f64;
    let ease = match lang {
        Lang::En => 206.835 - 1.015 * asl - 84.6 * asw,
        Lang::De => 180.0 - asl - 58.5 * asw,
    };
    Some(ease.clamp(0.0, 100.0))
}

const GERMAN_MARKERS: &[&str] = &[
    "der", "die", "das", "und", "ist", "wir", "nicht", "mit", "für", "ein", "eine", "unsere", "unser", "sie", "auf",
    "den", "dem", "zu", "im", "von", "auch", "bei", "sich",
];
const ENGLISH_MARKERS: &[&str] = &[
    "the", "and", "is", "we", "not", "with", "for", "a", "an", "our", "you", "on", "of", "to", "it", "at", "this",
    "that", "are", "by",
];

/// The language a page is written in, by counting common small words; German wins a tie, since
/// the tour's site is a German one.
pub fn page_language(page: &Page) -> Lang {
    let mut german = 0;
    let mut english = 0;
    let texts = std::iter::once(page.title.as_str()).chain(std::iter::once(page.description.as_str())).chain(
        page.blocks.iter().map(|block| match block {
            Block::Heading { text, .. } | Block::Paragraph { text } | Block::Link { text, .. } => text.as_str(),
            Block::Image { alt, .. } => alt.as_str(),
        }),
    );
    for text in texts {
        for token in text.split_whitespace() {
            let word = token.trim_matches(|c: char| !c.is_alphabetic()).to_lowercase();
            german += usize::from(GERMAN_MARKERS.contains(&word.as_str()));
            english += usize::from(ENGLISH_MARKERS.contains(&word.as_str()));
        }
    }
    if english > german {
        Lang::En
    } else {
        Lang::De
    }
}

// --- proposals ----------------------------------------------------------------------------------

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

const DANGLING: &[&str] = &[
    "und", "oder", "für", "mit", "in", "im", "am", "an", "zu", "zum", "zur", "von", "vom", "der", "die", "das", "den",
    "dem", "des", "ein", "eine", "einen", "seit", "auf", "aus", "bei", "nach", "über", "and", "or", "for", "with",
    "at", "to", "of", "the", "a", "an", "on", "from", "by",
];

const SEPARATORS: &[&str] = &[" | ", " – ", " — ", " - ", ": ", " · "];

/// Drops what cannot end a shortened text: separators, commas and small words such as "und".
fn trim_dangling(text: &str) -> String {
    let mut words: Vec<&str> = text.split_whitespace().collect();
    loop {
        while let Some(last) = words.last() {
            let trimmed = last.trim_end_matches([',', ';', ':', '–', '—', '-', '|', '·']);
            if trimmed.is_empty() {
                words.pop();
            } else if trimmed.len() != last.len() {
                let at = words.len() - 1;
                words[at] = trimmed;
            } else {
                break;
            }
        }
        match words.last() {
            Some(last) if words.len() > 1 && DANGLING.contains(&last.to_lowercase().as_str()) => {
                words.pop();
            }
            _ => break,
        }
    }
    words.join(" ")
}

/// The longest run of whole words that fits in `max` characters.
fn truncate_words(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        let extra = usize::from(!out.is_empty()) + word.chars().count();
        if count + extra > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        count += extra;
    }
    if out.is_empty() {
        out = text.trim().chars().take(max).collect();
    }
    trim_dangling(&out)
}

/// The longest prefix that ends before a comma, a separator or "und"/"and"/"oder"/"or" and fits.
fn truncate_clauses(text: &str, max: usize) -> String {
    let mut cuts: Vec<usize> = Vec::new();
    for (at, c) in text.char_indices() {
        if matches!(c, ',' | ';') {
            cuts.push(at);
        }
    }
    for marker in SEPARATORS.iter().chain(&[" und ", " and ", " oder ", " or "]) {
        cuts.extend(text.match_indices(marker).map(|(at, _)| at));
    }
    cuts.sort_unstable();
    cuts.into_iter()
        .rev()
        .map(|at| trim_dangling(&text[..at]))
        .find(|prefix| !prefix.is_empty() && prefix.chars().count() <= max)
        .unwrap_or_default()
}

fn first_segment(text: &str) -> String {
    SEPARATORS
        .iter()
        .filter_map(|separator| text.find(separator))
        .min()
        .map(|at| trim_dangling(&text[..at]))
        .unwrap_or_default()
}

/// Whole sentences from the start that together fit in `max` characters.
fn sentences_within(text: &str, max: usize) -> String {
    let mut out = String::new();
    for sentence in split_sentences(text) {
        let joined = if out.is_empty() { sentence.to_string() } else { format!("{out} {sentence}") };
        if joined.chars().count() > max {
            break;
        }
        out = joined;
    }
    out
}

fn ellipsize(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    format!("{}…", truncate_words(text, max - 1))
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

/// Whole sentences that fit, else the clauses that fit closed with a full stop.
fn lead_within(text: &str, max: usize) -> String {
    let sentences = sentences_within(text, max);
    if !sentences.is_empty() {
        return sentences;
    }
    let clauses = truncate_clauses(text, max.saturating_sub(1));
    if clauses.is_empty() || clauses.ends_with(['.', '!', '?']) {
        clauses
    } else {
        format!("{clauses}.")
    }
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

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
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

#[derive(Clone, Copy)]
enum Rewrite {
    /// Splits each long sentence at the clause boundary nearest its middle, until the parts are short.
    Middle,
    /// Splits each long sentence at every clause boundary.
    EveryClause,
    /// Keeps only the first clauses of each long sentence.
    Shorten,
}

/// Words after which a comma starts a subordinate clause: splitting there would leave a fragment.
const SUBORDINATORS: &[&str] = &[
    "der", "die", "das", "dem", "den", "deren", "dessen", "welche", "welcher", "welches", "dass", "weil", "wenn", "ob",
    "als", "obwohl", "damit", "sodass", "wie", "wo", "während", "bevor", "nachdem", "bis", "seit", "seitdem", "um",
    "ohne", "which", "who", "whom", "whose", "that", "because", "if", "when", "while", "although", "though", "since",
    "until", "where", "as", "whether", "before", "after", "auch", "even",
];
/// Dropped at the start of a split-off piece: "…, und wir backen" becomes "Wir backen".
const JOINERS: &[&str] = &["und", "and"];

fn bare(token: &str) -> String {
    token.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase()
}

fn is_dash(token: &str) -> bool {
    matches!(token, "–" | "—" | "-")
}

/// Where a piece may start after a boundary before `at`: skips a dash and a joining "und"/"and".
fn piece_start(words: &[&str], mut at: usize) -> usize {
    while at < words.len() && (is_dash(words[at]) || JOINERS.contains(&bare(words[at]).as_str())) {
        at += 1;
    }
    at
}

/// Clause boundaries inside `words[from..to]` as (end of the left piece, start of the right one).
fn boundaries(words: &[&str], from: usize, to: usize) -> Vec<(usize, usize)> {
    if from >= to || SUBORDINATORS.contains(&bare(words[from]).as_str()) {
        return Vec::new();
    }
    (from + 1..to)
        .filter(|&at| {
            // A bare "und"/"and" more often joins two nouns than two clauses, so only punctuation
            // and dashes count as boundaries.
            words[at - 1].ends_with([',', ';', ':']) || is_dash(words[at])
        })
        .map(|at| (at, piece_start(words, at)))
        .filter(|&(end, start)| {
            end - from >= 3 && to.saturating_sub(start) >= 3 && !SUBORDINATORS.contains(&bare(words[start]).as_str())
        })
        .collect()
}

fn split_middle(words: &[&str], from: usize, to: usize, pieces: &mut Vec<(usize, usize)>) {
    let middle = (from + to) / 2;
    let best = boundaries(words, from, to).into_iter().min_by_key(|&(end, _)| end.abs_diff(middle));
    match best {
        Some((end, start)) if to - from > SPLIT_TARGET => {
            split_middle(words, from, end, pieces);
            split_middle(words, start, to, pieces);
        }
        _ => pieces.push((from, to)),
    }
}

fn split_every(words: &[&str]) -> Vec<(usize, usize)> {
    let mut pieces = Vec::new();
    let mut from = 0;
    for (end, start) in boundaries(words, 0, words.len()) {
        if end >= from + 3 && !SUBORDINATORS.contains(&bare(words[from]).as_str()) {
            pieces.push((from, end));
            from = start;
        }
    }
    pieces.push((from, words.len()));
    pieces
}

fn rewrite_sentence(sentence: &str, rewrite: Rewrite) -> String {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    let pieces = match rewrite {
        Rewrite::Middle => {
            let mut pieces = Vec::new();
            split_middle(&words, 0, words.len(), &mut pieces);
            pieces
        }
        Rewrite::EveryClause => split_every(&words),
        Rewrite::Shorten => {
            let cut = boundaries(&words, 0, words.len())
                .into_iter()
                .map(|(end, _)| end)
                .rfind(|&end| end <= AVERAGE_SENTENCE_MAX);
            match cut {
                Some(end) => vec![(0, end)],
                None => vec![(0, words.len())],
            }
        }
    };
    let last = pieces.len().saturating_sub(1);
    pieces
        .iter()
        .enumerate()
        .map(|(position, &(from, to))| {
            let text = words[from..to].join(" ");
            let text = text.trim_end_matches([',', ';', ':', ' ']).to_string();
            let text = capitalize(&text);
            let is_end = position == last && to == words.len();
            if is_end || text.ends_with(['.', '!', '?', '…']) {
                text
            } else {
                // Only the sentence's own end keeps its "?" or "!"; the parts before it are statements.
                format!("{text}.")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn rewrite_paragraph(text: &str, rewrite: Rewrite) -> String {
    split_sentences(text)
        .into_iter()
        .map(|sentence| {
            if word_count(sentence) > SPLIT_TARGET {
                rewrite_sentence(sentence, rewrite)
            } else {
                sentence.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD_TITLE: &str = "Fresh sourdough bread from Freiburg"; // 35 characters
    const GOOD_DESCRIPTION: &str =
        "Our bakery in Freiburg bakes sourdough bread, rolls and cakes every morning, from regional flour only.";

    fn page(title: &str, description: &str, blocks: Vec<Block>) -> Page {
        Page {
            id: 1,
            slug: "test".into(),
            title: title.into(),
            description: description.into(),
            blocks,
            updated_at: 0,
            version: 1,
        }
    }

    fn heading(level: u8, text: &str) -> Block {
        Block::Heading { level, text: text.into() }
    }

    fn paragraph(text: &str) -> Block {
        Block::Paragraph { text: text.into() }
    }

    fn image(alt: &str) -> Block {
        Block::Image { src: "/images/loaf.jpg".into(), alt: alt.into() }
    }

    fn link(text: &str) -> Block {
        Block::Link { text: text.into(), href: "/contact".into() }
    }

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
    fn content_sentence_splitter() {
        assert_eq!(split_sentences("One. Two! Three? Four"), ["One.", "Two!", "Three?", "Four"]);
        assert_eq!(
            split_sentences("Wir backen z.B. Brot. Es kostet ca. drei Euro."),
            ["Wir backen z.B. Brot.", "Es kostet ca. drei Euro."]
        );
        assert_eq!(split_sentences("Am 3. Mai ist zu. Seit 1952. Gut."), ["Am 3. Mai ist zu.", "Seit 1952.", "Gut."]);
        assert_eq!(
            split_sentences("Version 2.5 is out. \"Really?\" Yes."),
            ["Version 2.5 is out.", "\"Really?\"", "Yes."]
        );
        assert_eq!(split_sentences("etwa 3 km. weiter geht es"), ["etwa 3 km. weiter geht es"]);
        assert!(split_sentences("  ").is_empty());
    }

    #[test]
    fn content_reading_ease() {
        let easy = "The cat sat on the mat. The dog ran to the park.";
        let hard = "Comprehensive organisational considerations necessitate extraordinarily sophisticated administrative documentation.";
        let easy_score = reading_ease(easy, Lang::En).unwrap_or_default();
        let hard_score = reading_ease(hard, Lang::En).unwrap_or_default();
        assert!(easy_score > 90.0 && hard_score < 10.0, "{easy_score} {hard_score}");
        // Amstad: 180 − 4 words per sentence − 58.5 × 11 syllables / 8 words.
        let german = reading_ease("Wir backen Brot gern. Der Laden ist offen.", Lang::De).unwrap_or_default();
        assert!((german - (180.0 - 4.0 - 58.5 * 11.0 / 8.0)).abs() < 0.01, "{german}");
        assert_eq!(reading_ease("", Lang::De), None);
    }

    #[test]
    fn content_page_language() {
        assert_eq!(page_language(&page("Über uns", "Wir backen das Brot für die Stadt.", vec![])), Lang::De);
        assert_eq!(page_language(&page("About us", "We bake the bread for the town.", vec![])), Lang::En);
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
