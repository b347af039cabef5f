//! Table tests of the risk rules: the defaults, the operator's rules, bad rules.

use airlock_policy::{Policy, PolicyConfig};

use super::*;

fn policy(trusted: &[&str]) -> Policy {
    Policy::from_config(&PolicyConfig {
        trusted_domains: trusted.iter().map(|d| (*d).to_owned()).collect(),
        ..PolicyConfig::default()
    })
    .unwrap()
}

fn rules(toml_text: &str) -> Result<Rules, RuleError> {
    #[derive(Deserialize)]
    struct File {
        approvals: ApprovalsConfig,
    }
    let file: File = toml::from_str(toml_text).unwrap();
    Rules::from_config(&file.approvals)
}

fn click(name: &str) -> Facts<'_> {
    Facts {
        tool: "browser_click",
        role: Some("button"),
        name: Some(name),
        page_url: Some("https://app.example.com/settings"),
        ..Facts::default()
    }
}

// The rule, risk and action a call gets, or None.
type Expected = Option<(String, Risk, Action)>;

// What a call gets from the defaults.
fn default_verdict(facts: &Facts<'_>, trusted: &[&str]) -> Expected {
    Rules::from_config(&ApprovalsConfig::default())
        .unwrap()
        .classify(facts, &policy(trusted))
        .map(|v| (v.rule, v.risk, v.action))
}

#[test]
fn the_defaults_hold_destruction_and_payment_and_refuse_literal_passwords() {
    let approve = |rule: &str, risk| Some((rule.to_owned(), risk, Action::Approve));
    let table: &[(&str, Expected)] = &[
        ("Delete account", approve("destructive", Risk::High)),
        ("delete", approve("destructive", Risk::High)),
        ("Remove member", approve("destructive", Risk::High)),
        ("Revoke token", approve("destructive", Risk::High)),
        ("DESTROY", approve("destructive", Risk::High)),
        ("Pay now", approve("payment", Risk::Critical)),
        ("Purchase", approve("payment", Risk::Critical)),
        ("Transfer funds", approve("payment", Risk::Critical)),
        ("Buy", approve("payment", Risk::Critical)),
        ("Checkout", approve("payment", Risk::Critical)),
        ("Check out", approve("payment", Risk::Critical)),
        ("Send money", approve("payment", Risk::Critical)),
        // Payment outranks destruction: first match wins and payment comes first.
        ("Delete and pay", approve("payment", Risk::Critical)),
        // Words, not letters inside words.
        ("Deleted items", None),
        ("Removal policy", None),
        ("Payload viewer", None),
        ("Buyer guide", None),
        ("Save", None),
        ("Cancel", None),
        ("", None),
    ];
    for (name, expected) in table {
        assert_eq!(&default_verdict(&click(name), &[]), expected, "{name:?}");
    }
    // Other tools on the same element do not fire the click rules.
    let hover = Facts {
        tool: "browser_hover",
        ..click("Delete account")
    };
    assert_eq!(default_verdict(&hover, &[]), None);

    let typing = |text, secret, password| Facts {
        tool: "browser_type",
        role: Some("textbox"),
        name: Some("Password"),
        password,
        text: Some(text),
        secret,
        ..Facts::default()
    };
    let deny = Some(("literal-password".to_owned(), Risk::Critical, Action::Deny));
    assert_eq!(default_verdict(&typing("hunter22", false, true), &[]), deny);
    assert_eq!(
        default_verdict(&typing("{{secret:gh.password}}", true, true), &[]),
        None
    );
    assert_eq!(default_verdict(&typing("alice", false, false), &[]), None);
    assert_eq!(default_verdict(&typing("", false, true), &[]), None);
    let message = Rules::from_config(&ApprovalsConfig::default())
        .unwrap()
        .classify(&typing("hunter22", false, true), &policy(&[]))
        .unwrap()
        .message
        .unwrap();
    assert!(message.contains("{{secret:NAME.password}}"), "{message}");
}

#[test]
fn leaving_the_trusted_domains_waits_only_when_some_are_trusted() {
    let go = |tool, to| Facts {
        tool,
        destination: Some(to),
        page_url: Some("https://app.corp.example/"),
        ..Facts::default()
    };
    let medium = Some((
        "leaves-trusted-domains".to_owned(),
        Risk::Medium,
        Action::Approve,
    ));
    let trusted = &["corp.example"];
    let table: &[(Facts<'_>, &[&str], Expected)] = &[
        (
            go("browser_navigate", "https://evil.test/"),
            trusted,
            medium.clone(),
        ),
        (
            go("browser_tabs", "https://evil.test/x"),
            trusted,
            medium.clone(),
        ),
        (
            go("browser_navigate", "https://app.corp.example/x"),
            trusted,
            None,
        ),
        (
            go("browser_navigate", "https://CORP.example./"),
            trusted,
            None,
        ),
        // A look-alike that only ends with the trusted name's letters is outside.
        (
            go("browser_navigate", "https://evilcorp.example/"),
            trusted,
            medium.clone(),
        ),
        (
            go("browser_navigate", "https://corp.example.evil.test/"),
            trusted,
            medium.clone(),
        ),
        // No trusted domains set: leaving them is no risk.
        (go("browser_navigate", "https://evil.test/"), &[], None),
        // A click on a link off-site.
        (
            Facts {
                role: Some("link"),
                name: Some("Docs"),
                ..go("browser_click", "https://docs.evil.test/")
            },
            trusted,
            medium.clone(),
        ),
        // A click that goes nowhere.
        (
            Facts {
                tool: "browser_click",
                role: Some("button"),
                name: Some("Save"),
                page_url: Some("https://app.corp.example/"),
                ..Facts::default()
            },
            trusted,
            None,
        ),
    ];
    for (facts, trusted, expected) in table {
        assert_eq!(&default_verdict(facts, trusted), expected, "{facts:?}");
    }
}

#[test]
fn operator_rules_come_first_and_the_defaults_can_be_switched_off() {
    let rules = rules(
        r#"
        [approvals]
        [[approvals.rules]]
        name = "admin console"
        origin = "https://admin.example.com"
        risk = "high"
        action = "deny"
        message = "the agent never touches the admin console"

        [[approvals.rules]]
        name = "safe delete"
        tools = ["browser_click"]
        name_matches = "(?i)^delete draft$"
        risk = "low"
        action = "allow"

        [[approvals.rules]]
        tools = ["browser_type"]
        text = "(?i)drop table"
        risk = "critical"
        action = "deny"
        "#,
    )
    .unwrap();
    let p = policy(&[]);
    let admin = Facts {
        page_url: Some("https://ADMIN.example.com/users"),
        ..click("Save")
    };
    let v = rules.classify(&admin, &p).unwrap();
    assert_eq!(
        (v.rule.as_str(), v.action, v.builtin),
        ("admin console", Action::Deny, false)
    );
    assert_eq!(v.why, "page origin https://admin.example.com");

    let v = rules.classify(&click("Delete draft"), &p).unwrap();
    assert_eq!((v.rule.as_str(), v.action), ("safe delete", Action::Allow));
    // The defaults still follow.
    let v = rules.classify(&click("Delete account"), &p).unwrap();
    assert_eq!((v.rule.as_str(), v.builtin), ("destructive", true));
    assert!(
        v.why.contains("name \"Delete account\" matches"),
        "{}",
        v.why
    );

    let typing = Facts {
        tool: "browser_type",
        text: Some("x'; DROP TABLE users; --"),
        ..Facts::default()
    };
    let v = rules.classify(&typing, &p).unwrap();
    assert_eq!((v.rule.as_str(), v.risk), ("rule[2]", Risk::Critical));

    let off = rules_off();
    assert_eq!(off.classify(&click("Delete account"), &p), None);
    assert!(off.is_empty());
}

fn rules_off() -> Rules {
    rules("[approvals]\ndefaults = false").unwrap()
}

#[test]
fn a_bad_rule_names_its_key() {
    let table = [
        (
            "[[approvals.rules]]\nname_matches = \"(\"\nrisk = \"high\"\naction = \"approve\"",
            "approvals.rules[0].name_matches",
        ),
        (
            "[[approvals.rules]]\nrisk = \"low\"\naction = \"allow\"\n[[approvals.rules]]\nurl = \"[z-a]\"\nrisk = \"high\"\naction = \"deny\"",
            "approvals.rules[1].url",
        ),
        (
            "[[approvals.rules]]\nrisk = \"low\"\naction = \"allow\"\nmessage = \"hi\"",
            "approvals.rules[0].message",
        ),
    ];
    for (text, key) in table {
        let err = rules(&format!("[approvals]\n{text}")).unwrap_err();
        assert_eq!(err.key, key, "{err}");
    }
    // Unknown keys and values are serde's to refuse, also named.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct File {
        approvals: ApprovalsConfig,
    }
    for text in [
        "[approvals]\n[[approvals.rules]]\nrisk = \"huge\"\naction = \"deny\"",
        "[approvals]\n[[approvals.rules]]\nrisk = \"low\"\naction = \"maybe\"",
        "[approvals]\n[[approvals.rules]]\nnmae = \"x\"\nrisk = \"low\"\naction = \"allow\"",
    ] {
        assert!(toml::from_str::<File>(text).is_err(), "{text}");
    }
    // A pattern that would compile into something huge is refused, not slow.
    let huge = format!(
        "[approvals]\n[[approvals.rules]]\nname_matches = \"{}\"\nrisk = \"low\"\naction = \"allow\"",
        "\\\\w{1000}".repeat(3)
    );
    assert!(rules(&huge).is_err());
}
