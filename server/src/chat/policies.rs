//! Standing approvals ("always allow"): asked for with an approval, listed and revoked by their
//! owner, and permitted per tool by an admin.

use app::backend::CurrentUser;
use app::error::AppError;
use app::i18n::Text;
use app::model::{AlwaysScope, PolicyView};
use runtime::ToolSpec;

use super::cards::tool_names;
use super::ChatService;
use crate::failures::internal;
use crate::store::NewPolicies;

/// Whether a call of the tool can ever wait for a card: a write, one that asks for approval, or
/// one that reaches the open world (it waits once the run holds outside content). Only then can
/// a standing approval of it apply.
pub fn can_wait_for_card(spec: &ToolSpec) -> bool {
    spec.needs_approval_in(true)
}

impl ChatService {
    /// A standing approval the reader asks for with their approval, checked before anything is
    /// recorded: never for a reader whose changes wait for a second person, and "for me" only for
    /// tools an admin permits it for.
    pub(super) async fn policy_request(
        &self,
        user: &CurrentUser,
        conversation_id: &str,
        pause: &runtime::ApprovalPause,
        scope: AlwaysScope,
    ) -> Result<NewPolicies, AppError> {
        if !user.approves_own_changes() {
            return Err(AppError::Invalid(Text::PolicyFourEyes));
        }
        let tools = tool_names(pause);
        if scope == AlwaysScope::Mine && !self.store.policy_permits_all(&tools).await.map_err(internal)? {
            return Err(AppError::Invalid(Text::PolicyNotPermitted));
        }
        let conversation_id = (scope == AlwaysScope::Conversation).then(|| conversation_id.to_string());
        Ok(NewPolicies { user_id: user.id, tools, conversation_id })
    }

    pub(super) async fn policies(&self, user: &CurrentUser) -> Result<Vec<PolicyView>, AppError> {
        let policies = self.store.policies_of(user.id).await.map_err(internal)?;
        Ok(policies
            .into_iter()
            .map(|policy| PolicyView {
                id: policy.id,
                tool: policy.tool,
                conversation: policy.conversation_id.map(|id| (id, policy.title.unwrap_or_default())),
            })
            .collect())
    }

    pub(super) async fn revoke_policy(&self, user: &CurrentUser, policy: i64) -> Result<(), AppError> {
        if !self.store.revoke_policy(user.id, policy).await.map_err(internal)? {
            return Err(AppError::NotFound);
        }
        Ok(())
    }

    pub(super) async fn policy_permits(&self, user: &CurrentUser) -> Result<Vec<String>, AppError> {
        if !user.admin {
            return Err(AppError::Forbidden);
        }
        self.store.policy_permits().await.map_err(internal)
    }

    pub(super) async fn set_policy_permit(
        &self,
        user: &CurrentUser,
        tool: &str,
        permitted: bool,
    ) -> Result<(), AppError> {
        if !user.admin {
            return Err(AppError::Forbidden);
        }
        let Some(found) = self.runtime.tools().get(tool.trim()) else { return Err(AppError::NotFound) };
        // Four-eyes needs no refusal here: it is the owner's, not the tool's, and a standing
        // approval is neither given to nor used for an owner whose changes wait for a second
        // person. A tool that never waits for a card is refused: the permit could never apply.
        if permitted && !can_wait_for_card(&found.spec) {
            return Err(AppError::Invalid(Text::PolicyPermitNeverWaits));
        }
        self.store.set_policy_permit(tool.trim(), user.id, permitted).await.map_err(internal)
    }
}
