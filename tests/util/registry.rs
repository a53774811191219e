//! A registry of our own on loopback (`tests/fixtures/registry.py`): npm,
//! PyPI's simple index and the MCP Registry's API, serving the files a test
//! puts in a folder.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The registry process, stopped (killed and reaped) when dropped.
pub struct Registry {
    child: std::process::Child,
    pub port: u16,
}

impl Registry {
    /// Serves `folder` (`npm/`, `pypi/`, `mcp/`).
    pub fn start(folder: &Path) -> Registry {
        let port_file = folder.join("port");
        let mut registry = Registry {
            child: Command::new(super::real_python3())
                .arg(super::repo().join("tests/fixtures/registry.py"))
                .arg(folder)
                .arg(&port_file)
                .spawn()
                .unwrap(),
            port: 0,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            if let Ok(p) = std::fs::read_to_string(&port_file) {
                registry.port = p.trim().parse().unwrap();
                return registry;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the registry did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Publishes version `version` of `notes-server`
/// (`tests/fixtures/registry/notes-server.js`) in `served`: its npm tarball
/// and its MCP Registry entry `io.github.example/notes` (a folder argument,
/// a named one with a default, a secret and a variable with a default).
/// `build` is a scratch folder.
pub fn publish_notes(served: &Path, build: &Path, version: &str) {
    let pkg = build.join(format!("notes-{version}/package"));
    std::fs::create_dir_all(&pkg).unwrap();
    for dir in ["npm", "mcp"] {
        std::fs::create_dir_all(served.join(dir)).unwrap();
    }
    std::fs::write(
        pkg.join("package.json"),
        json!({"name": "notes-server", "version": version, "bin": {"notes-server": "index.js"}})
            .to_string(),
    )
    .unwrap();
    let code =
        std::fs::read_to_string(super::repo().join("tests/fixtures/registry/notes-server.js"))
            .unwrap()
            .replace("\"1.0.0\"", &format!("{version:?}"));
    std::fs::write(pkg.join("index.js"), code).unwrap();
    let tar = Command::new("tar")
        .arg("czf")
        .arg(served.join(format!("npm/notes-server-{version}.tgz")))
        .arg("-C")
        .arg(pkg.parent().unwrap())
        .arg("package")
        .status()
        .unwrap();
    assert!(tar.success());
    let server = json!({
        "name": "io.github.example/notes",
        "description": "Lists your notes.",
        "version": version,
        "packages": [{
            "registryType": "npm", "identifier": "notes-server", "version": version,
            "transport": {"type": "stdio"},
            "packageArguments": [
                {"type": "positional", "valueHint": "notes_dir", "isRequired": true, "format": "filepath"},
                {"type": "named", "name": "--greeting", "default": "hello"}
            ],
            "environmentVariables": [
                {"name": "NOTES_TOKEN", "isRequired": true, "isSecret": true, "description": "API token"},
                {"name": "NOTES_REGION", "default": "eu"}
            ]
        }]
    });
    write_server(served, &format!("notes-{version}"), &server);
}

/// Lists `server` (a `server.json`) in the MCP Registry of `served`.
pub fn write_server(served: &Path, file: &str, server: &Value) {
    std::fs::create_dir_all(served.join("mcp")).unwrap();
    std::fs::write(served.join(format!("mcp/{file}.json")), server.to_string()).unwrap();
}

/// A folder to serve, inside `root`.
pub fn folder(root: &Path) -> PathBuf {
    let served = root.join("registry");
    std::fs::create_dir_all(&served).unwrap();
    served
}
