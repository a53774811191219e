//! Hostile `plugin.json` files fail fast: huge, nested, not UTF-8, a FIFO, a symlink, a folder.

use super::*;

// ---------------------------------------------------------------- hostile folders

#[test]
fn huge_sparse_manifest_is_refused_without_reading_it() {
    let (_sb, dir) = hostile(|p| {
        let f = std::fs::File::create(p).unwrap();
        f.set_len(50 * 1024 * 1024).unwrap();
    });
    assert_errors(
        &rejection(&dir),
        &[(
            "",
            &format!("plugin.json is 52428800 bytes; the limit is {MAX_MANIFEST_BYTES} bytes"),
        )],
    );
}

#[test]
fn manifest_one_byte_over_the_limit_is_refused() {
    let (_sb, dir) = hostile(|p| {
        let mut text = manifest(NAME, TOOL).to_string().into_bytes();
        text.resize(MAX_MANIFEST_BYTES as usize + 1, b' ');
        std::fs::write(p, text).unwrap();
    });
    assert_errors(&rejection(&dir), &[("", "the limit is")]);
}

#[test]
fn manifest_exactly_at_the_limit_is_accepted() {
    let (_sb, dir) = hostile(|p| {
        let mut text = manifest(NAME, TOOL).to_string().into_bytes();
        text.resize(MAX_MANIFEST_BYTES as usize, b' ');
        std::fs::write(p, text).unwrap();
    });
    check_plugin(&dir).unwrap_or_else(|e| panic!("rejected: {e:?}"));
}

#[test]
fn deeply_nested_json_is_an_error_not_a_crash() {
    let (_sb, dir) = hostile(|p| std::fs::write(p, "[".repeat(100_000)).unwrap());
    assert_errors(
        &rejection(&dir),
        &[(
            "",
            "plugin.json is not valid JSON: recursion limit exceeded",
        )],
    );
}

#[test]
fn deeply_nested_input_schema_within_the_size_limit() {
    let (_sb, dir) = hostile(|p| {
        let mut m = manifest(NAME, TOOL).to_string();
        let deep = format!(
            "{}{}",
            "{\"not\":".repeat(5000),
            "{}".to_owned() + &"}".repeat(5000)
        );
        m = m.replace(
            "\"properties\":{}",
            &format!("\"properties\":{{\"a\":{deep}}}"),
        );
        std::fs::write(p, m).unwrap();
    });
    assert_errors(&rejection(&dir), &[("", "recursion limit exceeded")]);
}

#[test]
fn invalid_utf8_is_refused() {
    let (_sb, dir) = hostile(|p| std::fs::write(p, b"{\"name\": \"d\xffmo\"}").unwrap());
    assert_errors(
        &rejection(&dir),
        &[("", "plugin.json is not valid UTF-8 (at byte 11)")],
    );
}

#[test]
fn invalid_json_reports_line_and_column() {
    let (_sb, dir) = hostile(|p| std::fs::write(p, "{\n  \"name\": \"demo\",\n}").unwrap());
    assert_errors(
        &rejection(&dir),
        &[(
            "",
            "plugin.json is not valid JSON: trailing comma at line 3 column 1",
        )],
    );
}

#[test]
fn empty_manifest_file() {
    let (_sb, dir) = hostile(|p| std::fs::write(p, "").unwrap());
    assert_errors(&rejection(&dir), &[("", "plugin.json is not valid JSON")]);
}

#[test]
fn fifo_manifest_does_not_hang() {
    let (_sb, dir) = hostile(|p| {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        let made = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
        assert_eq!(made, 0, "mkfifo failed");
    });
    assert_errors(
        &rejection(&dir),
        &[("", "plugin.json is not a regular file")],
    );
}

#[test]
fn manifest_is_a_directory() {
    let (_sb, dir) = hostile(|p| std::fs::create_dir(p).unwrap());
    assert_errors(
        &rejection(&dir),
        &[("", "plugin.json is not a regular file")],
    );
}

#[test]
fn manifest_is_a_symlink() {
    let (sb, dir) = hostile(|_| {});
    // The target is a perfectly valid manifest; the link itself is refused.
    let target = sb.root.path().join("real.json");
    std::fs::write(&target, manifest(NAME, TOOL).to_string()).unwrap();
    symlink(&target, dir.join(MANIFEST_FILE)).unwrap();
    assert_errors(
        &rejection(&dir),
        &[("", "plugin.json is a symlink; make it a regular file")],
    );
}

#[test]
fn manifest_is_a_symlink_to_an_endless_device() {
    let (_sb, dir) = hostile(|p| symlink("/dev/zero", p).unwrap());
    assert_errors(&rejection(&dir), &[("", "plugin.json is a symlink")]);
}

#[test]
fn folder_without_a_manifest() {
    let (_sb, dir) = hostile(|_| {});
    assert_errors(&rejection(&dir), &[("", "no plugin.json in this folder")]);
}
