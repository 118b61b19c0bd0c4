//! What the phases of a threaded level hand on: the expansion's candidates, by owner, and the
//! owners' new positions; and what each of them is reckoned to take.

use crate::search::bfs::expand::children::Pipeline;
use crate::search::bfs::keys::level_filter::LevelFilter;
use crate::search::bfs::keys::level_index::LevelIndex;
use crate::search::bfs::levels::level::{Link, Mate};
use crate::search::interrupt::Abort;
use crate::shogi::{Move, PackedPosition};

/// An evasion leading to a position not seen on earlier levels.
#[derive(Clone, Copy)]
pub(super) struct Candidate {
    /// Where a single thread would have met it: its parent's index in the level in the high
    /// bits, then the candidate's number among that parent's.
    pub(super) order: u64,
    pub(super) key: u128,
    pub(super) link: Link,
    pub(super) paths: u32,
    /// The position it leads to (packed here, where the parent is at hand: most candidates
    /// are new).
    pub(super) packed: PackedPosition,
    /// Its checks: where they start in its share's `Expanded::checks`, and how many.
    pub(super) checks: (u32, u32),
}

/// A new position of the next level, as its owner found it.
pub(super) struct NewPosition {
    pub(super) order: u64,
    pub(super) link: Link,
    pub(super) paths: u32,
    pub(super) packed: PackedPosition,
    /// Its checks: where they start in the owner's `Inserted::checks`, and how many.
    pub(super) checks: (u32, u32),
}

const _: () = assert!(std::mem::size_of::<Candidate>() == 96);

pub(super) const ORDER_SHIFT: u32 = 24;
/// What the merge makes of each new position besides its checks: the packed position, its
/// checks' end, its first way in and its count in the next level, and its entry in the merge's
/// order and (counting) in its index from owner to level.
pub(super) const MERGED_BYTES: usize = std::mem::size_of::<PackedPosition>()
    + 4
    + std::mem::size_of::<Link>()
    + 4
    + std::mem::size_of::<(u64, u32, u32)>()
    + 2 * 4;
/// An owner's new position.
pub(super) const NEW_BYTES: usize = std::mem::size_of::<NewPosition>();
/// What the merge makes of each further way in (counting): its place in the next level's edges.
pub(super) const MERGED_EXTRA_BYTES: usize = std::mem::size_of::<(u32, Link)>();

/// What one thread's share of a slice's expansion produced: the batches it took, in order.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct Expanded {
    pub(super) buckets: Vec<Vec<Candidate>>,
    /// The candidates' checks.
    pub(super) checks: Vec<Move>,
    pub(super) mates: Vec<Mate>,
    /// The batches taken (numbers within the slice, rising).
    pub(super) batches: Vec<u32>,
    pub(super) nodes: u64,
    pub(super) abort: Option<Abort>,
    /// The thread's expansions, kept from slice to slice.
    pub(super) pipeline: Pipeline,
}

/// What an owner inserted: its new positions (in order) and, counting, further edges into
/// them.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct Inserted {
    pub(super) new: Vec<NewPosition>,
    /// The new positions' checks.
    pub(super) checks: Vec<Move>,
    /// (index into `new`, link), in the order found.
    pub(super) extra: Vec<(u32, Link)>,
    /// Where its insertion of the current slice is to go on: the batch, and how far it got in
    /// each share's bucket; `None` once the slice is done. An owner that stopped for want of
    /// memory resumes there; one that had finished must not insert its candidates again
    /// (counting, a second pass would add every edge twice).
    pub(super) resume_at: Option<(usize, Vec<usize>)>,
    /// It stopped because the search was stopped.
    pub(super) interrupted: bool,
    pub(super) local_index: LevelIndex,
    /// The keys of `local_index`, perhaps: asked first (see `level_filter.rs`).
    pub(super) level_keys: LevelFilter,
}

impl Expanded {
    /// Memory held (capacities).
    pub(super) fn bytes(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| b.capacity() * std::mem::size_of::<Candidate>())
            .sum::<usize>()
            + self.checks.capacity() * std::mem::size_of::<Move>()
            + self.mates.capacity() * std::mem::size_of::<Mate>()
            + self.batches.capacity() * 4
    }

    /// Bytes of the candidates it holds (lengths), with their checks.
    pub(super) fn candidate_bytes(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| b.len() * std::mem::size_of::<Candidate>())
            .sum::<usize>()
            + self.checks.len() * std::mem::size_of::<Move>()
    }

    /// Ready for a new slice: empty, keeping its vectors' room.
    pub(super) fn clear(&mut self, owners: usize) {
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
    /// What this owner's new positions will take in the next level, merged (the estimate a
    /// level's growth is judged by).
    pub(super) fn next_level_bytes(&self) -> usize {
        self.new.len() * (NEW_BYTES + MERGED_BYTES) + 2 * self.checks.len() * 2
    }

    /// Memory held (capacities).
    pub(super) fn bytes(&self) -> usize {
        self.new.capacity() * std::mem::size_of::<NewPosition>()
            + self.checks.capacity() * std::mem::size_of::<Move>()
            + self.extra.capacity() * std::mem::size_of::<(u32, Link)>()
            + self.local_index.bytes()
            + self.level_keys.bytes()
    }

    /// Ready for a new level, on which it may make about `expected` new positions: empty,
    /// keeping its vectors' room.
    pub(super) fn clear(&mut self, expected: usize) {
        self.new.clear();
        self.checks.clear();
        self.extra.clear();
        self.resume_at = None;
        self.interrupted = false;
        self.level_keys.reset(expected);
        self.local_index.reset(expected);
    }
}

/// Makes room in `v` for `extra` more items, out of `allowance` (the bytes its capacity grows
/// by, the vector doubling as it would by itself, or growing by just enough where doubling does
/// not fit); false, with `v` as it was, if even that does not fit.
pub(super) fn room_in<T>(v: &mut Vec<T>, extra: usize, allowance: &mut usize) -> bool {
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
