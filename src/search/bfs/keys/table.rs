//! A shard's table of keys: buckets of one cache line, so that looking a key up or inserting it
//! reads one line, most often.
//!
//! A key goes in the first bucket from its home (chosen by its word) with a free slot, and each
//! full bucket it passes on the way sets the key's mark in that bucket's filter of passed-on keys
//! (its head's spare bits); so a look-up that misses stops at the first bucket whose filter lacks
//! its key's mark: its home bucket, most often (1.00 lines a miss at 47% full, 1.01 at 58%, 1.11
//! at 74% with six slots a bucket, 1.16 with seven: the range a shard runs in; a hit reads
//! fewer). With one bit a bucket for "passed a key on", a miss read 1.04, 1.09, 1.68 and 1.47
//! lines, and on wfp-56-12 2571 a quarter of the look-ups read a second bucket. The slots end to
//! end in one array (linear probing) read a second line in three look-ups of five, the probe
//! running past the home slot's line (both loaded ahead, though).
//!
//! Small tables have buckets of six ten-byte slots, tables of 4,096 buckets and more buckets of
//! seven nine-byte slots (`bucket.rs`): 14% fewer bytes a key where the keys take the memory.
//! A key that would go further than 15 buckets past its home in such a table (289 keys of 22
//! million at 74% full, 0.5% at 90%, in a simulation) is kept in a small map beside it, its
//! *stash*, which a look-up reads only after those 16 buckets all passed keys on.

use super::bucket::{
    home, value_of, Bucket, CompactBucket, Geometry, Slot, WideBucket, BUCKET_BYTES, COMPACT_FROM,
    EXT_BITS, EXT_MASK,
};
use super::frozen::NotFrozen;
use super::key_map::KeyMap;
use crate::search::memory::ZeroedTable;

/// The bucket after `at` among `buckets`, the first after the last.
#[inline]
fn next(at: usize, buckets: usize) -> usize {
    if at + 1 == buckets {
        0
    } else {
        at + 1
    }
}

/// What an insertion did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Inserted {
    /// The key went in.
    New,
    /// The key went in the stash, which grew by `grew` bytes (most often 0).
    Aside { grew: usize },
    /// The table held it, or `elsewhere` said it is held elsewhere.
    Known,
}

/// The table, in the layout its size calls for.
pub(super) enum KeyTable {
    Wide(Table<WideBucket>),
    Compact(Table<CompactBucket>),
}

/// Runs `$body` with `$table` bound to the table of either layout.
macro_rules! either {
    ($self:expr, $table:ident => $body:expr) => {
        match $self {
            KeyTable::Wide($table) => $body,
            KeyTable::Compact($table) => $body,
        }
    };
}

impl KeyTable {
    /// An empty table of `buckets` buckets, zeroed lazily (`None` without the memory).
    pub(super) fn new(buckets: usize) -> Option<KeyTable> {
        Self::made(buckets, false)
    }

    /// An empty table about to be written all over (see `ZeroedTable::new_populated`).
    fn populated(buckets: usize) -> Option<KeyTable> {
        Self::made(buckets, true)
    }

    /// A table of `buckets` buckets in the layout that size calls for.
    fn made(buckets: usize, populated: bool) -> Option<KeyTable> {
        fn zeroed<B: Bucket>(buckets: usize, populated: bool) -> Option<Table<B>> {
            let buckets = if populated {
                ZeroedTable::new_populated(buckets)?
            } else {
                ZeroedTable::new(buckets)?
            };
            Some(Table::new(buckets))
        }
        let buckets = buckets.max(1);
        Some(if buckets >= COMPACT_FROM {
            KeyTable::Compact(zeroed(buckets, populated)?)
        } else {
            KeyTable::Wide(zeroed(buckets, populated)?)
        })
    }

    pub(super) fn buckets(&self) -> usize {
        either!(self, t => t.buckets.len())
    }

    /// Slots a bucket holds.
    pub(super) fn bucket_slots(&self) -> usize {
        match self {
            KeyTable::Wide(_) => WideBucket::SLOTS,
            KeyTable::Compact(_) => CompactBucket::SLOTS,
        }
    }

    /// Slots in all: what the shard's load is counted against.
    pub(super) fn slots(&self) -> usize {
        self.buckets() * self.bucket_slots()
    }

    /// The buckets' bytes and the stash's.
    pub(super) fn bytes(&self) -> usize {
        either!(self, t => t.bytes())
    }

    /// Whether the table holds the key of `word` and `ext` (its further bits).
    #[inline]
    pub(super) fn contains(&self, word: u64, ext: u16) -> bool {
        either!(self, t => t.contains(word, ext))
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
        let slot = Slot {
            word,
            ext: ext | above,
        };
        either!(self, t => t.insert(slot, elsewhere))
    }

    /// Starts loading the bucket where the key of `word` would be, with `load` (a prefetch).
    #[inline]
    pub(super) fn prefetch(&self, word: u64, load: impl Fn(*const u8)) {
        either!(self, t => t.prefetch(word, load))
    }

    /// The table's keys in a table of `buckets` buckets; `None` without the memory.
    pub(super) fn rehashed(&self, buckets: usize) -> Option<KeyTable> {
        let mut bigger = KeyTable::populated(buckets)?;
        match &mut bigger {
            KeyTable::Wide(to) => either!(self, from => from.place_all_in(to)),
            KeyTable::Compact(to) => either!(self, from => from.place_all_in(to)),
        }
        Some(bigger)
    }

    /// The keys' entries (made by `entry`), ascending; not if `stop` said so first (asked
    /// every `poll` buckets) or their vector could not be had. See `Table::sorted_entries`.
    pub(super) fn sorted_entries<E: Ord + Copy>(
        &self,
        entry: impl Fn(Slot) -> E,
        capacity: usize,
        poll: usize,
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<E>, NotFrozen> {
        either!(self, t => t.sorted_entries(entry, capacity, poll, stop))
    }

    /// Every key, in no order.
    #[cfg(test)]
    pub(super) fn keys(&self) -> Vec<Slot> {
        let mut keys = Vec::new();
        either!(self, t => t.for_each_key(|slot| keys.push(slot)));
        keys
    }

    /// The first bucket's keys' words (for a test of the wrap).
    #[cfg(test)]
    pub(super) fn first_words(&self) -> Vec<u64> {
        either!(self, t => (0..t.buckets.as_slice()[0].used())
            .map(|i| t.buckets.as_slice()[0].slot(i, 0, &t.geometry).0.word)
            .collect())
    }
}

/// A table of one layout: its buckets, and the keys kept aside (see the module's comment).
pub(super) struct Table<B: Bucket> {
    buckets: ZeroedTable<B>,
    geometry: Geometry,
    /// Keys that would have gone more than `B::MOST_DISPLACED` buckets past their home, by
    /// their value (word and further bits), with their further bits and the shard's.
    stash: KeyMap<u16>,
}

impl<B: Bucket> Table<B> {
    fn new(buckets: ZeroedTable<B>) -> Table<B> {
        let geometry = Geometry::new(buckets.len());
        Table {
            buckets,
            geometry,
            stash: KeyMap::default(),
        }
    }

    fn bytes(&self) -> usize {
        // A map entry: 16 bytes of key, 2 of value, aligned to 16, and a control byte.
        self.buckets.len() * BUCKET_BYTES + self.stash.capacity() * 33
    }

    #[inline]
    fn contains(&self, word: u64, ext: u16) -> bool {
        let buckets = self.buckets.as_slice();
        let mut at = home(word, buckets.len());
        let mut displaced = 0;
        loop {
            let bucket = &buckets[at];
            if bucket.holds(word, ext, displaced) {
                return true;
            }
            if !bucket.passed_on_for(word) {
                return false;
            }
            if displaced == B::MOST_DISPLACED {
                return self.stash.contains_key(&value_of(word, ext));
            }
            displaced += 1;
            at = next(at, buckets.len());
        }
    }

    #[inline]
    fn insert(&mut self, slot: Slot, elsewhere: impl FnOnce() -> bool) -> Inserted {
        let (word, ext) = (slot.word, slot.ext & EXT_MASK);
        let len = self.buckets.len();
        let buckets = self.buckets.as_mut_slice();
        let mut at = home(word, len);
        let mut displaced = 0;
        loop {
            let bucket = &mut buckets[at];
            if bucket.holds(word, ext, displaced) {
                return Inserted::Known;
            }
            if bucket.used() < B::SLOTS {
                if elsewhere() {
                    return Inserted::Known;
                }
                bucket.push(slot, displaced);
                return Inserted::New;
            }
            bucket.pass_on(word);
            if displaced == B::MOST_DISPLACED {
                return self.insert_in_stash(slot, elsewhere);
            }
            displaced += 1;
            at = next(at, len);
        }
    }

    #[cold]
    fn insert_in_stash(&mut self, slot: Slot, elsewhere: impl FnOnce() -> bool) -> Inserted {
        let key = value_of(slot.word, slot.ext);
        if self.stash.contains_key(&key) || elsewhere() {
            return Inserted::Known;
        }
        let before = self.bytes();
        self.stash.insert(key, slot.ext);
        Inserted::Aside {
            grew: self.bytes() - before,
        }
    }

    #[inline]
    fn prefetch(&self, word: u64, load: impl Fn(*const u8)) {
        let buckets = self.buckets.as_slice();
        let at = home(word, buckets.len());
        load(std::ptr::from_ref(&buckets[at]).cast::<u8>());
    }

    /// Calls `f` with every key: bucket by bucket, then the stash's. A loop calling `f`, not an
    /// iterator: a `flat_map` chained with the stash cost about as much around each key as
    /// placing it in a rehash (wfp-56-12 2571 at one thread, under cachegrind: 0.54 G
    /// instructions in `Chain::and_then_or_clear`, then none, 47.03 G -> 46.63 G in all).
    #[inline]
    fn for_each_key(&self, mut f: impl FnMut(Slot)) {
        for (at, bucket) in self.buckets.as_slice().iter().enumerate() {
            for i in 0..bucket.used() {
                f(bucket.slot(i, at, &self.geometry).0);
            }
        }
        for (slot, _) in self.stashed() {
            f(slot);
        }
    }

    /// The stash's keys with their home buckets.
    fn stashed(&self) -> impl Iterator<Item = (Slot, usize)> + '_ {
        self.stash.iter().map(|(&key, &ext)| {
            let word = (key >> EXT_BITS) as u64;
            (Slot { word, ext }, home(word, self.buckets.len()))
        })
    }

    /// Puts every key in `to`, known to hold none of them: a growing shard's keys, moved
    /// without looking for each among those already moved (the rehash is a few per cent of a
    /// narrow pass's time).
    fn place_all_in<T: Bucket>(&self, to: &mut Table<T>) {
        self.for_each_key(|slot| {
            debug_assert!(!to.contains(slot.word, slot.ext & EXT_MASK));
            to.place(slot);
        });
    }

    /// Puts `slot` in the first bucket from its home with a free slot (or the stash), its key
    /// known to be missing.
    #[inline]
    fn place(&mut self, slot: Slot) {
        let len = self.buckets.len();
        let buckets = self.buckets.as_mut_slice();
        let mut at = home(slot.word, len);
        let mut displaced = 0;
        loop {
            let bucket = &mut buckets[at];
            if bucket.used() < B::SLOTS {
                bucket.push(slot, displaced);
                return;
            }
            bucket.pass_on(slot.word);
            if displaced == B::MOST_DISPLACED {
                self.stash.insert(value_of(slot.word, slot.ext), slot.ext);
                return;
            }
            displaced += 1;
            at = next(at, len);
        }
    }

    /// The keys' entries (made by `entry`), ascending; `None` if `stop` said so first (asked
    /// every `poll` buckets). No sort of the whole table is needed: a word's home bucket rises
    /// with the word and an insertion only moves it forward within its cluster (a run of
    /// buckets that passed keys on, and the first that did not), so each cluster's words are
    /// below the next cluster's, and sorting every cluster on its own sorts them all (a freeze
    /// of 1.2 G keys took some 20 s with one sort a shard); a stashed key joins the cluster of
    /// its home. The one cluster that runs past the table's end into its first buckets is taken
    /// together: the words it left there (homes above their buckets) go last, with the words at
    /// the end.
    fn sorted_entries<E: Ord + Copy>(
        &self,
        entry: impl Fn(Slot) -> E,
        capacity: usize,
        poll: usize,
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<E>, NotFrozen> {
        if stop() {
            return Err(NotFrozen::Stopped);
        }
        let buckets = self.buckets.as_slice();
        let len = buckets.len();
        let mut stashed: Vec<(Slot, usize)> = self.stashed().collect();
        stashed.sort_unstable_by_key(|&(_, home)| home);
        let mut stashed = stashed.into_iter().peekable();
        // A freeze comes when memory is short: the vector (16 bytes a key, hundreds of megabytes
        // for a large shard) may not be had, and that must not end the process.
        let mut entries = Vec::new();
        entries
            .try_reserve_exact(capacity)
            .map_err(|_| NotFrozen::NoMemory)?;
        let mut wrapped = Vec::new();
        let mut at = 0;
        // The run the last bucket passed on into.
        if buckets[len - 1].passed_on() {
            while at < len {
                let bucket = &buckets[at];
                for i in 0..bucket.used() {
                    let (slot, home) = bucket.slot(i, at, &self.geometry);
                    if home > at {
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
            while let Some((slot, _)) = stashed.next_if(|&(_, home)| home < at) {
                entries.push(entry(slot));
            }
            entries.sort_unstable();
        }
        let mut cluster = entries.len();
        for (at, bucket) in buckets.iter().enumerate().skip(at) {
            if at % poll == poll - 1 && stop() {
                return Err(NotFrozen::Stopped);
            }
            entries.extend((0..bucket.used()).map(|i| entry(bucket.slot(i, at, &self.geometry).0)));
            if !bucket.passed_on() {
                while let Some((slot, _)) = stashed.next_if(|&(_, home)| home <= at) {
                    entries.push(entry(slot));
                }
                if entries.len() - cluster > 1 {
                    entries[cluster..].sort_unstable();
                }
                cluster = entries.len();
            }
        }
        entries.extend(stashed.map(|(slot, _)| entry(slot)));
        entries.extend(wrapped);
        entries[cluster..].sort_unstable();
        Ok(entries)
    }

    /// Buckets a look-up of `word` that misses reads.
    #[cfg(test)]
    fn lines_read_missing(&self, word: u64) -> usize {
        let buckets = self.buckets.as_slice();
        let mut at = home(word, buckets.len());
        let mut read = 1;
        while buckets[at].passed_on_for(word) && read <= B::MOST_DISPLACED {
            at = next(at, buckets.len());
            read += 1;
        }
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn words(seed: u64) -> impl Iterator<Item = u64> {
        let mut x = seed;
        std::iter::repeat_with(move || {
            x = x
                .wrapping_mul(0x5851_f42d_4c95_7f2d)
                .wrapping_add(0x1405_7b7e_f767_814f);
            x | 1
        })
    }

    /// The table's keys as a simple set keeps them: word and further bits (the tag dropped).
    fn plain(slots: impl Iterator<Item = Slot>) -> BTreeSet<(u64, u16)> {
        slots.map(|s| (s.word, s.ext & EXT_MASK)).collect()
    }

    fn entries(table: &KeyTable) -> Vec<(u64, u16)> {
        let entry = |s: Slot| (s.word, s.ext);
        table.sorted_entries(entry, 0, 1000, &|| false).unwrap()
    }

    /// Filled to the loads the shards run at and beyond, a table of either layout keeps every
    /// key with its tag, finds none it was not given, gives its keys back ascending, and few
    /// look-ups that miss read past the home bucket.
    #[test]
    fn keys_go_in_once_and_misses_stop_at_home() {
        for (buckets, layout_slots) in [(2000, WideBucket::SLOTS), (5000, CompactBucket::SLOTS)] {
            for percent in [40, 47, 50, 58, 65, 70, 74, 80, 90, 95] {
                let mut table = KeyTable::new(buckets).unwrap();
                assert_eq!(table.bucket_slots(), layout_slots);
                let keys = buckets * layout_slots * percent / 100;
                let given: Vec<u64> = words(percent as u64).take(keys).collect();
                let ext = |i: usize| i as u16 & EXT_MASK;
                let tag = |i: usize| ((i % 64) as u16) << EXT_BITS;
                for (i, &w) in given.iter().enumerate() {
                    assert_ne!(table.insert(w, ext(i), tag(i), || false), Inserted::Known);
                }
                for (i, &w) in given.iter().enumerate() {
                    assert!(table.contains(w, ext(i)));
                    assert!(!table.contains(w, ext(i + 1)));
                    assert_eq!(table.insert(w, ext(i), 0, || false), Inserted::Known);
                }
                let mut others = words(1000 + percent as u64).take(keys);
                assert!(others.all(|w| !table.contains(w, 0)));
                let mut expected: Vec<(u64, u16)> = (given.iter().enumerate())
                    .map(|(i, &w)| (w, ext(i) | tag(i)))
                    .collect();
                expected.sort_unstable();
                assert_eq!(
                    entries(&table),
                    expected,
                    "{buckets} buckets, {percent}% full"
                );
                // A miss reads a second line only where its home bucket passed on a key with
                // its mark. Measured, six slots: 1.00 lines a miss at 40% full, 1.00 at 47%,
                // 1.01 at 58%, 1.04 at 70%, 1.11 at 74%, 1.18 at 80%, 2.18 at 90%, 4.35 at 95%;
                // seven (at most 16 before the stash): 1.00, 1.01, 1.03, 1.11, 1.16, 1.39, 2.59,
                // 4.29. (With one bit for "passed any key on": 1.01, 1.04, 1.09, 1.34, 1.68,
                // 2.32, 6.72, 14.8; seven 1.01, 1.02, 1.09, 1.34, 1.47, 2.03, 4.28, 7.12.)
                let lines: usize = either!(&table, t => words(1000 + percent as u64)
                    .take(keys)
                    .map(|w| t.lines_read_missing(w))
                    .sum());
                let most = match percent {
                    0..=50 => 1.02,
                    51..=58 => 1.05,
                    59..=74 => 1.25,
                    75..=80 => 1.5,
                    _ => 5.0,
                };
                let lines = lines as f64 / keys as f64;
                assert!(lines <= most, "{percent}% full: {lines} lines a miss");
            }
        }
    }

    /// A compact table crammed full keeps the keys its buckets cannot take in its stash, finds
    /// them, gives them back in order, and a rehash into a bigger table keeps every key.
    #[test]
    fn keys_kept_aside_are_found_sorted_and_moved() {
        let buckets = COMPACT_FROM + 77;
        let mut table = KeyTable::new(buckets).unwrap();
        let keys = buckets * CompactBucket::SLOTS * 97 / 100;
        let given: Vec<u64> = words(7).take(keys).collect();
        let mut grown_aside = 0;
        for (i, &w) in given.iter().enumerate() {
            let inserted = table.insert(w, 1, ((i % 64) as u16) << EXT_BITS, || false);
            assert_ne!(inserted, Inserted::Known);
            if let Inserted::Aside { grew } = inserted {
                grown_aside += grew;
            }
        }
        let KeyTable::Compact(compact) = &table else {
            panic!("a compact table");
        };
        assert!(!compact.stash.is_empty(), "nothing kept aside at 97%");
        // The insertions said what the stash took.
        assert_eq!(table.bytes(), buckets * BUCKET_BYTES + grown_aside);
        let stashed: Vec<u64> = compact
            .stash
            .keys()
            .map(|&k| (k >> EXT_BITS) as u64)
            .collect();
        for &w in &stashed {
            assert!(table.contains(w, 1) && !table.contains(w, 2));
            assert_eq!(table.insert(w, 1, 0, || false), Inserted::Known);
        }
        // Held elsewhere: not stashed.
        let before = table.keys().len();
        let mut refused = 0;
        for w in words(99).take(2000) {
            if table.insert(w, 3, 0, || true) == Inserted::Known {
                refused += 1;
            }
        }
        assert_eq!((refused, table.keys().len()), (2000, before));
        let expected = plain(given.iter().map(|&word| Slot { word, ext: 1 }));
        let sorted = entries(&table);
        assert!(sorted.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(
            plain(sorted.iter().map(|&(word, ext)| Slot { word, ext })),
            expected
        );
        let bigger = table.rehashed(2 * buckets).unwrap();
        assert!(matches!(bigger, KeyTable::Compact(_)));
        assert_eq!(entries(&bigger), sorted);
        assert!(given.iter().all(|&w| bigger.contains(w, 1)));
    }

    /// A table grown past `COMPACT_FROM` buckets changes layout, and one made smaller changes
    /// back, keys and tags kept.
    #[test]
    fn a_rehash_between_layouts_keeps_every_key() {
        let mut wide = KeyTable::new(4000).unwrap();
        let given: Vec<u64> = words(11)
            .take(4000 * WideBucket::SLOTS * 80 / 100)
            .collect();
        for (i, &w) in given.iter().enumerate() {
            wide.insert(w, 2, ((i % 64) as u16) << EXT_BITS, || false);
        }
        let sorted = entries(&wide);
        assert_eq!(sorted.len(), given.len());
        let compact = wide.rehashed(COMPACT_FROM + 77).unwrap();
        assert!(matches!(compact, KeyTable::Compact(_)));
        assert_eq!(entries(&compact), sorted);
        let back = compact.rehashed(COMPACT_FROM - 1).unwrap();
        assert!(matches!(back, KeyTable::Wide(_)));
        assert_eq!(entries(&back), sorted);
        assert!(given
            .iter()
            .all(|&w| back.contains(w, 2) && !back.contains(w, 3)));
    }

    #[test]
    fn a_key_held_elsewhere_is_not_inserted() {
        for buckets in [4, COMPACT_FROM] {
            let mut table = KeyTable::new(buckets).unwrap();
            assert_eq!(table.insert(7, 1, 0, || true), Inserted::Known);
            assert!(!table.contains(7, 1));
            assert_eq!(table.insert(7, 1, 0, || false), Inserted::New);
            // The bits above the key's are kept but not compared.
            assert_eq!(table.insert(9, 1, 1 << 12, || false), Inserted::New);
            assert!(table.contains(9, 1));
        }
    }
}
