//! Tools the demo model uses to show every kind of question and a plain approval card, so the
//! embedded defaults can be tried out (and tested) without a real model. Registered only while the
//! demo model answers: a real model is never offered them.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use runtime::{Tool, ToolContext, ToolEffect, ToolError, ToolRegistry, ToolSpec};
use serde_json::{json, Value};

pub const FEEDBACK: &str = "demo_feedback";
pub const CONTACT: &str = "demo_contact";
pub const UPLOAD: &str = "demo_upload";
pub const NOTE: &str = "demo_note";

fn no_arguments() -> Value {
    json!({ "type": "object", "properties": {} })
}

/// A choice that also takes typed text.
struct Feedback;

#[async_trait]
impl Tool for Feedback {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(FEEDBACK, "Asks how the demo went, with buttons or typed text", no_arguments()).with_input_schema(
            json!({
                "type": "object",
                "title": "How do you like the demo so far?",
                "properties": {
                    "rating": { "oneOf": [
                        { "const": "good", "title": "Good" },
                        { "const": "okay", "title": "Okay" },
                        { "const": "bad", "title": "Not yet" }
                    ]},
                    "comment": { "type": "string" }
                }
            }),
        )
    }

    async fn execute(&self, arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        Ok(match (arguments.get("rating").and_then(Value::as_str), arguments.get("comment").and_then(Value::as_str)) {
            (Some(rating), _) => format!("The user rated the demo: {rating}"),
            (None, Some(comment)) => format!("The user wrote: {comment}"),
            _ => "The user gave no answer".to_string(),
        })
    }
}

/// A small form: one field per property.
struct Contact;

#[async_trait]
impl Tool for Contact {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(CONTACT, "Asks for the details of a contact page", no_arguments()).with_input_schema(json!({
            "type": "object",
            "title": "Details for the contact page",
            "properties": {
                "company": { "type": "string", "title": "Company name" },
                "employees": { "type": "integer", "title": "Employees", "minimum": 1 },
                "newsletter": { "type": "boolean", "title": "Offer a newsletter" },
                "region": { "enum": ["Baden", "Pfalz", "Elsass"], "title": "Region" }
            },
            "required": ["company"]
        }))
    }

    async fn execute(&self, arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        Ok(format!("Contact details received: {arguments}"))
    }
}

/// A question no chat can render as buttons or a form.
struct Upload;

#[async_trait]
impl Tool for Upload {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(UPLOAD, "Asks for a list of files", no_arguments()).with_input_schema(json!({
            "type": "object",
            "title": "Upload the price list",
            "properties": { "files": { "type": "array", "items": { "type": "string" } } }
        }))
    }

    async fn execute(&self, _arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        Ok("No files were given".to_string())
    }
}

/// A write outside a guided process: its card offers Apply and Cancel.
struct Note(Arc<Mutex<Vec<String>>>);

#[async_trait]
impl Tool for Note {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            NOTE,
            "Saves a note for the site's editors",
            json!({ "type": "object", "properties": { "text": { "type": "string" } }, "required": ["text"] }),
        )
        .with_effect(ToolEffect::NonIdempotentWrite)
    }

    async fn execute(&self, arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        let text = arguments.get("text").and_then(Value::as_str).unwrap_or_default().trim().to_string();
        if text.is_empty() {
            return Err(ToolError::Rejected("A note needs some text.".to_string()));
        }
        let mut notes = self.0.lock().map_err(|_| ToolError::Failed("notes lock poisoned".into()))?;
        notes.push(text.clone());
        Ok(format!("Saved note {}: {text}", notes.len()))
    }
}

/// Registers the showcase tools; only while the demo model answers.
pub fn register(registry: &mut ToolRegistry) {
    let notes = Arc::new(Mutex::new(Vec::new()));
    let tools: [Arc<dyn Tool>; 4] = [Arc::new(Feedback), Arc::new(Contact), Arc::new(Upload), Arc::new(Note(notes))];
    for tool in tools {
        registry.register(tool).expect("the showcase tools are declared correctly");
    }
}
