//! The built-in demo model: deterministic, offline, driven only by the transcript it is given.

use async_trait::async_trait;

use crate::message::Role;
use crate::provider::{Completion, CompletionRequest, ModelProvider, ProviderError};

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
        let user_turns = request.messages.iter().filter(|m| m.role == Role::User).count();
        let last_user = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.trim().to_string())
            .unwrap_or_default();
        let content = if last_user.is_empty() {
            "Hello! I am the built-in demo model. Ask me anything, or start a guided page tour.".to_string()
        } else {
            format!(
                "You said: \u{201c}{last_user}\u{201d} (message {user_turns} of this conversation). \
                 I am the built-in demo model and answer from a script; configure an \
                 OpenAI-compatible model for real answers."
            )
        };
        Ok(Completion { content, tool_calls: Vec::new() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ChatMessage;

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
