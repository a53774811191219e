//! Tool search: the best matches for a few words among many tools, so that
//! a model can be shown two tools (search, call) instead of hundreds.
//!
//! Ranking is Okapi BM25 over one weighted bag of words per tool (the
//! "BM25F" simplification: each field's term counts are multiplied by the
//! field's weight before the usual saturation and length normalisation).
//! The fields are the tool's name (split at `_`, `-`, `.` and camelCase
//! humps), its plugin, its title, its description, and its parameters'
//! names and descriptions. Words are lower-cased, common English words
//! dropped, and reduced by a light suffix stripper ("files" and "file",
//! "listing" and "list" meet). `scripts/bench --only search` measures it on
//! real servers' tools.
//!
//! The index knows nothing of approval or profiles: its caller builds it from
//! the tools a client may see and call, and nothing else.

mod rank;
mod words;

pub use rank::{Hit, SearchDoc, SearchIndex};
