//! What the loop's threads share between barriers without a lock: a cell each phase either one
//! thread writes or all read, the key set's shards as step 2 shares them out, and the next
//! level's index as step 2 fills it.

use crate::search::bfs::keys::{owner_of, Shard};
use crate::search::bfs::levels::level::Link;
use std::cell::UnsafeCell;

/// A value the loop's threads take turns with: between two barriers, either one thread writes
/// it and no other touches it, or any thread reads it and none writes it (each use says which).
/// The barriers order one phase's writes before the next phase's reads. Shared through a cell
/// rather than a lock: a lock taken and let go by every thread in every phase is a round trip
/// between the CPUs each time, on levels that last some 40 microseconds. Each on lines of its
/// own: the threads' cells sit side by side in vectors, and one thread's pushes to its list
/// (its vectors' lengths) would otherwise take the line from a thread reading the next cell.
#[repr(align(128))]
pub(super) struct PhasedCell<T>(pub(super) UnsafeCell<T>);

// SAFETY: the loop keeps the discipline above, so a `&mut` to the value never exists beside any
// other reference to it; `T: Send` because the value is used from several threads in turn.
unsafe impl<T: Send> Sync for PhasedCell<T> {}

impl<T> PhasedCell<T> {
    pub(super) fn new(value: T) -> PhasedCell<T> {
        PhasedCell(UnsafeCell::new(value))
    }

    /// # Safety
    /// No thread writes the value in this phase.
    pub(super) unsafe fn get(&self) -> &T {
        // SAFETY: by the caller's promise, no `&mut` to the value exists now.
        unsafe { &*self.0.get() }
    }

    /// # Safety
    /// No other thread reads or writes the value in this phase.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn get_mut(&self) -> &mut T {
        // SAFETY: by the caller's promise, no other reference to the value is in use now.
        unsafe { &mut *self.0.get() }
    }
}

/// The key set's shards, as step 2 shares them out: each thread inserts into the shards it
/// owns (`keyset::owner_of`), and only into those, so no shard is written by two
/// threads or read by another while it is written (in that step nobody reads the set
/// otherwise). A raw pointer, as the set is borrowed whole by the run.
pub(super) struct Shards {
    pub(super) first: *mut Shard,
    pub(super) len: usize,
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
    pub(super) unsafe fn owned(&self, shard: usize, thread: usize, threads: usize) -> &mut Shard {
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
pub(super) struct Placed {
    pub(super) index: *mut u32,
    pub(super) first: *mut Link,
    pub(super) len: usize,
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
    pub(super) fn over(index: &mut Vec<u32>, first: &mut Vec<Link>, len: usize) -> Placed {
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
    pub(super) unsafe fn put(&self, place: usize, at: u32, link: Link) {
        assert!(place < self.len, "a place within the level");
        // SAFETY: in bounds (asserted) of buffers that live and keep their size from the first
        // barrier to the second; the caller's promise keeps the writes apart.
        unsafe {
            *self.index.add(place) = at;
            *self.first.add(place) = link;
        }
    }
}

/// The calling thread's verdicts at the second barrier (`Run::verdict`): the loop goes on,
/// or every thread leaves it.
pub(super) const GO_ON: u8 = 0;
pub(super) const LEAVE: u8 = 1;

/// What the threads raise in `Run::events` during a level, for the calling thread to look at:
/// a thread found a mate; a thread was interrupted (its reason in its `Local::abort`); the level
/// is to be given back (a table or list ran out of room).
pub(super) const EVENT_MATE: u8 = 1;
pub(super) const EVENT_ABORT: u8 = 2;
pub(super) const EVENT_GIVE_BACK: u8 = 4;
