//! Each owner's index of the positions it made new on the level being made (`parallel/insert.rs`):
//! counting, a further way into a position of this level finds the position's place by its
//! key. An open-addressing table (linear probing) of 16-byte entries, four to a cache line,
//! whose slots can be loaded ahead: the owner starts loading a candidate's slot when it starts
//! loading the candidate's key-set slot, some candidates before it inserts it. (A `HashMap`
//! took 5.8% of the samples on 加藤徹 9029's levels of millions, each insertion a cache miss
//! nothing had loaded ahead.)
//!
//! An entry keeps 80 bits of its key (the low 96 but for the 16 of the level's stamp). Every
//! key asked for here is already in the key set, which tells keys apart by 80 bits too
//! (`set.rs`): two keys of the set share these 80 with a chance of 2^-80 a pair.
//!
//! The table is kept from level to level and never emptied: an entry counts only if it bears
//! the level's stamp (emptying a table of 加藤徹 6935's widest levels at each of its 3,467
//! levels would write gigabytes, and a table made anew whenever a level's width changed cost
//! the narrower long problems 1-5%, each mapping and unmapping interrupting the other threads).

use crate::search::machine::prefetch_write;
use crate::search::memory::ZeroedTable;
use bytemuck::{Pod, Zeroable};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Entry {
    /// The key's low 64 bits.
    low: u64,
    /// Its next 16 bits.
    high: u16,
    /// The level it was inserted on: another's entry is an empty slot.
    stamp: u16,
    /// The position's place among the owner's new positions.
    place: u32,
}

const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();
const _: () = assert!(ENTRY_BYTES == 16);
/// The table is grown (doubled) before it is fuller than this, in per cent.
const FULL_PERCENT: usize = 50;
const MIN_SLOTS: usize = 64;

pub(crate) struct LevelIndex {
    /// A power of two of entries.
    table: ZeroedTable<Entry>,
    len: usize,
    /// The current level's stamp (never 0, which a zeroed entry has).
    stamp: u16,
}

impl Default for LevelIndex {
    fn default() -> LevelIndex {
        LevelIndex {
            table: ZeroedTable::new(MIN_SLOTS).expect("a small table"),
            len: 0,
            stamp: 1,
        }
    }
}

impl LevelIndex {
    /// Emptied for a new level, with room for about `keys` keys before it grows (a table
    /// already bigger is kept).
    pub(crate) fn reset(&mut self, keys: usize) {
        let slots = Self::slots_for(keys);
        if self.table.len() < slots {
            self.table = ZeroedTable::new(slots).expect("address space for a level's index");
            self.stamp = 1;
        } else if self.stamp == u16::MAX {
            // Every stamp used: the table emptied once in 65,535 levels.
            self.table.as_mut_slice().fill(Entry::zeroed());
            self.stamp = 1;
        } else {
            self.stamp += 1;
        }
        self.len = 0;
    }

    fn slots_for(keys: usize) -> usize {
        (keys.saturating_mul(100) / FULL_PERCENT + 1)
            .next_power_of_two()
            .max(MIN_SLOTS)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    /// Memory held.
    pub(crate) fn bytes(&self) -> usize {
        self.table.len() * ENTRY_BYTES
    }

    /// Bytes the table would add to take one more key (growing holds the old table and the
    /// new one together: this counts both), or 0 if it has room.
    pub(crate) fn room_needed(&self) -> usize {
        if (self.len + 1) * 100 <= self.table.len() * FULL_PERCENT {
            0
        } else {
            3 * self.bytes()
        }
    }

    /// Doubles the table (see `room_needed`), keeping the level's entries; returns the bytes
    /// it added.
    pub(crate) fn grow(&mut self) -> usize {
        let slots = 2 * self.table.len();
        let mut bigger =
            ZeroedTable::<Entry>::new_populated(slots).expect("address space for a level's index");
        {
            let table = bigger.as_mut_slice();
            let mask = slots - 1;
            let stamp = self.stamp;
            for entry in self.table.as_slice().iter().filter(|e| e.stamp == stamp) {
                let mut i = entry.low as usize & mask;
                while table[i].stamp == stamp {
                    i = (i + 1) & mask;
                }
                table[i] = *entry;
            }
        }
        let added = (slots - self.table.len()) * ENTRY_BYTES;
        self.table = bigger;
        added
    }

    #[inline]
    fn mask(&self) -> usize {
        self.table.len() - 1
    }

    #[inline]
    fn parts(key: u128) -> (u64, u16) {
        (key as u64, (key >> 64) as u16)
    }

    /// Starts loading the slot of `key` (to be written, or read by its owner).
    #[inline]
    pub(crate) fn prefetch(&self, key: u128) {
        let (low, _) = Self::parts(key);
        prefetch_write(&self.table.as_slice()[low as usize & self.mask()]);
    }

    /// Notes that the owner's new position `place` has `key`, which must not be in yet; the
    /// caller made room (`room_needed`, `grow`).
    #[inline]
    pub(crate) fn insert(&mut self, key: u128, place: u32) {
        debug_assert!(self.get(key).is_none(), "a key indexed twice");
        assert!(
            (self.len + 1) * 100 <= self.table.len() * FULL_PERCENT,
            "room made first"
        );
        let (low, high) = Self::parts(key);
        let (mask, stamp) = (self.mask(), self.stamp);
        let table = self.table.as_mut_slice();
        let mut i = low as usize & mask;
        while table[i].stamp == stamp {
            i = (i + 1) & mask;
        }
        table[i] = Entry {
            low,
            high,
            stamp,
            place,
        };
        self.len += 1;
    }

    /// The place of `key` among the owner's new positions, if it is one.
    #[inline]
    pub(crate) fn get(&self, key: u128) -> Option<u32> {
        let (low, high) = Self::parts(key);
        let (mask, stamp) = (self.mask(), self.stamp);
        let table = self.table.as_slice();
        let mut i = low as usize & mask;
        loop {
            let entry = table[i];
            if entry.stamp != stamp {
                return None;
            }
            if entry.low == low && entry.high == high {
                return Some(entry.place);
            }
            i = (i + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn key(i: u128) -> u128 {
        i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) ^ 0x5555
    }

    /// Checked against a `HashMap` through growth and resets, with keys that share their low
    /// bits (one home) or differ only above them.
    #[test]
    fn the_index_finds_what_a_map_finds() {
        let mut index = LevelIndex::default();
        for (round, keys) in [(0u128, 10usize), (1, 5_000), (2, 100)].into_iter() {
            index.reset(keys / 4);
            let mut map = HashMap::new();
            let mut grown = 0;
            for i in 0..keys as u128 {
                let k = match i % 3 {
                    0 => key(i + round * 1_000_000),
                    // The same low 64 bits as the one before, another high part.
                    1 => key(i - 1 + round * 1_000_000) ^ 1 << 70,
                    _ => (i << 64) | 7,
                };
                if index.room_needed() > 0 {
                    grown += index.grow();
                }
                index.insert(k, i as u32);
                map.insert(k, i as u32);
            }
            assert_eq!(index.len(), keys);
            assert!(round != 1 || grown > 0, "it grew");
            for (&k, &place) in &map {
                assert_eq!(index.get(k), Some(place));
            }
            // Keys differing from an indexed one in bits 64-95 only, or not indexed at all.
            for i in 0..keys as u128 {
                assert_eq!(index.get(key(i + 7_000_000)), None);
                let near = key(i + round * 1_000_000) ^ 1 << 75;
                assert_eq!(index.get(near), map.get(&near).copied());
            }
        }
        // A reset empties it.
        index.reset(10);
        assert_eq!(index.get(key(2_000_000)), None);
        assert_eq!(index.len(), 0);
    }

    /// Entries of earlier levels are never found, also once the stamps have gone round.
    #[test]
    fn earlier_levels_entries_are_gone() {
        let mut index = LevelIndex::default();
        for level in 0..70_000u32 {
            index.reset(4);
            let k = key(u128::from(level % 3));
            assert_eq!(index.get(k), None, "level {level}");
            index.insert(k, level);
            assert_eq!(index.get(k), Some(level));
        }
    }
}
