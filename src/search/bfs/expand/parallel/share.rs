//! Phase 1 of a threaded level: one thread's share of a slice's expansion, its candidates
//! sorted into their owners' buckets.

use super::batches::Batches;
use super::repeats::Repeats;
use super::slice::{Candidate, Expanded, Inserted, ORDER_SHIFT};
use crate::search::bfs::expand::children::{ChildSink, DeadCache, Looking, NewChild};
use crate::search::bfs::keys::{self, KeySet};
use crate::search::bfs::levels::level::{prefetch_tail, Level, Link};
use crate::search::interrupt::POLL_INTERVAL;
use crate::shogi::{Move, PackedPosition};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What the shares of phase 1 read (and the one flag they set).
pub(super) struct Read<'a> {
    pub(super) seen: &'a KeySet,
    pub(super) dead: &'a DeadCache,
    pub(super) repeats: &'a Repeats,
    pub(super) stamp: u64,
    /// Set once a share finds a mate (see `expand_level`).
    pub(super) mate_found: &'a AtomicBool,
    /// What the owners have inserted of this level so far (earlier slices).
    pub(super) inserted: &'a [Inserted],
}

/// Phase 1 for one thread's share of a slice: batch after batch, until none is left (or,
/// looking for the first mate only, one is found).
pub(super) fn expand_share(read: &Read, level: &Level, batches: &Batches, out: &mut Expanded) {
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
        filtered: level.counting() && inserted.iter().any(|o| !o.new.is_empty()),
        owners,
        numbers: Numbers::new(),
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
            let first = range.start;
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
                    // The owners insert a share's candidates batch by batch, so those of the
                    // batch before (some waiting for the frozen keys, see `Deferred`) all go
                    // in before this batch's first position is resolved.
                    let Ok(()) = if index == first {
                        pipeline.resolve_rest(dead, &mut sink)
                    } else {
                        pipeline.resolve_previous(dead, &mut sink)
                    };
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
            let Ok(()) = pipeline.resolve_rest(dead, &mut sink);
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
    /// Counting, with new positions inserted on earlier slices of the level: a known child's
    /// look-up then reads its owner's filter of them (`known`), loaded with its other slots.
    filtered: bool,
    owners: usize,
    numbers: Numbers,
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
        if self.filtered {
            self.inserted[keys::owner_of_key(key, self.owners)]
                .level_keys
                .prefetch(key);
        }
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

    /// Candidates are numbered by parent (`Numbers`), and the owners put each child's
    /// further ways in back in order (`merge`).
    #[inline]
    fn defers_frozen(&self) -> bool {
        true
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
    /// keeps no other), so it need not be played: its candidate carries no position. Before
    /// any slice of the level inserted a new position (`filtered` false) no index holds one,
    /// and the owner's filter, a cold line, is not read.
    #[inline]
    fn known(&mut self, key: u128, link: Link, paths: u32) {
        if !self.filtered {
            return;
        }
        let owner = &self.inserted[keys::owner_of_key(key, self.owners)];
        if owner.level_keys.may_hold(key) && owner.local_index.get(key).is_some() {
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
        (u64::from(parent) << ORDER_SHIFT) | self.numbers.next_of(parent)
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
        let bucket = &mut self.buckets[keys::owner_of_key(key, self.owners)];
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
        self.numbers.taken();
    }
}

/// How many children of each of the last few parents have been numbered. With the frozen
/// look-ups deferred (`ChildSink::defers_frozen`), the children of up to three parents come
/// in interleaved: a parent's children found known as it is resolved, then those looked up
/// in the frozen keys two parents later. Each parent's are numbered in the order they come,
/// as one thread would number them without deferring. The parents in play are three
/// consecutive positions of one batch (a batch's candidates are all in before the next
/// batch's are made), so a slot for each parent modulo four never serves two at once.
struct Numbers {
    /// (parent, children numbered so far).
    slots: [(u32, u64); 4],
    /// The slot `next_of` answered from last.
    last: usize,
}

impl Numbers {
    fn new() -> Numbers {
        Numbers {
            slots: [(u32::MAX, 0); 4],
            last: 0,
        }
    }

    /// The number the next child of `parent` gets (not taken until `taken`).
    #[inline]
    fn next_of(&mut self, parent: u32) -> u64 {
        self.last = parent as usize % self.slots.len();
        let slot = &mut self.slots[self.last];
        if slot.0 != parent {
            *slot = (parent, 0);
        }
        slot.1
    }

    /// The number `next_of` gave was taken.
    #[inline]
    fn taken(&mut self) {
        self.slots[self.last].1 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the frozen look-ups deferred, a parent's children come in two runs, the second
    /// after the next two parents' first: each parent's still get 0, 1, 2, ... in the order
    /// they come.
    #[test]
    fn each_parent_numbers_its_children_in_turn_while_three_interleave() {
        let mut numbers = Numbers::new();
        let mut given: Vec<Vec<u64>> = vec![Vec::new(); 20];
        let mut take = |numbers: &mut Numbers, parent: u32, children: usize| {
            for _ in 0..children {
                given[parent as usize].push(numbers.next_of(parent));
                numbers.taken();
            }
        };
        for parent in 5..20u32 {
            // Found known as the parent is resolved...
            take(&mut numbers, parent, parent as usize % 3);
            // ...and looked up in the frozen keys two parents later.
            if parent >= 7 {
                take(&mut numbers, parent - 2, 2);
            }
        }
        take(&mut numbers, 18, 2);
        take(&mut numbers, 19, 2);
        for (parent, numbers) in given.iter().enumerate().skip(5) {
            let expected: Vec<u64> = (0..(parent as u64 % 3 + 2)).collect();
            assert_eq!(*numbers, expected, "parent {parent}");
        }
    }
}
