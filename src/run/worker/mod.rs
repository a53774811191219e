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
//! The workers of every transport (these line workers, and MCP servers run
//! as plugins) are kept by one generic [`Registry`](registry::Registry): one
//! entry per plugin version and grant, with the same bookkeeping (backoff,
//! retiring, load figures); a changed plugin or grant retires its entry:
//! idle workers stop at once, busy ones after their call. The transports
//! differ only in how a worker is handed out, started, checked and stopped
//! (`pool.rs` for lines, `slot.rs` and `server.rs` for MCP).

mod backoff;
mod bookkeeping;
mod load;
mod pool;
mod process;
mod registry;
mod server;
mod slot;
mod workers;

pub use load::{WorkerInfo, WorkerLoad};
pub(crate) use pool::Pool;
pub(crate) use process::{TmpFolder, WorkerSpec};
pub(crate) use server::{Server, StartError};
pub(crate) use slot::Slot;
pub(crate) use workers::Workers;
