//! Tool-name patterns: `*` stands for any run of characters (also none),
//! `?` for one; everything else matches itself. The shell's globs are what
//! users already write for names, and tool names hold no `/` that would make
//! a path glob's rules matter.

/// Whether `name` matches `pattern`. Iterative with one backtrack point, so
/// a pattern of many stars costs linear time, not exponential.
pub(super) fn matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn stars_and_question_marks() {
        for (pattern, name, expected) in [
            ("git_*", "git_status", true),
            ("git_*", "git_", true),
            ("git_*", "github_search", false),
            ("*", "anything", true),
            ("*_file", "read_file", true),
            ("*_file", "read_files", false),
            ("read_?ile", "read_file", true),
            ("read_?ile", "read_ile", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("**x", "x", true),
        ] {
            assert_eq!(matches(pattern, name), expected, "{pattern} vs {name}");
        }
    }
}
