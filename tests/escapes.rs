//! Escapes, tried as a hostile plugin would: a plugin with few or no
//! permissions reaches for a terminal, the kernel keyrings, its host's
//! limits and priority, device files, new namespaces, other processes'
//! `/proc` entries, the file system through a `..` interpreter path, git's
//! configuration and hooks, and the capabilities of root. Each attack must
//! fail; each is also tried where it should work (without the sandbox, or
//! on a target the plugin may reach), so a test that cannot see the
//! difference fails rather than passes.
//!
//! Everything runs through the real binary, per call and as a persistent
//! worker, at each level plughost can fall back to (the namespace level and
//! Landlock alone, `PLUGHOST_NO_NAMESPACES`), as the user running the tests
//! and, when that is root, as `nobody` too (`setpriv`).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
#[cfg(feature = "mcp-server")]
use std::{
    io::{BufRead, BufReader, Write},
    process::ChildStdin,
    sync::mpsc,
    time::Duration,
};

use serde_json::{Value, json};

use crate::util::{self, Sandbox};

/// `nobody`'s user and group.
const NOBODY: u32 = 65534;

/// How plughost confines its plugins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// The default: Landlock, seccomp and, where they work, namespaces.
    Namespaces,
    /// Namespaces switched off: Landlock and seccomp alone.
    LandlockOnly,
    /// `--no-sandbox`: where each attack shows it would have worked.
    Unconfined,
}

/// Who runs plughost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum User {
    /// The user running the tests (root in CI).
    Me,
    /// `nobody`, through `setpriv`, when the tests run as root.
    Nobody,
}

/// A plugin that tries each op of its request and answers how each went:
/// `ok` (with `:` and what it read, if anything), the errno's name, or
/// `exit N: stderr` for a program it ran. Serves one request per call, or
/// one per line as a persistent worker. `$DATA` and `$TMP` in a path are its
/// data and temp folders, `$PPID` its parent's pid (plughost's).
const PROBE: &str = r#"#!/usr/bin/python3
import ctypes, errno, json, os, resource, stat, subprocess, sys

libc = ctypes.CDLL(None, use_errno=True)

def path(p):
    return (p.replace("$DATA", os.environ.get("PLUGHOST_DATA_DIR", ""))
             .replace("$TMP", os.environ.get("TMPDIR", ""))
             .replace("$PPID", str(os.getppid())))

def pid(p):
    if p != "parent":
        return int(p)
    if os.getppid() == 0:
        # Its parent is outside its PID namespace: no pid names it.
        raise OSError(errno.ESRCH, "no parent in sight")
    return os.getppid()

# The capability sets as the kernel's calls give them (a child cannot read
# its own /proc/self: only the plugin's first process has its /proc entry).
CAPS = """
import ctypes
libc = ctypes.CDLL(None)
hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
d = (ctypes.c_uint32 * 6)()
libc.capget(hdr, d)
bnd = sum(1 << c for c in range(64) if libc.prctl(23, c, 0, 0, 0) == 1)
amb = sum(1 << c for c in range(64) if libc.prctl(47, 1, c, 0, 0) == 1)
print(f"CapInh={d[2] | d[5] << 32:016x};CapPrm={d[1] | d[4] << 32:016x};"
      f"CapEff={d[0] | d[3] << 32:016x};CapBnd={bnd:016x};CapAmb={amb:016x};"
      f"NoNewPrivs={libc.prctl(39, 0, 0, 0, 0)}", end="")
"""

def caps(text):
    return ";".join(l.replace(":\t", "=") for l in text.splitlines()
                    if l.startswith(("Cap", "NoNewPrivs")))

def raw(*args):
    r = libc.syscall(*[a.encode() if isinstance(a, str) else None if a is None
                       else ctypes.c_long(a) for a in args])
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r

def one(op, *args):
    if op == "read":
        with open(path(args[0]), "rb") as f:
            return f.read(4096).decode(errors="replace")
    if op == "open":
        os.close(os.open(path(args[0]), os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK))
    elif op == "write":
        with open(path(args[0]), "w") as f:
            f.write("written by a plugin\n")
    elif op == "mkdir":
        # Made, then removed again, so the next try can make it too.
        os.mkdir(path(args[0]))
        os.rmdir(path(args[0]))
    elif op == "append":
        with open(path(args[0]), "a") as f:
            f.write("appended by a plugin\n")
    elif op == "tiocsti":
        import fcntl, termios
        fcntl.ioctl(args[0], termios.TIOCSTI, b"x")
    elif op == "syscall":
        return str(raw(*args))
    elif op == "clone":
        # fork's semantics (no new stack): the child leaves at once.
        r = raw(args[0], args[1], 0, 0, 0, 0)
        if r == 0:
            os._exit(0)
        os.waitpid(r, 0)
    elif op == "run":
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            return f"exit {p.returncode}: {p.stderr.strip()}"
    elif op == "prlimit":
        resource.prlimit(pid(args[0]), resource.RLIMIT_NOFILE, (args[1], args[1]))
    elif op == "setpriority":
        os.setpriority(os.PRIO_PROCESS, pid(args[0]), args[1])
    elif op == "mknod":
        kind = {"chr": stat.S_IFCHR, "blk": stat.S_IFBLK}[args[0]]
        os.mknod(path(args[1]), kind | 0o600, os.makedev(args[2], args[3]))
    elif op == "mkfifo":
        os.mkfifo(path(args[0]))
    elif op == "chmod":
        os.chmod(path(args[0]), args[1])
    elif op == "fchmod":
        fd = os.open(path(args[0]), os.O_RDONLY)
        try:
            os.fchmod(fd, args[1])
        finally:
            os.close(fd)
    elif op == "utime":
        os.utime(path(args[0]), (0, 0))
    elif op == "chown":
        os.chown(path(args[0]), os.getuid(), os.getgid())
    elif op == "sleep":
        import time
        time.sleep(args[0])
    elif op == "relink":
        # The folder replaced by a link to another.
        os.rmdir(path(args[0]))
        os.symlink(path(args[1]), path(args[0]))
    elif op == "setxattr":
        os.setxattr(path(args[0]), "user.plughost", b"set by a plugin")
    elif op == "threads":
        # Sleeping threads (each a task, as a process is) until one fails.
        import threading, time
        n = 0
        try:
            for _ in range(args[0]):
                threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
                n += 1
        except RuntimeError:
            pass
        return str(n)
    elif op == "daemon":
        # A shell in a session of its own that appends to the file every
        # 20 ms, left running.
        subprocess.Popen(["/bin/sh", "-c", 'while :; do echo x >> "$0"; sleep 0.02; done',
                          path(args[0])], start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elif op == "parricide":
        # Kills its parent first where that is plughost-init (seen from a
        # PID namespace, pid 1), then leaves a daemon as above.
        import signal
        parent = os.getppid()
        try:
            with open(f"/proc/{parent}/comm") as f:
                comm = f.read().strip()
        except OSError:
            comm = ""
        if parent == 1 or comm == "plughost-init":
            try:
                os.kill(parent, signal.SIGKILL)
            except OSError:
                pass
        return one("daemon", args[0])
    elif op == "runner":
        # A chain that forks and exits at once, over and over, in a session
        # of its own: one process at a time, each an orphan for an instant,
        # which a killer that takes them one by one never catches up with.
        # It appends to the file every 200 links.
        if os.fork() == 0:
            os.setsid()
            n = 0
            while True:
                if os.fork():
                    os._exit(0)
                n += 1
                if n % 200 == 0:
                    with open(path(args[0]), "a") as f:
                        f.write("x")
        import time
        time.sleep(0.3)
    elif op == "dgram":
        # A datagram to a unix socket by its path, through a socket pair.
        import socket
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        a.sendto(b"sent through a socket pair", path(args[0]))
    elif op == "status":
        with open("/proc/self/status") as f:
            return caps(f.read())
    elif op == "child-caps":
        p = subprocess.run(["/usr/bin/python3", "-c", CAPS], capture_output=True, text=True)
        if p.returncode != 0:
            return f"exit {p.returncode}: {p.stderr.strip()}"
        return p.stdout
    else:
        raise ValueError(op)

def attempt(op):
    try:
        v = one(*op)
        if v is not None and v.startswith("exit "):
            return v
        return "ok" + (":" + v if v else "")
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else f"OSError: {e}"

def answer(req):
    results = [attempt(op) for op in req["input"]["ops"]]
    return {"result": json.dumps(results), "structured": {"results": results}}

if os.environ.get("PLUGHOST_PERSISTENT") == "1":
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(answer(json.loads(line))), flush=True)
else:
    print(json.dumps(answer(json.load(sys.stdin))))
"#;

/// The probe as an MCP server (newline-delimited JSON-RPC on stdio) with
/// one tool, `go`, that takes the same ops.
const MCP_MAIN: &str = r#"for line in sys.stdin:
    if not line.strip():
        continue
    m = json.loads(line)
    if "id" not in m:
        continue
    method, r = m.get("method"), None
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "probe", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": [{"name": "go", "description": "Runs the ops.",
                        "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        results = [attempt(op) for op in m["params"]["arguments"]["ops"]]
        r = {"content": [{"type": "text", "text": json.dumps(results)}],
             "structuredContent": {"results": results}}
    reply = {"jsonrpc": "2.0", "id": m["id"]}
    if r is None:
        reply["error"] = {"code": -32601, "message": "unknown method"}
    else:
        reply["result"] = r
    print(json.dumps(reply), flush=True)
"#;

/// The probe's text as an MCP server.
fn mcp_probe() -> String {
    let main = PROBE
        .find("if os.environ.get(\"PLUGHOST_PERSISTENT\")")
        .unwrap();
    format!("{}{MCP_MAIN}", &PROBE[..main])
}

/// What an op must give.
#[derive(Clone, Copy, Debug)]
enum Want {
    /// Any refusal (an errno, or a program that failed).
    Refused,
    /// A refusal with one of these errno names.
    RefusedWith(&'static [&'static str]),
    /// Success.
    Ok,
    /// Success, with this in what it read.
    OkWith(&'static str),
    /// A refusal, or success with this in what it read (and so not what
    /// the case is after).
    RefusedOrOkWith(&'static str),
}

impl Want {
    fn holds(self, got: &str) -> bool {
        let ok = got == "ok" || got.starts_with("ok:");
        match self {
            Want::Refused => !ok,
            Want::RefusedWith(names) => names.contains(&got),
            Want::Ok => ok,
            Want::OkWith(text) => ok && got.contains(text),
            Want::RefusedOrOkWith(text) => !ok || got.contains(text),
        }
    }
}

/// One attack: the op, what it must give when confined, and what it gives
/// without the sandbox (`None` where that proves nothing for this user).
struct Case {
    what: &'static str,
    op: Value,
    confined: Want,
    unconfined: Option<Want>,
}

fn case(what: &'static str, op: Value, confined: Want, unconfined: Option<Want>) -> Case {
    Case {
        what,
        op,
        confined,
        unconfined,
    }
}

/// A throwaway plugins and state folder (the home folder too), and who runs
/// plughost over it.
struct Lab {
    sandbox: Sandbox,
    user: User,
    bin: PathBuf,
}

impl Lab {
    fn new(user: User) -> Lab {
        let sandbox = Sandbox::new();
        let mut bin = PathBuf::from(crate::util::plughost());
        if user == User::Nobody {
            std::fs::set_permissions(sandbox.root.path(), PermissionsExt::from_mode(0o755))
                .unwrap();
            if !nobody_runs(&bin) {
                // The build folder is out of nobody's reach: a copy beside the plugins.
                let copy = sandbox.root.path().join("plughost");
                std::fs::copy(&bin, &copy).unwrap();
                bin = copy;
            }
        }
        Lab { sandbox, user, bin }
    }

    fn root(&self) -> PathBuf {
        self.sandbox.root.path().canonicalize().unwrap()
    }

    fn root_user(&self) -> bool {
        self.user == User::Me && util::is_root()
    }

    /// plughost's command line at `level` with `args`.
    fn argv(&self, level: Level, args: &[&str]) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![
            self.bin.clone().into(),
            "--plugins-dir".into(),
            self.sandbox.plugins().into(),
            "--state-dir".into(),
            self.sandbox.state().into(),
        ];
        if level == Level::Unconfined {
            argv.push("--no-sandbox".into());
        }
        argv.extend(args.iter().map(OsString::from));
        argv
    }

    /// plughost with `args` at `level`, as this lab's user, on a terminal
    /// of its own (util-linux `script`) if `terminal`.
    fn command(&self, level: Level, args: &[&str], terminal: bool) -> Command {
        self.hand_over();
        let mut argv = self.argv(level, args);
        if terminal {
            let line = argv
                .iter()
                .map(|a| format!("'{}'", a.to_string_lossy().replace('\'', r"'\''")))
                .collect::<Vec<_>>()
                .join(" ");
            argv = ["script", "-qec", &line, "/dev/null"]
                .iter()
                .map(OsString::from)
                .collect();
        }
        if self.user == User::Nobody {
            let mut prefixed: Vec<OsString> = [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
            ]
            .iter()
            .map(OsString::from)
            .collect();
            prefixed.extend(argv);
            argv = prefixed;
        }
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..])
            .env("HOME", self.root())
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("PLUGHOST_PLUGINS_DIR")
            .env_remove("PLUGHOST_STATE_DIR");
        if level == Level::LandlockOnly {
            c.env("PLUGHOST_NO_NAMESPACES", "1");
        } else {
            c.env_remove("PLUGHOST_NO_NAMESPACES");
        }
        c.stdin(Stdio::null());
        c
    }

    /// Everything in the lab owned by nobody, when nobody runs plughost.
    fn hand_over(&self) {
        fn chown_all(p: &Path) {
            std::os::unix::fs::lchown(p, Some(NOBODY), Some(NOBODY)).unwrap();
            if p.is_dir() && !p.is_symlink() {
                for e in std::fs::read_dir(p).unwrap() {
                    chown_all(&e.unwrap().path());
                }
            }
        }
        if self.user == User::Nobody {
            chown_all(self.sandbox.root.path());
        }
    }

    /// Installs the probe as `name` (per call) and `name-w` (a persistent
    /// worker), with `permissions`.
    fn install(&self, name: &str, permissions: &[&str]) {
        self.install_text(name, permissions, PROBE);
    }

    fn install_text(&self, name: &str, permissions: &[&str], text: &str) {
        for (folder, persistent) in [(name.to_owned(), false), (format!("{name}-w"), true)] {
            let mut m = util::manifest(&folder, &folder.replace('-', "_"));
            m["entrypoint"] = json!("main.py");
            m["permissions"] = json!(permissions);
            if persistent {
                m["persistent"] = json!({});
            }
            let dir = self.sandbox.plugins().join(&folder);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("plugin.json"), m.to_string()).unwrap();
            util::write_executable(&dir.join("main.py"), text);
        }
    }

    /// Installs the probe as an MCP server, `name-m`, with `permissions`;
    /// its tool is `name_m_go`.
    fn install_server(&self, name: &str, permissions: &[&str]) {
        let folder = format!("{name}-m");
        let m = json!({"name": folder, "version": "1.0.0", "description": "The probe, served.",
                       "entrypoint": "main.py", "protocol": "mcp",
                       "tool_prefix": format!("{}_", folder.replace('-', "_")),
                       "permissions": permissions});
        let dir = self.sandbox.plugins().join(&folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("plugin.json"), m.to_string()).unwrap();
        util::write_executable(&dir.join("main.py"), &mcp_probe());
        let out = util::run(self.command(Level::Namespaces, &["approve", &folder, "--yes"], false));
        assert!(out.status.success(), "{}", util::stderr(&out));
    }

    /// `plughost approve` for both of `name`'s plugins.
    fn approve(&self, name: &str) {
        for folder in [name.to_owned(), format!("{name}-w")] {
            let out =
                util::run(self.command(Level::Namespaces, &["approve", &folder, "--yes"], false));
            assert!(out.status.success(), "{}", util::stderr(&out));
        }
    }

    /// Runs `ops` through `name` per call and through its worker; the
    /// results of each, labelled.
    fn try_ops(
        &self,
        level: Level,
        name: &str,
        ops: &[Value],
        terminal: bool,
    ) -> Vec<(&'static str, Vec<String>)> {
        let input = json!({ "ops": ops }).to_string();
        [
            ("per call", name.to_owned()),
            ("worker", format!("{name}-w")),
        ]
        .into_iter()
        .map(|(how, folder)| {
            let tool = folder.replace('-', "_");
            let out = util::run(self.command(level, &["--json", "call", &tool, &input], terminal));
            (how, results(&out))
        })
        .collect()
    }

    /// Tries each case through `name` at `level` (each must be refused),
    /// then without the sandbox (where it shows the attack is real).
    fn attack(&self, level: Level, name: &str, cases: &[Case]) {
        self.confined(level, name, cases, false);
        self.unconfined(name, cases);
    }

    /// Each case through `name` at `level`, per call and as a worker.
    fn confined(&self, level: Level, name: &str, cases: &[Case], terminal: bool) {
        let ops: Vec<Value> = cases.iter().map(|c| c.op.clone()).collect();
        for (how, got) in self.try_ops(level, name, &ops, terminal) {
            self.check_confined(level, name, how, cases, &got);
        }
    }

    /// `got` from `cases` run through `name` (`how`) at `level`.
    fn check_confined(&self, level: Level, name: &str, how: &str, cases: &[Case], got: &[String]) {
        for (c, r) in cases.iter().zip(got) {
            assert!(
                c.confined.holds(r),
                "{} ({name}, {how}, {level:?}, {:?}): want {:?}, got {r:?}; all: {got:?}",
                c.what,
                self.user,
                c.confined
            );
        }
    }

    /// Each case through `name`'s MCP server (see `install_server`) at
    /// `level`.
    fn confined_server(&self, level: Level, name: &str, cases: &[Case]) {
        let ops: Vec<Value> = cases.iter().map(|c| c.op.clone()).collect();
        let input = json!({ "ops": ops }).to_string();
        let tool = format!("{}_m_go", name.replace('-', "_"));
        let got = results(&util::run(self.command(
            level,
            &["--json", "call", &tool, &input],
            false,
        )));
        self.check_confined(level, name, "MCP server", cases, &got);
    }

    /// The cases that show something without the sandbox, through `name`.
    fn unconfined(&self, name: &str, cases: &[Case]) {
        let controls: Vec<&Case> = cases.iter().filter(|c| c.unconfined.is_some()).collect();
        if controls.is_empty() {
            return;
        }
        let ops: Vec<Value> = controls.iter().map(|c| c.op.clone()).collect();
        for (how, got) in self.try_ops(Level::Unconfined, name, &ops, false) {
            self.check_controls(name, how, &controls, &got);
        }
    }

    /// `got` from the cases that show something without the sandbox.
    fn check_controls(&self, name: &str, how: &str, controls: &[&Case], got: &[String]) {
        for (c, r) in controls.iter().zip(got) {
            let want = c.unconfined.unwrap();
            assert!(
                want.holds(r),
                "without the sandbox, {} ({name}, {how}, {:?}): want {want:?}, got {r:?}; \
                 the attack proves nothing here",
                c.what,
                self.user
            );
        }
    }

    /// The cases that show something without the sandbox, through `name`'s
    /// code run directly (not by plughost) on a terminal of its own, as
    /// this lab's user.
    fn on_terminal_outside(&self, name: &str, cases: &[Case]) {
        let controls: Vec<&Case> = cases.iter().filter(|c| c.unconfined.is_some()).collect();
        let ops: Vec<Value> = controls.iter().map(|c| c.op.clone()).collect();
        let input = self.root().join("input.json");
        std::fs::write(&input, json!({"input": {"ops": ops}}).to_string()).unwrap();
        let code = self.sandbox.plugins().join(name).join("main.py");
        let line = format!("{} < {}", code.display(), input.display());
        self.hand_over();
        let mut c = if self.user == User::Nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "script"]);
            c
        } else {
            Command::new("script")
        };
        c.args(["-qec", &line, "/dev/null"]).stdin(Stdio::null());
        let got = results(&util::run(c));
        self.check_controls(name, "run directly", &controls, &got);
    }

    /// `plughost serve` at `level`, initialized.
    #[cfg(feature = "mcp-server")]
    fn serve(&self, level: Level) -> Serve {
        self.serve_with(self.command(level, &["serve"], false))
    }

    /// `plughost serve` at `level` under a reaper of its own: a process
    /// that adopts and reaps whatever plughost leaves when it is killed
    /// (this test process is a child subreaper for other tests, whose
    /// zombies those would become). The reaper's pid is `Serve::pid`; the
    /// second value is plughost's.
    #[cfg(feature = "mcp-server")]
    fn serve_under_reaper(&self, level: Level) -> (Serve, i32) {
        const REAPER: &str = "import ctypes, os, sys
ctypes.CDLL(None).prctl(36, 1)
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
open(sys.argv[1] + '.new', 'w').write(str(pid))
os.rename(sys.argv[1] + '.new', sys.argv[1])
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
";
        let inner = self.command(level, &["serve"], false);
        let pidfile = self.root().join("plughost.pid");
        let mut c = Command::new("/usr/bin/python3");
        c.args(["-c", REAPER])
            .arg(&pidfile)
            .arg(inner.get_program())
            .args(inner.get_args());
        for (k, v) in inner.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        let serve = self.serve_with(c);
        // The reaper writes the pid after its fork, which may be after
        // plughost answered: it lands whole (a rename), so wait for it.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let pid = loop {
            match std::fs::read_to_string(&pidfile) {
                Ok(pid) => break pid.trim().parse().unwrap(),
                Err(e) if std::time::Instant::now() < deadline => {
                    assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => panic!("the reaper never wrote plughost's pid: {e}"),
            }
        };
        (serve, pid)
    }

    #[cfg(feature = "mcp-server")]
    fn serve_with(&self, mut command: Command) -> Serve {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Serve {
            child,
            stdin,
            lines,
            next: 0,
        };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "escapes", "version": "1"}}),
        );
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }
}

/// A `plughost serve` on stdio, spoken to line by line.
#[cfg(feature = "mcp-server")]
struct Serve {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next: u64,
}

#[cfg(feature = "mcp-server")]
impl Serve {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the reaper of [`Lab::serve_under_reaper`] to exit, which
    /// it does once everything plughost left has ended.
    fn wait_for_reaper(mut self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "plughost left processes that do not end"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .expect("plughost serve answers in time");
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if v["id"] == id {
                return v;
            }
        }
    }

    /// Calls the probe tool `tool` with `ops`; its results.
    fn try_ops(&mut self, tool: &str, ops: &[Value]) -> Vec<String> {
        let v = self.request(
            "tools/call",
            json!({"name": tool, "arguments": {"ops": ops}}),
        );
        v["result"]["structuredContent"]["results"]
            .as_array()
            .unwrap_or_else(|| panic!("{v:#}"))
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect()
    }
}

#[cfg(feature = "mcp-server")]
impl Drop for Serve {
    /// Stopped with `SIGTERM`, as a service manager would, so that it ends
    /// (and reaps) its resident inits itself; killed if it has not exited
    /// within a few seconds. (Killed outright, what it leaves would be
    /// adopted by this process, a child subreaper, as zombies.)
    fn drop(&mut self) {
        // SAFETY: kill takes integers and touches no memory.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The probe's results from `plughost --json call`'s output (through
/// `script`, the terminal's output: the JSON is the first `{` to the last `}`).
fn results(out: &Output) -> Vec<String> {
    let text = util::stdout(out);
    let json = match (text.find('{'), text.rfind('}')) {
        (Some(a), Some(b)) if a < b => &text[a..=b],
        _ => panic!("no answer: {text}\n{}", util::stderr(out)),
    };
    let v: Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {text}\n{}", util::stderr(out)));
    v["structured"]["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{v:#}\n{}", util::stderr(out)))
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect()
}

/// Whether nobody can run the binary where it was built.
fn nobody_runs(bin: &Path) -> bool {
    static RUNS: OnceLock<bool> = OnceLock::new();
    *RUNS.get_or_init(|| {
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "test",
                "-x",
            ])
            .arg(bin)
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn landlock() -> bool {
    util::prerequisite(
        "Landlock (file system confinement)",
        plughost::sandbox::SandboxSupport::here().filesystem,
    ) && util::prerequisite(
        "python3 at /usr/bin/python3 (the hostile plugins)",
        Path::new("/usr/bin/python3").exists(),
    )
}

/// The levels plughost falls back through; the namespace level only where
/// user namespaces work (in CI they must).
fn levels() -> Vec<Level> {
    let mut levels = Vec::new();
    if util::prerequisite(
        "user namespaces (the namespace level)",
        plughost::sandbox::SandboxSupport::here().user_namespaces,
    ) {
        levels.push(Level::Namespaces);
    }
    levels.push(Level::LandlockOnly);
    levels
}

/// The user running the tests, and nobody too when that is root.
fn users() -> Vec<User> {
    let mut users = vec![User::Me];
    if util::is_root()
        && util::prerequisite(
            "setpriv (util-linux), to run plughost as nobody",
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
                .status()
                .is_ok_and(|s| s.success()),
        )
    {
        users.push(User::Nobody);
    }
    users
}

/// Runs `attack` in a fresh lab at every level, as every user.
fn at_every_level(attack: impl Fn(&Lab, Level)) {
    if !landlock() {
        return;
    }
    for user in users() {
        for level in levels() {
            eprintln!("at {level:?} as {user:?}");
            attack(&Lab::new(user), level);
        }
    }
}

/// No controlling terminal: `/dev/tty` does not open, even when plughost
/// runs on one (which it does here, through `script`), nor does plughost's
/// own terminal through `/proc/PPID/fd/0`; typing into a terminal is
/// refused by the filter (on a pipe: `EPERM`, not the `ENOTTY` the kernel
/// gives). The same code run directly on a terminal opens both. (plughost
/// gives every plugin a session of its own, `--no-sandbox` too, so the
/// comparison is with the code run outside plughost.)
#[test]
fn a_plugin_has_no_terminal_to_type_into() {
    if !util::prerequisite(
        "script (util-linux), to run plughost on a terminal",
        Command::new("script")
            .args(["-qec", "true", "/dev/null"])
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|s| s.success()),
    ) {
        return;
    }
    at_every_level(|lab, level| {
        let cases = [
            case(
                "opening /dev/tty",
                json!(["open", "/dev/tty"]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "TIOCSTI on stdin",
                json!(["tiocsti", 0]),
                Want::RefusedWith(&["EPERM"]),
                Some(Want::RefusedWith(&["ENOTTY"])),
            ),
            case(
                "plughost's terminal, through /proc",
                json!(["open", "/proc/$PPID/fd/0"]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "opening /dev/null",
                json!(["open", "/dev/null"]),
                Want::Ok,
                Some(Want::Ok),
            ),
        ];
        lab.install("no-perms", &[]);
        lab.confined(level, "no-perms", &cases, true);
        lab.install("reader", &["filesystem:read"]);
        lab.confined(level, "reader", &cases, true);
        lab.on_terminal_outside("no-perms", &cases);
    });
}

/// A pseudo-terminal of this process's, as another terminal of the user's,
/// owned by whoever runs plughost. Its master closes on drop.
struct Pty {
    master: std::fs::File,
    slave: PathBuf,
}

fn pty(owner: User) -> Pty {
    use std::os::fd::FromRawFd;
    // SAFETY: plain libc calls on a descriptor this function owns; ptsname_r
    // writes a NUL-terminated name into the local buffer of the size given.
    unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0, "posix_openpt");
        let master = std::fs::File::from_raw_fd(fd);
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let mut name = [0 as libc::c_char; 64];
        assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
        let slave = PathBuf::from(
            std::ffi::CStr::from_ptr(name.as_ptr())
                .to_string_lossy()
                .into_owned(),
        );
        if owner == User::Nobody {
            std::os::unix::fs::chown(&slave, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        Pty { master, slave }
    }
}

/// Another terminal's `/dev/pts/N`, the console and `/dev/ptmx` stay
/// closed to a plugin that may read everything, and to one whose grant
/// names `/dev`; the devices every process needs open.
#[test]
fn other_terminals_and_the_console_stay_closed_whatever_is_granted() {
    at_every_level(|lab, level| {
        let pty = pty(lab.user);
        let slave = pty.slave.display().to_string();
        let root = lab.root_user();
        let cases = [
            case(
                "another terminal",
                json!(["open", slave]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "the console",
                json!(["open", "/dev/console"]),
                Want::Refused,
                // Only root may open it anyway.
                root.then_some(Want::Ok),
            ),
            case(
                "a new pseudo-terminal",
                json!(["open", "/dev/ptmx"]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "/dev/zero",
                json!(["read", "/dev/zero"]),
                Want::Ok,
                Some(Want::Ok),
            ),
        ];
        lab.install("reader", &["filesystem:read"]);
        lab.attack(level, "reader", &cases);
        lab.install("dev-reader", &["filesystem:read:/dev"]);
        lab.approve("dev-reader");
        lab.attack(level, "dev-reader", &cases);
        drop(pty.master);
    });
}

/// The kernel keyrings: the filter refuses `keyctl`, `request_key` and
/// `add_key` (`EPERM`), which without the sandbox reach the user's
/// session keyring.
#[test]
fn the_kernel_keyrings_are_out_of_reach() {
    // SAFETY: integer arguments only; KEYCTL_GET_KEYRING_ID, the session keyring.
    let here = unsafe { libc::syscall(libc::SYS_keyctl, 0, -3, 0) } >= 0;
    if !util::prerequisite(
        "the kernel keyrings (keyctl; a container's own filter may refuse it)",
        here,
    ) {
        return;
    }
    at_every_level(|lab, level| {
        const KEYCTL_GET_KEYRING_ID: i64 = 0;
        const KEY_SPEC_SESSION_KEYRING: i64 = -3;
        const KEY_SPEC_USER_KEYRING: i64 = -4;
        let eperm = Want::RefusedWith(&["EPERM"]);
        let cases = [
            case(
                "keyctl: the session keyring",
                json!([
                    "syscall",
                    libc::SYS_keyctl,
                    KEYCTL_GET_KEYRING_ID,
                    KEY_SPEC_SESSION_KEYRING,
                    0
                ]),
                eperm,
                Some(Want::Ok),
            ),
            case(
                "keyctl: the user keyring",
                json!([
                    "syscall",
                    libc::SYS_keyctl,
                    KEYCTL_GET_KEYRING_ID,
                    KEY_SPEC_USER_KEYRING,
                    0
                ]),
                eperm,
                Some(Want::Ok),
            ),
            case(
                "request_key",
                json!([
                    "syscall",
                    libc::SYS_request_key,
                    "user",
                    "plughost-no-such-key",
                    null,
                    0
                ]),
                eperm,
                Some(Want::RefusedWith(&["ENOKEY"])),
            ),
            // A key type that does not exist: no key is added without the sandbox.
            case(
                "add_key",
                json!([
                    "syscall",
                    libc::SYS_add_key,
                    "plughost-no-such-type",
                    "d",
                    "x",
                    1,
                    KEY_SPEC_SESSION_KEYRING
                ]),
                eperm,
                Some(Want::RefusedWith(&["ENODEV"])),
            ),
        ];
        lab.install("no-perms", &[]);
        lab.attack(level, "no-perms", &cases);
    });
}

#[cfg(feature = "mcp-server")]
/// The open-files limit of a `/proc/PID/limits`, soft and hard.
fn open_files_limit(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/limits"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .to_owned()
}

#[cfg(feature = "mcp-server")]
/// The nice value of a process (`/proc/PID/stat`, field 19).
fn nice(pid: u32) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    fields[16].parse().unwrap()
}

/// A plugin under `plughost serve` lowers neither its host's open-files
/// limit nor its priority (by its parent's pid or by the pid plughost has),
/// per call or as a worker, and the host goes on serving; its own limits
/// and priority it may change. Without the sandbox the same call lowers
/// the host's limit to 8.
#[cfg(feature = "mcp-server")]
#[test]
fn a_plugin_changes_neither_the_limits_nor_the_priority_of_its_host() {
    at_every_level(|lab, level| {
        lab.install("no-perms", &[]);
        let mut serve = lab.serve(level);
        let pid = serve.pid();
        let (limit, niceness) = (open_files_limit(pid), nice(pid));
        let who = format!("{level:?} as {:?}", lab.user);
        for tool in ["no_perms", "no_perms_w"] {
            let got = serve.try_ops(
                tool,
                &[
                    json!(["prlimit", "parent", 8]),
                    json!(["prlimit", pid.to_string(), 8]),
                    json!(["setpriority", "parent", 19]),
                    json!(["setpriority", pid.to_string(), 19]),
                    json!(["prlimit", "0", 32]),
                    json!(["setpriority", "0", 19]),
                ],
            );
            for (r, what) in got[..4].iter().zip([
                "prlimit on the parent",
                "prlimit on plughost's pid",
                "setpriority on the parent",
                "setpriority on plughost's pid",
            ]) {
                assert!(!Want::Ok.holds(r), "{what} ({tool}, {who}): {got:?}");
            }
            assert_eq!(got[4..], ["ok", "ok"], "its own ({tool}, {who})");
            assert_eq!(open_files_limit(pid), limit, "{tool}, {who}");
            assert_eq!(nice(pid), niceness, "{tool}, {who}");
        }
        // The host goes on serving, with every file it needs.
        for _ in 0..3 {
            for tool in ["no_perms", "no_perms_w"] {
                let got = serve.try_ops(tool, &[json!(["open", "/dev/null"])]);
                assert_eq!(got, ["ok"], "{who}");
            }
        }
        drop(serve);
        // Without the sandbox, the same call reaches the host.
        let mut serve = lab.serve(Level::Unconfined);
        let pid = serve.pid();
        let got = serve.try_ops(
            "no_perms",
            &[
                json!(["prlimit", pid.to_string(), 8]),
                json!(["setpriority", pid.to_string(), 19]),
            ],
        );
        assert_eq!(got, ["ok", "ok"], "without the sandbox ({who})");
        assert!(
            open_files_limit(pid)
                .split_whitespace()
                .filter(|w| *w == "8")
                .count()
                == 2,
            "{}",
            open_files_limit(pid)
        );
        assert_eq!(nice(pid), 19);
    });
}

/// No device files: a character or block device in the data or temp folder
/// is refused (as root too, where the kernel alone would allow it), a fifo
/// is made.
#[test]
fn a_plugin_makes_no_device_files() {
    at_every_level(|lab, level| {
        let root = lab.root_user();
        let made = |what| Some(if root { Want::Ok } else { what });
        let cases = [
            case(
                "a character device in the data folder",
                json!(["mknod", "chr", "$DATA/null", 1, 3]),
                Want::Refused,
                made(Want::RefusedWith(&["EPERM"])),
            ),
            case(
                "a block device in the data folder",
                json!(["mknod", "blk", "$DATA/loop", 7, 0]),
                Want::Refused,
                made(Want::RefusedWith(&["EPERM"])),
            ),
            case(
                "a character device in the temp folder",
                json!(["mknod", "chr", "$TMP/mem", 1, 1]),
                Want::Refused,
                made(Want::RefusedWith(&["EPERM"])),
            ),
            case(
                "a fifo in the data folder",
                json!(["mkfifo", "$DATA/fifo"]),
                Want::Ok,
                None,
            ),
        ];
        lab.install("no-perms", &[]);
        lab.confined(level, "no-perms", &cases, false);
        let devices = devices_in(&lab.sandbox.state());
        assert!(devices.is_empty(), "{level:?}, {:?}: {devices:?}", lab.user);
        lab.unconfined("no-perms", &cases);
    });
}

/// Character and block devices under `dir`.
fn devices_in(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let kind = e.file_type().unwrap();
        if kind.is_dir() {
            found.extend(devices_in(&e.path()));
        } else if kind.is_char_device() || kind.is_block_device() {
            found.push(e.path());
        }
    }
    found
}

/// Landlock has no right for a file's mode, owner, times or extended
/// attributes: at the namespace level every mount but what the plugin may
/// write is read-only, so it changes none of them on a file it may not
/// write (by path, or through a descriptor of a file it may read), while
/// in its temp and data folders and under a write grant it changes them
/// all. With Landlock alone this is not held (`docs/sandbox.md`): there,
/// only the folders it may write are tried.
#[test]
fn a_plugin_changes_no_file_s_mode_owner_or_times_outside_its_writes() {
    at_every_level(|lab, level| {
        let home = lab.root();
        for dir in ["docs", "work"] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        let victim = home.join("docs/victim.txt");
        let victim = victim.to_str().unwrap();
        std::fs::write(victim, "the user's file\n").unwrap();
        std::fs::set_permissions(victim, PermissionsExt::from_mode(0o600)).unwrap();
        let own = home.join("work/own.txt");
        std::fs::write(&own, "the plugin's to change\n").unwrap();
        let own = own.to_str().unwrap();
        lab.install(
            "meta",
            &["filesystem:read:~/docs", "filesystem:write:~/work"],
        );
        lab.approve("meta");
        let outside =
            |what, op: Value| case(what, op, Want::RefusedWith(&["EROFS"]), Some(Want::Ok));
        let mut cases = vec![
            case(
                "chmod in the temp folder",
                json!(["chmod", "$TMP", 0o700]),
                Want::Ok,
                None,
            ),
            case(
                "utime in the data folder",
                json!(["utime", "$DATA"]),
                Want::Ok,
                None,
            ),
            case(
                "chmod under a write grant",
                json!(["chmod", own, 0o640]),
                Want::Ok,
                None,
            ),
            case(
                "utime under a write grant",
                json!(["utime", own]),
                Want::Ok,
                None,
            ),
            case(
                "chown under a write grant",
                json!(["chown", own]),
                Want::Ok,
                None,
            ),
        ];
        if level == Level::Namespaces {
            cases.extend([
                outside(
                    "chmod of a file it may only read",
                    json!(["chmod", victim, 0o666]),
                ),
                outside(
                    "fchmod of a file it may only read",
                    json!(["fchmod", victim, 0o644]),
                ),
                outside("utime of a file it may only read", json!(["utime", victim])),
                outside("chown of a file it may only read", json!(["chown", victim])),
                case(
                    "setxattr on a file it may only read",
                    json!(["setxattr", victim]),
                    Want::RefusedWith(&["EROFS"]),
                    None,
                ),
                outside(
                    "chmod of its own plugin folder",
                    json!([
                        "chmod",
                        lab.sandbox.plugins().join("meta").to_str().unwrap(),
                        0o777
                    ]),
                ),
            ]);
        }
        lab.confined(level, "meta", &cases, false);
        lab.install_server(
            "meta",
            &["filesystem:read:~/docs", "filesystem:write:~/work"],
        );
        lab.confined_server(level, "meta", &cases);
        let meta = std::fs::metadata(victim).unwrap();
        assert_eq!(
            meta.permissions().mode() & 0o7777,
            0o600,
            "{level:?}, {:?}",
            lab.user
        );
        assert_ne!(
            std::os::unix::fs::MetadataExt::mtime(&meta),
            0,
            "{level:?}, {:?}",
            lab.user
        );
        lab.unconfined("meta", &cases);
        let meta = std::fs::metadata(victim).unwrap();
        if level == Level::Namespaces {
            assert_eq!(
                meta.permissions().mode() & 0o7777,
                0o644,
                "the controls ran"
            );
        }
    });
}

/// A grant nested in another write grant cannot be pointed elsewhere: the
/// plugin replaces the inner folder with a link to one it was never granted,
/// and its next confinement refuses the grant, naming the link, rather than
/// granting (and mounting writable) wherever the link leads. The victim's
/// mode and contents are checked on disk.
#[test]
fn a_nested_grant_cannot_be_pointed_elsewhere_by_a_link() {
    at_every_level(|lab, level| {
        let home = lab.root();
        let (inner, victim) = (home.join("w/inner"), home.join("victim"));
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::create_dir_all(&victim).unwrap();
        let file = victim.join("f");
        std::fs::write(&file, "the user's file\n").unwrap();
        std::fs::set_permissions(&file, PermissionsExt::from_mode(0o600)).unwrap();
        let grants = ["filesystem:write:~/w", "filesystem:write:~/w/inner"];
        lab.install("nest", &grants);
        lab.approve("nest");
        lab.install_server("nest", &grants);
        let relink = json!(["relink", inner.to_str().unwrap(), victim.to_str().unwrap()]);
        let input = json!({ "ops": [relink] }).to_string();
        let out = util::run(lab.command(level, &["--json", "call", "nest", &input], false));
        assert_eq!(
            results(&out),
            ["ok"],
            "the swap ({level:?}, {:?})",
            lab.user
        );
        assert!(inner.is_symlink());
        let file = file.to_str().unwrap();
        let input = json!({ "ops": [["chmod", file, 0o666], ["append", file]] }).to_string();
        for tool in ["nest", "nest_w", "nest_m_go"] {
            let out = util::run(lab.command(level, &["call", tool, &input], false));
            let err = util::stderr(&out);
            assert!(
                !out.status.success()
                    && err.contains("symbolic link")
                    && err.contains(inner.to_str().unwrap()),
                "{tool} ({level:?}, {:?}) ran through the swapped grant: {}{err}",
                lab.user,
                util::stdout(&out)
            );
        }
        let meta = std::fs::metadata(file).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{level:?}");
        assert_eq!(std::fs::read_to_string(file).unwrap(), "the user's file\n");
    });
}

/// A file system the host mounts after a plugin's mount namespace was made
/// does not arrive in it writable: the namespace is private. plughost runs
/// in a mount namespace whose mounts are shared (as `/` is on a systemd
/// host), and a folder is bind-mounted there while the plugin sleeps; the
/// plugin then tries to change its file. Root only (the mount).
#[test]
fn a_mount_made_on_the_host_later_does_not_arrive_writable() {
    if !landlock()
        || !util::is_root()
        || !levels().contains(&Level::Namespaces)
        || !util::prerequisite(
            "unshare (util-linux), for a mount namespace with shared mounts",
            Command::new("unshare")
                .args(["-m", "--propagation", "shared", "true"])
                .status()
                .is_ok_and(|s| s.success()),
        )
    {
        return;
    }
    for user in users() {
        let lab = Lab::new(user);
        let home = lab.root();
        let (victim, at) = (home.join("victim"), home.join("later"));
        for dir in [&victim, &at] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let file = victim.join("f");
        std::fs::write(&file, "the user's file\n").unwrap();
        std::fs::set_permissions(&file, PermissionsExt::from_mode(0o600)).unwrap();
        lab.install("late", &[]);
        let target = at.join("f");
        let target = target.to_str().unwrap();
        let ops = json!({"ops": [["sleep", 3], ["chmod", target, 0o666], ["utime", target]]});
        let inner = lab.command(
            Level::Namespaces,
            &["--json", "call", "late", &ops.to_string()],
            false,
        );
        let mut c = Command::new("unshare");
        c.args(["-m", "--propagation", "shared", "sh", "-c"])
            .arg(
                r#"(sleep 1.5; mount --bind "$VICTIM" "$AT") & "$@"; s=$?; wait; umount "$AT"; exit $s"#,
            )
            .arg("sh")
            .arg(inner.get_program())
            .args(inner.get_args())
            .env("VICTIM", &victim)
            .env("AT", &at)
            .stdin(Stdio::null());
        for (k, v) in inner.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        let got = results(&util::run(c));
        assert_eq!(got.len(), 3, "{user:?}: {got:?}");
        assert_eq!(got[0], "ok", "{user:?}: {got:?}");
        for r in &got[1..] {
            assert!(
                !r.starts_with("ok"),
                "{user:?}: changed a later mount: {got:?}"
            );
        }
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o600, "{user:?}");
    }
}

/// No new namespaces: `unshare -U`, `clone(CLONE_NEWUSER)` and `clone3`
/// (whose flags a filter cannot read) are refused; a plain fork works.
#[test]
fn a_plugin_makes_no_namespaces() {
    at_every_level(|lab, level| {
        let sigchld = libc::SIGCHLD as i64;
        let new_user = libc::CLONE_NEWUSER as i64;
        let cases = [
            case(
                "unshare -U",
                json!(["run", "unshare", "-U", "true"]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "unshare(CLONE_NEWUSER)",
                json!(["syscall", libc::SYS_unshare, new_user]),
                Want::RefusedWith(&["EPERM"]),
                None,
            ),
            case(
                "clone(CLONE_NEWUSER)",
                json!(["clone", libc::SYS_clone, new_user | sigchld]),
                Want::RefusedWith(&["EPERM"]),
                Some(Want::Ok),
            ),
            case(
                "clone(CLONE_NEWNS)",
                json!(["clone", libc::SYS_clone, libc::CLONE_NEWNS as i64 | sigchld]),
                Want::RefusedWith(&["EPERM"]),
                None,
            ),
            case(
                "clone3",
                json!(["syscall", libc::SYS_clone3, null, 0]),
                Want::RefusedWith(&["ENOSYS"]),
                Some(Want::RefusedWith(&["EINVAL"])),
            ),
            case(
                // A sibling would be a child of the PID namespace's first
                // process, which a plugin could flood with them. (Not tried
                // unconfined: the sibling would be this test process's.)
                "clone(CLONE_PARENT)",
                json!([
                    "clone",
                    libc::SYS_clone,
                    libc::CLONE_PARENT as i64 | sigchld
                ]),
                Want::RefusedWith(&["EPERM"]),
                None,
            ),
            case(
                "a plain fork",
                json!(["clone", libc::SYS_clone, sigchld]),
                Want::Ok,
                Some(Want::Ok),
            ),
        ];
        lab.install("no-perms", &[]);
        lab.attack(level, "no-perms", &cases);
    });
}

/// The first process of a plugin's PID namespace is plughost's own
/// (`plughost-init`, or a resident init that shares plughost's memory and
/// serves one call after another): a plugin can neither trace it, read its
/// memory or environment, take a handle on it, nor kill it, per call (a
/// fresh host), as a worker, and through `serve`, whose per-call plugins
/// reuse the same resident call after call. (With Landlock alone, process 1
/// is the machine's init, out of reach all the same.)
#[test]
fn a_plugin_cannot_reach_the_first_process_of_its_namespace() {
    at_every_level(|lab, level| {
        let attach = libc::PTRACE_ATTACH as i64;
        let cases = [
            case(
                "ptrace(PTRACE_ATTACH, 1)",
                json!(["syscall", libc::SYS_ptrace, attach, 1, 0, 0]),
                Want::RefusedWith(&["EPERM"]),
                None,
            ),
            case(
                "pidfd_open(1)",
                json!(["syscall", libc::SYS_pidfd_open, 1, 0]),
                Want::RefusedWith(&["EPERM"]),
                None,
            ),
            case(
                "process_vm_writev(1)",
                json!([
                    "syscall",
                    libc::SYS_process_vm_writev,
                    1,
                    null,
                    1,
                    null,
                    1,
                    0
                ]),
                Want::RefusedWith(&["EPERM"]),
                None,
            ),
            case(
                "/proc/1/mem",
                json!(["read", "/proc/1/mem"]),
                Want::Refused,
                None,
            ),
            case(
                "/proc/1/environ",
                json!(["read", "/proc/1/environ"]),
                Want::Refused,
                None,
            ),
            case(
                "kill(1, SIGKILL)",
                json!(["syscall", libc::SYS_kill, 1, libc::SIGKILL as i64]),
                Want::Refused,
                None,
            ),
            case(
                "a call after all that",
                json!(["read", "/proc/self/stat"]),
                Want::Ok,
                None,
            ),
        ];
        lab.install("no-perms", &[]);
        lab.confined(level, "no-perms", &cases, false);
        #[cfg(feature = "mcp-server")]
        {
            let ops: Vec<Value> = cases.iter().map(|c| c.op.clone()).collect();
            let mut serve = lab.serve(level);
            let mut pids = Vec::new();
            for round in 0..3 {
                let got = serve.try_ops("no_perms", &ops);
                lab.check_confined(
                    level,
                    "no-perms",
                    &format!("serve, call {round}"),
                    &cases,
                    &got,
                );
                let status = serve.try_ops("no_perms", &[json!(["read", "/proc/self/status"])]);
                pids.push(namespace_pid(&status[0]));
            }
            if level == Level::Namespaces {
                // Each call's plugin is a later process of the same
                // resident namespace, not the second of a new one.
                assert!(
                    pids.windows(2).all(|w| w[0] < w[1]) && pids[0] >= 2,
                    "the plugin's pids in its namespace, call after call: {pids:?}"
                );
            }
        }
    });
}

/// SysV IPC objects (shared memory here) are kept per namespace, not by
/// path: Landlock and seccomp never see them. At the namespace level a
/// plugin has an IPC namespace of its own and finds no segment of the
/// user's; with Landlock alone it still does (documented as not stopped).
#[test]
fn a_plugin_reaches_no_shared_memory_of_the_user_s_other_processes() {
    // A segment anyone may attach, so that only the namespace keeps it out
    // (as nobody too); removed at the end.
    let key = 0x7068_0000 + (std::process::id() as i64 & 0xffff);
    // SAFETY: shmget takes integers and returns an id or -1.
    let id = unsafe { libc::shmget(key as libc::key_t, 4096, libc::IPC_CREAT | 0o666) };
    assert!(id >= 0, "{}", std::io::Error::last_os_error());
    struct Remove(i32);
    impl Drop for Remove {
        fn drop(&mut self) {
            // SAFETY: removes the segment made above; no memory is passed.
            unsafe { libc::shmctl(self.0, libc::IPC_RMID, std::ptr::null_mut()) };
        }
    }
    let _remove = Remove(id);
    at_every_level(|lab, level| {
        let confined = if level == Level::Namespaces {
            Want::RefusedWith(&["ENOENT"])
        } else {
            Want::Ok
        };
        let cases = [case(
            "shmget of the user's segment",
            json!(["syscall", libc::SYS_shmget, key, 0, 0]),
            confined,
            Some(Want::Ok),
        )];
        lab.install("no-perms", &[]);
        lab.attack(level, "no-perms", &cases);
    });
}

/// The pid of the process in its own (innermost) PID namespace, from what
/// it read of its `/proc/self/status` (`ok:` and the text).
#[cfg(feature = "mcp-server")]
fn namespace_pid(status: &str) -> u32 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .and_then(|pids| pids.split_whitespace().last())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no NSpid in {status:?}"))
}

/// A sleeping process of the tests', whose command line a plugin must not
/// read; killed on drop.
struct Sleeper(Child);

impl Sleeper {
    fn new() -> Sleeper {
        Sleeper(
            Command::new("sleep")
                .arg("1000.271828")
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        )
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `/proc` shows a plugin its own process and the machine's files, even
/// with a grant that names `/proc`: not pid 1's command line, not its
/// parent's environment (plughost's), not another process's command line.
#[test]
fn proc_shows_a_plugin_only_itself_and_the_machine() {
    let sleeper = Sleeper::new();
    let other = format!("/proc/{}/cmdline", sleeper.0.id());
    at_every_level(|lab, level| {
        let cases = [
            // A worker's pid 1 is the init of its own PID namespace.
            case(
                "pid 1's command line",
                json!(["read", "/proc/1/cmdline"]),
                Want::RefusedOrOkWith("plughost-init"),
                Some(Want::Ok),
            ),
            case(
                "another process's command line",
                json!(["read", other]),
                Want::Refused,
                Some(Want::OkWith("1000.271828")),
            ),
            case(
                "its parent's (plughost's) environment",
                json!(["read", "/proc/$PPID/environ"]),
                Want::Refused,
                Some(Want::OkWith("HOME=")),
            ),
            case(
                "/proc/cpuinfo",
                json!(["read", "/proc/cpuinfo"]),
                Want::Ok,
                Some(Want::Ok),
            ),
            case(
                "its own status",
                json!(["read", "/proc/self/status"]),
                Want::Ok,
                Some(Want::Ok),
            ),
        ];
        lab.install("proc-reader", &["filesystem:read:/proc"]);
        lab.approve("proc-reader");
        lab.attack(level, "proc-reader", &cases);
        lab.install("reader", &["filesystem:read"]);
        lab.attack(level, "reader", &cases);
    });
}

/// A worker's processes (an MCP server's too) get a `/proc` of their PID
/// namespace: each process it starts reads its own entries (a browser's
/// helpers check `/proc/self/fd`), and none shows a process outside it. A
/// per-call process, or any process without namespaces, keeps its own
/// `/proc/PID` alone: its children read none of theirs.
#[test]
fn a_worker_s_children_read_their_own_proc_and_no_other() {
    let sleeper = Sleeper::new();
    let other = format!("/proc/{}/cmdline", sleeper.0.id());
    at_every_level(|lab, level| {
        lab.install("kids", &[]);
        let ops = [
            json!(["run", "/usr/bin/cat", "/proc/self/status"]),
            json!(["run", "/usr/bin/ls", "/proc/self/fd"]),
            json!(["run", "/usr/bin/cat", other]),
            json!(["read", other]),
        ];
        for (how, got) in lab.try_ops(level, "kids", &ops, false) {
            let own = how == "worker" && level == Level::Namespaces;
            let what = format!("{how}, {level:?}, {:?}: {got:?}", lab.user);
            assert_eq!(got[0] == "ok", own, "a child's own status ({what})");
            assert_eq!(got[1] == "ok", own, "a child's own descriptors ({what})");
            assert_ne!(got[2], "ok", "a child reads another process ({what})");
            assert_ne!(got[3], "ok", "the plugin reads another process ({what})");
        }
    });
}

/// A local daemon's datagram socket (the system log's `/dev/log`, here one
/// of the test's) gets nothing from a plugin without `network`, not even
/// through a socket pair, whose datagram end sends to any address it is
/// given: the sandbox makes stream and seqpacket pairs only. Without the
/// sandbox the datagram arrives.
#[test]
fn a_socket_pair_sends_no_datagram_to_a_local_daemon() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixDatagram;
    at_every_level(|lab, level| {
        let daemon = lab.root().join("daemon.sock");
        let _ = std::fs::remove_file(&daemon);
        let socket = UnixDatagram::bind(&daemon).unwrap();
        socket.set_nonblocking(true).unwrap();
        std::fs::set_permissions(&daemon, std::fs::Permissions::from_mode(0o777)).unwrap();
        // How many datagrams arrived since the last look.
        let got = || {
            let mut buf = [0u8; 64];
            std::iter::from_fn(|| socket.recv(&mut buf).ok()).count()
        };
        let cases = [case(
            "a datagram to a local daemon",
            json!(["dgram", daemon.display().to_string()]),
            Want::RefusedWith(&["EACCES"]),
            Some(Want::Ok),
        )];
        for (name, grants) in [
            ("pairs", &[][..]),
            ("pairs-host", &["network:127.0.0.1:9"][..]),
        ] {
            lab.install(name, grants);
            if !grants.is_empty() {
                lab.approve(name);
            }
            lab.confined(level, name, &cases, false);
            assert_eq!(got(), 0, "{name}, {level:?}, {:?}", lab.user);
            lab.unconfined(name, &cases);
            assert!(got() > 0, "without the sandbox nothing arrived");
        }
    });
}

/// An interpreter path spelled with `..` (`#!../../../usr/bin/python3`) is
/// judged where it resolves: it opens nothing outside to a plugin without
/// permissions.
#[test]
fn an_interpreter_spelled_with_dots_opens_nothing_outside() {
    at_every_level(|lab, level| {
        let secret = lab.root().join("secret.txt");
        std::fs::write(&secret, "TOPSECRET").unwrap();
        let shebang = format!("#!{}usr/bin/python3", "../".repeat(32));
        let text = PROBE.replacen("#!/usr/bin/python3", &shebang, 1);
        lab.install_text("dots", &[], &text);
        let cases = [
            case(
                "a file outside its folders",
                json!(["read", secret.display().to_string()]),
                Want::Refused,
                Some(Want::OkWith("TOPSECRET")),
            ),
            case(
                "its data folder",
                json!(["write", "$DATA/note"]),
                Want::Ok,
                Some(Want::Ok),
            ),
        ];
        lab.attack(level, "dots", &cases);
    });
}

fn git(args: &[&str]) {
    let out = util::run({
        let mut c = Command::new("git");
        c.args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1");
        c
    });
    assert!(out.status.success(), "git {args:?}: {}", util::stderr(&out));
}

/// Under a write grant over a git repository, nothing git reads for its
/// configuration or hooks can be written: the `.git` folder (its config,
/// hooks, a `commondir` that would move it, a submodule's hooks), the
/// folder `core.hooksPath` names, a file `include.path` names, and the
/// git folder a `.git` file points to; an ordinary file in the project can.
/// That is the namespace level's (a read-only mount); with Landlock alone,
/// `doctor` says the project files are not protected.
#[test]
fn git_configuration_and_hooks_stay_read_only_under_a_write_grant() {
    if !util::prerequisite(
        "git",
        Command::new("git")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success()),
    ) {
        return;
    }
    at_every_level(|lab, level| {
        let root = lab.root();
        let proj = root.join("proj");
        let p = |rel: &str| proj.join(rel).display().to_string();
        git(&["init", "-q", &p("")]);
        git(&["-C", &p(""), "config", "core.hooksPath", ".husky"]);
        git(&["-C", &p(""), "config", "include.path", "../extra.gitconfig"]);
        std::fs::create_dir_all(proj.join(".husky")).unwrap();
        std::fs::write(proj.join("extra.gitconfig"), "[user]\n").unwrap();
        std::fs::create_dir_all(proj.join(".git/modules/m/hooks")).unwrap();
        // A checkout whose `.git` is a file naming its git folder.
        let linked = root.join("linked");
        let l = |rel: &str| linked.join(rel).display().to_string();
        git(&["init", "-q", "--separate-git-dir", &l(".realgit"), &l("")]);
        assert!(linked.join(".git").is_file());
        // A repository whose configuration names what is not there yet.
        let pending = root.join("pending");
        let n = |rel: &str| pending.join(rel).display().to_string();
        git(&["init", "-q", &n("")]);
        git(&["-C", &n(""), "config", "core.hooksPath", ".githooks"]);
        git(&[
            "-C",
            &n(""),
            "config",
            "include.path",
            "../pending/conf/later.gitconfig",
        ]);
        std::fs::write(pending.join("README"), "there\n").unwrap();

        let doctor = util::stdout(&util::run(lab.command(level, &["doctor"], false)));
        let line = doctor
            .lines()
            .find(|l| l.contains("project .git and MCP configs"))
            .unwrap_or_else(|| panic!("{doctor}"))
            .to_owned();
        lab.install("proj-writer", &[&format!("filesystem:write:{}", p(""))]);
        lab.approve("proj-writer");
        lab.install("linked-writer", &[&format!("filesystem:write:{}", l(""))]);
        lab.approve("linked-writer");
        lab.install("pending-writer", &[&format!("filesystem:write:{}", n(""))]);
        lab.approve("pending-writer");
        // At both levels (Landlock keeps out what does not exist): the
        // folder they would be made in takes no new entry, which is why a
        // new file beside them is refused too.
        let cases = [
            case(
                "the hooks folder core.hooksPath names, not made yet",
                json!(["mkdir", n(".githooks")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "the folder of a file include.path names, not made yet",
                json!(["mkdir", n("conf")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "a new file beside them",
                json!(["write", n("new.txt")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "a file already there",
                json!(["append", n("README")]),
                Want::Ok,
                Some(Want::Ok),
            ),
        ];
        lab.attack(level, "pending-writer", &cases);
        let ordinary = [case(
            "an ordinary file",
            json!(["write", p("ordinary.txt")]),
            Want::Ok,
            Some(Want::Ok),
        )];
        if level == Level::LandlockOnly {
            assert!(line.contains("NOT protected"), "{line}");
            lab.confined(level, "proj-writer", &ordinary, false);
            return;
        }
        assert!(line.contains("read-only"), "{line}");
        let cases = [
            case(
                ".git/commondir",
                json!(["write", p(".git/commondir")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                ".git/config",
                json!(["append", p(".git/config")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "a new hook in .git/hooks",
                json!(["write", p(".git/hooks/x")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "a submodule's hook",
                json!(["write", p(".git/modules/m/hooks/x")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "a hook in core.hooksPath",
                json!(["write", p(".husky/pre-commit")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "the file include.path names",
                json!(["append", p("extra.gitconfig")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "an ordinary file",
                json!(["write", p("ordinary.txt")]),
                Want::Ok,
                Some(Want::Ok),
            ),
        ];
        lab.attack(level, "proj-writer", &cases);
        let cases = [
            case(
                "a hook in the git folder a .git file names",
                json!(["write", l(".realgit/hooks/pre-commit")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "the config in the git folder a .git file names",
                json!(["append", l(".realgit/config")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "the .git file",
                json!(["write", l(".git")]),
                Want::Refused,
                Some(Want::Ok),
            ),
            case(
                "an ordinary file",
                json!(["write", l("ordinary.txt")]),
                Want::Ok,
                Some(Want::Ok),
            ),
        ];
        lab.attack(level, "linked-writer", &cases);
    });
}

/// The capability sets of a probe's `status` answer, by name.
fn capabilities(status: &str) -> Vec<(String, String)> {
    status
        .trim_start_matches("ok:")
        .split(';')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// As root, a plugin holds no capability in any set, nor does a program it
/// runs (root's programs get none back), and `no_new_privs` is set; without
/// the sandbox root's plugin holds them all.
#[test]
fn a_plugin_run_by_root_holds_no_capability() {
    at_every_level(|lab, level| {
        let root = lab.root_user();
        lab.install("no-perms", &[]);
        let ops = [json!(["status"]), json!(["child-caps"])];
        for (how, got) in lab.try_ops(level, "no-perms", &ops, false) {
            for (status, who) in got.iter().zip(["the plugin", "a program it runs"]) {
                let caps = capabilities(status);
                assert_eq!(caps.len(), 6, "{status}");
                for (k, v) in &caps {
                    let want = match k.as_str() {
                        "NoNewPrivs" => "1",
                        // Without capabilities, nobody's bounding set is
                        // not its to drop (and no_new_privs keeps it unused).
                        "CapBnd" if !root => continue,
                        _ => "0000000000000000",
                    };
                    assert_eq!(v, want, "{k} of {who} ({how}, {level:?}, {:?})", lab.user);
                }
            }
        }
        if root {
            for (how, got) in lab.try_ops(Level::Unconfined, "no-perms", &ops[..1], false) {
                let caps = capabilities(&got[0]);
                let eff = caps.iter().find(|(k, _)| k == "CapEff").unwrap();
                assert_ne!(eff.1, "0000000000000000", "without the sandbox ({how})");
            }
        }
    });
}

/// Whether `file` grows within 300 ms.
fn grows(file: &Path) -> bool {
    let size = || std::fs::metadata(file).map_or(0, |m| m.len());
    let before = size();
    std::thread::sleep(Duration::from_millis(300));
    size() > before
}

/// That the writer of `file` is stopped when `held`, and goes on when not.
fn assert_held(file: &Path, held: bool, what: &str) {
    if held {
        assert!(stops(file), "{what}: still writing");
    } else {
        assert!(grows(file), "{what}: stopped, so this shows nothing");
    }
}

/// Whether whoever writes `file` stops within 5 s (the writer's death may
/// take a moment under load): a writer that is held stops at once and stays
/// stopped; one that is not goes on growing it in every window.
fn stops(file: &Path) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        if !grows(file) {
            return !grows(file);
        }
    }
    false
}

/// The (pid, parent, process group) of every process.
fn processes() -> Vec<(i32, i32, i32)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().parse::<i32>().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
            Some((
                pid,
                fields.get(1)?.parse().ok()?,
                fields.get(2)?.parse().ok()?,
            ))
        })
        .collect()
}

/// Kills the process group of every process whose command line names
/// `file` (the daemons an attack left where nothing stops them), and reaps
/// the members that became this process's children: it is a child
/// subreaper while other tests run, whose zombies they would be.
fn kill_writers_of(file: &Path) {
    let name = file.to_string_lossy().into_owned();
    let mut groups = Vec::new();
    for (pid, _, pgid) in processes() {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&name) {
            // SAFETY: killpg takes integers and touches no memory.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
            groups.push(pgid);
        }
    }
    let me = std::process::id() as i32;
    for _ in 0..100 {
        let ours: Vec<i32> = processes()
            .into_iter()
            .filter(|(_, parent, pgid)| *parent == me && groups.contains(pgid))
            .map(|(pid, ..)| pid)
            .collect();
        if ours.is_empty() {
            return;
        }
        for pid in ours {
            // SAFETY: waitpid takes an integer and a null status pointer;
            // it returns at once for a child that has not exited.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Nothing a plugin starts outlives what started it, even in a session of
/// its own: not a call (per call, and through `serve`), and not plughost
/// itself, killed with SIGKILL while a worker's daemon runs. That holds at
/// both levels: a PID namespace per process, or with Landlock alone a
/// `plughost-init` that reaps the plugin's orphans and kills them; a
/// plugin that first tries to kill that init (Landlock's signal scope
/// refuses it) is held too. Without the sandbox the daemon lives on, and
/// this shows it.
#[cfg(feature = "mcp-server")]
#[test]
fn nothing_a_plugin_starts_outlives_its_call_or_its_host() {
    at_every_level(|lab, level| {
        lab.install("no-perms", &[]);
        let who = format!("{level:?} as {:?}", lab.user);
        let data = |folder: &str| lab.sandbox.state().join("data").join(folder);
        for level in [level, Level::Unconfined] {
            let held = level != Level::Unconfined;
            // Per call, through `plughost call`: what `op` leaves writing
            // to `file` is held (or, unconfined, goes on).
            let after_call = |op: &str, file: &str, held: bool, what: &str| {
                let input = json!({"ops": [[op, format!("$DATA/{file}")]]}).to_string();
                let out =
                    util::run(lab.command(level, &["--json", "call", "no_perms", &input], false));
                assert_eq!(results(&out), ["ok"], "{who}");
                let beat = data("no-perms").join(file);
                assert_held(&beat, held, &format!("{what} ({level:?}, {who})"));
                kill_writers_of(&beat);
            };
            after_call("daemon", "beat-call", held, "a daemon after its call");
            if held {
                after_call(
                    "parricide",
                    "beat-parricide",
                    true,
                    "a daemon after killing its init",
                );
                after_call(
                    "runner",
                    "beat-runner",
                    true,
                    "a chain that forks and exits",
                );
            }
            // Per call and as a worker, through `serve`, whose per-call
            // plugins run one after another in the same resident PID
            // namespace; then plughost dies.
            let (mut serve, plughost) = lab.serve_under_reaper(level);
            let ops: &[&str] = if held {
                &["daemon", "parricide", "runner", "daemon"]
            } else {
                &["daemon"]
            };
            for (n, op) in ops.iter().enumerate() {
                let file = format!("beat-serve-{n}");
                let got = serve.try_ops("no_perms", &[json!([op, format!("$DATA/{file}")])]);
                assert_eq!(got, ["ok"], "{who}");
                let beat = data("no-perms").join(&file);
                assert_held(
                    &beat,
                    held,
                    &format!("{op} after its call {n} in serve ({level:?}, {who})"),
                );
                kill_writers_of(&beat);
            }
            let got = serve.try_ops("no_perms_w", &[json!(["daemon", "$DATA/beat-worker"])]);
            assert_eq!(got, ["ok"], "{who}");
            let beat = data("no-perms-w").join("beat-worker");
            assert!(
                grows(&beat),
                "the worker's daemon runs while its worker does ({who})"
            );
            // SAFETY: kill takes integers and touches no memory.
            unsafe { libc::kill(plughost, libc::SIGKILL) };
            assert_held(
                &beat,
                held,
                &format!("a worker's daemon after plughost was killed ({level:?}, {who})"),
            );
            kill_writers_of(&beat);
            serve.wait_for_reaper();
        }
    });
}

/// A fork bomb stops at the task limit of the host's plugins (processes
/// and threads count alike; threads are the light way to try it): at the
/// namespace level, for a plugin run by an unprivileged user (`RLIMIT_NPROC`
/// in plughost's user namespace), and at both levels as root (a pids cgroup
/// of plughost's, which root may make). A user with Landlock alone has
/// neither: `doctor` says so, and this checks that it does.
#[test]
fn a_fork_bomb_stops_at_the_plugins_task_limit() {
    at_every_level(|lab, level| {
        lab.install("no-perms", &[]);
        let who = format!("{level:?} as {:?}", lab.user);
        let doctor = util::stdout(&util::run(lab.command(level, &["doctor"], false)));
        let line = doctor
            .lines()
            .find(|l| l.contains("processes and threads of all plugins"))
            .unwrap_or_else(|| panic!("{doctor}"))
            .to_owned();
        // In plughost's user namespace for a user; in a pids cgroup of its
        // own where it can make one (as root, with cgroup v1's pids here).
        let cgroup = lab.root_user()
            && level != Level::Unconfined
            && std::path::Path::new("/sys/fs/cgroup/pids/cgroup.procs").exists();
        let held = (level == Level::Namespaces && !lab.root_user()) || cgroup;
        if !held {
            assert!(line.contains("NOT limited"), "{who}: {line}");
            return;
        }
        assert!(line.contains("at most 2048"), "{who}: {line}");
        for (how, got) in lab.try_ops(level, "no-perms", &[json!(["threads", 2600])], false) {
            let started: u64 = got[0].strip_prefix("ok:").unwrap().parse().unwrap();
            assert!(started < 2048, "{how}, {who}: {started} threads");
        }
        for (how, got) in lab.try_ops(
            Level::Unconfined,
            "no-perms",
            &[json!(["threads", 2600])],
            false,
        ) {
            assert_eq!(got, ["ok:2600"], "without the sandbox ({how}, {who})");
        }
    });
}
