//! Cutting a text to fit a length: at whole sentences, at clause boundaries, at whole words, or
//! with an ellipsis, never ending on a separator, a comma or a small word such as "und".

use super::readability::split_sentences;

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
pub(super) fn truncate_words(text: &str, max: usize) -> String {
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
pub(super) fn truncate_clauses(text: &str, max: usize) -> String {
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

pub(super) fn first_segment(text: &str) -> String {
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

pub(super) fn ellipsize(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    format!("{}…", truncate_words(text, max - 1))
}

/// Whole sentences that fit, else the clauses that fit closed with a full stop.
pub(super) fn lead_within(text: &str, max: usize) -> String {
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
