//! The ways a level is expanded. Each makes the same next level, edges and order:
//!
//! - `children.rs`: one position's children (checks, then evasions that leave a check), the
//!   part every way shares;
//! - `serial.rs`: the calling thread alone;
//! - `parallel/`: the threads of a pool, each expanding batches and inserting the children of
//!   the shards it owns, a wide level at a time;
//! - `narrow/`: every thread in one loop over many narrow levels, without a hand-off a level;
//! - `crew.rs`: the helper threads the narrow loop and the pool's levels call on;
//! - `distributed/`: ranks (threads or MPI processes) that each own a share of the keys and
//!   exchange children every level.

pub(super) mod children;
pub(super) mod crew;
pub(crate) mod distributed;
pub(super) mod narrow;
pub(super) mod parallel;
pub(super) mod serial;
