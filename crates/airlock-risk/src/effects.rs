//! Effect rules: rules on what an action *causes*, not on what it is called. A rule
//! with a `request_*` condition judges each request a page is about to send (its
//! method, URL and the fields its body or query carries), so a button named "Show
//! details" whose handler POSTs a transfer is held like one named "Transfer". The
//! browser layer asks [`Effects::judge`] for every paused request of a session; one
//! an `approve` rule matches waits, unsent, for a human.
//!
//! Fields are read from the query, and from a body that is a form
//! (`application/x-www-form-urlencoded`), JSON (at any depth, whatever content type
//! it was sent with: a `fetch` with a string body says `text/plain`) or
//! `multipart/form-data`. A body Chromium did not hand over (a file, a blob, a large
//! upload) cannot be read, so a rule that needs its fields or text holds it when its
//! method and URL match: fail closed.

use std::fmt;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::{Action, Risk, RuleConfig, RuleError, pattern};

/// A request a page is about to send, as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `POST`, `GET`, …
    pub method: &'a str,
    /// The full URL.
    pub url: &'a str,
    /// Its `Content-Type` header, if any.
    pub content_type: Option<&'a str>,
    /// Its body, when Chromium handed it over.
    pub body: Option<&'a [u8]>,
    /// It has a body nobody can read here.
    pub body_unseen: bool,
}

/// What an effect rule decided of a request, and what the request carries (for the
/// person deciding: values are the page's, redacted downstream like any page text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectVerdict {
    /// The rule's name.
    pub rule: String,
    /// How risky.
    pub risk: Risk,
    /// Held (`Approve`), dropped (`Deny`) or let go (`Allow`).
    pub action: Action,
    /// The rule's message, if it has one.
    pub message: Option<String>,
    /// Which conditions held, in words.
    pub why: String,
}

/// The operator's effect rules, in their order; the first that matches decides.
/// Travels to a browser host as the rules were written, and is built again there.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(try_from = "Vec<RuleConfig>", into = "Vec<RuleConfig>")]
pub struct Effects {
    written: Vec<RuleConfig>,
    rules: Vec<EffectRule>,
}

impl fmt::Debug for Effects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.rules.iter().map(|r| &r.name))
            .finish()
    }
}

impl TryFrom<Vec<RuleConfig>> for Effects {
    type Error = RuleError;

    fn try_from(written: Vec<RuleConfig>) -> Result<Effects, RuleError> {
        let rules = written
            .iter()
            .enumerate()
            .map(|(i, rule)| build(rule, &format!("effect rule {i}")))
            .collect::<Result<_, _>>()?;
        Ok(Effects { written, rules })
    }
}

impl From<Effects> for Vec<RuleConfig> {
    fn from(effects: Effects) -> Vec<RuleConfig> {
        effects.written
    }
}

impl Effects {
    /// Builds the effect rules of `rules` (each with the key it was written under).
    pub(crate) fn build(rules: Vec<(String, RuleConfig)>) -> Result<Effects, RuleError> {
        let mut built = Vec::new();
        let mut written = Vec::new();
        for (key, mut rule) in rules {
            let effect = build(&rule, &key)?;
            // Named as it was in the config, wherever it is built again.
            rule.name = Some(effect.name.clone());
            built.push(effect);
            written.push(rule);
        }
        Ok(Effects {
            written,
            rules: built,
        })
    }

    /// Whether no effect rule is in force (nothing need be paused for them).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The first rule matching `request`, or `None` (it goes).
    pub fn judge(&self, request: &Request<'_>) -> Option<EffectVerdict> {
        if self.rules.is_empty() {
            return None;
        }
        self.judge_fields(request, &Fields::of(request))
    }

    /// The first rule matching `request` carrying `fields` (what [`Fields::of`] read
    /// of it, after the caller hid what it must: a rule's patterns are matched on
    /// those, so they say nothing of a secret's value).
    pub fn judge_fields(&self, request: &Request<'_>, fields: &Fields) -> Option<EffectVerdict> {
        self.rules
            .iter()
            .find_map(|rule| rule.judge(request, fields))
    }
}

#[derive(Debug, Clone)]
struct EffectRule {
    name: String,
    methods: Vec<String>,
    url: Option<Regex>,
    fields: Vec<String>,
    body: Option<Regex>,
    risk: Risk,
    action: Action,
    message: Option<String>,
}

/// Whether `rule` is an effect rule (it names a `request_*` condition).
pub(crate) fn is_effect(rule: &RuleConfig) -> bool {
    !rule.request_method.is_empty()
        || rule.request_url.is_some()
        || !rule.request_fields.is_empty()
        || rule.request_body.is_some()
}

fn build(rule: &RuleConfig, key: &str) -> Result<EffectRule, RuleError> {
    // An effect is judged in the browser, where no call is known: conditions on the
    // call would silently never hold there.
    let call_conditions = [
        ("tools", !rule.tools.is_empty()),
        ("role", rule.role.is_some()),
        ("name_matches", rule.name_matches.is_some()),
        ("text", rule.text.is_some()),
        ("url", rule.url.is_some()),
        ("origin", rule.origin.is_some()),
        ("secret", rule.secret.is_some()),
        ("password", rule.password.is_some()),
        ("leaves_trusted", rule.leaves_trusted.is_some()),
    ];
    if let Some((field, _)) = call_conditions.iter().find(|(_, set)| *set) {
        return Err(RuleError {
            key: format!("{key}.{field}"),
            why: "a rule with request_* conditions judges the request a page sends, which no call condition describes; write this condition in a rule of its own".to_owned(),
        });
    }
    if rule.action == Action::Allow && rule.message.is_some() {
        return Err(RuleError {
            key: format!("{key}.message"),
            why: "a rule that allows has nobody to tell; give `message` to approve or deny rules"
                .to_owned(),
        });
    }
    let mut methods = Vec::new();
    for (i, method) in rule.request_method.iter().enumerate() {
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(RuleError {
                key: format!("{key}.request_method[{i}]"),
                why: format!("{method:?} is not an HTTP method (POST, PUT, PATCH, DELETE, GET …)"),
            });
        }
        methods.push(method.to_ascii_uppercase());
    }
    for (i, field) in rule.request_fields.iter().enumerate() {
        if field.is_empty() {
            return Err(RuleError {
                key: format!("{key}.request_fields[{i}]"),
                why: "a field name is not empty".to_owned(),
            });
        }
    }
    Ok(EffectRule {
        name: rule
            .name
            .clone()
            .unwrap_or_else(|| key.replace("approvals.rules", "rule")),
        methods,
        url: pattern(key, "request_url", &rule.request_url)?,
        fields: rule.request_fields.clone(),
        body: pattern(key, "request_body", &rule.request_body)?,
        risk: rule.risk,
        action: rule.action,
        message: rule.message.clone(),
    })
}

impl EffectRule {
    fn judge(&self, request: &Request<'_>, fields: &Fields) -> Option<EffectVerdict> {
        let mut why = Vec::new();
        let method = request.method.to_ascii_uppercase();
        if !self.methods.is_empty() {
            if !self.methods.contains(&method) {
                return None;
            }
            why.push(format!("method {method}"));
        }
        if let Some(url) = &self.url {
            if !url.is_match(request.url) {
                return None;
            }
            why.push(format!("URL matches {}", url.as_str()));
        }
        let unseen = fields.unseen && (!self.fields.is_empty() || self.body.is_some());
        if unseen {
            why.push("its body cannot be read, so it is held as if it matched".to_owned());
        } else {
            if !self.fields.is_empty() {
                if !self.fields.iter().all(|f| fields.has(f)) {
                    return None;
                }
                why.push(format!("carries {}", self.fields.join(", ")));
            }
            if let Some(body) = &self.body {
                let matched = fields
                    .pairs
                    .iter()
                    .any(|(k, v)| body.is_match(&format!("{k}={v}")));
                if !matched {
                    return None;
                }
                why.push(format!("a field matches {}", body.as_str()));
            }
        }
        Some(EffectVerdict {
            rule: self.name.clone(),
            risk: self.risk,
            action: self.action,
            message: self.message.clone(),
            why: if why.is_empty() {
                "it matches every request".to_owned()
            } else {
                why.join("; ")
            },
        })
    }
}

/// The `name`/`value` pairs a request carries, query first, then its body; a JSON
/// field is named by its path (`payee.iban`) and matches a rule by path or last name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Fields {
    /// The pairs, in order.
    pub pairs: Vec<(String, String)>,
    /// The body could not be read.
    pub unseen: bool,
}

/// Most fields taken from one request: a rule needs names, not a megabyte of them.
const MAX_FIELDS: usize = 512;

impl Fields {
    /// What `request` carries.
    pub fn of(request: &Request<'_>) -> Fields {
        let mut fields = Fields {
            pairs: Vec::new(),
            unseen: request.body_unseen,
        };
        if let Ok(url) = url::Url::parse(request.url) {
            fields.pairs.extend(
                url.query_pairs()
                    .map(|(k, v)| (k.into_owned(), v.into_owned())),
            );
        }
        if let Some(body) = request.body {
            fields.read_body(body, request.content_type.unwrap_or_default());
        }
        fields.pairs.truncate(MAX_FIELDS);
        fields
    }

    fn read_body(&mut self, body: &[u8], content_type: &str) {
        let kind = content_type.to_ascii_lowercase();
        let first = body.iter().find(|b| !b.is_ascii_whitespace());
        if matches!(first, Some(b'{' | b'['))
            && let Ok(value) = serde_json::from_slice::<serde_json::Value>(body)
        {
            flatten("", &value, &mut self.pairs);
            return;
        }
        if kind.starts_with("multipart/form-data")
            && let Some(boundary) = boundary_of(content_type)
        {
            multipart(body, &boundary, &mut self.pairs);
            return;
        }
        self.pairs.extend(
            url::form_urlencoded::parse(body)
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.into_owned(), v.into_owned())),
        );
    }

    fn has(&self, name: &str) -> bool {
        self.pairs.iter().any(|(k, _)| {
            k == name || k.rsplit('.').next() == Some(name) || k.strip_suffix("[]") == Some(name)
        })
    }
}

// A JSON value's leaves as `path=value` (arrays by index), at most MAX_FIELDS.
fn flatten(path: &str, value: &serde_json::Value, out: &mut Vec<(String, String)>) {
    if out.len() >= MAX_FIELDS {
        return;
    }
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                flatten(&join(key), value, out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, value) in items.iter().enumerate() {
                flatten(&join(&i.to_string()), value, out);
            }
        }
        serde_json::Value::String(s) => out.push((path.to_owned(), s.clone())),
        other => out.push((path.to_owned(), other.to_string())),
    }
}

fn boundary_of(content_type: &str) -> Option<String> {
    content_type.split(';').find_map(|part| {
        let (key, value) = part.trim().split_once('=')?;
        key.eq_ignore_ascii_case("boundary")
            .then(|| value.trim_matches('"').to_owned())
            .filter(|b| !b.is_empty())
    })
}

// The named parts of a `multipart/form-data` body (RFC 7578): each part's
// `Content-Disposition` name, and its content when it is not a file.
fn multipart(body: &[u8], boundary: &str, out: &mut Vec<(String, String)>) {
    let text = String::from_utf8_lossy(body);
    let delimiter = format!("--{boundary}");
    for part in text.split(delimiter.as_str()).skip(1) {
        let Some((head, content)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let Some(name) = part_name(head) else {
            continue;
        };
        let value = if head.contains("filename=") {
            String::new()
        } else {
            content.strip_suffix("\r\n").unwrap_or(content).to_owned()
        };
        out.push((name, value));
        if out.len() >= MAX_FIELDS {
            return;
        }
    }
}

// The `name="…"` of a part's headers (not its `filename="…"`).
fn part_name(head: &str) -> Option<String> {
    let mut rest = head;
    while let Some(at) = rest.find("name=\"") {
        let before = &rest[..at];
        let after = &rest[at + "name=\"".len()..];
        let end = after.find('"')?;
        if !before.ends_with("file") {
            return Some(after[..end].to_owned());
        }
        rest = &after[end..];
    }
    None
}
