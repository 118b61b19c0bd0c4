//! The level loop, the one every pass runs: one process (serial, parallel, narrow) and ranks
//! alike. Each turn: the bound and the tree's shape checked, a checkpoint if one is due, the
//! level expanded into the next (or the mate found), memory settled, the level logged.
//! What differs between the ways — how a level is expanded and exchanged, how memory is agreed,
//! how figures are gathered — is behind [`Levels`].

use super::keys::KeySet;
use super::limits::PassLimits;
use super::outcome::{BfsOutcome, GiveUp};
use super::reports::{BfsProgress, LevelStats, Reports, AFTER_LEVEL};

/// How a level came out of [`Levels::expand`].
pub(crate) enum Step {
    /// The next level is made (`depth` has grown); `logged`: the way logged the levels it made
    /// itself (the narrow loop, which makes many at a time).
    Next { logged: bool },
    /// The pass ends.
    Ends(BfsOutcome),
}

/// One way of running the pass's levels.
pub(crate) trait Levels {
    /// The level about to be expanded: its positions are `2 * depth` plies from the root.
    fn depth(&self) -> u32;
    /// Its width (every rank's positions).
    fn width(&self) -> usize;
    /// The keys seen.
    fn keys(&self) -> &KeySet;
    /// Whether the loop stops here to go on later, elsewhere (the one-process pass, once its
    /// threads are due).
    fn pause(&self, _limits: &PassLimits, _nodes: u64) -> bool {
        false
    }
    /// Writes a checkpoint if one is due.
    fn checkpoint(&mut self, limits: &PassLimits, nodes: u64) -> Result<(), GiveUp>;
    /// Expands the level into the next one (or more).
    fn expand(&mut self, limits: &PassLimits, nodes: &mut u64, reports: &mut Reports) -> Step;
    /// Brings memory back within the budget after a step; the bytes used, or the pass's end.
    fn settle(&mut self, limits: &PassLimits, logged: bool) -> Result<usize, BfsOutcome>;
    /// The figures of the level just made (`used` bytes), or None where this one does not log.
    fn figures(&self, reports: &Reports, used: usize, nodes: u64) -> Option<LevelStats>;
    /// A progress report after a level.
    fn progress(&self, limits: &PassLimits, used: usize, nodes: u64) -> BfsProgress;
}

/// Runs `levels` until the pass ends, or returns None where it pauses.
pub(crate) fn run(
    levels: &mut dyn Levels,
    limits: &PassLimits,
    nodes: &mut u64,
    reports: &mut Reports,
) -> Option<BfsOutcome> {
    loop {
        if levels.pause(limits, *nodes) {
            return None;
        }
        let depth = levels.depth();
        // Level `depth` holds attacker positions at ply 2 * depth; a mate found now has one
        // ply more (H#) or two (HS#), and none shorter exists.
        let lower_bound = limits.mate_length(depth);
        let give_up = |reason| {
            Some(BfsOutcome::GaveUp {
                lower_bound,
                reason,
            })
        };
        // The children found from here on belong to the next level.
        levels.keys().set_level(depth + 1);
        if lower_bound > limits.max_plies {
            return give_up(GiveUp::MaxPlies);
        }
        if reports.bushy.note(depth, levels.width()) && limits.give_up_when_bushy {
            return give_up(GiveUp::Bushy);
        }
        if let Err(reason) = levels.checkpoint(limits, *nodes) {
            return give_up(reason);
        }
        let logged = match levels.expand(limits, nodes, reports) {
            Step::Next { logged } => logged,
            Step::Ends(outcome) => return Some(outcome),
        };
        crate::search::memory::release_freed_tables();
        let used = match levels.settle(limits, logged) {
            Ok(used) => used,
            Err(outcome) => return Some(outcome),
        };
        if !logged {
            if let Some(stats) = levels.figures(reports, used, *nodes) {
                reports.level(stats);
            }
            reports.progress_every(AFTER_LEVEL, || levels.progress(limits, used, *nodes));
        }
    }
}
