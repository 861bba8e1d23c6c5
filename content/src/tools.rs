//! The tour's tools over the content store: reads that list, read and analyse pages and suggest
//! changes, and two writes that go through the user's approval.
//!
//! Results are compact JSON, so a real model and the scripted demo model read the same thing. The
//! arguments are model-chosen and therefore untrusted: every problem with them is a
//! [`ToolError::Rejected`] sentence the model can act on; store failures become
//! [`ToolError::Failed`], which the runtime never shows the model (they may carry SQL).

use std::sync::Arc;

use async_trait::async_trait;
use runtime::{FieldChange, Preview, Tool, ToolContext, ToolEffect, ToolError, ToolRegistry, ToolSpec};
use serde_json::{json, Map, Value};

use crate::analysis::{analyse, page_language, proposals, Point, Target};
use crate::store::{ContentError, ContentStore, UpdateOutcome};
use crate::{validate, EditTarget, Page, PageField};

pub const LIST_PAGES: &str = "list_pages";
pub const READ_PAGE: &str = "read_page";
pub const ANALYSE_PAGE: &str = "analyse_page";
pub const SUGGEST_CHANGE: &str = "suggest_change";
pub const UPDATE_PAGE_FIELD: &str = "update_page_field";
pub const SET_ALT_TEXT: &str = "set_alt_text";

/// Long values (a paragraph can have 5 000 characters) are cut in results that only describe.
const SHOWN_CHARS: usize = 300;

/// Registers the content tools. Called once at start-up with the server's pool.
pub fn register(registry: &mut ToolRegistry, store: ContentStore) {
    let tools: [Arc<dyn Tool>; 6] = [
        Arc::new(ListPages(store.clone())),
        Arc::new(ReadPage(store.clone())),
        Arc::new(AnalysePage(store.clone())),
        Arc::new(SuggestChange(store.clone())),
        Arc::new(UpdatePageField(store.clone())),
        Arc::new(SetAltText(store)),
    ];
    for tool in tools {
        // Like the built-in tools: a clash of names is a programming error that must stop the boot.
        registry.register(tool).expect("the content tools have distinct, valid declarations");
    }
}

// --- arguments ----------------------------------------------------------------------------------

/// What is wrong with the model's arguments, as a sentence it can correct itself by.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ArgumentError {
    #[error("The arguments must be a JSON object.")]
    NotAnObject,
    #[error("{name} is missing; it must be {expected}.")]
    Missing { name: &'static str, expected: &'static str },
    #[error("{name} must be {expected}.")]
    Invalid { name: &'static str, expected: &'static str },
    #[error("field must be one of title, description, heading, heading_level, paragraph or link_text.")]
    UnknownField,
    #[error("An image's alt text is changed with set_alt_text, not update_page_field.")]
    AltTextField,
}

impl From<ArgumentError> for ToolError {
    fn from(error: ArgumentError) -> Self {
        ToolError::Rejected(error.to_string())
    }
}

struct Arguments<'a>(&'a Map<String, Value>);

impl<'a> Arguments<'a> {
    fn of(value: &'a Value) -> Result<Self, ArgumentError> {
        value.as_object().map(Arguments).ok_or(ArgumentError::NotAnObject)
    }

    /// An integer, also when a model sends it as `3.0` or `"3"` (local models often do).
    fn integer(&self, name: &'static str, expected: &'static str) -> Result<Option<i64>, ArgumentError> {
        let invalid = ArgumentError::Invalid { name, expected };
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(number)) => {
                if let Some(integer) = number.as_i64() {
                    return Ok(Some(integer));
                }
                match number.as_f64() {
                    Some(float) if float.fract() == 0.0 && float.abs() < 1e15 => Ok(Some(float as i64)),
                    _ => Err(invalid),
                }
            }
            Some(Value::String(text)) => text.trim().parse::<i64>().map(Some).map_err(|_| invalid),
            Some(_) => Err(invalid),
        }
    }

    fn required_integer(&self, name: &'static str, expected: &'static str) -> Result<i64, ArgumentError> {
        self.integer(name, expected)?.ok_or(ArgumentError::Missing { name, expected })
    }

    fn page_id(&self) -> Result<i64, ArgumentError> {
        self.required_integer("page_id", "the page's id (an integer, as list_pages shows it)")
    }

    fn index(&self, name: &'static str, expected: &'static str) -> Result<Option<usize>, ArgumentError> {
        match self.integer(name, expected)? {
            None => Ok(None),
            Some(value) => usize::try_from(value).map(Some).map_err(|_| ArgumentError::Invalid { name, expected }),
        }
    }

    fn block(&self) -> Result<Option<usize>, ArgumentError> {
        self.index("block", "the block's number (an integer from 0, as read_page lists them)")
    }

    fn version(&self) -> Result<Option<i64>, ArgumentError> {
        self.integer("version", "the page version the change was proposed for (an integer)")
    }

    /// A text value; a number is taken as its text, so a heading level may come as 2 or "2".
    fn text(&self, name: &'static str, expected: &'static str) -> Result<String, ArgumentError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Err(ArgumentError::Missing { name, expected }),
            Some(Value::String(text)) => Ok(text.clone()),
            Some(Value::Number(number)) => Ok(number.to_string()),
            Some(_) => Err(ArgumentError::Invalid { name, expected }),
        }
    }
}

// --- shared helpers -----------------------------------------------------------------------------

/// A refused edit is the model's to correct; anything else stays in the log.
fn content_failure(error: ContentError) -> ToolError {
    match error {
        ContentError::Edit(edit) => ToolError::Rejected(sentence(&edit.to_string())),
        other => ToolError::failed(other),
    }
}

/// "the page has no block 9" → "The page has no block 9."
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    let mut out: String = chars.next().map(|first| first.to_uppercase().collect()).unwrap_or_default();
    out.push_str(chars.as_str());
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

fn no_such_page(page_id: i64) -> ToolError {
    ToolError::Rejected(format!("There is no page with id {page_id}; list_pages shows the ids."))
}

async fn load(store: &ContentStore, page_id: i64) -> Result<Page, ToolError> {
    store.page(page_id).await.map_err(content_failure)?.ok_or_else(|| no_such_page(page_id))
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= SHOWN_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(SHOWN_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

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

fn json_text(value: &Value) -> Result<String, ToolError> {
    serde_json::to_string(value).map_err(ToolError::failed)
}

fn page_id_schema() -> Value {
    json!({ "type": "integer", "description": "The page's id, as list_pages shows it." })
}

fn version_schema() -> Value {
    json!({
        "type": "integer",
        "description": "The page version the change was proposed for (suggest_change gives it). When given, \
                        the change is refused if the page has changed since."
    })
}

// --- reads --------------------------------------------------------------------------------------

struct ListPages(ContentStore);

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

struct ReadPage(ContentStore);

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

struct AnalysePage(ContentStore);

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

struct SuggestChange(ContentStore);

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

// --- writes -------------------------------------------------------------------------------------

/// Applies one change and says what changed, old → new. A change refused for a stale version is
/// reported as done when the page already holds the value: the write is idempotent, and a run
/// that crashed after writing retries it.
async fn write(
    store: &ContentStore,
    page_id: i64,
    target: EditTarget,
    value: &str,
    version: Option<i64>,
) -> Result<String, ToolError> {
    let what = match target.block() {
        Some(block) => format!("the {} of block {block} on page {page_id}", target.name()),
        None => format!("the {} of page {page_id}", target.name()),
    };
    match store.apply_edit(page_id, target, value, version).await.map_err(content_failure)? {
        UpdateOutcome::Updated { page, previous } => {
            let new = page.value_of(target).map_err(|error| content_failure(error.into()))?;
            Ok(format!(
                "Changed {what}: “{}” → “{}”. The page is now at version {}. Point numbers may have shifted: \
                 call analyse_page before suggesting another change.",
                shorten(&previous),
                shorten(&new),
                page.version
            ))
        }
        UpdateOutcome::NotFound => Err(no_such_page(page_id)),
        UpdateOutcome::Stale { current_version } => {
            let page = load(store, page_id).await?;
            let wanted = validate(target, value).map_err(|error| content_failure(error.into()))?;
            if page.value_of(target).ok().as_deref() == Some(wanted.as_str()) {
                return Ok(format!(
                    "{} already is “{}”; nothing was changed.",
                    sentence(&what).trim_end_matches('.'),
                    shorten(&wanted)
                ));
            }
            Err(ToolError::Rejected(format!(
                "Page {page_id} has changed since this change was proposed (it is now at version \
                 {current_version}); nothing was changed. Analyse the page again and propose anew."
            )))
        }
    }
}

/// What a write would change: the page's current value beside the proposed one, made from the
/// page as it is now (whatever version the model read). The basis is the page's version, which
/// the approved write then insists on.
async fn preview(
    store: &ContentStore,
    page_id: i64,
    target: EditTarget,
    value: &str,
) -> Result<Option<Preview>, ToolError> {
    let page = load(store, page_id).await?;
    let current = page.value_of(target).map_err(|error| ToolError::Rejected(error.to_string()))?;
    let proposed = validate(target, value).map_err(|error| ToolError::Rejected(error.to_string()))?;
    let label = match target.block() {
        Some(block) => format!("{} (block {block})", target.name()),
        None => target.name().to_string(),
    };
    Ok(Some(Preview {
        subject: page.title.clone(),
        changes: vec![FieldChange::new(&field_key(target), &label, Some(&current), &proposed)],
        basis: json!({ "page_id": page.id, "version": page.version }),
    }))
}

/// The stable key a card names a field by in the reader's language: the field's name as the
/// tools take it (`description`, `alt_text`).
fn field_key(target: EditTarget) -> String {
    let flat = serde_json::to_value(target).unwrap_or_default();
    flat["field"].as_str().unwrap_or_default().to_string()
}

/// The version a write insists on: the one the approved preview showed (the reader decided on
/// that page, whatever version the model had read), else the one the model named. A page edited
/// between the approval and the write is never overwritten.
fn expected_version(arguments: &Arguments<'_>, context: &ToolContext) -> Result<Option<i64>, ArgumentError> {
    let named = arguments.version()?;
    let approved = context.approved_basis.as_ref().and_then(|basis| basis.get("version")).and_then(Value::as_i64);
    Ok(approved.or(named))
}

struct UpdatePageField(ContentStore);

impl UpdatePageField {
    fn target(arguments: &Arguments<'_>) -> Result<EditTarget, ArgumentError> {
        let field = arguments.text("field", "the name of the field to change")?;
        let block = || {
            arguments.block()?.ok_or(ArgumentError::Missing {
                name: "block",
                expected: "the block's number (an integer from 0, as read_page lists them) for this field",
            })
        };
        let field = match field.trim() {
            "title" => PageField::Title,
            "description" => PageField::Description,
            "heading" => PageField::Heading { block: block()? },
            "heading_level" => PageField::HeadingLevel { block: block()? },
            "paragraph" => PageField::Paragraph { block: block()? },
            "link_text" => PageField::LinkText { block: block()? },
            "alt_text" | "alt" => return Err(ArgumentError::AltTextField),
            _ => return Err(ArgumentError::UnknownField),
        };
        Ok(EditTarget::Field(field))
    }
}

#[async_trait]
impl Tool for UpdatePageField {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            UPDATE_PAGE_FIELD,
            "Change one text field of a page: its title or description, or the text of a heading, paragraph \
             or link block, or a heading's level (\"1\" to \"6\"). The user approves the change first.",
            json!({
                "type": "object",
                "properties": {
                    "page_id": page_id_schema(),
                    "field": {
                        "type": "string",
                        "enum": ["title", "description", "heading", "heading_level", "paragraph", "link_text"]
                    },
                    "block": { "type": "integer", "minimum": 0, "description": "The block's number; needed for every field except title and description." },
                    "value": { "type": "string", "description": "The new value." },
                    "version": version_schema()
                },
                "required": ["page_id", "field", "value"]
            }),
        )
        .with_effect(ToolEffect::IdempotentWrite)
    }

    async fn preview(&self, arguments: &Value, _context: &ToolContext) -> Result<Option<Preview>, ToolError> {
        let arguments = Arguments::of(arguments)?;
        let page_id = arguments.page_id()?;
        let target = Self::target(&arguments)?;
        let value = arguments.text("value", "the new value (a string)")?;
        preview(&self.0, page_id, target, &value).await
    }

    async fn execute(&self, arguments: Value, context: &ToolContext) -> Result<String, ToolError> {
        let arguments = Arguments::of(&arguments)?;
        let page_id = arguments.page_id()?;
        let target = Self::target(&arguments)?;
        let value = arguments.text("value", "the new value (a string)")?;
        write(&self.0, page_id, target, &value, expected_version(&arguments, context)?).await
    }
}

struct SetAltText(ContentStore);

impl SetAltText {
    fn parts(arguments: &Arguments<'_>) -> Result<(i64, usize, String), ArgumentError> {
        let page_id = arguments.page_id()?;
        let block = arguments.block()?.ok_or(ArgumentError::Missing {
            name: "block",
            expected: "the image block's number (an integer from 0, as read_page lists them)",
        })?;
        Ok((page_id, block, arguments.text("alt", "the new alt text (a string)")?))
    }
}

#[async_trait]
impl Tool for SetAltText {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            SET_ALT_TEXT,
            "Set the alt text of an image block: a short description of what the image shows. The user \
             approves the change first.",
            json!({
                "type": "object",
                "properties": {
                    "page_id": page_id_schema(),
                    "block": { "type": "integer", "minimum": 0, "description": "The image block's number." },
                    "alt": { "type": "string", "description": "The new alt text." },
                    "version": version_schema()
                },
                "required": ["page_id", "block", "alt"]
            }),
        )
        .with_effect(ToolEffect::IdempotentWrite)
    }

    async fn preview(&self, arguments: &Value, _context: &ToolContext) -> Result<Option<Preview>, ToolError> {
        let arguments = Arguments::of(arguments)?;
        let (page_id, block, alt) = Self::parts(&arguments)?;
        preview(&self.0, page_id, EditTarget::AltText { block }, &alt).await
    }

    async fn execute(&self, arguments: Value, context: &ToolContext) -> Result<String, ToolError> {
        let arguments = Arguments::of(&arguments)?;
        let (page_id, block, alt) = Self::parts(&arguments)?;
        write(&self.0, page_id, EditTarget::AltText { block }, &alt, expected_version(&arguments, context)?).await
    }
}

#[cfg(test)]
mod tests {
    use runtime::Actor;
    use uuid::Uuid;

    use super::*;
    use crate::seed::{seed_if_empty, seed_pages};
    use crate::store::tests::content_store;
    use crate::Block;

    const HOME: i64 = 1;

    async fn seeded() -> (ToolRegistry, ContentStore) {
        let store = content_store().await;
        seed_if_empty(&store).await.expect("seed");
        let mut registry = ToolRegistry::new();
        register(&mut registry, store.clone());
        (registry, store)
    }

    fn context() -> ToolContext {
        ToolContext::new(Uuid::nil(), Actor::user(1), 1)
    }

    async fn call(registry: &ToolRegistry, name: &str, arguments: Value) -> Result<String, ToolError> {
        let tool = registry.get(name).unwrap_or_else(|| panic!("{name} is registered"));
        tool.tool.execute(arguments, &context()).await
    }

    async fn call_json(registry: &ToolRegistry, name: &str, arguments: Value) -> Value {
        let text = call(registry, name, arguments).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} answers JSON: {e}: {text}"))
    }

    fn rejected(result: Result<String, ToolError>) -> String {
        match result {
            Err(ToolError::Rejected(message)) => message,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    async fn home(store: &ContentStore) -> Page {
        store.page(HOME).await.expect("read").expect("home")
    }

    #[tokio::test]
    async fn tools_are_registered_with_their_effects() {
        let (registry, _) = seeded().await;
        let tools = registry.all();
        let effects: Vec<(&str, ToolEffect)> =
            tools.iter().map(|tool| (tool.spec.name.as_str(), tool.spec.effect)).collect();
        assert_eq!(
            effects,
            [
                (ANALYSE_PAGE, ToolEffect::ReadOnly),
                (LIST_PAGES, ToolEffect::ReadOnly),
                (READ_PAGE, ToolEffect::ReadOnly),
                (SET_ALT_TEXT, ToolEffect::IdempotentWrite),
                (SUGGEST_CHANGE, ToolEffect::ReadOnly),
                (UPDATE_PAGE_FIELD, ToolEffect::IdempotentWrite),
            ]
        );
        assert!(tools.iter().all(|tool| tool.spec.parameters["type"] == "object" && !tool.spec.asks_input()));
    }

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

    #[tokio::test]
    async fn tools_update_a_field_really_and_only_that_field() {
        let (registry, store) = seeded().await;
        let before = home(&store).await;
        let result = call(
            &registry,
            UPDATE_PAGE_FIELD,
            json!({ "page_id": HOME, "field": "link_text", "block": 5, "value": "Unser Angebot", "version": 1 }),
        )
        .await
        .expect("applies");
        assert_eq!(
            result,
            "Changed the link text of block 5 on page 1: “Hier klicken” → “Unser Angebot”. The page is now at version 2. \
             Point numbers may have shifted: call analyse_page before suggesting another change."
        );
        let after = home(&store).await;
        let mut expected = before.clone();
        expected.blocks[5] = Block::Link { text: "Unser Angebot".into(), href: "/angebot".into() };
        assert_eq!(after.blocks, expected.blocks);
        assert_eq!((after.title, after.description), (before.title, before.description));

        // A heading level may come as a number.
        call(
            &registry,
            UPDATE_PAGE_FIELD,
            json!({ "page_id": HOME, "field": "heading_level", "block": 3, "value": 3 }),
        )
        .await
        .expect("applies");
        assert_eq!(home(&store).await.blocks[3], Block::Heading { level: 3, text: "Unser Angebot".into() });
    }

    #[tokio::test]
    async fn tools_refuse_bad_writes_and_change_nothing() {
        let (registry, store) = seeded().await;
        let before = home(&store).await;
        let cases = [
            (
                UPDATE_PAGE_FIELD,
                json!({ "page_id": HOME, "field": "paragraph", "block": 42, "value": "Text" }),
                "The page has no block 42 (it has 8).",
            ),
            (
                UPDATE_PAGE_FIELD,
                json!({ "page_id": HOME, "field": "paragraph", "block": 2, "value": "Text" }),
                "Block 2 is a image, not a paragraph.",
            ),
            (UPDATE_PAGE_FIELD, json!({ "page_id": HOME, "field": "heading", "value": "Text" }), "block is missing"),
            (UPDATE_PAGE_FIELD, json!({ "page_id": HOME, "field": "colour", "value": "red" }), "field must be one of"),
            (
                UPDATE_PAGE_FIELD,
                json!({ "page_id": HOME, "field": "alt_text", "block": 2, "value": "Brot" }),
                "set_alt_text",
            ),
            (
                UPDATE_PAGE_FIELD,
                json!({ "page_id": HOME, "field": "title", "value": " " }),
                "The title must not be empty.",
            ),
            (
                UPDATE_PAGE_FIELD,
                json!({ "page_id": HOME, "field": "title", "value": "Zwei\nZeilen" }),
                "control character",
            ),
            (UPDATE_PAGE_FIELD, json!({ "page_id": HOME, "field": "title" }), "value is missing"),
            (UPDATE_PAGE_FIELD, json!({ "page_id": 99, "field": "title", "value": "Neu" }), "no page with id 99"),
            (
                UPDATE_PAGE_FIELD,
                json!({ "page_id": HOME, "field": "title", "value": "Neu", "version": 7 }),
                "has changed since",
            ),
            (
                SET_ALT_TEXT,
                json!({ "page_id": HOME, "block": 99, "alt": "Brot" }),
                "The page has no block 99 (it has 8).",
            ),
            (
                SET_ALT_TEXT,
                json!({ "page_id": HOME, "block": 1, "alt": "Brot" }),
                "Block 1 is a paragraph, not a image.",
            ),
            (SET_ALT_TEXT, json!({ "page_id": HOME, "block": -2, "alt": "Brot" }), "block must be"),
            (SET_ALT_TEXT, json!({ "page_id": HOME, "alt": "Brot" }), "block is missing"),
            (SET_ALT_TEXT, json!({ "page_id": HOME, "block": 2, "alt": "" }), "The alt text must not be empty."),
            (SET_ALT_TEXT, json!({ "page_id": HOME, "block": 2, "alt": ["Brot"] }), "alt must be"),
        ];
        for (tool, arguments, expected) in cases {
            let message = rejected(call(&registry, tool, arguments.clone()).await);
            assert!(message.contains(expected), "{tool} {arguments}: {message}");
        }
        assert_eq!(home(&store).await, before);
    }

    #[tokio::test]
    async fn tools_set_an_alt_text_and_report_a_repeated_write_as_done() {
        let (registry, store) = seeded().await;
        let arguments = json!({ "page_id": HOME, "block": 2, "alt": " Ein Laib Sauerteigbrot ", "version": 1 });
        let result = call(&registry, SET_ALT_TEXT, arguments.clone()).await.expect("applies");
        assert!(
            result.starts_with("Changed the alt text of block 2 on page 1: “” → “Ein Laib Sauerteigbrot”."),
            "{result}"
        );
        let page = home(&store).await;
        assert_eq!(
            page.blocks[2],
            Block::Image { src: "/images/IMG_4711.jpg".into(), alt: "Ein Laib Sauerteigbrot".into() }
        );
        // A run that crashed after the write retries it with the same version: done, not refused.
        let again = call(&registry, SET_ALT_TEXT, arguments).await.expect("already done");
        assert_eq!(
            again,
            "The alt text of block 2 on page 1 already is “Ein Laib Sauerteigbrot”; nothing was changed."
        );
        assert_eq!(home(&store).await.version, 2);
        // Everything else is as seeded.
        let seed = &seed_pages()[0];
        assert_eq!((page.title.as_str(), page.description.as_str()), (seed.title.as_str(), seed.description.as_str()));
        for (index, block) in page.blocks.iter().enumerate().filter(|(index, _)| *index != 2) {
            assert_eq!(block, &seed.blocks[index]);
        }
    }

    async fn preview_of(registry: &ToolRegistry, name: &str, arguments: Value) -> Result<Option<Preview>, ToolError> {
        let tool = registry.get(name).unwrap_or_else(|| panic!("{name} is registered"));
        tool.tool.preview(&arguments, &context()).await
    }

    #[tokio::test]
    async fn a_write_previews_the_current_and_proposed_value_with_a_word_diff_and_changes_nothing() {
        let (registry, store) = seeded().await;
        let before = home(&store).await;
        let preview = preview_of(
            &registry,
            UPDATE_PAGE_FIELD,
            json!({ "page_id": HOME, "field": "title", "value": format!("{} today", before.title), "version": 1 }),
        )
        .await
        .expect("preview")
        .expect("the write shows a preview");
        assert_eq!(preview.subject, before.title);
        assert_eq!(preview.basis, json!({ "page_id": HOME, "version": 1 }));
        let change = &preview.changes[0];
        assert_eq!((change.field.as_str(), change.current.as_deref()), ("title", Some(before.title.as_str())));
        assert_eq!(change.proposed, format!("{} today", before.title));
        assert_eq!(change.diff.last(), Some(&runtime::DiffPart::Added(" today".into())));
        assert_eq!(home(&store).await, before, "a preview only reads");

        let alt = preview_of(&registry, SET_ALT_TEXT, json!({ "page_id": HOME, "block": 2, "alt": "A loaf" }))
            .await
            .expect("preview")
            .expect("alt text shows a preview");
        assert_eq!(alt.changes[0].current.as_deref(), Some(""));
        assert_eq!(alt.changes[0].field, "alt_text");
        // A preview that cannot be made says why, in words the reader can take.
        let gone = preview_of(&registry, SET_ALT_TEXT, json!({ "page_id": 99, "block": 2, "alt": "A loaf" })).await;
        assert!(matches!(&gone, Err(ToolError::Rejected(why)) if why.contains("no page with id 99")), "{gone:?}");
        let wrong = preview_of(&registry, SET_ALT_TEXT, json!({ "page_id": HOME, "block": 0, "alt": "A loaf" })).await;
        assert!(matches!(wrong, Err(ToolError::Rejected(_))), "{wrong:?}");
    }

    #[tokio::test]
    async fn an_approved_write_insists_on_the_version_its_preview_showed() {
        let (registry, store) = seeded().await;
        let tool = registry.get(UPDATE_PAGE_FIELD).expect("registered");
        store.update_field(HOME, PageField::Description, "Edited elsewhere", None).await.expect("edit");
        let mut approved = context();
        approved.approved_basis = Some(json!({ "page_id": HOME, "version": 1 }));
        let arguments = json!({ "page_id": HOME, "field": "description", "value": "Fresh bread daily" });
        let refused = tool.tool.execute(arguments.clone(), &approved).await;
        assert!(rejected(refused).contains("has changed since this change was proposed"));
        assert_eq!(home(&store).await.description, "Edited elsewhere", "nothing was overwritten");
        // Approved on the page as it is now, the write goes through even if the model read an older one.
        approved.approved_basis = Some(json!({ "page_id": HOME, "version": 2 }));
        let mut old_version = arguments;
        old_version["version"] = json!(1);
        tool.tool.execute(old_version, &approved).await.expect("written");
        assert_eq!(home(&store).await.description, "Fresh bread daily");
    }
}
