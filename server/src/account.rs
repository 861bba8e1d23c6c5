//! The `AuthBackend` seam: signing in and out, the session as the header shows it, and the
//! reader's language. Passwords and tokens themselves are `auth`'s business.

use async_trait::async_trait;

use app::backend::{AuthBackend, CurrentUser, NewSession};
use app::error::AppError;
use app::i18n::Lang;
use app::model::SessionView;

use crate::auth;
use crate::chat::internal;
use crate::store::Store;

#[derive(Clone)]
pub struct AccountService {
    store: Store,
    model_label: String,
    model_is_demo: bool,
}

impl AccountService {
    pub fn new(store: Store, model_label: String, model_is_demo: bool) -> Self {
        AccountService { store, model_label, model_is_demo }
    }
}

#[async_trait]
impl AuthBackend for AccountService {
    async fn login(&self, username: &str, password: &str) -> Result<NewSession, AppError> {
        let user = self.store.user_by_name(username.trim()).await.map_err(internal)?;
        let Some(user) = user.filter(|user| auth::verify_password(password, &user.password_hash)) else {
            return Err(AppError::BadCredentials);
        };
        let token = auth::new_token();
        let expires_at = db::now() + auth::SESSION_SECONDS;
        self.store.create_session(&auth::token_hash(&token), user.id, expires_at).await.map_err(internal)?;
        Ok(NewSession { token, max_age_seconds: auth::SESSION_SECONDS })
    }

    async fn logout(&self, session_token: &str) -> Result<(), AppError> {
        self.store.delete_session(&auth::token_hash(session_token)).await.map_err(internal)
    }

    async fn session(&self, user: &CurrentUser, _lang: Lang) -> Result<SessionView, AppError> {
        Ok(SessionView {
            username: user.username.clone(),
            language: user.language,
            model_label: self.model_label.clone(),
            model_is_demo: self.model_is_demo,
            admin: user.admin,
        })
    }

    async fn set_language(&self, user: &CurrentUser, language: Option<Lang>) -> Result<(), AppError> {
        self.store.set_language(user.id, language.map(Lang::code)).await.map_err(internal)
    }
}
