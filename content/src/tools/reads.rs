//! list_pages and read_page: the site as it is, for a model to find its way around.

use async_trait::async_trait;
use runtime::{Tool, ToolContext, ToolError, ToolSpec};
use serde_json::{json, Value};

use super::arguments::{page_id_schema, Arguments};
use super::replies::{content_failure, json_text, load};
use super::{LIST_PAGES, READ_PAGE};
use crate::store::ContentStore;

pub(super) struct ListPages(pub(super) ContentStore);

#[async_trait]
impl Tool for ListPages {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            LIST_PAGES,
            "List the pages of the website in menu order: id, slug and title of each.",
            json!({ "type": "object", "properties": {} }),
        )
    }

    async fn execute(&self, _arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        let pages = self.0.list_pages().await.map_err(content_failure)?;
        let list: Vec<Value> =
            pages.iter().map(|page| json!({ "id": page.id, "slug": page.slug, "title": page.title })).collect();
        json_text(&json!({ "pages": list }))
    }
}

pub(super) struct ReadPage(pub(super) ContentStore);

#[async_trait]
impl Tool for ReadPage {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            READ_PAGE,
            "Read one page: title, meta description, version, and its blocks numbered from 0 (headings, \
             paragraphs, images with their alt text, links). Block numbers are what the write tools take.",
            json!({
                "type": "object",
                "properties": { "page_id": page_id_schema() },
                "required": ["page_id"]
            }),
        )
    }

    async fn execute(&self, arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        let page_id = Arguments::of(&arguments)?.page_id()?;
        let page = load(&self.0, page_id).await?;
        let mut blocks = Vec::with_capacity(page.blocks.len());
        for (index, block) in page.blocks.iter().enumerate() {
            let mut value = serde_json::to_value(block).map_err(ToolError::failed)?;
            if let Value::Object(object) = &mut value {
                object.insert("block".into(), json!(index));
            }
            blocks.push(value);
        }
        json_text(&json!({
            "id": page.id,
            "slug": page.slug,
            "title": page.title,
            "description": page.description,
            "version": page.version,
            "blocks": blocks,
        }))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::tools::tests::{call, call_json, rejected, seeded, HOME};
    use crate::tools::{LIST_PAGES, READ_PAGE};

    #[tokio::test]
    async fn tools_list_and_read_pages() {
        let (registry, _) = seeded().await;
        let list = call_json(&registry, LIST_PAGES, json!({})).await;
        let slugs: Vec<&str> = list["pages"].as_array().unwrap().iter().map(|p| p["slug"].as_str().unwrap()).collect();
        assert_eq!(slugs, ["home", "ueber-uns", "angebot", "kontakt", "blog/sourdough"]);
        assert_eq!(list["pages"][0]["id"], HOME);

        let page = call_json(&registry, READ_PAGE, json!({ "page_id": HOME })).await;
        assert_eq!(page["slug"], "home");
        assert_eq!(page["description"], "");
        assert_eq!(page["version"], 1);
        assert_eq!(page["blocks"][2], json!({ "block": 2, "type": "image", "src": "/images/IMG_4711.jpg", "alt": "" }));
        // Lenient about how a number is written, strict about what it names.
        assert_eq!(call_json(&registry, READ_PAGE, json!({ "page_id": "1" })).await["slug"], "home");
        assert!(rejected(call(&registry, READ_PAGE, json!({ "page_id": 99 })).await).contains("no page with id 99"));
        assert!(rejected(call(&registry, READ_PAGE, json!({})).await).starts_with("page_id is missing"));
        assert!(rejected(call(&registry, READ_PAGE, json!({ "page_id": "one" })).await).starts_with("page_id must be"));
        assert!(rejected(call(&registry, READ_PAGE, json!({ "page_id": 1.5 })).await).starts_with("page_id must be"));
        assert_eq!(rejected(call(&registry, READ_PAGE, json!([1])).await), "The arguments must be a JSON object.");
    }
}
