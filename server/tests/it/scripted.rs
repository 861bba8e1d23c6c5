//! A model for the tests, driven by the transcript it is given: a real `ModelProvider`, so the
//! runtime's tool loop, pauses and continuations all run for real. And the tools it calls.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use runtime::{
    Actor, ChatMessage, Completion, CompletionRequest, ModelProvider, ProviderError, Role, Tool, ToolCall, ToolContext,
    ToolEffect, ToolError, ToolRegistry, ToolSpec,
};
use serde_json::{json, Value};
use server::Services;

pub struct ScriptedModel;

fn call(name: &str, arguments: Value) -> Completion {
    Completion {
        content: String::new(),
        tool_calls: vec![ToolCall { id: format!("call-{name}"), name: name.to_string(), arguments }],
    }
}

#[async_trait]
impl ModelProvider for ScriptedModel {
    fn label(&self) -> String {
        "Scripted test model".into()
    }

    fn is_demo(&self) -> bool {
        false
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, ProviderError> {
        let last = request.messages.last().cloned().unwrap_or_else(|| ChatMessage::user(""));
        if last.role == Role::Tool {
            // Every result of the turn, so a test sees what each call came back with.
            let results: Vec<String> = request
                .messages
                .iter()
                .rev()
                .take_while(|message| message.role == Role::Tool)
                .map(|message| message.content.clone())
                .collect();
            return Ok(Completion { content: format!("Done: {}", results.join(" | ")), tool_calls: Vec::new() });
        }
        let text = last.content.to_lowercase();
        let completion = if text.contains("ask me") {
            call("ask_choice", json!({ "question": "Which point first?", "options": ["Title", "Images", "Links"] }))
        } else if text.contains("form please") {
            call("page_form", json!({}))
        } else if text.contains("bounded form") {
            call("bounded_form", json!({}))
        } else if text.contains("odd question") {
            call("odd_question", json!({}))
        } else if text.contains("write it") {
            call("set_title", json!({ "title": "A better title" }))
        } else {
            Completion { content: format!("Echo: {}", last.content), tool_calls: Vec::new() }
        };
        Ok(completion)
    }
}

/// What the write tool really did, for assertions that a write ran once, or never.
#[derive(Clone, Default)]
pub struct Effects {
    pub titles: Arc<Mutex<Vec<String>>>,
    /// Switched off by a test to make the owner lose the right to the form tool.
    pub form_forbidden: Arc<AtomicBool>,
}

struct SetTitle(Effects);

#[async_trait]
impl Tool for SetTitle {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "set_title",
            "Sets the page title",
            json!({ "type": "object", "properties": { "title": { "type": "string" } }, "required": ["title"] }),
        )
        .with_effect(ToolEffect::NonIdempotentWrite)
    }

    async fn execute(&self, arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        let title = arguments["title"].as_str().unwrap_or_default().to_string();
        self.0.titles.lock().unwrap().push(title.clone());
        Ok(format!("Title set to {title}"))
    }
}

struct PageForm(Effects);

#[async_trait]
impl Tool for PageForm {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("page_form", "Asks for page settings", json!({ "type": "object", "properties": {} }))
            .with_input_schema(json!({
                "type": "object",
                "title": "Page settings",
                "properties": {
                    "title": { "type": "string", "title": "Title" },
                    "count": { "type": "integer", "title": "Count" },
                    "hidden": { "type": "boolean", "title": "Hidden" }
                },
                "required": ["title"]
            }))
    }

    fn permits(&self, _actor: &Actor) -> bool {
        !self.0.form_forbidden.load(Ordering::SeqCst)
    }

    async fn execute(&self, arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        Ok(format!("Form received: {arguments}"))
    }
}

/// A form whose fields carry the schema's own bounds (issue 40): the chat names each one that a
/// value misses before anything is recorded.
struct BoundedForm;

#[async_trait]
impl Tool for BoundedForm {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("bounded_form", "Asks for a booking", json!({ "type": "object", "properties": {} }))
            .with_input_schema(json!({
                "type": "object",
                "title": "Booking",
                "properties": {
                    "seats": { "type": "integer", "title": "Seats", "minimum": 1, "maximum": 12 },
                    "code": { "type": "string", "title": "Code", "minLength": 3, "pattern": "^[A-Z]+$" },
                    "email": { "type": "string", "title": "E-mail", "format": "email" },
                    "size": { "type": "string", "title": "Size", "enum": ["S", "M"] }
                },
                "required": ["seats"]
            }))
    }

    async fn execute(&self, arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        Ok(format!("Booked: {arguments}"))
    }
}

struct OddQuestion;

#[async_trait]
impl Tool for OddQuestion {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "odd_question",
            "Asks for something a chat cannot render",
            json!({ "type": "object", "properties": {} }),
        )
        .with_input_schema(json!({
            "type": "object",
            "title": "Upload a spreadsheet",
            "properties": { "rows": { "type": "array", "items": { "type": "string" } } }
        }))
    }

    async fn execute(&self, arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        Ok(format!("Got {arguments}"))
    }
}

pub fn services(effects: &Effects) -> Services {
    let mut tools: ToolRegistry = server::default_tools();
    tools.register(Arc::new(SetTitle(effects.clone()))).unwrap();
    tools.register(Arc::new(PageForm(effects.clone()))).unwrap();
    tools.register(Arc::new(OddQuestion)).unwrap();
    tools.register(Arc::new(BoundedForm)).unwrap();
    let mut services = Services::new(Arc::new(ScriptedModel));
    services.tools = tools;
    services.reconcile_grace = std::time::Duration::ZERO;
    services
}
