//! Table-driven tests: one line per URL, each encoding trick on its own line, and a
//! randomized test that canonicalize-then-decide never panics and never allows a
//! private literal address.

use std::net::SocketAddr;

use super::*;

const A: Decision = Decision::Allow;

fn deny(reason: DenyReason) -> Option<DenyReason> {
    Some(reason)
}

fn reason(d: &Decision) -> Option<DenyReason> {
    match d {
        Decision::Allow => None,
        Decision::Deny { reason, .. } => Some(*reason),
    }
}

/// A policy that allows one loopback port, one private network and one intranet name.
fn fixture_policy() -> Policy {
    Policy::from_config(&PolicyConfig {
        allow_private: vec![
            "127.0.0.1:8123".into(),
            "10.9.0.0/16".into(),
            "intranet.corp".into(),
            "[::1]:8124".into(),
        ],
        deny_hosts: vec!["blocked.example".into()],
        deny_host_suffixes: vec!["ads.example".into()],
        ..PolicyConfig::default()
    })
    .unwrap()
}

fn allowlist_policy() -> Policy {
    Policy::from_config(&PolicyConfig {
        allow_hosts: vec!["exact.org".into()],
        allow_host_suffixes: vec!["allowed.com".into()],
        ..PolicyConfig::default()
    })
    .unwrap()
}

use DenyReason::{HostDenied, HostNotAllowed, InvalidUrl, PrivateAddress, Scheme};

#[test]
fn url_table() {
    let p = fixture_policy();
    let table: &[(&str, Option<DenyReason>)] = &[
        // Public hosts and addresses.
        ("https://example.com/", None),
        ("http://example.com:8080/path?q=1#f", None),
        ("https://EXAMPLE.COM/", None),
        ("https://example.com./", None),
        ("https://ex%61mple.com/", None),
        ("https://bücher.de/", None),
        ("https://xn--bcher-kva.de/", None),
        ("http://8.8.8.8/", None),
        ("http://1.1.1.1:443/", None),
        ("http://[2606:4700:4700::1111]/", None),
        ("http://[::ffff:8.8.8.8]/", None),
        ("http://[64:ff9b::8.8.8.8]/", None),
        ("http://[2002:0808:0808::1]/", None),
        ("http://134744072/", None), // 8.8.8.8 in decimal
        ("http://0x08080808/", None),
        ("http://8.8.2056/", None),
        ("about:blank", None),
        ("https://user:pass@example.com/", None),
        ("http:\\\\example.com\\path", None),
        ("https://a.b.c.d.example.com/", None),
        // Loopback in every spelling.
        ("http://127.0.0.1/", deny(PrivateAddress)),
        ("http://127.0.0.1:80/", deny(PrivateAddress)),
        ("http://127.1/", deny(PrivateAddress)),
        ("http://127.0.1/", deny(PrivateAddress)),
        ("http://2130706433/", deny(PrivateAddress)),
        ("http://0x7f000001/", deny(PrivateAddress)),
        ("http://0x7f.1/", deny(PrivateAddress)),
        ("http://0x7F.0x0.0x0.0x1/", deny(PrivateAddress)),
        ("http://017700000001/", deny(PrivateAddress)),
        ("http://0177.0.0.1/", deny(PrivateAddress)),
        ("http://0177.1/", deny(PrivateAddress)),
        ("http://127.000.000.001/", deny(PrivateAddress)),
        ("http://%31%32%37.0.0.1/", deny(PrivateAddress)),
        ("http://127.0.0.1./", deny(PrivateAddress)),
        ("http://127.255.255.254/", deny(PrivateAddress)),
        ("http://localhost/", deny(PrivateAddress)),
        ("http://LOCALHOST/", deny(PrivateAddress)),
        ("http://localhost./", deny(PrivateAddress)),
        ("http://app.localhost/", deny(PrivateAddress)),
        ("http://[::1]/", deny(PrivateAddress)),
        ("http://[0:0:0:0:0:0:0:1]/", deny(PrivateAddress)),
        ("http://[::ffff:127.0.0.1]/", deny(PrivateAddress)),
        ("http://[::ffff:7f00:1]/", deny(PrivateAddress)),
        ("http://[::127.0.0.1]/", deny(PrivateAddress)),
        ("http://[64:ff9b::127.0.0.1]/", deny(PrivateAddress)),
        ("http://[2002:7f00:1::]/", deny(PrivateAddress)),
        (
            "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
            deny(PrivateAddress),
        ),
        ("http://example.com@127.0.0.1/", deny(PrivateAddress)),
        ("http://127.0.0.1\\@example.com/", deny(PrivateAddress)),
        ("http://127.0.0.1:8124/", deny(PrivateAddress)),
        // The allowed loopback port, in several spellings, and nothing else.
        ("http://127.0.0.1:8123/", None),
        ("http://127.1:8123/", None),
        ("http://2130706433:8123/x", None),
        ("http://localhost:8123/", None),
        ("http://[::ffff:127.0.0.1]:8123/", None),
        ("http://127.0.0.2:8123/", deny(PrivateAddress)),
        ("http://127.0.0.1:8122/", deny(PrivateAddress)),
        ("http://[::1]:8124/", None),
        ("http://[::1]:8123/", deny(PrivateAddress)),
        // 0.0.0.0/8 and ::.
        ("http://0.0.0.0/", deny(PrivateAddress)),
        ("http://0/", deny(PrivateAddress)),
        ("http://0.1.2.3/", deny(PrivateAddress)),
        ("http://[::]/", deny(PrivateAddress)),
        // RFC 1918, and the allowed private network.
        ("http://10.0.0.1/", deny(PrivateAddress)),
        ("http://10.255.255.255/", deny(PrivateAddress)),
        ("http://012.0.0.1/", deny(PrivateAddress)),
        ("http://167772161/", deny(PrivateAddress)),
        ("http://0xa000001/", deny(PrivateAddress)),
        ("http://10.1/", deny(PrivateAddress)),
        ("http://10.9.1.2/", None),
        ("http://10.9.255.255:9999/", None),
        ("http://10.10.0.1/", deny(PrivateAddress)),
        ("http://172.16.0.1/", deny(PrivateAddress)),
        ("http://172.20.10.10/", deny(PrivateAddress)),
        ("http://172.31.255.255/", deny(PrivateAddress)),
        ("http://172.32.0.1/", None),
        ("http://172.15.255.255/", None),
        ("http://192.168.0.1/", deny(PrivateAddress)),
        ("http://192.168.1.254:8080/", deny(PrivateAddress)),
        ("http://3232235777/", deny(PrivateAddress)),
        ("http://0xc0.0xa8.0x1.0x1/", deny(PrivateAddress)),
        ("http://[::ffff:192.168.1.1]/", deny(PrivateAddress)),
        ("http://[::ffff:10.0.0.1]/", deny(PrivateAddress)),
        ("http://[64:ff9b::10.0.0.1]/", deny(PrivateAddress)),
        ("http://[64:ff9b::a00:1]/", deny(PrivateAddress)),
        ("http://[2002:c0a8:101::]/", deny(PrivateAddress)),
        ("http://[2002:a00:1::1]/", deny(PrivateAddress)),
        // CGNAT.
        ("http://100.64.0.1/", deny(PrivateAddress)),
        ("http://100.100.1.1/", deny(PrivateAddress)),
        ("http://100.127.255.254/", deny(PrivateAddress)),
        ("http://100.63.255.255/", None),
        ("http://100.128.0.0/", None),
        // Link-local and cloud metadata.
        ("http://169.254.0.1/", deny(PrivateAddress)),
        (
            "http://169.254.169.254/latest/meta-data/",
            deny(PrivateAddress),
        ),
        ("http://169.254.169.254:80/", deny(PrivateAddress)),
        ("http://2852039166/", deny(PrivateAddress)),
        ("http://0xa9fea9fe/", deny(PrivateAddress)),
        ("http://0251.0376.0251.0376/", deny(PrivateAddress)),
        ("http://169.254.43518/", deny(PrivateAddress)),
        ("http://[::ffff:169.254.169.254]/", deny(PrivateAddress)),
        ("http://[::ffff:a9fe:a9fe]/", deny(PrivateAddress)),
        ("http://[64:ff9b::a9fe:a9fe]/", deny(PrivateAddress)),
        ("http://[2002:a9fe:a9fe::]/", deny(PrivateAddress)),
        ("http://169.254.170.2/v2/credentials", deny(PrivateAddress)),
        (
            "http://100.100.100.200/latest/meta-data",
            deny(PrivateAddress),
        ),
        ("http://[fd00:ec2::254]/", deny(PrivateAddress)),
        (
            "http://metadata.google.internal/computeMetadata/v1/",
            deny(PrivateAddress),
        ),
        ("http://METADATA.GOOGLE.INTERNAL./", deny(PrivateAddress)),
        ("http://metadata/", deny(PrivateAddress)),
        ("http://metadata.goog/", deny(PrivateAddress)),
        ("http://instance-data/", deny(PrivateAddress)),
        ("http://[fe80::1]/", deny(PrivateAddress)),
        ("http://[fe80::1%25eth0]/", deny(InvalidUrl)),
        ("http://[febf::1]/", deny(PrivateAddress)),
        // IPv6 private and special ranges.
        ("http://[fc00::1]/", deny(PrivateAddress)),
        ("http://[fd12:3456:789a::1]/", deny(PrivateAddress)),
        ("http://[fec0::1]/", deny(PrivateAddress)),
        ("http://[ff02::1]/", deny(PrivateAddress)),
        ("http://[2001:db8::1]/", deny(PrivateAddress)),
        ("http://[100::1]/", deny(PrivateAddress)),
        ("http://[64:ff9b:1::a00:1]/", deny(PrivateAddress)),
        ("http://[::ffff:0:127.0.0.1]/", deny(PrivateAddress)),
        // Multicast, broadcast, reserved.
        ("http://224.0.0.1/", deny(PrivateAddress)),
        ("http://239.255.255.250:1900/", deny(PrivateAddress)),
        ("http://255.255.255.255/", deny(PrivateAddress)),
        ("http://4294967295/", deny(PrivateAddress)),
        ("http://240.0.0.1/", deny(PrivateAddress)),
        ("http://192.0.2.10/", deny(PrivateAddress)),
        ("http://198.51.100.7/", deny(PrivateAddress)),
        ("http://203.0.113.9/", deny(PrivateAddress)),
        ("http://198.18.0.1/", deny(PrivateAddress)),
        ("http://192.0.0.8/", deny(PrivateAddress)),
        // Host names that need DNS pass here; the proxy checks their addresses.
        ("http://127.0.0.1.nip.io/", None),
        ("http://intranet.corp/", None),
        ("http://sub.intranet.corp/", None),
        // Deny rules.
        ("https://blocked.example/", deny(HostDenied)),
        ("https://BLOCKED.example./", deny(HostDenied)),
        ("https://ads.example/", deny(HostDenied)),
        ("https://x.ads.example/", deny(HostDenied)),
        ("https://notads.example/", None),
        ("https://ads.example.net/", None),
        // Schemes.
        ("file:///etc/passwd", deny(Scheme)),
        ("FILE:///etc/passwd", deny(Scheme)),
        ("data:text/html,<script>alert(1)</script>", deny(Scheme)),
        ("javascript:alert(1)", deny(Scheme)),
        ("JaVaScRiPt:alert(1)", deny(Scheme)),
        ("chrome://version", deny(Scheme)),
        ("chrome-extension://abcdef/page.html", deny(Scheme)),
        ("devtools://devtools/bundled/inspector.html", deny(Scheme)),
        ("view-source:https://example.com/", deny(Scheme)),
        ("blob:https://example.com/uuid", deny(Scheme)),
        ("filesystem:https://example.com/temporary/x", deny(Scheme)),
        ("ftp://example.com/file", deny(Scheme)),
        ("ws://example.com/socket", deny(Scheme)),
        ("about:config", deny(Scheme)),
        ("mailto:a@example.com", deny(Scheme)),
        // Garbage.
        ("", deny(InvalidUrl)),
        ("not a url", deny(InvalidUrl)),
        ("http://", deny(InvalidUrl)),
        ("http://1.2.3.4.5/", deny(InvalidUrl)),
        ("http://0x100000000/", deny(InvalidUrl)),
        ("http://256.0.0.1/", deny(InvalidUrl)),
        ("http://[::1/", deny(InvalidUrl)),
        ("http://a b.com/", deny(InvalidUrl)),
        ("//example.com/", deny(InvalidUrl)),
    ];
    assert!(table.len() >= 150, "only {} cases", table.len());
    let mut failures = Vec::new();
    for (url, expected) in table {
        let checked = p.check_url(url);
        if reason(&checked.decision) != *expected {
            failures.push(format!(
                "{url:?}: expected {expected:?}, got {}",
                checked.decision
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases wrong:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
}

#[test]
fn allowlist_table() {
    let p = allowlist_policy();
    let table: &[(&str, Option<DenyReason>)] = &[
        ("https://allowed.com/", None),
        ("https://www.allowed.com/", None),
        ("https://a.b.allowed.com./", None),
        ("https://ALLOWED.COM/", None),
        ("https://exact.org/", None),
        ("https://sub.exact.org/", deny(HostNotAllowed)),
        ("https://notallowed.com/", deny(HostNotAllowed)),
        ("https://allowed.com.evil.com/", deny(HostNotAllowed)),
        ("https://allowed.com@evil.com/", deny(HostNotAllowed)),
        ("https://evil.com/allowed.com", deny(HostNotAllowed)),
        ("https://evil.com?allowed.com", deny(HostNotAllowed)),
        ("https://evil.com#@allowed.com", deny(HostNotAllowed)),
        ("https://evil.com\\@allowed.com/", deny(HostNotAllowed)),
        ("https://8.8.8.8/", deny(HostNotAllowed)),
        ("https://xallowed.com/", deny(HostNotAllowed)),
    ];
    for (url, expected) in table {
        assert_eq!(reason(&p.check_url(url).decision), *expected, "{url}");
    }
}

#[test]
fn reasons_read_well() {
    let p = fixture_policy();
    let shown = |url: &str| p.check_url(url).decision.to_string();
    assert_eq!(
        shown("http://169.254.169.254/"),
        "policy_denied: 169.254.169.254 is link-local (cloud metadata)"
    );
    assert_eq!(
        shown("http://10.0.0.1/"),
        "policy_denied: 10.0.0.1 is private (RFC 1918)"
    );
    assert_eq!(
        shown("http://[::ffff:127.0.0.1]/"),
        "policy_denied: [::ffff:127.0.0.1] carries 127.0.0.1, which is loopback"
    );
    assert_eq!(
        shown("http://localhost/"),
        "policy_denied: localhost resolves to 127.0.0.1, which is loopback"
    );
    assert_eq!(
        shown("file:///x"),
        "policy_denied: scheme `file:` is not allowed (allowed: http, https, about:blank)"
    );
    assert_eq!(
        shown("https://x.ads.example/"),
        "policy_denied: host x.ads.example is denied by the policy (rule `ads.example`)"
    );
    assert_eq!(shown("https://example.com/"), "allowed");
    let a = allowlist_policy();
    assert_eq!(
        a.check_url("https://evil.com/").decision.to_string(),
        "policy_denied: host evil.com is not in allow_hosts or allow_host_suffixes"
    );
}

#[test]
fn resolved_addresses_are_checked_with_the_host() {
    let p = fixture_policy();
    let at = |s: &str| s.parse::<SocketAddr>().unwrap();
    // A public name that resolves to a private address (rebinding) is refused.
    assert!(
        !p.check_address("evil.example.net", at("127.0.0.1:80"))
            .is_allowed()
    );
    assert!(
        !p.check_address("evil.example.net", at("[::ffff:10.0.0.1]:80"))
            .is_allowed()
    );
    assert!(
        p.check_address("example.com", at("93.184.216.34:443"))
            .is_allowed()
    );
    // A name in allow_private may resolve to a private address.
    assert!(
        p.check_address("intranet.corp", at("10.1.2.3:80"))
            .is_allowed()
    );
    assert!(
        !p.check_address("other.corp", at("10.1.2.3:80"))
            .is_allowed()
    );
    assert!(
        p.check_address("anything", at("127.0.0.1:8123"))
            .is_allowed()
    );
}

#[test]
fn airlock_addresses_are_refused_whatever_allow_private_says() {
    let p = Policy::from_config(&PolicyConfig {
        allow_private: vec!["127.0.0.0/8".into()],
        ..PolicyConfig::default()
    })
    .unwrap()
    .with_airlock_addresses(vec![
        "127.0.0.1:8080".parse().unwrap(),
        "0.0.0.0:9000".parse().unwrap(),
    ]);
    assert!(p.check_url("http://127.0.0.1:8081/").decision.is_allowed());
    for url in [
        "http://127.0.0.1:8080/mcp",
        "http://localhost:8080/",
        "http://127.0.0.5:8080/",
        "http://[::ffff:127.0.0.1]:8080/",
        "http://127.0.0.1:9000/",
        "http://8.8.8.8:9000/",
    ] {
        assert_eq!(
            reason(&p.check_url(url).decision),
            Some(DenyReason::AirlockAddress),
            "{url}"
        );
    }
}

#[test]
fn narrowing_only_removes() {
    let p = allowlist_policy();
    let narrow = p.narrowed(&[], &["www.allowed.com".into()]).unwrap();
    assert!(
        narrow
            .check_url("https://www.allowed.com/")
            .decision
            .is_allowed()
    );
    assert!(
        !narrow
            .check_url("https://api.allowed.com/")
            .decision
            .is_allowed()
    );
    // Naming a host the tenant policy does not allow gains nothing.
    let widen = p.narrowed(&["evil.com".into()], &[]).unwrap();
    assert!(!widen.check_url("https://evil.com/").decision.is_allowed());
    // Narrowing never re-allows private addresses either.
    let open = Policy::public_only()
        .narrowed(&["127.0.0.1".into()], &[])
        .unwrap();
    assert!(!open.check_url("http://127.0.0.1/").decision.is_allowed());
}

#[test]
fn a_narrowing_narrows_and_nothing_else_does() {
    let p = allowlist_policy();
    let narrow = p.narrowed(&[], &["www.allowed.com".into()]).unwrap();
    let narrower = narrow.narrowed(&["www.allowed.com".into()], &[]).unwrap();
    assert!(p.narrows(&p));
    assert!(narrow.narrows(&p));
    assert!(narrower.narrows(&p) && narrower.narrows(&narrow));
    // The other way, or a policy of other rules, widens (or is just other).
    assert!(!p.narrows(&narrow));
    assert!(!Policy::public_only().narrows(&p));
    assert!(!p.narrows(&Policy::public_only()));
    assert!(!Policy::public_only().narrows(&Policy::deny_all()));
    let other_branch = p.narrowed(&["api.allowed.com".into()], &[]).unwrap();
    assert!(!other_branch.narrows(&narrow));
}

#[test]
fn config_errors_name_the_key() {
    let bad = |c: PolicyConfig| Policy::from_config(&c).unwrap_err().to_string();
    assert!(
        bad(PolicyConfig {
            allow_private: vec!["ok.host".into(), "10.0.0.0/99".into()],
            ..Default::default()
        })
        .starts_with("policy.allow_private[1]")
    );
    assert!(
        bad(PolicyConfig {
            allow_private: vec!["127.0.0.1:0".into()],
            ..Default::default()
        })
        .contains("invalid port")
    );
    assert!(
        bad(PolicyConfig {
            schemes: Some(vec!["file".into()]),
            ..Default::default()
        })
        .starts_with("policy.schemes[0]")
    );
    assert!(
        bad(PolicyConfig {
            deny_hosts: vec!["a b".into()],
            ..Default::default()
        })
        .starts_with("policy.deny_hosts[0]")
    );
}

#[test]
fn trusted_domains() {
    let p = Policy::from_config(&PolicyConfig {
        trusted_domains: vec!["corp.example".into()],
        ..Default::default()
    })
    .unwrap();
    assert!(p.is_trusted("app.corp.example") && p.is_trusted("CORP.example."));
    assert!(!p.is_trusted("corp.example.evil.com"));
}

// A small deterministic generator (xorshift) so the randomized test needs no crate
// and replays the same inputs everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn random_ipv4_spelling(rng: &mut Rng, ip: u32) -> String {
    let o = ip.to_be_bytes();
    match rng.next() % 6 {
        0 => format!("{}.{}.{}.{}", o[0], o[1], o[2], o[3]),
        1 => format!("{ip}"),
        2 => format!("0x{ip:x}"),
        3 => format!("0{:o}.0{:o}.0{:o}.0{:o}", o[0], o[1], o[2], o[3]),
        4 => format!("{}.{}", o[0], u32::from_be_bytes([0, o[1], o[2], o[3]])),
        _ => format!("[::ffff:{}.{}.{}.{}]", o[0], o[1], o[2], o[3]),
    }
}

#[test]
fn randomized_urls_never_panic_and_never_allow_private_literals() {
    let p = Policy::public_only();
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let pieces = [
        "http://",
        "https://",
        "HTTP://",
        "http:\\\\",
        "file://",
        "javascript:",
        "//",
        "",
        "ws://",
    ];
    let junk = [
        "@", "%2e", "%00", ":", "[", "]", "\\", "/", "..", "#", "?", " ", "\u{ff0e}", "xn--",
        "%31", "0x", "\t",
    ];
    let mut private_literals = 0;
    for _ in 0..20_000 {
        let ip = match rng.next() % 4 {
            // Bias towards the special ranges.
            0 => u32::from_be_bytes([127, 0, 0, (rng.next() % 255) as u8]),
            1 => u32::from_be_bytes([
                [10, 169, 172, 192, 100, 0, 224, 255][(rng.next() % 8) as usize],
                (rng.next() % 256) as u8,
                (rng.next() % 256) as u8,
                (rng.next() % 256) as u8,
            ]),
            _ => rng.next() as u32,
        };
        let mut url = format!(
            "{}{}",
            rng.pick(&pieces),
            random_ipv4_spelling(&mut rng, ip)
        );
        if rng.next().is_multiple_of(3) {
            url.push_str(rng.pick(&junk));
            url.push_str(rng.pick(&["example.com", "127.0.0.1", "a", ""]));
        }
        if rng.next().is_multiple_of(4) {
            url.push_str(&format!(":{}", rng.next() % 70_000));
        }
        url.push('/');
        // Must not panic, whatever the input.
        let checked = p.check_url(&url);
        // If Chromium would connect to a literal address, a private one is never allowed.
        if let Some(addr) = checked.ip
            && classify(addr).is_some()
        {
            private_literals += 1;
            assert!(
                !checked.decision.is_allowed(),
                "allowed private literal {addr} from {url:?}"
            );
        }
        if checked.decision.is_allowed() && checked.url.as_deref() != Some("about:blank") {
            let host = checked.host.clone().unwrap_or_default();
            if let Ok(ip) = host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
            {
                assert!(classify(ip).is_none(), "allowed {url:?} -> {ip}");
            }
        }
    }
    assert!(
        private_literals > 1_000,
        "the generator found only {private_literals} private literals"
    );
    let _ = A;
}

#[test]
fn deny_all_allows_only_about_blank() {
    let p = Policy::deny_all();
    assert_eq!(p.check_url("about:blank").decision, Decision::Allow);
    for url in [
        "https://example.com/",
        "http://93.184.216.34/",
        "https://example.com:443/",
        "ws://example.com/",
        "data:text/html,x",
    ] {
        assert!(reason(&p.check_url(url).decision).is_some(), "{url}");
    }
    for host in ["example.com", "93.184.216.34", "localhost"] {
        assert!(reason(&p.check_host(host, 443)).is_some(), "{host}");
    }
}

#[test]
fn websocket_origins_are_canonical_ws_origins_and_nothing_else() {
    let p = Policy::from_config(&PolicyConfig {
        websocket_origins: vec![
            "wss://Chat.Example.com".into(),
            "ws://127.0.0.1:9000/".into(),
        ],
        ..PolicyConfig::default()
    })
    .unwrap();
    assert_eq!(
        p.websocket_origins(),
        ["wss://chat.example.com", "ws://127.0.0.1:9000"]
    );
    for bad in [
        "https://chat.example.com",
        "wss://x/path",
        "wss://u@x",
        "chat",
    ] {
        let e = Policy::from_config(&PolicyConfig {
            websocket_origins: vec![bad.into()],
            ..PolicyConfig::default()
        })
        .unwrap_err();
        assert_eq!(e.key, "policy.websocket_origins[0]", "{bad}");
    }
}

#[test]
fn a_tenant_tightens_and_never_widens() {
    let operator = Policy::from_config(&PolicyConfig {
        allow_private: vec!["127.0.0.1:8123".into()],
        ..PolicyConfig::default()
    })
    .unwrap();
    let tenant = operator
        .tightened(&PolicyConfig {
            schemes: Some(vec!["https".into()]),
            allow_host_suffixes: vec!["acme.com".into()],
            deny_hosts: vec!["admin.acme.com".into()],
            ..PolicyConfig::default()
        })
        .unwrap();
    assert!(
        tenant
            .check_url("https://www.acme.com/")
            .decision
            .is_allowed()
    );
    assert!(
        !tenant
            .check_url("http://www.acme.com/")
            .decision
            .is_allowed()
    );
    assert!(
        !tenant
            .check_url("https://admin.acme.com/")
            .decision
            .is_allowed()
    );
    assert!(!tenant.check_url("https://beta.io/").decision.is_allowed());
    assert!(operator.check_url("https://beta.io/").decision.is_allowed());
    // What a worker holding the operator's policy takes as a session's new one.
    assert!(tenant.narrows(&operator));
    assert!(!operator.narrows(&tenant));
    // Widening keys are refused by name.
    for (key, widening) in [
        (
            "policy.allow_private",
            PolicyConfig {
                allow_private: vec!["10.0.0.0/8".into()],
                ..PolicyConfig::default()
            },
        ),
        (
            "policy.trusted_domains",
            PolicyConfig {
                trusted_domains: vec!["acme.com".into()],
                ..PolicyConfig::default()
            },
        ),
        (
            "policy.schemes[0]",
            PolicyConfig {
                schemes: Some(vec!["ftp".into()]),
                ..PolicyConfig::default()
            },
        ),
    ] {
        assert_eq!(operator.tightened(&widening).unwrap_err().key, key);
    }
    // Another tightening of the same operator's policy is no narrowing of this one.
    let other = operator
        .tightened(&PolicyConfig {
            allow_host_suffixes: vec!["beta.io".into()],
            ..PolicyConfig::default()
        })
        .unwrap();
    assert!(!other.narrows(&tenant));
}
