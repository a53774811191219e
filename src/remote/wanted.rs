//! How a bridge tells its host that the server wants a new sign-in: an
//! error of its own code, which the host may answer by signing in again
//! (`host::sign_in`).

use serde_json::Value;

/// The JSON-RPC error code of a bridge's answer when the server refused
/// the sign-in it was given (`401`) or wants more scopes than it gave
/// (`403 insufficient_scope`): the host may sign in again and ask once
/// more ([`SignInWanted`] is in the error's data).
pub const SIGN_IN_WANTED: i32 = -32051;

/// What a bridge's [`SIGN_IN_WANTED`] error says, in its `data`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SignInWanted {
    /// `401` (the sign-in was refused) or `403` (more scopes are wanted).
    pub status: u16,
    /// The scopes the server's challenge names, if it names any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl SignInWanted {
    /// The request of a bridge's error (its `code` and `data`), if it is one.
    pub fn of(code: i32, data: Option<&Value>) -> Option<SignInWanted> {
        if code != SIGN_IN_WANTED {
            return None;
        }
        serde_json::from_value(data?.get("signIn")?.clone()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bridges_code_with_its_data_asks_for_a_sign_in() {
        let data = serde_json::json!({"signIn": {"status": 403, "scope": "mcp:write"}});
        assert_eq!(
            SignInWanted::of(SIGN_IN_WANTED, Some(&data)),
            Some(SignInWanted {
                status: 403,
                scope: Some("mcp:write".into())
            })
        );
        assert_eq!(SignInWanted::of(-32603, Some(&data)), None);
        assert_eq!(SignInWanted::of(SIGN_IN_WANTED, None), None);
        let other = serde_json::json!({"signIn": "yes"});
        assert_eq!(SignInWanted::of(SIGN_IN_WANTED, Some(&other)), None);
    }
}
