//! The accounts page's service (`AdminBackend`): admins list, add and change accounts and end
//! their sessions. Every call checks the caller's role here, on the server.

use app::backend::{AdminBackend, CurrentUser};
use app::error::AppError;
use app::i18n::Text;
use app::model::AccountView;
use async_trait::async_trait;

use crate::chat::internal;
use crate::names;
use crate::store::{Role, Store, StoreError};

pub struct AdminService {
    store: Store,
}

impl AdminService {
    pub fn new(store: Store) -> AdminService {
        AdminService { store }
    }
}

fn admin_only(user: &CurrentUser) -> Result<(), AppError> {
    if user.admin {
        Ok(())
    } else {
        tracing::warn!(user = user.id, "a non-admin asked for an admin action");
        Err(AppError::Forbidden)
    }
}

fn checked_password(password: &str) -> Result<&str, AppError> {
    if password.chars().count() < 8 || password.chars().count() > 200 {
        return Err(AppError::Invalid(Text::ErrorPasswordLength));
    }
    Ok(password)
}

fn role(admin: bool) -> Role {
    if admin {
        Role::Admin
    } else {
        Role::Editor
    }
}

#[async_trait]
impl AdminBackend for AdminService {
    async fn accounts(&self, user: &CurrentUser) -> Result<Vec<AccountView>, AppError> {
        admin_only(user)?;
        let users = self.store.users().await.map_err(internal)?;
        Ok(users
            .into_iter()
            .map(|account| AccountView {
                is_you: account.id == user.id,
                id: account.id,
                username: account.username,
                admin: account.role == Role::Admin,
                may_approve_own: account.may_approve_own,
                sessions: account.sessions,
            })
            .collect())
    }

    async fn add_account(
        &self,
        user: &CurrentUser,
        username: &str,
        password: &str,
        admin: bool,
        may_approve_own: bool,
    ) -> Result<(), AppError> {
        admin_only(user)?;
        let username = username.trim();
        if username.is_empty() || username.chars().count() > 64 {
            return Err(AppError::Invalid(Text::ErrorUsername));
        }
        if names::is_confusable(username) {
            return Err(AppError::Invalid(Text::ErrorUsernameConfusable));
        }
        let password = checked_password(password)?;
        // By its key: `BOB` and `ｂｏｂ` are taken when `bob` is.
        if self.store.user_by_name(username).await.map_err(internal)?.is_some() {
            return Err(AppError::Invalid(Text::ErrorUsernameTaken));
        }
        let hash = crate::auth::hash_password(password);
        match self.store.add_user(username, &hash, role(admin), may_approve_own).await {
            Ok(_) => {}
            Err(StoreError::NameTaken) => return Err(AppError::Invalid(Text::ErrorUsernameTaken)),
            Err(error) => return Err(internal(error)),
        }
        tracing::info!(by = user.id, %username, admin, may_approve_own, "account added");
        Ok(())
    }

    async fn set_password(&self, user: &CurrentUser, account: i64, password: &str) -> Result<(), AppError> {
        admin_only(user)?;
        let hash = crate::auth::hash_password(checked_password(password)?);
        if !self.store.set_password(account, &hash).await.map_err(internal)? {
            return Err(AppError::NotFound);
        }
        Ok(())
    }

    async fn set_role(
        &self,
        user: &CurrentUser,
        account: i64,
        admin: bool,
        may_approve_own: bool,
    ) -> Result<(), AppError> {
        admin_only(user)?;
        // An admin cannot demote themselves: the last admin would lock everyone out of this page.
        if account == user.id && !admin {
            return Err(AppError::Invalid(Text::ErrorOwnAdminRole));
        }
        if !self.store.set_role(account, role(admin), may_approve_own).await.map_err(internal)? {
            return Err(AppError::NotFound);
        }
        Ok(())
    }

    async fn end_sessions(&self, user: &CurrentUser, account: i64) -> Result<(), AppError> {
        admin_only(user)?;
        self.store.end_sessions(account).await.map_err(internal)?;
        Ok(())
    }
}
