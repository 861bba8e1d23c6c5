//! analyse_page and suggest_change: the page's analysis read out to a model, and one proposal at a
//! time with the write call that applies it.

use async_trait::async_trait;
use runtime::{Tool, ToolContext, ToolError, ToolSpec};
use serde_json::{json, Map, Value};

use super::arguments::{page_id_schema, ArgumentError, Arguments};
use super::replies::{json_text, load, shorten};
use super::{ANALYSE_PAGE, SET_ALT_TEXT, SUGGEST_CHANGE, UPDATE_PAGE_FIELD};
use crate::analysis::{analyse, page_language, proposals, Point, Target};
use crate::store::ContentStore;
use crate::{EditTarget, Page, PageField};

/// The JSON string of a serde enum variant (`"title_too_long"`, `"high"`).
fn tag<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A point's target as two flat keys: `"target": "block", "block": 2`.
fn put_target(object: &mut Map<String, Value>, target: Target) {
    let (name, block) = match target {
        Target::Title => ("title", None),
        Target::Description => ("description", None),
        Target::Headings => ("headings", None),
        Target::Block { index } => ("block", Some(index)),
    };
    object.insert("target".into(), json!(name));
    if let Some(block) = block {
        object.insert("block".into(), json!(block));
    }
}

fn point_json(point: &Point) -> Value {
    let mut object = Map::new();
    object.insert("number".into(), json!(point.number));
    object.insert("kind".into(), tag(point.kind));
    put_target(&mut object, point.target);
    object.insert("severity".into(), tag(point.severity));
    object.insert("message_en".into(), json!(point.message_en));
    object.insert("message_de".into(), json!(point.message_de));
    if let Some(current) = &point.current {
        object.insert("current".into(), json!(shorten(current)));
    }
    Value::Object(object)
}

fn point_reference(point: &Point) -> Value {
    let mut object = Map::new();
    object.insert("number".into(), json!(point.number));
    object.insert("kind".into(), tag(point.kind));
    put_target(&mut object, point.target);
    Value::Object(object)
}

/// The write call that applies a proposal: which tool, with which arguments.
fn apply_with(page: &Page, target: EditTarget, value: &str) -> Value {
    match target {
        EditTarget::AltText { block } => json!({
            "tool": SET_ALT_TEXT,
            "arguments": { "page_id": page.id, "block": block, "alt": value, "version": page.version }
        }),
        EditTarget::Field(field) => {
            let mut arguments = Map::new();
            arguments.insert("page_id".into(), json!(page.id));
            arguments.insert("field".into(), json!(field_name(field)));
            if let Some(block) = target.block() {
                arguments.insert("block".into(), json!(block));
            }
            arguments.insert("value".into(), json!(value));
            arguments.insert("version".into(), json!(page.version));
            json!({ "tool": UPDATE_PAGE_FIELD, "arguments": arguments })
        }
    }
}

fn field_name(field: PageField) -> &'static str {
    match field {
        PageField::Title => "title",
        PageField::Description => "description",
        PageField::Heading { .. } => "heading",
        PageField::HeadingLevel { .. } => "heading_level",
        PageField::Paragraph { .. } => "paragraph",
        PageField::LinkText { .. } => "link_text",
    }
}

pub(super) struct AnalysePage(pub(super) ContentStore);

#[async_trait]
impl Tool for AnalysePage {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            ANALYSE_PAGE,
            "Analyse one page as it is now: title and description length, heading structure, missing or \
             useless alt texts, vague link texts and long sentences. Returns numbered points (number, kind, \
             target, severity, message in English and German, current value). Point numbers shift when a \
             change is applied: analyse again before suggesting the next change.",
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
        let points: Vec<Value> = analyse(&page).points.iter().map(point_json).collect();
        json_text(&json!({
            "page_id": page.id,
            "slug": page.slug,
            "title": page.title,
            "version": page.version,
            "language": page_language(&page).code(),
            "points": points,
        }))
    }
}

pub(super) struct SuggestChange(pub(super) ContentStore);

#[async_trait]
impl Tool for SuggestChange {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            SUGGEST_CHANGE,
            "Suggest one concrete change for a point of analyse_page. Variant 0 is the best proposal; ask for \
             variant 1, 2, … when the user wants another one. Returns the target, the current and the \
             proposed value, and the write call that applies it (apply_with), or a message that there is no \
             further variant. Changes nothing.",
            json!({
                "type": "object",
                "properties": {
                    "page_id": page_id_schema(),
                    "point": { "type": "integer", "minimum": 1, "description": "The point's number in the latest analyse_page result." },
                    "variant": { "type": "integer", "minimum": 0, "description": "Which proposal, from 0 (the default)." }
                },
                "required": ["page_id", "point"]
            }),
        )
    }

    async fn execute(&self, arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        let arguments = Arguments::of(&arguments)?;
        let page_id = arguments.page_id()?;
        let number = arguments.index("point", "a point number (an integer from 1) from analyse_page")?.ok_or(
            ArgumentError::Missing { name: "point", expected: "a point number (an integer from 1) from analyse_page" },
        )?;
        let variant = arguments.index("variant", "a variant number (an integer from 0)")?.unwrap_or(0);
        let page = load(&self.0, page_id).await?;
        let analysis = analyse(&page);
        let Some(point) = analysis.points.iter().find(|point| point.number == number) else {
            return Err(ToolError::Rejected(format!(
                "Page {page_id} has {} points as it is now, so there is no point {number}; call analyse_page for \
                 the current numbers.",
                analysis.points.len()
            )));
        };
        let all = proposals(&page, point);
        let mut result = Map::new();
        result.insert("page_id".into(), json!(page.id));
        result.insert("version".into(), json!(page.version));
        result.insert("point".into(), point_reference(point));
        result.insert("variant".into(), json!(variant));
        result.insert("variants".into(), json!(all.len()));
        match all.get(variant) {
            Some(proposal) => {
                result.insert("target".into(), serde_json::to_value(proposal.target).map_err(ToolError::failed)?);
                result.insert("current".into(), json!(proposal.current));
                result.insert("proposed".into(), json!(proposal.proposed));
                result.insert("apply_with".into(), apply_with(&page, proposal.target, &proposal.proposed));
            }
            None => {
                let message = if all.is_empty() {
                    format!("There is no proposal for point {number}; it has to be fixed by hand.")
                } else {
                    format!(
                        "There is no further variant for point {number}: it has {} (0 to {}).",
                        all.len(),
                        all.len() - 1
                    )
                };
                result.insert("message".into(), json!(message));
            }
        }
        json_text(&Value::Object(result))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::tools::tests::{call, call_json, home, rejected, seeded, HOME};
    use crate::tools::{ANALYSE_PAGE, SET_ALT_TEXT, SUGGEST_CHANGE, UPDATE_PAGE_FIELD};

    #[tokio::test]
    async fn tools_analyse_numbers_the_points() {
        let (registry, _) = seeded().await;
        let analysis = call_json(&registry, ANALYSE_PAGE, json!({ "page_id": HOME })).await;
        assert_eq!(analysis["language"], "de");
        let points = analysis["points"].as_array().unwrap();
        let summary: Vec<(u64, &str, &str)> = points
            .iter()
            .map(|p| (p["number"].as_u64().unwrap(), p["kind"].as_str().unwrap(), p["target"].as_str().unwrap()))
            .collect();
        assert_eq!(
            summary,
            [
                (1, "title_too_long", "title"),
                (2, "description_missing", "description"),
                (3, "alt_missing", "block"),
                (4, "vague_link_text", "block")
            ]
        );
        assert_eq!(points[2]["block"], 2);
        assert_eq!(points[3]["current"], "Hier klicken");
        assert!(points[0]["message_en"].as_str().unwrap().starts_with("The title has"));
        assert!(points[0]["message_de"].as_str().unwrap().starts_with("Der Titel hat"));
        assert_eq!(points[1].get("current"), None, "a missing description has no current value");
        let clean = call_json(&registry, ANALYSE_PAGE, json!({ "page_id": 4 })).await;
        assert_eq!(clean["points"], json!([]));
    }

    #[tokio::test]
    async fn tools_suggest_variants_and_say_when_there_is_no_further_one() {
        let (registry, store) = seeded().await;
        let first = call_json(&registry, SUGGEST_CHANGE, json!({ "page_id": HOME, "point": 1 })).await;
        assert_eq!(first["point"]["kind"], "title_too_long");
        assert_eq!(first["target"], json!({ "field": "title" }));
        assert_eq!(first["current"], home(&store).await.title);
        assert_eq!(first["apply_with"]["tool"], UPDATE_PAGE_FIELD);
        assert_eq!(first["apply_with"]["arguments"]["value"], first["proposed"]);
        assert_eq!(first["apply_with"]["arguments"]["version"], 1);
        let second = call_json(&registry, SUGGEST_CHANGE, json!({ "page_id": HOME, "point": 1, "variant": 1 })).await;
        assert_ne!(first["proposed"], second["proposed"]);

        let count = first["variants"].as_u64().unwrap();
        let beyond =
            call_json(&registry, SUGGEST_CHANGE, json!({ "page_id": HOME, "point": 1, "variant": count })).await;
        assert_eq!(beyond.get("apply_with"), None);
        assert!(beyond["message"].as_str().unwrap().starts_with("There is no further variant"), "{beyond}");

        let alt = call_json(&registry, SUGGEST_CHANGE, json!({ "page_id": HOME, "point": 3 })).await;
        assert_eq!(alt["target"], json!({ "field": "alt_text", "block": 2 }));
        assert_eq!(alt["apply_with"]["tool"], SET_ALT_TEXT);
        assert_eq!(alt["apply_with"]["arguments"]["block"], 2);

        assert!(rejected(call(&registry, SUGGEST_CHANGE, json!({ "page_id": HOME, "point": 9 })).await)
            .contains("there is no point 9"));
        assert!(
            rejected(call(&registry, SUGGEST_CHANGE, json!({ "page_id": HOME })).await).starts_with("point is missing")
        );
        assert!(rejected(call(&registry, SUGGEST_CHANGE, json!({ "page_id": HOME, "point": 1, "variant": -1 })).await)
            .starts_with("variant must be"));
        assert_eq!(home(&store).await.version, 1, "suggesting changes nothing");
    }

    #[tokio::test]
    async fn tools_apply_a_suggestion_with_the_named_write() {
        let (registry, store) = seeded().await;
        for point in [3, 1] {
            let suggestion = call_json(&registry, SUGGEST_CHANGE, json!({ "page_id": HOME, "point": point })).await;
            let tool = suggestion["apply_with"]["tool"].as_str().unwrap();
            let result = call(&registry, tool, suggestion["apply_with"]["arguments"].clone()).await.expect("applies");
            assert!(result.starts_with("Changed the "), "{result}");
            assert!(result.contains(&format!("→ “{}”", suggestion["proposed"].as_str().unwrap())), "{result}");
        }
        let page = home(&store).await;
        assert_eq!(page.version, 3);
        let analysis = call_json(&registry, ANALYSE_PAGE, json!({ "page_id": HOME })).await;
        let kinds: Vec<&str> =
            analysis["points"].as_array().unwrap().iter().map(|p| p["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["description_missing", "vague_link_text"]);
    }
}
