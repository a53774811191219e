//! Text a plugin wrote, made safe to show on a terminal.
//!
//! A terminal obeys what it is sent: `ESC ] 52 ; c ; … BEL` writes the
//! user's clipboard, `ESC [ 2 J` clears the screen, a lone `\r` lets a line
//! overwrite what came before it, the C1 control U+009B is a CSI on
//! terminals that honour C1 in UTF-8, and bidirectional overrides reorder
//! what the eye reads. A plugin's result, progress messages, stderr,
//! manifest (description, tool descriptions, names) and everything an error
//! quotes of them are the plugin's words: they reach the terminal through
//! this module and nowhere else, and arrive as text, never as commands.
//!
//! Every control character (C0 but `\n` and `\t` in multi-line text, DEL,
//! C1) and every bidirectional control is shown visibly as its Rust escape,
//! `\u{1b}`, `\u{9b}`, `\u{202e}`, the way the approval prompt shows them:
//! escaping the introducer disarms the whole sequence (ESC, CSI, OSC, DCS
//! and the rest begin with ESC or a C1 character, and end with BEL, ST or a
//! printable byte), and what follows it stays readable, so an author can see
//! what their plugin sent. A `\r` just before `\n` (Windows line ends) is
//! dropped; a lone one is escaped.
//!
//! plughost's own words go through the same path: [`say!`] and [`esay!`]
//! escape the whole line they print, so no argument is forgotten. The one
//! sequence plughost writes on purpose (clearing the progress line) is
//! written around them.
//!
//! JSON output ([`json`]) stays JSON: `serde_json` already escapes C0; the
//! rest (DEL, C1, bidirectional controls) is written `\u007f`, `\u009b`,
//! `\u202e`, the same data in a form no terminal acts on.
//!
//! A call's result on stdout is data: written as it is when stdout is a
//! pipe or a file, escaped when it is a terminal ([`data`]). MCP clients get
//! a plugin's text as it is: there it is data, never a terminal's input.

use std::borrow::Cow;
use std::io::IsTerminal;

/// `text` for a terminal, keeping its lines (`\n`) and tabs.
pub fn text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// `text` for a terminal on one line: line breaks and tabs become blanks,
/// so a plugin cannot start a line that looks like plughost's own.
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// `text` for stdout as data: as it is when stdout is not a terminal (a
/// script reads it), escaped as [`text`] when it is.
pub fn data(text: &str) -> Cow<'_, str> {
    if std::io::stdout().is_terminal() {
        escape(text, true)
    } else {
        Cow::Borrowed(text)
    }
}

/// `value` as pretty JSON that no terminal acts on.
pub fn json(value: &impl serde::Serialize) -> String {
    json_escaped(serde_json::to_string_pretty(value).expect("output serializes"))
}

/// `value` as one line of JSON that no terminal acts on.
pub fn json_line(value: &impl serde::Serialize) -> String {
    json_escaped(serde_json::to_string(value).expect("output serializes"))
}

/// Whether a terminal could act on `c` or show text around it in another
/// order than it was written.
fn is_unsafe(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// Characters that reorder the text around them on a terminal.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn escape(text: &str, multiline: bool) -> Cow<'_, str> {
    let clean = |c: char| !is_unsafe(c) || (multiline && matches!(c, '\n' | '\t'));
    if text.chars().all(clean) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {
                if !multiline {
                    out.push(' ');
                    chars.next();
                }
            }
            '\n' | '\t' | '\r' if !multiline => out.push(' '),
            c if clean(c) => out.push(c),
            c => out.extend(c.escape_unicode()),
        }
    }
    Cow::Owned(out)
}

/// JSON text with DEL, C1 and bidirectional controls written as `\uXXXX`.
/// They can only stand inside JSON strings (outside, JSON is ASCII), where
/// the escape means the same character; C0 there is escaped already, and
/// outside strings it is JSON's own blanks.
fn json_escaped(json: String) -> String {
    let unescaped = |c: char| is_unsafe(c) && !c.is_ascii_control() || c == '\u{7f}';
    if !json.chars().any(unescaped) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if unescaped(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// `println!` for text that may hold a plugin's words: the whole line is
/// escaped for the terminal ([`text`]).
macro_rules! say {
    () => { println!() };
    ($($arg:tt)*) => {
        println!("{}", $crate::terminal::text(&format!($($arg)*)))
    };
}

/// `eprintln!` for text that may hold a plugin's words (see [`say!`]).
macro_rules! esay {
    () => { eprintln!() };
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::terminal::text(&format!($($arg)*)))
    };
}

pub(crate) use {esay, say};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_arrive_as_text() {
        let hostile = "a\x1b]52;c;ZWNobyBoaQ==\x07b\x1b[2J\u{9b}31mc\rd\x1bP1$r\x1b\\\u{202e}e\x7f";
        let shown = text(hostile);
        assert!(!shown.chars().any(is_unsafe), "{shown}");
        assert_eq!(
            shown,
            "a\\u{1b}]52;c;ZWNobyBoaQ==\\u{7}b\\u{1b}[2J\\u{9b}31mc\\u{d}d\\u{1b}P1$r\\u{1b}\\\\u{202e}e\\u{7f}"
        );
    }

    #[test]
    fn lines_and_tabs_stay_in_text_and_go_on_one_line() {
        assert!(matches!(text("a\tb\nc\n"), Cow::Borrowed("a\tb\nc\n")));
        assert_eq!(text("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(line("a\r\nb\tc\nd\re"), "a b c d e");
        assert_eq!(line("x\x1b[Ky"), "x\\u{1b}[Ky");
    }

    #[test]
    fn json_stays_json_and_holds_the_same_text() {
        let value = serde_json::json!({"r": "\x1b]52;c;x\x07 \u{9b}2J \x7f \u{202e} é"});
        for out in [json(&value), json_line(&value)] {
            assert!(
                !out.chars()
                    .any(|c| is_unsafe(c) && !matches!(c, '\n' | ' ')),
                "{out}"
            );
            let back: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(back, value);
        }
    }
}
