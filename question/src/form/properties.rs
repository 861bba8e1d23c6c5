//! Property tests: whatever schema a tool offers and whatever a client sends, reading and checking
//! never panic, and an accepted answer only ever carries what the question offered.

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::*;

const WORDS: YesNo<'static> = YesNo { yes: "Yes", no: "No" };

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[a-zA-Z0-9 äöü]{0,12}".prop_map(Value::from),
    ]
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![Just(Value::Null), scalar()];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn property() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop_oneof![Just("string"), Just("integer"), Just("number"), Just("boolean"), Just("object"), Just("array")]
            .prop_map(|kind| json!({ "type": kind })),
        prop::collection::vec(scalar(), 0..5).prop_map(|values| json!({ "enum": values })),
        prop::collection::vec((scalar(), "[A-Za-z ]{0,10}"), 0..5).prop_map(|branches| {
            let branches: Vec<Value> =
                branches.into_iter().map(|(value, title)| json!({ "const": value, "title": title })).collect();
            json!({ "oneOf": branches })
        }),
        any_json(),
    ]
}

fn schema() -> impl Strategy<Value = Value> {
    (prop::collection::btree_map("[a-z_]{1,8}", property(), 0..5), prop::collection::vec("[a-z_]{1,8}", 0..3), any::<bool>())
        .prop_map(|(properties, required, titled)| {
            let mut schema = json!({ "type": "object", "properties": Value::Object(properties.into_iter().collect()), "required": required });
            if titled {
                schema["title"] = json!("A question");
            }
            schema
        })
}

fn answer() -> impl Strategy<Value = InputAnswer> {
    prop_oneof![
        scalar().prop_map(InputAnswer::Choice),
        ".{0,20}".prop_map(InputAnswer::FreeText),
        prop::collection::btree_map("[a-z_]{1,8}", any_json(), 0..5)
            .prop_map(|map| InputAnswer::Fields(map.into_iter().collect::<Map<String, Value>>())),
        prop::collection::btree_map("[a-z_]{1,8}", ".{0,10}", 0..5).prop_map(InputAnswer::FormFields),
    ]
}

proptest! {
    #[test]
    fn reading_any_json_never_panics(value in any_json()) {
        let form = InputPauseForm::parse(&value);
        let _ = form.question();
    }

    #[test]
    fn an_accepted_answer_carries_only_what_was_offered(schema in schema(), answer in answer()) {
        let form = InputPauseForm::parse(&schema);
        let Ok(accepted) = form.check(&answer, WORDS) else { return Ok(()) };
        prop_assert!(!accepted.data.is_empty());
        match &form {
            InputPauseForm::Choice(choice) => {
                prop_assert_eq!(accepted.data.len(), 1);
                if let Some(value) = accepted.data.get(&choice.property) {
                    prop_assert!(choice.options.iter().any(|option| &option.value == value));
                } else {
                    let property = choice.free_text_property.as_ref().expect("free text was offered");
                    let text = accepted.data[property].as_str().expect("free text is a string");
                    prop_assert!(!text.is_empty() && text.trim() == text);
                }
            }
            InputPauseForm::Form(form) => {
                for (name, value) in &accepted.data {
                    let field = form.fields.iter().find(|field| &field.name == name);
                    prop_assert!(field.is_some(), "unknown field {} accepted", name);
                    let field = field.unwrap();
                    let fits = match field.kind {
                        FieldKind::Text => value.as_str().is_some_and(|text| !text.is_empty()),
                        FieldKind::Integer => value.is_i64() || value.is_u64(),
                        FieldKind::Number => value.is_number(),
                        FieldKind::Boolean => value.is_boolean(),
                        FieldKind::Select => field.options.iter().any(|option| &option.value == value),
                        FieldKind::MultiSelect => value.as_array().is_some_and(|picked| {
                            picked.iter().all(|value| field.options.iter().any(|option| &option.value == value))
                        }),
                    };
                    prop_assert!(fits, "{} = {} does not fit {:?}", name, value, field.kind);
                }
                for field in form.fields.iter().filter(|field| field.required) {
                    prop_assert!(accepted.data.contains_key(&field.name), "required {} missing", field.name);
                }
            }
            InputPauseForm::Unsupported { .. } => prop_assert!(false, "an unsupported question accepted an answer"),
        }
    }
}
