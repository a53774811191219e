//! The loader and the catalog: collisions resolve the same whatever the order; dot folders and loose files are skipped; a broken plugin does not stop the others.

use super::*;

// ---------------------------------------------------------------- loader and catalog

/// A plugins folder with `aaa` and `zzz` both offering `same_tool`, created in `order`.
fn colliding(order: [&str; 2]) -> Sandbox {
    let sb = Sandbox::new();
    for name in order {
        let mut m = manifest(name, "same_tool");
        let own = json!({
            "name": format!("{name}_own"),
            "description": "Only this plugin has it.",
            "input_schema": {"type": "object"}
        });
        m["tools"].as_array_mut().unwrap().push(own);
        sb.write_plugin(name, &m, SCRIPT);
    }
    sb
}

fn assert_aaa_wins(catalog: &Catalog) {
    let winner = catalog.tool("same_tool").expect("same_tool is offered");
    assert_eq!(winner.plugin.name(), "aaa");
    assert_eq!(catalog.collisions().len(), 1, "{:?}", catalog.collisions());
    let c = &catalog.collisions()[0];
    assert_eq!(
        (c.name.as_str(), c.kept_by.as_str(), c.skipped_in.as_str()),
        ("same_tool", "aaa", "zzz")
    );
    let text = c.to_string();
    assert!(
        text.contains("\"aaa\"") && text.contains("\"zzz\"") && text.contains("same_tool"),
        "{text}"
    );
    // The loser stays loaded and keeps its other tools.
    assert!(catalog.plugin("zzz").is_some(), "zzz was unloaded");
    assert_eq!(catalog.tool("zzz_own").unwrap().plugin.name(), "zzz");
    assert_eq!(catalog.tool("aaa_own").unwrap().plugin.name(), "aaa");
    assert!(catalog.offers("aaa", "same_tool"));
    assert!(!catalog.offers("zzz", "same_tool"));
    assert_eq!(catalog.rejected().count(), 0);
}

#[test]
fn collisions_resolve_the_same_whatever_the_creation_order() {
    for order in [["aaa", "zzz"], ["zzz", "aaa"]] {
        let sb = colliding(order);
        let catalog = loader::scan(&sb.plugins()).unwrap();
        assert_aaa_wins(&catalog);
    }
}

#[test]
fn collisions_resolve_the_same_whatever_the_reload_order() {
    let sb = colliding(["aaa", "zzz"]);
    let load = |n: &str| (n.to_owned(), loader::load_folder(&sb.plugins().join(n)));
    // zzz alone first, then aaa arrives in a reload: aaa still wins.
    let only_zzz = Catalog::new([load("zzz")]);
    assert_eq!(only_zzz.tool("same_tool").unwrap().plugin.name(), "zzz");
    let both = only_zzz.with_folders([("aaa".to_owned(), Some(load("aaa").1))]);
    assert_aaa_wins(&both);
    // aaa removed again: zzz gets its tool back.
    let without = both.with_folders([("aaa".to_owned(), None)]);
    assert_eq!(without.tool("same_tool").unwrap().plugin.name(), "zzz");
    assert!(without.collisions().is_empty());
}

#[test]
fn scan_skips_dot_folders_and_loose_files() {
    let sb = Sandbox::new();
    sb.write_plugin("good", &manifest("good", "good_tool"), SCRIPT);
    // A hidden folder with a broken manifest: never looked at.
    let hidden = sb.plugins().join(".hidden");
    std::fs::create_dir(&hidden).unwrap();
    std::fs::write(hidden.join(MANIFEST_FILE), "not json").unwrap();
    std::fs::create_dir(sb.plugins().join(".git")).unwrap();
    std::fs::write(sb.plugins().join("README.md"), "notes").unwrap();
    std::fs::write(sb.plugins().join(MANIFEST_FILE), "{}").unwrap();
    std::fs::write(sb.plugins().join(".DS_Store"), "junk").unwrap();

    assert_eq!(
        loader::plugin_folders(&sb.plugins()).unwrap(),
        vec!["good".to_owned()]
    );
    let catalog = loader::scan(&sb.plugins()).unwrap();
    let names: Vec<&str> = catalog.plugins().map(|p| p.name()).collect();
    assert_eq!(names, ["good"]);
    assert_eq!(
        catalog.rejected().count(),
        0,
        "{:?}",
        catalog.rejected().collect::<Vec<_>>()
    );
    assert!(catalog.tool("good_tool").is_some());
}

#[test]
fn a_broken_plugin_does_not_stop_the_others() {
    let sb = Sandbox::new();
    sb.write_plugin("good", &manifest("good", "good_tool"), SCRIPT);
    let mut m = manifest("bad", "bad_tool");
    m["version"] = json!("1.0");
    sb.write_plugin("bad", &m, SCRIPT);
    let catalog = loader::scan(&sb.plugins()).unwrap();
    assert!(catalog.plugin("good").is_some());
    let r = catalog.rejected_folder("bad").expect("bad is rejected");
    assert_errors(&r.errors, &[("/version", "use a semantic version")]);
    assert!(
        r.to_string()
            .starts_with("bad/plugin.json: /version: \"1.0\" is not allowed"),
        "{r}"
    );
    assert!(catalog.tool("bad_tool").is_none());
}

/// Two MCP servers listing one prompt name, resource URI and template: the
/// first plugin by name keeps each, the collisions are reported, and a
/// server listing one URI twice collides with nothing.
#[test]
#[cfg(feature = "mcp-plugins")]
fn prompts_resources_and_templates_collide_like_tools() {
    use crate::plugins::catalog::Offering;
    use crate::plugins::mcp_listing::Listing;
    use std::sync::Arc;
    let sb = Sandbox::new();
    let items = |key: &str, values: &[&str]| -> Vec<serde_json::Map<String, Value>> {
        values
            .iter()
            .map(|v| json!({key: v}).as_object().unwrap().clone())
            .collect()
    };
    let server = |name: &str, prompt: &str| {
        let m = json!({"name": name, "version": "1.0.0", "description": "An MCP server.",
                       "entrypoint": "main.sh", "protocol": "mcp", "permissions": []});
        sb.write_plugin(name, &m, SCRIPT);
        let plugin = loader::load_folder(&sb.plugins().join(name)).unwrap();
        let listing = Listing {
            prompts: items("name", &[prompt]),
            resources: items("uri", &["memory://graph", "memory://graph"]),
            resource_templates: items("uriTemplate", &["file:///{path}"]),
            ..Listing::default()
        };
        let plugin = plugin.with_listing(Some(Arc::new(listing)), Vec::new(), Vec::new());
        (name.to_owned(), Ok(Arc::new(plugin)))
    };
    let catalog = Catalog::new([server("zzz", "summarize"), server("aaa", "summarize")]);
    for (kind, name) in [
        (Offering::Prompt, "summarize"),
        (Offering::Resource, "memory://graph"),
        (Offering::ResourceTemplate, "file:///{path}"),
    ] {
        assert_eq!(catalog.owner(kind, name), Some("aaa"), "{kind} {name}");
        let c = catalog
            .collisions()
            .iter()
            .find(|c| c.kind == kind && c.name == name)
            .unwrap_or_else(|| panic!("no {kind} collision in {:?}", catalog.collisions()));
        assert_eq!((c.kept_by.as_str(), c.skipped_in.as_str()), ("aaa", "zzz"));
        assert!(
            c.to_string()
                .starts_with(&format!("{kind} \"{name}\" of plugin \"zzz\" is skipped")),
            "{c}"
        );
    }
    assert_eq!(catalog.collisions().len(), 3, "{:?}", catalog.collisions());
    // Alone, a server's duplicate URI is no collision.
    let alone = Catalog::new([server("zzz", "summarize")]);
    assert!(alone.collisions().is_empty(), "{:?}", alone.collisions());
}
