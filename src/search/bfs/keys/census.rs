//! A sampled record of when the pass first met its positions, for the level log: of every
//! duplicate the key set finds, how many levels back its position was first kept. This is what
//! decides whether old levels' keys may leave memory (see docs/performance.md, "Where a long
//! pass's bytes go"). Off unless the level log is on: the key set then pays one branch.
//!
//! One key in [`Census::SAMPLE`] is followed (chosen by key bits no table uses for its slot),
//! so the figures are estimates: multiply by `SAMPLE`.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// First levels of followed keys (a standard map: one key in [`Census::SAMPLE`] comes here).
type FirstLevels = HashMap<u128, u32>;

trait FirstLevel {
    /// Records `level` as `key`'s first unless it has one; true if it had.
    fn try_insert_first(&mut self, key: u128, level: u32) -> bool;
}

impl FirstLevel for FirstLevels {
    fn try_insert_first(&mut self, key: u128, level: u32) -> bool {
        match self.entry(key) {
            std::collections::hash_map::Entry::Occupied(_) => true,
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(level);
                false
            }
        }
    }
}

/// Gap buckets: 0 (the same level), 1, 2, 3-4, 5-8, ..., 2^(n-2)+1 and more.
pub const GAP_BUCKETS: usize = 16;

/// The bucket of a duplicate found `gap` levels after its position was first kept.
pub fn gap_bucket(gap: u32) -> usize {
    match gap {
        0 => 0,
        g => ((u32::BITS - (g - 1).leading_zeros()) as usize + 1).min(GAP_BUCKETS - 1),
    }
}

/// The smallest gap of bucket `bucket` (for the log's header).
pub fn bucket_floor(bucket: usize) -> u32 {
    match bucket {
        0 => 0,
        1 => 1,
        b => (1 << (b - 2)) + 1,
    }
}

pub(crate) struct Census {
    /// The level the children being found belong to.
    level: AtomicU32,
    /// First levels of the followed keys, split like the key set so that owners inserting
    /// different shards seldom meet on one lock.
    first: Vec<Mutex<FirstLevels>>,
    gaps: [AtomicU64; GAP_BUCKETS],
    /// Followed keys kept again after the key set let go of them (ghosts, see
    /// `KeySet::freeze`).
    ghosts: AtomicU64,
}

impl Census {
    pub const SAMPLE: u64 = 1024;
    const LOCKS: usize = 64;

    pub(crate) fn new() -> Census {
        Census {
            level: AtomicU32::new(1),
            first: (0..Self::LOCKS).map(|_| Mutex::default()).collect(),
            gaps: Default::default(),
            ghosts: AtomicU64::new(0),
        }
    }

    #[inline]
    fn followed(key: u128) -> bool {
        // Bits 96..106: neither the shard (the top 6), the table's home (the low 64) nor the
        // dead cache's slot (64..82).
        ((key >> 96) as u64).is_multiple_of(Self::SAMPLE)
    }

    fn lock(&self, key: u128) -> parking_lot::MutexGuard<'_, FirstLevels> {
        self.first[(key >> 110) as usize % Self::LOCKS].lock()
    }

    /// Children found from now on belong to level `level`.
    pub(crate) fn set_level(&self, level: u32) {
        self.level.store(level, Ordering::Relaxed);
    }

    /// `key` was kept: for the first time, or again after the key set let go of it (then its
    /// first level stays).
    #[inline]
    pub(crate) fn kept(&self, key: u128) {
        if Self::followed(key) {
            let level = self.level.load(Ordering::Relaxed);
            if self.lock(key).try_insert_first(key, level) {
                self.ghosts.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// `key` was met again.
    #[inline]
    pub(crate) fn met_again(&self, key: u128) {
        if !Self::followed(key) {
            return;
        }
        let level = self.level.load(Ordering::Relaxed);
        // (The root is kept before the census exists: level 0.)
        let first = self.lock(key).get(&key).copied().unwrap_or(0);
        self.gaps[gap_bucket(level.saturating_sub(first))].fetch_add(1, Ordering::Relaxed);
    }

    /// The duplicates counted since the last call, by gap bucket, scaled up by the sample.
    pub(crate) fn take(&self) -> [u64; GAP_BUCKETS] {
        std::array::from_fn(|b| self.gaps[b].swap(0, Ordering::Relaxed) * Self::SAMPLE)
    }

    /// The ghosts counted since the last call, scaled up by the sample.
    pub(crate) fn take_ghosts(&self) -> u64 {
        self.ghosts.swap(0, Ordering::Relaxed) * Self::SAMPLE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_fall_in_doubling_buckets() {
        let buckets: Vec<usize> = [0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 4096, 4097, u32::MAX]
            .into_iter()
            .map(gap_bucket)
            .collect();
        assert_eq!(buckets, [0, 1, 2, 3, 3, 4, 4, 5, 5, 6, 13, 14, 15]);
        for b in 1..GAP_BUCKETS {
            assert_eq!(gap_bucket(bucket_floor(b)), b);
            assert_eq!(gap_bucket(bucket_floor(b) - 1), b - 1);
        }
    }

    #[test]
    fn a_followed_key_met_again_counts_its_gap() {
        let census = Census::new();
        let followed = 5u128 << 64;
        let other = followed | 1u128 << 96;
        assert!(Census::followed(followed) && !Census::followed(other));
        census.set_level(3);
        census.kept(followed);
        census.kept(other);
        census.set_level(10);
        census.met_again(followed);
        census.met_again(other);
        census.met_again(followed);
        let gaps = census.take();
        assert_eq!(gaps[gap_bucket(7)], 2 * Census::SAMPLE);
        assert_eq!(gaps.iter().sum::<u64>(), 2 * Census::SAMPLE);
        assert_eq!(census.take(), [0; GAP_BUCKETS]);
        // Kept again (a ghost): counted, and its gap still runs from its first level.
        assert_eq!(census.take_ghosts(), 0);
        census.kept(followed);
        census.kept(other);
        assert_eq!(census.take_ghosts(), Census::SAMPLE);
        census.met_again(followed);
        assert_eq!(census.take()[gap_bucket(7)], Census::SAMPLE);
    }
}
