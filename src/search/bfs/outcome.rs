//! How a pass ends.

use super::levels::disk::DiskError;
use crate::search::interrupt::Abort;
use crate::shogi::Move;

pub(crate) enum BfsOutcome {
    /// Shortest mating lines: the first found, then others up to the cap; `count` is the
    /// number of shortest lines, capped.
    Mate { lines: Vec<Vec<Move>>, count: u32 },
    /// The reachable positions ran out without a mate.
    NoMate,
    /// Gave up: memory budget, stop or time limit. No helpmate is shorter than `lower_bound`.
    GaveUp { lower_bound: u32, reason: GiveUp },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum GiveUp {
    Memory,
    /// The levels grow like a bushy tree's (see `bushy.rs`): deepening finds its mate sooner.
    Bushy,
    /// The links could not go to disk, or could not be read back.
    Disk(DiskError),
    /// The next level would go past the longest mate looked for.
    MaxPlies,
    Aborted(Abort),
}
