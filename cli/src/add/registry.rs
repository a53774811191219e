//! The MCP Registry (`plughost search TERM`, `plughost add NAME`): its API
//! (`GET /v0.1/servers?search=…`, `GET /v0.1/servers/NAME/versions/latest`),
//! read from the official registry or the one `--registry URL` (or
//! `PLUGHOST_REGISTRY`) names, and a server's `server.json` turned into what
//! `add` installs:
//!
//! - the first npm or PyPI package, at its exact version (an OCI image, an
//!   MCPB bundle, a NuGet package or a server that is only remote is named
//!   in one sentence: plughost cannot run it yet);
//! - its package arguments: a fixed `value` as it is; one without, from the
//!   arguments given after the name, in order, else its default, else asked
//!   on the terminal when required; `filepath` ones are granted like any
//!   path argument (`arguments.rs`); named ones as `--flag=value`;
//! - its environment variables: a fixed value or default, else asked when
//!   required; secret ones go to the secret store (never into the plugin
//!   folder), the others into `server.sh`.
//!
//! Runtime arguments (for `npx`, `uvx`, `docker`) are not used: plughost
//! installs the package itself.

use std::io::Read;

use serde_json::Value;

/// The official registry.
pub const OFFICIAL: &str = "https://registry.modelcontextprotocol.io";
/// The largest answer read.
const MAX_BYTES: u64 = 8 << 20;

/// The registry to read: `--registry`, else `PLUGHOST_REGISTRY`, else the official one.
pub fn base(given: Option<&str>) -> String {
    given
        .map(str::to_owned)
        .or_else(|| {
            std::env::var("PLUGHOST_REGISTRY")
                .ok()
                .filter(|v| !v.is_empty())
        })
        .unwrap_or_else(|| OFFICIAL.to_owned())
        .trim_end_matches('/')
        .to_owned()
}

/// Whether `spec` names a registry server (`io.github.owner/server`).
pub fn is_name(spec: &str) -> bool {
    let Some((ns, name)) = spec.split_once('/') else {
        return false;
    };
    !spec.contains(':')
        && !ns.is_empty()
        && !name.is_empty()
        && !name.contains('/')
        && ns.contains('.')
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c))
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// GET `url` as JSON.
fn get(url: &str) -> Result<Value, String> {
    let mut answer = ureq::get(url)
        .header("Accept", "application/json")
        .call()
        .map_err(|e| match e {
            ureq::Error::StatusCode(404) => format!("{url}: not found (404)"),
            e => format!("cannot read {url}: {e}"),
        })?;
    let mut text = String::new();
    answer
        .body_mut()
        .as_reader()
        .take(MAX_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read {url}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{url} did not answer JSON: {e}"))
}

/// Percent-encodes one path segment.
fn segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// What the server's name holds (`filesystem`, `github`).
    term: String,
    /// The MCP Registry to search (default: the official one, or
    /// PLUGHOST_REGISTRY).
    #[arg(long, value_name = "URL")]
    registry: Option<String>,
}

/// `plughost search TERM`: the registry's servers whose name holds TERM,
/// each with how it is published and whether `add` can install it.
pub fn run_search(args: &SearchArgs) -> Result<std::process::ExitCode, String> {
    let base = base(args.registry.as_deref());
    let found = search(&base, &args.term)?;
    if found.is_empty() {
        crate::terminal::say!("no server in {base} has \"{}\" in its name", args.term);
    }
    for f in &found {
        let installable = f.kinds.iter().any(|k| k == "npm" || k == "pypi");
        crate::terminal::say!(
            "{}  {}  [{}]{}\n  {}",
            f.name,
            f.version,
            f.kinds.join(", "),
            if installable {
                ""
            } else {
                "  (plughost cannot run it yet)"
            },
            crate::terminal::line(&f.description)
        );
    }
    if found
        .iter()
        .any(|f| f.kinds.iter().any(|k| k == "npm" || k == "pypi"))
    {
        crate::terminal::say!("\nadd one with: plughost add NAME [ARGS…]");
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// One server found by a search.
pub struct Found {
    pub name: String,
    pub version: String,
    pub description: String,
    /// `npm`, `pypi`, `oci`…, `remote`.
    pub kinds: Vec<String>,
}

/// The latest version of each server whose name holds `term`.
pub fn search(base: &str, term: &str) -> Result<Vec<Found>, String> {
    let url = format!(
        "{base}/v0.1/servers?search={}&version=latest&limit=50",
        segment(term)
    );
    let list = get(&url)?;
    let servers = list["servers"]
        .as_array()
        .ok_or_else(|| format!("{url} answered no \"servers\" list"))?;
    Ok(servers
        .iter()
        .filter_map(|entry| {
            let s = &entry["server"];
            let mut kinds: Vec<String> = s["packages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["registryType"].as_str().map(str::to_owned))
                .collect();
            if s["remotes"].as_array().is_some_and(|r| !r.is_empty()) {
                kinds.push("remote".into());
            }
            Some(Found {
                name: s["name"].as_str()?.to_owned(),
                version: s["version"].as_str().unwrap_or("?").to_owned(),
                description: s["description"].as_str().unwrap_or("").to_owned(),
                kinds,
            })
        })
        .collect())
}

/// A server published as a remote one alone (no npm or PyPI package): the
/// URL of its streamable HTTP endpoint, or why it cannot be added (only
/// SSE, a URL with variables, headers it requires). `None` when it has a
/// package to install.
pub fn remote(server: &Value) -> Option<Result<String, String>> {
    let name = server["name"].as_str().unwrap_or("the server");
    let installable = server["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|p| matches!(p["registryType"].as_str(), Some("npm" | "pypi")));
    let remotes = server["remotes"].as_array().filter(|r| !r.is_empty())?;
    if installable {
        return None;
    }
    let Some(remote) = remotes
        .iter()
        .find(|r| r["type"].as_str() == Some("streamable-http"))
    else {
        let kinds: Vec<&str> = remotes.iter().filter_map(|r| r["type"].as_str()).collect();
        return Some(Err(format!(
            "{name} is a remote server over {} only; plughost speaks streamable HTTP to remote servers",
            kinds.join(", ")
        )));
    };
    let url = remote["url"].as_str().unwrap_or_default();
    if url.contains('{') {
        return Some(Err(format!(
            "{name} is the remote server {url}, whose URL has variables to fill in: add it with the URL you were given, plughost add https://…"
        )));
    }
    let required: Vec<&str> = remote["headers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| h["isRequired"].as_bool().unwrap_or(false))
        .filter_map(|h| h["name"].as_str())
        .collect();
    if !required.is_empty() {
        return Some(Err(format!(
            "{name} is the remote server {url}, which needs the header {} on every request; plughost cannot send a remote server headers of yours yet",
            required.join(", ")
        )));
    }
    Some(Ok(url.to_owned()))
}

/// The `server.json` of `name`: its latest version, or `version`.
pub fn server(base: &str, name: &str, version: Option<&str>) -> Result<Value, String> {
    let url = format!(
        "{base}/v0.1/servers/{}/versions/{}",
        segment(name),
        segment(version.unwrap_or("latest"))
    );
    let answer = get(&url).map_err(|e| match (e.ends_with("(404)"), version) {
        (true, None) => format!(
            "the registry {base} has no server named {name}; plughost search TERM finds one"
        ),
        (true, Some(v)) => format!("the registry {base} has no version {v} of {name}"),
        (false, _) => e,
    })?;
    let server = answer["server"].clone();
    if !server.is_object() {
        return Err(format!("{url} answered no \"server\""));
    }
    Ok(server)
}

/// What `add` installs for a registry server.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// `npm:NAME@VERSION` or `pypi:NAME==VERSION`.
    pub package: String,
    /// The server's arguments, before paths are resolved.
    pub args: Vec<String>,
    /// Variables set in `server.sh`: (name, value).
    pub exports: Vec<(String, String)>,
    /// Secret variables: (name, value asked now, or `None` when the store
    /// has it already or it is optional and was not given).
    pub secrets: Vec<(String, Option<String>)>,
}

/// How a value the server needs is obtained when neither given nor fixed.
pub trait Asker {
    /// Asks for `what` (`description` says why); `None`: not answered.
    fn ask(
        &mut self,
        what: &str,
        description: &str,
        secret: bool,
    ) -> Result<Option<String>, String>;
    /// Whether the store has the secret `name` already.
    fn has_secret(&self, name: &str) -> bool;
}

/// The package `server` is installed from (`npm:NAME@VERSION` or
/// `pypi:NAME==VERSION`) and its entry; what plughost cannot run is said in
/// one sentence.
pub fn package(server: &Value) -> Result<(String, &Value), String> {
    let name = server["name"].as_str().unwrap_or("the server");
    let packages = server["packages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let Some(package) = packages
        .iter()
        .find(|p| matches!(p["registryType"].as_str(), Some("npm" | "pypi")))
    else {
        let kinds: Vec<&str> = packages
            .iter()
            .filter_map(|p| p["registryType"].as_str())
            .collect();
        return Err(match (kinds.is_empty(), server["remotes"].as_array()) {
            (true, Some(r)) if !r.is_empty() => match remote(server) {
                Some(Err(why)) => why,
                _ => format!("{name} is a remote server"),
            },
            (true, _) => format!("{name} names no package to install"),
            (false, _) => format!(
                "{name} is published as {} only; plughost installs npm and PyPI packages and cannot run {} yet",
                kinds.join(", "),
                if kinds.len() == 1 { "it" } else { "them" }
            ),
        });
    };
    if let Some(t) = package["transport"]["type"].as_str()
        && t != "stdio"
    {
        return Err(format!(
            "{name}'s package speaks MCP over {t}; plughost runs packages that speak it on stdio"
        ));
    }
    let identifier = package["identifier"]
        .as_str()
        .ok_or_else(|| format!("{name}'s package has no identifier"))?;
    let version = package["version"]
        .as_str()
        .filter(|v| !v.is_empty() && *v != "latest")
        .ok_or_else(|| format!("{name}'s package names no exact version"))?;
    let package_spec = match package["registryType"].as_str() {
        Some("npm") => format!("npm:{identifier}@{version}"),
        _ => format!("pypi:{identifier}=={version}"),
    };
    Ok((package_spec, package))
}

/// The plan for `server`, with `given` as the values of its positional
/// arguments that have none.
pub fn plan(server: &Value, given: &[String], asker: &mut dyn Asker) -> Result<Plan, String> {
    let name = server["name"].as_str().unwrap_or("the server");
    let (package_spec, package) = package(server)?;
    let mut plan = Plan {
        package: package_spec,
        ..Plan::default()
    };
    let mut given = given.iter();
    for arg in package["packageArguments"].as_array().into_iter().flatten() {
        let label = arg["valueHint"]
            .as_str()
            .or(arg["name"].as_str())
            .unwrap_or("argument");
        let description = arg["description"].as_str().unwrap_or("");
        let required = arg["isRequired"].as_bool().unwrap_or(false);
        let secret = arg["isSecret"].as_bool().unwrap_or(false);
        let value = match (arg["value"].as_str(), arg["type"].as_str()) {
            (Some(v), _) => Some(v.to_owned()),
            (None, Some("positional")) => match given.next() {
                Some(v) => Some(v.clone()),
                None => arg["default"].as_str().map(str::to_owned),
            },
            (None, _) => arg["default"].as_str().map(str::to_owned),
        };
        let value = match value {
            Some(v) => Some(v),
            None if required => Some(asker.ask(label, description, secret)?.ok_or_else(|| {
                format!("{name} needs its argument {label} ({description}); give it after the name: plughost add {name} VALUE")
            })?),
            None => None,
        };
        let Some(value) = value else { continue };
        match (arg["type"].as_str(), arg["name"].as_str()) {
            (Some("named"), Some(flag)) => plan.args.push(format!("{flag}={value}")),
            _ => plan.args.push(value),
        }
    }
    // Arguments given beyond those the server lists go on as given.
    plan.args.extend(given.cloned());
    for var in package["environmentVariables"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let Some(var_name) = var["name"].as_str() else {
            continue;
        };
        let description = var["description"].as_str().unwrap_or("");
        let required = var["isRequired"].as_bool().unwrap_or(false);
        if var["isSecret"].as_bool().unwrap_or(false) {
            if asker.has_secret(var_name) {
                plan.secrets.push((var_name.to_owned(), None));
                continue;
            }
            let asked = asker.ask(var_name, description, true)?;
            if asked.is_none() && required {
                return Err(format!(
                    "{name} needs the secret {var_name} ({description}); set it first: plughost secret set {var_name}"
                ));
            }
            if asked.is_some() || required {
                plan.secrets.push((var_name.to_owned(), asked));
            }
            continue;
        }
        let value = var["value"]
            .as_str()
            .or(var["default"].as_str())
            .map(str::to_owned);
        let value = match value {
            Some(v) => Some(v),
            None if required => Some(asker.ask(var_name, description, false)?.ok_or_else(|| {
                format!("{name} needs the variable {var_name} ({description}); run add on a terminal to be asked for it")
            })?),
            None => None,
        };
        if let Some(v) = value {
            plan.exports.push((var_name.to_owned(), v));
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Scripted(Vec<Option<String>>, Vec<String>);

    impl Asker for Scripted {
        fn ask(&mut self, what: &str, _: &str, _: bool) -> Result<Option<String>, String> {
            self.1.push(what.to_owned());
            Ok(if self.0.is_empty() {
                None
            } else {
                self.0.remove(0)
            })
        }
        fn has_secret(&self, _: &str) -> bool {
            false
        }
    }

    fn server() -> Value {
        json!({
            "name": "io.github.example/notes",
            "packages": [
                {"registryType": "oci", "identifier": "ghcr.io/x/y", "version": "1"},
                {"registryType": "npm", "identifier": "@example/notes", "version": "1.2.3",
                 "transport": {"type": "stdio"},
                 "packageArguments": [
                    {"type": "positional", "valueHint": "notes_dir", "isRequired": true, "format": "filepath"},
                    {"type": "named", "name": "--mode", "default": "ro"},
                    {"type": "positional", "value": "--stdio"}
                 ],
                 "environmentVariables": [
                    {"name": "NOTES_TOKEN", "isRequired": true, "isSecret": true},
                    {"name": "NOTES_REGION", "default": "eu"},
                    {"name": "NOTES_OPTIONAL"}
                 ]}
            ]
        })
    }

    #[test]
    fn a_server_json_becomes_a_package_its_arguments_and_variables() {
        let mut asker = Scripted(vec![Some("tok".into())], vec![]);
        let plan = plan(&server(), &["~/notes".into()], &mut asker).unwrap();
        assert_eq!(plan.package, "npm:@example/notes@1.2.3");
        assert_eq!(plan.args, ["~/notes", "--mode=ro", "--stdio"]);
        assert_eq!(plan.exports, [("NOTES_REGION".to_owned(), "eu".to_owned())]);
        assert_eq!(
            plan.secrets,
            [("NOTES_TOKEN".to_owned(), Some("tok".to_owned()))]
        );
        assert_eq!(asker.1, ["NOTES_TOKEN"]);
    }

    #[test]
    fn what_cannot_be_answered_or_run_is_said() {
        let mut asker = Scripted(vec![], vec![]);
        let e = plan(&server(), &[], &mut asker).unwrap_err();
        assert!(e.contains("needs its argument notes_dir"), "{e}");
        let url = "https://r.example/mcp";
        let remote_only =
            json!({"name": "com.example/r", "remotes": [{"type": "streamable-http", "url": url}]});
        assert_eq!(remote(&remote_only), Some(Ok(url.to_owned())));
        let sse = json!({"name": "com.example/r", "remotes": [{"type": "sse", "url": url}]});
        let e = remote(&sse).unwrap().unwrap_err();
        assert!(e.contains("over sse only"), "{e}");
        let e = plan(&sse, &[], &mut asker).unwrap_err();
        assert!(e.contains("over sse only"), "{e}");
        let templated = json!({"name": "com.example/r", "remotes": [{"type": "streamable-http", "url": "https://{tenant}.r.example/mcp"}]});
        assert!(
            remote(&templated)
                .unwrap()
                .unwrap_err()
                .contains("variables")
        );
        let headed = json!({"name": "com.example/r", "remotes": [{"type": "streamable-http", "url": url,
            "headers": [{"name": "X-Api-Key", "isRequired": true}]}]});
        assert!(remote(&headed).unwrap().unwrap_err().contains("X-Api-Key"));
        assert_eq!(remote(&server()), None);
        let oci = json!({"name": "com.example/o", "packages": [{"registryType": "oci", "identifier": "x", "version": "1"}]});
        let e = plan(&oci, &[], &mut asker).unwrap_err();
        assert!(e.contains("published as oci only"), "{e}");
    }

    #[test]
    fn registry_names_are_told_from_packages_and_commands() {
        assert!(is_name("io.github.owner/server"));
        assert!(!is_name("npm:@scope/pkg"));
        assert!(!is_name("@scope/pkg"));
        assert!(!is_name("owner/server"));
        assert!(!is_name("io.x/a/b"));
    }
}
