//! Address classification: which IPs are not the public internet, and why.
//!
//! Every IPv6 form that carries an IPv4 address (mapped, compatible, NAT64, 6to4,
//! Teredo) is judged by the IPv4 address it carries, so `::ffff:127.0.0.1` is as
//! loopback as `127.0.0.1`.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// Why an address is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 0.0.0.0/8 and ::.
    Unspecified,
    /// RFC 1918: 10/8, 172.16/12, 192.168/16.
    Private,
    /// 100.64.0.0/10 (carrier-grade NAT).
    SharedCgnat,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// A cloud provider's instance-metadata service.
    CloudMetadata,
    /// fc00::/7 unique local addresses, and deprecated fec0::/10 site-local.
    UniqueLocal,
    /// 224/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// Documentation, benchmarking, IETF-reserved and future-use ranges.
    Reserved,
}

impl AddressClass {
    /// How an operator reads it.
    pub fn describe(self) -> &'static str {
        match self {
            AddressClass::Loopback => "loopback",
            AddressClass::Unspecified => "unspecified (0.0.0.0/8 or ::)",
            AddressClass::Private => "private (RFC 1918)",
            AddressClass::SharedCgnat => "shared address space (CGNAT 100.64.0.0/10)",
            AddressClass::LinkLocal => "link-local",
            AddressClass::CloudMetadata => "link-local (cloud metadata)",
            AddressClass::UniqueLocal => "unique local (fc00::/7)",
            AddressClass::Multicast => "multicast",
            AddressClass::Broadcast => "broadcast",
            AddressClass::Reserved => "reserved",
        }
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// The class of a non-public address, or `None` for a public one. For an IPv6 address
/// carrying an IPv4 one, also the carried address.
pub fn classify(ip: IpAddr) -> Option<(AddressClass, Option<Ipv4Addr>)> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4).map(|c| (c, None)),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

const METADATA_V4: &[Ipv4Addr] = &[
    Ipv4Addr::new(169, 254, 169, 254), // AWS, GCP, Azure, OpenStack, DigitalOcean …
    Ipv4Addr::new(169, 254, 170, 2),   // AWS ECS task metadata
    Ipv4Addr::new(100, 100, 100, 200), // Alibaba Cloud
];

fn classify_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    if METADATA_V4.contains(&ip) {
        return Some(AddressClass::CloudMetadata);
    }
    let [a, b, c, _] = ip.octets();
    let class = match (a, b, c) {
        (0, _, _) => AddressClass::Unspecified,
        (10, _, _) => AddressClass::Private,
        (100, 64..=127, _) => AddressClass::SharedCgnat,
        (127, _, _) => AddressClass::Loopback,
        (169, 254, _) => AddressClass::LinkLocal,
        (172, 16..=31, _) => AddressClass::Private,
        (192, 0, 0) | (192, 0, 2) | (192, 88, 99) => AddressClass::Reserved,
        (192, 168, _) => AddressClass::Private,
        (198, 18..=19, _) => AddressClass::Reserved,
        (198, 51, 100) | (203, 0, 113) => AddressClass::Reserved,
        (224..=239, _, _) => AddressClass::Multicast,
        (255, 255, 255) if ip == Ipv4Addr::BROADCAST => AddressClass::Broadcast,
        (240..=255, _, _) => AddressClass::Reserved,
        _ => return None,
    };
    Some(class)
}

const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);

fn classify_v6(ip: Ipv6Addr) -> Option<(AddressClass, Option<Ipv4Addr>)> {
    if ip == METADATA_V6 {
        return Some((AddressClass::CloudMetadata, None));
    }
    if ip.is_unspecified() {
        return Some((AddressClass::Unspecified, None));
    }
    if ip.is_loopback() {
        return Some((AddressClass::Loopback, None));
    }
    let s = ip.segments();
    // Forms that carry an IPv4 address are judged by it.
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4).map(|c| (c, Some(v4)));
    }
    let class = match s[0] {
        0xfc00..=0xfdff => AddressClass::UniqueLocal,
        0xfe80..=0xfebf => AddressClass::LinkLocal,
        0xfec0..=0xfeff => AddressClass::UniqueLocal,
        0xff00..=0xffff => AddressClass::Multicast,
        // 64:ff9b:1::/48, local-use NAT64: the carried address is a site's own.
        0x0064 if s[1] == 0xff9b && s[2] == 1 => AddressClass::Private,
        // 100::/64 discard-only.
        0x0100 if s[1] == 0 && s[2] == 0 && s[3] == 0 => AddressClass::Reserved,
        // 2001:db8::/32 documentation; 2001:10::/28 ORCHID; 2001:2::/48 benchmarking.
        0x2001 if s[1] == 0x0db8 || (s[1] & 0xfff0) == 0x0010 || (s[1] == 2 && s[2] == 0) => {
            AddressClass::Reserved
        }
        // Anything outside 2000::/3 is not global unicast.
        x if !(0x2000..=0x3fff).contains(&x) => AddressClass::Reserved,
        _ => return None,
    };
    Some((class, None))
}

// The IPv4 address an IPv6 address carries, if it is of such a form.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    // ::ffff:a.b.c.d (mapped) and ::ffff:0:a.b.c.d (translated).
    if s[..5] == [0, 0, 0, 0, 0] && s[5] == 0xffff
        || s[..4] == [0, 0, 0, 0] && s[4] == 0xffff && s[5] == 0
    {
        return Some(low);
    }
    // ::a.b.c.d (compatible; :: and ::1 are handled before).
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        return Some(low);
    }
    // 64:ff9b::/96 (NAT64 well-known prefix).
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low);
    }
    // 2002:AABB:CCDD::/48 (6to4).
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    // 2001:0::/32 (Teredo): the client address is the last 32 bits inverted; the
    // server address is bits 32..64. A private one in either place counts.
    if s[0] == 0x2001 && s[1] == 0 {
        let client = Ipv4Addr::from(!u32::from(low));
        let server = Ipv4Addr::new((s[2] >> 8) as u8, s[2] as u8, (s[3] >> 8) as u8, s[3] as u8);
        return Some(
            if classify_v4(client).is_some() || classify_v4(server).is_none() {
                client
            } else {
                server
            },
        );
    }
    None
}

/// An IP network (`10.0.0.0/8`, `::1/128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Whether `ip` lies in this network. An IPv4 network also matches the IPv6
    /// forms that carry an address of it.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                prefix_eq(u32::from(net).into(), u32::from(ip).into(), self.prefix, 32)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(u128::from(net), u128::from(ip), self.prefix, 128)
            }
            (IpAddr::V4(_), IpAddr::V6(v6)) => {
                embedded_v4(v6).is_some_and(|v4| self.contains(IpAddr::V4(v4)))
            }
            (IpAddr::V6(_), IpAddr::V4(_)) => false,
        }
    }
}

fn prefix_eq(a: u128, b: u128, prefix: u8, bits: u8) -> bool {
    if prefix == 0 {
        return true;
    }
    let shift = u32::from(bits - prefix);
    (a >> shift) == (b >> shift)
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Cidr, String> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|_| format!("`{s}` is not an IP address or CIDR"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("`{s}` has an invalid prefix length (0..={max})"))?,
        };
        Ok(Cidr { addr, prefix })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> Option<AddressClass> {
        classify(s.parse().unwrap()).map(|(c, _)| c)
    }

    #[test]
    fn classifies_every_special_range() {
        use AddressClass::*;
        let table = [
            ("127.0.0.1", Some(Loopback)),
            ("127.255.255.254", Some(Loopback)),
            ("0.0.0.0", Some(Unspecified)),
            ("0.1.2.3", Some(Unspecified)),
            ("10.0.0.1", Some(Private)),
            ("172.16.0.1", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("172.32.0.1", None),
            ("192.168.1.1", Some(Private)),
            ("100.64.0.1", Some(SharedCgnat)),
            ("100.127.255.255", Some(SharedCgnat)),
            ("100.128.0.1", None),
            ("169.254.1.1", Some(LinkLocal)),
            ("169.254.169.254", Some(CloudMetadata)),
            ("169.254.170.2", Some(CloudMetadata)),
            ("100.100.100.200", Some(CloudMetadata)),
            ("224.0.0.1", Some(Multicast)),
            ("239.255.255.250", Some(Multicast)),
            ("255.255.255.255", Some(Broadcast)),
            ("240.0.0.1", Some(Reserved)),
            ("192.0.2.1", Some(Reserved)),
            ("198.51.100.1", Some(Reserved)),
            ("203.0.113.1", Some(Reserved)),
            ("198.18.0.1", Some(Reserved)),
            ("8.8.8.8", None),
            ("1.1.1.1", None),
            ("93.184.216.34", None),
            ("::1", Some(Loopback)),
            ("::", Some(Unspecified)),
            ("fc00::1", Some(UniqueLocal)),
            ("fd12:3456::1", Some(UniqueLocal)),
            ("fd00:ec2::254", Some(CloudMetadata)),
            ("fe80::1", Some(LinkLocal)),
            ("febf::1", Some(LinkLocal)),
            ("fec0::1", Some(UniqueLocal)),
            ("ff02::1", Some(Multicast)),
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:10.0.0.1", Some(Private)),
            ("::ffff:169.254.169.254", Some(CloudMetadata)),
            ("::ffff:8.8.8.8", None),
            ("::ffff:0:127.0.0.1", Some(Loopback)),
            ("::127.0.0.1", Some(Loopback)),
            ("::10.1.2.3", Some(Private)),
            ("64:ff9b::127.0.0.1", Some(Loopback)),
            ("64:ff9b::a9fe:a9fe", Some(CloudMetadata)),
            ("64:ff9b::8.8.8.8", None),
            ("64:ff9b:1::1", Some(Private)),
            ("2002:7f00:1::", Some(Loopback)),
            ("2002:c0a8:101::1", Some(Private)),
            ("2002:0808:0808::1", None),
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", Some(Loopback)),
            ("2001:db8::1", Some(Reserved)),
            ("100::1", Some(Reserved)),
            ("2606:4700:4700::1111", None),
            ("2a00:1450:4001::200e", None),
        ];
        for (ip, expected) in table {
            assert_eq!(class(ip), expected, "{ip}");
        }
    }

    #[test]
    fn cidrs_parse_and_match_embedded_forms() {
        let net: Cidr = "127.0.0.0/8".parse().unwrap();
        assert!(net.contains("127.1.2.3".parse().unwrap()));
        assert!(net.contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!net.contains("128.0.0.1".parse().unwrap()));
        let host: Cidr = "10.1.2.3".parse().unwrap();
        assert!(
            host.contains("10.1.2.3".parse().unwrap())
                && !host.contains("10.1.2.4".parse().unwrap())
        );
        let v6: Cidr = "[fd00::]/8".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        for bad in ["10.0.0.0/33", "nope", "::/129", "1.2.3.4/x"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }
}
