//! The approvals file across restarts, corruption and concurrent writers.

use super::*;

// ---------------------------------------------------------------- the file

#[test]
fn approval_survives_a_restart_in_the_documented_format() {
    let dir = state_dir();
    let m = manifest("kv-store", &["shell:exec", "network"], &["API_TOKEN"]);
    {
        let store = ApprovalStore::new(dir.path());
        assert!(
            store.load().unwrap().plugins.is_empty(),
            "missing file: no approvals"
        );
        store.grant(&m).unwrap();
    }
    let store = ApprovalStore::new(dir.path());
    let approvals = store.load().unwrap();
    assert_eq!(approvals.state(&m), ApprovalState::Approved);
    assert_eq!(approvals.plugins.len(), 1);

    let text = std::fs::read_to_string(dir.path().join(APPROVALS_FILE)).unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(file["version"], 1);
    let entry = &file["plugins"]["kv-store"];
    assert_eq!(entry["permissions"], json!(["network", "shell:exec"]));
    assert_eq!(entry["env"], json!(["API_TOKEN"]));
    assert_eq!(entry["plugin_version"], "1.0.0");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let at = entry["granted_at"].as_u64().unwrap();
    assert!(at <= now && now - at < 60, "granted_at {at}, now {now}");

    // Private to the user, and no temp file left behind.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.path().join(APPROVALS_FILE))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["approvals.json", "approvals.lock"]);
}

#[test]
fn a_store_sees_every_change_of_the_file_it_read_before() {
    let dir = state_dir();
    let path = dir.path().join(APPROVALS_FILE);
    let store = ApprovalStore::new(dir.path());
    let m = manifest("kv-store", &["network"], &[]);
    assert_eq!(store.state(&m).unwrap(), ApprovalState::NeedsApproval);

    // Another process grants: the file is a new inode.
    ApprovalStore::new(dir.path()).grant(&m).unwrap();
    assert_eq!(store.state(&m).unwrap(), ApprovalState::Approved);

    // An edit in place, same inode and same size: only the times differ.
    let text = std::fs::read_to_string(&path).unwrap();
    let renamed = text.replace("kv-store", "kv-stork");
    assert_eq!(renamed.len(), text.len());
    std::thread::sleep(std::time::Duration::from_millis(10));
    std::fs::write(&path, &renamed).unwrap();
    assert_eq!(store.state(&m).unwrap(), ApprovalState::NeedsApproval);

    // Broken in place, then replaced by a symlink to a good file: both refused.
    std::fs::write(&path, b"{").unwrap();
    assert!(store.state(&m).is_err());
    let elsewhere = state_dir();
    ApprovalStore::new(elsewhere.path()).grant(&m).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join(APPROVALS_FILE), &path).unwrap();
    assert!(matches!(
        store.state(&m),
        Err(ApprovalError::NotAFile { .. })
    ));

    // Deleted: nothing approved.
    std::fs::remove_file(&path).unwrap();
    assert_eq!(store.state(&m).unwrap(), ApprovalState::NeedsApproval);
}

#[test]
fn a_broken_file_is_an_error_that_approves_nothing_and_is_never_overwritten() {
    let dir = state_dir();
    let store = ApprovalStore::new(dir.path());
    let m = manifest("kv-store", &["network"], &[]);
    store.grant(&m).unwrap();
    store
        .grant(&manifest("other", &["clipboard"], &[]))
        .unwrap();
    let path = dir.path().join(APPROVALS_FILE);
    let whole = std::fs::read(&path).unwrap();

    let truncated = whole[..whole.len() / 2].to_vec();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", truncated),
        ("empty", Vec::new()),
        ("not json", b"\x00\x01garbage".to_vec()),
        ("no version", br#"{"plugins":{}}"#.to_vec()),
        (
            "future version",
            br#"{"version":2,"plugins":{"kv-store":{}}}"#.to_vec(),
        ),
        (
            "bad permission",
            br#"{"version":1,"plugins":{"kv-store":{"permissions":["everything"],"env":[],"plugin_version":"1.0.0","granted_at":1}}}"#.to_vec(),
        ),
    ];
    for (what, bytes) in cases {
        std::fs::write(&path, &bytes).unwrap();
        let err = store.load().unwrap_err();
        assert_eq!(err.path(), path, "{what}");
        let message = err.to_string();
        assert!(
            message.contains(&path.display().to_string()),
            "{what}: {message}"
        );
        assert!(message.contains("delete"), "{what}: {message}");
        if what == "future version" {
            assert!(
                matches!(err, ApprovalError::UnsupportedVersion { .. }),
                "{err:?}"
            );
        } else {
            assert!(
                matches!(err, ApprovalError::Corrupt { .. }),
                "{what}: {err:?}"
            );
        }

        // Never approved from it, and a new store (a restart) says the same.
        assert!(ApprovalStore::new(dir.path()).state(&m).is_err(), "{what}");
        // A plugin that needs no approval still runs.
        let plain = manifest("plain", &[], &[]);
        assert_eq!(store.state(&plain).unwrap(), ApprovalState::Automatic);

        // grant and revoke refuse, and leave the file byte for byte.
        let err = store.grant(&m).unwrap_err();
        assert_eq!(err.path(), path, "{what}");
        let err = store.revoke("kv-store").unwrap_err();
        assert_eq!(err.path(), path, "{what}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{what}");
    }

    // Not a file: a folder in its place.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    let err = store.load().unwrap_err();
    assert!(
        matches!(
            err,
            ApprovalError::NotAFile {
                what: "a folder",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains(&path.display().to_string()));
    assert!(store.grant(&m).is_err());
    assert!(path.is_dir());
}

#[test]
fn a_symlinked_fifo_or_huge_file_is_refused_by_name_and_never_followed() {
    let dir = state_dir();
    let store = ApprovalStore::new(dir.path());
    let path = dir.path().join(APPROVALS_FILE);
    let m = manifest("kv-store", &["network"], &[]);

    // A symlink to a valid approvals file elsewhere: refused, not followed,
    // and neither grant nor revoke writes through it or replaces it.
    let elsewhere = state_dir();
    let target = elsewhere.path().join("approvals.json");
    ApprovalStore::new(elsewhere.path()).grant(&m).unwrap();
    let before = std::fs::read(&target).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let err = store.load().unwrap_err();
    assert!(
        matches!(
            err,
            ApprovalError::NotAFile {
                what: "a symbolic link",
                ..
            }
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&path.display().to_string()) && message.contains("symbolic link"),
        "{message}"
    );
    assert!(!message.contains("corrupt"), "{message}");
    assert!(store.state(&m).is_err(), "a symlink approves nothing");
    assert!(store.grant(&manifest("other", &["network"], &[])).is_err());
    assert!(store.revoke("kv-store").is_err());
    assert_eq!(std::fs::read(&target).unwrap(), before);
    assert!(path.symlink_metadata().unwrap().file_type().is_symlink());
    std::fs::remove_file(&path).unwrap();

    // A lock file that is a symlink is not followed when locking.
    let lock_target = elsewhere.path().join("planted");
    std::fs::remove_file(dir.path().join("approvals.lock")).unwrap();
    std::os::unix::fs::symlink(&lock_target, dir.path().join("approvals.lock")).unwrap();
    let err = store.grant(&m).unwrap_err();
    assert!(matches!(err, ApprovalError::Lock { .. }), "{err:?}");
    assert!(!lock_target.exists(), "the lock's symlink was followed");
    std::fs::remove_file(dir.path().join("approvals.lock")).unwrap();

    // A FIFO: refused at once, not waited on.
    let fifo = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let started = Instant::now();
    let err = store.load().unwrap_err();
    assert!(
        matches!(
            err,
            ApprovalError::NotAFile {
                what: "a named pipe (FIFO)",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    std::fs::remove_file(&path).unwrap();

    // Over the 4 MiB cap: refused before it is read, with the limit in words.
    let big = std::fs::File::create(&path).unwrap();
    big.set_len(50 * 1024 * 1024).unwrap();
    let err = store.load().unwrap_err();
    assert!(matches!(err, ApprovalError::TooLarge { .. }), "{err:?}");
    assert!(err.to_string().contains("4 MiB"), "{err}");
    assert!(store.grant(&m).is_err(), "never replaced");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 50 * 1024 * 1024);
}

#[test]
fn twenty_concurrent_processes_keep_all_twenty_grants() {
    const N: usize = 20;
    let dir = state_dir();
    let state = dir.path().join("state");
    let go = dir.path().join("go");
    let mut children = Vec::new();
    for i in 0..N {
        let m = manifest_json(&format!("plugin-{i:02}"), &["network"], &[]);
        let c = child("grant")
            .env(ROLE_STATE, &state)
            .env(ROLE_MANIFEST, m.to_string())
            .env(ROLE_GO, &go)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        children.push(c);
    }
    // Start them together, so they contend for the lock.
    std::fs::write(&go, "").unwrap();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a granter failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let approvals = ApprovalStore::new(&state).load().unwrap();
    let names: Vec<&str> = approvals.plugins.keys().map(String::as_str).collect();
    let expected: Vec<String> = (0..N).map(|i| format!("plugin-{i:02}")).collect();
    assert_eq!(names, expected);
}
