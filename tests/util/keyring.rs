//! A keyring of the test's own: a private D-Bus session bus and GNOME
//! Keyring's Secret Service on it, its login collection unlocked, in a
//! temporary home. Nothing reaches the keyring of whoever runs the tests.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The bus and the keyring daemon, stopped when dropped.
pub struct Keyring {
    dir: tempfile::TempDir,
    bus: Child,
    daemon: Child,
    address: String,
    /// Run as `nobody` (bus, daemon and every program that asks them).
    as_nobody: bool,
}

/// The programs a keyring needs (Debian: dbus-daemon, dbus-bin,
/// gnome-keyring, libsecret-tools).
pub fn available() -> bool {
    [
        "dbus-daemon",
        "dbus-send",
        "gnome-keyring-daemon",
        "secret-tool",
    ]
    .iter()
    .all(|p| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {p}"))
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

impl Keyring {
    /// Starts the bus and the keyring, and waits until the Secret Service
    /// answers.
    pub fn start() -> Keyring {
        Keyring::start_as(false)
    }

    /// [`Keyring::start`] for `nobody`: its bus, its keyring, its home.
    pub fn start_as_nobody() -> Keyring {
        Keyring::start_as(true)
    }

    fn start_as(as_nobody: bool) -> Keyring {
        let dir = tempfile::tempdir().unwrap();
        let runtime = dir.path().join("run");
        std::fs::create_dir_all(&runtime).unwrap();
        if as_nobody {
            super::chown_to_nobody(dir.path());
        }
        let command = |program: &str| command(as_nobody, program);
        let mut bus = command("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .arg(format!(
                "--address=unix:path={}",
                runtime.join("bus").display()
            ))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut address = String::new();
        BufReader::new(bus.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        let address = address.trim().to_owned();
        assert!(address.starts_with("unix:"), "dbus-daemon said {address:?}");
        let mut daemon = command("gnome-keyring-daemon")
            .args(["--foreground", "--unlock", "--components=secrets"])
            .env("HOME", dir.path())
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .env_remove("XDG_DATA_HOME")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The login collection's password, then end of input.
        let mut stdin = daemon.stdin.take().unwrap();
        stdin.write_all(b"test-password").unwrap();
        drop(stdin);
        let k = Keyring {
            dir,
            bus,
            daemon,
            address,
            as_nobody,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !k.answers() {
            assert!(
                Instant::now() < deadline,
                "the Secret Service did not come up"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        k
    }

    /// Whether the daemon owns the Secret Service's name, its default
    /// collection exists and is unlocked, and a lookup finds nothing.
    fn answers(&self) -> bool {
        let says = |args: &[&str], what: &str| {
            let out = self.dbus_send(args).output().unwrap();
            String::from_utf8_lossy(&out.stdout).contains(what)
        };
        says(
            &[
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.NameHasOwner",
                "string:org.freedesktop.secrets",
            ],
            "boolean true",
        ) && says(
            &[
                "--dest=org.freedesktop.secrets",
                "/org/freedesktop/secrets/aliases/default",
                "org.freedesktop.DBus.Properties.Get",
                "string:org.freedesktop.Secret.Collection",
                "string:Locked",
            ],
            "boolean false",
        ) && self.lookup_raw(&["xdg:schema", "none"]).status.code() == Some(1)
    }

    /// Points `c` at this keyring's bus.
    pub fn env(&self, c: &mut Command) {
        c.env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .env("XDG_RUNTIME_DIR", self.dir.path().join("run"));
    }

    /// The value the keyring holds for plughost's secret `name` of the
    /// state folder `state`, asked as any program of the user would.
    pub fn lookup(&self, state: &Path, name: &str) -> Option<String> {
        let state = state.display().to_string();
        let out = self.lookup_raw(&["plughost-store", &state, "plughost-secret", name]);
        out.status
            .success()
            .then(|| String::from_utf8(out.stdout).unwrap())
    }

    fn lookup_raw(&self, attributes: &[&str]) -> std::process::Output {
        let mut c = command(self.as_nobody, "secret-tool");
        c.arg("lookup").args(attributes);
        self.env(&mut c);
        c.output().unwrap()
    }

    /// Locks the default collection, as a screen lock or a timeout does.
    pub fn lock(&self) {
        let out = self
            .dbus_send(&[
                "--dest=org.freedesktop.secrets",
                "/org/freedesktop/secrets",
                "org.freedesktop.Secret.Service.Lock",
                "array:objpath:/org/freedesktop/secrets/aliases/default",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Stops the keyring daemon (`SIGSTOP`): it holds its name on the bus
    /// and answers nothing, as a hung service does.
    pub fn freeze(&self) {
        let stopped = Command::new("kill")
            .args(["-STOP", &self.daemon.id().to_string()])
            .status()
            .unwrap();
        assert!(
            stopped.success(),
            "the keyring daemon ({}) was gone before it could be stopped",
            self.daemon.id()
        );
    }

    fn dbus_send(&self, args: &[&str]) -> Command {
        let mut c = command(self.as_nobody, "dbus-send");
        c.args(["--session", "--print-reply"]).args(args);
        self.env(&mut c);
        c
    }
}

impl Drop for Keyring {
    fn drop(&mut self) {
        for child in [&mut self.daemon, &mut self.bus] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `program`, as `nobody` when asked (`setpriv`).
fn command(as_nobody: bool, program: &str) -> Command {
    if !as_nobody {
        return Command::new(program);
    }
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", program]);
    c
}
