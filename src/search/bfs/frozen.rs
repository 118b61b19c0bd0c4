//! Keys frozen out of a key-set shard's table when memory runs short: sorted and packed, in
//! about 6.5 bytes a key where the table takes 11-14.
//!
//! A word (the 64 bits a shard keeps of a key) is split into its top `bucket_bits` bits, which
//! choose a bucket, and the rest, kept in a record of 6 bytes (from 16 bucket bits, some 500,000
//! keys a shard), 7 or 8. The records are
//! sorted, so a bucket's records follow one another and a look-up reads the bucket's start and
//! a few records (about eight to a bucket): one or two cache lines. Nothing of the word is lost,
//! so frozen keys can be merged with newer ones into a new frozen set.

/// Records a bucket holds on average (fewer buckets: less memory for their starts, longer
/// scans).
const KEYS_PER_BUCKET: usize = 8;
const MIN_BUCKET_BITS: u32 = 1;
/// Bytes after the last record, so that every record can be read as 8 bytes.
const PADDING: usize = 2;

pub(super) struct FrozenKeys {
    bucket_bits: u32,
    /// Bytes a record: the rest of a word, `64 - bucket_bits` bits, rounded up, at least 6.
    record_bytes: usize,
    record_mask: u64,
    /// Where each bucket's records begin; one more than there are buckets.
    starts: Vec<u32>,
    records: Vec<u8>,
}

impl FrozenKeys {
    fn bucket_bits_for(keys: usize) -> u32 {
        let buckets = (keys / KEYS_PER_BUCKET).max(1);
        (usize::BITS - 1 - buckets.leading_zeros()).max(MIN_BUCKET_BITS)
    }

    fn record_bytes_for(bucket_bits: u32) -> usize {
        (64 - bucket_bits as usize).div_ceil(8).max(6)
    }

    /// What a frozen set of `keys` keys takes.
    pub(super) fn bytes_for(keys: usize) -> usize {
        let bits = Self::bucket_bits_for(keys);
        ((1usize << bits) + 1) * 4 + keys * Self::record_bytes_for(bits) + PADDING
    }

    /// The frozen set of `words` (ascending, no repeats; `len` of them). None when there are
    /// too many for one set (2^32), or when `words` ends before `len` (a freeze stopped).
    pub(super) fn new(words: impl Iterator<Item = u64>, len: usize) -> Option<FrozenKeys> {
        let _ = u32::try_from(len).ok()?;
        let bucket_bits = Self::bucket_bits_for(len);
        let record_bytes = Self::record_bytes_for(bucket_bits);
        let record_mask = u64::MAX >> bucket_bits;
        let mut starts = vec![0u32; (1 << bucket_bits) + 1];
        let mut records = vec![0u8; len * record_bytes + PADDING];
        let shift = 64 - bucket_bits;
        let mut at = 0;
        for word in words {
            // More words than `len` is a caller's mistake, not a stopped freeze (in release
            // builds it makes no set, as a stopped freeze does).
            debug_assert!(at < len * record_bytes, "more words than {len}");
            starts[(word >> shift) as usize + 1] += 1;
            // All 8 bytes, a fixed-size copy: those past the record are zeros, overwritten by
            // the next record or left in the padding.
            records
                .get_mut(at..at + 8)?
                .copy_from_slice(&(word & record_mask).to_le_bytes());
            at += record_bytes;
        }
        if at != len * record_bytes {
            return None;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        Some(FrozenKeys {
            bucket_bits,
            record_bytes,
            record_mask,
            starts,
            records,
        })
    }

    pub(super) fn len(&self) -> usize {
        (self.records.len() - PADDING) / self.record_bytes
    }

    pub(super) fn bytes(&self) -> usize {
        self.starts.capacity() * 4 + self.records.capacity()
    }

    #[inline]
    fn record(&self, i: usize) -> u64 {
        // Records are at least 6 bytes, so the padding covers the last one's 8-byte read.
        let at = i * self.record_bytes;
        let bytes: [u8; 8] = self.records[at..at + 8].try_into().expect("8 bytes");
        u64::from_le_bytes(bytes) & self.record_mask
    }

    #[inline]
    fn bucket(&self, word: u64) -> usize {
        (word >> (64 - self.bucket_bits)) as usize
    }

    #[inline]
    pub(super) fn contains(&self, word: u64) -> bool {
        let bucket = self.bucket(word);
        let rest = word & self.record_mask;
        let (start, end) = (self.starts[bucket], self.starts[bucket + 1]);
        for i in start as usize..end as usize {
            let record = self.record(i);
            if record >= rest {
                return record == rest;
            }
        }
        false
    }

    /// Starts loading where `word`'s bucket begins.
    #[inline]
    pub(super) fn prefetch(&self, word: u64) {
        crate::search::machine::prefetch(&self.starts[self.bucket(word)]);
    }

    /// The words, ascending.
    pub(super) fn words(&self) -> impl Iterator<Item = u64> + '_ {
        let shift = 64 - self.bucket_bits;
        self.starts.windows(2).enumerate().flat_map(move |(b, w)| {
            (w[0] as usize..w[1] as usize).map(move |i| ((b as u64) << shift) | self.record(i))
        })
    }
}

/// The union of two ascending sequences without repeats, ascending.
pub(super) fn merged(
    a: impl Iterator<Item = u64>,
    b: impl Iterator<Item = u64>,
) -> impl Iterator<Item = u64> {
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

    fn words(n: usize, seed: u64) -> BTreeSet<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(0x5851_f42d_4c95_7f2d)
                    .wrapping_add(0x1405_7b7e_f767_814f);
                x ^ (x >> 29)
            })
            .collect()
    }

    #[test]
    fn frozen_keys_hold_exactly_their_words() {
        for n in [0, 1, 7, 1000, 300_000] {
            let set = words(n, n as u64 + 1);
            let frozen = FrozenKeys::new(set.iter().copied(), set.len()).unwrap();
            assert_eq!(frozen.len(), set.len());
            assert!(set.iter().all(|&w| frozen.contains(w)));
            // Words next to present ones (same bucket, record one off) are absent.
            for &w in set.iter().take(2000) {
                for other in [w ^ 1, w.wrapping_add(1 << 20), w ^ (1 << 47), w ^ (1 << 63)] {
                    assert_eq!(frozen.contains(other), set.contains(&other), "{other:x}");
                }
            }
            assert!(frozen.words().eq(set.iter().copied()));
            assert!(frozen.bytes() <= FrozenKeys::bytes_for(n) + 64);
            // Words that end early (a stopped freeze) make no set.
            if n > 0 {
                assert!(FrozenKeys::new(set.iter().copied().take(n - 1), n).is_none());
            }
        }
        // The extremes of the word space.
        let mask = (1u64 << 48) - 1;
        let edge: BTreeSet<u64> = [0, 1, mask, mask + 1, u64::MAX].into();
        let frozen = FrozenKeys::new(edge.iter().copied(), edge.len()).unwrap();
        assert!(edge.iter().all(|&w| frozen.contains(w)));
        assert!(!frozen.contains(2) && !frozen.contains(u64::MAX - 1));
        assert!(frozen.words().eq(edge.iter().copied()));
    }

    #[test]
    fn merging_keeps_order_and_drops_repeats() {
        let a = words(5000, 1);
        let b: BTreeSet<u64> = words(5000, 2)
            .into_iter()
            .chain(a.iter().copied().step_by(3))
            .collect();
        let union: Vec<u64> = a.union(&b).copied().collect();
        let got: Vec<u64> = merged(a.iter().copied(), b.iter().copied()).collect();
        assert_eq!(got, union);
    }
}
