//! The two layouts of a key table's bucket, one cache line each: six ten-byte slots for a small
//! table, seven nine-byte slots once the table is large enough that its bucket index says the
//! top bits of each key's word (see [`CompactBucket`]).
//!
//! Both keep 80 bits of a key (64 of its word, 10 beside it, the shard's 6 by which shard holds
//! it) and the shard's 6-bit tag beside them; a compact slot gives up the word's top 12 bits
//! for the key's displacement from its home bucket (4 bits), which with the bucket's place make
//! those 12 bits again.

use super::frozen::VALUE_BITS;
use bytemuck::{Pod, Zeroable};

/// A key as a table is given it and gives it back: its word, and beside it its further bits
/// (`EXT_BITS`) with whatever the shard keeps above them (its tag).
#[repr(C, packed)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(super) struct Slot {
    pub(super) word: u64,
    pub(super) ext: u16,
}

/// The key bits a slot keeps beside its word.
pub(super) const EXT_BITS: u32 = VALUE_BITS - 64;
pub(super) const EXT_MASK: u16 = (1 << EXT_BITS) - 1;

/// A key's value: the word and its further bits (what a frozen set and a table's stash keep).
#[inline]
pub(super) fn value_of(word: u64, ext: u16) -> u128 {
    (word as u128) << EXT_BITS | (ext & EXT_MASK) as u128
}

/// A bucket is one cache line.
pub(super) const BUCKET_BYTES: usize = 64;

/// The mark of the key of `word` among `marks` in a bucket's filter of passed-on keys: from the
/// word's low bits, which the home bucket (its top bits) does not decide.
#[inline]
fn filter_mark(word: u64, marks: u32) -> u32 {
    ((u64::from(word as u32) * u64::from(marks)) >> 32) as u32
}

/// The home bucket of `word` among `buckets`: multiply-shift, so any count and no modulo, and
/// rising with the word (what sorting a table's keys relies on).
#[inline]
pub(super) fn home(word: u64, buckets: usize) -> usize {
    ((word as u128 * buckets as u128) >> 64) as usize
}

/// A table's size, as a compact bucket needs it to make a word whole again.
#[derive(Clone, Copy)]
pub(super) struct Geometry {
    pub(super) buckets: usize,
    /// 2^64 / `buckets`, rounded down: the least word whose home is `h` is at least `h * step`.
    step: u64,
}

impl Geometry {
    pub(super) fn new(buckets: usize) -> Geometry {
        let step = ((1u128 << 64) / buckets.max(2) as u128) as u64;
        Geometry { buckets, step }
    }

    /// The bucket `displaced` before `at` (wrapping round to the last).
    #[inline]
    fn back(&self, at: usize, displaced: usize) -> usize {
        if at >= displaced {
            at - displaced
        } else {
            at + self.buckets - displaced
        }
    }
}

/// What a table needs of a bucket layout.
pub(super) trait Bucket: Pod {
    /// Slots a bucket holds.
    const SLOTS: usize;
    /// How many buckets past its home a key may be kept; one that would go further is kept
    /// aside (the table's stash).
    const MOST_DISPLACED: usize;

    fn used(&self) -> usize;

    /// Whether an insertion ever found the bucket full and went on to the next.
    fn passed_on(&self) -> bool;

    /// Whether an insertion may have passed the key of `word` on from this bucket: its mark in
    /// the bucket's filter of passed-on keys is set (true for every key passed on, and for a
    /// few others that share a mark).
    fn passed_on_for(&self, word: u64) -> bool;

    /// Notes that an insertion found the bucket full and passed the key of `word` on.
    fn pass_on(&mut self, word: u64);

    /// Whether a used slot holds the key of `word` and `ext` (its bits under `EXT_MASK`), the
    /// bucket being `displaced` past the key's home.
    fn holds(&self, word: u64, ext: u16, displaced: usize) -> bool;

    /// Puts `slot` in the first free slot (there is one), `displaced` past its home.
    fn push(&mut self, slot: Slot, displaced: usize);

    /// The key in used slot `i` of the bucket at `at`, and its home bucket.
    fn slot(&self, i: usize, at: usize, geometry: &Geometry) -> (Slot, usize);
}

/// Six slots of ten bytes behind a four-byte head (slots used in the low byte, the filter of
/// passed-on keys in the 16 bits above it): for any table, however small.
#[repr(C, align(64))]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(super) struct WideBucket {
    head: u32,
    slots: [Slot; 6],
}

const _: () = assert!(std::mem::size_of::<WideBucket>() == BUCKET_BYTES);

impl WideBucket {
    const USED_MASK: u32 = 0xff;
    const FILTER_SHIFT: u32 = 8;
    const FILTER_MARKS: u32 = 16;

    #[inline]
    fn mark(word: u64) -> u32 {
        1 << (Self::FILTER_SHIFT + filter_mark(word, Self::FILTER_MARKS))
    }
}

impl Bucket for WideBucket {
    const SLOTS: usize = 6;
    const MOST_DISPLACED: usize = usize::MAX;

    #[inline]
    fn used(&self) -> usize {
        (self.head & Self::USED_MASK) as usize
    }

    #[inline]
    fn passed_on(&self) -> bool {
        self.head & !Self::USED_MASK != 0
    }

    #[inline]
    fn passed_on_for(&self, word: u64) -> bool {
        self.head & Self::mark(word) != 0
    }

    #[inline]
    fn pass_on(&mut self, word: u64) {
        self.head |= Self::mark(word);
    }

    #[inline]
    fn holds(&self, word: u64, ext: u16, _displaced: usize) -> bool {
        self.slots[..self.used()]
            .iter()
            .any(|slot| { slot.word } == word && slot.ext & EXT_MASK == ext)
    }

    #[inline]
    fn push(&mut self, slot: Slot, _displaced: usize) {
        self.slots[self.used()] = slot;
        self.head += 1;
    }

    #[inline]
    fn slot(&self, i: usize, _at: usize, geometry: &Geometry) -> (Slot, usize) {
        let slot = self.slots[i];
        (slot, home(slot.word, geometry.buckets))
    }
}

/// Seven slots of nine bytes behind a one-byte head (slots used in the low three bits, the
/// filter of passed-on keys in the five above them), for tables of at least [`COMPACT_FROM`]
/// buckets. A slot keeps the word's low [`REST_BITS`] bits: the key's home bucket, which a table
/// that large has at most 2^52 words in, makes the rest, and the slot says how far past its home
/// it is (up to `MOST_DISPLACED`). 9.1 bytes a slot against 10.7.
///
/// A slot, little-endian: bits 0-51 the word's low bits, 52-61 the further bits, 62-63 and
/// 64-65 the displacement, 66-71 the tag.
#[repr(C, align(64))]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(super) struct CompactBucket {
    bytes: [u8; 64],
}

/// The word bits a compact slot keeps.
pub(super) const REST_BITS: u32 = 52;
const REST_MASK: u64 = (1 << REST_BITS) - 1;
/// The fewest buckets a compact table may have: with fewer, a home bucket spans more than
/// 2^`REST_BITS` words.
pub(super) const COMPACT_FROM: usize = 1 << (64 - REST_BITS);
const SLOT_BYTES: usize = 9;
const _: () = assert!(
    std::mem::size_of::<CompactBucket>() == BUCKET_BYTES && 1 + 7 * SLOT_BYTES == BUCKET_BYTES
);
const _: () = assert!(
    REST_BITS + EXT_BITS + 2 == 64 && u16::BITS - EXT_BITS == 6,
    "a compact slot's bits: word, further bits and displacement in 64, displacement and tag in 8"
);

impl CompactBucket {
    const USED_MASK: u8 = 0b111;
    const FILTER_SHIFT: u32 = 3;
    const FILTER_MARKS: u32 = 5;

    #[inline]
    fn mark(word: u64) -> u8 {
        1 << (Self::FILTER_SHIFT + filter_mark(word, Self::FILTER_MARKS))
    }

    /// A slot's low 64 bits and its ninth byte.
    #[inline]
    fn read(&self, i: usize) -> (u64, u8) {
        let at = 1 + SLOT_BYTES * i;
        let low = u64::from_le_bytes(self.bytes[at..at + 8].try_into().expect("eight bytes"));
        (low, self.bytes[at + 8])
    }

    /// The compared bits of a key `displaced` past its home: the low word and the ninth byte's
    /// two low bits.
    #[inline]
    fn packed(word: u64, ext: u16, displaced: usize) -> (u64, u8) {
        let low = word & REST_MASK
            | u64::from(ext & EXT_MASK) << REST_BITS
            | (displaced as u64 & 0b11) << 62;
        (low, (displaced >> 2) as u8 & 0b11)
    }
}

impl Bucket for CompactBucket {
    const SLOTS: usize = 7;
    const MOST_DISPLACED: usize = 15;

    #[inline]
    fn used(&self) -> usize {
        (self.bytes[0] & Self::USED_MASK) as usize
    }

    #[inline]
    fn passed_on(&self) -> bool {
        self.bytes[0] & !Self::USED_MASK != 0
    }

    #[inline]
    fn passed_on_for(&self, word: u64) -> bool {
        self.bytes[0] & Self::mark(word) != 0
    }

    #[inline]
    fn pass_on(&mut self, word: u64) {
        self.bytes[0] |= Self::mark(word);
    }

    #[inline]
    fn holds(&self, word: u64, ext: u16, displaced: usize) -> bool {
        let (low, high) = Self::packed(word, ext, displaced);
        (0..self.used()).any(|i| {
            let (l, h) = self.read(i);
            l == low && h & 0b11 == high
        })
    }

    #[inline]
    fn push(&mut self, slot: Slot, displaced: usize) {
        debug_assert!(displaced <= Self::MOST_DISPLACED);
        let (low, high) = Self::packed(slot.word, slot.ext, displaced);
        let at = 1 + SLOT_BYTES * self.used();
        self.bytes[at..at + 8].copy_from_slice(&low.to_le_bytes());
        self.bytes[at + 8] = high | ((slot.ext >> EXT_BITS) as u8) << 2;
        self.bytes[0] += 1;
    }

    #[inline]
    fn slot(&self, i: usize, at: usize, geometry: &Geometry) -> (Slot, usize) {
        let (low, high) = self.read(i);
        let displaced = (low >> 62) as usize | ((high & 0b11) as usize) << 2;
        let home_at = geometry.back(at, displaced);
        // The least word of that home is at or above `home_at * step`, and less than 2^52 above
        // it: the word is the first at or above it with these low bits, or 2^52 further.
        let least = (home_at as u64).wrapping_mul(geometry.step);
        let mut word = least + ((low & REST_MASK).wrapping_sub(least) & REST_MASK);
        if home(word, geometry.buckets) != home_at {
            word += 1 << REST_BITS;
        }
        let ext = (low >> REST_BITS) as u16 & EXT_MASK | u16::from(high >> 2) << EXT_BITS;
        (Slot { word, ext }, home_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compact slot gives back the word it was given, whatever its place in its home's range
    /// of words, its displacement or the table's size.
    #[test]
    fn a_compact_slot_gives_back_its_word() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for buckets in [
            COMPACT_FROM,
            COMPACT_FROM + 1,
            5_000,
            77_777,
            1 << 20,
            (1 << 26) + 3,
        ] {
            let geometry = Geometry::new(buckets);
            let mut words = vec![1, 2, u64::MAX, u64::MAX - 1, 1 << 52, (1 << 52) - 1];
            for _ in 0..2000 {
                x = x
                    .wrapping_mul(0x5851_f42d_4c95_7f2d)
                    .wrapping_add(0x1405_7b7e_f767_814f);
                words.push(x);
            }
            // The first and last words of some homes.
            for h in [0, 1, buckets / 2, buckets - 1] {
                let least = ((h as u128) << 64).div_ceil(buckets as u128) as u64;
                words.extend([least, least.wrapping_sub(1), least.wrapping_add(1)]);
            }
            for (n, &word) in words.iter().enumerate() {
                let displaced = n % (CompactBucket::MOST_DISPLACED + 1);
                let home_at = home(word, buckets);
                let at = (home_at + displaced) % buckets;
                let ext = (n as u16).wrapping_mul(7919) & EXT_MASK | ((n % 64) as u16) << EXT_BITS;
                let mut bucket = CompactBucket::zeroed();
                bucket.push(Slot { word: 5, ext: 0 }, 0);
                bucket.push(Slot { word, ext }, displaced);
                let (slot, back) = bucket.slot(1, at, &geometry);
                assert_eq!(
                    ({ slot.word }, { slot.ext }),
                    (word, ext),
                    "{buckets} buckets"
                );
                assert_eq!(back, home_at);
                assert!(bucket.holds(word, ext & EXT_MASK, displaced));
                assert!(!bucket.holds(word, ext & EXT_MASK, (displaced + 1) % 16));
                assert!(!bucket.holds(word ^ 1 << 51, ext & EXT_MASK, displaced));
                assert!(!bucket.holds(word, (ext ^ 1 << 9) & EXT_MASK, displaced));
            }
        }
    }

    #[test]
    fn a_bucket_counts_its_slots_and_its_passing_on() {
        let mut wide = WideBucket::zeroed();
        let mut compact = CompactBucket::zeroed();
        for i in 0..WideBucket::SLOTS {
            wide.push(
                Slot {
                    word: i as u64 + 1,
                    ext: 3,
                },
                0,
            );
        }
        for i in 0..CompactBucket::SLOTS {
            compact.push(
                Slot {
                    word: i as u64 + 1,
                    ext: 3,
                },
                0,
            );
        }
        assert_eq!((wide.used(), compact.used()), (6, 7));
        assert!(!wide.passed_on() && !compact.passed_on());
        wide.pass_on(9);
        compact.pass_on(9);
        assert!(wide.passed_on() && compact.passed_on());
        assert!(wide.passed_on_for(9) && compact.passed_on_for(9));
        assert_eq!((wide.used(), compact.used()), (6, 7));
        assert!(compact.holds(7, 3, 0) && !compact.holds(8, 3, 0));
    }
}
