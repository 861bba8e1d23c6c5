//! Configuration from the command line and the environment, command line first.

use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct Config {
    pub database_path: PathBuf,
    pub address: SocketAddr,
    pub site_root: String,
    /// Password for the demo user created on first start; random (and printed) when unset.
    pub demo_password: Option<String>,
    /// Off for a web-only process when another process runs the background worker.
    pub worker: bool,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("unknown argument '{0}' (try --help)")]
    UnknownArgument(String),
    #[error("'{0}' needs a value")]
    MissingValue(String),
    #[error("'{value}' is not a valid address for {name} (expected e.g. 127.0.0.1:3000)")]
    BadAddress { name: String, value: String },
    #[error("'{value}' is not a valid value for {name} (expected on or off)")]
    BadSwitch { name: String, value: String },
    #[error("{name} must not be empty")]
    Empty { name: String },
    #[error("{0}")]
    Help(String),
}

pub const HELP: &str = "\
tourguide server

Options (each also read from the environment variable in brackets):
  --database PATH   SQLite file [TOURGUIDE_DATABASE] (default ./data/tourguide.db)
  --address ADDR    listen address [TOURGUIDE_ADDRESS or LEPTOS_SITE_ADDR] (default 127.0.0.1:3000)
  --site-root DIR   built site with pkg/ [LEPTOS_SITE_ROOT] (default target/site)
  --worker on|off   run the background worker in this process [TOURGUIDE_WORKER] (default on;
                    off for a web-only process while another one carries the runs on)
  --help            this text

The demo user's password comes from TOURGUIDE_DEMO_PASSWORD; without it a random one is printed
when the user is created on first start.";

impl Config {
    pub fn from_env_and_args(
        env: impl Fn(&str) -> Option<String>,
        args: impl IntoIterator<Item = String>,
    ) -> Result<Config, ConfigError> {
        let mut database = env("TOURGUIDE_DATABASE");
        let mut address = env("TOURGUIDE_ADDRESS").or_else(|| env("LEPTOS_SITE_ADDR"));
        let mut site_root = env("LEPTOS_SITE_ROOT");
        let mut worker = env("TOURGUIDE_WORKER");
        let mut args = args.into_iter();
        while let Some(argument) = args.next() {
            let (name, inline) = match argument.split_once('=') {
                Some((name, value)) => (name.to_string(), Some(value.to_string())),
                None => (argument.clone(), None),
            };
            let slot = match name.as_str() {
                "--database" => &mut database,
                "--address" => &mut address,
                "--site-root" => &mut site_root,
                "--worker" => &mut worker,
                "--help" | "-h" => return Err(ConfigError::Help(HELP.to_string())),
                _ => return Err(ConfigError::UnknownArgument(argument)),
            };
            let value = match inline {
                Some(value) => value,
                None => args.next().ok_or_else(|| ConfigError::MissingValue(name.clone()))?,
            };
            *slot = Some(value);
        }

        let database = database.unwrap_or_else(|| "./data/tourguide.db".to_string());
        if database.trim().is_empty() {
            return Err(ConfigError::Empty { name: "the database path".into() });
        }
        let address_text = address.unwrap_or_else(|| "127.0.0.1:3000".to_string());
        let address = address_text
            .parse()
            .map_err(|_| ConfigError::BadAddress { name: "the listen address".into(), value: address_text })?;
        let site_root = site_root.unwrap_or_else(|| "target/site".to_string());
        if site_root.trim().is_empty() {
            return Err(ConfigError::Empty { name: "the site root".into() });
        }
        let worker = match worker.as_deref().map(str::trim) {
            None | Some("on") => true,
            Some("off") => false,
            Some(other) => return Err(ConfigError::BadSwitch { name: "the worker".into(), value: other.to_string() }),
        };
        Ok(Config {
            database_path: PathBuf::from(database),
            address,
            site_root,
            demo_password: env("TOURGUIDE_DEMO_PASSWORD").filter(|value| !value.is_empty()),
            worker,
        })
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(config.database_path, PathBuf::from("./data/tourguide.db"));
        assert_eq!(config.address.to_string(), "127.0.0.1:3000");
        assert_eq!(config.site_root, "target/site");
        assert!(config.worker);
    }

    #[test]
    fn the_worker_can_be_left_to_another_process() {
        assert!(!parse(&[("TOURGUIDE_WORKER", "off")], &[]).unwrap().worker);
        assert!(parse(&[("TOURGUIDE_WORKER", "off")], &["--worker", "on"]).unwrap().worker);
        assert!(matches!(parse(&[], &["--worker=maybe"]).unwrap_err(), ConfigError::BadSwitch { .. }));
    }

    #[test]
    fn arguments_win_over_the_environment() {
        let config =
            parse(&[("TOURGUIDE_DATABASE", "env.db")], &["--database", "arg.db", "--address=0.0.0.0:8080"]).unwrap();
        assert_eq!(config.database_path, PathBuf::from("arg.db"));
        assert_eq!(config.address.to_string(), "0.0.0.0:8080");
    }

    #[test]
    fn bad_values_are_named() {
        assert_eq!(parse(&[], &["--bogus"]).unwrap_err(), ConfigError::UnknownArgument("--bogus".into()));
        assert_eq!(parse(&[], &["--database"]).unwrap_err(), ConfigError::MissingValue("--database".into()));
        assert!(matches!(parse(&[("TOURGUIDE_ADDRESS", "nowhere")], &[]).unwrap_err(), ConfigError::BadAddress { .. }));
        assert!(matches!(parse(&[], &["--database", " "]).unwrap_err(), ConfigError::Empty { .. }));
    }
}
