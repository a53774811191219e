//! Signing in to remote servers: the tokens of a plugin's sign-in are kept
//! in the secret store under a name of plughost's own
//! ([`sign_in_secret`]), bound to that plugin, so no plugin's environment
//! ever lists it. Only the bridge of that plugin's server is given the
//! access token ([`Inner::bearer_for`]); an expired one is refreshed first,
//! and the refreshed tokens are stored again. A server that refuses the
//! sign-in, or wants more scopes, in the middle of a call gets it renewed
//! once by that call ([`Inner::renew_sign_in`]).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::approval::ApproveError;
use crate::error::{CallError, Refusal};
use crate::plugins::catalog::Plugin;
use crate::remote::{
    self,
    oauth::{self, ClientIdentity, OAuthError, Tokens},
};
use crate::run::executor::RunError;
use crate::secrets::{SecretError, SecretStore};

use super::call::Failure;
use super::renewal::Renewals;
use super::{Inner, PluginHost};

/// How long before its expiry an access token is refreshed.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// Why a sign-in, or a sign-out, failed.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// No such plugin, or its folder was rejected.
    #[error(transparent)]
    Plugin(#[from] ApproveError),
    /// The plugin is not a remote server.
    #[error(
        "plugin \"{0}\" runs on this machine, not on a remote server: there is nothing to sign in to"
    )]
    NotRemote(String),
    /// The sign-in itself failed.
    #[error("signing in to plugin \"{plugin}\": {source}")]
    OAuth {
        /// The plugin.
        plugin: String,
        /// What failed.
        source: OAuthError,
    },
    /// The secret store could not keep or give the tokens.
    #[error(transparent)]
    Store(#[from] SecretError),
}

impl PluginHost {
    /// Signs in to the remote server of plugin `name` with OAuth 2.1
    /// ([`oauth::sign_in`]: `open` is given the URL to approve in), and
    /// keeps the tokens in the secret store, for this plugin alone. A
    /// running bridge of the server is replaced at the next call, in this
    /// process or another (the sign-in is part of what its worker runs
    /// under).
    pub async fn sign_in(
        &self,
        name: &str,
        client: &ClientIdentity,
        open: impl FnOnce(&str),
    ) -> Result<(), SignInError> {
        let plugin = self.loaded(name)?;
        let Some(url) = plugin.manifest.remote.clone() else {
            return Err(SignInError::NotRemote(name.to_owned()));
        };
        let tokens =
            oauth::sign_in(&url, client, open)
                .await
                .map_err(|source| SignInError::OAuth {
                    plugin: name.to_owned(),
                    source,
                })?;
        keep(&self.inner, &plugin, &tokens)?;
        Ok(())
    }

    /// Forgets the sign-in of plugin `name` (its tokens leave the secret
    /// store; the authorization server is not told). `false`: there was
    /// none. A running bridge of its server is replaced at the next call.
    pub fn sign_out(&self, name: &str) -> Result<bool, SignInError> {
        Ok(SecretStore::new(&self.inner.config.state_dir).remove(&sign_in_secret(name))?)
    }

    /// Whether plugin `name` has a sign-in kept.
    pub fn signed_in(&self, name: &str) -> Result<bool, SignInError> {
        Ok(SecretStore::new(&self.inner.config.state_dir).has(&sign_in_secret(name))?)
    }
}

impl Inner {
    /// The access token the bridge of `plugin` sends, refreshed first when
    /// it expires within a minute (or the last quarter of its lifetime);
    /// `None` when it has no sign-in. A refresh that fails is an error
    /// naming what to do.
    pub(super) fn bearer_for(&self, plugin: &Plugin) -> Result<Option<String>, String> {
        let Some(tokens) = self.kept(plugin)? else {
            return Ok(None);
        };
        if !tokens.expires_within(REFRESH_MARGIN) {
            return Ok(Some(tokens.access_token));
        }
        // A thread of its own with a runtime of its own (this runs inside
        // the host's runtime, which a nested one may not block), and the
        // worker thread it waits on handed over: the gateway's other calls
        // go on while an authorization server is slow (each exchange has a
        // deadline, fetch::EXCHANGE_TIMEOUT).
        let refresh = || {
            std::thread::scope(|s| {
                s.spawn(|| {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| OAuthError::Unreachable(e.to_string()))?
                        .block_on(oauth::refresh(&tokens))
                })
                .join()
                .unwrap_or_else(|_| Err(OAuthError::Token("the refresh panicked".into())))
            })
        };
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let fresh = match multi_thread {
            true => tokio::task::block_in_place(refresh),
            false => refresh(),
        }
        .map_err(|e| format!("its sign-in expired and could not be refreshed: {e}"))?;
        keep(self, plugin, &fresh).map_err(|e| e.to_string())?;
        Ok(Some(fresh.access_token))
    }
}

impl Inner {
    /// The sign-in kept for `plugin`, if it has one; an error when it is
    /// damaged, or for another server than the plugin's.
    fn kept(&self, plugin: &Plugin) -> Result<Option<Tokens>, String> {
        let store = SecretStore::new(&self.config.state_dir);
        let name = sign_in_secret(plugin.name());
        let kept = store
            .for_plugin(plugin.name(), [name.as_str()])
            .map_err(|e| e.to_string())?;
        let Some((_, text)) = kept.into_iter().next() else {
            return Ok(None);
        };
        let tokens: Tokens = serde_json::from_str(&text).map_err(|e| {
            format!("its sign-in in the secret store is damaged ({e}): sign in again")
        })?;
        if plugin.manifest.remote.as_deref() != Some(tokens.server.as_str()) {
            return Err(format!(
                "its sign-in is for {}, and its server is now {}: sign in again",
                tokens.server,
                plugin.manifest.remote.as_deref().unwrap_or("none")
            ));
        }
        Ok(Some(tokens))
    }

    /// Notes the access token a call's attempt starts with, to tell later
    /// whether another call renewed the sign-in meanwhile.
    pub(super) fn sign_in_seen(&self, plugin: &Plugin, renewals: &mut Renewals) {
        if plugin.manifest.remote.is_some() {
            renewals.seen = self.kept(plugin).ok().flatten().map(|t| t.access_token);
        }
    }

    /// When `failure` is the bridge of remote `plugin` saying that the
    /// server wants a new sign-in ([`remote::SIGN_IN_WANTED`]), renews it:
    /// `Ok` when the call should ask once more, else the call's failure
    /// (`failure` itself, when it is not that or nothing was tried):
    /// - refused (`401`): a refresh first; then, with an opener
    ///   ([`crate::PluginHostBuilder::sign_in_opener`]), a sign-in in the
    ///   browser, discovered anew (the server may have moved);
    /// - more scopes wanted (`403`, step-up): with an opener, a sign-in for
    ///   the scopes asked before and those wanted; never for scopes already
    ///   asked for, which a new sign-in could not give.
    ///
    /// Each at most once per call (`renewals`), so a server that is never
    /// satisfied ends the call, refused as [`Refusal::SignInNeeded`] with
    /// the server's refusal. A renewal made meanwhile (another call's, or a
    /// refresh as the bridge started) is tried as it is, once. One sign-in
    /// per plugin at a time: the calls that want one wait for it.
    pub(super) async fn renew_sign_in(
        &self,
        plugin: &Plugin,
        failure: Failure,
        renewals: &mut Renewals,
        stop: &mut Pin<&mut impl Future<Output = ()>>,
    ) -> Result<(), Failure> {
        let Failure::Run(RunError::ServerError {
            code,
            data,
            message,
        }) = &failure
        else {
            return Err(failure);
        };
        let Some(wanted) = remote::SignInWanted::of(*code, data.as_ref()) else {
            return Err(failure);
        };
        if plugin.manifest.remote.is_none() {
            return Err(failure);
        }
        let lock = self
            .signing_in
            .lock()
            .expect("sign-in locks")
            .entry(plugin.name().to_owned())
            .or_default()
            .clone();
        let _one = Self::unless_stopped(lock.lock(), stop).await?;
        let needed = |reason: String| {
            Failure::Refused(CallError::NotAllowed {
                refusal: Refusal::SignInNeeded {
                    plugin: plugin.name().to_owned(),
                    reason,
                },
            })
        };
        let Some(tokens) = self.kept(plugin).map_err(needed)? else {
            return Err(failure);
        };
        // Renewed meanwhile (by another call, or refreshed as the bridge
        // started): tried as it is, once.
        if renewals.seen.as_deref() != Some(tokens.access_token.as_str()) && !renewals.adopted {
            renewals.adopted = true;
            return Ok(());
        }
        let opener = match renewals.quiet {
            true => None,
            false => self.config.sign_in_opener.clone(),
        };
        let open = |url: &str| {
            if let Some(open) = &opener {
                open(plugin.name(), url);
            }
        };
        // A challenge's scopes, as the bridge filtered them; the server
        // could also have written this error itself.
        let more = wanted.scope.as_deref().and_then(oauth::clean_scope);
        let renewed = match (wanted.status, more) {
            (401, _) if !renewals.refreshed && tokens.refresh_token.is_some() => {
                renewals.refreshed = true;
                match Self::unless_stopped(oauth::refresh(&tokens), stop).await? {
                    Ok(fresh) => Ok(fresh),
                    Err(_) if opener.is_some() && !renewals.signed_in => {
                        renewals.signed_in = true;
                        let again = oauth::sign_in_again(&tokens, None, open);
                        Self::unless_stopped(again, stop).await?
                    }
                    Err(e) => Err(e),
                }
            }
            (401, _) if opener.is_some() && !renewals.signed_in => {
                renewals.signed_in = true;
                Self::unless_stopped(oauth::sign_in_again(&tokens, None, open), stop).await?
            }
            (403, Some(more))
                if opener.is_some()
                    && !renewals.signed_in
                    && oauth::asks_for_more(tokens.requested_scope.as_deref(), &more) =>
            {
                renewals.signed_in = true;
                let again = oauth::sign_in_again(&tokens, Some(&more), open);
                Self::unless_stopped(again, stop).await?
            }
            // Nothing more to try: the server's refusal, as a sign-in the
            // user must renew.
            _ => return Err(needed(message.clone())),
        };
        let fresh = renewed.map_err(|e| needed(e.to_string()))?;
        keep(self, plugin, &fresh).map_err(|e| needed(e.to_string()))?;
        Ok(())
    }
}

/// Keeps `tokens` in the secret store, for `plugin` alone.
fn keep(inner: &Inner, plugin: &Plugin, tokens: &Tokens) -> Result<(), SecretError> {
    let text = serde_json::to_string(tokens).expect("tokens serialize");
    SecretStore::new(&inner.config.state_dir)
        .set(
            &sign_in_secret(plugin.name()),
            &text,
            &[plugin.name().to_owned()],
        )
        .map(|_| ())
}

/// The secret a plugin's sign-in is kept under: `PLUGHOST_SIGN_IN_` and
/// the plugin's name, each byte but a letter or digit as `_XX` (so that
/// two names never share one).
pub(crate) fn sign_in_secret(plugin: &str) -> String {
    let mut name = String::from(crate::secrets::SIGN_IN_PREFIX);
    for b in plugin.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => name.push(b as char),
            _ => name.push_str(&format!("_{b:02X}")),
        }
    }
    name
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_plugin_has_a_secret_of_its_own() {
        assert_eq!(super::sign_in_secret("linear"), "PLUGHOST_SIGN_IN_linear");
        assert_ne!(super::sign_in_secret("a-b"), super::sign_in_secret("a_b"));
    }
}
