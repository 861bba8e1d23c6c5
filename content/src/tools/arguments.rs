//! The model's arguments: read leniently where a model writes a number oddly, strictly about what
//! they name, and the schemas the tools declare for them.

use runtime::ToolError;
use serde_json::{json, Map, Value};

/// What is wrong with the model's arguments, as a sentence it can correct itself by.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ArgumentError {
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

pub(super) struct Arguments<'a>(&'a Map<String, Value>);

impl<'a> Arguments<'a> {
    pub(super) fn of(value: &'a Value) -> Result<Self, ArgumentError> {
        value.as_object().map(Arguments).ok_or(ArgumentError::NotAnObject)
    }

    /// An integer, also when a model sends it as `3.0` or `"3"` (local models often do).
    pub(super) fn integer(&self, name: &'static str, expected: &'static str) -> Result<Option<i64>, ArgumentError> {
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

    pub(super) fn required_integer(&self, name: &'static str, expected: &'static str) -> Result<i64, ArgumentError> {
        self.integer(name, expected)?.ok_or(ArgumentError::Missing { name, expected })
    }

    pub(super) fn page_id(&self) -> Result<i64, ArgumentError> {
        self.required_integer("page_id", "the page's id (an integer, as list_pages shows it)")
    }

    pub(super) fn index(&self, name: &'static str, expected: &'static str) -> Result<Option<usize>, ArgumentError> {
        match self.integer(name, expected)? {
            None => Ok(None),
            Some(value) => usize::try_from(value).map(Some).map_err(|_| ArgumentError::Invalid { name, expected }),
        }
    }

    pub(super) fn block(&self) -> Result<Option<usize>, ArgumentError> {
        self.index("block", "the block's number (an integer from 0, as read_page lists them)")
    }

    pub(super) fn version(&self) -> Result<Option<i64>, ArgumentError> {
        self.integer("version", "the page version the change was proposed for (an integer)")
    }

    /// A text value; a number is taken as its text, so a heading level may come as 2 or "2".
    pub(super) fn text(&self, name: &'static str, expected: &'static str) -> Result<String, ArgumentError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Err(ArgumentError::Missing { name, expected }),
            Some(Value::String(text)) => Ok(text.clone()),
            Some(Value::Number(number)) => Ok(number.to_string()),
            Some(_) => Err(ArgumentError::Invalid { name, expected }),
        }
    }
}

pub(super) fn page_id_schema() -> Value {
    json!({ "type": "integer", "description": "The page's id, as list_pages shows it." })
}

pub(super) fn version_schema() -> Value {
    json!({
        "type": "integer",
        "description": "The page version the change was proposed for (suggest_change gives it). When given, \
                        the change is refused if the page has changed since."
    })
}
