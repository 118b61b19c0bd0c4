//! The transposition table: facts "no helpmate shorter than `lb` plies" per position.
//!
//! Entries are 16 bytes (two `u64` words), four to a 64-byte cluster (one cache line). The low
//! half of the 128-bit Zobrist key selects the cluster; the high half is stored whole and
//! verifies the entry, so a false match needs a 64-bit collision inside one cluster.
//!
//! Everything stored is a fact about the position alone (never about the path that led to it),
//! so entries stay valid across searches and across `go` commands; the generation counter only
//! tells replacement which entries belong to older searches.

use crate::shogi::Move;
use thiserror::Error;

/// Lower bound meaning "no helpmate at any length".
pub const NEVER: u32 = u32::MAX;
const NEVER_STORED: u16 = u16::MAX;
/// Largest finite lower bound kept; larger ones are stored as this (still a valid bound).
const MAX_FINITE: u32 = u16::MAX as u32 - 1;

const ENTRIES_PER_CLUSTER: usize = 4;
const WORDS_PER_CLUSTER: usize = 2 * ENTRIES_PER_CLUSTER;
const CLUSTER_BYTES: usize = 8 * WORDS_PER_CLUSTER;

/// Flag: `mv` is the only child that is not dead (skip move generation).
const FLAG_SINGLE: u8 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// No helpmate from this position is shorter than `lb` plies (`NEVER`: none at all).
    pub lb: u32,
    /// The only live move, if the position has exactly one.
    pub single: Option<Move>,
}

#[derive(Debug, Error)]
#[error("cannot allocate a {mb} MB transposition table")]
pub struct AllocError {
    pub mb: usize,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Cluster([u64; WORDS_PER_CLUSTER]);

pub struct TranspositionTable {
    clusters: Vec<Cluster>,
    generation: u8,
}

#[inline]
fn pack(lb: u32, mv: Move, generation: u8, flags: u8) -> u64 {
    let lb = if lb == NEVER {
        NEVER_STORED
    } else {
        lb.min(MAX_FINITE) as u16
    };
    lb as u64 | (mv.raw() as u64) << 16 | (generation as u64) << 32 | (flags as u64) << 40
}

#[inline]
fn unpack_lb(data: u64) -> u32 {
    match data as u16 {
        NEVER_STORED => NEVER,
        v => v as u32,
    }
}

#[inline]
fn unpack_generation(data: u64) -> u8 {
    (data >> 32) as u8
}

impl TranspositionTable {
    /// A table of about `mb` megabytes (at least one cluster).
    pub fn new(mb: usize) -> Result<TranspositionTable, AllocError> {
        let n = (mb.saturating_mul(1024 * 1024) / CLUSTER_BYTES).max(1);
        let mut clusters = Vec::new();
        clusters
            .try_reserve_exact(n)
            .map_err(|_| AllocError { mb })?;
        clusters.resize(n, Cluster([0; WORDS_PER_CLUSTER]));
        Ok(TranspositionTable {
            clusters,
            generation: 1,
        })
    }

    pub fn size_mb(&self) -> usize {
        self.clusters.len() * CLUSTER_BYTES / (1024 * 1024)
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        for c in &mut self.clusters {
            *c = Cluster([0; WORDS_PER_CLUSTER]);
        }
        self.generation = 1;
    }

    /// Starts a new search: entries written from now on are preferred to older ones.
    pub fn new_generation(&mut self) {
        // Generation 0 marks empty entries, so skip it.
        self.generation = self.generation.wrapping_add(1).max(1);
    }

    #[inline]
    fn cluster_index(&self, key: u128) -> usize {
        // Multiply-shift maps the low 64 bits onto any table size without a modulo.
        ((key as u64 as u128 * self.clusters.len() as u128) >> 64) as usize
    }

    #[inline]
    fn check_word(key: u128) -> u64 {
        // Never zero, so that an empty slot (all zeros) never matches.
        ((key >> 64) as u64) | 1
    }

    /// Asks the CPU to start loading the cluster of `key`, so that the probes of all children of
    /// a node overlap their cache misses instead of paying for them one after another.
    #[inline]
    pub fn prefetch(&self, key: u128) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let ptr = self.clusters[self.cluster_index(key)].0.as_ptr() as *const i8;
            // SAFETY: prefetching is only a hint; it never faults and reads nothing the program
            // can observe. It is `unsafe` solely because it is a target-feature intrinsic (SSE,
            // always present on x86_64). Measured: the ofm-139 5-ply problem (many drops, one
            // probe per child) ran 2x faster with prefetching.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(ptr) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    #[inline]
    pub fn probe(&self, key: u128) -> Option<Probe> {
        let cluster = &self.clusters[self.cluster_index(key)].0;
        let check = Self::check_word(key);
        for i in 0..ENTRIES_PER_CLUSTER {
            if cluster[2 * i] == check {
                let data = cluster[2 * i + 1];
                let flags = (data >> 40) as u8;
                let mv = Move::from_raw((data >> 16) as u16);
                return Some(Probe {
                    lb: unpack_lb(data),
                    single: (flags & FLAG_SINGLE != 0).then_some(mv),
                });
            }
        }
        None
    }

    /// Lower bound stored for `key`, 0 when unknown.
    #[inline]
    pub fn lower_bound(&self, key: u128) -> u32 {
        self.probe(key).map_or(0, |p| p.lb)
    }

    /// Records that no helpmate from the position is shorter than `lb` plies, and optionally
    /// that `single` is its only live move. A stored bound is never lowered.
    pub fn store(&mut self, key: u128, lb: u32, single: Option<Move>) {
        let generation = self.generation;
        let index = self.cluster_index(key);
        let check = Self::check_word(key);
        let cluster = &mut self.clusters[index].0;
        let (mv, flags) = match single {
            Some(m) => (m, FLAG_SINGLE),
            None => (Move::NULL, 0),
        };
        // Same position: keep the larger bound and any single-move knowledge.
        for i in 0..ENTRIES_PER_CLUSTER {
            if cluster[2 * i] == check {
                let old = cluster[2 * i + 1];
                let old_lb = unpack_lb(old);
                let (mv, flags) = if flags == 0 && (old >> 40) as u8 & FLAG_SINGLE != 0 {
                    (Move::from_raw((old >> 16) as u16), FLAG_SINGLE)
                } else {
                    (mv, flags)
                };
                let lb = if old_lb == NEVER || (lb != NEVER && old_lb > lb) {
                    old_lb
                } else {
                    lb
                };
                cluster[2 * i + 1] = pack(lb, mv, generation, flags);
                return;
            }
        }
        // Otherwise replace an empty slot, else the least valuable: older generations first,
        // then the smallest bound (cheapest to find again). Dead positions are worth keeping.
        let value = |data: u64| -> u64 {
            let current = (unpack_generation(data) == generation) as u64;
            let lb = match unpack_lb(data) {
                NEVER => MAX_FINITE + 1,
                v => v,
            } as u64;
            current << 32 | lb
        };
        let mut victim = 0;
        let mut victim_value = u64::MAX;
        for i in 0..ENTRIES_PER_CLUSTER {
            if cluster[2 * i] == 0 {
                victim = i;
                break;
            }
            let v = value(cluster[2 * i + 1]);
            if v < victim_value {
                victim_value = v;
                victim = i;
            }
        }
        cluster[2 * victim] = check;
        cluster[2 * victim + 1] = pack(lb, mv, generation, flags);
    }

    /// Per mille of the first 1000 entries written by the current search.
    pub fn hashfull(&self) -> u32 {
        let mut used = 0u32;
        let mut seen = 0;
        'outer: for cluster in &self.clusters {
            for i in 0..ENTRIES_PER_CLUSTER {
                if seen == 1000 {
                    break 'outer;
                }
                seen += 1;
                let c = &cluster.0;
                if c[2 * i] != 0 && unpack_generation(c[2 * i + 1]) == self.generation {
                    used += 1;
                }
            }
        }
        (used * 1000).checked_div(seen).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shogi::Square;

    #[test]
    fn store_and_probe() {
        let mut tt = TranspositionTable::new(1).unwrap();
        let key = 0x1234_5678_9abc_def0_0fed_cba9_8765_4321u128;
        assert_eq!(tt.probe(key), None);
        tt.store(key, 7, None);
        assert_eq!(tt.probe(key).unwrap().lb, 7);
        // Never lowered.
        tt.store(key, 5, None);
        assert_eq!(tt.probe(key).unwrap().lb, 7);
        let m = Move::normal(Square::new(1, 1), Square::new(1, 2), false);
        tt.store(key, 9, Some(m));
        assert_eq!(
            tt.probe(key).unwrap(),
            Probe {
                lb: 9,
                single: Some(m)
            }
        );
        tt.store(key, NEVER, None);
        assert_eq!(
            tt.probe(key).unwrap(),
            Probe {
                lb: NEVER,
                single: Some(m)
            }
        );
        tt.store(key, 11, None);
        assert_eq!(tt.probe(key).unwrap().lb, NEVER);
        // A different key in the same cluster does not match.
        assert_eq!(tt.probe(key ^ (1u128 << 100)), None);
    }

    #[test]
    fn replacement_keeps_cluster_full_and_hashfull_counts() {
        let mut tt = TranspositionTable::new(1).unwrap();
        for i in 0..100_000u128 {
            let key = i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
            tt.store(key, (i % 50) as u32 + 1, None);
        }
        assert!(tt.hashfull() > 900);
        tt.new_generation();
        assert_eq!(tt.hashfull(), 0);
        tt.clear();
        assert_eq!(tt.hashfull(), 0);
    }
}
