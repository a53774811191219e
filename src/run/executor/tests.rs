//! The executor's state machines against a fake child: in-memory pipes and a
//! leader whose exit and signals the test controls, on a paused clock. The
//! same logic is tested with real processes in `tests/executor*.rs`; here the
//! order of the kill steps and the timing are checked without timing luck.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::pin::Pin;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, DuplexStream, ReadBuf, duplex};
use tokio::sync::watch;

use super::exchange::ReadNow;
use super::process::{End, Leader, Pipes, end};
use super::unix::{SIGKILL, SIGTERM};
use super::*;

/// A leader that records what is done to it.
#[derive(Clone)]
struct FakeLeader {
    exited: Arc<watch::Sender<bool>>,
    log: Arc<Mutex<Vec<String>>>,
    exits_on_term: bool,
}

impl FakeLeader {
    fn new(exits_on_term: bool) -> FakeLeader {
        FakeLeader {
            exited: Arc::new(watch::channel(false).0),
            log: Arc::default(),
            exits_on_term,
        }
    }

    fn exit(&self) {
        self.exited.send_replace(true);
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    fn note(&self, what: impl Into<String>) {
        self.log.lock().unwrap().push(what.into());
    }
}

impl Leader for FakeLeader {
    async fn exited(&self) {
        let mut rx = self.exited.subscribe();
        let _ = rx.wait_for(|e| *e).await;
    }

    fn has_exited(&self) -> bool {
        *self.exited.borrow()
    }

    fn signal_group(&self, signal: i32) -> bool {
        let name = match signal {
            SIGTERM => "TERM",
            SIGKILL => "KILL",
            _ => "other",
        };
        self.note(format!("{name} at {:?}", tokio::time::Instant::now()));
        if signal == SIGKILL || (signal == SIGTERM && self.exits_on_term) {
            self.exit();
        }
        true
    }

    async fn reap(&mut self) -> io::Result<ExitStatus> {
        self.note("reap");
        Ok(ExitStatus::from_raw(0))
    }

    async fn sweep(&mut self) {
        self.note("sweep");
    }
}

/// stdout or stderr of the fake child; `read_now` polls once, as a real pipe
/// would answer.
struct FakePipe(DuplexStream);

impl AsyncRead for FakePipe {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl ReadNow for FakePipe {
    fn read_now(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut rb = ReadBuf::new(buf);
        match Pin::new(&mut self.0).poll_read(&mut cx, &mut rb) {
            Poll::Ready(Ok(())) => Ok(rb.filled().len()),
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

/// The plugin's ends of the pipes.
struct Plugin {
    stdin: DuplexStream,
    stdout: DuplexStream,
    stderr: DuplexStream,
}

fn pipes(capacity: usize) -> (Pipes<DuplexStream, FakePipe, FakePipe>, Plugin) {
    let (host_in, plugin_in) = duplex(capacity);
    let (plugin_out, host_out) = duplex(capacity);
    let (plugin_err, host_err) = duplex(capacity);
    (
        Pipes {
            stdin: Some(host_in),
            stdout: Some(FakePipe(host_out)),
            stderr: Some(FakePipe(host_err)),
        },
        Plugin {
            stdin: plugin_in,
            stdout: plugin_out,
            stderr: plugin_err,
        },
    )
}

fn rules(input: &[u8], framing: Framing, max_stdout: usize) -> Exchange<'_> {
    Exchange {
        input,
        framing,
        max_stdout,
        pipe_linger: Duration::from_millis(200),
        deadline: tokio::time::Instant::now() + Duration::from_secs(30),
    }
}

fn progress_sink() -> (
    Arc<Mutex<Vec<Progress>>>,
    impl Fn(Progress) + Send + Sync + 'static,
) {
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = seen.clone();
    (seen, move |p| sink.lock().unwrap().push(p))
}

#[tokio::test(start_paused = true)]
async fn a_per_call_answer_is_all_of_stdout_then_the_group_is_killed_at_once() {
    let (mut host, mut plugin) = pipes(1024);
    let mut leader = FakeLeader::new(true);
    let child = leader.clone();
    tokio::spawn(async move {
        let mut request = Vec::new();
        plugin.stdin.read_to_end(&mut request).await.unwrap();
        assert_eq!(request, b"{\"tool\":\"t\"}");
        plugin.stdout.write_all(b"{\"result\":").await.unwrap();
        plugin.stdout.write_all(b"\"ok\"}").await.unwrap();
        drop(plugin);
        child.exit();
    });
    let mut err = StderrCollector::new(1024);
    let answer = exchange(
        &mut host,
        &leader,
        rules(b"{\"tool\":\"t\"}", Framing::UntilExit, 1 << 20),
        std::future::pending(),
        &mut err,
        &|_| {},
    )
    .await
    .unwrap();
    assert_eq!(answer.stdout, b"{\"result\":\"ok\"}");
    end(&mut leader, End::Now, Duration::from_millis(500))
        .await
        .unwrap();
    let log = leader.log();
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(
        log[0].starts_with("KILL"),
        "no SIGTERM after a clean exit: {log:?}"
    );
    assert_eq!(&log[1..], ["reap", "sweep"]);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_asks_politely_then_kills_after_the_grace() {
    for exits_on_term in [true, false] {
        let (mut host, _plugin) = pipes(1024);
        let mut leader = FakeLeader::new(exits_on_term);
        let mut err = StderrCollector::new(1024);
        let started = tokio::time::Instant::now();
        let stop = exchange(
            &mut host,
            &leader,
            rules(b"{}", Framing::UntilExit, 1 << 20),
            std::future::pending(),
            &mut err,
            &|_| {},
        )
        .await
        .unwrap_err();
        assert_eq!(stop, Stop::Timeout);
        assert_eq!(started.elapsed(), Duration::from_secs(30));
        let grace = Duration::from_millis(500);
        let before_end = tokio::time::Instant::now();
        end(&mut leader, End::Terminate, grace).await.unwrap();
        let log = leader.log();
        assert!(
            log[0].starts_with("TERM") && log[1].starts_with("KILL"),
            "{log:?}"
        );
        assert_eq!(&log[2..], ["reap", "sweep"]);
        let waited = before_end.elapsed();
        if exits_on_term {
            assert_eq!(waited, Duration::ZERO, "no grace once it exited");
        } else {
            assert_eq!(waited, grace, "SIGKILL only after the grace");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn cancellation_stops_the_exchange() {
    let (mut host, _plugin) = pipes(1024);
    let leader = FakeLeader::new(true);
    let mut err = StderrCollector::new(1024);
    let stop = exchange(
        &mut host,
        &leader,
        rules(b"{}", Framing::Line, 1 << 20),
        tokio::time::sleep(Duration::from_secs(1)),
        &mut err,
        &|_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(stop, Stop::Cancelled);
}

#[tokio::test(start_paused = true)]
async fn stdout_past_the_cap_stops_at_once_and_memory_stays_near_the_cap() {
    let (mut host, mut plugin) = pipes(64 * 1024);
    let leader = FakeLeader::new(true);
    tokio::spawn(async move {
        let chunk = vec![b'a'; 64 * 1024];
        while plugin.stdout.write_all(&chunk).await.is_ok() {}
    });
    let mut err = StderrCollector::new(1024);
    let stop = exchange(
        &mut host,
        &leader,
        rules(b"{}", Framing::UntilExit, 1000),
        std::future::pending(),
        &mut err,
        &|_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(stop, Stop::OutputTooLarge);
}

#[tokio::test(start_paused = true)]
async fn a_line_that_never_ends_is_cut_at_the_cap() {
    let (mut host, mut plugin) = pipes(64 * 1024);
    let leader = FakeLeader::new(true);
    tokio::spawn(async move {
        let chunk = vec![b'x'; 4096];
        while plugin.stdout.write_all(&chunk).await.is_ok() {}
    });
    let mut err = StderrCollector::new(1024);
    let stop = exchange(
        &mut host,
        &leader,
        rules(b"{}\n", Framing::Line, 100_000),
        std::future::pending(),
        &mut err,
        &|_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(stop, Stop::OutputTooLarge);
}

#[tokio::test(start_paused = true)]
async fn a_worker_answers_one_line_and_keeps_its_stdin() {
    let (mut host, mut plugin) = pipes(1024);
    let leader = FakeLeader::new(true);
    let worker = tokio::spawn(async move {
        let mut served = 0;
        let mut buf = vec![0u8; 256];
        let mut pending = Vec::new();
        loop {
            let n = plugin.stdin.read(&mut buf).await.unwrap();
            if n == 0 {
                return served;
            }
            pending.extend_from_slice(&buf[..n]);
            while let Some(at) = pending.iter().position(|b| *b == b'\n') {
                pending.drain(..=at);
                served += 1;
                let line = format!("::progress:: {served}/2 working\n");
                plugin.stderr.write_all(line.as_bytes()).await.unwrap();
                let answer = format!("{{\"result\":\"answer {served}\"}}\n");
                plugin.stdout.write_all(answer.as_bytes()).await.unwrap();
            }
        }
    });
    for n in 1..=2 {
        let (seen, sink) = progress_sink();
        let mut err = StderrCollector::new(1024);
        let answer = exchange(
            &mut host,
            &leader,
            rules(b"{\"tool\":\"t\"}\n", Framing::Line, 1 << 20),
            std::future::pending(),
            &mut err,
            &sink,
        )
        .await
        .unwrap();
        assert_eq!(
            answer.stdout,
            format!("{{\"result\":\"answer {n}\"}}").as_bytes()
        );
        assert!(answer.extra.is_empty() && !answer.unread_input);
        assert!(host.stdin.is_some(), "stdin stays open between requests");
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.len(),
            1,
            "the progress line before the answer arrives with it"
        );
        assert_eq!(seen[0].progress, n as f64);
    }
    host.stdin = None;
    assert_eq!(worker.await.unwrap(), 2, "EOF on stdin ends the worker");
}

#[tokio::test(start_paused = true)]
async fn two_lines_for_one_request_leave_the_second_as_extra() {
    let (mut host, mut plugin) = pipes(1024);
    let leader = FakeLeader::new(true);
    plugin
        .stdout
        .write_all(b"{\"result\":\"a\"}\n{\"result\":\"b\"}\n")
        .await
        .unwrap();
    let mut err = StderrCollector::new(1024);
    let answer = exchange(
        &mut host,
        &leader,
        rules(b"{}\n", Framing::Line, 1 << 20),
        std::future::pending(),
        &mut err,
        &|_| {},
    )
    .await
    .unwrap();
    assert_eq!(answer.stdout, b"{\"result\":\"a\"}");
    assert_eq!(answer.extra, b"{\"result\":\"b\"}\n");
}

#[tokio::test(start_paused = true)]
async fn a_worker_that_exits_or_closes_stdout_before_answering_died() {
    // Closes stdout without a newline.
    let (mut host, mut plugin) = pipes(1024);
    let leader = FakeLeader::new(true);
    plugin.stdout.write_all(b"{\"result\":").await.unwrap();
    drop(plugin.stdout);
    let mut err = StderrCollector::new(1024);
    let stop = exchange(
        &mut host,
        &leader,
        rules(b"{}\n", Framing::Line, 1 << 20),
        std::future::pending(),
        &mut err,
        &|_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(
        stop,
        Stop::Died {
            stdout: b"{\"result\":".to_vec(),
            exited: false
        }
    );

    // Exits while a grandchild keeps stdout open: the linger ends the wait.
    let (mut host, _plugin) = pipes(1024);
    let leader = FakeLeader::new(true);
    leader.exit();
    let started = tokio::time::Instant::now();
    let stop = exchange(
        &mut host,
        &leader,
        rules(b"{}\n", Framing::Line, 1 << 20),
        std::future::pending(),
        &mut err,
        &|_| {},
    )
    .await
    .unwrap_err();
    assert!(matches!(stop, Stop::Died { exited: true, .. }), "{stop:?}");
    assert_eq!(started.elapsed(), Duration::from_millis(200));
}

#[tokio::test(start_paused = true)]
async fn an_exited_leader_whose_grandchild_holds_stdout_ends_after_the_linger() {
    let (mut host, mut plugin) = pipes(1024);
    let leader = FakeLeader::new(true);
    plugin
        .stdout
        .write_all(b"{\"result\":\"ok\"}")
        .await
        .unwrap();
    leader.exit();
    let started = tokio::time::Instant::now();
    let mut err = StderrCollector::new(1024);
    let answer = exchange(
        &mut host,
        &leader,
        rules(b"{}", Framing::UntilExit, 1 << 20),
        std::future::pending(),
        &mut err,
        &|_| {},
    )
    .await
    .unwrap();
    assert_eq!(answer.stdout, b"{\"result\":\"ok\"}");
    assert_eq!(started.elapsed(), Duration::from_millis(200));
    drop(plugin);
}

#[tokio::test(start_paused = true)]
async fn an_unread_large_input_cannot_deadlock_and_marks_a_worker_out_of_step() {
    let input = vec![b' '; 1 << 20];
    for framing in [Framing::UntilExit, Framing::Line] {
        let (mut host, mut plugin) = pipes(4096);
        let leader = FakeLeader::new(true);
        let child = leader.clone();
        tokio::spawn(async move {
            plugin.stderr.write_all(&vec![b'e'; 100_000]).await.unwrap();
            plugin
                .stdout
                .write_all(b"{\"result\":\"early\"}\n")
                .await
                .unwrap();
            if framing == Framing::UntilExit {
                drop(plugin);
                child.exit();
            } else {
                // Stays alive with the request half read.
                std::future::pending::<()>().await;
            }
        });
        let mut err = StderrCollector::new(1024);
        let answer = exchange(
            &mut host,
            &leader,
            rules(&input, framing, 1 << 20),
            std::future::pending(),
            &mut err,
            &|_| {},
        )
        .await
        .unwrap();
        assert!(answer.stdout.starts_with(b"{\"result\":\"early\"}"));
        if framing == Framing::Line {
            assert!(answer.unread_input);
        }
        assert!(
            err.render().contains("omitted"),
            "stderr was drained and capped"
        );
    }
}
