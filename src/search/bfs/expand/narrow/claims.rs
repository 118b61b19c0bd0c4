//! The claims table: the keys of a level's new positions, shared by all the threads, each with
//! the least order a copy of it was met with and where that copy sits.

use crate::search::memory::ZeroedTable;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where a copy's order sits in a claim, above its thread (8 bits) and entry (16 bits).
pub(super) const CLAIM_ORDER_SHIFT: u32 = 24;

/// Slots of a claims table: at most, and at least on a level. A level uses two and a half
/// times as many as the new positions it is expected to make (as many as it has, times its
/// own growth over the level before): a table larger than the core's own cache is read from
/// further away at every look-up (on `wfp-56-12` 2571, whose levels hold 1,000 to 4,000
/// positions, sixteen slots a position made the look-ups 13% of the run).
pub(super) const CLAIM_SLOTS: usize = 1 << 16;

pub(super) const MIN_CLAIM_SLOTS: usize = 1 << 10;

/// The keys of new positions of one level, shared by all the threads: open addressing, two
/// words a slot, the key's word (0: free) and its claim (0: none; else the complement of the
/// least order met, above the thread and entry holding that copy, so that a lower order is a
/// greater word). Threads take slots and lower claims with atomic exchanges. Slots taken are
/// freed by the thread that took them once the level is over (see `Local::taken`).
pub(super) struct Claims {
    pub(super) words: ZeroedTable<u64>,
    /// Words whose pages have been written (see `prepare`).
    pub(super) written: AtomicUsize,
}

/// A claim for the copy `entry` of `thread`, met with `order`.
#[inline]
pub(super) fn claim_word(order: u64, thread: usize, entry: usize) -> u64 {
    !(order << CLAIM_ORDER_SHIFT | (thread as u64) << 16 | entry as u64)
}

/// The order, thread and entry of a claim.
#[inline]
pub(super) fn claim_parts(claim: u64) -> (u64, usize, usize) {
    let packed = !claim;
    (
        packed >> CLAIM_ORDER_SHIFT,
        (packed >> 16 & 0xff) as usize,
        (packed & 0xffff) as usize,
    )
}

impl Claims {
    pub(super) fn new() -> Option<Claims> {
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
    pub(super) fn prepare(&self, mask: usize) {
        let end = 2 * (mask + 1);
        let written = self.written.load(Ordering::Relaxed);
        if end > written {
            self.words.write_pages(written..end);
            self.written.store(end, Ordering::Relaxed);
        }
    }

    #[inline]
    pub(super) fn word(key: u128) -> u64 {
        match key as u64 {
            0 => (key >> 64) as u64 | 1,
            low => low,
        }
    }

    #[inline]
    pub(super) fn home(key: u128, mask: usize) -> usize {
        (key >> 64) as usize & mask
    }

    /// Starts loading `key`'s home slot, to be read and, most often, claimed (see
    /// `prefetch_write`).
    #[inline]
    pub(super) fn prefetch(&self, key: u128, mask: usize) {
        crate::search::machine::prefetch_write(&self.words.as_atomic()[2 * Self::home(key, mask)]);
    }

    /// The claim on `key` (0: none).
    #[inline]
    pub(super) fn lookup(&self, key: u128, mask: usize) -> u64 {
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
    pub(super) fn slot(&self, key: u128, mask: usize) -> Option<(usize, bool)> {
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
    pub(super) fn claim(&self, slot: usize, mine: u64) -> Result<u64, ()> {
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
    pub(super) fn free(&self, slots: &[u32]) {
        let words = self.words.as_atomic();
        for &slot in slots {
            words[2 * slot as usize].store(0, Ordering::Relaxed);
            words[2 * slot as usize + 1].store(0, Ordering::Relaxed);
        }
    }
}

/// The slots of a claims table for a level of `positions` positions after one of `before`,
/// less one (see [`CLAIM_SLOTS`]).
pub(super) fn claim_mask(positions: usize, before: usize) -> usize {
    let expected = (positions * positions / before.max(1)).max(positions);
    (expected * 5 / 2)
        .next_power_of_two()
        .clamp(MIN_CLAIM_SLOTS, CLAIM_SLOTS)
        - 1
}
