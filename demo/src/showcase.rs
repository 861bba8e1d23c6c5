//! The demo model's showcase: outside a tour it shows each kind of question and a plain approval
//! card on request (`/choose`, `/feedback`, `/contact`, `/upload`, `/note TEXT`), through the
//! showcase tools, and calls any offered tool by name (`/mcp server.tool {json}`), so MCP tools
//! can be tried without a real model. Decided from the transcript like the rest of the demo.

use runtime::{Completion, CompletionRequest, Role, ToolCall, ASK_CHOICE};
use serde_json::{json, Value};

use crate::showcase_tools::{CONTACT, FEEDBACK, NOTE, UPLOAD};

const SHOWCASE_TOOLS: [&str; 5] = [ASK_CHOICE, FEEDBACK, CONTACT, UPLOAD, NOTE];

/// The call id of `/mcp`: it calls a tool of any name.
const ANY_TOOL_CALL: &str = "showcase-mcp";

fn call(name: &str, arguments: Value) -> Completion {
    Completion {
        content: String::new(),
        tool_calls: vec![ToolCall { id: format!("showcase-{name}"), name: name.to_string(), arguments }],
    }
}

fn say(content: String) -> Completion {
    Completion { content, tool_calls: Vec::new() }
}

/// `/mcp server.tool {"argument": …}`: the named tool with the given arguments (none: `{}`).
fn call_any(request: &CompletionRequest, rest: &str) -> Completion {
    let (name, arguments) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if name.is_empty() {
        return say("Name a tool: /mcp server.tool {\"argument\": \"value\"}. The Tools page lists them.".into());
    }
    if !request.tools.iter().any(|tool| tool.name == name) {
        return say(format!(
            "No tool named \u{201c}{name}\u{201d} is offered right now. The Tools page lists the tools of each MCP \
             server and whether it is connected."
        ));
    }
    let arguments = match arguments.trim() {
        "" => json!({}),
        text => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(arguments)) => Value::Object(arguments),
            Ok(_) => return say("The arguments must be a JSON object, e.g. {\"path\": \"notes.txt\"}.".into()),
            Err(error) => return say(format!("The arguments are not valid JSON: {error}.")),
        },
    };
    Completion {
        content: String::new(),
        tool_calls: vec![ToolCall { id: ANY_TOOL_CALL.to_string(), name: name.to_string(), arguments }],
    }
}

pub(crate) fn showcase(request: &CompletionRequest) -> Option<Completion> {
    let offered = |name: &str| request.tools.iter().any(|tool| tool.name == name);
    let last = request.messages.last()?;
    match last.role {
        Role::Tool => {
            let results: Vec<&str> = request
                .messages
                .iter()
                .rev()
                .take_while(|message| message.role == Role::Tool)
                .map(|message| message.content.as_str())
                .collect();
            let asked = request.messages.iter().rev().find(|message| message.role == Role::Assistant)?;
            let ours = !asked.tool_calls.is_empty()
                && asked.tool_calls.iter().all(|call| {
                    call.id == ANY_TOOL_CALL
                        || (call.id.starts_with("showcase-") && SHOWCASE_TOOLS.contains(&call.name.as_str()))
                });
            ours.then(|| Completion { content: format!("Noted. {}", results.join(" ")), tool_calls: Vec::new() })
        }
        Role::User => {
            let text = last.content.trim();
            let (command, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
            let rest = rest.trim();
            match command {
                "/choose" if offered(ASK_CHOICE) => Some(call(
                    ASK_CHOICE,
                    json!({ "question": "Which page should we look at first?", "options": ["Home", "About us", "Contact"] }),
                )),
                "/feedback" if offered(FEEDBACK) => Some(call(FEEDBACK, json!({}))),
                "/contact" if offered(CONTACT) => Some(call(CONTACT, json!({}))),
                "/upload" if offered(UPLOAD) => Some(call(UPLOAD, json!({}))),
                "/note" if offered(NOTE) && !rest.is_empty() => Some(call(NOTE, json!({ "text": rest }))),
                "/mcp" => Some(call_any(request, rest)),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use runtime::{ChatMessage, ToolDefinition};

    use super::*;

    fn offered(names: &[&str]) -> Vec<ToolDefinition> {
        names
            .iter()
            .map(|name| ToolDefinition { name: name.to_string(), description: String::new(), parameters: json!({}) })
            .collect()
    }

    #[test]
    fn a_command_calls_its_tool_only_when_it_is_offered() {
        let request =
            CompletionRequest { messages: vec![ChatMessage::user("/note Buy flour")], tools: offered(&["demo_note"]) };
        let completion = showcase(&request).unwrap();
        assert_eq!(completion.tool_calls[0].name, "demo_note");
        assert_eq!(completion.tool_calls[0].arguments, json!({ "text": "Buy flour" }));
        let without = CompletionRequest { messages: vec![ChatMessage::user("/note Buy flour")], tools: Vec::new() };
        assert!(showcase(&without).is_none());
        let plain = CompletionRequest { messages: vec![ChatMessage::user("hello")], tools: offered(&["demo_note"]) };
        assert!(showcase(&plain).is_none());
    }

    #[test]
    fn any_offered_tool_is_called_by_name_and_its_result_answered() {
        let ask = |text: &str| {
            let request =
                CompletionRequest { messages: vec![ChatMessage::user(text)], tools: offered(&["files.write_file"]) };
            showcase(&request).unwrap()
        };
        let completion = ask(r#"/mcp files.write_file {"path": "a.txt", "content": "Hi"}"#);
        assert_eq!(completion.tool_calls[0].id, ANY_TOOL_CALL);
        assert_eq!(completion.tool_calls[0].name, "files.write_file");
        assert_eq!(completion.tool_calls[0].arguments, json!({ "path": "a.txt", "content": "Hi" }));
        assert_eq!(ask("/mcp files.write_file").tool_calls[0].arguments, json!({}));
        assert!(ask("/mcp files.delete").content.contains("No tool named"));
        assert!(ask("/mcp files.write_file [1]").content.contains("JSON object"));
        assert!(ask("/mcp files.write_file {oops").content.contains("not valid JSON"));
        assert!(ask("/mcp").content.contains("Name a tool"));

        let mut asked = ChatMessage::assistant("");
        asked.tool_calls = completion.tool_calls;
        let request = CompletionRequest {
            messages: vec![ChatMessage::user("/mcp …"), asked, ChatMessage::tool_result(ANY_TOOL_CALL, "Wrote a.txt")],
            tools: offered(&["files.write_file"]),
        };
        assert_eq!(showcase(&request).unwrap().content, "Noted. Wrote a.txt");
    }

    #[test]
    fn the_result_of_a_showcase_call_is_answered() {
        let mut asked = ChatMessage::assistant("");
        asked.tool_calls = call("ask_choice", json!({})).tool_calls;
        let request = CompletionRequest {
            messages: vec![
                ChatMessage::user("/choose"),
                asked,
                ChatMessage::tool_result("showcase-ask_choice", "The user picked: Home"),
            ],
            tools: offered(&["ask_choice"]),
        };
        assert_eq!(showcase(&request).unwrap().content, "Noted. The user picked: Home");
    }
}
