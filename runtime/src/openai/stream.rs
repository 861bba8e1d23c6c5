//! Streamed chat completions (`stream: true`): server-sent events of completion chunks, assembled
//! into one [`Completion`] while each piece of text goes to the sink as it arrives.
//!
//! Written for the servers people run, not only OpenAI: Ollama sends a tool call whole in one
//! chunk, sometimes with its arguments as a JSON object; llama.cpp and older vLLM builds may omit
//! a delta's `index`; usage arrives in a last chunk with no choices; llama.cpp adds `timings`;
//! errors can arrive as a `data: {"error": …}` event after the stream began. A stream that ends
//! without `[DONE]` and without a finish reason broke off and is an error, never a short answer.

use serde::Deserialize;
use serde_json::Value;

use super::{parse_arguments, WireNames};
use crate::message::ToolCall;
use crate::provider::{Completion, ProviderError, TextSink};

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<DeltaCall>>,
}

#[derive(Deserialize)]
struct DeltaCall {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Debug)]
struct PartialCall {
    index: Option<u64>,
    id: Option<String>,
    name: String,
    arguments: Arguments,
}

#[derive(Debug)]
enum Arguments {
    /// The usual form: a JSON text sent in pieces.
    Text(String),
    /// Ollama's form: the object itself, whole.
    Whole(Value),
}

/// Where a stream stands after a chunk.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fed {
    More,
    Done,
}

/// Folds the chunks of one streamed completion together.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    content: String,
    calls: Vec<PartialCall>,
    finished: bool,
}

impl Assembler {
    /// Feeds one event's data. Text goes to `sink` before this returns.
    pub(crate) fn feed(&mut self, data: &str, sink: &dyn TextSink) -> Result<Fed, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Fed::Done);
        }
        if data.is_empty() {
            return Ok(Fed::More);
        }
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|e| ProviderError::Malformed(format!("not a completion chunk: {e}")))?;
        if let Some(error) = chunk.error {
            return Err(stream_error(&error));
        }
        // Only the first choice is asked for (n = 1); a usage chunk has none.
        let Some(choice) = chunk.choices.into_iter().next() else { return Ok(Fed::More) };
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                sink.text(&text);
                self.content.push_str(&text);
            }
            for call in delta.tool_calls.unwrap_or_default() {
                self.call_delta(call);
            }
        }
        if choice.finish_reason.is_some_and(|reason| !reason.is_empty()) {
            self.finished = true;
        }
        Ok(Fed::More)
    }

    /// A delta belongs to the call with its `index`; without one, to a new call when it brings an
    /// id not seen yet, else to the last call.
    fn call_delta(&mut self, delta: DeltaCall) {
        let id = delta.id.filter(|id| !id.is_empty());
        let named =
            delta.function.as_ref().and_then(|function| function.name.as_deref()).is_some_and(|name| !name.is_empty());
        let position = match delta.index {
            // Ollama gives every call of a turn index 0: a delta that names a new call (another id
            // and a name) starts one. A new id alone does not: some servers send one per delta.
            Some(index) => self.calls.iter().rposition(|call| call.index == Some(index)).filter(|&at| {
                let known = &self.calls[at];
                !(named && !known.name.is_empty() && id.is_some() && known.id.is_some() && known.id != id)
            }),
            None => match (&id, self.calls.last()) {
                (Some(id), Some(last)) if last.id.as_deref().is_some_and(|known| known != id) => None,
                (_, Some(_)) => Some(self.calls.len() - 1),
                (_, None) => None,
            },
        };
        let position = position.unwrap_or_else(|| {
            self.calls.push(PartialCall {
                index: delta.index,
                id: None,
                name: String::new(),
                arguments: Arguments::Text(String::new()),
            });
            self.calls.len() - 1
        });
        let call = &mut self.calls[position];
        if call.id.is_none() {
            call.id = id;
        }
        let Some(function) = delta.function else { return };
        if let Some(name) = function.name.filter(|name| !name.is_empty()) {
            // The name comes whole in the first delta; a server that repeats it must not double it.
            if call.name.is_empty() {
                call.name = name;
            }
        }
        match (function.arguments, &mut call.arguments) {
            (Some(Value::String(piece)), Arguments::Text(text)) => text.push_str(&piece),
            (Some(Value::Null) | None, _) => {}
            (Some(Value::String(_)), Arguments::Whole(_)) => {}
            (Some(whole), arguments) => *arguments = Arguments::Whole(whole),
        }
    }

    /// The stream ended (`[DONE]` or the body's end). `done` says whether `[DONE]` was seen.
    pub(crate) fn finish(self, done: bool, names: &WireNames) -> Result<Completion, ProviderError> {
        if !done && !self.finished {
            return Err(ProviderError::Dropped("the stream ended before the model finished".into()));
        }
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(position, call)| ToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{position}")),
                name: names.ours(call.name),
                arguments: match call.arguments {
                    Arguments::Text(text) => parse_arguments(Some(Value::String(text))),
                    Arguments::Whole(value) => parse_arguments(Some(value)),
                },
            })
            .collect();
        Ok(Completion { content: self.content, tool_calls })
    }
}

/// An error event inside a stream. Its text is the server's and stays in the logs.
fn stream_error(error: &Value) -> ProviderError {
    let text = match error {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    if mentions_context_length(&text) {
        ProviderError::ContextTooLong
    } else {
        ProviderError::Stream(text)
    }
}

/// The servers word it differently: OpenAI's code `context_length_exceeded`, vLLM's "maximum
/// context length", llama.cpp's `exceed_context_size_error`, Ollama's "context length".
pub(crate) fn mentions_context_length(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ["context_length_exceeded", "context length", "exceed_context_size", "context size", "context window"]
        .iter()
        .any(|marker| lower.contains(marker))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::provider::CompletionRequest;

    #[derive(Default)]
    struct Collect(Mutex<Vec<String>>);

    impl TextSink for Collect {
        fn text(&self, delta: &str) {
            self.0.lock().unwrap().push(delta.to_string());
        }
    }

    fn names() -> WireNames {
        WireNames::of(&CompletionRequest::default())
    }

    #[test]
    fn split_arguments_of_parallel_calls_are_put_together_by_index() {
        let sink = Collect::default();
        let mut assembler = Assembler::default();
        let chunks = [
            json!({"choices": [{"delta": {"role": "assistant", "content": "Let me "}}]}),
            json!({"choices": [{"delta": {"content": "look."}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "get_weather", "arguments": "{\"ci"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 1, "id": "b", "function": {"name": "lookup_page", "arguments": ""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "ty\": \"Berlin\"}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 1, "function": {"arguments": "{\"id\": 3}"}}]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        ];
        for chunk in chunks {
            assert_eq!(assembler.feed(&chunk.to_string(), &sink).unwrap(), Fed::More);
        }
        assert_eq!(assembler.feed("[DONE]", &sink).unwrap(), Fed::Done);
        let completion = assembler.finish(true, &names()).unwrap();
        assert_eq!(completion.content, "Let me look.");
        assert_eq!(*sink.0.lock().unwrap(), vec!["Let me ", "look."]);
        assert_eq!(completion.tool_calls.len(), 2);
        assert_eq!(completion.tool_calls[0].id, "a");
        assert_eq!(completion.tool_calls[0].arguments, json!({"city": "Berlin"}));
        assert_eq!(completion.tool_calls[1].name, "lookup_page");
        assert_eq!(completion.tool_calls[1].arguments, json!({"id": 3}));
    }

    #[test]
    fn deltas_without_index_follow_their_id_and_whole_objects_are_taken_as_they_are() {
        let sink = Collect::default();
        let mut assembler = Assembler::default();
        for chunk in [
            json!({"choices": [{"delta": {"tool_calls": [{"id": "x", "function": {"name": "get_weather", "arguments": "{\"city\":"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "\"Rome\"}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"id": "y", "function": {"name": "lookup_page", "arguments": {"id": 7}}}]}}]}),
            json!({"choices": [{"finish_reason": "tool_calls", "delta": {}}], "timings": {"predicted_n": 9}}),
            json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 9}}),
        ] {
            assembler.feed(&chunk.to_string(), &sink).unwrap();
        }
        // No [DONE], but the model said it finished: a complete answer.
        let completion = assembler.finish(false, &names()).unwrap();
        assert_eq!(completion.tool_calls[0].arguments, json!({"city": "Rome"}));
        assert_eq!(completion.tool_calls[1].id, "y");
        assert_eq!(completion.tool_calls[1].arguments, json!({"id": 7}));
    }

    #[test]
    fn a_stream_that_breaks_off_or_reports_an_error_is_an_error() {
        let sink = Collect::default();
        let mut assembler = Assembler::default();
        assembler.feed(&json!({"choices": [{"delta": {"content": "Half"}}]}).to_string(), &sink).unwrap();
        assert!(matches!(assembler.finish(false, &names()), Err(ProviderError::Dropped(_))));

        let mut assembler = Assembler::default();
        let error = assembler
            .feed(&json!({"error": {"message": "upstream overloaded", "type": "server_error"}}).to_string(), &sink)
            .unwrap_err();
        assert!(matches!(error, ProviderError::Stream(_)) && error.is_retryable(), "{error:?}");
        let error = Assembler::default()
            .feed(&json!({"error": {"message": "x", "code": "context_length_exceeded"}}).to_string(), &sink)
            .unwrap_err();
        assert!(matches!(error, ProviderError::ContextTooLong));
        assert!(matches!(Assembler::default().feed("{not json", &sink), Err(ProviderError::Malformed(_))));
    }
}
