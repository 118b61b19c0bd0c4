//! One level of the breadth-first pass on several threads, with the same result whatever the
//! number of threads and however they are scheduled.
//!
//! 1. **Expand** (in parallel over contiguous chunks of a slice of the level): each position's
//!    checks and their evasions are generated; an evasion whose key the key set already holds
//!    is dropped — the set and the owners' indexes are only read in this phase — unless,
//!    counting solutions, an earlier slice of this level found it (then it goes to its owner as
//!    a further way in, unplayed); so is one the same thread has already made a candidate of
//!    on this level (see `Repeats`); the others become candidates, packed, numbered in the order a
//!    single thread would have met them and sorted into buckets by the thread that owns their
//!    key's shard. Mates are collected the same way.
//! 2. **Insert** (in parallel over owners): each owner takes its buckets chunk by chunk, in that
//!    order, and inserts the keys into its own shards, so no two threads touch one shard and no
//!    lock is taken; the first candidate of a key wins, as it would for one thread.
//!
//! Slice by slice (so that the candidates held at once stay bounded), then:
//!
//! 3. **Merge**: the new positions of all owners, ordered by their numbers, make the next level
//!    — the very order one thread would have produced.

use super::expand::{ChildSink, DeadCache, NewChild, Pipeline};
use super::keyset::{self, KeySet, Shard};
use super::{Level, LevelEdges, LevelOutcome, LevelPositions, Link};
use crate::search::helpmate::{Abort, POLL_INTERVAL};
use crate::shogi::{Move, PackedPosition};
use parking_lot::Mutex;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// An evasion leading to a position not seen on earlier levels.
#[derive(Clone, Copy)]
struct Candidate {
    /// Where a single thread would have met it: chunk number in the high bits, then the
    /// candidate's number within the chunk.
    order: u64,
    key: u128,
    link: Link,
    paths: u32,
    /// The position it leads to (packed here, where the parent is at hand: most candidates
    /// are new).
    packed: PackedPosition,
    /// Its checks: where they start in the chunk's `Expanded::checks`, and how many.
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

const ORDER_SHIFT: u32 = 40;
/// Positions expanded before their candidates are inserted: bounds the candidates held at once
/// (about two a position, 130 bytes each: some 17 MB).
pub(crate) const SLICE_POSITIONS: usize = 1 << 16;
/// Chunks a thread expands on a level (about), and on a level of at least `WIDE_LEVEL`
/// positions: a thread done with its chunks waits for the others' last, and on a wide level one
/// chunk is milliseconds of work (forest-06-10_97 at two threads: one thread waited 0.045 s of
/// the 0.30 s expanding; with 16 chunks a thread, `kyozume bench` 0.474 -> 0.458 s near,
/// 0.520 -> 0.499 s far, 1965 and 2571 unchanged).
const CHUNKS_A_THREAD: usize = 4;
const CHUNKS_A_THREAD_WIDE: usize = 16;
const WIDE_LEVEL: usize = 4096;
/// How many candidates ahead an owner starts loading key-set slots.
const PREFETCH_AHEAD: usize = 8;

/// What a chunk's expansion produced.
#[repr(align(128))]
#[derive(Default)]
struct Expanded {
    buckets: Vec<Vec<Candidate>>,
    /// The candidates' checks.
    checks: Vec<Move>,
    mates: Vec<(u32, Move, u32)>,
    nodes: u64,
    abort: Option<Abort>,
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
    /// Where its insertion of the current slice is to go on: (chunk, index in that chunk's
    /// bucket); `None` once the slice is done. An owner that stopped for want of memory resumes
    /// there; one that had finished must not insert its candidates again (counting, a second
    /// pass would add every edge twice).
    resume_at: Option<(usize, usize)>,
    /// It stopped because the search was stopped.
    interrupted: bool,
    local_index: keyset::KeyMap<u32>,
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
    /// One for each thread of the pool (made at the first level).
    repeats: Vec<Mutex<Repeats>>,
    /// Levels expanded so far: each level's stamp in `repeats`.
    levels: u64,
}

impl<'a> Workers<'a> {
    pub(super) fn new(pool: &'a rayon::ThreadPool, dead: &'a DeadCache) -> Workers<'a> {
        Workers {
            pool,
            dead,
            expanded: Vec::new(),
            inserted: Vec::new(),
            repeats: Vec::new(),
            levels: 0,
        }
    }

    /// Frees the vectors kept from level to level (they are not counted in the pass's memory).
    pub(super) fn release(&mut self) {
        self.expanded = Vec::new();
        self.inserted = Vec::new();
        self.repeats = Vec::new();
    }
}

impl Expanded {
    /// Ready for a new chunk: empty, keeping its vectors' room.
    fn clear(&mut self, owners: usize) {
        self.buckets.resize_with(owners, Vec::new);
        self.buckets.iter_mut().for_each(Vec::clear);
        self.checks.clear();
        self.mates.clear();
        self.nodes = 0;
        self.abort = None;
    }
}

impl Inserted {
    /// Ready for a new level: empty, keeping its vectors' room.
    fn clear(&mut self) {
        self.new.clear();
        self.checks.clear();
        self.extra.clear();
        self.resume_at = None;
        self.interrupted = false;
        self.local_index.clear();
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
    } = workers;
    *levels += 1;
    let stamp = *levels;
    let owners = pool.current_num_threads().max(1);
    if repeats.len() < owners {
        repeats.resize_with(owners, || Mutex::new(Repeats::new()));
    }
    let dead: &DeadCache = dead;
    // Slices bound the candidates held at once; several chunks a thread, so that uneven chunks
    // even out.
    let slice_len = level.slice.max(1);
    let chunks_a_thread = if level.positions.len() >= WIDE_LEVEL {
        CHUNKS_A_THREAD_WIDE
    } else {
        CHUNKS_A_THREAD
    };
    let chunk_len = level
        .positions
        .len()
        .min(slice_len)
        .div_ceil(owners * chunks_a_thread)
        .max(1);
    inserted.resize_with(owners, Inserted::default);
    inserted.iter_mut().for_each(Inserted::clear);
    let mut mates: Vec<(u32, Move, u32)> = Vec::new();
    // Set once a chunk finds a mate: this is the mate level, and the other chunks need only
    // look for mates (their children would be dropped).
    let mate_found = AtomicBool::new(false);
    let mut chunks_before = 0;
    let total = level.positions.len();
    for first_index in (0..total).step_by(slice_len) {
        let slice_end = (first_index + slice_len).min(total);
        let read = Read {
            seen,
            dead,
            repeats,
            stamp,
            mate_found: &mate_found,
            inserted,
        };
        let chunks: Vec<(usize, usize)> = (first_index..slice_end)
            .step_by(chunk_len)
            .map(|start| (start, (start + chunk_len).min(slice_end)))
            .collect();
        if expanded_all.len() < chunks.len() {
            expanded_all.resize_with(chunks.len(), Expanded::default);
        }
        let expanded = &mut expanded_all[..chunks.len()];
        pool.install(|| {
            expanded
                .par_iter_mut()
                .zip(chunks.par_iter())
                .enumerate()
                .for_each(|(i, (out, &range))| {
                    let chunk = chunks_before + i;
                    expand_chunk(&read, level, chunk, range, out)
                })
        });
        let expanded: &[Expanded] = expanded;
        chunks_before += chunks.len();
        for e in expanded {
            *nodes += e.nodes;
        }
        if let Some(abort) = expanded.iter().find_map(|e| e.abort) {
            return LevelOutcome::Aborted(abort);
        }
        mates.extend(expanded.iter().flat_map(|e| e.mates.iter().copied()));
        if !mates.is_empty() {
            if !level.counting() {
                // The first mate of the level (earlier slices had none).
                return LevelOutcome::Mates {
                    mates: vec![(mates[0].0, mates[0].1)],
                    count: 1,
                };
            }
            // A mate level: only its mates matter from here on.
            continue;
        }
        // Insert: each owner its shards, its buckets in chunk order.
        for out in inserted.iter_mut() {
            out.resume_at = Some((0, 0));
        }
        let mut froze = false;
        let mut cramming = false;
        loop {
            let mut shards: Vec<Vec<&mut Shard>> = (0..owners).map(|_| Vec::new()).collect();
            for (i, shard) in seen.shards.iter_mut().enumerate() {
                shards[i % owners].push(shard);
            }
            // The memory left goes to the owners still inserting.
            let working = inserted.iter().filter(|o| o.resume_at.is_some()).count();
            let share = allowance / working.max(1);
            let cram = cramming;
            let used: Vec<usize> = pool.install(|| {
                shards
                    .into_par_iter()
                    .zip(inserted.par_iter_mut())
                    .enumerate()
                    .map(|(owner, (mut mine, out))| {
                        let memory = (share, cram);
                        insert_owned(owner, owners, &mut mine, expanded, level, memory, out)
                    })
                    .collect()
            });
            allowance = allowance.saturating_sub(used.iter().sum());
            seen.recount();
            if inserted.iter().any(|o| o.interrupted) {
                let abort = level
                    .interrupt
                    .check(Instant::now())
                    .unwrap_or(Abort::Stopped);
                return LevelOutcome::Aborted(abort);
            }
            let still_working = inserted.iter().filter(|o| o.resume_at.is_some()).count();
            if still_working == 0 {
                break;
            }
            match more_memory() {
                // What the owners now done did not use goes to the others: try again.
                0 if still_working < working && allowance > 0 => {}
                // No more memory: freeze the keys (see `KeySet::freeze`)...
                0 if !froze => {
                    froze = true;
                    allowance += seen.freeze(Some(pool));
                }
                // ...then fill the shards further before giving up.
                0 if !cramming => cramming = true,
                0 => return LevelOutcome::Memory,
                extra => allowance += extra,
            }
        }
        tick(*nodes);
    }
    if !mates.is_empty() {
        let count = mates
            .iter()
            .fold(0u32, |c, m| c.saturating_add(m.2).min(level.cap));
        return LevelOutcome::Mates {
            mates: mates.iter().map(|&(p, c, _)| (p, c)).collect(),
            count,
        };
    }

    // Merge: every owner's new positions in the order one thread would have found them.
    let mut order: Vec<(u64, u32, u32)> = inserted
        .iter()
        .enumerate()
        .flat_map(|(owner, o)| {
            o.new
                .iter()
                .enumerate()
                .map(move |(i, n)| (n.order, owner as u32, i as u32))
        })
        .collect();
    // Each owner's positions are already in order: a stable sort merges the runs.
    order.sort_by_key(|&(o, _, _)| o);
    let (next, counts, edges) = merge(pool, inserted, &order, level.counting());
    LevelOutcome::Next {
        next,
        counts,
        edges,
    }
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
        let unset = Link {
            parent: 0,
            check: Move::NULL,
            evasion: Move::NULL,
        };
        edges.extra = vec![(0, unset); starts[order.len()] as usize];
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

/// What the chunks of phase 1 read (and the one flag they set).
struct Read<'a> {
    seen: &'a KeySet,
    dead: &'a DeadCache,
    repeats: &'a [Mutex<Repeats>],
    stamp: u64,
    /// Set once a chunk finds a mate (see `expand_level_with`).
    mate_found: &'a AtomicBool,
    /// What the owners have inserted of this level so far (earlier slices).
    inserted: &'a [Inserted],
}

/// Phase 1 for one chunk of the level.
fn expand_chunk(
    read: &Read,
    level: &Level,
    chunk: usize,
    (first_index, end): (usize, usize),
    out: &mut Expanded,
) {
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
    // This thread's own: the lock is never contended.
    let repeats = &repeats[rayon::current_thread_index().unwrap_or(0) % repeats.len()];
    let positions = end - first_index;
    // About two new children a position on the long problems: room for them up front, so that
    // the buckets are not copied as they grow.
    for bucket in &mut out.buckets {
        bucket.reserve(2 * positions / owners + 16);
    }
    out.checks.reserve(3 * positions);
    let mut sink = Buckets {
        seen,
        repeats: &mut repeats.lock(),
        stamp,
        inserted,
        counting: level.counting(),
        owners,
        number: (chunk as u64) << ORDER_SHIFT,
        buckets: std::mem::take(&mut out.buckets),
        checks: std::mem::take(&mut out.checks),
    };
    let Expanded {
        mates,
        nodes,
        abort,
        ..
    } = out;
    'chunk: {
        let mut pipeline = Pipeline::new();
        let mut next_poll = POLL_INTERVAL;
        for index in first_index..end {
            let elsewhere = mate_found.load(Ordering::Relaxed);
            *nodes += pipeline.current().generate(
                level.parent(index),
                seen,
                dead,
                mates,
                !level.counting(),
                elsewhere,
            );
            if !mates.is_empty() {
                mate_found.store(true, Ordering::Relaxed);
                if !level.counting() {
                    // Nothing after the first mate of this chunk can matter.
                    break 'chunk;
                }
            } else if !elsewhere {
                let Ok(()) = pipeline.previous().resolve(dead, &mut sink);
            }
            pipeline.advance();
            if *nodes >= next_poll {
                next_poll = *nodes + POLL_INTERVAL;
                if let Some(a) = level.interrupt.check(Instant::now()) {
                    *abort = Some(a);
                    break 'chunk;
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
    /// Candidates this thread has made on this level (see `Repeats`).
    repeats: &'a mut Repeats,
    /// The level's stamp in `repeats`.
    stamp: u64,
    /// What the owners have inserted of this level so far (earlier slices).
    inserted: &'a [Inserted],
    counting: bool,
    owners: usize,
    number: u64,
    buckets: Vec<Vec<Candidate>>,
    checks: Vec<Move>,
}

impl ChildSink for Buckets<'_> {
    type Stop = std::convert::Infallible;

    #[inline]
    fn is_known(&mut self, key: u128, link: Link, paths: u32) -> bool {
        if !self.seen.contains(key) {
            if !self.repeats.met_before(key, self.stamp, self.number) {
                return false;
            }
            if self.counting {
                self.push(key, link, paths, PackedPosition::EMPTY, &[]);
            }
            return true;
        }
        // A key already in the set is never a new position; counting, it may still be another
        // way into one found earlier on this level (in an earlier slice), as its owner's index
        // of this level's keys tells (read here between insertions). Such a key has a check
        // (the set keeps no other), so it need not be played: its candidate carries no
        // position.
        if self.counting
            && self.inserted[keyset::shard_of(key) % self.owners]
                .local_index
                .contains_key(&key)
        {
            self.push(key, link, paths, PackedPosition::EMPTY, &[]);
        }
        true
    }

    #[inline]
    fn add(&mut self, child: NewChild) -> Result<(), Self::Stop> {
        self.repeats.note(child.key, self.stamp, self.number);
        self.push(
            child.key,
            child.link,
            child.paths,
            child.pos.pack(),
            child.checks,
        );
        Ok(())
    }
}

impl Buckets<'_> {
    /// Files a candidate in its owner's bucket, numbered in order.
    #[inline]
    fn push(&mut self, key: u128, link: Link, paths: u32, packed: PackedPosition, checks: &[Move]) {
        let bucket = &mut self.buckets[keyset::shard_of(key) % self.owners];
        // The buckets' lines were last read by their owners, on other threads: owning them
        // again takes a round trip between CPUs, started here a few candidates ahead.
        crate::search::prefetch_write(bucket.as_ptr().wrapping_add(bucket.len() + 4));
        crate::search::prefetch_write(self.checks.as_ptr().wrapping_add(self.checks.len() + 64));
        bucket.push(Candidate {
            order: self.number,
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

/// Phase 2 for one owner: inserts its candidates, chunk by chunk, resuming where a previous
/// call stopped for want of memory. `memory`: the bytes its shards may grow by, and whether to
/// cram them (see `Shard::insert`). Returns the bytes its shards grew by.
fn insert_owned(
    owner: usize,
    owners: usize,
    shards: &mut [&mut Shard],
    expanded: &[Expanded],
    level: &Level,
    memory: (usize, bool),
    out: &mut Inserted,
) -> usize {
    let (mut allowance, cram) = memory;
    let start_allowance = allowance;
    let Some((first_chunk, first_i)) = out.resume_at.take() else {
        return 0;
    };
    for (chunk, e) in expanded.iter().enumerate().skip(first_chunk) {
        let bucket = &e.buckets[owner];
        let from = if chunk == first_chunk { first_i } else { 0 };
        for (i, c) in bucket.iter().enumerate().skip(from) {
            if i % POLL_INTERVAL as usize == 0 && level.interrupt.check(Instant::now()).is_some() {
                out.interrupted = true;
                return start_allowance - allowance;
            }
            // Start loading the slot a few candidates ahead: the look-ups are cache misses.
            if let Some(ahead) = bucket.get(i + PREFETCH_AHEAD) {
                shards[keyset::shard_of(ahead.key) / owners].prefetch(ahead.key);
            }
            let shard = &mut shards[keyset::shard_of(c.key) / owners];
            match shard.insert(c.key, &mut allowance, cram) {
                Err(()) => {
                    out.resume_at = Some((chunk, i));
                    return start_allowance - allowance;
                }
                Ok(true) => {
                    // Only a repeat goes without its position, and the first copy, with
                    // it, comes before (see `Repeats`).
                    debug_assert!(c.checks.1 > 0, "a candidate without a position is new");
                    if level.counting() {
                        out.local_index.insert(c.key, out.new.len() as u32);
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
                }
                Ok(false) if level.counting() => {
                    if let Some(&local) = out.local_index.get(&c.key) {
                        out.extra.push((local, c.link));
                        let paths = &mut out.new[local as usize].paths;
                        *paths = paths.saturating_add(c.paths).min(level.cap);
                    }
                }
                Ok(false) => {}
            }
        }
    }
    start_allowance - allowance
}

/// Keys a thread has made candidates of on the current level, in a small lossy table. The key
/// set learns a level's keys only when the owners insert them, so a position met twice on a
/// level (two move orders from nearby parents) would otherwise be played, tested and packed
/// twice, the second copy dropped by its owner (forest-06-10_97: 400 K of its 1.9 M
/// children). A copy found here after the first goes on unplayed (counting, as a further way
/// in). A copy missed (overwritten, or met on the other thread) is only played again. Each
/// entry keeps the level's stamp and the candidate's order: a thread may take its chunks out
/// of order, and only a copy that comes after the one noted is a repeat. The threads' tables sit
/// side by side in `Workers`, each behind its lock: on lines of their own, so that one thread
/// taking its lock does not take the other's table address away from it.
#[repr(align(128))]
struct Repeats {
    slots: Vec<RepeatSlot>,
}

#[derive(Clone, Copy, Default)]
struct RepeatSlot {
    /// The key's low word, mixed with the level's stamp.
    tag: u64,
    order: u64,
}

impl Repeats {
    const SLOTS: usize = 1 << 15;

    fn new() -> Repeats {
        Repeats {
            slots: vec![RepeatSlot::default(); Self::SLOTS],
        }
    }

    #[inline]
    fn slot(key: u128) -> usize {
        (key >> 64) as usize & (Self::SLOTS - 1)
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
        let slot = &self.slots[Self::slot(key)];
        slot.tag == Self::tag(key, stamp) && slot.order < order
    }

    #[inline]
    fn note(&mut self, key: u128, stamp: u64, order: u64) {
        self.slots[Self::slot(key)] = RepeatSlot {
            tag: Self::tag(key, stamp),
            order,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_is_only_a_later_copy_on_the_same_level() {
        let mut repeats = Repeats::new();
        let key = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
        let (level, order) = (7, (3u64 << ORDER_SHIFT) | 12);
        assert!(!repeats.met_before(key, level, order + 1));
        repeats.note(key, level, order);
        assert!(repeats.met_before(key, level, order + 1));
        assert!(repeats.met_before(key, level, (4 << ORDER_SHIFT) | 1));
        // The copy noted itself, and copies that came before it (a thread may take a later
        // chunk first), are not repeats.
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
