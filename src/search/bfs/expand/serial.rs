//! One level expanded on one thread (the threads' way is `parallel/`, with the same result).

use super::children::{self, DeadCache, Looking, Pipeline};
use crate::search::bfs::keys::{self, KeySet};
use crate::search::bfs::levels::level::{
    Level, LevelEdges, LevelOutcome, LevelPositions, Link, Mate,
};
use crate::search::bfs::room::LastResorts;
use crate::search::interrupt::{Interrupt, POLL_INTERVAL};
use std::time::Instant;

/// The most positions a one-thread level makes room for before it starts (see
/// `expand_level`).
pub(crate) const NEXT_LEVEL_ROOM: usize = 4096;
/// How many positions ahead of the one expanded the next parent starts loading: a position's
/// expansion takes about as long as a load from memory.
const PARENT_AHEAD: usize = 2;

/// The next level as one thread builds it.
pub(crate) struct NextLevel<'a> {
    pub(crate) seen: &'a mut KeySet,
    pub(crate) next: LevelPositions,
    pub(crate) counts: Vec<u32>,
    pub(crate) edges: LevelEdges,
    /// Counting: where each new position's key went in `next`.
    pub(crate) index: keys::KeyMap<u32>,
    pub(crate) counting: bool,
    pub(crate) cap: u32,
    /// Bytes held besides the key set and this struct's vectors.
    pub(crate) held: usize,
    pub(crate) budget: usize,
    pub(crate) more_memory: &'a mut dyn FnMut() -> usize,
    pub(crate) resorts: LastResorts,
    /// Polled during a freeze.
    pub(crate) interrupt: Interrupt<'a>,
}

impl NextLevel<'_> {
    /// Bytes of the level being built (capacities, not lengths).
    pub(crate) fn bytes(&self) -> usize {
        self.next.bytes()
            + self.counts.capacity() * 4
            + self.edges.bytes()
            + self.index.capacity() * 32
    }

    pub(crate) fn used(&self) -> usize {
        self.held + self.seen.bytes() + self.bytes()
    }

    /// Asks for more memory when the budget is used up (freezing the keys once there is no
    /// more to be had); false if there is none.
    pub(crate) fn within_budget(&mut self) -> bool {
        while self.used() > self.budget {
            match (self.more_memory)() {
                // (Only the freeze: filling the shards further makes no room for the rest.)
                0 if !self.resorts.froze => {
                    self.resorts.take(self.seen, self.interrupt);
                }
                0 => return false,
                extra => self.budget += extra,
            }
        }
        true
    }
}

impl children::ChildSink for NextLevel<'_> {
    type Stop = ();

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

    /// The table is looked at again: a key goes in as soon as its position is added (and the
    /// set may freeze then), so a copy added since the first look is there.
    #[inline]
    fn is_known_after_all(&mut self, key: u128, link: Link, paths: u32) -> bool {
        self.is_known(key, link, paths, false)
    }

    #[inline]
    fn is_known(&mut self, key: u128, link: Link, paths: u32, frozen_apart: bool) -> bool {
        if !self.seen.first_look(key, frozen_apart) {
            return false;
        }
        // Counting: another shortest way into a position of the next level?
        if self.counting {
            if let Some(&child) = self.index.get(&key) {
                self.edges.extra.push((child, link));
                let c = &mut self.counts[child as usize];
                *c = c.saturating_add(paths).min(self.cap);
            }
        }
        true
    }

    #[inline]
    fn add(&mut self, child: children::NewChild) -> Result<(), ()> {
        let (key, link, paths) = (child.key, child.link, child.paths);
        loop {
            let others = self.held + self.bytes();
            let allowance = self.budget.saturating_sub(others);
            match self.seen.insert(key, allowance, self.resorts.cramming) {
                Ok(_) => break,
                Err(()) => match (self.more_memory)() {
                    0 if !self.resorts.take(self.seen, self.interrupt) => return Err(()),
                    0 => {}
                    extra => self.budget += extra,
                },
            }
        }
        self.next.push(child.packed, child.checks);
        self.edges.first.push(link);
        if self.counting {
            self.index.insert(key, self.counts.len() as u32);
            self.counts.push(paths);
        }
        Ok(())
    }
}

/// Expands one level on this thread. The children of each position are resolved after the
/// next position's are generated (see `children.rs`), so that their look-ups overlap. `dead` and
/// `pipeline` are the pass's, kept from level to level.
pub(crate) fn expand_level(
    seen: &mut KeySet,
    (dead, pipeline): (&DeadCache, &mut Pipeline),
    level: &Level,
    nodes: &mut u64,
    budget: usize,
    more_memory: &mut dyn FnMut() -> usize,
    tick: &mut dyn FnMut(u64),
) -> LevelOutcome {
    let counting = level.counting();
    // Room for a next level as wide as this one (up to a bound): grown from nothing,
    // a narrow level's vectors and index were reallocated some six times each, level after
    // level (寿限無 19447: 3% of a one-thread pass in the allocator and rehashing). Wide levels
    // still grow, and every level is trimmed to its size once made.
    let room = level.positions.len().min(NEXT_LEVEL_ROOM);
    let mut sink = NextLevel {
        seen,
        next: LevelPositions {
            packed: Vec::with_capacity(room),
            checks: Vec::with_capacity(4 * room),
            ends: Vec::with_capacity(room),
        },
        counts: Vec::with_capacity(if counting { room } else { 0 }),
        edges: LevelEdges {
            first: Vec::with_capacity(room),
            extra: Vec::new(),
        },
        index: keys::KeyMap::with_capacity_and_hasher(
            if counting { room } else { 0 },
            Default::default(),
        ),
        counting,
        cap: level.cap,
        held: level.held,
        budget,
        more_memory,
        resorts: LastResorts::default(),
        interrupt: level.interrupt,
    };
    let mut mates: Vec<Mate> = Vec::new();
    pipeline.reset();
    // Polled each time the pass's node count passes a multiple of the interval: counted from
    // each level's start, a level of fewer nodes never polled (a stop on 森茂 1965 waited up
    // to 100 ms for a wider level).
    let mut next_poll = (*nodes / POLL_INTERVAL + 1) * POLL_INTERVAL;
    for index in 0..level.positions.len() {
        level.positions.prefetch_one(index + PARENT_AHEAD);
        *nodes += pipeline.current().generate(
            level.parent(index),
            (sink.seen, dead, &sink),
            &mut mates,
            Looking {
                selfmate: level.selfmate,
                rules: level.rules,
                first_mate_only: !counting,
                mate_elsewhere: false,
            },
        );
        if !mates.is_empty() && !counting {
            break;
        }
        if mates.is_empty() && pipeline.resolve_previous(dead, &mut sink).is_err() {
            return LevelOutcome::Memory;
        }
        pipeline.advance();
        if *nodes >= next_poll {
            next_poll = (*nodes / POLL_INTERVAL + 1) * POLL_INTERVAL;
            tick(*nodes);
            if let Some(abort) = level.interrupt.check(Instant::now()) {
                return LevelOutcome::Aborted(abort);
            }
            if !sink.within_budget() {
                return LevelOutcome::Memory;
            }
        }
    }
    if !mates.is_empty() {
        let count = if counting {
            Mate::count(&mates, level.cap)
        } else {
            1
        };
        return LevelOutcome::Mates { mates, count };
    }
    if pipeline.resolve_rest(dead, &mut sink).is_err() {
        return LevelOutcome::Memory;
    }
    LevelOutcome::Next {
        next: sink.next,
        counts: sink.counts,
        edges: sink.edges,
    }
}
