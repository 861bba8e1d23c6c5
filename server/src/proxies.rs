//! Which address a request comes from: the connection's peer, or, when the peer is a reverse proxy
//! the operator trusts (`--trusted-proxies`), the right-most address in `X-Forwarded-For` that is
//! not one of those proxies. Each proxy appends the address it heard from; whatever stands left
//! of the first untrusted one (read from the right) was written by the client and proves nothing.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Request};
use ipnet::IpNet;

use app::backend::ClientAddress;

/// The proxies whose `X-Forwarded-For` is believed; none by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// `ADDR[,ADDR…]`, each an IP address or a CIDR range (`10.0.0.0/8`); `None` if one is neither.
    pub fn parse(text: &str) -> Option<TrustedProxies> {
        let mut ranges = Vec::new();
        for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let range = match item.parse::<IpNet>() {
                Ok(range) => range.trunc(),
                Err(_) => single(item.parse::<IpAddr>().ok()?.to_canonical()),
            };
            ranges.push(range);
        }
        Some(TrustedProxies(ranges))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn trusts(&self, address: IpAddr) -> bool {
        self.0.iter().any(|range| range.contains(&address))
    }

    /// The client's address, given the connection's peer and the request's `X-Forwarded-For`.
    pub fn client_address(&self, peer: IpAddr, headers: &axum::http::HeaderMap) -> IpAddr {
        let mut client = peer.to_canonical();
        if !self.trusts(client) {
            return client;
        }
        // Several headers are one list, in order (RFC 9110, 5.3).
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .collect();
        for hop in hops.into_iter().rev() {
            // An entry that is no address ends the walk at the last hop a trusted proxy vouched
            // for: the client cannot choose its bucket by writing garbage.
            let Some(address) = hop_address(hop) else { return client };
            client = address;
            if !self.trusts(address) {
                return address;
            }
        }
        client
    }

    /// Whether a trusted proxy says the browser reached it over TLS (`X-Forwarded-Proto: https`).
    /// From anyone else the header says nothing: a client could write it itself.
    pub fn forwarded_https(&self, request: &Request) -> bool {
        let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<SocketAddr>>() else { return false };
        self.trusts(peer.ip().to_canonical())
            && request
                .headers()
                .get("x-forwarded-proto")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.split(',').next_back())
                .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
    }

    /// Puts the client's address into the request's extensions (`app::backend::client_address`
    /// reads it), so the app needs no configuration of its own.
    pub fn resolve(&self, mut request: Request) -> Request {
        if let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<SocketAddr>>().copied() {
            let address = self.client_address(peer.ip(), request.headers());
            request.extensions_mut().insert(ClientAddress(address));
        }
        request
    }
}

fn single(address: IpAddr) -> IpNet {
    let bits = if address.is_ipv4() { 32 } else { 128 };
    IpNet::new(address, bits).expect("a full-length prefix is valid")
}

/// One entry of `X-Forwarded-For`: an address, perhaps with a port or in brackets.
fn hop_address(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    let address = hop
        .parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|socket| socket.ip()))
        .or_else(|| hop.strip_prefix('[')?.strip_suffix(']')?.parse::<IpAddr>().ok())?;
    Some(address.to_canonical())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderMap;

    use super::*;

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("x-forwarded-for", value.parse().unwrap());
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn addresses_and_ranges_are_read_and_anything_else_is_refused() {
        let proxies = TrustedProxies::parse(" 127.0.0.1, 10.0.0.0/8 ,::1,fd00::/8").unwrap();
        assert!(proxies.trusts(ip("127.0.0.1")) && proxies.trusts(ip("10.200.3.4")) && proxies.trusts(ip("::1")));
        assert!(proxies.trusts(ip("fd12::1")));
        assert!(!proxies.trusts(ip("127.0.0.2")) && !proxies.trusts(ip("11.0.0.1")));
        assert!(TrustedProxies::parse("192.168.1.7/24").unwrap().trusts(ip("192.168.1.200")));
        assert!(TrustedProxies::parse("").unwrap().is_empty());
        for bad in ["localhost", "10.0.0.0/33", "127.0.0.1:80", "1.2.3", "10.0.0.1,,nope"] {
            assert_eq!(TrustedProxies::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_header_counts_only_from_a_trusted_peer() {
        let none = TrustedProxies::default();
        assert_eq!(none.client_address(ip("127.0.0.1"), &forwarded(&["1.2.3.4"])), ip("127.0.0.1"));
        let proxies = TrustedProxies::parse("127.0.0.1,10.0.0.0/8").unwrap();
        assert_eq!(proxies.client_address(ip("203.0.113.9"), &forwarded(&["1.2.3.4"])), ip("203.0.113.9"));
        assert_eq!(proxies.client_address(ip("127.0.0.1"), &forwarded(&["1.2.3.4"])), ip("1.2.3.4"));
        assert_eq!(proxies.client_address(ip("::ffff:127.0.0.1"), &forwarded(&["1.2.3.4"])), ip("1.2.3.4"));
        // Without the header the peer itself is the client (a request from the proxy's host).
        assert_eq!(proxies.client_address(ip("127.0.0.1"), &HeaderMap::new()), ip("127.0.0.1"));
    }

    #[test]
    fn the_right_most_untrusted_hop_is_the_client_whatever_it_wrote_before() {
        let proxies = TrustedProxies::parse("127.0.0.1,10.0.0.0/8").unwrap();
        // The client wrote "6.6.6.6" itself; the outer proxy added the address it heard from.
        let chain = forwarded(&["6.6.6.6, 1.2.3.4, 10.1.1.1"]);
        assert_eq!(proxies.client_address(ip("127.0.0.1"), &chain), ip("1.2.3.4"));
        // The same list over two headers, with ports and brackets.
        let split = forwarded(&["6.6.6.6", "1.2.3.4:5678, [10.1.1.1]"]);
        assert_eq!(proxies.client_address(ip("127.0.0.1"), &split), ip("1.2.3.4"));
        let v6 = forwarded(&["[2001:db8::1]:443"]);
        assert_eq!(proxies.client_address(ip("127.0.0.1"), &v6), ip("2001:db8::1"));
        // Garbage stops the walk at the last hop a trusted proxy vouched for.
        let garbage = forwarded(&["1.2.3.4, unknown, 10.1.1.1"]);
        assert_eq!(proxies.client_address(ip("127.0.0.1"), &garbage), ip("10.1.1.1"));
        // Only trusted hops: the left-most of them.
        let inside = forwarded(&["10.9.9.9, 10.1.1.1"]);
        assert_eq!(proxies.client_address(ip("127.0.0.1"), &inside), ip("10.9.9.9"));
    }
}
