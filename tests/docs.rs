//! Every command example in `README.md` and `docs/**/*.md` runs here, and its
//! output is checked: a changed message fails this test until the document
//! changes with it. `docs/contributing.md` says the same for writers. The
//! relative links of `README.md` are checked here too (MkDocs checks those
//! of the guide when `scripts/guide` builds it), and so is the guide's
//! library example, which must be the crate documentation's tested one.
//!
//! # What runs
//!
//! A fenced block marked ` ```console ` is a shell session:
//!
//! - A line starting with `$ ` is a command. Lines starting with `> ` (or a
//!   lone `>`) right after it continue it, as a shell's second prompt does:
//!   a here-document, a long command.
//! - The lines after a command, up to the next `$ ` line or the end of the
//!   block, are its expected output: stdout and stderr together, as a
//!   terminal shows them.
//! - A command is expected to exit 0. One expected to fail ends with a
//!   comment whose last words are `exit N`:
//!   `$ plughost call nope '{}'   # exit 2`, or `# the tool's own error: exit 1`.
//!
//! # How output is compared
//!
//! - `[..]` in an expected line matches any text within that line (none
//!   included): times, ids, sizes.
//! - A line that is only `...` matches any number of lines (none included).
//! - Paths are written the way a reader's machine would show them: the
//!   sandbox's home folder is `~` (`~/.plugins/weather`), the checkout
//!   plughost was built from is `[REPO]`, the folder holding the `plughost`
//!   binary under test is `[BIN]`.
//! - Trailing spaces, and blank lines at the end, are ignored on both sides.
//!   Anything else must match exactly.
//!
//! # The sandbox
//!
//! Each block gets a fresh one, as a new user's machine after the README's
//! set-up: a temporary home folder (`HOME`, `TMPDIR` inside it), `~/.plugins`
//! holding copies of `plugins-examples/`, the `XDG_*`, `PLUGHOST_*` and
//! `OTEL_*` variables of the caller removed (so the plugins and state folders
//! are the defaults, `~/.plugins` and `~/.local/state/plughost`), a registry
//! on loopback (`tests/util/registry.rs`; `PLUGHOST_REGISTRY` and
//! `npm_config_registry` name it, and its address shows as `[REGISTRY]`)
//! serving one MCP server, `io.github.example/notes`, and `PATH` starting with the folder of the `plughost` binary this test was built
//! with. The commands of one block run in order, each with `bash -c` in its
//! own session (no controlling terminal, so nothing prompts), stdin empty, a
//! two-minute limit. The first starts in `~`; a `cd` carries over to the next
//! command, a variable does not. `PLUGHOST_DOCS_ONLY=docs/cli.md` runs only
//! the documents whose path holds that text, and says so, while one page is
//! being written.
//!
//! # What does not run
//!
//! Blocks marked ` ```sh `, ` ```text `, ` ```json ` or anything other than
//! `console` are shown, not run. They are: a session on another machine (a
//! client's configuration, a fresh clone), installs from npm or PyPI
//! (`plughost add npm:…`, `pip install`), which need the network and minutes,
//! commands that block until stopped (`plughost serve --http`, `plughost watch`),
//! prompts that need a terminal, and the repository's own scripts
//! (`scripts/test`, `scripts/bench`), which the test suite runs elsewhere.
//! Every fence must name its language, so that choice is always visible, and
//! start at the beginning of its line (MkDocs does not render an indented one).

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util;
use crate::util::registry::{self, Registry};

/// How long one command may run before it is killed and reported.
const COMMAND_LIMIT: Duration = Duration::from_secs(120);

/// A ` ```console ` block: its commands in order.
#[derive(Debug)]
struct Block {
    /// The document, relative to the repository.
    file: PathBuf,
    examples: Vec<Example>,
}

#[derive(Debug)]
struct Example {
    /// The line of the `$ ` prompt (1-based).
    line: usize,
    command: String,
    exit: i32,
    expected: Vec<String>,
}

/// What a document holds: its console blocks, how many other blocks, and
/// what is wrong with its fences.
#[derive(Debug, Default)]
struct Parsed {
    console: Vec<Block>,
    not_run: usize,
    problems: Vec<String>,
}

fn parse(file: &Path, text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let Some(fence) = fence_of(trimmed) else {
            i += 1;
            continue;
        };
        let open = i + 1;
        if trimmed.len() != line.len() {
            parsed.problems.push(format!(
                "{}:{open}: an indented fence; start it at the beginning of the line (MkDocs renders an indented one as text)",
                file.display()
            ));
        }
        let info = trimmed[fence.len()..].trim();
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() && lines[i].trim() != fence {
            body.push((i + 1, lines[i]));
            i += 1;
        }
        if i == lines.len() {
            parsed.problems.push(format!(
                "{}:{open}: the block is never closed",
                file.display()
            ));
        }
        i += 1;
        if info.is_empty() {
            parsed.problems.push(format!(
                "{}:{open}: a fence without a language; mark it console (run and checked), sh (shown, not run), text, json…",
                file.display()
            ));
        }
        if info != "console" {
            parsed.not_run += 1;
            continue;
        }
        match console_block(&body) {
            Ok(examples) => parsed.console.push(Block {
                file: file.to_owned(),
                examples,
            }),
            Err((line, why)) => parsed
                .problems
                .push(format!("{}:{line}: {why}", file.display())),
        }
    }
    parsed
}

/// The fence (```` ``` ```` or `~~~`, three or more) a line opens with.
fn fence_of(line: &str) -> Option<&str> {
    for c in ['`', '~'] {
        let n = line.chars().take_while(|&x| x == c).count();
        if n >= 3 {
            return Some(&line[..n]);
        }
    }
    None
}

fn console_block(body: &[(usize, &str)]) -> Result<Vec<Example>, (usize, String)> {
    let mut examples: Vec<Example> = Vec::new();
    let mut continuing = false;
    for &(line, text) in body {
        if let Some(command) = text.strip_prefix("$ ") {
            examples.push(Example {
                line,
                command: command.to_owned(),
                exit: exit_marker(command),
                expected: Vec::new(),
            });
            continuing = true;
        } else if continuing && (text == ">" || text.starts_with("> ")) {
            let last = examples.last_mut().expect("a command precedes");
            last.command.push('\n');
            last.command.push_str(text.get(2..).unwrap_or(""));
        } else {
            continuing = false;
            match examples.last_mut() {
                Some(last) => last.expected.push(text.to_owned()),
                None => {
                    return Err((
                        line,
                        "a console block starts with a `$ ` command".to_owned(),
                    ));
                }
            }
        }
    }
    if examples.is_empty() {
        let line = body.first().map_or(0, |l| l.0);
        return Err((line, "a console block without a `$ ` command".to_owned()));
    }
    Ok(examples)
}

/// The exit code a command's trailing comment expects: `# exit 2`, or
/// `# the tool's own error: exit 1`; 0 without one.
fn exit_marker(command: &str) -> i32 {
    let Some(at) = command.rfind(" #") else {
        return 0;
    };
    let comment = command[at + 2..].trim_end();
    let mut words = comment.rsplit(' ');
    match (words.next(), words.next()) {
        (Some(code), Some("exit")) => code.parse().unwrap_or(0),
        _ => 0,
    }
}

/// Whether `actual` fits `expected`, with `[..]` and `...`.
fn fits(expected: &[String], actual: &[String]) -> bool {
    fn go(
        e: usize,
        a: usize,
        exp: &[String],
        act: &[String],
        memo: &mut HashMap<(usize, usize), bool>,
    ) -> bool {
        if let Some(&r) = memo.get(&(e, a)) {
            return r;
        }
        let r = if e == exp.len() {
            a == act.len()
        } else if exp[e] == "..." {
            (a..=act.len()).any(|next| go(e + 1, next, exp, act, memo))
        } else {
            a < act.len() && line_fits(&exp[e], &act[a]) && go(e + 1, a + 1, exp, act, memo)
        };
        memo.insert((e, a), r);
        r
    }
    go(0, 0, expected, actual, &mut HashMap::new())
}

/// One line against its expectation, where `[..]` matches any text.
fn line_fits(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split("[..]").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &actual[first.len()..];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Lines without trailing spaces, and without blank lines at the end.
fn tidy<S: AsRef<str>>(lines: &[S]) -> Vec<String> {
    let mut out: Vec<String> = lines
        .iter()
        .map(|l| l.as_ref().trim_end().to_owned())
        .collect();
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out
}

/// A fresh home folder for one block, and the paths written as `~`,
/// `[REPO]` and `[BIN]`.
struct Sandbox {
    _root: tempfile::TempDir,
    home: PathBuf,
    bin_dir: PathBuf,
    repo: PathBuf,
    registry: String,
}

impl Sandbox {
    fn new(registry: &str) -> Sandbox {
        let root = tempfile::Builder::new()
            .prefix("plughost-docs-")
            .tempdir()
            .unwrap();
        let home = root.path().canonicalize().unwrap();
        util::copy_dir(&util::examples(), &home.join(".plugins"));
        std::fs::create_dir_all(home.join("tmp")).unwrap();
        let bin = PathBuf::from(crate::util::plughost());
        let bin_dir = bin.parent().unwrap().canonicalize().unwrap();
        let repo = util::repo().canonicalize().unwrap();
        Sandbox {
            _root: root,
            home,
            bin_dir,
            repo,
            registry: registry.to_owned(),
        }
    }

    /// Runs one command from `cwd`; returns its exit code, its output as
    /// the reader sees it, and the folder it ended in.
    fn run(&self, command: &str, cwd: &Path) -> (Option<i32>, Vec<String>, PathBuf) {
        let cwd_file = self.home.join(".docs-cwd");
        let _ = std::fs::remove_file(&cwd_file);
        let script = format!(
            "exec 2>&1 </dev/null\ntrap 'pwd > \"{}\"' EXIT\n{command}\n",
            cwd_file.display()
        );
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(script).current_dir(cwd);
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("XDG_")
                || name.starts_with("PLUGHOST_")
                || name.starts_with("OTEL_")
            {
                cmd.env_remove(&*name);
            }
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![self.bin_dir.clone()];
        paths.extend(std::env::split_paths(&path));
        cmd.env("HOME", &self.home)
            .env("TMPDIR", self.home.join("tmp"))
            .env("PLUGHOST_REGISTRY", &self.registry)
            .env("npm_config_registry", format!("{}/", self.registry))
            .env("PATH", std::env::join_paths(paths).unwrap())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // SAFETY: setsid is async-signal-safe and touches no memory of the
        // parent; it detaches the command from the terminal running the
        // tests, so an approval prompt cannot open /dev/tty and wait.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("bash starts");
        let group = child.id() as i32;
        let mut stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stdout.read_to_end(&mut bytes);
            bytes
        });
        let deadline = Instant::now() + COMMAND_LIMIT;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                kill_group(group);
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        // A process the command left behind may still hold the pipe.
        let linger = Instant::now() + Duration::from_secs(5);
        while !reader.is_finished() && Instant::now() < linger {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !reader.is_finished() {
            kill_group(group);
        }
        let bytes = reader.join().unwrap();
        let text = self.mask(&String::from_utf8_lossy(&bytes));
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let next_cwd = std::fs::read_to_string(&cwd_file)
            .ok()
            .map(|s| PathBuf::from(s.trim_end_matches('\n')))
            .filter(|p| p.is_dir())
            .unwrap_or_else(|| cwd.to_owned());
        let code = match status {
            Some(s) => s.code(),
            None => None,
        };
        (code, lines, next_cwd)
    }

    /// The output with the sandbox's paths written as a reader sees them.
    fn mask(&self, text: &str) -> String {
        text.replace(&self.registry, "[REGISTRY]")
            .replace(&*self.bin_dir.to_string_lossy(), "[BIN]")
            .replace(&*self.repo.to_string_lossy(), "[REPO]")
            .replace(&*self.home.to_string_lossy(), "~")
    }
}

fn kill_group(group: i32) {
    // SAFETY: a plain system call on the group the command leads.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}

/// Runs a block's commands in order in one sandbox; the failures, described.
fn run_block(block: &Block, registry: &str) -> Vec<String> {
    let sandbox = Sandbox::new(registry);
    let mut cwd = sandbox.home.clone();
    let mut failures = Vec::new();
    for example in &block.examples {
        let started = Instant::now();
        let (code, actual, next) = sandbox.run(&example.command, &cwd);
        cwd = next;
        let actual = tidy(&actual);
        let expected = tidy(&example.expected);
        let code_ok = code == Some(example.exit);
        if code_ok && fits(&expected, &actual) {
            continue;
        }
        let code = match code {
            Some(c) => c.to_string(),
            None => format!(
                "none: killed after {}s or by a signal",
                started.elapsed().as_secs()
            ),
        };
        failures.push(format!(
            "{}:{}: $ {}\n  exit code: expected {}, got {code}\n  expected output:\n{}\n  actual output:\n{}",
            block.file.display(),
            example.line,
            example.command.replace('\n', "\n  > "),
            example.exit,
            indent(&expected),
            indent(&actual),
        ));
    }
    failures
}

fn indent(lines: &[String]) -> String {
    if lines.is_empty() {
        return "    (nothing)".to_owned();
    }
    lines
        .iter()
        .map(|l| format!("    | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// README.md and every Markdown file under docs/, relative to the repository.
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let repo = util::repo();
    let mut out = vec![repo.join("README.md")];
    walk(&repo.join("docs"), &mut out);
    out.sort();
    out.into_iter()
        .map(|p| p.strip_prefix(&repo).unwrap().to_owned())
        .collect()
}

#[test]
fn every_console_example_runs_as_written() {
    let mut blocks = Vec::new();
    let mut problems = Vec::new();
    let mut not_run = 0;
    // While writing one page: PLUGHOST_DOCS_ONLY=docs/cli.md runs only the
    // documents whose path holds that text.
    let only = std::env::var("PLUGHOST_DOCS_ONLY").ok();
    if let Some(only) = &only {
        eprintln!("docs: only the documents matching {only:?} (PLUGHOST_DOCS_ONLY)");
    }
    for file in documents() {
        if only
            .as_ref()
            .is_some_and(|o| !file.to_string_lossy().contains(o.as_str()))
        {
            continue;
        }
        let text = std::fs::read_to_string(util::repo().join(&file)).unwrap();
        let parsed = parse(&file, &text);
        blocks.extend(parsed.console);
        problems.extend(parsed.problems);
        not_run += parsed.not_run;
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let commands: usize = blocks.iter().map(|b| b.examples.len()).sum();
    assert!(commands > 0, "no console examples found");

    // The registry every block reads (npm's and the MCP Registry's).
    let served = tempfile::Builder::new()
        .prefix("plughost-docs-registry-")
        .tempdir()
        .unwrap();
    let folder = registry::folder(served.path());
    registry::publish_notes(&folder, &served.path().join("build"), "1.0.0");
    let registry = Registry::start(&folder);
    let url = registry.url();

    // Two blocks at a time: the other tests run beside these.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(block) = blocks.get(i) else { break };
                    let found = run_block(block, &url);
                    failures.lock().unwrap().extend(found);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    eprintln!(
        "docs: {commands} commands in {} console blocks ran; {not_run} other blocks are shown, not run",
        blocks.len()
    );
    assert!(
        failures.is_empty(),
        "{} command examples do not run as written (fix the command, or the document):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_runner_reads_the_conventions() {
    let doc = "text\n\n```console\n$ echo hi   # exit 0\nhi\n$ cat <<'EOF'\n> a\n>\n> EOF\na\n\n$ false   # the tool's own error: exit 1\n```\n\n```sh\nscripts/test\n```\n";
    let parsed = parse(Path::new("x.md"), doc);
    assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
    assert_eq!(parsed.not_run, 1);
    let ex = &parsed.console[0].examples;
    assert_eq!(ex.len(), 3);
    assert_eq!(
        (ex[0].line, ex[0].exit, ex[0].expected.clone()),
        (4, 0, vec!["hi".to_owned()])
    );
    assert_eq!(ex[1].command, "cat <<'EOF'\na\n\nEOF");
    assert_eq!(ex[2].exit, 1);

    let bad = parse(
        Path::new("x.md"),
        "```\n$ ls\n```\n  ```console\n$ ls\n  ```\n```console\nhi\n```\n",
    );
    assert_eq!(bad.problems.len(), 3, "{:?}", bad.problems);
}

#[test]
fn a_changed_message_does_not_fit() {
    let lines = |s: &str| s.lines().map(str::to_owned).collect::<Vec<_>>();
    let actual = lines("error: not_found: no tool named \"x\"\ntook 12 ms\na\nb");
    assert!(fits(
        &lines("error: not_found: no tool named \"x\"\ntook [..] ms\n..."),
        &actual
    ));
    assert!(fits(&lines("...\na\nb"), &actual));
    assert!(fits(
        &lines("error: [..]: no tool [..] \"x\"\n...\nb"),
        &actual
    ));
    assert!(!fits(
        &lines("error: not_found: no tool called \"x\"\n..."),
        &actual
    ));
    assert!(!fits(
        &lines("error: not_found: no tool named \"x\"\ntook [..] ms"),
        &actual
    ));
    assert!(!fits(&lines("[..]x[..]x[..]x[..]"), &lines("x x")));
    assert!(line_fits("a[..]", "a") && !line_fits("ab[..]ba", "aba"));
}

/// The relative links of README.md: the file exists, and so does the
/// heading an anchor names (as MkDocs and GitHub make anchors of simple
/// headings). The guide's own links are checked by `mkdocs build --strict`.
#[test]
fn the_readme_links_lead_somewhere() {
    let repo = util::repo();
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let mut broken = Vec::new();
    let mut checked = 0;
    for (line, target) in links(&readme) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        checked += 1;
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let file = if path.is_empty() {
            repo.join("README.md")
        } else {
            repo.join(path)
        };
        if !file.exists() {
            broken.push(format!("README.md:{line}: {target}: no file {path}"));
            continue;
        }
        if let Some(anchor) = anchor {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            if !headings(&text).iter().any(|h| slug(h) == anchor) {
                broken.push(format!(
                    "README.md:{line}: {target}: no heading with the anchor #{anchor} in {path}"
                ));
            }
        }
    }
    assert!(checked > 0, "README.md links to nothing in the repository");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// `(line, target)` of each `[text](target)` outside code.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(f) = fence_of(line) {
            match fence {
                Some(open) if line.trim() == open => fence = None,
                None => fence = Some(f),
                Some(_) => {}
            }
            continue;
        }
        if fence.is_some() {
            continue;
        }
        // Inline code may hold brackets that are not links.
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join("``");
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((i + 1, after[..end].to_owned()));
            rest = &after[end..];
        }
    }
    out
}

fn headings(text: &str) -> Vec<String> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(f) = fence_of(line) {
            match fence {
                Some(open) if line.trim() == open => fence = None,
                None => fence = Some(f),
                Some(_) => {}
            }
            continue;
        }
        if fence.is_none() && line.starts_with('#') {
            out.push(line.trim_start_matches('#').trim().to_owned());
        }
    }
    out
}

/// The anchor of a heading: lowercase, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    let kept: String = heading
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .collect();
    kept.trim()
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("-")
}

/// The guide's library page shows the crate documentation's example, which
/// `cargo test --doc` compiles and runs: the two stay the same.
#[test]
fn the_library_page_shows_the_tested_example() {
    let repo = util::repo();
    let lib = std::fs::read_to_string(repo.join("src/lib.rs")).unwrap();
    let docs: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    let tested = first_block(&docs, "```")
        .expect("src/lib.rs's crate docs have an example")
        .into_iter()
        .filter(|l| !l.trim_start().starts_with("# ") && l.trim() != "#")
        .collect::<Vec<_>>();
    let page = std::fs::read_to_string(repo.join("docs/library.md")).unwrap();
    let lines: Vec<&str> = page.lines().collect();
    let shown = first_block(&lines, "```rust").expect("docs/library.md has a rust block");
    assert_eq!(
        shown, tested,
        "docs/library.md's first rust block differs from the example in src/lib.rs's crate docs"
    );
}

/// The lines of the first fenced block opened by `open`.
fn first_block<'a>(lines: &[&'a str], open: &str) -> Option<Vec<&'a str>> {
    let start = lines.iter().position(|l| l.trim_end() == open)?;
    let len = lines[start + 1..]
        .iter()
        .position(|l| l.trim_end() == "```")?;
    Some(lines[start + 1..start + 1 + len].to_vec())
}
