//! User names: the key two names are compared by, so that `Bob`, `bob` and full-width `ｂｏｂ` are
//! one name, and the refusal of a new name that mixes scripts so as to pass for another (`bоb`
//! with a Cyrillic `о`).

use caseless::Caseless;
use unicode_normalization::UnicodeNormalization;
use unicode_security::{RestrictionLevel, RestrictionLevelDetection};

/// The form a name is looked up and kept unique by: NFKC, then Unicode's full case folding
/// (`caseless`, not `to_lowercase`: folding also makes `ß` and `ss`, `ς` and `σ` one), then NFKC
/// again, since folding can leave a string that is not normalised (UAX #31's NFKC_Casefold).
pub fn key(name: &str) -> String {
    name.trim().nfkc().default_case_fold().nfkc().collect()
}

/// Signs a name may have beside letters and digits. They belong to no script and look like no
/// letter, so they are left out of the script check (Unicode's identifier profile has no space).
const SIGNS: &[char] = &[' ', '_', '-', '.', '@', '\''];

/// Whether a new name could pass for another: a character outside Unicode's identifier profile
/// (invisible joiners, format and control characters, symbols) or a mix of scripts beyond the
/// ones writing systems combine (UTS #39 "highly restrictive": one script, or Latin with Han and
/// Kana, Hangul or Bopomofo). Checked on the NFKC form, so full-width letters count as the
/// letters they stand for.
pub fn is_confusable(name: &str) -> bool {
    let letters: String = name.trim().nfkc().filter(|c| !SIGNS.contains(c)).collect();
    !letters.as_str().check_restriction_level(RestrictionLevel::HighlyRestrictive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_differ_in_case_or_width_share_a_key() {
        assert_eq!(key("Bob"), "bob");
        assert_eq!(key("BOB"), "bob");
        assert_eq!(key("ｂｏｂ"), "bob", "full-width");
        assert_eq!(key("ＢＯＢ"), "bob");
        assert_eq!(key("  bob "), "bob");
        assert_eq!(key("Straße"), key("STRASSE"), "full case folding, not to_lowercase");
        assert_eq!(key("ΟΔΥΣΣΕΥΣ"), key("οδυσσευς"));
        assert_eq!(key("ﬁona"), "fiona", "a ligature is its letters");
        assert_eq!(key("Jörg"), key("Jo\u{308}rg"), "composed and decomposed");
        assert_ne!(key("bob"), key("bоb"), "a Cyrillic о is another letter");
        assert_ne!(key("anna"), key("anne"));
    }

    #[test]
    fn names_that_mix_scripts_are_confusable_and_plain_ones_are_not() {
        for plain in [
            "bob",
            "Bob",
            "ｂｏｂ",
            "anna.meier",
            "anna_meier-2",
            "Anna Meier",
            "jörg",
            "Straße",
            "борис",
            "Борис",
            "王小明",
            "たなか",
            "田中たなか",
            "Tanaka田中",
            "김민준",
            "ελένη",
            "2024",
            "ops@example",
        ] {
            assert!(!is_confusable(plain), "{plain}");
        }
        for confusable in [
            "bоb",         // Cyrillic о
            "pаypal",      // Cyrillic а
            "Ѕcott",       // Cyrillic Ѕ
            "αlice",       // Greek α
            "bo\u{200d}b", // zero-width joiner
            "bob\u{202e}", // right-to-left override
            "bob☺",
        ] {
            assert!(is_confusable(confusable), "{confusable:?}");
        }
    }
}
