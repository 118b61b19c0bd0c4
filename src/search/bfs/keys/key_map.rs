//! A map keyed by position keys, hashed by their own bits.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by position keys. The keys are Zobrist sums, already uniform, so hashing them
/// again (the standard map's SipHash) is wasted work: their own bits serve.
pub(crate) type KeyMap<V> = HashMap<u128, V, BuildHasherDefault<KeyHasher>>;

/// The hasher of [`KeyMap`]: folds the key's two halves.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

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
