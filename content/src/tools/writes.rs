//! update_page_field and set_alt_text, the two writes that go through the user's approval: each
//! previews the field with its current and proposed text, and writes only on the page version the
//! approved preview showed.

use async_trait::async_trait;
use runtime::{FieldChange, Preview, Tool, ToolContext, ToolEffect, ToolError, ToolSpec};
use serde_json::{json, Value};

use super::arguments::{page_id_schema, version_schema, ArgumentError, Arguments};
use super::replies::{content_failure, load, no_such_page, sentence, shorten};
use super::{SET_ALT_TEXT, UPDATE_PAGE_FIELD};
use crate::store::{ContentStore, UpdateOutcome};
use crate::{validate, EditTarget, PageField};

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

pub(super) struct UpdatePageField(pub(super) ContentStore);

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

pub(super) struct SetAltText(pub(super) ContentStore);

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
    use runtime::{Preview, ToolError, ToolRegistry};
    use serde_json::{json, Value};

    use crate::seed::seed_pages;
    use crate::tools::tests::{call, context, home, rejected, seeded, HOME};
    use crate::tools::{SET_ALT_TEXT, UPDATE_PAGE_FIELD};
    use crate::{Block, PageField};

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
