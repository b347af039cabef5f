//! Values for inputs that take no typing (walker.js `VALUE_TYPES`): `date`, `time`, `datetime-local`, `month`,
//! `week`, `color` and `range`. Chromium's pickers ignore `Input.insertText` (a
//! typed `12/22/2019` leaves a date input empty), so the value is written in the
//! form the input's `value` takes (`2019-12-22`) and read back. An agent writes
//! dates as people do — ISO, `12/22/2019`, `22.12.2019`, `December 22, 2019`, `11:45
//! AM` — and `lang` (the page's `navigator.language`) settles which of day and month
//! comes first in `01/02/2019` (month first in the US and a few others).

use chrono::{Datelike as _, NaiveDate, NaiveTime};

/// `text` as the `value` of an input of type `kind`, or why it cannot be one (in
/// words naming the forms that work).
pub(crate) fn value_for(kind: &str, text: &str, lang: &str) -> Result<String, String> {
    let text = text.trim();
    let month_first = month_first(lang);
    let out = match kind {
        "date" => date(text, month_first).map(|d| d.format("%Y-%m-%d").to_string()),
        "time" => time(text).map(|t| time_value(&t)),
        "datetime-local" => datetime(text, month_first),
        "month" => month(text, month_first),
        "week" => week(text, month_first),
        "color" => color(text),
        "range" => text
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(|_| text.to_owned()),
        _ => Some(text.to_owned()),
    };
    out.ok_or_else(|| {
        let forms = match kind {
            "date" => "a date such as 2019-12-22, 12/22/2019 or December 22, 2019",
            "time" => "a time such as 11:45, 11:45 AM or 23:05:30",
            "datetime-local" => "a date and time such as 2019-12-22T11:45 or 12/22/2019 11:45 AM",
            "month" => "a month such as 2019-12, 12/2019 or December 2019",
            "week" => "a week such as 2019-W51, or a date in it",
            "color" => "a colour such as #1e90ff, #19f or rgb(30, 144, 255)",
            "range" => "a number",
            _ => "text",
        };
        format!("give {forms}")
    })
}

// Languages that write the month before the day in numeric dates.
fn month_first(lang: &str) -> bool {
    let lang = lang.to_ascii_lowercase();
    lang.is_empty()
        || [
            "en-us", "en-ph", "en-ca", "en-as", "en-gu", "en-um", "en-vi", "en-pr", "fil",
        ]
        .iter()
        .any(|l| lang == *l || lang.starts_with(&format!("{l}-")))
        || lang == "en"
}

fn date(text: &str, month_first: bool) -> Option<NaiveDate> {
    // Unambiguous forms first.
    for format in [
        "%Y-%m-%d",
        "%Y/%m/%d",
        "%Y.%m.%d",
        "%B %d, %Y",
        "%B %d %Y",
        "%b %d, %Y",
        "%b %d %Y",
        "%d %B %Y",
        "%d %b %Y",
        "%d %B, %Y",
        "%A, %B %d, %Y",
        "%a, %b %d, %Y",
    ] {
        if let Ok(d) = NaiveDate::parse_from_str(text, format) {
            return Some(d);
        }
    }
    // Numeric day and month: a part over 12 is the day; else the page's language says.
    let parts: Vec<&str> = text.split(['/', '.', '-']).collect();
    let [a, b, y] = parts.as_slice() else {
        return None;
    };
    let (a, b, y): (u32, u32, i32) = (a.parse().ok()?, b.parse().ok()?, y.parse().ok()?);
    let y = if y < 100 { 2000 + y } else { y };
    // A part over 12 is the day; dots are written day first (22.12.2019); else the
    // page's language says.
    let (m, d) = if a > 12 || (b <= 12 && (text.contains('.') || !month_first)) {
        (b, a)
    } else {
        (a, b)
    };
    NaiveDate::from_ymd_opt(y, m, d)
}

fn time(text: &str) -> Option<NaiveTime> {
    let mut upper = text.to_ascii_uppercase().replace('.', "");
    // "7 PM": an hour alone is on the hour.
    if let Some(at) = upper.find(['A', 'P'])
        && !upper[..at].contains(':')
    {
        upper = format!("{}:00 {}", upper[..at].trim(), &upper[at..]);
    }
    for format in ["%H:%M:%S", "%H:%M", "%I:%M:%S %p", "%I:%M %p", "%I:%M%p"] {
        if let Ok(t) = NaiveTime::parse_from_str(&upper, format) {
            return Some(t);
        }
    }
    None
}

fn time_value(t: &NaiveTime) -> String {
    use chrono::Timelike as _;
    if t.second() == 0 {
        t.format("%H:%M").to_string()
    } else {
        t.format("%H:%M:%S").to_string()
    }
}

fn datetime(text: &str, month_first: bool) -> Option<String> {
    if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M") {
        return Some(dt.format("%Y-%m-%dT%H:%M").to_string());
    }
    // A date, then a time: at a `T`, or between two words.
    if let Some((d, t)) = text.split_once('T')
        && let (Some(d), Some(t)) = (date(d.trim(), month_first), time(t.trim()))
    {
        return Some(format!("{}T{}", d.format("%Y-%m-%d"), time_value(&t)));
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    (1..words.len()).find_map(|i| {
        let d = date(&words[..i].join(" "), month_first)?;
        let t = time(&words[i..].join(" "))?;
        Some(format!("{}T{}", d.format("%Y-%m-%d"), time_value(&t)))
    })
}

fn month(text: &str, month_first: bool) -> Option<String> {
    let parsed = |s: &str, f: &str| NaiveDate::parse_from_str(s, f).ok();
    let first = |f: &str| parsed(&format!("{text} 1"), f);
    let found = parsed(&format!("{text}-01"), "%Y-%m-%d")
        .or_else(|| first("%B %Y %d"))
        .or_else(|| first("%b %Y %d"))
        .or_else(|| parsed(&format!("01/{text}"), "%d/%m/%Y"))
        .or_else(|| date(text, month_first));
    found.map(|d| d.format("%Y-%m").to_string())
}

fn week(text: &str, month_first: bool) -> Option<String> {
    let upper = text.to_ascii_uppercase();
    if let Some((y, w)) = upper.split_once("-W") {
        let (y, w): (i32, u32) = (y.parse().ok()?, w.parse().ok()?);
        NaiveDate::from_isoywd_opt(y, w, chrono::Weekday::Mon)?;
        return Some(format!("{y:04}-W{w:02}"));
    }
    let d = date(text, month_first)?;
    let iso = d.iso_week();
    Some(format!("{:04}-W{:02}", iso.year(), iso.week()))
}

fn color(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix('#')
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return match hex.len() {
            6 => Some(format!("#{hex}")),
            3 => Some(format!(
                "#{}",
                hex.chars().flat_map(|c| [c, c]).collect::<String>()
            )),
            _ => None,
        };
    }
    if let Some(inner) = lower.strip_prefix("rgb(").and_then(|s| s.strip_suffix(')')) {
        let parts: Vec<u8> = inner
            .split(',')
            .map(|p| p.trim().parse().ok())
            .collect::<Option<_>>()?;
        if let [r, g, b] = parts.as_slice() {
            return Some(format!("#{r:02x}{g:02x}{b:02x}"));
        }
    }
    let named = [
        ("black", "#000000"),
        ("white", "#ffffff"),
        ("red", "#ff0000"),
        ("green", "#008000"),
        ("blue", "#0000ff"),
        ("yellow", "#ffff00"),
        ("orange", "#ffa500"),
        ("purple", "#800080"),
        ("gray", "#808080"),
        ("grey", "#808080"),
    ];
    named
        .iter()
        .find(|(n, _)| *n == lower)
        .map(|(_, hex)| (*hex).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_times_and_the_rest_as_people_write_them() {
        let us = |kind, text| value_for(kind, text, "en-US");
        let de = |kind, text| value_for(kind, text, "de-DE");
        assert_eq!(us("date", "12/22/2019").unwrap(), "2019-12-22");
        assert_eq!(us("date", "2019-12-22").unwrap(), "2019-12-22");
        assert_eq!(us("date", "December 22, 2019").unwrap(), "2019-12-22");
        assert_eq!(us("date", "22 Dec 2019").unwrap(), "2019-12-22");
        assert_eq!(us("date", "01/02/2019").unwrap(), "2019-01-02");
        assert_eq!(de("date", "01/02/2019").unwrap(), "2019-02-01");
        assert_eq!(de("date", "22.12.2019").unwrap(), "2019-12-22");
        assert_eq!(
            de("date", "12/22/2019").unwrap(),
            "2019-12-22",
            "a part over 12 is the day"
        );
        assert!(us("date", "13/13/2019").is_err());
        assert!(us("date", "soon").unwrap_err().contains("2019-12-22"));
        assert_eq!(us("time", "11:45 AM").unwrap(), "11:45");
        assert_eq!(us("time", "11:45 pm").unwrap(), "23:45");
        assert_eq!(us("time", "7 PM").unwrap(), "19:00");
        assert_eq!(us("time", "23:05:30").unwrap(), "23:05:30");
        assert_eq!(us("time", "11:45").unwrap(), "11:45");
        assert!(us("time", "25:00").is_err());
        assert_eq!(
            us("datetime-local", "12/22/2019 11:45 AM").unwrap(),
            "2019-12-22T11:45"
        );
        assert_eq!(
            us("datetime-local", "2019-12-22T11:45").unwrap(),
            "2019-12-22T11:45"
        );
        assert_eq!(us("month", "December 2019").unwrap(), "2019-12");
        assert_eq!(us("month", "2019-12").unwrap(), "2019-12");
        assert_eq!(us("month", "12/2019").unwrap(), "2019-12");
        assert_eq!(us("week", "2019-W51").unwrap(), "2019-W51");
        assert_eq!(us("week", "12/22/2019").unwrap(), "2019-W51");
        assert_eq!(us("color", "#19F").unwrap(), "#1199ff");
        assert_eq!(us("color", "rgb(30, 144, 255)").unwrap(), "#1e90ff");
        assert_eq!(us("color", "red").unwrap(), "#ff0000");
        assert!(us("color", "reddish").is_err());
        assert_eq!(us("range", "42").unwrap(), "42");
        assert!(us("range", "lots").is_err());
    }
}
