//! What one pass is asked to do, and within what: the problem's rules and bound, the memory,
//! the threads, the disk, checkpoints and the tuning (see `tuning.rs`), passed whole.

use super::levels::checkpoint::Plan;
use super::levels::disk::DiskBudget;
use super::reports::LevelStats;
use super::tuning::PassTuning;
use crate::search::interrupt::Interrupt;
use crate::shogi::RuleSet;

pub(crate) struct PassLimits<'a> {
    /// Where to send each level's figures.
    pub level_log: Option<&'a crossbeam_channel::Sender<LevelStats>>,
    pub budget_bytes: usize,
    /// Count shortest lines up to this many (1: find one only).
    pub solution_cap: u32,
    /// HS#: the defender's reply mates (see `expand::children::Looking::selfmate`); H#
    /// otherwise.
    pub selfmate: bool,
    /// The rules moves follow.
    pub rules: RuleSet,
    pub max_plies: u32,
    pub interrupt: Interrupt<'a>,
    /// Threads to expand each level with (see `expand/parallel/`); None: this thread alone.
    pub pool: Option<&'a rayon::ThreadPool>,
    /// Where the links go once memory runs short.
    pub disk: &'a DiskBudget,
    /// Give up as soon as the levels grow like a bushy tree's (see `bushy.rs`).
    pub give_up_when_bushy: bool,
    /// Where checkpoints go and whether the pass starts from one (see `levels/checkpoint.rs`).
    pub checkpoint: Option<Plan>,
    pub tuning: &'a PassTuning,
}

impl PassLimits<'_> {
    /// The length of a mate found on level `depth` (whose positions are `2 * depth` plies
    /// from the root): one ply more in H#, two in HS#.
    pub(crate) fn mate_length(&self, depth: u32) -> u32 {
        2 * depth + if self.selfmate { 2 } else { 1 }
    }

    /// Shortest lines counted up to this many (at least 1).
    pub(crate) fn cap(&self) -> u32 {
        self.solution_cap.max(1)
    }
}
