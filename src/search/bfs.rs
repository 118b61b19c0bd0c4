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

/// An insert-only set of 128-bit keys (open addressing, linear probing). Zero marks an empty
/// slot; the one key that is zero is tracked on the side.
struct KeySet {
    slots: Vec<u128>,
    len: usize,
    has_zero: bool,
}

impl KeySet {
    fn with_capacity_pow2(n: usize) -> KeySet {
        KeySet {
            slots: vec![0; n],
            len: 0,
            has_zero: false,
        }
    }

    fn bytes(&self) -> usize {
        self.slots.len() * 16
    }

    /// Inserts `key`; false if it was already there.
    #[inline]
    fn insert(&mut self, key: u128) -> bool {
        if key == 0 {
            return !std::mem::replace(&mut self.has_zero, true);
        }
        let mask = self.slots.len() - 1;
        let mut i = key as usize & mask;
        loop {
            match self.slots[i] {
                0 => {
                    self.slots[i] = key;
                    self.len += 1;
                    return true;
                }
                k if k == key => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// True when the load calls for a bigger table.
    fn crowded(&self) -> bool {
        self.len * 10 > self.slots.len() * 7
    }

    fn grown(&self) -> KeySet {
        let mut bigger = KeySet::with_capacity_pow2(self.slots.len() * 2);
        bigger.has_zero = self.has_zero;
        for &k in &self.slots {
            if k != 0 {
                bigger.insert(k);
            }
        }
        bigger
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
    let mut seen = KeySet::with_capacity_pow2(1 << 16);
    seen.insert(root.key());
    let mut level: Vec<PackedPosition> = vec![root.pack()];
    let mut links: Vec<Vec<Link>> = vec![Vec::new()];
    let mut link_bytes = 0usize;
    let mut checks = MoveList::new();
    let mut evasions = MoveList::new();
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
        let mut next: Vec<PackedPosition> = Vec::new();
        let mut next_links: Vec<Link> = Vec::new();
        for (index, packed) in level.iter().enumerate() {
            pos.unpack_from(packed);
            checks.clear();
            movegen::checks(&pos, &mut checks);
            for &check in checks.iter() {
                pos.do_move(check);
                *nodes += 1;
                if seen.insert(pos.key()) {
                    evasions.clear();
                    movegen::evasions(&pos, &mut evasions);
                    if evasions.is_empty() {
                        let mut line = rebuild(&links, depth as usize, index as u32);
                        line.push(check);
                        return BfsOutcome::Mate(line);
                    }
                    for &evasion in evasions.iter() {
                        pos.do_move(evasion);
                        *nodes += 1;
                        if seen.insert(pos.key()) {
                            next.push(pos.pack());
                            next_links.push(Link {
                                parent: index as u32,
                                check,
                                evasion,
                            });
                        }
                        pos.undo_move(evasion);
                    }
                }
                pos.undo_move(check);
                if seen.crowded() {
                    let used = link_bytes
                        + (level.len() + next.len()) * PACKED_BYTES
                        + next_links.len() * LINK_BYTES;
                    if used + 3 * seen.bytes() > limits.budget_bytes {
                        return BfsOutcome::GaveUp {
                            lower_bound,
                            reason: GiveUp::Memory,
                        };
                    }
                    seen = seen.grown();
                }
            }
            if *nodes >= next_poll {
                next_poll = *nodes + 4096;
                if last_report.elapsed() >= Duration::from_secs(1) {
                    progress(lower_bound, *nodes);
                    last_report = Instant::now();
                }
                if limits.stop.load(Ordering::Relaxed) {
                    return BfsOutcome::GaveUp {
                        lower_bound,
                        reason: GiveUp::Aborted(Abort::Stopped),
                    };
                }
                if limits.deadline.is_some_and(|d| Instant::now() >= d) {
                    return BfsOutcome::GaveUp {
                        lower_bound,
                        reason: GiveUp::Aborted(Abort::Timeout),
                    };
                }
                let used = link_bytes
                    + seen.bytes()
                    + (level.len() + next.len()) * PACKED_BYTES
                    + next_links.len() * LINK_BYTES;
                if used > limits.budget_bytes {
                    return BfsOutcome::GaveUp {
                        lower_bound,
                        reason: GiveUp::Memory,
                    };
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
