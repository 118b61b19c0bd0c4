//! Each thread's lists: the copies of new positions it found on a level, the marks other
//! threads leave on them, and what it keeps for itself from level to level.

use super::THREAD_ENTRIES;
use crate::search::bfs::expand::children::Pipeline;
use crate::search::bfs::keys::{self};
use crate::search::bfs::levels::level::{
    prefetch_tail, LevelPositions, Link, Mate, LINK_BYTES, TAIL_AHEAD,
};
use crate::search::interrupt::Abort;
use crate::search::memory::ZeroedTable;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// One thread's copies of new positions on a level, in the order it met them (rising order).
#[derive(Default)]
pub(super) struct Found {
    pub(super) positions: LevelPositions,
    pub(super) orders: Vec<u64>,
    pub(super) keys: Vec<u128>,
    pub(super) links: Vec<Link>,
    /// Ways in through the first copy (counting; others add theirs in `Marks::gained`).
    pub(super) paths: Vec<u32>,
    /// The entries whose keys go to each thread's shards of the key set, so that in step 2 a
    /// thread reads only the keys it inserts, not every key of every other thread's list.
    pub(super) owners: Vec<Vec<u16>>,
}

impl Found {
    pub(super) fn new(threads: usize) -> Found {
        Found {
            owners: vec![Vec::new(); threads],
            ..Found::default()
        }
    }

    pub(super) fn len(&self) -> usize {
        self.positions.len()
    }

    pub(super) fn clear(&mut self) {
        self.positions.packed.clear();
        self.positions.checks.clear();
        self.positions.ends.clear();
        self.orders.clear();
        self.keys.clear();
        self.links.clear();
        self.paths.clear();
        self.owners.iter_mut().for_each(Vec::clear);
    }

    /// Starts owning the lines the next copies go to: the list was last filled two levels
    /// ago, and every thread read its positions as parents on the level after, so each line
    /// is first taken back from another CPU (寿限無 19447 at two threads: `undo_move`, whose
    /// stores waited behind the list's, 2,568 -> 1,585 samples in three runs).
    #[inline]
    pub(super) fn prefetch_tails(&self) {
        self.positions.prefetch_tails();
        prefetch_tail(&self.orders, TAIL_AHEAD);
        prefetch_tail(&self.keys, TAIL_AHEAD);
        prefetch_tail(&self.links, TAIL_AHEAD);
        prefetch_tail(&self.paths, TAIL_AHEAD);
    }

    pub(super) fn bytes(&self) -> usize {
        self.positions.bytes()
            + self.orders.capacity() * 8
            + self.keys.capacity() * 16
            + self.links.capacity() * LINK_BYTES
            + self.paths.capacity() * 4
            + self.owners.iter().map(|o| o.capacity() * 2).sum::<usize>()
    }
}

/// What other threads write into one thread's list: the copies they displaced (see
/// [`Claims`]) and the further ways into its positions they found; a word an entry (the top
/// bit: stale; the low 32 bits: ways in gained, which never reach the top). The table is
/// mapped, not written, when made: a pass touches only the pages its lists reach. On lines of
/// its own, away from the other threads' marks.
#[repr(align(128))]
pub(super) struct Marks {
    pub(super) words: ZeroedTable<u64>,
    pub(super) stale_count: AtomicUsize,
    pub(super) gained_count: AtomicUsize,
}

pub(super) const STALE: u64 = 1 << 63;

impl Marks {
    pub(super) fn new() -> Option<Marks> {
        Some(Marks {
            words: ZeroedTable::new(THREAD_ENTRIES)?,
            stale_count: AtomicUsize::new(0),
            gained_count: AtomicUsize::new(0),
        })
    }

    #[inline]
    pub(super) fn word(&self, entry: usize) -> &AtomicU64 {
        &self.words.as_atomic()[entry]
    }

    /// (The count first: most lists have no stale copy, and their words stay unread.)
    #[inline]
    pub(super) fn is_stale(&self, entry: usize) -> bool {
        self.any_stale() && self.word(entry).load(Ordering::Relaxed) & STALE != 0
    }

    pub(super) fn mark_stale(&self, entry: usize) {
        self.word(entry).fetch_or(STALE, Ordering::Relaxed);
        self.stale_count.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn gain(&self, entry: usize, paths: u32) {
        self.word(entry)
            .fetch_add(u64::from(paths), Ordering::Relaxed);
        self.gained_count.fetch_add(1, Ordering::Relaxed);
    }

    /// Ways into copy `entry` besides its own, not capped.
    #[inline]
    pub(super) fn gained(&self, entry: usize) -> u32 {
        self.word(entry).load(Ordering::Relaxed) as u32
    }

    pub(super) fn any_stale(&self) -> bool {
        self.stale_count.load(Ordering::Relaxed) > 0
    }

    /// Clears the marks of the first `entries` entries (all that can be marked).
    pub(super) fn reset(&self, entries: usize) {
        if self.any_stale() || self.gained_count.load(Ordering::Relaxed) > 0 {
            for word in &self.words.as_atomic()[..entries] {
                word.store(0, Ordering::Relaxed);
            }
            self.stale_count.store(0, Ordering::Relaxed);
            self.gained_count.store(0, Ordering::Relaxed);
        }
    }
}

/// A copy that was not the first of its key on the level (counting: a further way in).
pub(super) struct Later {
    pub(super) key: u128,
    pub(super) order: u64,
    pub(super) link: Link,
    pub(super) paths: u32,
}

/// What one thread keeps for itself from level to level.
pub(super) struct Local {
    pub(super) pipeline: Pipeline,
    /// Copies that lost their key to a lower order (counting only).
    pub(super) later: Vec<Later>,
    /// Further ways in, resolved: (position, link, order).
    pub(super) extra: Vec<(u32, Link, u64)>,
    pub(super) mates: Vec<Mate>,
    /// Bytes its shards of the key set grew by on this level.
    pub(super) grown: usize,
    /// Live copies before each entry of each list (step 2, for lists with stale copies).
    pub(super) live_before: Vec<Vec<u32>>,
    /// Keys of its shards to insert on this level.
    pub(super) owned_keys: Vec<u128>,
    /// Keys of its shards it could not insert for want of memory.
    pub(super) leftover: Vec<u128>,
    /// Its shards grown ahead during the expansion, to be put in at step 2.
    pub(super) grown_ahead: Vec<(usize, keys::Grown)>,
    /// Slots taken in each claims table, to free once it is done with.
    pub(super) taken: [Vec<u32>; 2],
    pub(super) abort: Option<Abort>,
    /// Bytes of this thread's lists.
    pub(super) bytes: usize,
    /// Nodes since the interrupt was last polled.
    pub(super) unpolled: u64,
    pub(super) bounds: Vec<usize>,
}

impl Local {
    pub(super) fn new() -> Local {
        Local {
            pipeline: Pipeline::new(),
            later: Vec::new(),
            extra: Vec::new(),
            mates: Vec::new(),
            grown: 0,
            live_before: Vec::new(),
            owned_keys: Vec::new(),
            leftover: Vec::new(),
            grown_ahead: Vec::new(),
            taken: [Vec::new(), Vec::new()],
            abort: None,
            bytes: 0,
            unpolled: 0,
            bounds: Vec::new(),
        }
    }
}
