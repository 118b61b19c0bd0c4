//! The helpmate search: iterative deepening over odd lengths on top of a depth-first search with
//! a transposition table of proven lower bounds. Knows nothing of text I/O: progress goes to a
//! callback, the answer is returned as a value.

mod bfs;
mod count;
mod helpmate;
mod memory;
pub mod path;
pub mod tt;

use crate::shogi::movegen;
use crate::shogi::{Move, Position};
use helpmate::{Abort, Buffers, Interrupt, Iteration};
use path::PathSet;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use thiserror::Error;
pub use tt::{AllocError, TranspositionTable, NEVER};

/// Stack size for threads that run the search: the recursion is one frame per ply and helpmates
/// run to tens of thousands of plies.
pub const SEARCH_STACK_BYTES: usize = 1 << 30;

/// What to stop at, besides an external stop flag, and how to search.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Wall-clock limit for the whole search.
    pub time: Option<Duration>,
    /// Do not look for mates longer than this many plies.
    pub max_plies: Option<u32>,
    pub strategy: Strategy,
    /// Count shortest solutions up to this many (0 or 1: do not count).
    pub solution_limit: usize,
}

/// Which searches to use. Both give the same answers; `Auto` is the fastest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strategy {
    /// Iterative deepening for short lengths, then a breadth-first pass within the memory
    /// budget, then iterative deepening again if that runs out.
    #[default]
    Auto,
    /// Iterative deepening only.
    Deepening,
}

/// Progress report, sent after each deepening iteration and at least once a second.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Length (plies) being searched.
    pub depth: u32,
    /// No helpmate is shorter than this (plies); `NEVER` once proven impossible.
    pub lower_bound: u32,
    pub nodes: u64,
    pub elapsed: Duration,
    pub hashfull: u32,
}

impl Progress {
    pub fn nps(&self) -> u64 {
        let ms = self.elapsed.as_millis().max(1) as u64;
        self.nodes.saturating_mul(1000) / ms
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The shortest helpmate (odd length, attacker first).
    Mate(Vec<Move>),
    /// Proven: no helpmate of any length.
    NoMate,
    /// Stopped or out of time (or past `max_plies`) before an answer was proven.
    Unknown {
        /// No helpmate is shorter than this.
        lower_bound: u32,
    },
}

/// The shortest solutions counted after the length was found (when asked for).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Solutions {
    /// How many shortest lines exist, up to the limit asked for.
    pub count: usize,
    /// The first `count` lines found (the first is the answer given).
    pub lines: Vec<Vec<Move>>,
    /// False when the count was cut short by `stop` or the time limit (then `count` is only a
    /// lower bound).
    pub complete: bool,
}

impl Solutions {
    /// Exactly one shortest line (known only when complete).
    pub fn unique(&self) -> Option<bool> {
        match (self.complete, self.count) {
            (_, n) if n >= 2 => Some(false),
            (true, 1) => Some(true),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct SearchResult {
    pub outcome: Outcome,
    /// Present when `Limits::solution_limit` > 1 and a mate was found.
    pub solutions: Option<Solutions>,
    pub nodes: u64,
    pub elapsed: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SearchError {
    #[error("the defender (side not to move) has no king to mate")]
    NoDefenderKing,
}

/// The helpmate solver: owns the transposition table, which persists between searches.
pub struct Solver {
    tt: TranspositionTable,
    path: PathSet,
    buffers: Buffers,
}

/// Smallest node budget of an iteration that deepens by more than 2 plies.
const MIN_BUDGET: u64 = 1 << 16;
/// From this proven length on, a breadth-first pass is tried before deepening further.
const BFS_FROM_PLIES: u32 = 9;
/// Largest deepening step (plies).
const MAX_STEP: u32 = 1 << 12;

impl Solver {
    pub fn new(hash_mb: usize) -> Result<Solver, AllocError> {
        Ok(Solver::with_table(TranspositionTable::new(hash_mb)?))
    }

    /// A solver whose table memory is zeroed as it is used (see
    /// [`TranspositionTable::new_lazy`]): for the command line, not for an engine that must
    /// answer the first `go` quickly.
    pub fn new_lazy(hash_mb: usize) -> Result<Solver, AllocError> {
        Ok(Solver::with_table(TranspositionTable::new_lazy(hash_mb)?))
    }

    fn with_table(tt: TranspositionTable) -> Solver {
        Solver {
            tt,
            path: PathSet::new(),
            buffers: Buffers::new(),
        }
    }

    /// Replaces the table by one of `mb` megabytes; on failure the old table is kept.
    pub fn resize(&mut self, mb: usize) -> Result<(), AllocError> {
        let old_mb = self.tt.size_mb();
        if mb == old_mb {
            return Ok(());
        }
        if tt::available_mb().is_some_and(|avail| mb > avail + old_mb) {
            return Err(AllocError { mb });
        }
        // Free the old table first, so that both need not fit at once; should the new one still
        // fail, fall back to a table of the old size.
        self.tt = TranspositionTable::new(1).expect("a 1 MB table");
        match TranspositionTable::new(mb) {
            Ok(t) => {
                self.tt = t;
                Ok(())
            }
            Err(e) => {
                self.tt = TranspositionTable::new(old_mb.max(1))?;
                Err(e)
            }
        }
    }

    pub fn hash_mb(&self) -> usize {
        self.tt.size_mb()
    }

    /// Forgets everything learnt (new game).
    pub fn clear(&mut self) {
        self.tt.clear();
    }

    /// Finds the shortest helpmate from `root` (the side to move attacks).
    ///
    /// `progress` is called after every iteration and about once a second in between.
    pub fn solve(
        &mut self,
        root: &Position,
        limits: &Limits,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<SearchResult, SearchError> {
        let start = Instant::now();
        if root.king(!root.side_to_move()).is_none() {
            return Err(SearchError::NoDefenderKing);
        }
        let interrupt = Interrupt {
            stop,
            deadline: limits.time.map(|t| start + t),
        };
        let max_plies = limits.max_plies.unwrap_or(u32::MAX - 2);
        self.tt.new_epoch();
        self.path.clear();
        let mut pos = root.clone();
        let mut nodes = 0u64;
        let at = |depth, lower_bound, nodes, hashfull| Progress {
            depth,
            lower_bound,
            nodes,
            elapsed: start.elapsed(),
            hashfull,
        };
        let cap = limits.solution_limit;
        let finish = |outcome, solutions, nodes| {
            Ok(SearchResult {
                outcome,
                solutions,
                nodes,
                elapsed: start.elapsed(),
            })
        };

        // Short problems: iterative deepening. Past `BFS_FROM_PLIES`, a breadth-first search
        // within a memory budget (one pass over the positions instead of one per iteration);
        // if the budget runs out, deepening resumes from the bound it proved.
        //
        // The deepening schedule: odd limits; the step grows while the nodes spent per ply of
        // proven bound fall (a long line being re-walked) and shrinks when they rise, bounded
        // by a node budget that falls back to small steps. A mate found beyond the proven lower
        // bound is kept as an upper bound, and the search goes on below it until the bounds meet.
        let mut lower_bound = self.tt.probe(pos.key()).map_or(1, |p| p.lb.max(1));
        let mut best: Option<Vec<Move>> = None;
        let mut step = 2u32;
        let mut cost_per_ply = u64::MAX;
        let mut last_report = Instant::now();
        let mut breadth_first_tried = false;
        loop {
            if !breadth_first_tried
                && limits.strategy == Strategy::Auto
                && lower_bound >= BFS_FROM_PLIES
                && lower_bound != NEVER
            {
                breadth_first_tried = true;
                // The table is idle during the pass: its memory goes to the pass instead, so
                // that the two together stay within the hash size. (What it held came from
                // iterations of at most BFS_FROM_PLIES plies.)
                let mb = self.tt.size_mb();
                self.tt = TranspositionTable::new_lazy(1).expect("a 1 MB table");
                let bfs_limits = bfs::BfsLimits {
                    budget_bytes: mb << 20,
                    solution_cap: cap.max(1) as u32,
                    max_plies,
                    interrupt,
                };
                let mut on_progress =
                    |lb: u32, n: u64, permille: u32| progress(&at(lb, lb, n, permille));
                let outcome = bfs::search(&pos, &bfs_limits, &mut nodes, &mut on_progress);
                self.tt = TranspositionTable::new_lazy(mb)
                    .unwrap_or_else(|_| TranspositionTable::new_lazy(1).expect("a 1 MB table"));
                match outcome {
                    bfs::BfsOutcome::Mate { lines, count } => {
                        let line = lines[0].clone();
                        progress(&at(line.len() as u32, line.len() as u32, nodes, 0));
                        let solutions = (cap > 1).then_some(Solutions {
                            count: count as usize,
                            lines,
                            complete: true,
                        });
                        return finish(Outcome::Mate(line), solutions, nodes);
                    }
                    bfs::BfsOutcome::NoMate => return finish(Outcome::NoMate, None, nodes),
                    bfs::BfsOutcome::GaveUp {
                        lower_bound: proven,
                        reason,
                    } => {
                        lower_bound = lower_bound.max(proven);
                        // Keep what was proven, for deepening next and for later searches.
                        self.tt.store_fact(pos.key(), lower_bound, None);
                        if reason != bfs::GiveUp::Memory {
                            return finish(Outcome::Unknown { lower_bound }, None, nodes);
                        }
                    }
                }
            }
            if let Some(line) = &best {
                if line.len() as u32 <= lower_bound {
                    let len = line.len() as u32;
                    progress(&at(len, len, nodes, self.tt.hashfull()));
                    let line = line.clone();
                    let solutions = (cap > 1).then(|| {
                        let mut counter = count::Counter::new(
                            &mut pos,
                            &mut self.tt,
                            &mut self.path,
                            cap,
                            nodes,
                            interrupt,
                        );
                        counter.count(0, len);
                        nodes = counter.nodes;
                        Solutions {
                            count: counter.lines.len(),
                            complete: counter.abort.is_none(),
                            lines: counter.lines,
                        }
                    });
                    return finish(Outcome::Mate(line), solutions, nodes);
                }
            }
            if lower_bound == NEVER {
                return finish(Outcome::NoMate, None, nodes);
            }
            if lower_bound > max_plies {
                return finish(Outcome::Unknown { lower_bound }, None, nodes);
            }
            let mut depth = odd_at_least(lower_bound + step - 2).min(odd_at_most(max_plies));
            if let Some(line) = &best {
                depth = depth.min(line.len() as u32 - 2);
            }
            // A step beyond 2 may cost at most twice the last iteration's nodes per ply gained.
            let gain = (depth + 2 - lower_bound) as u64;
            let budget = if depth > lower_bound {
                nodes + MIN_BUDGET.max(cost_per_ply.saturating_mul(2 * gain))
            } else {
                u64::MAX
            };
            let before = nodes;
            self.tt.begin_iteration();
            let mut tick = |n: u64, hashfull: u32| progress(&at(depth, lower_bound, n, hashfull));
            let mut it = Iteration::new(
                &mut pos,
                &mut self.tt,
                &mut self.path,
                &mut self.buffers,
                depth,
                nodes,
                budget,
                interrupt,
                &mut tick,
            );
            let result = it.attacker(0);
            nodes = it.nodes;
            let abort = it.abort;
            let found = it.best.take();
            drop(it);
            let cost = nodes - before;
            match abort {
                None => {
                    // The iteration failed: its conditional bounds are facts now.
                    self.tt.iteration_failed();
                    let new_bound = lower_bound.max(result.if_failed).max(depth + 2);
                    // Nodes spent per ply of proven bound: deepen in bigger steps while that
                    // falls (re-walking a long line dominates), in smaller ones when it rises
                    // (a growing frontier dominates).
                    let per_ply = cost / u64::from(new_bound - lower_bound).max(1);
                    step = if per_ply <= cost_per_ply {
                        (step * 2).min(MAX_STEP)
                    } else {
                        (step / 2).max(2)
                    };
                    cost_per_ply = per_ply;
                    lower_bound = new_bound;
                }
                Some(reason) => {
                    // Whatever the reason, this iteration did not fail: void its conditional
                    // bounds.
                    self.tt.new_epoch();
                    match reason {
                        Abort::Stopped | Abort::Timeout => {
                            progress(&at(depth, lower_bound, nodes, self.tt.hashfull()));
                            return finish(Outcome::Unknown { lower_bound }, None, nodes);
                        }
                        Abort::Budget => step = 2,
                        Abort::Found => {
                            let line = found.expect("a found mate has a line");
                            debug_assert!(line.len() % 2 == 1 && line.len() as u32 <= depth);
                            best = Some(line);
                            step = 2;
                        }
                    }
                }
            }
            if last_report.elapsed() >= Duration::from_millis(100) {
                progress(&at(depth, lower_bound, nodes, self.tt.hashfull()));
                last_report = Instant::now();
            }
        }
    }
}

/// Hints the CPU to start loading the cache line of `value`; tables probed at random addresses
/// (the transposition table, the breadth-first seen set) overlap their misses this way.
#[inline]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching is only a hint; it never faults and reads nothing the program can
        // observe. It is `unsafe` solely because it is a target-feature intrinsic (SSE, always
        // present on x86_64).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(value as *const T as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

fn odd_at_least(n: u32) -> u32 {
    n | 1
}

fn odd_at_most(n: u32) -> u32 {
    if !n.is_multiple_of(2) {
        n
    } else {
        n.saturating_sub(1).max(1)
    }
}

/// Replays `line` from `root` and checks it is a helpmate: every move legal, every attacker
/// move a check, the defender mated at the end. Returns the first problem found.
pub fn verify_helpmate(root: &Position, line: &[Move]) -> Result<(), String> {
    let mut pos = root.clone();
    if line.len().is_multiple_of(2) {
        return Err(format!(
            "a helpmate has an odd number of plies, got {}",
            line.len()
        ));
    }
    for (i, &m) in line.iter().enumerate() {
        if !movegen::is_legal_move(&pos, m) {
            return Err(format!("ply {}: {m} is not legal", i + 1));
        }
        if i % 2 == 0 && !movegen::gives_check(&pos, m) {
            return Err(format!(
                "ply {}: attacker move {m} does not give check",
                i + 1
            ));
        }
        pos.do_move(m);
    }
    if movegen::is_checkmate(&pos) {
        Ok(())
    } else {
        Err("the final position is not checkmate".to_string())
    }
}

/// Runs `f` on a thread with a stack big enough for the deepest searches and waits for it.
pub fn with_search_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("search".into())
            .stack_size(SEARCH_STACK_BYTES)
            .spawn_scoped(s, f)
            .expect("spawn search thread")
            .join()
            .expect("search thread panicked")
    })
}
