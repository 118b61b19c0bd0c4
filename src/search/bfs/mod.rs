//! Breadth-first helpmate search, for long solutions.
//!
//! Iterative deepening re-walks everything above its frontier in each iteration, which for a
//! solution of thousands of plies costs far more than the frontier itself. This search expands
//! each attacker position once, level by level (a level is two plies: a check and an evasion),
//! keeping only the current and next levels as packed positions, a set of the keys seen, and per
//! position a link to its parent for rebuilding the line. The first level that contains a mate
//! gives the shortest one. Memory is bounded by a budget; past it the search gives up (reporting
//! the bound it proved) and the caller goes on with iterative deepening.
//!
//! Counting solutions: every shortest mating line passes each of its positions at that
//! position's distance from the root (otherwise a shorter mate would exist), so the shortest
//! lines are exactly the paths through the level graph. With counting on, every edge into a
//! position of the next level is kept (not only the first), each position carries the number of
//! paths reaching it (capped), the mate level is scanned to the end, and lines are read back
//! from the mating edges towards the root.

mod parallel;

pub(crate) use parallel::SLICE_POSITIONS;

use super::helpmate::{Abort, Interrupt, POLL_INTERVAL};
use super::memory::ZeroedTable;
use crate::shogi::movegen::{self, MoveList};
use crate::shogi::{Move, PackedPosition, Position};
use std::collections::HashMap;
use std::time::{Duration, Instant};

pub(crate) enum BfsOutcome {
    /// Shortest mating lines: the first found, then others up to the cap; `count` is the
    /// number of shortest lines, capped.
    Mate { lines: Vec<Vec<Move>>, count: u32 },
    /// The reachable positions ran out without a mate.
    NoMate,
    /// Gave up: memory budget, stop or time limit. No helpmate is shorter than `lower_bound`.
    GaveUp { lower_bound: u32, reason: GiveUp },
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

/// An insert-only set of 128-bit keys, compact: 256 open-addressing tables (linear probing)
/// chosen by the key's top byte, each storing the key's low 96 bits in 12 bytes and growing by
/// half on its own when 80% full, so memory stays near 12 / 0.65 bytes a key and growing never
/// needs twice the whole set. Keys equal in those 104 bits count as one: for 10^8 keys the chance
/// of any such pair is about 10^-15. All-zero slots are empty, so a key whose low 96 bits are
/// zero is kept as a stand-in made of its high bits (one more such negligible chance). The
/// shards are separate so that threads can each own some of them.
struct KeySet {
    shards: Vec<Shard>,
    /// Bytes of all shards' tables.
    bytes: usize,
}

/// One of the key set's tables.
struct Shard {
    table: ZeroedTable<[u32; 3]>,
    len: usize,
}

const SLOT_BYTES: usize = 12;

/// Levels at least this wide are expanded with several threads (when there are any); narrower
/// ones cost less than handing them out. Both ways give the same level, edges and order.
pub(crate) const PARALLEL_FROM_POSITIONS: usize = 4096;

/// The 96 bits a shard keeps of `key`: its low 96 bits, or, when those are all zero (an empty
/// slot), a stand-in from its high bits.
#[inline]
fn low96(key: u128) -> [u32; 3] {
    let stored = [key as u32, (key >> 32) as u32, (key >> 64) as u32];
    if stored == [0; 3] {
        [(key >> 96) as u32 | 1, 0, 0]
    } else {
        stored
    }
}

/// The stored bits as a key again (for the home slot, which depends on the low 64 bits only).
#[inline]
fn from_stored(stored: [u32; 3]) -> u128 {
    stored[0] as u128 | (stored[1] as u128) << 32 | (stored[2] as u128) << 64
}

#[inline]
fn home(key: u128, len: usize) -> usize {
    // Multiply-shift: any table size, no modulo.
    ((key as u64 as u128 * len as u128) >> 64) as usize
}

#[inline]
fn shard_of(key: u128) -> usize {
    (key >> 120) as usize
}

impl Shard {
    const FIRST_SLOTS: usize = 64;

    fn new() -> Shard {
        Shard {
            table: ZeroedTable::new(Self::FIRST_SLOTS).expect("a small key table"),
            len: 0,
        }
    }

    fn bytes(&self) -> usize {
        self.table.len() * SLOT_BYTES
    }

    /// Whether `key` is in this shard.
    #[inline]
    fn contains(&self, key: u128) -> bool {
        let stored = low96(key);
        let table = self.table.as_slice();
        let len = table.len();
        let mut i = home(from_stored(stored), len);
        loop {
            let slot = table[i];
            if slot == stored {
                return true;
            }
            if slot == [0; 3] {
                return false;
            }
            i = if i + 1 == len { 0 } else { i + 1 };
        }
    }

    /// Inserts `key`; false if it was already there. Growing may add at most `allowance` bytes
    /// (reduced by what it adds); `Err` when it would need more.
    #[inline]
    fn insert(&mut self, key: u128, allowance: &mut usize) -> Result<bool, ()> {
        let stored = low96(key);
        let size = self.table.len();
        if (self.len + 1) * 5 > size * 4 {
            let bigger = size + size / 2;
            // While growing, the old and the new table exist together.
            if (size + bigger) * SLOT_BYTES > *allowance {
                return Err(());
            }
            self.grow(bigger)?;
            *allowance -= (bigger - size) * SLOT_BYTES;
        }
        let table = self.table.as_mut_slice();
        let len = table.len();
        let mut i = home(from_stored(stored), len);
        loop {
            let slot = table[i];
            if slot == [0; 3] {
                table[i] = stored;
                self.len += 1;
                return Ok(true);
            }
            if slot == stored {
                return Ok(false);
            }
            i = if i + 1 == len { 0 } else { i + 1 };
        }
    }

    /// Starts loading the slot where `key` would go.
    #[inline]
    fn prefetch(&self, key: u128) {
        let table = self.table.as_slice();
        super::prefetch(&table[home(from_stored(low96(key)), table.len())]);
    }

    fn grow(&mut self, slots: usize) -> Result<(), ()> {
        let bigger = ZeroedTable::new(slots).ok_or(())?;
        let old = std::mem::replace(&mut self.table, bigger);
        let table = self.table.as_mut_slice();
        for stored in old.as_slice().iter().copied().filter(|&s| s != [0; 3]) {
            let mut i = home(from_stored(stored), slots);
            while table[i] != [0; 3] {
                i = if i + 1 == slots { 0 } else { i + 1 };
            }
            table[i] = stored;
        }
        Ok(())
    }
}

impl KeySet {
    const SHARDS: usize = 256;

    fn new() -> KeySet {
        let shards: Vec<Shard> = (0..Self::SHARDS).map(|_| Shard::new()).collect();
        let bytes = shards.iter().map(Shard::bytes).sum();
        KeySet { shards, bytes }
    }

    fn bytes(&self) -> usize {
        self.bytes
    }

    /// Counts the bytes again after the shards were changed directly.
    fn recount(&mut self) {
        self.bytes = self.shards.iter().map(Shard::bytes).sum();
    }

    fn contains(&self, key: u128) -> bool {
        self.shards[shard_of(key)].contains(key)
    }

    /// Inserts `key`; false if it was already there. `Err` when growing a shard would pass
    /// `budget` bytes for the whole set.
    #[inline]
    fn insert(&mut self, key: u128, budget: usize) -> Result<bool, ()> {
        let mut allowance = budget.saturating_sub(self.bytes);
        let before = allowance;
        let inserted = self.shards[shard_of(key)].insert(key, &mut allowance);
        self.bytes += before - allowance;
        inserted
    }

    /// Starts loading the slot where `key` would go.
    #[inline]
    fn prefetch(&self, key: u128) {
        self.shards[shard_of(key)].prefetch(key);
    }
}

pub(crate) struct BfsLimits<'a> {
    pub budget_bytes: usize,
    /// Count shortest lines up to this many (1: find one only).
    pub solution_cap: u32,
    pub max_plies: u32,
    pub interrupt: Interrupt<'a>,
    /// Threads to expand each level with (see `parallel.rs`); None: this thread alone.
    pub pool: Option<&'a rayon::ThreadPool>,
    /// Levels at least this wide go to the threads.
    pub parallel_from_positions: usize,
    /// The threads expand this many positions before inserting their children.
    pub parallel_slice_positions: usize,
}

/// Runs the breadth-first search from `root` (attacker to move). `nodes` counts moves played;
/// `progress(lower_bound, nodes, memory used per mille of the budget)` is called after levels,
/// at most ten times a second, and at least once a second during a long level. When the budget
/// is used up, `more_memory()` is asked for more bytes (0: there are none, give up).
pub(crate) fn search(
    root: &Position,
    limits: &BfsLimits,
    nodes: &mut u64,
    progress: &mut dyn FnMut(u32, u64, u32),
    more_memory: &mut dyn FnMut() -> usize,
) -> BfsOutcome {
    let mut budget = limits.budget_bytes;
    let cap = limits.solution_cap.max(1);
    let counting = cap > 1;
    let mut pos = root.clone();
    // Only attacker positions are recorded: a defender position met twice costs one more
    // evasion generation, which is cheaper than remembering every one of them.
    let mut seen = KeySet::new();
    let _ = seen.insert(root.key(), usize::MAX);
    let mut level: Vec<PackedPosition> = vec![root.pack()];
    let mut counts: Vec<u32> = vec![1];
    let mut graph = LevelGraph::default();
    let mut checks = MoveList::new();
    let mut evasions = MoveList::new();
    let mut keys: Vec<u128> = Vec::with_capacity(movegen::MAX_MOVES);
    let mut next_index: HashMap<u128, u32> = HashMap::new();
    let mut next_poll = *nodes + POLL_INTERVAL;
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
        if let Some(pool) = limits
            .pool
            .filter(|_| level.len() >= limits.parallel_from_positions)
        {
            let others = working_bytes(&graph, &LevelEdges::default(), level.capacity(), 0, 0)
                + counts.capacity() * 4;
            let allowance = budget.saturating_sub(others + seen.bytes());
            let this_level = parallel::Level {
                positions: &level,
                slice: limits.parallel_slice_positions,
                counts: &counts,
                cap,
                interrupt: limits.interrupt,
            };
            // At least once a second during a wide level.
            let last_permille = permille(seen.bytes() + others, budget);
            let mut more = || {
                let extra = more_memory();
                budget += extra;
                extra
            };
            let mut tick = |n: u64| {
                if last_report.elapsed() >= Duration::from_secs(1) {
                    progress(lower_bound, n, last_permille);
                    last_report = Instant::now();
                }
            };
            let outcome = parallel::expand_level(
                pool,
                &mut seen,
                &this_level,
                nodes,
                allowance,
                &mut more,
                &mut tick,
            );
            match outcome {
                parallel::LevelOutcome::Mates { mates, count } => {
                    let lines = graph.lines(&mates, cap as usize);
                    return BfsOutcome::Mate { lines, count };
                }
                parallel::LevelOutcome::Aborted(abort) => return give_up(GiveUp::Aborted(abort)),
                parallel::LevelOutcome::Memory => return give_up(GiveUp::Memory),
                parallel::LevelOutcome::Next {
                    next,
                    counts: next_counts,
                    edges,
                } => {
                    if next.is_empty() {
                        return BfsOutcome::NoMate;
                    }
                    graph.push(edges);
                    level = next;
                    counts = next_counts;
                }
            }
            let used = seen.bytes()
                + working_bytes(&graph, &LevelEdges::default(), level.capacity(), 0, 0)
                + counts.capacity() * 4;
            if used > budget {
                match more_memory() {
                    0 => return give_up(GiveUp::Memory),
                    extra => budget += extra,
                }
            }
            if last_report.elapsed() >= Duration::from_millis(100) {
                progress(lower_bound + 2, *nodes, permille(used, budget));
                last_report = Instant::now();
            }
            continue;
        }
        let mut next: Vec<PackedPosition> = Vec::new();
        let mut next_counts: Vec<u32> = Vec::new();
        let mut edges = LevelEdges::default();
        next_index.clear();
        // Mating edges of this level: (parent index, check).
        let mut mates: Vec<(u32, Move)> = Vec::new();
        let mut mate_count = 0u32;
        for (index, packed) in level.iter().enumerate() {
            // Paths into this position (only tracked when counting).
            let paths = if counting { counts[index] } else { 1 };
            pos.unpack_from(packed);
            checks.clear();
            movegen::checks(&pos, &mut checks);
            for &check in checks.iter() {
                pos.do_move(check);
                *nodes += 1;
                evasions.clear();
                movegen::evasions(&pos, &mut evasions);
                if evasions.is_empty() {
                    mates.push((index as u32, check));
                    mate_count = mate_count.saturating_add(paths).min(cap);
                    pos.undo_move(check);
                    if !counting {
                        break;
                    }
                    continue;
                }
                if !mates.is_empty() {
                    // The mate level: only mates matter now.
                    pos.undo_move(check);
                    continue;
                }
                let others = working_bytes(
                    &graph,
                    &edges,
                    level.capacity() + next.capacity(),
                    counts.capacity() + next_counts.capacity(),
                    next_index.capacity(),
                );

                // Keys first (their slots prefetched together); only new positions are played.
                child_keys(&pos, &evasions, &seen, &mut keys);
                *nodes += evasions.len() as u64;
                for (&evasion, &key) in evasions.iter().zip(keys.iter()) {
                    let link = Link {
                        parent: index as u32,
                        check,
                        evasion,
                    };
                    let inserted = loop {
                        match seen.insert(key, budget.saturating_sub(others)) {
                            Ok(inserted) => break inserted,
                            Err(()) => match more_memory() {
                                0 => return give_up(GiveUp::Memory),
                                extra => budget += extra,
                            },
                        }
                    };
                    match inserted {
                        true => {
                            pos.do_move(evasion);
                            next.push(pos.pack());
                            pos.undo_move(evasion);
                            edges.first.push(link);
                            if counting {
                                next_index.insert(key, next_counts.len() as u32);
                                next_counts.push(paths);
                            }
                        }
                        false if counting => {
                            // Another shortest way into a position of the next level?
                            if let Some(&child) = next_index.get(&key) {
                                edges.extra.push((child, link));
                                let c = &mut next_counts[child as usize];
                                *c = c.saturating_add(paths).min(cap);
                            }
                        }
                        false => {}
                    }
                }
                pos.undo_move(check);
            }
            if !mates.is_empty() && !counting {
                break;
            }
            if *nodes >= next_poll {
                next_poll = *nodes + POLL_INTERVAL;
                let used = seen.bytes()
                    + working_bytes(
                        &graph,
                        &edges,
                        level.capacity() + next.capacity(),
                        counts.capacity() + next_counts.capacity(),
                        next_index.capacity(),
                    );
                if last_report.elapsed() >= Duration::from_secs(1) {
                    progress(lower_bound, *nodes, permille(used, budget));
                    last_report = Instant::now();
                }
                if let Some(abort) = limits.interrupt.check(Instant::now()) {
                    return give_up(GiveUp::Aborted(abort));
                }
                if used > budget {
                    match more_memory() {
                        0 => return give_up(GiveUp::Memory),
                        extra => budget += extra,
                    }
                }
            }
        }
        if !mates.is_empty() {
            let lines = graph.lines(&mates, cap as usize);
            let count = if counting { mate_count } else { 1 };
            return BfsOutcome::Mate { lines, count };
        }
        if next.is_empty() {
            return BfsOutcome::NoMate;
        }
        graph.push(edges);
        level = next;
        counts = next_counts;
        if last_report.elapsed() >= Duration::from_millis(100) {
            let used = seen.bytes()
                + working_bytes(
                    &graph,
                    &LevelEdges::default(),
                    level.capacity(),
                    counts.capacity(),
                    0,
                );
            progress(lower_bound + 2, *nodes, permille(used, budget));
            last_report = Instant::now();
        }
    }
    unreachable!("levels are unbounded")
}

/// The keys of the positions `moves` lead to from `pos`, into `keys`, their key-set slots
/// prefetched together so that the cache misses overlap.
fn child_keys(pos: &Position, moves: &MoveList, seen: &KeySet, keys: &mut Vec<u128>) {
    keys.clear();
    for &m in moves.iter() {
        let key = pos.key_after(m);
        seen.prefetch(key);
        keys.push(key);
    }
}

/// Memory held besides the key set: the level graph, the edges into the level being built,
/// `positions` packed positions, `counts` path counts and `index_entries` entries of the
/// counting index (capacities, not lengths).
fn working_bytes(
    graph: &LevelGraph,
    edges: &LevelEdges,
    positions: usize,
    counts: usize,
    index_entries: usize,
) -> usize {
    graph.bytes() + edges.bytes() + positions * PACKED_BYTES + counts * 4 + index_entries * 32
}

fn permille(used: usize, budget: usize) -> u32 {
    (used.saturating_mul(1000) / budget.max(1)).min(1000) as u32
}

/// The edges from one level into the next: the first way into each new position (indexed like
/// the next level) and, when counting, every further way into one of them.
#[derive(Default)]
struct LevelEdges {
    first: Vec<Link>,
    extra: Vec<(u32, Link)>,
}

impl LevelEdges {
    /// Memory held, counting spare capacity.
    fn bytes(&self) -> usize {
        self.first.capacity() * LINK_BYTES + self.extra.capacity() * (LINK_BYTES + 4)
    }
}

/// All levels' edges, for reading mating lines back to the root.
#[derive(Default)]
struct LevelGraph {
    /// `levels[k]` holds the edges into level `k + 1`.
    levels: Vec<LevelEdges>,
    bytes: usize,
}

impl LevelGraph {
    fn bytes(&self) -> usize {
        self.bytes
    }

    fn push(&mut self, mut edges: LevelEdges) {
        // Sorted by child, so that lines can find every edge into a position; stable, so that
        // the edges into one child stay in the order they were found (as the threaded
        // expansion orders them too).
        edges.extra.sort_by_key(|&(child, _)| child);
        edges.first.shrink_to_fit();
        edges.extra.shrink_to_fit();
        self.bytes += edges.bytes();
        self.levels.push(edges);
    }

    /// The edges into position `index` of level `depth` (>= 1): the first one, then the others.
    fn edges_into(&self, depth: usize, index: u32) -> impl Iterator<Item = Link> + '_ {
        let edges = &self.levels[depth - 1];
        let start = edges.extra.partition_point(|&(child, _)| child < index);
        let others = edges.extra[start..]
            .iter()
            .take_while(move |&&(child, _)| child == index)
            .map(|&(_, link)| link);
        std::iter::once(edges.first[index as usize]).chain(others)
    }

    /// Up to `cap` mating lines, in the order their last moves were found.
    fn lines(&self, mates: &[(u32, Move)], cap: usize) -> Vec<Vec<Move>> {
        let depth = self.levels.len();
        let mut lines = Vec::new();
        let mut suffix = Vec::with_capacity(2 * depth + 1);
        for &(parent, check) in mates {
            suffix.clear();
            suffix.push(check);
            self.walk_back(depth, parent, &mut suffix, &mut lines, cap);
            if lines.len() >= cap {
                break;
            }
        }
        lines
    }

    /// Extends the reversed `suffix` from position `index` of level `depth` back to the root in
    /// every way, adding complete lines until there are `cap`.
    fn walk_back(
        &self,
        depth: usize,
        index: u32,
        suffix: &mut Vec<Move>,
        lines: &mut Vec<Vec<Move>>,
        cap: usize,
    ) {
        if depth == 0 {
            lines.push(suffix.iter().rev().copied().collect());
            return;
        }
        for link in self.edges_into(depth, index) {
            if lines.len() >= cap {
                return;
            }
            suffix.push(link.evasion);
            suffix.push(link.check);
            self.walk_back(depth - 1, link.parent, suffix, lines, cap);
            suffix.pop();
            suffix.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_set_keeps_every_key_through_growth() {
        let mut set = KeySet::new();
        let key = |i: u128| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) ^ (i << 120);
        for i in 0..200_000u128 {
            assert_eq!(set.insert(key(i), usize::MAX), Ok(true));
        }
        for i in 0..200_000u128 {
            assert_eq!(set.insert(key(i), usize::MAX), Ok(false));
        }
        // Keys that differ only in bits the set keeps must stay distinct; keys whose low 96 bits
        // are zero are kept as a stand-in.
        let a = 1u128 << 100;
        assert_eq!(set.insert(a, usize::MAX), Ok(true));
        assert_eq!(set.insert(a | (1 << 65), usize::MAX), Ok(true));
        // (key(0) is 0 itself, inserted above.)
        assert_eq!(set.insert(0, usize::MAX), Ok(false));
        assert_eq!(set.insert(a, usize::MAX), Ok(false));
        assert!(set.contains(a) && set.contains(0) && set.contains(key(7)));
        assert!(!set.contains(a | 1 << 66));
        // A budget too small to grow is reported, not exceeded.
        let mut small = KeySet::new();
        let budget = small.bytes();
        let full = (0..10_000u128).try_for_each(|i| small.insert(key(i), budget).map(|_| ()));
        assert_eq!(full, Err(()));
        assert!(small.bytes() <= budget);
    }
}
