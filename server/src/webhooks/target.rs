//! Whether a URL may be a webhook's: an absolute http(s) URL with a host, without a user name or
//! password in it, that is not this server itself (its listen address, or the origin of
//! `--public-url`, which a proxy sends here). Addresses are read canonically (`::ffff:127.0.0.1`
//! is 127.0.0.1). Where a delivery may go is decided again when it is sent ([`refused`], and
//! [`GuardedResolver`] for names, each address a name resolves to): never link-local, a cloud's
//! metadata address or an unspecified one; loopback and private ranges only where the operator
//! allows them (`--webhook-private-networks on`: a receiver on the same host or the same network,
//! which an on-premise chat server is a real target for otherwise).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

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
            Host::Ipv6(ip) => Some(IpAddr::V6(*ip).to_canonical()),
            Host::Domain(name) if is_localhost(name) => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
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

/// Whether a delivery may not be sent to `ip`: link-local (169.254/16 holds the clouds' metadata
/// address), a metadata address elsewhere (AWS's `fd00:ec2::254`, Alibaba's 100.100.100.200),
/// unspecified, broadcast or multicast, always; loopback and private ranges (10/8, 172.16/12,
/// 192.168/16, 100.64/10, fc00::/7) unless `private_allowed`. An IPv4 address inside IPv6
/// (mapped, or NAT64's 64:ff9b::/96) is judged as the IPv4 one.
pub fn refused(ip: IpAddr, private_allowed: bool) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => refused_v4(v4, private_allowed),
        IpAddr::V6(v6) => {
            let segments = v6.segments();
            if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let octets = v6.octets();
                return refused_v4(Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]), private_allowed);
            }
            let link_local = segments[0] & 0xffc0 == 0xfe80;
            let metadata = v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);
            let private = v6.is_loopback() || segments[0] & 0xfe00 == 0xfc00;
            v6.is_unspecified() || v6.is_multicast() || link_local || metadata || (private && !private_allowed)
        }
    }
}

fn refused_v4(v4: Ipv4Addr, private_allowed: bool) -> bool {
    let octets = v4.octets();
    let metadata = octets == [100, 100, 100, 200];
    let shared = octets[0] == 100 && octets[1] & 0xc0 == 64;
    let private = v4.is_loopback() || v4.is_private() || shared;
    octets[0] == 0
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_link_local()
        || metadata
        || (private && !private_allowed)
}

/// A name a delivery's URL gave resolved to no address a delivery may reach.
#[derive(Debug, thiserror::Error)]
#[error("{0} resolves to no address a webhook may reach")]
pub struct RefusedAddress(pub String);

/// The delivery client's resolver: the system's answer for a name, less every address
/// [`refused`] names, so a name cannot lead where an address may not (reqwest connects only to
/// what this returns; an address written in the URL is checked before the request).
pub struct GuardedResolver {
    pub private_allowed: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let private_allowed = self.private_allowed;
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let allowed: Vec<SocketAddr> = found.filter(|address| !refused(address.ip(), private_allowed)).collect();
            if allowed.is_empty() {
                return Err(Box::new(RefusedAddress(host)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Whether a delivery to `url` is refused before any lookup: its host is an address written out
/// that [`refused`] names.
pub fn refused_literal(url: &str, private_allowed: bool) -> bool {
    match Url::parse(url).ok().and_then(|url| url.host().map(|host| host.to_owned())) {
        Some(Host::Ipv4(ip)) => refused(IpAddr::V4(ip), private_allowed),
        Some(Host::Ipv6(ip)) => refused(IpAddr::V6(ip), private_allowed),
        Some(Host::Domain(_)) => false,
        None => true,
    }
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
        // An IPv4-mapped address is the IPv4 one.
        assert_eq!(check("http://[::ffff:127.0.0.1]:3000/", &own()).unwrap_err(), TargetError::ThisServer);
        assert_eq!(check("http://[::ffff:7f00:1]:3000/x", &own()).unwrap_err(), TargetError::ThisServer);
        let anywhere = OwnAddress { listen: Some("0.0.0.0:3000".parse().unwrap()), public_origin: None };
        assert_eq!(check("http://127.0.0.2:3000/", &anywhere).unwrap_err(), TargetError::ThisServer);
        assert!(check("http://10.1.2.3:3000/", &OwnAddress::default()).is_ok());
    }

    #[test]
    fn deliveries_never_reach_link_local_or_metadata_and_private_ranges_only_when_allowed() {
        let always = [
            "169.254.169.254",
            "169.254.0.1",
            "100.100.100.200",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "ff02::1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
        ];
        for address in always {
            let ip: IpAddr = address.parse().unwrap();
            assert!(refused(ip, false) && refused(ip, true), "{address} is never reached");
        }
        let private = [
            "127.0.0.1",
            "::1",
            "::ffff:127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "fc00::1",
            "fd12:3456::1",
            "64:ff9b::a00:1",
        ];
        for address in private {
            let ip: IpAddr = address.parse().unwrap();
            assert!(refused(ip, false), "{address} only when allowed");
            assert!(!refused(ip, true), "{address} when allowed");
        }
        for address in ["93.184.215.14", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "64:ff9b::5db8:d70e"] {
            assert!(!refused(address.parse().unwrap(), false), "{address} is public");
        }
        assert!(refused_literal("http://[::ffff:169.254.169.254]/latest", true));
        assert!(refused_literal("http://127.0.0.1:9/", false));
        assert!(!refused_literal("http://127.0.0.1:9/", true));
        assert!(!refused_literal("https://hooks.example.com/", false), "a name is judged by what it resolves to");
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_a_refused_address_is_not_reached() {
        use reqwest::dns::Resolve;
        let guarded = GuardedResolver { private_allowed: false };
        let refused = guarded.resolve("localhost".parse().unwrap()).await.err().expect("localhost is loopback");
        assert!(refused.to_string().contains("no address a webhook may reach"), "{refused}");
        let allowed = GuardedResolver { private_allowed: true };
        let found: Vec<SocketAddr> = allowed.resolve("localhost".parse().unwrap()).await.unwrap().collect();
        assert!(found.iter().all(|address| address.ip().is_loopback()) && !found.is_empty(), "{found:?}");
    }
}
