//! Caller roles, ordered: each includes what the ones before it may do.

/// What a caller (API key, stdio user) may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Role {
    /// Read pages and snapshots.
    Observe,
    /// Drive the browser (the default).
    #[default]
    Act,
    /// Use stored credentials without a grant token.
    Operate,
    /// Manage the tenant.
    Admin,
}

impl Role {
    /// Parses `observe`, `act`, `operate`, `admin`.
    pub fn parse(text: &str) -> Option<Role> {
        match text.trim().to_ascii_lowercase().as_str() {
            "observe" => Some(Role::Observe),
            "act" => Some(Role::Act),
            "operate" => Some(Role::Operate),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }

    /// The name as configured.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Observe => "observe",
            Role::Act => "act",
            Role::Operate => "operate",
            Role::Admin => "admin",
        }
    }
}

/// Whether `name` may name a tenant: 1–64 of `a-z 0-9 - _ .`, starting with a letter
/// or digit. Tenant names end up in labels, paths and log lines, so nothing else.
pub fn valid_tenant_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_and_parse() {
        assert!(
            Role::Observe < Role::Act && Role::Act < Role::Operate && Role::Operate < Role::Admin
        );
        for role in [Role::Observe, Role::Act, Role::Operate, Role::Admin] {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("root"), None);
    }
}
