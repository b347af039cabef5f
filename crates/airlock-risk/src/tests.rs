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

/// The operator's effect rules of `toml_text` alone (the built-ins off).
fn effects(toml_text: &str) -> Effects {
    let text = toml_text.replacen("[approvals]", "[approvals]\ndefaults = false", 1);
    rules(&text).unwrap().effects().clone()
}

fn post<'a>(url: &'a str, content_type: &'a str, body: &'a str) -> Request<'a> {
    Request {
        method: "POST",
        url,
        content_type: Some(content_type),
        body: Some(body.as_bytes()),
        body_unseen: false,
    }
}

const PAYMENTS: &str = r#"
[approvals]
[[approvals.rules]]
name = "payments"
request_method = ["post", "PUT"]
request_url = '^https://pay\.example/'
request_fields = ["amount", "iban"]
risk = "critical"
action = "approve"
"#;

#[test]
fn an_effect_rule_matches_method_url_and_fields_in_every_body_form() {
    let effects = effects(PAYMENTS);
    let url = "https://pay.example/transfer";
    let held = |r: &Request<'_>| effects.judge(r).map(|v| (v.rule, v.action));
    let expected = Some(("payments".to_owned(), Action::Approve));
    let with_query = format!("{url}?amount=1&iban=2");
    for request in [
        post(
            url,
            "application/x-www-form-urlencoded",
            "amount=5000&iban=DE89370400440532013000",
        ),
        // A fetch with a string body says text/plain; JSON is read whatever it says.
        post(
            url,
            "text/plain;charset=UTF-8",
            r#"{"amount":5000,"payee":{"iban":"DE89"}}"#,
        ),
        post(
            url,
            "multipart/form-data; boundary=XyZ",
            "--XyZ\r\nContent-Disposition: form-data; name=\"amount\"\r\n\r\n5000\r\n--XyZ\r\nContent-Disposition: form-data; name=\"iban\"\r\n\r\nDE89\r\n--XyZ--\r\n",
        ),
        // Fields in the query count too.
        post(&with_query, "text/plain", ""),
    ] {
        assert_eq!(held(&request), expected, "{request:?}");
    }
    // Not a listed method, another host, a missing field: not this rule's.
    let get = Request {
        method: "GET",
        ..post(url, "application/x-www-form-urlencoded", "amount=1&iban=2")
    };
    for request in [
        get,
        post(
            "https://shop.example/transfer",
            "application/x-www-form-urlencoded",
            "amount=1&iban=2",
        ),
        post(url, "application/x-www-form-urlencoded", "amount=1"),
        post(
            url,
            "multipart/form-data; boundary=XyZ",
            "--XyZ\r\nContent-Disposition: form-data; name=\"amount\"; filename=\"iban\"\r\n\r\nx\r\n--XyZ--",
        ),
    ] {
        assert_eq!(held(&request), None, "{request:?}");
    }
}

#[test]
fn an_unreadable_body_is_held_when_method_and_url_match() {
    let effects = effects(PAYMENTS);
    let unseen = Request {
        method: "POST",
        url: "https://pay.example/transfer",
        content_type: None,
        body: None,
        body_unseen: true,
    };
    let verdict = effects.judge(&unseen).unwrap();
    assert_eq!(verdict.action, Action::Approve);
    assert!(verdict.why.contains("cannot be read"), "{}", verdict.why);
}

#[test]
fn a_body_pattern_judges_each_field_and_an_allow_rule_exempts() {
    let effects = effects(
        r#"
[approvals]
[[approvals.rules]]
name = "own account"
request_body = '^to=ACME-'
risk = "low"
action = "allow"
[[approvals.rules]]
name = "big transfers"
request_body = '^amount=\d{4,}$'
risk = "high"
action = "deny"
message = "transfers of 1000 or more are made by people"
"#,
    );
    let form = |body| {
        post(
            "https://bank.example/t",
            "application/x-www-form-urlencoded",
            body,
        )
    };
    let verdict = |body| effects.judge(&form(body)).map(|v| (v.rule, v.action));
    assert_eq!(
        verdict("to=ACME-1&amount=99999"),
        Some(("own account".to_owned(), Action::Allow))
    );
    assert_eq!(
        verdict("to=EVIL&amount=99999"),
        Some(("big transfers".to_owned(), Action::Deny))
    );
    assert_eq!(verdict("to=EVIL&amount=99"), None);
}

#[test]
fn effect_rules_are_kept_apart_from_call_rules_and_travel_as_written() {
    let rules = rules(PAYMENTS).unwrap();
    // The call rules are the defaults alone; the effect rule is not judged on calls.
    assert_eq!(rules.len(), 4);
    let mut names = vec!["payments"];
    names.extend(BUILTIN_EFFECTS.iter().map(|b| b.name));
    assert_eq!(rules.effects().names(), names);
    let text = serde_json::to_string(rules.effects()).unwrap();
    let again: Effects = serde_json::from_str(&text).unwrap();
    let request = post(
        "https://pay.example/x",
        "application/x-www-form-urlencoded",
        "amount=1&iban=2",
    );
    assert_eq!(again.judge(&request), rules.effects().judge(&request));
    assert!(again.judge(&request).is_some());
    assert_eq!(again.names(), rules.effects().names());
    // A built-in travels by name and judges the same there.
    let delete = post("https://a.example/x/delete", "text/plain", "");
    assert_eq!(again.judge(&delete), rules.effects().judge(&delete));
    assert_eq!(again.judge(&delete).unwrap().rule, "delete-path");
}

#[test]
fn a_tenants_effect_rules_judge_before_the_operators_and_travel_with_them() {
    let operator = rules(PAYMENTS).unwrap();
    let tenant: ApprovalsConfig = toml::from_str(
        r#"
[[rules]]
name = "no-exports"
request_method = ["POST"]
request_path = "^/export"
risk = "high"
action = "deny"

[[rules]]
name = "no-sign-in"
tools = ["browser_click"]
name_matches = "^Sign in$"
risk = "high"
action = "deny"
"#,
    )
    .unwrap();
    let both = operator.with_first(&tenant.rules).unwrap();
    let mut names = vec!["no-exports", "payments"];
    names.extend(BUILTIN_EFFECTS.iter().map(|b| b.name));
    assert_eq!(both.effects().names(), names);
    // One call rule more; the effect rule is not judged on calls.
    assert_eq!(both.len(), operator.len() + 1);
    let export = post("https://a.example/export/all", "text/plain", "");
    assert_eq!(operator.effects().judge(&export), None);
    let verdict = both.effects().judge(&export).unwrap();
    assert_eq!(
        (verdict.rule.as_str(), verdict.action),
        ("no-exports", Action::Deny)
    );
    // As the worker gets them: written, then built again, the same.
    let text = serde_json::to_string(both.effects()).unwrap();
    let again: Effects = serde_json::from_str(&text).unwrap();
    assert_eq!(again.names(), both.effects().names());
    assert_eq!(again.judge(&export), both.effects().judge(&export));
    // A tenant's rule may never let a request through that the operator's hold.
    let allow: ApprovalsConfig = toml::from_str(
        "[[rules]]\nrequest_path = \"^/transfer\"\nrisk = \"low\"\naction = \"allow\"\n",
    )
    .unwrap();
    let refused = operator.with_first(&allow.rules).unwrap_err();
    assert_eq!(refused.key, "approvals.rules[0].action");
}

fn request<'a>(method: &'a str, url: &'a str, form: &'a str) -> Request<'a> {
    Request {
        method,
        url,
        content_type: Some("application/x-www-form-urlencoded"),
        body: (!form.is_empty()).then_some(form.as_bytes()),
        body_unseen: false,
    }
}

#[test]
fn the_built_in_effect_rules_hold_what_deletes_or_pays_and_let_the_rest_go() {
    let defaults = Rules::from_config(&ApprovalsConfig::default()).unwrap();
    let effects = defaults.effects();
    let verdict = |method, url: &str, form| {
        effects
            .judge(&request(method, url, form))
            .map(|v| (v.rule, v.risk, v.action))
    };
    let held = |rule: &str, risk| Some((rule.to_owned(), risk, Action::Approve));
    let u = "http://127.0.0.1:8900";
    for (method, url, form, expected) in [
        // Django's admin: the confirmation's POST, its bulk action; Rails' override.
        (
            "POST",
            format!("{u}/admin/auth/user/7/delete/"),
            "csrfmiddlewaretoken=abc&post=yes",
            held("delete-path", Risk::High),
        ),
        (
            "POST",
            format!("{u}/admin/auth/user/"),
            "action=delete_selected&_selected_action=7&post=yes",
            held("delete-field", Risk::High),
        ),
        (
            "POST",
            format!("{u}/posts/7"),
            "_method=delete&authenticity_token=x",
            held("delete-field", Risk::High),
        ),
        (
            "DELETE",
            format!("{u}/api/items/7"),
            "",
            held("delete-request", Risk::High),
        ),
        (
            "PATCH",
            format!("{u}/api/items/7"),
            "op=remove&path=/tags/0",
            held("delete-field", Risk::High),
        ),
        (
            "POST",
            format!("{u}/api/removeItem"),
            "id=7",
            held("delete-path", Risk::High),
        ),
        (
            "POST",
            format!("{u}/graphql"),
            "query=mutation { deleteUser(id: 7) { id } }",
            held("delete-field", Risk::High),
        ),
        // Written to slip past a rule on the path: the server reads /delete.
        (
            "POST",
            format!("{u}/x/%64elete"),
            "",
            held("delete-path", Risk::High),
        ),
        (
            "POST",
            format!("{u}/x//delete"),
            "",
            held("delete-path", Risk::High),
        ),
        // Payments: a path that says so, card or bank details, an action that pays.
        (
            "POST",
            format!("{u}/checkout"),
            "",
            held("payment-path", Risk::Critical),
        ),
        (
            "POST",
            format!("{u}/api/v1/transfers"),
            "",
            held("payment-path", Risk::Critical),
        ),
        (
            "POST",
            format!("{u}/api/v1/x"),
            "amount=5&payee.IBAN=DE89",
            held("payment-field", Risk::Critical),
        ),
        (
            "PUT",
            format!("{u}/wallet"),
            "card-number=4111",
            held("payment-field", Risk::Critical),
        ),
        (
            "POST",
            format!("{u}/cart"),
            "action=purchase",
            held("payment-field", Risk::Critical),
        ),
        // A bank account as a value, whatever the field's name (checksum or not).
        (
            "POST",
            format!("{u}/scheduled/6"),
            "recipient=US133000000121212121212",
            held("payment-field", Risk::Critical),
        ),
        (
            "POST",
            format!("{u}/api/x"),
            "to=DE89 3704 0044 0532 0130 00",
            held("payment-field", Risk::Critical),
        ),
        // Not held: a GET of a delete page (it only asks), a login whose next page is
        // one, a word that only contains a delete word, a search for one.
        ("GET", format!("{u}/admin/auth/user/7/delete/"), "", None),
        (
            "POST",
            format!("{u}/admin/login/?next=/admin/auth/user/7/delete/"),
            "username=a&password=b",
            None,
        ),
        (
            "POST",
            format!("{u}/admin/auth/user/7/change/"),
            "username=carol&first_name=Caroline",
            None,
        ),
        ("POST", format!("{u}/undeleted/items"), "", None),
        ("POST", format!("{u}/search"), "q=delete my account", None),
        (
            "POST",
            format!("{u}/graphql"),
            "query=query { deletedItems { id } }",
            None,
        ),
        ("POST", format!("{u}/paypal-faq/feedback"), "", None),
        // A password changed or reset; signing in is not.
        (
            "POST",
            format!("{u}/password"),
            "password=new_password",
            held("password-path", Risk::High),
        ),
        (
            "POST",
            format!("{u}/admin/password_change/"),
            "old_password=a&new_password1=b",
            held("password-path", Risk::High),
        ),
        (
            "POST",
            format!("{u}/app/login"),
            "username=a&password=b",
            None,
        ),
        // Capitals and digits that are no account: a short code, a product key.
        (
            "POST",
            format!("{u}/support"),
            "order=AB12CD&sku=WH1000XM5BLACK",
            None,
        ),
    ] {
        assert_eq!(
            verdict(method, url.as_str(), form),
            expected,
            "{method} {url} {form}"
        );
    }
    // Each can be switched off by name, and all of them at once.
    let off: ApprovalsConfig =
        toml::from_str("defaults_off = [\"delete-path\", \"destructive\"]").unwrap();
    let off = Rules::from_config(&off).unwrap();
    let confirm = request("POST", "http://a.test/user/7/delete/", "post=yes");
    assert_eq!(off.effects().judge(&confirm), None);
    assert_eq!(off.len(), 3);
    let none: ApprovalsConfig = toml::from_str("defaults = false").unwrap();
    assert!(Rules::from_config(&none).unwrap().effects().is_empty());
    let typo: ApprovalsConfig = toml::from_str("defaults_off = [\"delete-paths\"]").unwrap();
    let error = Rules::from_config(&typo).unwrap_err();
    assert_eq!(error.key, "approvals.defaults_off[0]");
    assert!(error.why.contains("delete-path,"), "{}", error.why);
}

#[test]
fn a_rule_on_a_path_sees_the_path_a_server_reads_and_not_the_query() {
    let effects = effects(
        r#"
[approvals]
[[approvals.rules]]
name = "transfers"
request_path = '^/transfer$'
risk = "critical"
action = "approve"
[[approvals.rules]]
name = "exports"
request_query = '(^|&)format=csv'
risk = "high"
action = "deny"
"#,
    );
    let rule = |url| effects.judge(&request("POST", url, "")).map(|v| v.rule);
    for url in [
        "http://b.test/transfer",
        "http://b.test/%74ransfer",
        "http://b.test//transfer",
        "http://b.test/x/../transfer",
        "http://b.test/x/%2e%2e/transfer",
    ] {
        assert_eq!(rule(url), Some("transfers".to_owned()), "{url}");
    }
    assert_eq!(rule("http://b.test/login?next=/transfer"), None);
    assert_eq!(
        rule("http://b.test/r?%66ormat=csv"),
        Some("exports".to_owned())
    );
    assert_eq!(rule("http://b.test/csv?format=json"), None);
}

#[test]
fn the_destructive_call_rule_holds_a_button_and_spares_a_link_that_only_opens_a_page() {
    let rules = Rules::from_config(&ApprovalsConfig::default()).unwrap();
    let policy = policy(&[]);
    let facts = |role| Facts {
        tool: "browser_click",
        role: Some(role),
        name: Some("Delete"),
        ..Facts::default()
    };
    assert_eq!(
        rules.classify(&facts("button"), &policy).map(|v| v.rule),
        Some("destructive".to_owned())
    );
    assert_eq!(rules.classify(&facts("link"), &policy), None);
}

#[test]
fn an_effect_rule_with_a_call_condition_or_a_bad_method_is_refused_by_key() {
    let error = rules(
        r#"
[approvals]
[[approvals.rules]]
name_matches = "Pay"
request_url = "pay"
risk = "high"
action = "approve"
"#,
    )
    .unwrap_err();
    assert_eq!(error.key, "approvals.rules[0].name_matches");
    let error = rules(
        r#"
[approvals]
[[approvals.rules]]
request_method = ["PO ST"]
risk = "high"
action = "approve"
"#,
    )
    .unwrap_err();
    assert_eq!(error.key, "approvals.rules[0].request_method[0]");
    let error = rules(
        r#"
[approvals]
[[approvals.rules]]
request_url = "("
risk = "high"
action = "approve"
"#,
    )
    .unwrap_err();
    assert_eq!(error.key, "approvals.rules[0].request_url");
}
