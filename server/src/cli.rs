//! The operator's commands beside `serve`: accounts (`user add|list|passwd|remove`) and a backup
//! of a running SQLite database. Passwords come from a prompt, or from standard input when it is
//! not a terminal (one line), never from the command line.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Parser, Subcommand};
use db::{Db, Location};

use crate::admin::{checked_events, target_sentence};
use crate::store::{Role, Store, StoreError};
use crate::webhooks::sign;
use crate::webhooks::target::{self, OwnAddress};

#[derive(Parser, Debug)]
#[command(
    name = "tourguide",
    about = "Tourguide's operator commands. Without one, `tourguide [serve] [OPTIONS]` runs the app."
)]
pub struct Admin {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Accounts: add, list, set a password, remove.
    User {
        #[command(subcommand)]
        action: UserAction,
        /// SQLite file or postgres:// URL [TOURGUIDE_DATABASE] (default ./data/tourguide.db)
        #[arg(long, global = true, value_name = "PATH|URL")]
        database: Option<String>,
    },
    /// Webhooks: add (prints its secret, once), list, remove.
    Webhook {
        #[command(subcommand)]
        action: WebhookAction,
        /// SQLite file or postgres:// URL [TOURGUIDE_DATABASE] (default ./data/tourguide.db)
        #[arg(long, global = true, value_name = "PATH|URL")]
        database: Option<String>,
    },
    /// A consistent copy of a SQLite database, also while the app runs.
    Backup {
        file: PathBuf,
        /// SQLite file [TOURGUIDE_DATABASE] (default ./data/tourguide.db)
        #[arg(long, value_name = "PATH")]
        database: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum UserAction {
    /// Adds an account; its password is asked for.
    Add {
        name: String,
        #[arg(long, value_enum, default_value = "editor")]
        role: RoleArg,
        /// May approve changes in their own conversations (else a reviewer decides them).
        #[arg(long)]
        may_approve_own: bool,
    },
    List,
    /// Sets a new password; the account's sessions end.
    Passwd {
        name: String,
    },
    /// Removes an account and ends its sessions.
    #[command(group(ArgGroup::new("conversations").required(true).args(["delete_conversations", "keep_conversations"])))]
    Remove {
        name: String,
        /// Deletes the account's conversations with it.
        #[arg(long)]
        delete_conversations: bool,
        /// Keeps the conversations: the account stays, locked (no password opens it).
        #[arg(long)]
        keep_conversations: bool,
    },
}

#[derive(Subcommand, Debug)]
enum WebhookAction {
    /// Adds a webhook and prints its secret (shown only this once).
    Add {
        url: String,
        /// Comma-separated: run.waiting, run.decided, run.expired, run.failed, run.reminder
        #[arg(long, value_name = "KIND[,KIND…]", default_value = "run.waiting,run.decided,run.expired,run.failed")]
        events: String,
    },
    List,
    /// Removes a webhook and its deliveries.
    Remove {
        id: i64,
    },
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum RoleArg {
    Admin,
    Editor,
}

/// Whether these arguments name an operator command (else they are `serve`'s).
pub fn is_admin_command(args: &[String]) -> bool {
    matches!(args.first().map(String::as_str), Some("user" | "webhook" | "backup"))
}

#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error("{0}")]
    Usage(String),
    #[error("cannot open the database: {0}")]
    Open(String),
    #[error("no user named '{0}'")]
    NoSuchUser(String),
    #[error("a user named '{0}' exists already")]
    Exists(String),
    #[error(
        "the user name '{0}' mixes scripts or has characters that could pass for others; use letters of one script"
    )]
    Confusable(String),
    #[error("the password must have at least 8 characters")]
    ShortPassword,
    #[error("no password given")]
    NoPassword,
    #[error("a backup copies a SQLite database; for PostgreSQL use pg_dump")]
    BackupNeedsSqlite,
    #[error("'{0}' exists already; a backup never overwrites a file")]
    BackupExists(String),
    #[error("{0}")]
    Failed(String),
    #[error("no webhook {0}")]
    NoSuchWebhook(i64),
}

/// Runs an operator command; prints what it did, or a sentence and exit code 2 (bad use) or 1.
pub async fn run(args: Vec<String>, env: impl Fn(&str) -> Option<String>) -> ExitCode {
    let admin = match Admin::try_parse_from(std::iter::once("tourguide".to_string()).chain(args)) {
        Ok(admin) => admin,
        Err(error) if matches!(error.kind(), clap::error::ErrorKind::DisplayHelp) => {
            print!("{}", error.render());
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprint!("{}", error.render());
            return ExitCode::from(2);
        }
    };
    match execute(admin, env).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(
            error @ (CliError::Usage(_) | CliError::ShortPassword | CliError::NoPassword | CliError::Confusable(_)),
        ) => {
            eprintln!("tourguide: {error}");
            ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("tourguide: {error}");
            ExitCode::from(1)
        }
    }
}

fn location(database: Option<String>, env: &impl Fn(&str) -> Option<String>) -> Location {
    Location::parse(&database.or_else(|| env("TOURGUIDE_DATABASE")).unwrap_or_else(|| "./data/tourguide.db".into()))
}

async fn open(location: &Location) -> Result<Store, CliError> {
    let db = Db::open(location).await.map_err(|error| CliError::Open(error.to_string()))?;
    for migrations in [crate::store::migrations(), runtime::migrations(), content::store::migrations()] {
        db.migrate(&migrations).await.map_err(|error| CliError::Open(error.to_string()))?;
    }
    let store = Store::new(db);
    crate::fill_name_keys(&store).await.map_err(|error| CliError::Open(error.to_string()))?;
    Ok(store)
}

fn failed(error: impl std::fmt::Display) -> CliError {
    CliError::Failed(error.to_string())
}

/// A password from a prompt (twice) on a terminal, else the first line of standard input.
fn read_password(name: &str) -> Result<String, CliError> {
    let password = if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password(format!("Password for {name}: ")).map_err(failed)?;
        let again = rpassword::prompt_password("Again: ").map_err(failed)?;
        if first != again {
            return Err(CliError::Usage("the two passwords differ".into()));
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map_err(failed)?;
        line.trim_end_matches(['\n', '\r']).to_string()
    };
    if password.is_empty() {
        return Err(CliError::NoPassword);
    }
    if password.chars().count() < 8 {
        return Err(CliError::ShortPassword);
    }
    Ok(password)
}

async fn execute(admin: Admin, env: impl Fn(&str) -> Option<String>) -> Result<(), CliError> {
    match admin.command {
        Command::User { action, database } => {
            let store = open(&location(database, &env)).await?;
            user(&store, action).await
        }
        Command::Webhook { action, database } => {
            let store = open(&location(database, &env)).await?;
            webhook(&store, action, &env).await
        }
        Command::Backup { file, database } => {
            let Location::Sqlite(path) = location(database, &env) else { return Err(CliError::BackupNeedsSqlite) };
            if file.exists() {
                return Err(CliError::BackupExists(file.display().to_string()));
            }
            let store = open(&Location::Sqlite(path)).await?;
            store.backup_into(&file).await.map_err(failed)?;
            println!("Backed up to {}", file.display());
            Ok(())
        }
    }
}

async fn user(store: &Store, action: UserAction) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match action {
        UserAction::Add { name, role, may_approve_own } => {
            let name = name.trim().to_string();
            if name.is_empty() || name.chars().count() > 64 {
                return Err(CliError::Usage("a user name has 1 to 64 characters".into()));
            }
            if crate::names::is_confusable(&name) {
                return Err(CliError::Confusable(name));
            }
            // By its key: `BOB` is taken when `bob` is, and the sentence names the account.
            if let Some(existing) = store.user_by_name(&name).await.map_err(failed)? {
                return Err(CliError::Exists(existing.username));
            }
            let password = read_password(&name)?;
            let role = match role {
                RoleArg::Admin => Role::Admin,
                RoleArg::Editor => Role::Editor,
            };
            let hash = crate::auth::hash_password(&password);
            match store.add_user(&name, &hash, role, may_approve_own).await {
                Ok(_) => {}
                Err(StoreError::NameTaken) => return Err(CliError::Exists(name)),
                Err(error) => return Err(failed(error)),
            }
            let _ = writeln!(
                out,
                "Added {name} ({}{}).",
                role.as_str(),
                if may_approve_own { ", may approve own changes" } else { "" }
            );
        }
        UserAction::List => {
            for user in store.users().await.map_err(failed)? {
                let approve =
                    if user.may_approve_own || user.role == Role::Admin { "approves own changes" } else { "four-eyes" };
                let _ =
                    writeln!(out, "{}\t{}\t{approve}\t{} sessions", user.username, user.role.as_str(), user.sessions);
            }
        }
        UserAction::Passwd { name } => {
            let user =
                store.user_by_name(&name).await.map_err(failed)?.ok_or_else(|| CliError::NoSuchUser(name.clone()))?;
            let password = read_password(&name)?;
            store.set_password(user.id, &crate::auth::hash_password(&password)).await.map_err(failed)?;
            let _ = writeln!(out, "Set a new password for {name}; their sessions ended.");
        }
        UserAction::Remove { name, delete_conversations, keep_conversations: _ } => {
            let user =
                store.user_by_name(&name).await.map_err(failed)?.ok_or_else(|| CliError::NoSuchUser(name.clone()))?;
            if delete_conversations {
                store.delete_user(user.id).await.map_err(failed)?;
                let _ = writeln!(out, "Removed {name} and their conversations.");
            } else {
                store.lock_user(user.id).await.map_err(failed)?;
                let _ = writeln!(out, "Locked {name}: their sessions ended, their conversations are kept.");
            }
        }
    }
    Ok(())
}

/// Where the server of this environment is reached, as far as the environment says: a webhook
/// must not point there.
fn own_address(env: &impl Fn(&str) -> Option<String>) -> OwnAddress {
    OwnAddress {
        listen: env("TOURGUIDE_ADDRESS").or_else(|| env("LEPTOS_SITE_ADDR")).and_then(|text| text.trim().parse().ok()),
        public_origin: env("TOURGUIDE_PUBLIC_URL")
            .and_then(|text| crate::config::PublicUrl::parse(&text))
            .map(|url| url.origin),
    }
}

async fn webhook(store: &Store, action: WebhookAction, env: &impl Fn(&str) -> Option<String>) -> Result<(), CliError> {
    let sentence = |text| CliError::Usage(app::i18n::Lang::En.t(text).to_string());
    let mut out = std::io::stdout().lock();
    match action {
        WebhookAction::Add { url, events } => {
            let url = target::check(&url, &own_address(env)).map_err(|error| sentence(target_sentence(error)))?;
            let events: Vec<String> = events.split(',').map(|kind| kind.trim().to_string()).collect();
            let events = checked_events(&events).map_err(sentence)?;
            let secret = sign::new_secret();
            let id = store.add_webhook(url.as_str(), &events, &secret).await.map_err(failed)?;
            let _ = writeln!(out, "Added webhook {id} for {} ({}).", url, events.join(", "));
            let _ = writeln!(out, "Its secret (shown only now; the receiver checks signatures with it): {secret}");
        }
        WebhookAction::List => {
            for webhook in store.webhooks().await.map_err(failed)? {
                let kinds: Vec<&str> = webhook.kinds().collect();
                let _ = writeln!(
                    out,
                    "{}\t{}\t{}\t{}",
                    webhook.id,
                    webhook.url,
                    kinds.join(","),
                    sign::masked(&webhook.secret)
                );
            }
        }
        WebhookAction::Remove { id } => {
            if !store.remove_webhook(id).await.map_err(failed)? {
                return Err(CliError::NoSuchWebhook(id));
            }
            let _ = writeln!(out, "Removed webhook {id}.");
        }
    }
    Ok(())
}
