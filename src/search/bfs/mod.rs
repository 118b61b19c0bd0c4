//! Breadth-first helpmate search, for long solutions.
//!
//! Iterative deepening re-walks everything above its frontier in each iteration, which for a
//! solution of thousands of plies costs far more than the frontier itself. This search expands
//! each attacker position once, level by level (a level is two plies: a check and an evasion),
//! keeping only the current and next levels as packed positions with their checks, a set of the
//! keys seen, and per position a link to its parent for rebuilding the line. Only positions with
//! a check are kept: one without has no future, and on long problems most evasions lead to one
//! (see `expand.rs`). The first level that contains a mate
//! gives the shortest one. Memory is bounded by a budget; past it the search gives up (reporting
//! the bound it proved) and the caller goes on with iterative deepening.
//!
//! Counting solutions: every shortest mating line passes each of its positions at that
//! position's distance from the root (otherwise a shorter mate would exist), so the shortest
//! lines are exactly the paths through the level graph. With counting on, every edge into a
//! position of the next level is kept (not only the first), each position carries the number of
//! paths reaching it (capped), the mate level is scanned to the end, and lines are read back
//! from the mating edges towards the root.

mod expand;
mod keys;
mod levels;
mod room;

pub use census::{bucket_floor, GAP_BUCKETS};
pub(crate) use checkpoint::Plan as CheckpointPlan;
pub use checkpoint::{CheckpointStart, Checkpointing};
pub use disk::{DiskBudget, DiskError};
#[cfg(feature = "mpi")]
pub use distributed::mpi::{start as start_mpi, MpiRank, MpiThread};
pub use distributed::transport::{LocalRank, Transport};
use expand::{children as expand_children, crew, narrow, parallel, serial};
use keys::census;
pub use keys::forgetting::Forgetting;
use levels::{checkpoint, disk, graph, level};

pub(crate) use distributed::RANGES_FROM;
pub(crate) use expand::distributed;
pub(crate) use narrow::{NARROW_BELOW, NARROW_CLAIMS_PERCENT};
pub(crate) use parallel::SLICE_POSITIONS;

use super::interrupt::{Abort, Interrupt};
use crate::shogi::RuleSet;
use crate::shogi::{Move, Position};
use expand_children::{DeadCache, Pipeline};
use graph::LevelGraph;
use keys::KeySet;
use level::{Level, LevelEdges, LevelOutcome, LevelPositions};
use room::{make_room, more_room, NoRoom, Places, Room};
use serial::expand_level;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// The levels grow like a bushy tree's (see [`Bushy`]): deepening finds its mate sooner.
    Bushy,
    /// The links could not go to disk, or could not be read back.
    Disk(DiskError),
    /// The next level would go past the longest mate looked for.
    MaxPlies,
    Aborted(Abort),
}

/// Recognises a bushy tree from the widths of the last levels: each of the last two at least
/// [`Bushy::GROWTH`] times as wide as the one before, the last at least [`Bushy::WIDTH`] wide.
/// On such a tree the pass would expand every position short of the mate, where deepening,
/// with its table, finds the mate after walking part of its last iteration: the lone-king
/// problems of 11-17 plies took the pass 3-4x deepening's time (`9/9/9/9/9/9/9/9/1k7 b
/// S4P2r2b4g3s4n4l14p 1`: levels 1,168, 5,196, 20,638, 75,759, 269,825 positions; 228 ms
/// against 73 ms). The long problems' levels grow less than 2x a level once they are 16 K wide
/// (加藤徹 4197: 14,237 -> 23,457; 9029: 14,914 -> 22,563; chain 207: 15,785 -> 31,420), and
/// narrower levels cost too little to judge by.
#[derive(Default)]
struct Bushy {
    /// The widths of the last three levels seen, oldest first, and the depth of the last.
    widths: [usize; 3],
    depth: u32,
}

impl Bushy {
    const WIDTH: usize = 1 << 14;
    const GROWTH: usize = 3;

    /// Notes level `depth`'s width; true if the tree is bushy.
    fn note(&mut self, depth: u32, width: usize) -> bool {
        if depth == self.depth + 1 {
            self.widths = [self.widths[1], self.widths[2], width];
        } else if depth != self.depth {
            // Levels passed unseen (the narrow loop's): no growth to judge by yet.
            self.widths = [0, 0, width];
        }
        self.depth = depth;
        let [a, b, c] = self.widths;
        a > 0 && c >= Self::WIDTH && b >= Self::GROWTH * a && c >= Self::GROWTH * b
    }
}

/// A pass's threads join in once it has searched this many nodes (some 3 ms): a pass that
/// ends sooner costs less on one thread than the threads' start (the narrow loop's tables
/// written, the crew called: a 27-ply problem the pass solves in 0.04 ms at one thread took
/// 0.16 ms at two).
pub(crate) const THREADS_FROM_NODES: u64 = 20_000;

/// Levels at least this wide are expanded with several threads (when there are any); narrower
/// ones cost less than handing them out. Both ways give the same level, edges and order.
/// Measured at two threads: 64 beat 4096, 1024 and 256 on every long problem tried (12555:
/// 5.9 s at 4096, 4.1-4.3 s at 64; 2571: 3.9 s, 2.7 s); once the threads no longer waited on
/// each other's cache lines, 16 beat 64 on 寿限無 19447 (0.561 s against 0.606; 8 and 4 no
/// better) and equalled it on 12555, 1965 and 2571.
pub(crate) const PARALLEL_FROM_POSITIONS: usize = 16;

/// Figures of one breadth-first level, for the level log (`Limits::level_log`).
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

pub(crate) struct BfsLimits<'a> {
    /// Where to send each level's figures.
    pub level_log: Option<crossbeam_channel::Sender<LevelStats>>,
    pub budget_bytes: usize,
    /// Count shortest lines up to this many (1: find one only).
    pub solution_cap: u32,
    /// HS#: the defender's reply mates (see [`expand::Looking::selfmate`]); H# otherwise.
    pub selfmate: bool,
    /// The rules moves follow.
    pub rules: RuleSet,
    pub max_plies: u32,
    pub interrupt: Interrupt<'a>,
    /// Threads to expand each level with (see `parallel/`); None: this thread alone.
    pub pool: Option<&'a rayon::ThreadPool>,
    /// Levels at least this wide go to the threads.
    pub parallel_from_positions: usize,
    /// The threads expand this many positions before inserting their children.
    pub parallel_slice_positions: usize,
    /// Positions in each batch a thread takes (None: sized to the slice).
    pub parallel_batch_positions: Option<usize>,
    /// Levels narrower than this (and at least `parallel_from_positions` wide) run in the
    /// narrow loop (see `narrow.rs`); 0: never.
    pub narrow_below: usize,
    /// See `Limits::ranges_from`.
    pub ranges_from: u64,
    /// The narrow loop gives a level back once its claims fill this share of their table
    /// (per cent; tests set a few to make it give levels back).
    pub narrow_claims_percent: usize,
    /// The most bytes a thread's key-set shards may grow by on a narrow level (tests set 0 to
    /// send every growth through the calling thread).
    pub narrow_key_allowance: usize,
    /// Where the links go once memory runs short.
    pub disk: DiskBudget,
    /// Give up as soon as the levels grow like a bushy tree's (see [`Bushy`]).
    pub give_up_when_bushy: bool,
    /// The threads join in once the pass has searched this many nodes (see
    /// [`THREADS_FROM_NODES`]).
    pub threads_from_nodes: u64,
    /// Where checkpoints go and whether the pass starts from one (see `checkpoint.rs`).
    pub checkpoint: Option<checkpoint::Plan>,
    /// Which keys the pass lets go of once memory is short (see [`KeySet::freeze`]).
    pub forgetting: Forgetting,
    /// Freeze the keys after every level (tests).
    pub freeze_every_level: bool,
}

impl BfsLimits<'_> {
    /// The length of a mate found on level `depth` (whose positions are `2 * depth` plies
    /// from the root): one ply more in H#, two in HS#.
    fn mate_length(&self, depth: u32) -> u32 {
        2 * depth + if self.selfmate { 2 } else { 1 }
    }

    /// Where room is made when memory is short (see `make_room`).
    fn places(&self) -> Places<'_> {
        Places {
            disk: &self.disk,
            pool: self.pool,
            interrupt: self.interrupt,
        }
    }
}

impl From<NoRoom> for GiveUp {
    fn from(no_room: NoRoom) -> GiveUp {
        match no_room {
            NoRoom::Disk(e) => GiveUp::Disk(e),
            NoRoom::Aborted(abort) => GiveUp::Aborted(abort),
        }
    }
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

/// What a pass holds in memory (and on disk): the keys seen, the current level, its paths and
/// the links. Handed back with the outcome, so that the caller can answer before it lets go
/// of them: freeing them took a third of a second after a `stop` on 加藤徹 4197 with 2 GB
/// (the key set's tables, and closing a 1.8 GB file of links, whose cached pages the system
/// drops then).
pub(crate) struct Pass {
    seen: KeySet,
    level: LevelPositions,
    counts: Vec<u32>,
    graph: LevelGraph,
    /// Where the pass stands, for [`search`] to go on from.
    at: PassAt,
    checkpoints: Option<checkpoint::Checkpoints>,
}

/// Where a pass stands between two calls of [`search`] (the first on the calling thread, the
/// second on the pool's: see [`search_in_pool`]).
#[derive(Default)]
struct PassAt {
    /// The level about to be expanded.
    depth: u32,
    /// The memory it may use.
    budget: usize,
    bushy: Bushy,
    /// Its first call's start: its nodes then, and the time.
    first: Option<(u64, Instant)>,
}

/// A pass holding less than this is freed by the thread that answers (see
/// `Pass::release_in_background`).
pub(crate) const RELEASE_INLINE_BYTES: usize = 16 << 20;

impl Pass {
    /// Memory held.
    fn bytes(&self) -> usize {
        self.seen.bytes() + self.level.bytes() + self.counts.capacity() * 4 + self.graph.bytes()
    }

    fn new(
        root: &Position,
        rules: RuleSet,
        census: Option<Arc<census::Census>>,
        forgetting: Forgetting,
    ) -> Pass {
        // Only attacker positions with a check are recorded: a defender position met twice
        // costs one more evasion generation, which is cheaper than remembering every one of
        // them, and a position without a check has no future.
        let mut seen = KeySet::with_census(census, forgetting);
        let _ = seen.insert(root.key(), usize::MAX, false);
        Pass {
            seen,
            level: LevelPositions::root(root, rules),
            counts: vec![1],
            graph: LevelGraph::default(),
            at: PassAt::default(),
            checkpoints: None,
        }
    }

    /// The pass `limits.checkpoint` says to start with: as its checkpoint left it, or afresh
    /// (writing checkpoints); nodes played before the checkpoint are added to `nodes`.
    fn start(root: &Position, limits: &BfsLimits, nodes: &mut u64) -> Result<Pass, DiskError> {
        let census = limits
            .level_log
            .is_some()
            .then(|| Arc::new(census::Census::new()));
        let mut pass = Pass::new(root, limits.rules, census.clone(), limits.forgetting);
        let Some(plan) = &limits.checkpoint else {
            return Ok(pass);
        };
        let (checkpoints, resumed) =
            checkpoint::start(plan, &limits.disk, census, limits.forgetting)?;
        match resumed {
            Some(resumed) => {
                pass.seen = resumed.seen;
                pass.level = resumed.level;
                pass.counts = resumed.counts;
                pass.graph = resumed.graph;
                pass.at.depth = resumed.depth;
                *nodes += resumed.nodes;
            }
            None => pass.graph.named = Some(plan.links_path()),
        }
        pass.checkpoints = Some(checkpoints);
        Ok(pass)
    }

    /// Bytes on disk: links and the last checkpoint.
    fn disk_bytes(graph: &LevelGraph, checkpoints: &Option<checkpoint::Checkpoints>) -> u64 {
        graph.disk_bytes() + checkpoints.as_ref().map_or(0, |c| c.bytes)
    }

    /// Frees the pass's memory and file on a thread of its own; join it before memory is
    /// needed again. Freed here and now if it holds less than `inline_bytes` and no file
    /// (starting a thread cost more than freeing a few megabytes: a third of a 27-ply problem's
    /// 0.2 ms pass), or if no thread can be had.
    pub(crate) fn release_in_background(
        self,
        inline_bytes: usize,
    ) -> Option<std::thread::JoinHandle<()>> {
        if self.graph.file.is_none() && self.bytes() < inline_bytes {
            drop(self);
            return None;
        }
        std::thread::Builder::new()
            .name("release".into())
            .spawn(move || {
                drop(self);
                crate::search::memory::release_freed_memory();
            })
            .ok()
    }
}

/// What passes keep from one to the next: the cache of dead positions, whose entries hold for
/// good (made once, at the first pass or beforehand with [`Caches::new`]). Made anew each pass,
/// its 2 MB written took three quarters of a short pass's time (a 27-ply problem the pass
/// solves in 0.04 ms took 0.16 ms). (The narrow loop's tables are made each pass: a pass may
/// end in the middle of a level, with claims the next run would take for its own.)
pub(crate) struct Caches {
    dead: DeadCache,
}

impl Caches {
    pub(crate) fn new() -> Caches {
        Caches {
            dead: DeadCache::new(),
        }
    }

    /// Memory held.
    pub(crate) fn bytes(&self) -> usize {
        DeadCache::BYTES
    }
}

/// [`search`], with its loop on one of the pool's threads when there is a pool: each level's
/// work is then shared out from inside the pool instead of being handed from the calling thread
/// to the pool and back twice a level (on the long narrow problems, tens of thousands of levels
/// of about 150 positions, those hand-offs were a quarter of the time, in the kernel). Progress
/// reports come back to the calling thread, which passes them on. The pass's memory comes back
/// with the outcome (see [`Pass`]).
pub(crate) fn search_in_pool(
    root: &Position,
    limits: &BfsLimits,
    nodes: &mut u64,
    progress: &mut dyn FnMut(BfsProgress),
    more_memory: &mut (dyn FnMut() -> usize + Send),
    caches: &mut Caches,
) -> (BfsOutcome, Pass) {
    let mut pass = match Pass::start(root, limits, nodes) {
        Ok(pass) if pass.checkpoints.as_ref().is_some_and(|c| c.resumed) => {
            progress(BfsProgress {
                lower_bound: limits.mate_length(pass.at.depth),
                nodes: *nodes,
                permille: 0,
                disk_bytes: Pass::disk_bytes(&pass.graph, &pass.checkpoints),
                resumed_from: Some(2 * pass.at.depth),
            });
            pass
        }
        Ok(pass) => pass,
        Err(e) => {
            let outcome = BfsOutcome::GaveUp {
                lower_bound: 1,
                reason: GiveUp::Disk(e),
            };
            return (
                outcome,
                Pass::new(root, limits.rules, None, limits.forgetting),
            );
        }
    };
    // On this thread until the threads are due (a short pass ends before: handing it to the
    // pool cost more than the pass, 20 us of 15).
    if let Some(outcome) = search(
        &mut pass,
        limits,
        nodes,
        progress,
        more_memory,
        None,
        caches,
    ) {
        return (outcome, pass);
    }
    let pool = limits
        .pool
        .expect("only a pass with threads waits for them");
    let (sender, reports) = crossbeam_channel::unbounded();
    let mut outcome = None;
    let shared = crew::Shared::default();
    let shared = &shared;
    let pass_in_pool = &mut pass;
    pool.in_place_scope(|scope| {
        let outcome = &mut outcome;
        scope.spawn(move |scope| {
            let mut report = move |report| {
                // The receiver lives until this job ends.
                let _ = sender.send(report);
            };
            // A helper spinning where it has no CPU of its own only takes time from the
            // threads that work.
            let helpers = pool
                .current_num_threads()
                .min(crate::search::machine::cores())
                .saturating_sub(1);
            let mut crew = crew::Crew::new(scope, shared, helpers);
            *outcome = search(
                pass_in_pool,
                limits,
                nodes,
                &mut report,
                more_memory,
                Some(&mut crew),
                caches,
            );
        });
        // The reports end when the job (and with it the sender) does. A step that sends none
        // for a while (freezing a billion keys takes seconds) still gets a report a second:
        // the last one again, its time brought up to date by `progress`.
        let mut last = None;
        loop {
            match reports.recv_timeout(Duration::from_secs(1)) {
                Ok(report) => {
                    progress(report);
                    last = Some(report);
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    if let Some(report) = last {
                        progress(report);
                    }
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    (
        outcome.expect("the search job ran to its end with an outcome"),
        pass,
    )
}

/// Runs the breadth-first search of `pass` (from its root, attacker to move, or from where its
/// last call left it). Without `crew`, returns `None` once threads would join in (see
/// [`THREADS_FROM_NODES`]), for the caller to go on with them. `nodes` counts
/// moves played; `progress` is called after levels, at most ten times a second, and at least
/// once a second during a long level. When the budget is used up, `more_memory()` is asked for
/// more bytes; when it has none, the links move to disk (if `limits.disk` allows); then the
/// pass gives up. `crew` (with a pool) shares out the narrow levels (see `crew.rs`).
fn search(
    pass: &mut Pass,
    limits: &BfsLimits,
    nodes: &mut u64,
    progress: &mut dyn FnMut(BfsProgress),
    more_memory: &mut dyn FnMut() -> usize,
    crew: Option<&mut dyn crew::Team>,
    caches: &mut Caches,
) -> Option<BfsOutcome> {
    let cap = limits.solution_cap.max(1);
    let Pass {
        seen,
        level,
        counts,
        graph,
        at,
        checkpoints,
    } = pass;
    if at.first.is_none() {
        at.first = Some((*nodes, Instant::now()));
        at.budget = limits.budget_bytes;
        if limits.disk.always {
            if let Err(e) = graph.move_to_disk(&limits.disk, 0) {
                return Some(BfsOutcome::GaveUp {
                    lower_bound: 1,
                    reason: GiveUp::Disk(e),
                });
            }
        }
    }
    let (first_node, started) = at.first.expect("set above");
    let mut budget = at.budget;
    let waits_for_threads = crew.is_none() && limits.pool.is_some();
    let dead: &DeadCache = &caches.dead;
    let mut narrow_state = None;
    let mut pipeline = Pipeline::new();
    let mut workers = limits
        .pool
        .map(|pool| parallel::Workers::new(pool, dead, crew.map(|c| c as _)));
    let mut narrow = NarrowLoop {
        state: &mut narrow_state,
        paused: 0,
    };
    let mut last_report = Instant::now();
    let mut depth = at.depth;
    let mut bushy = std::mem::take(&mut at.bushy);
    loop {
        let threads_joined = *nodes - first_node >= limits.threads_from_nodes;
        if threads_joined && waits_for_threads {
            *at = PassAt {
                depth,
                budget,
                bushy,
                first: at.first,
            };
            return None;
        }
        // Level `depth` holds attacker positions at ply 2 * depth; a mate found now has
        // one ply more (H#) or two (HS#), and none shorter exists.
        let lower_bound = limits.mate_length(depth);
        // The children found from here on belong to the next level.
        seen.set_level(depth + 1);
        let give_up = |reason| BfsOutcome::GaveUp {
            lower_bound,
            reason,
        };
        if lower_bound > limits.max_plies {
            return Some(give_up(GiveUp::MaxPlies));
        }
        if bushy.note(depth, level.len()) && limits.give_up_when_bushy {
            return Some(give_up(GiveUp::Bushy));
        }
        if let Some(checkpoints) = checkpoints.as_mut().filter(|c| c.due()) {
            if let Err(e) = checkpoints.write(
                (seen, level, counts, graph),
                None,
                (depth, *nodes),
                &limits.disk,
            ) {
                return Some(give_up(GiveUp::Disk(e)));
            }
        }
        // The narrow loop hands its level back when a checkpoint falls due.
        let checkpoint_due_at = checkpoints.as_ref().map(checkpoint::Checkpoints::due_at);
        // Narrow levels: every thread in one loop, as long as they stay narrow (see
        // `narrow.rs`).
        if let Some(crew) = workers
            .as_mut()
            .filter(|_| threads_joined && narrow.is_due(limits, level.len(), graph))
            .and_then(|w| w.crew())
        {
            let bushy = &mut bushy;
            let mut after_level = |done: narrow::LevelDone| {
                // (The loop's levels are too narrow to be bushy; their widths are the growth
                // the next levels are judged by.)
                bushy.note(done.depth, done.width);
                log_level(
                    limits,
                    (done.depth, done.width, None),
                    (done.seen, done.graph, checkpoints.as_ref()),
                    (done.used, done.nodes),
                    started,
                );
                if last_report.elapsed() >= Duration::from_millis(100) {
                    progress(BfsProgress {
                        lower_bound: limits.mate_length(done.depth),
                        nodes: done.nodes,
                        permille: permille(done.used, done.budget),
                        disk_bytes: 0,
                        resumed_from: None,
                    });
                    last_report = Instant::now();
                }
            };
            let before = depth;
            let exit = narrow.run(
                crew,
                (seen, dead, limits, cap),
                narrow::At {
                    depth: &mut depth,
                    level,
                    counts,
                },
                &mut narrow::Book {
                    graph,
                    budget: &mut budget,
                    more_memory,
                    disk: &limits.disk,
                    nodes,
                    after_level: &mut after_level,
                    too_deep: &|depth| {
                        limits.mate_length(depth) > limits.max_plies
                            || checkpoint_due_at.is_some_and(|at| Instant::now() >= at)
                    },
                },
            );
            let lower_bound = limits.mate_length(depth);
            let give_up = |reason| BfsOutcome::GaveUp {
                lower_bound,
                reason,
            };
            match exit {
                Some(narrow::Exit::Done(outcome)) => {
                    match settled(outcome, graph, cap, lower_bound, limits) {
                        Settled::Ends(outcome) => return Some(outcome),
                        // (The loop gives a next level back as `Handback`, never as `Done`.)
                        Settled::Next(..) => unreachable!("the narrow loop ends on an outcome"),
                    }
                }
                Some(narrow::Exit::Disk(e)) => return Some(give_up(GiveUp::Disk(e))),
                Some(narrow::Exit::Handback) if depth > before => {
                    // A level made by the loop: its memory is settled as below, and it is
                    // expanded the usual way, or by the loop again.
                    if let Err(outcome) = settle_memory(
                        (seen, graph, level, counts),
                        &mut budget,
                        more_memory,
                        limits,
                        lower_bound,
                    ) {
                        return Some(outcome);
                    }
                    continue;
                }
                // The loop gave its first level back (it outgrew the loop's tables, or needs
                // memory the loop cannot make): the usual way expands it, and the next few.
                Some(narrow::Exit::Handback) => narrow.paused = NARROW_PAUSE,
                None => {}
            }
        }
        // The narrow loop's tables, kept for its next run, count too.
        let narrow_bytes = narrow
            .state
            .as_ref()
            .map_or(0, |n| narrow::fixed_bytes(n.threads()));
        let wide = threads_joined && level.len() >= limits.parallel_from_positions;
        if let Some(w) = workers.as_ref().filter(|_| wide) {
            let beside = w.bytes() + narrow_bytes + w.level_estimate(level.len());
            if let Err(outcome) = room_for_threads(
                (seen, graph, level, counts),
                &mut budget,
                more_memory,
                limits,
                (beside, lower_bound),
            ) {
                return Some(outcome);
            }
        }
        let held = graph.bytes() + level.bytes() + counts.capacity() * 4 + DeadCache::BYTES;
        let mut disk_error = None;
        let outcome = {
            let this_level = Level {
                positions: level,
                slice: limits.parallel_slice_positions,
                batch: limits.parallel_batch_positions,
                counts,
                cap,
                selfmate: limits.selfmate,
                rules: limits.rules,
                interrupt: limits.interrupt,
                held,
            };
            // The threads' expansion takes about twice the memory a new position that one
            // thread's does (each owner's copy of it, then the merge's): where the level would
            // not fit that way even after `room_for_threads`, one thread expands it (with the
            // same result), going to disk or freezing keys as it needs.
            let threads_fit = |workers: &parallel::Workers, budget: usize| {
                let need = held + seen.bytes() + workers.bytes() + narrow_bytes;
                need + workers.level_estimate(level.len()) <= budget
            };
            let use_threads = workers
                .as_ref()
                .is_some_and(|w| wide && threads_fit(w, budget));
            if workers.is_some() && wide && !use_threads {
                // Memory is short: the narrow loop's tables go (made again if it runs again).
                *narrow.state = None;
            }
            let budget_now = budget;
            // At least once a second during a wide level.
            let last_permille = permille(seen.bytes() + held, budget);
            let disk_bytes = Pass::disk_bytes(graph, checkpoints);
            let mut tick = |nodes: u64| {
                if last_report.elapsed() >= Duration::from_secs(1) {
                    progress(BfsProgress {
                        lower_bound,
                        nodes,
                        permille: last_permille,
                        disk_bytes,
                        resumed_from: None,
                    });
                    last_report = Instant::now();
                }
            };
            // `held` above counts the links in memory: those moved to disk during the level
            // are credited to the budget instead, until the level ends.
            let mut credit = 0;
            let mut more = || match more_room(more_memory, graph, &limits.disk) {
                Ok(Room::Memory(extra)) => {
                    budget += extra;
                    extra
                }
                Ok(Room::Disk(freed)) => {
                    credit += freed;
                    budget += freed;
                    freed
                }
                Err(e) => {
                    disk_error = Some(e);
                    0
                }
            };
            let outcome = match workers.as_mut().filter(|_| use_threads) {
                Some(workers) => {
                    // The threads' vectors, kept from the last level, are held too.
                    let allowance =
                        budget_now.saturating_sub(held + seen.bytes() + workers.bytes());
                    parallel::expand_level(
                        workers,
                        seen,
                        &this_level,
                        nodes,
                        allowance,
                        &mut more,
                        &mut tick,
                    )
                }
                None => expand_level(
                    seen,
                    (dead, &mut pipeline),
                    &this_level,
                    nodes,
                    budget_now,
                    &mut more,
                    &mut tick,
                ),
            };
            budget -= credit;
            outcome
        };
        let outcome = match outcome {
            // A freeze the interrupt cut short reads as no memory: the interrupt comes first.
            LevelOutcome::Memory => {
                if let Some(abort) = limits.interrupt.check(Instant::now()) {
                    return Some(give_up(GiveUp::Aborted(abort)));
                }
                return Some(give_up(disk_error.map_or(GiveUp::Memory, GiveUp::Disk)));
            }
            outcome => outcome,
        };
        let (next, next_counts, edges) = match settled(outcome, graph, cap, lower_bound, limits) {
            Settled::Ends(outcome) => return Some(outcome),
            Settled::Next(next, counts, edges) => (next, counts, edges),
        };
        if let Err(e) = graph.push(edges) {
            return Some(give_up(GiveUp::Disk(e)));
        }
        *level = next;
        level.shrink_to_fit();
        *counts = next_counts;
        let held_now = seen.bytes() + graph.bytes() + level.bytes() + counts.capacity() * 4;
        if let Some(workers) = workers.as_mut().filter(|w| {
            held_now + w.bytes() > budget / KEPT_VECTORS_DIVISOR * (KEPT_VECTORS_DIVISOR - 1)
        }) {
            // The threads' vectors hold about what the level just made: kept for the next
            // level where memory is short, they would take half of what it has.
            workers.release();
        }
        if graph.spilling {
            // Memory is short: the vectors of the level just finished would otherwise
            // stay with the allocator, and the next, wider level's be taken anew. The
            // threads' vectors go too.
            if let Some(workers) = &mut workers {
                workers.release();
            }
            *narrow.state = None;
            crate::search::memory::release_freed_memory();
        }
        depth += 1;
        let used = match settle_memory(
            (seen, graph, level, counts),
            &mut budget,
            more_memory,
            limits,
            limits.mate_length(depth),
        ) {
            Ok(used) => used,
            Err(outcome) => return Some(outcome),
        };
        if limits.freeze_every_level
            && seen
                .freeze_all(limits.pool, &|| limits.interrupt.raised())
                .is_none()
        {
            return Some(BfsOutcome::GaveUp {
                lower_bound: limits.mate_length(depth),
                reason: GiveUp::Aborted(limits.interrupt.why()),
            });
        }
        log_level(
            limits,
            (depth, level.len(), Some(level.checks.len())),
            (seen, graph, checkpoints.as_ref()),
            (used, *nodes),
            started,
        );
        if last_report.elapsed() >= Duration::from_millis(100) {
            progress(BfsProgress {
                lower_bound: limits.mate_length(depth),
                nodes: *nodes,
                permille: permille(used, budget),
                disk_bytes: Pass::disk_bytes(graph, checkpoints),
                resumed_from: None,
            });
            last_report = Instant::now();
        }
    }
}

/// A level's outcome, as the pass goes on from it.
enum Settled {
    /// The pass ends.
    Ends(BfsOutcome),
    /// The next level, its counts and the edges into it.
    Next(LevelPositions, Vec<u32>, LevelEdges),
}

/// A level's outcome, as the pass's outcome when it ends the pass (`lower_bound` for the
/// level expanded), else the next level.
fn settled(
    outcome: LevelOutcome,
    graph: &mut LevelGraph,
    cap: u32,
    lower_bound: u32,
    limits: &BfsLimits,
) -> Settled {
    let give_up = |reason| BfsOutcome::GaveUp {
        lower_bound,
        reason,
    };
    Settled::Ends(match outcome {
        LevelOutcome::Mates { mates, count } => match graph.lines(&mates, cap as usize) {
            Ok(lines) => BfsOutcome::Mate { lines, count },
            Err(e) => give_up(GiveUp::Disk(e)),
        },
        LevelOutcome::Aborted(abort) => give_up(GiveUp::Aborted(abort)),
        LevelOutcome::Memory => give_up(
            limits
                .interrupt
                .check(Instant::now())
                .map_or(GiveUp::Memory, GiveUp::Aborted),
        ),
        LevelOutcome::Next { next, .. } if next.is_empty() => BfsOutcome::NoMate,
        LevelOutcome::Next {
            next,
            counts,
            edges,
        } => return Settled::Next(next, counts, edges),
    })
}

/// Brings the pass back within its budget after a level (see `make_room`); the bytes used,
/// or the pass's outcome if it must give up (`lower_bound`: the next level's).
fn settle_memory(
    (seen, graph, level, counts): (&mut KeySet, &mut LevelGraph, &LevelPositions, &Vec<u32>),
    budget: &mut usize,
    more_memory: &mut dyn FnMut() -> usize,
    limits: &BfsLimits,
    lower_bound: u32,
) -> Result<usize, BfsOutcome> {
    let fixed = level.bytes() + counts.capacity() * 4;
    if room(
        (seen, graph, fixed),
        budget,
        more_memory,
        limits,
        (0, lower_bound),
    )? {
        Ok(seen.bytes() + graph.bytes() + fixed)
    } else {
        Err(BfsOutcome::GaveUp {
            lower_bound,
            reason: GiveUp::Memory,
        })
    }
}

/// Makes room, where memory is short, for the threads' expansion of a wide level: `beside`
/// bytes (their vectors, the level's estimate, the narrow loop's tables) beyond what the pass
/// holds. Otherwise the level would go to one thread, which needs half as much: 加藤徹 162a
/// within 7 GB expanded a hundred of its widest levels so, 3-10 times slower, 580 of its
/// 3,485 s. Where no room is to be had the level still goes to one thread.
fn room_for_threads(
    (seen, graph, level, counts): (&mut KeySet, &mut LevelGraph, &LevelPositions, &Vec<u32>),
    budget: &mut usize,
    more_memory: &mut dyn FnMut() -> usize,
    limits: &BfsLimits,
    (beside, lower_bound): (usize, u32),
) -> Result<(), BfsOutcome> {
    let fixed = level.bytes() + counts.capacity() * 4;
    let beside = beside + DeadCache::BYTES;
    room(
        (seen, graph, fixed),
        budget,
        more_memory,
        limits,
        (beside, lower_bound),
    )
    .map(|_| ())
}

/// `make_room` for the pass: whether what it holds and `beside` fit, or the pass's outcome
/// where a disk error or the interrupt ends it.
fn room(
    stores: (&mut KeySet, &mut LevelGraph, usize),
    budget: &mut usize,
    more_memory: &mut dyn FnMut() -> usize,
    limits: &BfsLimits,
    (beside, lower_bound): (usize, u32),
) -> Result<bool, BfsOutcome> {
    make_room(stores, budget, more_memory, limits.places(), beside).map_err(|no_room| {
        BfsOutcome::GaveUp {
            lower_bound,
            reason: no_room.into(),
        }
    })
}

/// When the narrow loop runs (see `narrow.rs`), and what it keeps between runs.
struct NarrowLoop<'k> {
    state: &'k mut Option<narrow::Narrow>,
    /// Levels to leave to the usual way after the loop gave one back.
    paused: u32,
}

/// The threads' vectors are kept from one level to the next (taken anew each level, their
/// first use took page faults: forest-06-10_97 at two threads 0.38 -> 0.43 s) unless the pass
/// would then hold more than all but this fraction of its budget.
const KEPT_VECTORS_DIVISOR: usize = 16;

/// Levels left to the usual way after the loop gave one back (it outgrew the loop's tables).
const NARROW_PAUSE: u32 = 8;

impl NarrowLoop<'_> {
    fn is_due(&mut self, limits: &BfsLimits, width: usize, graph: &LevelGraph) -> bool {
        if self.paused > 0 {
            self.paused -= 1;
            return false;
        }
        width >= limits.parallel_from_positions
            && width < limits.narrow_below.min(narrow::MAX_FIRST_WIDTH)
            && !graph.spilling
    }

    /// Runs the loop from the level `at` with `crew`; `None` if it cannot run (no helper, no
    /// memory for its tables).
    fn run(
        &mut self,
        crew: &mut dyn crew::Beside,
        (seen, dead, limits, cap): (&mut KeySet, &DeadCache, &BfsLimits, u32),
        at: narrow::At,
        book: &mut narrow::Book,
    ) -> Option<narrow::Exit> {
        let helpers = crew.helpers();
        if helpers == 0 {
            return None;
        }
        let threads = (helpers + 1).min(256);
        let used = seen.bytes() + book.graph.bytes() + at.level.bytes() + at.counts.capacity() * 4;
        if used + narrow::fixed_bytes(threads) > *book.budget {
            return None;
        }
        if self.state.as_ref().is_none_or(|s| s.threads() != threads) {
            *self.state = narrow::Narrow::new(threads);
        }
        let state = self.state.as_mut()?;
        let exit = narrow::run(
            state,
            crew,
            seen,
            dead,
            narrow::Setup {
                interrupt: limits.interrupt,
                cap,
                selfmate: limits.selfmate,
                rules: limits.rules,
                batch: limits.parallel_batch_positions,
                claims_percent: limits.narrow_claims_percent,
                wide: limits.narrow_below.saturating_mul(2),
                key_allowance: limits.narrow_key_allowance,
            },
            at,
            book,
        );
        Some(exit)
    }
}

/// Sends the figures of a finished level (`depth`, `width` positions and their `checks`) to
/// the level log, if there is one.
fn log_level(
    limits: &BfsLimits,
    (depth, width, checks): (u32, usize, Option<usize>),
    (seen, graph, checkpoints): (&KeySet, &LevelGraph, Option<&checkpoint::Checkpoints>),
    (bytes, nodes): (usize, u64),
    started: Instant,
) {
    if let Some(log) = &limits.level_log {
        let gaps = seen.census().map_or([0; GAP_BUCKETS], census::Census::take);
        let ghosts = seen.census().map_or(0, census::Census::take_ghosts);
        // The receiver may be gone (a caller that stopped listening): nothing to do then.
        let _ = log.send(LevelStats {
            plies: 2 * depth,
            positions: width,
            keys: seen.len(),
            key_bytes: seen.bytes(),
            graph_bytes: graph.bytes(),
            disk_bytes: graph.disk_bytes(),
            bytes,
            elapsed: started.elapsed(),
            nodes,
            checks,
            gaps,
            ghosts,
            checkpoints: checkpoints.map_or((Duration::ZERO, 0), |c| (c.spent, c.bytes)),
            exchanged: 0,
        });
    }
}

fn permille(used: usize, budget: usize) -> u32 {
    (used.saturating_mul(1000) / budget.max(1)).min(1000) as u32
}
