//! What the pass tells while it runs: each level's figures to the level log, and progress
//! reports (after levels, at most ten a second, and at least one a second during a long level).

use super::bushy::Bushy;
use super::keys::census::GAP_BUCKETS;
use std::time::{Duration, Instant};

/// Figures of one breadth-first level, for the level log (`search::Limits::level_log`).
#[derive(Clone, Debug)]
pub struct LevelStats {
    /// Plies from the root to this level's positions (attacker to move).
    pub plies: u32,
    /// Positions in the level: new, with a check.
    pub positions: usize,
    /// Positions kept in the seen set so far.
    pub keys: usize,
    pub key_bytes: usize,
    /// Bytes of the links kept in memory for rebuilding lines.
    pub graph_bytes: usize,
    /// Bytes of links written to disk.
    pub disk_bytes: u64,
    /// All the search's memory: keys, links, this level's positions.
    pub bytes: usize,
    /// Since the breadth-first search began.
    pub elapsed: Duration,
    /// Moves played so far (checks and evasions).
    pub nodes: u64,
    /// The checks of this level's positions: the defender positions its expansion will reach
    /// (None for the narrow loop's levels, which do not count them).
    pub checks: Option<usize>,
    /// Positions met again since the last level's figures, by how many levels after they were
    /// first kept (buckets of [`bucket_floor`]); estimated from a sample of the keys.
    pub gaps: [u64; GAP_BUCKETS],
    /// Positions kept again since the last level's figures after the key set let go of them
    /// (see `KeySet::freeze`); estimated from the same sample.
    pub ghosts: u64,
    /// Time spent writing checkpoints so far, and their bytes on disk (besides the links).
    pub checkpoints: (Duration, u64),
    /// Bytes the ranks of a distributed pass sent one another so far (0 for one process).
    pub exchanged: u64,
}

/// A progress report of the pass.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BfsProgress {
    /// No helpmate is shorter than this.
    pub lower_bound: u32,
    pub nodes: u64,
    /// Memory used, per mille of the budget.
    pub permille: u32,
    /// Bytes written to disk.
    pub disk_bytes: u64,
    /// The pass went on from a checkpoint whose positions were this many plies from the root
    /// (in the one report sent then).
    pub resumed_from: Option<u32>,
}

/// The pass's level log and progress reports, for one call of the level loop.
pub(crate) struct Reports<'r> {
    level_log: Option<&'r crossbeam_channel::Sender<LevelStats>>,
    progress: &'r mut dyn FnMut(BfsProgress),
    /// When the pass began (the levels' `elapsed`).
    started: Instant,
    last_report: Instant,
    /// The widths of the last levels (see `bushy.rs`), carried from one call of the loop to the
    /// next.
    pub bushy: Bushy,
}

impl<'r> Reports<'r> {
    pub(crate) fn new(
        level_log: Option<&'r crossbeam_channel::Sender<LevelStats>>,
        progress: &'r mut dyn FnMut(BfsProgress),
        started: Instant,
        bushy: Bushy,
    ) -> Reports<'r> {
        Reports {
            level_log,
            progress,
            started,
            last_report: Instant::now(),
            bushy,
        }
    }

    /// Whether anyone reads the level log.
    pub(crate) fn logging(&self) -> bool {
        self.level_log.is_some()
    }

    /// Sends a finished level's figures to the level log (if there is one), with the time
    /// since the pass began.
    pub(crate) fn level(&mut self, stats: LevelStats) {
        if let Some(log) = self.level_log {
            // The receiver may be gone (a caller that stopped listening): nothing to do then.
            let _ = log.send(LevelStats {
                elapsed: self.started.elapsed(),
                ..stats
            });
        }
    }

    /// Sends the progress report `make` makes if the last one is `every` old.
    pub(crate) fn progress_every(&mut self, every: Duration, make: impl FnOnce() -> BfsProgress) {
        if self.last_report.elapsed() >= every {
            (self.progress)(make());
            self.last_report = Instant::now();
        }
    }
}

/// After a level: at most ten reports a second.
pub(crate) const AFTER_LEVEL: Duration = Duration::from_millis(100);
/// During a long level: one a second.
pub(crate) const DURING_LEVEL: Duration = Duration::from_secs(1);

/// `used` bytes per mille of `budget`.
pub(crate) fn permille(used: usize, budget: usize) -> u32 {
    (used.saturating_mul(1000) / budget.max(1)).min(1000) as u32
}
