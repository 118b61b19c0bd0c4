//! The threads' loop: step 1 (expand and claim), step 2 (rank, insert, resolve further ways
//! in), and the barriers between them.

use super::cells::{PhasedCell, Placed, Shards, EVENT_ABORT, EVENT_GIVE_BACK, EVENT_MATE, GO_ON};
use super::claims::claim_parts;
use super::lists::{Found, Later, Local};
use super::sink::Sink;
use super::Narrow;
use crate::search::bfs::expand::children::{DeadCache, Looking};
use crate::search::bfs::expand::crew::wait;
use crate::search::bfs::expand::parallel::cut_into_batches;
use crate::search::bfs::keys::{self, shards_of, FrozenLookUp, KeySet};
use crate::search::bfs::levels::level::{Line, Link, Parent};
use crate::search::interrupt::{Interrupt, POLL_INTERVAL};
use crate::shogi::RuleSet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;

/// The copies of shards grown ahead in one level hold at most this fraction (1 / n) of the key
/// set (see `begin_level`).
const AHEAD_SHARE: usize = 16;

/// What a run shares between its threads.
pub(super) struct Run<'r> {
    pub(super) narrow: &'r Narrow,
    pub(super) seen: PhasedCell<&'r mut KeySet>,
    /// The key set's shards, for each thread to insert into its own in step 2.
    pub(super) shards: Shards,
    /// Bytes each thread's shards may grow by in step 2.
    pub(super) allowance: AtomicUsize,
    /// A thread could not insert all its keys (see `Local::leftover`).
    pub(super) short: AtomicBool,
    pub(super) dead: &'r DeadCache,
    pub(super) interrupt: Interrupt<'r>,
    pub(super) cap: u32,
    /// See [`Looking::selfmate`].
    pub(super) selfmate: bool,
    pub(super) rules: RuleSet,
    pub(super) batch: Option<usize>,
    pub(super) claims_percent: usize,
    pub(super) wide: usize,
    pub(super) key_allowance: usize,
    pub(super) arrived: Line<AtomicUsize>,
    pub(super) generation: Line<AtomicU32>,
    pub(super) next_batch: Line<AtomicUsize>,
    pub(super) mate_found: Line<AtomicBool>,
    /// What the calling thread must look at when the level is expanded (`EVENT_...`), so
    /// that a level without any costs it one line to read.
    pub(super) events: Line<AtomicU8>,
    /// The next level's first edges, by place (sized at the first barrier, filled in step 2).
    pub(super) first: PhasedCell<Vec<Link>>,
    /// Where step 2 writes the places of the threads' copies.
    pub(super) placed: PhasedCell<Placed>,
    /// The level's parity and claims mask (written by the calling thread between barriers).
    pub(super) parity: AtomicUsize,
    pub(super) mask: AtomicUsize,
    pub(super) verdict: AtomicU8,
    /// A thread panicked: the others leave their barrier.
    pub(super) quit: AtomicBool,
}

/// Times the calling thread inserted keys the threads could not (for a test).
#[cfg(test)]
pub(super) static LEFTOVERS: AtomicUsize = AtomicUsize::new(0);

impl Run<'_> {
    /// Lets the helpers through the barrier, telling them whether to go on.
    pub(super) fn release(&self, verdict: u8) {
        self.verdict.store(verdict, Ordering::Relaxed);
        self.generation.0.fetch_add(1, Ordering::Release);
    }

    /// A helper's barrier: true to go on.
    pub(super) fn arrive(&self) -> bool {
        let generation = self.generation.0.load(Ordering::Acquire);
        self.arrived.0.fetch_add(1, Ordering::AcqRel);
        let mut spins = 0u32;
        while self.generation.0.load(Ordering::Acquire) == generation {
            if self.quit.load(Ordering::Relaxed) {
                return false;
            }
            wait(&mut spins);
        }
        self.verdict.load(Ordering::Relaxed) == GO_ON
    }

    /// A helper's part: the loop, as `thread`.
    pub(super) fn help(&self, thread: usize) {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loop {
            self.expand(thread);
            if !self.arrive() {
                break;
            }
            self.rank(thread);
            if !self.arrive() {
                break;
            }
        }));
        self.free_claims(thread);
        if let Err(payload) = result {
            self.quit.store(true, Ordering::Relaxed);
            std::panic::resume_unwind(payload);
        }
    }

    /// Frees the slots `thread` took in both claims tables (the loop is over).
    pub(super) fn free_claims(&self, thread: usize) {
        // SAFETY: a thread's own state, and each thread frees only its own slots.
        let local = unsafe { self.narrow.local[thread].get_mut() };
        for (claims, taken) in self.narrow.claims.iter().zip(&mut local.taken) {
            claims.free(taken);
            taken.clear();
        }
    }

    /// Step 1 for `thread`: its batches of the level, into its list of the next.
    pub(super) fn expand(&self, thread: usize) {
        let narrow = self.narrow;
        let parity = self.parity.load(Ordering::Relaxed);
        let next = parity ^ 1;
        let mask = self.mask.load(Ordering::Relaxed);
        let counting = self.cap > 1;
        // SAFETY: this thread's own state and list of the next level, which no other thread
        // reads before the barrier; the key set, the level's lists, marks and index are only
        // read in this phase.
        let local = unsafe { narrow.local[thread].get_mut() };
        let found = unsafe { narrow.found[next][thread].get_mut() };
        let seen: &KeySet = unsafe { self.seen.get() };
        let index = unsafe { narrow.index.get() };
        let lists: Vec<&Found> = narrow.found[parity]
            .iter()
            .map(|f| unsafe { f.get() })
            .collect();
        let marks = &narrow.marks[parity];
        self.begin_level(thread, (local, found), seen, index.len());
        let Local {
            pipeline,
            later,
            mates,
            taken,
            abort,
            bounds,
            bytes,
            unpolled,
            ..
        } = local;
        let claims_limit = (mask + 1) * self.claims_percent / 100 / narrow.threads;
        let mut sink = Sink {
            seen,
            claims: &narrow.claims[parity],
            mask,
            found,
            marks: &narrow.marks[next],
            later,
            taken: &mut taken[parity],
            claims_limit,
            events: &self.events.0,
            thread,
            threads: narrow.threads,
            counting,
            parent: u32::MAX,
            number: 0,
            order: 0,
        };
        let mate_found = &self.mate_found.0;
        let batches = bounds.len() - 1;
        pipeline.reset();
        let mut nodes = 0;
        // Polled every `POLL_INTERVAL` nodes of this thread's, counted across levels (a
        // narrow level is often fewer).
        let mut next_poll = POLL_INTERVAL.saturating_sub(*unpolled);
        // Batches are taken in the level's order, so each thread meets its children in
        // rising order. Looking for the first mate only, a thread that found one (or sees one
        // found) takes no further batch: the batches before have all been taken, and whoever
        // took them finishes them.
        'level: while counting || !mate_found.load(Ordering::Relaxed) {
            if self.events.0.load(Ordering::Relaxed) & EVENT_GIVE_BACK != 0 {
                break;
            }
            let batch = self.next_batch.0.fetch_add(1, Ordering::Relaxed);
            if batch >= batches {
                break;
            }
            let places = bounds[batch]..bounds[batch + 1];
            for (place, &at) in places.clone().zip(&index[places]) {
                let at = at as usize;
                let (list, entry) = (at >> 16, at & 0xffff);
                let parents = lists[list];
                let (packed, checks) = parents.positions.get(entry);
                let paths = if counting {
                    let paths = parents.paths[entry].saturating_add(marks[list].gained(entry));
                    paths.min(self.cap)
                } else {
                    1
                };
                let parent = Parent {
                    packed,
                    checks,
                    index: place as u32,
                    paths,
                    // (None on the level the narrow loop was entered with.)
                    key: parents.keys.get(entry).copied(),
                };
                let elsewhere = mate_found.load(Ordering::Relaxed);
                nodes += pipeline.current().generate(
                    parent,
                    (seen, self.dead, &sink),
                    mates,
                    Looking {
                        selfmate: self.selfmate,
                        rules: self.rules,
                        first_mate_only: !counting,
                        mate_elsewhere: elsewhere,
                    },
                );
                if !mates.is_empty() {
                    mate_found.store(true, Ordering::Relaxed);
                    self.events.0.fetch_or(EVENT_MATE, Ordering::Relaxed);
                    if !counting {
                        // Nothing after the first mate of this thread can matter.
                        break 'level;
                    }
                } else if !elsewhere {
                    let Ok(()) = pipeline.resolve_previous(self.dead, &mut sink);
                }
                pipeline.advance();
                if nodes >= next_poll {
                    next_poll = nodes + POLL_INTERVAL;
                    if let Some(a) = self.interrupt.check(Instant::now()) {
                        *abort = Some(a);
                        self.events.0.fetch_or(EVENT_ABORT, Ordering::Relaxed);
                        break 'level;
                    }
                }
            }
        }
        if mates.is_empty() && !mate_found.load(Ordering::Relaxed) {
            let Ok(()) = pipeline.resolve_rest(self.dead, &mut sink);
        }
        *unpolled = POLL_INTERVAL.saturating_sub(next_poll.saturating_sub(nodes));
        *bytes = sink.found.bytes();
        narrow.nodes[thread].0.fetch_add(nodes, Ordering::Relaxed);
    }

    /// Readies `thread`'s state and its list of the next level for a level `width` wide: the
    /// lists and claims of the level before let go of, its nearly full shards grown, its
    /// batches cut.
    fn begin_level(
        &self,
        thread: usize,
        (local, found): (&mut Local, &mut Found),
        seen: &KeySet,
        width: usize,
    ) {
        let narrow = self.narrow;
        let next = self.parity.load(Ordering::Relaxed) ^ 1;
        narrow.marks[next][thread].reset(found.len());
        found.clear();
        // The other table served the last level: nobody reads it any more.
        narrow.claims[next].free(&local.taken[next]);
        local.taken[next].clear();
        local.later.clear();
        local.extra.clear();
        local.mates.clear();
        local.abort = None;
        // Its shards that are nearly full are grown now, where the other threads take the
        // batches it does not, rather than in step 2, where they would wait for it (森茂 1965
        // at two threads: 486 of step 2's insertion runs grew a shard, 140 us each, against
        // 40 us for the others). A copy stands beside its shard's table until step 2 puts it
        // in, so the whole of it counts against the allowance meanwhile, not only what the
        // shard grows by: the shards fill up together, and copies of all of them at once
        // held the key set twice over (寿限無 限定 36511 at `USI_Hash` 256: 150 MB above the
        // pass's budget for a moment, the run's peak).
        // Nor are they all copied in one level: at most a sixteenth of the key set a level (at
        // least one shard), so that the copies never stand beside much of it (wfp-56-12
        // 2571: 25 MB above the pass's 68 for a moment, near its end). A shard grows ahead at
        // 69% and fills at 74%: narrow levels leave it tens of levels to wait its turn.
        seen.grow_ahead(
            shards_of(thread, narrow.threads, seen.shards.len()),
            self.allowance.load(Ordering::Relaxed),
            seen.bytes() / AHEAD_SHARE / narrow.threads,
            &mut local.grown_ahead,
        );
        cut_into_batches((0, width), self.batch, narrow.threads, &mut local.bounds);
        if thread == 0 {
            // The narrow loop makes many levels between the pass loop's calls.
            crate::search::memory::release_freed_tables();
        }
    }

    /// Step 2 for `thread`: the places of its live copies in the next level, the keys of
    /// its shards into the key set, its further ways in.
    pub(super) fn rank(&self, thread: usize) {
        let narrow = self.narrow;
        let threads = narrow.threads;
        let parity = self.parity.load(Ordering::Relaxed);
        let next = parity ^ 1;
        let mask = self.mask.load(Ordering::Relaxed);
        let counting = self.cap > 1;
        // SAFETY: the lists of the next level, the claims and `placed` are only read in this
        // phase (marks are atomics); the thread's own state is its own; the key set is written
        // only through `Shards::owned` (nobody reads it in this phase).
        let lists: Vec<&Found> = narrow.found[next]
            .iter()
            .map(|f| unsafe { f.get() })
            .collect();
        let marks = &narrow.marks[next];
        let local = unsafe { narrow.local[thread].get_mut() };
        let placed = unsafe { self.placed.get() };
        let mine = lists[thread];
        // A walk along each other list: how many of its live copies come before the order
        // reached in this one.
        let mut cursors: Vec<(usize, usize)> = vec![(0, 0); threads];
        let mut live_here = 0;
        for (entry, &order) in mine.orders.iter().enumerate() {
            if marks[thread].is_stale(entry) {
                continue;
            }
            let mut place = live_here;
            for (other, cursor) in cursors.iter_mut().enumerate() {
                if other == thread {
                    continue;
                }
                let list = lists[other];
                while cursor.0 < list.len() && list.orders[cursor.0] < order {
                    if !marks[other].is_stale(cursor.0) {
                        cursor.1 += 1;
                    }
                    cursor.0 += 1;
                }
                place += cursor.1;
            }
            live_here += 1;
            // SAFETY: step 2, and this live copy's own place.
            unsafe {
                placed.put(
                    place,
                    (thread as u32) << 16 | entry as u32,
                    mine.links[entry],
                )
            };
        }
        // The shards grown ahead go in first (nothing was inserted since they were copied).
        let mut allowance = self.allowance.load(Ordering::Relaxed);
        let start = allowance;
        for (shard, grown) in local.grown_ahead.drain(..) {
            allowance -= grown.bytes;
            // SAFETY: one of this thread's shards, in step 2.
            unsafe { self.shards.owned(shard, thread, threads) }.put_grown(grown);
        }
        // The keys of this thread's shards, from every list: their slots loaded as they are
        // gathered (the insertions then find them in the cache), then inserted, growing a
        // shard when full.
        local.owned_keys.clear();
        for (t, list) in lists.iter().enumerate() {
            for &entry in &list.owners[thread] {
                let entry = usize::from(entry);
                if !marks[t].is_stale(entry) {
                    let key = list.keys[entry];
                    let shard = keys::shard_of(key);
                    // SAFETY: one of this thread's shards, in step 2.
                    unsafe { self.shards.owned(shard, thread, threads) }
                        .prefetch_for_insert(key, FrozenLookUp::Needed);
                    local.owned_keys.push(key);
                }
            }
        }
        local.leftover.clear();
        for &key in &local.owned_keys {
            // SAFETY: as above.
            let shard = unsafe { self.shards.owned(keys::shard_of(key), thread, threads) };
            if shard.insert(key, &mut allowance, false).is_err() {
                local.leftover.push(key);
            }
        }
        local.grown = start - allowance;
        if !local.leftover.is_empty() {
            self.short.store(true, Ordering::Relaxed);
        }
        if !counting {
            return;
        }
        // Further ways in: copies that lost their key, and this thread's stale copies.
        let claims = &narrow.claims[parity];
        // Live copies before each entry, for the lists that have stale ones (counted once, not
        // at every look-up: a wide level has many stale copies and many further ways in).
        let Local {
            later,
            extra,
            live_before,
            ..
        } = local;
        live_before.resize_with(threads, Vec::new);
        for ((list, marks), counts) in lists.iter().zip(marks).zip(live_before.iter_mut()) {
            counts.clear();
            if marks.any_stale() {
                let mut live = 0;
                counts.push(0);
                for entry in 0..list.len() {
                    live += u32::from(!marks.is_stale(entry));
                    counts.push(live);
                }
            }
        }
        let live_before = &*live_before;
        let live = |list: usize, entries: usize| match live_before[list].get(entries) {
            Some(&live) => live as usize,
            None => entries,
        };
        let place_of = |key: u128| -> (usize, usize, usize) {
            let (order, holder, entry) = claim_parts(claims.lookup(key, mask));
            let mut place = live(holder, entry);
            for (other, list) in lists.iter().enumerate() {
                if other != holder {
                    place += live(other, list.orders.partition_point(|&o| o < order));
                }
            }
            (place, holder, entry)
        };
        let mut stale_here = Vec::new();
        if marks[thread].any_stale() {
            for entry in (0..mine.len()).filter(|&e| marks[thread].is_stale(e)) {
                stale_here.push(Later {
                    key: mine.keys[entry],
                    order: mine.orders[entry],
                    link: mine.links[entry],
                    paths: mine.paths[entry],
                });
            }
        }
        for way in later.iter().chain(&stale_here) {
            let (place, holder, entry) = place_of(way.key);
            marks[holder].gain(entry, way.paths);
            extra.push((place as u32, way.link, way.order));
        }
    }
}
