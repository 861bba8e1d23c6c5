//! E-mail of the runs that wait, are decided, expire or fail, to the users who asked for it: off
//! unless `--smtp-url` names a server. The mails are rows of their own (`store::mail`), written by
//! the webhooks' fan-out in its transaction and sent by the same worker with the same lease and
//! backoff, so they share the webhooks' promise: at least once, never lost, one worker per mail.
//! A mail only links to the conversation, which asks its reader to sign in: nothing can be
//! approved or answered from a mail.

use std::fmt;
use std::time::Duration;

use app::i18n::{Lang, Text};
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::Value;

use crate::delivery_settings::DeliverySettings;
use crate::store::{AttemptOutcome, ClaimedMail, Store};

/// How the connection to the mail server is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// `smtps://`: TLS from the first byte (port 465).
    Tls,
    /// `smtp://`: STARTTLS, and no mail without it (port 587).
    StartTls,
    /// `smtp://…?tls=opportunistic`: STARTTLS when the server offers it.
    Opportunistic,
    /// `smtp://…?tls=none`: plain text, for a relay on this host.
    None,
}

/// `--smtp-url`, read. Its `Debug` leaves the password out.
#[derive(Clone, PartialEq, Eq)]
pub struct SmtpUrl {
    pub host: String,
    pub port: u16,
    pub security: Security,
    pub user: Option<String>,
    pub password: Option<String>,
}

impl fmt::Debug for SmtpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpUrl")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

impl SmtpUrl {
    /// `smtp://[user[:password]@]host[:port][?tls=required|opportunistic|none]` or
    /// `smtps://[user[:password]@]host[:port]`; user and password percent-encoded.
    pub fn parse(text: &str) -> Option<SmtpUrl> {
        let url = url::Url::parse(text.trim()).ok()?;
        let mut security = match url.scheme() {
            "smtps" => Security::Tls,
            "smtp" => Security::StartTls,
            _ => return None,
        };
        for (key, value) in url.query_pairs() {
            security = match (key.as_ref(), value.as_ref(), security) {
                ("tls", "required", Security::StartTls) => Security::StartTls,
                ("tls", "opportunistic", Security::StartTls) => Security::Opportunistic,
                ("tls", "none", Security::StartTls) => Security::None,
                _ => return None,
            };
        }
        if !matches!(url.path(), "" | "/") || url.fragment().is_some() {
            return None;
        }
        let host = url.host_str().filter(|host| !host.is_empty())?.trim_start_matches('[').trim_end_matches(']');
        let decode =
            |text: &str| percent_encoding::percent_decode_str(text).decode_utf8().ok().map(|text| text.into_owned());
        let user = Some(url.username()).filter(|user| !user.is_empty()).map(decode);
        let password = url.password().map(decode);
        Some(SmtpUrl {
            host: host.to_string(),
            port: url.port().unwrap_or(if security == Security::Tls { 465 } else { 587 }),
            security,
            user: user.map(Option::unwrap_or_default).filter(|user| !user.is_empty()),
            password: password.map(Option::unwrap_or_default),
        })
    }

    /// A password sent over a connection without TLS to another host could be read on the way.
    pub fn sends_password_in_the_clear(&self) -> bool {
        let loopback = self.host == "localhost"
            || self.host.parse::<std::net::IpAddr>().is_ok_and(|address| address.is_loopback());
        self.security == Security::None && self.password.is_some() && !loopback
    }
}

/// The URL as an error message may show it: without what stands before the host.
pub fn redacted(text: &str) -> String {
    match text.split_once("://") {
        Some((scheme, rest)) if rest.contains('@') => {
            format!("{scheme}://***@{}", &rest[rest.rfind('@').map_or(0, |at| at + 1)..])
        }
        _ => text.to_string(),
    }
}

/// What the server sends mail with (`--smtp-url`, `--mail-from`).
#[derive(Debug, Clone, PartialEq)]
pub struct MailConfig {
    pub smtp: SmtpUrl,
    pub from: Mailbox,
}

/// Sends the mails: the transport, the sender, and where the links point.
#[derive(Clone)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// `--public-url`'s origin; without it a mail names the path alone.
    public_origin: Option<String>,
}

impl Mailer {
    pub fn new(
        config: &MailConfig,
        public_origin: Option<String>,
        timeout: Duration,
    ) -> Result<Mailer, lettre::transport::smtp::Error> {
        let smtp = &config.smtp;
        let tls = match smtp.security {
            Security::Tls => Tls::Wrapper(TlsParameters::new(smtp.host.clone())?),
            Security::StartTls => Tls::Required(TlsParameters::new(smtp.host.clone())?),
            Security::Opportunistic => Tls::Opportunistic(TlsParameters::new(smtp.host.clone())?),
            Security::None => Tls::None,
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(smtp.host.clone())
            .port(smtp.port)
            .tls(tls)
            .timeout(Some(timeout));
        if let Some(user) = &smtp.user {
            builder = builder.credentials(Credentials::new(user.clone(), smtp.password.clone().unwrap_or_default()));
        }
        if public_origin.is_none() {
            tracing::info!(
                "e-mails name a conversation by its path alone (/c/…): start with --public-url for a link to click"
            );
        }
        Ok(Mailer { transport: builder.build(), from: config.from.clone(), public_origin })
    }

    /// Sends one claimed mail and records what became of it.
    pub async fn attempt(&self, store: &Store, worker: &str, mail: ClaimedMail, settings: &DeliverySettings) {
        let outcome = match self.send(&mail, settings.timeout).await {
            Ok(()) => AttemptOutcome::Delivered { status: 250 },
            Err(Failure::Permanent(error)) => {
                tracing::warn!(mail = mail.id, %error, "a mail was refused for good");
                AttemptOutcome::Failed { status: None, error }
            }
            Err(Failure::Transient(error)) => {
                let next = db::now().saturating_add(secs(settings.backoff(mail.attempts)));
                if next >= mail.created_at.saturating_add(secs(settings.give_up_after)) {
                    tracing::warn!(mail = mail.id, %error, "a mail could not be sent for a day; given up");
                    AttemptOutcome::Failed { status: None, error }
                } else {
                    tracing::info!(mail = mail.id, %error, attempts = mail.attempts, "a mail is tried again later");
                    AttemptOutcome::Retry { status: None, error, next_attempt_at: next }
                }
            }
        };
        match store.record_mail_attempt(mail.id, worker, &outcome).await {
            Ok(true) => {}
            Ok(false) => tracing::info!(mail = mail.id, "a mail was taken over before its outcome was recorded"),
            // The lease runs out and the mail is sent again: at least once.
            Err(error) => tracing::warn!(mail = mail.id, %error, "could not record a mail"),
        }
    }

    async fn send(&self, mail: &ClaimedMail, timeout: Duration) -> Result<(), Failure> {
        let Some(address) = &mail.address else {
            return Err(Failure::Permanent("the user no longer wants e-mail or has no address".into()));
        };
        let to: Mailbox =
            address.parse().map_err(|_| Failure::Permanent("the user's address is not an e-mail address".into()))?;
        let lang = mail.language.as_deref().and_then(Lang::parse).unwrap_or_default();
        let payload: Value = serde_json::from_str(&mail.payload).unwrap_or(Value::Null);
        let to_reviewer = payload.get("owner_id").and_then(Value::as_i64) != Some(mail.user_id);
        let composed = compose(&mail.kind, &payload, lang, self.public_origin.as_deref(), to_reviewer);
        // The same mail sent again after a crash has the same Message-ID, which mail clients
        // recognise as one.
        let message_id = format!("<{}.{}@{}>", mail.event_id, mail.user_id, self.from.email.domain());
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(composed.subject)
            .message_id(Some(message_id))
            .header(ContentType::TEXT_PLAIN)
            .body(composed.body)
            .map_err(|error| Failure::Permanent(format!("the mail could not be made: {error}")))?;
        match tokio::time::timeout(timeout, self.transport.send(message)).await {
            Err(_) => Err(Failure::Transient("the mail server did not answer in time".into())),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => {
                tracing::debug!(%error, "the mail server refused a mail");
                let code = error.status().map(|code| code.to_string());
                Err(match code {
                    Some(code) if error.is_permanent() => {
                        Failure::Permanent(format!("the mail server refused it ({code})"))
                    }
                    Some(code) => Failure::Transient(format!("the mail server answered {code}")),
                    None if error.is_timeout() => Failure::Transient("the mail server did not answer in time".into()),
                    None if error.is_tls() => Failure::Transient("no TLS connection to the mail server".into()),
                    None => Failure::Transient("could not talk to the mail server".into()),
                })
            }
        }
    }
}

enum Failure {
    /// Trying again would be refused again (a 5xx answer, an address that cannot be one).
    Permanent(String),
    Transient(String),
}

fn secs(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

/// A mail's subject and plain-text body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composed {
    pub subject: String,
    pub body: String,
}

/// The mail of an event in `lang`: a subject naming what happened and the conversation's title,
/// a body with the details, the link (or the path, without `--public-url`), and that deciding
/// needs a sign-in. `to_reviewer`: the run is another user's, whose change waits for a reviewer.
pub fn compose(kind: &str, payload: &Value, lang: Lang, public_origin: Option<&str>, to_reviewer: bool) -> Composed {
    let field = |name: &str| payload.get(name).and_then(Value::as_str).filter(|text| !text.is_empty());
    let untitled = lang.t(Text::MailUntitled);
    let title = field("title").unwrap_or(untitled);
    // A question's tool is `ask_choice` (as in the webhooks' `text`).
    let approval = field("tool").is_some_and(|tool| tool != runtime::ASK_CHOICE);
    let owner = field("owner").unwrap_or("?");
    let subject_text = match kind {
        "run.waiting" if to_reviewer => Text::MailSubjectReview,
        "run.waiting" if approval => Text::MailSubjectApproval,
        "run.waiting" => Text::MailSubjectAnswer,
        "run.decided" => Text::MailSubjectDecided,
        "run.expired" => Text::MailSubjectExpired,
        "run.failed" => Text::MailSubjectFailed,
        "run.reminder" => Text::MailSubjectReminder,
        _ => Text::MailSubjectOther,
    };
    let mut subject = lang.t(subject_text).to_string();
    if subject_text == Text::MailSubjectReview {
        subject = subject.replacen("{}", owner, 1);
    }
    let subject = subject.replacen("{}", title, 1);
    let mut lines = vec![subject.trim_start_matches("Tourguide: ").to_string(), String::new()];
    lines.push(lang.t(Text::MailConversation).replacen("{}", title, 1));
    if kind == "run.decided" {
        let decision = field("decision").map(|code| {
            crate::audit::Action::parse(code).map_or(code, |action| crate::audit::action_label(action, lang))
        });
        match (decision, field("decided_by")) {
            (Some(decision), Some(by)) => {
                lines.push(lang.t(Text::MailDecisionBy).replacen("{}", decision, 1).replacen("{}", by, 1))
            }
            (Some(decision), None) => lines.push(lang.t(Text::MailDecision).replacen("{}", decision, 1)),
            _ => {}
        }
    }
    if let Some(reason) = field("reason") {
        lines.push(lang.t(Text::MailReason).replacen("{}", reason, 1));
    }
    if kind == "run.reminder" {
        if let Some(at) = payload.get("expires_at").and_then(Value::as_i64) {
            lines.push(lang.t(Text::MailExpiresAt).replacen("{}", &utc_minute(at), 1));
        }
    }
    lines.push(String::new());
    let path = field("url").map(str::to_string).or_else(|| field("conversation_id").map(|id| format!("/c/{id}")));
    if let Some(path) = path {
        match public_origin {
            Some(origin) if path.starts_with('/') => {
                let link = format!("{}{path}", origin.trim_end_matches('/'));
                lines.push(lang.t(Text::MailOpen).replacen("{}", &link, 1));
            }
            _ => lines.push(lang.t(Text::MailOpenPath).replacen("{}", &path, 1)),
        }
    }
    lines.push(lang.t(Text::MailNoDecisionByMail).to_string());
    lines.push(String::new());
    lines.push("-- ".to_string());
    lines.push(lang.t(Text::MailWhy).to_string());
    Composed { subject, body: lines.join("\n") + "\n" }
}

fn utc_minute(seconds: i64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    time::OffsetDateTime::from_unix_timestamp(seconds).ok().and_then(|at| at.format(&format).ok()).unwrap_or_default()
}

/// Whether `text` is an address this server can send to; the address as stored.
pub fn checked_address(text: &str) -> Option<String> {
    let text = text.trim();
    (text.len() <= 254).then_some(())?;
    let address: lettre::Address = text.parse().ok()?;
    // A domain without a dot reaches no one outside this host.
    address.domain().contains('.').then(|| address.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn smtp_urls_are_read_with_their_security_and_defaults() {
        let url = SmtpUrl::parse("smtp://alice%40example.com:p%3Ass@mail.example.com:2525").unwrap();
        assert_eq!(url.host, "mail.example.com");
        assert_eq!(url.port, 2525);
        assert_eq!(url.security, Security::StartTls);
        assert_eq!(url.user.as_deref(), Some("alice@example.com"));
        assert_eq!(url.password.as_deref(), Some("p:ss"));
        assert!(!format!("{url:?}").contains("p:ss"));
        let tls = SmtpUrl::parse("smtps://mail.example.com").unwrap();
        assert_eq!((tls.port, tls.security, tls.user), (465, Security::Tls, None));
        assert_eq!(SmtpUrl::parse("smtp://relay.internal").unwrap().port, 587);
        assert_eq!(SmtpUrl::parse("smtp://127.0.0.1:25?tls=none").unwrap().security, Security::None);
        assert_eq!(SmtpUrl::parse("smtp://h?tls=opportunistic").unwrap().security, Security::Opportunistic);
        for bad in [
            "mail.example.com",
            "http://mail.example.com",
            "smtp://",
            "smtp://host/path",
            "smtp://host?tls=maybe",
            "smtps://host?tls=none",
            "smtp://host?port=25",
            "smtp://host:notaport",
        ] {
            assert_eq!(SmtpUrl::parse(bad), None, "{bad}");
        }
        assert!(SmtpUrl::parse("smtp://u:p@mail.example.com?tls=none").unwrap().sends_password_in_the_clear());
        assert!(!SmtpUrl::parse("smtp://u:p@127.0.0.1?tls=none").unwrap().sends_password_in_the_clear());
        assert!(!SmtpUrl::parse("smtp://u:p@mail.example.com").unwrap().sends_password_in_the_clear());
        assert_eq!(redacted("smtp://u:secret@host:587"), "smtp://***@host:587");
        assert_eq!(redacted("smtp://host:587"), "smtp://host:587");
    }

    #[test]
    fn addresses_are_checked() {
        assert_eq!(checked_address("  ed@example.com ").as_deref(), Some("ed@example.com"));
        for bad in ["", "ed", "ed@", "@example.com", "ed@localhost", "ed@example.com\r\nBcc: x@y.z", "a b@example.com"]
        {
            assert_eq!(checked_address(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_mail_names_the_event_the_title_and_the_link_and_cannot_decide() {
        let payload = json!({"conversation_id": "c1", "title": "Bakery", "owner": "ed", "owner_id": 2,
                             "tool": "update_page_field", "url": "/c/c1"});
        let mail = compose("run.waiting", &payload, Lang::En, Some("https://chat.example.com"), false);
        assert_eq!(mail.subject, "Tourguide: a run waits for your approval — Bakery");
        assert!(mail.body.contains("https://chat.example.com/c/c1"), "{}", mail.body);
        assert!(mail.body.contains("Conversation: Bakery"), "{}", mail.body);
        let review = compose("run.waiting", &payload, Lang::De, None, true);
        assert_eq!(review.subject, "Tourguide: Eine Änderung von ed wartet auf deine Prüfung — Bakery");
        assert!(review.body.contains("/c/c1") && !review.body.contains("http"), "{}", review.body);
        let decided = json!({"title": "Bakery", "decision": "denied", "decided_by": "demo", "reason": "too long", "url": "/c/c1"});
        let mail = compose("run.decided", &decided, Lang::En, None, false);
        assert!(mail.body.contains("Decision: Denied, by demo") && mail.body.contains("too long"), "{}", mail.body);
    }
}
