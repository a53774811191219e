//! Words for a POSIX shell: every command line plughost tells the user to
//! run, and every `exec` line of the scripts it writes, quotes through here.

/// `word` as one word for `sh`: as it is when it holds only characters no
/// shell treats specially, else in single quotes (a `'` inside closes the
/// quotes, escapes itself and reopens them).
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:=@%,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn a_word_is_quoted_only_when_a_shell_would_change_it() {
        assert_eq!(quote("/usr/bin/node"), "/usr/bin/node");
        assert_eq!(quote("kv-store"), "kv-store");
        assert_eq!(quote("/tmp/my plugins"), "'/tmp/my plugins'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$HOME"), "'$HOME'");
        assert_eq!(quote(""), "''");
    }
}
