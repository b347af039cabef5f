//! Asking once: a held request a person approved covers its own confirmation. Admin
//! applications delete in two steps — a `POST` that says what will go and shows a
//! confirmation page, then the `POST` of that page that deletes (Django's bulk
//! action: `action=delete_selected` twice, the second with `post=yes`). Both say
//! delete, and both are held; the second is the same operation continued, so the
//! person who approved the first is not asked again. A cover is narrow:
//!
//! - the same rule, method and canonical origin and path;
//! - every field both requests carry has the same values in both (the selection
//!   is the one approved), token-like fields aside (a CSRF token is new each page);
//! - within [`COVER_FOR`] of the approval, once;
//! - never for a payment (`critical`): a second identical payment is a second
//!   payment.
//!
//! Covers live with the lease on the replica that served the approval; a replica
//! that adopts the session asks again (the safe direction).

use std::time::Duration;

use tokio::time::Instant;

use airlock_browser::HeldEffect;
use airlock_core::sync::lock;
use airlock_risk::{CanonicalUrl, Risk};

/// How long an approval covers the step that confirms it.
pub(crate) const COVER_FOR: Duration = Duration::from_secs(120);
/// Most covers a lease keeps (the oldest goes first).
const MAX_COVERS: usize = 16;

/// The approvals of a lease's held requests that may cover their confirmation.
#[derive(Default)]
pub(crate) struct Covers(std::sync::Mutex<Vec<Cover>>);

struct Cover {
    approval: String,
    key: Key,
    fields: Vec<(String, String)>,
    until: Instant,
}

#[derive(PartialEq, Eq)]
struct Key {
    rule: String,
    method: String,
    place: String,
}

fn key(effect: &HeldEffect) -> Key {
    let url = CanonicalUrl::of(&effect.url);
    let origin = url::Url::parse(&url.url)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_default();
    Key {
        rule: effect.rule.clone(),
        method: effect.method.to_ascii_uppercase(),
        place: format!("{origin}{}", url.path),
    }
}

// The fields that say what the request does to what: all but token-like ones.
fn telling(effect: &HeldEffect) -> Vec<(String, String)> {
    effect
        .fields
        .iter()
        .filter(|(k, v)| !token_like(k, v))
        .cloned()
        .collect()
}

impl Covers {
    /// `effect` was approved by `approval`: it covers its confirmation for a while.
    pub(crate) fn grant(&self, effect: &HeldEffect, approval: &str) {
        if effect.risk >= Risk::Critical {
            return;
        }
        let mut covers = lock(&self.0);
        let now = Instant::now();
        covers.retain(|c| c.until > now);
        if covers.len() >= MAX_COVERS {
            covers.remove(0);
        }
        covers.push(Cover {
            approval: approval.to_owned(),
            key: key(effect),
            fields: telling(effect),
            until: now + COVER_FOR,
        });
    }

    /// The approval that covers `effect`, used up now; `None`: a person is asked.
    pub(crate) fn take(&self, effect: &HeldEffect) -> Option<String> {
        if effect.risk >= Risk::Critical {
            return None;
        }
        let mut covers = lock(&self.0);
        let now = Instant::now();
        covers.retain(|c| c.until > now);
        let (key, fields) = (key(effect), telling(effect));
        let at = covers
            .iter()
            .position(|c| c.key == key && same_where_shared(&c.fields, &fields))?;
        Some(covers.remove(at).approval)
    }
}

// Every field name both carry has the same values in both (in order).
fn same_where_shared(a: &[(String, String)], b: &[(String, String)]) -> bool {
    let values = |fields: &[(String, String)], name: &str| -> Vec<String> {
        fields
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    };
    a.iter()
        .map(|(k, _)| k)
        .filter(|k| b.iter().any(|(n, _)| n == *k))
        .all(|k| values(a, k) == values(b, k))
}

/// Whether a field looks like a one-time token (CSRF tokens, nonces, long random
/// strings): by its name, or by a value long and random-looking enough.
pub(crate) fn token_like(name: &str, value: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let named = [
        "csrf",
        "xsrf",
        "token",
        "nonce",
        "authenticity",
        "verification",
    ]
    .iter()
    .any(|w| name.contains(w));
    if named {
        return true;
    }
    let long = value.len() >= 24;
    let charset = value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_+/=.".contains(&b));
    let digits = value.bytes().filter(u8::is_ascii_digit).count();
    let letters = value.bytes().filter(u8::is_ascii_alphabetic).count();
    let upper = value.bytes().filter(u8::is_ascii_uppercase).count();
    // Random strings mix classes; words and numbers of that length rarely do.
    long && charset
        && !value.contains(' ')
        && digits > 0
        && letters > 0
        && (upper > 0 || digits * 4 >= value.len())
}

/// A token-like value as a card shows it: its start and its length.
pub(crate) fn shortened(value: &str) -> String {
    let start: String = value.chars().take(6).collect();
    format!("{start}… ({} characters)", value.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(rule: &str, url: &str, fields: &[(&str, &str)], risk: Risk) -> HeldEffect {
        HeldEffect {
            id: 1,
            rule: rule.into(),
            risk,
            why: String::new(),
            method: "POST".into(),
            url: url.into(),
            fields: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            navigation: true,
            page_words: None,
        }
    }

    #[test]
    fn an_approved_bulk_delete_covers_its_confirmation_once_and_nothing_else() {
        let covers = Covers::default();
        let u = "http://127.0.0.1:8900/admin/auth/user/";
        let go = effect(
            "delete-field",
            u,
            &[
                ("csrfmiddlewaretoken", "aB3xY9kLmN0pQ7rS2tU5vW8zC1dE4fG6"),
                ("action", "delete_selected"),
                ("select_across", "0"),
                ("index", "0"),
                ("_selected_action", "5"),
            ],
            Risk::High,
        );
        covers.grant(&go, "apr_1");
        let confirm = |selected: &str, token: &str| {
            effect(
                "delete-field",
                u,
                &[
                    ("csrfmiddlewaretoken", token),
                    ("_selected_action", selected),
                    ("action", "delete_selected"),
                    ("post", "yes"),
                ],
                Risk::High,
            )
        };
        // Another selection is another operation.
        assert_eq!(
            covers.take(&confirm("6", "Zz9yX8wV7uT6sR5qP4oN3mL2kJ1iH0gF")),
            None
        );
        // Another path, another rule: not covered.
        let mut other = confirm("5", "x");
        other.url = "http://127.0.0.1:8900/admin/auth/group/".into();
        assert_eq!(covers.take(&other), None);
        assert_eq!(
            covers.take(&confirm("5", "Zz9yX8wV7uT6sR5qP4oN3mL2kJ1iH0gF")),
            Some("apr_1".to_owned())
        );
        // Once.
        assert_eq!(
            covers.take(&confirm("5", "Q1w2E3r4T5y6U7i8O9p0AaSsDdFfGgHh")),
            None
        );
        // A payment never covers, nor is covered.
        let pay = effect(
            "payment-path",
            "http://b.test/pay",
            &[("amount", "5")],
            Risk::Critical,
        );
        covers.grant(&pay, "apr_2");
        assert_eq!(covers.take(&pay), None);
    }

    #[test]
    fn tokens_are_told_from_words_and_numbers() {
        for (name, value) in [
            ("csrfmiddlewaretoken", "x"),
            ("authenticity_token", "abc"),
            ("state", "aB3xY9kLmN0pQ7rS2tU5vW8zC1dE4fG6"),
            (
                "sig",
                "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            ),
        ] {
            assert!(token_like(name, value), "{name}={value}");
        }
        for (name, value) in [
            ("post", "yes"),
            ("action", "delete_selected"),
            ("email", "carol.jones.longaddress@example.test"),
            ("comment", "this is a long sentence of plain words"),
            ("_selected_action", "5"),
        ] {
            assert!(!token_like(name, value), "{name}={value}");
        }
        assert_eq!(
            shortened("aB3xY9kLmN0pQ7rS2tU5vW8zC1dE4fG6"),
            "aB3xY9… (32 characters)"
        );
    }
}
