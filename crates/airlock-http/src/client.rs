//! Who the client is: the socket's peer, unless the peer is one of the operator's
//! trusted proxies (`[server] trusted_proxies`), in which case the address that
//! proxy chain reports in `X-Forwarded-For`. The failure limiter and the record of
//! authentication failures key on it, so behind an ingress one client's wrong key
//! does not lock every client of the replica out, while a client that is not a
//! trusted proxy cannot pick its own address by writing the header.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use ipnet::IpNet;

/// The client's address as this surface believes it, set on each request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddr(pub(crate) IpAddr);

/// The proxies whose word on the client is taken.
#[derive(Debug, Default)]
pub(crate) struct TrustedProxies(pub(crate) Vec<IpNet>);

impl TrustedProxies {
    fn trusts(&self, address: IpAddr) -> bool {
        let address = canonical(address);
        self.0.iter().any(|net| net.contains(&address))
    }

    /// The client behind `peer`: walking `X-Forwarded-For` from the right (the
    /// entries the nearest proxies added), the first address that is not a trusted
    /// proxy. A header that does not parse is not believed: the peer is the client.
    pub(crate) fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let mut chain = Vec::new();
        for value in headers.get_all("x-forwarded-for") {
            let Ok(text) = value.to_str() else {
                return peer;
            };
            for entry in text.split(',') {
                match entry.trim().parse::<IpAddr>() {
                    Ok(address) => chain.push(canonical(address)),
                    Err(_) => return peer,
                }
            }
        }
        chain
            .iter()
            .rev()
            .find(|address| !self.trusts(**address))
            // Every hop a trusted proxy: the farthest one is the client.
            .or(chain.first())
            .copied()
            .unwrap_or(peer)
    }
}

// An IPv4 address as itself, also when it came as `::ffff:a.b.c.d`.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Notes the client's address on the request, for every route below.
pub(crate) async fn resolve(
    State(proxies): State<Arc<TrustedProxies>>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(peer) = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| canonical(c.0.ip()))
    {
        let client = proxies.client(peer, request.headers());
        request.extensions_mut().insert(ClientAddr(client));
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for v in values {
            map.append("x-forwarded-for", v.parse().unwrap());
        }
        map
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn only_a_trusted_proxys_header_is_believed_and_from_the_right() {
        let none = TrustedProxies::default();
        let ingress = TrustedProxies(vec![
            "10.0.0.0/8".parse().unwrap(),
            "127.0.0.1/32".parse().unwrap(),
        ]);
        // An untrusted peer names whatever it likes: it stays itself.
        assert_eq!(
            none.client(ip("127.0.0.1"), &headers(&["203.0.113.9"])),
            ip("127.0.0.1")
        );
        assert_eq!(
            ingress.client(ip("192.0.2.1"), &headers(&["203.0.113.9"])),
            ip("192.0.2.1")
        );
        // Behind the ingress: the client it reports.
        assert_eq!(
            ingress.client(ip("127.0.0.1"), &headers(&["203.0.113.9"])),
            ip("203.0.113.9")
        );
        // A client that wrote its own header before the ingress appended: the
        // rightmost untrusted entry, not the forged leftmost one.
        assert_eq!(
            ingress.client(
                ip("10.0.0.5"),
                &headers(&["198.51.100.7, 203.0.113.9, 10.0.0.6"])
            ),
            ip("203.0.113.9")
        );
        assert_eq!(
            ingress.client(ip("10.0.0.5"), &headers(&["198.51.100.7", "203.0.113.9"])),
            ip("203.0.113.9")
        );
        // Garbage, or no header: the proxy itself.
        assert_eq!(
            ingress.client(ip("10.0.0.5"), &headers(&["not-an-ip"])),
            ip("10.0.0.5")
        );
        assert_eq!(
            ingress.client(ip("10.0.0.5"), &headers(&[])),
            ip("10.0.0.5")
        );
        // All hops trusted: the farthest.
        assert_eq!(
            ingress.client(ip("10.0.0.5"), &headers(&["10.9.9.9, 10.0.0.6"])),
            ip("10.9.9.9")
        );
        // A mapped IPv4 peer is the IPv4 address.
        assert_eq!(
            ingress.client(ip("::ffff:127.0.0.1"), &headers(&["2001:db8::1"])),
            ip("2001:db8::1")
        );
    }
}
