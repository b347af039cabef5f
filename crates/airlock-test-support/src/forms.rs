//! Every form a page or protocol may show a secret value in, for tests that check
//! nothing of it left: raw, quoted as a snapshot line quotes it, each 8-character
//! piece (what a cut or reformatting could leave), URL-encoded both ways, HTML- and
//! JSON-escaped, and base64 of `user:VALUE` as a Basic header carries it (the middle,
//! which only the value's bytes determine).

use base64::Engine as _;

/// The forms of `value`.
pub fn secret_forms(value: &str) -> Vec<String> {
    let mut forms = vec![
        value.to_owned(),
        value.replace('\\', "\\\\").replace('"', "\\\""),
    ];
    let chars: Vec<char> = value.chars().collect();
    forms.extend(chars.windows(8).map(|w| w.iter().collect::<String>()));
    forms.push(url::form_urlencoded::byte_serialize(value.as_bytes()).collect());
    let component: String = value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    forms.push(component);
    forms.push(
        value
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;"),
    );
    if let Ok(json) = serde_json::to_string(value) {
        forms.push(json[1..json.len() - 1].to_owned());
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("user:{value}"));
    forms.push(b64[8..b64.len() - 4].to_owned());
    forms
}
