//! A shard's table of keys: buckets of one cache line, so that looking a key up or inserting it
//! reads one line, most often.
//!
//! A bucket holds six slots of ten bytes (a key's 64-bit word and 16 bits beside it) behind a
//! four-byte head: how many slots are used, and whether an insertion ever found the bucket
//! full and went on to the next one ("passed on"). A key goes in the first bucket from its
//! home (chosen by its word) with a free slot, so a look-up that misses stops at the first
//! bucket that never passed a key on: its home bucket, but where that passed keys on (1.04
//! lines a miss at 47% full, 1.09 at 58%, 1.68 at 74%, the range a shard runs in; a hit reads
//! fewer). The slots end to end in one array (linear probing) read a second line in three
//! look-ups of five, the probe running past the home slot's line (both loaded ahead, though).
//! The head costs a fifteenth of the memory, which the shards win back by filling to 74%
//! instead of 70% (`set.rs`).

use super::frozen::VALUE_BITS;
use crate::search::memory::ZeroedTable;
use bytemuck::{Pod, Zeroable};

/// A slot: a key's word, and beside it its further bits (`EXT_BITS`) with whatever the shard
/// keeps above them (`ext`); all zero when empty.
#[repr(C, packed)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(super) struct Slot {
    pub(super) word: u64,
    pub(super) ext: u16,
}

/// The key bits a slot keeps beside its word.
pub(super) const EXT_BITS: u32 = VALUE_BITS - 64;
pub(super) const EXT_MASK: u16 = (1 << EXT_BITS) - 1;

/// Slots a bucket holds.
pub(super) const BUCKET_SLOTS: usize = 6;

/// A bucket: its head (slots used in the low bits, `PASSED_ON` above them) and its slots, one
/// cache line in all.
#[repr(C, align(64))]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Bucket {
    head: u32,
    slots: [Slot; BUCKET_SLOTS],
}

pub(super) const BUCKET_BYTES: usize = std::mem::size_of::<Bucket>();
const _: () = assert!(BUCKET_BYTES == 64, "a bucket is one cache line");

/// The head's mark of a bucket an insertion found full and went on from.
const PASSED_ON: u32 = 1 << 8;
const USED_MASK: u32 = 0xff;

impl Bucket {
    #[inline]
    fn used(&self) -> usize {
        (self.head & USED_MASK) as usize
    }

    #[inline]
    fn passed_on(&self) -> bool {
        self.head & PASSED_ON != 0
    }

    /// Whether a used slot holds the key of `word` and `ext`.
    #[inline]
    fn holds(&self, word: u64, ext: u16) -> bool {
        self.slots[..self.used()]
            .iter()
            .any(|slot| { slot.word } == word && slot.ext & EXT_MASK == ext)
    }
}

/// The home bucket of `word` among `buckets`: multiply-shift, so any count and no modulo, and
/// rising with the word (what `sorted_entries` relies on).
#[inline]
pub(super) fn home(word: u64, buckets: usize) -> usize {
    ((word as u128 * buckets as u128) >> 64) as usize
}

/// The bucket after `at` among `buckets`, the first after the last.
#[inline]
fn next(at: usize, buckets: usize) -> usize {
    if at + 1 == buckets {
        0
    } else {
        at + 1
    }
}

/// The table: `buckets` of one line each.
pub(super) struct KeyTable {
    buckets: ZeroedTable<Bucket>,
}

/// What an insertion did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Inserted {
    /// The key went in.
    New,
    /// The table held it, or `elsewhere` said it is held elsewhere.
    Known,
}

impl KeyTable {
    /// An empty table of `buckets` buckets, zeroed lazily (`None` without the memory).
    pub(super) fn new(buckets: usize) -> Option<KeyTable> {
        Some(KeyTable {
            buckets: ZeroedTable::new(buckets.max(1))?,
        })
    }

    /// An empty table about to be written all over (see `ZeroedTable::new_populated`).
    fn populated(buckets: usize) -> Option<KeyTable> {
        Some(KeyTable {
            buckets: ZeroedTable::new_populated(buckets.max(1))?,
        })
    }

    pub(super) fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Slots in all: what the shard's load is counted against.
    pub(super) fn slots(&self) -> usize {
        self.buckets.len() * BUCKET_SLOTS
    }

    pub(super) fn bytes(&self) -> usize {
        self.buckets.len() * BUCKET_BYTES
    }

    /// Whether the table holds the key of `word` and `ext` (its further bits).
    #[inline]
    pub(super) fn contains(&self, word: u64, ext: u16) -> bool {
        let buckets = self.buckets.as_slice();
        let mut at = home(word, buckets.len());
        loop {
            let bucket = &buckets[at];
            if bucket.holds(word, ext) {
                return true;
            }
            if !bucket.passed_on() {
                return false;
            }
            at = next(at, buckets.len());
        }
    }

    /// Inserts the key of `word` and `ext`, with `above` (the shard's own bits, above
    /// `EXT_BITS`) beside it, unless the table holds it or, asked as the key's free slot is
    /// found, `elsewhere` says it is held elsewhere. The table must have a free slot.
    #[inline]
    pub(super) fn insert(
        &mut self,
        word: u64,
        ext: u16,
        above: u16,
        elsewhere: impl FnOnce() -> bool,
    ) -> Inserted {
        let len = self.buckets.len();
        let buckets = self.buckets.as_mut_slice();
        let mut at = home(word, len);
        loop {
            let bucket = &mut buckets[at];
            if bucket.holds(word, ext) {
                return Inserted::Known;
            }
            let used = bucket.used();
            if used < BUCKET_SLOTS {
                if elsewhere() {
                    return Inserted::Known;
                }
                bucket.slots[used] = Slot {
                    word,
                    ext: ext | above,
                };
                bucket.head += 1;
                return Inserted::New;
            }
            bucket.head |= PASSED_ON;
            at = next(at, len);
        }
    }

    /// Starts loading the bucket where the key of `word` would be, with `load` (a prefetch).
    #[inline]
    pub(super) fn prefetch(&self, word: u64, load: impl Fn(*const u8)) {
        let buckets = self.buckets.as_slice();
        let at = home(word, buckets.len());
        load(std::ptr::from_ref(&buckets[at]).cast::<u8>());
    }

    /// The used slots, bucket by bucket.
    fn used_slots(&self) -> impl Iterator<Item = Slot> + '_ {
        (self.buckets.as_slice().iter())
            .flat_map(|bucket| bucket.slots[..bucket.used()].iter().copied())
    }

    /// The table's keys in a table of `buckets` buckets; `None` without the memory.
    pub(super) fn rehashed(&self, buckets: usize) -> Option<KeyTable> {
        let mut bigger = KeyTable::populated(buckets)?;
        for slot in self.used_slots() {
            debug_assert!(!bigger.contains(slot.word, slot.ext & EXT_MASK));
            bigger.place(slot);
        }
        Some(bigger)
    }

    /// Puts `slot` in the first bucket from its home with a free slot, its key known to be
    /// missing: a growing shard's keys, moved without looking for each among those already
    /// moved (the rehash is a few per cent of a narrow pass's time).
    #[inline]
    fn place(&mut self, slot: Slot) {
        let len = self.buckets.len();
        let buckets = self.buckets.as_mut_slice();
        let mut at = home(slot.word, len);
        loop {
            let bucket = &mut buckets[at];
            let used = bucket.used();
            if used < BUCKET_SLOTS {
                bucket.slots[used] = slot;
                bucket.head += 1;
                return;
            }
            bucket.head |= PASSED_ON;
            at = next(at, len);
        }
    }

    /// The used slots' entries (made by `entry`), ascending; `None` if `stop` said so first
    /// (asked every `poll` buckets). No sort of the whole table is needed: a word's home bucket
    /// rises with the word and an insertion only moves it forward within its cluster (a run
    /// of buckets that passed keys on, and the first that did not), so each cluster's words
    /// are below the next cluster's, and sorting every cluster on its own sorts them all (a
    /// freeze of 1.2 G keys took some 20 s with one sort a shard). The one cluster that runs
    /// past the table's end into its first buckets is taken together: the words it left there
    /// (homes above their buckets) go last, with the words at the end.
    pub(super) fn sorted_entries<E: Ord + Copy>(
        &self,
        entry: impl Fn(Slot) -> E,
        capacity: usize,
        poll: usize,
        stop: &dyn Fn() -> bool,
    ) -> Option<Vec<E>> {
        if stop() {
            return None;
        }
        let buckets = self.buckets.as_slice();
        let len = buckets.len();
        let mut entries = Vec::with_capacity(capacity);
        let mut wrapped = Vec::new();
        let mut at = 0;
        // The run the last bucket passed on into.
        if buckets[len - 1].passed_on() {
            while at < len {
                let bucket = &buckets[at];
                for &slot in &bucket.slots[..bucket.used()] {
                    if home(slot.word, len) > at {
                        wrapped.push(entry(slot));
                    } else {
                        entries.push(entry(slot));
                    }
                }
                at += 1;
                if !bucket.passed_on() {
                    break;
                }
            }
            entries.sort_unstable();
        }
        let mut cluster = entries.len();
        for (at, bucket) in buckets.iter().enumerate().skip(at) {
            if at % poll == poll - 1 && stop() {
                return None;
            }
            entries.extend(bucket.slots[..bucket.used()].iter().map(|&s| entry(s)));
            if !bucket.passed_on() {
                if entries.len() - cluster > 1 {
                    entries[cluster..].sort_unstable();
                }
                cluster = entries.len();
            }
        }
        entries.extend(wrapped);
        entries[cluster..].sort_unstable();
        Some(entries)
    }

    /// The first bucket's slots' words (for a test of the wrap).
    #[cfg(test)]
    pub(super) fn first_words(&self) -> Vec<u64> {
        let bucket = &self.buckets.as_slice()[0];
        bucket.slots[..bucket.used()]
            .iter()
            .map(|s| s.word)
            .collect()
    }

    /// Buckets a look-up of `word` that misses reads.
    #[cfg(test)]
    fn lines_read_missing(&self, word: u64) -> usize {
        let buckets = self.buckets.as_slice();
        let mut at = home(word, buckets.len());
        let mut read = 1;
        while buckets[at].passed_on() {
            at = next(at, buckets.len());
            read += 1;
        }
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(seed: u64) -> impl Iterator<Item = u64> {
        let mut x = seed;
        std::iter::repeat_with(move || {
            x = x
                .wrapping_mul(0x5851_f42d_4c95_7f2d)
                .wrapping_add(0x1405_7b7e_f767_814f);
            x | 1
        })
    }

    /// Filled to the loads the shards run at, a table keeps every key, finds none it was not
    /// given, and few look-ups that miss read past the home bucket.
    #[test]
    fn keys_go_in_once_and_misses_stop_at_home() {
        for percent in [40, 47, 50, 58, 65, 70, 74, 80, 90] {
            let buckets = 2000;
            let mut table = KeyTable::new(buckets).unwrap();
            let keys = buckets * BUCKET_SLOTS * percent / 100;
            let given: Vec<u64> = words(percent as u64).take(keys).collect();
            for (i, &w) in given.iter().enumerate() {
                assert_eq!(
                    table.insert(w, i as u16 & EXT_MASK, 0, || false),
                    Inserted::New
                );
            }
            for (i, &w) in given.iter().enumerate() {
                assert!(table.contains(w, i as u16 & EXT_MASK));
                assert!(!table.contains(w, (i as u16 + 1) & EXT_MASK));
                assert_eq!(
                    table.insert(w, i as u16 & EXT_MASK, 0, || false),
                    Inserted::Known
                );
            }
            let mut others = words(1000 + percent as u64).take(keys);
            assert!(others.all(|w| !table.contains(w, 0)));
            // A miss reads a second line only where its home bucket passed keys on.
            // Measured: 1.01 lines a miss at 40% full, 1.04 at 47%, 1.09 at 58%, 1.34 at 70%,
            // 1.68 at 74%, 2.32 at 80%, 6.72 at 90%.
            let lines: usize = (words(1000 + percent as u64).take(keys))
                .map(|w| table.lines_read_missing(w))
                .sum();
            let most = match percent {
                0..=50 => 1.1,
                51..=58 => 1.2,
                59..=74 => 2.0,
                75..=80 => 3.0,
                _ => 10.0,
            };
            let lines = lines as f64 / keys as f64;
            assert!(lines <= most, "{percent}% full: {lines} lines a miss");
            assert_eq!(table.used_slots().count(), keys);
        }
    }

    #[test]
    fn a_key_held_elsewhere_is_not_inserted() {
        let mut table = KeyTable::new(4).unwrap();
        assert_eq!(table.insert(7, 1, 0, || true), Inserted::Known);
        assert!(!table.contains(7, 1));
        assert_eq!(table.insert(7, 1, 0, || false), Inserted::New);
        // The bits above the key's are kept but not compared.
        assert_eq!(table.insert(9, 1, 1 << 12, || false), Inserted::New);
        assert!(table.contains(9, 1));
    }
}
