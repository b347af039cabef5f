//! UI-TARS' action grammar: the prompt that names it, and its answers (`Thought:`
//! then `Action: click(start_box='(x,y)')` …) parsed into the shared actions.

use airlock_config::ModelStyle;

use super::{Act, SYSTEM, Screen, play};
use crate::chat::Move;

// UI-TARS' grammar, as the model was trained to answer in it.
pub(super) fn prompt(style: ModelStyle) -> String {
    let points = match style {
        ModelStyle::UiTars => "Points are (x,y) on a 0-1000 grid over the screenshot.",
        _ => "Points are (x,y) in pixels of the screenshot.",
    };
    format!(
        "{SYSTEM}\n\nAnswer in this form:\nThought: what you see and plan\nAction: one action\n\n\
Actions:\n\
click(start_box='(x,y)')\n\
left_double(start_box='(x,y)')\n\
right_single(start_box='(x,y)')\n\
drag(start_box='(x1,y1)', end_box='(x2,y2)')\n\
hotkey(key='ctrl c')\n\
type(content='text') (end the text with \\n to submit it)\n\
scroll(start_box='(x,y)', direction='down or up or right or left')\n\
wait()\n\
finished(content='the answer')\n\
call_user() (when only a person can go on)\n\n{points}"
    )
}

// UI-TARS: `Thought: …` then `Action: name(key='value', …)`, several actions
// separated by blank lines.
pub(super) fn moves(style: ModelStyle, text: &str, screen: &Screen) -> Result<Vec<Move>, String> {
    let actions = match text.rfind("Action:") {
        Some(i) => &text[i + "Action:".len()..],
        None => return Err("no `Action:` in the answer".to_owned()),
    };
    let mut moves = Vec::new();
    for one in actions
        .split("\n\n")
        .map(str::trim)
        .filter(|a| !a.is_empty())
    {
        let (name, args) = match parse_call(one) {
            Ok(parsed) => parsed,
            Err(why) => {
                moves.push(Move::Refused {
                    name: "action".to_owned(),
                    why,
                });
                continue;
            }
        };
        let get = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| args.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
        };
        let point = |keys: &[&str]| get(keys).and_then(|v| centre(&v));
        let start = point(&["start_box", "point", "start_point"]);
        let moved = match name.as_str() {
            "finished" => Ok(Move::Finish {
                answer: get(&["content"]).unwrap_or_default(),
            }),
            "call_user" => Ok(Move::AskUser {
                question: get(&["content"])
                    .unwrap_or_else(|| "the model calls for a person".to_owned()),
            }),
            "click" | "left_single" | "left_double" | "right_single" => match start {
                Some((x, y)) => Ok(play(
                    style,
                    Act::Click {
                        x,
                        y,
                        button: if name == "right_single" {
                            "right"
                        } else {
                            "left"
                        },
                        double: name == "left_double",
                    },
                    screen,
                    None,
                )),
                None => Err(format!("`{name}` needs a point (start_box='(x,y)')")),
            },
            "drag" | "select" => match (start, point(&["end_box", "end_point"])) {
                (Some(from), Some(to)) => Ok(play(style, Act::Drag(from, to), screen, None)),
                _ => Err("`drag` needs start_box and end_box".to_owned()),
            },
            "hotkey" | "press" | "keydown" => match get(&["key", "hotkey"]) {
                Some(keys) => Ok(play(
                    style,
                    Act::Key(keys.split_whitespace().map(str::to_owned).collect()),
                    screen,
                    None,
                )),
                None => Err("`hotkey` needs key='…'".to_owned()),
            },
            "type" => Ok(play(
                style,
                Act::Type(get(&["content"]).unwrap_or_default()),
                screen,
                None,
            )),
            "scroll" => {
                let px = f64::from(screen.pixels.1) * 0.6;
                let (dx, dy) = match get(&["direction"]).as_deref().map(str::trim) {
                    Some("up") => (0.0, -px),
                    Some("left") => (-px, 0.0),
                    Some("right") => (px, 0.0),
                    _ => (0.0, px),
                };
                Ok(play(style, Act::Scroll(dx, dy), screen, None))
            }
            "wait" => Ok(play(style, Act::Wait(5_000), screen, None)),
            other => Err(format!(
                "the action `{}` has no form here",
                airlock_core::text::prefix(other, 30)
            )),
        };
        moves.push(moved.unwrap_or_else(|why| Move::Refused { name, why }));
    }
    if moves.is_empty() {
        return Err("an `Action:` with no action".to_owned());
    }
    Ok(moves)
}

// `name(key='value', key2="value")`: the name and the arguments, unescaped.
fn parse_call(text: &str) -> Result<(String, Vec<(String, String)>), String> {
    let open = text.find('(').ok_or("an action is name(arguments)")?;
    let name = text[..open].trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err("an action's name is a word".to_owned());
    }
    let mut args = Vec::new();
    let mut rest = text[open + 1..].chars().peekable();
    loop {
        while rest.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            rest.next();
        }
        match rest.peek() {
            Some(')') | None => break,
            _ => {}
        }
        let key: String = std::iter::from_fn(|| rest.next_if(|c| *c != '=' && *c != ')')).collect();
        if rest.next() != Some('=') {
            return Err("arguments are key='value'".to_owned());
        }
        while rest.peek().is_some_and(|c| c.is_whitespace()) {
            rest.next();
        }
        let Some(quote @ ('\'' | '"')) = rest.next() else {
            return Err("a value is quoted".to_owned());
        };
        let mut value = String::new();
        loop {
            match rest.next() {
                None => return Err("a quoted value is not closed".to_owned()),
                Some('\\') => match rest.next() {
                    Some('n') => value.push('\n'),
                    Some('t') => value.push('\t'),
                    Some(c) => value.push(c),
                    None => return Err("a quoted value is not closed".to_owned()),
                },
                Some(c) if c == quote => break,
                Some(c) => value.push(c),
            }
        }
        args.push((key.trim().to_owned(), value));
    }
    Ok((name.to_owned(), args))
}

// The point a box names: `(x,y)`, `(x1,y1,x2,y2)` (its centre), `<point>x y</point>`,
// `[x1, y1, x2, y2]`, with or without UI-TARS' box tokens.
fn centre(text: &str) -> Option<(f64, f64)> {
    let cleaned = text
        .replace("<|box_start|>", " ")
        .replace("<|box_end|>", " ");
    let numbers: Vec<f64> = cleaned
        .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse::<f64>().ok())
        .filter(|n| n.is_finite())
        .collect();
    match numbers.as_slice() {
        [x, y] => Some((*x, *y)),
        [x1, y1, x2, y2] => Some(((x1 + x2) / 2.0, (y1 + y2) / 2.0)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ui_tars_actions_parse_with_boxes_quotes_and_escapes() {
        let s = Screen::sized((1000, 1000), (1000, 1000));
        let moves = moves(
            ModelStyle::UiTars,
            "Thought: the field.\nAction: click(start_box='<|box_start|>(100,200)<|box_end|>')\n\ntype(content='it\\'s me\\n')\n\nhotkey(key='ctrl a')\n\nfinished(content=\"done\")",
            &s,
        )
        .unwrap();
        assert!(
            matches!(&moves[0], Move::Call { name, arguments, .. } if name == "browser_click" && arguments["x"] == 100.0 && arguments["y"] == 200.0)
        );
        assert!(
            matches!(&moves[1], Move::Call { name, arguments, .. } if name == "browser_type" && arguments["text"] == "it's me" && arguments["submit"] == true && arguments["selector"] == ":focus")
        );
        assert!(
            matches!(&moves[2], Move::Call { name, arguments, .. } if name == "browser_press_key" && arguments["key"] == "Control+a")
        );
        assert_eq!(
            moves[3],
            Move::Finish {
                answer: "done".into()
            }
        );
        assert_eq!(centre("(10,20,30,40)"), Some((20.0, 30.0)));
        assert_eq!(centre("<point>5 6</point>"), Some((5.0, 6.0)));
        assert!(super::moves(ModelStyle::UiTars, "no action", &s).is_err());
        let odd = super::moves(
            ModelStyle::UiTars,
            "Action: teleport(to='(1,2)')\n\nclick(start_box='(1)')",
            &s,
        )
        .unwrap();
        assert!(
            odd.iter().all(|m| matches!(m, Move::Refused { .. })),
            "{odd:?}"
        );
    }
}
