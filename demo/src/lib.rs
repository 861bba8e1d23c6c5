//! The built-in demo model: deterministic, offline, driven only by the transcript it is given. It
//! implements the runtime's provider trait for real, and the UI labels it as a demo.
//!
//! In a guided page tour (the system prompt names the page and the tour's tools are offered) it
//! plays the tour (`tour`); on a showcase command it shows one kind of question or card
//! (`showcase`, with the tools in `showcase_tools`); otherwise it echoes what the user said.
//!
//! It sits on top of the runtime and the content domain and takes their names from them: the
//! tools' names, the point kinds, the page sentence and the texts a tool result carries.

mod showcase;
pub mod showcase_tools;
mod tour;

use async_trait::async_trait;
use runtime::{ChatMessage, Completion, CompletionRequest, ModelProvider, ProviderError, Role};

pub use tour::{END_QUESTION, NEXT_PAGE_OPTION, START_QUESTION, SUMMARY_OPTION};

#[derive(Debug, Clone, Default)]
pub struct DemoProvider;

#[async_trait]
impl ModelProvider for DemoProvider {
    fn label(&self) -> String {
        "Demo model".to_string()
    }

    fn is_demo(&self) -> bool {
        true
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, ProviderError> {
        if let Some(tour) = tour::Tour::detect(&request) {
            return Ok(tour.next_step());
        }
        if let Some(step) = showcase::showcase(&request) {
            return Ok(step);
        }
        Ok(echo(&request.messages))
    }
}

fn echo(messages: &[ChatMessage]) -> Completion {
    let user_turns = messages.iter().filter(|m| m.role == Role::User).count();
    let last_user =
        messages.iter().rev().find(|m| m.role == Role::User).map(|m| m.content.trim().to_string()).unwrap_or_default();
    let content = if last_user.is_empty() {
        "Hello! I am the built-in demo model. Ask me anything, or start a guided page tour.".to_string()
    } else {
        format!(
            "You said: \u{201c}{last_user}\u{201d} (message {user_turns} of this conversation). \
             I am the built-in demo model and answer from a script; configure an \
             OpenAI-compatible model for real answers."
        )
    };
    Completion { content, tool_calls: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn demo_answers_from_the_transcript() {
        let provider = DemoProvider;
        let request = CompletionRequest {
            messages: vec![ChatMessage::user("first"), ChatMessage::assistant("ok"), ChatMessage::user("Hi there")],
            tools: Vec::new(),
        };
        let completion = provider.complete(request).await.unwrap();
        assert!(completion.content.contains("\u{201c}Hi there\u{201d}"), "{}", completion.content);
        assert!(completion.content.contains("message 2"));
        assert!(completion.tool_calls.is_empty());
    }
}
