//! What `plughost add` installs from: `npm:PKG[@VERSION]` or
//! `pypi:PKG[==VERSION]`, and the manifest's `source` that records it
//! (`npm:PKG@VERSION`, `pypi:PKG==VERSION`) for `plughost update`.

use std::fmt;

/// A package ecosystem plughost installs servers from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecosystem {
    Npm,
    Pypi,
}

/// A package, with the version asked for (or installed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    pub ecosystem: Ecosystem,
    pub name: String,
    pub version: Option<String>,
}

impl Package {
    /// `npm:@scope/name@1.2.3`, `npm:name`, `pypi:name==1.2.3`, `pypi:name`.
    pub fn parse(spec: &str) -> Result<Package, String> {
        let usage = || {
            format!(
                "\"{spec}\" is not a package: write npm:PACKAGE[@VERSION] or pypi:PACKAGE[==VERSION] \
                 (or plughost add --name NAME -- COMMAND ARGS… for a server installed already)"
            )
        };
        let (ecosystem, rest) = if let Some(rest) = spec.strip_prefix("npm:") {
            (Ecosystem::Npm, rest)
        } else if let Some(rest) = spec.strip_prefix("pypi:") {
            (Ecosystem::Pypi, rest)
        } else {
            return Err(usage());
        };
        let (name, version) = match ecosystem {
            // A scope's `@` comes first: the version's is any later one.
            Ecosystem::Npm => match rest.get(1..).and_then(|r| r.find('@')) {
                Some(at) => (&rest[..at + 1], Some(&rest[at + 2..])),
                None => (rest, None),
            },
            Ecosystem::Pypi => match rest.split_once("==") {
                Some((n, v)) => (n, Some(v)),
                None => (rest, None),
            },
        };
        let name_ok = !name.is_empty()
            && name.chars().all(|c| {
                c.is_ascii_alphanumeric()
                    || "-_.".contains(c)
                    || (ecosystem == Ecosystem::Npm && "@/".contains(c))
            });
        let version_ok = version.is_none_or(|v| {
            !v.is_empty()
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c))
        });
        if !name_ok || !version_ok {
            return Err(usage());
        }
        Ok(Package {
            ecosystem,
            name: name.to_owned(),
            version: version.map(str::to_owned),
        })
    }

    /// What the ecosystem's installer is given: `name@version`, `name==version`.
    pub fn requirement(&self) -> String {
        match (&self.version, self.ecosystem) {
            (None, _) => self.name.clone(),
            (Some(v), Ecosystem::Npm) => format!("{}@{v}", self.name),
            (Some(v), Ecosystem::Pypi) => format!("{}=={v}", self.name),
        }
    }

    /// The plugin name it gets unless `--name` is given: the package's own
    /// name without its scope and the usual `mcp-server-`, `server-` and
    /// `-mcp` decorations (`@modelcontextprotocol/server-memory` → `memory`,
    /// `mcp-server-time` → `time`).
    pub fn default_plugin_name(&self) -> String {
        let mut base = self.name.rsplit('/').next().unwrap_or(&self.name);
        // `@playwright/mcp`: the name says only what it is; the scope says whose.
        if ["mcp", "server", "mcp-server"].contains(&base.to_ascii_lowercase().as_str())
            && let Some(scope) = self
                .name
                .strip_prefix('@')
                .and_then(|n| n.split('/').next())
        {
            base = scope;
        }
        let lower = base.to_ascii_lowercase().replace(['_', '.'], "-");
        let mut short = lower.as_str();
        for prefix in ["mcp-server-", "server-", "mcp-"] {
            if let Some(rest) = short.strip_prefix(prefix).filter(|r| !r.is_empty()) {
                short = rest;
                break;
            }
        }
        for suffix in ["-mcp-server", "-server", "-mcp"] {
            if let Some(rest) = short.strip_suffix(suffix).filter(|r| !r.is_empty()) {
                short = rest;
                break;
            }
        }
        short
            .chars()
            .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
            .collect::<String>()
            .trim_matches('-')
            .to_owned()
    }

    /// The same package at `version`.
    pub fn at(&self, version: &str) -> Package {
        Package {
            version: Some(version.to_owned()),
            ..self.clone()
        }
    }
}

/// As the manifest's `source` records it.
impl fmt::Display for Package {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self.ecosystem {
            Ecosystem::Npm => "npm",
            Ecosystem::Pypi => "pypi",
        };
        write!(f, "{prefix}:{}", self.requirement())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_name_their_plugin() {
        let p = Package::parse("npm:@modelcontextprotocol/server-memory@2026.8.31").unwrap();
        assert_eq!(p.name, "@modelcontextprotocol/server-memory");
        assert_eq!(p.version.as_deref(), Some("2026.8.31"));
        assert_eq!(p.default_plugin_name(), "memory");
        assert_eq!(
            p.to_string(),
            "npm:@modelcontextprotocol/server-memory@2026.8.31"
        );
        let p = Package::parse("npm:@modelcontextprotocol/server-memory").unwrap();
        assert_eq!(
            (p.name.as_str(), p.version),
            ("@modelcontextprotocol/server-memory", None)
        );
        let p = Package::parse("pypi:mcp-server-time==2026.10.19").unwrap();
        assert_eq!(p.default_plugin_name(), "time");
        assert_eq!(p.to_string(), "pypi:mcp-server-time==2026.10.19");
        assert_eq!(
            Package::parse("pypi:weather_mcp")
                .unwrap()
                .default_plugin_name(),
            "weather"
        );
        assert_eq!(
            Package::parse("npm:mcp-server")
                .unwrap()
                .default_plugin_name(),
            "server"
        );
        assert_eq!(
            Package::parse("npm:@playwright/mcp@0.0.83")
                .unwrap()
                .default_plugin_name(),
            "playwright"
        );
        for bad in [
            "memory",
            "npm:",
            "pypi:a==",
            "npm:a b",
            "cargo:x",
            "pypi:x==1;rm",
        ] {
            assert!(Package::parse(bad).is_err(), "{bad}");
        }
    }
}
