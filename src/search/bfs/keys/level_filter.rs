//! A small filter in front of an owner's index of the keys it made new on the level being
//! made (`parallel/insert.rs`, `Inserted::local_index`). Counting, every child whose key is already
//! in the key set is asked whether it is one of this level's new positions (another way into
//! it); most are not, and each such question was a cache miss in an index of a million keys (on
//! 加藤徹 9029, 5% of the samples before any freeze). The filter answers most of them from a
//! few hundred kilobytes that stay in the caches.
//!
//! Two bits a key in one 64-bit word, eight or more bits a key: a key not inserted passes about
//! one time in twenty; a key inserted always does.

/// Bits of filter a key, as sized for the keys expected.
const BITS_PER_KEY: usize = 8;
/// The smallest filter (bits).
const MIN_BITS: usize = 1 << 12;

#[derive(Default)]
pub(crate) struct LevelFilter {
    words: Vec<u64>,
    /// `words.len() - 1` (a power of two less one), or 0 while empty.
    mask: u64,
}

impl LevelFilter {
    /// Emptied and sized for about `keys` keys.
    pub(crate) fn reset(&mut self, keys: usize) {
        let bits = keys
            .saturating_mul(BITS_PER_KEY)
            .max(MIN_BITS)
            .next_power_of_two();
        self.words.clear();
        self.words.resize(bits / 64, 0);
        self.mask = (bits / 64 - 1) as u64;
    }

    /// The word and the two bits of `key`: from its bits 64-127, which neither the key set's
    /// slots (the low 64) nor the index's map (the two halves folded) use alone.
    #[inline]
    fn place(&self, key: u128) -> (usize, u64) {
        let high = (key >> 64) as u64;
        let mixed = high.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let word = (mixed >> 12) & self.mask;
        let bits = 1 << (mixed >> 58) | 1 << ((mixed >> 52) & 63);
        (word as usize, bits)
    }

    #[inline]
    pub(crate) fn insert(&mut self, key: u128) {
        let (word, bits) = self.place(key);
        self.words[word] |= bits;
    }

    /// False only if `key` was not inserted since the last `reset`.
    #[inline]
    pub(crate) fn may_hold(&self, key: u128) -> bool {
        if self.words.is_empty() {
            return false;
        }
        let (word, bits) = self.place(key);
        self.words[word] & bits == bits
    }

    /// Starts loading the word `may_hold` will read for `key`.
    #[inline]
    pub(crate) fn prefetch(&self, key: u128) {
        if !self.words.is_empty() {
            crate::search::machine::prefetch(&self.words[self.place(key).0]);
        }
    }

    /// Memory held (capacity).
    pub(crate) fn bytes(&self) -> usize {
        self.words.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u128) -> u128 {
        i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) ^ 0x5555
    }

    #[test]
    fn every_key_inserted_passes_and_few_others_do() {
        let mut filter = LevelFilter::default();
        assert!(!filter.may_hold(key(1)), "an empty filter holds nothing");
        for round in 0..2u128 {
            filter.reset(100_000);
            let inserted = round * 1_000_000..round * 1_000_000 + 100_000;
            inserted.clone().for_each(|i| filter.insert(key(i)));
            assert!(inserted.clone().all(|i| filter.may_hold(key(i))));
            let others = (5_000_000..5_100_000).filter(|&i| filter.may_hold(key(i)));
            let passed = others.count();
            // About one in twenty at eight bits a key, fewer at the ten this has.
            assert!(
                (1_000..8_000).contains(&passed),
                "{passed} of 100,000 passed"
            );
        }
        // Reset empties it: the first round's keys no longer pass (but for the odd one).
        let stale = (0..100_000).filter(|&i| filter.may_hold(key(i))).count();
        assert!(stale < 8_000, "{stale}");
    }

    #[test]
    fn a_filter_overfilled_still_passes_every_key() {
        let mut filter = LevelFilter::default();
        filter.reset(10);
        (0..50_000).for_each(|i| filter.insert(key(i)));
        assert!((0..50_000).all(|i| filter.may_hold(key(i))));
    }
}
