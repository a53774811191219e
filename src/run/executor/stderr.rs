//! Keeps the head and tail of a plugin's stderr, and picks progress lines out of it.
//!
//! # The progress channel
//! A plugin reports progress by writing a line to stderr that starts with
//! `::progress::`, then a number, an optional `/total` (or a `%`), and an
//! optional message:
//!
//! ```text
//! ::progress:: 3/10 fetching page 3
//! ::progress:: 40% indexing
//! ::progress:: 1
//! ```
//!
//! In bash that is one `echo '::progress:: 3/10 fetching' >&2`. Run by hand, the
//! line just shows on the terminal; plugins that never write one never notice
//! the channel. A line without a number still counts: its progress is the count
//! of progress lines so far.

use std::collections::VecDeque;

use serde::Serialize;

/// The marker that starts a progress line.
pub(super) const PROGRESS_MARKER: &[u8] = b"::progress::";

/// Longest stderr line inspected for progress; longer lines are only kept as text.
const MAX_LINE: usize = 1024;

/// One progress report from a plugin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    /// How far it is: the number on its progress line (on a line without
    /// one, how many progress lines so far), or an MCP server's `progress`.
    pub progress: f64,
    /// What `progress` counts up to, when the plugin says (100 for a percentage).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What it is doing, in its words, when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Collects stderr: the first and last `limit / 2` bytes, and progress lines.
#[derive(Debug)]
pub(crate) struct StderrCollector {
    half: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    omitted: u64,
    line: Vec<u8>,
    line_too_long: bool,
    reports: u64,
}

impl StderrCollector {
    pub(crate) fn new(limit: usize) -> StderrCollector {
        StderrCollector {
            half: limit / 2,
            head: Vec::new(),
            tail: VecDeque::new(),
            omitted: 0,
            line: Vec::new(),
            line_too_long: false,
            reports: 0,
        }
    }

    /// Takes one chunk of stderr.
    pub(crate) fn push(&mut self, chunk: &[u8], on_progress: &(dyn Fn(Progress) + Send + Sync)) {
        self.keep(chunk);
        for part in chunk.split_inclusive(|b| *b == b'\n') {
            let complete = part.ends_with(b"\n");
            if !self.line_too_long {
                if self.line.len() + part.len() > MAX_LINE {
                    self.line_too_long = true;
                    self.line.clear();
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            if complete {
                if !self.line_too_long
                    && let Some(p) = self.parse_progress()
                {
                    on_progress(p);
                }
                self.line.clear();
                self.line_too_long = false;
            }
        }
    }

    fn keep(&mut self, mut chunk: &[u8]) {
        let room = self.half.saturating_sub(self.head.len());
        let to_head = room.min(chunk.len());
        self.head.extend_from_slice(&chunk[..to_head]);
        chunk = &chunk[to_head..];
        if chunk.len() >= self.half {
            self.omitted += (self.tail.len() + chunk.len() - self.half) as u64;
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.half..]);
            return;
        }
        let overflow = (self.tail.len() + chunk.len()).saturating_sub(self.half);
        self.tail.drain(..overflow);
        self.omitted += overflow as u64;
        self.tail.extend(chunk);
    }

    fn parse_progress(&mut self) -> Option<Progress> {
        let line = std::str::from_utf8(self.line.strip_prefix(PROGRESS_MARKER)?).ok()?;
        self.reports += 1;
        let line = line.trim();
        let (first, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let message = |m: &str| (!m.trim().is_empty()).then(|| m.trim().to_owned());
        let numbers = if let Some(pct) = first.strip_suffix('%') {
            pct.parse().ok().map(|p: f64| (p, Some(100.0)))
        } else if let Some((n, t)) = first.split_once('/') {
            n.parse().ok().zip(t.parse().ok().map(Some))
        } else {
            first.parse().ok().map(|n: f64| (n, None))
        };
        Some(match numbers {
            Some((progress, total)) if progress.is_finite() => Progress {
                progress,
                total: total.filter(|t: &f64| t.is_finite()),
                message: message(rest),
            },
            _ => Progress {
                progress: self.reports as f64,
                total: None,
                message: message(line),
            },
        })
    }

    /// The kept text; a marker shows where bytes were left out.
    pub(crate) fn render(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        if self.omitted > 0 {
            s.push_str(&format!(
                "\n[… {} bytes of stderr omitted …]\n",
                self.omitted
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = a.to_vec();
        tail.extend_from_slice(b);
        s.push_str(&String::from_utf8_lossy(&tail));
        s
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn collect(chunks: &[&[u8]], limit: usize) -> (String, Vec<Progress>) {
        let seen = Mutex::new(Vec::new());
        let mut c = StderrCollector::new(limit);
        for chunk in chunks {
            c.push(chunk, &|p| seen.lock().unwrap().push(p));
        }
        (c.render(), seen.into_inner().unwrap())
    }

    #[test]
    fn keeps_head_and_tail_of_a_flood() {
        let flood = vec![b'x'; 10_000];
        let (text, _) = collect(&[b"START", &flood, &flood, b"END"], 100);
        assert!(text.starts_with("STARTxxx"));
        assert!(text.ends_with("xxxEND"));
        assert!(text.contains("bytes of stderr omitted"));
        assert!(text.len() < 200);
    }

    #[test]
    fn short_stderr_is_kept_whole() {
        let (text, _) = collect(&[b"oops\n", b"again\n"], 64 * 1024);
        assert_eq!(text, "oops\nagain\n");
    }

    #[test]
    fn parses_progress_lines_split_across_chunks() {
        let (_, seen) = collect(
            &[
                b"noise\n::progr",
                b"ess:: 3/10 fetching page\n::progress:: 40%\n",
                b"::progress:: working\n",
            ],
            1024,
        );
        assert_eq!(
            seen,
            vec![
                Progress {
                    progress: 3.0,
                    total: Some(10.0),
                    message: Some("fetching page".into())
                },
                Progress {
                    progress: 40.0,
                    total: Some(100.0),
                    message: None
                },
                Progress {
                    progress: 3.0,
                    total: None,
                    message: Some("working".into())
                },
            ]
        );
    }

    #[test]
    fn an_unfinished_or_huge_line_is_not_progress() {
        let long = [b"::progress:: 1 ".as_slice(), &vec![b'a'; 5000], b"\n"].concat();
        let (_, seen) = collect(&[&long, b"::progress:: 2"], 1 << 20);
        assert!(seen.is_empty());
    }
}
