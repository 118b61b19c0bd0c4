//! What ends a search from outside (the `stop` flag, the time limit, a mate found by another
//! thread), and why a search ended early. Everything that polls sits above this file: the
//! deepening iteration, the counting, the helpers and every part of the breadth-first pass.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Why an iteration stopped before finishing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Abort {
    /// `stop` from the user (or the GUI).
    Stopped,
    /// The time limit passed.
    Timeout,
    /// The iteration used more nodes than the deepening schedule allowed it.
    Budget,
    /// A mate was found (kept in `best`).
    Found,
    /// Another thread searching the same iteration found a mate (and kept its line).
    FoundElsewhere,
}

/// What can end a search from outside: the `stop` flag and the time limit. Searches ask every
/// `POLL_INTERVAL` nodes, since reading the clock is not free.
#[derive(Clone, Copy)]
pub(crate) struct Interrupt<'a> {
    pub stop: &'a AtomicBool,
    pub deadline: Option<Instant>,
    /// Raised by a helper thread that found a mate in the same iteration.
    pub mate_elsewhere: Option<&'a AtomicBool>,
}

pub(crate) const POLL_INTERVAL: u64 = 4096;

impl Interrupt<'_> {
    /// Why a search that was told to stop stopped: the interrupt's reason, or `stop` (a stop
    /// flag raised by another thread meanwhile, say).
    pub(crate) fn why(&self) -> Abort {
        self.check(Instant::now()).unwrap_or(Abort::Stopped)
    }

    /// The reason to stop now, if there is one.
    pub fn check(&self, now: Instant) -> Option<Abort> {
        if self.stop.load(Ordering::Relaxed) {
            Some(Abort::Stopped)
        } else if self.deadline.is_some_and(|d| now >= d) {
            Some(Abort::Timeout)
        } else if self
            .mate_elsewhere
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
        {
            Some(Abort::FoundElsewhere)
        } else {
            None
        }
    }

    /// Whether something says to stop now (for polls that only need yes or no).
    pub fn raised(&self) -> bool {
        self.check(Instant::now()).is_some()
    }
}
