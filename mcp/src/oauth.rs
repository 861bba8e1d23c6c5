//! OAuth 2.1 for HTTP MCP servers, as the MCP authorization spec has it, through rmcp's `auth`:
//! the server's 401 and its `WWW-Authenticate` lead to its protected-resource metadata, that to
//! the authorization server's metadata; the client is the configured one or registers itself
//! (dynamic client registration); the code comes back with PKCE (S256) and the resource
//! indicator; an access token that ran out is refreshed, and a refresh the authorization server
//! refuses forgets the sign-in (the owner connects again).
//!
//! This crate keeps nothing itself: tokens go to a [`TokenVault`] (the server's, encrypted at
//! rest), and what the callback needs (the PKCE verifier, the client) goes back to the caller as
//! an opaque text to keep server-side until the callback ([`Started::pending`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationMetadata, CredentialRefreshGuard, CredentialStore,
    InMemoryStateStore, OAuthClientConfig, StateStore, StoredAuthorizationState, StoredCredentials,
};
use serde::{Deserialize, Serialize};

use crate::config::{OAuthConfig, OAuthMode, ServerConfig, Transport};

/// How long discovery, registration or a token exchange may take.
const OAUTH_TIMEOUT: Duration = Duration::from_secs(30);

/// The name a registered client goes by at the authorization server.
const CLIENT_NAME: &str = "Tourguide";

/// Whose sign-in a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenOwner {
    /// The one sign-in of a shared server, made by an admin.
    Shared,
    /// A user's own account on a per-user server.
    User(i64),
}

impl TokenOwner {
    /// Whose token a call of `user` on a server in `mode` uses.
    pub fn of(mode: OAuthMode, user: i64) -> TokenOwner {
        match mode {
            OAuthMode::Shared => TokenOwner::Shared,
            OAuthMode::PerUser => TokenOwner::User(user),
        }
    }
}

/// Where the tokens of OAuth servers are kept, per server and owner, as opaque text (the server
/// encrypts it at rest). `Err` is a sentence for the log.
#[async_trait]
pub trait TokenVault: Send + Sync + 'static {
    async fn load(&self, server: &str, owner: TokenOwner) -> Result<Option<String>, String>;
    async fn save(&self, server: &str, owner: TokenOwner, credentials: &str) -> Result<(), String>;
    /// Forgets the sign-in; true when there was one.
    async fn clear(&self, server: &str, owner: TokenOwner) -> Result<bool, String>;
    /// A user who connected this per-user server: its tools are listed with their sign-in.
    async fn any_user(&self, server: &str) -> Result<Option<i64>, String>;
    /// The client registered for `server` with callback `redirect_uri`, as opaque text.
    async fn load_client(&self, server: &str, redirect_uri: &str) -> Result<Option<String>, String>;
    async fn save_client(&self, server: &str, redirect_uri: &str, client: &str) -> Result<(), String>;
}

/// Why a sign-in could not be started or finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthProblem {
    /// The server or its authorization server could not be reached, or published no usable
    /// metadata (or no PKCE with S256).
    Discovery,
    /// The client could not register, and none is configured.
    Registration,
    /// The authorization server refused the code (wrong, used or expired) or the verifier.
    Exchange,
    /// The answer names another authorization server than the one asked.
    IssuerMismatch,
    /// The tokens could not be kept.
    Storage,
    /// The server does not sign in with OAuth.
    NotOAuth,
}

/// A failed step: its kind, and what the library said (for the log, through [`crate::redact`]).
#[derive(Debug)]
pub struct OAuthFailure {
    pub problem: OAuthProblem,
    pub detail: String,
}

impl OAuthFailure {
    fn new(problem: OAuthProblem, detail: impl std::fmt::Display) -> OAuthFailure {
        OAuthFailure { problem, detail: detail.to_string() }
    }
}

/// A sign-in begun: where to send the browser, the `state` the callback comes back with, and
/// what the callback needs, to keep server-side (it holds the PKCE verifier) and hand to
/// [`finish`].
pub struct Started {
    pub url: String,
    pub state: String,
    pub pending: String,
}

#[derive(Serialize, Deserialize)]
struct Pending {
    state: StoredAuthorizationState,
    client_id: String,
    client_secret: Option<String>,
    redirect_uri: String,
    /// The authorization server found at the start: the code goes to it and no other.
    authorization_server: AuthorizationMetadata,
}

/// The authorization server a sign-in was made with, kept with the sealed state and then with
/// the tokens. Every later step (the code's exchange, each refresh) goes to it: a later lookup
/// that names another issuer or token endpoint is refused, so a server cannot name the real
/// authorization server at Connect and one of its own later, to be sent the code with its PKCE
/// verifier, a refresh token, or the configured client's secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pinned {
    issuer: Option<String>,
    token_endpoint: String,
}

impl Pinned {
    fn of(metadata: &AuthorizationMetadata) -> Pinned {
        Pinned { issuer: metadata.issuer.clone(), token_endpoint: metadata.token_endpoint.clone() }
    }

    /// `Err` when `found` (a lookup made now) is another authorization server than this one.
    fn check(&self, found: &AuthorizationMetadata) -> Result<(), OAuthFailure> {
        let now = Pinned::of(found);
        if now == *self {
            return Ok(());
        }
        Err(OAuthFailure::new(
            OAuthProblem::IssuerMismatch,
            format!(
                "the server now names the authorization server {:?} (token endpoint {}), not {:?} ({}) it was signed in with",
                now.issuer, now.token_endpoint, self.issuer, self.token_endpoint
            ),
        ))
    }
}

/// What the vault keeps for one sign-in: rmcp's credentials and the authorization server they
/// came from (none for a sign-in kept before it was recorded: its issuer, which rmcp keeps, is
/// held to instead, and the server found then is recorded at the next refresh).
#[derive(Serialize, Deserialize)]
struct Kept {
    credentials: StoredCredentials,
    authorization_server: Option<Pinned>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum KeptText {
    Kept(Kept),
    Plain(StoredCredentials),
}

fn read_kept(text: &str) -> Result<Kept, serde_json::Error> {
    Ok(match serde_json::from_str(text)? {
        KeptText::Kept(kept) => kept,
        KeptText::Plain(credentials) => Kept { credentials, authorization_server: None },
    })
}

/// A client registered with an authorization server, kept (sealed, by the caller's vault) per
/// server and callback address, so that Connect registers once instead of at every click.
#[derive(Serialize, Deserialize)]
struct Registered {
    client_id: String,
    client_secret: Option<String>,
    /// The authorization server it is registered with: only there is it reused.
    authorization_server: Pinned,
}

/// One lock per server and owner, so two refreshes of one sign-in in this process do not race
/// (a rotating refresh token would be spent twice).
#[derive(Default)]
pub(crate) struct RefreshLocks(Mutex<HashMap<(String, TokenOwner), RefreshLock>>);

type RefreshLock = Arc<tokio::sync::Mutex<()>>;

impl RefreshLocks {
    fn of(&self, server: &str, owner: TokenOwner) -> RefreshLock {
        let mut locks = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        locks.entry((server.to_string(), owner)).or_default().clone()
    }
}

/// What signs one owner's requests to one server in.
#[derive(Clone)]
pub(crate) struct Access {
    pub vault: Arc<dyn TokenVault>,
    pub owner: TokenOwner,
    pub locks: Arc<RefreshLocks>,
    /// Told when a sign-in is forgotten here (its refresh was refused).
    pub changed: Arc<tokio::sync::Notify>,
}

/// rmcp's credential store over the vault, for one server and owner.
struct VaultCredentials {
    vault: Arc<dyn TokenVault>,
    server: String,
    owner: TokenOwner,
    lock: RefreshLock,
    changed: Arc<tokio::sync::Notify>,
    /// Kept beside every credentials saved.
    pinned: Option<Pinned>,
}

impl VaultCredentials {
    async fn load_kept(&self) -> Result<Option<Kept>, AuthError> {
        match self.vault.load(&self.server, self.owner).await.map_err(store_error)? {
            None => Ok(None),
            Some(text) => read_kept(&text).map(Some).map_err(store_error),
        }
    }
}

fn store_error(error: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

#[async_trait]
impl CredentialStore for VaultCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.load_kept().await?.map(|kept| kept.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let kept = Kept { credentials, authorization_server: self.pinned.clone() };
        let text = serde_json::to_string(&kept).map_err(store_error)?;
        self.vault.save(&self.server, self.owner, &text).await.map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.vault.clear(&self.server, self.owner).await.map_err(store_error)?;
        self.changed.notify_one();
        Ok(())
    }

    /// A refresh token the authorization server refused will not work again: the owner is no
    /// longer connected and signs in again.
    async fn on_refresh_token_rejected(&self, _credentials: &StoredCredentials) -> Result<(), AuthError> {
        tracing::warn!(server = %self.server, "the authorization server refused the refresh token; the sign-in is forgotten");
        self.clear().await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        Ok(Some(CredentialRefreshGuard::new(self.lock.clone().lock_owned().await)))
    }
}

fn oauth_of(config: &ServerConfig) -> Result<(&str, &OAuthConfig), OAuthFailure> {
    match (&config.transport, &config.oauth) {
        (Transport::Http { url, .. }, Some(oauth)) => Ok((url, oauth)),
        _ => Err(OAuthFailure::new(OAuthProblem::NotOAuth, format!("{} does not sign in with OAuth", config.name))),
    }
}

async fn within<T>(step: impl std::future::Future<Output = Result<T, OAuthFailure>>) -> Result<T, OAuthFailure> {
    tokio::time::timeout(OAUTH_TIMEOUT, step).await.unwrap_or_else(|_| {
        Err(OAuthFailure::new(OAuthProblem::Discovery, format!("no answer within {} s", OAUTH_TIMEOUT.as_secs())))
    })
}

/// An HTTP client that follows no redirect: a bearer token goes to the address configured and
/// nowhere else.
fn http_client() -> Result<reqwest::Client, OAuthFailure> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| OAuthFailure::new(OAuthProblem::Discovery, error))
}

/// What the server says to a request without a token: the `WWW-Authenticate` of its 401, which
/// names its protected-resource metadata (and maybe the scope it wants).
async fn challenge(url: &str) -> Option<String> {
    const PROBE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"tourguide","version":"0"}}}"#;
    let response = http_client()
        .ok()?
        .post(url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, text/event-stream")
        .body(PROBE)
        .send()
        .await
        .ok()?;
    if response.status() != http::StatusCode::UNAUTHORIZED {
        return None;
    }
    response.headers().get(http::header::WWW_AUTHENTICATE)?.to_str().ok().map(str::to_string)
}

/// A manager that found the server's authorization server: from the 401's challenge, else the
/// well-known metadata addresses (rmcp's discovery, which also records the resource indicator);
/// and the metadata it found. What the server's metadata names (the authorization server, its
/// registration and token endpoints) may be at a loopback or private address only when the
/// server's own URL is of the same kind, or the configuration allows private ones
/// (`oauthPrivateAddresses`); link-local and metadata addresses never (rmcp's address policy,
/// checked before each request and on each name's addresses).
async fn discovered(
    url: &str,
    oauth: &OAuthConfig,
) -> Result<(AuthorizationManager, AuthorizationMetadata), OAuthFailure> {
    let discovery = |error: AuthError| OAuthFailure::new(OAuthProblem::Discovery, error);
    let mut manager = if oauth.private_addresses {
        AuthorizationManager::new_allowing_private_addresses(url).await
    } else {
        AuthorizationManager::new(url).await
    }
    .map_err(discovery)?;
    let challenge = challenge(url).await;
    let resolution = manager.resolve_metadata_from_challenge(challenge.as_deref()).await.map_err(discovery)?;
    manager.set_metadata(resolution.metadata.clone());
    Ok((manager, resolution.metadata))
}

/// The client this sign-in uses: the configured one; else the one registered before for this
/// server and callback address, if it is registered with the authorization server found now;
/// else one registered now, and kept for the next time.
async fn client_for(
    config: &ServerConfig,
    oauth: &OAuthConfig,
    manager: &mut AuthorizationManager,
    found: &AuthorizationMetadata,
    redirect_uri: &str,
    scopes: &[String],
    vault: Option<&Arc<dyn TokenVault>>,
) -> Result<OAuthClientConfig, OAuthFailure> {
    let registration = |error: AuthError| OAuthFailure::new(OAuthProblem::Registration, error);
    // A client known beforehand (configured, or registered at an earlier Connect), set up as is.
    let mut known = |client_id: String, secret: Option<String>| {
        let mut client = OAuthClientConfig::new(client_id, redirect_uri).with_scopes(scopes.to_vec());
        if let Some(secret) = secret {
            client = client.with_client_secret(secret);
        }
        manager.configure_client(client.clone()).map_err(registration).map(|()| client)
    };
    if let Some(client_id) = &oauth.client_id {
        return known(client_id.clone(), oauth.client_secret.clone());
    }
    let here = Pinned::of(found);
    if let Some(vault) = vault {
        let kept = vault.load_client(&config.name, redirect_uri).await.unwrap_or_else(|error| {
            tracing::warn!(server = %config.name, %error, "a registered OAuth client cannot be read; registering again");
            None
        });
        let registered = kept.and_then(|text| serde_json::from_str::<Registered>(&text).ok());
        if let Some(registered) = registered.filter(|registered| registered.authorization_server == here) {
            return known(registered.client_id, registered.client_secret);
        }
    }
    let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let client = manager.register_client(CLIENT_NAME, redirect_uri, &scope_refs).await.map_err(registration)?;
    if let Some(vault) = vault {
        let registered = Registered {
            client_id: client.client_id.clone(),
            client_secret: client.client_secret.clone(),
            authorization_server: here,
        };
        let text =
            serde_json::to_string(&registered).map_err(|error| OAuthFailure::new(OAuthProblem::Storage, error))?;
        if let Err(error) = vault.save_client(&config.name, redirect_uri, &text).await {
            // The sign-in goes on with the client; the next Connect registers again.
            tracing::warn!(server = %config.name, %error, "a registered OAuth client could not be kept");
        }
    }
    Ok(client)
}

/// Begins a sign-in: discovery, the client (configured, or registered now), the authorization
/// URL with its PKCE challenge, resource indicator and `state`.
pub(crate) async fn begin(
    config: &ServerConfig,
    redirect_uri: &str,
    vault: Option<&Arc<dyn TokenVault>>,
) -> Result<Started, OAuthFailure> {
    let (url, oauth) = oauth_of(config)?;
    within(async {
        let (mut manager, found) = discovered(url, oauth).await?;
        let scopes = manager.select_initial_scopes(&[]).await;
        let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let client = client_for(config, oauth, &mut manager, &found, redirect_uri, &scopes, vault).await?;
        let states = InMemoryStateStore::new();
        manager.set_state_store(states.clone());
        let authorization_url = manager
            .get_authorization_url(&scope_refs)
            .await
            .map_err(|error| OAuthFailure::new(OAuthProblem::Discovery, error))?;
        let state = url::Url::parse(&authorization_url)
            .ok()
            .and_then(|parsed| {
                parsed.query_pairs().find(|(key, _)| key == "state").map(|(_, value)| value.into_owned())
            })
            .ok_or_else(|| OAuthFailure::new(OAuthProblem::Discovery, "the authorization URL carries no state"))?;
        let stored = states
            .load(&state)
            .await
            .ok()
            .flatten()
            .ok_or_else(|| OAuthFailure::new(OAuthProblem::Discovery, "the authorization state was not kept"))?;
        let pending = Pending {
            state: stored,
            client_id: client.client_id,
            client_secret: client.client_secret,
            redirect_uri: redirect_uri.to_string(),
            authorization_server: found,
        };
        let pending =
            serde_json::to_string(&pending).map_err(|error| OAuthFailure::new(OAuthProblem::Storage, error))?;
        Ok(Started { url: authorization_url, state, pending })
    })
    .await
}

/// Finishes a sign-in begun by [`begin`] (`pending` is its [`Started::pending`]): exchanges the
/// code with the PKCE verifier and the resource indicator, checks the issuer when the callback
/// names one, and keeps the tokens in the vault for `owner`.
pub(crate) async fn finish(
    config: &ServerConfig,
    access: &Access,
    pending: &str,
    code: &str,
    issuer: Option<&str>,
) -> Result<(), OAuthFailure> {
    let (url, oauth) = oauth_of(config)?;
    let pending: Pending =
        serde_json::from_str(pending).map_err(|error| OAuthFailure::new(OAuthProblem::Exchange, error))?;
    within(async {
        let (mut manager, found) = discovered(url, oauth).await?;
        // The code and its verifier go where the sign-in began, or nowhere.
        let pinned = Pinned::of(&pending.authorization_server);
        pinned.check(&found)?;
        manager.set_metadata(pending.authorization_server.clone());
        let mut client = OAuthClientConfig::new(pending.client_id.clone(), pending.redirect_uri.clone());
        if let Some(secret) = &pending.client_secret {
            client = client.with_client_secret(secret.clone());
        }
        manager.configure_client(client).map_err(|error| OAuthFailure::new(OAuthProblem::Exchange, error))?;
        let csrf = pending.state.csrf_token.clone();
        let states = InMemoryStateStore::new();
        states.save(&csrf, pending.state).await.map_err(|error| OAuthFailure::new(OAuthProblem::Storage, error))?;
        manager.set_state_store(states);
        manager.set_credential_store(credentials(config, access, Some(pinned)));
        manager.exchange_code_for_token_with_issuer(code, &csrf, issuer).await.map_err(|error| {
            let problem = match error {
                AuthError::AuthorizationServerMismatch { .. } | AuthError::AuthorizationServerMissingIssuer { .. } => {
                    OAuthProblem::IssuerMismatch
                }
                AuthError::CredentialStoreError(_) => OAuthProblem::Storage,
                _ => OAuthProblem::Exchange,
            };
            OAuthFailure::new(problem, error)
        })?;
        Ok(())
    })
    .await
}

fn credentials(config: &ServerConfig, access: &Access, pinned: Option<Pinned>) -> VaultCredentials {
    VaultCredentials {
        vault: access.vault.clone(),
        server: config.name.clone(),
        owner: access.owner,
        lock: access.locks.of(&config.name, access.owner),
        changed: access.changed.clone(),
        pinned,
    }
}

/// Why an owner's requests cannot be signed.
pub(crate) enum Unsigned {
    /// The owner has not connected (or their sign-in was forgotten).
    NotConnected,
    Failed(OAuthFailure),
}

/// An HTTP client for the MCP transport that signs each request with the owner's access token,
/// refreshes it when it ran out (or the server refused it once), and keeps what it got.
pub(crate) async fn authorized_client(
    config: &ServerConfig,
    access: &Access,
) -> Result<AuthClient<reqwest::Client>, Unsigned> {
    let (url, oauth) = oauth_of(config).map_err(Unsigned::Failed)?;
    let mut store = credentials(config, access, None);
    let kept = store
        .load_kept()
        .await
        .map_err(|error| Unsigned::Failed(OAuthFailure::new(OAuthProblem::Storage, error)))?
        .filter(|kept| kept.credentials.token_response.is_some())
        .ok_or(Unsigned::NotConnected)?;
    let stored = kept.credentials;
    let (mut manager, found) = within(discovered(url, oauth)).await.map_err(Unsigned::Failed)?;
    // A refresh (and its token, and a configured client's secret) goes only to the authorization
    // server the sign-in was made with.
    let pinned = match kept.authorization_server {
        Some(pinned) => {
            pinned.check(&found).map_err(Unsigned::Failed)?;
            pinned
        }
        None => {
            if let (Some(was), Some(now)) = (&stored.issuer, &found.issuer) {
                if was != now {
                    let detail = format!("the server now names the issuer {now:?}, not {was:?} it was signed in with");
                    return Err(Unsigned::Failed(OAuthFailure::new(OAuthProblem::IssuerMismatch, detail)));
                }
            }
            Pinned::of(&found)
        }
    };
    store.pinned = Some(pinned);
    // Refreshing needs the client the tokens were issued to; its secret only when it is the
    // configured one (a registered public client has none).
    let mut client = OAuthClientConfig::new(stored.client_id.clone(), url);
    if oauth.client_id.as_deref() == Some(stored.client_id.as_str()) {
        if let Some(secret) = &oauth.client_secret {
            client = client.with_client_secret(secret.clone());
        }
    }
    manager
        .configure_client(client)
        .map_err(|error| Unsigned::Failed(OAuthFailure::new(OAuthProblem::Discovery, error)))?;
    manager.set_credential_store(store);
    Ok(AuthClient::new(http_client().map_err(Unsigned::Failed)?, manager))
}
