//! Whether a URL may be a webhook's: an absolute http(s) URL with a host, without a user name or
//! password in it, that is not this server itself (its listen address, or the origin of
//! `--public-url`, which a proxy sends here). Loopback is allowed on another port: a receiver on
//! the same host (a test's, a local relay). Names are compared as written; a DNS name that
//! resolves to this server is not looked up.

use std::net::{IpAddr, SocketAddr};

use url::{Host, Url};

/// Why a URL is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("not a URL")]
    Malformed,
    #[error("not http or https")]
    NotHttp,
    #[error("no host")]
    NoHost,
    #[error("a user name or password in the URL")]
    Userinfo,
    #[error("this server itself")]
    ThisServer,
}

/// Where this server is reached: what a webhook must not point at.
#[derive(Debug, Clone, Default)]
pub struct OwnAddress {
    /// The address it listens on (the bound one, when the configuration said port 0).
    pub listen: Option<SocketAddr>,
    /// `--public-url`'s origin.
    pub public_origin: Option<String>,
}

const LONGEST: usize = 2048;

pub fn check(text: &str, own: &OwnAddress) -> Result<Url, TargetError> {
    let text = text.trim();
    if text.is_empty() || text.len() > LONGEST {
        return Err(TargetError::Malformed);
    }
    let url = Url::parse(text).map_err(|error| match error {
        url::ParseError::EmptyHost => TargetError::NoHost,
        _ => TargetError::Malformed,
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(TargetError::NotHttp);
    }
    let host = url.host().ok_or(TargetError::NoHost)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(TargetError::Userinfo);
    }
    let port = url.port_or_known_default().ok_or(TargetError::Malformed)?;
    if let Some(public) = own.public_origin.as_deref().and_then(|origin| Url::parse(origin).ok()) {
        if public.host() == Some(host.clone()) && public.port_or_known_default() == Some(port) {
            return Err(TargetError::ThisServer);
        }
    }
    if let Some(listen) = own.listen {
        let ip = match &host {
            Host::Ipv4(ip) => Some(IpAddr::V4(*ip)),
            Host::Ipv6(ip) => Some(IpAddr::V6(*ip)),
            Host::Domain(name) if is_localhost(name) => Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
            Host::Domain(_) => None,
        };
        if let Some(ip) = ip {
            if port == listen.port() && reaches(ip, listen.ip()) {
                return Err(TargetError::ThisServer);
            }
        }
    }
    Ok(url)
}

fn is_localhost(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// Whether a connection to `target` reaches a server listening on `listen` (of this host).
fn reaches(target: IpAddr, listen: IpAddr) -> bool {
    let local = |ip: IpAddr| ip.is_loopback() || ip.is_unspecified();
    target == listen || (listen.is_unspecified() && local(target)) || (local(target) && local(listen))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> OwnAddress {
        OwnAddress {
            listen: Some("127.0.0.1:3000".parse().unwrap()),
            public_origin: Some("https://chat.example.com".into()),
        }
    }

    #[test]
    fn only_an_http_url_elsewhere_is_a_webhooks() {
        for good in [
            "https://hooks.slack.com/services/T0/B0/XX",
            "http://127.0.0.1:3001/hook",
            "http://localhost:8080/",
            "https://chat.example.com:8443/other-service",
            "http://[::1]:9000/x",
        ] {
            assert!(check(good, &own()).is_ok(), "{good}");
        }
        let refused = [
            ("", TargetError::Malformed),
            ("hooks.example.com/x", TargetError::Malformed),
            ("http://exa mple.com/", TargetError::Malformed),
            ("ftp://files.example.com/", TargetError::NotHttp),
            ("javascript:alert(1)", TargetError::NotHttp),
            ("file:///etc/passwd", TargetError::NotHttp),
            ("http://", TargetError::NoHost),
            ("https://user:pass@hooks.example.com/", TargetError::Userinfo),
            ("https://token@hooks.example.com/", TargetError::Userinfo),
            ("http://127.0.0.1:3000/api/decide", TargetError::ThisServer),
            ("http://localhost:3000/", TargetError::ThisServer),
            ("http://[::1]:3000/", TargetError::ThisServer),
            ("http://0.0.0.0:3000/", TargetError::ThisServer),
            ("https://chat.example.com/api/decide", TargetError::ThisServer),
            ("https://CHAT.example.com:443/", TargetError::ThisServer),
        ];
        for (bad, why) in refused {
            assert_eq!(check(bad, &own()).unwrap_err(), why, "{bad}");
        }
        let anywhere = OwnAddress { listen: Some("0.0.0.0:3000".parse().unwrap()), public_origin: None };
        assert_eq!(check("http://127.0.0.2:3000/", &anywhere).unwrap_err(), TargetError::ThisServer);
        assert!(check("http://10.1.2.3:3000/", &OwnAddress::default()).is_ok());
    }
}
