//! The entrypoint: inside the folder, executable, a regular file.

use super::*;

// ---------------------------------------------------------------- entrypoint

#[test]
fn entrypoint_escaping_by_dotdot() {
    let (sb, dir) = plugin_with(|m| m["entrypoint"] = json!("../outside.sh"));
    write_executable(&sb.plugins().join("outside.sh"), SCRIPT);
    assert_errors(
        &rejection(&dir),
        &[(
            "/entrypoint",
            "\"../outside.sh\" must stay inside the plugin folder (no \"..\")",
        )],
    );
}

#[test]
fn entrypoint_escaping_by_dotdot_that_comes_back_in() {
    // `../demo/main.sh` lands inside again, but `..` is refused outright.
    assert_errors(
        &broken(|m| m["entrypoint"] = json!("../demo/main.sh")),
        &[("/entrypoint", "must stay inside the plugin folder")],
    );
}

#[test]
fn entrypoint_escaping_by_symlink() {
    let (sb, dir) = plugin_with(|m| m["entrypoint"] = json!("run.sh"));
    let outside = sb.root.path().join("outside.sh");
    write_executable(&outside, SCRIPT);
    symlink(&outside, dir.join("run.sh")).unwrap();
    let errors = rejection(&dir);
    assert_errors(&errors, &[("/entrypoint", "\"run.sh\" resolves to ")]);
    assert!(
        errors[0]
            .message
            .contains("through a symlink, outside the plugin folder")
            && errors[0].message.contains("outside.sh"),
        "{}",
        errors[0].message
    );
}

#[test]
fn entrypoint_escaping_by_symlinked_subfolder() {
    let (sb, dir) = plugin_with(|m| m["entrypoint"] = json!("lib/main.sh"));
    let elsewhere = sb.root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    write_executable(&elsewhere.join("main.sh"), SCRIPT);
    symlink(&elsewhere, dir.join("lib")).unwrap();
    assert_errors(
        &rejection(&dir),
        &[(
            "/entrypoint",
            "through a symlink, outside the plugin folder",
        )],
    );
}

#[test]
fn absolute_entrypoint() {
    let (_sb, dir) = plugin_with(|_| {});
    let abs = dir.join("main.sh").display().to_string();
    let mut m = manifest(NAME, TOOL);
    m["entrypoint"] = json!(abs);
    std::fs::write(dir.join(MANIFEST_FILE), m.to_string()).unwrap();
    assert_errors(
        &rejection(&dir),
        &[(
            "/entrypoint",
            "must be a path relative to the plugin folder",
        )],
    );
}

#[test]
fn entrypoint_does_not_exist() {
    assert_errors(
        &broken(|m| m["entrypoint"] = json!("nope.sh")),
        &[(
            "/entrypoint",
            "\"nope.sh\" does not exist in the plugin folder",
        )],
    );
}

#[test]
fn entrypoint_is_a_dangling_symlink() {
    let (_sb, dir) = plugin_with(|m| m["entrypoint"] = json!("run.sh"));
    symlink("gone.sh", dir.join("run.sh")).unwrap();
    assert_errors(
        &rejection(&dir),
        &[(
            "/entrypoint",
            "\"run.sh\" does not exist in the plugin folder",
        )],
    );
}

#[test]
fn entrypoint_is_not_executable() {
    let (_sb, dir) = plugin_with(|_| {});
    std::fs::set_permissions(dir.join("main.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_errors(
        &rejection(&dir),
        &[(
            "/entrypoint",
            "\"main.sh\" is not executable; run: chmod +x main.sh",
        )],
    );
}

#[test]
fn entrypoint_is_a_folder() {
    let (_sb, dir) = plugin_with(|m| m["entrypoint"] = json!("bin"));
    std::fs::create_dir(dir.join("bin")).unwrap();
    assert_errors(
        &rejection(&dir),
        &[("/entrypoint", "\"bin\" is not a regular file")],
    );
}

#[test]
fn empty_entrypoint() {
    assert_errors(
        &broken(|m| m["entrypoint"] = json!("")),
        &[("/entrypoint", "must not be empty")],
    );
}
