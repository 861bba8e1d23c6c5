//! Corrections of what a card proposes, as the chat checks them before anything is recorded: the
//! sentence a denial carries for the model, and arguments a reader edited before approving (read
//! from the card's form, checked against the tool's parameter schema field by field). Also how a
//! card offers the editing: the proposed text of a write in place, else the schema as a form.

use std::collections::BTreeMap;

use app::error::{AppError, FieldProblem};
use app::i18n::{Lang, Text};
use app::model::{edit_key, CallEdit};
use question::form::{FieldKind, FormField, InputPauseForm};
use runtime::{CallPreview, ToolRegistry};
use serde_json::Value;

/// The longest sentence a denial may carry to the model.
pub const MAX_SENTENCE_CHARS: usize = 2_000;

/// A sentence for the model: `None` when empty and `required` is false.
pub fn checked_sentence(text: Option<&str>, required: bool) -> Result<Option<String>, AppError> {
    let text = text.map(str::trim).filter(|text| !text.is_empty());
    match text {
        None if required => Err(AppError::Invalid(Text::ErrorResponseEmpty)),
        None => Ok(None),
        Some(text) if text.chars().count() > MAX_SENTENCE_CHARS => Err(AppError::Invalid(Text::ErrorResponseTooLong)),
        Some(text) => Ok(Some(text.to_string())),
    }
}

/// How a call is edited on its card: the argument that holds a write's proposed text (the
/// preview's one change shows it), else the tool's schema as a form, else JSON.
pub fn call_edit(call: &runtime::PendingCallView, parameters: Option<&Value>) -> CallEdit {
    if let Some((argument, text)) = proposed_text(call) {
        return CallEdit::Text { argument, text };
    }
    if let Some(InputPauseForm::Form(form)) = parameters.map(InputPauseForm::parse) {
        let arguments = call.arguments.as_object();
        // Every argument must have its field, or editing in the form would drop it.
        let shown = |key: &String| form.fields.iter().any(|field| &field.name == key);
        // A group of checkboxes posts a key per option, which an edit does not read.
        let plain = form.fields.iter().all(|field| field.kind != FieldKind::MultiSelect);
        if plain && arguments.is_some_and(|arguments| arguments.keys().all(shown)) {
            let fields = form
                .fields
                .into_iter()
                .map(|field| {
                    let value = arguments.and_then(|arguments| arguments.get(&field.name)).cloned();
                    FormField { default: value, ..field }
                })
                .collect();
            return CallEdit::Form { fields };
        }
    }
    CallEdit::Json { text: serde_json::to_string_pretty(&call.arguments).unwrap_or_default() }
}

/// The string argument whose value is the text a write's preview proposes.
fn proposed_text(call: &runtime::PendingCallView) -> Option<(String, String)> {
    let Some(CallPreview::Ready(preview)) = &call.preview else { return None };
    let [change] = preview.changes.as_slice() else { return None };
    let proposed = &change.proposed;
    let arguments = call.arguments.as_object()?;
    arguments.iter().find_map(|(name, value)| {
        let text = value.as_str()?;
        (text.trim() == proposed.trim()).then(|| (name.clone(), text.to_string()))
    })
}

/// The arguments of each edited call (call id → arguments), read from what the card posted and
/// checked against the tool's parameter schema. A call whose arguments come out unchanged is
/// left out; no call edited at all is a problem of its own. Each field that does not fit says why.
pub fn edited_arguments(
    calls: &[runtime::PendingCallView],
    tools: &ToolRegistry,
    posted: &BTreeMap<String, String>,
    lang: Lang,
) -> Result<BTreeMap<String, Value>, AppError> {
    let mut edits = BTreeMap::new();
    let mut problems = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        let whole = posted.get(&edit_key(index, None));
        let prefix = edit_key(index, Some(""));
        let fields: BTreeMap<&str, &String> =
            posted.iter().filter_map(|(key, value)| Some((key.strip_prefix(&prefix)?, value))).collect();
        if whole.is_none() && fields.is_empty() {
            continue;
        }
        let Some(tool) = tools.get(&call.name) else {
            problems.push(FieldProblem {
                field: call.name.clone(),
                message: lang.t(Text::ErrorEditInvalid).into(),
                call: Some(index),
            });
            continue;
        };
        let parameters = &tool.spec.parameters;
        let arguments = match whole {
            Some(text) => match serde_json::from_str::<Value>(text) {
                Ok(value @ Value::Object(_)) => value,
                _ => {
                    let field = format!("{} (JSON)", call.name);
                    let message = lang.t(Text::EditJsonUnreadable).into();
                    problems.push(FieldProblem { field, message, call: Some(index) });
                    continue;
                }
            },
            None => overlay(&call.arguments, parameters, &fields),
        };
        let found = schema_problems(parameters, &arguments, lang);
        if !found.is_empty() {
            problems.extend(found.into_iter().map(|problem| FieldProblem { call: Some(index), ..problem }));
            continue;
        }
        if arguments != call.arguments {
            edits.insert(call.call_id.clone(), arguments);
        }
    }
    if !problems.is_empty() {
        return Err(AppError::InvalidEdit(problems));
    }
    if edits.is_empty() {
        return Err(AppError::Invalid(Text::ErrorEditInvalid));
    }
    Ok(edits)
}

/// The model's arguments with the posted fields over them, each read as the form's field kind
/// (a number that does not read as one stays text, for the schema check to name).
fn overlay(original: &Value, parameters: &Value, fields: &BTreeMap<&str, &String>) -> Value {
    let mut arguments = original.as_object().cloned().unwrap_or_default();
    let form = match InputPauseForm::parse(parameters) {
        InputPauseForm::Form(form) => form.fields,
        _ => Vec::new(),
    };
    for field in &form {
        let posted = fields.get(field.name.as_str()).map(|text| text.as_str());
        let value = match (field.kind, posted) {
            // An unticked box is not posted at all.
            (FieldKind::Boolean, posted) => Some(Value::Bool(posted.is_some_and(|t| matches!(t, "true" | "on" | "1")))),
            (_, None) => continue,
            (_, Some("")) => None,
            (FieldKind::Integer, Some(text)) => {
                Some(text.trim().parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String(text.into())))
            }
            (FieldKind::Number, Some(text)) => Some(
                text.trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(|number| serde_json::Number::from_f64(number).map(Value::Number))
                    .unwrap_or_else(|| Value::String(text.into())),
            ),
            (FieldKind::Select, Some(text)) => Some(
                field
                    .options
                    .iter()
                    .find(|option| shown(&option.value) == text)
                    .map(|option| option.value.clone())
                    .unwrap_or_else(|| Value::String(text.into())),
            ),
            (_, Some(text)) => Some(Value::String(text.into())),
        };
        match value {
            Some(value) => arguments.insert(field.name.clone(), value),
            // An emptied field is an argument taken out.
            None => arguments.remove(&field.name),
        };
    }
    // A posted field the form does not show (a text edit in place) is text.
    for (name, text) in fields {
        if !form.iter().any(|field| field.name == *name) {
            arguments.insert(name.to_string(), Value::String(text.to_string()));
        }
    }
    Value::Object(arguments)
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Each field of `arguments` that does not fit `schema`, with a sentence in the reader's language.
fn schema_problems(schema: &Value, arguments: &Value, lang: Lang) -> Vec<FieldProblem> {
    use jsonschema::error::ValidationErrorKind as Kind;
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return vec![FieldProblem { field: String::new(), message: lang.t(Text::ErrorEditInvalid).into(), call: None }];
    };
    let mut problems: Vec<FieldProblem> = Vec::new();
    for error in validator.iter_errors(arguments) {
        let path = error.instance_path().as_str().trim_start_matches('/').to_string();
        let (field, message) = match error.kind() {
            Kind::Required { property } => {
                (property.as_str().unwrap_or_default().to_string(), lang.t(Text::EditFieldRequired).to_string())
            }
            Kind::AdditionalProperties { unexpected } => {
                (unexpected.join(", "), lang.t(Text::EditFieldUnknown).to_string())
            }
            Kind::Type { .. } => {
                let expected = property_type(schema, &path).unwrap_or_else(|| "another type".into());
                (path, lang.t(Text::EditFieldType).replace("{}", &expected))
            }
            Kind::Enum { .. } => (path, lang.t(Text::EditFieldEnum).to_string()),
            _ => (path, lang.t(Text::EditFieldOther).replace("{}", &error.to_string())),
        };
        // One sentence per field: the first says enough.
        if !problems.iter().any(|problem| problem.field == field) {
            problems.push(FieldProblem { field, message, call: None });
        }
    }
    problems
}

/// The `type` the schema gives a top-level property, as a word.
fn property_type(schema: &Value, property: &str) -> Option<String> {
    let kind = schema.get("properties")?.get(property)?.get("type")?;
    Some(match kind {
        Value::String(kind) => kind.clone(),
        other => other.to_string(),
    })
}
