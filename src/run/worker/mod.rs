//! Persistent workers: a plugin process that stays up between calls, so an
//! interpreter starts once instead of once per call.
//!
//! The protocol is the per-call one, framed by lines: each request is written
//! as one compact JSON line on the worker's stdin, which stays open, and the
//! worker answers with exactly one response object on one line of stdout, in
//! order, one request at a time. EOF on stdin means "finish and exit". Workers
//! get `PLUGHOST_PERSISTENT=1`.
//!
//! Every rule of a per-call process holds per request ([`Worker::call`] runs
//! the same exchange loop): the deadline, the stdout cap on the line, stderr's
//! head and tail, progress lines, cancellation. Whatever goes wrong during a
//! call (timeout, cancellation, a capped, garbled or doubled answer, a worker
//! that exits or closes stdout) fails that call and kills the worker's whole
//! process group; the next call starts a fresh worker. The sandbox is applied
//! once, when the worker starts.
//!
//! A [`Pool`] serves one version of one plugin under one grant; when either
//! changes, the host retires the pool: idle workers stop at once, busy ones
//! after their call.

mod backoff;
mod load;
mod pool;
mod process;
mod servers;

pub use load::WorkerLoad;
pub use pool::WorkerInfo;
pub(crate) use pool::{Pool, Workers};
pub(crate) use process::{TmpFolder, WorkerSpec};
pub(crate) use servers::{Server, Slot, StartError};
