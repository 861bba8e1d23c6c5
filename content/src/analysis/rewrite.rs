//! Long sentences split into shorter ones at their clause boundaries (commas, semicolons, colons,
//! dashes), never where the piece after would be a subordinate clause on its own.

use super::readability::{split_sentences, word_count};
use super::AVERAGE_SENTENCE_MAX;

/// Proposals split sentences longer than this, so the result is comfortably under the limits.
const SPLIT_TARGET: usize = 20;

pub(super) fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[derive(Clone, Copy)]
pub(super) enum Rewrite {
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

pub(super) fn rewrite_paragraph(text: &str, rewrite: Rewrite) -> String {
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
