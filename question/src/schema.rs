//! Checking a submission against the input schema a run is suspended on, and folding it into the
//! call that asked.

use serde_json::{Map, Value};

use crate::same_value;

/// Why a submission was refused. Carries field names only, never the submitted values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidSubmission {
    #[error("submission does not match the question's structure at {path:?}")]
    Structure { path: String },
    #[error("value for {field:?} is not one of the offered options")]
    NotAnOption { field: String },
}

/// The schema itself cannot be used to ask anything; that is a tool bug, not a user error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("input schema is not usable: {0}")]
pub struct UnusableSchema(pub String);

/// A schema can only ask something if it is an object schema that names at least one property and
/// compiles as JSON Schema.
pub fn check_schema(schema: &Value) -> Result<(), UnusableSchema> {
    let object = schema.as_object().ok_or_else(|| UnusableSchema("not an object".into()))?;
    match object.get("type") {
        Some(Value::String(kind)) if kind == "object" => {}
        _ => return Err(UnusableSchema("type is not \"object\"".into())),
    }
    let has_property =
        object.get("properties").and_then(Value::as_object).is_some_and(|properties| !properties.is_empty());
    if !has_property {
        return Err(UnusableSchema("no properties".into()));
    }
    jsonschema::validator_for(schema).map_err(|error| UnusableSchema(error.to_string()))?;
    Ok(())
}

/// Structure via JSON Schema, then membership in every top-level `enum`, checked on its own so an
/// option list is enforced even if the schema engine's handling of a keyword ever changes.
pub fn validate_submission(schema: &Value, values: &Map<String, Value>) -> Result<(), SubmissionError> {
    check_schema(schema).map_err(SubmissionError::Schema)?;
    let validator =
        jsonschema::validator_for(schema).map_err(|e| SubmissionError::Schema(UnusableSchema(e.to_string())))?;
    let instance = Value::Object(values.clone());
    if let Some(error) = validator.iter_errors(&instance).next() {
        return Err(SubmissionError::Invalid(InvalidSubmission::Structure { path: error.instance_path().to_string() }));
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (field, property) in properties.into_iter().flatten() {
        let (Some(options), Some(value)) = (property.get("enum").and_then(Value::as_array), values.get(field)) else {
            continue;
        };
        if !options.iter().any(|option| same_value(option, value)) {
            return Err(SubmissionError::Invalid(InvalidSubmission::NotAnOption { field: field.clone() }));
        }
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmissionError {
    #[error(transparent)]
    Invalid(InvalidSubmission),
    #[error(transparent)]
    Schema(UnusableSchema),
}

/// Resume arguments of the asking call: the model's arguments minus every key the schema declares,
/// plus the submitted keys the schema declares. Neither side can set the other's fields.
pub fn overlay(model_arguments: &Value, submitted: &Map<String, Value>, schema: &Value) -> Value {
    let declared: Vec<&String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().collect())
        .unwrap_or_default();
    let mut merged = match model_arguments {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    merged.retain(|key, _| !declared.contains(&key));
    for key in declared {
        if let Some(value) = submitted.get(key) {
            merged.insert(key.clone(), value.clone());
        }
    }
    Value::Object(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn big_integer_options_are_compared_exactly() {
        let schema =
            json!({"type": "object", "properties": {"a": {"type": "integer", "enum": [9007199254740993u64, 1]}}});
        assert!(validate_submission(&schema, &map(json!({"a": 9007199254740993u64}))).is_ok());
        assert!(validate_submission(&schema, &map(json!({"a": 1.0}))).is_ok());
        assert!(!same_value(&json!(9007199254740993u64), &json!(9007199254740992u64)));
        assert!(!same_value(&json!(1), &json!(1.5)));
        assert!(same_value(&json!(-3), &json!(-3.0)));
    }

    fn choice_schema() -> Value {
        json!({"type": "object", "properties": {"answer": {"type": "string", "enum": ["a", "b"]}}, "required": ["answer"]})
    }

    #[test]
    fn accepts_an_offered_option() {
        assert_eq!(validate_submission(&choice_schema(), &map(json!({"answer": "a"}))), Ok(()));
    }

    #[test]
    fn refuses_missing_required_and_wrong_type() {
        let missing = validate_submission(&choice_schema(), &map(json!({})));
        assert!(matches!(missing, Err(SubmissionError::Invalid(InvalidSubmission::Structure { .. }))), "{missing:?}");
        let wrong_type = validate_submission(&choice_schema(), &map(json!({"answer": 3})));
        assert!(matches!(wrong_type, Err(SubmissionError::Invalid(_))), "{wrong_type:?}");
    }

    #[test]
    fn refuses_a_value_outside_the_enum() {
        // Without a type the structure check alone says nothing about the value.
        let schema = json!({"type": "object", "properties": {"n": {"enum": [1, 2]}}});
        assert_eq!(validate_submission(&schema, &map(json!({"n": 2.0}))), Ok(()));
        let result = validate_submission(&choice_schema(), &map(json!({"answer": "c"})));
        assert!(matches!(result, Err(SubmissionError::Invalid(_))), "{result:?}");
    }

    #[test]
    fn degenerate_schemas_are_unusable() {
        assert!(check_schema(&json!({})).is_err());
        assert!(check_schema(&json!({"type": "object"})).is_err());
        assert!(check_schema(&json!({"type": "string"})).is_err());
        assert!(check_schema(&choice_schema()).is_ok());
    }

    #[test]
    fn overlay_keeps_each_side_to_its_own_fields() {
        let model = json!({"question": "Q", "answer": "smuggled", "options": ["a", "b"]});
        let submitted = map(json!({"answer": "b", "question": "rewritten"}));
        let merged = overlay(&model, &submitted, &choice_schema());
        assert_eq!(merged, json!({"question": "Q", "options": ["a", "b"], "answer": "b"}));
    }
}
