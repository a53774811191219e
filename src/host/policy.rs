//! Optional call policy, enforced where a call is admitted, before anything
//! is spawned: a per-plugin rate limit (calls per minute, sliding window)
//! and a per-session action budget (calls per `session_id`). A refusal is
//! `not_allowed` with the reason.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::Refusal;

/// The limits; `None` means unlimited.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Calls per minute allowed for every plugin, unless overridden.
    pub rate_per_minute: Option<u32>,
    /// Per-plugin overrides of `rate_per_minute`.
    pub plugin_rates: BTreeMap<String, u32>,
    /// Calls allowed per session (calls without a session id are not counted).
    pub session_budget: Option<u32>,
}

const WINDOW: Duration = Duration::from_secs(60);

/// The counters behind a [`Policy`].
#[derive(Debug, Default)]
pub(crate) struct PolicyState {
    recent: Mutex<HashMap<String, VecDeque<Instant>>>,
    spent: Mutex<HashMap<String, u32>>,
}

impl Policy {
    /// Counts a call of `plugin` in `session`, or says why it is refused.
    /// A refused call is not counted.
    pub(crate) fn admit(
        &self,
        state: &PolicyState,
        plugin: &str,
        session: Option<&str>,
    ) -> Result<(), Refusal> {
        if let (Some(budget), Some(session)) = (self.session_budget, session) {
            let spent = state
                .spent
                .lock()
                .expect("policy lock")
                .get(session)
                .copied()
                .unwrap_or(0);
            if spent >= budget {
                return Err(Refusal::BudgetSpent {
                    session: session.to_owned(),
                    budget,
                });
            }
        }
        if let Some(limit) = self
            .plugin_rates
            .get(plugin)
            .copied()
            .or(self.rate_per_minute)
        {
            let now = Instant::now();
            let mut recent = state.recent.lock().expect("policy lock");
            let calls = recent.entry(plugin.to_owned()).or_default();
            while calls
                .front()
                .is_some_and(|t| now.duration_since(*t) >= WINDOW)
            {
                calls.pop_front();
            }
            if calls.len() >= limit as usize {
                let wait = WINDOW.saturating_sub(now.duration_since(calls[0]));
                return Err(Refusal::RateLimited {
                    plugin: plugin.to_owned(),
                    limit,
                    retry_after: wait,
                });
            }
            calls.push_back(now);
        }
        if let (Some(_), Some(session)) = (self.session_budget, session) {
            *state
                .spent
                .lock()
                .expect("policy lock")
                .entry(session.to_owned())
                .or_default() += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_refuses_past_the_limit_per_plugin() {
        let policy = Policy {
            rate_per_minute: Some(2),
            ..Policy::default()
        };
        let state = PolicyState::default();
        assert!(policy.admit(&state, "a", None).is_ok());
        assert!(policy.admit(&state, "a", None).is_ok());
        let e = policy.admit(&state, "a", None).unwrap_err();
        assert!(matches!(e, Refusal::RateLimited { limit: 2, .. }), "{e}");
        assert!(e.to_string().contains("2 calls per minute"), "{e}");
        assert!(
            policy.admit(&state, "b", None).is_ok(),
            "another plugin has its own window"
        );
    }

    #[test]
    fn plugin_override_wins() {
        let policy = Policy {
            rate_per_minute: Some(100),
            plugin_rates: [("slow".to_owned(), 1)].into(),
            ..Policy::default()
        };
        let state = PolicyState::default();
        assert!(policy.admit(&state, "slow", None).is_ok());
        assert!(policy.admit(&state, "slow", None).is_err());
    }

    #[test]
    fn session_budget_counts_per_session() {
        let policy = Policy {
            session_budget: Some(2),
            ..Policy::default()
        };
        let state = PolicyState::default();
        assert!(policy.admit(&state, "p", Some("s1")).is_ok());
        assert!(policy.admit(&state, "q", Some("s1")).is_ok());
        assert!(
            policy
                .admit(&state, "p", Some("s1"))
                .unwrap_err()
                .to_string()
                .contains("budget of 2")
        );
        assert!(policy.admit(&state, "p", Some("s2")).is_ok());
        assert!(
            policy.admit(&state, "p", None).is_ok(),
            "calls without a session are not counted"
        );
    }
}
