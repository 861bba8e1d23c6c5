//! `ask_choice`: the model asks the user to pick one of a few options, shown as reply buttons.

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::tool::{Tool, ToolContext, ToolError, ToolSpec};

pub const ASK_CHOICE: &str = "ask_choice";
/// The result reads "The user picked: OPTION".
pub const PICKED: &str = "The user picked: ";
const MAX_QUESTION_CHARS: usize = 300;
const MAX_OPTION_CHARS: usize = 120;
const MIN_OPTIONS: usize = 2;
const MAX_OPTIONS: usize = 10;

/// Read-only and asking, never writing: a choice that changes something is an approval instead.
#[derive(Debug, Clone, Copy, Default)]
pub struct AskChoiceTool;

impl AskChoiceTool {
    pub fn new() -> Self {
        AskChoiceTool
    }
}

struct Choice {
    question: String,
    options: Vec<String>,
}

fn rejected(problem: &str) -> ToolError {
    ToolError::Rejected(problem.to_string())
}

/// Control characters and invisible formatting (zero-width, bidi overrides) could make a button say
/// something other than what the model's transcript shows.
fn has_hidden_characters(text: &str) -> bool {
    text.chars().any(|c| {
        c.is_control()
            || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{00AD}')
    })
}

fn single_line(value: Option<&Value>, what: &str, max_chars: usize) -> Result<String, ToolError> {
    let text = value.and_then(Value::as_str).ok_or_else(|| rejected(&format!("{what} must be a string.")))?;
    let text = text.trim();
    if text.is_empty() {
        return Err(rejected(&format!("{what} must not be empty.")));
    }
    if has_hidden_characters(text) {
        return Err(rejected(&format!("{what} must be one line without control or invisible characters.")));
    }
    if text.chars().count() > max_chars {
        return Err(rejected(&format!("{what} must be at most {max_chars} characters.")));
    }
    Ok(text.to_string())
}

fn parse(arguments: &Value) -> Result<Choice, ToolError> {
    let question = single_line(arguments.get("question"), "question", MAX_QUESTION_CHARS)?;
    let raw = arguments
        .get("options")
        .and_then(Value::as_array)
        .ok_or_else(|| rejected("options must be a list of strings."))?;
    if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&raw.len()) {
        return Err(rejected(&format!("options must list {MIN_OPTIONS} to {MAX_OPTIONS} choices.")));
    }
    let mut options: Vec<String> = Vec::with_capacity(raw.len());
    for value in raw {
        let option = single_line(Some(value), "each option", MAX_OPTION_CHARS)?;
        if options.contains(&option) {
            return Err(rejected("options must be distinct."));
        }
        options.push(option);
    }
    Ok(Choice { question, options })
}

fn schema(choice: &Choice) -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer": { "type": "string", "title": choice.question, "enum": choice.options }
        },
        "required": ["answer"]
    })
}

#[async_trait]
impl Tool for AskChoiceTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            ASK_CHOICE,
            "Ask the user to pick one of a few options. Use it for choices that change nothing, \
             such as which point to discuss first. The run waits until the user answers.",
            json!({
                "type": "object",
                "properties": {
                    "question": { "type": "string", "description": "One line, at most 300 characters." },
                    "options": {
                        "type": "array",
                        "items": { "type": "string" },
                        "minItems": MIN_OPTIONS,
                        "maxItems": MAX_OPTIONS,
                        "description": "2 to 10 distinct one-line options, each at most 120 characters."
                    }
                },
                "required": ["question", "options"]
            }),
        )
        // The general shape; every call gets its own schema with the question and the options.
        .with_input_schema(json!({
            "type": "object",
            "properties": { "answer": { "type": "string" } },
            "required": ["answer"]
        }))
    }

    fn input_schema_for(&self, arguments: &Value) -> Result<Option<Value>, ToolError> {
        parse(arguments).map(|choice| Some(schema(&choice)))
    }

    async fn execute(&self, arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        let choice = parse(&arguments)?;
        let answer = arguments.get("answer").and_then(Value::as_str).ok_or_else(|| rejected("no answer was given."))?;
        if !choice.options.iter().any(|option| option == answer) {
            return Err(rejected("the answer is not one of the options."));
        }
        Ok(format!("{PICKED}{answer}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actor::Actor;
    use uuid::Uuid;

    fn context() -> ToolContext {
        ToolContext::new(Uuid::nil(), Actor::user(1), 0)
    }

    #[test]
    fn builds_a_schema_with_the_question_and_the_options() {
        let schema =
            AskChoiceTool.input_schema_for(&json!({"question": " Which first? ", "options": ["Intro", "Body"]}));
        assert_eq!(
            schema.unwrap(),
            Some(json!({
                "type": "object",
                "properties": {"answer": {"type": "string", "title": "Which first?", "enum": ["Intro", "Body"]}},
                "required": ["answer"]
            }))
        );
    }

    #[test]
    fn refuses_bad_arguments() {
        let long_question = "q".repeat(301);
        let long_option = "o".repeat(121);
        let cases = [
            json!({"options": ["a", "b"]}),
            json!({"question": "Q", "options": ["a"]}),
            json!({"question": "Q", "options": ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"]}),
            json!({"question": "Q", "options": ["a", "a"]}),
            json!({"question": "Q", "options": ["a", "b\nc"]}),
            json!({"question": "two\nlines", "options": ["a", "b"]}),
            json!({"question": "zero\u{200B}width", "options": ["a", "b"]}),
            json!({"question": long_question, "options": ["a", "b"]}),
            json!({"question": "Q", "options": ["a", long_option]}),
            json!({"question": "Q", "options": ["a", 2]}),
        ];
        for arguments in cases {
            let result = AskChoiceTool.input_schema_for(&arguments);
            assert!(matches!(result, Err(ToolError::Rejected(_))), "{arguments}: {result:?}");
        }
        let edge = json!({"question": "q".repeat(300), "options": ["a", "o".repeat(120)]});
        assert!(AskChoiceTool.input_schema_for(&edge).is_ok());
    }

    #[tokio::test]
    async fn executes_with_the_answer() {
        let arguments = json!({"question": "Q", "options": ["a", "b"], "answer": "b"});
        assert_eq!(AskChoiceTool.execute(arguments, &context()).await.unwrap(), "The user picked: b");
        let outside = json!({"question": "Q", "options": ["a", "b"], "answer": "c"});
        assert!(AskChoiceTool.execute(outside, &context()).await.is_err());
    }
}
