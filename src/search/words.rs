//! Text to search terms.

/// Words too common in tool descriptions and requests to tell tools apart.
const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "has", "have",
    "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "please", "should",
    "so", "that", "the", "their", "them", "then", "there", "these", "this", "to", "us", "use",
    "used", "want", "was", "we", "what", "when", "which", "will", "with", "would", "you", "your",
];

/// The terms of `text`: split at anything not a letter or digit and at
/// camelCase humps (`getUserName` is get, user, name), lower-cased, stop
/// words dropped, each reduced by [`stem`].
pub(super) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            let w = word.to_lowercase();
            if !STOP.contains(&w.as_str()) {
                out.push(stem(&w));
            }
            word.clear();
        }
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower {
                flush(&mut word, &mut out);
            }
            word.push(c);
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
        } else {
            flush(&mut word, &mut out);
            prev_lower = false;
        }
    }
    flush(&mut word, &mut out);
    out
}

/// A light English suffix stripper: plural and verb endings, so the forms
/// a person and a description use meet. Both sides go through it, so a
/// wrong cut costs nothing as long as it is the same cut.
pub(super) fn stem(word: &str) -> String {
    let word = strip_ending(word);
    // "create", "created" and "creating" meet at "creat".
    match word.strip_suffix('e') {
        Some(root) if root.chars().count() >= 3 => root.to_owned(),
        _ => word,
    }
}

fn strip_ending(word: &str) -> String {
    let n = word.chars().count();
    let strip = |suffix: &str, min: usize, with: &str| {
        (word.ends_with(suffix) && n >= min + suffix.len())
            .then(|| format!("{}{with}", &word[..word.len() - suffix.len()]))
    };
    strip("ies", 2, "y")
        .or_else(|| strip("sses", 2, "ss"))
        .or_else(|| strip("ing", 3, ""))
        .or_else(|| strip("ed", 3, ""))
        .or_else(|| {
            (word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us") && n > 3)
                .then(|| word[..word.len() - 1].to_owned())
        })
        .unwrap_or_else(|| word.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_at_underscores_and_humps() {
        assert_eq!(terms("git_status"), ["git", "status"]);
        assert_eq!(
            terms("browser_navigate_back"),
            ["browser", "navigat", "back"]
        );
        assert_eq!(terms("getUserName"), ["get", "user", "nam"]);
        assert_eq!(terms("API-get-self"), ["api", "get", "self"]);
        assert_eq!(terms("list_directory.v2"), ["list", "directory", "v2"]);
    }

    #[test]
    fn stop_words_go_and_forms_meet() {
        assert_eq!(
            terms("Read the files in a folder"),
            ["read", "fil", "folder"]
        );
        assert_eq!(stem("entities"), "entity");
        assert_eq!(stem("listing"), "list");
        assert_eq!(stem("created"), "creat");
        assert_eq!(stem("create"), "creat");
        assert_eq!(stem("creating"), "creat");
        assert_eq!(stem("file"), stem("files"));
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("address"), "address");
        assert_eq!(stem("is"), "is");
    }
}
