//! The guided tour's website pages, as the content page shows them.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageSummaryView {
    pub id: i64,
    pub slug: String,
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", try_from = "BlockWire")]
pub enum BlockView {
    Heading {
        level: u8,
        text: String,
    },
    Paragraph {
        text: String,
    },
    Image {
        src: String,
        alt: String,
    },
    /// `href` is `None` when the stored target is not a safe link (e.g. `javascript:`).
    Link {
        text: String,
        href: Option<String>,
    },
}

/// `BlockView` as its JSON reads (see `cards::CallEditWire`).
#[derive(Deserialize)]
struct BlockWire {
    #[serde(rename = "type")]
    kind: BlockKind,
    level: Option<u8>,
    text: Option<String>,
    src: Option<String>,
    alt: Option<String>,
    href: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum BlockKind {
    Heading,
    Paragraph,
    Image,
    Link,
}

impl TryFrom<BlockWire> for BlockView {
    type Error = &'static str;

    fn try_from(wire: BlockWire) -> Result<BlockView, &'static str> {
        let BlockWire { kind, level, text, src, alt, href } = wire;
        let text = || text.ok_or("missing field `text`");
        Ok(match kind {
            BlockKind::Heading => BlockView::Heading { level: level.ok_or("missing field `level`")?, text: text()? },
            BlockKind::Paragraph => BlockView::Paragraph { text: text()? },
            BlockKind::Image => {
                BlockView::Image { src: src.ok_or("missing field `src`")?, alt: alt.ok_or("missing field `alt`")? }
            }
            BlockKind::Link => BlockView::Link { text: text()?, href },
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageView {
    pub id: i64,
    pub slug: String,
    pub title: String,
    pub description: String,
    pub blocks: Vec<BlockView>,
    pub version: i64,
}

#[cfg(test)]
mod tests {
    // wasm-size (issue 40): read through their wire structs, written by serde's tagged derive.
    #[test]
    fn blocks_read_back_from_the_json_they_write() {
        use super::BlockView;
        use serde_json::json;
        let blocks = vec![
            BlockView::Heading { level: 2, text: "Brot".into() },
            BlockView::Paragraph { text: "Jeden Tag".into() },
            BlockView::Image { src: "/b.jpg".into(), alt: "".into() },
            BlockView::Link { text: "mehr".into(), href: None },
            BlockView::Link { text: "mehr".into(), href: Some("/mehr".into()) },
        ];
        let written = serde_json::to_string(&blocks).unwrap();
        assert_eq!(serde_json::from_str::<Vec<BlockView>>(&written).unwrap(), blocks);
        assert_eq!(serde_json::to_value(&blocks[1]).unwrap(), json!({ "type": "paragraph", "text": "Jeden Tag" }));
        assert!(serde_json::from_value::<BlockView>(json!({ "type": "heading", "text": "x" })).is_err());
    }
}
