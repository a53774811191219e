//! One request and its answer: the `select!` loop of a call.
//!
//! A per-call process and a persistent worker run the same loop; only the
//! [`Framing`] of the answer differs. The loop writes the request while it
//! reads stdout and stderr (so a plugin that never reads a large input cannot
//! deadlock the host), cuts stdout at the cap, keeps stderr's head and tail,
//! hands progress lines to the caller, and stops at the deadline or on
//! cancellation. It never kills anything itself: the caller ends the process
//! with [`super::process::end`] according to how the exchange ended.

use std::future::Future;
use std::io;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::process::{Leader, Pipes};
use super::stderr::StderrCollector;
use super::{Progress, READ_CHUNK};

/// Where an answer ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// A per-call process: the answer is all of stdout. stdin is closed once
    /// the request is written; the exchange ends when the leader has exited and
    /// its pipes closed, or a short linger after the exit (a grandchild holding
    /// a pipe open does not hold the call).
    UntilExit,
    /// A persistent worker: the answer is one line. stdin stays open; a worker
    /// that exits or closes stdout before the line is [`Stop::Died`].
    Line,
}

/// The request and the rules of one exchange.
pub(crate) struct Exchange<'a> {
    pub input: &'a [u8],
    pub framing: Framing,
    /// Largest answer accepted, in bytes (a line's newline not counted).
    pub max_stdout: usize,
    /// How long the pipes may stay open after the leader exits.
    pub pipe_linger: Duration,
    pub deadline: tokio::time::Instant,
}

/// An answer that arrived.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    /// All of stdout ([`Framing::UntilExit`]), or the line without its newline.
    pub stdout: Vec<u8>,
    /// [`Framing::Line`]: what came after the line (a worker out of step).
    pub extra: Vec<u8>,
    /// [`Framing::Line`]: the worker answered before reading the whole
    /// request, or closed its stdin: it is out of step with the host.
    pub unread_input: bool,
}

/// Why an exchange ended without an answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    Timeout,
    Cancelled,
    OutputTooLarge,
    /// [`Framing::Line`]: the worker exited or closed stdout before answering;
    /// `stdout` holds what it wrote.
    Died {
        stdout: Vec<u8>,
        exited: bool,
    },
}

/// Pipes whose buffered bytes can be taken without waiting, so the
/// progress lines a worker wrote before its answer reach the caller before
/// the answer does, and a worker that wrote between calls is noticed.
pub(crate) trait ReadNow {
    /// Reads what is there now; `WouldBlock` when nothing is.
    fn read_now(&mut self, buf: &mut [u8]) -> io::Result<usize>;
}

impl ReadNow for tokio::net::unix::pipe::Receiver {
    fn read_now(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        super::unix::read_now(self.as_raw_fd(), buf)
    }
}

/// Runs one exchange over `pipes`. See the module docs.
pub(crate) async fn exchange<W, R, E>(
    pipes: &mut Pipes<W, R, E>,
    leader: &impl Leader,
    x: Exchange<'_>,
    cancel: impl Future<Output = ()>,
    stderr: &mut StderrCollector,
    on_progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<Answer, Stop>
where
    W: AsyncWrite + Unpin,
    R: AsyncRead + ReadNow + Unpin,
    E: AsyncRead + ReadNow + Unpin,
{
    let line_mode = x.framing == Framing::Line;
    let mut input = x.input;
    if input.is_empty() && !line_mode {
        pipes.stdin = None;
    }
    let mut out = Vec::new();
    // Where the next search for the newline starts.
    let mut scanned = 0;
    let mut err_buf = vec![0u8; 8 * 1024];
    let mut exited = false;
    let deadline = tokio::time::sleep_until(x.deadline);
    let linger = tokio::time::sleep(Duration::MAX);
    tokio::pin!(deadline, linger, cancel);

    let ended = loop {
        if exited && pipes.stdout.is_none() && (line_mode || pipes.stderr.is_none()) {
            break finished(line_mode, out, exited);
        }
        tokio::select! {
            // Write stdin in slices, so reading never waits on a full input pipe.
            r = async { pipes.stdin.as_mut().expect("checked").write(input).await },
                if pipes.stdin.is_some() && !input.is_empty() =>
            {
                match r {
                    Ok(n) if n > 0 => {
                        input = &input[n..];
                        if input.is_empty() {
                            if line_mode {
                                let _ = pipes.stdin.as_mut().expect("checked").flush().await;
                            } else {
                                pipes.stdin = None;
                            }
                        }
                    }
                    // The plugin closed its stdin (EPIPE): it answers without the rest.
                    _ => pipes.stdin = None,
                }
            }
            r = async { pipes.stdout.as_mut().expect("checked").read_buf(&mut out).await },
                if pipes.stdout.is_some() =>
            {
                match r {
                    Ok(0) | Err(_) => {
                        pipes.stdout = None;
                        if line_mode && !exited {
                            // A worker that closes stdout is usually exiting:
                            // the linger tells an exit from a closed pipe.
                            linger.as_mut().reset(tokio::time::Instant::now() + x.pipe_linger);
                        }
                    }
                    Ok(_) => {
                        if line_mode && let Some(at) = out[scanned..].iter().position(|b| *b == b'\n') {
                            let at = scanned + at;
                            if at > x.max_stdout {
                                break Err(Stop::OutputTooLarge);
                            }
                            let extra = out.split_off(at + 1);
                            out.truncate(at);
                            let unread_input = !input.is_empty() || pipes.stdin.is_none();
                            break Ok(Answer { stdout: out, extra, unread_input });
                        }
                        scanned = out.len();
                        if out.len() > x.max_stdout {
                            break Err(Stop::OutputTooLarge);
                        }
                        out.reserve(READ_CHUNK.min(x.max_stdout + 1 - out.len()));
                    }
                }
            }
            r = async { pipes.stderr.as_mut().expect("checked").read(&mut err_buf).await },
                if pipes.stderr.is_some() =>
            {
                match r {
                    Ok(0) | Err(_) => pipes.stderr = None,
                    Ok(n) => stderr.push(&err_buf[..n], on_progress),
                }
            }
            _ = leader.exited(), if !exited => {
                exited = true;
                if !line_mode {
                    // The leader's own ends of its pipes closed as it exited,
                    // so what it wrote is there now: taken at once, the pipes
                    // usually reach their end without arming the linger (a
                    // timer that wakes the runtime's driver thread).
                    if let Some(pipe) = pipes.stdout.as_mut() {
                        let taken = read_all_now(pipe, &mut err_buf, |bytes| {
                            out.extend_from_slice(bytes);
                            out.len() <= x.max_stdout
                        });
                        match taken {
                            Now::End => pipes.stdout = None,
                            Now::Open => {}
                            Now::Refused => break Err(Stop::OutputTooLarge),
                        }
                    }
                    if let Some(pipe) = pipes.stderr.as_mut()
                        && read_all_now(pipe, &mut err_buf, |bytes| {
                            stderr.push(bytes, on_progress);
                            true
                        }) == Now::End
                    {
                        pipes.stderr = None;
                    }
                }
                if pipes.stdout.is_some() || pipes.stderr.is_some() {
                    linger.as_mut().reset(tokio::time::Instant::now() + x.pipe_linger);
                }
            }
            _ = &mut linger => break finished(line_mode, out, exited),
            _ = &mut deadline => break Err(Stop::Timeout),
            _ = &mut cancel => break Err(Stop::Cancelled),
        }
    };
    if line_mode {
        // The worker wrote its progress before its answer, or its last words
        // before it died: take what is in the pipe now, even if the runtime
        // has not seen it yet.
        if let Some(pipe) = pipes.stderr.as_mut()
            && read_all_now(pipe, &mut err_buf, |bytes| {
                stderr.push(bytes, on_progress);
                true
            }) == Now::End
        {
            pipes.stderr = None;
        }
    }
    ended
}

/// Where a pipe read without waiting stopped.
#[derive(Debug, PartialEq, Eq)]
enum Now {
    /// At its end (or failed): nothing more will come.
    End,
    /// Open, with nothing more there for now.
    Open,
    /// `take` refused the bytes.
    Refused,
}

/// Reads everything `pipe` holds now, in `buf`-sized pieces handed to
/// `take` (which returns false to stop).
fn read_all_now(
    pipe: &mut impl ReadNow,
    buf: &mut [u8],
    mut take: impl FnMut(&[u8]) -> bool,
) -> Now {
    loop {
        match pipe.read_now(buf) {
            Ok(0) => return Now::End,
            Ok(n) if !take(&buf[..n]) => return Now::Refused,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Now::Open,
            Err(_) => return Now::End,
        }
    }
}

/// The end of a loop that saw the leader exit (or its pipes close).
fn finished(line_mode: bool, out: Vec<u8>, exited: bool) -> Result<Answer, Stop> {
    if line_mode {
        Err(Stop::Died {
            stdout: out,
            exited,
        })
    } else {
        Ok(Answer {
            stdout: out,
            ..Answer::default()
        })
    }
}
