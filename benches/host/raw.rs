//! The raw baselines the host is compared with: the least a program must do
//! to get the same answer from the same plugin, on the same tokio runtime.
//!
//! - [`call`]: a process per call (tokio process: spawn, stdin written and
//!   closed, stdout read to its end, wait).
//! - [`LineWorker`]: one request line written to an already running worker
//!   and its answer line read back.
//!
//! Both send the exact request the host sends (`plughost::protocol::Request`
//! with an empty invocation), so the plugin does the same work either way.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use plughost::protocol::Invocation;
use plughost::protocol::{Context, Request};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The request the host writes for `tool` of the plugin in `plugin_dir`
/// (its data folder made as the host would); without the trailing newline.
pub(crate) fn request(tool: &str, input: &Value, plugin_dir: &Path, state: &Path) -> Vec<u8> {
    let data = data_dir(plugin_dir, state);
    std::fs::create_dir_all(&data).unwrap();
    serde_json::to_vec(&Request {
        tool,
        input,
        context: Context {
            plugin_dir,
            data_dir: &data,
            invocation: &Invocation::default(),
            trace: None,
        },
    })
    .unwrap()
}

/// The host's data folder for the plugin in `plugin_dir`.
pub(crate) fn data_dir(plugin_dir: &Path, state: &Path) -> PathBuf {
    state.join("data").join(plugin_dir.file_name().unwrap())
}

/// A process per call: `program` in `cwd`, `request` on stdin.
pub(crate) async fn call(program: &Path, cwd: &Path, request: &[u8]) {
    exchange(Command::new(program).current_dir(cwd), request).await;
}

/// Runs `cmd` with piped stdin and stdout (stderr discarded), writes
/// `request` and closes stdin while stdout is read to its end, then waits.
/// Panics unless it answered and exited 0.
pub(crate) async fn exchange(cmd: &mut Command, request: &[u8]) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let write = async {
        let _ = stdin.write_all(request).await;
        drop(stdin);
    };
    let mut out = Vec::new();
    let read = stdout.read_to_end(&mut out);
    let (_, r) = tokio::join!(write, read);
    r.unwrap();
    let status = child.wait().await.unwrap();
    assert!(status.success() && !out.is_empty(), "raw call: {status}");
}

/// One running copy of a persistent plugin's entrypoint, started as the host
/// starts a worker (`PLUGHOST_PERSISTENT=1`, cwd the plugin folder), spoken
/// to without the host.
pub(crate) struct LineWorker {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    answer: String,
}

impl LineWorker {
    pub(crate) fn start(program: &Path, cwd: &Path) -> LineWorker {
        let mut child = Command::new(program)
            .current_dir(cwd)
            .env("PLUGHOST_PERSISTENT", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        LineWorker {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            _child: child,
            answer: String::new(),
        }
    }

    /// Writes `line` (ending in `\n`) and reads one answer line: the time
    /// between the two.
    pub(crate) async fn round_trip(&mut self, line: &[u8]) -> Duration {
        self.answer.clear();
        let t = Instant::now();
        self.stdin.write_all(line).await.unwrap();
        let n = self.stdout.read_line(&mut self.answer).await.unwrap();
        let took = t.elapsed();
        assert!(
            n > 0 && self.answer.contains("result"),
            "the worker answered"
        );
        took
    }
}
