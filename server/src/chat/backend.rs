//! The `ChatBackend` seam, each call handed to the module that does it. The methods called here
//! are inherent ones of the same name where there is one: an inherent method wins over the trait's.

use async_trait::async_trait;

use app::backend::{ChatBackend, CurrentUser};
use app::error::AppError;
use app::i18n::Lang;
use app::model::{
    CardDecision, CardExtras, ConversationSummary, ConversationView, InboxView, PolicyView, PollView, WaitingView,
};
use question::form::InputAnswer;

use super::ChatService;
use crate::audit::Surface;
use crate::failures::internal;

#[async_trait]
impl ChatBackend for ChatService {
    async fn list_conversations(&self, user: &CurrentUser) -> Result<Vec<ConversationSummary>, AppError> {
        self.list_conversations(user).await
    }

    async fn create_conversation(&self, user: &CurrentUser, skill: Option<&str>) -> Result<String, AppError> {
        self.create_conversation(user, skill).await
    }

    async fn poll(
        &self,
        session_token: &str,
        id: &str,
        after: usize,
        browser_lang: Lang,
    ) -> Result<PollView, AppError> {
        self.poll(session_token, id, after, browser_lang).await
    }

    async fn conversation(&self, user: &CurrentUser, id: &str, lang: Lang) -> Result<ConversationView, AppError> {
        self.view_of(user, id, lang).await
    }

    async fn send_message(&self, user: &CurrentUser, id: &str, content: &str) -> Result<(), AppError> {
        self.send_message(user, id, content).await
    }

    async fn answer(
        &self,
        session_token: &str,
        id: &str,
        digest: &str,
        answer: InputAnswer,
        browser_lang: Lang,
    ) -> Result<(), AppError> {
        self.answer_with_session(session_token, id, digest, answer, browser_lang).await
    }

    async fn session_user(&self, session_token: &str) -> Result<CurrentUser, AppError> {
        let user = crate::auth::session_user(&self.store, session_token).await.map_err(internal)?;
        user.ok_or(AppError::Unauthenticated)
    }

    async fn decide(
        &self,
        user: &CurrentUser,
        id: &str,
        digest: &str,
        decision: CardDecision,
        extras: CardExtras,
        lang: Lang,
    ) -> Result<(), AppError> {
        let row = self.owned(user, id).await?;
        self.decide_on(row, user, digest, decision, extras, lang, Surface::Chat).await
    }

    async fn answer_run(
        &self,
        user: &CurrentUser,
        id: &str,
        run: &str,
        digest: &str,
        answer: InputAnswer,
        lang: Lang,
    ) -> Result<(), AppError> {
        self.answer_run(user, id, run, digest, answer, lang).await
    }

    async fn decide_run(
        &self,
        user: &CurrentUser,
        id: &str,
        run: &str,
        digest: &str,
        decision: CardDecision,
        extras: CardExtras,
        lang: Lang,
    ) -> Result<(), AppError> {
        self.decide_run(user, id, run, digest, decision, extras, lang).await
    }

    async fn inbox(&self, user: &CurrentUser, lang: Lang) -> Result<InboxView, AppError> {
        self.inbox(user, lang).await
    }

    async fn waiting(&self, user: &CurrentUser) -> Result<WaitingView, AppError> {
        self.waiting(user).await
    }

    async fn policies(&self, user: &CurrentUser) -> Result<Vec<PolicyView>, AppError> {
        self.policies(user).await
    }

    async fn revoke_policy(&self, user: &CurrentUser, policy: i64) -> Result<(), AppError> {
        self.revoke_policy(user, policy).await
    }

    async fn policy_permits(&self, user: &CurrentUser) -> Result<Vec<String>, AppError> {
        self.policy_permits(user).await
    }

    async fn set_policy_permit(&self, user: &CurrentUser, tool: &str, permitted: bool) -> Result<(), AppError> {
        self.set_policy_permit(user, tool, permitted).await
    }

    async fn dismiss_run(&self, user: &CurrentUser, id: &str, run: &str) -> Result<(), AppError> {
        self.dismiss(user, id, run).await
    }

    async fn retry(&self, user: &CurrentUser, id: &str) -> Result<(), AppError> {
        self.retry(user, id).await
    }

    async fn edit_message(&self, user: &CurrentUser, id: &str, message_id: i64, content: &str) -> Result<(), AppError> {
        self.edit_message(user, id, message_id, content).await
    }

    async fn remove_attachment(&self, user: &CurrentUser, id: &str, attachment_id: i64) -> Result<(), AppError> {
        self.remove_attachment(user, id, attachment_id).await
    }

    async fn stop(&self, user: &CurrentUser, id: &str) -> Result<(), AppError> {
        self.stop(user, id).await
    }

    async fn rename_conversation(&self, user: &CurrentUser, id: &str, title: &str) -> Result<(), AppError> {
        self.rename_conversation(user, id, title).await
    }

    async fn delete_conversation(&self, user: &CurrentUser, id: &str) -> Result<(), AppError> {
        self.delete_conversation(user, id).await
    }

    async fn start_tour(&self, user: &CurrentUser, page_id: i64, lang: Lang) -> Result<String, AppError> {
        self.start_tour(user, page_id, lang).await
    }
}
