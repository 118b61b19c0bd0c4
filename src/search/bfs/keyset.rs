//! The breadth-first search's set of positions seen: keys only, in about 14 bytes a key, or
//! about 7 once frozen (see `frozen.rs`) when memory runs short.

use super::frozen::{merged, FrozenKeys};
use crate::search::memory::ZeroedTable;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// An insert-only set of 128-bit keys: 64 open-addressing tables (linear probing) chosen by the
/// key's top 6 bits, each storing the key's low 64 bits in one word and growing by half on its
/// own when 70% full (by less near the budget, see `FULL_PERCENT`), so memory stays near
/// 8 / 0.58 bytes a key and growing never needs twice
/// the whole set. Keys equal in those 70 bits count as one: for 10^8 keys the chance of any such
/// pair is about 4 * 10^-6, for the 1.3 * 10^7 keys of the 36,511-ply problem 10^-7 (a lost
/// position could only make the answer longer, never wrong as a line). An all-zero word is an
/// empty slot, so a key whose low 64 bits are zero is kept as a stand-in made of its high bits.
/// The shards are separate so that threads can each own some of them; 64 rather than thousands,
/// so that their bookkeeping stays in the L1 cache (measured: 12555 went from 6.9 s to 6.4 s).
pub(super) struct KeySet {
    pub(super) shards: Vec<Shard>,
    /// Bytes of all shards' tables.
    bytes: usize,
}

/// One of the key set's tables, and the keys frozen out of it when memory ran short (see
/// `KeySet::freeze`). Its owner writes the count at every insertion while other threads read
/// the table's address for their look-ups: the two are kept on separate cache lines, and
/// shards owned by different threads never share one.
#[repr(align(128))]
pub(super) struct Shard {
    table: ZeroedTable<u64>,
    frozen: Option<FrozenKeys>,
    tally: Tally,
}

/// Keys in a shard's table, on a line of its own (see `Shard`).
#[repr(align(128))]
struct Tally {
    len: usize,
}

const SLOT_BYTES: usize = 8;
const SHARD_BITS: u32 = 6;
/// A shard grows once this full, in percent: by half while memory is ample...
const FULL_PERCENT: usize = 70;
/// ...(room for this many shards of its size to grow by half), else by a sixteenth; and when
/// not even that fits and no more memory is to be had, it fills up to `CRAMMED_PERCENT`
/// (probes get longer, but the pass goes on). The shards reach 70% at about the same time:
/// growing them all by half near the budget had 加藤徹 6935 give up at 6,369 of its 6,935 plies
/// with a fifth of its memory unused, and growing by half while it fitted, then filling, at
/// 6,767 plies with shards grown last still half empty.
const AMPLE_SHARDS: usize = 32;
const CRAMMED_PERCENT: usize = 90;
/// A freeze must free at least this fraction (1 / n) of the set's bytes.
const MIN_FREEZE_SAVING: usize = 8;

/// The word a shard keeps of `key`: its low 64 bits, or, when those are zero (an empty slot),
/// a stand-in from its high bits.
#[inline]
fn stored(key: u128) -> u64 {
    match key as u64 {
        0 => (key >> 64) as u64 | 1,
        low => low,
    }
}

#[inline]
fn home(stored: u64, len: usize) -> usize {
    // Multiply-shift: any table size, no modulo.
    ((stored as u128 * len as u128) >> 64) as usize
}

/// Which shard holds `key`.
#[inline]
pub(super) fn shard_of(key: u128) -> usize {
    (key >> (128 - SHARD_BITS)) as usize
}

impl Shard {
    const FIRST_SLOTS: usize = 16;

    fn new() -> Shard {
        Shard {
            table: ZeroedTable::new(Self::FIRST_SLOTS).expect("a small key table"),
            frozen: None,
            tally: Tally { len: 0 },
        }
    }

    fn bytes(&self) -> usize {
        self.table.len() * SLOT_BYTES + self.frozen.as_ref().map_or(0, FrozenKeys::bytes)
    }

    pub(super) fn len(&self) -> usize {
        self.tally.len + self.frozen.as_ref().map_or(0, FrozenKeys::len)
    }

    fn is_frozen(&self, word: u64) -> bool {
        self.frozen.as_ref().is_some_and(|f| f.contains(word))
    }

    /// Bytes freezing this shard would free (0 if it would not).
    fn freeze_saving(&self) -> usize {
        let keys = self.len();
        let after = FrozenKeys::bytes_for(keys) + Self::FIRST_SLOTS * SLOT_BYTES;
        if self.tally.len == 0 || u32::try_from(keys).is_err() {
            return 0;
        }
        self.bytes().saturating_sub(after)
    }

    /// Moves the table's keys, with those frozen before, into a new frozen set, and starts an
    /// empty table. Memory for the sorted words and the new set is taken on top of the old
    /// ones, one shard at a time.
    fn freeze(&mut self) {
        let mut words: Vec<u64> = self
            .table
            .as_slice()
            .iter()
            .copied()
            .filter(|&w| w != 0)
            .collect();
        words.sort_unstable();
        let keys = self.len();
        let old = self.frozen.take();
        let all = merged(old.iter().flat_map(|f| f.words()), words.iter().copied());
        // (`freeze_saving` is 0, so no freeze, for a shard of more keys than a frozen set holds.)
        let frozen = FrozenKeys::new(all, keys).expect("at most 2^32 keys a shard");
        debug_assert_eq!(frozen.len(), keys);
        self.frozen = Some(frozen);
        self.table = ZeroedTable::new(Self::FIRST_SLOTS).expect("a small key table");
        self.tally.len = 0;
    }

    /// Whether `key` is in this shard.
    #[inline]
    fn contains(&self, key: u128) -> bool {
        let word = stored(key);
        let table = self.table.as_slice();
        let len = table.len();
        let mut i = home(word, len);
        loop {
            match table[i] {
                w if w == word => return true,
                0 => return self.is_frozen(word),
                _ => i = if i + 1 == len { 0 } else { i + 1 },
            }
        }
    }

    /// Inserts `key`; false if it was already there. Growing may add at most `allowance` bytes
    /// (reduced by what it adds); `Err` when it would need more. `cram`: there is no more
    /// memory to be had, fill up to `CRAMMED_PERCENT` rather than fail.
    #[inline]
    pub(super) fn insert(
        &mut self,
        key: u128,
        allowance: &mut usize,
        cram: bool,
    ) -> Result<bool, ()> {
        let word = stored(key);
        let size = self.table.len();
        if (self.tally.len + 1) * 100 > size * FULL_PERCENT {
            let ample = *allowance / AMPLE_SHARDS >= size * SLOT_BYTES;
            let bigger = size + if ample { size / 2 } else { size / 16 };
            // While growing, the old and the new table exist together.
            match Some(bigger).filter(|b| (size + b) * SLOT_BYTES <= *allowance) {
                Some(bigger) => {
                    self.grow(bigger)?;
                    *allowance -= (bigger - size) * SLOT_BYTES;
                }
                None if cram && (self.tally.len + 1) * 100 <= size * CRAMMED_PERCENT => {}
                None => return Err(()),
            }
        }
        let table = self.table.as_mut_slice();
        let len = table.len();
        let mut i = home(word, len);
        loop {
            match table[i] {
                0 if self.frozen.as_ref().is_some_and(|f| f.contains(word)) => return Ok(false),
                0 => {
                    table[i] = word;
                    self.tally.len += 1;
                    return Ok(true);
                }
                w if w == word => return Ok(false),
                _ => i = if i + 1 == len { 0 } else { i + 1 },
            }
        }
    }

    /// Starts loading the slot where `key` would go.
    #[inline]
    pub(super) fn prefetch(&self, key: u128) {
        let table = self.table.as_slice();
        let i = home(stored(key), table.len());
        crate::search::prefetch(&table[i]);
        // A probe past the line's end goes on into the next.
        if let Some(next) = table.get((i | 7) + 1) {
            crate::search::prefetch(next);
        }
        if let Some(frozen) = &self.frozen {
            frozen.prefetch(stored(key));
        }
    }

    fn grow(&mut self, slots: usize) -> Result<(), ()> {
        let bigger = ZeroedTable::new_populated(slots).ok_or(())?;
        let old = std::mem::replace(&mut self.table, bigger);
        let table = self.table.as_mut_slice();
        for word in old.as_slice().iter().copied().filter(|&w| w != 0) {
            let mut i = home(word, slots);
            while table[i] != 0 {
                i = if i + 1 == slots { 0 } else { i + 1 };
            }
            table[i] = word;
        }
        Ok(())
    }
}

impl KeySet {
    const SHARDS: usize = 1 << SHARD_BITS;

    pub(super) fn new() -> KeySet {
        let shards: Vec<Shard> = (0..Self::SHARDS).map(|_| Shard::new()).collect();
        let bytes = shards.iter().map(Shard::bytes).sum();
        KeySet { shards, bytes }
    }

    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Keys held.
    pub(super) fn len(&self) -> usize {
        self.shards.iter().map(Shard::len).sum()
    }

    /// Counts the bytes again after the shards were changed directly.
    pub(super) fn recount(&mut self) {
        self.bytes = self.shards.iter().map(Shard::bytes).sum();
    }

    pub(super) fn contains(&self, key: u128) -> bool {
        self.shards[shard_of(key)].contains(key)
    }

    /// Inserts `key`; false if it was already there. `Err` when growing a shard would pass
    /// `budget` bytes for the whole set (with `cram`, only once the shard is crammed full).
    #[inline]
    pub(super) fn insert(&mut self, key: u128, budget: usize, cram: bool) -> Result<bool, ()> {
        let mut allowance = budget.saturating_sub(self.bytes);
        let before = allowance;
        let inserted = self.shards[shard_of(key)].insert(key, &mut allowance, cram);
        self.bytes += before - allowance;
        inserted
    }

    /// Starts loading the slot where `key` would go.
    #[inline]
    pub(super) fn prefetch(&self, key: u128) {
        self.shards[shard_of(key)].prefetch(key);
    }

    /// Freezes the keys of every shard where that saves memory (see `frozen.rs`): about 6.5
    /// bytes a key instead of the table's 11-14, looked up a little more slowly. With `pool`,
    /// shards are frozen on its threads. Returns the bytes freed: 0 when that would be less
    /// than an eighth of the set (each freeze rebuilds every frozen key: freezing again and
    /// again for little would cost more than it gives).
    pub(super) fn freeze(&mut self, pool: Option<&rayon::ThreadPool>) -> usize {
        let before = self.bytes;
        let saving: usize = self.shards.iter().map(Shard::freeze_saving).sum();
        if saving < before / MIN_FREEZE_SAVING {
            return 0;
        }
        let worth = |shard: &&mut Shard| shard.freeze_saving() > 0;
        match pool {
            Some(pool) => pool.install(|| {
                use rayon::prelude::*;
                self.shards
                    .par_iter_mut()
                    .filter(|s| worth(s))
                    .for_each(Shard::freeze)
            }),
            None => self.shards.iter_mut().filter(worth).for_each(Shard::freeze),
        }
        self.recount();
        before.saturating_sub(self.bytes)
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
            assert_eq!(set.insert(key(i), usize::MAX, false), Ok(true));
        }
        for i in 0..200_000u128 {
            assert_eq!(set.insert(key(i), usize::MAX, false), Ok(false));
        }
        assert_eq!(set.len(), 200_000);
        // Keys that differ only in bits the set keeps must stay distinct; keys whose low 64 bits
        // are zero are kept as a stand-in.
        let a = 1u128 << 100;
        assert_eq!(set.insert(a, usize::MAX, false), Ok(true));
        assert_eq!(set.insert(a | (1 << 63), usize::MAX, false), Ok(true));
        assert_eq!(set.insert(a | (1 << 120), usize::MAX, false), Ok(true));
        // (key(0) is 0 itself, inserted above.)
        assert_eq!(set.insert(0, usize::MAX, false), Ok(false));
        assert_eq!(set.insert(a, usize::MAX, false), Ok(false));
        assert!(set.contains(a) && set.contains(0) && set.contains(key(7)));
        assert!(!set.contains(a | 1 << 62));
        // A budget too small to grow is reported, not exceeded.
        let mut small = KeySet::new();
        let budget = small.bytes();
        let full =
            (0..100_000u128).try_for_each(|i| small.insert(key(i), budget, true).map(|_| ()));
        assert_eq!(full, Err(()));
        assert!(small.bytes() <= budget);
    }

    #[test]
    fn near_the_budget_shards_grow_less_then_fill_up() {
        let key = |i: u128| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) | 1;
        // A shard of 1,000 slots, with memory to grow by a sixteenth (not enough for its
        // siblings to grow by half), then none.
        let mut shard = Shard::new();
        shard.grow(1000).unwrap();
        let mut inserted = Vec::new();
        let mut allowance = (1000 + 1062) * SLOT_BYTES;
        let mut i = 0;
        while shard.len() < 700 {
            if shard.insert(key(i), &mut allowance, false) == Ok(true) {
                inserted.push(key(i));
            }
            i += 1;
        }
        assert_eq!(shard.table.len(), 1000);
        assert_eq!(
            shard.insert(key(i), &mut allowance, false),
            Ok(true),
            "grows a little"
        );
        inserted.push(key(i));
        assert_eq!(shard.table.len(), 1062);
        // No memory left: fills to 90%, then says so.
        let mut none = 0;
        let mut result = Ok(true);
        while result.is_ok() {
            i += 1;
            result = shard.insert(key(i), &mut none, true);
            if result == Ok(true) {
                inserted.push(key(i));
            }
        }
        assert_eq!(shard.table.len(), 1062);
        assert_eq!(shard.len(), 1062 * 90 / 100);
        assert!(inserted.iter().all(|&k| shard.contains(k)));
        assert_eq!(shard.len(), inserted.len());
    }
}

/// A map keyed by position keys. The keys are Zobrist sums, already uniform, so hashing them
/// again (the standard map's SipHash) is wasted work: their own bits serve.
pub(super) type KeyMap<V> = HashMap<u128, V, BuildHasherDefault<KeyHasher>>;

/// The hasher of [`KeyMap`]: folds the key's two halves.
#[derive(Default)]
pub(super) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline]
    fn write_u128(&mut self, key: u128) {
        self.0 = key as u64 ^ (key >> 64) as u64;
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u128 keys are hashed; anything else still gets a usable (FNV-1a) hash.
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}
