//! Fuzzes the question-schema reading: `InputPauseForm::parse` and `check` (app) and the runtime's
//! `check_schema` / `validate_submission`, with the invariants the chat relies on.
//!
//! Two kinds of input, told apart by the first byte (JSON text never starts with 0x01):
//! - `<schema JSON> 0x00 <answer>`: JSON text never holds a raw NUL byte, so the first one splits
//!   the two halves; without one the whole input is the schema and the answer is empty. Inputs
//!   whose schema half is not JSON are skipped. Reaches whatever JSON the bytes spell.
//! - `0x01 <bytes>`: the bytes choose a schema shaped like the ones tools send (an object of
//!   properties with types, enums, oneOf/anyOf consts, titles, required names) and an answer, so
//!   the fuzzer spends its time on the readings rather than on JSON syntax.
//!
//! The answer is tried as every kind of answer (a button value, typed text, a JSON object of
//! fields, an HTML form post), and each option or field the question offers is answered too.
//! A panic is a finding: reading and checking never panic, an accepted answer only carries what
//! was offered (numbers exactly as chosen), and what the question offers is accepted.
//! `QUESTION_SCHEMA_SHOW=1` prints each schema and answer (for reproducing a crash by hand).

#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use libfuzzer_sys::arbitrary::{Result as Built, Unstructured};
use libfuzzer_sys::fuzz_target;
use question::form::{multi_select_key, AcceptedAnswer, Choice, FieldKind, Form, InputAnswer, InputPauseForm, YesNo};
use serde_json::{json, Map, Value};

const WORDS: YesNo<'static> = YesNo { yes: "Yes", no: "No" };

fuzz_target!(|data: &[u8]| {
    if let [1, rest @ ..] = data {
        let mut bytes = Unstructured::new(rest);
        let (Ok(schema), Ok(answer)) = (shaped_schema(&mut bytes), shaped_answer(&mut bytes)) else { return };
        let text = answer.to_string();
        check_everything(&schema, text.as_bytes(), Some(answer));
        return;
    }
    let (schema_bytes, answer_bytes) = match data.iter().position(|byte| *byte == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let Ok(schema) = serde_json::from_slice::<Value>(schema_bytes) else { return };
    check_everything(&schema, answer_bytes, serde_json::from_slice::<Value>(answer_bytes).ok());
});

fn check_everything(schema: &Value, answer_bytes: &[u8], answer_json: Option<Value>) {
    static SHOW: OnceLock<bool> = OnceLock::new();
    if *SHOW.get_or_init(|| std::env::var_os("QUESTION_SCHEMA_SHOW").is_some()) {
        eprintln!("schema: {schema}\nanswer: {}", String::from_utf8_lossy(answer_bytes));
    }

    let form = InputPauseForm::parse(schema);
    let _ = form.question();
    assert_eq!(InputPauseForm::parse(schema), form, "reading the same schema twice differs");
    // The server ships the reading to the browser, which renders the buttons from it.
    let shipped = serde_json::to_string(&form).expect("a reading serializes");
    let received: InputPauseForm = serde_json::from_str(&shipped).expect("a reading deserializes");
    assert_eq!(received, form, "the browser would read another question: {shipped}");
    assert_eq!(
        form.takes_free_text(),
        matches!(&form, InputPauseForm::Choice(Choice { free_text_property: Some(_), .. }))
    );

    let mut answers = answers_from(answer_bytes, answer_json.as_ref());
    answers.extend(offered_answers(&form).into_iter().map(|answer| (answer, true)));

    let _ = question::schema::check_schema(schema);
    if let Some(Value::Object(values)) = &answer_json {
        runtime_validation(schema, values);
    }

    for (answer, offered) in &answers {
        let result = form.check(answer, WORDS);
        if *offered {
            assert!(result.is_ok(), "{answer:?} was offered by {form:?} but refused");
        }
        let Ok(accepted) = result else { continue };
        carries_only_what_was_offered(&form, answer, &accepted);
        // The server stores the accepted values as JSON text; the runtime validates them from there.
        let stored = Value::Object(accepted.data.clone()).to_string();
        let Ok(Value::Object(restored)) = serde_json::from_str::<Value>(&stored) else {
            panic!("accepted values do not read back: {stored}");
        };
        assert_eq!(restored, accepted.data, "accepted values change when stored: {stored}");
        runtime_validation(schema, &restored);
    }
}

const NAMES: &[&str] = &["answer", "start", "comment", "count", "a", "b", "site_note", "", " "];
const TEXTS: &[&str] = &["", " ", "x", "X", "1", "1.0", "true", "on", "a b", " Über uns ", "—"];
const TYPES: &[&str] = &["string", "integer", "number", "boolean", "null", "object", "array"];

fn scalar(u: &mut Unstructured) -> Built<Value> {
    Ok(match u.int_in_range(0..=5)? {
        0 => Value::Bool(u.arbitrary()?),
        1 => Value::from(u.int_in_range(-3i64..=3)?),
        2 => json!(*u.choose(&[9007199254740992u64, 9007199254740993, u64::MAX, i64::MAX as u64])?),
        3 => json!(*u.choose(&[1.0f64, 2.5, -0.0, 1e308, -3.0, 9007199254740992.0])?),
        4 => Value::from(*u.choose(TEXTS)?),
        _ => Value::from(u.arbitrary::<String>()?),
    })
}

fn text(u: &mut Unstructured) -> Built<Value> {
    Ok(if u.ratio(3, 4)? { Value::from(*u.choose(TEXTS)?) } else { Value::from(u.arbitrary::<String>()?) })
}

fn name(u: &mut Unstructured) -> Built<String> {
    Ok(if u.ratio(7, 8)? { u.choose(NAMES)?.to_string() } else { u.arbitrary()? })
}

fn kind(u: &mut Unstructured) -> Built<Value> {
    Ok(match u.int_in_range(0..=2)? {
        0 => Value::from(*u.choose(TYPES)?),
        1 => json!([*u.choose(TYPES)?, *u.choose(TYPES)?]),
        _ => scalar(u)?,
    })
}

/// A property as tools write them, or now and then something odd in its place.
fn property(u: &mut Unstructured) -> Built<Value> {
    let mut property = Map::new();
    match u.int_in_range(0..=4)? {
        0 | 1 => {}
        2 => {
            let values = (0..u.int_in_range(0..=4)?).map(|_| scalar(u)).collect::<Built<Vec<_>>>()?;
            property.insert("enum".into(), Value::Array(values));
        }
        3 => {
            let branches = (0..u.int_in_range(0..=4)?)
                .map(|_| {
                    let mut branch = Map::new();
                    if u.ratio(7, 8)? {
                        branch.insert("const".into(), scalar(u)?);
                    }
                    if u.arbitrary()? {
                        branch.insert("title".into(), text(u)?);
                    }
                    Ok(Value::Object(branch))
                })
                .collect::<Built<Vec<_>>>()?;
            property.insert((*u.choose(&["oneOf", "anyOf"])?).into(), Value::Array(branches));
        }
        _ => return scalar(u),
    }
    if u.ratio(2, 3)? {
        property.insert("type".into(), kind(u)?);
    }
    if u.ratio(1, 6)? {
        property.insert("const".into(), scalar(u)?);
    }
    for key in ["title", "description"] {
        if u.ratio(1, 4)? {
            property.insert(key.into(), text(u)?);
        }
    }
    Ok(Value::Object(property))
}

fn shaped_schema(u: &mut Unstructured) -> Built<Value> {
    let mut schema = Map::new();
    if u.ratio(7, 8)? {
        schema.insert("type".into(), if u.ratio(7, 8)? { Value::from("object") } else { kind(u)? });
    }
    let mut properties = Map::new();
    for _ in 0..u.int_in_range(0..=4)? {
        properties.insert(name(u)?, property(u)?);
    }
    schema.insert("properties".into(), Value::Object(properties));
    let required = (0..u.int_in_range(0..=3)?).map(|_| Ok(Value::from(name(u)?))).collect::<Built<Vec<_>>>()?;
    schema.insert("required".into(), Value::Array(required));
    for key in ["title", "description"] {
        if u.ratio(1, 3)? {
            schema.insert(key.into(), text(u)?);
        }
    }
    Ok(Value::Object(schema))
}

fn shaped_answer(u: &mut Unstructured) -> Built<Value> {
    if u.arbitrary()? {
        return scalar(u);
    }
    let mut values = Map::new();
    for _ in 0..u.int_in_range(0..=4)? {
        values.insert(name(u)?, scalar(u)?);
    }
    Ok(Value::Object(values))
}

/// The runtime's check of a submission: never panics, and what it lets through holds, for every
/// top-level `enum`, one of its values (numbers by value, exactly).
fn runtime_validation(schema: &Value, values: &Map<String, Value>) {
    if question::schema::validate_submission(schema, values).is_err() {
        return;
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, property) in properties.into_iter().flatten() {
        let (Some(options), Some(value)) = (property.get("enum").and_then(Value::as_array), values.get(name)) else {
            continue;
        };
        assert!(
            options.iter().any(|option| exactly_same(option, value)),
            "the runtime let {name} = {value} through, not one of {options:?}"
        );
    }
}

/// Equal JSON values, numbers compared by their exact value: 1 and 1.0 are the same,
/// 9007199254740993 and 9007199254740992 are not (though they are as `f64`).
fn exactly_same(a: &Value, b: &Value) -> bool {
    let (Value::Number(x), Value::Number(y)) = (a, b) else { return a == b };
    let integer = |n: &serde_json::Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    let whole = |f: f64| (f.fract() == 0.0 && f.abs() < 1e38).then_some(f as i128);
    match (integer(x), integer(y)) {
        (Some(x), Some(y)) => x == y,
        (Some(n), None) => y.as_f64().and_then(whole) == Some(n),
        (None, Some(n)) => x.as_f64().and_then(whole) == Some(n),
        (None, None) => x.as_f64() == y.as_f64(),
    }
}

/// The answer half as each kind of answer. `false`: nobody promised these would be accepted.
fn answers_from(bytes: &[u8], json: Option<&Value>) -> Vec<(InputAnswer, bool)> {
    let mut answers = vec![(InputAnswer::FreeText(String::from_utf8_lossy(bytes).into_owned()), false)];
    let Some(json) = json else { return answers };
    answers.push((InputAnswer::Choice(json.clone()), false));
    if let Value::String(text) = json {
        answers.push((InputAnswer::FreeText(text.clone()), false));
    }
    if let Value::Object(values) = json {
        answers.push((InputAnswer::Fields(values.clone()), false));
        let posted: BTreeMap<String, String> = values
            .iter()
            .filter_map(|(name, value)| match value {
                Value::String(text) => Some((name.clone(), text.clone())),
                Value::Number(_) | Value::Bool(_) => Some((name.clone(), value.to_string())),
                _ => None,
            })
            .collect();
        answers.push((InputAnswer::FormFields(posted), false));
    }
    answers
}

/// What the question itself offers, each of which must be accepted: every button of a choice, and
/// a form filled in completely with a fitting value per field, as JSON and as an HTML form post.
fn offered_answers(form: &InputPauseForm) -> Vec<InputAnswer> {
    match form {
        InputPauseForm::Choice(choice) => {
            let mut answers: Vec<InputAnswer> =
                choice.options.iter().map(|option| InputAnswer::Choice(option.value.clone())).collect();
            if choice.free_text_property.is_some() {
                answers.push(InputAnswer::FreeText(" some text ".into()));
            }
            answers
        }
        InputPauseForm::Form(form) => {
            let mut values = Map::new();
            let mut posted = BTreeMap::new();
            for field in &form.fields {
                let (value, text) = match field.kind {
                    FieldKind::Text => (Value::from("text"), "text".to_string()),
                    FieldKind::Integer => (Value::from(-7), "-7".to_string()),
                    FieldKind::Number => (Value::from(1.5), "1.5".to_string()),
                    FieldKind::Boolean => (Value::Bool(true), "on".to_string()),
                    FieldKind::Select => {
                        let value = field.options.first().expect("a select offers options").value.clone();
                        let text = match &value {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        };
                        (value, text)
                    }
                    // As many of the first options as the schema asks for at least (one if it
                    // does not say), each a ticked checkbox in the form post.
                    FieldKind::MultiSelect => {
                        let count = field.min_items.unwrap_or(1).max(1) as usize;
                        if count > field.options.len() || field.max_items.is_some_and(|most| (count as u64) > most) {
                            return Vec::new();
                        }
                        let picked: Vec<Value> =
                            field.options.iter().take(count).map(|option| option.value.clone()).collect();
                        values.insert(field.name.clone(), Value::Array(picked));
                        for index in 0..count {
                            posted.insert(multi_select_key(&field.name, index), "on".to_string());
                        }
                        continue;
                    }
                };
                values.insert(field.name.clone(), value);
                posted.insert(field.name.clone(), text);
            }
            vec![InputAnswer::Fields(values), InputAnswer::FormFields(posted)]
        }
        InputPauseForm::Unsupported { .. } => Vec::new(),
    }
}

fn carries_only_what_was_offered(form: &InputPauseForm, answer: &InputAnswer, accepted: &AcceptedAnswer) {
    match form {
        InputPauseForm::Choice(choice) => {
            assert_eq!(accepted.data.len(), 1, "a choice answered with {:?}", accepted.data);
            match answer {
                InputAnswer::Choice(clicked) => {
                    let value = accepted.data.get(&choice.property).expect("a button answers the choice property");
                    assert!(exactly_same(value, clicked), "clicking {clicked} recorded {value}");
                    // JSON equality, types included: the value stored is one the schema offered.
                    let option = choice.options.iter().find(|option| &option.value == value);
                    let option = option.unwrap_or_else(|| panic!("{value} was not offered by {choice:?}"));
                    assert!(
                        choice.options.iter().any(|other| &other.value == value && other.label == accepted.display),
                        "shown as {:?}, offered as {:?}",
                        accepted.display,
                        option.label
                    );
                }
                InputAnswer::FreeText(_) => {
                    let property = choice.free_text_property.as_ref().expect("free text accepted where none is taken");
                    let text = accepted.data.get(property).and_then(Value::as_str).expect("free text is a string");
                    assert!(!text.is_empty() && text.trim() == text, "free text {text:?} kept its padding");
                    assert_eq!(accepted.display, text);
                }
                _ => panic!("a choice accepted {answer:?}"),
            }
        }
        InputPauseForm::Form(form) => {
            assert!(
                matches!(answer, InputAnswer::Fields(_) | InputAnswer::FormFields(_)),
                "a form accepted {answer:?}"
            );
            form_answer_fits(form, accepted);
            if let InputAnswer::Fields(given) = answer {
                for field in form.fields.iter().filter(|field| field.kind == FieldKind::Select) {
                    if let (Some(given), Some(recorded)) = (given.get(&field.name), accepted.data.get(&field.name)) {
                        let name = &field.name;
                        assert!(exactly_same(recorded, given), "choosing {given} for {name} recorded {recorded}");
                    }
                }
            }
        }
        InputPauseForm::Unsupported { .. } => panic!("an unsupported question accepted {answer:?}: {accepted:?}"),
    }
}

fn form_answer_fits(form: &Form, accepted: &AcceptedAnswer) {
    assert!(!accepted.data.is_empty(), "a form accepted no values");
    for (name, value) in &accepted.data {
        let field = form.fields.iter().find(|field| &field.name == name);
        let field = field.unwrap_or_else(|| panic!("undeclared field {name:?} accepted"));
        let fits = match field.kind {
            FieldKind::Text => value.as_str().is_some_and(|text| !text.is_empty() && text.trim() == text),
            FieldKind::Integer => value.is_i64() || value.is_u64(),
            FieldKind::Number => value.as_f64().is_some_and(f64::is_finite),
            FieldKind::Boolean => value.is_boolean(),
            FieldKind::Select => field.options.iter().any(|option| &option.value == value),
            // Some of the options, each once, within the bounds the schema sets.
            FieldKind::MultiSelect => value.as_array().is_some_and(|picked| {
                let offered = picked.iter().all(|item| field.options.iter().any(|option| &option.value == item));
                let distinct = picked.iter().enumerate().all(|(index, item)| !picked[..index].contains(item));
                let enough = field.min_items.is_none_or(|least| picked.len() as u64 >= least);
                let not_too_many = field.max_items.is_none_or(|most| picked.len() as u64 <= most);
                offered && distinct && enough && not_too_many
            }),
        };
        assert!(fits, "{name} = {value} does not fit {:?}", field.kind);
    }
    for field in form.fields.iter().filter(|field| field.required) {
        assert!(accepted.data.contains_key(&field.name), "required {} missing", field.name);
    }
}
