use super::*;
use std::os::unix::fs::PermissionsExt;

#[test]
fn set_list_bind_and_remove() {
    let dir = tempfile::tempdir().unwrap();
    let store = SecretStore::new(dir.path().join("state")).keeping_in(Kept::File);
    assert!(store.list().unwrap().is_empty());
    store
        .set("GITHUB_TOKEN", "ghp_1", &["github".into()])
        .unwrap();
    store.set("ANY", "v", &[]).unwrap();
    let mode = std::fs::metadata(store.path())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].name, "GITHUB_TOKEN");
    assert_eq!(listed[1].plugins, ["github"]);
    let got = store
        .for_plugin("github", ["GITHUB_TOKEN", "ANY", "OTHER"])
        .unwrap();
    assert_eq!(
        got,
        [
            ("GITHUB_TOKEN".into(), "ghp_1".into()),
            ("ANY".into(), "v".into())
        ]
    );
    // Bound to another plugin: not given, whatever this one lists.
    let got = store.for_plugin("evil", ["GITHUB_TOKEN"]).unwrap();
    assert!(got.is_empty());
    assert!(store.bind("GITHUB_TOKEN", "gh2").unwrap());
    assert_eq!(store.list().unwrap()[1].plugins, ["gh2", "github"]);
    assert!(!store.bind("NOPE", "gh2").unwrap());
    assert!(store.remove("GITHUB_TOKEN").unwrap());
    assert!(!store.remove("GITHUB_TOKEN").unwrap());
    assert!(!store.has("GITHUB_TOKEN").unwrap());
}

#[test]
fn a_corrupt_store_never_shows_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let store = SecretStore::new(dir.path()).keeping_in(Kept::File);
    for text in [
        r#"{"GITHUB_TOKEN": "ghp_LEAKME_1234567890"}"#,
        r#"{"version": 1, "secrets": {"A": {"value": 123456, "set_at": 1}}}"#,
        r#"{"version": 1, "secrets": {"A": "ghp_LEAKME_1234567890"}}"#,
    ] {
        std::fs::write(store.path(), text).unwrap();
        let e = store.list().unwrap_err().to_string();
        assert!(!e.contains("LEAKME") && !e.contains("123456"), "{e}");
        assert!(e.contains("line 1 column"), "{e}");
    }
}

#[test]
fn bad_names_values_and_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = SecretStore::new(dir.path()).keeping_in(Kept::File);
    for name in ["", "1A", "A-B", "A B"] {
        assert!(matches!(
            store.set(name, "v", &[]),
            Err(SecretError::InvalidName { .. })
        ));
    }
    for value in ["", "a\0b"] {
        assert!(matches!(
            store.set("A", value, &[]),
            Err(SecretError::InvalidValue { .. })
        ));
    }
    let long = "x".repeat(MAX_VALUE_BYTES + 1);
    assert!(store.set("A", &long, &[]).is_err());
    std::fs::write(store.path(), "{not json").unwrap();
    let e = store.for_plugin("p", ["A"]).unwrap_err();
    assert!(matches!(e, SecretError::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains("no plugin gets a secret"), "{e}");
    // A corrupt store is not overwritten by a set either.
    assert!(store.set("A", "v", &[]).is_err());
    std::fs::remove_file(store.path()).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", store.path()).unwrap();
    let e = store.list().unwrap_err();
    assert!(matches!(e, SecretError::NotAFile { .. }), "{e}");
}

#[test]
fn a_record_that_keeps_a_value_in_both_places_or_neither_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let store = SecretStore::new(dir.path()).keeping_in(Kept::File);
    for entry in [
        r#"{"value": "LEAKME", "keyring": "00ff", "set_at": 1}"#,
        r#"{"set_at": 1}"#,
        r#"{"keyring": "", "set_at": 1}"#,
    ] {
        let text = format!(r#"{{"version": 1, "secrets": {{"A": {entry}}}}}"#);
        std::fs::write(store.path(), text).unwrap();
        let e = store.for_plugin("p", ["A"]).unwrap_err();
        assert!(matches!(e, SecretError::Corrupt { .. }), "{e}");
        assert!(!e.to_string().contains("LEAKME"), "{e}");
    }
}

#[test]
fn a_store_kept_in_the_file_never_asks_the_keyring() {
    let dir = tempfile::tempdir().unwrap();
    let store = SecretStore::new(dir.path()).keeping_in(Kept::File);
    assert_eq!(store.where_set(), Ok(Kept::File));
    assert_eq!(store.set("A", "v", &[]).unwrap(), Kept::File);
    assert_eq!(store.list().unwrap()[0].kept, Kept::File);
}
