//! Breadth-first helpmate search, for long solutions.
//!
//! Iterative deepening re-walks everything above its frontier in each iteration, which for a
//! solution of thousands of plies costs far more than the frontier itself. This search expands
//! each attacker position once, level by level (a level is two plies: a check and an evasion),
//! keeping only the current and next levels as packed positions, a set of the keys seen, and per
//! position a link to its parent for rebuilding the line. The first level that contains a mate
//! gives the shortest one. Memory is bounded by a budget; past it the search gives up (reporting
//! the bound it proved) and the caller goes on with iterative deepening.

use super::helpmate::Abort;
use crate::shogi::movegen::{self, MoveList};
use crate::shogi::{Move, PackedPosition, Position};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub(crate) enum BfsOutcome {
    Mate(Vec<Move>),
    /// The reachable positions ran out without a mate.
    NoMate,
    /// Gave up: memory budget, stop or time limit. No helpmate is shorter than `lower_bound`.
    GaveUp {
        lower_bound: u32,
        reason: GiveUp,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GiveUp {
    Memory,
    /// The next level would go past the longest mate looked for.
    MaxPlies,
    Aborted(Abort),
}

/// How a position of level `k + 1` was reached from level `k`.
#[derive(Clone, Copy)]
struct Link {
    parent: u32,
    check: Move,
    evasion: Move,
}

const LINK_BYTES: usize = std::mem::size_of::<Link>();
const PACKED_BYTES: usize = std::mem::size_of::<PackedPosition>();

/// An insert-only set of 128-bit keys: 256 open-addressing tables (linear probing) chosen by the
/// key's top byte, each doubling on its own, so growing never needs twice the whole set. Zero
/// marks an empty slot; the one key that is zero is tracked on the side.
struct KeySet {
    shards: Vec<Vec<u128>>,
    lens: Vec<usize>,
    has_zero: bool,
    bytes: usize,
}

impl KeySet {
    const SHARDS: usize = 256;

    fn new() -> KeySet {
        KeySet {
            shards: vec![vec![0; 64]; Self::SHARDS],
            lens: vec![0; Self::SHARDS],
            has_zero: false,
            bytes: Self::SHARDS * 64 * 16,
        }
    }

    fn bytes(&self) -> usize {
        self.bytes
    }

    /// Inserts `key`; false if it was already there. `Err` when growing a shard would pass
    /// `budget` bytes for the whole set.
    #[inline]
    fn insert(&mut self, key: u128, budget: usize) -> Result<bool, ()> {
        if key == 0 {
            return Ok(!std::mem::replace(&mut self.has_zero, true));
        }
        let shard = (key >> 120) as usize;
        if (self.lens[shard] + 1) * 10 > self.shards[shard].len() * 7 {
            let size = self.shards[shard].len();
            if self.bytes + 2 * size * 16 > budget {
                return Err(());
            }
            self.grow(shard);
        }
        let table = &mut self.shards[shard];
        let mask = table.len() - 1;
        let mut i = key as usize & mask;
        loop {
            match table[i] {
                0 => {
                    table[i] = key;
                    self.lens[shard] += 1;
                    return Ok(true);
                }
                k if k == key => return Ok(false),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Starts loading the slot where `key` would go.
    #[inline]
    fn prefetch(&self, key: u128) {
        let table = &self.shards[(key >> 120) as usize];
        super::prefetch(&table[key as usize & (table.len() - 1)]);
    }

    fn grow(&mut self, shard: usize) {
        let old = std::mem::take(&mut self.shards[shard]);
        let mut table = vec![0u128; old.len() * 2];
        let mask = table.len() - 1;
        for k in old.iter().copied().filter(|&k| k != 0) {
            let mut i = k as usize & mask;
            while table[i] != 0 {
                i = (i + 1) & mask;
            }
            table[i] = k;
        }
        self.bytes += old.len() * 16;
        self.shards[shard] = table;
    }
}

pub(crate) struct BfsLimits<'a> {
    pub budget_bytes: usize,
    pub max_plies: u32,
    pub stop: &'a AtomicBool,
    pub deadline: Option<Instant>,
}

/// Runs the breadth-first search from `root` (attacker to move). `nodes` counts moves played;
/// `progress(lower_bound, nodes)` is called after levels, at most ten times a second, and at
/// least once a second during a long level.
pub(crate) fn search(
    root: &Position,
    limits: &BfsLimits,
    nodes: &mut u64,
    progress: &mut dyn FnMut(u32, u64),
) -> BfsOutcome {
    let mut pos = root.clone();
    // Only attacker positions are recorded: a defender position met twice costs one more
    // evasion generation, which is cheaper than remembering every one of them.
    let mut seen = KeySet::new();
    let unlimited = usize::MAX;
    let _ = seen.insert(root.key(), unlimited);
    let mut level: Vec<PackedPosition> = vec![root.pack()];
    let mut links: Vec<Vec<Link>> = vec![Vec::new()];
    let mut link_bytes = 0usize;
    let mut checks = MoveList::new();
    let mut evasions = MoveList::new();
    let mut keys: Vec<u128> = Vec::with_capacity(movegen::MAX_MOVES);
    let mut next_poll = *nodes + 4096;
    let mut last_report = Instant::now();
    for depth in 0u32.. {
        // Level `depth` holds attacker positions at ply 2 * depth; a mate found now has
        // 2 * depth + 1 plies, and none shorter exists.
        let lower_bound = 2 * depth + 1;
        if lower_bound > limits.max_plies {
            return BfsOutcome::GaveUp {
                lower_bound,
                reason: GiveUp::MaxPlies,
            };
        }
        let give_up = |reason| BfsOutcome::GaveUp {
            lower_bound,
            reason,
        };
        let mut next: Vec<PackedPosition> = Vec::new();
        let mut next_links: Vec<Link> = Vec::new();
        for (index, packed) in level.iter().enumerate() {
            pos.unpack_from(packed);
            checks.clear();
            movegen::checks(&pos, &mut checks);
            for &check in checks.iter() {
                pos.do_move(check);
                *nodes += 1;
                evasions.clear();
                movegen::evasions(&pos, &mut evasions);
                if evasions.is_empty() {
                    let mut line = rebuild(&links, depth as usize, index as u32);
                    line.push(check);
                    return BfsOutcome::Mate(line);
                }
                let others = link_bytes
                    + (level.len() + next.len()) * PACKED_BYTES
                    + next_links.len() * LINK_BYTES;
                let seen_budget = limits.budget_bytes.saturating_sub(others);
                // Keys first (their slots prefetched together); only new positions are played.
                keys.clear();
                for &evasion in evasions.iter() {
                    let key = pos.key_after(evasion);
                    seen.prefetch(key);
                    keys.push(key);
                }
                *nodes += evasions.len() as u64;
                for (&evasion, &key) in evasions.iter().zip(keys.iter()) {
                    match seen.insert(key, seen_budget) {
                        Ok(true) => {
                            pos.do_move(evasion);
                            next.push(pos.pack());
                            pos.undo_move(evasion);
                            next_links.push(Link {
                                parent: index as u32,
                                check,
                                evasion,
                            });
                        }
                        Ok(false) => {}
                        Err(()) => return give_up(GiveUp::Memory),
                    }
                }
                pos.undo_move(check);
            }
            if *nodes >= next_poll {
                next_poll = *nodes + 4096;
                if last_report.elapsed() >= Duration::from_secs(1) {
                    progress(lower_bound, *nodes);
                    last_report = Instant::now();
                }
                if limits.stop.load(Ordering::Relaxed) {
                    return give_up(GiveUp::Aborted(Abort::Stopped));
                }
                if limits.deadline.is_some_and(|d| Instant::now() >= d) {
                    return give_up(GiveUp::Aborted(Abort::Timeout));
                }
                let used = link_bytes
                    + seen.bytes()
                    + (level.len() + next.len()) * PACKED_BYTES
                    + next_links.len() * LINK_BYTES;
                if used > limits.budget_bytes {
                    return give_up(GiveUp::Memory);
                }
            }
        }
        if next.is_empty() {
            return BfsOutcome::NoMate;
        }
        link_bytes += next_links.len() * LINK_BYTES;
        links.push(next_links);
        level = next;
        if last_report.elapsed() >= Duration::from_millis(100) {
            progress(lower_bound + 2, *nodes);
            last_report = Instant::now();
        }
    }
    unreachable!("levels are unbounded")
}

/// The moves from the root to position `index` of level `depth`.
fn rebuild(links: &[Vec<Link>], depth: usize, mut index: u32) -> Vec<Move> {
    let mut reversed = Vec::with_capacity(2 * depth + 1);
    for d in (1..=depth).rev() {
        let link = links[d][index as usize];
        reversed.push(link.evasion);
        reversed.push(link.check);
        index = link.parent;
    }
    reversed.reverse();
    reversed
}
