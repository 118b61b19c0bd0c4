//! Lazy SMP for the deepening search: helper threads search each iteration beside the main
//! search over the shared transposition table, publishing only facts (see `docs/design.md`,
//! "Parallel deepening", for what is stored where and why that is sound).

use super::helpmate::{Buffers, Iteration};
use super::interrupt::{Abort, Interrupt};
use super::path::PathSet;
use super::tt::TranspositionTable;
use crate::shogi::{Goal, Move, Position, RuleSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A deepening helper thread's own state (it searches the main search's iteration, in another
/// order or deeper, and what it proves for good goes into the shared table). On lines of its
/// own: the helpers sit side by side in a vector, and one's position, written at every move,
/// would otherwise share a line with the next one's table address, read at every probe (the
/// narrow loop's threads lost 8% of their time to such neighbours).
#[repr(align(128))]
pub(super) struct Helper {
    pos: Position,
    path: PathSet,
    buffers: Buffers,
    /// Its conditional bounds, which hold for its own search only (see `helpmate.rs`).
    own: TranspositionTable,
}

/// The most a helper's table for its conditional bounds takes (MB).
pub const HELPER_TABLE_MB: usize = 16;

/// Each helper's table (MB), for `helpers` helpers sharing `share_mb` (the part of `USI_Hash`
/// deepening lends them, see [`crate::search::Solver`]), and how many helpers that allows: as
/// many as get 1 MB each, at most [`HELPER_TABLE_MB`] each.
pub fn helper_tables(share_mb: usize, helpers: usize) -> (usize, usize) {
    let helpers = helpers.min(share_mb);
    if helpers == 0 {
        return (0, 0);
    }
    ((share_mb / helpers).min(HELPER_TABLE_MB), helpers)
}
/// Deepening iterations get helper threads once the previous one took this many nodes: below,
/// starting the threads costs more than they save.
pub const HELPERS_FROM_NODES: u64 = 1_000;

/// What the threads of one shared deepening iteration tell each other.
pub(super) struct SharedIteration {
    /// The main search has finished the iteration: helpers stop.
    pub(super) over: AtomicBool,
    /// The main search's limit.
    pub(super) main_depth: u32,
    /// The problem: its goal, and whether the attacker is to move at the root.
    pub(super) goal: Goal,
    pub(super) root_attacker: bool,
    /// The rules moves follow.
    pub(super) rules: RuleSet,
    /// A helper found a mate within the main search's limit: the main search stops.
    pub(super) mate_found: AtomicBool,
    /// The shortest mate the helpers found.
    pub(super) mate_line: parking_lot::Mutex<Option<Vec<Move>>>,
    /// Nodes searched by the helpers.
    pub(super) helper_nodes: AtomicU64,
    /// The stated bound, while no solution is known: an iteration to it is the last.
    pub(super) bound: Option<u32>,
}

impl SharedIteration {
    pub(super) fn new(
        main_depth: u32,
        goal: Goal,
        root_attacker: bool,
        rules: RuleSet,
    ) -> SharedIteration {
        SharedIteration {
            over: AtomicBool::new(false),
            main_depth,
            goal,
            root_attacker,
            rules,
            mate_found: AtomicBool::new(false),
            mate_line: parking_lot::Mutex::new(None),
            helper_nodes: AtomicU64::new(0),
            bound: None,
        }
    }

    /// The same, under a stated bound of `bound` plies (see [`SharedIteration::bound`]).
    pub(super) fn with_bound(self, bound: Option<u32>) -> SharedIteration {
        SharedIteration { bound, ..self }
    }

    /// Readies `it`, searching to `depth`, for the problem.
    pub(super) fn ready(&self, it: &mut Iteration, depth: u32) {
        it.for_problem(self.goal, self.root_attacker, self.rules);
        if self.bound == Some(depth) {
            it.at_the_bound();
        }
    }
}

impl Helper {
    /// A helper whose own table takes `table_mb` MB, its pages taken now (`prefault`: an engine
    /// at `isready`, so that the first search does not pay the page faults) or as they are
    /// first used (a one-shot solve, which may never need them).
    pub(super) fn new(table_mb: usize, prefault: bool) -> Option<Helper> {
        let own = if prefault {
            TranspositionTable::new(table_mb)
        } else {
            TranspositionTable::new_lazy(table_mb)
        };
        Some(Helper {
            // (Set to the root at each search.)
            pos: Position::empty(),
            path: PathSet::new(),
            buffers: Buffers::new(),
            own: own.ok()?,
        })
    }

    /// Forgets its table (a new problem), keeping its memory.
    pub(super) fn clear(&mut self) {
        self.own.clear();
    }

    /// Its table's size (MB).
    pub(super) fn table_mb(&self) -> usize {
        self.own.size_mb()
    }

    /// Searches the iteration with limit `depth` from `root` until it ends or the main search
    /// says it is over.
    pub(super) fn search(
        &mut self,
        root: &Position,
        tt: &TranspositionTable,
        depth: u32,
        seed: u64,
        shared: &SharedIteration,
    ) {
        if shared.over.load(Ordering::Relaxed) {
            // Started late (the main search's thread may run a helper that no pool thread took
            // up in time): the iteration is over.
            return;
        }
        let Helper {
            pos,
            path,
            buffers,
            own,
        } = self;
        pos.clone_from(root);
        path.clear();
        // Its conditional bounds of earlier iterations are void (they are not promoted when the
        // main search's iteration fails: the helper may have stopped anywhere).
        own.new_epoch();
        own.begin_iteration();
        let interrupt = Interrupt {
            stop: &shared.over,
            deadline: None,
            mate_elsewhere: None,
        };
        let mut tick = |_: u64, _: u32| {};
        let mut it = Iteration::new(
            pos,
            tt,
            path,
            buffers,
            depth,
            0,
            u64::MAX,
            interrupt,
            &mut tick,
        );
        it.as_helper(own, seed, &shared.helper_nodes);
        shared.ready(&mut it, depth);
        it.root();
        shared
            .helper_nodes
            .fetch_add(it.unreported_nodes(), Ordering::Relaxed);
        if it.abort == Some(Abort::Found) {
            if let Some(line) = it.best.take() {
                let len = line.len() as u32;
                let mut kept = shared.mate_line.lock();
                if kept.as_ref().is_none_or(|k| k.len() > line.len()) {
                    *kept = Some(line);
                }
                // A longer mate does not end the main search's iteration, which must still
                // prove there is none within its limit.
                if len <= shared.main_depth {
                    shared.mate_found.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::with_search_stack;

    /// The graph-history-interaction rule of the parallel deepening: a helper's bounds that
    /// depend on its own path (repetitions) stay in its own table; the shared table gets facts
    /// only. Were one published as a bound of the running iteration, the main search would
    /// trust it as its own and could miss a mate (and, once the iteration failed, keep the
    /// false bound as a fact).
    #[test]
    fn helpers_publish_facts_only() {
        // From tests/data/helpmates.tsv (fmrs_forest-05-13_57 and fmrs_forest-06-10_97): their
        // deepening trees meet repetitions.
        let sfens = [
            "ggssn2p1/lgssn3l/+R8/5N2k/4bn3/3l5/9/2g4L1/KBr3PP1 b 11P4p 1",
            "s2B5/kL1S5/1PPPPL2R/1+L5N1/1p5N1/7N1/3gl2N1/5gg2/K+B5r1 b 13Pg2s 1",
        ];
        with_search_stack(|| {
            let mut helper_conditionals = 0;
            for sfen in sfens {
                let root = Position::from_sfen(sfen).unwrap();
                let mut shared_table = TranspositionTable::new(4).unwrap();
                let mut helper = Helper::new(HELPER_TABLE_MB, false).unwrap();
                for depth in (5..=25).step_by(2) {
                    shared_table.begin_iteration();
                    let shared = SharedIteration::new(depth, Goal::Helpmate, true, RuleSet::PLAIN);
                    helper.search(&root, &shared_table, depth, 7, &shared);
                    assert!(shared.helper_nodes.load(Ordering::Relaxed) > 0);
                    assert_eq!(
                        shared_table.current_conditional_entries(),
                        0,
                        "depth {depth}"
                    );
                    helper_conditionals += helper.own.current_conditional_entries();

                    shared_table.iteration_failed();
                }
            }
            // The helpers did meet repetitions (else this test would prove nothing).
            assert!(helper_conditionals > 0);
        });
    }
}
