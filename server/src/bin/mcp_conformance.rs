//! The client the MCP conformance suite tests (`@modelcontextprotocol/conformance client
//! --command tourguide-mcp-conformance`): it is started with the scenario's server URL as its last
//! argument, connects with the same MCP code the chat uses, lists the tools, calls each one, and
//! answers every question as a reader who sends the form as the chat shows it (defaults filled in).
//! Exit code 0 when every call ended; the suite judges what went over the wire.
//!
//! It stands in for the model too, which writes a call's arguments from the tool's schema as the
//! chat offered it: arguments a scenario names (`MCP_CONFORMANCE_CONTEXT`'s `toolCalls`, e.g.
//! non-ASCII text for a header) are written as given, and a tool that asks for another tool's
//! schema (`json-schema-2020-12-preservation`) gets that schema exactly as the model was offered
//! it. Everything between (the listing, the registry's checks, the call) is the chat's own code.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use app::i18n::{Lang, Text};
use mcp::{McpConfig, McpHub, ServerState};
use question::form::{InputAnswer, InputPauseForm, YesNo};
use runtime::{Actor, InputReply, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};

/// What the reader sends: the form as shown, the first of the reply buttons.
fn answer(schema: &Value) -> InputReply {
    let lang = Lang::En;
    let words = YesNo { yes: lang.t(Text::Yes), no: lang.t(Text::No) };
    let form = InputPauseForm::parse(schema);
    let answer = match &form {
        InputPauseForm::Form(fields) => InputAnswer::defaults_of(fields),
        InputPauseForm::Choice(choice) => match choice.options.first() {
            Some(option) => InputAnswer::Choice(option.value.clone()),
            None => return InputReply::Decline,
        },
        InputPauseForm::Unsupported { .. } => return InputReply::Decline,
    };
    match form.check(&answer, words) {
        Ok(accepted) => InputReply::Answer(accepted.data),
        // A form with nothing filled in is sent as it is: accepted, empty.
        Err(_) => InputReply::Answer(serde_json::Map::new()),
    }
}

/// Arguments a tool accepts, as a model that read only the schema would write them: each
/// required property with its default, its first option, or a plain value of its type.
fn sample_arguments(schema: &Value) -> Value {
    let required: Vec<&str> =
        schema["required"].as_array().map(|names| names.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let mut arguments = serde_json::Map::new();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties.iter().filter(|(name, _)| required.contains(&name.as_str())) {
            let value =
                property.get("default").cloned().or_else(|| property["enum"].get(0).cloned()).unwrap_or_else(|| {
                    match property["type"].as_str() {
                        Some("number" | "integer") => json!(1),
                        Some("boolean") => json!(true),
                        Some("array") => json!([]),
                        Some("object") => json!({}),
                        _ => json!("test"),
                    }
                });
            arguments.insert(name.clone(), value);
        }
    }
    Value::Object(arguments)
}

/// The arguments the scenario has the model write, by the tool's name on its server.
fn scripted_arguments() -> std::collections::HashMap<String, Value> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let calls = context["toolCalls"].as_array().cloned().unwrap_or_default();
    calls
        .into_iter()
        .filter_map(|call| Some((call["name"].as_str()?.to_string(), call.get("arguments")?.clone())))
        .collect()
}

/// What the model writes for a tool that asks to be given another tool's schema verbatim: that
/// schema as the chat offered it to the model (the scenario then sees what the listing kept).
fn echoed_schema(source: &dyn runtime::ToolSource, server: &str, arguments: &mut Value) {
    if std::env::var("MCP_CONFORMANCE_SCENARIO").as_deref() != Ok("json-schema-2020-12-preservation") {
        return;
    }
    if let Some(focal) = source.get(&format!("{server}.json_schema_2020_12_tool")) {
        arguments["schema"] = focal.spec.parameters.clone();
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter("warn").init();
    let Some(url) = std::env::args().next_back().filter(|arg| arg.starts_with("http")) else {
        eprintln!("usage: tourguide-mcp-conformance SERVER_URL");
        return ExitCode::from(2);
    };
    let config = match McpConfig::parse(&json!({ "mcpServers": { "conformance": { "url": url } } }).to_string()) {
        Ok(config) => config,
        Err(problem) => {
            eprintln!("{problem}");
            return ExitCode::from(2);
        }
    };
    let (_shutdown, stopped) = tokio::sync::watch::channel(false);
    let hub = McpHub::start(config, &ToolRegistry::new(), stopped);
    hub.settled(Duration::from_secs(20)).await;
    let server = &hub.servers()[0];
    if server.state != ServerState::Ready {
        eprintln!("the server is not ready: {:?}", server.state);
        return ExitCode::from(1);
    }
    let source = hub.source();
    let scripted = scripted_arguments();
    let context = ToolContext::new(uuid::Uuid::nil(), Actor::user(1), 1);
    let mut failed = false;
    for spec in &server.tools {
        let name = &spec.name;
        let Some(tool) = source.get(name) else { continue };
        let arguments = match scripted.get(name.split_once('.').map_or(name.as_str(), |(_, remote)| remote)) {
            Some(arguments) => arguments.clone(),
            None => sample_arguments(&tool.spec.parameters),
        };
        let mut arguments = arguments;
        if name.ends_with(".json_schema_echo") {
            echoed_schema(source.as_ref(), &server.name, &mut arguments);
        }
        let tool = Arc::clone(&tool.tool);
        let mut output = tool.call(arguments.clone(), &context).await;
        let mut rounds = 0;
        while let Ok(ToolOutput::Ask { schema, state }) = output {
            rounds += 1;
            if rounds > 10 {
                output = Err(runtime::ToolError::Rejected("too many questions".into()));
                break;
            }
            output = tool.resume(arguments.clone(), state, answer(&schema), &context).await;
        }
        match output {
            Ok(ToolOutput::Done(text)) => println!("{name}: {text}"),
            Ok(ToolOutput::Ask { .. }) => unreachable!("questions are answered above"),
            Err(error) => {
                eprintln!("{name}: {error}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
