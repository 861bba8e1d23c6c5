//! What a reader is told when the model fails, and that Retry runs the turn again once it works.

use std::sync::Arc;
use std::sync::Mutex;

use async_trait::async_trait;
use runtime::{Completion, CompletionRequest, ModelProvider, ProviderError, RuntimeSettings};
use server::Services;

use crate::harness::{texts, TestServer};

/// Fails with the errors it is given, in order, then answers.
struct Failing(Mutex<Vec<ProviderError>>);

#[async_trait]
impl ModelProvider for Failing {
    fn label(&self) -> String {
        "Failing test model".into()
    }

    fn is_demo(&self) -> bool {
        false
    }

    async fn complete(&self, _request: CompletionRequest) -> Result<Completion, ProviderError> {
        let mut errors = self.0.lock().unwrap();
        if errors.is_empty() {
            return Ok(Completion { content: "Working again.".into(), tool_calls: Vec::new() });
        }
        Err(errors.remove(0))
    }
}

#[tokio::test]
async fn each_kind_of_model_failure_gets_its_sentence_and_retry_works() {
    let cases = [
        (ProviderError::ContextTooLong, "too long for the model"),
        (ProviderError::Status { status: 401 }, "refused the request"),
        (ProviderError::Status { status: 429 }, "too many requests"),
        (ProviderError::Timeout, "took too long"),
        (ProviderError::Dropped("reset by peer 10.0.0.7".into()), "broke off"),
    ];
    for (error, sentence) in cases {
        let retryable = error.is_retryable();
        // Retryable failures are retried by the runtime first; none left here, so the first fails.
        let mut services = Services::new(Arc::new(Failing(Mutex::new(vec![error]))));
        services.runtime_settings = RuntimeSettings { max_requeues: 0, ..RuntimeSettings::default() };
        let server = TestServer::start_services(tempfile::tempdir().unwrap(), services).await;
        let client = server.signed_in("demo").await;
        let id = client.create_conversation().await;
        client.call_json("send_message", &[("conversation_id", &id), ("content", "hello")]).await;
        let failed = client.settled_conversation(&id).await;
        assert_eq!(failed["status"], "failed", "{failed}");
        let shown = failed["error"].as_str().unwrap_or_default();
        assert!(shown.contains(sentence), "retryable {retryable}: {shown}");
        assert!(!shown.contains("10.0.0.7") && !shown.contains("401"), "no internals: {shown}");
        let (status, body) = client.call_json("retry", &[("conversation_id", &id)]).await;
        assert_eq!(status, 200, "{body}");
        let again = client.settled_conversation(&id).await;
        assert_eq!(texts(&again), ["hello", "Working again."]);
        server.stop().await;
    }
}
