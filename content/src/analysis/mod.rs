//! Judging a page and proposing fixes, as pure functions: the same page always gives the same
//! numbered points and the same proposals, so a scripted demo model can play a tour from them and
//! a test can pin them down.
//!
//! `points` judges a page (the numbered points a model reads), by the measures of `readability`
//! (sentences, words, reading ease, the page's language) and the rules of `labels` (alt texts and
//! link texts that say nothing); `proposals` makes the changes for a point, cutting text to fit
//! with `shortening` and splitting long sentences with `rewrite`, and keeps those the analysis
//! no longer objects to first. Here: what a point and a proposal are, and the limits they judge by.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use crate::{EditTarget, Lang};

mod labels;
mod points;
mod proposals;
mod readability;
mod rewrite;
mod shortening;

pub use labels::{is_file_name_like, is_useless_alt, is_vague_link_text};
pub use points::{analyse, render_points};
pub use proposals::{proposals, propose};
pub use readability::{page_language, reading_ease, split_sentences, word_count};

/// Search engines show about this many characters of a title and a description.
pub const TITLE_RECOMMENDED: RangeInclusive<usize> = 30..=60;
pub const DESCRIPTION_RECOMMENDED: RangeInclusive<usize> = 70..=160;
pub const AVERAGE_SENTENCE_MAX: usize = 25;
pub const SENTENCE_MAX: usize = 35;

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

#[cfg(test)]
mod fixtures {
    use crate::{Block, Page};

    pub fn page(title: &str, description: &str, blocks: Vec<Block>) -> Page {
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

    pub fn heading(level: u8, text: &str) -> Block {
        Block::Heading { level, text: text.into() }
    }

    pub fn paragraph(text: &str) -> Block {
        Block::Paragraph { text: text.into() }
    }

    pub fn image(alt: &str) -> Block {
        Block::Image { src: "/images/loaf.jpg".into(), alt: alt.into() }
    }

    pub fn link(text: &str) -> Block {
        Block::Link { text: text.into(), href: "/contact".into() }
    }
}
