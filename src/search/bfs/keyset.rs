//! The breadth-first search's set of positions seen: keys only, in about 14 bytes a key, or
//! about 7 once frozen (see `frozen.rs`) when memory runs short.

use super::census::Census;
use super::frozen::{merged, FrozenKeys};
use crate::search::memory::ZeroedTable;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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
    /// When positions were first kept and met again (the level log's figures).
    census: Option<Arc<Census>>,
}

/// One of the key set's tables, and the keys frozen out of it when memory ran short (see
/// `KeySet::freeze`). Its owner writes the count at every insertion while other threads read
/// the table's address for their look-ups: the two are kept on separate cache lines, and
/// shards owned by different threads never share one.
#[repr(align(128))]
pub(super) struct Shard {
    table: ZeroedTable<u64>,
    frozen: Option<FrozenKeys>,
    census: Option<Arc<Census>>,
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
/// A shard this full (per cent) may be grown ahead of its insertions (see `Shard::grown_ahead`).
const AHEAD_PERCENT: usize = 65;
const CRAMMED_PERCENT: usize = 90;
/// A freeze must free at least this fraction (1 / n) of the set's bytes.
const MIN_FREEZE_SAVING: usize = 8;
/// A freeze asks whether to stop every this many slots or keys (some milliseconds).
const STOP_POLL: usize = 1 << 20;

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

/// The thread of `owners` that inserts into shard `shard` when several insert at once: each
/// shard has one writer. One rule for both parallel loops (`parallel.rs`, `narrow.rs`).
#[inline]
pub(super) fn owner_of(shard: usize, owners: usize) -> usize {
    shard % owners
}

/// The thread of `owners` that inserts `key` (the owner of its shard).
#[inline]
pub(super) fn owner_of_key(key: u128, owners: usize) -> usize {
    owner_of(shard_of(key), owners)
}

/// Where shard `shard` comes among its owner's shards, as [`KeySet::split_among`] lists them.
#[inline]
pub(super) fn place_among_owned(shard: usize, owners: usize) -> usize {
    shard / owners
}

/// The shards of `shards` that `owner` of `owners` owns, in rising order.
pub(super) fn shards_of(owner: usize, owners: usize, shards: usize) -> impl Iterator<Item = usize> {
    (0..shards).filter(move |&shard| owner_of(shard, owners) == owner)
}

/// Which shard holds `key`.
#[inline]
pub(super) fn shard_of(key: u128) -> usize {
    (key >> (128 - SHARD_BITS)) as usize
}

impl Shard {
    const FIRST_SLOTS: usize = 16;

    fn new(census: Option<Arc<Census>>) -> Shard {
        Shard {
            table: ZeroedTable::new(Self::FIRST_SLOTS).expect("a small key table"),
            frozen: None,
            census,
            tally: Tally { len: 0 },
        }
    }

    /// Tells the census (if any) that `key` was met again.
    #[inline]
    fn met_again(&self, key: u128) {
        if let Some(census) = &self.census {
            census.met_again(key);
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
    /// ones, one shard at a time. False, with the shard as it was, if `stop` said so first.
    fn freeze(&mut self, stop: &dyn Fn() -> bool) -> bool {
        let Some(words) = self.sorted_words(stop) else {
            return false;
        };
        let keys = self.len();
        let old = self.frozen.iter().flat_map(FrozenKeys::words);
        let mut polled = 0usize;
        let all = merged(old, words.iter().copied()).take_while(|_| {
            polled += 1;
            !polled.is_multiple_of(STOP_POLL) || !stop()
        });
        // (`freeze_saving` is 0, so no freeze, for a shard of more keys than a frozen set
        // holds: `None` here means the merge was stopped.)
        let Some(frozen) = FrozenKeys::new(all, keys) else {
            return false;
        };
        self.frozen = Some(frozen);
        self.table = ZeroedTable::new(Self::FIRST_SLOTS).expect("a small key table");
        self.tally.len = 0;
        true
    }

    /// The table's words, ascending; `None` if `stop` said so first. No sort of the whole
    /// table is needed: a word's home slot grows with the word (`home`) and linear probing
    /// only moves it forward within its cluster (the slots between two empty ones), so each
    /// cluster's words are below the next cluster's, and sorting every cluster on its own sorts
    /// them all (a freeze of 1.2 G keys took some 20 s with one sort a shard). The one cluster
    /// that runs past the table's end into its first slots is taken together: the words it left
    /// there (homes above their slots) go last, with the words at the end.
    fn sorted_words(&self, stop: &dyn Fn() -> bool) -> Option<Vec<u64>> {
        if stop() {
            return None;
        }
        let table = self.table.as_slice();
        let len = table.len();
        let mut words = Vec::with_capacity(self.tally.len);
        let mut wrapped = Vec::new();
        let mut slot = 0;
        while slot < len && table[slot] != 0 {
            let word = table[slot];
            if home(word, len) > slot {
                wrapped.push(word);
            } else {
                words.push(word);
            }
            slot += 1;
        }
        let mut cluster = 0;
        for (slot, &word) in table.iter().enumerate().skip(slot) {
            if slot % STOP_POLL == STOP_POLL - 1 && stop() {
                return None;
            }
            if word != 0 {
                words.push(word);
                continue;
            }
            if words.len() - cluster > 1 {
                words[cluster..].sort_unstable();
            }
            cluster = words.len();
        }
        words.extend(wrapped);
        words[cluster..].sort_unstable();
        Some(words)
    }

    /// Writes the shard's words ascending (its table's and its frozen keys', which never
    /// share a word), merged as they go out: only the table's words are copied.
    fn write_words(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let table = self.sorted_words(&|| false).expect("not stopped");
        let frozen = self.frozen.iter().flat_map(FrozenKeys::words);
        merged(frozen, table.into_iter()).try_for_each(|word| out.write_all(&word.to_le_bytes()))
    }

    /// Whether `key` is in this shard.
    #[inline]
    fn contains(&self, key: u128) -> bool {
        let word = stored(key);
        let table = self.table.as_slice();
        let len = table.len();
        let mut i = home(word, len);
        let known = loop {
            match table[i] {
                w if w == word => break true,
                0 => break self.is_frozen(word),
                _ => i = if i + 1 == len { 0 } else { i + 1 },
            }
        };
        if known {
            self.met_again(key);
        }
        known
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
            match self.bigger(*allowance) {
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
        let new = loop {
            match table[i] {
                0 if self.frozen.as_ref().is_some_and(|f| f.contains(word)) => break false,
                0 => {
                    table[i] = word;
                    self.tally.len += 1;
                    break true;
                }
                w if w == word => break false,
                _ => i = if i + 1 == len { 0 } else { i + 1 },
            }
        };
        match (&self.census, new) {
            (Some(census), true) => census.kept(key),
            (Some(census), false) => census.met_again(key),
            (None, _) => {}
        }
        Ok(new)
    }

    /// The size the table grows to when full, with `allowance` bytes to grow by: by half while
    /// memory is ample, else by a sixteenth (see `AMPLE_SHARDS`); `None` if even that does not
    /// fit (while growing, the old and the new table exist together).
    fn bigger(&self, allowance: usize) -> Option<usize> {
        let size = self.table.len();
        let ample = allowance / AMPLE_SHARDS >= size * SLOT_BYTES;
        let bigger = size + if ample { size / 2 } else { size / 16 };
        Some(bigger).filter(|b| (size + b) * SLOT_BYTES <= allowance)
    }

    /// A shard nearly full (`AHEAD_PERCENT`) made again bigger, as it would grow at its next
    /// insertions, with the bytes it adds (`None`: not due, or not within `allowance`). Only
    /// reads the shard, so its owner can do it while other threads look keys up in it, and put
    /// it in before it inserts again (see [`Shard::put_grown`]).
    pub(super) fn grown_ahead(&self, allowance: usize) -> Option<Grown> {
        let size = self.table.len();
        if self.tally.len * 100 < size * AHEAD_PERCENT {
            return None;
        }
        let bigger = self.bigger(allowance)?;
        Some(Grown {
            table: rehashed(self.table.as_slice().iter().copied(), bigger)?,
            keys: self.tally.len,
            bytes: (bigger - size) * SLOT_BYTES,
        })
    }

    /// Puts in the table `grown_ahead` made, the shard having taken no key since.
    pub(super) fn put_grown(&mut self, grown: Grown) {
        assert_eq!(grown.keys, self.tally.len, "no key inserted since the copy");
        self.table = grown.table;
    }

    /// Starts loading the slot where `key` would go, to be read.
    #[inline]
    pub(super) fn prefetch(&self, key: u128) {
        self.prefetch_with(key, crate::search::machine::prefetch);
    }

    /// Starts loading the slot where `key` would go, to be written: an owner inserting keys
    /// whose lines the other threads read last (their look-ups on the level) otherwise takes
    /// each line back from their CPU only when its store comes.
    #[inline]
    pub(super) fn prefetch_for_insert(&self, key: u128) {
        self.prefetch_with(key, |slot| crate::search::machine::prefetch_write(slot));
    }

    #[inline]
    fn prefetch_with(&self, key: u128, load: impl Fn(&u64)) {
        let table = self.table.as_slice();
        let i = home(stored(key), table.len());
        load(&table[i]);
        // A probe past the line's end goes on into the next.
        if let Some(next) = table.get((i | 7) + 1) {
            load(next);
        }
        if let Some(frozen) = &self.frozen {
            frozen.prefetch(stored(key));
        }
    }

    fn grow(&mut self, slots: usize) -> Result<(), ()> {
        self.table = rehashed(self.table.as_slice().iter().copied(), slots).ok_or(())?;
        Ok(())
    }
}

/// A shard's table grown ahead of its insertions (see [`Shard::grown_ahead`]).
pub(super) struct Grown {
    table: ZeroedTable<u64>,
    /// The keys the shard held when copied.
    keys: usize,
    /// What the shard grows by.
    pub(super) bytes: usize,
}

/// A table of `slots` slots holding `words` (those not zero); `None` without the memory.
fn rehashed(words: impl Iterator<Item = u64>, slots: usize) -> Option<ZeroedTable<u64>> {
    let mut bigger = ZeroedTable::new_populated(slots)?;
    let table = bigger.as_mut_slice();
    for word in words.filter(|&w| w != 0) {
        let mut i = home(word, slots);
        while table[i] != 0 {
            i = if i + 1 == slots { 0 } else { i + 1 };
        }
        table[i] = word;
    }
    Some(bigger)
}

impl KeySet {
    const SHARDS: usize = 1 << SHARD_BITS;

    /// The shards shared out among `owners` (see [`owner_of`]), each owner's in rising order.
    pub(super) fn split_among(&mut self, owners: usize) -> Vec<Vec<&mut Shard>> {
        let mut split: Vec<Vec<&mut Shard>> = (0..owners).map(|_| Vec::new()).collect();
        for (shard, table) in self.shards.iter_mut().enumerate() {
            split[owner_of(shard, owners)].push(table);
        }
        split
    }

    #[cfg(test)]
    pub(super) fn new() -> KeySet {
        Self::with_census(None)
    }

    /// A set that tells `census` of every key kept and met again.
    pub(super) fn with_census(census: Option<Arc<Census>>) -> KeySet {
        let shards: Vec<Shard> = (0..Self::SHARDS)
            .map(|_| Shard::new(census.clone()))
            .collect();
        let bytes = shards.iter().map(Shard::bytes).sum();
        KeySet {
            shards,
            bytes,
            census,
        }
    }

    /// Writes every key as the shards keep it: for each shard its number of words, then the
    /// words ascending, all little-endian. Returns the bytes written.
    pub(super) fn write_words(&self, out: &mut dyn std::io::Write) -> std::io::Result<u64> {
        let mut bytes = 0;
        for shard in &self.shards {
            let len = shard.len() as u64;
            out.write_all(&len.to_le_bytes())?;
            shard.write_words(out)?;
            bytes += 8 * (1 + len);
        }
        Ok(bytes)
    }

    /// The set [`Self::write_words`] wrote, every key frozen (the compact form). An error if
    /// the words run short or are out of order.
    pub(super) fn read_words(
        input: &mut dyn std::io::Read,
        census: Option<Arc<Census>>,
    ) -> std::io::Result<KeySet> {
        let mut set = KeySet::with_census(census);
        let mut word = [0u8; 8];
        for shard in &mut set.shards {
            input.read_exact(&mut word)?;
            let len = usize::try_from(u64::from_le_bytes(word))
                .map_err(|_| std::io::Error::other("a shard's count is too large"))?;
            if len == 0 {
                continue;
            }
            let mut failure = None;
            let mut last = None;
            let words = std::iter::from_fn(|| {
                if failure.is_some() {
                    return None;
                }
                let mut bytes = [0u8; 8];
                if let Err(e) = input.read_exact(&mut bytes) {
                    failure = Some(e);
                    return None;
                }
                let word = u64::from_le_bytes(bytes);
                if last.is_some_and(|l| l >= word) {
                    failure = Some(std::io::Error::other("the keys are out of order"));
                    return None;
                }
                last = Some(word);
                Some(word)
            })
            .take(len);
            let frozen = FrozenKeys::new(words, len);
            if let Some(e) = failure {
                return Err(e);
            }
            shard.frozen =
                Some(frozen.ok_or_else(|| std::io::Error::other("a shard's keys are cut short"))?);
        }
        set.recount();
        Ok(set)
    }

    /// The census, if the set has one.
    pub(super) fn census(&self) -> Option<&Census> {
        self.census.as_deref()
    }

    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Keys held.
    pub(super) fn len(&self) -> usize {
        self.shards.iter().map(Shard::len).sum()
    }

    /// Counts `bytes` a shard grew by directly.
    pub(super) fn grew(&mut self, bytes: usize) {
        self.bytes += bytes;
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
    /// again for little would cost more than it gives). `None` when `stop` (polled every
    /// million keys or so) cut it short: every shard then holds its keys, frozen or not, and
    /// the caller should end the search (a freeze of a billion keys took seconds).
    pub(super) fn freeze(
        &mut self,
        pool: Option<&rayon::ThreadPool>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Option<usize> {
        let before = self.bytes;
        let saving: usize = self.shards.iter().map(Shard::freeze_saving).sum();
        if saving < before / MIN_FREEZE_SAVING {
            return Some(0);
        }
        let worth = |shard: &&mut Shard| shard.freeze_saving() > 0;
        let stopped = AtomicBool::new(false);
        let freeze = |shard: &mut Shard| {
            if stopped.load(Ordering::Relaxed) || !shard.freeze(stop) {
                stopped.store(true, Ordering::Relaxed);
            }
        };
        match pool {
            Some(pool) => pool.install(|| {
                use rayon::prelude::*;
                self.shards
                    .par_iter_mut()
                    .filter(|s| worth(s))
                    .for_each(freeze)
            }),
            None => self.shards.iter_mut().filter(worth).for_each(freeze),
        }
        self.recount();
        (!stopped.into_inner()).then(|| before.saturating_sub(self.bytes))
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
        let mut shard = Shard::new(None);
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

    /// The three spellings of shard ownership agree: the owner's list from `split_among` holds
    /// shard `s` at `place_among_owned(s)`, and `shards_of` names the same shards.
    #[test]
    fn shard_ownership_has_one_rule() {
        for owners in [1, 2, 3, 4, 7, 64, 100] {
            let mut set = KeySet::new();
            let shards = set.shards.len();
            let starts: Vec<*const Shard> = set.shards.iter().map(|s| s as *const Shard).collect();
            let split = set.split_among(owners);
            assert_eq!(split.len(), owners);
            assert_eq!(split.iter().map(Vec::len).sum::<usize>(), shards);
            for (shard, &start) in starts.iter().enumerate() {
                let owner = owner_of(shard, owners);
                let held: &Shard = split[owner][place_among_owned(shard, owners)];
                assert!(
                    std::ptr::eq(held, start),
                    "shard {shard} of {owners} owners"
                );
            }
            for (owner, mine) in split.iter().enumerate() {
                let named: Vec<usize> = shards_of(owner, owners, shards).collect();
                assert_eq!(named.len(), mine.len());
                for (place, &shard) in named.iter().enumerate() {
                    assert!(std::ptr::eq(&*mine[place], starts[shard]));
                }
            }
        }
    }

    /// A shard is grown ahead only once nearly full and within the allowance, by what an
    /// insertion would grow it by, and keeps every key; the copy must go in before any other
    /// key does.
    #[test]
    fn a_shard_grown_ahead_keeps_its_keys() {
        let key = |i: u128| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) | 1;
        let mut shard = Shard::new(None);
        shard.grow(1000).unwrap();
        let mut allowance = usize::MAX;
        let mut i = 0;
        while shard.len() * 100 < 1000 * AHEAD_PERCENT - 100 {
            shard.insert(key(i), &mut allowance, false).unwrap();
            i += 1;
            assert!(shard.grown_ahead(usize::MAX).is_none(), "not due at {i}");
        }
        shard.insert(key(i), &mut allowance, false).unwrap();
        i += 1;
        assert!(
            shard.grown_ahead(1500 * SLOT_BYTES).is_none(),
            "not within the allowance"
        );
        let grown = shard.grown_ahead(usize::MAX).expect("due");
        assert_eq!(grown.bytes, 500 * SLOT_BYTES);
        shard.put_grown(grown);
        assert_eq!(shard.table.len(), 1500);
        assert_eq!(shard.len(), i as usize);
        assert!((0..i).all(|k| shard.contains(key(k))));
        let grown = shard.grown_ahead(usize::MAX);
        assert!(grown.is_none(), "two thirds as full now");
        // A copy taken before an insertion would lose the key: refused.
        while shard.len() * 100 < 1500 * AHEAD_PERCENT {
            shard.insert(key(i), &mut allowance, false).unwrap();
            i += 1;
        }
        let grown = shard.grown_ahead(usize::MAX).expect("due");
        shard.insert(key(i), &mut allowance, false).unwrap();
        let late =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shard.put_grown(grown)));
        assert!(late.is_err());
    }

    #[test]
    fn a_shards_words_come_out_ascending_whatever_its_clusters() {
        use std::collections::BTreeSet;
        for (slots, keys, seed) in [
            (1000, 700, 1u64),
            (1000, 900, 2),
            (64, 57, 3),
            (5000, 4400, 4),
        ] {
            let mut shard = Shard::new(None);
            shard.grow(slots).unwrap();
            let mut words = BTreeSet::new();
            let mut x = seed;
            let mut none = 0;
            while words.len() < keys {
                x = x
                    .wrapping_mul(0x5851_f42d_4c95_7f2d)
                    .wrapping_add(0x1405_7b7e_f767_814f);
                // A third crowd the top of the word space: their home is the last slot, and
                // they run on into the first ones, among words whose homes are there.
                let word = if x % 3 == 0 {
                    u64::MAX - (x >> 40)
                } else {
                    x | 1
                };
                if shard.insert(word as u128, &mut none, true) == Ok(true) {
                    words.insert(word);
                }
            }
            let table = shard.table.as_slice();
            assert!(home(table[0], slots) > 0, "the probes ran past the end");
            let sorted = shard.sorted_words(&|| false).unwrap();
            assert!(sorted.iter().eq(words.iter()), "{slots} slots, {keys} keys");
            assert_eq!(shard.sorted_words(&|| true), None);
        }
    }

    #[test]
    fn a_stopped_freeze_leaves_every_key_in_place() {
        use std::sync::atomic::AtomicUsize;
        let key = |i: u128| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) | 1;
        let mut set = KeySet::new();
        for i in 0..300_000u128 {
            assert_eq!(set.insert(key(i), usize::MAX, false), Ok(true));
        }
        let all_there = |set: &KeySet| (0..300_000u128).all(|i| set.contains(key(i)));
        let bytes = set.bytes();
        assert_eq!(set.freeze(None, &|| true), None);
        assert!(all_there(&set) && set.len() == 300_000 && set.bytes() == bytes);
        // Stopped after ten shards: those are frozen, the others as they were.
        let polls = AtomicUsize::new(0);
        let after_ten = || polls.fetch_add(1, Ordering::Relaxed) >= 10;
        assert_eq!(set.freeze(None, &after_ten), None);
        assert!(all_there(&set) && set.len() == 300_000);
        assert!(set.bytes() < bytes);
        assert_eq!(set.shards.iter().filter(|s| s.frozen.is_some()).count(), 10);
        // Not stopped: all frozen, and the set still takes new keys.
        let frozen = set.freeze(None, &|| false);
        assert!(frozen.is_some_and(|freed| freed > 0));
        assert!(set.shards.iter().all(|s| s.frozen.is_some()));
        assert!(all_there(&set) && set.len() == 300_000);
        assert_eq!(set.insert(key(300_000), usize::MAX, false), Ok(true));
        assert_eq!(set.insert(key(5), usize::MAX, false), Ok(false));
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
