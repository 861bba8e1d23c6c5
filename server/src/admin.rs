//! The accounts page's service (`AdminBackend`): admins list, add and change accounts and end
//! their sessions. Every call checks the caller's role here, on the server.

use app::backend::{AdminBackend, CurrentUser};
use app::error::AppError;
use app::i18n::Text;
use app::model::{AccountView, DeliveryView, WebhookCreated, WebhookView, WebhooksView};
use async_trait::async_trait;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use crate::failures::internal;
use crate::names;
use crate::store::{Role, Store, StoreError, EVENT_KINDS};
use crate::webhooks::sign;
use crate::webhooks::target::{self, OwnAddress, TargetError};

pub struct AdminService {
    store: Store,
    /// Where this server listens, once it does, and its public origin: no webhook may point there.
    listen: Arc<OnceLock<SocketAddr>>,
    public_origin: Option<String>,
    /// Told when an account's sessions end, so that their open event streams end too.
    session_ends: crate::events::SessionEnds,
}

impl AdminService {
    pub fn new(store: Store) -> AdminService {
        AdminService { store, listen: Arc::default(), public_origin: None, session_ends: Default::default() }
    }

    /// Where it says that sessions ended (their open streams end with them).
    pub fn with_events(mut self, events: crate::events::ConversationEvents) -> AdminService {
        self.session_ends = crate::events::SessionEnds::new(events);
        self
    }

    pub fn with_webhook_targets(mut self, listen: Arc<OnceLock<SocketAddr>>, public_origin: Option<String>) -> Self {
        self.listen = listen;
        self.public_origin = public_origin;
        self
    }

    fn own_address(&self) -> OwnAddress {
        OwnAddress { listen: self.listen.get().copied(), public_origin: self.public_origin.clone() }
    }
}

/// A webhook's URL refused, as the reader's sentence.
pub fn target_sentence(error: TargetError) -> Text {
    match error {
        TargetError::Malformed => Text::ErrorWebhookUrl,
        TargetError::NotHttp => Text::ErrorWebhookScheme,
        TargetError::NoHost => Text::ErrorWebhookHost,
        TargetError::Userinfo => Text::ErrorWebhookUserinfo,
        TargetError::ThisServer => Text::ErrorWebhookSelf,
    }
}

/// The events asked for, each a known kind, in the catalogue's order, at least one.
pub fn checked_events(events: &[String]) -> Result<Vec<&'static str>, Text> {
    if events.iter().any(|kind| !EVENT_KINDS.contains(&kind.as_str())) {
        return Err(Text::ErrorWebhookEvents);
    }
    let chosen: Vec<&'static str> = EVENT_KINDS.into_iter().filter(|kind| events.iter().any(|e| e == kind)).collect();
    if chosen.is_empty() {
        return Err(Text::ErrorWebhookEvents);
    }
    Ok(chosen)
}

/// A secret given with a new webhook: `whsec_` and 24 to 64 bytes of base64.
pub fn checked_secret(secret: &str) -> Result<String, Text> {
    use base64::Engine;
    let secret = secret.trim();
    let key = secret
        .strip_prefix(sign::PREFIX)
        .and_then(|encoded| base64::engine::general_purpose::STANDARD.decode(encoded).ok());
    match key {
        Some(key) if (24..=64).contains(&key.len()) => Ok(secret.to_string()),
        _ => Err(Text::ErrorWebhookSecret),
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
        self.session_ends.ended(account);
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
        self.session_ends.ended(account);
        Ok(())
    }

    async fn webhooks(&self, user: &CurrentUser) -> Result<WebhooksView, AppError> {
        admin_only(user)?;
        let webhooks = self.store.webhooks().await.map_err(internal)?;
        let deliveries = self.store.recent_deliveries(100).await.map_err(internal)?;
        Ok(WebhooksView {
            webhooks: webhooks
                .into_iter()
                .map(|webhook| WebhookView {
                    id: webhook.id,
                    events: webhook.kinds().map(String::from).collect(),
                    secret_masked: sign::masked(&webhook.secret),
                    url: webhook.url,
                    active: webhook.active,
                })
                .collect(),
            deliveries: deliveries
                .into_iter()
                .map(|delivery| DeliveryView {
                    id: delivery.id,
                    event_id: delivery.event_id,
                    url: delivery.url,
                    kind: delivery.kind,
                    state: delivery.state.as_str().to_string(),
                    attempts: delivery.attempts,
                    last_status: delivery.last_status,
                    last_error: delivery.last_error,
                    created_at: delivery.created_at,
                    resent: delivery.resent_from.is_some(),
                })
                .collect(),
            new_secret: sign::new_secret(),
            kinds: EVENT_KINDS.iter().map(|kind| kind.to_string()).collect(),
        })
    }

    async fn add_webhook(
        &self,
        user: &CurrentUser,
        url: &str,
        events: Vec<String>,
        secret: Option<String>,
    ) -> Result<WebhookCreated, AppError> {
        admin_only(user)?;
        let url = target::check(url, &self.own_address()).map_err(|error| AppError::Invalid(target_sentence(error)))?;
        let events = checked_events(&events).map_err(AppError::Invalid)?;
        let secret = match secret {
            Some(secret) => checked_secret(&secret).map_err(AppError::Invalid)?,
            None => sign::new_secret(),
        };
        let id = self.store.add_webhook(url.as_str(), &events, &secret).await.map_err(internal)?;
        tracing::info!(by = user.id, webhook = id, url = %url.origin().ascii_serialization(), "webhook added");
        Ok(WebhookCreated { id, secret })
    }

    async fn remove_webhook(&self, user: &CurrentUser, webhook: i64) -> Result<(), AppError> {
        admin_only(user)?;
        if !self.store.remove_webhook(webhook).await.map_err(internal)? {
            return Err(AppError::NotFound);
        }
        tracing::info!(by = user.id, webhook, "webhook removed");
        Ok(())
    }

    async fn resend_delivery(&self, user: &CurrentUser, delivery: i64) -> Result<(), AppError> {
        admin_only(user)?;
        if self.store.resend_delivery(delivery).await.map_err(internal)?.is_none() {
            return Err(AppError::NotFound);
        }
        Ok(())
    }
}
