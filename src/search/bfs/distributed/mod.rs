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
//!   positions (gathered: 8 bytes a position).
//! - A link's parent is a rank and a local index together (`wire::node_ref`); a line is read
//!   back from the mate, every rank walking the same way in step, the owner of each position
//!   telling all the edges into it.
//! - Every level ends with a word of status from every rank (mate, memory, stop), so that
//!   all ranks end together, with the same outcome.
//! - A rank's threads (`--threads`) expand a wide level in shares, runs of its positions, each
//!   child carrying its order; the owner then takes what it receives on one thread.
//!
//! - After each level a rank gets back within its budget as one process does (links to disk,
//!   then its keys frozen), and says what it could not fix at the next exchange.
//!
//! Checkpoints and forgetting are the one-process pass's for now, and a level's children are
//! exchanged at once.

#[cfg(feature = "mpi")]
pub mod mpi;
pub mod transport;
mod wire;

use super::disk::DiskError;
use super::expand::{self, DeadCache, Looking, NewChild, Pipeline};
use super::graph::{LevelGraph, DISK_STEP_BYTES};
use super::keyset::{KeyMap, KeySet};
use super::level::{LevelEdges, LevelPositions, Link, Mate, Parent};
use super::{settle_memory, BfsLimits, BfsOutcome, GiveUp};
use crate::search::helpmate::{Abort, POLL_INTERVAL};
use crate::shogi::{Move, Position};
use parking_lot::Mutex;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;
use transport::Transport;
use wire::{Candidate, RankMate};

/// The fewest positions a thread's share of a level has (narrower levels are expanded by the
/// calling thread alone; `BfsLimits::parallel_batch_positions` overrides it). One rank of two
/// threads (`mpirun --bind-to none -np 1 ... --threads 2`), two runs each: 64 beat 16, 256 and
/// 1,024 on 寿限無 19447 and matched 16 on 龍の顎 12555 (5.2 s; 5.1, 5.8, 7.2) and 森茂 1461.
const SHARE_POSITIONS: usize = 64;

/// From which width of a level (times the ranks less one) its new positions are numbered by
/// ranges of their parents rather than by gathering every rank's orders (`Limits::ranges_from`):
/// gathered, every rank receives 8 bytes for each new position of the level, which grows with the
/// ranks; by ranges, 16 bytes a position cross the network in all, in three collectives instead
/// of one.
pub(crate) const RANGES_FROM: u64 = 1 << 16;

/// The rank that owns `key` among `ranks`: from bits the key set keeps none of (it keeps the
/// low 74 and the top 6), so that a rank's shards fill as evenly as one process's.
fn rank_of(key: u128, ranks: usize) -> usize {
    ((((key >> 80) as u32) as u64 * ranks as u64) >> 32) as usize
}

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
    let dead = DeadCache::new();
    // One a thread, kept from level to level.
    let pipelines = Mutex::new(Vec::new());
    let mut depth = 0u32;
    let started = Instant::now();
    // The figures are summed over the ranks if any rank logs them (rank 0 prints them).
    let logging = transport.max(u64::from(limits.level_log.is_some())) == 1;
    // Bytes this rank sent the others (the level log's figure).
    let mut sent = 0u64;
    // The width of the level being expanded (all ranks').
    let mut width = 1u64;
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
        for buffer in &mut outgoing {
            buffer[0] = expanded.status.max(pending) as u8;
        }
        sent += sent_to_others(&outgoing, me);
        let incoming = transport.all_to_all(outgoing);
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
                (&part, &seen, &graph),
                (*nodes, sent),
                started,
            );
        }
    }
}

/// Sends the level log the figures of level `depth` summed over the ranks (from rank 0).
fn log_level(
    limits: &BfsLimits,
    transport: &dyn Transport,
    depth: u32,
    (part, seen, graph): (&Part, &KeySet, &LevelGraph),
    (nodes, sent): (u64, u64),
    started: Instant,
) {
    let checks = part.positions.checks.len();
    let bytes = seen.bytes() + graph.bytes() + part.positions.bytes();
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
    ];
    let mut bytes_out = Vec::new();
    for figure in mine {
        bytes_out.extend_from_slice(&(figure as u64).to_le_bytes());
    }
    let mut sums = [0usize; 9];
    for theirs in transport.all_gather(bytes_out) {
        for (sum, word) in sums.iter_mut().zip(theirs.chunks_exact(8)) {
            *sum += u64::from_le_bytes(word.try_into().expect("8 bytes")) as usize;
        }
    }
    let Some(log) = limits.level_log.as_ref().filter(|_| transport.rank() == 0) else {
        return;
    };
    let [positions, keys, key_bytes, graph_bytes, bytes, nodes, checks, exchanged, disk_bytes] =
        sums;
    // (The receiver may be gone: nothing to do then.)
    let _ = log.send(super::LevelStats {
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
        gaps: [0; super::GAP_BUCKETS],
        ghosts: 0,
        checkpoints: (std::time::Duration::ZERO, 0),
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

/// The largest status of the ranks, each in front of what it sent (damaged if one is missing).
fn status_of(received: &[Vec<u8>]) -> Status {
    (received.iter())
        .map(|bytes| {
            bytes
                .first()
                .map_or(Status::Damaged, |&s| Status::of(s.into()))
        })
        .max()
        .unwrap_or(Status::Damaged)
}

/// What a rank's expansion of its part came to.
struct Expanded {
    status: Status,
    /// Its mates, in order (the first only, unless counting).
    mates: Vec<RankMate>,
    /// The children to send, by owner, after a byte for the status.
    outgoing: Vec<Vec<u8>>,
}

/// Expands this rank's part of the level: mates found, and the children it does not know of,
/// each for its owner. A level wide enough, with a pool, is cut into shares for its threads,
/// each a run of positions; a share's children carry their orders, so the owners need not
/// hear them in any particular order.
fn expand_part(
    part: &Part,
    (seen, dead, pipelines): (&KeySet, &DeadCache, &Mutex<Vec<Pipeline>>),
    limits: &BfsLimits,
    (me, ranks): (usize, usize),
    nodes: &mut u64,
) -> Expanded {
    let len = part.positions.len();
    // Several shares a thread, so that one slow share does not hold up the level, and none
    // smaller than the one-process pass's threads take.
    let smallest = limits.parallel_batch_positions.unwrap_or(SHARE_POSITIONS);
    let shares = limits.pool.map_or(1, |pool| {
        (len / smallest.max(1)).clamp(1, pool.current_num_threads() * 4)
    });
    let halt = Halt::default();
    let expand = |share: usize| {
        let mut pipeline = pipelines.lock().pop().unwrap_or_default();
        let done = expand_share(
            part,
            (share, share * len / shares..(share + 1) * len / shares),
            (seen, dead, &mut pipeline, &halt),
            limits,
            (me, ranks),
        );
        pipelines.lock().push(pipeline);
        done
    };
    let shares: Vec<Share> = match limits.pool.filter(|_| shares > 1) {
        None => vec![expand(0)],
        Some(pool) => pool.install(|| (0..shares).into_par_iter().map(expand).collect()),
    };
    let mut status = Status::Going;
    let mut mates = Vec::new();
    let mut outgoing: Vec<Vec<u8>> = Vec::new();
    for share in shares {
        *nodes += share.nodes;
        status = status.max(share.status);
        if mates.is_empty() || limits.solution_cap > 1 {
            mates.extend(share.mates);
        }
        if outgoing.is_empty() {
            outgoing = share.outgoing;
        } else {
            for (to, from) in outgoing.iter_mut().zip(&share.outgoing) {
                // (After the share's place for the status.)
                to.extend_from_slice(&from[1..]);
            }
        }
    }
    if status == Status::Going && !mates.is_empty() {
        status = Status::Mate;
    }
    Expanded {
        status,
        mates,
        outgoing,
    }
}

/// What the shares of a level tell one another as they go.
struct Halt {
    /// The first share that met a mate (`usize::MAX`: none yet).
    first_mate: AtomicUsize,
    /// A share saw the search stopped or out of time (a `Status`; 0: not).
    aborted: AtomicU8,
}

impl Default for Halt {
    fn default() -> Halt {
        Halt {
            first_mate: AtomicUsize::new(usize::MAX),
            aborted: AtomicU8::new(0),
        }
    }
}

/// A share's expansion.
struct Share {
    status: Status,
    /// Its mates, in order, as the rank orders them.
    mates: Vec<RankMate>,
    /// Its children, by owner, after a byte left for the status.
    outgoing: Vec<Vec<u8>>,
    nodes: u64,
}

/// Expands the positions `range` of this rank's part (share number `share` of the level).
fn expand_share(
    part: &Part,
    (share, range): (usize, std::ops::Range<usize>),
    (seen, dead, pipeline, halt): (&KeySet, &DeadCache, &mut Pipeline, &Halt),
    limits: &BfsLimits,
    (me, ranks): (usize, usize),
) -> Share {
    let counting = limits.solution_cap > 1;
    let mut outbox = Outbox {
        seen,
        ranks,
        me,
        globals: &part.globals,
        outgoing: vec![vec![Status::Going as u8]; ranks],
        parent: u32::MAX,
        next_ordinal: 0,
        ordinal: 0,
    };
    let mut mates: Vec<Mate> = Vec::new();
    let mut status = Status::Going;
    let mut nodes = 0u64;
    let mut next_poll = POLL_INTERVAL;
    pipeline.reset();
    for index in range {
        // Counting, every share looks for mates to the end, keeping no children once a mate
        // is known anywhere; otherwise the shares after the first with a mate are not needed.
        let first_mate = halt.first_mate.load(Ordering::Relaxed);
        if (!counting && first_mate < share) || halt.aborted.load(Ordering::Relaxed) != 0 {
            break;
        }
        let (packed, checks) = part.positions.get(index);
        let parent = Parent {
            packed,
            checks,
            index: index as u32,
            paths: if counting { part.counts[index] } else { 1 },
        };
        nodes += pipeline.current().generate(
            parent,
            (seen, dead, &outbox),
            &mut mates,
            Looking {
                selfmate: limits.selfmate,
                rules: limits.rules,
                first_mate_only: !counting,
                mate_elsewhere: first_mate != usize::MAX,
            },
        );
        if !mates.is_empty() {
            halt.first_mate.fetch_min(share, Ordering::Relaxed);
            if !counting {
                break;
            }
        }
        if mates.is_empty() {
            let _ = pipeline.previous().resolve(dead, &mut outbox);
        }
        pipeline.advance();
        if nodes >= next_poll {
            next_poll = (nodes / POLL_INTERVAL + 1) * POLL_INTERVAL;
            if let Some(abort) = limits.interrupt.check(Instant::now()) {
                status = Status::of_abort(abort);
                halt.aborted.store(status as u8, Ordering::Relaxed);
                break;
            }
        }
    }
    if mates.is_empty() && status == Status::Going {
        let _ = pipeline.previous().resolve(dead, &mut outbox);
    }
    if let Some(aborted) = Some(halt.aborted.load(Ordering::Relaxed)).filter(|&a| a != 0) {
        status = status.max(Status::of(aborted.into()));
    }
    let mut rank_mates = Vec::with_capacity(mates.len());
    // Mates of one parent come in the order they were found: their place among the parent's.
    let mut last_parent = None;
    let mut seq = 0u32;
    for mate in &mates {
        if last_parent != Some(mate.parent) {
            last_parent = Some(mate.parent);
            seq = 0;
        }
        rank_mates.push(RankMate {
            order: wire::order_of(part.globals[mate.parent as usize], seq),
            parent: mate.parent,
            check: mate.check,
            reply: mate.reply,
            paths: mate.paths,
        });
        seq += 1;
    }
    Share {
        status,
        mates: rank_mates,
        outgoing: outbox.outgoing,
        nodes,
    }
}

/// Where a rank's children go: those it owns and has seen on earlier levels are dropped, the
/// rest are packed for their owners with their order.
struct Outbox<'a> {
    seen: &'a KeySet,
    ranks: usize,
    me: usize,
    globals: &'a [u64],
    outgoing: Vec<Vec<u8>>,
    /// The parent whose children are being resolved, and the place of the next among them.
    parent: u32,
    next_ordinal: u32,
    /// The place of the child last asked about.
    ordinal: u32,
}

impl expand::ChildSink for Outbox<'_> {
    type Stop = ();

    #[inline]
    fn prefetch_frozen(&self, key: u128) {
        self.seen.prefetch_frozen(key);
    }

    #[inline]
    fn is_known(&mut self, key: u128, link: Link, _paths: u32) -> bool {
        // Every child is asked about first, in the order they were generated.
        if link.parent != self.parent {
            self.parent = link.parent;
            self.next_ordinal = 0;
        }
        self.ordinal = self.next_ordinal;
        self.next_ordinal += 1;
        rank_of(key, self.ranks) == self.me && self.seen.contains(key)
    }

    fn add(&mut self, child: NewChild) -> Result<(), ()> {
        let owner = rank_of(child.key, self.ranks);
        let order = wire::order_of(self.globals[child.link.parent as usize], self.ordinal);
        wire::put_candidate(
            &mut self.outgoing[owner],
            (child.key, order, &child.link, child.paths),
            &child.pos.pack(),
            child.checks,
        );
        Ok(())
    }
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

/// The global indices of this rank's new positions (`mine`: their orders, ascending) and the
/// width of the level, from every rank's orders gathered to all; or the largest status a rank
/// sent instead (`status`, in front of its orders). An error is every rank's.
fn number_by_gathering(
    mine: &[u64],
    status: Status,
    transport: &dyn Transport,
    sent: &mut u64,
) -> Result<(Vec<u64>, u64), Status> {
    let mut orders = vec![status as u8];
    orders.extend(mine.iter().flat_map(|o| o.to_le_bytes()));
    *sent += (orders.len() * (transport.ranks() - 1)) as u64;
    let gathered = transport.all_gather(orders);
    match status_of(&gathered) {
        Status::Going => {}
        status => return Err(status),
    }
    // (Every rank reads every list, its own too, so that all find a damaged one.)
    if gathered.iter().any(|g| g.len() % 8 != 1) {
        return Err(Status::Damaged);
    }
    let globals = global_indices(mine, &gathered, transport.rank()).ok_or(Status::Damaged)?;
    let width = gathered.iter().map(|g| g.len() as u64 / 8).sum();
    Ok((globals, width))
}

/// The global index of each of `mine` (ascending orders of this rank's new positions): how
/// many new positions of all ranks come before it (`gathered`: each rank's orders, after its
/// status byte). None if a rank's list is damaged.
fn global_indices(mine: &[u64], gathered: &[Vec<u8>], me: usize) -> Option<Vec<u64>> {
    let mut globals: Vec<u64> = (0..mine.len() as u64).collect();
    for (rank, bytes) in gathered.iter().enumerate() {
        let bytes = bytes.get(1..)?;
        if rank == me {
            continue;
        }
        let theirs = read_words(bytes)?;
        // Both ascending: walk them together.
        let mut before = 0u64;
        let mut theirs = theirs.into_iter().peekable();
        for (order, global) in mine.iter().zip(&mut globals) {
            while theirs.next_if(|&t| t < *order).is_some() {
                before += 1;
            }
            *global += before;
        }
    }
    Some(globals)
}

/// `number_by_gathering`'s answer with less sent: rank `q` numbers the new positions whose
/// parents are the `q`-th of the ranks' shares of the level's global indices (`width` of
/// them). Orders sort by parent first, so rank `q`'s positions all come after rank `q - 1`'s:
/// each rank sorts the orders it is sent, learns from a gathered count how many come before
/// its range, and sends each position's global index back to its owner. An error is every
/// rank's; a rank sent damaged globals gets fewer than `mine` (the pass reports it then).
fn number_by_ranges(
    mine: &[u64],
    status: Status,
    width: u64,
    transport: &dyn Transport,
    sent: &mut u64,
) -> Result<(Vec<u64>, u64), Status> {
    let (me, ranks) = (transport.rank(), transport.ranks());
    let range_of = |order: u64| {
        (u128::from(wire::parent_of(order)) * ranks as u128 / u128::from(width.max(1))) as usize
    };
    let mut outgoing = vec![vec![status as u8]; ranks];
    for &order in mine {
        // (A parent past the level is a bug; the last range takes it rather than panic.)
        outgoing[range_of(order).min(ranks - 1)].extend_from_slice(&order.to_le_bytes());
    }
    *sent += sent_to_others(&outgoing, me);
    let received = transport.all_to_all(outgoing);
    match status_of(&received) {
        Status::Going => {}
        status => return Err(status),
    }
    // Every order received, with the rank it came from and its place in that rank's list.
    let mut ranged: Vec<(u64, u32, u32)> = Vec::new();
    let mut status = Status::Going;
    for (from, bytes) in received.iter().enumerate() {
        let Some(orders) = read_words(&bytes[1..]) else {
            status = Status::Damaged;
            continue;
        };
        ranged.extend((orders.into_iter().enumerate()).map(|(i, o)| (o, from as u32, i as u32)));
    }
    drop(received);
    ranged.sort_unstable();
    // (A rank that could not read what it was sent says so here, so that all end together.)
    let mut count = vec![status as u8];
    count.extend_from_slice(&(ranged.len() as u64).to_le_bytes());
    *sent += (count.len() * (ranks - 1)) as u64;
    let counts = transport.all_gather(count);
    match status_of(&counts) {
        Status::Going => {}
        status => return Err(status),
    }
    let counts: Vec<u64> = (counts.iter())
        .map(|c| read_words(&c[1..]).and_then(|w| w.first().copied()))
        .collect::<Option<_>>()
        .ok_or(Status::Damaged)?;
    let before: u64 = counts[..me].iter().sum();
    let mut back: Vec<Vec<u64>> = (received_sizes(&ranged, ranks).into_iter())
        .map(|n| vec![0; n])
        .collect();
    for (place, &(_, from, i)) in ranged.iter().enumerate() {
        back[from as usize][i as usize] = before + place as u64;
    }
    let back: Vec<Vec<u8>> = (back.iter())
        .map(|globals| globals.iter().flat_map(|g| g.to_le_bytes()).collect())
        .collect();
    *sent += sent_to_others(&back, me);
    // Each range's globals, in the order this rank sent its orders: ascending ranges, so the
    // globals of `mine` in order.
    let mut globals = Vec::with_capacity(mine.len());
    for bytes in transport.all_to_all(back) {
        // (Damaged: fewer globals than positions, which the pass reports at the next level.)
        globals.extend(read_words(&bytes).unwrap_or_default());
    }
    Ok((globals, counts.iter().sum()))
}

/// How many of `ranged` came from each rank.
fn received_sizes(ranged: &[(u64, u32, u32)], ranks: usize) -> Vec<usize> {
    let mut sizes = vec![0; ranks];
    for &(_, from, _) in ranged {
        sizes[from as usize] += 1;
    }
    sizes
}

/// The bytes of `outgoing` (one buffer a rank) that leave rank `me`.
fn sent_to_others(outgoing: &[Vec<u8>], me: usize) -> u64 {
    (outgoing.iter().enumerate())
        .filter(|&(rank, _)| rank != me)
        .map(|(_, buffer)| buffer.len() as u64)
        .sum()
}

/// Little-endian 8-byte words; None if `bytes` is not a whole number of them.
fn read_words(bytes: &[u8]) -> Option<Vec<u64>> {
    bytes.len().is_multiple_of(8).then(|| {
        (bytes.chunks_exact(8))
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    })
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
