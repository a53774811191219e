//! The plugins the rows run, written into the bench's folder before anything is
//! measured:
//!
//! | plugin | what |
//! |---|---|
//! | `tiny`, `tiny-worker` | one static C program that answers `{"result":"ok"}`: once per process, or once per request line when `PLUGHOST_PERSISTENT=1`; `tiny-worker` is `persistent` |
//! | `hello-world`, `password-gen` | the bundled examples, a process per call |
//! | `py-sdk`, `py-hand` | the python echo of `plughost new`, and the same tool without the SDK |
//! | `py-worker`, `node-worker`, `py-spawn`, `node-spawn` | the echo of `plughost new --persistent`, and copies without `persistent` |
//! | `py-pool` | `py-worker` with `max_workers: 4` |
//! | `flood` | writes 1 GB to stdout |
//! | `tiny-hosts` | the tiny program granted one host (`network:127.0.0.1:PORT`): it runs held to the egress proxy |
//! | `fetch-proxied`, `fetch-direct` | curl downloads a megabyte from the bench's origin on 127.0.0.1, granted that host (through the proxy) or plain `network` (direct) |
//! | `idle-plugins/idle-NN` | 16 persistent copies of the tiny program, in a plugins folder of their own |
//!
//! Scripts run their real interpreter, named in the shebang, rather than
//! `#!/usr/bin/env` and a pyenv shim: the shim's start-up varies by tens of
//! milliseconds, which would hide what is measured.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::Bench;

/// The tiny plugin, both ways: a per-call process reads stdin to its end and
/// answers once; a worker answers each request line.
const TINY_C: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static const char out[] = "{\"result\":\"ok\"}\n";
int main(void) {
    static char buf[65536];
    ssize_t n;
    const char *mode = getenv("PLUGHOST_PERSISTENT");
    if (!mode || strcmp(mode, "1") != 0) {
        while (read(0, buf, sizeof buf) > 0) {}
        return write(1, out, sizeof out - 1) == sizeof out - 1 ? 0 : 1;
    }
    while ((n = read(0, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] == '\n' && write(1, out, sizeof out - 1) != sizeof out - 1) return 1;
    return 0;
}
"#;

/// How many idle workers `idle_workers_rss_mb` holds.
pub(crate) const IDLE_WORKERS: usize = 16;

pub(crate) fn setup(bench: &mut Bench) {
    let bin = bench.dir.join("bin");
    std::fs::create_dir_all(&bench.plugins).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let tiny = compile_static(&bin, "tiny", TINY_C).unwrap();
    install_binary(&bench.plugins, "tiny", &tiny, "tiny_echo", None);
    install_binary(
        &bench.plugins,
        "tiny-worker",
        &tiny,
        "tiny_worker_echo",
        Some(json!({})),
    );
    // The tiny plugin granted everywhere, so its ruleset is built around the
    // protected paths (a folder that holds one allowed entry by entry).
    for (name, tool, permissions) in [
        (
            "tiny-reader",
            "tiny_reader_echo",
            json!(["filesystem:read"]),
        ),
        (
            "tiny-writer",
            "tiny_writer_echo",
            json!(["filesystem:read", "filesystem:write"]),
        ),
    ] {
        install_binary(&bench.plugins, name, &tiny, tool, None);
        edit_manifest(&bench.plugins.join(name), |m| {
            m["permissions"] = permissions
        });
    }
    let idle = idle_plugins_dir(bench);
    for i in 0..IDLE_WORKERS {
        let name = format!("idle-{i:02}");
        let tool = format!("idle_{i:02}_echo");
        install_binary(&idle, &name, &tiny, &tool, Some(json!({})));
    }

    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for example in ["hello-world", "password-gen"] {
        copy_dir(
            &repo.join("plugins-examples").join(example),
            &bench.plugins.join(example),
        );
    }
    // password-gen is persistent; its row measures a process per call.
    edit_manifest(&bench.plugins.join("password-gen"), |m| {
        m.as_object_mut().unwrap().remove("persistent");
    });

    let python =
        interpreter("python3", &["-c", "import sys; print(sys.executable)"]).expect("python3 runs");
    scaffold(bench, "py-sdk", "python", false, &python);
    hand_written_echo(bench, &python);
    scaffold(bench, "py-worker", "python", true, &python);
    scaffold(bench, "py-spawn", "python", false, &python);
    scaffold(bench, "py-pool", "python", true, &python);
    edit_manifest(&bench.plugins.join("py-pool"), |m| {
        m["persistent"] = json!({"max_workers": 4});
    });
    bench.node = interpreter("node", &["-p", "process.execPath"]);
    if let Some(node) = bench.node.clone() {
        scaffold(bench, "node-worker", "node", true, &node);
        scaffold(bench, "node-spawn", "node", false, &node);
    }

    bench.origin = crate::net::origin();
    install_binary(&bench.plugins, "tiny-hosts", &tiny, "tiny_hosts_echo", None);
    let grant = format!("network:127.0.0.1:{}", bench.origin);
    edit_manifest(&bench.plugins.join("tiny-hosts"), |m| {
        m["permissions"] = json!([grant])
    });
    for (name, permission) in [
        ("fetch-proxied", grant.as_str()),
        ("fetch-direct", "network"),
    ] {
        let dir = bench.plugins.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("main.sh"),
            format!(
                "#!/bin/sh\ncat >/dev/null\nsize=$(curl -sS -o /dev/null -w '%{{size_download}}' http://127.0.0.1:{}/big) || exit 1\necho \"{{\\\"result\\\":\\\"$size\\\"}}\"\n",
                bench.origin
            ),
        )
        .unwrap();
        set_exec(&dir.join("main.sh"));
        let mut m = manifest(name, "main.sh", &format!("{}_get", name.replace('-', "_")));
        m["permissions"] = json!([permission]);
        write_manifest(&dir, &m);
    }

    let flood = bench.plugins.join("flood");
    std::fs::create_dir_all(&flood).unwrap();
    std::fs::write(
        flood.join("main.sh"),
        "#!/bin/sh\nexec head -c 1000000000 /dev/zero\n",
    )
    .unwrap();
    set_exec(&flood.join("main.sh"));
    write_manifest(&flood, &manifest("flood", "main.sh", "flood_stdout"));
}

/// The plugins folder of the idle-worker scenario.
pub(crate) fn idle_plugins_dir(bench: &Bench) -> PathBuf {
    bench.dir.join("idle-plugins")
}

/// Compiles C `source` statically into `dir/name` (`cc -O2 -static`).
pub(crate) fn compile_static(dir: &Path, name: &str, source: &str) -> Result<PathBuf, String> {
    let c = dir.join(format!("{name}.c"));
    let out = dir.join(name);
    std::fs::write(&c, source).unwrap();
    let result = std::process::Command::new("cc")
        .args(["-O2", "-static", "-o"])
        .arg(&out)
        .arg(&c)
        .output()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    if !result.status.success() {
        return Err(format!(
            "cc -O2 -static {name}.c failed: {}",
            String::from_utf8_lossy(&result.stderr).trim()
        ));
    }
    Ok(out)
}

/// A plugin folder `parent/name` whose entrypoint `main` is a copy of `binary`.
fn install_binary(parent: &Path, name: &str, binary: &Path, tool: &str, persistent: Option<Value>) {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(binary, dir.join("main")).unwrap();
    let mut m = manifest(name, "main", tool);
    if let Some(p) = persistent {
        m["persistent"] = p;
    }
    write_manifest(&dir, &m);
}

/// `plughost new NAME --lang LANG [--persistent]`, with `interpreter` in the
/// entrypoint's shebang.
fn scaffold(bench: &Bench, name: &str, lang: &str, persistent: bool, interpreter: &Path) {
    let mut cmd = std::process::Command::new(crate::binary::plughost());
    cmd.args(["new", name, "--lang", lang, "--dir"])
        .arg(&bench.plugins);
    if persistent {
        cmd.arg("--persistent");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "plughost new {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let entry = if lang == "node" {
        "main.mjs"
    } else {
        "main.py"
    };
    set_shebang(&bench.plugins.join(name).join(entry), interpreter);
}

/// `py-hand`: the tool of `py-sdk`, written without the SDK.
fn hand_written_echo(bench: &Bench, python: &Path) {
    let hand = bench.plugins.join("py-hand");
    std::fs::create_dir_all(&hand).unwrap();
    std::fs::write(hand.join("main.py"), include_str!("hand_echo.py")).unwrap();
    set_exec(&hand.join("main.py"));
    set_shebang(&hand.join("main.py"), python);
    let sdk_manifest = bench.plugins.join("py-sdk/plugin.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(sdk_manifest).unwrap()).unwrap();
    m["name"] = json!("py-hand");
    m["tools"][0]["name"] = json!("py_hand_echo");
    write_manifest(&hand, &m);
}

/// The path an interpreter reports for itself, when it runs.
fn interpreter(program: &str, args: &[&str]) -> Option<PathBuf> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !path.trim().is_empty()).then(|| PathBuf::from(path.trim()))
}

fn set_shebang(script: &Path, interpreter: &Path) {
    let text = std::fs::read_to_string(script).unwrap();
    let body = text.split_once('\n').unwrap().1;
    std::fs::write(script, format!("#!{}\n{body}", interpreter.display())).unwrap();
}

/// A manifest with one tool taking any object, and no permissions.
pub(crate) fn manifest(name: &str, entry: &str, tool: &str) -> Value {
    json!({"name": name, "version": "1.0.0", "description": "bench", "entrypoint": entry,
           "permissions": [],
           "tools": [{"name": tool, "description": "bench", "input_schema": {"type": "object"}}]})
}

pub(crate) fn write_manifest(dir: &Path, manifest: &Value) {
    std::fs::write(
        dir.join("plugin.json"),
        serde_json::to_vec(manifest).unwrap(),
    )
    .unwrap();
}

fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let path = dir.join("plugin.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut m);
    write_manifest(dir, &m);
}

pub(crate) fn set_exec(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
