//! Effect rules: rules on what an action *causes*, not on what it is called. A rule
//! with a `request_*` condition judges each request a page is about to send (its
//! method, URL and the fields its body or query carries), so a button named "Show
//! details" whose handler POSTs a transfer is held like one named "Transfer". The
//! browser layer asks [`Effects::judge`] for every paused request of a session; one
//! an `approve` rule matches waits, unsent, for a human.
//!
//! URLs are judged in canonical form ([`CanonicalUrl`]): `request_url` sees the whole
//! URL, `request_path` its path alone and `request_query` its query alone, so a
//! `/%74ransfer` is a `/transfer` and a `?next=/delete/` is no delete.
//!
//! Built-in effect rules ([`BUILTIN_EFFECTS`]) follow the operator's: a request an
//! action causes that deletes (an HTTP `DELETE`, or a `POST`/`PUT`/`PATCH` whose path or
//! action field says delete, remove or destroy) or pays (card or bank details, a
//! path that says pay, checkout or transfer) waits for a human. Each can be switched
//! off by name (`[approvals] defaults_off`), all of them with `defaults = false`.
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

pub use crate::canonical::CanonicalUrl;
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

/// The effect rules in force: the operator's, in their order, then the built-ins
/// not switched off; the first that matches decides. Travels to a browser host as
/// written (the operator's rules and the built-ins' names), and is built again there.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(try_from = "Written", into = "Written")]
pub struct Effects {
    written: Written,
    rules: Vec<EffectRule>,
}

/// What an [`Effects`] is made from: the operator's rules and the built-ins' names.
#[derive(Clone, Default, Serialize, Deserialize)]
struct Written {
    rules: Vec<RuleConfig>,
    #[serde(default)]
    builtins: Vec<String>,
}

impl fmt::Debug for Effects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.rules.iter().map(|r| &r.name))
            .finish()
    }
}

impl TryFrom<Written> for Effects {
    type Error = RuleError;

    fn try_from(written: Written) -> Result<Effects, RuleError> {
        let mut rules = written
            .rules
            .iter()
            .enumerate()
            .map(|(i, rule)| build(rule, &format!("effect rule {i}")))
            .collect::<Result<Vec<_>, _>>()?;
        for name in &written.builtins {
            let builtin = BUILTIN_EFFECTS
                .iter()
                .find(|b| b.name == name)
                .ok_or_else(|| RuleError {
                    key: "effect rules".to_owned(),
                    why: format!("no built-in effect rule is named {name:?}"),
                })?;
            rules.push(builtin.rule());
        }
        Ok(Effects { written, rules })
    }
}

impl From<Effects> for Written {
    fn from(effects: Effects) -> Written {
        effects.written
    }
}

impl Effects {
    /// Builds the effect rules of `rules` (each with the key it was written under),
    /// then the built-ins named in `builtins`.
    pub(crate) fn build(
        rules: Vec<(String, RuleConfig)>,
        builtins: Vec<String>,
    ) -> Result<Effects, RuleError> {
        let mut built = Vec::new();
        let mut written = Vec::new();
        for (key, mut rule) in rules {
            let effect = build(&rule, &key)?;
            // Named as it was in the config, wherever it is built again.
            rule.name = Some(effect.name.clone());
            built.push(effect);
            written.push(rule);
        }
        for name in &builtins {
            if let Some(builtin) = BUILTIN_EFFECTS.iter().find(|b| b.name == name) {
                built.push(builtin.rule());
            }
        }
        Ok(Effects {
            written: Written {
                rules: written,
                builtins,
            },
            rules: built,
        })
    }

    /// These rules with `first` (each with the key it was written under) judged
    /// before them: a tenant's effect rules before the operator's and the built-ins.
    pub(crate) fn with_first(
        &self,
        first: Vec<(String, RuleConfig)>,
    ) -> Result<Effects, RuleError> {
        if first.is_empty() {
            return Ok(self.clone());
        }
        let mut built = Vec::with_capacity(first.len() + self.rules.len());
        let mut written = Vec::with_capacity(first.len() + self.written.rules.len());
        for (key, mut rule) in first {
            let effect = build(&rule, &key)?;
            rule.name = Some(effect.name.clone());
            built.push(effect);
            written.push(rule);
        }
        built.extend(self.rules.iter().cloned());
        written.extend(self.written.rules.iter().cloned());
        Ok(Effects {
            written: Written {
                rules: written,
                builtins: self.written.builtins.clone(),
            },
            rules: built,
        })
    }

    /// Whether no effect rule is in force (nothing need be paused for them).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules' names, in the order they judge (the built-ins last).
    pub fn names(&self) -> Vec<&str> {
        self.rules.iter().map(|r| r.name.as_str()).collect()
    }

    /// The first rule matching `request`, or `None` (it goes).
    pub fn judge(&self, request: &Request<'_>) -> Option<EffectVerdict> {
        if self.rules.is_empty() {
            return None;
        }
        self.judge_fields(
            request,
            &CanonicalUrl::of(request.url),
            &Fields::of(request),
        )
    }

    /// The first rule matching `request`, whose URL reads `url` in canonical form,
    /// carrying `fields` (what [`Fields::of`] read of it). The caller may have hidden
    /// what it must in both first: a rule's patterns are matched on these, so they
    /// say nothing of a secret's value.
    pub fn judge_fields(
        &self,
        request: &Request<'_>,
        url: &CanonicalUrl,
        fields: &Fields,
    ) -> Option<EffectVerdict> {
        self.rules
            .iter()
            .find_map(|rule| rule.judge(request, url, fields))
    }
}

/// A built-in effect rule: its name (what `[approvals] defaults_off` takes), how
/// risky what it holds is, and what it holds, in words.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinEffect {
    /// Its name.
    pub name: &'static str,
    /// The risk of a request it holds.
    pub risk: Risk,
    /// What it holds.
    pub holds: &'static str,
    methods: &'static [&'static str],
    sign: Option<Sign>,
}

/// Words that say a request destroys something.
const DELETE_WORDS: &[&str] = &["delete", "remove", "destroy", "erase", "purge"];
/// Words that say a request changes or resets a password.
const PASSWORD_WORDS: &[&str] = &["password", "passwd"];
/// Words that say a request moves money.
const PAYMENT_WORDS: &[&str] = &[
    "pay",
    "payment",
    "payments",
    "purchase",
    "checkout",
    "transfer",
    "transfers",
    "charge",
    "charges",
    "payout",
    "payouts",
];
/// Field names (lower case, letters and digits only) that carry card or bank details.
const PAYMENT_FIELDS: &[&str] = &[
    "iban",
    "cardnumber",
    "ccnumber",
    "ccnum",
    "creditcard",
    "cardcvc",
    "cardcvv",
    "cvc",
    "cvv",
    "cvv2",
    "cvc2",
    "securitycode",
];
/// Field names (lower case, letters and digits only) that name what a request does:
/// a method override (Rails' and Laravel's `_method`), an action (Django's admin
/// actions), an operation (JSON Patch's `op`, GraphQL's `operationName`).
const ACTION_FIELDS: &[&str] = &[
    "method",
    "action",
    "op",
    "operation",
    "operationname",
    "cmd",
    "command",
    "do",
    "intent",
    "verb",
    "task",
];

const CHANGING: &[&str] = &["POST", "PUT", "PATCH"];

/// The built-in effect rules, in the order they judge, after the operator's.
pub const BUILTIN_EFFECTS: &[BuiltinEffect] = &[
    BuiltinEffect {
        name: "delete-request",
        risk: Risk::High,
        holds: "an HTTP DELETE request",
        methods: &["DELETE"],
        sign: None,
    },
    BuiltinEffect {
        name: "delete-path",
        risk: Risk::High,
        holds: "a POST, PUT or PATCH whose path says delete, remove, destroy, erase or purge (…/user/7/delete/, /api/removeItem)",
        methods: CHANGING,
        sign: Some(Sign::PathSays(DELETE_WORDS)),
    },
    BuiltinEffect {
        name: "delete-field",
        risk: Risk::High,
        holds: "a POST, PUT or PATCH whose action field says so (_method=delete, action=delete_selected, op=remove) or that is a GraphQL mutation which does",
        methods: CHANGING,
        sign: Some(Sign::ActionSays(DELETE_WORDS)),
    },
    BuiltinEffect {
        name: "password-path",
        risk: Risk::High,
        holds: "a POST, PUT or PATCH whose path says password or passwd (a change or a reset: /account/password, /password_change/); a sign-in's path does not",
        methods: CHANGING,
        sign: Some(Sign::PathSays(PASSWORD_WORDS)),
    },
    BuiltinEffect {
        name: "payment-path",
        risk: Risk::Critical,
        holds: "a POST, PUT or PATCH whose path says pay, payment, purchase, checkout, transfer, charge or payout",
        methods: CHANGING,
        sign: Some(Sign::PathSays(PAYMENT_WORDS)),
    },
    BuiltinEffect {
        name: "payment-field",
        risk: Risk::Critical,
        holds: "a POST, PUT or PATCH carrying card or bank details (a field named for a card number, CVC or IBAN, or any value shaped like an IBAN), or whose action field says pay, purchase, checkout or transfer",
        methods: CHANGING,
        sign: Some(Sign::Payment),
    },
];

impl BuiltinEffect {
    fn rule(&self) -> EffectRule {
        EffectRule {
            name: self.name.to_owned(),
            methods: self.methods.iter().map(|m| (*m).to_owned()).collect(),
            url: None,
            path: None,
            query: None,
            fields: Vec::new(),
            body: None,
            sign: self.sign,
            risk: self.risk,
            action: Action::Approve,
            message: None,
        }
    }
}

/// What a built-in rule reads in a request besides its method.
#[derive(Debug, Clone, Copy)]
enum Sign {
    /// A word of its path is one of these.
    PathSays(&'static [&'static str]),
    /// An action field's value (or a GraphQL mutation) has one of these words.
    ActionSays(&'static [&'static str]),
    /// It carries card or bank details, or an action field says it pays.
    Payment,
}

impl Sign {
    // Why it holds, in words, or `None` when the request shows no such sign.
    fn read(self, url: &CanonicalUrl, fields: &Fields) -> Option<String> {
        match self {
            Sign::PathSays(words) => {
                let said = said(&url.path, words)?;
                Some(format!("its path says {said:?}"))
            }
            Sign::ActionSays(words) => action_says(fields, words),
            Sign::Payment => fields
                .pairs
                .iter()
                .find(|(k, _)| PAYMENT_FIELDS.contains(&field_key(k).as_str()))
                .map(|(k, _)| format!("it carries {k}"))
                .or_else(|| {
                    // A bank account whatever the field is called (`recipient`).
                    fields
                        .pairs
                        .iter()
                        .find(|(_, v)| iban_shaped(v))
                        .map(|(k, _)| format!("its {k} is an account number (IBAN)"))
                })
                .or_else(|| action_says(fields, PAYMENT_WORDS)),
        }
    }
}

// Whether a field's value is shaped like an IBAN: two capital letters, two digits,
// then 11 to 30 letters and digits (spaces between groups allowed). The shape, not
// the checksum: a payment to an account that fails it is still a payment.
fn iban_shaped(value: &str) -> bool {
    let packed: Vec<u8> = value.trim().bytes().filter(|b| *b != b' ').collect();
    packed.len() >= 15
        && packed.len() <= 34
        && packed[..2].iter().all(u8::is_ascii_uppercase)
        && packed[2..4].iter().all(u8::is_ascii_digit)
        && packed[4..]
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && packed[4..].iter().filter(|b| b.is_ascii_digit()).count() >= 6
}

// The first word of `text` (split at anything not a letter or digit, and where a
// lower-case letter meets an upper-case one) that is one of `words`.
fn said(text: &str, words: &[&str]) -> Option<String> {
    words_of(text).find(|w| words.contains(&w.as_str()))
}

fn words_of(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut last_lower = false;
    for c in text.chars() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            last_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && last_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        last_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words.into_iter()
}

// A field's name as the built-ins compare it: its last JSON path part, lower case,
// letters and digits only (`_method`, `card-number`, `payee.IBAN`).
fn field_key(name: &str) -> String {
    let last = name
        .trim_end_matches("[]")
        .rsplit('.')
        .next()
        .unwrap_or(name);
    last.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

// Whether an action field (or a GraphQL mutation) of `fields` says one of `words`.
fn action_says(fields: &Fields, words: &[&str]) -> Option<String> {
    fields.pairs.iter().find_map(|(k, v)| {
        let key = field_key(k);
        let graphql = key == "query" && v.trim_start().starts_with("mutation");
        if !(ACTION_FIELDS.contains(&key.as_str()) || graphql) {
            return None;
        }
        let word = said(v, words)?;
        Some(if graphql {
            format!("it is a GraphQL mutation that says {word:?}")
        } else {
            format!("its field {k} says {word:?}")
        })
    })
}

#[derive(Debug, Clone)]
struct EffectRule {
    name: String,
    methods: Vec<String>,
    url: Option<Regex>,
    path: Option<Regex>,
    query: Option<Regex>,
    fields: Vec<String>,
    body: Option<Regex>,
    sign: Option<Sign>,
    risk: Risk,
    action: Action,
    message: Option<String>,
}

/// Whether `rule` is an effect rule (it names a `request_*` condition).
pub(crate) fn is_effect(rule: &RuleConfig) -> bool {
    !rule.request_method.is_empty()
        || rule.request_url.is_some()
        || rule.request_path.is_some()
        || rule.request_query.is_some()
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
        path: pattern(key, "request_path", &rule.request_path)?,
        query: pattern(key, "request_query", &rule.request_query)?,
        fields: rule.request_fields.clone(),
        body: pattern(key, "request_body", &rule.request_body)?,
        sign: None,
        risk: rule.risk,
        action: rule.action,
        message: rule.message.clone(),
    })
}

impl EffectRule {
    fn judge(
        &self,
        request: &Request<'_>,
        url: &CanonicalUrl,
        fields: &Fields,
    ) -> Option<EffectVerdict> {
        let mut why = Vec::new();
        let method = request.method.to_ascii_uppercase();
        if !self.methods.is_empty() {
            if !self.methods.contains(&method) {
                return None;
            }
            why.push(format!("method {method}"));
        }
        for (pattern, value, what) in [
            (&self.url, &url.url, "URL"),
            (&self.path, &url.path, "path"),
            (&self.query, &url.query, "query"),
        ] {
            if let Some(pattern) = pattern {
                if !pattern.is_match(value) {
                    return None;
                }
                why.push(format!("{what} matches {}", pattern.as_str()));
            }
        }
        if let Some(sign) = self.sign {
            // A built-in judges what it can read: an upload's unread body does not
            // hold it (every ordinary upload would wait for a human).
            why.push(sign.read(url, fields)?);
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
