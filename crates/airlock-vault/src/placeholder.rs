//! `{{secret:NAME.field}}` placeholders in typed text.

use crate::VaultError;

const OPEN: &str = "{{secret:";
const CLOSE: &str = "}}";
/// Fields a placeholder may name.
pub const FIELDS: [&str; 3] = ["username", "password", "totp"];

/// A piece of typed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Literal text, typed as is.
    Text(String),
    /// A secret's field, resolved when typed.
    Secret {
        /// Secret name.
        name: String,
        /// `username`, `password` or `totp`.
        field: String,
    },
}

/// Whether `text` mentions a placeholder at all (for refusing one where it does not
/// belong: URLs, selectors, key names).
pub fn mentions(text: &str) -> bool {
    text.contains(OPEN)
}

/// Splits typed text into literal pieces and placeholders. A malformed placeholder is
/// an error, never typed literally (that would put the secret's *name* into a page
/// while the agent believes the value went in).
pub fn parse(text: &str) -> Result<Vec<Segment>, VaultError> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        if start > 0 {
            out.push(Segment::Text(rest[..start].to_owned()));
        }
        let after = &rest[start + OPEN.len()..];
        let end = after.find(CLOSE).ok_or_else(|| {
            VaultError::Invalid("a `{{secret:` placeholder is not closed with `}}`".to_owned())
        })?;
        let body = &after[..end];
        let (name, field) = body.split_once('.').ok_or_else(|| {
            VaultError::Invalid(format!(
                "`{{{{secret:{body}}}}}` names no field; write {{{{secret:NAME.password}}}}"
            ))
        })?;
        crate::check_name(name)?;
        if !FIELDS.contains(&field) {
            return Err(VaultError::Invalid(format!(
                "`{field}` is not a field a placeholder can type (username, password, totp)"
            )));
        }
        out.push(Segment::Secret {
            name: name.to_owned(),
            field: field.to_owned(),
        });
        rest = &after[end + CLOSE.len()..];
    }
    if !rest.is_empty() {
        out.push(Segment::Text(rest.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn text_and_placeholders_split() {
        assert_eq!(
            parse("user {{secret:app.username}} pw {{secret:app-2.password}}!").unwrap(),
            vec![
                Segment::Text("user ".into()),
                Segment::Secret {
                    name: "app".into(),
                    field: "username".into()
                },
                Segment::Text(" pw ".into()),
                Segment::Secret {
                    name: "app-2".into(),
                    field: "password".into()
                },
                Segment::Text("!".into()),
            ]
        );
        assert_eq!(parse("plain").unwrap(), vec![Segment::Text("plain".into())]);
        assert_eq!(parse("").unwrap(), vec![]);
        assert!(mentions("x {{secret:a.password}}"));
        assert!(!mentions("{{other}}"));
    }

    #[test]
    fn malformed_placeholders_are_errors() {
        for bad in [
            "{{secret:app.password",
            "{{secret:app}}",
            "{{secret:app.cookies}}",
            "{{secret:bad name.password}}",
            "{{secret:.password}}",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
