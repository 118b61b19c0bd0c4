//! The narrow levels of the breadth-first pass, with the calling thread and its crew running
//! the level loop together.
//!
//! A long problem of narrow levels (寿限無 19447: 9,700 levels of about a hundred positions)
//! pays for every hand-off between threads: in `parallel.rs` a level is two fork-joins (the
//! expansion, the insertion) and a merge on the calling thread, and a helper that went back to
//! the pool between them has to be woken. Here the threads stay in one loop and meet twice a
//! level, at a barrier:
//!
//! 1. **Expand** (every thread, taking batches of the level from a shared counter): as in
//!    `parallel.rs`, the key set is only read; a new position of the next level is *claimed*
//!    in a small table of the level's keys that all the threads share ([`Claims`]). A claim
//!    keeps the least order a copy of the key was met with (where one thread would have met
//!    it: by parent, then child) and where that copy sits. A thread that finds a lower order
//!    there drops its copy (counting: a further way in, resolved in step 2); one that lowers a
//!    claim marks the copy it displaced as stale.
//! 2. **Rank** (after the first barrier, every thread its own copies): a new position's place
//!    in the next level is the number of live copies, of all the threads, with a lower order;
//!    each thread writes its copies into the next level's index at their places (made as long
//!    as the level at the barrier), inserts the keys of its own shards, from every thread's
//!    copies, into the key set, and resolves its further ways in.
//! 3. At the second barrier the calling thread decides whether the loop goes on, and books the
//!    level (its edges, its figures, the memory) while the others start on the next.
//!
//! The levels, their edges and their counts are exactly one thread's, in its order; only the
//! positions stay in the list of the thread that found them, each with its place. A level that
//! outgrows the claims table or a thread's list is given back and expanded the usual way, as is
//! a level too wide for this loop or one that needs memory the loop cannot make (nothing of it
//! has been written to the key set then).

use super::crew::{wait, Beside};
use super::disk::DiskError;
use super::expand::{ChildSink, DeadCache, NewChild, Pipeline};
use super::graph::LevelGraph;
use super::keyset::{self, owner_of, shards_of, KeySet, Shard};
use super::level::{
    prefetch_tail, LevelEdges, LevelOutcome, LevelPositions, Line, Link, Parent, LINK_BYTES,
    TAIL_AHEAD,
};
use super::parallel::cut_into_batches;
use crate::search::helpmate::{Abort, Interrupt, POLL_INTERVAL};
use crate::search::memory::ZeroedTable;
use crate::shogi::Move;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;

/// Levels narrower than this run in the loop (wider ones cost far more than their hand-offs).
pub(crate) const NARROW_BELOW: usize = 4096;
/// The most copies one thread may keep on a level (a claim numbers them in 16 bits).
const THREAD_ENTRIES: usize = 1 << 16;
/// The widest level the loop can start from (it goes into one thread's list).
pub(super) const MAX_FIRST_WIDTH: usize = THREAD_ENTRIES;
/// Where a copy's order sits in a claim, above its thread (8 bits) and entry (16 bits).
const CLAIM_ORDER_SHIFT: u32 = 24;
/// A copy's order: its parent's place in the level, then its number among that parent's
/// children (as in `parallel.rs`).
const ORDER_SHIFT: u32 = 24;
/// Slots of a claims table: at most, and at least on a level. A level uses two and a half
/// times as many as the new positions it is expected to make (as many as it has, times its
/// own growth over the level before): a table larger than the core's own cache is read from
/// further away at every look-up (on `wfp-56-12` 2571, whose levels hold 1,000 to 4,000
/// positions, sixteen slots a position made the look-ups 13% of the run).
const CLAIM_SLOTS: usize = 1 << 16;
const MIN_CLAIM_SLOTS: usize = 1 << 10;
/// A level is given back once its claims fill this share of their table (per cent).
pub(crate) const NARROW_CLAIMS_PERCENT: usize = 60;

/// Memory of the loop's tables for `threads` threads, besides its lists: two claims tables
/// and the marks on the lists.
pub(super) fn fixed_bytes(threads: usize) -> usize {
    2 * CLAIM_SLOTS * 16 + 2 * threads * THREAD_ENTRIES * 8
}

/// A value the loop's threads take turns with: between two barriers, either one thread writes
/// it and no other touches it, or any thread reads it and none writes it (each use says which).
/// The barriers order one phase's writes before the next phase's reads. Shared through a cell
/// rather than a lock: a lock taken and let go by every thread in every phase is a round trip
/// between the CPUs each time, on levels that last some 40 microseconds. Each on lines of its
/// own: the threads' cells sit side by side in vectors, and one thread's pushes to its list
/// (its vectors' lengths) would otherwise take the line from a thread reading the next cell.
#[repr(align(128))]
struct PhasedCell<T>(UnsafeCell<T>);

// SAFETY: the loop keeps the discipline above, so a `&mut` to the value never exists beside any
// other reference to it; `T: Send` because the value is used from several threads in turn.
unsafe impl<T: Send> Sync for PhasedCell<T> {}

impl<T> PhasedCell<T> {
    fn new(value: T) -> PhasedCell<T> {
        PhasedCell(UnsafeCell::new(value))
    }

    /// # Safety
    /// No thread writes the value in this phase.
    unsafe fn get(&self) -> &T {
        // SAFETY: by the caller's promise, no `&mut` to the value exists now.
        unsafe { &*self.0.get() }
    }

    /// # Safety
    /// No other thread reads or writes the value in this phase.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get_mut(&self) -> &mut T {
        // SAFETY: by the caller's promise, no other reference to the value is in use now.
        unsafe { &mut *self.0.get() }
    }
}

/// One thread's copies of new positions on a level, in the order it met them (rising order).
#[derive(Default)]
struct Found {
    positions: LevelPositions,
    orders: Vec<u64>,
    keys: Vec<u128>,
    links: Vec<Link>,
    /// Ways in through the first copy (counting; others add theirs in `Marks::gained`).
    paths: Vec<u32>,
    /// The entries whose keys go to each thread's shards of the key set, so that in step 2 a
    /// thread reads only the keys it inserts, not every key of every other thread's list.
    owners: Vec<Vec<u16>>,
}

impl Found {
    fn new(threads: usize) -> Found {
        Found {
            owners: vec![Vec::new(); threads],
            ..Found::default()
        }
    }

    fn len(&self) -> usize {
        self.positions.len()
    }

    fn clear(&mut self) {
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
    fn prefetch_tails(&self) {
        self.positions.prefetch_tails();
        prefetch_tail(&self.orders, TAIL_AHEAD);
        prefetch_tail(&self.keys, TAIL_AHEAD);
        prefetch_tail(&self.links, TAIL_AHEAD);
        prefetch_tail(&self.paths, TAIL_AHEAD);
    }

    fn bytes(&self) -> usize {
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
struct Marks {
    words: ZeroedTable<u64>,
    stale_count: AtomicUsize,
    gained_count: AtomicUsize,
}

const STALE: u64 = 1 << 63;

impl Marks {
    fn new() -> Option<Marks> {
        Some(Marks {
            words: ZeroedTable::new(THREAD_ENTRIES)?,
            stale_count: AtomicUsize::new(0),
            gained_count: AtomicUsize::new(0),
        })
    }

    #[inline]
    fn word(&self, entry: usize) -> &AtomicU64 {
        &self.words.as_atomic()[entry]
    }

    /// (The count first: most lists have no stale copy, and their words stay unread.)
    #[inline]
    fn is_stale(&self, entry: usize) -> bool {
        self.any_stale() && self.word(entry).load(Ordering::Relaxed) & STALE != 0
    }

    fn mark_stale(&self, entry: usize) {
        self.word(entry).fetch_or(STALE, Ordering::Relaxed);
        self.stale_count.fetch_add(1, Ordering::Relaxed);
    }

    fn gain(&self, entry: usize, paths: u32) {
        self.word(entry)
            .fetch_add(u64::from(paths), Ordering::Relaxed);
        self.gained_count.fetch_add(1, Ordering::Relaxed);
    }

    /// Ways into copy `entry` besides its own, not capped.
    #[inline]
    fn gained(&self, entry: usize) -> u32 {
        self.word(entry).load(Ordering::Relaxed) as u32
    }

    fn any_stale(&self) -> bool {
        self.stale_count.load(Ordering::Relaxed) > 0
    }

    /// Clears the marks of the first `entries` entries (all that can be marked).
    fn reset(&self, entries: usize) {
        if self.any_stale() || self.gained_count.load(Ordering::Relaxed) > 0 {
            for word in &self.words.as_atomic()[..entries] {
                word.store(0, Ordering::Relaxed);
            }
            self.stale_count.store(0, Ordering::Relaxed);
            self.gained_count.store(0, Ordering::Relaxed);
        }
    }
}

/// The keys of new positions of one level, shared by all the threads: open addressing, two
/// words a slot, the key's word (0: free) and its claim (0: none; else the complement of the
/// least order met, above the thread and entry holding that copy, so that a lower order is a
/// greater word). Threads take slots and lower claims with atomic exchanges. Slots taken are
/// freed by the thread that took them once the level is over (see `Local::taken`).
struct Claims {
    words: ZeroedTable<u64>,
    /// Words whose pages have been written (see `prepare`).
    written: AtomicUsize,
}

/// A claim for the copy `entry` of `thread`, met with `order`.
#[inline]
fn claim_word(order: u64, thread: usize, entry: usize) -> u64 {
    !(order << CLAIM_ORDER_SHIFT | (thread as u64) << 16 | entry as u64)
}

/// The order, thread and entry of a claim.
#[inline]
fn claim_parts(claim: u64) -> (u64, usize, usize) {
    let packed = !claim;
    (
        packed >> CLAIM_ORDER_SHIFT,
        (packed >> 16 & 0xff) as usize,
        (packed & 0xffff) as usize,
    )
}

impl Claims {
    fn new() -> Option<Claims> {
        Some(Claims {
            words: ZeroedTable::new(2 * CLAIM_SLOTS)?,
            written: AtomicUsize::new(0),
        })
    }

    /// Readies the slots within `mask` for a level: their pages are written before the
    /// threads read them (a slot is looked up before it is taken, and a page read first is
    /// mapped twice, the second time interrupting the other CPUs: on a short problem at two
    /// threads those faults took more time than the search). Called only where the table is
    /// free (every slot zero) and no thread uses it: before the loop's threads start, and at
    /// the barrier before the level it serves.
    fn prepare(&self, mask: usize) {
        let end = 2 * (mask + 1);
        let written = self.written.load(Ordering::Relaxed);
        if end > written {
            self.words.write_pages(written..end);
            self.written.store(end, Ordering::Relaxed);
        }
    }

    #[inline]
    fn word(key: u128) -> u64 {
        match key as u64 {
            0 => (key >> 64) as u64 | 1,
            low => low,
        }
    }

    #[inline]
    fn home(key: u128, mask: usize) -> usize {
        (key >> 64) as usize & mask
    }

    /// Starts loading `key`'s home slot, to be read and, most often, claimed (see
    /// `prefetch_write`).
    #[inline]
    fn prefetch(&self, key: u128, mask: usize) {
        crate::search::machine::prefetch_write(&self.words.as_atomic()[2 * Self::home(key, mask)]);
    }

    /// The claim on `key` (0: none).
    #[inline]
    fn lookup(&self, key: u128, mask: usize) -> u64 {
        let words = self.words.as_atomic();
        let word = Self::word(key);
        let mut slot = Self::home(key, mask);
        for _ in 0..=mask {
            match words[2 * slot].load(Ordering::Relaxed) {
                0 => return 0,
                w if w == word => return words[2 * slot + 1].load(Ordering::Relaxed),
                _ => slot = (slot + 1) & mask,
            }
        }
        0
    }

    /// The slot of `key`, taking a free one if it has none (then `true`); `None` if every slot
    /// within `mask` is taken by other keys.
    #[inline]
    fn slot(&self, key: u128, mask: usize) -> Option<(usize, bool)> {
        let words = self.words.as_atomic();
        let word = Self::word(key);
        let mut slot = Self::home(key, mask);
        for _ in 0..=mask {
            let at = &words[2 * slot];
            match at.load(Ordering::Relaxed) {
                0 => match at.compare_exchange(0, word, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return Some((slot, true)),
                    Err(w) if w == word => return Some((slot, false)),
                    Err(_) => {}
                },
                w if w == word => return Some((slot, false)),
                _ => {}
            }
            slot = (slot + 1) & mask;
        }
        None
    }

    /// Sets the claim of `slot` to `mine` if that lowers it: `Ok(the claim it replaced)` (0:
    /// none), or `Err` if a lower order holds it.
    #[inline]
    fn claim(&self, slot: usize, mine: u64) -> Result<u64, ()> {
        let claim = &self.words.as_atomic()[2 * slot + 1];
        let mut current = claim.load(Ordering::Relaxed);
        loop {
            if current > mine {
                return Err(());
            }
            match claim.compare_exchange_weak(current, mine, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Ok(current),
                Err(now) => current = now,
            }
        }
    }

    /// Frees `slots`.
    fn free(&self, slots: &[u32]) {
        let words = self.words.as_atomic();
        for &slot in slots {
            words[2 * slot as usize].store(0, Ordering::Relaxed);
            words[2 * slot as usize + 1].store(0, Ordering::Relaxed);
        }
    }
}

/// The slots of a claims table for a level of `positions` positions after one of `before`,
/// less one (see [`CLAIM_SLOTS`]).
fn claim_mask(positions: usize, before: usize) -> usize {
    let expected = (positions * positions / before.max(1)).max(positions);
    (expected * 5 / 2)
        .next_power_of_two()
        .clamp(MIN_CLAIM_SLOTS, CLAIM_SLOTS)
        - 1
}

/// A copy that was not the first of its key on the level (counting: a further way in).
struct Later {
    key: u128,
    order: u64,
    link: Link,
    paths: u32,
}

/// What one thread keeps for itself from level to level.
struct Local {
    pipeline: Pipeline,
    /// Copies that lost their key to a lower order (counting only).
    later: Vec<Later>,
    /// Further ways in, resolved: (position, link, order).
    extra: Vec<(u32, Link, u64)>,
    mates: Vec<(u32, Move, u32)>,
    /// Bytes its shards of the key set grew by on this level.
    grown: usize,
    /// Live copies before each entry of each list (step 2, for lists with stale copies).
    live_before: Vec<Vec<u32>>,
    /// Keys of its shards to insert on this level.
    owned_keys: Vec<u128>,
    /// Keys of its shards it could not insert for want of memory.
    leftover: Vec<u128>,
    /// Its shards grown ahead during the expansion, to be put in at step 2.
    grown_ahead: Vec<(usize, keyset::Grown)>,
    /// Slots taken in each claims table, to free once it is done with.
    taken: [Vec<u32>; 2],
    abort: Option<Abort>,
    /// Bytes of this thread's lists.
    bytes: usize,
    /// Nodes since the interrupt was last polled.
    unpolled: u64,
    bounds: Vec<usize>,
}

impl Local {
    fn new() -> Local {
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

/// What the loop keeps from one run to the next: its lists and tables, for `threads` threads.
pub(super) struct Narrow {
    threads: usize,
    /// Each level parity's lists, one a thread, with their marks.
    found: [Vec<PhasedCell<Found>>; 2],
    marks: [Vec<Marks>; 2],
    claims: [Claims; 2],
    local: Vec<PhasedCell<Local>>,
    /// The level being expanded, in its order: each position's thread (high 16 bits) and
    /// entry in that thread's list.
    index: PhasedCell<Vec<u32>>,
    /// Each thread's nodes in this run, on a line of its own (read for progress reports).
    nodes: Vec<Line<AtomicU64>>,
}

impl Narrow {
    /// The loop's lists and tables for `threads` threads (`None` if the memory is not to be
    /// had).
    pub(super) fn new(threads: usize) -> Option<Narrow> {
        assert!((2..=256).contains(&threads));
        let lists = || {
            (0..threads)
                .map(|_| PhasedCell::new(Found::new(threads)))
                .collect()
        };
        let marks = || {
            (0..threads)
                .map(|_| Marks::new())
                .collect::<Option<Vec<_>>>()
        };
        Some(Narrow {
            threads,
            found: [lists(), lists()],
            marks: [marks()?, marks()?],
            claims: [Claims::new()?, Claims::new()?],
            local: (0..threads)
                .map(|_| PhasedCell::new(Local::new()))
                .collect(),
            index: PhasedCell::new(Vec::new()),
            nodes: (0..threads).map(|_| Line::default()).collect(),
        })
    }

    pub(super) fn threads(&self) -> usize {
        self.threads
    }
}

/// The level the pass is at, as the loop takes it and gives it back.
pub(super) struct At<'a> {
    pub depth: &'a mut u32,
    pub level: &'a mut LevelPositions,
    pub counts: &'a mut Vec<u32>,
}

/// The rest of the pass, for the calling thread to book each level with.
pub(super) struct Book<'a> {
    pub graph: &'a mut LevelGraph,
    pub budget: &'a mut usize,
    pub more_memory: &'a mut dyn FnMut() -> usize,
    /// Where links may go when memory runs short.
    pub disk: &'a super::disk::DiskBudget,
    pub nodes: &'a mut u64,
    /// Called after each level made here.
    pub after_level: &'a mut dyn FnMut(LevelDone),
    /// Whether a level at this depth is too deep to expand.
    pub too_deep: &'a dyn Fn(u32) -> bool,
}

/// A level the loop has made, for the pass's figures.
pub(super) struct LevelDone<'a> {
    pub depth: u32,
    pub width: usize,
    pub seen: &'a KeySet,
    pub graph: &'a LevelGraph,
    /// Memory in use, and the budget.
    pub used: usize,
    pub budget: usize,
    pub nodes: u64,
}

/// How the loop ended.
pub(super) enum Exit {
    /// The level at `depth` is back in `level` and `counts`, to be expanded the usual way.
    Handback,
    /// The pass's outcome at this level.
    Done(LevelOutcome),
    /// A level's edges could not be kept.
    Disk(DiskError),
}

/// How the loop runs.
pub(super) struct Setup<'a> {
    pub interrupt: Interrupt<'a>,
    /// Ways into a position are counted up to this (1: not counted).
    pub cap: u32,
    /// Positions in each batch (None: guided, see `cut_into_batches`).
    pub batch: Option<usize>,
    /// See [`NARROW_CLAIMS_PERCENT`].
    pub claims_percent: usize,
    /// The loop ends before a level this wide.
    pub wide: usize,
    /// The most bytes a thread's shards may grow by on a level (tests set 0, so that every
    /// growth falls to the calling thread; see `Local::leftover`).
    pub key_allowance: usize,
}

/// What a run shares between its threads.
struct Run<'r> {
    narrow: &'r Narrow,
    seen: PhasedCell<&'r mut KeySet>,
    /// The key set's shards, for each thread to insert into its own in step 2.
    shards: Shards,
    /// Bytes each thread's shards may grow by in step 2.
    allowance: AtomicUsize,
    /// A thread could not insert all its keys (see `Local::leftover`).
    short: AtomicBool,
    dead: &'r DeadCache,
    interrupt: Interrupt<'r>,
    cap: u32,
    batch: Option<usize>,
    claims_percent: usize,
    wide: usize,
    key_allowance: usize,
    arrived: Line<AtomicUsize>,
    generation: Line<AtomicU32>,
    next_batch: Line<AtomicUsize>,
    mate_found: Line<AtomicBool>,
    /// What the calling thread must look at when the level is expanded (`EVENT_...`), so
    /// that a level without any costs it one line to read.
    events: Line<AtomicU8>,
    /// The next level's first edges, by place (sized at the first barrier, filled in step 2).
    first: PhasedCell<Vec<Link>>,
    /// Where step 2 writes the places of the threads' copies.
    placed: PhasedCell<Placed>,
    /// The level's parity and claims mask (written by the calling thread between barriers).
    parity: AtomicUsize,
    mask: AtomicUsize,
    verdict: AtomicU8,
    /// A thread panicked: the others leave their barrier.
    quit: AtomicBool,
}

/// Times the calling thread inserted keys the threads could not (for a test).
#[cfg(test)]
static LEFTOVERS: AtomicUsize = AtomicUsize::new(0);

const GO_ON: u8 = 0;
const LEAVE: u8 = 1;

/// A thread found a mate.
const EVENT_MATE: u8 = 1;
/// A thread was interrupted (its reason in its `Local::abort`).
const EVENT_ABORT: u8 = 2;
/// The level is to be given back (a table or list ran out of room).
const EVENT_GIVE_BACK: u8 = 4;

/// The key set's shards, as step 2 shares them out: each thread inserts into the shards it
/// owns (`keyset::owner_of`), and only into those, so no shard is written by two
/// threads or read by another while it is written (in that step nobody reads the set
/// otherwise). A raw pointer, as the set is borrowed whole by the run.
struct Shards {
    first: *mut Shard,
    len: usize,
}

// SAFETY: see `Shards::owned`: each shard is reached by one thread at a time. (The shards
// live in the set's vector, whose buffer a borrow of the set does not cover: the calling
// thread's borrows of the whole set between the steps leave this pointer valid.)
unsafe impl Sync for Shards {}
unsafe impl Send for Shards {}

impl Shards {
    /// Shard `shard`, for `thread` of `threads` to insert into.
    ///
    /// # Safety
    /// Only in step 2, by the thread that owns the shard (`owner_of`), and no other reference
    /// to the key set is in use then.
    #[allow(clippy::mut_from_ref)]
    unsafe fn owned(&self, shard: usize, thread: usize, threads: usize) -> &mut Shard {
        assert!(shard < self.len && owner_of(shard, threads) == thread);
        // SAFETY: in bounds (asserted); by the caller's promise this thread alone uses the
        // shard now.
        unsafe { &mut *self.first.add(shard) }
    }
}

/// The next level's index and first edges as step 2 fills them, each thread at the places of
/// its own live copies: no two copies share a place, so no slot is written twice. Filled by the
/// threads rather than by the calling thread at the second barrier, where the others would wait
/// (寿限無 19447 at two threads: 13-20 ms of a 1.1-1.3 s run, with the helper waiting).
struct Placed {
    index: *mut u32,
    first: *mut Link,
    len: usize,
}

impl Default for Placed {
    fn default() -> Placed {
        Placed {
            index: std::ptr::null_mut(),
            first: std::ptr::null_mut(),
            len: 0,
        }
    }
}

// SAFETY: the pointers are into `Narrow::index` and `Run::first`, set up at the first barrier
// and left alone until the second; in between, each thread writes only its own copies' places
// (see `Placed::put`).
unsafe impl Send for Placed {}

impl Placed {
    /// Points at `index` and `first`, made `len` long.
    fn over(index: &mut Vec<u32>, first: &mut Vec<Link>, len: usize) -> Placed {
        index.clear();
        index.resize(len, 0);
        first.clear();
        first.resize(len, Link::UNSET);
        Placed {
            index: index.as_mut_ptr(),
            first: first.as_mut_ptr(),
            len,
        }
    }

    /// Writes the copy at `at` (its thread in the high 16 bits, its entry in the low) into
    /// `place`, with its link.
    ///
    /// # Safety
    /// In step 2 only, and `place` is this copy's: no other thread writes it.
    unsafe fn put(&self, place: usize, at: u32, link: Link) {
        assert!(place < self.len, "a place within the level");
        // SAFETY: in bounds (asserted) of buffers that live and keep their size from the first
        // barrier to the second; the caller's promise keeps the writes apart.
        unsafe {
            *self.index.add(place) = at;
            *self.first.add(place) = link;
        }
    }
}

/// Runs the pass's levels from `at` on with `crew` while they are narrow. The calling thread
/// books each level (`book`); every thread expands and ranks.
pub(super) fn run(
    narrow: &mut Narrow,
    crew: &mut dyn Beside,
    seen: &mut KeySet,
    dead: &DeadCache,
    setup: Setup,
    at: At,
    book: &mut Book,
) -> Exit {
    let Setup {
        interrupt,
        cap,
        batch,
        claims_percent,
        wide,
        key_allowance,
    } = setup;
    let helpers = narrow.threads - 1;
    debug_assert!(helpers <= crew.helpers());
    let counting = cap > 1;
    let width = at.level.len();
    enter(narrow, at.level, at.counts, counting);
    let shards = Shards {
        first: seen.shards.as_mut_ptr(),
        len: seen.shards.len(),
    };
    let allowance = (book
        .budget
        .saturating_sub(seen.bytes() + book.graph.bytes() + fixed_bytes(narrow.threads))
        / narrow.threads)
        .min(key_allowance);
    for nodes in &narrow.nodes {
        nodes.0.store(0, Ordering::Relaxed);
    }
    // The first level's table (the other is readied at the first barrier).
    let first_mask = claim_mask(width, width);
    narrow.claims[0].prepare(first_mask);
    let run = Run {
        narrow,
        seen: PhasedCell::new(seen),
        shards,
        allowance: AtomicUsize::new(allowance),
        short: AtomicBool::new(false),
        dead,
        interrupt,
        cap,
        batch,
        claims_percent,
        wide,
        key_allowance,
        arrived: Line::default(),
        generation: Line::default(),
        next_batch: Line::default(),
        mate_found: Line::default(),
        events: Line::default(),
        first: PhasedCell::new(Vec::new()),
        placed: PhasedCell::new(Placed::default()),
        parity: AtomicUsize::new(0),
        mask: AtomicUsize::new(first_mask),
        verdict: AtomicU8::new(GO_ON),
        quit: AtomicBool::new(false),
    };
    let nodes_before = *book.nodes;
    let mut exit = None;
    let mut own = |nudge: &dyn Fn()| {
        let leader = Leader {
            run: &run,
            book: &mut *book,
            depth: &mut *at.depth,
            nudges: nudge,
            nodes_before,
            held_at_barrier: 0,
            expanding: width,
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| leader.lead())) {
            Ok(ended) => exit = Some(ended),
            Err(payload) => {
                // The helpers leave their barrier; the crew raises the panic once they have.
                run.quit.store(true, Ordering::Relaxed);
                run.free_claims(0);
                std::panic::resume_unwind(payload);
            }
        }
    };
    let helper = |part: usize| run.help(part + 1);
    crew.beside(helpers, &helper, &mut own);
    // Tables grown ahead for a step 2 that did not come.
    for local in &mut narrow.local {
        local.0.get_mut().grown_ahead.clear();
    }
    *book.nodes = nodes_before
        + narrow
            .nodes
            .iter()
            .map(|n| n.0.load(Ordering::Relaxed))
            .sum::<u64>();
    match exit.expect("the calling thread's part ran") {
        Ended::Handback(parity) => {
            (*at.level, *at.counts) = leave(narrow, parity, counting, cap);
            Exit::Handback
        }
        Ended::Done(outcome) => Exit::Done(outcome),
        Ended::Disk(e) => Exit::Disk(e),
    }
}

/// Takes `level` (and its counts) in as the first level: the calling thread's list at parity 0.
fn enter(narrow: &mut Narrow, level: &mut LevelPositions, counts: &[u32], counting: bool) {
    for parity in 0..2 {
        for (found, marks) in narrow.found[parity].iter_mut().zip(&narrow.marks[parity]) {
            let found = found.0.get_mut();
            marks.reset(found.len());
            found.clear();
        }
    }
    let first = narrow.found[0][0].0.get_mut();
    std::mem::swap(&mut first.positions, level);
    let len = first.positions.len();
    if counting {
        first.paths.extend_from_slice(&counts[..len]);
    }
    let index = narrow.index.0.get_mut();
    index.clear();
    index.extend(0..len as u32);
}

/// The level at `parity` as one list, with its counts (capped; none when not counting).
fn leave(
    narrow: &mut Narrow,
    parity: usize,
    counting: bool,
    cap: u32,
) -> (LevelPositions, Vec<u32>) {
    let marks = &narrow.marks[parity];
    let found: Vec<&Found> = narrow.found[parity]
        .iter_mut()
        .map(|f| &*f.0.get_mut())
        .collect();
    let at: Vec<(usize, usize)> = narrow
        .index
        .0
        .get_mut()
        .iter()
        .map(|&at| (at as usize >> 16, at as usize & 0xffff))
        .collect();
    let mut level = LevelPositions {
        packed: Vec::with_capacity(at.len()),
        checks: Vec::new(),
        ends: Vec::with_capacity(at.len()),
    };
    for &(thread, entry) in &at {
        let (packed, checks) = found[thread].positions.get(entry);
        level.push(*packed, checks);
    }
    let counts = if counting {
        at.iter()
            .map(|&(t, e)| {
                let paths = found[t].paths[e].saturating_add(marks[t].gained(e));
                paths.min(cap)
            })
            .collect()
    } else {
        Vec::new()
    };
    (level, counts)
}

/// How the calling thread's part ended.
enum Ended {
    /// The level at this parity goes back to the pass.
    Handback(usize),
    Done(LevelOutcome),
    Disk(DiskError),
}

/// The calling thread's side: it expands and ranks like the helpers, and books each level
/// while they wait.
struct Leader<'l, 'r, 'b> {
    run: &'l Run<'r>,
    book: &'l mut Book<'b>,
    depth: &'l mut u32,
    nudges: &'l dyn Fn(),
    /// The pass's nodes before this run.
    nodes_before: u64,
    /// What [`Leader::held`] said at the last barrier.
    held_at_barrier: usize,
    /// The width of the level being expanded (the claims table is sized from its growth).
    expanding: usize,
}

impl Leader<'_, '_, '_> {
    fn lead(mut self) -> Ended {
        let run = self.run;
        let ended = loop {
            run.expand(0);
            self.gather();
            if let Some(ended) = self.after_expansion() {
                break ended;
            }
            self.make_room_for_places();
            run.release(GO_ON);
            run.rank(0);
            self.gather();
            match self.after_ranking() {
                Ranked::GoOn(booking) => {
                    run.release(GO_ON);
                    // The helpers expand meanwhile (batches are taken by whoever comes).
                    if let Some(ended) = self.book_level(booking) {
                        // (Too late to leave at this barrier: at the next.)
                        run.expand(0);
                        self.gather();
                        break ended;
                    }
                }
                Ranked::End(ended) => break ended,
            }
        };
        run.release(LEAVE);
        run.free_claims(0);
        ended
    }

    /// Waits for every helper to arrive at the barrier.
    fn gather(&self) {
        let run = self.run;
        let helpers = run.narrow.threads - 1;
        let mut spins = 0u32;
        while run.arrived.0.load(Ordering::Acquire) < helpers {
            if run.quit.load(Ordering::Relaxed) {
                panic!("a helper of the narrow levels panicked");
            }
            if spins % 1024 == 1023 {
                (self.nudges)();
            }
            wait(&mut spins);
        }
        run.arrived.0.store(0, Ordering::Relaxed);
    }

    /// Memory the loop holds besides the key set and the graph: its tables and lists (read
    /// while the helpers wait at a barrier).
    fn held(&self) -> usize {
        let narrow = self.run.narrow;
        // SAFETY: the helpers wait at the barrier.
        let lists: usize = narrow.local.iter().map(|l| unsafe { l.get() }.bytes).sum();
        // (This level's lists and the next, about as big.)
        fixed_bytes(narrow.threads) + 2 * lists
    }

    /// At the first barrier: the level's mates, or why the loop ends here (all of it read
    /// only when a thread raised an event).
    fn after_expansion(&mut self) -> Option<Ended> {
        let run = self.run;
        let events = run.events.0.swap(0, Ordering::Relaxed);
        if events == 0 {
            return None;
        }
        let narrow = run.narrow;
        let parity = run.parity.load(Ordering::Relaxed);
        let counting = run.cap > 1;
        // SAFETY (all the cells below): the helpers wait at the barrier; this thread alone
        // touches the loop's state until it releases them.
        let locals = || narrow.local.iter().map(|l| unsafe { l.get() });
        if let Some(abort) = locals().find_map(|l| l.abort) {
            return Some(Ended::Done(LevelOutcome::Aborted(abort)));
        }
        if events & EVENT_GIVE_BACK != 0 {
            return Some(Ended::Handback(parity));
        }
        if events & EVENT_MATE != 0 {
            // Each parent's mates come from one thread, in order: a stable sort by parent
            // gives them in the order one thread would have found them.
            let mut mates: Vec<(u32, Move, u32)> =
                locals().flat_map(|l| l.mates.iter().copied()).collect();
            mates.sort_by_key(|&(parent, _, _)| parent);
            if !counting {
                return Some(Ended::Done(LevelOutcome::Mates {
                    mates: vec![(mates[0].0, mates[0].1)],
                    count: 1,
                }));
            }
            let count = mates
                .iter()
                .fold(0u32, |c, m| c.saturating_add(m.2).min(run.cap));
            return Some(Ended::Done(LevelOutcome::Mates {
                mates: mates.iter().map(|&(p, c, _)| (p, c)).collect(),
                count,
            }));
        }
        None
    }

    /// At the first barrier, the loop going on: the next level's index and first edges made
    /// as long as the level is (its copies less the stale ones), for step 2 to fill.
    fn make_room_for_places(&mut self) {
        let run = self.run;
        let narrow = run.narrow;
        let next = run.parity.load(Ordering::Relaxed) ^ 1;
        // SAFETY (all the cells below): the helpers wait at the barrier.
        let width: usize = narrow.found[next]
            .iter()
            .map(|f| unsafe { f.get() }.len())
            .sum::<usize>()
            - narrow.marks[next]
                .iter()
                .map(|m| m.stale_count.load(Ordering::Relaxed))
                .sum::<usize>();
        let index = unsafe { narrow.index.get_mut() };
        self.expanding = index.len();
        let first = unsafe { run.first.get_mut() };
        let placed = Placed::over(index, first, width);
        *unsafe { run.placed.get_mut() } = placed;
    }

    /// At the second barrier: the new level's index (and its first edges) for the threads to
    /// go on with, or why the loop ends here. What else the level needs booking is done
    /// after the barrier ([`Leader::book_level`]).
    fn after_ranking(&mut self) -> Ranked {
        let run = self.run;
        let narrow = run.narrow;
        let parity = run.parity.load(Ordering::Relaxed);
        let next = parity ^ 1;
        // SAFETY (all the cells below): the helpers wait at the barrier.
        let locals = || narrow.local.iter().map(|l| unsafe { l.get() });
        let seen = unsafe { run.seen.get_mut() };
        seen.grew(locals().map(|l| l.grown).sum());
        if run.short.swap(false, Ordering::Relaxed) {
            let leftover: Vec<u128> = locals().flat_map(|l| l.leftover.iter().copied()).collect();
            if let Some(ended) = self.insert_leftover(&leftover) {
                return Ranked::End(ended);
            }
        }
        let width = unsafe { narrow.index.get() }.len();
        if width == 0 {
            return Ranked::End(Ended::Done(LevelOutcome::Next {
                next: LevelPositions::default(),
                counts: Vec::new(),
                edges: LevelEdges::default(),
            }));
        }
        // The buffers `Placed` pointed into are let go of here, until the next first barrier.
        *unsafe { run.placed.get_mut() } = Placed::default();
        let first = std::mem::take(unsafe { run.first.get_mut() });
        debug_assert!(
            first.iter().all(|&l| l != Link::UNSET),
            "every place is taken"
        );
        let extra: Vec<(u32, Link, u64)> = locals().flat_map(|l| l.extra.iter().copied()).collect();
        let booking = Booking {
            edges: LevelEdges {
                first,
                extra: Vec::new(),
            },
            extra,
            width,
        };
        *self.depth += 1;
        run.parity.store(next, Ordering::Relaxed);
        let seen = unsafe { run.seen.get() };
        // The graph as it will be once the level is in.
        let graph = self.book.graph.bytes() + booking.edges.bytes();
        self.held_at_barrier = self.held();
        let used = seen.bytes() + graph + booking.extra.len() * (LINK_BYTES + 4);
        let used = used + self.held_at_barrier;
        if width >= run.wide || used > *self.book.budget || (self.book.too_deep)(*self.depth) {
            // Booked now: the loop ends at this barrier.
            return Ranked::End(self.book_level(booking).unwrap_or(Ended::Handback(next)));
        }
        let mask = claim_mask(width, self.expanding);
        // The next level's table: its slots were all freed during this level's expansion.
        narrow.claims[next].prepare(mask);
        run.mask.store(mask, Ordering::Relaxed);
        run.next_batch.0.store(0, Ordering::Relaxed);
        let share = (self.book.budget.saturating_sub(used) / narrow.threads).min(run.key_allowance);
        run.allowance.store(share, Ordering::Relaxed);
        Ranked::GoOn(booking)
    }

    /// Inserts the keys the threads could not insert for want of memory, as the one-thread
    /// pass would: with more room if there is any (the caller's memory, then links moved to
    /// disk), else with the keys frozen, else filling the shards up (see `NextLevel::add`);
    /// why the pass must end when even that fails.
    fn insert_leftover(&mut self, keys: &[u128]) -> Option<Ended> {
        // SAFETY: the helpers wait at the barrier.
        let seen = unsafe { self.run.seen.get_mut() };
        #[cfg(test)]
        LEFTOVERS.fetch_add(1, Ordering::Relaxed);
        let mut resorts = super::room::LastResorts::default();
        for &key in keys {
            loop {
                let others = self.book.graph.bytes() + self.held();
                let budget = self.book.budget.saturating_sub(others);
                if seen.insert(key, budget, resorts.cramming).is_ok() {
                    break;
                }
                let room =
                    super::room::more_room(self.book.more_memory, self.book.graph, self.book.disk);
                match room {
                    Ok(super::room::Room::Memory(extra)) => *self.book.budget += extra,
                    // Links moved to disk: the graph counts fewer bytes.
                    Ok(super::room::Room::Disk(freed)) if freed > 0 => {}
                    Ok(_) if resorts.take(seen, self.run.interrupt) => {}
                    Ok(_) => return Some(Ended::Done(LevelOutcome::Memory)),
                    Err(e) => return Some(Ended::Disk(e)),
                }
            }
        }
        None
    }

    /// The rest of a level's booking: its edges into the graph, its figures out. Why the loop
    /// must end, if it must.
    fn book_level(&mut self, booking: Booking) -> Option<Ended> {
        let Booking {
            mut edges,
            mut extra,
            width,
        } = booking;
        // By position, then in the order met: one thread's order.
        extra.sort_unstable_by_key(|&(child, _, order)| (child, order));
        edges.extra = extra.into_iter().map(|(c, l, _)| (c, l)).collect();
        if let Err(e) = self.book.graph.push(edges) {
            return Some(Ended::Disk(e));
        }
        let run = self.run;
        // SAFETY: the key set is only read until the next barrier.
        let seen = unsafe { run.seen.get() };
        let nodes = self.nodes_before
            + run
                .narrow
                .nodes
                .iter()
                .map(|n| n.0.load(Ordering::Relaxed))
                .sum::<u64>();
        let used = seen.bytes() + self.book.graph.bytes() + self.held_estimate();
        (self.book.after_level)(LevelDone {
            depth: *self.depth,
            width,
            seen,
            graph: self.book.graph,
            used,
            budget: *self.book.budget,
            nodes,
        });
        None
    }

    /// Memory the loop holds besides the key set and the graph, as of the last barrier (the
    /// lists' sizes then; they change once the threads go on).
    fn held_estimate(&self) -> usize {
        self.held_at_barrier
    }
}

/// What the second barrier comes to.
enum Ranked {
    /// The loop goes on; the level's booking is finished after the barrier.
    GoOn(Booking),
    End(Ended),
}

/// A level's booking, begun at the second barrier and finished after it.
struct Booking {
    edges: LevelEdges,
    /// Further ways in: (position, link, order).
    extra: Vec<(u32, Link, u64)>,
    width: usize,
}

impl Run<'_> {
    /// Lets the helpers through the barrier, telling them whether to go on.
    fn release(&self, verdict: u8) {
        self.verdict.store(verdict, Ordering::Relaxed);
        self.generation.0.fetch_add(1, Ordering::Release);
    }

    /// A helper's barrier: true to go on.
    fn arrive(&self) -> bool {
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
    fn help(&self, thread: usize) {
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
    fn free_claims(&self, thread: usize) {
        // SAFETY: a thread's own state, and each thread frees only its own slots.
        let local = unsafe { self.narrow.local[thread].get_mut() };
        for (claims, taken) in self.narrow.claims.iter().zip(&mut local.taken) {
            claims.free(taken);
            taken.clear();
        }
    }

    /// Step 1 for `thread`: its batches of the level, into its list of the next.
    fn expand(&self, thread: usize) {
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
        // 40 us for the others).
        local.grown_ahead.clear();
        let mut left = self.allowance.load(Ordering::Relaxed);
        for shard in shards_of(thread, narrow.threads, seen.shards.len()) {
            if let Some(grown) = seen.shards[shard].grown_ahead(left) {
                left -= grown.bytes;
                local.grown_ahead.push((shard, grown));
            }
        }
        cut_into_batches(
            (0, index.len()),
            self.batch,
            narrow.threads,
            &mut local.bounds,
        );
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
            dead: self.dead,
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
                };
                let elsewhere = mate_found.load(Ordering::Relaxed);
                nodes += pipeline.current().generate(
                    parent,
                    (seen, self.dead, &sink),
                    mates,
                    !counting,
                    elsewhere,
                );
                if !mates.is_empty() {
                    mate_found.store(true, Ordering::Relaxed);
                    self.events.0.fetch_or(EVENT_MATE, Ordering::Relaxed);
                    if !counting {
                        // Nothing after the first mate of this thread can matter.
                        break 'level;
                    }
                } else if !elsewhere {
                    let Ok(()) = pipeline.previous().resolve(self.dead, &mut sink);
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
            let Ok(()) = pipeline.previous().resolve(self.dead, &mut sink);
        }
        *unpolled = POLL_INTERVAL.saturating_sub(next_poll.saturating_sub(nodes));
        *bytes = sink.found.bytes();
        narrow.nodes[thread].0.fetch_add(nodes, Ordering::Relaxed);
    }

    /// Step 2 for `thread`: the places of its live copies in the next level, the keys of
    /// its shards into the key set, its further ways in.
    fn rank(&self, thread: usize) {
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
                    let shard = keyset::shard_of(key);
                    // SAFETY: one of this thread's shards, in step 2.
                    unsafe { self.shards.owned(shard, thread, threads) }.prefetch_for_insert(key);
                    local.owned_keys.push(key);
                }
            }
        }
        local.leftover.clear();
        for &key in &local.owned_keys {
            // SAFETY: as above.
            let shard = unsafe { self.shards.owned(keyset::shard_of(key), thread, threads) };
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

/// Step 1's sink: new positions claimed and kept in the thread's list.
struct Sink<'s> {
    seen: &'s KeySet,
    dead: &'s DeadCache,
    claims: &'s Claims,
    mask: usize,
    found: &'s mut Found,
    /// The next level's marks, every thread's.
    marks: &'s [Marks],
    later: &'s mut Vec<Later>,
    taken: &'s mut Vec<u32>,
    claims_limit: usize,
    events: &'s AtomicU8,
    thread: usize,
    threads: usize,
    counting: bool,
    /// The parent whose children are coming in, and how many of them have been numbered.
    parent: u32,
    number: u64,
    /// The order of the child being looked at.
    order: u64,
}

impl Sink<'_> {
    fn raise(&self, event: u8) {
        self.events.fetch_or(event, Ordering::Relaxed);
    }

    /// A copy that is not the first of its key: counting, a further way in.
    fn later(&mut self, key: u128, link: Link, paths: u32) {
        if self.counting {
            self.later.push(Later {
                key,
                order: self.order,
                link,
                paths,
            });
        }
    }
}

impl ChildSink for Sink<'_> {
    type Stop = std::convert::Infallible;

    /// The claims slot: last written on the other CPU, it was looked up cold (寿限無 19447 at
    /// two threads: `Claims::lookup` 3.3% of the samples, nearly all on the slot's load, and
    /// 0.8% with the slot loaded ahead).
    #[inline]
    fn prefetch(&self, key: u128) {
        self.claims.prefetch(key, self.mask);
    }

    #[inline]
    fn is_known(&mut self, key: u128, link: Link, paths: u32) -> bool {
        if self.seen.contains(key) {
            return true;
        }
        if link.parent != self.parent {
            self.parent = link.parent;
            self.number = 0;
        }
        self.order = u64::from(link.parent) << ORDER_SHIFT | self.number;
        self.number += 1;
        // A dead position is dropped next, without a look at the claims.
        if self.dead.contains(key) {
            return false;
        }
        let claim = self.claims.lookup(key, self.mask);
        if claim != 0 && claim_parts(claim).0 < self.order {
            self.later(key, link, paths);
            return true;
        }
        false
    }

    #[inline]
    fn add(&mut self, child: NewChild) -> Result<(), Self::Stop> {
        // A level given back is expanded again the usual way: nothing more to claim here.
        if self.events.load(Ordering::Relaxed) & EVENT_GIVE_BACK != 0 {
            return Ok(());
        }
        let entry = self.found.len();
        // A level too wide for the tables goes back to the pass, to be expanded again.
        if entry >= THREAD_ENTRIES {
            self.raise(EVENT_GIVE_BACK);
            return Ok(());
        }
        let Some((slot, took)) = self.claims.slot(child.key, self.mask) else {
            self.raise(EVENT_GIVE_BACK);
            return Ok(());
        };
        if took {
            self.taken.push(slot as u32);
            if self.taken.len() > self.claims_limit {
                self.raise(EVENT_GIVE_BACK);
            }
        }
        match self
            .claims
            .claim(slot, claim_word(self.order, self.thread, entry))
        {
            Ok(displaced) => {
                if displaced != 0 {
                    let (_, holder, their) = claim_parts(displaced);
                    self.marks[holder].mark_stale(their);
                }
                let found = &mut *self.found;
                found.positions.push(child.pos.pack(), child.checks);
                found.orders.push(self.order);
                found.keys.push(child.key);
                found.owners[keyset::owner_of_key(child.key, self.threads)].push(entry as u16);
                found.links.push(child.link);
                found.paths.push(child.paths);
                found.prefetch_tails();
            }
            Err(()) => self.later(child.key, child.link, child.paths),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{search_in_pool, BfsLimits, BfsOutcome, DiskBudget};
    use super::NARROW_CLAIMS_PERCENT;
    use crate::search::helpmate::Interrupt;
    use crate::shogi::Position;
    use std::sync::atomic::AtomicBool;

    /// How the loop is set for a pass: levels narrower than `below` go to it (0: none), which
    /// gives a level back once its claims fill `claims_percent` of their table; `batch`
    /// positions a batch (None: guided).
    #[derive(Clone, Copy, Debug)]
    struct Setting {
        below: usize,
        claims_percent: usize,
        batch: Option<usize>,
        /// No memory for the threads to grow their shards with: the calling thread inserts
        /// the keys that need it.
        tight: bool,
    }

    /// A whole pass from `sfen` (for mates of at most `max_plies`): the figures of every level
    /// (plies, positions, keys) and the outcome, with its lines and count.
    fn pass((sfen, max_plies): (&str, u32), threads: usize, cap: u32, setting: Setting) -> Pass {
        let root = Position::from_sfen(sfen).unwrap();
        let pool = (threads > 1).then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
        });
        let stop = AtomicBool::new(false);
        let (log, levels) = crossbeam_channel::unbounded();
        let limits = BfsLimits {
            level_log: Some(log),
            budget_bytes: 1 << 30,
            solution_cap: cap,
            max_plies,
            interrupt: Interrupt {
                stop: &stop,
                deadline: None,
                mate_elsewhere: None,
            },
            pool: pool.as_ref(),
            parallel_from_positions: 1,
            parallel_slice_positions: 1 << 16,
            parallel_batch_positions: setting.batch,
            narrow_below: setting.below,
            narrow_claims_percent: setting.claims_percent,
            narrow_key_allowance: if setting.tight { 0 } else { usize::MAX },
            disk: DiskBudget::default(),
            give_up_when_bushy: false,
            threads_from_nodes: 0,
        };
        let mut nodes = 0;
        let (outcome, _pass) = search_in_pool(
            &root,
            &limits,
            &mut nodes,
            &mut |_| {},
            &mut || 0,
            &mut crate::search::bfs::Caches::new(),
        );
        drop(limits);
        let levels = levels
            .try_iter()
            .map(|l| (l.plies, l.positions, l.keys))
            .collect();
        let outcome = match outcome {
            BfsOutcome::Mate { lines, count } => format!("{count} {lines:?}"),
            BfsOutcome::NoMate => "no mate".into(),
            BfsOutcome::GaveUp {
                lower_bound,
                reason,
            } => format!("gave up at {lower_bound}: {reason:?}"),
        };
        Pass { levels, outcome }
    }

    /// What a pass came to: every level's (plies, positions, keys), and the outcome.
    struct Pass {
        levels: Vec<(u32, usize, usize)>,
        outcome: String,
    }

    /// With every level from the first in the loop, at two and three threads, the pass has
    /// one thread's levels and outcome: the same positions and keys on every level, the same
    /// lines in the same order, the same count; also with levels given back all the time
    /// (a claims table that is "full" at a few per cent), with batches of one position, with
    /// too little memory for the threads to insert their keys, and with a pass cut short at a
    /// depth.
    #[test]
    fn the_narrow_loop_gives_one_threads_levels_and_lines() {
        let problems = [
            // Levels of up to 3,205 positions, many reached from several parents.
            "ggssn2p1/lgssn3l/+R8/5N2k/4bn3/3l5/9/2g4L1/KBr3PP1 b 11P4p 1",
            "9/9/9/9/7bb/1ppssssp1/K5k2/+RL1l1gg2/rL3gg1+l b 4N15P 1",
            // Two solutions each, mates on several parents of the mate level.
            "9/9/9/4G4/4G4/4G4/4G4/9/4k4 b 2r2b4s4n4l18p 1",
            "9/9/9/3G1G3/4G4/4G4/9/4k4/9 b 2r2b4s4n4l18p 1",
        ];
        let settings = [
            Setting {
                below: usize::MAX,
                claims_percent: NARROW_CLAIMS_PERCENT,
                batch: None,
                tight: false,
            },
            Setting {
                below: usize::MAX,
                claims_percent: NARROW_CLAIMS_PERCENT,
                batch: Some(1),
                tight: false,
            },
            Setting {
                below: usize::MAX,
                claims_percent: 2,
                batch: Some(3),
                tight: false,
            },
            Setting {
                below: usize::MAX,
                claims_percent: NARROW_CLAIMS_PERCENT,
                batch: None,
                tight: true,
            },
        ];
        // The first also cut short: the loop stops at the depth the pass may not pass.
        let runs = problems
            .iter()
            .map(|&sfen| (sfen, u32::MAX))
            .chain([(problems[0], 31)]);
        for problem in runs {
            let sfen = problem.0;
            for cap in [1, 1000] {
                let one = pass(problem, 1, cap, settings[0]);
                assert!(one.levels.len() > 4, "{sfen}: {} levels", one.levels.len());
                for threads in [2, 3] {
                    for setting in settings {
                        let many = pass(problem, threads, cap, setting);
                        assert_eq!(
                            one.outcome, many.outcome,
                            "{sfen}, cap {cap}, {threads} threads, {setting:?}"
                        );
                        assert!(
                            one.levels == many.levels,
                            "{sfen}, cap {cap}, {threads} threads, {setting:?}: levels differ"
                        );
                    }
                }
            }
        }
        // The tight budget had the threads leave keys to the calling thread.
        assert!(super::LEFTOVERS.load(std::sync::atomic::Ordering::Relaxed) > 0);
    }
}

#[cfg(test)]
mod stop_tests {
    use super::super::{search_in_pool, BfsLimits, BfsOutcome, DiskBudget, GiveUp};
    use super::{NARROW_BELOW, NARROW_CLAIMS_PERCENT};
    use crate::search::helpmate::{Abort, Interrupt};
    use crate::shogi::Position;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    /// A stop during the narrow loop ends every thread's part within a poll: the pass gives
    /// up at once, stopped, with a bound below the problem's length (加藤徹「寿限無」, 19,447
    /// plies: some 9,700 narrow levels, a second or more to solve), at 2 and 4 threads; so does
    /// a stop during the per-level threaded expansion (the loop off), and one during the
    /// one-thread pass (whose levels here are each fewer nodes than a poll's interval).
    #[test]
    fn a_stop_ends_the_narrow_loop_at_once() {
        let root = Position::from_sfen(
            "l6ss/1KB1r2bL/1GL3ss1/k1l3p1P/1nnn1p1P1/Pn2p1P2/2PP1P3/1P2P4/9 b r3g6p 1",
        )
        .unwrap();
        for (threads, narrow_below) in [(2, NARROW_BELOW), (4, NARROW_BELOW), (2, 0), (1, 0)] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let stop = AtomicBool::new(false);
            let limits = BfsLimits {
                level_log: None,
                budget_bytes: 1 << 30,
                solution_cap: 2,
                max_plies: u32::MAX,
                interrupt: Interrupt {
                    stop: &stop,
                    deadline: None,
                    mate_elsewhere: None,
                },
                pool: (threads > 1).then_some(&pool),
                parallel_from_positions: 16,
                parallel_slice_positions: 1 << 16,
                parallel_batch_positions: None,
                narrow_below,
                narrow_claims_percent: NARROW_CLAIMS_PERCENT,
                narrow_key_allowance: usize::MAX,
                disk: DiskBudget::default(),
                give_up_when_bushy: false,
                threads_from_nodes: 0,
            };
            let stopped_at = std::sync::Mutex::new(None);
            let (outcome, _pass) = std::thread::scope(|scope| {
                scope.spawn(|| {
                    std::thread::sleep(Duration::from_millis(150));
                    *stopped_at.lock().unwrap() = Some(Instant::now());
                    stop.store(true, Ordering::Relaxed);
                });
                let mut nodes = 0;
                search_in_pool(
                    &root,
                    &limits,
                    &mut nodes,
                    &mut |_| {},
                    &mut || 0,
                    &mut crate::search::bfs::Caches::new(),
                )
            });
            let late = stopped_at.lock().unwrap().expect("stopped").elapsed();
            assert!(
                late < Duration::from_millis(100),
                "{threads} threads: {late:?}"
            );
            match outcome {
                BfsOutcome::GaveUp {
                    lower_bound,
                    reason: GiveUp::Aborted(Abort::Stopped),
                } => assert!((3..19_447).contains(&lower_bound), "{lower_bound}"),
                _ => panic!("{threads} threads: not stopped"),
            }
        }
    }

    #[test]
    fn claims_pages_are_written_ahead_once_and_slots_work_as_before() {
        use std::sync::atomic::Ordering::Relaxed;
        let claims = crate::search::bfs::narrow::Claims::new().unwrap();
        claims.prepare(1023);
        assert_eq!(claims.written.load(Relaxed), 2048);
        // A narrower level later writes nothing more.
        claims.prepare(255);
        assert_eq!(claims.written.load(Relaxed), 2048);
        let key = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
        assert_eq!(claims.lookup(key, 1023), 0);
        let (slot, taken) = claims.slot(key, 1023).unwrap();
        assert!(taken);
        assert_eq!(claims.slot(key, 1023), Some((slot, false)));
        // A wider one writes the pages beyond, and leaves the slot taken.
        claims.prepare(4095);
        assert_eq!(claims.written.load(Relaxed), 8192);
        assert_eq!(claims.slot(key, 1023), Some((slot, false)));
        claims.free(&[slot as u32]);
        assert_eq!(claims.slot(key, 1023), Some((slot, true)));
    }
}
