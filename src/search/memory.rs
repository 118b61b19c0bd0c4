//! Big tables of plain records (the transposition table, the breadth-first key set) in memory
//! mapped from the system rather than taken from the allocator, for two measured reasons:
//!
//! - the system hands such pages out zeroed and only when first touched, so a table that a short
//!   search never fills costs nothing, and zeroing it is free;
//! - on Linux the mapping is marked for transparent huge pages. Probes land at random all over
//!   a table of gigabytes, and with 4 KB pages nearly every one also misses the TLB. Measured on
//!   the reference machine (which gives huge pages only to memory that asks for them), huge
//!   pages together with clusters aligned to cache lines (the allocator had put them 16 bytes
//!   off, so every probe touched two lines) made `kyozume bench` 20-30% faster (6.0 / 6.4 s
//!   against 8.1 / 7.5 s, runs alternated with the old build). The breadth-first key set's
//!   shards and frozen sets are asked for them too: on 加藤徹 162a (6,935 plies, gigabytes of
//!   keys) the pass reached 4,000 plies in 298 s instead of 378 s, its look-ups' page walks
//!   gone (its shards, grown into tables mapped with `MAP_POPULATE`, had had 2 MB of huge pages
//!   in 2.7 GB); on problems whose shards stay below a huge page nothing changes.
//!
//! The mapping is page-aligned, so records aligned to a cache line stay on one line.
//!
//! Tables under [`HEAP_TABLE_BYTES`] come from the allocator instead: the breadth-first key set
//! starts 64 shards at 128 bytes and doubles them, and a mapping each time (made, then unmapped
//! when outgrown) cost two system calls and, at two threads, an interrupt of the other thread
//! to flush its address translations at every unmapping.

use bytemuck::Pod;
use memmap2::MmapMut;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A fixed number of `T`, all zero at first.
pub(crate) struct ZeroedTable<T> {
    storage: Storage<T>,
    len: usize,
    /// Where the records start, found once through `bytemuck`'s checked casts (see
    /// `holding`): made at every look-up, those checks (which storage, bounds, alignment, size)
    /// were some 20 instructions each, and with the key set's and the dead-position cache's
    /// look-ups 3.7% of the instructions of wfp-56-12 2571's pass at one thread (cachegrind:
    /// 48.96 G, then 47.12 G). Every view of the records is made from it.
    start: NonNull<T>,
}

// SAFETY: the table owns its records as a `Vec` or a mapping would (`start` points into its
// own storage and is never shared apart from it), so it may go to, and be shared between,
// threads as such an owner of `T` may.
unsafe impl<T: Send> Send for ZeroedTable<T> {}
// SAFETY: as for `Send`; a shared table gives out only shared views.
unsafe impl<T: Sync> Sync for ZeroedTable<T> {}

enum Storage<T> {
    /// A small table, from the allocator: words, the table starting this many bytes into them
    /// (see `on_heap`).
    Heap(Vec<u64>, usize, PhantomData<T>),
    /// A big one, mapped from the system.
    Mapped(MmapMut, PhantomData<T>),
}

/// Tables smaller than this come from the allocator (see the module notes); the transposition
/// table (1 MB at least) is always mapped, and so aligned to its cache lines.
const HEAP_TABLE_BYTES: usize = 256 * 1024;

/// Bytes of heap tables freed since the heaps were last trimmed (see [`release_freed_tables`]).
static HEAP_TABLE_BYTES_FREED: AtomicUsize = AtomicUsize::new(0);

/// Trimming is worth its walk of the heaps past this many bytes of freed tables.
const TRIM_AFTER_FREED_BYTES: usize = 4 << 20;

const PAGE_BYTES: usize = 4096;
const HUGE_PAGE_BYTES: usize = 2 * 1024 * 1024;

/// Marks a mapping of `bytes` for transparent huge pages when it can hold one. Only a hint:
/// without them the table works the same, slower.
fn ask_for_huge_pages(map: &MmapMut, bytes: usize) {
    // (Not under Miri, which checks this module's `unsafe` and has no `madvise`.)
    #[cfg(all(target_os = "linux", not(miri)))]
    if bytes >= HUGE_PAGE_BYTES {
        let _ = map.advise(memmap2::Advice::HugePage);
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    let _ = (map, bytes);
}

impl<T: Pod> ZeroedTable<T> {
    /// `len` records, zeroed lazily by the system (a small table on the heap: at once). `None`
    /// when the address space or memory cannot be had.
    pub(crate) fn new(len: usize) -> Option<ZeroedTable<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        if bytes < HEAP_TABLE_BYTES {
            return Some(Self::on_heap(len));
        }
        // A mapping cannot be empty; the extra bytes of a one-byte map are never viewed.
        let map = MmapMut::map_anon(bytes.max(1)).ok()?;
        ask_for_huge_pages(&map, bytes);
        Some(Self::holding(Storage::Mapped(map, PhantomData), len))
    }

    /// Written, not allocated zeroed: `vec![zero; len]` takes fresh heap pages as they come
    /// (the allocator knows they are zero), and as the tables are read before they are written
    /// those pages would be mapped twice (see `new_populated`; 寿限無 19447 at two threads: 1.3%
    /// of the time in the flushes, from the key-set shards' growth).
    /// The table is aligned by hand within plain words: a `Vec<T>` of a type aligned to a cache
    /// line is an aligned allocation, which glibc serves by splitting off what lies before the
    /// boundary, and the key-set shards' tables, reallocated as they grow, left the heap so
    /// fragmented that 寿限無 19447's peak RSS went from 42 to 58 MB.
    #[allow(
        clippy::slow_vector_initialization,
        reason = "written, not allocated zeroed: above"
    )]
    fn on_heap(len: usize) -> ZeroedTable<T> {
        let bytes = len * std::mem::size_of::<T>();
        let slack = std::mem::align_of::<T>().saturating_sub(8);
        let mut words = Vec::with_capacity((bytes + slack).div_ceil(8));
        words.resize((bytes + slack).div_ceil(8), 0u64);
        let start = (words.as_ptr() as usize).wrapping_neg() % std::mem::align_of::<T>().max(8);
        Self::holding(Storage::Heap(words, start, PhantomData), len)
    }

    /// `len` zeroed records whose pages the system provides now, in one call: for a table that
    /// is about to be written all over. Lazily zeroed pages that are read before they are
    /// written are mapped twice, and the second time the system interrupts every other thread
    /// of the process to flush its address translations (a key-set shard grown at two threads:
    /// 1461 went from 6.05 s to 5.37 s).
    pub(crate) fn new_populated(len: usize) -> Option<ZeroedTable<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        #[cfg(test)]
        if tests::POPULATED_FAIL.get() {
            return None;
        }
        if bytes < HEAP_TABLE_BYTES {
            return Some(Self::on_heap(len));
        }
        if bytes >= HUGE_PAGE_BYTES && cfg!(target_os = "linux") {
            // Huge pages come at a page's first touch, and only to a mapping that asked before
            // (`populate` would take small ones): mapped, advised, then written page by page.
            let map = MmapMut::map_anon(bytes).ok()?;
            ask_for_huge_pages(&map, bytes);
            let mut table = Self::holding(Storage::Mapped(map, PhantomData), len);
            table.prefault();
            return Some(table);
        }
        let map = memmap2::MmapOptions::new()
            .len(bytes.max(1))
            .populate()
            .map_anon()
            .ok()?;
        Some(Self::holding(Storage::Mapped(map, PhantomData), len))
    }

    /// Touches every page now, so that the page faults are not taken during a search.
    pub(crate) fn prefault(&mut self) {
        if let Storage::Mapped(..) = self.storage {
            // (Through the records' view: see `start`.)
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(self.as_mut_slice());
            for offset in (0..bytes.len()).step_by(PAGE_BYTES) {
                bytes[offset] = 0;
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The table of `len` records in `storage`, their start found (see `start`) through an
    /// exclusive borrow so that the address may be written through.
    fn holding(storage: Storage<T>, len: usize) -> ZeroedTable<T> {
        let mut table = ZeroedTable {
            storage,
            len,
            start: NonNull::dangling(),
        };
        table.start = NonNull::from(table.records_found()).cast();
        table
    }

    /// The records, through the checked casts.
    fn records_found(&mut self) -> &mut [T] {
        let len = self.len * std::mem::size_of::<T>();
        match &mut self.storage {
            Storage::Heap(words, start, _) => bytemuck::cast_slice_mut(
                &mut bytemuck::cast_slice_mut::<u64, u8>(words)[*start..*start + len],
            ),
            Storage::Mapped(map, _) => bytemuck::cast_slice_mut(&mut map[..len]),
        }
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: `start` is where `holding` found `len` records of `T`, aligned, in `storage`,
        // which `self` owns and which never moves or changes size (a `Vec` never grown, or a
        // mapping), and which is reached only through `start` from then on; `T: Pod` makes any
        // bytes there a valid `T`. The shared borrow of `self` rules out `as_mut_slice` while
        // this view lives.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }

    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`; the exclusive borrow of `self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr(), self.len) }
    }
}

impl<T> Drop for ZeroedTable<T> {
    fn drop(&mut self) {
        if let Storage::Heap(words, ..) = &self.storage {
            HEAP_TABLE_BYTES_FREED.fetch_add(words.capacity() * 8, Ordering::Relaxed);
        }
    }
}

impl ZeroedTable<u64> {
    /// The words as atomics, for a table that threads read and write at once (the shared
    /// transposition table). Relaxed loads and stores of them compile to plain moves.
    #[inline]
    pub(crate) fn as_atomic(&self) -> &[AtomicU64] {
        // Holds on every 64-bit target (a heap table is only `u64`-aligned).
        const {
            assert!(std::mem::align_of::<u64>() == std::mem::align_of::<AtomicU64>());
        }
        // SAFETY: `AtomicU64` has the same size and bit validity as `u64`, and the words are
        // aligned for it (the mapping is page-aligned; a small table's `Vec<u64>` is aligned
        // for `u64`, the same by the constant assertion above). The view is made from `start`,
        // which was taken from an exclusive borrow and so may be written through (made from a
        // `&[u64]`, as it was, Miri's Stacked Borrows check rejected the atomics' writes). The
        // shared borrow of `self` rules out any `&mut` view while this one lives, and the
        // table's owner reads the words only through this view while it is shared. The
        // alternative without `unsafe`, a `Vec<AtomicU64>`, would write every word up front:
        // the lazily zeroed mapping is what keeps a big table free until used (measured in this
        // module's notes).
        unsafe { std::slice::from_raw_parts(self.start.as_ptr().cast::<AtomicU64>(), self.len) }
    }

    /// Stores a zero in each page of the words `range`, so that the first touch of those pages
    /// is a write. A page first read is mapped to the system's shared zero page and mapped again
    /// at its first write, and at two threads each second mapping interrupts the other CPU to
    /// flush its address translations (see [`ZeroedTable::new_populated`]). The words must all be
    /// zero, and no other thread may touch them until the caller hands the table on (a barrier,
    /// or the threads' start).
    pub(crate) fn write_pages(&self, range: std::ops::Range<usize>) {
        if let Storage::Mapped(..) = self.storage {
            const WORDS_A_PAGE: usize = PAGE_BYTES / 8;
            let words = self.as_atomic();
            let end = range.end.min(words.len());
            for word in (range.start.next_multiple_of(WORDS_A_PAGE)..end).step_by(WORDS_A_PAGE) {
                words[word].store(0, std::sync::atomic::Ordering::Relaxed);
            }
            // The page the range starts in, if it starts within one.
            if !range.start.is_multiple_of(WORDS_A_PAGE) && range.start < end {
                words[range.start].store(0, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// Sets the allocator's two bounds once, before any thread starts. Blocks of 1 MB or more are
/// mapped from the system and unmapped when freed (a vector growing past it moves by remapping,
/// not copying), so that what a breadth-first pass frees leaves the process at once and
/// `USI_Hash` bounds the resident memory: with glibc's own bounds (raised as blocks are freed,
/// up to 32 MB) a pass on 加藤徹 4197 at `USI_Hash 256` kept 100-200 MB of freed levels in
/// its heaps beyond what it accounted. Smaller blocks (narrow levels' vectors, reused from
/// level to level) stay in the heap, whose free top is handed back past 4 MB. Fixed from the
/// start rather than left to glibc, which maps every block over 128 KB afresh until it raises
/// its bound (each breadth-first level's vectors then came as fresh pages, every page a
/// fault). `kyozume bench` at two threads and `bench --long` on the medium long problems
/// measured the same with these bounds as with 32 MB and 64 MB (three alternated pairs each).
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets glibc's tuning parameters, under its own lock; no memory is
    // touched. Both values are within glibc's documented ranges.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 4 << 20);
    }
}

/// Hands memory the allocator holds free back to the system. glibc keeps freed blocks of a few
/// megabytes in its heaps, where they still count in the process's resident memory: when the
/// breadth-first links of 加藤徹 6935 (7 GB in thousands of vectors) moved to disk, the pass
/// accounted 11 GB but the process stayed at 15.5 GB, and grew to 17.5 GB as the later, wider
/// levels' vectors could not reuse the holes. Called when memory is short, after a release.
pub(crate) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own heaps, under their locks, and returns unused
    // pages to the system; it touches no memory in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Hands the heap tables freed since the last call back to the system, once they add up to a
/// few megabytes; called after each breadth-first level. The key-set shards outgrow the heap
/// together (64 tables just under [`HEAP_TABLE_BYTES`] freed within a level or two), and glibc
/// kept the holes resident below its heap's top: 森茂 1965 at the defaults peaked at 66-70 MB,
/// 15 MB of them such holes.
pub(crate) fn release_freed_tables() {
    if HEAP_TABLE_BYTES_FREED.load(Ordering::Relaxed) >= TRIM_AFTER_FREED_BYTES {
        HEAP_TABLE_BYTES_FREED.store(0, Ordering::Relaxed);
        release_freed_memory();
    }
}

/// Runs `f` with every populated table this thread asks for refused, as when memory runs out
/// (a test's way to see what the callers make of that).
#[cfg(test)]
pub(crate) fn with_populated_tables_refused<R>(f: impl FnOnce() -> R) -> R {
    tests::POPULATED_FAIL.set(true);
    let result = f();
    tests::POPULATED_FAIL.set(false);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Whether `new_populated` refuses every table on this thread.
        pub(super) static POPULATED_FAIL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    #[test]
    fn tables_start_zeroed_and_keep_what_is_written() {
        let mut table = ZeroedTable::<[u64; 8]>::new(100_000).unwrap();
        assert_eq!(table.len(), 100_000);
        assert!(table.as_slice().iter().all(|r| *r == [0; 8]));
        table.prefault();
        table.as_mut_slice()[99_999][7] = 42;
        assert_eq!(table.as_slice()[99_999][7], 42);
        assert_eq!(table.as_slice().as_ptr() as usize % 4096, 0);
        // The view is made from where the records were found: moving the table, or handing it
        // to another thread, keeps it.
        let moved = std::thread::spawn(move || vec![table]).join().unwrap();
        assert_eq!(moved[0].as_slice()[99_999][7], 42);
        let small_moved = std::thread::spawn(|| {
            let mut small = ZeroedTable::<[u64; 8]>::new(10).unwrap();
            small.as_mut_slice()[9][0] = 3;
            Box::new(small)
        })
        .join()
        .unwrap();
        assert_eq!(small_moved.as_slice()[9], [3, 0, 0, 0, 0, 0, 0, 0]);
        let empty = ZeroedTable::<[u32; 3]>::new(0).unwrap();
        assert!(empty.as_slice().is_empty());
        let mut small = ZeroedTable::<u64>::new_populated(16).unwrap();
        assert!(matches!(small.storage, Storage::Heap(..)));
        assert!(small.as_slice().iter().all(|&w| w == 0));
        small.as_mut_slice()[15] = 7;
        assert_eq!(
            small.as_atomic()[15].load(std::sync::atomic::Ordering::Relaxed),
            7
        );
    }

    /// A small table of records aligned to a cache line starts on one, wherever the allocator
    /// put its words.
    #[test]
    fn small_tables_are_aligned_for_their_records() {
        #[repr(C, align(64))]
        #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
        struct Line([u64; 8]);
        for len in [1, 3, 100, 1000] {
            let mut table = ZeroedTable::<Line>::new(len).unwrap();
            assert!(matches!(table.storage, Storage::Heap(..)));
            assert_eq!(table.as_slice().as_ptr() as usize % 64, 0);
            assert_eq!(table.as_slice().len(), len);
            table.as_mut_slice()[len - 1].0[7] = 9;
            assert_eq!(table.as_slice()[len - 1].0[7], 9);
            assert!(table.as_slice()[..len - 1].iter().all(|l| l.0 == [0; 8]));
        }
    }

    #[test]
    fn writing_pages_ahead_keeps_the_words_zero() {
        use std::sync::atomic::Ordering;
        // Mapped: 1 MB of words (512 to a page).
        let table = ZeroedTable::<u64>::new(1 << 17).unwrap();
        assert!(matches!(table.storage, Storage::Mapped(..)));
        let words = table.as_atomic();
        words[700].store(5, Ordering::Relaxed);
        // Ranges starting inside a page, on a boundary, past the end, and empty.
        for range in [3..700, 1024..1500, 130_000..200_000, 600..600] {
            table.write_pages(range);
        }
        assert_eq!(words[700].load(Ordering::Relaxed), 5);
        assert_eq!(
            words
                .iter()
                .filter(|w| w.load(Ordering::Relaxed) != 0)
                .count(),
            1
        );
        // On the heap: nothing to do, nothing changed.
        let small = ZeroedTable::<u64>::new(100).unwrap();
        small.write_pages(0..100);
        assert!(small.as_slice().iter().all(|&w| w == 0));
    }
}
