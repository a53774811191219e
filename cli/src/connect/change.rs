//! The two changes `connect` makes to a client's file, each shown as a diff
//! and confirmed before anything is written.
//!
//! Connecting backs the file up first (once: a later connect with other
//! options keeps the first copy) and writes only plughost's entry. When the
//! entry already does what was asked, nothing is written.
//!
//! Undoing puts the file back byte for byte when nothing but plughost's
//! entry changed since: the backup, or no file when plughost created it.
//! Clients rewrite their own files (Claude Code keeps its state in
//! `~/.claude.json`), so when the rest of the file changed, only plughost's
//! entry is taken out (the entry it replaced, if any, comes back) and the
//! client's changes stay.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::clients::{self, Client, Transport};
use super::doc::Doc;
use super::entry::Node;
use super::file::{self, Contents};
use super::preview;

/// One client's file and how to go about changing it.
#[derive(Debug)]
pub struct Request {
    pub client: Client,
    /// The file, links followed.
    pub file: PathBuf,
    /// The entry's name among the client's servers.
    pub name: String,
    pub yes: bool,
    pub dry_run: bool,
    /// Show bearer tokens in the preview instead of `***`.
    pub show_token: bool,
    /// The command that undoes a connect, for the user to keep.
    pub undo_command: String,
}

/// What the user did when asked.
enum Answer {
    Go,
    Stop(ExitCode),
}

pub fn connect(req: &Request, entry: &Node) -> Result<(ExitCode, bool), String> {
    let current = file::read(&req.file)?;
    let doc = Doc::parse(req.client, current.as_ref().map(|c| c.text.as_str()))
        .map_err(|why| refused(&req.file, &why))?;
    let existing = doc.entry(&req.name);
    if existing
        .as_ref()
        .is_some_and(|found| clients::satisfies(found, &entry.to_json()))
    {
        println!(
            "{} already has the entry \"{}\" in {}: nothing to change",
            req.client.title(),
            req.name,
            req.file.display()
        );
        return Ok((ExitCode::SUCCESS, false));
    }
    let text = doc
        .with_entry(&req.name, entry)
        .map_err(|why| refused(&req.file, &why))?;
    let before = current.as_ref().map_or("", |c| c.text.as_str());
    let verb = if current.is_some() {
        "change"
    } else {
        "create"
    };
    let mut secrets = tokens_in(existing.as_ref());
    secrets.extend(tokens_in(Some(&entry.to_json())));
    if let Answer::Stop(code) = show_and_ask(req, verb, before, &text, &secrets)? {
        return Ok((code, false));
    }
    let backup = file::backup_path(&req.file);
    match &current {
        // The first copy is the one to go back to, unless the entry is gone
        // from the file since: then the copy is stale and the file is the original.
        Some(c) if existing.is_none() || std::fs::symlink_metadata(&backup).is_err() => {
            file::write(&backup, &c.text, Some(c.mode))?;
        }
        Some(_) => {}
        // No file to go back to: undo removes the one written now.
        None => file::remove(&backup)?,
    }
    file::write(&req.file, &text, current.as_ref().map(|c| c.mode))?;
    let how = match clients::transport(&entry.to_json()) {
        Transport::Http { url } => format!("streamable HTTP at {url}"),
        _ => "plughost serve on stdio".to_owned(),
    };
    println!(
        "connected {}: {} has the entry \"{}\" ({how})",
        req.client.title(),
        req.file.display(),
        req.name
    );
    if current.is_some() {
        println!(
            "the file as it was is in {}; to put it back: {}",
            backup.display(),
            req.undo_command
        );
    } else {
        println!("to remove the file again: {}", req.undo_command);
    }
    Ok((ExitCode::SUCCESS, true))
}

pub fn undo(req: &Request) -> Result<ExitCode, String> {
    let backup_path = file::backup_path(&req.file);
    let backup = file::read(&backup_path)?;
    let Some(current) = file::read(&req.file)? else {
        match backup {
            Some(_) => println!(
                "{} does not exist any more: nothing to undo (its copy from before plughost connected is {})",
                req.file.display(),
                backup_path.display()
            ),
            None => println!("{} does not exist: nothing to undo", req.file.display()),
        }
        return Ok(ExitCode::SUCCESS);
    };
    let doc =
        Doc::parse(req.client, Some(&current.text)).map_err(|why| refused(&req.file, &why))?;
    let Some(entry) = doc.entry(&req.name) else {
        println!(
            "{} has no entry \"{}\" in {}: nothing to undo",
            req.client.title(),
            req.name,
            req.file.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    let original = Doc::parse(req.client, backup.as_ref().map(|b| b.text.as_str()));
    let plan = plan_undo(req, &doc, &current, backup.as_ref(), original.as_ref().ok())?;
    let (verb, after) = match &plan {
        Undo::Restore(b) => ("restore", b.text.as_str()),
        Undo::Remove => ("remove", ""),
        Undo::Edit(text) => ("change", text.as_str()),
    };
    let secrets = tokens_in(Some(&entry));
    if let Answer::Stop(code) = show_and_ask(req, verb, &current.text, after, &secrets)? {
        return Ok(code);
    }
    let file = req.file.display();
    match plan {
        Undo::Restore(b) => {
            file::write(&req.file, &b.text, Some(b.mode))?;
            file::remove(&backup_path)?;
            println!("restored {file} as it was before plughost connected");
        }
        Undo::Remove => {
            file::remove(&req.file)?;
            file::remove(&backup_path)?;
            println!("removed {file}: plughost had created it");
        }
        Undo::Edit(text) => {
            file::write(&req.file, &text, Some(current.mode))?;
            let kept = match backup {
                Some(_) => format!(
                    " (the copy from before plughost connected stays in {})",
                    backup_path.display()
                ),
                None => String::new(),
            };
            println!(
                "removed the entry \"{}\" from {file}; the rest of the file changed since plughost connected and stays as it is{kept}",
                req.name
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

enum Undo {
    /// Write the backup back.
    Restore(Contents),
    /// plughost created the file and nothing else is in it.
    Remove,
    /// Take out only plughost's entry.
    Edit(String),
}

fn plan_undo(
    req: &Request,
    doc: &Doc,
    current: &Contents,
    backup: Option<&Contents>,
    original: Option<&Doc>,
) -> Result<Undo, String> {
    let Some(original) = original else {
        // A backup that does not parse is not the file plughost saw.
        return Ok(Undo::Edit(doc.without_entry(&req.name, None)?));
    };
    // Nothing else changed when connecting the original again, with the
    // entry as it is now, gives the file as it is now.
    let unchanged = original.with_entry_of(&req.name, doc).as_deref() == Some(&current.text);
    let after = doc.without_entry(&req.name, Some(original))?;
    if unchanged || after == original.text() {
        return Ok(match backup {
            Some(b) => Undo::Restore(b.clone()),
            None => Undo::Remove,
        });
    }
    Ok(Undo::Edit(after))
}

/// Prints the diff and asks; `--dry-run` stops after the diff, and without
/// a terminal `--yes` is required.
fn show_and_ask(
    req: &Request,
    verb: &str,
    before: &str,
    after: &str,
    secrets: &[String],
) -> Result<Answer, String> {
    let file = req.file.display().to_string();
    println!("plughost connect {} will {verb} {file}:", req.client.id());
    let mut diff = preview::diff(&file, before, after);
    if !req.show_token {
        diff = preview::mask(&diff, secrets);
    }
    print!("{diff}");
    if req.dry_run {
        println!("nothing written (--dry-run)");
        return Ok(Answer::Stop(ExitCode::SUCCESS));
    }
    if req.yes {
        return Ok(Answer::Go);
    }
    let question = format!("{}{} {file}?", verb[..1].to_uppercase(), &verb[1..]);
    match preview::confirm(&question) {
        Ok(true) => Ok(Answer::Go),
        Ok(false) => {
            println!("nothing written");
            Ok(Answer::Stop(ExitCode::from(1)))
        }
        Err(_) => Err(format!(
            "no terminal to confirm on: run it again with --yes to {verb} {file}"
        )),
    }
}

/// The bearer tokens an entry holds (in `headers` or Codex's
/// `http_headers`), to be masked in a preview.
fn tokens_in(entry: Option<&serde_json::Value>) -> Vec<String> {
    let Some(entry) = entry else {
        return Vec::new();
    };
    ["headers", "http_headers"]
        .iter()
        .filter_map(|k| entry.get(k)?.as_object())
        .flat_map(|headers| headers.values())
        .filter_map(|v| v.as_str()?.strip_prefix("Bearer "))
        .map(|t| t.trim().to_owned())
        .filter(|t| t.len() >= 8)
        .collect()
}

/// The sentence for a file `connect` will not touch.
fn refused(file: &Path, why: &str) -> String {
    format!(
        "{} is {why}; it was left as it is: fix it, or name another file with --config",
        file.display()
    )
}
