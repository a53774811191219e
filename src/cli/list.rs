//! `plughost list`: plugins, their tools, rejected plugins and collisions.

use std::process::ExitCode;

use plughost::approval::ApprovalStore;
use plughost::plugins::catalog::{Catalog, Collision, Plugin, Rejected};
use serde::Serialize;

use super::Cli;

/// The stable `--json` shape of `plughost list`.
#[derive(Serialize)]
pub struct Listing<'a> {
    pub plugins_dir: String,
    pub plugins: Vec<PluginEntry<'a>>,
    pub rejected: Vec<&'a Rejected>,
    pub collisions: &'a [Collision],
}

#[derive(Serialize)]
pub struct PluginEntry<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<&'a str>,
    pub dir: String,
    pub permissions: Vec<&'static str>,
    /// `automatic`, `approved`, `needs approval`, `needs re-approval: …`, or the
    /// error reading the approvals file.
    pub approval: String,
    pub tools: Vec<ToolEntry<'a>>,
}

#[derive(Serialize)]
pub struct ToolEntry<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// False when another plugin kept this tool name.
    pub offered: bool,
}

impl<'a> Listing<'a> {
    pub fn new(
        catalog: &'a Catalog,
        plugins_dir: String,
        approvals: &ApprovalStore,
    ) -> Listing<'a> {
        let loaded = approvals.load();
        Listing {
            plugins_dir,
            plugins: catalog
                .plugins()
                .map(|p| {
                    let approval = match &loaded {
                        Ok(a) => a.state(&p.manifest).label(),
                        Err(e) => format!("unknown: {e}"),
                    };
                    entry(catalog, p, approval)
                })
                .collect(),
            rejected: catalog.rejected().collect(),
            collisions: catalog.collisions(),
        }
    }
}

fn entry<'a>(catalog: &Catalog, p: &'a Plugin, approval: String) -> PluginEntry<'a> {
    let m = &p.manifest;
    PluginEntry {
        name: &m.name,
        version: &m.version,
        description: &m.description,
        author: m.author.as_deref(),
        dir: p.dir.display().to_string(),
        permissions: m.permissions.iter().map(|p| p.as_str()).collect(),
        approval,
        tools: m
            .tools
            .iter()
            .map(|t| ToolEntry {
                name: &t.name,
                description: &t.description,
                offered: catalog.offers(&m.name, &t.name),
            })
            .collect(),
    }
}

pub fn run(cli: &Cli) -> Result<ExitCode, String> {
    let host = cli.host()?;
    let catalog = host.catalog();
    let listing = Listing::new(
        &catalog,
        host.plugins_dir().display().to_string(),
        host.approvals(),
    );
    if cli.json {
        super::print_json(&listing);
        return Ok(ExitCode::SUCCESS);
    }
    print_text(&listing);
    Ok(ExitCode::SUCCESS)
}

fn print_text(l: &Listing<'_>) {
    println!(
        "{}: {} plugin{}, {} rejected",
        l.plugins_dir,
        l.plugins.len(),
        if l.plugins.len() == 1 { "" } else { "s" },
        l.rejected.len()
    );
    for p in &l.plugins {
        let perms = if p.permissions.is_empty() {
            "no permissions".to_owned()
        } else {
            p.permissions.join(", ")
        };
        println!(
            "\n{} {}  ({perms}; {})\n  {}",
            p.name, p.version, p.approval, p.description
        );
        let width = p.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for t in &p.tools {
            let skipped = if t.offered {
                ""
            } else {
                "  [skipped: name taken by another plugin]"
            };
            println!(
                "  - {:width$}  {}{skipped}",
                t.name,
                first_line(t.description)
            );
        }
    }
    if !l.rejected.is_empty() {
        println!("\nrejected:");
        for r in &l.rejected {
            for line in r.to_string().lines() {
                println!("  {line}");
            }
        }
    }
    if !l.collisions.is_empty() {
        println!("\ncollisions:");
        for c in l.collisions {
            println!("  {c}");
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}
