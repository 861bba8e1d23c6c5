//! The `AuthBackend` seam: signing in and out, the session as the header shows it, and the
//! reader's language. Passwords and tokens themselves are `auth`'s business.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

use async_trait::async_trait;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use app::backend::{AuthBackend, ClientInfo, CurrentUser, NewSession};
use app::error::AppError;
use app::i18n::{Lang, Text};
use app::model::{MailSettingsView, SessionItemView, SessionView};

use crate::failures::internal;
use crate::store::{session_handle, MailSettings, Store};
use crate::{auth, names};

#[derive(Clone)]
pub struct AccountService {
    store: Store,
    model_label: String,
    model_is_demo: bool,
    attempts: Arc<LoginLimits>,
    session_seconds: i64,
    /// `--smtp-url` is set: the account page says whether mail is sent at all.
    mail_available: bool,
    /// Told when sessions end, so that their open event streams end too.
    session_ends: crate::events::SessionEnds,
}

/// Sign-in attempts per user name and per client address, each a rate per minute (the name's
/// as configured, the address's three times that, since several people may share one). Every
/// attempt counts, before the password is checked: a guess costs the same as a good login.
///
/// Anyone can use up a name's attempts and so lock its owner out. An attempt from a browser that
/// signed in as that account before (its device cookie, OWASP's "device cookies") therefore counts
/// against that device alone, at the name's rate, so a stolen cookie is no unlimited oracle either.
pub struct LoginLimits {
    names: DefaultKeyedRateLimiter<String>,
    addresses: DefaultKeyedRateLimiter<IpAddr>,
    devices: DefaultKeyedRateLimiter<String>,
}

impl LoginLimits {
    pub fn per_minute(per_name: NonZeroU32) -> Self {
        let per_address = per_name.saturating_mul(NonZeroU32::new(3).unwrap_or(NonZeroU32::MIN));
        LoginLimits {
            names: RateLimiter::keyed(Quota::per_minute(per_name)),
            addresses: RateLimiter::keyed(Quota::per_minute(per_address)),
            devices: RateLimiter::keyed(Quota::per_minute(per_name)),
        }
    }

    /// Counts one attempt; false when it is over its limit: the device's, for an attempt from a
    /// known device (its token's hash), else the name's (by its key) or the address's.
    fn attempt(&self, name_key: &str, client: Option<IpAddr>, device: Option<&str>) -> bool {
        let allowed = match device {
            Some(device) => self.devices.check_key(&device.to_string()).is_ok(),
            None => {
                let name_ok = self.names.check_key(&name_key.to_string()).is_ok();
                let address_ok = client.is_none_or(|client| self.addresses.check_key(&address_key(client)).is_ok());
                name_ok && address_ok
            }
        };
        // Forget keys whose limit has recovered, so the maps do not grow with every name tried.
        self.names.retain_recent();
        self.addresses.retain_recent();
        self.devices.retain_recent();
        allowed
    }
}

/// The key an address's attempts count under: an IPv4 address (an IPv4-mapped IPv6 one read as
/// IPv4), or an IPv6 address's /64. One host is given a whole /64 and picks any address in it,
/// so counting each address would give it 2^64 budgets.
fn address_key(client: IpAddr) -> IpAddr {
    match client.to_canonical() {
        IpAddr::V6(v6) => {
            let segments = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(segments[0], segments[1], segments[2], segments[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

impl AccountService {
    pub fn new(store: Store, model_label: String, model_is_demo: bool, limits: Arc<LoginLimits>) -> Self {
        // Made now, not by the first sign-in with an unknown name, which would take twice as long.
        auth::dummy_hash();
        AccountService {
            store,
            model_label,
            model_is_demo,
            attempts: limits,
            session_seconds: auth::SESSION_SECONDS,
            mail_available: false,
            session_ends: Default::default(),
        }
    }

    /// Where it says that sessions ended (their open streams end with them).
    pub fn with_events(mut self, events: crate::events::ConversationEvents) -> Self {
        self.session_ends = crate::events::SessionEnds::new(events);
        self
    }

    pub fn with_mail(mut self, available: bool) -> Self {
        self.mail_available = available;
        self
    }

    /// How long a session lasts from its sign-in.
    pub fn with_session_length(mut self, length: std::time::Duration) -> Self {
        self.session_seconds = i64::try_from(length.as_secs()).unwrap_or(auth::SESSION_SECONDS);
        self
    }
}

#[async_trait]
impl AuthBackend for AccountService {
    async fn login(&self, username: &str, password: &str, client: &ClientInfo) -> Result<NewSession, AppError> {
        let username = username.trim();
        let user = self.store.user_by_name(username).await.map_err(internal)?;
        // A device cookie counts only for the account it was given to: another user's, a forged
        // or an expired one is no cookie at all.
        let device = match (&client.device, &user) {
            (Some(token), Some(user)) => {
                let hash = auth::token_hash(token);
                let owner = self.store.device_owner(&hash).await.map_err(internal)?;
                (owner == Some(user.id)).then_some(hash)
            }
            _ => None,
        };
        if !self.attempts.attempt(&names::key(username), client.address, device.as_deref()) {
            tracing::warn!(%username, client = ?client.address, device = device.is_some(), "sign-in attempts over the limit");
            return Err(AppError::TooManyAttempts);
        }
        // Argon2 runs for a name without an account too (against a dummy hash): the answer's time
        // does not tell whether the name exists. On a blocking thread: its tens of milliseconds
        // of CPU would hold up the other requests on this worker thread.
        let (password, hash) = (password.to_string(), user.as_ref().map(|user| user.password_hash.clone()));
        let verified = tokio::task::spawn_blocking(move || auth::verify_password_or_dummy(&password, hash.as_deref()))
            .await
            .map_err(|error| {
                tracing::error!(%error, "the password check failed");
                AppError::Internal
            })?;
        let Some(user) = user.filter(|_| verified) else {
            return Err(AppError::BadCredentials);
        };
        let token = auth::new_token();
        let expires_at = db::now() + self.session_seconds;
        let hash = auth::token_hash(&token);
        self.store.create_session(&hash, user.id, expires_at, client.agent.as_deref()).await.map_err(internal)?;
        // A new device token each time, replacing the one the browser had.
        let device_token = auth::new_token();
        let device_expires = db::now() + auth::DEVICE_SECONDS;
        self.store
            .add_device(&auth::token_hash(&device_token), user.id, device_expires, device.as_deref())
            .await
            .map_err(internal)?;
        Ok(NewSession {
            token,
            max_age_seconds: self.session_seconds,
            device_token: Some(device_token),
            device_max_age_seconds: auth::DEVICE_SECONDS,
        })
    }

    async fn sessions(
        &self,
        user: &CurrentUser,
        current_token: Option<&str>,
        lang: Lang,
    ) -> Result<Vec<SessionItemView>, AppError> {
        let current = current_token.map(auth::token_hash);
        let now = db::now();
        let sessions = self.store.sessions_of(user.id).await.map_err(internal)?;
        Ok(sessions
            .into_iter()
            .map(|session| SessionItemView {
                current: current.as_deref().is_some_and(|hash| session_handle(hash) == session.handle),
                // The languages put the time in different places: "3 hours ago", "vor 3 Stunden".
                began: lang.t(Text::Ago).replace("{}", &crate::chat::waited(now - session.created_at, lang)),
                ends: lang.t(Text::InTime).replace("{}", &crate::chat::waited(session.expires_at - now, lang)),
                agent: session.user_agent,
                handle: session.handle,
            })
            .collect())
    }

    async fn end_session(&self, user: &CurrentUser, handle: &str) -> Result<(), AppError> {
        if !self.store.end_session(user.id, handle.trim()).await.map_err(internal)? {
            return Err(AppError::NotFound);
        }
        self.session_ends.ended(user.id);
        Ok(())
    }

    async fn end_other_sessions(&self, user: &CurrentUser, current_token: &str) -> Result<(), AppError> {
        self.store.end_other_sessions(user.id, &auth::token_hash(current_token)).await.map_err(internal)?;
        self.session_ends.ended(user.id);
        Ok(())
    }

    async fn logout(&self, session_token: &str) -> Result<(), AppError> {
        if let Some(user) = self.store.delete_session(&auth::token_hash(session_token)).await.map_err(internal)? {
            self.session_ends.ended(user);
        }
        Ok(())
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

    async fn mail_settings(&self, user: &CurrentUser) -> Result<MailSettingsView, AppError> {
        let settings = self.store.mail_settings(user.id).await.map_err(internal)?;
        Ok(MailSettingsView {
            address: settings.address.unwrap_or_default(),
            notify: settings.notify,
            available: self.mail_available,
        })
    }

    async fn set_mail(&self, user: &CurrentUser, address: &str, notify: bool) -> Result<(), AppError> {
        let address = match address.trim() {
            "" => None,
            text => Some(crate::mail::checked_address(text).ok_or(AppError::Invalid(Text::ErrorMailAddress))?),
        };
        if notify && address.is_none() {
            return Err(AppError::Invalid(Text::ErrorMailAddressMissing));
        }
        self.store.set_mail_settings(user.id, &MailSettings { address, notify }).await.map_err(internal)?;
        tracing::info!(user = user.id, notify, "e-mail settings changed");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_host_gets_one_budget_for_its_whole_64() {
        let limits = LoginLimits::per_minute(NonZeroU32::new(1).unwrap());
        // Three attempts an address a minute; each from another address of one /64.
        let host = |n: u16| IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 7, 1, n, n, n, n));
        let allowed: Vec<bool> = (0..4).map(|n| limits.attempt(&format!("name{n}"), Some(host(n)), None)).collect();
        assert_eq!(allowed, [true, true, true, false], "one /64, one budget");
        // Another /64 has its own.
        let other = IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 7, 2, 0, 0, 0, 1));
        assert!(limits.attempt("name9", Some(other), None));
        // An IPv4-mapped address counts as the IPv4 one.
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(address_key(mapped), v4);
        assert_eq!(address_key(v4), v4);
    }
}
