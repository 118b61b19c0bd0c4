//! One level of the breadth-first pass on several threads, with the same result whatever the
//! number of threads and however they are scheduled.
//!
//! 1. **Expand** (each thread taking small batches of a slice of the level, in order, from a
//!    shared counter, so that the threads finish together): each position's
//!    checks and their evasions are generated; an evasion whose key the key set already holds
//!    is dropped — the set and the owners' indexes are only read in this phase — unless,
//!    counting solutions, an earlier slice of this level found it (then it goes to its owner as
//!    a further way in, unplayed); so is one the same thread has already made a candidate of
//!    on this level (see `Repeats`); the others become candidates, packed, numbered in the order a
//!    single thread would have met them (by parent, then child) and sorted into buckets by the
//!    thread that owns their key's shard. Mates are collected the same way.
//! 2. **Insert** (in parallel over owners): each owner takes its buckets batch by batch, in that
//!    order, and inserts the keys into its own shards, so no two threads touch one shard and no
//!    lock is taken; the first candidate of a key wins, as it would for one thread.
//!
//! Slice by slice (so that the candidates held at once stay bounded), then:
//!
//! 3. **Merge**: the new positions of all owners, ordered by their numbers, make the next level
//!    — the very order one thread would have produced.

use super::crew::Team;
use super::expand::{ChildSink, DeadCache, Looking, NewChild, Pipeline};
use super::keyset::{self, FrozenLookUp, KeySet, Shard};
use super::level::{
    prefetch_tail, Level, LevelEdges, LevelOutcome, LevelPositions, Line, Link, Mate,
};
use super::level_filter::LevelFilter;
use super::level_index::LevelIndex;
use crate::search::helpmate::{Abort, POLL_INTERVAL};
use crate::search::memory::ZeroedTable;
use crate::shogi::{Move, PackedPosition};
use parking_lot::Mutex;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

/// An evasion leading to a position not seen on earlier levels.
#[derive(Clone, Copy)]
struct Candidate {
    /// Where a single thread would have met it: its parent's index in the level in the high
    /// bits, then the candidate's number among that parent's.
    order: u64,
    key: u128,
    link: Link,
    paths: u32,
    /// The position it leads to (packed here, where the parent is at hand: most candidates
    /// are new).
    packed: PackedPosition,
    /// Its checks: where they start in its share's `Expanded::checks`, and how many.
    checks: (u32, u32),
}

/// A new position of the next level, as its owner found it.
struct NewPosition {
    order: u64,
    link: Link,
    paths: u32,
    packed: PackedPosition,
    /// Its checks: where they start in the owner's `Inserted::checks`, and how many.
    checks: (u32, u32),
}

const _: () = assert!(std::mem::size_of::<Candidate>() == 96);

const ORDER_SHIFT: u32 = 24;
/// Positions expanded before their candidates are inserted: bounds the candidates held at once
/// (about two a position, 96 bytes each: some 13 MB).
pub(crate) const SLICE_POSITIONS: usize = 1 << 16;
/// How a slice is cut into batches: each takes a `1 / (GUIDED_SHARES * threads)` of what is
/// left, between the fewest and the most positions below. A thread done with its last batch
/// waits for the others' last, so the batches shrink as the slice runs out (on 寿限無 19447 the
/// threads' ends of an expansion were 2.7 us apart a level with batches of 8); but each is taken
/// from a counter that all the threads write (a round trip between CPUs), so they start larger.
const GUIDED_SHARES: usize = 4;
const MIN_BATCH: usize = 2;
const MAX_BATCH: usize = 64;
/// Slices narrower than this are shared out by the crew (whose threads wait for work
/// spinning), wider ones by rayon (whose threads can then do the merge and freezing too).
const CREW_BELOW: usize = 4096;
/// How many candidates ahead an owner starts loading key-set slots.
const PREFETCH_AHEAD: usize = 8;
/// What a level's expansion is assumed to make of candidates a position before it has measured
/// (bytes; about ten candidates): the first slice of a pass is sized by it.
const FIRST_CANDIDATE_BYTES: usize = 1024;
/// The narrowest slice memory cuts a level into.
const MIN_SLICE: usize = 256;
/// A level the threads started goes on past its allowance, once every resort is spent, by up
/// to this fraction of what they were expected to take (`Workers::level_estimate`), rather
/// than end the pass: the level was given to them on an estimate, and one thread, which needs
/// about half as much, would have finished it. (森茂 1965 at 16 MB and two threads: a level
/// in seven ran out in its last slice, 0.2 MB short; the pass then gave up at ply 1,673 and
/// deepening went on for hours.) The level's end brings the pass back within its budget.
const OVERDRAFT_DIVISOR: usize = 4;
/// ...and by this many bytes at most: within what the process may hold beyond `USI_Hash`
/// (64 MB, docs/usi.md).
const OVERDRAFT_MOST: usize = 16 << 20;
/// What the merge makes of each new position besides its checks: the packed position, its
/// checks' end, its first way in and its count in the next level, and its entry in the merge's
/// order and (counting) in its index from owner to level.
const MERGED_BYTES: usize = std::mem::size_of::<PackedPosition>()
    + 4
    + std::mem::size_of::<Link>()
    + 4
    + std::mem::size_of::<(u64, u32, u32)>()
    + 2 * 4;
/// An owner's new position.
const NEW_BYTES: usize = std::mem::size_of::<NewPosition>();
/// What the merge makes of each further way in (counting): its place in the next level's edges.
const MERGED_EXTRA_BYTES: usize = std::mem::size_of::<(u32, Link)>();

/// What one thread's share of a slice's expansion produced: the batches it took, in order.
#[repr(align(128))]
#[derive(Default)]
struct Expanded {
    buckets: Vec<Vec<Candidate>>,
    /// The candidates' checks.
    checks: Vec<Move>,
    mates: Vec<Mate>,
    /// The batches taken (numbers within the slice, rising).
    batches: Vec<u32>,
    nodes: u64,
    abort: Option<Abort>,
    /// The thread's expansions, kept from slice to slice.
    pipeline: Pipeline,
}

/// What an owner inserted: its new positions (in order) and, counting, further edges into
/// them.
#[repr(align(128))]
#[derive(Default)]
struct Inserted {
    new: Vec<NewPosition>,
    /// The new positions' checks.
    checks: Vec<Move>,
    /// (index into `new`, link), in the order found.
    extra: Vec<(u32, Link)>,
    /// Where its insertion of the current slice is to go on: the batch, and how far it got in
    /// each share's bucket; `None` once the slice is done. An owner that stopped for want of
    /// memory resumes there; one that had finished must not insert its candidates again
    /// (counting, a second pass would add every edge twice).
    resume_at: Option<(usize, Vec<usize>)>,
    /// It stopped because the search was stopped.
    interrupted: bool,
    local_index: LevelIndex,
    /// The keys of `local_index`, perhaps: asked first (see `level_filter.rs`).
    level_keys: LevelFilter,
}

/// The threads of a pass and what they fill level after level, kept so that its vectors are
/// reused: allocated anew each level, their first use took page faults, and freeing them made
/// the system flush the other threads' address translations (1461 at two threads: 5.15 s ->
/// 4.65 s).
pub(super) struct Workers<'a> {
    pool: &'a rayon::ThreadPool,
    /// The pass's dead-position cache, shared by all the threads (each thread's own had every
    /// thread find the same dead positions again).
    dead: &'a DeadCache,
    expanded: Vec<Expanded>,
    inserted: Vec<Inserted>,
    /// Shared by the pool's threads (made at the first level).
    repeats: Option<Repeats>,
    /// Levels expanded so far: each level's stamp in `repeats`.
    levels: u64,
    /// Shares out the narrow slices (see `crew.rs`); rayon the wide ones.
    crew: Option<&'a mut dyn Team>,
    /// The current slice's batches (see `Batches`).
    bounds: Vec<usize>,
    /// Bytes of candidates (with their checks) a position of the last slice made: how wide
    /// the next slice may be (see [`slice_end`]).
    candidate_bytes: usize,
    /// What the owners and the merge took a position of the last level expanded (bytes).
    level_bytes: usize,
}

impl<'a> Workers<'a> {
    pub(super) fn new(
        pool: &'a rayon::ThreadPool,
        dead: &'a DeadCache,
        crew: Option<&'a mut dyn Team>,
    ) -> Workers<'a> {
        Workers {
            pool,
            dead,
            expanded: Vec::new(),
            inserted: Vec::new(),
            repeats: None,
            levels: 0,
            crew,
            bounds: Vec::new(),
            candidate_bytes: FIRST_CANDIDATE_BYTES,
            level_bytes: 0,
        }
    }

    /// About the memory a level of `positions` positions would take beyond what the threads
    /// hold already: the owners' new positions and the merge's copy, at the last level's rate
    /// (0 before the first).
    pub(super) fn level_estimate(&self, positions: usize) -> usize {
        Self::estimate(positions, self.level_bytes, self.candidate_bytes)
    }

    /// [`Workers::level_estimate`] at the rates given.
    fn estimate(positions: usize, level_bytes: usize, candidate_bytes: usize) -> usize {
        // Twice the last level's rate (a level may grow faster than the last, and the key set's
        // growth comes on top), and a slice's candidates. A level the threads start should not
        // run out: one thread, which needs half as much, would have gone on (森茂 1965 at 16 MB:
        // one and a half times the rate let the threads start a level they could not finish;
        // see `OVERDRAFT_DIVISOR` for the levels twice does not cover).
        let level = positions.saturating_mul(level_bytes);
        let slice = positions.min(SLICE_POSITIONS) * candidate_bytes;
        level.saturating_mul(2).saturating_add(slice)
    }

    /// Memory the threads' vectors hold, kept from level to level (capacities).
    pub(super) fn bytes(&self) -> usize {
        self.expanded.iter().map(Expanded::bytes).sum::<usize>()
            + self.inserted.iter().map(Inserted::bytes).sum::<usize>()
            + self.repeats.as_ref().map_or(0, |_| Repeats::BYTES)
    }

    /// The crew, for the narrow loop (see `narrow.rs`).
    pub(super) fn crew(&mut self) -> Option<&mut dyn super::crew::Beside> {
        self.crew.as_deref_mut()?.crew()
    }

    /// Frees the vectors kept from level to level (they are not counted in the pass's memory).
    pub(super) fn release(&mut self) {
        self.expanded = Vec::new();
        self.inserted = Vec::new();
        self.repeats = None;
    }
}

impl Expanded {
    /// Memory held (capacities).
    fn bytes(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| b.capacity() * std::mem::size_of::<Candidate>())
            .sum::<usize>()
            + self.checks.capacity() * std::mem::size_of::<Move>()
            + self.mates.capacity() * std::mem::size_of::<Mate>()
            + self.batches.capacity() * 4
    }

    /// Bytes of the candidates it holds (lengths), with their checks.
    fn candidate_bytes(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| b.len() * std::mem::size_of::<Candidate>())
            .sum::<usize>()
            + self.checks.len() * std::mem::size_of::<Move>()
    }

    /// Ready for a new slice: empty, keeping its vectors' room.
    fn clear(&mut self, owners: usize) {
        self.buckets.resize_with(owners, Vec::new);
        self.buckets.iter_mut().for_each(Vec::clear);
        self.checks.clear();
        self.mates.clear();
        self.batches.clear();
        self.nodes = 0;
        self.abort = None;
    }
}

impl Inserted {
    /// Memory held (capacities).
    fn bytes(&self) -> usize {
        self.new.capacity() * std::mem::size_of::<NewPosition>()
            + self.checks.capacity() * std::mem::size_of::<Move>()
            + self.extra.capacity() * std::mem::size_of::<(u32, Link)>()
            + self.local_index.bytes()
            + self.level_keys.bytes()
    }

    /// Ready for a new level, on which it may make about `expected` new positions: empty,
    /// keeping its vectors' room.
    fn clear(&mut self, expected: usize) {
        self.new.clear();
        self.checks.clear();
        self.extra.clear();
        self.resume_at = None;
        self.interrupted = false;
        self.level_keys.reset(expected);
        self.local_index.reset(expected);
    }
}

/// Expands one level with the `workers`. `allowance` is the memory the key set may still grow
/// by; `more_memory` is asked when it runs out (0: none); `tick(nodes)` is called after every
/// slice (for progress reports during a wide level).
pub(super) fn expand_level(
    workers: &mut Workers,
    seen: &mut KeySet,
    level: &Level,
    nodes: &mut u64,
    mut allowance: usize,
    more_memory: &mut dyn FnMut() -> usize,
    tick: &mut dyn FnMut(u64),
) -> LevelOutcome {
    let Workers {
        pool,
        dead,
        expanded: expanded_all,
        inserted,
        repeats,
        levels,
        crew,
        bounds,
        candidate_bytes,
        level_bytes,
    } = workers;
    // A narrow level's shares are fewer nodes than a poll's interval, and each share counts
    // from nothing: the interrupt is polled here too, once a level (a stop on 寿限無 19447
    // went unanswered for its whole second).
    if let Some(abort) = level.interrupt.check(Instant::now()) {
        return LevelOutcome::Aborted(abort);
    }
    *levels += 1;
    let stamp = *levels;
    let owners = pool.current_num_threads().max(1);
    let repeats = repeats.get_or_insert_with(Repeats::new);
    let dead: &DeadCache = dead;
    // Slices bound the candidates held at once; small batches, so that the threads finish a
    // slice together.
    let slice_len = level.slice.max(1);
    inserted.resize_with(owners, Inserted::default);
    // The owners' filters and indexes are sized for as many new positions as the level has,
    // shared among the owners: a guess; a level that makes more has its filters pass more keys
    // and its indexes grow. Not counting, neither is asked: the smallest (an index keeps the
    // table it has).
    let expected = if level.counting() {
        level.positions.len().div_ceil(owners)
    } else {
        0
    };
    inserted.iter_mut().for_each(|o| o.clear(expected));
    if expanded_all.len() < owners {
        expanded_all.resize_with(owners, Expanded::default);
    }
    let expanded = &mut expanded_all[..owners];
    let mut mates: Vec<Mate> = Vec::new();
    // Set once a thread finds a mate: this is the mate level, and the others need only look
    // for mates (their children would be dropped).
    let mate_found = Line(AtomicBool::new(false));
    // Which share took each batch of the slice.
    let mut takers: Vec<u32> = Vec::new();
    let total = level.positions.len();
    let mut first_index = 0;
    let estimate = Workers::estimate(total, *level_bytes, *candidate_bytes);
    let mut resorts = Resorts::for_level(estimate);
    while first_index < total {
        // What the threads' candidates hold now: a slice that fits in it costs nothing more.
        let held_candidates: usize = expanded.iter().map(Expanded::bytes).sum();
        let slice = slice_end(
            first_index,
            total,
            slice_len,
            held_candidates + allowance / 2,
            *candidate_bytes,
        );
        first_index = slice.1;
        repeats.fit(slice.1 - slice.0);
        let read = Read {
            seen,
            dead,
            repeats,
            stamp,
            mate_found: &mate_found.0,
            inserted,
        };
        // Every batch taken writes it: on a line of its own, away from `mate_found`, which
        // every position reads.
        let next_batch = Line(AtomicUsize::new(0));
        cut_into_batches(slice, level.batch, owners, bounds);
        let batches = Batches {
            bounds,
            next: &next_batch.0,
        };
        let mut rayon = *pool;
        let team: &mut dyn Team = match crew.as_deref_mut() {
            Some(crew) if slice.1 - slice.0 < CREW_BELOW => crew,
            _ => &mut rayon,
        };
        let shares: Vec<Mutex<&mut Expanded>> = expanded.iter_mut().map(Mutex::new).collect();
        team.run(owners, &|share| {
            expand_share(&read, level, &batches, &mut shares[share].lock());
        });
        drop(shares);
        let expanded: &[Expanded] = expanded;
        for e in expanded {
            *nodes += e.nodes;
        }
        // The candidates' vectors grew out of the allowance, like the key set.
        let now_candidates: usize = expanded.iter().map(Expanded::bytes).sum();
        allowance = allowance.saturating_sub(now_candidates.saturating_sub(held_candidates));
        *candidate_bytes = (expanded
            .iter()
            .map(Expanded::candidate_bytes)
            .sum::<usize>()
            / (slice.1 - slice.0))
            .max(1);
        if let Some(abort) = expanded.iter().find_map(|e| e.abort) {
            return LevelOutcome::Aborted(abort);
        }
        // Each parent's mates come from one share, in order: a stable sort by parent gives
        // them in the order one thread would have found them.
        let first_mate = mates.len();
        mates.extend(expanded.iter().flat_map(|e| e.mates.iter().copied()));
        mates[first_mate..].sort_by_key(|m| m.parent);
        if !mates.is_empty() {
            if !level.counting() {
                // The first mate of the level (earlier slices had none).
                mates.truncate(1);
                return LevelOutcome::Mates { mates, count: 1 };
            }
            // A mate level: only its mates matter from here on.
            continue;
        }
        // Insert: each owner its shards, its buckets batch by batch.
        takers.clear();
        takers.resize(batches.count(), 0);
        for (share, e) in expanded.iter().enumerate() {
            for &batch in &e.batches {
                takers[batch as usize] = share as u32;
            }
        }
        let takers = &takers[..];
        for out in inserted.iter_mut() {
            out.resume_at = Some((0, vec![0; owners]));
        }
        resorts.new_slice();
        loop {
            let shards = seen.split_among(owners);
            // The memory left goes to the owners still inserting.
            let working = inserted.iter().filter(|o| o.resume_at.is_some()).count();
            let share = allowance / working.max(1);
            let memory = Insertions {
                allowance: share,
                cram: resorts.cramming,
                frozen: if resorts.froze {
                    FrozenLookUp::Needed
                } else {
                    FrozenLookUp::Done
                },
            };
            let from = (expanded, takers, &batches);
            let jobs: Vec<Mutex<(Vec<&mut Shard>, &mut Inserted, usize)>> = shards
                .into_iter()
                .zip(inserted.iter_mut())
                .map(|(mine, out)| Mutex::new((mine, out, 0)))
                .collect();
            team.run(owners, &|owner| {
                let (mine, out, used) = &mut *jobs[owner].lock();
                *used = insert_owned(owner, owners, mine, from, level, memory, out);
            });
            let used: usize = jobs.into_iter().map(|job| job.into_inner().2).sum();
            allowance = allowance.saturating_sub(used);
            seen.recount();
            if inserted.iter().any(|o| o.interrupted) {
                return LevelOutcome::Aborted(level.interrupt.why());
            }
            let still_working = inserted.iter().filter(|o| o.resume_at.is_some()).count();
            if still_working == 0 {
                break;
            }
            // What the owners now done did not use goes to the others.
            let others_left_room = still_working < working && allowance > 0;
            match resorts.next(more_memory(), others_left_room) {
                Resort::Again => {}
                Resort::Freeze => match seen.freeze(Some(pool), &|| level.interrupt.raised()) {
                    Some(freed) => allowance += freed,
                    None => return LevelOutcome::Aborted(level.interrupt.why()),
                },
                Resort::More(bytes) | Resort::Overdraw(bytes) => allowance += bytes,
                Resort::GiveUp => return LevelOutcome::Memory,
            }
        }
        tick(*nodes);
    }
    if !mates.is_empty() {
        let count = Mate::count(&mates, level.cap);
        return LevelOutcome::Mates { mates, count };
    }

    *level_bytes = (inserted
        .iter()
        .map(|o| o.new.len() * (NEW_BYTES + MERGED_BYTES) + 2 * o.checks.len() * 2)
        .sum::<usize>())
    .div_ceil(total.max(1));
    // Merge: every owner's new positions in the order one thread would have found them.
    let order = merged_order(inserted);
    let (next, counts, edges) = merge(pool, inserted, &order, level.counting());
    LevelOutcome::Next {
        next,
        counts,
        edges,
    }
}

/// What the owners turn to, in this order, when their insertion of a slice runs out of memory:
/// more from the caller; a freeze of the keys (once a slice, see `KeySet::freeze`); filling
/// the shards further (the rest of the slice); the overdraft (once a level, see
/// `OVERDRAFT_DIVISOR`); and only then giving up the pass.
struct Resorts {
    /// The keys were frozen on this slice: the insertions look in the frozen set again.
    froze: bool,
    /// The shards are filled past their usual load for the rest of the slice.
    cramming: bool,
    /// What the level may still overdraw (0 once taken).
    overdraft: usize,
}

/// The next thing [`Resorts::next`] says to do.
#[derive(Debug, PartialEq, Eq)]
enum Resort {
    /// Insert again with what there is (the owners done left memory, or the shards are now
    /// to be crammed).
    Again,
    /// The caller gave this many more bytes.
    More(usize),
    /// Freeze the keys, then insert again.
    Freeze,
    /// Go on past the allowance by this many bytes.
    Overdraw(usize),
    /// Nothing is left: the pass ends for memory.
    GiveUp,
}

impl Resorts {
    /// For a level whose threads were expected to take `estimate` bytes.
    fn for_level(estimate: usize) -> Resorts {
        Resorts {
            froze: false,
            cramming: false,
            overdraft: (estimate / OVERDRAFT_DIVISOR).min(OVERDRAFT_MOST),
        }
    }

    /// A new slice may freeze again and starts uncrammed; the overdraft stays taken.
    fn new_slice(&mut self) {
        self.froze = false;
        self.cramming = false;
    }

    /// What to do after an insertion that stopped short, the caller having given `more` bytes
    /// (0: none) and `others_left_room` saying whether owners that finished left memory unused.
    fn next(&mut self, more: usize, others_left_room: bool) -> Resort {
        match more {
            0 if others_left_room => Resort::Again,
            0 if !self.froze => {
                self.froze = true;
                Resort::Freeze
            }
            0 if !self.cramming => {
                self.cramming = true;
                Resort::Again
            }
            0 if self.overdraft > 0 => Resort::Overdraw(std::mem::take(&mut self.overdraft)),
            0 => Resort::GiveUp,
            bytes => Resort::More(bytes),
        }
    }
}

/// The slice of the level that starts at `first` (of `total` positions): `longest` positions,
/// or as many as fit in `room` bytes at `per_position` bytes of candidates each (as the last
/// slice made them), but at least [`MIN_SLICE`]. Slices only bound the memory held at once: a
/// level cut any way gives the same next level.
fn slice_end(
    first: usize,
    total: usize,
    longest: usize,
    room: usize,
    per_position: usize,
) -> (usize, usize) {
    let longest = longest.max(1);
    let len = (room / per_position.max(1)).clamp(MIN_SLICE.min(longest), longest);
    (first, (first + len).min(total))
}

/// Makes room in `v` for `extra` more items, out of `allowance` (the bytes its capacity grows
/// by, the vector doubling as it would by itself, or growing by just enough where doubling does
/// not fit); false, with `v` as it was, if even that does not fit.
fn room_in<T>(v: &mut Vec<T>, extra: usize, allowance: &mut usize) -> bool {
    let (len, capacity) = (v.len(), v.capacity());
    if capacity - len >= extra {
        return true;
    }
    let bytes = |items: usize| (items - capacity) * std::mem::size_of::<T>();
    let doubled = (2 * capacity).max(len + extra).max(64);
    let grown = [doubled, len + extra]
        .into_iter()
        .find(|&items| bytes(items) <= *allowance);
    match grown {
        Some(items) => {
            v.reserve_exact(items - len);
            *allowance -= bytes(v.capacity().max(items));
            true
        }
        None => false,
    }
}

/// Every owner's new positions as (order, owner, index), in order. Each owner's are in order
/// already: two owners' runs are merged in one pass (the stable sort took a third of a narrow
/// level's merge), more by a stable sort, which merges runs.
fn merged_order(inserted: &[Inserted]) -> Vec<(u64, u32, u32)> {
    let run = |owner: usize| {
        inserted[owner]
            .new
            .iter()
            .enumerate()
            .map(move |(i, n)| (n.order, owner as u32, i as u32))
    };
    if let [a, b] = inserted {
        let mut order = Vec::with_capacity(a.new.len() + b.new.len());
        let (mut a, mut b) = (run(0).peekable(), run(1).peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 <= y.0 => a.next(),
                (Some(_), Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, _) => b.next(),
            };
            match next {
                Some(entry) => order.push(entry),
                None => return order,
            }
        }
    }
    let mut order: Vec<(u64, u32, u32)> = (0..inserted.len()).flat_map(run).collect();
    order.sort_by_key(|&(o, _, _)| o);
    order
}

/// Positions a block of the parallel merge copies.
const MERGE_BLOCK: usize = 4096;

/// The next level from the owners' new positions, taken in `order` (order, owner, index):
/// the positions with their checks, their ways in (counting) and their edges. A wide level is
/// copied on all threads, block by block: on one thread the copy was a tenth of a level's time
/// at two threads.
fn merge(
    pool: &rayon::ThreadPool,
    inserted: &[Inserted],
    order: &[(u64, u32, u32)],
    counting: bool,
) -> (LevelPositions, Vec<u32>, LevelEdges) {
    let new = |&(_, owner, i): &(u64, u32, u32)| &inserted[owner as usize].new[i as usize];
    let mut next = LevelPositions::default();
    let mut counts = Vec::new();
    let mut edges = LevelEdges::default();
    next.ends.reserve_exact(order.len());
    let mut end = 0u32;
    for entry in order {
        end += new(entry).checks.1;
        next.ends.push(end);
    }
    next.checks = vec![Move::NULL; end as usize];
    // The checks' room, cut block by block.
    let mut check_blocks: Vec<&mut [Move]> = Vec::with_capacity(order.len() / MERGE_BLOCK + 1);
    let mut rest: &mut [Move] = &mut next.checks;
    let mut taken = 0u32;
    for block in next.ends.chunks(MERGE_BLOCK) {
        let last = *block.last().expect("chunks are never empty");
        let (head, tail) = std::mem::take(&mut rest).split_at_mut((last - taken) as usize);
        check_blocks.push(head);
        rest = tail;
        taken = last;
    }
    let copy_checks = |(entries, out): (&[(u64, u32, u32)], &mut [Move])| {
        let mut at = 0;
        for entry in entries {
            let (owner, n) = (entry.1 as usize, new(entry));
            let (start, len) = (n.checks.0 as usize, n.checks.1 as usize);
            out[at..at + len].copy_from_slice(&inserted[owner].checks[start..start + len]);
            at += len;
        }
    };
    // Inside the pool: a level under two blocks is not split, and no other thread is woken.
    pool.install(|| {
        let entries = || order.par_iter().with_min_len(MERGE_BLOCK);
        entries()
            .map(|e| new(e).packed)
            .collect_into_vec(&mut next.packed);
        entries()
            .map(|e| new(e).link)
            .collect_into_vec(&mut edges.first);
        if counting {
            entries()
                .map(|e| new(e).paths)
                .collect_into_vec(&mut counts);
        }
        order
            .par_chunks(MERGE_BLOCK)
            .with_min_len(2)
            .zip(check_blocks)
            .for_each(copy_checks);
    });
    if counting {
        let mut global: Vec<Vec<u32>> = inserted.iter().map(|o| vec![0; o.new.len()]).collect();
        for (g, &(_, owner, i)) in order.iter().enumerate() {
            global[owner as usize][i as usize] = g as u32;
        }
        // By child, then in the order found: what one thread's stable sort gives. All the ways
        // into one child come from its key's owner, which found them in order, so a counting
        // sort by child keeps that order (sorting by child and order took 13 ms of
        // forest-06-10_97's 0.37 s at two threads, this takes 3).
        let mut starts = vec![0u32; order.len() + 1];
        for (owner, o) in inserted.iter().enumerate() {
            for &(i, _) in &o.extra {
                starts[global[owner][i as usize] as usize + 1] += 1;
            }
        }
        for c in 1..starts.len() {
            starts[c] += starts[c - 1];
        }
        edges.extra = vec![(0, Link::UNSET); starts[order.len()] as usize];
        for (owner, o) in inserted.iter().enumerate() {
            for &(i, link) in &o.extra {
                let child = global[owner][i as usize];
                let at = &mut starts[child as usize];
                edges.extra[*at as usize] = (child, link);
                *at += 1;
            }
        }
    }
    (next, counts, edges)
}

/// What the shares of phase 1 read (and the one flag they set).
struct Read<'a> {
    seen: &'a KeySet,
    dead: &'a DeadCache,
    repeats: &'a Repeats,
    stamp: u64,
    /// Set once a share finds a mate (see `expand_level`).
    mate_found: &'a AtomicBool,
    /// What the owners have inserted of this level so far (earlier slices).
    inserted: &'a [Inserted],
}

/// The batches of a slice, handed out in order.
struct Batches<'a> {
    /// Where each batch starts, then the slice's end.
    bounds: &'a [usize],
    /// The next batch to take.
    next: &'a AtomicUsize,
}

/// Cuts `slice` (first index, end) into batches for `threads` threads, into `bounds` (see
/// `Batches`): of `fixed` positions each if given, else guided (see `GUIDED_SHARES`).
pub(super) fn cut_into_batches(
    slice: (usize, usize),
    fixed: Option<usize>,
    threads: usize,
    bounds: &mut Vec<usize>,
) {
    bounds.clear();
    let mut at = slice.0;
    bounds.push(at);
    while at < slice.1 {
        let left = slice.1 - at;
        let len = fixed.map_or_else(
            || {
                left.div_ceil(GUIDED_SHARES * threads)
                    .clamp(MIN_BATCH, MAX_BATCH)
            },
            |len| len.max(1),
        );
        at += len.min(left);
        bounds.push(at);
    }
}

impl Batches<'_> {
    fn count(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Positions in the slice.
    fn positions(&self) -> usize {
        self.bounds[self.count()] - self.bounds[0]
    }

    /// The next batch's number and positions, if any is left.
    fn take(&self) -> Option<(usize, std::ops::Range<usize>)> {
        let batch = self.next.fetch_add(1, Ordering::Relaxed);
        (batch < self.count()).then(|| (batch, self.bounds[batch]..self.bounds[batch + 1]))
    }

    /// The first candidate number after `batch`'s.
    fn end_order(&self, batch: usize) -> u64 {
        (self.bounds[batch + 1] as u64) << ORDER_SHIFT
    }
}

/// Phase 1 for one thread's share of a slice: batch after batch, until none is left (or,
/// looking for the first mate only, one is found).
fn expand_share(read: &Read, level: &Level, batches: &Batches, out: &mut Expanded) {
    let Read {
        seen,
        dead,
        repeats,
        stamp,
        mate_found,
        inserted,
    } = *read;
    let owners = inserted.len();
    out.clear(owners);
    let positions = batches.positions().div_ceil(owners);
    // About two new children a position on the long problems: room for them up front, so that
    // the buckets are not copied as they grow.
    for bucket in &mut out.buckets {
        bucket.reserve(2 * positions / owners + 16);
    }
    out.checks.reserve(3 * positions);
    let mut sink = Buckets {
        seen,
        repeats,
        stamp,
        inserted,
        counting: level.counting(),
        owners,
        parent: u32::MAX,
        number: 0,
        buckets: std::mem::take(&mut out.buckets),
        checks: std::mem::take(&mut out.checks),
    };
    let Expanded {
        mates,
        batches: taken,
        nodes,
        abort,
        pipeline,
        ..
    } = out;
    'share: {
        pipeline.reset();
        let mut next_poll = POLL_INTERVAL;
        // Looking for the first mate only, a thread that found one (or sees one found) takes
        // no further batch: the batches before have all been taken, and whoever took them
        // finishes them.
        while level.counting() || !mate_found.load(Ordering::Relaxed) {
            let Some((batch, range)) = batches.take() else {
                break;
            };
            taken.push(batch as u32);
            level.positions.prefetch(range.clone());
            for index in range {
                let elsewhere = mate_found.load(Ordering::Relaxed);
                *nodes += pipeline.current().generate(
                    level.parent(index),
                    (seen, dead, &sink),
                    mates,
                    Looking {
                        selfmate: level.selfmate,
                        rules: level.rules,
                        first_mate_only: !level.counting(),
                        mate_elsewhere: elsewhere,
                    },
                );
                if !mates.is_empty() {
                    mate_found.store(true, Ordering::Relaxed);
                    if !level.counting() {
                        // Nothing after the first mate of this share can matter.
                        break 'share;
                    }
                } else if !elsewhere {
                    let Ok(()) = pipeline.previous().resolve(dead, &mut sink);
                }
                pipeline.advance();
                if *nodes >= next_poll {
                    next_poll = *nodes + POLL_INTERVAL;
                    if let Some(a) = level.interrupt.check(Instant::now()) {
                        *abort = Some(a);
                        break 'share;
                    }
                }
            }
        }
        if mates.is_empty() && !mate_found.load(Ordering::Relaxed) {
            let Ok(()) = pipeline.previous().resolve(dead, &mut sink);
        }
    }
    out.buckets = sink.buckets;
    out.checks = sink.checks;
}

/// Phase 1's sink: candidates sorted into their owners' buckets, numbered in order.
struct Buckets<'a> {
    seen: &'a KeySet,
    /// Candidates the threads have made on this level (see `Repeats`).
    repeats: &'a Repeats,
    /// The level's stamp in `repeats`.
    stamp: u64,
    /// What the owners have inserted of this level so far (earlier slices).
    inserted: &'a [Inserted],
    counting: bool,
    owners: usize,
    /// The parent whose children are coming in, and how many of them have been numbered.
    parent: u32,
    number: u64,
    buckets: Vec<Vec<Candidate>>,
    checks: Vec<Move>,
}

impl ChildSink for Buckets<'_> {
    type Stop = std::convert::Infallible;

    /// The repeats slot: the table is larger than a core's own cache, and looked up cold it
    /// took three quarters of `resolve`'s samples at two threads (forest-06-10_97 and 森茂
    /// 1461 at two threads: 7% less time with the slot loaded ahead). Loaded for writing, as
    /// the other thread may hold its line (the shared table's cost, paid here ahead).
    #[inline]
    fn prefetch(&self, key: u128) {
        self.repeats.prefetch(key);
    }

    #[inline]
    fn prefetch_frozen(&self, key: u128) {
        self.seen.prefetch_frozen(key);
    }

    #[inline]
    fn frozen_apart(&self) -> bool {
        self.seen.any_frozen()
    }

    #[inline]
    fn prefetch_frozen_start(&self, key: u128) {
        self.seen.prefetch_frozen_start(key);
    }

    #[inline]
    fn is_known(&mut self, key: u128, link: Link, paths: u32, frozen_apart: bool) -> bool {
        if self.seen.first_look(key, frozen_apart) {
            self.known(key, link, paths);
            return true;
        }
        self.is_repeat(key, link, paths)
    }

    #[inline]
    fn is_known_after_all(&mut self, key: u128, link: Link, paths: u32) -> bool {
        if self.seen.in_frozen(key) {
            self.known(key, link, paths);
            return true;
        }
        // A copy of a child of the same position handed over since `is_known` looked.
        self.is_repeat(key, link, paths)
    }

    #[inline]
    fn add(&mut self, child: NewChild) -> Result<(), Self::Stop> {
        let order = self.order(child.link.parent);
        self.repeats.note(child.key, self.stamp, order);
        self.push(
            order,
            child.key,
            child.link,
            child.paths,
            child.packed,
            child.checks,
        );
        Ok(())
    }
}

impl Buckets<'_> {
    /// A key already in the set is never a new position; counting, it may still be another way
    /// into one found earlier on this level (in an earlier slice), as its owner's index of
    /// this level's keys tells (read here between insertions). Such a key has a check (the set
    /// keeps no other), so it need not be played: its candidate carries no position.
    #[inline]
    fn known(&mut self, key: u128, link: Link, paths: u32) {
        let owner = &self.inserted[keyset::owner_of_key(key, self.owners)];
        if self.counting && owner.level_keys.may_hold(key) && owner.local_index.get(key).is_some() {
            let order = self.order(link.parent);
            self.push(order, key, link, paths, PackedPosition::EMPTY, &[]);
        }
    }

    /// Whether a key not in the set is a copy of a candidate made before on this level (then,
    /// counting, it is another way in).
    #[inline]
    fn is_repeat(&mut self, key: u128, link: Link, paths: u32) -> bool {
        let order = self.order(link.parent);
        if !self.repeats.met_before(key, self.stamp, order) {
            return false;
        }
        if self.counting {
            self.push(order, key, link, paths, PackedPosition::EMPTY, &[]);
        }
        true
    }

    /// The number the next child of `parent` gets.
    #[inline]
    fn order(&mut self, parent: u32) -> u64 {
        if parent != self.parent {
            self.parent = parent;
            self.number = 0;
        }
        (u64::from(parent) << ORDER_SHIFT) | self.number
    }

    /// Files a candidate in its owner's bucket, numbered `order` (from `order`: the next
    /// number of its parent).
    #[inline]
    fn push(
        &mut self,
        order: u64,
        key: u128,
        link: Link,
        paths: u32,
        packed: PackedPosition,
        checks: &[Move],
    ) {
        let bucket = &mut self.buckets[keyset::owner_of_key(key, self.owners)];
        // The buckets' lines were last read by their owners, on other threads: owning them
        // again takes a round trip between CPUs, started here a few candidates ahead.
        prefetch_tail(bucket, 4 * std::mem::size_of::<Candidate>());
        prefetch_tail(&self.checks, 64 * std::mem::size_of::<Move>());
        bucket.push(Candidate {
            order,
            key,
            link,
            paths,
            packed,
            checks: (self.checks.len() as u32, checks.len() as u32),
        });
        self.checks.extend_from_slice(checks);
        self.number += 1;
    }
}

/// How an owner inserts a slice's candidates.
#[derive(Clone, Copy)]
struct Insertions {
    /// The bytes its shards may grow by.
    allowance: usize,
    /// Whether to cram them (see `Shard::insert`).
    cram: bool,
    /// `Done` while the set has not frozen since the slice's expansion looked the candidates
    /// up: then none is in a frozen set (a key there was known, not a candidate; the keys
    /// inserted since are in the tables), and the insertions need not look there again.
    frozen: FrozenLookUp,
}

/// Phase 2 for one owner: inserts its candidates, batch by batch, from the share that took
/// each (`from`: the shares, which share took each batch, the batches), resuming where a
/// previous call stopped for want of memory. Returns the bytes its shards grew by.
fn insert_owned(
    owner: usize,
    owners: usize,
    shards: &mut [&mut Shard],
    (expanded, takers, batches): (&[Expanded], &[u32], &Batches),
    level: &Level,
    memory: Insertions,
    out: &mut Inserted,
) -> usize {
    let Insertions {
        mut allowance,
        cram,
        frozen,
    } = memory;
    let start_allowance = allowance;
    let Some((first_batch, mut next)) = out.resume_at.take() else {
        return 0;
    };
    let mut since_poll = 0;
    for (batch, &share) in takers.iter().enumerate().skip(first_batch) {
        let e = &expanded[share as usize];
        let bucket = &e.buckets[owner];
        let end = batches.end_order(batch);
        let at = &mut next[share as usize];
        while let Some(c) = bucket.get(*at).filter(|c| c.order < end) {
            since_poll += 1;
            if since_poll == POLL_INTERVAL {
                since_poll = 0;
                if level.interrupt.raised() {
                    out.interrupted = true;
                    return start_allowance - allowance;
                }
            }
            // Start loading the slot a few candidates ahead (in this share: most likely the
            // ones inserted next): the look-ups are cache misses.
            if let Some(ahead) = bucket.get(*at + PREFETCH_AHEAD) {
                let place = keyset::place_among_owned(keyset::shard_of(ahead.key), owners);
                shards[place].prefetch_for_insert(ahead.key, frozen);
                if level.counting() {
                    out.local_index.prefetch(ahead.key);
                }
            }
            // And, halfway there, the frozen records, now that where they begin is loaded,
            // if the insertion is to look a new key up in the frozen set too.
            if let Some(nearer) = bucket
                .get(*at + PREFETCH_AHEAD / 2)
                .filter(|_| frozen == FrozenLookUp::Needed)
            {
                let place = keyset::place_among_owned(keyset::shard_of(nearer.key), owners);
                shards[place].prefetch_frozen(nearer.key);
            }
            // Room for what the candidate may add, taken before its key goes in: a new position
            // (and the merge's copy of it), or, counting, a further way in.
            let (new_room, extra_room) = (
                MERGED_BYTES + c.checks.1 as usize * std::mem::size_of::<Move>(),
                MERGED_EXTRA_BYTES,
            );
            if !out_has_room(out, c.checks.1 as usize, level.counting(), &mut allowance)
                || allowance < new_room + extra_room
            {
                out.resume_at = Some((batch, next));
                return start_allowance - allowance;
            }
            let shard = &mut shards[keyset::place_among_owned(keyset::shard_of(c.key), owners)];
            match shard.insert_with(c.key, &mut allowance, cram, frozen) {
                Err(()) => {
                    out.resume_at = Some((batch, next));
                    return start_allowance - allowance;
                }
                Ok(true) => {
                    // Only a repeat goes without its position, and the first copy, with
                    // it, comes before (see `Repeats`).
                    debug_assert!(c.checks.1 > 0, "a candidate without a position is new");
                    if level.counting() {
                        out.local_index.insert(c.key, out.new.len() as u32);
                        out.level_keys.insert(c.key);
                    }
                    let (start, len) = c.checks;
                    let checks = &e.checks[start as usize..(start + len) as usize];
                    out.new.push(NewPosition {
                        order: c.order,
                        link: c.link,
                        paths: c.paths,
                        packed: c.packed,
                        checks: (out.checks.len() as u32, len),
                    });
                    out.checks.extend_from_slice(checks);
                    allowance -= new_room;
                }
                Ok(false) if level.counting() => {
                    if let Some(local) = out.local_index.get(c.key) {
                        allowance -= extra_room;
                        out.extra.push((local, c.link));
                        let paths = &mut out.new[local as usize].paths;
                        *paths = paths.saturating_add(c.paths).min(level.cap);
                    }
                }
                Ok(false) => {}
            }
            *at += 1;
        }
    }
    debug_assert!(
        next.iter()
            .zip(expanded)
            .all(|(&at, e)| at == e.buckets[owner].len()),
        "every candidate is inserted"
    );
    start_allowance - allowance
}

/// Makes room in an owner's vectors for one more new position with `checks` checks, or
/// (`counting`) a further way in, out of `allowance`; false if it does not fit.
fn out_has_room(out: &mut Inserted, checks: usize, counting: bool, allowance: &mut usize) -> bool {
    if !room_in(&mut out.new, 1, allowance) || !room_in(&mut out.checks, checks, allowance) {
        return false;
    }
    if !counting {
        return true;
    }
    if !room_in(&mut out.extra, 1, allowance) {
        return false;
    }
    // The index doubles: while its entries move, the old table and the new exist together.
    let needed = out.local_index.room_needed();
    if needed > 0 {
        if needed > *allowance {
            return false;
        }
        *allowance -= out.local_index.grow();
    }
    true
}

/// Keys the threads have made candidates of on the current level, in a small lossy table that
/// all of them share. The key set learns a level's keys only when the owners insert them, so a
/// position met twice on a level (two move orders from parents near or far apart) would
/// otherwise be played, tested and packed twice, the second copy dropped by its owner
/// (forest-06-10_97: 400 K of its 1.9 M children). A copy found here after the first goes on
/// unplayed (counting, as a further way in). A copy missed (overwritten, or looked up before
/// the other thread noted it) is only played again.
///
/// Each slot keeps the candidate's order and a check word, the order XORed with a tag of the
/// key and the level's stamp, and only a copy that comes after the one noted is a repeat: the
/// copy noted was pushed with its position, so the first copy of every key, which its owner
/// meets first, has one, whichever thread noted what and when. The two words are written
/// one after the other without a lock: a slot read while another thread rewrites it (one
/// write's order, another's check) verifies for no key but by a 64-bit accident, and two
/// notes of one key with different orders never verify as each other. (With a table a thread,
/// the copies met on the other thread, 171 K on forest-06-10_97 at two threads, were all played
/// twice.)
struct Repeats {
    /// Two words a slot: the order, then the order XORed with the tag.
    words: ZeroedTable<u64>,
    /// The slots in use on the current slice, less one (see `fit`).
    mask: usize,
}

impl Repeats {
    const SLOTS: usize = 1 << 16;
    /// Memory the table takes (two words a slot).
    const BYTES: usize = 2 * Self::SLOTS * 8;
    const MIN_SLOTS: usize = 1 << 10;

    /// The pages are provided at once, as slots are read before they are written (see
    /// [`ZeroedTable::new_populated`]; gold_only_5 at two threads: 1,042 page faults with the
    /// table taken lazily, 501 with it provided).
    fn new() -> Repeats {
        Repeats {
            words: ZeroedTable::new_populated(2 * Self::SLOTS).expect("a 1 MB repeats table"),
            mask: Self::SLOTS - 1,
        }
    }

    /// Uses only as many slots as a slice of `positions` positions needs (some eight
    /// children each, the slots in use a quarter full at most). The whole table, read at
    /// random, does not stay in a core's own cache beside the key set, and on a long problem
    /// of narrow levels its misses were half the expansion's look-ups at two threads (寿限無
    /// 19447: `Expansion::resolve` 1,807 -> 846 samples, the run's CPU 6% less); a few
    /// kilobytes do. The stamp in each tag keeps slots left from other levels from matching.
    /// Called between slices, when no thread reads the table.
    fn fit(&mut self, positions: usize) {
        self.mask = (positions * 32)
            .next_power_of_two()
            .clamp(Self::MIN_SLOTS, Self::SLOTS)
            - 1;
    }

    /// The slot's first word.
    #[inline]
    fn slot(&self, key: u128) -> usize {
        2 * ((key >> 64) as usize & self.mask)
    }

    /// What a slot keeps of `key` on the level stamped `stamp`: a key noted on another level
    /// (or none, all zero) matches only by a 64-bit accident.
    #[inline]
    fn tag(key: u128, stamp: u64) -> u64 {
        key as u64 ^ stamp.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    /// Whether a candidate of `key` came before `order` on the level stamped `stamp`.
    #[inline]
    fn met_before(&self, key: u128, stamp: u64, order: u64) -> bool {
        let at = self.slot(key);
        let words = &self.words.as_atomic()[at..at + 2];
        let noted = words[0].load(Ordering::Relaxed);
        let check = words[1].load(Ordering::Relaxed);
        noted ^ check == Self::tag(key, stamp) && noted < order
    }

    /// Starts loading `key`'s slot, to be read and perhaps written (see `prefetch_write`).
    #[inline]
    fn prefetch(&self, key: u128) {
        crate::search::machine::prefetch_write(&self.words.as_slice()[self.slot(key)]);
    }

    #[inline]
    fn note(&self, key: u128, stamp: u64, order: u64) {
        let at = self.slot(key);
        let words = &self.words.as_atomic()[at..at + 2];
        words[0].store(order, Ordering::Relaxed);
        words[1].store(order ^ Self::tag(key, stamp), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::bfs::crew;
    use crate::search::bfs::expand_level as expand_on_one_thread;
    use crate::search::helpmate::Interrupt;
    use crate::shogi::{Position, RuleSet};

    /// What a level came to, comparable.
    #[derive(PartialEq)]
    enum Outcome {
        Mates(Vec<(u32, Move, Option<Move>)>, u32),
        Next {
            packed: Vec<PackedPosition>,
            checks: Vec<Move>,
            ends: Vec<u32>,
            counts: Vec<u32>,
            first: Vec<Link>,
            extra: Vec<(u32, Link)>,
        },
        Neither,
    }

    fn outcome(o: LevelOutcome) -> Outcome {
        match o {
            LevelOutcome::Mates { mates, count } => Outcome::Mates(
                mates.iter().map(|m| (m.parent, m.check, m.reply)).collect(),
                count,
            ),
            LevelOutcome::Next {
                next,
                counts,
                edges,
            } => Outcome::Next {
                // By child, as the level graph keeps them (a stable sort: the ways into one
                // child stay in the order found).
                extra: {
                    let mut extra = edges.extra;
                    extra.sort_by_key(|&(child, _)| child);
                    extra
                },
                packed: next.packed,
                checks: next.checks,
                ends: next.ends,
                counts,
                first: edges.first,
            },
            _ => Outcome::Neither,
        }
    }

    /// Level after level of `sfen`, the threaded expansion (`threads`, slices and batches as
    /// given) must give what one thread gives: the same positions in the same order, with the
    /// same first and further ways in, the same counts, the same mates. Returns the positions
    /// the levels held.
    fn same_levels(
        sfen: &str,
        threads: usize,
        slice: usize,
        batch: Option<usize>,
        cap: u32,
    ) -> usize {
        let root = Position::from_sfen(sfen).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let dead = DeadCache::new();
        // Narrow slices go to a crew, wide ones to rayon, as in a pass.
        let crew_shared = crew::Shared::default();
        pool.in_place_scope(|scope| {
            let mut crew = crew::Crew::new(scope, &crew_shared, threads - 1);
            let mut workers = Workers::new(&pool, &dead, Some(&mut crew));
            compare_levels(&mut workers, &root, &dead, (slice, batch, cap), threads)
        })
    }

    /// `same_levels`' comparison, level after level, with `workers`.
    fn compare_levels(
        workers: &mut Workers,
        root: &Position,
        dead: &DeadCache,
        (slice, batch, cap): (usize, Option<usize>, u32),
        threads: usize,
    ) -> usize {
        let mut pipeline = Pipeline::new();
        let (mut alone, mut shared) = (KeySet::new(), KeySet::new());
        for seen in [&mut alone, &mut shared] {
            seen.insert(root.key(), usize::MAX, false).unwrap();
        }
        let mut level = LevelPositions::root(root, RuleSet::PLAIN);
        let mut counts = vec![1];
        let stop = AtomicBool::new(false);
        let mut positions = 0;
        for depth in 0.. {
            positions += level.len();
            let this_level = Level {
                positions: &level,
                slice,
                batch,
                counts: &counts,
                cap,
                selfmate: false,
                rules: RuleSet::PLAIN,
                interrupt: Interrupt {
                    stop: &stop,
                    deadline: None,
                    mate_elsewhere: None,
                },
                held: 0,
            };
            let mut nodes = (0, 0);
            let one = expand_on_one_thread(
                &mut alone,
                (dead, &mut pipeline),
                &this_level,
                &mut nodes.0,
                usize::MAX,
                &mut || 0,
                &mut |_| {},
            );
            let many = expand_level(
                workers,
                &mut shared,
                &this_level,
                &mut nodes.1,
                usize::MAX,
                &mut || 0,
                &mut |_| {},
            );
            let (one, many) = (outcome(one), outcome(many));
            assert!(
                one == many,
                "{threads} threads, level {depth}: not as one thread"
            );
            match one {
                Outcome::Next {
                    packed,
                    checks,
                    ends,
                    counts: next_counts,
                    ..
                } if !packed.is_empty() => {
                    level = LevelPositions {
                        packed,
                        checks,
                        ends,
                    };
                    counts = next_counts;
                }
                Outcome::Mates(..) => return positions,
                _ => panic!("level {depth}: no mate"),
            }
        }
        unreachable!()
    }

    #[test]
    fn an_insertion_short_of_memory_freezes_crams_overdraws_then_gives_up() {
        let estimate = 40 << 20;
        let quarter = estimate / OVERDRAFT_DIVISOR;
        let mut resorts = Resorts::for_level(estimate);
        // Memory from the caller comes first, and spends no resort.
        assert_eq!(resorts.next(1 << 20, false), Resort::More(1 << 20));
        // Owners done early left room: insert again before anything else.
        assert_eq!(resorts.next(0, true), Resort::Again);
        assert!(!resorts.froze && !resorts.cramming);
        assert_eq!(resorts.next(0, false), Resort::Freeze);
        assert_eq!(resorts.next(0, false), Resort::Again);
        assert!(resorts.froze && resorts.cramming);
        assert_eq!(resorts.next(0, false), Resort::Overdraw(quarter));
        assert_eq!(resorts.next(0, false), Resort::GiveUp);
        // The next slice may freeze and cram again, but the level's overdraft is spent.
        resorts.new_slice();
        assert_eq!(resorts.next(0, false), Resort::Freeze);
        assert_eq!(resorts.next(0, false), Resort::Again);
        assert_eq!(resorts.next(0, false), Resort::GiveUp);
        // A wide level's overdraft is capped.
        let mut wide = Resorts::for_level(1 << 30);
        wide.froze = true;
        wide.cramming = true;
        assert_eq!(wide.next(0, false), Resort::Overdraw(OVERDRAFT_MOST));
    }

    #[test]
    fn threaded_levels_are_one_threads_levels() {
        // fmrs_forest-05-13_57: levels of up to 3,205 positions, many of them reached from
        // several parents; fmrs_test_solve_16: levels of up to 17,321 (merged block by block
        // on all the threads); fm3_gold_only_9 and _5: two solutions each, mates on several
        // parents of the mate level.
        let problems = [
            (
                "ggssn2p1/lgssn3l/+R8/5N2k/4bn3/3l5/9/2g4L1/KBr3PP1 b 11P4p 1",
                40_000,
            ),
            (
                "9/9/9/9/7bb/1ppssssp1/K5k2/+RL1l1gg2/rL3gg1+l b 4N15P 1",
                100_000,
            ),
            ("9/9/9/4G4/4G4/4G4/4G4/9/4k4 b 2r2b4s4n4l18p 1", 0),
            ("9/9/9/3G1G3/4G4/4G4/9/4k4/9 b 2r2b4s4n4l18p 1", 0),
        ];
        for (sfen, at_least) in problems {
            for cap in [1, 1000] {
                for (threads, slice, batch) in
                    [(2, 64, Some(1)), (3, 500, Some(3)), (2, 1 << 16, None)]
                {
                    let positions = same_levels(sfen, threads, slice, batch, cap);
                    assert!(positions > at_least, "{positions}");
                }
            }
        }
    }

    /// One thread rewrites a slot with two keys in turn while another reads it: a read that
    /// mixes one write's order with the other's check word must not verify. Key A is only ever
    /// noted numbered 10, so a copy numbered 7 is never a repeat of it; key B, noted as 5,
    /// shares A's slot. Storing the tag and the order as they are (no XOR) failed this in five
    /// runs out of five on two CPUs.
    #[test]
    fn a_slot_rewritten_meanwhile_never_verifies_for_another_key() {
        let repeats = Repeats::new();
        let high = 0x0123_4567_89ab_cdefu128 << 64;
        let (a, b) = (high | 0x1111, high | 0x2222);
        let stamp = 3;
        let stop = AtomicBool::new(false);
        let (false_repeats, seen_a) = std::thread::scope(|scope| {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    repeats.note(a, stamp, 10);
                    repeats.note(b, stamp, 5);
                }
            });
            // Reads go on until the writer has been seen at work (on a busy machine it may
            // start late), for a few seconds at most.
            let (mut false_repeats, mut seen_a, mut reads) = (0, false, 0);
            let start = Instant::now();
            while (reads < 4_000_000 || !seen_a) && start.elapsed().as_secs() < 5 {
                false_repeats += usize::from(repeats.met_before(a, stamp, 7));
                seen_a |= repeats.met_before(a, stamp, 11);
                reads += 1;
            }
            stop.store(true, Ordering::Relaxed);
            (false_repeats, seen_a)
        });
        assert!(seen_a, "the reader saw key A's note");
        assert_eq!(false_repeats, 0);
    }

    #[test]
    fn a_repeat_is_only_a_later_copy_on_the_same_level() {
        let repeats = Repeats::new();
        let key = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
        let (level, order) = (7, (3u64 << ORDER_SHIFT) | 12);
        assert!(!repeats.met_before(key, level, order + 1));
        repeats.note(key, level, order);
        assert!(repeats.met_before(key, level, order + 1));
        assert!(repeats.met_before(key, level, (4 << ORDER_SHIFT) | 1));
        // The copy noted itself, and copies that come before it, are not repeats.
        assert!(!repeats.met_before(key, level, order));
        assert!(!repeats.met_before(key, level, (2 << ORDER_SHIFT) | 40));
        // Another level, or another key in the same slot, is not a repeat.
        assert!(!repeats.met_before(key, level + 1, order + 1));
        assert!(!repeats.met_before(key ^ 1, level, order + 1));
        // A newer key takes the slot: the older one is forgotten, never confused with it.
        let other = key ^ (1 << 3);
        repeats.note(other, level, order + 5);
        assert!(repeats.met_before(other, level, order + 6));
        assert!(!repeats.met_before(key, level, order + 6));
    }
}
