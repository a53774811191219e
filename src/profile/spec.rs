//! The profile file's format: a JSON object of three optional keys, unknown
//! keys refused (a misspelt key would otherwise widen the profile silently).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ProfileError;

/// A profile as its file says it. Each key narrows what is offered; a
/// missing key does not narrow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Profile {
    /// A JSON Schema reference for editors; ignored.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Only the tools of these plugins (by plugin name). It also decides
    /// whose resources and prompts are offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Vec<String>>,
    /// Only tools whose name matches one of these patterns (`*` any run of
    /// characters, `?` one), e.g. `git_*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Only tools that count as read-only: their own `readOnlyHint` is true
    /// and their plugin has no write, network or `shell:exec` grant.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

impl Profile {
    /// Reads the profile `name` from the JSON `text` of its file `path`
    /// (named in errors).
    pub fn parse(name: &str, path: &Path, text: &str) -> Result<Profile, ProfileError> {
        let invalid = |problem: String| ProfileError::Invalid {
            name: name.to_owned(),
            path: path.to_owned(),
            problem,
        };
        // serde would also take a struct from a JSON array.
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        if !value.is_object() {
            return Err(invalid(
                "a profile is a JSON object: {\"plugins\": [...], \"tools\": [...], \"read_only\": false}"
                    .to_owned(),
            ));
        }
        let profile: Profile = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        for plugin in profile.plugins.iter().flatten() {
            if plugin.is_empty() {
                return Err(invalid("a plugin name in \"plugins\" is empty".to_owned()));
            }
        }
        for pattern in profile.tools.iter().flatten() {
            if pattern.is_empty() {
                return Err(invalid("a pattern in \"tools\" is empty".to_owned()));
            }
        }
        Ok(profile)
    }

    /// The JSON Schema of the file.
    pub fn schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Profile)).expect("a schema serializes")
    }
}

/// Whether `name` can be a profile's: a plain file name of letters, digits,
/// `-` and `_`, at most 64 characters.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Profile, ProfileError> {
        Profile::parse("p", Path::new("/c/profiles/p.json"), text)
    }

    #[test]
    fn every_key_is_optional() {
        assert_eq!(parse("{}").unwrap(), Profile::default());
        let p = parse(r#"{"plugins": ["git"], "tools": ["git_*"], "read_only": true}"#).unwrap();
        assert_eq!(p.plugins.as_deref(), Some(&["git".to_owned()][..]));
        assert_eq!(p.tools.as_deref(), Some(&["git_*".to_owned()][..]));
        assert!(p.read_only);
    }

    #[test]
    fn malformed_files_are_errors_that_name_the_profile() {
        for (text, expected) in [
            ("{", "EOF"),
            (r#"{"plugin": ["git"]}"#, "unknown field `plugin`"),
            (r#"{"tools": "git_*"}"#, "invalid type"),
            (r#"{"tools": [""]}"#, "empty"),
            (r#"{"read_only": "yes"}"#, "invalid type"),
            ("[]", "a profile is a JSON object"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains("profile \"p\""), "{e}");
            assert!(e.contains(expected), "{text}: {e}");
        }
    }

    #[test]
    fn names_are_plain_file_names() {
        assert!(valid_name("coding"));
        assert!(valid_name("read-only_2"));
        for bad in ["", "../x", "a/b", "a.json", "a b", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
