//! Where the store lives, and the Postgres URL that must never print its password.

/// Where the store is: SQLite in the data dir (one process), or a Postgres server
/// every control-plane replica shares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StoreLocation {
    /// `data_dir/airlock.db`.
    #[default]
    Sqlite,
    /// A `postgres://` URL.
    Postgres(DatabaseUrl),
}

/// A `postgres://` URL; it may carry a password, so it prints only where it points.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(url::Url);

impl DatabaseUrl {
    /// Checks `text` is a `postgres://` (or `postgresql://`) URL naming a host. The
    /// error never repeats the text: it may hold a password.
    pub fn parse(text: &str) -> std::result::Result<DatabaseUrl, String> {
        let url = url::Url::parse(text).map_err(|e| format!("is not a URL ({e})"))?;
        if !matches!(url.scheme(), "postgres" | "postgresql") {
            return Err(format!(
                "has the scheme `{}`; only postgres:// is supported (leave it unset for SQLite in the data dir)",
                url.scheme()
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err("names no host".to_owned());
        }
        Ok(DatabaseUrl(url))
    }

    /// The URL, for the one place that connects.
    pub fn expose(&self) -> &str {
        self.0.as_str()
    }

    /// Where it points, for logs and `doctor`: host, port and database, never the
    /// user's password or the query.
    pub fn location(&self) -> String {
        let port = self.0.port().map(|p| format!(":{p}")).unwrap_or_default();
        format!(
            "postgres://{}{port}{}",
            self.0.host_str().unwrap_or_default(),
            self.0.path()
        )
    }
}

impl DatabaseUrl {
    /// `text` (a driver's error) with the URL and its password cut out, should the
    /// driver have repeated them.
    pub fn scrub(&self, text: &str) -> String {
        let mut text = text.replace(self.0.as_str(), &self.location());
        if let Some(password) = self.0.password().filter(|p| !p.is_empty()) {
            text = text.replace(password, "[REDACTED]");
            // The url crate keeps userinfo percent-encoded; a driver shows it decoded.
            if let Ok(decoded) = percent_encoding::percent_decode_str(password).decode_utf8() {
                text = text.replace(decoded.as_ref(), "[REDACTED]");
            }
        }
        text
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DatabaseUrl({})", self.location())
    }
}

/// The store's owner role (`[store] owner_url`, `AIRLOCK_DATABASE_OWNER_URL`), when
/// one is given: only beside a Postgres `store`.
pub(crate) fn owner(
    env: &dyn crate::env::EnvSource,
    written: Option<String>,
    store: &StoreLocation,
) -> crate::Result<Option<DatabaseUrl>> {
    let invalid = |message: String| crate::Error::Invalid {
        key: "store.owner_url".to_owned(),
        message,
    };
    match env
        .get(crate::env::vars::DATABASE_OWNER_URL)
        .or(written)
        .filter(|u| !u.is_empty())
    {
        None => Ok(None),
        Some(_) if *store == StoreLocation::Sqlite => Err(invalid(
            "is for a Postgres store: set store.url too".to_owned(),
        )),
        Some(text) => DatabaseUrl::parse(&text).map(Some).map_err(invalid),
    }
}
