//! The sandbox against real processes: bash, python3 (through the pyenv shim
//! when that is what `PATH` finds) and node, each spawned with a policy applied
//! by `Prepared::apply_to`, then asked to do what its permissions forbid.
//!
//! Every test prints `SKIPPED: …` and returns when this kernel lacks what it
//! checks; none passes silently without checking.

use std::ffi::OsString;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use plughost::plugins::manifest::Permission;
use plughost::run::sandbox::{self, Policy, SandboxError};
use tokio::process::Command;

/// A plugin folder, its data and temp folders, and a folder outside all three.
struct Fixture {
    _root: tempfile::TempDir,
    plugin: PathBuf,
    data: PathBuf,
    tmp: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let root = tempfile::Builder::new()
        .prefix("plughost-sandbox-")
        .tempdir()
        .unwrap();
    let dir = |name: &str| {
        let p = root.path().join(name);
        std::fs::create_dir_all(&p).unwrap();
        p.canonicalize().unwrap()
    };
    let (plugin, data, tmp, outside) = (dir("plugin"), dir("data"), dir("tmp"), dir("outside"));
    std::fs::write(plugin.join("own.txt"), "own-content\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret-content\n").unwrap();
    Fixture {
        _root: root,
        plugin,
        data,
        tmp,
        outside,
    }
}

impl Fixture {
    /// Writes an executable entrypoint into the plugin folder.
    fn script(&self, name: &str, text: &str) -> PathBuf {
        let p = self.plugin.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    /// The environment the executor would give: the allowlist plus plughost's own.
    fn env(&self) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| {
                k.to_str()
                    .is_some_and(|k| plughost::run::env::ALLOWLIST.contains(&k))
            })
            .collect();
        env.push(("TMPDIR".into(), self.tmp.clone().into()));
        env.push(("PLUGHOST_DATA_DIR".into(), self.data.clone().into()));
        env.push(("PLUGHOST_PLUGIN_DIR".into(), self.plugin.clone().into()));
        env
    }

    /// Runs `entrypoint args…` confined to `granted`, as the executor will.
    async fn run(&self, entrypoint: &Path, args: &[&str], granted: &[Permission]) -> Output {
        let env = self.env();
        let prepared = sandbox::prepare(&Policy {
            plugin_dir: &self.plugin,
            data_dir: &self.data,
            tmp_dir: &self.tmp,
            entrypoint,
            permissions: granted,
            env: &env,
        })
        .expect("the sandbox prepares");
        let mut cmd = Command::new(entrypoint);
        cmd.args(args)
            .current_dir(&self.plugin)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        prepared.apply_to(&mut cmd);
        tokio::time::timeout(Duration::from_secs(30), cmd.output())
            .await
            .expect("the child finishes in time")
            .expect("the child spawns")
    }
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// True when the file system can be confined here; prints why not otherwise.
fn filesystem_supported() -> bool {
    let support = sandbox::support();
    if !support.filesystem {
        eprintln!(
            "SKIPPED: Landlock is unavailable here: {}",
            support.notes.join("; ")
        );
    }
    support.filesystem
}

const BASH_WRITE: &str = "#!/bin/bash\n\
    echo data > \"$1/ok.txt\" && echo wrote-data\n\
    echo out > \"$2/new.txt\" && echo wrote-outside\n\
    exit 0\n";

#[tokio::test]
async fn without_filesystem_write_only_the_data_and_temp_folders_are_writable() {
    if !filesystem_supported() {
        return;
    }
    let fx = fixture();
    let script = fx.script("write.sh", BASH_WRITE);
    let (data, outside) = (fx.data.to_str().unwrap(), fx.outside.to_str().unwrap());

    let out = fx.run(&script, &[data, outside], &[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("wrote-data"), "{}", text(&out));
    assert!(!stdout.contains("wrote-outside"), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out)
    );
    assert!(fx.data.join("ok.txt").exists());
    assert!(!fx.outside.join("new.txt").exists());

    // The temp folder is writable too, and the plugin folder is not.
    let tmp = fx.tmp.to_str().unwrap();
    let plugin = fx.plugin.to_str().unwrap();
    let out = fx.run(&script, &[tmp, plugin], &[]).await;
    assert!(fx.tmp.join("ok.txt").exists(), "{}", text(&out));
    assert!(!fx.plugin.join("new.txt").exists(), "{}", text(&out));

    // Granted, it writes anywhere.
    let out = fx
        .run(&script, &[data, outside], &[Permission::FilesystemWrite])
        .await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("wrote-outside"),
        "{}",
        text(&out)
    );
    assert!(fx.outside.join("new.txt").exists());
}

#[tokio::test]
async fn with_filesystem_read_but_not_write_writes_stay_confined() {
    if !filesystem_supported() {
        return;
    }
    let fx = fixture();
    let script = fx.script("write.sh", BASH_WRITE);
    let (data, outside) = (fx.data.to_str().unwrap(), fx.outside.to_str().unwrap());
    let out = fx
        .run(&script, &[data, outside], &[Permission::FilesystemRead])
        .await;
    assert!(fx.data.join("ok.txt").exists(), "{}", text(&out));
    assert!(!fx.outside.join("new.txt").exists(), "{}", text(&out));
}

#[tokio::test]
async fn without_filesystem_read_only_its_own_folders_and_the_system_are_readable() {
    if !filesystem_supported() {
        return;
    }
    let fx = fixture();
    let script = fx.script(
        "read.sh",
        "#!/bin/bash\n\
         cat own.txt\n\
         cat \"$1/secret.txt\"\n\
         ls \"$1\" >/dev/null && echo listed-outside\n\
         head -c 4 /etc/hostname >/dev/null && echo read-etc\n\
         exit 0\n",
    );
    let outside = fx.outside.to_str().unwrap();

    let out = fx.run(&script, &[outside], &[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("own-content"), "{}", text(&out));
    assert!(stdout.contains("read-etc"), "{}", text(&out));
    assert!(!stdout.contains("secret-content"), "{}", text(&out));
    assert!(!stdout.contains("listed-outside"), "{}", text(&out));

    let out = fx
        .run(&script, &[outside], &[Permission::FilesystemRead])
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("secret-content"), "{}", text(&out));
    assert!(stdout.contains("listed-outside"), "{}", text(&out));
}

#[tokio::test]
async fn the_host_environment_and_signals_stay_out_of_reach() {
    if !filesystem_supported() {
        return;
    }
    let fx = fixture();
    let script = fx.script(
        "peek.sh",
        "#!/bin/bash\n\
         read -r line < /proc/self/status && echo own-proc\n\
         read -r line < /proc/cpuinfo && echo cpuinfo\n\
         cat /proc/$1/environ >/dev/null && echo read-host-env\n\
         cat /proc/$1/maps >/dev/null && echo read-host-maps\n\
         kill -0 $1 && echo signalled-host\n\
         exit 0\n",
    );
    let host = std::process::id().to_string();
    // filesystem:read is approved without asking: it must not expose the
    // host's environment either.
    for granted in [&[][..], &[Permission::FilesystemRead]] {
        let out = fx.run(&script, &[&host], granted).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("own-proc"), "{granted:?}: {}", text(&out));
        assert!(stdout.contains("cpuinfo"), "{granted:?}: {}", text(&out));
        assert!(
            !stdout.contains("read-host-env"),
            "{granted:?}: {}",
            text(&out)
        );
        assert!(
            !stdout.contains("read-host-maps"),
            "{granted:?}: {}",
            text(&out)
        );
        if sandbox::support().scopes {
            assert!(
                !stdout.contains("signalled-host"),
                "{granted:?}: {}",
                text(&out)
            );
        } else {
            eprintln!("SKIPPED (signals part): Landlock ABI < 6");
        }
    }
}

/// Runs a bash client against a listener; returns whether the listener saw a
/// connection, and the client's output.
async fn try_connect(fx: &Fixture, granted: &[Permission]) -> (bool, Output) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let script = fx.script(
        "net.sh",
        "#!/bin/bash\n\
         exec 3<>/dev/tcp/127.0.0.1/$1 && echo connected\n\
         exit 0\n",
    );
    let out = fx.run(&script, &[&port], granted).await;
    // A completed handshake waits in the backlog; give a stray one a moment.
    let deadline = Instant::now() + Duration::from_millis(300);
    let accepted = loop {
        match listener.accept() {
            Ok(_) => break true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    (accepted, out)
}

#[tokio::test]
async fn without_network_tcp_and_udp_are_denied() {
    let support = sandbox::support();
    if !support.network_tcp && !support.network_sockets {
        eprintln!("SKIPPED: neither Landlock ABI 4 nor seccomp here");
        return;
    }
    let fx = fixture();
    let (accepted, out) = try_connect(&fx, &[]).await;
    assert!(!accepted, "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("connected"),
        "{}",
        text(&out)
    );

    let (accepted, out) = try_connect(&fx, &[Permission::Network]).await;
    assert!(accepted, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("connected"),
        "{}",
        text(&out)
    );

    if !support.network_sockets {
        eprintln!("SKIPPED (UDP part): no seccomp here");
        return;
    }
    let script = fx.script(
        "udp.py",
        "#!/usr/bin/env python3\n\
         import socket\n\
         try:\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    print('udp-open')\n\
         except OSError as e:\n    print('udp-denied', e.errno)\n",
    );
    let out = fx.run(&script, &[], &[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("udp-denied {}", libc::EACCES)),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn python_node_and_bash_run_confined() {
    if !filesystem_supported() {
        return;
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
        if name.ends_with(".js") && which("node").is_none() {
            eprintln!("SKIPPED (node part): no node on PATH");
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
        return;
    }
    let Some(python) = which("python3") else {
        eprintln!("SKIPPED: no python3 on PATH");
        return;
    };
    let real = python.canonicalize().unwrap();
    if !real.starts_with(std::env::var_os("HOME").unwrap_or_default()) {
        eprintln!(
            "SKIPPED: python3 is not under the home folder here ({})",
            real.display()
        );
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
        return;
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

    let prepared = sandbox::prepare(&Policy {
        plugin_dir: &fx.plugin,
        data_dir: &fx.data,
        tmp_dir: &fx.tmp,
        entrypoint: &script,
        permissions: &[],
        env: &env,
    })
    .unwrap();
    let mut cmd = Command::new(&script);
    cmd.current_dir(&fx.plugin)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null());
    prepared.apply_to(&mut cmd);
    let out = cmd.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The prefix is readable and executable; its siblings are not.
    assert!(stdout.contains("from-prefix"), "{}", text(&out));
    assert!(!stdout.contains("secret-content"), "{}", text(&out));
}

#[tokio::test]
async fn a_missing_data_folder_fails_preparation() {
    if !filesystem_supported() {
        return;
    }
    let fx = fixture();
    let missing = fx.outside.join("no-such-folder");
    let err = sandbox::prepare(&Policy {
        plugin_dir: &fx.plugin,
        data_dir: &missing,
        tmp_dir: &fx.tmp,
        entrypoint: &fx.plugin.join("main.sh"),
        permissions: &[],
        env: &[],
    })
    .unwrap_err();
    assert!(matches!(err, SandboxError::Path { ref path, .. } if *path == missing));
}

#[test]
fn enforcement_reports_what_this_kernel_does() {
    let fx = fixture();
    let support = sandbox::support();
    let prepared = sandbox::prepare(&Policy {
        plugin_dir: &fx.plugin,
        data_dir: &fx.data,
        tmp_dir: &fx.tmp,
        entrypoint: &fx.plugin.join("main.sh"),
        permissions: &[],
        env: &[],
    })
    .unwrap();
    let e = prepared.enforcement();
    assert_eq!(e.reads_confined, support.filesystem);
    assert_eq!(e.writes_confined, support.filesystem);
    assert_eq!(e.tcp_denied, support.network_tcp);
    assert_eq!(e.sockets_denied, support.network_sockets);

    let all = [
        Permission::FilesystemRead,
        Permission::FilesystemWrite,
        Permission::Network,
    ];
    let prepared = sandbox::prepare(&Policy {
        permissions: &all,
        plugin_dir: &fx.plugin,
        data_dir: &fx.data,
        tmp_dir: &fx.tmp,
        entrypoint: &fx.plugin.join("main.sh"),
        env: &[],
    })
    .unwrap();
    assert!(!prepared.enforcement().is_active());
    println!("support: {support:#?}");
}

#[test]
fn a_prepared_sandbox_can_move_into_a_spawning_task() {
    fn check<T: Send + Sync + 'static>() {}
    check::<sandbox::Prepared>();
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The re-exec helper of DESIGN.md's second option, in C so that it is small
/// and static: it builds a ruleset like `sandbox::prepare` (the system folders,
/// a few devices, the three plugin folders), restricts itself, then execs.
const HELPER_C: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
struct ruleset_attr { uint64_t fs, net, scoped; };
struct __attribute__((packed)) path_beneath { uint64_t access; int32_t fd; };
static const char *ro[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt",
    "/sys", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/sys", 0};
static const char *rw[] = {"/dev/null", "/dev/zero", "/dev/urandom", 0};
static void allow(int rs, const char *path, uint64_t access) {
    struct stat st;
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= 1 | 2 | 4 | 16384 | 32768;
    struct path_beneath pb = {access, fd};
    syscall(SYS_landlock_add_rule, rs, 1, &pb, 0);
    close(fd);
}
int main(int argc, char **argv) {
    /* helper PLUGIN DATA TMP PROGRAM ARGS... */
    struct ruleset_attr a = {0xffff, 3, 3};
    int rs = syscall(SYS_landlock_create_ruleset, &a, sizeof a, 0);
    if (rs < 0 || argc < 5) return 120;
    for (int i = 0; ro[i]; i++) allow(rs, ro[i], 13);
    for (int i = 0; rw[i]; i++) allow(rs, rw[i], 0xffff);
    allow(rs, argv[1], 13);
    allow(rs, argv[2], 0xffff);
    allow(rs, argv[3], 0xffff);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return 121;
    if (syscall(SYS_landlock_restrict_self, rs, 0)) return 122;
    close(rs);
    execv(argv[4], argv + 4);
    return 127;
}
"#;

/// Compiles `source` statically into `dir/name` with the system C compiler.
fn compile_static(dir: &Path, name: &str, source: &str) -> Option<PathBuf> {
    let c = dir.join(format!("{name}.c"));
    let out = dir.join(name);
    std::fs::write(&c, source).ok()?;
    let ok = std::process::Command::new("cc")
        .args(["-O2", "-static", "-o"])
        .arg(&out)
        .arg(&c)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(out)
}

/// Per-spawn cost of the options DESIGN.md asks to compare. Run with
/// `cargo test --test sandbox spawn_cost -- --ignored --nocapture`.
/// Needs `cc` with a static libc for the static rows (skipped otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check"]
async fn spawn_cost() {
    let fx = fixture();
    let env = fx.env();
    let static_true = compile_static(&fx.tmp, "true_static", "int main(void) { return 0; }\n");
    let helper = compile_static(&fx.tmp, "helper", HELPER_C);
    if static_true.is_none() || helper.is_none() {
        eprintln!("SKIPPED (static rows): no `cc -static` here");
    }
    let dirs: Vec<String> = [&fx.plugin, &fx.data, &fx.tmp]
        .iter()
        .map(|p| p.display().to_string())
        .collect();

    async fn spawn(program: &Path, args: &[&str], setup: impl FnOnce(&mut Command)) -> Duration {
        let start = Instant::now();
        let mut cmd = Command::new(program);
        cmd.args(args).process_group(0).stdin(Stdio::null());
        setup(&mut cmd);
        let status = cmd.status().await.unwrap();
        assert!(status.success(), "{}: {status:?}", program.display());
        start.elapsed()
    }
    fn report(label: &str, mut v: Vec<Duration>) {
        v.sort();
        let p = |q: f64| v[((v.len() as f64 - 1.0) * q) as usize].as_secs_f64() * 1e3;
        println!("{label:<46} p50 {:>7.3} ms  p90 {:>7.3} ms", p(0.5), p(0.9));
    }
    async fn measure(n: usize, mut one: impl AsyncFnMut() -> Duration) -> Vec<Duration> {
        for _ in 0..20 {
            one().await;
        }
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(one().await);
        }
        v
    }
    let noop = |cmd: &mut Command| {
        // SAFETY: the hook does nothing.
        unsafe {
            cmd.pre_exec(|| Ok(()));
        }
    };

    for (touched_mib, n) in [(0usize, 500), (512, 200)] {
        let ballast: Vec<u8> = vec![1; touched_mib << 20];
        println!("-- host with {touched_mib} MiB touched, {n} spawns a row");
        let targets = [Some(PathBuf::from("/bin/true")), static_true.clone()];
        for target in targets.iter().flatten() {
            let name = target.file_name().unwrap().to_string_lossy().into_owned();
            let policy = Policy {
                plugin_dir: &fx.plugin,
                data_dir: &fx.data,
                tmp_dir: &fx.tmp,
                entrypoint: target,
                permissions: &[],
                env: &env,
            };
            report(
                &format!("{name}: posix_spawn"),
                measure(n, async || spawn(target, &[], |_| {}).await).await,
            );
            report(
                &format!("{name}: fork+exec, pre_exec no-op"),
                measure(n, async || spawn(target, &[], noop).await).await,
            );
            let mut prep = Vec::new();
            let v = measure(n, async || {
                let start = Instant::now();
                let prepared = sandbox::prepare(&policy).unwrap();
                prep.push(start.elapsed());
                spawn(target, &[], |cmd| prepared.apply_to(cmd)).await
            })
            .await;
            report(&format!("{name}: fork+exec, Landlock+seccomp hook"), v);
            report(&format!("{name}:   + sandbox::prepare beforehand"), prep);
            if let Some(helper) = &helper {
                let t = target.display().to_string();
                let args = [&dirs[0][..], &dirs[1], &dirs[2], &t];
                report(
                    &format!("{name}: posix_spawn helper, Landlock, exec"),
                    measure(n, async || spawn(helper, &args, |_| {}).await).await,
                );
            }
        }
        std::hint::black_box(&ballast);
        drop(ballast);
    }
}
