//! Which tools a profile admits, and whether it makes sense for the plugins
//! that are loaded.

use std::path::Path;

use super::pattern::matches;
use super::{Profile, ProfileError};

/// What a profile looks at in a tool: which plugin offers it, its name as
/// offered, and whether it counts as read-only.
#[derive(Debug, Clone, Copy)]
pub struct ToolFacts<'a> {
    /// The plugin that offers it.
    pub plugin: &'a str,
    /// The tool's name as clients see it.
    pub name: &'a str,
    /// It counts as read-only: see [`super::counts_as_read_only`].
    pub read_only: bool,
}

/// A profile checked against a catalog: it admits tools and plugins.
#[derive(Debug, Clone)]
pub struct Selection {
    profile: Profile,
}

impl Profile {
    /// Whether the profile admits `tool`.
    pub fn admits(&self, tool: &ToolFacts<'_>) -> bool {
        self.plugins
            .as_ref()
            .is_none_or(|p| p.iter().any(|p| p == tool.plugin))
            && self
                .tools
                .as_ref()
                .is_none_or(|t| t.iter().any(|pattern| matches(pattern, tool.name)))
            && (!self.read_only || tool.read_only)
    }

    /// Whether the resources and prompts of `plugin` are offered: those of
    /// the plugins `plugins` lists, or of every plugin when it lists none.
    /// (`tools` and `read_only` are about tools: a resource is read, a
    /// prompt is text.)
    pub fn admits_plugin(&self, plugin: &str) -> bool {
        self.plugins
            .as_ref()
            .is_none_or(|p| p.iter().any(|p| p == plugin))
    }

    /// Checks the profile `name` (its file `path`) against the loaded
    /// `plugins` and their `tools`: every plugin it names is loaded, every
    /// pattern matches a tool of its plugins, and it admits at least one
    /// tool.
    pub fn check(
        self,
        name: &str,
        path: &Path,
        plugins: &[&str],
        tools: &[ToolFacts<'_>],
    ) -> Result<Selection, ProfileError> {
        let (name, path) = (name.to_owned(), path.to_owned());
        if let Some(unknown) = self
            .plugins
            .iter()
            .flatten()
            .find(|p| !plugins.contains(&p.as_str()))
        {
            return Err(ProfileError::UnknownPlugin {
                name,
                path,
                plugin: unknown.clone(),
            });
        }
        let in_plugins = |t: &&ToolFacts<'_>| {
            self.plugins
                .as_ref()
                .is_none_or(|p| p.iter().any(|p| p == t.plugin))
        };
        if let Some(unmatched) = self.tools.iter().flatten().find(|pattern| {
            !tools
                .iter()
                .filter(in_plugins)
                .any(|t| matches(pattern, t.name))
        }) {
            return Err(ProfileError::UnmatchedPattern {
                name,
                path,
                pattern: unmatched.clone(),
            });
        }
        if !tools.iter().any(|t| self.admits(t)) {
            return Err(ProfileError::MatchesNothing { name, path });
        }
        Ok(Selection { profile: self })
    }
}

impl Selection {
    /// Whether the profile admits `tool`.
    pub fn admits(&self, tool: &ToolFacts<'_>) -> bool {
        self.profile.admits(tool)
    }

    /// Whether the resources and prompts of `plugin` are offered.
    pub fn admits_plugin(&self, plugin: &str) -> bool {
        self.profile.admits_plugin(plugin)
    }

    /// The profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[ToolFacts<'static>] = &[
        ToolFacts {
            plugin: "git",
            name: "git_status",
            read_only: true,
        },
        ToolFacts {
            plugin: "git",
            name: "git_commit",
            read_only: false,
        },
        ToolFacts {
            plugin: "memory",
            name: "read_graph",
            read_only: true,
        },
        ToolFacts {
            plugin: "memory",
            name: "create_entities",
            read_only: false,
        },
        ToolFacts {
            plugin: "fs",
            name: "read_file",
            read_only: true,
        },
    ];
    const PLUGINS: &[&str] = &["git", "memory", "fs"];

    fn profile(json: &str) -> Profile {
        serde_json::from_str(json).unwrap()
    }

    fn admitted(json: &str) -> Vec<&'static str> {
        let p = profile(json);
        TOOLS
            .iter()
            .filter(|t| p.admits(t))
            .map(|t| t.name)
            .collect()
    }

    #[test]
    fn each_key_narrows() {
        assert_eq!(admitted("{}").len(), TOOLS.len());
        assert_eq!(
            admitted(r#"{"plugins": ["git"]}"#),
            ["git_status", "git_commit"]
        );
        assert_eq!(
            admitted(r#"{"tools": ["read_*"]}"#),
            ["read_graph", "read_file"]
        );
        assert_eq!(
            admitted(r#"{"read_only": true}"#),
            ["git_status", "read_graph", "read_file"]
        );
        assert_eq!(
            admitted(
                r#"{"plugins": ["git", "memory"], "tools": ["git_*", "*_graph"], "read_only": true}"#
            ),
            ["git_status", "read_graph"]
        );
    }

    #[test]
    fn resources_and_prompts_follow_plugins_only() {
        let p = profile(r#"{"plugins": ["memory"], "tools": ["read_*"], "read_only": true}"#);
        assert!(p.admits_plugin("memory"));
        assert!(!p.admits_plugin("git"));
        assert!(profile(r#"{"tools": ["git_*"]}"#).admits_plugin("fs"));
    }

    #[test]
    fn checks_name_what_is_wrong() {
        let check = |json: &str| {
            profile(json)
                .check("p", Path::new("/c/p.json"), PLUGINS, TOOLS)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        assert!(check(r#"{"plugins": ["git"], "tools": ["git_*"]}"#).is_ok());
        let e = check(r#"{"plugins": ["gti"]}"#).unwrap_err();
        assert!(e.contains("plugin \"gti\", which is not loaded"), "{e}");
        // A pattern that only matches tools of plugins the profile leaves out.
        let e = check(r#"{"plugins": ["git"], "tools": ["read_*"]}"#).unwrap_err();
        assert!(e.contains("pattern \"read_*\""), "{e}");
        let e = check(r#"{"plugins": ["git"], "tools": ["git_commit"], "read_only": true}"#)
            .unwrap_err();
        assert!(e.contains("profile \"p\" matches no tool"), "{e}");
    }
}
