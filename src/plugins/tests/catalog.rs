//! The loader and the catalog: a colliding tool name stays with the plugin the user approved, then its holder, then the folder added first; dot folders and loose files are skipped; a broken plugin does not stop the others.

use super::*;
use crate::plugins::catalog::Precedence;

// ---------------------------------------------------------------- loader and catalog

/// A plugins folder with `aaa` and `zzz` both offering `same_tool`, created in
/// `order`, the second some clock ticks after the first (a folder's birth
/// time has the kernel's coarse clock).
fn colliding(order: [&str; 2]) -> Sandbox {
    let sb = Sandbox::new();
    for (i, name) in order.into_iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
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

/// `winner` keeps `same_tool` against `loser`, for `because`; the loser
/// stays loaded with its other tool.
fn assert_wins(catalog: &Catalog, winner: &str, loser: &str, because: Precedence) {
    let kept = catalog.tool("same_tool").expect("same_tool is offered");
    assert_eq!(kept.plugin.name(), winner);
    assert_eq!(catalog.collisions().len(), 1, "{:?}", catalog.collisions());
    let c = &catalog.collisions()[0];
    assert_eq!(
        (c.name.as_str(), c.kept_by.as_str(), c.skipped_in.as_str()),
        ("same_tool", winner, loser)
    );
    assert_eq!(c.because, because, "{c}");
    let text = c.to_string();
    assert!(
        text.contains(&format!("\"{winner}\""))
            && text.contains(&format!("\"{loser}\""))
            && text.contains("same_tool")
            && text.contains(because.reason()),
        "{text}"
    );
    // The loser stays loaded and keeps its other tools.
    assert!(catalog.plugin(loser).is_some(), "{loser} was unloaded");
    for name in ["aaa", "zzz"] {
        let own = format!("{name}_own");
        assert_eq!(catalog.tool(&own).unwrap().plugin.name(), name);
    }
    assert!(catalog.offers(winner, "same_tool"));
    assert!(!catalog.offers(loser, "same_tool"));
    assert_eq!(catalog.rejected().count(), 0);
}

/// The folder created first keeps a name (where the file system records
/// when a folder was made; else the name that sorts first), so a folder
/// added later never takes a name over, whatever its name.
#[test]
fn the_folder_added_first_keeps_a_colliding_name() {
    for (order, winner, loser) in [
        (["aaa", "zzz"], "aaa", "zzz"),
        (["zzz", "aaa"], "zzz", "aaa"),
    ] {
        let sb = colliding(order);
        let catalog = loader::scan(&sb.plugins()).unwrap();
        if catalog.plugins().all(|p| p.arrived.is_some()) {
            assert_wins(&catalog, winner, loser, Precedence::Earlier);
        } else {
            assert_wins(&catalog, "aaa", "zzz", Precedence::Name);
        }
    }
}

/// A name held in one snapshot stays with its holder in the next: a plugin
/// that arrives in a reload does not take it, nor does a reload of the
/// holder, nor a holder's manifest broken for a while (the name stays
/// reserved); only the holder's removal frees it.
#[test]
fn a_reload_never_hands_a_held_name_to_a_newcomer() {
    let sb = colliding(["aaa", "zzz"]);
    let load = |n: &str| (n.to_owned(), loader::load_folder(&sb.plugins().join(n)));
    let only_zzz = Catalog::new([load("zzz")]);
    assert_eq!(only_zzz.tool("same_tool").unwrap().plugin.name(), "zzz");
    let both = only_zzz.with_folders([load("aaa")].map(|(n, r)| (n, Some(r))));
    assert_wins(&both, "zzz", "aaa", Precedence::Held);
    // The holder read again, and the newcomer too: nothing changes hands.
    let again = both.with_folders([load("zzz"), load("aaa")].map(|(n, r)| (n, Some(r))));
    assert_wins(&again, "zzz", "aaa", Precedence::Held);
    // The holder's manifest broken: the name stays reserved for it.
    std::fs::write(
        sb.plugins().join("zzz").join(MANIFEST_FILE),
        r#"{"name": "zzz", "tools": [{"name": "same_tool"}]}"#,
    )
    .unwrap();
    let broken = again.with_folders([load("zzz")].map(|(n, r)| (n, Some(r))));
    assert!(broken.rejected_folder("zzz").is_some());
    assert!(
        broken.tool("same_tool").is_none(),
        "the newcomer took a reserved name"
    );
    assert_eq!(broken.rejected_tool("same_tool").unwrap().folder, "zzz");
    let c = &broken.collisions()[0];
    assert!(c.holder_rejected && c.kept_by == "zzz", "{c:?}");
    // The holder removed: the name is free for the other.
    let without = broken.with_folders([("zzz".to_owned(), None)]);
    assert_eq!(without.tool("same_tool").unwrap().plugin.name(), "aaa");
    assert!(without.collisions().is_empty());
}

/// An approved claim keeps the name against a holder, an older folder and a
/// name that sorts first.
#[test]
fn an_approved_claim_keeps_the_name() {
    #[derive(Debug)]
    struct Approved(&'static str);
    impl crate::plugins::catalog::ApprovedClaims for Approved {
        fn approved(
            &self,
            plugin: &str,
            _: Option<&crate::plugins::manifest::Manifest>,
            _: &str,
        ) -> bool {
            plugin == self.0
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }
    let sb = colliding(["aaa", "zzz"]);
    let catalog = loader::scan(&sb.plugins()).unwrap();
    let ranked = catalog.ranked(std::sync::Arc::new(Approved("zzz")));
    assert_wins(&ranked, "zzz", "aaa", Precedence::Approved);
    // Ranked again by the same approvals, the newcomer still does not get it.
    let again = ranked.with_folders([(
        "aaa".to_owned(),
        Some(loader::load_folder(&sb.plugins().join("aaa"))),
    )]);
    assert_wins(&again, "zzz", "aaa", Precedence::Approved);
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
