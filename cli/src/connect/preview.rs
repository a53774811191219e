//! What a change will do, shown before it is made, and the question.
//!
//! The diff is unified-style with three lines of context. Every edit
//! `connect` makes is one stretch of the file, so the lines before it and
//! after it are found by comparing from both ends: no line matching needed,
//! even for a `~/.claude.json` of thousands of lines.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};

/// Lines of context around a change.
const CONTEXT: usize = 3;

/// A unified diff of `before` into `after`, labelled with `label`; empty
/// when they are equal.
pub fn diff(label: &str, before: &str, after: &str) -> String {
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    if prefix == old.len() && prefix == new.len() {
        return String::new();
    }
    let from = prefix.saturating_sub(CONTEXT);
    let old_end = (old.len() - suffix + CONTEXT).min(old.len());
    let new_end = (new.len() - suffix + CONTEXT).min(new.len());
    let range = |start: usize, end: usize| {
        let count = end - start;
        // An empty range names the line before it, as diff does.
        let first = if count == 0 { start } else { start + 1 };
        format!("{first},{count}")
    };
    let mut out = format!("--- {label}\n+++ {label}\n");
    out.push_str(&format!(
        "@@ -{} +{} @@\n",
        range(from, old_end),
        range(from, new_end)
    ));
    let line = |out: &mut String, mark: char, text: &str| {
        out.push(mark);
        out.push_str(text.trim_end_matches(['\n', '\r']));
        out.push('\n');
    };
    for text in &old[from..prefix] {
        line(&mut out, ' ', text);
    }
    for text in &old[prefix..old.len() - suffix] {
        line(&mut out, '-', text);
    }
    for text in &new[prefix..new.len() - suffix] {
        line(&mut out, '+', text);
    }
    for text in &new[new.len() - suffix..new_end] {
        line(&mut out, ' ', text);
    }
    out
}

/// `text` with each of `secrets` written as `***`.
pub fn mask(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|s| !s.is_empty())
        .fold(text.to_owned(), |text, s| text.replace(s.as_str(), "***"))
}

/// Asks `question` on the terminal (`/dev/tty`, so piped output stays
/// clean); `Ok(true)` only for `y` or `yes`. `Err` when there is no terminal.
pub fn confirm(question: &str) -> std::io::Result<bool> {
    let tty = OpenOptions::new().read(true).write(true).open("/dev/tty")?;
    let mut out = tty.try_clone()?;
    confirm_on(question, &mut BufReader::new(tty), &mut out)
}

/// [`confirm`] on any reader and writer; end of input is no.
fn confirm_on(
    question: &str,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> std::io::Result<bool> {
    write!(output, "{question} [y/N] ")?;
    output.flush()?;
    let mut answer = String::new();
    if input.read_line(&mut answer)? == 0 {
        writeln!(output)?;
    }
    let a = answer.trim();
    Ok(a.eq_ignore_ascii_case("y") || a.eq_ignore_ascii_case("yes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stretch_with_context() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "a\nb\nc\nd\nX\nY\nf\ng\nh\n";
        assert_eq!(
            diff("f", before, after),
            "--- f\n+++ f\n@@ -2,7 +2,8 @@\n b\n c\n d\n-e\n+X\n+Y\n f\n g\n h\n"
        );
    }

    #[test]
    fn a_new_file_and_a_removed_one() {
        assert_eq!(diff("f", "", "x\n"), "--- f\n+++ f\n@@ -0,0 +1,1 @@\n+x\n");
        assert_eq!(
            diff("f", "x\ny", ""),
            "--- f\n+++ f\n@@ -1,2 +0,0 @@\n-x\n-y\n"
        );
        assert_eq!(diff("f", "same\n", "same\n"), "");
    }

    #[test]
    fn repeated_lines_at_both_ends_do_not_overlap() {
        let d = diff("f", "x\nx\n", "x\nx\nx\n");
        let added = d
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"));
        assert_eq!(added.count(), 1, "{d}");
    }

    #[test]
    fn only_y_or_yes_is_yes() {
        for (answer, yes) in [
            ("y\n", true),
            (" YES \n", true),
            ("\n", false),
            ("", false),
            ("no\n", false),
            ("yep\n", false),
        ] {
            let mut out = Vec::new();
            let got = confirm_on("Write f?", &mut answer.as_bytes(), &mut out).unwrap();
            assert_eq!(got, yes, "{answer:?}");
            assert!(
                String::from_utf8(out)
                    .unwrap()
                    .starts_with("Write f? [y/N] ")
            );
        }
    }

    #[test]
    fn secrets_are_masked() {
        assert_eq!(mask("Bearer abc123", &["abc123".into()]), "Bearer ***");
        assert_eq!(mask("Bearer abc123", &[]), "Bearer abc123");
    }
}
