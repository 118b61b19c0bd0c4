//! The positions the threads have made candidates of on the current level (see `Repeats`).

use crate::search::memory::ZeroedTable;
use std::sync::atomic::Ordering;

/// Keys the threads have made candidates of on the current level, in a small lossy table that
/// all of them share. The key set learns a level's keys only when the owners insert them, so a
/// position met twice on a level (two move orders from parents near or far apart) would
/// otherwise be played, tested and packed twice, the second copy dropped by its owner
/// (forest-06-10_97: 400 K of its 1.9 M children). A copy found here after the first goes on
/// unplayed (counting, as a further way in). A copy missed (overwritten, or looked up before
/// the other thread noted it) is only played again.
///
/// Each slot keeps the candidate's order and a check word, the order XORed with a tag of the
/// key and the level's stamp, and only a copy that comes after the one noted is a repeat: the
/// copy noted was pushed with its position, so the first copy of every key, which its owner
/// meets first, has one, whichever thread noted what and when. The two words are written
/// one after the other without a lock: a slot read while another thread rewrites it (one
/// write's order, another's check) verifies for no key but by a 64-bit accident, and two
/// notes of one key with different orders never verify as each other. (With a table a thread,
/// the copies met on the other thread, 171 K on forest-06-10_97 at two threads, were all played
/// twice.)
pub(super) struct Repeats {
    /// Two words a slot: the order, then the order XORed with the tag.
    pub(super) words: ZeroedTable<u64>,
    /// The slots in use on the current slice, less one (see `fit`).
    pub(super) mask: usize,
}

impl Repeats {
    const SLOTS: usize = 1 << 16;
    /// Memory the table takes (two words a slot).
    pub(super) const BYTES: usize = 2 * Self::SLOTS * 8;
    const MIN_SLOTS: usize = 1 << 10;

    /// The pages are provided at once, as slots are read before they are written (see
    /// [`ZeroedTable::new_populated`]; gold_only_5 at two threads: 1,042 page faults with the
    /// table taken lazily, 501 with it provided).
    pub(super) fn new() -> Repeats {
        Repeats {
            words: ZeroedTable::new_populated(2 * Self::SLOTS).expect("a 1 MB repeats table"),
            mask: Self::SLOTS - 1,
        }
    }

    /// Uses only as many slots as a slice of `positions` positions needs (some eight
    /// children each, the slots in use a quarter full at most). The whole table, read at
    /// random, does not stay in a core's own cache beside the key set, and on a long problem
    /// of narrow levels its misses were half the expansion's look-ups at two threads (寿限無
    /// 19447: `Expansion::resolve` 1,807 -> 846 samples, the run's CPU 6% less); a few
    /// kilobytes do. The stamp in each tag keeps slots left from other levels from matching.
    /// Called between slices, when no thread reads the table.
    pub(super) fn fit(&mut self, positions: usize) {
        self.mask = (positions * 32)
            .next_power_of_two()
            .clamp(Self::MIN_SLOTS, Self::SLOTS)
            - 1;
    }

    /// The slot's first word.
    #[inline]
    pub(super) fn slot(&self, key: u128) -> usize {
        2 * ((key >> 64) as usize & self.mask)
    }

    /// What a slot keeps of `key` on the level stamped `stamp`: a key noted on another level
    /// (or none, all zero) matches only by a 64-bit accident.
    #[inline]
    fn tag(key: u128, stamp: u64) -> u64 {
        key as u64 ^ stamp.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    /// Whether a candidate of `key` came before `order` on the level stamped `stamp`.
    #[inline]
    pub(super) fn met_before(&self, key: u128, stamp: u64, order: u64) -> bool {
        let at = self.slot(key);
        let words = &self.words.as_atomic()[at..at + 2];
        let noted = words[0].load(Ordering::Relaxed);
        let check = words[1].load(Ordering::Relaxed);
        noted ^ check == Self::tag(key, stamp) && noted < order
    }

    /// Starts loading `key`'s slot, to be read and perhaps written (see `prefetch_write`).
    #[inline]
    pub(super) fn prefetch(&self, key: u128) {
        crate::search::machine::prefetch_write(&self.words.as_slice()[self.slot(key)]);
    }

    #[inline]
    pub(super) fn note(&self, key: u128, stamp: u64, order: u64) {
        let at = self.slot(key);
        let words = &self.words.as_atomic()[at..at + 2];
        words[0].store(order, Ordering::Relaxed);
        words[1].store(order ^ Self::tag(key, stamp), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::bfs::expand::parallel::slice::ORDER_SHIFT;
    use std::sync::atomic::AtomicBool;
    use std::time::Instant;

    /// One thread rewrites a slot with two keys in turn while another reads it: a read that
    /// mixes one write's order with the other's check word must not verify. Key A is only ever
    /// noted numbered 10, so a copy numbered 7 is never a repeat of it; key B, noted as 5,
    /// shares A's slot. Storing the tag and the order as they are (no XOR) failed this in five
    /// runs out of five on two CPUs.
    #[test]
    fn a_slot_rewritten_meanwhile_never_verifies_for_another_key() {
        let repeats = Repeats::new();
        let high = 0x0123_4567_89ab_cdefu128 << 64;
        let (a, b) = (high | 0x1111, high | 0x2222);
        let stamp = 3;
        let stop = AtomicBool::new(false);
        let (false_repeats, seen_a) = std::thread::scope(|scope| {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    repeats.note(a, stamp, 10);
                    repeats.note(b, stamp, 5);
                }
            });
            // Reads go on until the writer has been seen at work (on a busy machine it may
            // start late), for a few seconds at most.
            let (mut false_repeats, mut seen_a, mut reads) = (0, false, 0);
            let start = Instant::now();
            while (reads < 4_000_000 || !seen_a) && start.elapsed().as_secs() < 5 {
                false_repeats += usize::from(repeats.met_before(a, stamp, 7));
                seen_a |= repeats.met_before(a, stamp, 11);
                reads += 1;
            }
            stop.store(true, Ordering::Relaxed);
            (false_repeats, seen_a)
        });
        assert!(seen_a, "the reader saw key A's note");
        assert_eq!(false_repeats, 0);
    }

    #[test]
    fn a_repeat_is_only_a_later_copy_on_the_same_level() {
        let repeats = Repeats::new();
        let key = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
        let (level, order) = (7, (3u64 << ORDER_SHIFT) | 12);
        assert!(!repeats.met_before(key, level, order + 1));
        repeats.note(key, level, order);
        assert!(repeats.met_before(key, level, order + 1));
        assert!(repeats.met_before(key, level, (4 << ORDER_SHIFT) | 1));
        // The copy noted itself, and copies that come before it, are not repeats.
        assert!(!repeats.met_before(key, level, order));
        assert!(!repeats.met_before(key, level, (2 << ORDER_SHIFT) | 40));
        // Another level, or another key in the same slot, is not a repeat.
        assert!(!repeats.met_before(key, level + 1, order + 1));
        assert!(!repeats.met_before(key ^ 1, level, order + 1));
        // A newer key takes the slot: the older one is forgotten, never confused with it.
        let other = key ^ (1 << 3);
        repeats.note(other, level, order + 5);
        assert!(repeats.met_before(other, level, order + 6));
        assert!(!repeats.met_before(key, level, order + 6));
    }
}
