//! What `docs/deploy.md` ships: the Kubernetes manifests validate against
//! Kubernetes 1.34's schemas (strict: an unknown field fails), with the
//! `kubernetes-validate` package `scripts/test` installs; and the command
//! line they and `deploy/Containerfile` give plughost is one it takes. No
//! cluster and no container engine run here: the image is not built, and
//! the manifests are not applied.

use std::process::Command;

use crate::util::{self, stderr, stdout};

fn manifests() -> std::path::PathBuf {
    util::repo().join("deploy/kubernetes/plughost.yaml")
}

#[test]
fn the_kubernetes_manifests_are_valid_for_kubernetes_1_34() {
    let deps = std::env::var_os("PLUGHOST_PYDEPS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| util::repo().join("target/pydeps"));
    let out = Command::new("python3")
        .args(["-m", "kubernetes_validate", "--strict", "-k", "1.34"])
        .arg(manifests())
        .env("PYTHONPATH", &deps)
        .output()
        .unwrap();
    let said = format!("{}{}", stdout(&out), stderr(&out));
    if !util::prerequisite(
        "kubernetes-validate in target/pydeps (scripts/test installs it)",
        !said.contains("No module named kubernetes_validate"),
    ) {
        return;
    }
    assert!(out.status.success(), "{said}");
    for kind in [
        "configmap/plughost-approvals",
        "deployment/plughost",
        "service/plughost",
    ] {
        assert!(
            said.contains(&format!("passed for resource {kind}")),
            "{said}"
        );
    }
}

/// The arguments the Deployment and the Containerfile give `plughost`,
/// each one it knows (`--help` after them: clap refuses an unknown one
/// first).
#[test]
fn the_deployed_command_line_is_one_plughost_takes() {
    let text = std::fs::read_to_string(manifests()).unwrap();
    let args: Vec<String> = text
        .lines()
        .skip_while(|l| l.trim() != "args:")
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("- "))
        .map(|l| l.trim_start().trim_start_matches("- ").to_owned())
        .collect();
    assert_eq!(args.first().map(String::as_str), Some("serve"), "{args:?}");
    let containerfile = std::fs::read_to_string(util::repo().join("deploy/Containerfile")).unwrap();
    let cmd = containerfile
        .split("CMD [")
        .nth(1)
        .and_then(|c| c.split(']').next())
        .unwrap()
        .replace("\\\n", " ");
    let from_containerfile: Vec<String> = cmd
        .split(',')
        .map(|a| a.trim().trim_matches('"').to_owned())
        .collect();
    assert_eq!(args, from_containerfile);
    let out = Command::new(util::plughost())
        .args(&args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}
