//! The helpmate search: iterative deepening over odd lengths on top of a depth-first search with
//! a transposition table of proven lower bounds. Knows nothing of text I/O: progress goes to a
//! callback, the answer is returned as a value.

mod bfs;
mod count;
mod helpmate;
mod interrupt;
mod limits;
mod machine;
mod memory;
pub use memory::tune_allocator;
pub mod path;
pub mod probe;
mod smp;
pub mod tt;

use crate::shogi::stipulation::{verify_solution, StipulationError};
use crate::shogi::{Color, Goal, Move, Position, RuleSet, Stipulation};
pub use bfs::{
    bucket_floor, read_checkpoint_unchecked, CheckpointStart, Checkpointing, DiskBudget, DiskError,
    Forgetting, LevelStats, LocalRank, PassTuning, Transport, GAP_BUCKETS,
};
#[cfg(feature = "mpi")]
pub use bfs::{start_mpi, MpiRank, MpiThread};
use helpmate::{Buffers, Iteration};
use interrupt::{Abort, Interrupt};
pub use limits::{Limits, Ranks, Strategy, Tuning};
use machine::cores;
use path::PathSet;
use smp::{Helper, SharedIteration};
pub use smp::{HELPERS_FROM_NODES, HELPER_TABLE_MB};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;
pub use tt::{AllocError, TranspositionTable, NEVER};

/// Stack size for threads that run the search: the recursion is one frame per ply and helpmates
/// run to tens of thousands of plies.
pub const SEARCH_STACK_BYTES: usize = 1 << 30;

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
    /// Bytes the breadth-first pass has written to disk.
    pub disk_bytes: u64,
    /// Set once, in the report sent when a breadth-first pass goes on from a checkpoint: the
    /// plies its positions were at.
    pub resumed_from: Option<u32>,
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
    /// Proven: no solution of at most `max_plies` plies (`Limits::max_plies`); longer ones were
    /// not looked for. A bound proven under a limit is a lower bound like any other: it never
    /// answers a later search for "no mate at all".
    NoMateWithin { max_plies: u32 },
    /// Stopped or out of time before an answer was proven.
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

    /// Whether `count` is the number of shortest lines, not a lower bound: counted to the end,
    /// and below `limit` (a count that reached the limit says only "at least").
    pub fn exact(&self, limit: usize) -> bool {
        self.complete && self.count < limit
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
    #[error("the defender has no king to mate")]
    NoDefenderKing,
    #[error("HS# needs the attacker's king on the board (the defender mates it)")]
    NoAttackerKing,
    /// The breadth-first pass needed the disk and could not use it; what it proved is kept.
    #[error("{0}")]
    Disk(#[from] DiskError),
}

/// The helpmate solver: owns the transposition table, which persists between searches.
pub struct Solver {
    tt: TranspositionTable,
    /// The memory asked for (MB): the table takes all but [`RESERVE_DIVISOR`]th of it, kept for
    /// a breadth-first pass that runs beside the table.
    hash_mb: usize,
    path: PathSet,
    buffers: Buffers,
    /// The side that attacked in the last search (for probes of positions inside it).
    last_attacker: Option<Color>,
    /// The last search's stipulation.
    last_stipulation: Stipulation,
    /// What the table's bounds are about: the goal, which side gives the checks, and the
    /// rules. A bound is a position's distance to the goal with that side attacking under those
    /// rules, so a search for another goal, with the other side attacking or under other rules
    /// starts from an empty table.
    table_for: Option<(Goal, Color, RuleSet)>,

    /// Helper threads for the breadth-first pass, made when first asked for.
    pool: Option<rayon::ThreadPool>,
    /// What breadth-first passes keep from one to the next (made when first needed).
    caches: Option<bfs::Caches>,
    /// What the deepening helper threads keep between iterations, made when first asked for.
    helpers: Vec<Helper>,
    /// The last breadth-first pass's memory, being freed after its answer (see `settle`).
    releasing: Option<std::thread::JoinHandle<()>>,
    /// A pass smaller than this is freed at once instead (tests set 0).
    release_inline_bytes: usize,
}

/// Smallest node budget of an iteration that deepens by more than 2 plies.
const MIN_BUDGET: u64 = 1 << 16;
/// With threads, this thread counts the solutions alone up to this many nodes (see
/// `Run::count_solutions`).
const THREADED_COUNT_FROM_NODES: u64 = 20_000;
/// From this proven length on, a breadth-first pass is tried before deepening further.
const BFS_FROM_PLIES: u32 = 9;
/// Largest deepening step (plies).
const MAX_STEP: u32 = 1 << 12;
/// A deepening iteration this cheap says nothing about the tree's shape: breadth-first may go.
const CHEAP_ITERATION_NODES: u64 = 20_000;
/// Breadth-first is tried only where the cost of deepening per ply of bound grew by at most
/// this factor from one iteration to the next: a narrow tree, whose long lines deepening would
/// walk again and again. Where it grows faster (a bushy tree, like most short problems) the
/// levels of a breadth-first pass grow as fast, and deepening, which finds a mate before it has
/// walked the whole of its last iteration, wins.
const NARROW_GROWTH: u64 = 4;
/// The table gets all but 1/8 of the memory (`USI_Hash`). The rest is lent in turn: to the
/// deepening helpers' own tables (see [`smp::helper_tables`]), and to a breadth-first pass,
/// which starts in it (the helpers' tables freed) and takes the table's memory only if it needs
/// more (the table then starts afresh after it). So everything the search keeps fits in
/// `USI_Hash`, whatever the threads.
const RESERVE_DIVISOR: usize = 8;

impl Solver {
    pub fn new(hash_mb: usize) -> Result<Solver, AllocError> {
        // The error names the memory asked for, not the table's share of it.
        let table =
            TranspositionTable::new(table_mb(hash_mb)).map_err(|_| AllocError::new(hash_mb))?;
        Ok(Solver::with_table(table, hash_mb))
    }

    /// A solver whose table memory is zeroed as it is used (see
    /// [`TranspositionTable::new_lazy`]): for the command line, not for an engine that must
    /// answer the first `go` quickly.
    pub fn new_lazy(hash_mb: usize) -> Result<Solver, AllocError> {
        let table = TranspositionTable::new_lazy(table_mb(hash_mb))
            .map_err(|_| AllocError::new(hash_mb))?;
        Ok(Solver::with_table(table, hash_mb))
    }

    fn with_table(tt: TranspositionTable, hash_mb: usize) -> Solver {
        Solver {
            tt,
            hash_mb,
            path: PathSet::new(),
            buffers: Buffers::new(),
            last_attacker: None,
            last_stipulation: Stipulation::HELPMATE,
            table_for: None,

            pool: None,
            caches: None,
            helpers: Vec::new(),
            releasing: None,
            release_inline_bytes: bfs::RELEASE_INLINE_BYTES,
        }
    }

    /// Waits until the last breadth-first pass's memory is freed: before anything takes memory
    /// again, so that `USI_Hash` still bounds what the two hold together.
    fn settle(&mut self) {
        if let Some(releasing) = self.releasing.take() {
            // A panic there (none is expected) lost nothing but memory already given up.
            let _ = releasing.join();
        }
    }

    /// Replaces the table by one for `mb` megabytes; on failure the old table is kept.
    pub fn resize(&mut self, mb: usize) -> Result<(), AllocError> {
        self.settle();
        let old_mb = self.tt.size_mb();
        if mb == self.hash_mb {
            return Ok(());
        }
        let new_mb = table_mb(mb);
        if tt::available_mb().is_some_and(|avail| new_mb > avail + old_mb) {
            return Err(AllocError::new(mb));
        }
        // Free the old table first, so that both need not fit at once; should the new one still
        // fail, fall back to a table of the old size.
        self.tt = TranspositionTable::new(1).expect("a 1 MB table");
        match TranspositionTable::new(new_mb) {
            Ok(t) => {
                self.tt = t;
                self.hash_mb = mb;
                Ok(())
            }
            Err(_) => {
                self.tt = TranspositionTable::new(old_mb.max(1))?;
                Err(AllocError::new(mb))
            }
        }
    }

    pub fn hash_mb(&self) -> usize {
        self.hash_mb
    }

    /// A pool of `threads` threads (None for one thread, or if the system will not give them).
    fn pool(&mut self, threads: usize) -> Option<&rayon::ThreadPool> {
        if threads < 2 {
            return None;
        }
        if self
            .pool
            .as_ref()
            .is_none_or(|p| p.current_num_threads() != threads)
        {
            self.pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("search-{i}"))
                // The breadth-first pass runs on these threads, and rebuilding its lines
                // recurses once per level.
                .stack_size(SEARCH_STACK_BYTES)
                .build()
                .ok();
        }
        self.pool.as_ref()
    }

    /// Makes what a search with `threads` threads may need beside the table: the threads, the
    /// breadth-first pass's cache (otherwise made by the first search that needs them; an
    /// engine does it at `isready`).
    pub fn prepare(&mut self, threads: usize) {
        let _ = self.pool(threads);
        self.caches.get_or_insert_with(bfs::Caches::new);
        // The helpers' tables too, their pages taken now: made by the first iteration that
        // wants them, they cost a short problem's search their page faults (through USI, fresh
        // engines, problems of 0.05-0.1 s at two threads: some runs 40-50 ms slower than the
        // rest).
        self.provide_helpers(threads, false, true);
    }

    /// Makes the helpers a search at `threads` threads gets (see `helper_plan`), their tables'
    /// pages taken now if `prefault`; returns how many there are (fewer when memory ran out).
    fn provide_helpers(&mut self, threads: usize, beyond_cores: bool, prefault: bool) -> usize {
        let (table_mb, wanted) = self.helper_plan(threads, beyond_cores);
        self.helpers.retain(|h| h.table_mb() == table_mb);
        while self.helpers.len() < wanted {
            match Helper::new(table_mb, prefault) {
                Some(h) => self.helpers.push(h),
                None => break,
            }
        }
        wanted.min(self.helpers.len())
    }

    /// The helpers' table size (MB) and how many of them a search at `threads` threads gets:
    /// the memory kept back from the table (see `RESERVE_DIVISOR`) but for what passes keep
    /// from one to the next, one helper a core beyond the first (any number when
    /// `beyond_cores`).
    fn helper_plan(&self, threads: usize, beyond_cores: bool) -> (usize, usize) {
        if threads < 2 {
            return (0, 0);
        }
        let kept_mb = self
            .caches
            .as_ref()
            .map_or(0, |c| c.bytes().div_ceil(1 << 20));
        let share_mb = (self.hash_mb - table_mb(self.hash_mb)).saturating_sub(kept_mb);
        let cores = if beyond_cores { usize::MAX } else { cores() };
        smp::helper_tables(share_mb, threads.min(cores).saturating_sub(1))
    }

    /// The attacker of the last search, if any.
    pub fn last_attacker(&self) -> Option<Color> {
        self.last_attacker
    }

    /// The stipulation of the last search (H# before any).
    pub fn last_stipulation(&self) -> Stipulation {
        self.last_stipulation
    }

    /// Forgets everything learnt (new game).
    pub fn clear(&mut self) {
        self.settle();
        self.tt.clear();
    }

    /// Finds the shortest solution from `root` under `limits.stipulation` (H#: the side to move
    /// attacks and mates).
    ///
    /// `progress` is called after every iteration and about once a second in between.
    pub fn solve(
        &mut self,
        root: &Position,
        limits: &Limits,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<SearchResult, SearchError> {
        let stipulation = limits.stipulation;
        // Every position of the search plays its captures under the problem's rules.
        let mut adopted = root.clone();
        stipulation.rules().adopt(&mut adopted);
        let root = &adopted;
        stipulation.check_position(root).map_err(|e| match e {
            StipulationError::NoAttackerKing => SearchError::NoAttackerKing,
            _ => SearchError::NoDefenderKing,
        })?;
        self.settle();
        let attacker = stipulation.attacker(root.side_to_move());
        let rules = stipulation.rules();
        let table_for = Some((stipulation.goal, attacker, rules));
        if self.table_for != table_for {
            if let Some((_, _, last_rules)) = self.table_for {
                // (A fresh solver's table is empty already.) The helpers' tables are forgotten too
                // (their memory kept: an engine took its pages at `isready`); the
                // breadth-first pass's dead positions (no check) hold under any goal, but not
                // under other rules.
                self.tt.clear();
                self.helpers.iter_mut().for_each(Helper::clear);
                if last_rules != rules {
                    self.caches = None;
                }
            }
            self.table_for = table_for;
        }
        self.last_attacker = Some(attacker);
        self.last_stipulation = stipulation;

        let mut run = Run::new(self, root, limits, stop, progress).with_checkpoint_plan();
        let result = loop {
            if run.breadth_first_is_due() {
                if let Some(result) = run.breadth_first_pass()? {
                    break result;
                }
            }
            if let Some(result) = run.answer_if_proven() {
                break result;
            }
            if let Some(result) = run.deepen() {
                break result;
            }
        };
        // An answered problem's checkpoint has nothing left to go on with.
        if matches!(result.outcome, Outcome::Mate(_) | Outcome::NoMate) {
            if let Some(plan) = &run.checkpoint {
                plan.remove();
            }
        }
        Ok(result)
    }
}

impl Drop for Solver {
    /// A solver made after this one (the command line's next problem, `bench`) must not find
    /// this one's last pass still holding memory (see `settle`).
    fn drop(&mut self) {
        self.settle();
    }
}

/// The table's share of `hash_mb` (see [`RESERVE_DIVISOR`]).
fn table_mb(hash_mb: usize) -> usize {
    (hash_mb - hash_mb / RESERVE_DIVISOR).max(1)
}

/// One `solve`: the bounds proven so far and the deepening schedule.
///
/// Short problems: iterative deepening. Past `BFS_FROM_PLIES`, on a narrow tree, a breadth-first
/// search within the memory budget (one pass over the positions instead of one per iteration);
/// if the budget runs out, deepening resumes from the bound it proved.
///
/// The deepening schedule: odd limits; the step grows while the nodes spent per ply of proven
/// bound fall (a long line being re-walked) and shrinks when they rise, bounded by a node budget
/// that falls back to small steps. A mate found beyond the proven lower bound is kept as an upper
/// bound, and the search goes on below it until the bounds meet.
struct Run<'s, 'p> {
    solver: &'s mut Solver,
    pos: Position,
    limits: &'s Limits,
    interrupt: Interrupt<'s>,
    progress: &'p mut dyn FnMut(&Progress),
    start: Instant,
    max_plies: u32,
    /// Nodes of this thread (the deepening schedule is made of these).
    nodes: u64,
    /// Nodes of the deepening helper threads.
    helper_nodes: u64,
    /// No helpmate is shorter than this.
    lower_bound: u32,
    /// The shortest mate found so far (an upper bound).
    best: Option<Vec<Move>>,
    step: u32,
    /// This thread's nodes per ply of bound gained by the last failed iteration (the node
    /// budget of the next step is made of these).
    cost_per_ply: u64,
    /// All threads' nodes per ply of bound gained by the last failed iteration, and by the one
    /// before, and all threads' nodes of the last one: the tree's shape, which decides whether
    /// the breadth-first pass is tried. Counted over every thread, so that helpers, which take
    /// part of the main search's work, do not make a bushy tree look narrow (the 13-ply
    /// `9/9/9/9/9/9/4k4/9/9 b S2N2P2r2b4g3s2n4l16p 1` at two threads: an iteration of 28 K nodes
    /// on one thread took the main search 13-16 K beside a helper, under
    /// [`CHEAP_ITERATION_NODES`], and sent the search into a breadth-first pass 4-7x as slow).
    work_per_ply: u64,
    previous_work_per_ply: u64,
    last_iteration_nodes: u64,
    last_report: Instant,
    breadth_first_tried: bool,
    /// Where this problem's checkpoints go (see [`Run::with_checkpoint_plan`]).
    checkpoint: Option<bfs::CheckpointPlan>,
    /// The pass is to go on from a checkpoint: it starts at once.
    resume_at_once: bool,
}

impl<'s, 'p> Run<'s, 'p> {
    fn new(
        solver: &'s mut Solver,
        root: &Position,
        limits: &'s Limits,
        stop: &'s AtomicBool,
        progress: &'p mut dyn FnMut(&Progress),
    ) -> Self {
        let start = Instant::now();
        solver.tt.new_epoch();
        solver.path.clear();
        let lower_bound = limits
            .stipulation
            .length_at_least(solver.tt.probe(root.key()).map_or(1, |p| p.lb));
        Run {
            solver,
            pos: root.clone(),
            limits,
            interrupt: Interrupt {
                stop,
                deadline: limits.time.map(|t| start + t),
                mate_elsewhere: None,
            },
            progress,
            start,
            max_plies: limits.max_plies.unwrap_or(u32::MAX - 2),
            nodes: 0,
            helper_nodes: 0,
            lower_bound,
            best: None,
            step: 2,
            cost_per_ply: u64::MAX,
            work_per_ply: u64::MAX,
            previous_work_per_ply: u64::MAX,
            last_iteration_nodes: 0,
            last_report: Instant::now(),
            breadth_first_tried: false,
            checkpoint: None,
            resume_at_once: false,
        }
    }

    fn report(&mut self, depth: u32, hashfull: u32) {
        (self.progress)(&Progress {
            depth,
            lower_bound: self.lower_bound,
            nodes: self.nodes + self.helper_nodes,
            elapsed: self.start.elapsed(),
            hashfull,
            disk_bytes: 0,
            resumed_from: None,
        });
    }

    fn finish(&self, outcome: Outcome, solutions: Option<Solutions>) -> SearchResult {
        SearchResult {
            outcome,
            solutions,
            nodes: self.nodes + self.helper_nodes,
            elapsed: self.start.elapsed(),
        }
    }

    /// Whether to try the breadth-first pass now: once per search, on a narrow tree, from
    /// `BFS_FROM_PLIES` on (see [`NARROW_GROWTH`]).
    fn breadth_first_is_due(&self) -> bool {
        let narrow = self.last_iteration_nodes < CHEAP_ITERATION_NODES
            || self.work_per_ply <= self.previous_work_per_ply.saturating_mul(NARROW_GROWTH);
        let wanted = match self.limits.strategy {
            _ if self.limits.ranks.is_some() => true,
            Strategy::Auto => self.lower_bound >= BFS_FROM_PLIES && narrow,
            Strategy::Deepening => false,
            Strategy::BreadthFirst => true,
        };
        // (The pass starts from an attacker to move: 受先 problems are deepened.)
        let supported = !self.limits.stipulation.defender_first;
        !self.breadth_first_tried
            && self.lower_bound != NEVER
            && (wanted || self.resume_at_once)
            && supported
    }

    /// Where this problem's checkpoints go: what they must be of is the root, the stipulation
    /// with its conditions, and the solution limit (which decides the links kept). Made once a
    /// run, with whether the pass goes on from one at once.
    fn with_checkpoint_plan(mut self) -> Self {
        if let Some(checkpointing) = &self.limits.checkpoint {
            let problem = format!(
                "{} | {} | solutions {}",
                self.pos.to_sfen(),
                self.limits.stipulation,
                self.limits.solution_limit.max(1)
            );
            let mut plan = bfs::CheckpointPlan::new(checkpointing, problem);
            if let Some(ranks) = &self.limits.ranks {
                plan = plan.for_rank(checkpointing, ranks.0.rank(), ranks.0.ranks());
            }
            self.resume_at_once = plan.start == CheckpointStart::Resume
                || (plan.start == CheckpointStart::Either && plan.has_checkpoint());
            self.checkpoint = Some(plan);
        }
        self
    }

    /// The breadth-first pass. It starts beside the table, in the memory kept back for it, and
    /// takes the table's memory only if it needs more. Returns the result when it has the
    /// answer (or was stopped); otherwise deepening goes on from the bound it proved. An error
    /// when the disk was needed and could not be used.
    fn breadth_first_pass(&mut self) -> Result<Option<SearchResult>, SearchError> {
        self.breadth_first_tried = true;
        // The pass starts in the memory the helpers' tables had (made again if deepening
        // comes back).
        self.solver.helpers.clear();
        let hash_mb = self.solver.hash_mb;
        let table_mb = self.solver.tt.size_mb();
        let reserve_bytes = hash_mb.saturating_sub(table_mb).max(1) << 20;
        let threads = self.limits.threads;
        let checkpoint = self.checkpoint.clone();
        let solver = &mut *self.solver;
        if threads >= 2 && solver.pool(threads).is_none() {
            // No threads to be had: one thread does the same work.
            solver.pool = None;
        }
        let distributed = self.limits.ranks.is_some();
        let bfs_limits = bfs::PassLimits {
            level_log: self.limits.level_log.as_ref(),
            // A distributed pass takes the whole memory: it is all there is to such a search.
            budget_bytes: match distributed {
                true => hash_mb.saturating_sub(1).max(1) << 20,
                false => reserve_bytes,
            },
            solution_cap: self.limits.solution_limit.max(1) as u32,
            selfmate: self.limits.stipulation.goal == Goal::Selfmate,
            rules: self.limits.stipulation.rules(),
            max_plies: self.max_plies,
            interrupt: self.interrupt,
            pool: solver.pool.as_ref().filter(|_| threads >= 2),
            disk: &self.limits.disk,
            // (Ranks go on together to the end: none may give way to deepening alone.)
            give_up_when_bushy: self.limits.strategy == Strategy::Auto && !distributed,
            checkpoint,
            tuning: &self.limits.tuning.pass,
        };
        if let Some(ranks) = &self.limits.ranks {
            solver.tt = TranspositionTable::new_lazy(1).expect("a 1 MB table");
            let outcome =
                bfs::distributed::search(&self.pos, &bfs_limits, &*ranks.0, &mut self.nodes);
            self.solver.tt = TranspositionTable::new_lazy(table_mb)
                .unwrap_or_else(|_| TranspositionTable::new_lazy(1).expect("a 1 MB table"));
            return self.breadth_first_outcome(outcome);
        }
        let caches = solver.caches.get_or_insert_with(bfs::Caches::new);
        let tt = &mut solver.tt;
        let mut table_taken = false;
        let mut take_table = || {
            if table_taken {
                return 0;
            }
            table_taken = true;
            *tt = TranspositionTable::new_lazy(1).expect("a 1 MB table");
            table_mb << 20
        };
        let progress = &mut *self.progress;
        let start = self.start;
        let helper_nodes = self.helper_nodes;
        let mut on_progress = |p: bfs::BfsProgress| {
            progress(&Progress {
                depth: p.lower_bound,
                lower_bound: p.lower_bound,
                nodes: p.nodes + helper_nodes,
                elapsed: start.elapsed(),
                hashfull: p.permille,
                disk_bytes: p.disk_bytes,
                resumed_from: p.resumed_from,
            })
        };
        let (outcome, pass) = bfs::search_in_pool(
            &self.pos,
            &bfs_limits,
            &mut self.nodes,
            &mut on_progress,
            &mut take_table,
            caches,
        );
        match outcome {
            // Deepening goes on, in this memory.
            bfs::BfsOutcome::GaveUp {
                reason: bfs::GiveUp::Memory | bfs::GiveUp::Bushy,
                ..
            } => {
                drop(pass);
                // What the allocator kept of the pass would otherwise stay resident beside the
                // table deepening fills again.
                memory::release_freed_memory();
            }
            // The answer first; the next search waits for the memory (see `Solver::settle`).
            _ => {
                self.solver.releasing = pass.release_in_background(self.solver.release_inline_bytes)
            }
        }
        if table_taken {
            self.solver.tt = TranspositionTable::new_lazy(table_mb)
                .unwrap_or_else(|_| TranspositionTable::new_lazy(1).expect("a 1 MB table"));
        }
        self.breadth_first_outcome(outcome)
    }

    /// The result of the breadth-first pass's `outcome`, or None where deepening goes on (after
    /// a distributed pass, every rank deepens alone: they all gave up together, and each finds
    /// the answer one process would).
    fn breadth_first_outcome(
        &mut self,
        outcome: bfs::BfsOutcome,
    ) -> Result<Option<SearchResult>, SearchError> {
        match outcome {
            bfs::BfsOutcome::Mate { lines, count } => {
                let len = lines[0].len() as u32;
                self.lower_bound = len;
                self.report(len, 0);
                let line = lines[0].clone();
                let solutions = (self.limits.solution_limit > 1).then_some(Solutions {
                    count: count as usize,
                    lines,
                    complete: true,
                });
                Ok(Some(self.finish(Outcome::Mate(line), solutions)))
            }
            bfs::BfsOutcome::NoMate => Ok(Some(self.finish(Outcome::NoMate, None))),
            bfs::BfsOutcome::GaveUp {
                lower_bound: proven,
                reason,
            } => {
                self.lower_bound = self.lower_bound.max(proven);
                // Keep what was proven, for deepening next and for later searches.
                self.solver
                    .tt
                    .store_fact(self.pos.key(), self.lower_bound, None);
                match reason {
                    bfs::GiveUp::Memory | bfs::GiveUp::Bushy => Ok(None),
                    bfs::GiveUp::Disk(e) => Err(e.into()),
                    bfs::GiveUp::MaxPlies => {
                        let max_plies = self.max_plies;
                        Ok(Some(self.finish(Outcome::NoMateWithin { max_plies }, None)))
                    }
                    bfs::GiveUp::Aborted(_) => {
                        let lower_bound = self.lower_bound;
                        Ok(Some(self.finish(Outcome::Unknown { lower_bound }, None)))
                    }
                }
            }
        }
    }

    /// The answer, once the search has proven it: the shortest mate found meets the lower bound
    /// (then its solutions are counted, if asked for), no mate exists, or the lengths asked for
    /// are exhausted.
    fn answer_if_proven(&mut self) -> Option<SearchResult> {
        if let Some(line) = &self.best {
            let len = line.len() as u32;
            if len <= self.lower_bound {
                let line = line.clone();
                self.report(len, self.solver.tt.hashfull());
                let solutions = (self.limits.solution_limit > 1).then(|| self.count_solutions(len));
                // The count's first line, met in generation order, is the solution every front
                // end shows: the line found first depends on which thread found it.
                let line = match &solutions {
                    Some(counted) if !counted.lines.is_empty() => counted.lines[0].clone(),
                    _ => line,
                };
                return Some(self.finish(Outcome::Mate(line), solutions));
            }
        }
        if self.lower_bound == NEVER {
            return Some(self.finish(Outcome::NoMate, None));
        }
        if self.lower_bound > self.max_plies {
            let max_plies = self.max_plies;
            return Some(self.finish(Outcome::NoMateWithin { max_plies }, None));
        }
        None
    }

    /// Every shortest line of `len` plies, up to the solution limit (on all the threads, past
    /// three plies).
    fn count_solutions(&mut self, len: u32) -> Solutions {
        let threads = self.limits.threads;
        let threaded = len >= 3 && threads >= 2 && self.solver.pool(threads).is_some();
        // With threads, this thread counts first, as long as the count stays short: handing a
        // count of a few hundred nodes to the threads cost more than the count (0.05 ms against
        // 0.02 ms). The facts it stores stay for the threads; its lines are counted again.
        let budget = if threaded {
            THREADED_COUNT_FROM_NODES
        } else {
            u64::MAX
        };
        let mut counter = count::Counter::new(
            &mut self.pos,
            &self.solver.tt,
            &mut self.solver.path,
            self.limits.solution_limit,
            self.nodes,
            self.interrupt,
        )
        .with_node_budget(budget)
        .with_goal(self.limits.stipulation.goal)
        .with_rules(self.limits.stipulation.rules());
        counter.count(0, len);
        self.nodes = counter.nodes;
        if counter.abort != Some(Abort::Budget) {
            return Solutions {
                count: counter.lines.len(),
                complete: counter.abort.is_none(),
                lines: counter.lines,
            };
        }
        // (Only a count with threads has a budget.)
        let pool = self.solver.pool.as_ref().expect("the pool was just made");
        let counted = count::count_in_pool(
            pool,
            &self.pos,
            &self.solver.tt,
            (
                len,
                self.limits.stipulation.goal,
                self.limits.stipulation.rules(),
            ),
            self.limits.solution_limit,
            self.interrupt,
        );
        self.nodes += counted.nodes;
        Solutions {
            count: counted.lines.len(),
            complete: counted.complete,
            lines: counted.lines,
        }
    }

    /// How many helper threads share the next deepening iteration (their states made if
    /// needed; fewer if their memory cannot be had).
    fn helpers_for_iteration(&mut self) -> usize {
        let from = self.limits.tuning.helpers_from_nodes;
        if self.limits.threads < 2
            || self.last_iteration_nodes < from
            || self.solver.pool(self.limits.threads).is_none()
        {
            return 0;
        }
        self.solver.provide_helpers(
            self.limits.threads,
            self.limits.tuning.helpers_beyond_cores,
            false,
        )
    }

    /// One deepening iteration, to the next odd limit of the schedule. Returns the result when
    /// the search must end (stop, time limit).
    fn deepen(&mut self) -> Option<SearchResult> {
        let lower_bound = self.lower_bound;
        let stipulation = self.limits.stipulation;
        let mut depth = stipulation
            .length_at_least(lower_bound.saturating_add(self.step).saturating_sub(2))
            .min(stipulation.length_at_most(self.max_plies));
        // Under a bound, the iteration just below it proves little the last one uses (the
        // positions near its frontier are new): once the schedule reaches it, search to the
        // bound at once, with no step budget. Measured on performance.md's "none within N"
        // problems: 7-13% fewer nodes.
        let bound = stipulation.length_at_most(self.max_plies);
        let to_bound = self.limits.max_plies.is_some()
            && self.best.is_none()
            && depth < bound
            && depth + 2 >= bound;
        if to_bound {
            depth = bound;
        }
        if let Some(line) = &self.best {
            depth = depth.min(line.len() as u32 - 2);
        }
        // A step beyond 2 may cost at most twice the last iteration's nodes per ply gained.
        let gain = (depth + 2 - lower_bound) as u64;
        let budget = if depth > lower_bound && !to_bound {
            self.nodes + MIN_BUDGET.max(self.cost_per_ply.saturating_mul(2 * gain))
        } else {
            u64::MAX
        };
        let before = self.nodes;
        self.solver.tt.begin_iteration();
        let helpers = self.helpers_for_iteration();
        let root_attacker = !stipulation.defender_first;
        let shared = SharedIteration::new(
            depth,
            stipulation.goal,
            root_attacker,
            self.limits.stipulation.rules(),
        )
        .with_bound((self.limits.max_plies.is_some() && self.best.is_none()).then_some(bound));
        // Helpers take turns: odd ones search this iteration in their own order (racing the
        // main search to a mate), even ones `i` plies deeper (proving the next iterations'
        // facts ahead, which prune more in this one).
        let deepest = match &self.best {
            Some(line) => line.len() as u32 - 2,
            None => stipulation.length_at_most(self.max_plies),
        };
        let helper_depth = |i: usize| (depth + (i as u32 & !1)).min(deepest).max(depth);
        let helper_nodes_before = self.helper_nodes;
        let progress = &mut *self.progress;
        let start = self.start;
        let mut tick = |n: u64, hashfull: u32| {
            progress(&Progress {
                depth,
                lower_bound,
                nodes: n + helper_nodes_before + shared.helper_nodes.load(Ordering::Relaxed),
                elapsed: start.elapsed(),
                hashfull,
                disk_bytes: 0,
                resumed_from: None,
            })
        };
        let Solver {
            tt,
            path,
            buffers,
            helpers: helper_states,
            pool,
            ..
        } = &mut *self.solver;
        let tt: &TranspositionTable = tt;
        let helper_root = (helpers > 0).then(|| self.pos.clone());
        let mut interrupt = self.interrupt;
        // A helper's mate ends the main search only when no count follows. The count meets lines
        // in generation order, the main search's own order: stopped early, the main search left
        // the count to prove again what one thread proves on its way to that first line
        // (bushy_49_S4NP_13 at two threads, `SolutionLimit` 2: 160-235 K nodes more, against 257
        // at one thread, so 1.22x the time of one thread).
        if self.limits.solution_limit <= 1 {
            interrupt.mate_elsewhere = Some(&shared.mate_found);
        }
        let main_pos = &mut self.pos;
        let nodes = self.nodes;
        let over = &shared.over;
        let mut main_search = || {
            let mut it = Iteration::new(
                main_pos, tt, path, buffers, depth, nodes, budget, interrupt, &mut tick,
            );
            shared.ready(&mut it, depth);
            let result = it.root();
            over.store(true, Ordering::Relaxed);
            (result, it.nodes, it.abort, it.best.take())
        };
        // The helpers run on the pool's threads, which live from search to search: a thread
        // started for each iteration (and its stack mapped and unmapped) made the short
        // problems slower at two threads than at one.
        let (result, main_nodes, abort, found) = match (pool.as_ref(), helper_root.as_ref()) {
            (Some(pool), Some(root)) => pool.in_place_scope(|scope| {
                let shared = &shared;
                for (i, helper) in helper_states.iter_mut().take(helpers).enumerate() {
                    scope.spawn(move |_| {
                        helper.search(root, tt, helper_depth(i + 1), i as u64 + 1, shared)
                    });
                }
                main_search()
            }),
            _ => main_search(),
        };
        self.nodes = main_nodes;
        let iteration_helper_nodes = shared.helper_nodes.into_inner();
        self.helper_nodes += iteration_helper_nodes;
        // Counting, a helper's mate within the limit did not stop the main search (above); if
        // something else did (`stop`, a deadline, the node budget), that mate is the answer, as it
        // would have been had it stopped the main search.
        let helper_mate_within = shared.mate_found.load(Ordering::Relaxed);
        let helper_mate = shared.mate_line.into_inner();
        let (abort, found) = match abort {
            Some(Abort::FoundElsewhere) => (Some(Abort::Found), helper_mate),
            Some(Abort::Stopped | Abort::Timeout | Abort::Budget)
                if helper_mate_within && helper_mate.is_some() =>
            {
                (Some(Abort::Found), helper_mate)
            }
            _ => {
                // A helper's mate beyond this iteration's limit is an upper bound to keep.
                if let Some(line) = helper_mate {
                    if self.best.as_ref().is_none_or(|b| b.len() > line.len()) {
                        self.best = Some(line);
                    }
                }
                (abort, found)
            }
        };
        let cost = self.nodes - before;
        match abort {
            None => {
                // The iteration failed: its conditional bounds are facts now.
                self.solver.tt.iteration_failed();
                let new_bound = lower_bound.max(result.if_failed).max(depth + 2);
                // Nodes spent per ply of proven bound: deepen in bigger steps while that falls
                // (re-walking a long line dominates), in smaller ones when it rises (a growing
                // frontier dominates).
                let per_ply = cost / u64::from(new_bound - lower_bound).max(1);
                self.step = if per_ply <= self.cost_per_ply {
                    (self.step * 2).min(MAX_STEP)
                } else {
                    (self.step / 2).max(2)
                };
                self.cost_per_ply = per_ply;
                let work = cost + iteration_helper_nodes;
                self.previous_work_per_ply = self.work_per_ply;
                self.work_per_ply = work / u64::from(new_bound - lower_bound).max(1);
                self.last_iteration_nodes = work;
                self.lower_bound = new_bound;
            }
            Some(reason) => {
                // Whatever the reason, this iteration did not fail: void its conditional bounds.
                self.solver.tt.new_epoch();
                match reason {
                    Abort::Stopped | Abort::Timeout => {
                        self.report(depth, self.solver.tt.hashfull());
                        return Some(self.finish(Outcome::Unknown { lower_bound }, None));
                    }
                    Abort::Budget => self.step = 2,
                    Abort::Found | Abort::FoundElsewhere => {
                        let line = found.expect("a found mate has a line");
                        debug_assert!(line.len() as u32 % 2 == stipulation.length_parity());
                        self.best = Some(line);
                        self.step = 2;
                    }
                }
            }
        }
        if self.last_report.elapsed() >= Duration::from_millis(100) {
            self.report(depth, self.solver.tt.hashfull());
            self.last_report = Instant::now();
        }
        None
    }
}
/// Replays `line` from `root` and checks it is a helpmate (H#): every move legal, every attacker
/// move a check, the defender mated at the end. Returns the first problem found.
pub fn verify_helpmate(root: &Position, line: &[Move]) -> Result<(), String> {
    verify_solution(root, Stipulation::HELPMATE, line)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The table and the helpers' tables (which the breadth-first pass's first memory takes
    /// over in turn) fit in the memory asked for, whatever the hash and the threads.
    #[test]
    fn the_table_and_the_helpers_tables_fit_in_the_hash() {
        for hash_mb in [1, 2, 7, 8, 9, 16, 64, 256, 4096, 1 << 20] {
            for threads in 1..=64 {
                let table = table_mb(hash_mb);
                let (each, helpers) = smp::helper_tables(hash_mb - table, threads - 1);
                assert!(table + each * helpers <= hash_mb, "{hash_mb} MB, {threads}");
                assert!(each <= HELPER_TABLE_MB && helpers < threads);
                if helpers > 0 {
                    assert!(each >= 1);
                }
                // Every helper has a table where the hash allows a megabyte each.
                if hash_mb - table >= threads - 1 {
                    assert_eq!(helpers, threads - 1, "{hash_mb} MB, {threads}");
                }
            }
        }
    }

    /// A breadth-first pass's memory is let go of after its answer, on a thread of its own, and
    /// the next search (or a new table) waits for it.
    #[test]
    fn a_pass_is_freed_after_its_answer_and_before_the_next_search() {
        let root = Position::from_sfen(
            "9/G2s4G/LLpNGNpPP/4L4/1sN3N2/1g1bpb1ss/1pL3R2/P4k3/1PPPP3K b 2Pr5p 1",
        )
        .unwrap();
        let limits = Limits {
            strategy: Strategy::BreadthFirst,
            ..Default::default()
        };
        let stop = AtomicBool::new(false);
        let mut solver = Solver::new_lazy(16).unwrap();
        // (A pass this small is otherwise freed at once.)
        solver.release_inline_bytes = 0;
        let solve = |solver: &mut Solver| {
            let result = solver.solve(&root, &limits, &stop, &mut |_| {}).unwrap();
            assert!(matches!(result.outcome, Outcome::Mate(ref line) if line.len() == 27));
        };
        solve(&mut solver);
        assert!(
            solver.releasing.is_some(),
            "the pass is freed after the answer"
        );
        solve(&mut solver);
        assert!(solver.releasing.is_some());
        solver.resize(32).unwrap();
        assert!(solver.releasing.is_none(), "a new table waits for it");
        solve(&mut solver);
        solver.clear();
        assert!(solver.releasing.is_none());
        // Stopped before it starts: the pass is still handed over, not leaked.
        stop.store(true, Ordering::Relaxed);
        let _ = solver.solve(&root, &limits, &stop, &mut |_| {});
        solver.settle();
        assert!(solver.releasing.is_none());
    }
}
