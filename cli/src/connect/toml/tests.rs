use super::*;

fn entry() -> Node {
    Node::map([
        ("command", Node::str("/bin/p")),
        (
            "args",
            Node::List(vec!["--state-dir".into(), "/s".into(), "serve".into()]),
        ),
    ])
}

fn set(text: &str) -> String {
    Doc::parse(text.to_owned())
        .unwrap()
        .set("mcp_servers", "p", table(&entry()))
        .unwrap()
}

fn remove(text: &str) -> String {
    let doc = Doc::parse(text.to_owned()).unwrap();
    let removed = doc.remove("mcp_servers", "p").unwrap();
    Doc::parse(removed)
        .unwrap()
        .remove_if_empty("mcp_servers")
        .unwrap()
}

const CODEX: &str = r#"# Codex settings
model = "o3" # the default model

[mcp_servers.docs]
command = "npx"
args = ["-y", "mcp-server"] # pinned
env = { "API_KEY" = "value" }

[profiles.fast]
model = "o4-mini"
"#;

#[test]
fn a_new_table_goes_after_the_other_servers_and_comes_out_again() {
    let after = set(CODEX);
    assert_eq!(
        after,
        r#"# Codex settings
model = "o3" # the default model

[mcp_servers.docs]
command = "npx"
args = ["-y", "mcp-server"] # pinned
env = { "API_KEY" = "value" }

[mcp_servers.p]
command = "/bin/p"
args = ["--state-dir", "/s", "serve"]

[profiles.fast]
model = "o4-mini"
"#
    );
    let doc = Doc::parse(after.clone()).unwrap();
    assert_eq!(
        doc.get("mcp_servers", "p").unwrap().unwrap(),
        serde_json::json!({"command": "/bin/p", "args": ["--state-dir", "/s", "serve"]})
    );
    assert_eq!(remove(&after), CODEX);
    // Connecting again writes the same bytes.
    assert_eq!(set(&after), after);
}

#[test]
fn without_servers_the_table_is_appended_and_removed_whole() {
    let before = "model = \"o3\"\n";
    let after = set(before);
    assert_eq!(
        after,
        "model = \"o3\"\n\n[mcp_servers.p]\ncommand = \"/bin/p\"\nargs = [\"--state-dir\", \"/s\", \"serve\"]\n"
    );
    assert_eq!(remove(&after), before);
    assert_eq!(
        set(""),
        "[mcp_servers.p]\ncommand = \"/bin/p\"\nargs = [\"--state-dir\", \"/s\", \"serve\"]\n"
    );
    assert_eq!(remove(&set("")), "");
}

#[test]
fn a_replaced_table_keeps_its_place_and_comment() {
    let before =
        "[mcp_servers.p]\ncommand = \"old\"\n\n# docs\n[mcp_servers.docs]\ncommand = \"npx\"\n";
    let after = set(before);
    assert_eq!(
        after,
        "[mcp_servers.p]\ncommand = \"/bin/p\"\nargs = [\"--state-dir\", \"/s\", \"serve\"]\n\n# docs\n[mcp_servers.docs]\ncommand = \"npx\"\n"
    );
}

#[test]
fn inline_servers_stay_inline() {
    let before = "mcp_servers = { docs = { command = \"npx\" } }\n";
    let after = set(before);
    let doc = Doc::parse(after.clone()).unwrap();
    assert!(after.starts_with("mcp_servers = {"), "{after}");
    assert_eq!(
        doc.get("mcp_servers", "p").unwrap().unwrap()["command"],
        "/bin/p"
    );
    assert_eq!(
        doc.get("mcp_servers", "docs").unwrap().unwrap()["command"],
        "npx"
    );
}

#[test]
fn broken_toml_and_a_wrong_shape_are_refused() {
    let e = Doc::parse("model = \"o3\"\n[mcp_servers.p\n".into()).unwrap_err();
    assert_eq!((e.line, e.column), (2, 15), "{e:?}");
    let wrong = Doc::parse("mcp_servers = 3\n".into()).unwrap();
    assert_eq!(
        wrong.has("mcp_servers"),
        Err(ShapeError::KeyNotAnObject("mcp_servers".into()))
    );
}
