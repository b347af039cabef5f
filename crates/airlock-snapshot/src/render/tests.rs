//! Folding and rendering against small trees, and the redactor's place in it.

use super::*;

fn tree(json: &str) -> Node {
    serde_json::from_str(json).unwrap()
}

fn render(json: &str) -> String {
    let all = lines(&tree(json), &RenderOptions::default());
    window(&all, 0, usize::MAX, usize::MAX).text
}

#[test]
fn a_depth_limit_counts_what_it_leaves_out_on_the_last_line_shown() {
    let all = lines(
        &tree(
            r#"{"r":"RootWebArea","k":[
              {"r":"navigation","k":[
                {"r":"form","i":1,"k":[{"r":"textbox","n":"A","i":2},{"r":"button","n":"B","i":3}]},
                {"r":"button","n":"C","i":4}]},
              {"r":"button","n":"D","i":5}]}"#,
        ),
        &RenderOptions::default(),
    );
    let text = |lines: &[Line]| window(lines, 0, usize::MAX, usize::MAX).text;
    assert_eq!(
        text(&max_depth(&all, 1)),
        "- navigation [+4]\n- e5 button \"D\"\n"
    );
    assert_eq!(
        text(&max_depth(&all, 2)),
        "- navigation\n  - e1 form [+2]\n  - e4 button \"C\"\n- e5 button \"D\"\n"
    );
    assert_eq!(text(&max_depth(&all, 9)), text(&all));
}

#[test]
fn folds_wrappers_and_redundant_text() {
    let out = render(
        r#"{"r":"RootWebArea","k":[
          {"r":"heading","n":"Users","l":1,"k":[{"r":"text","t":"Users"}]},
          {"r":"LabelText","k":[{"r":"text","t":"Password "},
             {"r":"textbox","n":"Password","i":12,"p":true,"v":"••••"}]},
          {"r":"paragraph","k":[{"r":"text","t":"Para with "},{"r":"emphasis","k":[{"r":"text","t":"stress"}]},{"r":"text","t":" here."}]}
        ]}"#,
    );
    assert_eq!(
        out,
        "- heading \"Users\" [level=1]\n\
         - e12 textbox \"Password\" [password=••••]\n\
         - paragraph: Para with stress here.\n"
    );
}

#[test]
fn an_unnamed_main_and_empty_regions_cost_no_line() {
    let out = render(
        r#"{"r":"RootWebArea","k":[
          {"r":"navigation","k":[{"r":"link","n":"Home","i":1}]},
          {"r":"main","k":[
            {"r":"heading","n":"Sign in","l":1},
            {"r":"form","i":2,"k":[{"r":"textbox","n":"User","i":3}]},
            {"r":"status"},
            {"r":"list","k":[{"r":"listitem"}]}]},
          {"r":"main","n":"Named","k":[{"r":"button","n":"Go","i":4}]},
          {"r":"button","i":5}]}"#,
    );
    assert_eq!(
        out,
        "- navigation\n  \
           - e1 link \"Home\"\n\
         - heading \"Sign in\" [level=1]\n\
         - e2 form\n  \
           - e3 textbox \"User\"\n\
         - main \"Named\"\n  \
           - e4 button \"Go\"\n\
         - e5 button\n"
    );
}

#[test]
fn labels_captions_and_rowgroups_do_not_repeat_names() {
    let out = render(
        r#"{"r":"RootWebArea","k":[
          {"r":"LabelText","lc":1,"k":[{"r":"text","t":"Username"}]},
          {"r":"textbox","n":"Username","i":2},
          {"r":"LabelText","k":[{"r":"text","t":"Loose label"}]},
          {"r":"table","n":"Accounts","i":4,"k":[
            {"r":"caption","k":[{"r":"text","t":"Accounts"}]},
            {"r":"rowgroup","k":[{"r":"row","i":5,"k":[{"r":"columnheader","n":"Name"}]}]}
          ]}]}"#,
    );
    assert_eq!(
        out,
        "- e2 textbox \"Username\"\n\
         - text: Loose label\n\
         - e4 table \"Accounts\"\n  \
           - e5 row: Name\n"
    );
}

#[test]
fn rows_read_as_cells_then_actions() {
    let out = render(
        r#"{"r":"RootWebArea","k":[{"r":"table","n":"Accounts","i":4,"k":[
          {"r":"row","i":5,"k":[
            {"r":"cell","n":"alice","k":[{"r":"text","t":"alice"}]},
            {"r":"cell","n":"admin","k":[{"r":"text","t":"admin"}]},
            {"r":"cell","n":"Edit Delete","k":[{"r":"button","n":"Edit","i":8},{"r":"text","t":" "},{"r":"button","n":"Delete","i":9}]}
          ]}]}]}"#,
    );
    assert_eq!(
        out,
        "- e4 table \"Accounts\"\n  \
           - e5 row: alice | admin\n    \
             - e8 button \"Edit\"\n    \
             - e9 button \"Delete\"\n"
    );
}

#[test]
fn window_pages_with_a_truncation_line() {
    let json = format!(
        r#"{{"r":"RootWebArea","k":[{}]}}"#,
        (0..10)
            .map(|i| format!(r#"{{"r":"button","n":"B{i}","i":{i}}}"#))
            .collect::<Vec<_>>()
            .join(",")
    );
    let all = lines(&tree(&json), &RenderOptions::default());
    let first = window(&all, 0, 4, usize::MAX);
    assert_eq!((first.start, first.end, first.total), (0, 4, 10));
    assert!(first.text.ends_with(
        "offset=4 for the next page, or narrow it with find, scope_ref or interactive_only]\n"
    ));
    let last = window(&all, 8, 4, usize::MAX);
    assert!(last.text.starts_with("- e8 button \"B8\""), "{}", last.text);
    assert!(last.text.contains("[end of snapshot: lines 9-10 of 10]"));
    let small = window(&all, 0, usize::MAX, 60);
    assert!(small.end < 10 && small.end >= 1);
}

#[test]
fn interactive_only_keeps_actions_rows_and_the_headings_that_tell_them_apart() {
    let json = r#"{"r":"RootWebArea","k":[
        {"r":"heading","n":"Users","l":1},
        {"r":"paragraph","k":[{"r":"text","t":"intro"}]},
        {"r":"table","i":2,"k":[{"r":"row","k":[{"r":"cell","n":"a"},{"r":"cell","k":[{"r":"button","n":"Go","i":4}]}]}]}
    ]}"#;
    let all = lines(&tree(json), &RenderOptions::default());
    let kept = interactive_only(&all);
    let text = window(&kept, 0, usize::MAX, usize::MAX).text;
    // The one heading over every action locates nothing.
    assert_eq!(text, "- e2 table\n  - row: a\n    - e4 button \"Go\"\n");
    // Two sections with actions keep their headings; one over text alone goes,
    // and a subsection's action counts for the heading above it too.
    let json = r#"{"r":"RootWebArea","k":[
        {"r":"heading","n":"Billing","l":2},
        {"r":"button","n":"Pay","i":1},
        {"r":"heading","n":"History","l":2},
        {"r":"paragraph","k":[{"r":"text","t":"nothing yet"}]},
        {"r":"heading","n":"Account","l":2},
        {"r":"heading","n":"Danger","l":3},
        {"r":"button","n":"Delete","i":2}
    ]}"#;
    let all = lines(&tree(json), &RenderOptions::default());
    let text = window(&interactive_only(&all), 0, usize::MAX, usize::MAX).text;
    assert_eq!(
        text,
        "- heading \"Billing\" [level=2]\n- e1 button \"Pay\"\n\
         - heading \"Account\" [level=2]\n- heading \"Danger\" [level=3]\n\
         - e2 button \"Delete\"\n"
    );
}

#[test]
fn find_returns_matches_with_context() {
    let json = r#"{"r":"RootWebArea","k":[
        {"r":"heading","n":"Settings","l":2},
        {"r":"form","i":1,"k":[{"r":"button","n":"Cancel","i":2},{"r":"button","n":"Save","i":3}]},
        {"r":"heading","n":"Other","l":2}
    ]}"#;
    let all = lines(&tree(json), &RenderOptions::default());
    let text = window(&find(&all, "save"), 0, usize::MAX, usize::MAX).text;
    assert_eq!(
        text,
        "- heading \"Settings\" [level=2]\n- e1 form\n  - e3 button \"Save\"\n"
    );
    assert!(find(&all, "nothing like this").is_empty());
    // A match brings its subtree: the buttons of a row found by its text.
    let json = r#"{"r":"RootWebArea","k":[
        {"r":"table","i":1,"k":[
            {"r":"row","k":[{"r":"cell","n":"alice"},{"r":"cell","k":[{"r":"button","n":"Edit","i":2}]}]},
            {"r":"row","k":[{"r":"cell","n":"bob"},{"r":"cell","k":[{"r":"button","n":"Edit","i":3}]}]}
        ]}
    ]}"#;
    let all = lines(&tree(json), &RenderOptions::default());
    let text = window(&find(&all, "bob"), 0, usize::MAX, usize::MAX).text;
    assert_eq!(text, "- e1 table\n  - row: bob\n    - e3 button \"Edit\"\n");
}

#[test]
fn long_text_is_cut_and_links_are_relative() {
    let long = "x".repeat(250);
    let json = format!(
        r#"{{"r":"RootWebArea","k":[{{"r":"paragraph","k":[{{"r":"text","t":"{long}"}}]}},
           {{"r":"link","n":"Docs","i":1,"u":"http://127.0.0.1:9/docs?a=1"}},
           {{"r":"link","n":"Ext","i":2,"u":"https://example.com/"}}]}}"#
    );
    let all = lines(
        &tree(&json),
        &RenderOptions {
            page_url: Some("http://127.0.0.1:9/index.html".to_owned()),
            ..RenderOptions::default()
        },
    );
    assert!(all[0].text.ends_with("… [+50 chars]"), "{}", all[0].text);
    assert_eq!(all[1].text, "e1 link \"Docs\" [url=/docs?a=1]");
    assert_eq!(all[2].text, "e2 link \"Ext\" [url=https://example.com/]");
}

// Stands in for the vault's redactor: hides one literal.
struct HideWord(&'static str);

impl Redact for HideWord {
    fn redact<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        if text.contains(self.0) {
            text.replace(self.0, "[REDACTED:w]").into()
        } else {
            text.into()
        }
    }
    // As the vault's redactor reads a text: whitespace skipped.
    fn hidden(&self, text: &str) -> Option<Vec<std::ops::Range<usize>>> {
        let kept: Vec<(usize, char)> = text
            .char_indices()
            .filter(|(_, c)| !c.is_whitespace())
            .collect();
        let read: String = kept.iter().map(|(_, c)| c).collect();
        let at: Vec<usize> = read.char_indices().map(|(i, _)| i).collect();
        Some(
            read.match_indices(self.0)
                .map(|(i, m)| {
                    let first = at.iter().position(|&b| b == i).unwrap_or(0);
                    let last = first + m.chars().count() - 1;
                    kept[first].0..kept[last].0 + kept[last].1.len_utf8()
                })
                .collect(),
        )
    }
    fn reach(&self) -> usize {
        self.0.len()
    }
    fn is_active(&self) -> bool {
        true
    }
}

#[test]
fn text_is_redacted_after_folding_and_before_it_is_cut() {
    let secret = "s3cr3t-v4lue";
    // The secret straddles the 200-character cut, split over two inline runs.
    let before = "x".repeat(195);
    let json = format!(
        r#"{{"r":"RootWebArea","k":[{{"r":"paragraph","k":[{{"r":"text","t":"{before}s3cr3t"}},{{"r":"strong","k":[{{"r":"text","t":"-v4lue"}}]}},{{"r":"text","t":" tail"}}]}},
           {{"r":"button","n":"{secret}","i":1}},
           {{"r":"textbox","n":"Note","i":2,"v":"{secret}"}},
           {{"r":"link","n":"Go","i":3,"u":"http://127.0.0.1:9/?k={secret}"}}]}}"#
    );
    let all = lines(
        &tree(&json),
        &RenderOptions {
            page_url: Some("http://127.0.0.1:9/".to_owned()),
            redactor: Some(Arc::new(HideWord(secret))),
            tab: 0,
        },
    );
    let text: Vec<&str> = all.iter().map(|l| l.text.as_str()).collect();
    for line in &text {
        assert!(!line.contains("s3cr"), "{line}");
    }
    // The cut falls inside the marker, never inside the value.
    assert!(text[0].contains("xxx[REDA…"), "{}", text[0]);
    assert_eq!(text[1], "e1 button \"[REDACTED:w]\"");
    assert_eq!(text[2], "e2 textbox \"Note\" value=\"[REDACTED:w]\"");
    assert_eq!(text[3], "e3 link \"Go\" [url=/?k=[REDACTED:w]]");
}

// A secret a page spreads over several elements (a character per list item, half in
// one paragraph and half in the next) reads whole across the lines: each piece of it
// is masked, and the words around it stay.
#[test]
fn a_secret_spread_over_several_elements_is_masked_in_each() {
    let secret = "s3cr3t-v4lue";
    let items: Vec<String> = secret
        .chars()
        .map(|c| format!(r#"{{"r":"listitem","k":[{{"r":"text","t":"{c}"}}]}}"#))
        .collect();
    let json = format!(
        r#"{{"r":"RootWebArea","k":[
            {{"r":"list","k":[{}]}},
            {{"r":"paragraph","k":[{{"r":"text","t":"first half: s3cr3t"}}]}},
            {{"r":"paragraph","k":[{{"r":"text","t":"-v4lue and the rest"}}]}},
            {{"r":"paragraph","k":[{{"r":"text","t":"nothing here"}}]}}
        ]}}"#,
        items.join(",")
    );
    let out = lines(
        &tree(&json),
        &RenderOptions {
            redactor: Some(Arc::new(HideWord(secret))),
            ..RenderOptions::default()
        },
    );
    let text: String = out.iter().map(|l| format!("{}\n", l.text)).collect();
    let read: String = text
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-')
        .collect();
    assert!(
        !read.contains("s3cr3tv4lue") && !read.contains("s3cr3t-v4lue"),
        "{text}"
    );
    for c in ["s", "3", "c", "r"] {
        assert!(!text.contains(&format!("listitem: {c}\n")), "{text}");
    }
    assert!(text.contains("paragraph: first half: [REDACTED]"), "{text}");
    assert!(
        text.contains("paragraph: [REDACTED] and the rest"),
        "{text}"
    );
    assert!(text.contains("paragraph: nothing here"), "{text}");
}

// A page's text read a line at a time: a secret a character per list item or per
// line reads whole without the markers, and is masked line by line; lines around it
// and a secret held whole by one line (the redactor's own) are left as they are.
#[test]
fn a_page_text_that_spreads_a_secret_over_lines_is_masked_on_each() {
    let secret = "s3cr3t-v4lue";
    let per_item: String = secret.chars().map(|c| format!("  - {c}\n")).collect();
    let numbered: String = secret
        .chars()
        .enumerate()
        .map(|(i, c)| format!("{}. {c}\n", i + 1))
        .collect();
    let redactor = HideWord(secret);
    for spread in [per_item, numbered, "# s3cr\n> 3t-v4\nlue\n".to_owned()] {
        let text = format!("Before\n{spread}After {secret} and more\n");
        let out = mask_spread_lines(&text, &redactor);
        let spread_part = out.split("After").next().unwrap_or_default();
        let read: String = spread_part
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect();
        assert!(!read.contains("s3cr3tv4lue"), "{out}");
        assert!(
            out.starts_with("Before\n") && out.contains("After s3cr3t-v4lue and more"),
            "{out}"
        );
    }
    let plain = "nothing\n- to\n- hide\n";
    assert_eq!(mask_spread_lines(plain, &redactor), plain);
}
