//! Interpreters run confined: python3, node and bash, through shims and shebangs.

use super::*;

#[tokio::test]
async fn python_node_and_bash_run_confined() {
    if !filesystem_supported() {
        return; // said why, or failed in CI
    }
    let fx = fixture();
    let cases = [
        (
            "main.py",
            "#!/usr/bin/env python3\n\
             import json, os, sys, tempfile\n\
             open(os.path.join(os.environ['PLUGHOST_DATA_DIR'], 'py.txt'), 'w').write('x')\n\
             import asyncio, subprocess, multiprocessing, ssl, sqlite3\n\
             asyncio.run(asyncio.sleep(0))\n\
             tempfile.NamedTemporaryFile().close()\n\
             assert subprocess.run(['echo', 'sub'], capture_output=True).stdout == b'sub\\n'\n\
             assert multiprocessing.cpu_count() >= 1\n\
             sqlite3.connect(os.path.join(os.environ['TMPDIR'], 'db.sqlite')).execute('create table t(x)')\n\
             own = open('own.txt').read().strip()\n\
             print(json.dumps({'result': own, 'v': sys.version_info[0]}))\n",
        ),
        (
            "main.js",
            "#!/usr/bin/env node\n\
             const fs = require('fs');\n\
             fs.writeFileSync(process.env.PLUGHOST_DATA_DIR + '/js.txt', 'x');\n\
             const cp = require('child_process'), os = require('os');\n\
             if (cp.execSync('echo sub').toString() !== 'sub\\n') process.exit(3);\n\
             if (os.cpus().length < 1 || process.memoryUsage().rss <= 0) process.exit(4);\n\
             const own = fs.readFileSync('own.txt', 'utf8').trim();\n\
             console.log(JSON.stringify({result: own}));\n",
        ),
        (
            "main.sh",
            "#!/usr/bin/env bash\n\
             read -r own < own.txt\n\
             echo x > \"$TMPDIR/sh.txt\"\n\
             echo \"{\\\"result\\\": \\\"$own\\\"}\"\n",
        ),
    ];
    for (name, source) in cases {
        if name.ends_with(".js") && !prerequisite("node on PATH", which("node").is_some()) {
            continue;
        }
        let script = fx.script(name, source);
        let out = fx.run(&script, &[], &[]).await;
        assert!(out.status.success(), "{name}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("\"result\": \"own-content\"")
                || String::from_utf8_lossy(&out.stdout).contains("\"result\":\"own-content\""),
            "{name}: {}",
            text(&out)
        );
    }
    assert!(fx.data.join("py.txt").exists());
    assert!(fx.tmp.join("sh.txt").exists());
}

#[tokio::test]
async fn python_through_a_pyenv_shim_is_followed_to_its_install_prefix() {
    if !filesystem_supported() {
        return; // said why, or failed in CI
    }
    let Some(python) = which("python3") else {
        prerequisite("python3 on PATH", false);
        return;
    };
    // pyenv lives under the home folder, or wherever PYENV_ROOT moved it:
    // neither is a system folder, so both must be reached through the shim.
    let real = python.canonicalize().unwrap();
    let under = |var: &str| {
        std::env::var_os(var)
            .filter(|root| !root.is_empty())
            .is_some_and(|root| real.starts_with(root))
    };
    if !prerequisite(
        &format!(
            "python3 installed under the home folder or PYENV_ROOT, as pyenv does (here: {})",
            real.display()
        ),
        under("HOME") || under("PYENV_ROOT"),
    ) {
        return;
    }
    let fx = fixture();
    let script = fx.script(
        "where.py",
        "#!/usr/bin/env python3\nimport sys\nprint(sys.executable)\n",
    );
    let out = fx.run(&script, &[], &[]).await;
    assert!(out.status.success(), "{}", text(&out));
}

#[tokio::test]
async fn an_interpreter_outside_the_system_is_allowed_through_the_shebang() {
    if !filesystem_supported() {
        return; // said why, or failed in CI
    }
    let fx = fixture();
    // An interpreter installed in a folder nothing else allows, found on PATH.
    let prefix = fx.outside.join("toolchain");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::create_dir_all(prefix.join("share")).unwrap();
    std::fs::copy("/bin/bash", prefix.join("bin/mysh")).unwrap();
    std::fs::write(prefix.join("share/lib.sh"), "echo from-prefix\n").unwrap();
    let script = fx.script(
        "main.sh",
        &format!(
            "#!/usr/bin/env mysh\n\
             . {}/share/lib.sh\n\
             cat {}/secret.txt\n",
            prefix.display(),
            fx.outside.display()
        ),
    );
    let mut env = fx.env();
    let path = std::env::join_paths(std::iter::once(prefix.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    env.retain(|(k, _)| k != "PATH");
    env.push(("PATH".into(), path));

    let prepared = fx.prepare(&script, &[], &env);
    let mut cmd = Command::new(&script);
    cmd.current_dir(&fx.plugin)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null());
    prepared.apply_to(&mut cmd, &fx.plugin);
    let out = cmd.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The prefix is readable and executable; its siblings are not.
    assert!(stdout.contains("from-prefix"), "{}", text(&out));
    assert!(!stdout.contains("secret-content"), "{}", text(&out));
}
