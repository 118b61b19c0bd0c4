//! Keys frozen out of a key-set shard's table when memory runs short: sorted and packed, in
//! about 8 bytes a key where the table takes 12-18.
//!
//! A value (the `VALUE_BITS` bits a shard keeps of a key) is split into its top `bucket_bits`
//! bits, which choose a bucket, and the rest, kept in a record of `VALUE_BITS - bucket_bits`
//! bits packed end to end (51-58 bits for shards of 2^19-2^26 keys). The records are sorted,
//! so a bucket's records follow one another and a look-up reads the bucket's start and a few
//! records (about eight to a bucket): one or two cache lines. Nothing of the value is lost, so
//! frozen keys can be merged with newer ones into a new frozen set.
//!
//! A bucket's start is kept in two parts: the start of its block of 4,096 buckets (a small
//! table, which stays in the caches) and its 16-bit offset within the block: 2 bytes a bucket
//! where a whole start took 4, a quarter of a byte a key less.
//!
//! A set may keep a few bits more with each value, below it in the record: a *tag* (the key
//! set keeps how long a key is to be kept there, 6 bits: records of 57-64 bits, 7.4-8.3 bytes a
//! key with the bucket starts). Its items are then `value << tag_bits | tag`, ordered by value.

use crate::search::memory::ZeroedTable;

/// Bits of a key a shard keeps: its low 64 (the table's word) and 10 more (the table's
/// extension); with the shard's own 6, 80 bits tell keys apart.
pub(crate) const VALUE_BITS: u32 = 74;

/// Records a bucket holds on average (fewer buckets: less memory for their starts, longer
/// scans).
const KEYS_PER_BUCKET: usize = 8;
const MIN_BUCKET_BITS: u32 = 1;
/// Bytes after the last record, so that every record can be read as 16 bytes.
const PADDING: usize = 16;
/// Buckets of a block, whose offsets count from the block's start (`BLOCK_BITS` of the bucket
/// number): about 32,768 records at eight a bucket, well within an offset's 16 bits (a block
/// that held more than 65,535 would have the set use smaller blocks: see `block_bits_for`).
const BLOCK_BITS: u32 = 12;

/// Why a freeze left a shard (or a key set) as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotFrozen {
    /// Its `stop` said so.
    Stopped,
    /// The memory for the keys sorted or the new frozen set was not to be had.
    NoMemory,
}

/// Why no frozen set was made of some items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotMade {
    /// The items did not come to their count: fewer when a freeze was stopped, else a caller's
    /// mistake.
    Miscounted,
    /// The memory for the set's tables was not to be had.
    NoMemory,
    /// More items than one set numbers (2^32).
    TooMany,
}

pub(crate) struct FrozenKeys {
    bucket_bits: u32,
    tag_bits: u32,
    /// Bits a record: the rest of a value and the tag, `VALUE_BITS + tag_bits - bucket_bits`.
    record_bits: usize,
    record_mask: u128,
    /// Buckets a block, as a shift: `BLOCK_BITS`, or fewer (see `block_bits_for`).
    block_bits: u32,
    /// Where each block's records begin; one more than there are blocks.
    block_starts: Vec<u32>,
    /// Where each bucket's records begin, from its block's start; one more than there are
    /// buckets (the last 0). (It and the records are mapped for huge pages when large, as the
    /// key set's tables are: look-ups land anywhere in them.)
    offsets: ZeroedTable<u16>,
    records: ZeroedTable<u8>,
}

impl FrozenKeys {
    fn bucket_bits_for(keys: usize) -> u32 {
        let buckets = (keys / KEYS_PER_BUCKET).max(1);
        (usize::BITS - 1 - buckets.leading_zeros()).clamp(MIN_BUCKET_BITS, VALUE_BITS - 8)
    }

    fn record_bits_for(bucket_bits: u32, tag_bits: u32) -> usize {
        (VALUE_BITS + tag_bits - bucket_bits) as usize
    }

    /// Bytes the records of `keys` keys take, with the padding.
    fn records_bytes(keys: usize, record_bits: usize) -> usize {
        (keys * record_bits).div_ceil(8) + PADDING
    }

    /// Bytes of the bucket starts for `bucket_bits` and `block_bits`.
    fn starts_bytes(bucket_bits: u32, block_bits: u32) -> usize {
        ((1usize << bucket_bits) + 1) * 2 + ((1usize << (bucket_bits - block_bits)) + 1) * 4
    }

    /// The widest blocks (at most `BLOCK_BITS` of the bucket number) in which no offset needs
    /// more than 16 bits, given the records each bucket holds. Hashed keys never need fewer
    /// than `BLOCK_BITS` (a block holds 65,535 records only some 180 standard deviations above
    /// its mean); the loop makes any set of values exact.
    fn block_bits_for(counts: &[u32], bucket_bits: u32) -> u32 {
        let mut bits = BLOCK_BITS.min(bucket_bits);
        while bits > 0
            && counts
                .chunks(1 << bits)
                .any(|block| block.iter().map(|&n| n as u64).sum::<u64>() > u16::MAX as u64)
        {
            bits -= 1;
        }
        bits
    }

    /// What a frozen set of `keys` keys with tags of `tag_bits` bits takes.
    pub(crate) fn bytes_for_tagged(keys: usize, tag_bits: u32) -> usize {
        let bits = Self::bucket_bits_for(keys);
        Self::starts_bytes(bits, BLOCK_BITS.min(bits))
            + Self::records_bytes(keys, Self::record_bits_for(bits, tag_bits))
    }

    /// The frozen set of `values` (ascending, no repeats, below 2^VALUE_BITS; `len` of them).
    #[cfg(test)]
    fn new(values: impl Iterator<Item = u128>, len: usize) -> Result<FrozenKeys, NotMade> {
        Self::new_tagged(values, len, 0)
    }

    /// The frozen set of `items` (values with tags of `tag_bits` bits, `value << tag_bits |
    /// tag`: ascending, no value twice, below 2^(VALUE_BITS + tag_bits); `len` of them), or
    /// why none was made.
    pub(crate) fn new_tagged(
        items: impl Iterator<Item = u128>,
        len: usize,
        tag_bits: u32,
    ) -> Result<FrozenKeys, NotMade> {
        u32::try_from(len).map_err(|_| NotMade::TooMany)?;
        let bucket_bits = Self::bucket_bits_for(len);
        let record_bits = Self::record_bits_for(bucket_bits, tag_bits);
        let record_mask = u128::MAX >> (128 - record_bits);
        // Each bucket's count first, in whole words (a freeze's passing need: some 4 bytes a
        // bucket, half a byte a key, against the sixteen of its sorted keys).
        let mut counts = Vec::new();
        counts
            .try_reserve_exact(1 << bucket_bits)
            .map_err(|_| NotMade::NoMemory)?;
        counts.resize(1 << bucket_bits, 0u32);
        let mut records_table =
            ZeroedTable::<u8>::new_populated(Self::records_bytes(len, record_bits))
                .ok_or(NotMade::NoMemory)?;
        let records = records_table.as_mut_slice();
        let shift = VALUE_BITS + tag_bits - bucket_bits;
        let mut written = 0;
        for value in items {
            // More values than `len` is a caller's mistake, not a stopped freeze (in release
            // builds it makes no set).
            debug_assert!(written < len, "more values than {len}");
            debug_assert!(value >> (VALUE_BITS + tag_bits) == 0, "an item too wide");
            counts[(value >> shift) as usize] += 1;
            // Or'ed into the 16 bytes from the record's first byte: the bits before it are the
            // previous record's, those after it still zeros (at most 79 + 7 bits are touched).
            let bit = written * record_bits;
            let bytes = records
                .get_mut(bit / 8..bit / 8 + 16)
                .ok_or(NotMade::Miscounted)?;
            let old = u128::from_le_bytes(bytes.try_into().expect("16 bytes"));
            let new = old | (value & record_mask) << (bit % 8);
            bytes.copy_from_slice(&new.to_le_bytes());
            written += 1;
        }
        if written != len {
            return Err(NotMade::Miscounted);
        }
        let block_bits = Self::block_bits_for(&counts, bucket_bits);
        let mut offsets_table =
            ZeroedTable::<u16>::new_populated(counts.len() + 1).ok_or(NotMade::NoMemory)?;
        let offsets = offsets_table.as_mut_slice();
        let mut block_starts = Vec::with_capacity((counts.len() >> block_bits) + 1);
        let mut start = 0u32;
        for (bucket, &count) in counts.iter().enumerate() {
            if bucket.trailing_zeros() >= block_bits {
                block_starts.push(start);
            }
            let block_start = block_starts.last().copied().unwrap_or(0);
            offsets[bucket] = (start - block_start) as u16;
            start += count;
        }
        block_starts.push(start);
        Ok(FrozenKeys {
            bucket_bits,
            tag_bits,
            record_bits,
            record_mask,
            block_bits,
            block_starts,
            offsets: offsets_table,
            records: records_table,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.block_starts.last().map_or(0, |&n| n as usize)
    }

    pub(crate) fn bytes(&self) -> usize {
        self.offsets.len() * 2 + self.block_starts.capacity() * 4 + self.records.len()
    }

    /// Where the records of `bucket` begin (`bucket` may be one past the last: the end).
    #[inline]
    fn start(&self, bucket: usize) -> usize {
        self.block_starts[bucket >> self.block_bits] as usize
            + self.offsets.as_slice()[bucket] as usize
    }

    #[inline]
    fn record(&self, i: usize) -> u128 {
        // The padding covers the last record's 16-byte read; a record and the bits before it in
        // its first byte are at most 86 bits.
        let bit = i * self.record_bits;
        let at = bit / 8;
        if self.record_bits <= 57 {
            // (Large sets, the ones looked up most: 8 bytes hold the record.)
            let bytes: [u8; 8] = self.records.as_slice()[at..at + 8]
                .try_into()
                .expect("8 bytes");
            return u128::from((u64::from_le_bytes(bytes) >> (bit % 8)) & self.record_mask as u64);
        }
        let bytes: [u8; 16] = self.records.as_slice()[at..at + 16]
            .try_into()
            .expect("16 bytes");
        (u128::from_le_bytes(bytes) >> (bit % 8)) & self.record_mask
    }

    #[inline]
    fn bucket(&self, value: u128) -> usize {
        (value >> (VALUE_BITS - self.bucket_bits)) as usize
    }

    /// Whether the set holds `value` (whatever its tag).
    #[inline]
    pub(crate) fn contains(&self, value: u128) -> bool {
        let bucket = self.bucket(value);
        let rest = value & (self.record_mask >> self.tag_bits);
        for i in self.start(bucket)..self.start(bucket + 1) {
            let record = self.record(i) >> self.tag_bits;
            if record >= rest {
                return record == rest;
            }
        }
        false
    }

    /// Starts loading where `value`'s bucket begins (its offset: the block starts stay in the
    /// caches).
    #[inline]
    pub(crate) fn prefetch(&self, value: u128) {
        crate::search::machine::prefetch(&self.offsets.as_slice()[self.bucket(value)]);
    }

    /// Starts loading the records of `value`'s bucket: reads where the bucket begins and ends
    /// (loaded by `prefetch` a little before, if all went well), so that the look-up's second
    /// load is on its way too. Both ends: some eight records of 57-64 bits are 64 bytes or so,
    /// across two cache lines more often than not, and a look-up read with only the first line
    /// loaded still waited on the second (`record` 18% of the samples of 加藤徹 162a past its
    /// freezes, nearly all on its load).
    #[inline]
    pub(crate) fn prefetch_records(&self, value: u128) {
        let bucket = self.bucket(value);
        let records = self.records.as_slice();
        let first = self.start(bucket) * self.record_bits / 8;
        // (The last record's bytes, as `record` reads them; the padding keeps them inside.)
        let last = (self.start(bucket + 1) * self.record_bits / 8).max(first + 8);
        crate::search::machine::prefetch(&records[first]);
        crate::search::machine::prefetch(&records[last.min(records.len() - 1)]);
    }

    /// The values, ascending (with their tags, as `new_tagged` took them).
    pub(crate) fn values(&self) -> impl Iterator<Item = u128> + '_ {
        let shift = VALUE_BITS + self.tag_bits - self.bucket_bits;
        (0..1usize << self.bucket_bits).flat_map(move |b| {
            (self.start(b)..self.start(b + 1)).map(move |i| ((b as u128) << shift) | self.record(i))
        })
    }
}

/// The union of two ascending sequences without repeats, ascending.
pub(crate) fn merged<T: Ord + Copy>(
    a: impl Iterator<Item = T>,
    b: impl Iterator<Item = T>,
) -> impl Iterator<Item = T> {
    let mut a = a.peekable();
    let mut b = b.peekable();
    std::iter::from_fn(move || match (a.peek().copied(), b.peek().copied()) {
        (Some(x), Some(y)) if x < y => a.next(),
        (Some(x), Some(y)) if y < x => b.next(),
        (Some(_), Some(_)) => {
            b.next();
            a.next()
        }
        (Some(_), None) => a.next(),
        (None, _) => b.next(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn values(n: usize, seed: u64) -> BTreeSet<u128> {
        let mut x = seed;
        let mut next = move || {
            x = x
                .wrapping_mul(0x5851_f42d_4c95_7f2d)
                .wrapping_add(0x1405_7b7e_f767_814f);
            x ^ (x >> 29)
        };
        (0..n)
            .map(|_| ((next() as u128) << 64 | next() as u128) >> (128 - VALUE_BITS))
            .collect()
    }

    #[test]
    fn frozen_keys_hold_exactly_their_values() {
        for n in [0, 1, 7, 1000, 300_000] {
            let set = values(n, n as u64 + 1);
            let frozen = FrozenKeys::new(set.iter().copied(), set.len()).unwrap();
            assert_eq!(frozen.len(), set.len());
            assert!(set.iter().all(|&v| frozen.contains(v)));
            // Values next to present ones (same bucket, record one off; lowest and highest
            // bits) are absent.
            for &v in set.iter().take(2000) {
                for bit in [0, 1, 20, 47, 63, 64, VALUE_BITS - 1] {
                    let other = v ^ (1 << bit);
                    assert_eq!(frozen.contains(other), set.contains(&other), "{other:x}");
                }
            }
            assert!(frozen.values().eq(set.iter().copied()));
            assert!(frozen.bytes() <= FrozenKeys::bytes_for_tagged(n, 0) + 64);
            // Values that end early (a stopped freeze) make no set.
            if n > 0 {
                assert_eq!(
                    FrozenKeys::new(set.iter().copied().take(n - 1), n).err(),
                    Some(NotMade::Miscounted)
                );
            }
        }
        // The extremes of the value space.
        let top = (1u128 << VALUE_BITS) - 1;
        let mask = (1u128 << 48) - 1;
        let edge: BTreeSet<u128> = [0, 1, mask, mask + 1, top].into();
        let frozen = FrozenKeys::new(edge.iter().copied(), edge.len()).unwrap();
        assert!(edge.iter().all(|&v| frozen.contains(v)));
        assert!(!frozen.contains(2) && !frozen.contains(top - 1));
        assert!(frozen.values().eq(edge.iter().copied()));
    }

    #[test]
    fn a_large_set_takes_seven_bytes_a_key() {
        // 2^22 keys: 19 bucket bits, 55 bits a record, a quarter of a byte of bucket offset.
        assert_eq!(
            FrozenKeys::record_bits_for(FrozenKeys::bucket_bits_for(1 << 22), 0),
            55
        );
        let per_key = FrozenKeys::bytes_for_tagged(1 << 22, 0) as f64 / (1 << 22) as f64;
        assert!((7.1..7.15).contains(&per_key), "{per_key}");
        // 2^25 keys: 52 bits a record.
        let per_key = FrozenKeys::bytes_for_tagged(1 << 25, 0) as f64 / (1 << 25) as f64;
        assert!((6.7..6.8).contains(&per_key), "{per_key}");
        // As made: a set's bytes are what the estimate says.
        let set = values(1 << 20, 3);
        let frozen = FrozenKeys::new(set.iter().copied(), set.len()).unwrap();
        assert_eq!(frozen.block_bits, BLOCK_BITS);
        let estimate = FrozenKeys::bytes_for_tagged(1 << 20, 0);
        assert!(
            frozen.bytes() <= estimate + 64,
            "{} {estimate}",
            frozen.bytes()
        );
    }

    /// Values crowded into a few buckets (more than a 16-bit offset counts in one block) make
    /// a set of smaller blocks, down to a block a bucket, that holds exactly them.
    #[test]
    fn crowded_buckets_take_smaller_blocks() {
        // 200,000 values in the first 256 of the set's 16,384 buckets (the top 6 bits zero):
        // some 780 a bucket, all in what would be one block.
        let crowded: BTreeSet<u128> = values(200_000, 9).iter().map(|v| v >> 6).collect();
        let frozen = FrozenKeys::new(crowded.iter().copied(), crowded.len()).unwrap();
        assert!(frozen.block_bits < BLOCK_BITS, "{}", frozen.block_bits);
        assert!(crowded.iter().all(|&v| frozen.contains(v)));
        for &v in crowded.iter().take(5000) {
            assert_eq!(frozen.contains(v ^ 1), crowded.contains(&(v ^ 1)));
        }
        assert!(!frozen.contains(1 << (VALUE_BITS - 1)));
        assert!(frozen.values().eq(crowded.iter().copied()));
        // All in one bucket: blocks of one bucket, whole starts.
        let one: BTreeSet<u128> = values(70_000, 10).iter().map(|v| v >> 40).collect();
        let frozen = FrozenKeys::new(one.iter().copied(), one.len()).unwrap();
        assert_eq!(frozen.block_bits, 0);
        assert!(one.iter().step_by(500).all(|&v| frozen.contains(v)));
        assert!(!frozen.contains(1 << (VALUE_BITS - 1)));
        assert!(frozen.values().eq(one.iter().copied()));
        assert_eq!(frozen.len(), one.len());
    }

    /// Tagged, a set finds a value whatever its tag, and gives the tags back.
    #[test]
    fn tagged_keys_are_found_by_value_and_keep_their_tags() {
        for n in [0, 1, 1000, 200_000] {
            let set = values(n, n as u64 + 7);
            let tag = |v: u128| (v as u32 ^ (v >> 40) as u32) & 31;
            let items: Vec<u128> = set.iter().map(|&v| v << 5 | tag(v) as u128).collect();
            let frozen = FrozenKeys::new_tagged(items.iter().copied(), n, 5).unwrap();
            assert!(set.iter().all(|&v| frozen.contains(v)));
            for &v in set.iter().take(2000) {
                for bit in [0, 1, 30, 64, VALUE_BITS - 1] {
                    let other = v ^ (1 << bit);
                    assert_eq!(frozen.contains(other), set.contains(&other), "{other:x}");
                }
            }
            assert!(frozen.values().eq(items.iter().copied()));
            assert!(frozen.bytes() <= FrozenKeys::bytes_for_tagged(n, 5) + 64);
        }
        let top = (1u128 << VALUE_BITS) - 1;
        let frozen = FrozenKeys::new_tagged([0, top << 5 | 31].into_iter(), 2, 5).unwrap();
        assert!(frozen.contains(0) && frozen.contains(top) && !frozen.contains(1));
    }

    #[test]
    fn merging_keeps_order_and_drops_repeats() {
        let a = values(5000, 1);
        let b: BTreeSet<u128> = values(5000, 2)
            .into_iter()
            .chain(a.iter().copied().step_by(3))
            .collect();
        let union: Vec<u128> = a.union(&b).copied().collect();
        let got: Vec<u128> = merged(a.iter().copied(), b.iter().copied()).collect();
        assert_eq!(got, union);
    }
}
