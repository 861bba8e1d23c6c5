//! `InputPauseForm`: how a question's JSON Schema is shown (reply buttons, a small form, or a plain
//! "cannot show this"), and the chat's own check of an answer against it.
//!
//! One module for both sides: the server checks an answer with exactly the reading the browser
//! rendered the buttons from. The runtime validates structure only; membership in the offered
//! options and the type of a form field are checked here, before anything is recorded.

use serde::{Deserialize, Serialize};

use crate::same_value;
use serde_json::{json, Map, Value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChoiceOption {
    /// The value submitted for this option, with its JSON type (1 and "1" are different options).
    pub value: Value,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    pub question: String,
    pub property: String,
    pub options: Vec<ChoiceOption>,
    /// The property typed text goes into; `None` when typed text is a message of its own.
    pub free_text_property: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    Text,
    Integer,
    Number,
    Boolean,
    Select,
    /// Several of the options (`type: array` of an enum or titled `anyOf`): a group of checkboxes.
    MultiSelect,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormField {
    pub name: String,
    pub label: String,
    pub kind: FieldKind,
    pub required: bool,
    pub options: Vec<ChoiceOption>,
    pub description: Option<String>,
    /// The schema's `default`, when it fits the field: the form starts with it.
    #[serde(default)]
    pub default: Option<Value>,
    /// How many options a multi-select takes at least and at most.
    #[serde(default)]
    pub min_items: Option<u64>,
    #[serde(default)]
    pub max_items: Option<u64>,
    /// The most characters a text field takes (`maxLength`).
    #[serde(default)]
    pub max_length: Option<u64>,
}

/// The name a multi-select's checkbox for option `index` posts under, inside `fields[…]`.
pub fn multi_select_key(field: &str, index: usize) -> String {
    format!("{field}#{index}")
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Form {
    pub question: String,
    pub fields: Vec<FormField>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", try_from = "FormWire")]
pub enum InputPauseForm {
    Choice(Choice),
    Form(Form),
    Unsupported { question: String },
}

/// `InputPauseForm` as its JSON reads, every kind's fields side by side. Read through this rather
/// than serde's internally tagged derive, which buffers the object first: that buffering and its
/// visitors were about 4 % of the browser's WASM (the same JSON both ways).
#[derive(Deserialize)]
struct FormWire {
    kind: FormKind,
    question: String,
    property: Option<String>,
    options: Option<Vec<ChoiceOption>>,
    free_text_property: Option<String>,
    fields: Option<Vec<FormField>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum FormKind {
    Choice,
    Form,
    Unsupported,
}

impl TryFrom<FormWire> for InputPauseForm {
    type Error = &'static str;

    fn try_from(wire: FormWire) -> Result<InputPauseForm, &'static str> {
        let FormWire { kind, question, property, options, free_text_property, fields } = wire;
        Ok(match kind {
            FormKind::Choice => InputPauseForm::Choice(Choice {
                question,
                property: property.ok_or("missing field `property`")?,
                options: options.ok_or("missing field `options`")?,
                free_text_property,
            }),
            FormKind::Form => InputPauseForm::Form(Form { question, fields: fields.ok_or("missing field `fields`")? }),
            FormKind::Unsupported => InputPauseForm::Unsupported { question },
        })
    }
}

/// What the reader sent: a button, typed text, or a filled form. Exactly one of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputAnswer {
    Choice(Value),
    FreeText(String),
    Fields(Map<String, Value>),
    /// What an HTML form posts: every value a string, an unticked checkbox absent.
    FormFields(std::collections::BTreeMap<String, String>),
    /// No answer: the reader declines a question that offers declining.
    Decline,
}

impl InputAnswer {
    /// The answer a reader gives by accepting the form as it is shown: every default filled in.
    pub fn defaults_of(form: &Form) -> InputAnswer {
        let defaults = form.fields.iter().filter_map(|field| Some((field.name.clone(), field.default.clone()?)));
        InputAnswer::Fields(defaults.collect())
    }
}

/// An answer that fits: the values for the runtime, and the line shown in the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct AcceptedAnswer {
    pub data: Map<String, Value>,
    pub display: String,
}

/// The words for a boolean answer in the transcript, in the reader's language.
#[derive(Debug, Clone, Copy)]
pub struct YesNo<'a> {
    pub yes: &'a str,
    pub no: &'a str,
}

/// Why an answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerRefused {
    /// Not an answer to this question at all: a button it does not offer, a field it does not
    /// show, the wrong kind of answer, or nothing.
    #[error("This answer does not fit the question")]
    NotOffered,
    /// A form's answer with fields that do not fit: each one and why, in the form's order.
    #[error("some fields do not fit the question")]
    Fields(Vec<FieldError>),
}

/// One field of a form's answer that does not fit, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub kind: FieldErrorKind,
}

/// Why a field's value does not fit: what the reader is to enter instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldErrorKind {
    Required,
    WholeNumber,
    Number,
    /// One of these options (their labels).
    OneOf(Vec<String>),
    YesOrNo,
    Text,
    /// At most this many characters.
    TooLong(u64),
    /// At least this many of the options.
    TooFew(u64),
    /// At most this many of the options.
    TooMany(u64),
    // What only the schema check finds (`schema::field_errors`): its own error kinds, read for
    // the reader. Numbers as the schema writes them.
    /// `minimum`: at least this.
    AtLeast(String),
    /// `maximum`: at most this.
    AtMost(String),
    /// `exclusiveMinimum`: more than this.
    Above(String),
    /// `exclusiveMaximum`: less than this.
    Below(String),
    /// `multipleOf`.
    MultipleOf(String),
    /// `minLength`: at least this many characters.
    TooShort(u64),
    /// `pattern`: text of the shape the field asks for.
    Pattern,
    /// `format`, for the formats a question may name (MCP's elicitation: email, uri, date,
    /// date-time); the schema engine knows more, which a question does not use.
    Format(TextFormat),
    /// Anything else the schema refuses about the field.
    Other,
}

/// The formats of a text field the answer check names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    Email,
    Uri,
    Date,
    DateTime,
}

impl TextFormat {
    pub fn of(format: &str) -> Option<TextFormat> {
        match format {
            "email" => Some(TextFormat::Email),
            "uri" => Some(TextFormat::Uri),
            "date" => Some(TextFormat::Date),
            "date-time" => Some(TextFormat::DateTime),
            _ => None,
        }
    }
}

impl InputPauseForm {
    pub fn parse(schema: &Value) -> InputPauseForm {
        let question_of_schema = text_field(schema, "title").or_else(|| text_field(schema, "description"));
        let unsupported = || InputPauseForm::Unsupported { question: question_of_schema.clone().unwrap_or_default() };

        let Some(schema) = schema.as_object() else { return unsupported() };
        if schema.get("type").is_some_and(|kind| kind != "object") {
            return unsupported();
        }
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return unsupported() };
        if properties.is_empty() {
            return unsupported();
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();

        let mut read = Vec::with_capacity(properties.len());
        for (name, property) in properties {
            let Some(property) = property.as_object() else { return unsupported() };
            let Some(reading) = PropertyReading::of(property) else { return unsupported() };
            read.push((name.clone(), property, reading, required.contains(&name.as_str())));
        }

        let with_options: Vec<usize> = read
            .iter()
            .enumerate()
            .filter(|(_, (_, _, reading, _))| reading.options.is_some() && reading.kind == FieldKind::Select)
            .map(|(i, _)| i)
            .collect();
        if let [choice_index] = with_options[..] {
            let others: Vec<usize> = (0..read.len()).filter(|i| *i != choice_index).collect();
            let free_text = match others[..] {
                [] => Some(None),
                [other] if read[other].2.is_free_text && !read[other].3 => Some(Some(read[other].0.clone())),
                _ => None,
            };
            if let Some(free_text) = free_text {
                let (name, property, reading, choice_required) = &read[choice_index];
                let question = question_of_schema
                    .clone()
                    .or_else(|| text_field_of(property, "title"))
                    .or_else(|| text_field_of(property, "description"))
                    .unwrap_or_default();
                return InputPauseForm::Choice(Choice {
                    question,
                    property: name.clone(),
                    options: reading.options.clone().unwrap_or_default(),
                    // Text alone would not validate while the choice is required.
                    free_text_property: if *choice_required { None } else { free_text },
                });
            }
        }

        // A dropdown's empty value means "nothing chosen"; an option whose value is "" could not
        // be told apart from it, so such a question is one the chat cannot show faithfully.
        let empty_option = |reading: &PropertyReading| {
            reading.options.iter().flatten().any(|option| option.value.as_str() == Some(""))
        };
        if read.iter().any(|(_, _, reading, _)| empty_option(reading)) {
            return unsupported();
        }
        let fields = read
            .into_iter()
            .map(|(name, property, reading, required)| {
                let mut field = FormField {
                    label: text_field_of(property, "title").unwrap_or_else(|| label_from_name(&name)),
                    description: text_field_of(property, "description"),
                    kind: reading.kind,
                    options: reading.options.unwrap_or_default(),
                    required,
                    name,
                    default: None,
                    min_items: reading.min_items,
                    max_items: reading.max_items,
                    max_length: reading.max_length,
                };
                // A default is offered only where it is an answer the field would take.
                field.default = property
                    .get("default")
                    .filter(|default| coerce(&field, default, YesNo { yes: "", no: "" }).is_some())
                    .cloned();
                field
            })
            .collect();
        InputPauseForm::Form(Form { question: question_of_schema.unwrap_or_default(), fields })
    }

    pub fn question(&self) -> &str {
        match self {
            InputPauseForm::Choice(choice) => &choice.question,
            InputPauseForm::Form(form) => &form.question,
            InputPauseForm::Unsupported { question } => question,
        }
    }

    /// Typed text is an answer only where the question takes free text; elsewhere it is a message
    /// of its own that leaves the question unanswered.
    pub fn takes_free_text(&self) -> bool {
        matches!(self, InputPauseForm::Choice(Choice { free_text_property: Some(_), .. }))
    }

    /// Checks an answer against the question as it stands.
    pub fn check(&self, answer: &InputAnswer, words: YesNo<'_>) -> Result<AcceptedAnswer, AnswerRefused> {
        self.check_with(answer, words, &|_, _| Vec::new())
    }

    /// As [`check`](Self::check), and a form's values that fit their fields' kinds go through
    /// `more` too (the schema's own check, `schema::field_errors`, which the browser's build does
    /// not have): its problems join the form's, one per field, in the form's order.
    pub fn check_with(
        &self,
        answer: &InputAnswer,
        words: YesNo<'_>,
        more: &FieldCheck<'_>,
    ) -> Result<AcceptedAnswer, AnswerRefused> {
        match (self, answer) {
            (InputPauseForm::Choice(choice), InputAnswer::Choice(value)) => {
                let option = choice
                    .options
                    .iter()
                    .find(|option| same_value(&option.value, value))
                    .ok_or(AnswerRefused::NotOffered)?;
                Ok(AcceptedAnswer {
                    data: Map::from_iter([(choice.property.clone(), option.value.clone())]),
                    display: option.label.clone(),
                })
            }
            (InputPauseForm::Choice(choice), InputAnswer::FreeText(text)) => {
                let property = choice.free_text_property.as_ref().ok_or(AnswerRefused::NotOffered)?;
                let text = text.trim();
                if text.is_empty() {
                    return Err(AnswerRefused::NotOffered);
                }
                Ok(AcceptedAnswer {
                    data: Map::from_iter([(property.clone(), Value::String(text.to_string()))]),
                    display: text.to_string(),
                })
            }
            (InputPauseForm::Form(form), InputAnswer::Fields(values)) => check_form(form, values, words, more),
            (InputPauseForm::Form(form), InputAnswer::FormFields(strings)) => {
                // A field the form does not show (or a checkbox for an option it does not offer)
                // is not part of any answer to it.
                if !strings.keys().all(|key| shows_key(form, key)) {
                    return Err(AnswerRefused::NotOffered);
                }
                check_form(form, &typed_from_form(form, strings), words, more)
            }
            _ => Err(AnswerRefused::NotOffered),
        }
    }
}

/// A further check of a form's values read so far: the fields it refuses, and why.
pub type FieldCheck<'a> = dyn Fn(&Form, &Map<String, Value>) -> Vec<FieldError> + 'a;

/// Checks every field, so a refusal names each field that does not fit.
fn check_form(
    form: &Form,
    values: &Map<String, Value>,
    words: YesNo<'_>,
    more: &FieldCheck<'_>,
) -> Result<AcceptedAnswer, AnswerRefused> {
    let mut data = Map::new();
    let mut lines = Vec::new();
    let mut problems = Vec::new();
    for field in &form.fields {
        let nothing_ticked =
            |value: &Value| field.kind == FieldKind::MultiSelect && !field.required && *value == json!([]);
        // Spaces alone are no text: the field is as good as empty.
        let blank =
            |value: &Value| field.kind == FieldKind::Text && value.as_str().is_some_and(|t| t.trim().is_empty());
        let given = values
            .get(&field.name)
            .filter(|value| !value.is_null() && *value != "" && !blank(value) && !nothing_ticked(value));
        let Some(given) = given else {
            if field.required {
                problems.push(FieldError { field: field.name.clone(), kind: FieldErrorKind::Required });
            }
            continue;
        };
        match coerce(field, given, words) {
            Some((value, shown)) => {
                lines.push(format!("{}: {}", field.label, shown));
                data.insert(field.name.clone(), value);
            }
            None => problems.push(FieldError { field: field.name.clone(), kind: why_not(field, given) }),
        }
    }
    let mut further = more(form, &data);
    further.retain(|error| form.fields.iter().any(|field| field.name == error.field));
    for error in further {
        if !problems.iter().any(|problem| problem.field == error.field) {
            problems.push(error);
        }
    }
    if !problems.is_empty() {
        let place = |error: &FieldError| form.fields.iter().position(|field| field.name == error.field);
        problems.sort_by_key(place);
        return Err(AnswerRefused::Fields(problems));
    }
    if data.is_empty() {
        return Err(AnswerRefused::NotOffered);
    }
    Ok(AcceptedAnswer { data, display: lines.join("\n") })
}

/// Why `coerce` did not take `given` for `field`: what the field wants instead.
fn why_not(field: &FormField, given: &Value) -> FieldErrorKind {
    let options = || FieldErrorKind::OneOf(field.options.iter().map(|option| option.label.clone()).collect());
    match field.kind {
        FieldKind::Integer => FieldErrorKind::WholeNumber,
        FieldKind::Number => FieldErrorKind::Number,
        FieldKind::Boolean => FieldErrorKind::YesOrNo,
        FieldKind::Select => options(),
        FieldKind::Text => match (given.as_str(), field.max_length) {
            (Some(_), Some(max)) => FieldErrorKind::TooLong(max),
            _ => FieldErrorKind::Text,
        },
        FieldKind::MultiSelect => {
            let count = given.as_array().map(|picked| picked.len() as u64);
            match (count, field.min_items, field.max_items) {
                (Some(count), Some(min), _) if count < min => FieldErrorKind::TooFew(min),
                (Some(count), _, Some(max)) if count > max => FieldErrorKind::TooMany(max),
                _ => options(),
            }
        }
    }
}

/// Whether the form posts under `key`: a field's name, or one of a multi-select's checkboxes.
fn shows_key(form: &Form, key: &str) -> bool {
    form.fields.iter().any(|field| match field.kind {
        FieldKind::MultiSelect => (0..field.options.len()).any(|index| multi_select_key(&field.name, index) == key),
        _ => field.name == key,
    })
}

/// Reads posted strings with the form's field kinds: a checkbox is true when present and false
/// when absent, a select takes the option whose value reads as the posted text. Everything else
/// stays a string for `coerce` to check.
fn typed_from_form(form: &Form, strings: &std::collections::BTreeMap<String, String>) -> Map<String, Value> {
    let mut values = Map::new();
    for field in &form.fields {
        let posted = strings.get(&field.name);
        let value = match field.kind {
            FieldKind::Boolean => Value::Bool(posted.is_some_and(|text| matches!(text.as_str(), "true" | "on" | "1"))),
            // One checkbox per option, posted only when ticked.
            FieldKind::MultiSelect => Value::Array(
                field
                    .options
                    .iter()
                    .enumerate()
                    .filter(|(index, _)| strings.contains_key(&multi_select_key(&field.name, *index)))
                    .map(|(_, option)| option.value.clone())
                    .collect(),
            ),
            FieldKind::Select => match posted {
                Some(text) => field
                    .options
                    .iter()
                    .find(|option| scalar_label(&option.value).as_deref() == Some(text.as_str()))
                    .map(|option| option.value.clone())
                    .unwrap_or_else(|| Value::String(text.clone())),
                None => continue,
            },
            _ => match posted {
                Some(text) => Value::String(text.clone()),
                None => continue,
            },
        };
        values.insert(field.name.clone(), value);
    }
    values
}

/// The value in the schema's type, and how it reads in the transcript.
fn coerce(field: &FormField, given: &Value, words: YesNo<'_>) -> Option<(Value, String)> {
    match field.kind {
        FieldKind::MultiSelect => {
            let picked = given.as_array()?;
            let mut labels = Vec::with_capacity(picked.len());
            for (index, value) in picked.iter().enumerate() {
                let option = field.options.iter().find(|option| same_value(&option.value, value))?;
                // The same option twice is no set of options.
                if picked[..index].iter().any(|earlier| same_value(earlier, value)) {
                    return None;
                }
                labels.push(option.label.clone());
            }
            let count = picked.len() as u64;
            if field.min_items.is_some_and(|min| count < min) || field.max_items.is_some_and(|max| count > max) {
                return None;
            }
            Some((given.clone(), labels.join(", ")))
        }
        FieldKind::Select => {
            let option = field.options.iter().find(|option| same_value(&option.value, given))?;
            Some((option.value.clone(), option.label.clone()))
        }
        FieldKind::Integer => match given {
            Value::Number(number) if number.is_i64() || number.is_u64() => Some((given.clone(), number.to_string())),
            Value::String(text) => {
                let text = text.trim();
                let digits = text.strip_prefix('-').unwrap_or(text);
                if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
                    return None;
                }
                let number: i64 = text.parse().ok()?;
                Some((Value::from(number), number.to_string()))
            }
            _ => None,
        },
        FieldKind::Number => match given {
            Value::Number(number) => Some((given.clone(), number.to_string())),
            Value::String(text) => {
                let text = text.trim();
                let number: f64 = text.parse().ok().filter(|number: &f64| number.is_finite())?;
                Some((Value::from(number), text.to_string()))
            }
            _ => None,
        },
        FieldKind::Boolean => match given {
            Value::Bool(flag) => Some((given.clone(), if *flag { words.yes } else { words.no }.to_string())),
            _ => None,
        },
        FieldKind::Text => {
            let text = given.as_str()?.trim();
            // The runtime's check counts `maxLength` in characters too, of the text as sent.
            let fits = field.max_length.is_none_or(|max| text.chars().count() as u64 <= max);
            (!text.is_empty() && fits).then(|| (Value::String(text.to_string()), text.to_string()))
        }
    }
}

struct PropertyReading {
    options: Option<Vec<ChoiceOption>>,
    kind: FieldKind,
    is_free_text: bool,
    min_items: Option<u64>,
    max_items: Option<u64>,
    max_length: Option<u64>,
}

impl PropertyReading {
    /// `None` when the property cannot be offered at all.
    fn of(property: &Map<String, Value>) -> Option<PropertyReading> {
        let plain = |kind, options| PropertyReading {
            options,
            kind,
            is_free_text: false,
            min_items: None,
            max_items: None,
            max_length: None,
        };
        let declares_options = ["enum", "oneOf", "anyOf"].iter().any(|key| property.contains_key(*key));
        if declares_options {
            // Options that cannot be read cannot be offered: typed text would never be one of them.
            let options = read_options(property)?;
            return Some(plain(FieldKind::Select, Some(options)));
        }
        if property.get("type").and_then(Value::as_str) == Some("array") {
            // Several of a list of options; any other array cannot be shown as a field.
            let items = property.get("items")?.as_object()?;
            let options = read_options(items)?;
            // A bound that is not a count cannot be shown.
            let count = |key: &str| match property.get(key) {
                None => Some(None),
                Some(value) => value.as_u64().map(Some),
            };
            let (min_items, max_items) = (count("minItems")?, count("maxItems")?);
            if min_items.zip(max_items).is_some_and(|(min, max)| min > max) || min_items > Some(options.len() as u64) {
                return None;
            }
            return Some(PropertyReading { min_items, max_items, ..plain(FieldKind::MultiSelect, Some(options)) });
        }
        let kind = match scalar_type(property.get("type"))? {
            "string" => FieldKind::Text,
            "integer" => FieldKind::Integer,
            "number" => FieldKind::Number,
            "boolean" => FieldKind::Boolean,
            _ => return None,
        };
        let is_free_text = kind == FieldKind::Text && !property.contains_key("const");
        // A bound that is not a count cannot be shown.
        let max_length = match property.get("maxLength") {
            Some(max) if kind == FieldKind::Text => Some(max.as_u64()?),
            _ => None,
        };
        Some(PropertyReading { is_free_text, max_length, ..plain(kind, None) })
    }
}

fn scalar_type(kind: Option<&Value>) -> Option<&str> {
    match kind {
        None => Some("string"),
        Some(Value::String(kind)) => Some(kind),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).find(|kind| *kind != "null"),
        Some(_) => None,
    }
}

fn read_options(property: &Map<String, Value>) -> Option<Vec<ChoiceOption>> {
    if let Some(values) = property.get("enum") {
        let values = values.as_array().filter(|values| !values.is_empty())?;
        // The older way to title an enum's values: `enumNames` beside it, one name per value.
        let names = match property.get("enumNames") {
            None => None,
            Some(names) => Some(names.as_array().filter(|names| names.len() == values.len())?),
        };
        return values
            .iter()
            .enumerate()
            .map(|(index, value)| {
                let named =
                    names.and_then(|names| names[index].as_str()).map(str::trim).filter(|name| !name.is_empty());
                let label = named.map(str::to_string).or_else(|| scalar_label(value))?;
                Some(ChoiceOption { value: value.clone(), label })
            })
            .collect();
    }
    let branches = property.get("oneOf").or_else(|| property.get("anyOf"))?.as_array().filter(|b| !b.is_empty())?;
    branches
        .iter()
        .map(|branch| {
            let value = branch.get("const")?;
            let fallback = scalar_label(value)?;
            let label = text_field(branch, "title").unwrap_or(fallback);
            Some(ChoiceOption { value: value.clone(), label })
        })
        .collect()
}

fn scalar_label(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

fn text_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::trim).filter(|text| !text.is_empty()).map(str::to_string)
}

fn text_field_of(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::trim).filter(|text| !text.is_empty()).map(str::to_string)
}

fn label_from_name(name: &str) -> String {
    let spaced = name.replace('_', " ");
    let mut characters = spaced.chars();
    match characters.next() {
        Some(first) => first.to_uppercase().chain(characters).collect(),
        None => spaced,
    }
}

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
