//! Preparing the sandbox: what it reports and what fails. What it costs is
//! measured by `scripts/bench` (its `spawn_paths` rows).

use super::*;
use crate::run::sandbox::os::CHILDREN_PER_RULESET;
use crate::run::sandbox::{Confinement, SandboxError};

#[tokio::test]
async fn a_missing_data_folder_fails_preparation() {
    if !filesystem_supported() {
        return; // said why, or failed in CI
    }
    let fx = fixture();
    let missing = fx.outside.join("no-such-folder");
    let err = sandbox::prepare(&Policy {
        plugin_dir: &fx.plugin,
        data_dir: &missing,
        tmp_dir: &fx.tmp,
        entrypoint: &fx.plugin.join("main.sh"),
        permissions: &[],
        trust: &[],
        private: &[],
        env: &[],
        egress: None,
        also_read: &[],
        namespaces: false,
    })
    .unwrap_err();
    assert!(matches!(err, SandboxError::Path { ref path, .. } if *path == missing));
}

#[test]
fn enforcement_reports_what_this_kernel_does() {
    let fx = fixture();
    let support = sandbox::support(true);
    let entrypoint = fx.plugin.join("main.sh");
    let policy = |permissions| Policy {
        plugin_dir: &fx.plugin,
        data_dir: &fx.data,
        tmp_dir: &fx.tmp,
        entrypoint: &entrypoint,
        permissions,
        trust: &[],
        private: &[],
        env: &[],
        egress: None,
        also_read: &[],
        namespaces: false,
    };
    let confinement = Confinement::new(&policy(&[])).unwrap();
    let e = confinement.enforcement();
    assert_eq!(e.reads_confined, support.filesystem);
    assert_eq!(e.writes_confined, support.filesystem);
    assert_eq!(e.tcp_denied, support.network_tcp);
    assert_eq!(e.sockets_denied, support.network_sockets);
    assert!(!confinement.for_call().unwrap().is_empty());

    let all = [
        Permission::FilesystemRead,
        Permission::FilesystemWrite,
        Permission::Network,
    ];
    let confinement = Confinement::new(&policy(&all)).unwrap();
    let e = confinement.enforcement();
    assert!(!e.reads_confined && !e.writes_confined && !e.tcp_denied && !e.sockets_denied);
    // Granted everything, it still does not reach the protected paths.
    assert_eq!(e.protected, support.filesystem);
    assert_eq!(e.proc_hidden, support.filesystem);
    assert_eq!(
        confinement.for_call().unwrap().is_empty(),
        !support.filesystem,
        "the ruleset keeps the protected paths out"
    );
}

#[test]
fn confinements_and_prepared_processes_can_cross_threads() {
    fn check<T: Send + Sync + 'static>() {}
    check::<Confinement>();
    check::<sandbox::Prepared>();
}

#[test]
fn a_scoped_folder_made_again_is_noticed() {
    let fx = fixture();
    let scoped = fx.outside.join("scoped");
    std::fs::create_dir(&scoped).unwrap();
    let granted = [Permission::FilesystemWriteIn(scoped.display().to_string())];
    let confinement = Confinement::new(&Policy {
        plugin_dir: &fx.plugin,
        data_dir: &fx.data,
        tmp_dir: &fx.tmp,
        entrypoint: &fx.plugin.join("main.sh"),
        permissions: &granted,
        trust: &[],
        private: &[],
        env: &[],
        egress: None,
        also_read: &[],
        namespaces: false,
    })
    .unwrap();
    assert!(confinement.is_current());
    std::fs::remove_dir(&scoped).unwrap();
    assert!(!confinement.is_current(), "a deleted folder is not current");
    std::fs::create_dir(&scoped).unwrap();
    assert!(!confinement.is_current(), "nor is a folder made again");
}

#[test]
fn a_change_in_a_folder_enumerated_around_a_protected_path_is_noticed() {
    let fx = fixture();
    let (outer, inner) = (fx.outside.join("outer"), fx.outside.join("outer/inner"));
    let private = inner.join("state");
    std::fs::create_dir_all(&private).unwrap();
    let read = [Permission::FilesystemRead];
    let prepare = || {
        Confinement::new(&Policy {
            plugin_dir: &fx.plugin,
            data_dir: &fx.data,
            tmp_dir: &fx.tmp,
            entrypoint: &fx.plugin.join("main.sh"),
            permissions: &read,
            trust: &[],
            private: std::slice::from_ref(&private),
            env: &[],
            egress: None,
            also_read: &[],
            namespaces: false,
        })
        .unwrap()
    };
    // `inner` and `outer` are enumerated around `state`, each below an
    // enumerated parent: their own changes are read from their descriptors.
    let confinement = prepare();
    assert!(confinement.is_current());
    std::fs::write(inner.join("new.txt"), "").unwrap();
    assert!(!confinement.is_current(), "an entry made beside it");

    let confinement = prepare();
    std::fs::remove_file(inner.join("new.txt")).unwrap();
    assert!(!confinement.is_current(), "an entry removed beside it");

    // `inner` renamed away and made again: the descriptor still names the
    // old folder, whose time did not change, but `outer`'s entries did.
    let confinement = prepare();
    std::fs::rename(&inner, outer.join("moved")).unwrap();
    std::fs::create_dir(&inner).unwrap();
    assert!(!confinement.is_current(), "a folder on the way made again");
}

#[tokio::test]
async fn a_ruleset_serves_a_bounded_number_of_processes() {
    if !filesystem_supported() {
        return; // said why, or failed in CI
    }
    let fx = fixture();
    let confinement = Confinement::new(&Policy {
        plugin_dir: &fx.plugin,
        data_dir: &fx.data,
        tmp_dir: &fx.tmp,
        entrypoint: &fx.plugin.join("main.sh"),
        permissions: &[],
        trust: &[],
        private: &[],
        env: &[],
        egress: None,
        also_read: &[],
        namespaces: false,
    })
    .unwrap();
    let first = confinement.for_call().unwrap();
    let ruleset = first.child_steps().ruleset;
    assert!(ruleset.is_some());
    let mut held = vec![first];
    for _ in 1..CHILDREN_PER_RULESET {
        let next = confinement.for_call().unwrap();
        assert_eq!(next.child_steps().ruleset, ruleset, "shared");
        held.push(next);
    }
    let fresh = confinement.for_call().unwrap();
    assert_ne!(fresh.child_steps().ruleset, ruleset, "replaced once full");
}

#[test]
fn host_grants_report_the_level_that_holds_them() {
    let support = sandbox::support(true);
    if !prerequisite(
        "Landlock ABI 4 and seccomp",
        support.network_tcp && support.network_sockets,
    ) {
        return;
    }
    let fx = fixture();
    let granted = ["network:api.example.com:443".parse::<Permission>().unwrap()];
    let entrypoint = fx.plugin.join("main.sh");
    for namespaces in [false, true] {
        if namespaces && !prerequisite("user namespaces", support.user_namespaces) {
            return;
        }
        let (egress, _listener) = sandbox::prepare_egress(namespaces).unwrap();
        let confinement = Confinement::new(&Policy {
            plugin_dir: &fx.plugin,
            data_dir: &fx.data,
            tmp_dir: &fx.tmp,
            entrypoint: &entrypoint,
            permissions: &granted,
            trust: &[],
            private: &[],
            env: &[],
            egress: Some(&egress),
            also_read: &[],
            namespaces,
        })
        .unwrap();
        let e = confinement.enforcement();
        let (level, said) = if namespaces {
            (sandbox::NetLevel::Namespace, false)
        } else {
            (sandbox::NetLevel::ProxyPort, true)
        };
        assert_eq!(e.network_level, Some(level));
        assert_eq!(
            e.not_enforced
                .iter()
                .any(|n| n.contains("proxy's port only")),
            said,
            "{:?}",
            e.not_enforced
        );
        let steps = confinement.for_call().unwrap().child_steps();
        assert_eq!(steps.joins.is_some(), namespaces);
        assert!(steps.seccomp.is_some() && steps.ruleset.is_some());
    }
}
