//! Widgets nobody on the team wrote: MiniWoB++'s tasks (PyPI `miniwob`, pinned),
//! each scoring its own episode (`core.endEpisode`: the page's "Last reward", above
//! zero only when the task was done as asked). Every widget kind agents meet is acted
//! on through the ordinary pipeline: inline links made of `span`s, jQuery UI tabs,
//! accordions, sortable lists and autocompletes, spinners, native date and time
//! inputs; by ref, by role and name, and by text.

use std::sync::Arc;

use airlock_browser::{SnapshotOptions, Target};
use airlock_core::{ErrorCode, NodeRef};
use airlock_gateway::{AgentSession, Gateway, GatewayConfig, Interaction, Reading, ToolCall};
use airlock_policy::{Policy, PolicyConfig};
use airlock_test_support::{Harness, MiniWob, with_browser};

use crate::navigate;

struct Task {
    wob: MiniWob,
    agent: AgentSession,
    _gateway: Arc<Gateway>,
}

impl Task {
    async fn new(h: &Harness) -> Task {
        let wob = MiniWob::start().await;
        let policy = Policy::from_config(&PolicyConfig {
            allow_private: vec![format!("127.0.0.1:{}", wob.port())],
            ..PolicyConfig::default()
        })
        .unwrap();
        let gateway = Gateway::new(h.host().await, GatewayConfig::with_policy(policy));
        let agent = gateway.agent_session();
        Task {
            wob,
            agent,
            _gateway: gateway,
        }
    }

    async fn call(&self, call: ToolCall) -> String {
        let label = format!("{call:?}");
        let out = self.agent.call(call).await;
        assert_eq!(out.error, None, "{label}:\n{}", out.text);
        out.text
    }

    async fn snapshot(&self) -> String {
        self.call(ToolCall::Read(
            Reading::Snapshot(SnapshotOptions::default()),
        ))
        .await
    }

    /// Opens task `name` and starts an episode; returns the page then.
    async fn open(&self, name: &str) -> String {
        self.call(navigate(self.wob.task(name))).await;
        self.start().await
    }

    /// Starts the next episode (the page's START cover, a `div` with a handler);
    /// returns the page then.
    async fn start(&self) -> String {
        self.call(click(text("START"))).await;
        self.snapshot().await
    }

    /// The reward the page gave the last episode.
    async fn reward(&self) -> f64 {
        let page = self.snapshot().await;
        let mut lines = page.lines().skip_while(|l| !l.contains("Last reward:"));
        lines.next();
        lines
            .next()
            .and_then(|l| l.trim().trim_start_matches("- text: ").parse().ok())
            .unwrap_or_else(|| panic!("no reward on the page:\n{page}"))
    }
}

fn click(target: Target) -> ToolCall {
    ToolCall::Interact(Interaction::Click {
        target,
        options: Default::default(),
    })
}

fn text(words: &str) -> Target {
    Target::Text {
        text: words.into(),
        index: None,
    }
}

fn role(role: &str, name: &str) -> Target {
    Target::Role {
        role: role.into(),
        name: Some(name.into()),
        index: None,
    }
}

fn typing(target: Target, words: &str) -> ToolCall {
    ToolCall::Interact(Interaction::Type {
        target,
        text: words.into(),
        clear_first: true,
        submit: false,
    })
}

/// The ref on the first line of `page` that `matches`.
fn ref_where(page: &str, matches: impl Fn(&str) -> bool) -> Target {
    let line = page
        .lines()
        .find(|l| matches(l))
        .unwrap_or_else(|| panic!("no such line in:\n{page}"));
    let word = line
        .trim()
        .trim_start_matches("- ")
        .split_whitespace()
        .next()
        .unwrap();
    Target::Ref(
        word.parse::<NodeRef>()
            .unwrap_or_else(|_| panic!("no ref on {line}")),
    )
}

/// The text between the first pair of double quotes in `line`.
fn quoted(line: &str) -> String {
    line.split('"').nth(1).unwrap_or_default().to_owned()
}

fn query<'a>(page: &'a str, starts: &str) -> &'a str {
    page.lines()
        .find(|l| l.contains(starts))
        .unwrap_or_else(|| panic!("no task {starts:?} in:\n{page}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_word_in_a_paragraph_that_acts_as_a_link_is_clicked_by_ref_and_by_text() {
    with_browser(|h| async move {
        let t = Task::new(&h).await;
        // By ref: a `span` with a handler and a pointer has one.
        let page = t.open("click-link").await;
        let word = quoted(query(&page, "Click on the link"));
        let target = ref_where(&page, |l| {
            l.contains("generic [cursor=pointer]") && l.ends_with(&format!(": {word}"))
        });
        t.call(click(target)).await;
        assert!(t.reward().await > 0.0);
        // By text: the innermost element showing exactly the word, not the paragraph.
        let page = t.start().await;
        let word = quoted(query(&page, "Click on the link"));
        let out = t.agent.call(click(text(&word))).await;
        if out.error == Some(ErrorCode::InvalidArgument) {
            // The page repeated the word in two links (both score).
            assert!(out.text.contains("pass `index`"), "{}", out.text);
            t.call(click(Target::Text {
                text: word,
                index: Some(0),
            }))
            .await;
        } else {
            assert_eq!(out.error, None, "{}", out.text);
        }
        assert!(t.reward().await > 0.0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tabs_and_an_accordion_are_acted_on_by_role_and_by_text() {
    with_browser(|h| async move {
        let t = Task::new(&h).await;
        let page = t.open("click-tab").await;
        let line = query(&page, "Click on Tab #");
        let tab = line[line.find("Tab #").unwrap()..].trim_end_matches('.');
        t.call(click(role("tab", tab))).await;
        assert!(t.reward().await > 0.0);

        // jQuery UI's accordion: open the section by the words of its header.
        let page = t.open("click-collapsible").await;
        let header = quoted(
            page.lines()
                .find(|l| l.contains(" tab \"Section"))
                .unwrap_or_else(|| panic!("{page}")),
        );
        t.call(click(text(&header))).await;
        t.call(click(role("button", "Submit"))).await;
        assert!(t.reward().await > 0.0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn date_and_time_inputs_take_what_an_agent_writes_and_say_what_they_hold() {
    with_browser(|h| async move {
        let t = Task::new(&h).await;
        // "Enter 08/24/2019 as the date": the date input takes 2019-08-24.
        let page = t.open("enter-date").await;
        let at = page.find("- text: Enter").unwrap();
        let date = page[at..]
            .lines()
            .nth(1)
            .unwrap()
            .trim()
            .trim_start_matches("- text: ")
            .to_owned();
        let (m, rest) = date.split_once('/').unwrap();
        let (d, y) = rest.split_once('/').unwrap();
        let field = ref_where(&page, |l| l.ends_with(" Date"));
        let out = t.call(typing(field, &date)).await;
        assert!(out.contains(&format!("(now {y}-{m}-{d})")), "{out}");
        t.call(click(role("button", "Submit"))).await;
        assert!(t.reward().await > 0.0);

        // "Enter 3:16 PM as the time": the time input takes 15:16.
        let page = t.open("enter-time").await;
        let line = query(&page, "as the time");
        let time = line
            .split("Enter ")
            .nth(1)
            .unwrap()
            .split(" as the time")
            .next()
            .unwrap()
            .to_owned();
        let field = ref_where(&page, |l| l.ends_with(" InputTime"));
        let out = t.call(typing(field.clone(), &time)).await;
        assert!(out.contains("(now "), "{out}");
        t.call(click(role("button", "Submit"))).await;
        assert!(t.reward().await > 0.0);

        // What is no time is refused with the forms that work; nothing is set.
        t.start().await;
        let out = t.agent.call(typing(field, "teatime")).await;
        assert_eq!(out.error, Some(ErrorCode::InvalidArgument), "{}", out.text);
        assert!(out.text.contains("11:45 AM"), "{}", out.text);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sortable_list_of_plain_items_is_reordered_by_drag() {
    with_browser(|h| async move {
        let t = Task::new(&h).await;
        let mut scored = 0;
        for _ in 0..6 {
            let page = t.open("drag-items").await;
            let task = query(&page, "Drag ");
            let items: Vec<(&str, String)> = page
                .lines()
                .filter(|l| l.contains(" listitem [draggable]: "))
                .map(|l| {
                    let l = l.trim().trim_start_matches("- ");
                    (
                        l.split_whitespace().next().unwrap(),
                        l.split(": ").nth(1).unwrap().to_owned(),
                    )
                })
                .collect();
            // The item's name may be several words: the task starts with it.
            let rest = task.trim().trim_start_matches("- text: Drag ");
            let from = items
                .iter()
                .enumerate()
                .filter(|(_, (_, n))| rest.starts_with(&format!("{n} ")))
                .max_by_key(|(_, (_, n))| n.len())
                .map(|(i, _)| i)
                .unwrap_or_else(|| panic!("no item named in {task:?}: {items:?}"));
            let to = if task.contains("down by one") {
                from + 1
            } else if task.contains("up by one") {
                from.saturating_sub(1)
            } else if task.contains("to the top") {
                0
            } else if task.contains("to the bottom") {
                items.len() - 1
            } else {
                let n: usize = task
                    .split("position")
                    .next()
                    .and_then(|s| s.split_whitespace().last())
                    .and_then(|s| {
                        s.trim_end_matches(|c: char| !c.is_ascii_digit())
                            .parse()
                            .ok()
                    })
                    .unwrap_or_else(|| panic!("an unknown drag task: {task}"));
                n - 1
            };
            let r = |i: usize| Target::Ref(items[i].0.parse::<NodeRef>().unwrap());
            t.call(ToolCall::Interact(Interaction::Drag {
                from: r(from),
                to: r(to),
            }))
            .await;
            if t.reward().await > 0.0 {
                scored += 1;
            }
        }
        assert_eq!(scored, 6);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autocomplete_a_spinner_and_a_date_picker_are_used_as_people_use_them() {
    with_browser(|h| async move {
        let t = Task::new(&h).await;
        // jQuery UI autocomplete: type the start, pick the suggestion by its words.
        let page = t.open("use-autocomplete").await;
        // "Enter an item that starts with "Li" [and ends with "ya"]."
        let prompt: String = page
            .lines()
            .skip_while(|l| !l.contains("starts with"))
            .map(|l| l.trim().trim_start_matches("- text: "))
            .take_while(|l| !l.starts_with("- "))
            .collect();
        let quoted: Vec<&str> = prompt.split('"').skip(1).step_by(2).collect();
        let (start, end) = (quoted[0], quoted.get(1).copied().unwrap_or(""));
        t.call(typing(role("textbox", "Tags:"), start)).await;
        // The suggestions come after the widget's own delay; its live region says so.
        t.call(ToolCall::Read(Reading::WaitFor {
            condition: airlock_browser::WaitCondition::Text("available".into()),
            timeout: None,
        }))
        .await;
        let page = t.snapshot().await;
        let suggestions: Vec<&str> = page
            .lines()
            .filter(|l| l.contains(" listitem "))
            .filter_map(|l| l.split(": ").nth(1))
            .collect();
        let at = suggestions
            .iter()
            .position(|w| w.starts_with(start) && w.ends_with(end))
            .unwrap_or_else(|| panic!("no suggestion for {start}…{end}:\n{page}"));
        // Picked from the keyboard: down to it, then Enter. (A click on a suggestion
        // below the first selects the first about one time in five: the pointer
        // rests where the menu opens, jQuery UI ignores the first mouse focus of a
        // new menu and re-sends it at the next mousemove, which is the very move
        // that carries the click onto its item, so the first item wins. Open.)
        for _ in 0..=at {
            t.call(ToolCall::Interact(Interaction::PressKey {
                key: "ArrowDown".into(),
            }))
            .await;
        }
        t.call(ToolCall::Interact(Interaction::PressKey {
            key: "Enter".into(),
        }))
        .await;
        let page = t.snapshot().await;
        assert!(
            page.contains(&format!("value=\"{}\"", suggestions[at])),
            "{page}"
        );
        t.call(click(role("button", "Submit"))).await;
        assert!(t.reward().await > 0.0);

        // jQuery UI spinner: its field takes the number.
        let page = t.open("use-spinner").await;
        let line = query(&page, "with the spinner");
        let value = line
            .split("Select ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        t.call(typing(role("spinbutton", "Select a value:"), value))
            .await;
        t.call(click(role("button", "Submit"))).await;
        assert!(t.reward().await > 0.0);

        // jQuery UI datepicker on a text field: the date is typed as asked.
        let page = t.open("choose-date").await;
        let line = query(&page, "as the date");
        let date = line
            .split("Select ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        // Its field is read-only: the calendar is the way. Its "Prev" and "Next" are
        // `a`s without href, found by their words.
        let (m, rest) = date.split_once('/').unwrap();
        let (d, y) = rest.split_once('/').unwrap();
        let (m, d, y): (i32, u32, i32) =
            (m.parse().unwrap(), d.parse().unwrap(), y.parse().unwrap());
        let field = ref_where(&page, |l| l.trim_end().ends_with(" textbox"));
        let shown = t.call(click(field)).await;
        const MONTHS: [&str; 12] = [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ];
        let month = MONTHS
            .iter()
            .position(|name| shown.contains(&format!("text: {name}")))
            .unwrap_or_else(|| panic!("no calendar:\n{shown}")) as i32
            + 1;
        let year: i32 = shown
            .lines()
            .filter_map(|l| {
                l.trim()
                    .trim_start_matches("+ ")
                    .trim_start_matches("- text: ")
                    .parse()
                    .ok()
            })
            .find(|y: &i32| (1900..2100).contains(y))
            .unwrap();
        let steps = (y * 12 + m) - (year * 12 + month);
        let way = if steps < 0 { "Prev" } else { "Next" };
        for _ in 0..steps.abs() {
            t.call(click(text(way))).await;
        }
        t.call(click(role("link", &d.to_string()))).await;
        t.call(click(role("button", "Submit"))).await;
        assert!(t.reward().await > 0.0);
    })
    .await;
}
