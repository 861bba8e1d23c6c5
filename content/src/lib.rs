//! The guided tour's website: pages made of blocks, the fields a tool may change, and the rules
//! for changing them. `store` keeps pages (all of the content's SQL), `analysis` judges them,
//! `tools` offers them to a model, `seed` holds the site a fresh installation starts with, and
//! `context` is the sentence that tells a model which page a conversation is about.
//!
//! Architecture invariant: knows nothing of HTTP, the chat or the UI. It depends on the runtime
//! only for the tool trait, and on `db` for the shared database handle.

pub mod analysis;
pub mod context;
pub mod seed;
pub mod store;
pub mod tools;

use std::fmt;

use serde::{Deserialize, Serialize};

/// The language a page is written in, and that a point is explained in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    #[default]
    En,
    De,
}

impl Lang {
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::De => "de",
        }
    }
}

/// Limits for stored values, in characters. Generous on purpose: they stop abuse and accidents
/// (a whole document pasted into a title), not bad style, which is the analysis' business.
pub const TITLE_MAX: usize = 200;
pub const DESCRIPTION_MAX: usize = 400;
pub const HEADING_MAX: usize = 200;
pub const PARAGRAPH_MAX: usize = 5_000;
pub const LINK_TEXT_MAX: usize = 200;
pub const HREF_MAX: usize = 500;
pub const ALT_MAX: usize = 300;
pub const SLUG_MAX: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    pub id: i64,
    pub slug: String,
    pub title: String,
    pub description: String,
    /// A block's position is its address for tools; blocks are never added or removed by them.
    pub blocks: Vec<Block>,
    pub updated_at: i64,
    pub version: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Heading {
        level: u8,
        text: String,
    },
    Paragraph {
        text: String,
    },
    /// An empty `alt` means the alt text is missing.
    Image {
        src: String,
        alt: String,
    },
    Link {
        text: String,
        href: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    Heading,
    Paragraph,
    Image,
    Link,
}

impl Block {
    pub fn kind(&self) -> BlockKind {
        match self {
            Block::Heading { .. } => BlockKind::Heading,
            Block::Paragraph { .. } => BlockKind::Paragraph,
            Block::Image { .. } => BlockKind::Image,
            Block::Link { .. } => BlockKind::Link,
        }
    }
}

impl fmt::Display for BlockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BlockKind::Heading => "heading",
            BlockKind::Paragraph => "paragraph",
            BlockKind::Image => "image",
            BlockKind::Link => "link",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageSummary {
    pub id: i64,
    pub slug: String,
    pub title: String,
}

/// A page as it is created (by the seed or a test): the database assigns id, time and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewPage {
    pub slug: String,
    pub title: String,
    pub description: String,
    pub blocks: Vec<Block>,
}

/// The text fields a tool may change. `HeadingLevel` takes "1" to "6": without it no proposal
/// could repair a heading structure (two h1, a skipped level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "field", rename_all = "snake_case")]
pub enum PageField {
    Title,
    Description,
    Heading { block: usize },
    HeadingLevel { block: usize },
    Paragraph { block: usize },
    LinkText { block: usize },
}

/// Everything a write can change: a page field, or an image's alt text (its own write, because
/// it is its own tool and approval card).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "FlatTarget", into = "FlatTarget")]
pub enum EditTarget {
    Field(PageField),
    AltText { block: usize },
}

/// The JSON shape of [`EditTarget`]: one flat object such as `{"field":"alt_text","block":3}`,
/// which a model can write and an approval card can store.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(tag = "field", rename_all = "snake_case")]
enum FlatTarget {
    Title,
    Description,
    Heading { block: usize },
    HeadingLevel { block: usize },
    Paragraph { block: usize },
    LinkText { block: usize },
    AltText { block: usize },
}

impl From<FlatTarget> for EditTarget {
    fn from(flat: FlatTarget) -> Self {
        match flat {
            FlatTarget::Title => EditTarget::Field(PageField::Title),
            FlatTarget::Description => EditTarget::Field(PageField::Description),
            FlatTarget::Heading { block } => EditTarget::Field(PageField::Heading { block }),
            FlatTarget::HeadingLevel { block } => EditTarget::Field(PageField::HeadingLevel { block }),
            FlatTarget::Paragraph { block } => EditTarget::Field(PageField::Paragraph { block }),
            FlatTarget::LinkText { block } => EditTarget::Field(PageField::LinkText { block }),
            FlatTarget::AltText { block } => EditTarget::AltText { block },
        }
    }
}

impl From<EditTarget> for FlatTarget {
    fn from(target: EditTarget) -> Self {
        match target {
            EditTarget::Field(PageField::Title) => FlatTarget::Title,
            EditTarget::Field(PageField::Description) => FlatTarget::Description,
            EditTarget::Field(PageField::Heading { block }) => FlatTarget::Heading { block },
            EditTarget::Field(PageField::HeadingLevel { block }) => FlatTarget::HeadingLevel { block },
            EditTarget::Field(PageField::Paragraph { block }) => FlatTarget::Paragraph { block },
            EditTarget::Field(PageField::LinkText { block }) => FlatTarget::LinkText { block },
            EditTarget::AltText { block } => FlatTarget::AltText { block },
        }
    }
}

impl From<PageField> for EditTarget {
    fn from(field: PageField) -> Self {
        EditTarget::Field(field)
    }
}

impl EditTarget {
    /// The block the write concerns, if it concerns one.
    pub fn block(self) -> Option<usize> {
        match self {
            EditTarget::Field(PageField::Title | PageField::Description) => None,
            EditTarget::Field(
                PageField::Heading { block }
                | PageField::HeadingLevel { block }
                | PageField::Paragraph { block }
                | PageField::LinkText { block },
            )
            | EditTarget::AltText { block } => Some(block),
        }
    }

    /// The name used in error messages.
    pub fn name(self) -> &'static str {
        match self {
            EditTarget::Field(PageField::Title) => "title",
            EditTarget::Field(PageField::Description) => "description",
            EditTarget::Field(PageField::Heading { .. }) => "heading",
            EditTarget::Field(PageField::HeadingLevel { .. }) => "heading level",
            EditTarget::Field(PageField::Paragraph { .. }) => "paragraph",
            EditTarget::Field(PageField::LinkText { .. }) => "link text",
            EditTarget::AltText { .. } => "alt text",
        }
    }

    fn block_kind(self) -> Option<BlockKind> {
        match self {
            EditTarget::Field(PageField::Title | PageField::Description) => None,
            EditTarget::Field(PageField::Heading { .. } | PageField::HeadingLevel { .. }) => Some(BlockKind::Heading),
            EditTarget::Field(PageField::Paragraph { .. }) => Some(BlockKind::Paragraph),
            EditTarget::Field(PageField::LinkText { .. }) => Some(BlockKind::Link),
            EditTarget::AltText { .. } => Some(BlockKind::Image),
        }
    }
}

/// Why a value or a change was refused. Nothing is changed when one of these is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("the page has no block {block} (it has {count})")]
    NoSuchBlock { block: usize, count: usize },
    #[error("block {block} is a {found}, not a {expected}")]
    WrongBlockKind { block: usize, expected: BlockKind, found: BlockKind },
    #[error("the {field} must not be empty")]
    Empty { field: &'static str },
    #[error("the {field} has {length} characters; at most {max} are allowed")]
    TooLong { field: &'static str, length: usize, max: usize },
    #[error("the {field} contains a control character")]
    ControlCharacter { field: &'static str },
    #[error("a heading level is a number from 1 to 6, not {value:?}")]
    HeadingLevel { value: String },
    #[error("a slug is lowercase letters, digits, '-' and '/', not {value:?}")]
    Slug { value: String },
}

/// Checks a text and returns it trimmed: surrounding whitespace is never meant.
fn checked_text(field: &'static str, value: &str, max: usize, required: bool) -> Result<String, EditError> {
    let value = value.trim();
    if required && value.is_empty() {
        return Err(EditError::Empty { field });
    }
    let length = value.chars().count();
    if length > max {
        return Err(EditError::TooLong { field, length, max });
    }
    // Control characters (newlines included) would break the single-line fields and let a
    // model smuggle invisible text into the site.
    if value.chars().any(char::is_control) {
        return Err(EditError::ControlCharacter { field });
    }
    Ok(value.to_string())
}

fn heading_level(value: &str) -> Result<u8, EditError> {
    let digits = value.trim().trim_start_matches(['h', 'H']);
    match digits.parse::<u8>() {
        Ok(level @ 1..=6) => Ok(level),
        _ => Err(EditError::HeadingLevel { value: value.to_string() }),
    }
}

/// Checks a value for a target without a page: the normalised value, or why it is refused.
pub fn validate(target: EditTarget, value: &str) -> Result<String, EditError> {
    let name = target.name();
    match target {
        EditTarget::Field(PageField::Title) => checked_text(name, value, TITLE_MAX, true),
        // An empty description is allowed: it is how a page says it has none.
        EditTarget::Field(PageField::Description) => checked_text(name, value, DESCRIPTION_MAX, false),
        EditTarget::Field(PageField::Heading { .. }) => checked_text(name, value, HEADING_MAX, true),
        EditTarget::Field(PageField::HeadingLevel { .. }) => heading_level(value).map(|level| level.to_string()),
        EditTarget::Field(PageField::Paragraph { .. }) => checked_text(name, value, PARAGRAPH_MAX, true),
        EditTarget::Field(PageField::LinkText { .. }) => checked_text(name, value, LINK_TEXT_MAX, true),
        // Setting an alt text means writing one; an empty one is what the tour is there to fix.
        EditTarget::AltText { .. } => checked_text(name, value, ALT_MAX, true),
    }
}

impl Page {
    /// The block a target addresses, if it exists and is of the right kind.
    fn block_for(&self, target: EditTarget) -> Result<Option<&Block>, EditError> {
        let (Some(block), Some(expected)) = (target.block(), target.block_kind()) else {
            return Ok(None);
        };
        let found = self.blocks.get(block).ok_or(EditError::NoSuchBlock { block, count: self.blocks.len() })?;
        if found.kind() != expected {
            return Err(EditError::WrongBlockKind { block, expected, found: found.kind() });
        }
        Ok(Some(found))
    }

    /// The current value of a target, as text (a heading level as "1" to "6").
    pub fn value_of(&self, target: EditTarget) -> Result<String, EditError> {
        let block = self.block_for(target)?;
        Ok(match (target, block) {
            (EditTarget::Field(PageField::Title), _) => self.title.clone(),
            (EditTarget::Field(PageField::Description), _) => self.description.clone(),
            (EditTarget::Field(PageField::HeadingLevel { .. }), Some(Block::Heading { level, .. })) => {
                level.to_string()
            }
            (_, Some(Block::Heading { text, .. } | Block::Paragraph { text } | Block::Link { text, .. })) => {
                text.clone()
            }
            (_, Some(Block::Image { alt, .. })) => alt.clone(),
            // `block_for` returns a block for every block target.
            (_, None) => String::new(),
        })
    }

    /// Applies one change in memory and returns the value it replaced. On an error the page is
    /// unchanged.
    pub fn apply(&mut self, target: EditTarget, value: &str) -> Result<String, EditError> {
        let previous = self.value_of(target)?;
        let value = validate(target, value)?;
        let slot = match target {
            EditTarget::Field(PageField::Title) => &mut self.title,
            EditTarget::Field(PageField::Description) => &mut self.description,
            // `value_of` has checked that the block exists and is of the right kind; this only
            // picks the slot to write.
            _ => {
                let index = target.block().unwrap_or_default();
                match (target, self.blocks.get_mut(index)) {
                    (EditTarget::Field(PageField::HeadingLevel { .. }), Some(Block::Heading { level, .. })) => {
                        *level = heading_level(&value)?;
                        return Ok(previous);
                    }
                    (_, Some(Block::Heading { text, .. } | Block::Paragraph { text } | Block::Link { text, .. })) => {
                        text
                    }
                    (_, Some(Block::Image { alt, .. })) => alt,
                    (_, None) => return Err(EditError::NoSuchBlock { block: index, count: self.blocks.len() }),
                }
            }
        };
        *slot = value;
        Ok(previous)
    }
}

impl NewPage {
    /// Checks a page before it is stored. A missing alt text or description is allowed here:
    /// they are findings for the analysis, not broken data.
    pub fn validate(&self) -> Result<(), EditError> {
        let slug_ok = !self.slug.is_empty()
            && self.slug.chars().count() <= SLUG_MAX
            && self.slug.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '/');
        if !slug_ok {
            return Err(EditError::Slug { value: self.slug.clone() });
        }
        checked_text("title", &self.title, TITLE_MAX, true)?;
        checked_text("description", &self.description, DESCRIPTION_MAX, false)?;
        for block in &self.blocks {
            match block {
                Block::Heading { level, text } => {
                    heading_level(&level.to_string())?;
                    checked_text("heading", text, HEADING_MAX, true)?;
                }
                Block::Paragraph { text } => {
                    checked_text("paragraph", text, PARAGRAPH_MAX, true)?;
                }
                Block::Image { src, alt } => {
                    checked_text("image source", src, HREF_MAX, true)?;
                    checked_text("alt text", alt, ALT_MAX, false)?;
                }
                Block::Link { text, href } => {
                    checked_text("link text", text, LINK_TEXT_MAX, true)?;
                    checked_text("link target", href, HREF_MAX, true)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Page {
        Page {
            id: 1,
            slug: "home".into(),
            title: "Home".into(),
            description: String::new(),
            blocks: vec![
                Block::Heading { level: 1, text: "Welcome".into() },
                Block::Paragraph { text: "Hello.".into() },
                Block::Image { src: "/a.jpg".into(), alt: String::new() },
                Block::Link { text: "here".into(), href: "/contact".into() },
            ],
            updated_at: 0,
            version: 1,
        }
    }

    #[test]
    fn content_edit_changes_the_addressed_value_and_returns_the_old_one() {
        let mut page = page();
        assert_eq!(page.apply(PageField::Title.into(), "  A new title "), Ok("Home".to_string()));
        assert_eq!(page.title, "A new title");
        assert_eq!(page.apply(EditTarget::AltText { block: 2 }, "A loaf of bread"), Ok(String::new()));
        assert_eq!(page.apply(PageField::HeadingLevel { block: 0 }.into(), "h2"), Ok("1".to_string()));
        assert_eq!(page.blocks[0], Block::Heading { level: 2, text: "Welcome".into() });
        assert_eq!(page.apply(PageField::LinkText { block: 3 }.into(), "Contact us"), Ok("here".to_string()));
    }

    #[test]
    fn content_edit_refuses_bad_blocks_and_values_and_changes_nothing() {
        let original = page();
        let mut page = original.clone();
        assert_eq!(
            page.apply(EditTarget::AltText { block: 9 }, "x"),
            Err(EditError::NoSuchBlock { block: 9, count: 4 })
        );
        assert_eq!(
            page.apply(EditTarget::AltText { block: 1 }, "x"),
            Err(EditError::WrongBlockKind { block: 1, expected: BlockKind::Image, found: BlockKind::Paragraph })
        );
        assert_eq!(page.apply(PageField::Title.into(), "   "), Err(EditError::Empty { field: "title" }));
        assert!(matches!(
            page.apply(PageField::Title.into(), &"x".repeat(201)),
            Err(EditError::TooLong { max: 200, .. })
        ));
        assert_eq!(
            page.apply(PageField::Paragraph { block: 1 }.into(), "a\u{7}b"),
            Err(EditError::ControlCharacter { field: "paragraph" })
        );
        assert!(matches!(
            page.apply(PageField::HeadingLevel { block: 0 }.into(), "7"),
            Err(EditError::HeadingLevel { .. })
        ));
        assert_eq!(page, original);
        // An empty description is how a page has none; an empty alt text is not a fix.
        assert!(validate(PageField::Description.into(), "").is_ok());
        assert!(validate(EditTarget::AltText { block: 0 }, "").is_err());
    }

    #[test]
    fn content_edit_target_is_one_flat_json_object() {
        let target = EditTarget::AltText { block: 3 };
        let json = serde_json::to_value(target).ok();
        assert_eq!(json, Some(serde_json::json!({"field": "alt_text", "block": 3})));
        let back: Option<EditTarget> =
            serde_json::from_value(serde_json::json!({"field": "link_text", "block": 2})).ok();
        assert_eq!(back, Some(EditTarget::Field(PageField::LinkText { block: 2 })));
        let title: Option<EditTarget> = serde_json::from_value(serde_json::json!({"field": "title"})).ok();
        assert_eq!(title, Some(EditTarget::Field(PageField::Title)));
    }

    #[test]
    fn content_new_page_validation() {
        let mut new =
            NewPage { slug: "blog/first-post".into(), title: "T".into(), description: String::new(), blocks: vec![] };
        assert!(new.validate().is_ok());
        new.slug = "Bad Slug".into();
        assert!(matches!(new.validate(), Err(EditError::Slug { .. })));
        new.slug = "ok".into();
        new.blocks.push(Block::Heading { level: 0, text: "x".into() });
        assert!(matches!(new.validate(), Err(EditError::HeadingLevel { .. })));
    }
}
