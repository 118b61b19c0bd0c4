//! The breadth-first pass shared among ranks (threads of one process, or MPI processes on many
//! machines), each owning the positions whose keys fall in its share.
//!
//! Every level, each rank expands its own positions, keeps back the children it owns and has
//! seen before, and sends every other child to its owner; the owners take what they receive in
//! the order the one-process pass would have met it, so that the levels, counts and lines come
//! out exactly as that pass's:
//!
//! - A level's positions have *global indices*: their places in the one-process pass's level.
//!   A child's order is its parent's global index and its place among the parent's children
//!   (`wire::order_of`); an owner sorts what it receives by that order, keeps the first of
//!   each new key as the position and the rest as further ways into it (counting), and the
//!   ranks then learn every new position's global index from the orders of all ranks' new
//!   positions (`numbering.rs`).
//! - A link's parent is a rank and a local index together (`wire::node_ref`); a line is read
//!   back from the mate, every rank walking the same way in step, the owner of each position
//!   telling all the edges into it.
//! - Every level ends with a word of status from every rank (mate, memory, stop), so that
//!   all ranks end together, with the same outcome.
//! - A rank's threads (`--threads`) expand a wide level in shares, runs of its positions, each
//!   child carrying its order (`shares.rs`); the owner then takes what it receives on one
//!   thread.
//! - After each level a rank gets back within its budget as one process does (links to disk,
//!   then its keys frozen), and says what it could not fix at the next exchange.
//! - Checkpoints: each rank keeps its own (`checkpoint.rs`); a rank whose clock says one is due
//!   says so in its status byte, and at the next level boundary every rank writes one, then
//!   lets its previous one go once all have written theirs. A run goes on from the newest
//!   generation every rank has.
//!
//! Forgetting is the one-process pass's for now, and a level's children are exchanged at once.

#[cfg(feature = "mpi")]
pub mod mpi;
mod numbering;
mod shares;
pub mod transport;
mod wire;

use crate::search::bfs::bushy::Bushy;
use crate::search::bfs::expand::children::DeadCache;
use crate::search::bfs::expand::children::Pipeline;
use crate::search::bfs::keys::census::GAP_BUCKETS;
use crate::search::bfs::keys::{KeyMap, KeySet, NotFrozen};
use crate::search::bfs::levels::checkpoint::{self, Checkpoints, Plan, Resumed};
use crate::search::bfs::levels::disk::DiskError;
use crate::search::bfs::levels::graph::{played, LevelGraph, DISK_STEP_BYTES};
use crate::search::bfs::levels::level::{LevelEdges, LevelPositions};
use crate::search::bfs::limits::PassLimits;
use crate::search::bfs::outcome::{BfsOutcome, GiveUp};
use crate::search::bfs::pass::{self, Levels, Step};
use crate::search::bfs::reports::{BfsProgress, LevelStats, Reports};
use crate::search::bfs::room::settle_memory;
use crate::search::interrupt::Abort;
use crate::shogi::{Move, Position, RuleSet};
use numbering::{number_by_gathering, number_by_ranges};
use parking_lot::Mutex;
use shares::expand_part;
use std::time::{Duration, Instant};
use transport::Transport;
use wire::{Candidate, RankMate};

/// The rank that owns `key` among `ranks`: from bits the key set keeps none of (it keeps the
/// low 74 and the top 6), so that a rank's shards fill as evenly as one process's.
fn rank_of(key: u128, ranks: usize) -> usize {
    ((((key >> 80) as u32) as u64 * ranks as u64) >> 32) as usize
}

/// The bit of a rank's status byte that says a checkpoint is due by its clock.
const CHECKPOINT_DUE: u8 = 0x80;

/// A level's status, as every rank says it at the level's end: the largest wins.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Status {
    Going = 0,
    Mate = 1,
    /// The rank's key set could not grow within its budget.
    Memory = 2,
    /// A message from another rank could not be read (a bug: the pass ends).
    Damaged = 3,
    /// A rank could not write its links to disk (the pass ends with the error).
    Disk = 4,
    Timeout = 5,
    Stopped = 6,
}

impl Status {
    fn of(code: u64) -> Status {
        match code {
            0 => Status::Going,
            1 => Status::Mate,
            2 => Status::Memory,
            3 => Status::Damaged,
            4 => Status::Disk,
            5 => Status::Timeout,
            _ => Status::Stopped,
        }
    }

    fn of_abort(abort: Abort) -> Status {
        match abort {
            Abort::Timeout => Status::Timeout,
            _ => Status::Stopped,
        }
    }

    /// Why the pass gives up on a level that ended so (memory, as for a damaged message: one
    /// process would deepen then, and so does every rank; a disk error is told by
    /// `disk_error_among`).
    fn reason(self) -> GiveUp {
        match self {
            Status::Timeout => GiveUp::Aborted(Abort::Timeout),
            Status::Stopped => GiveUp::Aborted(Abort::Stopped),
            _ => GiveUp::Memory,
        }
    }
}

/// This rank's part of a level.
struct Part {
    positions: LevelPositions,
    /// Each position's global index.
    globals: Vec<u64>,
    /// Ways into each position (counting).
    counts: Vec<u32>,
}

/// The pass among the ranks of `transport`, each calling it with the same root and limits;
/// every rank returns the same outcome, and `nodes` counts the moves of all ranks.
pub(crate) fn search(
    root: &Position,
    limits: &PassLimits,
    transport: &dyn Transport,
    nodes: &mut u64,
) -> BfsOutcome {
    let before = *nodes;
    let outcome = match RankLevels::start(root, limits, transport, nodes) {
        Ok(mut levels) => {
            // (Ranks report no progress: their answer comes at the end.)
            let mut no_progress = |_| {};
            let mut reports = Reports::new(
                limits.level_log,
                &mut no_progress,
                Instant::now(),
                Bushy::default(),
            );
            pass::run(&mut levels, limits, nodes, &mut reports)
                .expect("a distributed pass never pauses")
        }
        Err(outcome) => outcome,
    };
    // Every rank's moves, as one process counts them.
    *nodes = before + transport.sum(*nodes - before);
    outcome
}

/// One rank's share of the pass, as the level loop runs it.
struct RankLevels<'t> {
    transport: &'t dyn Transport,
    me: usize,
    ranks: usize,
    seen: KeySet,
    part: Part,
    graph: LevelGraph,
    /// Where the lines start (the links name their moves by playing from it).
    root: Position,
    /// The level about to be expanded.
    depth: u32,
    checkpoints: Option<Checkpoints>,
    dead: DeadCache,
    /// One a thread, kept from level to level.
    pipelines: Mutex<Vec<Pipeline>>,
    /// The figures are summed over the ranks if any rank logs them (rank 0 prints them).
    logging: bool,
    /// Bytes this rank sent the others (the level log's figure).
    sent: u64,
    /// The width of the level being expanded (all ranks').
    width: u64,
    /// Every rank writes a checkpoint at the next level boundary.
    checkpoint_due: bool,
    /// What this rank alone found wrong, to tell the others at the next exchange.
    pending: Status,
    disk_error: Option<DiskError>,
}

impl<'t> RankLevels<'t> {
    /// This rank's part of the root's level, or of the level its checkpoint left.
    fn start(
        root: &Position,
        limits: &PassLimits,
        transport: &'t dyn Transport,
        nodes: &mut u64,
    ) -> Result<RankLevels<'t>, BfsOutcome> {
        let (me, ranks) = (transport.rank(), transport.ranks());
        let mut seen = KeySet::with_census(None, limits.tuning.forgetting);
        let mut part = Part {
            positions: LevelPositions::default(),
            globals: Vec::new(),
            counts: Vec::new(),
        };
        if rank_of(root.key(), ranks) == me {
            let _ = seen.insert(root.key(), usize::MAX, false);
            part.positions = LevelPositions::root(root, limits.rules);
            part.globals.push(0);
            part.counts.push(1);
        }
        let mut graph = LevelGraph::default();
        let mut depth = 0u32;
        let mut checkpoints = None;
        if let Some(plan) = &limits.checkpoint {
            match start_checkpoints(plan, limits, transport) {
                Ok((started, Some(resumed))) => {
                    seen = resumed.seen;
                    part = Part {
                        positions: resumed.level,
                        globals: resumed.globals.unwrap_or_default(),
                        counts: resumed.counts,
                    };
                    graph = resumed.graph;
                    depth = resumed.depth;
                    *nodes += resumed.nodes;
                    checkpoints = Some(started);
                }
                Ok((started, None)) => {
                    graph.named = Some(plan.links_path());
                    checkpoints = Some(started);
                }
                Err(e) => {
                    return Err(BfsOutcome::GaveUp {
                        lower_bound: limits.mate_length(0),
                        reason: GiveUp::Disk(e),
                    })
                }
            }
        }
        let resumed = checkpoints
            .as_ref()
            .is_some_and(|c: &Checkpoints| c.resumed);
        let width = match resumed {
            true => transport.sum(part.positions.len() as u64),
            false => 1,
        };
        // At the first boundary, only if checkpoints are written at every one (no rank has said
        // yet what its clock says, and all must agree).
        let checkpoint_due = (checkpoints.as_ref()).is_some_and(|c| c.plan.every.is_zero());
        let mut levels = RankLevels {
            transport,
            me,
            ranks,
            seen,
            part,
            graph,
            root: root.clone(),
            depth,
            checkpoints,
            dead: DeadCache::new(),
            pipelines: Mutex::new(Vec::new()),
            logging: transport.max(u64::from(limits.level_log.is_some())) == 1,
            sent: 0,
            width,
            checkpoint_due,
            pending: Status::Going,
            disk_error: None,
        };
        if limits.disk.always {
            if let Err(e) = levels.graph.move_to_disk(limits.disk, 0) {
                (levels.pending, levels.disk_error) = (Status::Disk, Some(e));
            }
        }
        Ok(levels)
    }

    /// The disk error every rank gives up with.
    fn disk_error(&mut self) -> GiveUp {
        GiveUp::Disk(disk_error_among(self.disk_error.take(), self.transport))
    }

    /// Expands this rank's part and exchanges the children: the next level's part, numbered,
    /// or the status that ends the pass.
    fn expand_and_exchange(
        &mut self,
        limits: &PassLimits,
        nodes: &mut u64,
    ) -> Result<(NextPart, Vec<u64>), Step> {
        let transport = self.transport;
        let cap = limits.cap();
        let expanded = expand_part(
            &self.part,
            (&self.seen, &self.dead, &self.pipelines),
            limits,
            (self.me, self.ranks),
            nodes,
        );
        // Two collectives a level (narrow levels are many: 寿限無 has 9,723), each rank's
        // status riding in front of what it sends: the children, then the new positions' orders.
        let mut outgoing = expanded.outgoing;
        let due = match self.checkpoints.as_ref().is_some_and(Checkpoints::due) {
            true => CHECKPOINT_DUE,
            false => 0,
        };
        for buffer in &mut outgoing {
            buffer[0] = expanded.status.max(self.pending) as u8 | due;
        }
        self.sent += sent_to_others(&outgoing, self.me);
        let incoming = transport.all_to_all(outgoing);
        self.checkpoint_due =
            (incoming.iter()).any(|b| b.first().is_some_and(|s| s & CHECKPOINT_DUE != 0));
        let lower_bound = limits.mate_length(self.depth);
        let give_up = |reason| {
            Step::Ends(BfsOutcome::GaveUp {
                lower_bound,
                reason,
            })
        };
        match status_of(&incoming) {
            Status::Going => {}
            Status::Mate => {
                // Every rank's links readable, or all give up.
                if transport.max(u64::from(self.graph.finish_writing().is_err())) != 0 {
                    return Err(give_up(GiveUp::Memory));
                }
                let outcome = mate_outcome(
                    expanded.mates,
                    (&self.graph, (&self.root, limits.rules)),
                    transport,
                    self.depth,
                    cap,
                );
                return Err(Step::Ends(outcome.unwrap_or(BfsOutcome::GaveUp {
                    lower_bound,
                    reason: GiveUp::Memory,
                })));
            }
            Status::Disk => return Err(give_up(self.disk_error())),
            status => return Err(give_up(status.reason())),
        }
        let held = self.part.positions.bytes() + self.part.globals.capacity() * 8;
        let kept = keep_new(
            incoming,
            (&mut self.seen, &mut self.graph, self.me),
            (cap > 1, cap),
            (held, &mut self.disk_error),
            limits,
        );
        let kept_status = kept.as_ref().err().copied().unwrap_or(Status::Going);
        let no_orders = Vec::new();
        let orders = kept.as_ref().map_or(&no_orders, |next| &next.orders);
        let numbered =
            if self.width.saturating_mul(self.ranks as u64 - 1) >= limits.tuning.ranges_from {
                number_by_ranges(orders, kept_status, self.width, transport, &mut self.sent)
            } else {
                number_by_gathering(orders, kept_status, transport, &mut self.sent)
            };
        match (numbered, kept) {
            (Ok((globals, level_width)), Ok(next)) => {
                self.width = level_width;
                Ok((next, globals))
            }
            (Err(Status::Disk), _) => Err(give_up(self.disk_error())),
            (Err(status), _) | (Ok(_), Err(status)) => Err(give_up(status.reason())),
        }
    }
}

impl Levels for RankLevels<'_> {
    fn depth(&self) -> u32 {
        self.depth
    }

    fn width(&self) -> usize {
        self.width as usize
    }

    fn keys(&self) -> &KeySet {
        &self.seen
    }

    fn checkpoint(&mut self, limits: &PassLimits, nodes: u64) -> Result<(), GiveUp> {
        let Some(checkpoints) = self.checkpoints.as_mut().filter(|_| self.checkpoint_due) else {
            return Ok(());
        };
        let written = checkpoints.write(
            (
                &self.seen,
                &self.part.positions,
                &self.part.counts,
                &mut self.graph,
            ),
            Some(&self.part.globals),
            (self.depth, nodes),
            limits.disk,
        );
        if self.transport.max(u64::from(written.is_err())) != 0 {
            return Err(GiveUp::Disk(disk_error_among(
                written.err(),
                self.transport,
            )));
        }
        checkpoints.drop_previous();
        Ok(())
    }

    fn expand(&mut self, limits: &PassLimits, nodes: &mut u64, _reports: &mut Reports) -> Step {
        let (mut next, globals) = match self.expand_and_exchange(limits, nodes) {
            Ok(next) => next,
            Err(step) => return step,
        };
        if self.width == 0 {
            return Step::Ends(BfsOutcome::NoMate);
        }
        if globals.len() != next.positions.len() {
            // This rank alone knows: it expands nothing and says so at the next exchange.
            self.pending = Status::Damaged;
            next.positions = LevelPositions::default();
        }
        if let Err(e) = self.graph.push(next.edges) {
            (self.pending, self.disk_error) = (Status::Disk, Some(e));
        }
        self.part = Part {
            positions: next.positions,
            globals,
            counts: next.counts,
        };
        self.depth += 1;
        Step::Next { logged: false }
    }

    /// Within budget again (links to disk, then the keys frozen) or, failing that, every rank
    /// told at the next exchange.
    fn settle(&mut self, limits: &PassLimits, _logged: bool) -> Result<usize, BfsOutcome> {
        if self.pending != Status::Going {
            return Ok(0);
        }
        let within = settle_memory(
            (
                &mut self.seen,
                &mut self.graph,
                &self.part.positions,
                &self.part.counts,
            ),
            &mut limits.budget_bytes.clone(),
            &mut || 0,
            limits,
            limits.mate_length(self.depth),
        );
        match within {
            Ok(used) => return Ok(used),
            Err(BfsOutcome::GaveUp {
                reason: GiveUp::Disk(e),
                ..
            }) => (self.pending, self.disk_error) = (Status::Disk, Some(e)),
            Err(BfsOutcome::GaveUp {
                reason: GiveUp::Aborted(abort),
                ..
            }) => self.pending = Status::of_abort(abort),
            Err(_) => self.pending = Status::Memory,
        }
        Ok(0)
    }

    /// The figures of the level just made summed over the ranks (every rank gathers them if
    /// any logs; rank 0 sends them).
    fn figures(&self, _reports: &Reports, _used: usize, nodes: u64) -> Option<LevelStats> {
        if !self.logging {
            return None;
        }
        let (part, seen, graph) = (&self.part, &self.seen, &self.graph);
        let checks = part.positions.checks.len();
        let bytes = seen.bytes() + graph.bytes() + part.positions.bytes();
        let (spent, checkpoint_bytes) =
            (self.checkpoints.as_ref()).map_or((Duration::ZERO, 0), |c| (c.spent, c.bytes));
        let mine = [
            part.positions.len(),
            seen.len(),
            seen.bytes(),
            graph.bytes(),
            bytes,
            nodes as usize,
            checks,
            self.sent as usize,
            graph.disk_bytes() as usize,
            checkpoint_bytes as usize,
            spent.as_micros() as usize,
        ];
        let mut bytes_out = Vec::new();
        for figure in mine {
            bytes_out.extend_from_slice(&(figure as u64).to_le_bytes());
        }
        // Summed, but for the time spent writing checkpoints: the longest rank's.
        let mut sums = [0usize; 11];
        for theirs in self.transport.all_gather(bytes_out) {
            for (at, word) in theirs.chunks_exact(8).enumerate().take(sums.len()) {
                let figure = u64::from_le_bytes(word.try_into().expect("8 bytes")) as usize;
                sums[at] = match at {
                    10 => sums[at].max(figure),
                    _ => sums[at] + figure,
                };
            }
        }
        if self.me != 0 {
            return None;
        }
        let [positions, keys, key_bytes, graph_bytes, bytes, nodes, checks, exchanged, disk_bytes, checkpoint_bytes, spent_us] =
            sums;
        Some(LevelStats {
            plies: 2 * self.depth,
            positions,
            keys,
            key_bytes,
            graph_bytes,
            disk_bytes: disk_bytes as u64,
            bytes,
            elapsed: Duration::ZERO,
            nodes: nodes as u64,
            checks: Some(checks),
            gaps: [0; GAP_BUCKETS],
            ghosts: 0,
            checkpoints: (
                Duration::from_micros(spent_us as u64),
                checkpoint_bytes as u64,
            ),
            exchanged: exchanged as u64,
        })
    }

    fn progress(&self, limits: &PassLimits, _used: usize, nodes: u64) -> BfsProgress {
        BfsProgress {
            lower_bound: limits.mate_length(self.depth),
            nodes,
            permille: 0,
            disk_bytes: self.graph.disk_bytes(),
            resumed_from: None,
        }
    }
}

/// This rank's checkpoints of `plan`, and the pass as they left it if it goes on from them: from
/// the newest generation every rank has. Every rank gets the same refusal or error.
fn start_checkpoints(
    plan: &Plan,
    limits: &PassLimits,
    transport: &dyn Transport,
) -> Result<(Checkpoints, Option<Resumed>), DiskError> {
    let mine: Vec<u8> = (checkpoint::generations(plan).iter())
        .flat_map(|g| g.to_le_bytes())
        .collect();
    let all: Vec<Vec<u64>> = (transport.all_gather(mine).iter())
        .map(|bytes| {
            (bytes.chunks_exact(8))
                .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
                .collect()
        })
        .collect();
    let there = all.iter().any(|generations| !generations.is_empty());
    let common = (all[0].iter().copied())
        .filter(|g| all.iter().all(|generations| generations.contains(g)))
        .max();
    let start = match (plan.start, there, common) {
        (checkpoint::CheckpointStart::Fresh, true, _) => return Err(plan.refused_fresh()),
        (checkpoint::CheckpointStart::Resume, false, _) => return Err(plan.refused_missing()),
        (_, true, None) => {
            return Err(plan.refused(
                "the ranks' checkpoints have no generation in common (the run ended while \
                 its first was being written): remove the directory to start afresh",
            ))
        }
        (_, _, common) => {
            checkpoint::start_rank(plan, common, limits.disk, limits.tuning.forgetting)
        }
    };
    if transport.max(u64::from(start.is_err())) != 0 {
        return Err(disk_error_among(start.err(), transport));
    }
    start
}

/// The disk error that ended the pass, the same on every rank: this rank's own, or the first
/// rank's that had one (every rank calls this once its exchange said `Status::Disk`).
fn disk_error_among(mine: Option<DiskError>, transport: &dyn Transport) -> DiskError {
    let said = mine.as_ref().map_or(String::new(), DiskError::to_string);
    let gathered = transport.all_gather(said.into_bytes());
    mine.unwrap_or_else(|| {
        let (rank, message) = (gathered.iter().enumerate())
            .find(|(_, message)| !message.is_empty())
            .map_or((0, "a rank's disk failed".into()), |(rank, message)| {
                (rank, String::from_utf8_lossy(message).into_owned())
            });
        DiskError::OnRank { rank, message }
    })
}

/// The bytes of `outgoing` (one buffer a rank) that leave rank `me`.
fn sent_to_others(outgoing: &[Vec<u8>], me: usize) -> u64 {
    (outgoing.iter().enumerate())
        .filter(|&(rank, _)| rank != me)
        .map(|(_, buffer)| buffer.len() as u64)
        .sum()
}

/// The largest status of the ranks, each in front of what it sent (damaged if one is missing).
fn status_of(received: &[Vec<u8>]) -> Status {
    (received.iter())
        .map(|bytes| {
            bytes.first().map_or(Status::Damaged, |&s| {
                Status::of((s & !CHECKPOINT_DUE).into())
            })
        })
        .max()
        .unwrap_or(Status::Damaged)
}

/// The next level's part of this rank, in order.
struct NextPart {
    positions: LevelPositions,
    counts: Vec<u32>,
    edges: LevelEdges,
    /// Each new position's order.
    orders: Vec<u64>,
}

/// Keeps the new positions among the children received, in their order.
/// Out of room for a key, links go to disk first, then the keys are frozen (once), as in one
/// process; `held` is what the rank holds besides the keys and the links.
fn keep_new(
    incoming: Vec<Vec<u8>>,
    (seen, graph, me): (&mut KeySet, &mut LevelGraph, usize),
    (counting, cap): (bool, u32),
    (held, disk_error): (usize, &mut Option<DiskError>),
    limits: &PassLimits,
) -> Result<NextPart, Status> {
    let ranks = incoming.len();
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut checks: Vec<Move> = Vec::new();
    for (from, bytes) in incoming.iter().enumerate() {
        let first = candidates.len();
        // (After the sender's status.)
        let bytes = bytes.get(1..).ok_or(Status::Damaged)?;
        wire::read_candidates(bytes, &mut candidates, &mut checks).ok_or(Status::Damaged)?;
        // The sender's local parent becomes a reference any rank can follow.
        for candidate in &mut candidates[first..] {
            candidate.link.parent =
                wire::node_ref(from, candidate.link.parent, ranks).ok_or(Status::Memory)?;
        }
    }
    drop(incoming);
    candidates.sort_unstable_by_key(|c| c.order);
    let mut next = NextPart {
        positions: LevelPositions::default(),
        counts: Vec::new(),
        edges: LevelEdges::default(),
        orders: Vec::new(),
    };
    let mut index: KeyMap<u32> = KeyMap::default();
    let mut froze = false;
    // (Until a move to disk frees nothing: none left, or the disk may not be used.)
    let mut links_in_memory = true;
    for candidate in &candidates {
        let inserted = loop {
            let held = held
                + graph.bytes()
                + next.positions.bytes()
                + next.edges.bytes()
                + next.counts.capacity() * 4;
            match seen.insert(
                candidate.key,
                limits.budget_bytes.saturating_sub(held),
                false,
            ) {
                Ok(inserted) => break inserted,
                Err(()) if links_in_memory => {
                    match graph.move_to_disk(limits.disk, DISK_STEP_BYTES) {
                        Ok(freed) => links_in_memory = freed > 0,
                        Err(e) => {
                            *disk_error = Some(e);
                            return Err(Status::Disk);
                        }
                    }
                }
                Err(()) if !froze => {
                    froze = true;
                    let stop = || limits.interrupt.check(Instant::now()).is_some();
                    match seen.freeze(None, &stop) {
                        Ok(_) => {}
                        Err(NotFrozen::Stopped) => {
                            return Err(Status::of_abort(limits.interrupt.why()))
                        }
                        Err(NotFrozen::NoMemory) => return Err(Status::Memory),
                    }
                }
                Err(()) => return Err(Status::Memory),
            }
        };
        if inserted {
            next.positions
                .push(candidate.packed, &checks[candidate.checks.clone()]);
            next.edges.first.push(candidate.link);
            next.orders.push(candidate.order);
            if counting {
                index.insert(candidate.key, next.counts.len() as u32);
                next.counts.push(candidate.paths);
            }
        } else if counting {
            if let Some(&child) = index.get(&candidate.key) {
                next.edges.extra.push((child, candidate.link));
                let c = &mut next.counts[child as usize];
                *c = c.saturating_add(candidate.paths).min(cap);
            }
        }
    }
    // Every position of the level must have a reference, for the links and mates to come.
    let len = u32::try_from(next.positions.len()).map_err(|_| Status::Memory)?;
    wire::node_ref(me, len, ranks).ok_or(Status::Memory)?;
    next.positions.shrink_to_fit();
    Ok(next)
}

/// The pass's outcome once a level has mates (on any rank): the count and the lines, the same
/// on every rank. None if a message could not be read, or a line's places name no move from
/// the root (on every rank alike: each reads what all gathered, and plays from the same root).
fn mate_outcome(
    mine: Vec<RankMate>,
    (graph, root): (&LevelGraph, (&Position, RuleSet)),
    transport: &dyn Transport,
    depth: u32,
    cap: u32,
) -> Option<BfsOutcome> {
    let ranks = transport.ranks();
    let me = transport.rank();
    let mut bytes = Vec::new();
    for mate in &mine {
        // (Checked when the level was made: see `keep_new`.)
        let parent = wire::node_ref(me, mate.parent, ranks).expect("a level's references fit");
        wire::put_mate(&mut bytes, &RankMate { parent, ..*mate });
    }
    let mut mates = Vec::new();
    for bytes in transport.all_gather(bytes) {
        wire::read_mates(&bytes, &mut mates)?;
    }
    mates.sort_by_key(|m| m.order);
    let counting = cap > 1;
    if !counting {
        mates.truncate(1);
    }
    let count = mates
        .iter()
        .fold(0u32, |c, m| c.saturating_add(m.paths).min(cap));
    let count = if counting { count } else { 1 };
    let mut lines = Vec::new();
    let mut suffix = Vec::new();
    for mate in &mates {
        let mut ways = Vec::new();
        walk_back(
            (graph, transport),
            depth as usize,
            mate.parent,
            &mut suffix,
            &mut ways,
            cap as usize - lines.len(),
        )?;
        for places in ways {
            lines.push(played(root, places, (mate.check, mate.reply)).ok()?);
        }
        if lines.len() >= cap as usize {
            break;
        }
    }
    Some(BfsOutcome::Mate { lines, count })
}

/// `LevelGraph::walk_back` among the ranks: every rank takes the same steps, the owner of each
/// position telling the edges into it.
fn walk_back(
    (graph, transport): (&LevelGraph, &dyn Transport),
    depth: usize,
    node: u32,
    suffix: &mut Vec<(u16, u16)>,
    ways: &mut Vec<Vec<(u16, u16)>>,
    cap: usize,
) -> Option<()> {
    if depth == 0 {
        ways.push(suffix.iter().rev().copied().collect());
        return Some(());
    }
    let (owner, local) = wire::node_of(node, transport.ranks());
    let mut mine = Vec::new();
    if owner == transport.rank() {
        // (A link file that cannot be read sends nothing: every rank then gives up.)
        if let Ok(links) = graph.edges_into(depth, local) {
            wire::put_links(&mut mine, &links);
        }
    }
    let gathered = transport.all_gather(mine);
    let links = wire::read_links(&gathered[owner])?;
    for link in links {
        if ways.len() >= cap {
            break;
        }
        suffix.push((link.check_place, link.evasion_place));
        walk_back(
            (graph, transport),
            depth - 1,
            link.parent,
            suffix,
            ways,
            cap,
        )?;
        suffix.pop();
    }
    Some(())
}
