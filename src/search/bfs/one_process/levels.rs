//! How the one-process pass expands its levels: with the calling thread alone (`serial`), with
//! the pool's threads a wide level at a time (`parallel`), or with every thread in one loop over
//! many narrow levels (`narrow`); and how it makes room for each within its budget.

use super::{Caches, Pass, PassAt};
use crate::search::bfs::expand::children::{DeadCache, Pipeline};
use crate::search::bfs::expand::serial::expand_level;
use crate::search::bfs::expand::{crew, narrow, parallel};
use crate::search::bfs::keys::census::{Census, GAP_BUCKETS};
use crate::search::bfs::keys::{KeySet, NotFrozen};
use crate::search::bfs::levels::checkpoint::Checkpoints;
use crate::search::bfs::levels::disk::DiskError;
use crate::search::bfs::levels::graph::LevelGraph;
use crate::search::bfs::levels::level::LevelEdges;
use crate::search::bfs::levels::level::{Level, LevelOutcome, LevelPositions};
use crate::search::bfs::limits::PassLimits;
use crate::search::bfs::outcome::{BfsOutcome, GiveUp};
use crate::search::bfs::pass::{self, Levels, Step};
use crate::search::bfs::reports::{
    permille, BfsProgress, LevelStats, Reports, AFTER_LEVEL, DURING_LEVEL,
};
use crate::search::bfs::room::{more_room, settle_memory, with_room, Room};
use crate::shogi::Position;
use std::time::{Duration, Instant};

/// Runs the level loop over `pass` (from its root, attacker to move, or from where its last
/// call left it). Without `crew`, returns `None` once threads would join in (see
/// `tuning::THREADS_FROM_NODES`), for the caller to go on with them. `nodes` counts moves
/// played; `progress` is called after levels, at most ten times a second, and at least once a
/// second during a long level. When the budget is used up, `more_memory()` is asked for more
/// bytes; when it has none, the links move to disk (if `limits.disk` allows); then the pass
/// gives up. `crew` (with a pool) shares out the narrow levels (see `expand/crew.rs`).
pub(super) fn search(
    pass: &mut Pass,
    limits: &PassLimits,
    nodes: &mut u64,
    progress: &mut dyn FnMut(BfsProgress),
    more_memory: &mut dyn FnMut() -> usize,
    crew: Option<&mut dyn crew::Team>,
    caches: &mut Caches,
) -> Option<BfsOutcome> {
    if pass.at.first.is_none() {
        pass.at.first = Some((*nodes, Instant::now()));
        pass.at.budget = limits.budget_bytes;
        if limits.disk.always {
            if let Err(e) = pass.graph.move_to_disk(limits.disk, 0) {
                return Some(BfsOutcome::GaveUp {
                    lower_bound: 1,
                    reason: GiveUp::Disk(e),
                });
            }
        }
    }
    let (first_node, started) = pass.at.first.expect("set above");
    let bushy = std::mem::take(&mut pass.at.bushy);
    let mut reports = Reports::new(limits.level_log, progress, started, bushy);
    let dead: &DeadCache = &caches.dead;
    let waits_for_threads = crew.is_none() && limits.pool.is_some();
    let workers = limits
        .pool
        .map(|pool| parallel::Workers::new(pool, dead, crew.map(|c| c as _)));
    let Pass {
        seen,
        level,
        counts,
        graph,
        root,
        at,
        checkpoints,
    } = pass;
    let mut levels = OneProcess {
        seen,
        level,
        counts,
        graph,
        root,
        checkpoints,
        depth: at.depth,
        budget: at.budget,
        first_node,
        waits_for_threads,
        dead,
        pipeline: Pipeline::new(),
        workers,
        narrow: NarrowLoop {
            state: None,
            paused: 0,
        },
        more_memory,
    };
    let outcome = pass::run(&mut levels, limits, nodes, &mut reports);
    *at = PassAt {
        depth: levels.depth,
        budget: levels.budget,
        bushy: reports.bushy,
        first: at.first,
    };
    outcome
}

/// The one-process pass as the level loop runs it.
struct OneProcess<'a> {
    seen: &'a mut KeySet,
    level: &'a mut LevelPositions,
    counts: &'a mut Vec<u32>,
    graph: &'a mut LevelGraph,
    root: &'a Position,
    checkpoints: &'a mut Option<Checkpoints>,
    /// The level about to be expanded.
    depth: u32,
    /// The memory the pass may use.
    budget: usize,
    /// The nodes when the pass began (the threads join in some nodes after).
    first_node: u64,
    /// No crew yet, though there is a pool: the loop pauses once the threads are due.
    waits_for_threads: bool,
    dead: &'a DeadCache,
    pipeline: Pipeline,
    workers: Option<parallel::Workers<'a>>,
    narrow: NarrowLoop,
    more_memory: &'a mut dyn FnMut() -> usize,
}

impl OneProcess<'_> {
    fn threads_joined(&self, limits: &PassLimits, nodes: u64) -> bool {
        nodes - self.first_node >= limits.tuning.threads_from_nodes
    }
}

impl Levels for OneProcess<'_> {
    fn depth(&self) -> u32 {
        self.depth
    }

    fn width(&self) -> usize {
        self.level.len()
    }

    fn keys(&self) -> &KeySet {
        self.seen
    }

    fn pause(&self, limits: &PassLimits, nodes: u64) -> bool {
        self.waits_for_threads && self.threads_joined(limits, nodes)
    }

    fn checkpoint(&mut self, limits: &PassLimits, nodes: u64) -> Result<(), GiveUp> {
        match self.checkpoints.as_mut().filter(|c| c.due()) {
            Some(checkpoints) => checkpoints
                .write(
                    (self.seen, self.level, self.counts, self.graph),
                    None,
                    (self.depth, nodes),
                    limits.disk,
                )
                .map_err(GiveUp::Disk),
            None => Ok(()),
        }
    }

    fn expand(&mut self, limits: &PassLimits, nodes: &mut u64, reports: &mut Reports) -> Step {
        let threads_joined = self.threads_joined(limits, *nodes);
        if threads_joined {
            if let Some(step) = self.expand_narrow(limits, nodes, reports) {
                return step;
            }
        }
        self.expand_one(limits, nodes, reports, threads_joined)
    }

    fn settle(&mut self, limits: &PassLimits, logged: bool) -> Result<usize, BfsOutcome> {
        let used = settle_memory(
            (self.seen, self.graph, self.level, self.counts),
            &mut self.budget,
            self.more_memory,
            limits,
            limits.mate_length(self.depth),
        )?;
        // (Not after the narrow loop's levels: it freezes none.)
        if limits.tuning.freeze_every_level && !logged {
            let frozen = self
                .seen
                .freeze_all(limits.pool, &|| limits.interrupt.raised());
            if let Err(why) = frozen {
                let reason = match why {
                    NotFrozen::Stopped => GiveUp::Aborted(limits.interrupt.why()),
                    NotFrozen::NoMemory => GiveUp::Memory,
                };
                return Err(BfsOutcome::GaveUp {
                    lower_bound: limits.mate_length(self.depth),
                    reason,
                });
            }
        }
        Ok(used)
    }

    fn figures(&self, reports: &Reports, used: usize, nodes: u64) -> Option<LevelStats> {
        reports.logging().then(|| {
            level_stats(
                (self.depth, self.level.len(), Some(self.level.checks.len())),
                (self.seen, self.graph, self.checkpoints.as_ref()),
                (used, nodes),
            )
        })
    }

    fn progress(&self, limits: &PassLimits, used: usize, nodes: u64) -> BfsProgress {
        BfsProgress {
            lower_bound: limits.mate_length(self.depth),
            nodes,
            permille: permille(used, self.budget),
            disk_bytes: Pass::disk_bytes(self.graph, self.checkpoints),
            resumed_from: None,
        }
    }
}

impl OneProcess<'_> {
    /// Narrow levels: every thread in one loop, as long as they stay narrow (see
    /// `expand/narrow/`). None where the loop does not run, or gives its first level back
    /// (then the usual way expands it, and the next few).
    fn expand_narrow(
        &mut self,
        limits: &PassLimits,
        nodes: &mut u64,
        reports: &mut Reports,
    ) -> Option<Step> {
        let OneProcess {
            seen,
            level,
            counts,
            graph,
            root,
            checkpoints,
            depth,
            budget,
            dead,
            workers,
            narrow,
            more_memory,
            ..
        } = self;
        if !narrow.is_due(limits, level.len(), graph) {
            return None;
        }
        let crew = workers.as_mut()?.crew()?;
        // The narrow loop hands its level back when a checkpoint falls due.
        let checkpoint_due_at = checkpoints.as_ref().map(Checkpoints::due_at);
        let checkpoints = checkpoints.as_ref();
        let mut after_level = |done: narrow::LevelDone| {
            // (The loop's levels are too narrow to be bushy; their widths are the growth the
            // next levels are judged by.)
            reports.bushy.note(done.depth, done.width);
            if reports.logging() {
                reports.level(level_stats(
                    (done.depth, done.width, None),
                    (done.seen, done.graph, checkpoints),
                    (done.used, done.nodes),
                ));
            }
            reports.progress_every(AFTER_LEVEL, || BfsProgress {
                lower_bound: limits.mate_length(done.depth),
                nodes: done.nodes,
                permille: permille(done.used, done.budget),
                disk_bytes: 0,
                resumed_from: None,
            });
        };
        let before = *depth;
        let exit = narrow.run(
            crew,
            (seen, dead, limits),
            narrow::At {
                depth,
                level,
                counts,
            },
            &mut narrow::Book {
                graph,
                budget,
                more_memory: *more_memory,
                disk: limits.disk,
                nodes,
                after_level: &mut after_level,
                too_deep: &|depth| {
                    limits.mate_length(depth) > limits.max_plies
                        || checkpoint_due_at.is_some_and(|at| Instant::now() >= at)
                },
            },
        )?;
        let lower_bound = limits.mate_length(*depth);
        match exit {
            narrow::Exit::Done(outcome) => {
                match settled(outcome, (graph, root), lower_bound, limits) {
                    Settled::Ends(outcome) => Some(Step::Ends(outcome)),
                    // (The loop gives a next level back as `Handback`, never as `Done`.)
                    Settled::Next(..) => unreachable!("the narrow loop ends on an outcome"),
                }
            }
            narrow::Exit::Disk(e) => Some(Step::Ends(BfsOutcome::GaveUp {
                lower_bound,
                reason: GiveUp::Disk(e),
            })),
            // Levels made by the loop: their memory is settled as any level's, and the next is
            // expanded the usual way, or by the loop again.
            narrow::Exit::Handback if *depth > before => Some(Step::Next { logged: true }),
            // The loop gave its first level back (it outgrew the loop's tables, or needs memory
            // the loop cannot make).
            narrow::Exit::Handback => {
                narrow.paused = NARROW_PAUSE;
                None
            }
        }
    }

    /// The level expanded by the pool's threads where it is wide and they fit in memory, else
    /// by this thread alone.
    fn expand_one(
        &mut self,
        limits: &PassLimits,
        nodes: &mut u64,
        reports: &mut Reports,
        threads_joined: bool,
    ) -> Step {
        let lower_bound = limits.mate_length(self.depth);
        let give_up = |reason| {
            Step::Ends(BfsOutcome::GaveUp {
                lower_bound,
                reason,
            })
        };
        // The narrow loop's tables, kept for its next run, count too.
        let narrow_bytes =
            (self.narrow.state.as_ref()).map_or(0, |n| narrow::fixed_bytes(n.threads()));
        let wide = threads_joined && self.level.len() >= limits.tuning.parallel_from_positions;
        if let Some(w) = self.workers.as_ref().filter(|_| wide) {
            let beside = w.bytes() + narrow_bytes + w.level_estimate(self.level.len());
            if let Err(outcome) = room_for_threads(
                (self.seen, self.graph, self.level, self.counts),
                &mut self.budget,
                self.more_memory,
                limits,
                (beside, lower_bound),
            ) {
                return Step::Ends(outcome);
            }
        }
        let (outcome, disk_error) =
            self.run_level(limits, nodes, reports, (wide, narrow_bytes, lower_bound));
        let outcome = match outcome {
            // A freeze the interrupt cut short reads as no memory: the interrupt comes first.
            LevelOutcome::Memory => {
                if let Some(abort) = limits.interrupt.check(Instant::now()) {
                    return give_up(GiveUp::Aborted(abort));
                }
                return give_up(disk_error.map_or(GiveUp::Memory, GiveUp::Disk));
            }
            outcome => outcome,
        };
        let settled = settled(outcome, (self.graph, self.root), lower_bound, limits);
        let (next, next_counts, edges) = match settled {
            Settled::Ends(outcome) => return Step::Ends(outcome),
            Settled::Next(next, counts, edges) => (next, counts, edges),
        };
        if let Err(e) = self.take_next(next, next_counts, edges) {
            return give_up(GiveUp::Disk(e));
        }
        self.depth += 1;
        Step::Next { logged: false }
    }

    /// Expands the level with the pool's threads or this thread alone: its outcome, and the
    /// disk error that stopped the links going to disk, if one did.
    fn run_level(
        &mut self,
        limits: &PassLimits,
        nodes: &mut u64,
        reports: &mut Reports,
        (wide, narrow_bytes, lower_bound): (bool, usize, u32),
    ) -> (LevelOutcome, Option<DiskError>) {
        let held =
            self.graph.bytes() + self.level.bytes() + self.counts.capacity() * 4 + DeadCache::BYTES;
        let mut disk_error = None;
        let this_level = Level {
            positions: self.level,
            slice: limits.tuning.parallel_slice_positions,
            batch: limits.tuning.parallel_batch_positions,
            counts: self.counts,
            cap: limits.cap(),
            selfmate: limits.selfmate,
            rules: limits.rules,
            interrupt: limits.interrupt,
            held,
        };
        // The threads' expansion takes about twice the memory a new position that one
        // thread's does (each owner's copy of it, then the merge's): where the level would
        // not fit that way even after `room_for_threads`, one thread expands it (with the
        // same result), going to disk or freezing keys as it needs.
        let keys_held = self.seen.bytes();
        let use_threads = self.workers.as_ref().is_some_and(|w| {
            let need = held + keys_held + w.bytes() + narrow_bytes;
            wide && need + w.level_estimate(this_level.positions.len()) <= self.budget
        });
        if self.workers.is_some() && wide && !use_threads {
            // Memory is short: the narrow loop's tables go (made again if it runs again).
            self.narrow.state = None;
        }
        let budget_now = self.budget;
        // At least once a second during a wide level.
        let last_permille = permille(keys_held + held, self.budget);
        let disk_bytes = Pass::disk_bytes(self.graph, self.checkpoints);
        let mut tick = |nodes: u64| {
            reports.progress_every(DURING_LEVEL, || BfsProgress {
                lower_bound,
                nodes,
                permille: last_permille,
                disk_bytes,
                resumed_from: None,
            })
        };
        // `held` above counts the links in memory: those moved to disk during the level
        // are credited to the budget instead, until the level ends.
        let mut credit = 0;
        let (budget, graph, more_memory) =
            (&mut self.budget, &mut *self.graph, &mut *self.more_memory);
        let mut more = || match more_room(more_memory, graph, limits.disk) {
            Ok(Room::Memory(extra)) => {
                *budget += extra;
                extra
            }
            Ok(Room::Disk(freed)) => {
                credit += freed;
                *budget += freed;
                freed
            }
            Err(e) => {
                disk_error = Some(e);
                0
            }
        };
        let outcome = match self.workers.as_mut().filter(|_| use_threads) {
            Some(workers) => {
                // The threads' vectors, kept from the last level, are held too.
                let allowance = budget_now.saturating_sub(held + keys_held + workers.bytes());
                parallel::expand_level(
                    workers,
                    self.seen,
                    &this_level,
                    nodes,
                    allowance,
                    &mut more,
                    &mut tick,
                )
            }
            None => expand_level(
                self.seen,
                (self.dead, &mut self.pipeline),
                &this_level,
                nodes,
                budget_now,
                &mut more,
                &mut tick,
            ),
        };
        self.budget -= credit;
        (outcome, disk_error)
    }

    /// Makes the next level the one to expand, its edges kept.
    fn take_next(
        &mut self,
        next: LevelPositions,
        next_counts: Vec<u32>,
        edges: LevelEdges,
    ) -> Result<(), DiskError> {
        self.graph.push(edges)?;
        *self.level = next;
        self.level.shrink_to_fit();
        *self.counts = next_counts;
        let held_now = self.seen.bytes()
            + self.graph.bytes()
            + self.level.bytes()
            + self.counts.capacity() * 4;
        let budget = self.budget;
        if let Some(workers) = self.workers.as_mut().filter(|w| {
            held_now + w.bytes() > budget / KEPT_VECTORS_DIVISOR * (KEPT_VECTORS_DIVISOR - 1)
        }) {
            // The threads' vectors hold about what the level just made: kept for the next
            // level where memory is short, they would take half of what it has.
            workers.release();
        }
        if self.graph.spilling {
            // Memory is short: the vectors of the level just finished would otherwise stay
            // with the allocator, and the next, wider level's be taken anew. The threads'
            // vectors go too.
            if let Some(workers) = &mut self.workers {
                workers.release();
            }
            self.narrow.state = None;
            crate::search::memory::release_freed_memory();
        }
        Ok(())
    }
}

/// The figures of a finished level (`depth`, `width` positions and their `checks`) for the
/// level log.
fn level_stats(
    (depth, width, checks): (u32, usize, Option<usize>),
    (seen, graph, checkpoints): (&KeySet, &LevelGraph, Option<&Checkpoints>),
    (bytes, nodes): (usize, u64),
) -> LevelStats {
    LevelStats {
        plies: 2 * depth,
        positions: width,
        keys: seen.len(),
        key_bytes: seen.bytes(),
        graph_bytes: graph.bytes(),
        disk_bytes: graph.disk_bytes(),
        bytes,
        elapsed: Duration::ZERO,
        nodes,
        checks,
        gaps: seen.census().map_or([0; GAP_BUCKETS], Census::take),
        ghosts: seen.census().map_or(0, Census::take_ghosts),
        checkpoints: checkpoints.map_or((Duration::ZERO, 0), |c| (c.spent, c.bytes)),
        exchanged: 0,
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
    limits: &PassLimits,
    (beside, lower_bound): (usize, u32),
) -> Result<(), BfsOutcome> {
    let fixed = level.bytes() + counts.capacity() * 4;
    let beside = beside + DeadCache::BYTES;
    with_room(
        (seen, graph, fixed),
        budget,
        more_memory,
        limits,
        (beside, lower_bound),
    )
    .map(|_| ())
}

/// When the narrow loop runs (see `expand/narrow/`), and what it keeps between runs.
struct NarrowLoop {
    state: Option<narrow::Narrow>,
    /// Levels to leave to the usual way after the loop gave one back.
    paused: u32,
}

/// The threads' vectors are kept from one level to the next (taken anew each level, their
/// first use took page faults: forest-06-10_97 at two threads 0.38 -> 0.43 s) unless the pass
/// would then hold more than all but this fraction of its budget.
const KEPT_VECTORS_DIVISOR: usize = 16;

/// Levels left to the usual way after the loop gave one back (it outgrew the loop's tables).
const NARROW_PAUSE: u32 = 8;

impl NarrowLoop {
    fn is_due(&mut self, limits: &PassLimits, width: usize, graph: &LevelGraph) -> bool {
        if self.paused > 0 {
            self.paused -= 1;
            return false;
        }
        width >= limits.tuning.parallel_from_positions
            && width < limits.tuning.narrow_below.min(narrow::MAX_FIRST_WIDTH)
            && !graph.spilling
    }

    /// Runs the loop from the level `at` with `crew`; `None` if it cannot run (no helper, no
    /// memory for its tables).
    fn run(
        &mut self,
        crew: &mut dyn crew::Beside,
        (seen, dead, limits): (&mut KeySet, &DeadCache, &PassLimits),
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
            self.state = narrow::Narrow::new(threads);
        }
        let state = self.state.as_mut()?;
        let tuning = limits.tuning;
        let exit = narrow::run(
            state,
            crew,
            seen,
            dead,
            narrow::Setup {
                interrupt: limits.interrupt,
                cap: limits.cap(),
                selfmate: limits.selfmate,
                rules: limits.rules,
                batch: tuning.parallel_batch_positions,
                claims_percent: tuning.narrow_claims_percent,
                wide: tuning.narrow_below.saturating_mul(2),
                key_allowance: tuning.narrow_key_allowance,
            },
            at,
            book,
        );
        Some(exit)
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
    (graph, root): (&mut LevelGraph, &Position),
    lower_bound: u32,
    limits: &PassLimits,
) -> Settled {
    let give_up = |reason| BfsOutcome::GaveUp {
        lower_bound,
        reason,
    };
    Settled::Ends(match outcome {
        LevelOutcome::Mates { mates, count } => {
            match graph.lines(&mates, limits.cap() as usize, (root, limits.rules)) {
                Ok(lines) => BfsOutcome::Mate { lines, count },
                Err(e) => give_up(GiveUp::Disk(e)),
            }
        }
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
