//! The Tourguide server: configuration, database, chat service, worker, and the axum router that
//! serves the Leptos app. `main.rs` only parses the configuration and calls [`serve`].

pub mod account;
pub mod admin;
pub mod assets;
pub mod attachment_route;
pub mod audit;
pub mod audit_log;
pub mod auth;
mod auto_approval;
pub mod chat;
pub mod cli;
pub mod config;
pub mod continue_intent;
pub mod conversation;
pub mod corrections;
pub mod delivery_settings;
pub mod drafts;
pub mod edge;
pub mod events;
mod failures;
pub mod handback;
pub mod headers;
pub mod health;
pub mod html_tags;
pub mod inbox;
pub mod input_route;
pub mod live_html;
pub mod mail;
pub mod markdown;
pub mod mcp_oauth;
pub mod names;
pub mod pages;
pub mod poll_route;
pub mod proxies;
pub mod request_refusal;
mod route_reply;
mod session_watch;
pub mod skills;
pub mod store;
pub mod telemetry;
pub mod token_key;
pub mod toolbox;
pub mod turn;
pub mod waiting_events;
pub mod webhooks;
pub mod worker;

use std::net::SocketAddr;
use std::sync::Arc;

use app::backend::Backends;
use app::{shell, App};
use axum::extract::FromRef;
use axum::Router;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list_with_exclusions, AxumRouteListing, LeptosRoutes};
use std::time::Duration;

use runtime::{ModelProvider, Runtime, RuntimeSettings, ToolRegistry};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use content::store::ContentStore;
use db::Db;

use crate::account::AccountService;
use crate::chat::ChatService;
use crate::config::Config;
use crate::drafts::Drafts;
use crate::events::ConversationEvents;
use crate::pages::PagesService;
use crate::skills::SkillCatalogue;
use crate::store::{Store, StoreError};
use crate::toolbox::ToolsService;
use crate::turn::Turns;
use crate::worker::{Worker, WorkerHandle};

/// Requests larger than this are refused before any handler reads them.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// What the routes share, behind one `Arc`: leptos_axum puts a clone of the router's state in the
/// context of every server function call and page, and cloning the fields one by one (the Leptos
/// options alone hold a dozen shared strings) was about 3 % of a fast poll's CPU. Handlers take
/// the part they need (`State<Store>`, …) through the `FromRef` impls below.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

macro_rules! parts_from_state {
    ($($part:ty => $field:ident),* $(,)?) => {$(
        impl FromRef<AppState> for $part {
            fn from_ref(state: &AppState) -> Self {
                state.$field.clone()
            }
        }
    )*};
}

parts_from_state! {
    LeptosOptions => leptos_options,
    Store => store,
    Arc<ChatService> => chat,
    ConversationEvents => events,
    health::WorkerAlive => worker,
    Arc<assets::SiteAssets> => assets,
    telemetry::MetricsState => metrics,
}

pub struct Shared {
    pub leptos_options: LeptosOptions,
    pub store: Store,
    pub chat: Arc<ChatService>,
    pub events: ConversationEvents,
    pub worker: health::WorkerAlive,
    pub assets: Arc<assets::SiteAssets>,
    pub metrics: telemetry::MetricsState,
    pub headers: Arc<headers::Policy>,
    /// Whose `X-Forwarded-For` names the client (`--trusted-proxies`).
    pub trusted_proxies: Arc<proxies::TrustedProxies>,
    /// Sign-ins to MCP servers that want OAuth (`mcp_oauth`); `None` when none does.
    pub mcp_sign_ins: Option<Arc<mcp_oauth::SignIns>>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Database(#[from] db::DbError),
    #[error("cannot seed the demo site: {0}")]
    Content(#[from] content::store::ContentError),
    #[error("cannot recover interrupted runs: {0}")]
    Runtime(runtime::RuntimeError),
    #[error("cannot listen on {address}: {source}")]
    Bind { address: SocketAddr, source: std::io::Error },
    #[error("another worker already runs on this database ({path}); start this process with --worker off")]
    WorkerRunning { path: String },
    #[error("cannot take the worker lock {path}: {source}")]
    WorkerLock { path: String, source: std::io::Error },
    #[error("cannot set up e-mail: {0}")]
    Mail(lettre::transport::smtp::Error),
    #[error("MCP server \"{0}\" signs in with OAuth: set TOURGUIDE_TOKEN_KEY (32 random bytes as 64 hex digits), which keeps its tokens encrypted")]
    TokenKeyMissing(String),
}

/// A server that is listening (unless it runs with `--web off`); dropping the shutdown sender or
/// calling [`Running::stop`] ends it.
pub struct Running {
    /// Where it listens; `None` for a worker-only process.
    pub address: Option<SocketAddr>,
    pub store: Store,
    pub runtime: Arc<Runtime>,
    shutdown: watch::Sender<bool>,
    server: JoinHandle<()>,
    worker: JoinHandle<()>,
    /// Held while this process runs the worker on a SQLite file (see [`worker_lock`]).
    _worker_lock: Option<std::fs::File>,
}

impl Running {
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        let _ = self.server.await;
        let _ = self.worker.await;
    }

    /// Waits until the server ends (it only ends on shutdown).
    pub async fn wait(self) {
        let _ = self.server.await;
        let _ = self.worker.await;
    }

    pub fn shutdown_sender(&self) -> watch::Sender<bool> {
        self.shutdown.clone()
    }
}

/// The app's routes, generated once per process. Generating them renders the app with every
/// resource held back by a flag that is global to the process (leptos_server's
/// `SuppressResourceLoad`), and a resource that first polls while it is set waits for ever
/// (leptos issue #4773): a server built while another one in the same process was rendering a
/// page (the tests start many) left that page hanging.
pub fn routes() -> &'static [AxumRouteListing] {
    static ROUTES: std::sync::OnceLock<Vec<AxumRouteListing>> = std::sync::OnceLock::new();
    ROUTES.get_or_init(|| {
        // Left out, the poll's endpoint is not registered for its server function.
        let excluded = poll_route::serves_poll().then(|| vec![app::backend::POLL_PATH.to_string()]);
        generate_route_list_with_exclusions(App, excluded)
    })
}

pub fn router(state: AppState, backends: Backends) -> Router {
    let routes = routes().to_vec();
    let options = state.leptos_options.clone();
    let files = state.assets.site_files();
    let site_root = std::path::PathBuf::from(options.site_root.as_ref());
    let static_files = assets::router(&site_root, (*state.assets).clone());
    let policy = state.headers.clone();
    let guard = axum::middleware::from_fn_with_state(
        edge::Edge {
            store: state.store.clone(),
            attachment_limit: state.chat.attachment_limit(),
            headers: policy.clone(),
            proxies: state.trusted_proxies.clone(),
        },
        edge::guard,
    );
    // The built files pass no request checks, but carry the headers every response does.
    let static_files =
        static_files.layer(axum::middleware::map_response(move |mut response: axum::response::Response| {
            let policy = policy.clone();
            async move {
                headers::apply_common(&policy, response.headers_mut());
                response
            }
        }));
    // Event streams stay out of the compression layer below. It never compresses them, but its
    // body type holds every encoder's state inline (5.8 KB), and an open stream keeps its body
    // for as long as it is open.
    let events = Router::new()
        .route(events::PATH, axum::routing::get(events::stream))
        .route(waiting_events::PATH, axum::routing::get(waiting_events::stream))
        .layer(guard.clone())
        .with_state(state.clone());
    let app = match poll_route::serves_poll() {
        true => Router::new().route(app::backend::POLL_PATH, axum::routing::post(poll_route::poll)),
        false => Router::new(),
    };
    let app = app
        .route(input_route::PATH, axum::routing::post(input_route::submit))
        .route(attachment_route::UPLOAD_PATH, axum::routing::post(attachment_route::upload))
        .route(attachment_route::FILE_PATH, axum::routing::get(attachment_route::download))
        .route(audit_log::CSV_PATH, axum::routing::get(audit_log::export_csv))
        .route(audit_log::JSON_PATH, axum::routing::get(audit_log::export_json))
        .route(health::HEALTH_PATH, axum::routing::get(health::healthz))
        .route(health::READY_PATH, axum::routing::get(health::readyz))
        .route(telemetry::PATH, axum::routing::get(telemetry::metrics))
        .route(mcp_oauth::START_PATH, axum::routing::post(mcp_oauth::start))
        .route(mcp_oauth::CALLBACK_PATH, axum::routing::get(mcp_oauth::callback))
        .leptos_routes_with_context(
            &state,
            routes,
            {
                let backends = backends.clone();
                move || {
                    provide_context(backends.clone());
                    provide_request_nonce();
                }
            },
            {
                let files = files.clone();
                move || shell(options.clone(), files.clone())
            },
        )
        .fallback(leptos_axum::file_and_error_handler_with_context::<AppState, _>(
            provide_request_nonce,
            move |options| shell(options, files.clone()),
        ))
        .layer(guard)
        .with_state(state);
    // Pages and JSON compressed as they are sent; the bundle under /pkg was compressed at build
    // time and arrives with its Content-Encoding set, which this layer leaves alone. Its default
    // predicate skips images (and would skip event streams: a compressor holds events back); below a
    // KiB (a poll's answer, an action's `null`) compression costs CPU and saves next to nothing.
    // Quality 4 costs little CPU per response and gets most of the gain.
    use tower_http::compression::predicate::{DefaultPredicate, Predicate, SizeAbove};
    let compression = tower_http::compression::CompressionLayer::new()
        .quality(tower_http::compression::CompressionLevel::Precise(4))
        .compress_when(DefaultPredicate::new().and(SizeAbove::new(1024)));
    static_files.merge(app).layer(compression).merge(events)
}

/// The page renders with the nonce the request checks made for it (`headers::with_nonce`), the
/// one its Content-Security-Policy names, instead of the random one Leptos provides by itself.
fn provide_request_nonce() {
    let nonce = leptos::prelude::use_context::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<leptos::nonce::Nonce>().cloned());
    if let Some(nonce) = nonce {
        provide_context(nonce);
    }
}

/// Creates the demo user on first start, so the embedded defaults give a usable app.
/// Several processes starting at once on one database create it once.
pub async fn ensure_demo_user(store: &Store, password: Option<&str>) -> Result<(), StoreError> {
    if store.count_users().await? > 0 {
        return Ok(());
    }
    let (password, generated) = match password {
        Some(password) => (password.to_string(), false),
        None => (auth::random_password(), true),
    };
    if !store.create_first_user("demo", &auth::hash_password(&password)).await? {
        return Ok(());
    }
    if generated {
        println!("Created the demo user. Sign in as 'demo' with the password '{password}' (shown only once).");
    } else {
        println!("Created the demo user 'demo' with the password from TOURGUIDE_DEMO_PASSWORD.");
    }
    Ok(())
}

/// Gives the accounts from before name keys theirs, and names those that must keep signing in by
/// their exact name because another account has their key (`Store::fill_name_keys`).
pub async fn fill_name_keys(store: &Store) -> Result<(), StoreError> {
    for username in store.fill_name_keys().await? {
        tracing::warn!(%username, "another account's name differs from this one only in case or width; it signs in by its exact name alone, and new accounts of that name are refused");
    }
    Ok(())
}

/// What a server runs with besides its configuration. Tests swap the provider, the tools and the
/// timings; `main` takes the defaults.
pub struct Services {
    pub provider: Arc<dyn ModelProvider>,
    pub tools: ToolRegistry,
    pub runtime_settings: RuntimeSettings,
    pub reconcile_grace: Duration,
    /// How webhook deliveries are tried (tests shorten the waits).
    pub webhooks: delivery_settings::DeliverySettings,
}

impl Services {
    pub fn new(provider: Arc<dyn ModelProvider>) -> Services {
        let mut tools = default_tools();
        if provider.is_demo() {
            demo::showcase_tools::register(&mut tools);
        }
        Services {
            provider,
            tools,
            runtime_settings: RuntimeSettings::default(),
            reconcile_grace: Duration::from_secs(45),
            webhooks: delivery_settings::DeliverySettings::default(),
        }
    }
}

/// The mail transport, when `--smtp-url` is set.
fn mailer(config: &Config, settings: &delivery_settings::DeliverySettings) -> Result<Option<mail::Mailer>, StartError> {
    let Some(mail) = &config.mail else { return Ok(None) };
    let public_origin = config.public_url.as_ref().map(|url| url.origin.clone());
    let mailer = mail::Mailer::new(mail, public_origin, settings.timeout).map_err(StartError::Mail)?;
    tracing::info!(host = %mail.smtp.host, port = mail.smtp.port, "e-mail goes out through this server");
    Ok(Some(mailer))
}

/// The tools every chat run is offered.
pub fn default_tools() -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    tools.register(Arc::new(runtime::AskChoiceTool)).expect("the built-in tools have distinct names");
    tools
}

/// Opens the database and brings every owner's tables up to date. Several processes may do this
/// at once: on PostgreSQL the migrations take a lock, on SQLite the writes wait for each other.
pub async fn open_database(config: &Config) -> Result<Db, StartError> {
    let db = Db::open(&config.database).await?;
    for migrations in [store::migrations(), runtime::migrations(), content::store::migrations()] {
        let mut attempt = 1;
        loop {
            match db.migrate(&migrations).await {
                Ok(()) => break,
                // Two processes starting at once on a new SQLite file: the one that lost the race
                // finds the tables made by the other, and on a second look the migration applied.
                Err(error) if db.backend() == db::Backend::Sqlite && attempt < 3 => {
                    tracing::info!(%error, "migrating again after another process migrated");
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => return Err(error.into()),
            }
        }
    }
    Ok(db)
}

/// Opens the database, starts the worker and the HTTP server, and returns once it listens.
pub async fn serve(config: &Config, services: Services) -> Result<Running, StartError> {
    let db = open_database(config).await?;
    let store = Store::new(db.clone());
    ensure_demo_user(&store, config.demo_password.as_deref()).await?;
    fill_name_keys(&store).await?;
    let seeded = content::seed::seed_if_empty(&ContentStore::new(db)).await?;
    if seeded > 0 {
        tracing::info!(pages = seeded, "seeded the demo site");
    }
    serve_with_store(config, store, services).await
}

/// On SQLite one process runs the worker: a lock file beside the database says which. The kernel
/// releases it when the process ends however it ends, so a worker that starts and gets the lock
/// knows that work marked running belongs to a process that is gone.
fn worker_lock(path: &std::path::Path) -> Result<std::fs::File, StartError> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".worker-lock");
    let lock_path = std::path::PathBuf::from(lock_path);
    let shown = lock_path.display().to_string();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|source| StartError::WorkerLock { path: shown.clone(), source })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StartError::WorkerRunning { path: path.display().to_string() }),
        Err(std::fs::TryLockError::Error(source)) => Err(StartError::WorkerLock { path: shown, source }),
    }
}

pub async fn serve_with_store(config: &Config, store: Store, services: Services) -> Result<Running, StartError> {
    let db = store.db().clone();
    let content = ContentStore::new(db.clone());
    let mut tools = services.tools;
    content::tools::register(&mut tools, content.clone());
    let (shutdown, shutdown_receiver) = watch::channel(false);
    // MCP tools join the built-in ones as a source whose tools come and go with their servers.
    // The tokens of those that sign in with OAuth are kept sealed with the token key.
    if let (Some(mcp), None) = (&config.mcp, &config.token_key) {
        if let Some(server) = mcp.servers.iter().find(|server| server.oauth.is_some()) {
            return Err(StartError::TokenKeyMissing(server.name.clone()));
        }
    }
    let vault = config
        .token_key
        .clone()
        .map(|key| Arc::new(mcp_oauth::Vault::new(store.clone(), key)) as Arc<dyn mcp::TokenVault>);
    let mcp =
        config.mcp.clone().map(|mcp| mcp::McpHub::start_with_vault(mcp, &tools, shutdown_receiver.clone(), vault));
    if let Some(hub) = &mcp {
        tools.add_source(hub.source());
    }
    let model_label = services.provider.label();
    let model_is_demo = services.provider.is_demo();
    let mut settings = services.runtime_settings;
    settings.lease_seconds = i64::try_from(config.lease.as_secs()).unwrap_or(i64::MAX);
    let events = ConversationEvents::new(shutdown_receiver.clone(), &db, config.worker);
    let drafts = Drafts::new(store.clone(), events.clone());
    let runtime = Arc::new(
        Runtime::new(db.clone(), Arc::new(tools), Arc::new(telemetry::MeteredProvider(services.provider)), settings)
            .with_text_observer(Arc::new(drafts.clone()))
            .with_question_check(Arc::new(|schema: &serde_json::Value| {
                match question::form::InputPauseForm::parse(schema) {
                    question::form::InputPauseForm::Unsupported { .. } => {
                        Err("the chat shows only reply buttons and small forms of plain fields".to_string())
                    }
                    _ => Ok(()),
                }
            })),
    );
    let mut worker_lock_file = None;
    if config.worker {
        match &config.database {
            // The one worker on this file has not started yet: a job or a run segment marked
            // running belongs to a process that is gone (a crash, a kill -9). Queue them again
            // now rather than after a lease. A web-only process must not: the work it would
            // requeue may be running in the worker process.
            db::Location::Sqlite(path) => {
                worker_lock_file = Some(worker_lock(path)?);
                // Likewise a question an MCP server asked a previous process on a live connection.
                if let Some(hub) = &mcp {
                    hub.previous_processes_are_gone();
                }
                // The jobs they held are anyone's now.
                store.forget_workers().await?;
                let requeued = store.requeue_all_running_jobs().await?;
                // Webhook deliveries it was sending are sent again (at least once).
                store.release_delivery_leases().await?;
                let reaped = runtime.recover_interrupted().await.map_err(StartError::Runtime)?;
                if requeued > 0 || !reaped.requeued.is_empty() || !reaped.failed.is_empty() {
                    tracing::info!(
                        requeued,
                        runs_requeued = reaped.requeued.len(),
                        runs_failed = reaped.failed.len(),
                        "recovered interrupted work"
                    );
                }
            }
            // Other workers may be alive and holding work: a dead one's work is taken over when
            // its lease runs out, by whichever worker sweeps first.
            db::Location::Postgres(_) => {
                tracing::info!(lease = ?config.lease, "work of a worker that stopped is taken over once its lease ran out");
            }
        }
    }

    telemetry::install();
    let site_assets = assets::SiteAssets::load(std::path::Path::new(&config.site_root));
    let leptos_options = LeptosOptions::builder()
        .output_name(assets::OUTPUT_NAME)
        .site_root(config.site_root.clone())
        .site_pkg_dir(assets::PKG_DIR)
        .site_addr(config.address)
        .build();
    let skills = Arc::new(SkillCatalogue::default());
    let worker_handle = WorkerHandle::default();
    // Where this process listens, once it does: a webhook must not point here.
    let own_address = Arc::new(std::sync::OnceLock::new());
    let turns = Turns {
        store: store.clone(),
        runtime: runtime.clone(),
        skills: skills.clone(),
        events: events.clone(),
        drafts: drafts.clone(),
    };
    let alive = config.worker.then(|| Arc::new(std::sync::atomic::AtomicBool::new(true)));
    let worker = if let Some(alive) = &alive {
        worker_handle.wake_on_queued_jobs(&events);
        let task = Worker::new(turns, worker_handle.clone(), config.lease)
            .with_waiting_expiry(config.waiting_expiry)
            .with_mcp(mcp.clone())
            .spawn(config.worker_jobs, shutdown_receiver.clone());
        let deliveries = webhooks::DeliveryWorker::new(
            store.clone(),
            services.webhooks.clone(),
            config.lease,
            config.public_url.as_ref().map(|url| url.origin.clone()),
            config.webhook_private_networks,
        )
        .with_reminders(config.reminder_after.map(|after| webhooks::Reminders {
            after,
            expiry: config.waiting_expiry,
            runtime: runtime.clone(),
        }))
        .with_mail(mailer(config, &services.webhooks)?);
        webhooks::wake_on_changes(&events, deliveries.waker());
        deliveries.spawn(shutdown_receiver.clone());
        let guard = health::AliveGuard(alive.clone());
        tokio::spawn(async move {
            let _guard = guard;
            if let Err(error) = task.await {
                tracing::error!(%error, "the worker stopped");
            }
        })
    } else {
        tokio::spawn(async {})
    };
    let chat = Arc::new(
        ChatService::new(
            store.clone(),
            worker_handle,
            runtime.clone(),
            skills,
            content.clone(),
            events.clone(),
            services.reconcile_grace,
        )
        .with_attachment_limit(config.attachment_limit)
        .with_drafts(drafts.clone()),
    );
    let mcp_sign_ins = mcp_oauth::sign_ins(
        mcp.as_ref(),
        &store,
        config.token_key.as_ref(),
        config.public_url.as_ref().map(|url| url.origin.clone()),
    );
    let backends = Backends {
        auth: Arc::new(
            AccountService::new(
                store.clone(),
                model_label,
                model_is_demo,
                Arc::new(account::LoginLimits::per_minute(config.login_attempts)),
            )
            .with_session_length(config.session_length)
            .with_mail(config.mail.is_some())
            .with_events(events.clone()),
        ),
        chat: chat.clone(),
        audit: Arc::new(audit_log::AuditService::new(store.clone())),
        content: Arc::new(PagesService::new(content)),
        tools: Arc::new(ToolsService::new(runtime.clone(), mcp, store.clone())),
        admin: Arc::new(
            admin::AdminService::new(store.clone())
                .with_events(events.clone())
                .with_webhook_targets(own_address.clone(), config.public_url.as_ref().map(|url| url.origin.clone())),
        ),
    };
    let state = AppState(Arc::new(Shared {
        leptos_options,
        store: store.clone(),
        chat,
        events,
        worker: health::WorkerAlive(alive),
        assets: Arc::new(site_assets),
        metrics: telemetry::MetricsState {
            store: store.clone(),
            runtime: runtime.clone(),
            token: config.metrics_token.as_deref().map(Arc::from),
        },
        headers: Arc::new(headers::Policy::new(config.public_url.as_ref())),
        trusted_proxies: Arc::new(config.trusted_proxies.clone()),
        mcp_sign_ins,
    }));
    let app = router(state, backends);

    if !config.web {
        let server = tokio::spawn(async {});
        return Ok(Running { address: None, store, runtime, shutdown, server, worker, _worker_lock: worker_lock_file });
    }
    let listener = tokio::net::TcpListener::bind(config.address)
        .await
        .map_err(|source| StartError::Bind { address: config.address, source })?;
    let address = listener.local_addr().map_err(|source| StartError::Bind { address: config.address, source })?;
    let _ = own_address.set(address);
    let mut stop = shutdown_receiver;
    // Without TCP_NODELAY a small write (a piece of a streamed reply, an SSE event) can wait for
    // the ACK of the one before it: tens of milliseconds per piece.
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream: &mut tokio::net::TcpStream| {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY not set");
        }
    });
    let server = tokio::spawn(async move {
        // The peer's address goes with each request, for the limit on sign-in attempts.
        let result = axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|stopped| *stopped).await;
            })
            .await;
        if let Err(error) = result {
            tracing::error!(%error, "server stopped with an error");
        }
    });
    Ok(Running { address: Some(address), store, runtime, shutdown, server, worker, _worker_lock: worker_lock_file })
}
