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

use crate::search::bfs::expand::children::DeadCache;
use crate::search::bfs::keys::{KeyMap, KeySet};
use crate::search::bfs::levels::checkpoint::{self, Checkpoints, Plan, Resumed};
use crate::search::bfs::levels::disk::DiskError;
use crate::search::bfs::levels::graph::{LevelGraph, DISK_STEP_BYTES};
use crate::search::bfs::levels::level::{LevelEdges, LevelPositions};
use crate::search::bfs::{settle_memory, BfsLimits, BfsOutcome, GiveUp};
use crate::search::interrupt::Abort;
use crate::shogi::{Move, Position};
pub(crate) use numbering::RANGES_FROM;
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
    limits: &BfsLimits,
    transport: &dyn Transport,
    nodes: &mut u64,
) -> BfsOutcome {
    let before = *nodes;
    let outcome = pass(root, limits, transport, nodes);
    // Every rank's moves, as one process counts them.
    *nodes = before + transport.sum(*nodes - before);
    outcome
}

fn pass(
    root: &Position,
    limits: &BfsLimits,
    transport: &dyn Transport,
    nodes: &mut u64,
) -> BfsOutcome {
    let (me, ranks) = (transport.rank(), transport.ranks());
    let cap = limits.solution_cap.max(1);
    let counting = cap > 1;
    let mut seen = KeySet::with_census(None, limits.forgetting);
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
                return BfsOutcome::GaveUp {
                    lower_bound: limits.mate_length(0),
                    reason: GiveUp::Disk(e),
                }
            }
        }
    }
    let dead = DeadCache::new();
    // One a thread, kept from level to level.
    let pipelines = Mutex::new(Vec::new());
    let started = Instant::now();
    // The figures are summed over the ranks if any rank logs them (rank 0 prints them).
    let logging = transport.max(u64::from(limits.level_log.is_some())) == 1;
    // Bytes this rank sent the others (the level log's figure).
    let mut sent = 0u64;
    // The width of the level being expanded (all ranks').
    let mut width = match checkpoints
        .as_ref()
        .is_some_and(|c: &Checkpoints| c.resumed)
    {
        true => transport.sum(part.positions.len() as u64),
        false => 1,
    };
    // Every rank writes a checkpoint at the next level boundary: at the first, only if they are
    // written at every one (no rank has said yet what its clock says, and all must agree).
    let mut checkpoint_due = (checkpoints.as_ref()).is_some_and(|c| c.plan.every.is_zero());
    // What this rank alone found wrong, to tell the others at the next exchange.
    let mut pending = Status::Going;
    let mut disk_error = None;
    if limits.disk.always {
        if let Err(e) = graph.move_to_disk(&limits.disk, 0) {
            (pending, disk_error) = (Status::Disk, Some(e));
        }
    }
    loop {
        let lower_bound = limits.mate_length(depth);
        let give_up = |reason| BfsOutcome::GaveUp {
            lower_bound,
            reason,
        };
        if lower_bound > limits.max_plies {
            return give_up(GiveUp::MaxPlies);
        }
        if let Some(checkpoints) = checkpoints.as_mut().filter(|_| checkpoint_due) {
            let written = checkpoints.write(
                (&seen, &part.positions, &part.counts, &mut graph),
                Some(&part.globals),
                (depth, *nodes),
                &limits.disk,
            );
            if transport.max(u64::from(written.is_err())) != 0 {
                return give_up(GiveUp::Disk(disk_error_among(written.err(), transport)));
            }
            checkpoints.drop_previous();
        }
        seen.set_level(depth + 1);
        let expanded = expand_part(
            &part,
            (&seen, &dead, &pipelines),
            limits,
            (me, ranks),
            nodes,
        );
        // Two collectives a level (narrow levels are many: 寿限無 has 9,723), each rank's
        // status riding in front of what it sends: the children, then the new positions' orders.
        let mut outgoing = expanded.outgoing;
        let due = match checkpoints.as_ref().is_some_and(Checkpoints::due) {
            true => CHECKPOINT_DUE,
            false => 0,
        };
        for buffer in &mut outgoing {
            buffer[0] = expanded.status.max(pending) as u8 | due;
        }
        sent += sent_to_others(&outgoing, me);
        let incoming = transport.all_to_all(outgoing);
        checkpoint_due =
            (incoming.iter()).any(|b| b.first().is_some_and(|s| s & CHECKPOINT_DUE != 0));
        match status_of(&incoming) {
            Status::Going => {}
            Status::Mate => {
                // Every rank's links readable, or all give up.
                if transport.max(u64::from(graph.finish_writing().is_err())) != 0 {
                    return give_up(GiveUp::Memory);
                }
                return mate_outcome(expanded.mates, &graph, transport, depth, cap)
                    .unwrap_or_else(|| give_up(GiveUp::Memory));
            }
            Status::Disk => {
                return give_up(GiveUp::Disk(disk_error_among(disk_error, transport)));
            }
            status => return give_up(status.reason()),
        }
        let held = part.positions.bytes() + part.globals.capacity() * 8;
        let kept = keep_new(
            incoming,
            (&mut seen, &mut graph, me),
            (counting, cap),
            (held, &mut disk_error),
            limits,
        );
        let kept_status = kept.as_ref().err().copied().unwrap_or(Status::Going);
        let no_orders = Vec::new();
        let orders = kept.as_ref().map_or(&no_orders, |next| &next.orders);
        let numbered = if width.saturating_mul(ranks as u64 - 1) >= limits.ranges_from {
            number_by_ranges(orders, kept_status, width, transport, &mut sent)
        } else {
            number_by_gathering(orders, kept_status, transport, &mut sent)
        };
        let (mut next, globals) = match (numbered, kept) {
            (Ok((globals, level_width)), Ok(next)) => {
                width = level_width;
                (next, globals)
            }
            (Err(Status::Disk), _) => {
                return give_up(GiveUp::Disk(disk_error_among(disk_error, transport)));
            }
            (Err(status), _) => return give_up(status.reason()),
            (Ok(_), Err(status)) => return give_up(status.reason()),
        };
        if width == 0 {
            return BfsOutcome::NoMate;
        }
        if globals.len() != next.positions.len() {
            // This rank alone knows: it expands nothing and says so at the next exchange.
            pending = Status::Damaged;
            next.positions = LevelPositions::default();
        }
        if let Err(e) = graph.push(next.edges) {
            (pending, disk_error) = (Status::Disk, Some(e));
        }
        part = Part {
            positions: next.positions,
            globals,
            counts: next.counts,
        };
        depth += 1;
        // Within budget again (links to disk, then the keys frozen) or, failing that, every
        // rank told at the next exchange.
        if pending == Status::Going {
            let within = settle_memory(
                (&mut seen, &mut graph, &part.positions, &part.counts),
                &mut limits.budget_bytes.clone(),
                &mut || 0,
                limits,
                limits.mate_length(depth),
            );
            match within {
                Ok(_) => {}
                Err(BfsOutcome::GaveUp {
                    reason: GiveUp::Disk(e),
                    ..
                }) => (pending, disk_error) = (Status::Disk, Some(e)),
                Err(BfsOutcome::GaveUp {
                    reason: GiveUp::Aborted(abort),
                    ..
                }) => pending = Status::of_abort(abort),
                Err(_) => pending = Status::Memory,
            }
        }
        if logging {
            log_level(
                limits,
                transport,
                depth,
                (&part, &seen, &graph, checkpoints.as_ref()),
                (*nodes, sent),
                started,
            );
        }
    }
}

/// This rank's checkpoints of `plan`, and the pass as they left it if it goes on from them: from
/// the newest generation every rank has. Every rank gets the same refusal or error.
fn start_checkpoints(
    plan: &Plan,
    limits: &BfsLimits,
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
        (_, _, common) => checkpoint::start_rank(plan, common, &limits.disk, limits.forgetting),
    };
    if transport.max(u64::from(start.is_err())) != 0 {
        return Err(disk_error_among(start.err(), transport));
    }
    start
}

/// Sends the level log the figures of level `depth` summed over the ranks (from rank 0).
fn log_level(
    limits: &BfsLimits,
    transport: &dyn Transport,
    depth: u32,
    (part, seen, graph, checkpoints): (&Part, &KeySet, &LevelGraph, Option<&Checkpoints>),
    (nodes, sent): (u64, u64),
    started: Instant,
) {
    let checks = part.positions.checks.len();
    let bytes = seen.bytes() + graph.bytes() + part.positions.bytes();
    let (spent, checkpoint_bytes) = checkpoints.map_or((Duration::ZERO, 0), |c| (c.spent, c.bytes));
    let mine = [
        part.positions.len(),
        seen.len(),
        seen.bytes(),
        graph.bytes(),
        bytes,
        nodes as usize,
        checks,
        sent as usize,
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
    for theirs in transport.all_gather(bytes_out) {
        for (at, word) in theirs.chunks_exact(8).enumerate().take(sums.len()) {
            let figure = u64::from_le_bytes(word.try_into().expect("8 bytes")) as usize;
            sums[at] = match at {
                10 => sums[at].max(figure),
                _ => sums[at] + figure,
            };
        }
    }
    let Some(log) = limits.level_log.as_ref().filter(|_| transport.rank() == 0) else {
        return;
    };
    let [positions, keys, key_bytes, graph_bytes, bytes, nodes, checks, exchanged, disk_bytes, checkpoint_bytes, spent_us] =
        sums;
    // (The receiver may be gone: nothing to do then.)
    let _ = log.send(crate::search::bfs::LevelStats {
        plies: 2 * depth,
        positions,
        keys,
        key_bytes,
        graph_bytes,
        disk_bytes: disk_bytes as u64,
        bytes,
        elapsed: started.elapsed(),
        nodes: nodes as u64,
        checks: Some(checks),
        gaps: [0; crate::search::bfs::GAP_BUCKETS],
        ghosts: 0,
        checkpoints: (
            Duration::from_micros(spent_us as u64),
            checkpoint_bytes as u64,
        ),
        exchanged: exchanged as u64,
    });
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
    limits: &BfsLimits,
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
                    match graph.move_to_disk(&limits.disk, DISK_STEP_BYTES) {
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
                    if seen.freeze(None, &stop).is_none() {
                        return Err(limits
                            .interrupt
                            .check(Instant::now())
                            .map_or(Status::Memory, Status::of_abort));
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
/// on every rank. None if a message could not be read (on every rank alike: each reads what
/// all gathered).
fn mate_outcome(
    mine: Vec<RankMate>,
    graph: &LevelGraph,
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
        suffix.clear();
        suffix.extend(mate.reply);
        suffix.push(mate.check);
        walk_back(
            (graph, transport),
            depth as usize,
            mate.parent,
            &mut suffix,
            &mut lines,
            cap as usize,
        )?;
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
    suffix: &mut Vec<Move>,
    lines: &mut Vec<Vec<Move>>,
    cap: usize,
) -> Option<()> {
    if depth == 0 {
        lines.push(suffix.iter().rev().copied().collect());
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
        if lines.len() >= cap {
            break;
        }
        suffix.push(link.evasion);
        suffix.push(link.check);
        walk_back(
            (graph, transport),
            depth - 1,
            link.parent,
            suffix,
            lines,
            cap,
        )?;
        suffix.pop();
        suffix.pop();
    }
    Some(())
}
