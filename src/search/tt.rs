//! The transposition table: lower bounds "no helpmate shorter than `lb` plies" per position.
//!
//! Entries are 16 bytes (two `u64` words), four to a 64-byte cluster (one cache line). The low
//! half of the 128-bit Zobrist key selects the cluster; the high half is stored whole and
//! verifies the entry, so a false match needs a 64-bit collision inside one cluster.
//!
//! Two kinds of bound are kept:
//! * a **fact** holds for the position whatever the path to it; it stays valid forever;
//! * a **conditional** entry, written by deepening iteration `i`, holds two bounds: one usable
//!   inside iteration `i`, and a larger one that holds once iteration `i` has proved that the root
//!   has no helpmate within its limit (see `helpmate.rs` for why both are sound). Once `i` fails
//!   the larger one is a fact; if `i` is cut short or finds a mate, the entry is void.
//!
//! Iterations are numbered per *epoch* (8 bits) and within it (16 bits). An epoch is a run of
//! iterations that all failed except possibly the last, so one number per epoch — the last failed
//! iteration — tells which conditional entries became facts. When the epoch counter wraps, the
//! table is swept once: conditional entries are made facts or dropped, so numbers can be reused.

use super::memory::ZeroedTable;
use crate::shogi::Move;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use thiserror::Error;

/// Lower bound meaning "no helpmate at any length".
pub const NEVER: u32 = u32::MAX;
const NEVER_STORED: u16 = u16::MAX;
/// Largest finite lower bound kept; larger ones are stored as this (still a valid bound).
const MAX_FINITE: u32 = u16::MAX as u32 - 1;

const ENTRIES_PER_CLUSTER: usize = 4;
/// The region in use starts at 16,384 clusters (1 MB) and doubles from there.
const FIRST_ACTIVE_CLUSTERS: usize = 1 << 14;
/// New keys, as a fraction of the region's slots, after which it doubles: with the keys kept
/// from before, it is then about 5/8 full (measured on `kyozume bench`, its bushy set and the
/// bounded 受先 problems of performance.md: at 1/4, about half full, u54_2NP's table was twice
/// the size, 120 MB against 63, for 0.05% fewer nodes, and no problem was faster).
const GROW_AFTER: (usize, usize) = (5, 16);
const WORDS_PER_CLUSTER: usize = 2 * ENTRIES_PER_CLUSTER;
const CLUSTER_BYTES: usize = 8 * WORDS_PER_CLUSTER;

/// Flag: `mv` is the only child that is not dead (skip move generation).
const FLAG_SINGLE: u8 = 1;
/// Flag: the bound is conditional on iteration (`epoch`, `iteration`) failing.
const FLAG_CONDITIONAL: u8 = 2;
/// Index bits kept per entry for doublings of the region in use (in the flag byte's top six
/// bits, after a leading 1).
const PLACEMENT_BITS: u32 = 5;
const PLACEMENT_MASK: u64 = 0x3f;

/// What the table knows about a position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// No helpmate from this position is shorter than `lb` plies (`NEVER`: none at all).
    pub lb: u32,
    /// A bound that holds if the current iteration fails (equal to `lb` for facts).
    pub if_failed: u32,
    /// The only live move, if the position is known to have exactly one.
    pub single: Option<Move>,
    /// The bound holds only if the current iteration fails.
    pub conditional: bool,
}

/// The memory asked for (`USI_Hash`, `--hash`) is not there.
#[derive(Debug, Error)]
#[error("cannot allocate {mb} MB of hash{}", available_note(*.available))]
pub struct AllocError {
    pub mb: usize,
    /// What the system said it had available, if it said.
    pub available: Option<usize>,
}

impl AllocError {
    pub fn new(mb: usize) -> AllocError {
        AllocError {
            mb,
            available: available_mb(),
        }
    }
}

fn available_note(available: Option<usize>) -> String {
    available.map_or_else(String::new, |mb| {
        format!(" (the system has {mb} MB available)")
    })
}

/// The data word of an entry: lb (16) | move (16) | epoch (8) | flags (2) and placement (6) |
/// iteration (16).
/// A conditional entry keeps its if-failed bound where a fact keeps its move.
#[derive(Clone, Copy)]
struct Data(u64);

fn encode_bound(lb: u32) -> u16 {
    if lb == NEVER {
        NEVER_STORED
    } else {
        lb.min(MAX_FINITE) as u16
    }
}

fn decode_bound(v: u16) -> u32 {
    match v {
        NEVER_STORED => NEVER,
        v => v as u32,
    }
}

impl Data {
    fn new(lb: u32, mv: Move, epoch: u8, flags: u8, iteration: u16) -> Data {
        Data(
            encode_bound(lb) as u64
                | (mv.raw() as u64) << 16
                | (epoch as u64) << 32
                | (flags as u64) << 40
                | (iteration as u64) << 48,
        )
    }

    fn conditional(lb: u32, if_failed: u32, epoch: u8, iteration: u16) -> Data {
        let packed = Move::from_raw(encode_bound(if_failed));
        Data::new(lb, packed, epoch, FLAG_CONDITIONAL, iteration)
    }

    fn lb(self) -> u32 {
        decode_bound(self.0 as u16)
    }

    fn is_conditional(self) -> bool {
        self.flags() & FLAG_CONDITIONAL != 0
    }

    /// For a conditional entry: the bound that holds once its iteration has failed.
    fn if_failed(self) -> u32 {
        decode_bound((self.0 >> 16) as u16)
    }

    /// The bound to use given how far the entry is trusted.
    fn bound(self, trust: Trust) -> u32 {
        if trust == Trust::Fact && self.is_conditional() {
            self.if_failed().max(self.lb())
        } else {
            self.lb()
        }
    }

    fn mv(self) -> Move {
        Move::from_raw((self.0 >> 16) as u16)
    }

    fn epoch(self) -> u8 {
        (self.0 >> 32) as u8
    }

    fn flags(self) -> u8 {
        (self.0 >> 40) as u8
    }

    fn iteration(self) -> u16 {
        (self.0 >> 48) as u16
    }

    /// Sets the placement (a 1 followed by the known next index bits, in the flag byte's six
    /// free bits; 0 or 1: none known).
    fn with_placement(self, placement: u8) -> Data {
        Data(self.0 & !(PLACEMENT_MASK << 42) | (placement as u64 & PLACEMENT_MASK) << 42)
    }

    fn placement(self) -> u8 {
        ((self.0 >> 42) & PLACEMENT_MASK) as u8
    }

    /// For a doubling of the region: the half the entry goes to (None: unknown, both), and the
    /// entry with that bit used up.
    fn moved_down(self) -> (Option<usize>, Data) {
        let p = self.placement();
        if p < 2 {
            return (None, self);
        }
        let known = p.ilog2(); // bits after the leading 1
        let half = (p >> (known - 1)) & 1;
        let rest = p & ((1 << (known - 1)) - 1) | 1 << (known - 1);
        (Some(half as usize), self.with_placement(rest))
    }
}

/// How far an entry can be trusted now.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trust {
    Fact,
    /// Conditional on the iteration in progress.
    Current,
    Void,
}

/// Shared by the search threads: probes and stores take `&self` and go through atomic words
/// (relaxed: plain moves on x86). An entry is two words written one after the other, so a
/// reader may see one thread's check word with another's data; the check word is therefore
/// stored XORed with the data, and such a torn pair fails verification like a foreign key.
/// Races can lose an entry or lower a bound back to an older true one, never attach a bound to
/// the wrong position. What changes between iterations (epochs, which iterations failed) takes
/// `&mut self`, so it never changes while threads search.
pub struct TranspositionTable {
    /// `WORDS_PER_CLUSTER` words per cluster, clusters aligned to cache lines.
    words: ZeroedTable<u64>,
    clusters: usize,
    /// Clusters in use: keys map onto the first `active` clusters only, and the region doubles
    /// as entries come in, so that a small search touches (and faults in, and misses the TLB
    /// on) a small part of a big table. See [`TranspositionTable::grow`].
    active: AtomicUsize,
    /// Where `active` starts (and returns to on `clear`).
    first_active: usize,
    /// New keys written since the region last grew (counted without atomic read-modify-write:
    /// threads may lose a few counts, which only delays growing a little).
    inserts: AtomicUsize,
    /// A thread is doubling the region.
    growing: AtomicBool,
    epoch: u8,
    iteration: u16,
    /// Per epoch: the last iteration known to have failed (0: none).
    failed_through: [u16; 256],
}

impl TranspositionTable {
    /// A table of about `mb` megabytes (at least one cluster), zeroed now: the page faults are
    /// taken at allocation (engine start, `isready`) instead of during the first search, where
    /// they would slow it several times over. Fails, rather than letting the system kill the
    /// process later, when the memory is not there.
    pub fn new(mb: usize) -> Result<TranspositionTable, AllocError> {
        let mut table = Self::new_lazy(mb)?;
        table.words.prefault();
        Ok(table)
    }

    /// A table whose pages are zeroed by the system as they are first used: for one-shot
    /// searches (the command line), where most of a big table may never be touched.
    pub fn new_lazy(mb: usize) -> Result<TranspositionTable, AllocError> {
        if available_mb().is_some_and(|avail| mb > avail) {
            return Err(AllocError::new(mb));
        }
        let n = (mb.saturating_mul(1024 * 1024) / CLUSTER_BYTES).max(1);
        // The region doubles from `first_active` to exactly `n` clusters: `n` is rounded down to
        // a multiple of that power of two (losing less than 1/FIRST_ACTIVE_CLUSTERS of it).
        let doublings = (n / FIRST_ACTIVE_CLUSTERS).max(1).ilog2();
        let first_active = n >> doublings;
        let n = first_active << doublings;
        let words = ZeroedTable::new(n * WORDS_PER_CLUSTER).ok_or_else(|| AllocError::new(mb))?;
        Ok(TranspositionTable {
            words,
            clusters: n,
            active: AtomicUsize::new(first_active),
            first_active,
            inserts: AtomicUsize::new(0),
            growing: AtomicBool::new(false),
            epoch: 1,
            iteration: 0,
            failed_through: [0; 256],
        })
    }

    pub fn size_mb(&self) -> usize {
        self.clusters * CLUSTER_BYTES / (1024 * 1024)
    }

    /// The words of cluster `index`.
    #[inline]
    fn cluster(&self, index: usize) -> &[AtomicU64] {
        &self.words.as_atomic()[index * WORDS_PER_CLUSTER..(index + 1) * WORDS_PER_CLUSTER]
    }

    /// Entry `i` of a cluster as (check word, data), the check word already un-XORed.
    #[inline]
    fn entry(cluster: &[AtomicU64], i: usize) -> (u64, Data) {
        let data = cluster[2 * i + 1].load(Relaxed);
        (cluster[2 * i].load(Relaxed) ^ data, Data(data))
    }

    #[inline]
    fn put(cluster: &[AtomicU64], i: usize, check: u64, data: Data) {
        cluster[2 * i].store(check ^ data.0, Relaxed);
        cluster[2 * i + 1].store(data.0, Relaxed);
    }

    /// Forgets everything. Only the region in use was ever written, so only it is zeroed.
    pub fn clear(&mut self) {
        let active = *self.active.get_mut();
        self.words.as_mut_slice()[..active * WORDS_PER_CLUSTER].fill(0);
        *self.active.get_mut() = self.first_active;
        *self.inserts.get_mut() = 0;
        self.epoch = 1;
        self.iteration = 0;
        self.failed_through = [0; 256];
    }

    /// Starts a new epoch (a new search, or after an iteration that did not fail). Conditional
    /// entries of the current iteration that did not fail become void.
    pub fn new_epoch(&mut self) {
        if self.epoch == u8::MAX {
            self.sweep();
            self.epoch = 1;
        } else {
            self.epoch += 1;
        }
        self.iteration = 0;
        self.failed_through[self.epoch as usize] = 0;
    }

    /// Starts the next deepening iteration; its conditional entries are usable until it ends.
    pub fn begin_iteration(&mut self) {
        if self.iteration == u16::MAX {
            self.new_epoch();
        }
        self.iteration += 1;
    }

    /// The current iteration proved that the root has no helpmate within its limit: its
    /// conditional entries are facts from now on.
    pub fn iteration_failed(&mut self) {
        self.failed_through[self.epoch as usize] = self.iteration;
    }

    /// Doubles the region in use. With multiply-shift indexing a key of cluster `i` belongs to
    /// cluster `2i` or `2i + 1` of the doubled region, as the next bit of the product below the
    /// index says. Each entry keeps the next few of those bits (its *placement*, written with
    /// it), so it moves to the right half; one whose bits have run out (not written again over
    /// several doublings) is copied to both. A copy in the wrong cluster is never found (lookups
    /// of its key go to the other one, and the 64-bit check word tells keys apart) and is
    /// replaced like any entry. Going from the top down, each cluster is read before its slots
    /// are written.
    ///
    /// Other threads go on probing and storing meanwhile, with the old size: they may miss an
    /// entry on the move or store one that is lost, nothing worse (every entry found is
    /// verified by its key).
    fn grow(&self) {
        let active = self.active.load(Relaxed);
        if active * 2 > self.clusters || self.growing.swap(true, Relaxed) {
            return;
        }
        for i in (0..active).rev() {
            let source = self.cluster(i);
            let mut halves = [[(0u64, Data(0)); ENTRIES_PER_CLUSTER]; 2];
            let mut filled = [0usize; 2];
            for e in 0..ENTRIES_PER_CLUSTER {
                let (check, data) = Self::entry(source, e);
                if data.0 == 0 {
                    continue;
                }
                let (half, data) = data.moved_down();
                for h in 0..2 {
                    if half.is_none_or(|half| half == h) {
                        halves[h][filled[h]] = (check, data);
                        filled[h] += 1;
                    }
                }
            }
            for (h, entries) in halves.iter().enumerate() {
                let target = self.cluster(2 * i + h);
                for (e, &(check, data)) in entries.iter().enumerate() {
                    Self::put(target, e, check, data);
                }
            }
        }
        self.active.store(active * 2, Relaxed);
        self.inserts.store(0, Relaxed);
        self.growing.store(false, Relaxed);
    }

    /// Makes every conditional entry a fact or removes it, so epoch numbers can be reused.
    fn sweep(&mut self) {
        for i in 0..*self.active.get_mut() {
            let cluster = self.cluster(i);
            for e in 0..ENTRIES_PER_CLUSTER {
                let (check, data) = Self::entry(cluster, e);
                if data.0 == 0 || !data.is_conditional() {
                    continue;
                }
                if self.trust(data) == Trust::Fact {
                    let lb = data.bound(Trust::Fact);
                    let fact = Data::new(lb, Move::NULL, 0, 0, 0).with_placement(data.placement());
                    Self::put(cluster, e, check, fact);
                } else {
                    Self::put(cluster, e, 0, Data(0));
                }
            }
        }
        self.failed_through = [0; 256];
    }

    #[inline]
    fn trust(&self, data: Data) -> Trust {
        if !data.is_conditional() || data.iteration() <= self.failed_through[data.epoch() as usize]
        {
            Trust::Fact
        } else if data.epoch() == self.epoch && data.iteration() == self.iteration {
            Trust::Current
        } else {
            Trust::Void
        }
    }

    #[inline]
    fn cluster_index(&self, key: u128) -> usize {
        // Multiply-shift maps the low 64 bits onto any region size without a modulo.
        ((key as u64 as u128 * self.active.load(Relaxed) as u128) >> 64) as usize
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
        super::machine::prefetch(
            &self.words.as_atomic()[self.cluster_index(key) * WORDS_PER_CLUSTER],
        );
    }

    #[inline]
    pub fn probe(&self, key: u128) -> Option<Probe> {
        let (_, data) = self.find(key)?;
        let trust = self.trust(data);
        match trust {
            Trust::Void => None,
            Trust::Fact => Some(Probe {
                lb: data.bound(trust),
                if_failed: data.bound(trust),
                single: (data.flags() & FLAG_SINGLE != 0).then(|| data.mv()),
                conditional: false,
            }),
            Trust::Current => Some(Probe {
                lb: data.lb(),
                if_failed: data.if_failed(),
                single: None,
                conditional: true,
            }),
        }
    }

    /// Like [`probe`](Self::probe), facts only: a conditional bound of the running iteration
    /// holds only for the search that wrote it (see `helpmate.rs`), so other threads ignore it.
    #[inline]
    pub fn probe_fact(&self, key: u128) -> Option<Probe> {
        self.probe(key).filter(|p| !p.conditional)
    }

    /// Records a fact: no helpmate from the position is shorter than `lb` plies, and `single`,
    /// if given, is its only live move. Known bounds are never lowered.
    pub fn store_fact(&self, key: u128, lb: u32, single: Option<Move>) {
        self.store_fact_counted(key, lb, single, true);
    }

    /// [`store_fact`](Self::store_fact) for a fact cheap to find again (a position a move or
    /// two from the end of the line): it may take a slot but never makes the region grow.
    /// Counted, the last ply's facts doubled the region of a bounded search for little: u54_2NP
    /// (受先ばか詰, none within 8) 63 MB against 20, +0.1% nodes, 0.49 s against 0.385 s.
    pub fn store_cheap_fact(&self, key: u128, lb: u32, single: Option<Move>) {
        self.store_fact_counted(key, lb, single, false);
    }

    fn store_fact_counted(&self, key: u128, lb: u32, single: Option<Move>, grows: bool) {
        let (mv, flags) = match single {
            Some(m) => (m, FLAG_SINGLE),
            None => (Move::NULL, 0),
        };
        if let Some((slot, old)) = self.find(key) {
            let trust = self.trust(old);
            let (lb, mv, flags) = match trust {
                Trust::Void => (lb, mv, flags),
                Trust::Fact => {
                    let keep_single = flags == 0 && old.flags() & FLAG_SINGLE != 0;
                    let (mv, flags) = if keep_single {
                        (old.mv(), FLAG_SINGLE)
                    } else {
                        (mv, flags)
                    };
                    (max_bound(lb, old.bound(trust)), mv, flags)
                }
                // A stronger bound of the running iteration is worth more than a weaker fact.
                Trust::Current if old.lb() != NEVER && (lb == NEVER || lb >= old.lb()) => {
                    (lb, mv, flags)
                }
                Trust::Current => return,
            };
            self.write(key, slot, Data::new(lb, mv, self.epoch, flags, 0));
        } else {
            let slot = self.victim(key);
            self.write(key, slot, Data::new(lb, mv, self.epoch, flags, 0));
            if grows {
                self.count_insert();
            }
        }
    }

    /// A new key was written: grow the region once it has taken `GROW_AFTER` of its slots' worth
    /// since it last grew.
    #[inline]
    fn count_insert(&self) {
        let inserts = self.inserts.load(Relaxed) + 1;
        self.inserts.store(inserts, Relaxed);
        if inserts * GROW_AFTER.1 >= self.active.load(Relaxed) * ENTRIES_PER_CLUSTER * GROW_AFTER.0
        {
            self.grow();
        }
    }

    /// Records bounds that depend on the current iteration: `lb` for use inside it, and
    /// `if_failed` (at least `lb`) that holds once it has failed. Known bounds are folded in.
    pub fn store_conditional(&self, key: u128, lb: u32, if_failed: u32) {
        let existing = self.find(key);
        let found = existing.is_some();
        let (slot, lb, if_failed) = match existing {
            Some((slot, old)) => {
                let trust = self.trust(old);
                match trust {
                    Trust::Void => (slot, lb, if_failed),
                    Trust::Fact => {
                        let fact = old.bound(trust);
                        if fact >= if_failed {
                            return; // the fact says as much already
                        }
                        (slot, lb.max(fact), if_failed)
                    }
                    Trust::Current => (slot, lb.max(old.lb()), if_failed.max(old.if_failed())),
                }
            }
            None => (self.victim(key), lb, if_failed),
        };
        let data = Data::conditional(lb, if_failed, self.epoch, self.iteration);
        self.write(key, slot, data);
        if !found {
            self.count_insert();
        }
    }

    /// Slot index (cluster * 4 + entry) and data of `key`'s entry, if present.
    #[inline]
    fn find(&self, key: u128) -> Option<(usize, Data)> {
        let index = self.cluster_index(key);
        let check = Self::check_word(key);
        let cluster = self.cluster(index);
        (0..ENTRIES_PER_CLUSTER).find_map(|i| {
            let (c, data) = Self::entry(cluster, i);
            (c == check).then_some((index * ENTRIES_PER_CLUSTER + i, data))
        })
    }

    /// The slot to overwrite for a new key: an empty or void one, else the least valuable —
    /// older epochs first, then the smallest bound (cheapest to find again).
    fn victim(&self, key: u128) -> usize {
        let index = self.cluster_index(key);
        let cluster = self.cluster(index);
        let mut best = 0;
        let mut best_value = u64::MAX;
        for i in 0..ENTRIES_PER_CLUSTER {
            let (_, data) = Self::entry(cluster, i);
            if data.0 == 0 || self.trust(data) == Trust::Void {
                best = i;
                break;
            }
            let current = (data.epoch() == self.epoch) as u64;
            let lb = match data.lb() {
                NEVER => MAX_FINITE + 1,
                v => v,
            } as u64;
            let value = current << 32 | lb;
            if value < best_value {
                best_value = value;
                best = i;
            }
        }
        index * ENTRIES_PER_CLUSTER + best
    }

    #[inline]
    fn write(&self, key: u128, slot: usize, data: Data) {
        // The product's bits just below the index: where the entry goes as the region doubles.
        let product = key as u64 as u128 * self.active.load(Relaxed) as u128;
        let next_bits = ((product >> (64 - PLACEMENT_BITS)) as u8) & ((1 << PLACEMENT_BITS) - 1);
        let data = data.with_placement(1 << PLACEMENT_BITS | next_bits);
        let cluster = self.cluster(slot / ENTRIES_PER_CLUSTER);
        Self::put(
            cluster,
            slot % ENTRIES_PER_CLUSTER,
            Self::check_word(key),
            data,
        );
    }

    /// Entries holding a bound of the running iteration (for tests of what threads publish).
    #[cfg(test)]
    pub(crate) fn current_conditional_entries(&self) -> usize {
        (0..self.active.load(Relaxed) * ENTRIES_PER_CLUSTER)
            .filter(|&slot| {
                let (_, data) = Self::entry(self.cluster(slot / ENTRIES_PER_CLUSTER), slot % 4);
                data.0 != 0 && self.trust(data) == Trust::Current
            })
            .count()
    }

    /// Per mille of the first 1000 entries written in the current epoch.
    pub fn hashfull(&self) -> u32 {
        let mut used = 0u32;
        let mut seen = 0u32;
        'outer: for index in 0..self.clusters {
            let cluster = self.cluster(index);
            for i in 0..ENTRIES_PER_CLUSTER {
                if seen == 1000 {
                    break 'outer;
                }
                seen += 1;
                let (_, data) = Self::entry(cluster, i);
                if data.0 != 0 && data.epoch() == self.epoch {
                    used += 1;
                }
            }
        }
        (used * 1000).checked_div(seen).unwrap_or(0)
    }
}

/// Memory the system can still give, in MB, where it says so (Linux). Systems that overcommit
/// would otherwise grant any size and kill the process once the table is used.
pub(crate) fn available_mb() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

#[inline]
fn max_bound(a: u32, b: u32) -> u32 {
    a.max(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shogi::Square;

    const KEY: u128 = 0x1234_5678_9abc_def0_0fed_cba9_8765_4321u128;
    /// Differs from KEY in the verification half.
    const OTHER: u128 = KEY ^ (1u128 << 100);

    #[test]
    fn facts_are_never_lowered() {
        let tt = TranspositionTable::new(1).unwrap();
        assert_eq!(tt.probe(KEY), None);
        tt.store_fact(KEY, 7, None);
        assert_eq!(tt.probe(KEY).unwrap().lb, 7);
        tt.store_fact(KEY, 5, None);
        assert_eq!(tt.probe(KEY).unwrap().lb, 7);
        let m = Move::normal(Square::new(1, 1), Square::new(1, 2), false);
        tt.store_fact(KEY, 9, Some(m));
        let p = tt.probe(KEY).unwrap();
        assert_eq!((p.lb, p.single, p.conditional), (9, Some(m), false));
        tt.store_fact(KEY, NEVER, None);
        assert_eq!(tt.probe(KEY).unwrap().lb, NEVER);
        assert_eq!(tt.probe(KEY).unwrap().single, Some(m));
        tt.store_fact(KEY, 11, None);
        assert_eq!(tt.probe(KEY).unwrap().lb, NEVER);
        assert_eq!(tt.probe(KEY ^ (1u128 << 100)), None);
    }

    #[test]
    fn conditional_bounds_follow_their_iteration() {
        let mut tt = TranspositionTable::new(1).unwrap();
        tt.new_epoch();
        tt.begin_iteration();
        tt.store_conditional(KEY, 9, 15);
        let p = tt.probe(KEY).unwrap();
        assert_eq!((p.lb, p.if_failed, p.conditional), (9, 15, true));
        // Failed iteration: the if-failed bound becomes a fact.
        tt.iteration_failed();
        tt.begin_iteration();
        let p = tt.probe(KEY).unwrap();
        assert_eq!((p.lb, p.conditional), (15, false));
        // A fact that says as much already is kept.
        tt.store_conditional(KEY, 11, 13);
        assert!(!tt.probe(KEY).unwrap().conditional);
        // An iteration that does not fail voids its conditional bounds.
        tt.store_conditional(OTHER, 13, 13);
        assert!(tt.probe(OTHER).is_some());
        tt.new_epoch();
        tt.begin_iteration();
        assert_eq!(tt.probe(OTHER), None);
        assert_eq!(tt.probe(KEY).unwrap().lb, 15);
    }

    #[test]
    fn epoch_wrap_sweeps_conditional_entries() {
        let mut tt = TranspositionTable::new(1).unwrap();
        tt.new_epoch();
        tt.begin_iteration();
        tt.store_conditional(KEY, 21, 25);
        tt.iteration_failed();
        tt.begin_iteration();
        tt.store_conditional(OTHER, 23, 23);
        for _ in 0..600 {
            tt.new_epoch();
            tt.begin_iteration();
        }
        assert_eq!(tt.probe(KEY).unwrap().lb, 25);
        assert!(!tt.probe(KEY).unwrap().conditional);
        assert_eq!(tt.probe(OTHER), None);
    }

    #[test]
    fn the_region_in_use_grows_and_keeps_every_entry() {
        let mut tt = TranspositionTable::new_lazy(4).unwrap();
        assert_eq!(*tt.active.get_mut(), FIRST_ACTIVE_CLUSTERS);
        assert_eq!(tt.clusters, 4 * FIRST_ACTIVE_CLUSTERS);
        let key = |i: u128| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
        for i in 0..1000u128 {
            tt.store_fact(key(i), (i % 40) as u32 + 1, None);
        }
        tt.new_epoch();
        tt.begin_iteration();
        tt.store_conditional(key(5000), 9, 11);
        tt.grow();
        assert_eq!(*tt.active.get_mut(), 2 * FIRST_ACTIVE_CLUSTERS);
        for i in 0..1000u128 {
            assert_eq!(tt.probe(key(i)).unwrap().lb, (i % 40) as u32 + 1, "key {i}");
        }
        let p = tt.probe(key(5000)).unwrap();
        assert_eq!((p.lb, p.if_failed, p.conditional), (9, 11, true));
        // Filling it grows it to the whole table and no further; nearly everything is kept.
        for i in 0..100_000u128 {
            tt.store_fact(key(i), 3, None);
        }
        assert_eq!(*tt.active.get_mut(), tt.clusters);
        let kept = (0..100_000u128)
            .filter(|&i| tt.probe(key(i)).is_some())
            .count();
        assert!(kept > 95_000, "{kept}");
        // Clearing returns to the first region, and zeroes what was used.
        tt.clear();
        assert_eq!(*tt.active.get_mut(), FIRST_ACTIVE_CLUSTERS);
        assert!((0..1000u128).all(|i| tt.probe(key(i)).is_none()));
        assert!(tt.words.as_slice().iter().all(|&w| w == 0));
    }

    #[test]
    fn cheap_facts_never_make_the_region_grow() {
        let mut tt = TranspositionTable::new_lazy(4).unwrap();
        let key = |i: u128| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
        let slots = FIRST_ACTIVE_CLUSTERS * ENTRIES_PER_CLUSTER;
        for i in 0..slots as u128 {
            tt.store_cheap_fact(key(i), 3, None);
        }
        assert_eq!(*tt.active.get_mut(), FIRST_ACTIVE_CLUSTERS);
        // They take slots all the same: most of the last of them are there to be found.
        let found = (slots as u128 - 1000..slots as u128)
            .filter(|&i| tt.probe(key(i)).is_some_and(|p| p.lb == 3))
            .count();
        assert!(found > 500, "{found}");
        // As many other facts make it grow.
        for i in 0..slots as u128 {
            tt.store_fact(key(i + (1 << 40)), 5, None);
        }
        assert!(*tt.active.get_mut() > FIRST_ACTIVE_CLUSTERS);
    }

    /// Four threads store and probe overlapping keys while the region doubles under them:
    /// every bound found must be the one stored for that very key (a torn entry, one thread's
    /// check word with another's data, would attach another key's bound).
    #[test]
    fn threads_sharing_the_table_never_see_another_keys_bound() {
        // A wide key range makes the region double while the threads work; a narrow one keeps
        // them writing the same few slots, where tearing happens.
        for (mb, keys, rounds) in [(8, 200_000, 300_000), (0, 64, 3_000_000)] {
            hammer(mb, keys, rounds);
        }
    }

    fn hammer(mb: usize, keys: u64, rounds: usize) {
        let tt = TranspositionTable::new_lazy(mb).unwrap();
        let key = |i: u64| (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
        let bound = |i: u64| (i % 997) as u32 + 1;
        let found = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (tt, found) = (&tt, &found);
                s.spawn(move || {
                    let mut x = t + 1;
                    for _ in 0..rounds {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let i = x % keys;
                        if x >> 40 & 1 == 0 {
                            tt.store_fact(key(i), bound(i), None);
                        } else if let Some(p) = tt.probe(key(i)) {
                            assert_eq!(p.lb, bound(i), "key {i}");
                            found.fetch_add(1, Relaxed);
                        }
                    }
                });
            }
        });
        if mb > 0 {
            assert!(tt.active.load(Relaxed) > FIRST_ACTIVE_CLUSTERS);
        }
        assert!(found.load(Relaxed) > 10_000, "{}", found.load(Relaxed));
    }

    #[test]
    fn replacement_keeps_cluster_full_and_hashfull_counts() {
        let mut tt = TranspositionTable::new(1).unwrap();
        for i in 0..100_000u128 {
            let key = i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
            tt.store_fact(key, (i % 50) as u32 + 1, None);
        }
        assert!(tt.hashfull() > 900);
        tt.new_epoch();
        assert_eq!(tt.hashfull(), 0);
        tt.clear();
        assert_eq!(tt.hashfull(), 0);
    }
}
