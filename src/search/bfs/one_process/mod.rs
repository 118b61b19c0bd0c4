//! The pass in one process: what it holds (`Pass`), the caches kept from one pass to the next,
//! and the hand-off from the calling thread to the pool's threads once they are due. How it
//! expands each level (serial, parallel or narrow) is `levels.rs`.

mod levels;

use super::bushy::Bushy;
use super::expand::children::DeadCache;
use super::expand::crew;
use super::keys::census;
use super::keys::forgetting::Forgetting;
use super::keys::KeySet;
use super::levels::checkpoint;
use super::levels::disk::DiskError;
use super::levels::graph::LevelGraph;
use super::levels::level::LevelPositions;
use super::limits::PassLimits;
use super::outcome::{BfsOutcome, GiveUp};
use super::reports::BfsProgress;
use crate::shogi::{Position, RuleSet};
use levels::search;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Where the lines start (the links name their moves by playing from it).
    root: Position,
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
            root: root.clone(),
            at: PassAt::default(),
            checkpoints: None,
        }
    }

    /// The pass `limits.checkpoint` says to start with: as its checkpoint left it, or afresh
    /// (writing checkpoints); nodes played before the checkpoint are added to `nodes`.
    fn start(root: &Position, limits: &PassLimits, nodes: &mut u64) -> Result<Pass, DiskError> {
        let census = limits
            .level_log
            .is_some()
            .then(|| Arc::new(census::Census::new()));
        let mut pass = Pass::new(root, limits.rules, census.clone(), limits.tuning.forgetting);
        let Some(plan) = &limits.checkpoint else {
            return Ok(pass);
        };
        let (checkpoints, resumed) =
            checkpoint::start(plan, limits.disk, census, limits.tuning.forgetting)?;
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
    limits: &PassLimits,
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
                Pass::new(root, limits.rules, None, limits.tuning.forgetting),
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
