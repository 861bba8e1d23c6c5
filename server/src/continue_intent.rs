//! "weiter" while a card waits: the reader means "go on", which only the card can do. Such a
//! message is a hint to decide on the card, not a new turn that would abandon it.

const LEAD_INS: &[&str] = &["ok", "okay", "ja", "yes", "gut", "prima", "danke", "thanks", "alright"];
const POLITE: &[&str] = &["bitte", "please"];
const TRAILERS: &[&str] = &["bitte", "please", "danke", "thanks"];
const INTENTS: &[&str] = &[
    "weiter",
    "mach weiter",
    "gern weiter",
    "gerne weiter",
    "weitermachen",
    "fortfahren",
    "fahr fort",
    "fahre fort",
    "continue",
    "go on",
    "go ahead",
    "proceed",
    "carry on",
    "done",
    "erledigt",
    "habe ich",
    "hab ich",
    "freigegeben",
    "alles freigegeben",
    "genehmigt",
    "approved",
    "bestätigt",
    "ich habe freigegeben",
    "ich hab freigegeben",
    "habe freigegeben",
    "ich habe es freigegeben",
    "ich habe alles freigegeben",
    "i approved",
    "i approved it",
    "i have approved",
    "i have approved it",
    "approved it",
];

/// True when the whole message only says "go on" (in English or German, with a polite word or two).
pub fn is_continue_intent(message: &str) -> bool {
    if message.chars().count() > 60 {
        return false;
    }
    let lowered = message.to_lowercase();
    let words: Vec<&str> = lowered
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | '!' | '?' | ';' | ':' | '…'))
        .filter(|word| !word.is_empty())
        .collect();
    let mut start = 0;
    while start < words.len() && (LEAD_INS.contains(&words[start]) || POLITE.contains(&words[start])) {
        start += 1;
    }
    let mut end = words.len();
    while end > start && TRAILERS.contains(&words[end - 1]) {
        end -= 1;
    }
    if start == end {
        return false;
    }
    let core = words[start..end].join(" ");
    INTENTS.contains(&core.as_str())
}

#[cfg(test)]
mod tests {
    use super::is_continue_intent;

    #[test]
    fn go_on_in_both_languages_is_a_hint() {
        for message in [
            "weiter",
            "Weiter!",
            "ok, weiter bitte",
            "Ja bitte weiter.",
            "continue",
            "Go ahead please",
            "Ich habe freigegeben",
            "done",
            "okay danke, mach weiter",
        ] {
            assert!(is_continue_intent(message), "{message}");
        }
    }

    #[test]
    fn anything_else_is_a_message() {
        for message in [
            "ok",
            "",
            "weiter mit dem nächsten Punkt und der Überschrift",
            "continue with the images instead",
            "nein",
            "why?",
            &"weiter ".repeat(20),
        ] {
            assert!(!is_continue_intent(message), "{message}");
        }
    }
}
