//! Configuration from the command line and the environment, command line first. `clap` reads the
//! command line; the environment is layered under it here, so both can be tested without touching
//! the process environment.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use db::Location;

#[derive(Debug, Clone)]
pub struct Config {
    pub database: Location,
    pub address: SocketAddr,
    pub site_root: String,
    /// Password for the demo user created on first start; random (and printed) when unset.
    pub demo_password: Option<String>,
    /// Off for a web-only process when another process runs the background worker.
    pub worker: bool,
    /// Off for a worker-only process: no HTTP listener.
    pub web: bool,
    /// How many jobs (turns, decisions) the worker carries on side by side.
    pub worker_jobs: std::num::NonZeroUsize,
    /// How long work a worker holds stays its own without a heartbeat: after a worker dies, this
    /// long passes before another worker (or the restarted one) carries its work on.
    pub lease: Duration,
    /// The MCP servers whose tools the assistant is offered, read from `--mcp-config`.
    pub mcp: Option<mcp::McpConfig>,
    /// The largest file a reader may attach, in bytes.
    pub attachment_limit: usize,
    /// How long a run may wait for a decision or an answer before it is cancelled.
    pub waiting_expiry: Duration,
    /// A run still waiting this long is announced once more (`run.reminder`); `None`: never.
    pub reminder_after: Option<Duration>,
    /// One JSON object per log line instead of text.
    pub json_logs: bool,
    /// Sign-in attempts per user name and minute (three times this per client address).
    pub login_attempts: std::num::NonZeroU32,
    /// How long a session lasts from its sign-in.
    pub session_length: Duration,
    /// When set, `/metrics` answers only a scrape that sends it as a bearer token. From the
    /// environment only: a command line is visible to every user of the host.
    pub metrics_token: Option<String>,
    /// Reverse proxies whose `X-Forwarded-For` names the client (`--trusted-proxies`); none by
    /// default, and then the connection's peer is the client.
    pub trusted_proxies: crate::proxies::TrustedProxies,
    /// The address people reach this server at, when it is behind TLS: `https://…` makes every
    /// cookie `Secure` and sends HSTS, whatever a request's headers claim.
    pub public_url: Option<PublicUrl>,
    /// Where and as whom mail is sent (`--smtp-url`, `--mail-from`); `None`: no mail.
    pub mail: Option<crate::mail::MailConfig>,
    /// Seals the tokens of MCP servers that sign in with OAuth (`TOURGUIDE_TOKEN_KEY`, from the
    /// environment only); required once such a server is configured.
    pub token_key: Option<crate::token_key::TokenKey>,
    /// Whether webhook deliveries may go to loopback and private addresses
    /// (`--webhook-private-networks`); link-local and metadata addresses never.
    pub webhook_private_networks: bool,
}

/// `--public-url`: the scheme and host people use, without a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    pub https: bool,
    /// `scheme://host[:port]`, as a browser's `Origin` names it.
    pub origin: String,
}

impl PublicUrl {
    pub fn parse(text: &str) -> Option<PublicUrl> {
        let text = text.trim().trim_end_matches('/');
        let (scheme, rest) = text.split_once("://")?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            _ => return None,
        };
        // A host (and port) only: a path, query or user name has no meaning for an origin.
        let host_ok = !rest.is_empty()
            && rest.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
        host_ok.then(|| PublicUrl {
            https,
            origin: format!("{}://{}", scheme.to_ascii_lowercase(), rest.to_ascii_lowercase()),
        })
    }
}

pub const DEFAULT_WORKER_JOBS: std::num::NonZeroUsize = std::num::NonZeroUsize::new(8).unwrap();
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
pub const DEFAULT_ATTACHMENT_LIMIT_MIB: usize = 10;
pub const DEFAULT_LOGIN_ATTEMPTS: std::num::NonZeroU32 = std::num::NonZeroU32::new(10).unwrap();
pub const DEFAULT_WAITING_EXPIRY: Duration = Duration::from_secs(7 * 24 * 3600);
pub const DEFAULT_REMINDER_AFTER: Duration = Duration::from_secs(24 * 3600);
const MIB: usize = 1024 * 1024;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    /// clap's own sentence for a malformed command line (unknown option, missing value).
    #[error("{0}")]
    Usage(String),
    #[error("'{value}' is not a valid address for {name} (expected e.g. 127.0.0.1:3000)")]
    BadAddress { name: String, value: String },
    #[error("'{value}' is not a valid value for {name} (expected on or off)")]
    BadSwitch { name: String, value: String },
    #[error("{name} must not be empty")]
    Empty { name: String },
    #[error("'{0}' is not a usable PostgreSQL URL (expected e.g. postgres://user:password@host:5432/tourguide)")]
    BadDatabaseUrl(String),
    #[error("'{0}' is not a valid number of worker jobs (expected 1 to 256)")]
    BadWorkerJobs(String),
    #[error("'{0}' is not a valid lease (expected a number of seconds from 1 to 3600)")]
    BadLease(String),
    #[error("'{0}' is not a valid attachment limit (expected a number of MiB from 1 to 100)")]
    BadAttachmentLimit(String),
    #[error("'{0}' is not a valid expiry (expected a duration such as 7d, 36h, 90m or 600s)")]
    BadExpiry(String),
    #[error("'{0}' is not a valid reminder time (expected a duration such as 24h, 90m or 2d, or off)")]
    BadReminder(String),
    #[error("'{0}' is not a valid number of sign-in attempts (expected 1 to 100000 per minute)")]
    BadLoginAttempts(String),
    #[error("'{0}' is not a valid session length (expected a duration such as 14d or 12h, at least 5m)")]
    BadSessionLength(String),
    #[error("'{0}' is not a valid public URL (expected e.g. https://chat.example.com, without a path)")]
    BadPublicUrl(String),
    #[error(
        "'{0}' is not a list of trusted proxies (expected IP addresses or CIDR ranges, e.g. 127.0.0.1,10.0.0.0/8)"
    )]
    BadTrustedProxies(String),
    #[error("'{0}' is not a log format (expected text or json)")]
    BadLogFormat(String),
    #[error(
        "'{0}' is not a usable SMTP URL (expected smtp://user@host:587 for STARTTLS, smtps://user@host:465 for TLS, or smtp://host:25?tls=none for a relay on this host)"
    )]
    BadSmtpUrl(String),
    #[error("put the SMTP password into TOURGUIDE_SMTP_PASSWORD (or TOURGUIDE_SMTP_URL), not on the command line, where every user of this host can read it")]
    SmtpPasswordOnCommandLine,
    #[error(
        "TOURGUIDE_SMTP_PASSWORD is set, but the SMTP URL names no user (e.g. smtp://tourguide@mail.example.com:587)"
    )]
    SmtpPasswordWithoutUser,
    #[error("the SMTP URL would send the password unencrypted (tls=none) to another host; use smtps:// or smtp:// with STARTTLS")]
    SmtpPasswordInTheClear,
    #[error(
        "an SMTP URL needs a sender: set --mail-from (TOURGUIDE_MAIL_FROM), e.g. \"Tourguide <tourguide@example.com>\""
    )]
    MailFromMissing,
    #[error("'{0}' is not a sender address (expected e.g. \"Tourguide <tourguide@example.com>\")")]
    BadMailFrom(String),
    #[error("with --web off and --worker off this process would do nothing")]
    NothingToRun,
    #[error(transparent)]
    Mcp(#[from] mcp::McpConfigError),
    #[error(
        "MCP server \"{0}\" signs in with OAuth and its tokens are kept encrypted: set TOURGUIDE_TOKEN_KEY to 32 random \
         bytes as 64 hex digits (e.g. from `openssl rand -hex 32`), the same in every process, kept apart from the \
         database and its backups"
    )]
    TokenKeyMissing(String),
    #[error(
        "TOURGUIDE_TOKEN_KEY is not a key: give 32 random bytes as 64 hex digits or in base64 (e.g. from `openssl rand \
         -hex 32`)"
    )]
    BadTokenKey,
    #[error("{0}")]
    Help(String),
}

const ENVIRONMENT: &str = "\
Each option is also read from the environment variable in brackets; the command line wins.
The demo user's password comes from TOURGUIDE_DEMO_PASSWORD; without it a random one is printed
when the user is created on first start.";

#[derive(Parser, Debug)]
#[command(name = "tourguide", about = "Tourguide: a web chat in which an AI agent works with a person.", after_help = ENVIRONMENT)]
struct Args {
    /// SQLite file, or a postgres:// URL for several processes on one database
    /// [TOURGUIDE_DATABASE] (default ./data/tourguide.db)
    #[arg(long, value_name = "PATH|URL")]
    database: Option<String>,
    /// Listen address [TOURGUIDE_ADDRESS or LEPTOS_SITE_ADDR] (default 127.0.0.1:3000)
    #[arg(long, value_name = "ADDR")]
    address: Option<String>,
    /// The built site with pkg/ [LEPTOS_SITE_ROOT] (default target/site)
    #[arg(long, value_name = "DIR")]
    site_root: Option<String>,
    /// Run the background worker in this process [TOURGUIDE_WORKER] (default on; off for a
    /// web-only process while other processes carry the runs on)
    #[arg(long, value_name = "on|off")]
    worker: Option<String>,
    /// Serve HTTP from this process [TOURGUIDE_WEB] (default on; off for a worker-only process)
    #[arg(long, value_name = "on|off")]
    web: Option<String>,
    /// How many turns and decisions the worker carries on side by side; each mostly waits on
    /// the model [TOURGUIDE_WORKER_JOBS] (default 8)
    #[arg(long, value_name = "N")]
    worker_jobs: Option<String>,
    /// Seconds a worker's work stays its own without a heartbeat; after a worker dies, another
    /// one takes its work over once this has passed [TOURGUIDE_LEASE_SECONDS] (default 30)
    #[arg(long, value_name = "SECONDS")]
    lease: Option<String>,
    /// MCP servers to take tools from, in the JSON format MCP clients share ({"mcpServers":
    /// {"name": {"command", "args", "env"} or {"url", "headers"}}}) [TOURGUIDE_MCP_CONFIG]
    #[arg(long, value_name = "PATH")]
    mcp_config: Option<String>,
    /// The largest file a message may have attached, in MiB [TOURGUIDE_ATTACHMENT_LIMIT_MB]
    /// (default 10)
    #[arg(long, value_name = "MIB")]
    attachment_limit_mb: Option<String>,
    /// How long a run may wait for a decision or an answer before it is cancelled, with a line
    /// in its conversation: e.g. 7d, 36h, 90m, 600s [TOURGUIDE_WAITING_EXPIRY] (default 7d)
    #[arg(long, value_name = "DURATION")]
    waiting_expiry: Option<String>,
    /// A run still waiting this long is announced to the webhooks once more (run.reminder):
    /// e.g. 24h, 90m, or off [TOURGUIDE_REMINDER_AFTER] (default 24h)
    #[arg(long, value_name = "DURATION|off")]
    reminder_after: Option<String>,
    /// Log lines as text or as one JSON object each [TOURGUIDE_LOG_FORMAT] (default text)
    #[arg(long, value_name = "text|json")]
    log_format: Option<String>,
    /// Sign-in attempts per user name and minute; three times as many per client address
    /// [TOURGUIDE_LOGIN_ATTEMPTS] (default 10)
    #[arg(long, value_name = "N")]
    login_attempts: Option<String>,
    /// How long a sign-in lasts: e.g. 14d, 12h [TOURGUIDE_SESSION_LENGTH] (default 14d)
    #[arg(long, value_name = "DURATION")]
    session_length: Option<String>,
    /// Reverse proxies (IP addresses or CIDR ranges, comma-separated) whose X-Forwarded-For
    /// names the client, for the limit on sign-in attempts per address and the logs
    /// [TOURGUIDE_TRUSTED_PROXIES] (default none: the connection's peer is the client)
    #[arg(long, value_name = "ADDR[,ADDR…]")]
    trusted_proxies: Option<String>,
    /// The address people reach this server at, e.g. https://chat.example.com: with https, the
    /// cookies are always Secure and HSTS is sent [TOURGUIDE_PUBLIC_URL] (default none)
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// The mail server for e-mail to users who ask for it: smtp://user@host:587 (STARTTLS),
    /// smtps://user@host:465, smtp://host:25?tls=none for a relay on this host; the password from
    /// TOURGUIDE_SMTP_PASSWORD [TOURGUIDE_SMTP_URL] (default none: no e-mail)
    #[arg(long, value_name = "URL")]
    smtp_url: Option<String>,
    /// The sender of that e-mail, e.g. "Tourguide <tourguide@example.com>" [TOURGUIDE_MAIL_FROM]
    #[arg(long, value_name = "ADDRESS")]
    mail_from: Option<String>,
    /// Whether webhooks may be delivered to loopback and private addresses (10/8, 172.16/12,
    /// 192.168/16, 100.64/10, fc00::/7): a receiver on this host or this network. Link-local and
    /// cloud metadata addresses are never reached [TOURGUIDE_WEBHOOK_PRIVATE_NETWORKS] (default off)
    #[arg(long, value_name = "on|off")]
    webhook_private_networks: Option<String>,
}

/// Whether these arguments and this environment ask for JSON logs. Read before the rest of the
/// configuration, because the log is set up first; a bad value is reported by [`Config`].
pub fn wants_json_logs(args: &[String], env: impl Fn(&str) -> Option<String>) -> bool {
    let from_args = args.iter().enumerate().find_map(|(index, arg)| match arg.strip_prefix("--log-format") {
        Some("") => args.get(index + 1).cloned(),
        Some(rest) => rest.strip_prefix('=').map(str::to_string),
        None => None,
    });
    from_args.or_else(|| env("TOURGUIDE_LOG_FORMAT")).is_some_and(|format| format.trim() == "json")
}

/// `7d`, `36h`, `90m`, `600s` or plain seconds; at least a second, at most ten years.
fn duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, "s"),
    };
    let seconds_per = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    let seconds = number.parse::<u64>().ok()?.checked_mul(seconds_per)?;
    (1..=10 * 365 * 86_400).contains(&seconds).then(|| Duration::from_secs(seconds))
}

fn switch(name: &str, value: Option<String>) -> Result<bool, ConfigError> {
    match value.as_deref().map(str::trim) {
        None | Some("on") => Ok(true),
        Some("off") => Ok(false),
        Some(other) => Err(ConfigError::BadSwitch { name: name.to_string(), value: other.to_string() }),
    }
}

/// `--smtp-url` and `--mail-from`. A password on the command line is refused: every user of the
/// host can read a command line; the environment (`TOURGUIDE_SMTP_URL`, `TOURGUIDE_SMTP_PASSWORD`)
/// is the process's own.
fn mail_config(
    url_arg: Option<String>,
    from_arg: Option<String>,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Option<crate::mail::MailConfig>, ConfigError> {
    use crate::mail::{redacted, MailConfig, SmtpUrl};
    let from_command_line = url_arg.is_some();
    let Some(text) = url_arg.or_else(|| env("TOURGUIDE_SMTP_URL")).filter(|text| !text.trim().is_empty()) else {
        return Ok(None);
    };
    let mut smtp = SmtpUrl::parse(&text).ok_or_else(|| ConfigError::BadSmtpUrl(redacted(&text)))?;
    if from_command_line && smtp.password.is_some() {
        return Err(ConfigError::SmtpPasswordOnCommandLine);
    }
    if let Some(password) = env("TOURGUIDE_SMTP_PASSWORD").filter(|password| !password.is_empty()) {
        if smtp.user.is_none() {
            return Err(ConfigError::SmtpPasswordWithoutUser);
        }
        smtp.password = Some(password);
    }
    if smtp.sends_password_in_the_clear() {
        return Err(ConfigError::SmtpPasswordInTheClear);
    }
    let from = from_arg.or_else(|| env("TOURGUIDE_MAIL_FROM")).filter(|text| !text.trim().is_empty());
    let from = from.ok_or(ConfigError::MailFromMissing)?;
    let from = from.trim().parse().map_err(|_| ConfigError::BadMailFrom(from.clone()))?;
    Ok(Some(MailConfig { smtp, from }))
}

impl Config {
    pub fn from_env_and_args(
        env: impl Fn(&str) -> Option<String>,
        args: impl IntoIterator<Item = String>,
    ) -> Result<Config, ConfigError> {
        let args =
            Args::try_parse_from(std::iter::once("tourguide".to_string()).chain(args)).map_err(|error| match error
                .kind()
            {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ConfigError::Help(error.render().to_string())
                }
                _ => {
                    let rendered = error.render().to_string();
                    ConfigError::Usage(rendered.trim_start_matches("error: ").trim_end().to_string())
                }
            })?;

        let database =
            args.database.or_else(|| env("TOURGUIDE_DATABASE")).unwrap_or_else(|| "./data/tourguide.db".into());
        if database.trim().is_empty() {
            return Err(ConfigError::Empty { name: "the database".into() });
        }
        let database = Location::parse(&database);
        if let Location::Postgres(url) = &database {
            if url.parse::<sqlx::postgres::PgConnectOptions>().is_err() {
                return Err(ConfigError::BadDatabaseUrl(Location::redacted(url)));
            }
        }
        let address_text = args
            .address
            .or_else(|| env("TOURGUIDE_ADDRESS"))
            .or_else(|| env("LEPTOS_SITE_ADDR"))
            .unwrap_or_else(|| "127.0.0.1:3000".to_string());
        let address = address_text
            .parse()
            .map_err(|_| ConfigError::BadAddress { name: "the listen address".into(), value: address_text })?;
        let site_root = args.site_root.or_else(|| env("LEPTOS_SITE_ROOT")).unwrap_or_else(|| "target/site".to_string());
        if site_root.trim().is_empty() {
            return Err(ConfigError::Empty { name: "the site root".into() });
        }
        let worker = switch("the worker", args.worker.or_else(|| env("TOURGUIDE_WORKER")))?;
        let web = switch("the web server", args.web.or_else(|| env("TOURGUIDE_WEB")))?;
        if !worker && !web {
            return Err(ConfigError::NothingToRun);
        }
        let worker_jobs = match args.worker_jobs.or_else(|| env("TOURGUIDE_WORKER_JOBS")) {
            None => DEFAULT_WORKER_JOBS,
            Some(text) => match text.trim().parse::<usize>() {
                Ok(jobs @ 1..=256) => std::num::NonZeroUsize::new(jobs).ok_or(ConfigError::BadWorkerJobs(text))?,
                _ => return Err(ConfigError::BadWorkerJobs(text)),
            },
        };
        let lease = match args.lease.or_else(|| env("TOURGUIDE_LEASE_SECONDS")) {
            None => DEFAULT_LEASE,
            Some(text) => match text.trim().parse::<u64>() {
                Ok(seconds @ 1..=3600) => Duration::from_secs(seconds),
                _ => return Err(ConfigError::BadLease(text)),
            },
        };
        let mcp = match args.mcp_config.or_else(|| env("TOURGUIDE_MCP_CONFIG")).filter(|path| !path.trim().is_empty()) {
            None => None,
            Some(path) => Some(mcp::McpConfig::load(std::path::Path::new(&path))?),
        };
        let attachment_limit = match args.attachment_limit_mb.or_else(|| env("TOURGUIDE_ATTACHMENT_LIMIT_MB")) {
            None => DEFAULT_ATTACHMENT_LIMIT_MIB * MIB,
            Some(text) => match text.trim().parse::<usize>() {
                Ok(mib @ 1..=100) => mib * MIB,
                _ => return Err(ConfigError::BadAttachmentLimit(text)),
            },
        };
        let waiting_expiry = match args.waiting_expiry.or_else(|| env("TOURGUIDE_WAITING_EXPIRY")) {
            None => DEFAULT_WAITING_EXPIRY,
            Some(text) => duration(&text).ok_or(ConfigError::BadExpiry(text))?,
        };
        let reminder_after = match args.reminder_after.or_else(|| env("TOURGUIDE_REMINDER_AFTER")) {
            None => Some(DEFAULT_REMINDER_AFTER),
            Some(text) if text.trim() == "off" => None,
            Some(text) => Some(duration(&text).ok_or(ConfigError::BadReminder(text))?),
        };
        let json_logs = match args.log_format.or_else(|| env("TOURGUIDE_LOG_FORMAT")).as_deref().map(str::trim) {
            None | Some("text") => false,
            Some("json") => true,
            Some(other) => return Err(ConfigError::BadLogFormat(other.to_string())),
        };
        let login_attempts = match args.login_attempts.or_else(|| env("TOURGUIDE_LOGIN_ATTEMPTS")) {
            None => DEFAULT_LOGIN_ATTEMPTS,
            Some(text) => match text.trim().parse::<u32>() {
                Ok(count @ 1..=100_000) => {
                    std::num::NonZeroU32::new(count).ok_or(ConfigError::BadLoginAttempts(text))?
                }
                _ => return Err(ConfigError::BadLoginAttempts(text)),
            },
        };
        let session_length = match args.session_length.or_else(|| env("TOURGUIDE_SESSION_LENGTH")) {
            None => Duration::from_secs(crate::auth::SESSION_SECONDS.unsigned_abs()),
            Some(text) => {
                duration(&text).filter(|length| length.as_secs() >= 300).ok_or(ConfigError::BadSessionLength(text))?
            }
        };
        let public_url = match args.public_url.or_else(|| env("TOURGUIDE_PUBLIC_URL")) {
            None => None,
            Some(text) if text.trim().is_empty() => None,
            Some(text) => Some(PublicUrl::parse(&text).ok_or(ConfigError::BadPublicUrl(text))?),
        };
        let trusted_proxies = match args.trusted_proxies.or_else(|| env("TOURGUIDE_TRUSTED_PROXIES")) {
            None => Default::default(),
            Some(text) => crate::proxies::TrustedProxies::parse(&text).ok_or(ConfigError::BadTrustedProxies(text))?,
        };
        let webhook_private_networks =
            match args.webhook_private_networks.or_else(|| env("TOURGUIDE_WEBHOOK_PRIVATE_NETWORKS")) {
                None => false,
                some => switch("webhook private networks", some)?,
            };
        let mail = mail_config(args.smtp_url, args.mail_from, &env)?;
        let token_key = match env(crate::token_key::TOKEN_KEY_VARIABLE).filter(|text| !text.trim().is_empty()) {
            None => None,
            Some(text) => Some(crate::token_key::TokenKey::parse(&text).ok_or(ConfigError::BadTokenKey)?),
        };
        if let (Some(mcp), None) = (&mcp, &token_key) {
            if let Some(server) = mcp.servers.iter().find(|server| server.oauth.is_some()) {
                return Err(ConfigError::TokenKeyMissing(server.name.clone()));
            }
        }
        Ok(Config {
            webhook_private_networks,
            token_key,
            mail,
            trusted_proxies,
            public_url,
            session_length,
            login_attempts,
            json_logs,
            waiting_expiry,
            reminder_after,
            attachment_limit,
            database,
            address,
            site_root,
            demo_password: env("TOURGUIDE_DEMO_PASSWORD").filter(|value| !value.is_empty()),
            metrics_token: env("TOURGUIDE_METRICS_TOKEN")
                .map(|value| value.trim().to_string())
                .filter(|value| !value.is_empty()),
            worker,
            web,
            worker_jobs,
            lease,
            mcp,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn parse(env: &[(&str, &str)], args: &[&str]) -> Result<Config, ConfigError> {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_env_and_args(
            |key| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()),
            args.iter().map(|arg| arg.to_string()),
        )
    }

    #[test]
    fn defaults_are_the_embedded_ones() {
        let config = parse(&[], &[]).unwrap();
        assert_eq!(config.database, Location::Sqlite(PathBuf::from("./data/tourguide.db")));
        assert_eq!(config.address.to_string(), "127.0.0.1:3000");
        assert_eq!(config.site_root, "target/site");
        assert!(config.worker && config.web);
        assert_eq!(config.lease, DEFAULT_LEASE);
        assert_eq!(config.waiting_expiry, DEFAULT_WAITING_EXPIRY);
        assert_eq!(config.reminder_after, Some(DEFAULT_REMINDER_AFTER));
        assert_eq!(config.mcp, None);
        assert_eq!(config.attachment_limit, 10 * 1024 * 1024);
    }

    #[test]
    fn the_attachment_limit_is_read_in_mib_and_checked() {
        assert_eq!(parse(&[("TOURGUIDE_ATTACHMENT_LIMIT_MB", "2")], &[]).unwrap().attachment_limit, 2 * 1024 * 1024);
        assert_eq!(parse(&[], &["--attachment-limit-mb", "25"]).unwrap().attachment_limit, 25 * 1024 * 1024);
        for bad in ["0", "101", "ten", "2.5"] {
            assert_eq!(
                parse(&[], &["--attachment-limit-mb", bad]).unwrap_err(),
                ConfigError::BadAttachmentLimit(bad.to_string())
            );
        }
    }

    #[test]
    fn an_oauth_server_needs_the_token_key_and_a_bad_key_is_named() {
        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join("mcp.json");
        std::fs::write(
            &file,
            r#"{"mcpServers": {"crm": {"url": "https://crm.example/mcp", "auth": "oauth", "oauthMode": "per_user"}}}"#,
        )
        .unwrap();
        let path = file.to_str().unwrap();
        let missing = parse(&[], &["--mcp-config", path]).unwrap_err().to_string();
        assert!(missing.contains("\"crm\"") && missing.contains("TOURGUIDE_TOKEN_KEY"), "{missing}");
        let key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        let secret_looking = "not-a-key-but-a-secret";
        let bad = parse(&[("TOURGUIDE_TOKEN_KEY", secret_looking)], &["--mcp-config", path]).unwrap_err().to_string();
        assert!(bad.contains("TOURGUIDE_TOKEN_KEY is not a key") && !bad.contains(secret_looking), "{bad}");
        let config = parse(&[("TOURGUIDE_TOKEN_KEY", key)], &["--mcp-config", path]).unwrap();
        assert_eq!(config.token_key, crate::token_key::TokenKey::parse(key));
        // Without an OAuth server no key is needed.
        assert_eq!(parse(&[], &[]).unwrap().token_key, None);
    }

    #[test]
    fn an_mcp_configuration_is_read_and_a_bad_one_is_named() {
        let folder = tempfile::tempdir().unwrap();
        let good = folder.path().join("mcp.json");
        std::fs::write(
            &good,
            r#"{"mcpServers": {"files": {"command": "npx", "args": ["server-filesystem", "/srv"]}}}"#,
        )
        .unwrap();
        let config = parse(&[("TOURGUIDE_MCP_CONFIG", good.to_str().unwrap())], &[]).unwrap();
        assert_eq!(config.mcp.unwrap().servers[0].name, "files");
        let bad = folder.path().join("bad.json");
        std::fs::write(&bad, r#"{"mcpServers": {"files": {}}}"#).unwrap();
        let error = parse(&[], &["--mcp-config", bad.to_str().unwrap()]).unwrap_err().to_string();
        assert!(error.contains("bad.json") && error.contains("needs a command"), "{error}");
        let missing = parse(&[], &["--mcp-config", "/nonexistent/mcp.json"]).unwrap_err().to_string();
        assert!(missing.contains("cannot read") && missing.contains("/nonexistent/mcp.json"), "{missing}");
    }

    #[test]
    fn the_worker_can_be_left_to_another_process() {
        assert!(!parse(&[("TOURGUIDE_WORKER", "off")], &[]).unwrap().worker);
        assert!(parse(&[("TOURGUIDE_WORKER", "off")], &["--worker", "on"]).unwrap().worker);
        assert!(matches!(parse(&[], &["--worker=maybe"]).unwrap_err(), ConfigError::BadSwitch { .. }));
    }

    #[test]
    fn a_worker_only_process_has_no_web_server_but_not_both_off() {
        let config = parse(&[("TOURGUIDE_WEB", "off")], &[]).unwrap();
        assert!(!config.web && config.worker);
        assert_eq!(parse(&[], &["--web", "off", "--worker", "off"]).unwrap_err(), ConfigError::NothingToRun);
    }

    #[test]
    fn a_postgres_url_names_a_server() {
        let url = "postgres://tourguide:secret@db.internal:5432/tourguide";
        let config = parse(&[("TOURGUIDE_DATABASE", url)], &["--lease", "5"]).unwrap();
        assert_eq!(config.database, Location::Postgres(url.to_string()));
        assert_eq!(config.lease, Duration::from_secs(5));
        assert!(matches!(
            parse(&[], &["--database", "postgres://host:notaport/db"]).unwrap_err(),
            ConfigError::BadDatabaseUrl(_)
        ));
        let said = parse(&[], &["--database", "postgres://u:hunter2@host:notaport/db"]).unwrap_err().to_string();
        assert!(!said.contains("hunter2") && said.contains("u:***@host"), "{said}");
        assert!(matches!(parse(&[], &["--lease", "0"]).unwrap_err(), ConfigError::BadLease(_)));
        for (text, seconds) in [("7d", 604_800), ("36h", 129_600), ("90m", 5_400), ("600s", 600), ("45", 45)] {
            let config = parse(&[("TOURGUIDE_WAITING_EXPIRY", text)], &[]).unwrap();
            assert_eq!(config.waiting_expiry, Duration::from_secs(seconds), "{text}");
        }
        assert!(parse(&[], &["--log-format", "json"]).unwrap().json_logs);
        assert_eq!(parse(&[], &["--session-length", "12h"]).unwrap().session_length, Duration::from_secs(43_200));
        assert_eq!(parse(&[], &["--session-length", "60s"]).unwrap_err(), ConfigError::BadSessionLength("60s".into()));
        assert!(!parse(&[("TOURGUIDE_LOG_FORMAT", "text")], &[]).unwrap().json_logs);
        assert_eq!(parse(&[], &["--log-format=yaml"]).unwrap_err(), ConfigError::BadLogFormat("yaml".into()));
        let args = |list: &[&str]| list.iter().map(|arg| arg.to_string()).collect::<Vec<_>>();
        assert!(wants_json_logs(&args(&["--log-format", "json"]), |_| None));
        assert!(wants_json_logs(&args(&["--log-format=json"]), |_| None));
        assert!(wants_json_logs(&[], |key| (key == "TOURGUIDE_LOG_FORMAT").then(|| "json".to_string())));
        assert!(!wants_json_logs(&args(&["--log-format", "text"]), |_| Some("json".to_string())));
        for bad in ["0s", "7w", "d", "-1d", ""] {
            let error = parse(&[], &[&format!("--waiting-expiry={bad}")]).unwrap_err();
            assert_eq!(error, ConfigError::BadExpiry(bad.to_string()), "{bad}");
        }
        assert!(matches!(parse(&[("TOURGUIDE_LEASE_SECONDS", "soon")], &[]).unwrap_err(), ConfigError::BadLease(_)));
        assert_eq!(parse(&[], &[]).unwrap().worker_jobs, DEFAULT_WORKER_JOBS);
        assert_eq!(parse(&[("TOURGUIDE_WORKER_JOBS", "1")], &[]).unwrap().worker_jobs.get(), 1);
        assert_eq!(parse(&[("TOURGUIDE_WORKER_JOBS", "1")], &["--worker-jobs", "32"]).unwrap().worker_jobs.get(), 32);
        for bad in ["0", "257", "many", "-1", ""] {
            assert_eq!(
                parse(&[], &[&format!("--worker-jobs={bad}")]).unwrap_err(),
                ConfigError::BadWorkerJobs(bad.to_string()),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_reminder_is_a_duration_or_off() {
        assert_eq!(
            parse(&[("TOURGUIDE_REMINDER_AFTER", "90m")], &[]).unwrap().reminder_after,
            Some(Duration::from_secs(5400))
        );
        assert_eq!(
            parse(&[("TOURGUIDE_REMINDER_AFTER", "90m")], &["--reminder-after", "off"]).unwrap().reminder_after,
            None
        );
        for bad in ["0s", "soon", "-1h", ""] {
            assert_eq!(
                parse(&[], &[&format!("--reminder-after={bad}")]).unwrap_err(),
                ConfigError::BadReminder(bad.to_string()),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_public_url_is_an_origin_with_a_scheme() {
        assert_eq!(parse(&[], &[]).unwrap().public_url, None);
        let https = parse(&[("TOURGUIDE_PUBLIC_URL", "https://Chat.Example.com/")], &[]).unwrap().public_url.unwrap();
        assert_eq!(https, PublicUrl { https: true, origin: "https://chat.example.com".into() });
        let plain = parse(&[], &["--public-url", "http://127.0.0.1:3000"]).unwrap().public_url.unwrap();
        assert!(!plain.https);
        for bad in
            ["chat.example.com", "ftp://chat.example.com", "https://", "https://chat.example.com/app", "https://u:p@x"]
        {
            assert_eq!(
                parse(&[], &["--public-url", bad]).unwrap_err(),
                ConfigError::BadPublicUrl(bad.to_string()),
                "{bad}"
            );
        }
    }

    #[test]
    fn mail_needs_an_smtp_url_and_a_sender_and_keeps_the_password_off_the_command_line() {
        assert_eq!(parse(&[], &[]).unwrap().mail, None);
        assert_eq!(parse(&[("TOURGUIDE_MAIL_FROM", "t@example.com")], &[]).unwrap().mail, None);
        let from = [("TOURGUIDE_MAIL_FROM", "Tourguide <tourguide@example.com>")];
        let mail = parse(&from, &["--smtp-url", "smtp://tg@mail.example.com:587"]).unwrap().mail.unwrap();
        assert_eq!((mail.smtp.host.as_str(), mail.smtp.port), ("mail.example.com", 587));
        assert_eq!(mail.from.to_string(), "Tourguide <tourguide@example.com>");
        let env = [
            ("TOURGUIDE_SMTP_URL", "smtps://tg:one@mail.example.com"),
            ("TOURGUIDE_SMTP_PASSWORD", "two"),
            ("TOURGUIDE_MAIL_FROM", "tourguide@example.com"),
        ];
        let mail = parse(&env, &[]).unwrap().mail.unwrap();
        assert_eq!((mail.smtp.user.as_deref(), mail.smtp.password.as_deref()), (Some("tg"), Some("two")));
        assert_eq!(
            parse(&from, &["--smtp-url", "smtp://tg:secret@mail.example.com"]).unwrap_err(),
            ConfigError::SmtpPasswordOnCommandLine
        );
        assert_eq!(
            parse(&[("TOURGUIDE_SMTP_PASSWORD", "x"), from[0]], &["--smtp-url", "smtp://mail.example.com"])
                .unwrap_err(),
            ConfigError::SmtpPasswordWithoutUser
        );
        assert_eq!(
            parse(&[("TOURGUIDE_SMTP_URL", "smtp://u:p@mail.example.com?tls=none"), from[0]], &[]).unwrap_err(),
            ConfigError::SmtpPasswordInTheClear
        );
        let said = parse(&[("TOURGUIDE_SMTP_URL", "smtp://u:hunter2@mail.example.com/x"), from[0]], &[])
            .unwrap_err()
            .to_string();
        assert!(!said.contains("hunter2") && said.contains("smtp://***@mail.example.com/x"), "{said}");
        assert_eq!(parse(&[], &["--smtp-url", "smtp://mail.example.com"]).unwrap_err(), ConfigError::MailFromMissing);
        assert_eq!(
            parse(&[], &["--smtp-url", "smtp://mail.example.com", "--mail-from", "Tourguide"]).unwrap_err(),
            ConfigError::BadMailFrom("Tourguide".into())
        );
    }

    #[test]
    fn trusted_proxies_are_addresses_or_ranges() {
        assert!(parse(&[], &[]).unwrap().trusted_proxies.is_empty());
        let env = [("TOURGUIDE_TRUSTED_PROXIES", "10.0.0.0/8")];
        let from_env = parse(&env, &[]).unwrap().trusted_proxies;
        assert_eq!(from_env, crate::proxies::TrustedProxies::parse("10.0.0.0/8").unwrap());
        let from_args = parse(&env, &["--trusted-proxies", "127.0.0.1,::1"]).unwrap().trusted_proxies;
        assert_eq!(
            from_args,
            crate::proxies::TrustedProxies::parse("127.0.0.1, ::1").unwrap(),
            "the command line wins"
        );
        for bad in ["proxy.internal", "10.0.0.0/40", "127.0.0.1;10.0.0.1"] {
            assert_eq!(
                parse(&[], &["--trusted-proxies", bad]).unwrap_err(),
                ConfigError::BadTrustedProxies(bad.to_string()),
                "{bad}"
            );
        }
    }

    #[test]
    fn arguments_win_over_the_environment() {
        let config =
            parse(&[("TOURGUIDE_DATABASE", "env.db")], &["--database", "arg.db", "--address=0.0.0.0:8080"]).unwrap();
        assert_eq!(config.database, Location::Sqlite(PathBuf::from("arg.db")));
        assert_eq!(config.address.to_string(), "0.0.0.0:8080");
    }

    #[test]
    fn bad_values_are_named() {
        let unknown = parse(&[], &["--bogus"]).unwrap_err().to_string();
        assert!(unknown.contains("--bogus"), "{unknown}");
        let missing = parse(&[], &["--database"]).unwrap_err().to_string();
        assert!(missing.contains("--database"), "{missing}");
        assert!(matches!(parse(&[("TOURGUIDE_ADDRESS", "nowhere")], &[]).unwrap_err(), ConfigError::BadAddress { .. }));
        assert!(matches!(parse(&[], &["--database", " "]).unwrap_err(), ConfigError::Empty { .. }));
        let help = parse(&[], &["--help"]).unwrap_err().to_string();
        assert!(help.contains("--database") && help.contains("TOURGUIDE_DATABASE"), "{help}");
    }

    /// `deploy/tourguide.env`, which `scripts/dist` ships: every variable in it, set or left off as
    /// an example, is one the server reads, and the server starts with its values.
    #[test]
    fn the_sample_environment_file_names_only_what_the_server_reads() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/tourguide.env")).unwrap();
        let assignment = |line: &str| {
            let (name, value) = line.split_once('=')?;
            name.chars().all(|c| c.is_ascii_uppercase() || c == '_').then(|| (name.to_string(), value.to_string()))
        };
        let set: Vec<(String, String)> = text.lines().filter_map(assignment).collect();
        let examples: Vec<(String, String)> =
            text.lines().filter_map(|line| line.strip_prefix('#')).filter_map(assignment).collect();
        assert!(set.len() >= 3 && examples.len() >= 5, "{set:?} {examples:?}");

        let asked = std::sync::Mutex::new(std::collections::HashSet::new());
        let lookup = |values: &[(String, String)]| {
            let values = values.to_vec();
            let asked = &asked;
            move |name: &str| {
                asked.lock().unwrap().insert(name.to_string());
                values.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone())
            }
        };
        let config = Config::from_env_and_args(lookup(&set), Vec::new()).expect("the sample settings are valid");
        assert_eq!(config.site_root, "/opt/tourguide/site");
        assert!(config.json_logs);
        // The examples too, all at once, but for the MCP file, which exists only on a real host.
        let mut all = set.clone();
        all.retain(|(name, _)| !examples.iter().any(|(example, _)| example == name));
        all.extend(examples.iter().filter(|(name, _)| name != "TOURGUIDE_MCP_CONFIG").cloned());
        let config = Config::from_env_and_args(lookup(&all), Vec::new()).expect("the examples are valid");
        assert!(matches!(config.database, Location::Postgres(_)));
        let model = runtime::OpenAiConfig::from_lookup(lookup(&all)).expect("the model example is valid");
        assert!(model.is_some());

        let asked = asked.into_inner().unwrap();
        for (name, _) in set.iter().chain(&examples) {
            assert!(asked.contains(name), "{name} is in deploy/tourguide.env, but the server never reads it");
        }
    }
}
