//! How hard a text is to read. Measured in words per sentence (the rule of thumb the tour teaches)
//! and, for information, with the Flesch reading ease: for English `206.835 − 1.015·ASL − 84.6·ASW`,
//! for German Amstad's adaptation `180 − ASL − 58.5·ASW`, where ASL is words per sentence and ASW
//! syllables per word. Syllables are estimated as groups of consecutive vowels (ä, ö, ü and y
//! count as vowels; a final silent English "e" does not), which is rough but stable. And which of
//! the two languages a page is written in.

use crate::{Block, Lang, Page};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::*;

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
}
