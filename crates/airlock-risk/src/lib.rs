//! Risk rules: which tool calls run, which wait for a human, which are refused, and
//! why. Pure: the gateway gathers the [`Facts`] of a call (its tool, the element it
//! resolved to, the text it types, where it goes) and asks [`Rules::classify`]; the
//! first rule that matches decides. The operator's `[[approvals.rules]]` come first,
//! then the built-in defaults (unless switched off).
//!
//! Rules judge the *resolved* target: a rule on the name "Delete" fires whether the
//! agent named the button by ref, by role and name, or by coordinates.

use std::fmt;

use airlock_policy::Policy;
use regex::Regex;
use serde::{Deserialize, Serialize};

mod canonical;
mod effects;
#[cfg(test)]
mod tests;

pub use effects::{
    BUILTIN_EFFECTS, BuiltinEffect, CanonicalUrl, EffectVerdict, Effects, Fields, Request,
};

/// How risky a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Nothing a rule cares about.
    #[default]
    Low,
    /// Worth a look (leaving the trusted domains).
    Medium,
    /// Destroys something (delete, revoke).
    High,
    /// Moves money or a credential.
    Critical,
}

impl Risk {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
            Risk::Critical => "critical",
        }
    }
}

/// What happens to a call a rule matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// It runs.
    #[default]
    Allow,
    /// It waits for a human's approval.
    Approve,
    /// It is refused.
    Deny,
}

impl Action {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Approve => "approve",
            Action::Deny => "deny",
        }
    }
}

/// One `[[approvals.rules]]` entry as written. Every condition given must hold; a
/// rule with none matches every call of its tools (or every call). A rule with a
/// `request_*` condition is an effect rule ([`Effects`]): it judges the requests a
/// page sends, and names no call condition.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Its name, shown with its decisions (default: `rule N`).
    pub name: Option<String>,
    /// Tools it applies to (`browser_click`, …); empty: all.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Regex on the target element's role (`button`, `link`, …).
    pub role: Option<String>,
    /// Regex on the target element's accessible name, as a snapshot shows it.
    pub name_matches: Option<String>,
    /// Regex on the text the call types (placeholders as written, never values).
    pub text: Option<String>,
    /// Regex on the URL the call loads (a navigation's target, the link a click
    /// follows) or, for other calls, the page's URL.
    pub url: Option<String>,
    /// The page's origin, exactly (`https://app.example.com`).
    pub origin: Option<String>,
    /// Whether the call involves a secret (a `{{secret:…}}` placeholder).
    pub secret: Option<bool>,
    /// Whether the target is a password field.
    pub password: Option<bool>,
    /// Whether the call leaves `policy.trusted_domains` (never true when none are set).
    pub leaves_trusted: Option<bool>,
    /// Methods of a request a page sends (`POST`, any case); empty: any method.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_method: Vec<String>,
    /// Regex on the URL of a request a page sends, in canonical form (escapes of
    /// unreserved characters decoded, repeated slashes folded, dot segments
    /// resolved, host lower case and punycode), query included.
    pub request_url: Option<String>,
    /// Regex on that URL's canonical path alone (`/admin/auth/user/7/delete/`).
    pub request_path: Option<String>,
    /// Regex on that URL's canonical query alone, without its `?`.
    pub request_query: Option<String>,
    /// Fields a request must all carry, in its query or body (form, JSON by path or
    /// last name, multipart).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_fields: Vec<String>,
    /// Regex on one of a request's fields, written `name=value`.
    pub request_body: Option<String>,
    /// How risky a matching call is.
    pub risk: Risk,
    /// What happens to it.
    pub action: Action,
    /// What the agent is told when the rule denies (or an approver sees).
    pub message: Option<String>,
}

/// `[approvals]` as written.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// How long a call waits for a decision, in seconds (default 60).
    pub timeout_secs: Option<u64>,
    /// Whether the built-in rules follow the operator's (default true).
    pub defaults: Option<bool>,
    /// Built-in rules switched off by name (`destructive`, `delete-path`, …).
    #[serde(default)]
    pub defaults_off: Vec<String>,
    /// The operator's rules, first match wins.
    #[serde(default)]
    pub rules: Vec<RuleConfig>,
    /// Where approval requests and decisions are POSTed, signed.
    pub webhook_url: Option<String>,
    /// The HMAC-SHA256 key the webhook's body is signed with (a secret).
    pub webhook_secret: Option<String>,
    /// Whether a held call is also put to the person at the agent's own MCP client
    /// (elicitation), when the client can ask (default false).
    pub in_client: Option<bool>,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            timeout_secs: None,
            defaults: Some(true),
            defaults_off: Vec::new(),
            rules: Vec::new(),
            webhook_url: None,
            webhook_secret: None,
            in_client: None,
        }
    }
}

// The webhook's key is a secret: never printed.
impl fmt::Debug for ApprovalsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalsConfig")
            .field("timeout_secs", &self.timeout_secs)
            .field("defaults", &self.defaults)
            .field("defaults_off", &self.defaults_off)
            .field("rules", &self.rules)
            .field("webhook_url", &self.webhook_url)
            .field("webhook_signed", &self.webhook_secret.is_some())
            .field("in_client", &self.in_client)
            .finish()
    }
}

/// A rule that does not build: which one, which key, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// `approvals.rules[N].key`.
    pub key: String,
    /// Why.
    pub why: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.why)
    }
}

impl std::error::Error for RuleError {}

/// Longest pattern accepted, and the compiled size a pattern may reach: rules come
/// from the operator, but a typo should not make every call slow.
const MAX_PATTERN: usize = 1_000;
const MAX_COMPILED: usize = 1 << 20;

/// What the rules are told of one call. Page-derived strings (names, URLs) are the
/// redacted forms the agent sees.
#[derive(Debug, Clone, Default)]
pub struct Facts<'a> {
    /// The tool (`browser_click`).
    pub tool: &'a str,
    /// The target element's role, when the call acts on one.
    pub role: Option<&'a str>,
    /// Its accessible name.
    pub name: Option<&'a str>,
    /// Whether it is a password field.
    pub password: bool,
    /// The text typed, as the agent wrote it.
    pub text: Option<&'a str>,
    /// Whether the call involves a secret placeholder.
    pub secret: bool,
    /// The page's URL.
    pub page_url: Option<&'a str>,
    /// Where the call goes: a navigation's target, or the href of the link clicked.
    pub destination: Option<&'a str>,
}

/// The rule that fired, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The rule's name.
    pub rule: String,
    /// Whether it is one of the built-in defaults.
    pub builtin: bool,
    /// The call's risk.
    pub risk: Risk,
    /// What happens to it.
    pub action: Action,
    /// The rule's message, if it has one.
    pub message: Option<String>,
    /// Which conditions held, in words (`name "Delete account" matches …`).
    pub why: String,
}

#[derive(Debug, Clone)]
struct Rule {
    name: String,
    builtin: bool,
    tools: Vec<String>,
    role: Option<Regex>,
    /// A role this rule never fires on (a built-in's exception).
    not_role: Option<&'static str>,
    name_matches: Option<Regex>,
    text: Option<Regex>,
    url: Option<Regex>,
    origin: Option<String>,
    secret: Option<bool>,
    password: Option<bool>,
    leaves_trusted: Option<bool>,
    risk: Risk,
    action: Action,
    message: Option<String>,
}

/// The rules in force: the operator's, then the defaults.
#[derive(Clone, Default)]
pub struct Rules {
    rules: Vec<Rule>,
    effects: Effects,
}

// Their names, in order: the patterns say little in a log line.
impl fmt::Debug for Rules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.rules.iter().map(|r| &r.name))
            .finish()
    }
}

/// The built-in call rules, by name, with what each holds in words (for `airlock
/// policy explain` and the README); the built-in effect rules are
/// [`BUILTIN_EFFECTS`].
pub const BUILTIN_CALL_RULES: &[(&str, &str)] = &[
    (
        "payment",
        "a click on an element named pay, payment, purchase, transfer, buy, checkout, place order or send money",
    ),
    (
        "destructive",
        "a click on a button (not a link: a link's GET only opens a page; the request that deletes is held by the delete-* effect rules) named delete, remove, revoke or destroy",
    ),
    (
        "leaves-trusted-domains",
        "a navigation, new tab or link click to a host outside policy.trusted_domains",
    ),
    (
        "literal-password",
        "typing literal text into a password field (refused: type a {{secret:…}} placeholder)",
    ),
];

/// The built-in rules, after the operator's. Names are matched as words, in any case.
fn defaults() -> Vec<RuleConfig> {
    let click = || vec!["browser_click".to_owned()];
    vec![
        RuleConfig {
            name: Some("payment".to_owned()),
            tools: click(),
            name_matches: Some(
                r"(?i)\b(pay|payment|purchase|transfer|buy|checkout|check out|place order|send money)\b"
                    .to_owned(),
            ),
            risk: Risk::Critical,
            action: Action::Approve,
            ..RuleConfig::default()
        },
        RuleConfig {
            name: Some("destructive".to_owned()),
            tools: click(),
            name_matches: Some(r"(?i)\b(delete|remove|revoke|destroy)\b".to_owned()),
            risk: Risk::High,
            action: Action::Approve,
            ..RuleConfig::default()
        },
        RuleConfig {
            name: Some("leaves-trusted-domains".to_owned()),
            tools: vec![
                "browser_navigate".to_owned(),
                "browser_tabs".to_owned(),
                "browser_click".to_owned(),
            ],
            leaves_trusted: Some(true),
            risk: Risk::Medium,
            action: Action::Approve,
            ..RuleConfig::default()
        },
        RuleConfig {
            name: Some("literal-password".to_owned()),
            tools: vec!["browser_type".to_owned(), "browser_fill_form".to_owned()],
            password: Some(true),
            secret: Some(false),
            risk: Risk::Critical,
            action: Action::Deny,
            message: Some(
                "literal text into a password field is refused: store the value (airlock vault set NAME) and type {{secret:NAME.password}}"
                    .to_owned(),
            ),
            ..RuleConfig::default()
        },
    ]
}

impl Rules {
    /// Builds the operator's rules (then the defaults, unless switched off). Every
    /// pattern is compiled here, so a bad one is a config error naming its key.
    pub fn from_config(config: &ApprovalsConfig) -> Result<Rules, RuleError> {
        let known = |name: &str| {
            BUILTIN_CALL_RULES.iter().any(|(n, _)| *n == name)
                || BUILTIN_EFFECTS.iter().any(|b| b.name == name)
        };
        if let Some((i, name)) = config
            .defaults_off
            .iter()
            .enumerate()
            .find(|(_, n)| !known(n))
        {
            let names: Vec<&str> = BUILTIN_CALL_RULES
                .iter()
                .map(|(n, _)| *n)
                .chain(BUILTIN_EFFECTS.iter().map(|b| b.name))
                .collect();
            return Err(RuleError {
                key: format!("approvals.defaults_off[{i}]"),
                why: format!(
                    "no built-in rule is named {name:?}; they are {}",
                    names.join(", ")
                ),
            });
        }
        let on = |name: &str| {
            config.defaults != Some(false) && !config.defaults_off.iter().any(|n| n == name)
        };
        let mut rules = Vec::new();
        let mut effects = Vec::new();
        for (i, rule) in config.rules.iter().enumerate() {
            let key = format!("approvals.rules[{i}]");
            if effects::is_effect(rule) {
                effects.push((key, rule.clone()));
            } else {
                rules.push(build(rule, &key, false)?);
            }
        }
        for rule in defaults() {
            if on(rule.name.as_deref().unwrap_or_default()) {
                let mut built = build(&rule, "built-in rule", true)?;
                if built.name == "destructive" {
                    built.not_role = Some("link");
                }
                rules.push(built);
            }
        }
        let builtins = BUILTIN_EFFECTS
            .iter()
            .filter(|b| on(b.name))
            .map(|b| b.name.to_owned())
            .collect();
        Ok(Rules {
            rules,
            effects: Effects::build(effects, builtins)?,
        })
    }

    /// These rules with a tenant's `first`: judged before the operator's and the
    /// built-ins, each may only hold (`approve`) or refuse (`deny`) a call or a
    /// request a page sends, so a tenant makes its sessions stricter and never lets
    /// through what these would hold. Its rules on requests (`request_*`) go before
    /// the operator's effect rules the same way. Errors name the tenant's rule.
    pub fn with_first(&self, first: &[RuleConfig]) -> Result<Rules, RuleError> {
        let mut rules = Vec::with_capacity(first.len() + self.rules.len());
        let mut effects = Vec::new();
        for (i, rule) in first.iter().enumerate() {
            let key = format!("approvals.rules[{i}]");
            if rule.action == Action::Allow {
                return Err(RuleError {
                    key: format!("{key}.action"),
                    why: "a tenant's rule may hold (`approve`) or refuse (`deny`), never allow"
                        .to_owned(),
                });
            }
            if effects::is_effect(rule) {
                effects.push((key, rule.clone()));
            } else {
                rules.push(build(rule, &key, false)?);
            }
        }
        rules.extend(self.rules.iter().cloned());
        Ok(Rules {
            rules,
            effects: self.effects.with_first(effects)?,
        })
    }

    /// The effect rules among them (judged on the requests pages send, in the
    /// browser, not on calls).
    pub fn effects(&self) -> &Effects {
        &self.effects
    }

    /// The first rule that matches `facts`, or `None` (the call runs; risk low).
    /// `policy` says which domains are trusted.
    pub fn classify(&self, facts: &Facts<'_>, policy: &Policy) -> Option<Verdict> {
        self.rules.iter().find_map(|rule| rule.judge(facts, policy))
    }

    /// The names of the rules that judge calls, in order (effect rules aside).
    pub fn names(&self) -> Vec<&str> {
        self.rules.iter().map(|r| r.name.as_str()).collect()
    }

    /// How many rules judge calls (effect rules aside).
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no rule judges calls (effect rules aside).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

// A rule's regex at `key.field`, compiled within the size limits.
fn pattern(key: &str, field: &str, value: &Option<String>) -> Result<Option<Regex>, RuleError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let error = |why: String| RuleError {
        key: format!("{key}.{field}"),
        why,
    };
    if value.len() > MAX_PATTERN {
        return Err(error(format!(
            "a pattern is at most {MAX_PATTERN} characters"
        )));
    }
    regex::RegexBuilder::new(value)
        .size_limit(MAX_COMPILED)
        .build()
        .map(Some)
        .map_err(|e| error(format!("not a valid pattern: {e}")))
}

fn build(config: &RuleConfig, key: &str, builtin: bool) -> Result<Rule, RuleError> {
    let pattern = |field: &str, value: &Option<String>| pattern(key, field, value);
    if config.action == Action::Allow && config.message.is_some() {
        return Err(RuleError {
            key: format!("{key}.message"),
            why: "a rule that allows has nobody to tell; give `message` to approve or deny rules"
                .to_owned(),
        });
    }
    Ok(Rule {
        name: config
            .name
            .clone()
            .unwrap_or_else(|| key.replace("approvals.rules", "rule")),
        builtin,
        tools: config.tools.clone(),
        role: pattern("role", &config.role)?,
        not_role: None,
        name_matches: pattern("name_matches", &config.name_matches)?,
        text: pattern("text", &config.text)?,
        url: pattern("url", &config.url)?,
        origin: config
            .origin
            .as_ref()
            .map(|o| o.trim_end_matches('/').to_ascii_lowercase()),
        secret: config.secret,
        password: config.password,
        leaves_trusted: config.leaves_trusted,
        risk: config.risk,
        action: config.action,
        message: config.message.clone(),
    })
}

impl Rule {
    // Every condition must hold; each one that does says so for `why`.
    fn judge(&self, facts: &Facts<'_>, policy: &Policy) -> Option<Verdict> {
        let mut why = Vec::new();
        if !self.tools.is_empty() {
            if !self.tools.iter().any(|t| t == facts.tool) {
                return None;
            }
            why.push(format!("tool {}", facts.tool));
        }
        if self.not_role.is_some() && facts.role == self.not_role {
            return None;
        }
        let matched = |pattern: &Option<Regex>, value: Option<&str>, what: &str| match pattern {
            None => Some(None),
            Some(re) => {
                let value = value?;
                re.is_match(value)
                    .then(|| Some(format!("{what} \"{value}\" matches {}", re.as_str())))
            }
        };
        for (pattern, value, what) in [
            (&self.role, facts.role, "role"),
            (&self.name_matches, facts.name, "name"),
            (&self.text, facts.text, "text"),
            (
                &self.url,
                facts.destination.or(facts.page_url),
                if facts.destination.is_some() {
                    "destination"
                } else {
                    "page URL"
                },
            ),
        ] {
            if let Some(said) = matched(pattern, value, what)? {
                why.push(said);
            }
        }
        if let Some(origin) = &self.origin {
            let page = facts.page_url.and_then(origin_of)?;
            if &page != origin {
                return None;
            }
            why.push(format!("page origin {page}"));
        }
        if let Some(secret) = self.secret {
            if facts.secret != secret {
                return None;
            }
            why.push(if secret {
                "a secret is involved".to_owned()
            } else {
                "no secret is involved".to_owned()
            });
        }
        if let Some(password) = self.password {
            if facts.password != password {
                return None;
            }
            why.push(if password {
                "the target is a password field".to_owned()
            } else {
                "the target is not a password field".to_owned()
            });
        }
        if let Some(leaves) = self.leaves_trusted {
            let host = facts.destination.and_then(host_of);
            let outside = policy.has_trusted_domains()
                && host.as_deref().is_some_and(|h| !policy.is_trusted(h));
            if outside != leaves {
                return None;
            }
            why.push(match host {
                Some(host) if leaves => {
                    format!("{host} is outside policy.trusted_domains")
                }
                _ => "the call stays within policy.trusted_domains".to_owned(),
            });
        }
        // A rule of a password field or of typed text is about typing: it needs text.
        if (self.password == Some(true) || self.text.is_some())
            && facts.text.is_none_or(str::is_empty)
        {
            return None;
        }
        Some(Verdict {
            rule: self.name.clone(),
            builtin: self.builtin,
            risk: self.risk,
            action: self.action,
            message: self.message.clone(),
            why: if why.is_empty() {
                "it matches every call".to_owned()
            } else {
                why.join("; ")
            },
        })
    }
}

fn origin_of(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    let origin = url.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

fn host_of(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    url.host_str().map(str::to_owned)
}
