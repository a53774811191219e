//! The tiers, the states a manifest change leads to, and the messages.

use super::*;

// ---------------------------------------------------------------- tiers and states

#[test]
fn tiers_for_each_permission_and_env() {
    use Tier::*;
    let cases: &[(&[&str], &[&str], Tier)] = &[
        (&[], &[], Automatic),
        (&["filesystem:read"], &[], Automatic),
        (&["filesystem:write"], &[], NeedsApproval),
        (&["network"], &[], NeedsApproval),
        (&["shell:exec"], &[], NeedsApproval),
        (&["clipboard"], &[], NeedsApproval),
        (&["notifications"], &[], NeedsApproval),
        (&["filesystem:read", "filesystem:write"], &[], NeedsApproval),
        (&["filesystem:read", "network"], &[], NeedsApproval),
        (&["shell:exec", "network"], &[], NeedsApproval),
        (&[], &["API_TOKEN"], NeedsApproval),
        (&["filesystem:read"], &["API_TOKEN"], NeedsApproval),
    ];
    for (permissions, env, expected) in cases {
        let m = manifest("p", permissions, env);
        assert_eq!(approval::tier(&m), *expected, "{permissions:?} env {env:?}");
        let state = approval::Approvals::default().state(&m);
        match expected {
            Automatic => assert_eq!(state, ApprovalState::Automatic),
            NeedsApproval => assert_eq!(state, ApprovalState::NeedsApproval),
        }
        assert_eq!(state.allows_call(), *expected == Automatic);
    }
    // Only the pair earns the extra warning.
    for (permissions, warned) in [
        (&["shell:exec", "network"][..], true),
        (&["network", "filesystem:read", "shell:exec"][..], true),
        (&["shell:exec"][..], false),
        (&["network"][..], false),
    ] {
        let m = manifest("p", permissions, &[]);
        assert_eq!(approval::shell_and_network(&m), warned, "{permissions:?}");
        let text = prompt::text(&m, &ApprovalState::NeedsApproval);
        assert_eq!(
            text.contains(approval::SHELL_NETWORK_WARNING),
            warned,
            "{text}"
        );
    }
}

#[test]
fn adding_a_permission_or_variable_asks_again_and_fewer_stay_approved() {
    let dir = state_dir();
    let store = ApprovalStore::new(dir.path());
    let v1 = manifest("notes", &["network", "filesystem:write"], &["API_TOKEN"]);
    assert_eq!(store.state(&v1).unwrap(), ApprovalState::NeedsApproval);
    let grant = store.grant(&v1).unwrap();
    assert_eq!(grant.plugin_version, "1.0.0");
    assert_eq!(store.state(&v1).unwrap(), ApprovalState::Approved);

    // A new permission, then a new variable: exactly the new ones are named.
    let more = manifest(
        "notes",
        &["network", "filesystem:write", "shell:exec"],
        &["API_TOKEN"],
    );
    let state = store.state(&more).unwrap();
    assert_eq!(
        state,
        ApprovalState::NeedsReapproval {
            new_permissions: vec![Permission::ShellExec],
            new_env: vec![],
            new_secrets: vec![],
        }
    );
    assert!(!state.allows_call());
    assert_eq!(
        approval::refusal(&more, &state).unwrap().to_string(),
        "plugin \"notes\" needs re-approval for new permissions shell:exec"
    );
    let new_var = manifest(
        "notes",
        &["network", "filesystem:write"],
        &["API_TOKEN", "OTHER"],
    );
    assert_eq!(
        store.state(&new_var).unwrap(),
        ApprovalState::NeedsReapproval {
            new_permissions: vec![],
            new_env: vec![env_name("OTHER")],
            new_secrets: vec![],
        }
    );
    // filesystem:read alone needs no approval, but it is new to an approved plugin.
    let reads_too = manifest(
        "notes",
        &["network", "filesystem:write", "filesystem:read"],
        &["API_TOKEN"],
    );
    assert_eq!(
        store.state(&reads_too).unwrap(),
        ApprovalState::NeedsReapproval {
            new_permissions: vec![Permission::FilesystemRead],
            new_env: vec![],
            new_secrets: vec![],
        }
    );

    // Fewer permissions and variables, or a new version: still approved.
    let mut fewer = manifest("notes", &["network"], &[]);
    fewer.version = "2.0.0".to_owned();
    assert_eq!(store.state(&fewer).unwrap(), ApprovalState::Approved);

    // Approving the bigger manifest grants exactly it; revoking forgets it.
    store.grant(&more).unwrap();
    assert_eq!(store.state(&more).unwrap(), ApprovalState::Approved);
    assert!(store.revoke("notes").unwrap());
    assert!(!store.revoke("notes").unwrap());
    assert_eq!(store.state(&more).unwrap(), ApprovalState::NeedsApproval);

    // A tier-1 plugin is automatic whatever is stored.
    let plain = manifest("notes", &["filesystem:read"], &[]);
    assert_eq!(store.state(&plain).unwrap(), ApprovalState::Automatic);
}

#[test]
fn not_allowed_messages_and_labels() {
    let m = manifest("kv-store", &["shell:exec", "network"], &[]);
    let message =
        |m: &Manifest, state: &ApprovalState| approval::refusal(m, state).map(|r| r.to_string());
    assert_eq!(
        message(&m, &ApprovalState::NeedsApproval).unwrap(),
        "plugin \"kv-store\" needs approval for network, shell:exec"
    );
    let with_env = manifest("kv-store", &[], &["TOKEN_B", "TOKEN_A"]);
    assert_eq!(
        message(&with_env, &ApprovalState::NeedsApproval).unwrap(),
        "plugin \"kv-store\" needs approval for env TOKEN_A, env TOKEN_B"
    );
    let nothing = manifest("kv-store", &[], &[]);
    assert_eq!(
        message(&nothing, &ApprovalState::NeedsApproval).unwrap(),
        "plugin \"kv-store\" needs approval for its tools"
    );
    let re = ApprovalState::NeedsReapproval {
        new_permissions: vec![Permission::Network],
        new_env: vec![env_name("TOKEN_A")],
        new_secrets: vec![],
    };
    assert_eq!(
        message(&m, &re).unwrap(),
        "plugin \"kv-store\" needs re-approval for new permissions network, env TOKEN_A"
    );
    assert_eq!(
        re.label(),
        "needs re-approval: new permissions network, env TOKEN_A"
    );
    assert_eq!(ApprovalState::NeedsApproval.label(), "needs approval");
    assert!(message(&m, &ApprovalState::Approved).is_none());
    assert!(message(&m, &ApprovalState::Automatic).is_none());
}

#[test]
fn scoped_grants_tier_and_a_changed_scope_asks_again() {
    let read_docs = manifest("notes", &["filesystem:read:~/Documents"], &[]);
    assert_eq!(
        approval::tier(&read_docs),
        Tier::Automatic,
        "reading needs no approval"
    );

    let dir = state_dir();
    let store = ApprovalStore::new(dir.path());
    let site = manifest("notes", &["filesystem:write:~/Projects/site"], &[]);
    assert_eq!(approval::tier(&site), Tier::NeedsApproval);
    store.grant(&site).unwrap();
    assert_eq!(store.state(&site).unwrap(), ApprovalState::Approved);

    let moved = manifest("notes", &["filesystem:write:~/Projects/blog"], &[]);
    assert_eq!(
        store.state(&moved).unwrap(),
        ApprovalState::NeedsReapproval {
            new_permissions: vec![Permission::FilesystemWriteIn("~/Projects/blog".into())],
            new_env: vec![],
            new_secrets: vec![],
        },
        "another folder is another grant"
    );
    let everything = manifest("notes", &["filesystem:write"], &[]);
    assert!(!store.state(&everything).unwrap().allows_call());

    let text = prompt::text(&moved, &store.state(&moved).unwrap());
    assert!(
        text.contains("filesystem:write:~/Projects/blog: read, create, change and delete the files in ~/Projects/blog"),
        "{text}"
    );
}

#[test]
fn host_grants_need_approval_a_new_host_asks_again_and_the_prompt_lists_hosts() {
    let dir = state_dir();
    let store = ApprovalStore::new(dir.path());
    let github = manifest("gh", &["network:api.github.com:443"], &[]);
    assert_eq!(approval::tier(&github), Tier::NeedsApproval);
    store.grant(&github).unwrap();
    assert_eq!(store.state(&github).unwrap(), ApprovalState::Approved);

    let more = manifest(
        "gh",
        &[
            "network:api.github.com:443",
            "network:*.githubusercontent.com",
        ],
        &[],
    );
    let state = store.state(&more).unwrap();
    let new = "network:*.githubusercontent.com"
        .parse::<Permission>()
        .unwrap();
    assert_eq!(
        state,
        ApprovalState::NeedsReapproval {
            new_permissions: vec![new],
            new_env: vec![],
            new_secrets: vec![],
        },
        "a new host is a new grant"
    );
    let text = prompt::text(&more, &state);
    for expected in [
        "now asks for more than you approved: network:*.githubusercontent.com.",
        "network:api.github.com:443: connect to api.github.com (port 443), through plughost's egress proxy, and nowhere else\n",
        "network:*.githubusercontent.com: connect to every host below githubusercontent.com (any port), through plughost's egress proxy, and nowhere else  (new)\n",
        "It reaches those hosts through plughost's egress proxy and no others",
        "On this machine that is ",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    // Plain `network` already reaches every host: narrowing it asks nothing.
    let dir = state_dir();
    let store = ApprovalStore::new(dir.path());
    store.grant(&manifest("gh", &["network"], &[])).unwrap();
    assert_eq!(store.state(&github).unwrap(), ApprovalState::Approved);
}
