use serde_json::{json, Map, Value};

use super::*;

const GERMAN: YesNo<'static> = YesNo { yes: "Ja", no: "Nein" };

fn start_schema(required: &[&str]) -> Value {
    json!({
        "type": "object",
        "title": "Mit welchem Punkt soll ich beginnen?",
        "properties": {
            "start": { "type": "string", "oneOf": [
                { "const": "meta", "title": "Meta Description" },
                { "const": "headings", "title": "Überschriften" },
                { "const": "images", "title": "Alternativtexte" }
            ]},
            "comment": { "type": "string" }
        },
        "required": required
    })
}

fn choice(schema: &Value) -> Choice {
    match InputPauseForm::parse(schema) {
        InputPauseForm::Choice(choice) => choice,
        other => panic!("expected a choice, got {other:?}"),
    }
}

fn form(schema: &Value) -> Form {
    match InputPauseForm::parse(schema) {
        InputPauseForm::Form(form) => form,
        other => panic!("expected a form, got {other:?}"),
    }
}

fn fields(value: Value) -> InputAnswer {
    InputAnswer::Fields(value.as_object().cloned().unwrap_or_default())
}

#[test]
fn labelled_options_become_buttons_in_their_order() {
    let choice = choice(&start_schema(&[]));
    assert_eq!(choice.question, "Mit welchem Punkt soll ich beginnen?");
    assert_eq!(choice.property, "start");
    let labels: Vec<&str> = choice.options.iter().map(|option| option.label.as_str()).collect();
    assert_eq!(labels, ["Meta Description", "Überschriften", "Alternativtexte"]);
    assert_eq!(choice.free_text_property.as_deref(), Some("comment"));
}

#[test]
fn a_button_answers_with_its_value_and_shows_its_label() {
    let form = InputPauseForm::parse(&start_schema(&[]));
    let accepted = form.check(&InputAnswer::Choice(json!("meta")), GERMAN).unwrap();
    assert_eq!(Value::Object(accepted.data), json!({ "start": "meta" }));
    assert_eq!(accepted.display, "Meta Description");
}

#[test]
fn a_value_that_was_not_offered_is_refused() {
    let form = InputPauseForm::parse(&start_schema(&[]));
    assert_eq!(form.check(&InputAnswer::Choice(json!("delete everything")), GERMAN), Err(AnswerRefused::NotOffered));
}

#[test]
fn a_value_of_another_type_is_refused() {
    let form = InputPauseForm::parse(&json!({ "type": "object", "properties": { "n": { "enum": [1, 2] } } }));
    assert_eq!(form.check(&InputAnswer::Choice(json!("1")), GERMAN), Err(AnswerRefused::NotOffered));
    let accepted = form.check(&InputAnswer::Choice(json!(1)), GERMAN).unwrap();
    assert_eq!(Value::Object(accepted.data), json!({ "n": 1 }));
    assert_eq!(accepted.display, "1");
}

#[test]
fn typed_text_goes_into_the_free_text_property() {
    let form = InputPauseForm::parse(&start_schema(&[]));
    assert!(form.takes_free_text());
    let accepted = form.check(&InputAnswer::FreeText("  Erst die Bilder, bitte.  ".into()), GERMAN).unwrap();
    assert_eq!(Value::Object(accepted.data), json!({ "comment": "Erst die Bilder, bitte." }));
    assert_eq!(accepted.display, "Erst die Bilder, bitte.");
}

#[test]
fn empty_free_text_is_no_answer() {
    let form = InputPauseForm::parse(&start_schema(&[]));
    assert_eq!(form.check(&InputAnswer::FreeText("   ".into()), GERMAN), Err(AnswerRefused::NotOffered));
}

#[test]
fn a_required_choice_offers_no_free_text_answer() {
    let parsed = InputPauseForm::parse(&start_schema(&["start"]));
    assert_eq!(choice(&start_schema(&["start"])).free_text_property, None);
    assert!(!parsed.takes_free_text());
    assert_eq!(parsed.check(&InputAnswer::FreeText("Erst die Bilder".into()), GERMAN), Err(AnswerRefused::NotOffered));
}

#[test]
fn a_plain_enum_is_a_choice_labelled_with_its_values() {
    let schema = json!({
        "type": "object",
        "properties": { "language": { "type": "string", "enum": ["Deutsch", "English"], "description": "Welche Sprache?" } },
        "required": ["language"]
    });
    let choice = choice(&schema);
    assert_eq!(choice.question, "Welche Sprache?");
    let labels: Vec<&str> = choice.options.iter().map(|option| option.label.as_str()).collect();
    assert_eq!(labels, ["Deutsch", "English"]);
    assert_eq!(choice.free_text_property, None);
}

#[test]
fn a_required_free_text_property_makes_a_form() {
    let form = form(&start_schema(&["comment"]));
    let kinds: Vec<FieldKind> = form.fields.iter().map(|field| field.kind).collect();
    assert_eq!(kinds, [FieldKind::Select, FieldKind::Text]);
}

#[test]
fn two_choice_properties_make_a_form() {
    let form = form(&json!({
        "type": "object",
        "properties": { "a": { "enum": ["x", "y"] }, "b": { "enum": ["z"] } }
    }));
    let kinds: Vec<FieldKind> = form.fields.iter().map(|field| field.kind).collect();
    assert_eq!(kinds, [FieldKind::Select, FieldKind::Select]);
}

#[test]
fn a_schema_the_chat_cannot_offer_is_unsupported() {
    let schemas = [
        json!({ "type": "object", "properties": {} }),
        json!({ "type": "object" }),
        json!({ "type": "string" }),
        json!({ "type": "object", "properties": { "nested": { "type": "object" } } }),
        json!({ "type": "object", "properties": { "list": { "type": "array" } } }),
        json!({ "type": "object", "properties": { "pick": { "enum": [{ "a": 1 }, { "b": 2 }] } } }),
        json!({ "type": "object", "properties": { "pick": { "oneOf": [{ "title": "no const" }] } } }),
        json!("not even an object"),
    ];
    for schema in schemas {
        let parsed = InputPauseForm::parse(&schema);
        assert!(matches!(parsed, InputPauseForm::Unsupported { .. }), "{schema} gave {parsed:?}");
        assert_eq!(parsed.check(&InputAnswer::Choice(json!("a")), GERMAN), Err(AnswerRefused::NotOffered));
        assert_eq!(parsed.check(&InputAnswer::FreeText("a".into()), GERMAN), Err(AnswerRefused::NotOffered));
        assert_eq!(parsed.check(&fields(json!({ "nested": "a" })), GERMAN), Err(AnswerRefused::NotOffered));
    }
}

#[test]
fn an_unsupported_question_keeps_its_wording() {
    let parsed = InputPauseForm::parse(&json!({ "type": "string", "title": "Upload a file" }));
    assert_eq!(parsed.question(), "Upload a file");
}

fn page_form_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "title": { "type": "string", "title": "Seitentitel" },
            "count": { "type": "integer" },
            "ratio": { "type": "number" },
            "hidden": { "type": "boolean", "title": "Verborgen" },
            "layout": { "enum": ["wide", "narrow"] },
            "site_note": { "type": ["string", "null"] }
        },
        "required": ["title"]
    })
}

#[test]
fn a_form_has_one_field_per_property() {
    let form = form(&page_form_schema());
    let kinds: Vec<FieldKind> = form.fields.iter().map(|field| field.kind).collect();
    assert_eq!(
        kinds,
        [
            FieldKind::Text,
            FieldKind::Integer,
            FieldKind::Number,
            FieldKind::Boolean,
            FieldKind::Select,
            FieldKind::Text
        ]
    );
    let labels: Vec<&str> = form.fields.iter().map(|field| field.label.as_str()).collect();
    assert_eq!(labels, ["Seitentitel", "Count", "Ratio", "Verborgen", "Layout", "Site note"]);
    let required: Vec<bool> = form.fields.iter().map(|field| field.required).collect();
    assert_eq!(required, [true, false, false, false, false, false]);
}

#[test]
fn a_form_answer_is_coerced_to_the_schemas_types() {
    let parsed = InputPauseForm::parse(&page_form_schema());
    let answer = fields(json!({
        "title": " Über uns ", "count": "3", "ratio": "0.5", "hidden": false, "layout": "wide", "unknown": "dropped"
    }));
    let accepted = parsed.check(&answer, GERMAN).unwrap();
    assert_eq!(
        Value::Object(accepted.data),
        json!({ "title": "Über uns", "count": 3, "ratio": 0.5, "hidden": false, "layout": "wide" })
    );
    assert_eq!(accepted.display, "Seitentitel: Über uns\nCount: 3\nRatio: 0.5\nVerborgen: Nein\nLayout: wide");
}

/// A refusal naming exactly these fields, each with its kind.
fn refused(problems: &[(&str, FieldErrorKind)]) -> Result<AcceptedAnswer, AnswerRefused> {
    let problems = problems.iter().map(|(field, kind)| FieldError { field: field.to_string(), kind: kind.clone() });
    Err(AnswerRefused::Fields(problems.collect()))
}

#[test]
fn a_form_answer_that_does_not_fit_is_refused_field_by_field() {
    let parsed = InputPauseForm::parse(&page_form_schema());
    let layouts = FieldErrorKind::OneOf(vec!["wide".into(), "narrow".into()]);
    let bad = [
        (json!({ "count": 3 }), refused(&[("title", FieldErrorKind::Required)])),
        (json!({ "title": "" }), refused(&[("title", FieldErrorKind::Required)])),
        (json!({ "title": "   " }), refused(&[("title", FieldErrorKind::Required)])),
        (json!({ "title": 7 }), refused(&[("title", FieldErrorKind::Text)])),
        (json!({ "title": "x", "count": "three" }), refused(&[("count", FieldErrorKind::WholeNumber)])),
        (json!({ "title": "x", "count": "1.5" }), refused(&[("count", FieldErrorKind::WholeNumber)])),
        (json!({ "title": "x", "ratio": "half" }), refused(&[("ratio", FieldErrorKind::Number)])),
        (json!({ "title": "x", "hidden": "yes" }), refused(&[("hidden", FieldErrorKind::YesOrNo)])),
        (json!({ "title": "x", "layout": "full" }), refused(&[("layout", layouts.clone())])),
        // Every field that does not fit is named, in the form's order.
        (
            json!({ "count": "many", "ratio": "half", "layout": "full" }),
            refused(&[
                ("title", FieldErrorKind::Required),
                ("count", FieldErrorKind::WholeNumber),
                ("ratio", FieldErrorKind::Number),
                ("layout", layouts),
            ]),
        ),
    ];
    for (answer, expected) in bad {
        assert_eq!(parsed.check(&fields(answer.clone()), GERMAN), expected, "{answer}");
    }
}

#[test]
fn a_text_longer_than_its_max_length_is_refused_in_characters() {
    let parsed = InputPauseForm::parse(&json!({
        "type": "object", "properties": { "name": { "type": "string", "maxLength": 5 } }, "required": ["name"]
    }));
    let InputPauseForm::Form(form) = &parsed else { panic!("{parsed:?}") };
    assert_eq!(form.fields[0].max_length, Some(5));
    // Five characters (not bytes), spaces around them not counted: the text as it is sent.
    assert!(parsed.check(&fields(json!({ "name": " Jürgä " })), GERMAN).is_ok());
    assert_eq!(
        parsed.check(&fields(json!({ "name": "Jürgen" })), GERMAN),
        refused(&[("name", FieldErrorKind::TooLong(5))])
    );
    // A bound that is not a count cannot be shown.
    let odd = json!({ "type": "object", "properties": { "name": { "type": "string", "maxLength": "5" } } });
    assert!(matches!(InputPauseForm::parse(&odd), InputPauseForm::Unsupported { .. }));
}

#[test]
fn a_form_answer_without_fields_is_refused() {
    let parsed = InputPauseForm::parse(&json!({
        "type": "object", "properties": { "a": { "type": "string" }, "b": { "type": "string" } }
    }));
    assert_eq!(parsed.check(&fields(json!({})), GERMAN), Err(AnswerRefused::NotOffered));
    assert_eq!(parsed.check(&InputAnswer::Fields(Map::new()), GERMAN), Err(AnswerRefused::NotOffered));
    assert_eq!(parsed.check(&InputAnswer::FreeText("title=x".into()), GERMAN), Err(AnswerRefused::NotOffered));
}

#[test]
fn a_choice_takes_no_form_and_a_form_takes_no_button() {
    let choice = InputPauseForm::parse(&start_schema(&[]));
    assert_eq!(choice.check(&fields(json!({ "start": "meta" })), GERMAN), Err(AnswerRefused::NotOffered));
    let form = InputPauseForm::parse(&page_form_schema());
    assert_eq!(form.check(&InputAnswer::Choice(json!("wide")), GERMAN), Err(AnswerRefused::NotOffered));
}

#[test]
fn the_ask_choice_schema_is_a_required_choice() {
    let schema = json!({
        "type": "object",
        "properties": { "answer": { "type": "string", "title": "Summary or next page?", "enum": ["Summary", "Next page"] } },
        "required": ["answer"]
    });
    let choice = choice(&schema);
    assert_eq!(choice.question, "Summary or next page?");
    assert_eq!(choice.free_text_property, None);
}

#[test]
fn an_html_form_post_is_read_with_the_field_kinds() {
    let parsed = InputPauseForm::parse(&page_form_schema());
    let posted = std::collections::BTreeMap::from([
        ("title".to_string(), "Kontakt".to_string()),
        ("count".to_string(), "7".to_string()),
        ("layout".to_string(), "narrow".to_string()),
    ]);
    let accepted = parsed.check(&InputAnswer::FormFields(posted), GERMAN).unwrap();
    assert_eq!(
        Value::Object(accepted.data),
        json!({ "title": "Kontakt", "count": 7, "hidden": false, "layout": "narrow" })
    );
    let not_offered = std::collections::BTreeMap::from([
        ("title".to_string(), "Kontakt".to_string()),
        ("layout".to_string(), "full".to_string()),
    ]);
    assert_eq!(
        parsed.check(&InputAnswer::FormFields(not_offered), GERMAN),
        refused(&[("layout", FieldErrorKind::OneOf(vec!["wide".into(), "narrow".into()]))])
    );
    // A dropdown left at "—" posts an empty value: nothing chosen, not a wrong choice.
    let unchosen = std::collections::BTreeMap::from([
        ("title".to_string(), "Kontakt".to_string()),
        ("layout".to_string(), String::new()),
    ]);
    assert!(parsed.check(&InputAnswer::FormFields(unchosen), GERMAN).is_ok());
    let posted = |count: &str| {
        std::collections::BTreeMap::from([("title".to_string(), "x".to_string()), ("count".to_string(), count.into())])
    };
    assert_eq!(
        parsed.check(&InputAnswer::FormFields(posted("2.5")), GERMAN),
        refused(&[("count", FieldErrorKind::WholeNumber)])
    );
}

// Found by the fuzz target (fuzz/fuzz_targets/question_schema.rs).

#[test]
fn big_integer_options_are_told_apart_exactly() {
    // 2^53 + 1 and 2^53 are one f64; as options they are two.
    let schema =
        json!({ "type": "object", "properties": { "a": { "enum": [9007199254740993u64, 9007199254740992u64] } } });
    let choice = choice(&schema);
    let form = InputPauseForm::Choice(choice);
    let picked = form.check(&InputAnswer::Choice(json!(9007199254740992u64)), GERMAN).unwrap();
    assert_eq!(picked.data["a"], json!(9007199254740992u64), "the option clicked is the option recorded");
    assert!(
        form.check(&InputAnswer::Choice(json!(9007199254740994u64)), GERMAN).is_err(),
        "a neighbour is not offered"
    );
    // Whole floats still match their integer, fractions never do.
    let small = InputPauseForm::parse(&json!({ "type": "object", "properties": { "n": { "enum": [1, 2] } } }));
    assert_eq!(small.check(&InputAnswer::Choice(json!(2.0)), GERMAN).unwrap().data["n"], json!(2));
    assert!(small.check(&InputAnswer::Choice(json!(1.5)), GERMAN).is_err());
}

#[test]
fn a_form_dropdown_offering_the_empty_string_is_not_shown() {
    // The dropdown's "" is "nothing chosen": an option "" could never be picked.
    let schema = json!({ "type": "object", "title": "Pick",
        "properties": { "a": { "enum": ["", "x"] }, "b": { "enum": ["y"] } }, "required": ["a"] });
    assert_eq!(InputPauseForm::parse(&schema), InputPauseForm::Unsupported { question: "Pick".into() });
    // As reply buttons "" is an ordinary option.
    let buttons = json!({ "type": "object", "properties": { "a": { "enum": ["", "x"] } } });
    let form = InputPauseForm::Choice(choice(&buttons));
    assert_eq!(form.check(&InputAnswer::Choice(json!("")), GERMAN).unwrap().data["a"], json!(""));
}

/// The form `@modelcontextprotocol/server-everything` asks with (`trigger-elicitation-request`),
/// in the elicitation schema's shapes: defaults, formats, untitled and titled single and multiple
/// selects, and the legacy `enumNames`.
fn everything_schema() -> Value {
    json!({
        "type": "object",
        "title": "Please provide inputs for the following fields:",
        "properties": {
            "name": { "type": "string", "title": "Full name" },
            "check": { "type": "boolean", "title": "Agree" },
            "firstLine": { "type": "string", "default": "It was a dark and stormy night." },
            "integer": { "type": "integer", "minimum": 1, "maximum": 100, "default": 42 },
            "untitledSingleSelectEnum": { "type": "string", "enum": ["Monica", "Rachel", "Phoebe"], "default": "Monica" },
            "untitledMultipleSelectEnum": {
                "type": "array", "minItems": 1, "maxItems": 3,
                "items": { "type": "string", "enum": ["Guitar", "Piano", "Violin", "Drums", "Bass"] },
                "default": ["Guitar"]
            },
            "titledMultipleSelectEnum": {
                "type": "array",
                "items": { "anyOf": [{ "const": "fish-1", "title": "Tuna" }, { "const": "fish-2", "title": "Salmon" }] }
            },
            "legacyTitledEnum": { "type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"] }
        },
        "required": ["name"]
    })
}

#[test]
fn multi_selects_become_checkbox_groups_with_their_bounds_and_defaults_prefill_the_form() {
    let form = form(&everything_schema());
    let field = |name: &str| form.fields.iter().find(|field| field.name == name).unwrap();
    let multi = field("untitledMultipleSelectEnum");
    assert_eq!(multi.kind, FieldKind::MultiSelect);
    assert_eq!((multi.min_items, multi.max_items), (Some(1), Some(3)));
    assert_eq!(multi.default, Some(json!(["Guitar"])));
    let titled = field("titledMultipleSelectEnum");
    let labels: Vec<&str> = titled.options.iter().map(|option| option.label.as_str()).collect();
    assert_eq!(labels, ["Tuna", "Salmon"]);
    let legacy = field("legacyTitledEnum");
    assert_eq!(legacy.kind, FieldKind::Select);
    assert_eq!(legacy.options[1], ChoiceOption { value: json!("pet-2"), label: "Dogs".into() });
    assert_eq!(field("firstLine").default, Some(json!("It was a dark and stormy night.")));
    assert_eq!(field("integer").default, Some(json!(42)));
    assert_eq!(field("untitledSingleSelectEnum").default, Some(json!("Monica")));
}

#[test]
fn a_multi_select_takes_only_offered_distinct_options_within_its_bounds() {
    let form = InputPauseForm::parse(&everything_schema());
    let with = |instruments: Value| fields(json!({ "name": "Ada", "untitledMultipleSelectEnum": instruments }));
    let accepted = form.check(&with(json!(["Piano", "Drums"])), GERMAN).unwrap();
    assert_eq!(accepted.data["untitledMultipleSelectEnum"], json!(["Piano", "Drums"]));
    assert!(accepted.display.contains("Piano, Drums"), "{}", accepted.display);
    let field = "untitledMultipleSelectEnum";
    let options = FieldErrorKind::OneOf(["Guitar", "Piano", "Violin", "Drums", "Bass"].map(String::from).to_vec());
    assert_eq!(form.check(&with(json!(["Piano", "Kazoo"])), GERMAN), refused(&[(field, options.clone())]));
    assert_eq!(form.check(&with(json!(["Piano", "Piano"])), GERMAN), refused(&[(field, options.clone())]));
    assert_eq!(
        form.check(&with(json!(["Guitar", "Piano", "Violin", "Drums"])), GERMAN),
        refused(&[(field, FieldErrorKind::TooMany(3))])
    );
    assert_eq!(form.check(&with(json!("Piano")), GERMAN), refused(&[(field, options)]));
}

#[test]
fn ticked_checkboxes_of_a_plain_form_post_are_the_picked_options() {
    let form = InputPauseForm::parse(&everything_schema());
    let mut posted = std::collections::BTreeMap::new();
    posted.insert("name".to_string(), "Ada".to_string());
    posted.insert(multi_select_key("untitledMultipleSelectEnum", 1), "on".to_string());
    posted.insert(multi_select_key("untitledMultipleSelectEnum", 4), "on".to_string());
    posted.insert(multi_select_key("titledMultipleSelectEnum", 0), "on".to_string());
    let accepted = form.check(&InputAnswer::FormFields(posted), GERMAN).unwrap();
    assert_eq!(accepted.data["untitledMultipleSelectEnum"], json!(["Piano", "Bass"]));
    assert_eq!(accepted.data["titledMultipleSelectEnum"], json!(["fish-1"]));
    assert!(accepted.display.contains("Tuna"), "{}", accepted.display);

    // A checkbox for an option the form does not offer, or a field it does not show: refused.
    for stray in [multi_select_key("untitledMultipleSelectEnum", 99), "role".to_string()] {
        let mut posted = std::collections::BTreeMap::from([("name".to_string(), "Ada".to_string())]);
        posted.insert(stray, "on".to_string());
        assert_eq!(form.check(&InputAnswer::FormFields(posted), GERMAN), Err(AnswerRefused::NotOffered));
    }
}

#[test]
fn accepting_the_form_as_shown_answers_with_every_default() {
    let Ok(InputPauseForm::Form(form)) = Ok::<_, ()>(InputPauseForm::parse(&json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "default": "John Doe" },
            "age": { "type": "integer", "default": 30 },
            "score": { "type": "number", "default": 95.5 },
            "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
            "verified": { "type": "boolean", "default": true }
        },
        "required": []
    }))) else {
        panic!("a form")
    };
    let accepted = InputPauseForm::Form(form.clone()).check(&InputAnswer::defaults_of(&form), GERMAN).unwrap();
    assert_eq!(
        Value::Object(accepted.data),
        json!({ "name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true })
    );
}

#[test]
fn a_default_that_does_not_fit_its_field_is_not_offered() {
    let form = form(&json!({
        "type": "object",
        "properties": {
            "level": { "type": "integer", "default": "high" },
            "colour": { "enum": ["red", "blue"], "default": "green" },
            "name": { "type": "string" }
        }
    }));
    assert!(form.fields.iter().all(|field| field.default.is_none()), "{form:?}");
}

#[test]
fn enum_names_title_the_reply_buttons_of_a_single_choice() {
    let choice = choice(&json!({
        "type": "object",
        "properties": { "pet": { "type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"] } }
    }));
    assert_eq!(choice.options[0], ChoiceOption { value: json!("pet-1"), label: "Cats".into() });
    let mismatched = json!({
        "type": "object",
        "properties": { "pet": { "enum": ["pet-1", "pet-2"], "enumNames": ["Cats"] } }
    });
    assert!(matches!(InputPauseForm::parse(&mismatched), InputPauseForm::Unsupported { .. }));
}

// wasm-size (issue 40): the form is read through `FormWire`, not serde's tagged derive; the JSON is
// the same both ways.
#[test]
fn a_form_reads_back_from_the_json_it_writes() {
    let choice = InputPauseForm::parse(&json!({
        "type": "object",
        "properties": { "size": { "type": "string", "enum": ["S", "M"] } },
        "required": ["size"]
    }));
    assert!(matches!(choice, InputPauseForm::Choice(_)), "{choice:?}");
    let form = InputPauseForm::Form(form(&page_form_schema()));
    let unsupported = InputPauseForm::Unsupported { question: "Upload a file".into() };
    for shown in [choice, form, unsupported] {
        let written = serde_json::to_value(&shown).unwrap();
        assert_eq!(serde_json::from_value::<InputPauseForm>(written.clone()).unwrap(), shown, "{written}");
        assert_eq!(serde_json::from_str::<InputPauseForm>(&written.to_string()).unwrap(), shown);
    }
    assert_eq!(
        serde_json::to_value(InputPauseForm::Unsupported { question: "Q".into() }).unwrap(),
        json!({ "kind": "unsupported", "question": "Q" })
    );
    let refused = serde_json::from_value::<InputPauseForm>(json!({ "kind": "choice", "question": "Q" })).unwrap_err();
    assert!(refused.to_string().contains("missing field `property`"), "{refused}");
    assert!(serde_json::from_value::<InputPauseForm>(json!({ "kind": "poll", "question": "Q" })).is_err());
}
