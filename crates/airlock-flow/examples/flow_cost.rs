//! What the data-flow check costs per call with a full history: 1 MiB of page text
//! read on 20 origins (lines of words, prices, dates, order numbers and account
//! numbers, as shop, bank and mail pages show them), then `find` on the strings a
//! call sends: a typed sentence, a search term, a URL with a query, a 2 KB form
//! value, and one that carries an account number read elsewhere. Also what keeping a
//! 16 KB snapshot costs, and the false-positive run: ordinary multi-site flows (a
//! term or product name seen on one site searched on another) that must not count.
//! Prints a table, then one JSON line. Run by `make bench` (release build).

#![allow(clippy::print_stdout, clippy::unwrap_used)]
// A pure CPU measurement with no runtime: the wall clock is what is measured.
#![allow(clippy::disallowed_types)]

use std::time::Instant;

use airlock_flow::{History, Settings};

const WORDS: &[&str] = &[
    "account",
    "balance",
    "order",
    "shipping",
    "the",
    "and",
    "your",
    "with",
    "for",
    "new",
    "sale",
    "price",
    "cart",
    "checkout",
    "review",
    "stars",
    "customer",
    "help",
    "delivery",
    "returns",
    "free",
    "today",
    "message",
    "inbox",
    "from",
    "subject",
    "meeting",
    "invoice",
    "payment",
    "transfer",
    "statement",
    "savings",
    "checking",
    "widget",
    "deluxe",
    "blue",
    "large",
    "cotton",
    "shirt",
    "coffee",
    "grinder",
];

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() as usize) % items.len()]
    }
}

fn line(rng: &mut Lcg) -> String {
    let mut words: Vec<String> = (0..(6 + rng.next() % 10))
        .map(|_| rng.pick(WORDS).to_owned())
        .collect();
    match rng.next() % 4 {
        0 => words.push(format!("${}.{:02}", rng.next() % 500, rng.next() % 100)),
        1 => words.push(format!("order #{:09}", rng.next() % 1_000_000_000)),
        2 => words.push(format!(
            "2026-{:02}-{:02}",
            1 + rng.next() % 12,
            1 + rng.next() % 28
        )),
        _ => words.push(format!(
            "ACCT-{:04}-{:04}-{:04}",
            rng.next() % 10_000,
            rng.next() % 10_000,
            rng.next() % 10_000
        )),
    }
    format!("- text \"{}\"", words.join(" "))
}

fn micros(runs: &mut [f64], q: f64) -> f64 {
    runs.sort_by(f64::total_cmp);
    runs[((runs.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let mut rng = Lcg(7);
    let mut history = History::new(Settings::default());
    let mut marked = String::new();
    let mut i = 0;
    while history.size().bytes < (1 << 20) - 4096 {
        let origin = format!("https://site{}.example", i % 20);
        let text: Vec<String> = (0..40).map(|_| line(&mut rng)).collect();
        if i == 3 {
            marked = text[5].clone();
        }
        history.read(&origin, &text.join("\n"));
        i += 1;
    }
    let account = marked
        .split(' ')
        .find(|w| w.starts_with("ACCT-") || w.starts_with('#') || w.starts_with('$'))
        .unwrap_or("ACCT-0000-0000-0000")
        .trim_end_matches('"')
        .to_owned();
    let size = history.size();
    let long_value: String = (0..250).map(|i| format!("w{i} ")).collect();
    let cases: Vec<(&str, String, bool)> = vec![
        (
            "typed sentence",
            "Please send me the blue cotton shirt in large, thanks!".to_owned(),
            false,
        ),
        ("search term", "coffee grinder deluxe".to_owned(), false),
        (
            "URL with a query",
            "https://shop.example/search?q=blue+shirt&page=2&sort=price".to_owned(),
            false,
        ),
        ("2 KB form value", long_value, false),
        (
            "carries a read value",
            format!("https://evil.example/c?d={account}"),
            true,
        ),
    ];
    println!(
        "history: {} bytes, {} lines, {} grams kept, {} origins",
        size.bytes, size.lines, size.prints, 20
    );
    println!("| outbound | bytes | p50 µs | p99 µs | flow found |");
    println!("|---|---:|---:|---:|---|");
    let mut json = Vec::new();
    for (name, text, expect) in &cases {
        let is_url = text.starts_with("https://");
        let check = || match is_url {
            true => history.find_in_url(text, |o| o == "https://evil.example"),
            false => history.find(text, |o| o == "https://evil.example"),
        };
        let found = check().is_some();
        assert_eq!(found, *expect, "{name}");
        let mut runs: Vec<f64> = (0..5_000)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(check());
                started.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        let (p50, p99) = (micros(&mut runs, 0.5), micros(&mut runs, 0.99));
        println!(
            "| {name} | {} | {p50:.1} | {p99:.1} | {found} |",
            text.len()
        );
        json.push(format!(
            "\"{name}\": {{\"p50_us\": {p50:.1}, \"p99_us\": {p99:.1}}}"
        ));
    }
    // A value split over two calls: the second half judged with the first.
    let (first, second) = account.split_at(account.len() / 2);
    let own = airlock_flow::Own::default();
    let evil = |o: &str| o == "https://evil.example";
    let split_check = airlock_flow::Check {
        free: &evil,
        to: Some("https://evil.example"),
        own: &own,
    };
    assert!(
        history
            .check_split(&[first], second, &split_check)
            .is_some()
    );
    let mut runs: Vec<f64> = (0..5_000)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(history.check_split(&[first], second, &split_check));
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    let (p50, p99) = (micros(&mut runs, 0.5), micros(&mut runs, 0.99));
    println!(
        "| split over two calls | {} | {p50:.1} | {p99:.1} | true |",
        account.len()
    );
    json.push(format!(
        "\"split over two calls\": {{\"p50_us\": {p50:.1}, \"p99_us\": {p99:.1}}}"
    ));
    // Keeping each new page's 16 KB snapshot, one after another, into the full
    // history (it drops its older half once in a while: the p99 and max show it).
    let mut runs: Vec<f64> = (0..200)
        .map(|n| {
            let snapshot: String = (0..200).map(|_| line(&mut rng) + "\n").collect();
            let started = Instant::now();
            history.read(&format!("https://new{n}.example"), &snapshot);
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    let read_p50 = micros(&mut runs, 0.5);
    let read_p99 = micros(&mut runs, 0.99);
    let read_max = micros(&mut runs, 1.0);
    println!(
        "keeping a 16 KB snapshot: p50 {read_p50:.0} µs, p99 {read_p99:.0} µs, max {read_max:.0} µs"
    );
    println!(
        "{{\"history_bytes\": {}, {}, \"read_16k_p50_us\": {read_p50:.0}, \"read_16k_max_us\": {read_max:.0}}}",
        size.bytes,
        json.join(", ")
    );
}
