//! Breadth-first helpmate search, for long solutions.
//!
//! Iterative deepening re-walks everything above its frontier in each iteration, which for a
//! solution of thousands of plies costs far more than the frontier itself. This search expands
//! each attacker position once, level by level (a level is two plies: a check and an evasion),
//! keeping only the current and next levels as packed positions with their checks, a set of the
//! keys seen, and per position a link to its parent for rebuilding the line. Only positions with
//! a check are kept: one without has no future, and on long problems most evasions lead to one
//! (see `expand/children.rs`). The first level that contains a mate
//! gives the shortest one. Memory is bounded by a budget; past it the search gives up (reporting
//! the bound it proved) and the caller goes on with iterative deepening.
//!
//! Counting solutions: every shortest mating line passes each of its positions at that
//! position's distance from the root (otherwise a shorter mate would exist), so the shortest
//! lines are exactly the paths through the level graph. With counting on, every edge into a
//! position of the next level is kept (not only the first), each position carries the number of
//! paths reaching it (capped), the mate level is scanned to the end, and lines are read back
//! from the mating edges towards the root.
//!
//! The rooms:
//! - `pass.rs`: the level loop, written once, that every way of running the pass goes through;
//!   `limits.rs` and `tuning.rs` what it is given, `outcome.rs` how it ends, `reports.rs` what
//!   it tells meanwhile, `bushy.rs` when it gives way to deepening, `room.rs` how it stays
//!   within its memory.
//! - `keys/`: the key store, the positions met.
//! - `levels/`: a level's positions, the links between levels (in memory, on disk), checkpoints.
//! - `expand/`: the ways of expanding a level: serial, parallel, narrow, distributed among
//!   ranks.
//! - `one_process/`: the pass in one process, handing its loop to the pool's threads once they
//!   are due; `expand/distributed/` is the pass among ranks.

mod bushy;
mod expand;
mod keys;
mod levels;
mod limits;
mod one_process;
mod outcome;
mod pass;
mod reports;
mod room;
mod tuning;

pub use keys::census::{bucket_floor, GAP_BUCKETS};
pub use keys::forgetting::Forgetting;
pub(crate) use levels::checkpoint::Plan as CheckpointPlan;
pub use levels::checkpoint::{
    read_unchecked as read_checkpoint_unchecked, CheckpointStart, Checkpointing,
};
pub use levels::disk::{DiskBudget, DiskError};

pub(crate) use expand::distributed;
#[cfg(feature = "mpi")]
pub use expand::distributed::mpi::{start as start_mpi, MpiRank, MpiThread};
pub use expand::distributed::transport::{LocalRank, Transport};
pub(crate) use limits::PassLimits;
pub(crate) use one_process::{search_in_pool, Caches, RELEASE_INLINE_BYTES};
pub(crate) use outcome::{BfsOutcome, GiveUp};
pub(crate) use reports::BfsProgress;
pub use reports::LevelStats;
pub use tuning::PassTuning;
