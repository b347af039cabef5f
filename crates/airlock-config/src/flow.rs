//! `[flow]`: the data-flow stage of the call pipeline. Origin sets (where a session
//! may act, where it may only read) and sink checks (data read on one origin that the
//! agent sends toward another is held for a human or refused).

use serde::Deserialize;

use airlock_policy::OriginSet;

use crate::Error;

/// `[flow]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFlow {
    /// What a string carrying another origin's data gets: `off`, `ask` (held for a
    /// human; the default) or `deny`.
    pub mode: Option<String>,
    /// Shortest run that counts as data when it holds more than words (default 12).
    pub min_length: Option<usize>,
    /// Shortest run of words alone that counts (default 40).
    pub word_length: Option<usize>,
    /// Most page text a session keeps to check against, in KiB (default 1024).
    pub history_kib: Option<usize>,
    /// Origins data may go to from anywhere (a share set).
    #[serde(default)]
    pub exempt: Vec<String>,
    /// Origins a session may act on, unless it is opened with its own.
    pub act: Option<Vec<String>>,
    /// Origins a session may only read, unless it is opened with its own.
    pub read: Option<Vec<String>>,
    /// What a state-changing call on a read-only origin gets: `deny` (the default)
    /// or `ask`.
    pub read_only: Option<String>,
    /// Whose reads a send is checked against: `caller` (the default: every session
    /// and one-off call of the caller, one per conversation of a leased session),
    /// `tenant` or `session`.
    pub scope: Option<String>,
    /// Let the agent write URLs with a user name or password in them (default
    /// false: refused, rule `url-credentials`).
    pub url_credentials: Option<bool>,
    /// The caller's own identifiers (its e-mail addresses, names, member numbers):
    /// data a page showed that may go anywhere.
    #[serde(default)]
    pub own: Vec<String>,
    /// E-mail domains whose addresses are the caller's own (`corp.example`: any
    /// address at it or a subdomain, as a page showed it).
    #[serde(default)]
    pub own_domains: Vec<String>,
}

/// Whose reads a send is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlowScope {
    /// One browser session's own.
    Session,
    /// Every session and one-off call of the caller (per conversation of a leased
    /// session that names one).
    #[default]
    Caller,
    /// Every session of the tenant.
    Tenant,
}

/// What the data-flow stage does with a call it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlowMode {
    /// Nothing: the stage is off.
    Off,
    /// Held for a human's approval.
    #[default]
    Ask,
    /// Refused (`policy_denied`).
    Deny,
}

impl FlowMode {
    /// The word in `airlock.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowMode::Off => "off",
            FlowMode::Ask => "ask",
            FlowMode::Deny => "deny",
        }
    }
}

/// Where a session may act and where it may only read. Empty `act` and `read`: no
/// sets, every reachable origin may be acted on.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OriginSets {
    /// Origins the agent may change things on.
    pub act: OriginSet,
    /// Origins it may only read.
    pub read: OriginSet,
}

impl OriginSets {
    /// Parses the two lists; `key` prefixes an error's key (`flow`, `origins`).
    pub fn parse(key: &str, act: &[String], read: &[String]) -> Result<OriginSets, Error> {
        let invalid = |e: airlock_policy::ConfigError| Error::Invalid {
            key: e.key,
            message: e.message,
        };
        Ok(OriginSets {
            act: OriginSet::parse(&format!("{key}.act"), act).map_err(invalid)?,
            read: OriginSet::parse(&format!("{key}.read"), read).map_err(invalid)?,
        })
    }

    /// Whether any set is given (else nothing is read-only).
    pub fn is_set(&self) -> bool {
        !self.act.is_empty() || !self.read.is_empty()
    }

    /// How `origin` stands: acted on, only read, or outside both sets (when sets are
    /// given, an origin outside both may be neither acted on nor navigated to).
    pub fn standing(&self, origin: &str) -> Standing {
        if !self.is_set() || self.act.contains(origin) {
            Standing::Act
        } else if self.read.contains(origin) {
            Standing::Read
        } else {
            Standing::Outside
        }
    }
}

/// How an origin stands in a session's origin sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The agent may act on it.
    Act,
    /// The agent may only read it.
    Read,
    /// In neither set.
    Outside,
}

/// Validated `[flow]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// What a call carrying another origin's data gets.
    pub mode: FlowMode,
    /// Shortest run that counts when it holds more than words.
    pub min_length: usize,
    /// Shortest run of words alone that counts.
    pub word_length: usize,
    /// Most page text a session keeps, in bytes.
    pub history_bytes: usize,
    /// Origins data may go to from anywhere.
    pub exempt: OriginSet,
    /// The default origin sets of a session opened without its own.
    pub origins: OriginSets,
    /// What a state-changing call on a read-only origin gets (`Ask` or `Deny`).
    pub read_only: FlowMode,
    /// Whose reads a send is checked against.
    pub scope: FlowScope,
    /// URLs the agent writes may carry a user name or password.
    pub url_credentials: bool,
    /// The caller's own identifiers, free to go anywhere.
    pub own: Vec<String>,
    /// E-mail domains whose addresses are the caller's own.
    pub own_domains: Vec<String>,
}

impl Default for Flow {
    fn default() -> Flow {
        Flow {
            mode: FlowMode::Ask,
            min_length: 12,
            word_length: 40,
            history_bytes: 1 << 20,
            exempt: OriginSet::default(),
            origins: OriginSets::default(),
            read_only: FlowMode::Deny,
            scope: FlowScope::Caller,
            url_credentials: false,
            own: Vec::new(),
            own_domains: Vec::new(),
        }
    }
}

/// Validates `[flow]`.
pub(crate) fn validate(raw: &RawFlow) -> Result<Flow, Error> {
    let invalid = |key: &str, message: String| Error::Invalid {
        key: format!("flow.{key}"),
        message,
    };
    let defaults = Flow::default();
    let mode = match raw.mode.as_deref() {
        None => defaults.mode,
        Some("off") => FlowMode::Off,
        Some("ask") => FlowMode::Ask,
        Some("deny") => FlowMode::Deny,
        Some(other) => {
            return Err(invalid(
                "mode",
                format!("`{other}` is not one of off, ask, deny"),
            ));
        }
    };
    let read_only = match raw.read_only.as_deref() {
        None => defaults.read_only,
        Some("ask") => FlowMode::Ask,
        Some("deny") => FlowMode::Deny,
        Some(other) => {
            return Err(invalid(
                "read_only",
                format!("`{other}` is not one of ask, deny"),
            ));
        }
    };
    let scope = match raw.scope.as_deref() {
        None => defaults.scope,
        Some("caller") => FlowScope::Caller,
        Some("tenant") => FlowScope::Tenant,
        Some("session") => FlowScope::Session,
        Some(other) => {
            return Err(invalid(
                "scope",
                format!("`{other}` is not one of caller, tenant, session"),
            ));
        }
    };
    let min_length = match raw.min_length {
        None => defaults.min_length,
        Some(n @ 9..=256) => n,
        Some(n) => return Err(invalid("min_length", format!("{n} is outside 9..=256"))),
    };
    let word_length = match raw.word_length {
        None => defaults.word_length.max(min_length),
        Some(n) if n >= min_length && n <= 4096 => n,
        Some(n) => {
            return Err(invalid(
                "word_length",
                format!("{n} is outside min_length ({min_length})..=4096"),
            ));
        }
    };
    let history_bytes = match raw.history_kib {
        None => defaults.history_bytes,
        Some(n @ 16..=65_536) => n * 1024,
        Some(n) => {
            return Err(invalid("history_kib", format!("{n} is outside 16..=65536")));
        }
    };
    let exempt = OriginSet::parse("flow.exempt", &raw.exempt).map_err(|e| Error::Invalid {
        key: e.key,
        message: e.message,
    })?;
    let origins = OriginSets::parse(
        "flow",
        raw.act.as_deref().unwrap_or_default(),
        raw.read.as_deref().unwrap_or_default(),
    )?;
    // An identity shorter than this would free common words with it.
    if let Some(short) = raw.own.iter().find(|o| o.trim().chars().count() < 4) {
        return Err(invalid(
            "own",
            format!("`{short}` is shorter than 4 characters"),
        ));
    }
    if let Some(bad) = raw.own_domains.iter().find(|d| {
        let d = d.trim().trim_start_matches(['@', '.']);
        !d.contains('.') || d.contains(['@', '/', ' ', ':'])
    }) {
        return Err(invalid(
            "own_domains",
            format!("`{bad}` is not a domain name like corp.example"),
        ));
    }
    Ok(Flow {
        mode,
        min_length,
        word_length,
        history_bytes,
        exempt,
        origins,
        read_only,
        scope,
        url_credentials: raw.url_credentials.unwrap_or(defaults.url_credentials),
        own: raw.own.iter().map(|o| o.trim().to_owned()).collect(),
        own_domains: raw
            .own_domains
            .iter()
            .map(|d| d.trim().to_owned())
            .collect(),
    })
}
