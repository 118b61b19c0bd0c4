//! The breadth-first search's set of positions seen: keys only, 80 bits of each, in about
//! 17 bytes a key, or about 7 once frozen (see `frozen.rs`) when memory runs short; then
//! keys of the levels not kept for good are let go of once old (see `KeySet::freeze`).

use super::census::Census;
use super::frozen::{merged, FrozenKeys, VALUE_BITS};
use crate::search::memory::ZeroedTable;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// An insert-only set of 128-bit keys: 64 open-addressing tables (linear probing) chosen by the
/// key's top 6 bits, each storing the key's low 64 bits in one word and 10 more bits beside it
/// (80 bits in all), and growing by half on its own when 70% full (by less near the budget,
/// see `FULL_PERCENT`), so memory stays near 10 / 0.58 bytes a key and growing never needs twice
/// the whole set. Keys equal in those 80 bits count as one: for the 1.45 * 10^9 keys of the
/// 6,935-ply problem the chance of any such pair is about 10^-6 (and a lost position could only
/// make the answer longer, never wrong as a line). An all-zero word is an empty slot, so a key
/// whose low 64 bits are zero is kept as a stand-in made of its high bits.
/// The shards are separate so that threads can each own some of them; 64 rather than thousands,
/// so that their bookkeeping stays in the L1 cache (measured: 12555 went from 6.9 s to 6.4 s).
pub(super) struct KeySet {
    pub(super) shards: Vec<Shard>,
    /// Bytes of all shards' tables.
    bytes: usize,
    /// When positions were first kept and met again (the level log's figures).
    census: Option<Arc<Census>>,
    clock: Arc<Clock>,
    /// Whether any shard has frozen keys.
    any_frozen: bool,
}

/// The level the set's new keys belong to, shared by its shards, and which keys it lets go of
/// once memory is short.
struct Clock {
    level: AtomicU32,
    /// One level in this many has its keys kept for good (a power of two: see `Forgetting`).
    keep_every: AtomicU32,
    kept_for: u32,
}

impl Clock {
    fn new(forgetting: Forgetting) -> Clock {
        Clock {
            level: AtomicU32::new(0),
            // (At most `KEEP_EVERY_AT_MOST`: ghosts die out because every such level is kept.)
            keep_every: AtomicU32::new(
                forgetting
                    .keep_every
                    .next_power_of_two()
                    .clamp(2, KEEP_EVERY_AT_MOST),
            ),
            kept_for: forgetting.kept_for,
        }
    }

    /// Whether keys kept now are transient: frozen, they are let go of once old.
    #[inline]
    fn transient_now(&self) -> bool {
        let every = self.keep_every.load(Ordering::Relaxed);
        self.level.load(Ordering::Relaxed) & (every - 1) != 0
    }
}

/// Which keys a key set short of memory lets go of (see `KeySet::freeze`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forgetting {
    /// Levels (two plies each) a frozen transient key is kept after its newest level (sooner,
    /// down to 64, when memory is very short).
    pub kept_for: u32,
    /// Keys of one level in this many (rounded up to a power of two, 2 to 16) are kept for
    /// good, the others are transient; doubled, up to 16, as the keys kept for good fill the
    /// set.
    pub keep_every: u32,
}

impl Default for Forgetting {
    fn default() -> Forgetting {
        Forgetting {
            kept_for: TRANSIENT_KEPT_FOR,
            keep_every: 2,
        }
    }
}

/// Levels a frozen transient key is kept for (see `KeySet::freeze`): 512 plies. On 加藤徹 162a
/// 0.33% of the positions met again were first kept longer ago than this.
const TRANSIENT_KEPT_FOR: u32 = 256;
/// ...and at least this many when memory is short: on 162a, 37% of the positions met again
/// were first kept 33-64 levels before, 7.2% longer ago.
const TRANSIENT_KEPT_AT_LEAST: u32 = 64;
/// The widest spacing of the levels kept for good (see `KeySet::widen_spacing`).
const KEEP_EVERY_AT_MOST: u32 = 16;

/// One of the key set's tables, and the keys frozen out of it when memory ran short (see
/// `KeySet::freeze`). Its owner writes the count at every insertion while other threads read
/// the table's address for their look-ups: the two are kept on separate cache lines, and
/// shards owned by different threads never share one.
#[repr(align(128))]
pub(super) struct Shard {
    table: ZeroedTable<u64>,
    /// Beside each slot of `table`: the key's 10 further bits, and `TRANSIENT` when it was first
    /// kept on a level not kept for good.
    exts: ZeroedTable<u16>,
    /// Keys frozen for good: those of one level in `Clock::keep_every` (and, resumed, any
    /// kept then).
    frozen: Option<FrozenKeys>,
    /// Transient keys frozen, oldest first, each kept until `Clock::kept_for` levels
    /// after its newest.
    transient: Vec<TransientKeys>,
    /// The first level whose keys the table may hold (the last freeze's).
    since: u32,
    census: Option<Arc<Census>>,
    clock: Arc<Clock>,
    tally: Tally,
}

/// A freeze: the level being made, and how many levels after their newest it keeps the
/// frozen transient keys.
#[derive(Clone, Copy)]
struct FreezeAt {
    level: u32,
    kept_for: u32,
}

impl FreezeAt {
    /// Whether the freeze keeps `transient`. (Kept for at least 2 levels, so that the level being
    /// made and the one expanded are never let go of.)
    fn keeps(&self, transient: &TransientKeys) -> bool {
        transient.newest.saturating_add(self.kept_for.max(2)) >= self.level
    }
}

/// Transient keys frozen together, from the levels `oldest..=newest`.
struct TransientKeys {
    keys: FrozenKeys,
    oldest: u32,
    newest: u32,
}

/// Keys in a shard's table, on a line of its own (see `Shard`).
#[repr(align(128))]
struct Tally {
    len: usize,
    /// Of them, transient keys.
    transient: usize,
}

/// Bytes a slot takes: the word and its extension.
const SLOT_BYTES: usize = 10;
const SHARD_BITS: u32 = 6;
/// The bits kept beside the word (see `Shard::exts`).
const EXT_BITS: u32 = VALUE_BITS - 64;
const EXT_MASK: u16 = (1 << EXT_BITS) - 1;
/// Marks an extension whose key is transient (see `Clock::transient_now`).
const TRANSIENT: u16 = 1 << 15;
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

/// The further bits a shard keeps of `key` (those above the word, below the shard's).
#[inline]
fn ext_of(key: u128) -> u16 {
    (key >> 64) as u16 & EXT_MASK
}

/// A key as a frozen set keeps it: the word and its further bits.
#[inline]
fn value_of(word: u64, ext: u16) -> u128 {
    (word as u128) << EXT_BITS | (ext & EXT_MASK) as u128
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

/// Whether a shard's frozen keys (`frozen`, kept for good, and `transient`) hold `value`. (Free of
/// the shard, so that an insertion can ask while it holds the table.)
#[inline]
fn frozen_holds(frozen: &Option<FrozenKeys>, transient: &[TransientKeys], value: u128) -> bool {
    frozen.as_ref().is_some_and(|f| f.contains(value))
        || transient.iter().any(|set| set.keys.contains(value))
}

/// A table's keys in the order a freeze sorts them: the value shifted up by one, with the low
/// bit set for a transient key.
type Entry = u128;

fn is_transient(entry: &Entry) -> bool {
    entry & 1 == 1
}

fn value_in(entry: &Entry) -> u128 {
    entry >> 1
}

impl Shard {
    const FIRST_SLOTS: usize = 16;

    fn new(census: Option<Arc<Census>>, clock: Arc<Clock>) -> Shard {
        Shard {
            table: ZeroedTable::new(Self::FIRST_SLOTS).expect("a small key table"),
            exts: ZeroedTable::new(Self::FIRST_SLOTS).expect("a small key table"),
            frozen: None,
            transient: Vec::new(),
            since: 0,
            census,
            clock,
            tally: Tally {
                len: 0,
                transient: 0,
            },
        }
    }

    /// Tells the census (if any) that `key` was met again.
    #[inline]
    fn met_again(&self, key: u128) {
        if let Some(census) = &self.census {
            census.met_again(key);
        }
    }

    /// Bytes of the keys frozen for good.
    fn for_good_bytes(&self) -> usize {
        self.frozen.as_ref().map_or(0, FrozenKeys::bytes)
    }

    fn frozen_bytes(&self) -> usize {
        self.for_good_bytes()
            + self
                .transient
                .iter()
                .map(|set| set.keys.bytes())
                .sum::<usize>()
    }

    fn bytes(&self) -> usize {
        self.table.len() * SLOT_BYTES + self.frozen_bytes()
    }

    pub(super) fn len(&self) -> usize {
        self.tally.len + self.frozen_len()
    }

    fn frozen_len(&self) -> usize {
        self.frozen.as_ref().map_or(0, FrozenKeys::len)
            + self
                .transient
                .iter()
                .map(|set| set.keys.len())
                .sum::<usize>()
    }

    #[inline]
    fn is_frozen(&self, value: u128) -> bool {
        frozen_holds(&self.frozen, &self.transient, value)
    }

    /// The frozen transient keys a freeze `at` keeps.
    fn transient_kept(&self, at: FreezeAt) -> impl Iterator<Item = &TransientKeys> + '_ {
        self.transient.iter().filter(move |set| at.keeps(set))
    }

    /// Whether a freeze `at` adds the table's transient keys to the newest transient set
    /// rather than making a new one: while that set spans less than a quarter of the time kept.
    fn joins_newest_transient(&self, at: FreezeAt) -> bool {
        self.transient
            .last()
            .is_some_and(|set| at.keeps(set) && at.level - set.oldest < at.kept_for / 4)
    }

    /// Bytes a freeze `at` of this shard would free (0 if it would not).
    fn freeze_saving(&self, at: FreezeAt) -> usize {
        if u32::try_from(self.len()).is_err() {
            return 0;
        }
        let for_good = self.tally.len - self.tally.transient;
        let kept: Vec<&TransientKeys> = self.transient_kept(at).collect();
        let dropped = self.transient.len() - kept.len();
        if self.tally.len == 0 && dropped == 0 {
            return 0;
        }
        let mut transient_after: usize = kept.iter().map(|set| set.keys.bytes()).sum();
        if self.tally.transient > 0 {
            transient_after += match kept.last().filter(|_| self.joins_newest_transient(at)) {
                Some(newest) => {
                    FrozenKeys::bytes_for(newest.keys.len() + self.tally.transient)
                        - newest.keys.bytes()
                }
                None => FrozenKeys::bytes_for(self.tally.transient),
            };
        }
        let permanent = self.frozen.as_ref().map_or(0, FrozenKeys::len) + for_good;
        let after = transient_after
            + if permanent > 0 {
                FrozenKeys::bytes_for(permanent)
            } else {
                0
            }
            + Self::FIRST_SLOTS * SLOT_BYTES;
        self.bytes().saturating_sub(after)
    }

    /// Moves the table's keys into frozen sets and starts an empty table: keys kept for good
    /// join those frozen for good; transient keys make a new transient set (or join the
    /// newest), and transient sets `at` no longer keeps are let go of. Memory for the sorted
    /// keys and the new sets is taken on top of the old ones, one shard at a time. False, with
    /// the shard as it was, if `stop` said so first.
    fn freeze(&mut self, stop: &dyn Fn() -> bool, at: FreezeAt) -> bool {
        let Some(entries) = self.sorted_entries(stop) else {
            return false;
        };
        let mut polled = 0usize;
        let mut go_on = || {
            polled += 1;
            !polled.is_multiple_of(STOP_POLL) || !stop()
        };
        let for_good = self.tally.len - self.tally.transient;
        let permanent = self.frozen.as_ref().map_or(0, FrozenKeys::len) + for_good;
        let frozen = if for_good == 0 {
            None
        } else {
            let old = self.frozen.iter().flat_map(FrozenKeys::values);
            let new = entries.iter().filter(|e| !is_transient(e)).map(value_in);
            // (`freeze_saving` is 0, so no freeze, for a shard of more keys than a frozen
            // set holds: `None` here means the merge was stopped.)
            match FrozenKeys::new(merged(old, new).take_while(|_| go_on()), permanent) {
                Some(frozen) => Some(frozen),
                None => return false,
            }
        };
        // The transient keys: a new set, or the newest one and these together.
        let joins = self.joins_newest_transient(at) && self.tally.transient > 0;
        let transient = if self.tally.transient == 0 {
            None
        } else {
            let new = entries.iter().filter(|e| is_transient(e)).map(value_in);
            let newest = self.transient.last().filter(|_| joins);
            let (values, len, oldest): (Box<dyn Iterator<Item = u128>>, usize, u32) = match newest {
                Some(n) => (
                    Box::new(merged(n.keys.values(), new)),
                    n.keys.len() + self.tally.transient,
                    n.oldest,
                ),
                None => (Box::new(new), self.tally.transient, self.since),
            };
            match FrozenKeys::new(values.take_while(|_| go_on()), len) {
                Some(keys) => Some(TransientKeys {
                    keys,
                    oldest,
                    newest: at.level,
                }),
                None => return false,
            }
        };
        if joins {
            self.transient.pop();
        }
        self.transient.extend(transient);
        self.transient.retain(|set| at.keeps(set));
        if frozen.is_some() {
            self.frozen = frozen;
        }
        self.table = ZeroedTable::new(Self::FIRST_SLOTS).expect("a small key table");
        self.exts = ZeroedTable::new(Self::FIRST_SLOTS).expect("a small key table");
        self.tally = Tally {
            len: 0,
            transient: 0,
        };
        self.since = at.level;
        true
    }

    /// The table's keys as entries, ascending; `None` if `stop` said so first. No sort of the
    /// whole table is needed: a word's home slot grows with the word (`home`) and linear
    /// probing only moves it forward within its cluster (the slots between two empty ones), so
    /// each cluster's words are below the next cluster's, and sorting every cluster on its own
    /// sorts them all (a freeze of 1.2 G keys took some 20 s with one sort a shard). The one
    /// cluster that runs past the table's end into its first slots is taken together: the
    /// words it left there (homes above their slots) go last, with the words at the end.
    fn sorted_entries(&self, stop: &dyn Fn() -> bool) -> Option<Vec<Entry>> {
        if stop() {
            return None;
        }
        let table = self.table.as_slice();
        let exts = self.exts.as_slice();
        let entry = |slot: usize| -> Entry {
            value_of(table[slot], exts[slot]) << 1 | u128::from(exts[slot] & TRANSIENT != 0)
        };
        let len = table.len();
        let mut entries = Vec::with_capacity(self.tally.len);
        let mut wrapped = Vec::new();
        let mut slot = 0;
        while slot < len && table[slot] != 0 {
            if home(table[slot], len) > slot {
                wrapped.push(entry(slot));
            } else {
                entries.push(entry(slot));
            }
            slot += 1;
        }
        let mut cluster = 0;
        for (slot, &word) in table.iter().enumerate().skip(slot) {
            if slot % STOP_POLL == STOP_POLL - 1 && stop() {
                return None;
            }
            if word != 0 {
                entries.push(entry(slot));
                continue;
            }
            if entries.len() - cluster > 1 {
                entries[cluster..].sort_unstable();
            }
            cluster = entries.len();
        }
        entries.extend(wrapped);
        entries[cluster..].sort_unstable();
        Some(entries)
    }

    /// Writes the shard's keys (see `KeySet::write_values`): those kept for good, then those
    /// that are transient, each as a count and the values ascending, merged as they go out.
    fn write_values(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let entries = self.sorted_entries(&|| false).expect("not stopped");
        let write =
            |out: &mut dyn std::io::Write, len: usize, values: &mut dyn Iterator<Item = u128>| {
                out.write_all(&(len as u64).to_le_bytes())?;
                for value in values {
                    out.write_all(&value.to_le_bytes()[..VALUE_BYTES])?;
                }
                Ok(())
            };
        let for_good = entries.iter().filter(|e| !is_transient(e)).map(value_in);
        let frozen = self.frozen.iter().flat_map(FrozenKeys::values);
        let permanent =
            self.frozen.as_ref().map_or(0, FrozenKeys::len) + self.tally.len - self.tally.transient;
        write(out, permanent, &mut merged(frozen, for_good))?;
        let mut transient: Box<dyn Iterator<Item = u128>> =
            Box::new(entries.iter().filter(|e| is_transient(e)).map(value_in));
        for set in &self.transient {
            transient = Box::new(merged(transient, set.keys.values()));
        }
        let transient_len = self.tally.transient
            + self
                .transient
                .iter()
                .map(|set| set.keys.len())
                .sum::<usize>();
        write(out, transient_len, &mut transient)
    }

    /// Whether `key` is in this shard.
    #[inline]
    fn contains(&self, key: u128) -> bool {
        let word = stored(key);
        let ext = ext_of(key);
        let table = self.table.as_slice();
        let exts = self.exts.as_slice();
        let len = table.len();
        let mut i = home(word, len);
        let known = loop {
            match table[i] {
                w if w == word && exts[i] & EXT_MASK == ext => break true,
                0 => break self.is_frozen(value_of(word, ext)),
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
        let ext = ext_of(key);
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
        let transient = self.clock.transient_now();
        let table = self.table.as_mut_slice();
        let exts = self.exts.as_mut_slice();
        let len = table.len();
        let mut i = home(word, len);
        let new = loop {
            match table[i] {
                0 if frozen_holds(&self.frozen, &self.transient, value_of(word, ext)) => {
                    break false
                }
                0 => {
                    // The extension first: a look-up that sees the word sees it too.
                    exts[i] = ext | if transient { TRANSIENT } else { 0 };
                    table[i] = word;
                    self.tally.len += 1;
                    self.tally.transient += usize::from(transient);
                    break true;
                }
                w if w == word && exts[i] & EXT_MASK == ext => break false,
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
        let (table, exts) = self.rehashed(bigger)?;
        Some(Grown {
            table,
            exts,
            keys: self.tally.len,
            bytes: (bigger - size) * SLOT_BYTES,
        })
    }

    /// Puts in the table `grown_ahead` made, the shard having taken no key since.
    pub(super) fn put_grown(&mut self, grown: Grown) {
        assert_eq!(grown.keys, self.tally.len, "no key inserted since the copy");
        self.table = grown.table;
        self.exts = grown.exts;
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
        crate::search::machine::prefetch(&self.exts.as_slice()[i]);
        let value = value_of(stored(key), ext_of(key));
        if let Some(frozen) = &self.frozen {
            frozen.prefetch(value);
        }
        for transient in &self.transient {
            transient.keys.prefetch(value);
        }
    }

    /// See `KeySet::prefetch_frozen`.
    #[inline]
    fn prefetch_frozen(&self, key: u128) {
        let value = value_of(stored(key), ext_of(key));
        if let Some(frozen) = &self.frozen {
            frozen.prefetch_records(value);
        }
        for transient in &self.transient {
            transient.keys.prefetch_records(value);
        }
    }

    fn grow(&mut self, slots: usize) -> Result<(), ()> {
        let (table, exts) = self.rehashed(slots).ok_or(())?;
        self.table = table;
        self.exts = exts;
        Ok(())
    }

    /// The table's keys in tables of `slots` slots; `None` without the memory.
    fn rehashed(&self, slots: usize) -> Option<(ZeroedTable<u64>, ZeroedTable<u16>)> {
        let mut bigger = ZeroedTable::<u64>::new_populated(slots)?;
        let mut bigger_exts = ZeroedTable::<u16>::new_populated(slots)?;
        let table = bigger.as_mut_slice();
        let exts = bigger_exts.as_mut_slice();
        let old_exts = self.exts.as_slice();
        for (slot, &word) in self.table.as_slice().iter().enumerate() {
            if word == 0 {
                continue;
            }
            let mut i = home(word, slots);
            while table[i] != 0 {
                i = if i + 1 == slots { 0 } else { i + 1 };
            }
            table[i] = word;
            exts[i] = old_exts[slot];
        }
        Some((bigger, bigger_exts))
    }
}

/// Bytes a frozen value takes in a checkpoint's keys file.
const VALUE_BYTES: usize = (VALUE_BITS as usize).div_ceil(8);

/// A shard's table grown ahead of its insertions (see [`Shard::grown_ahead`]).
pub(super) struct Grown {
    table: ZeroedTable<u64>,
    exts: ZeroedTable<u16>,
    /// The keys the shard held when copied.
    keys: usize,
    /// What the shard grows by.
    pub(super) bytes: usize,
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
        Self::with_census(None, Forgetting::default())
    }

    /// A set that tells `census` of every key kept and met again, and lets keys go as
    /// `forgetting` says once memory is short.
    pub(super) fn with_census(census: Option<Arc<Census>>, forgetting: Forgetting) -> KeySet {
        let clock = Arc::new(Clock::new(forgetting));
        let shards: Vec<Shard> = (0..Self::SHARDS)
            .map(|_| Shard::new(census.clone(), clock.clone()))
            .collect();
        let bytes = shards.iter().map(Shard::bytes).sum();
        KeySet {
            shards,
            bytes,
            census,
            clock,
            any_frozen: false,
        }
    }

    /// Says that the keys inserted from now on are those of level `level` (and tells the
    /// census).
    pub(super) fn set_level(&self, level: u32) {
        self.clock.level.store(level, Ordering::Relaxed);
        if let Some(census) = &self.census {
            census.set_level(level);
        }
    }

    /// Writes every key as the shards keep it: for each shard, the keys kept for good, then
    /// the transient ones, each as a count (8 bytes) and the values ascending (10 bytes each),
    /// all little-endian. Returns the bytes written.
    pub(super) fn write_values(&self, out: &mut dyn std::io::Write) -> std::io::Result<u64> {
        let mut bytes = 0;
        for shard in &self.shards {
            shard.write_values(out)?;
            bytes += 16 + (VALUE_BYTES * shard.len()) as u64;
        }
        Ok(bytes)
    }

    /// The set [`Self::write_values`] wrote, every key frozen (the compact form), with the
    /// transient keys as if frozen at level `level`. An error if the values run short, are out
    /// of order or too wide.
    pub(super) fn read_values(
        input: &mut dyn std::io::Read,
        census: Option<Arc<Census>>,
        forgetting: Forgetting,
        level: u32,
    ) -> std::io::Result<KeySet> {
        let mut set = KeySet::with_census(census, forgetting);
        for shard in &mut set.shards {
            shard.frozen = read_frozen(input)?;
            if let Some(keys) = read_frozen(input)? {
                shard.transient.push(TransientKeys {
                    keys,
                    oldest: 0,
                    newest: level,
                });
            }
            shard.since = level;
        }
        set.set_level(level);
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
        self.any_frozen = self.shards.iter().any(|s| s.frozen_len() > 0);
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

    /// Starts loading the frozen records `key`'s look-up will read, once `prefetch` has
    /// brought in where their buckets begin: without it each frozen set's look-up waited for
    /// two loads in a row (龍の顎 12555 at `--hash 28`: `frozen_holds` 28% of the samples).
    #[inline]
    pub(super) fn prefetch_frozen(&self, key: u128) {
        if self.any_frozen {
            self.shards[shard_of(key)].prefetch_frozen(key);
        }
    }

    /// Freezes the keys of every shard where that saves memory (see `frozen.rs`): about 7
    /// bytes a key instead of the table's 14-17, looked up a little more slowly. Keys of one
    /// level in `Clock::keep_every` stay frozen for good; the other, transient, keys are let go
    /// of `Clock::kept_for` levels after they were frozen (sooner, down to
    /// `TRANSIENT_KEPT_AT_LEAST`, when that frees too little). A position whose key was let go
    /// of and is met again is kept again, deeper than it was first, and expanded again: a
    /// "ghost". That costs work but never changes an answer (docs/design.md, "Forgetting"):
    /// every child of a ghost was reached at least as early before, so a ghost never gives a
    /// genuinely new position a way in, nor a mate at the level where mates are first found;
    /// and since a position is kept at most once on a level kept for good, and every
    /// `KEEP_EVERY_AT_MOST`th level is one, ghosts die out.
    ///
    /// With `pool`, shards are frozen on its threads. Returns the bytes freed: 0 when that
    /// would be less than an eighth of the set (each freeze rebuilds every frozen key:
    /// freezing again and again for little would cost more than it gives). `None` when `stop`
    /// (polled every million keys or so) cut it short: every shard then holds its keys,
    /// frozen or not, and the caller should end the search (a freeze of a billion keys took
    /// seconds).
    pub(super) fn freeze(
        &mut self,
        pool: Option<&rayon::ThreadPool>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Option<usize> {
        let mut at = self.freeze_at();
        let room = self.bytes;
        // Short of what an eighth needs, transient keys are kept for less time, down to
        // `TRANSIENT_KEPT_AT_LEAST` (ghosts cost more the shorter it is).
        let least = TRANSIENT_KEPT_AT_LEAST.min(at.kept_for);
        let freed = loop {
            let saving: usize = self.shards.iter().map(|s| s.freeze_saving(at)).sum();
            if saving >= self.bytes / MIN_FREEZE_SAVING {
                break self.freeze_where(pool, stop, at, &|shard| shard.freeze_saving(at) > 0);
            }
            if at.kept_for <= least {
                break Some(0);
            }
            at.kept_for = (at.kept_for / 2).max(least);
        };
        self.widen_spacing(room);
        freed
    }

    /// Spaces the levels kept for good further apart once their keys take more than all but
    /// `1 / keep_every` of `room` (what the set took before a freeze: what memory allows it):
    /// every 4th level once they take half, every 8th at three quarters, every 16th at seven
    /// eighths. Keys kept for good stay so; the spacing applies to keys kept from now on. (At
    /// `USI_Hash 6600` 加藤徹 162a's keys of every other level alone took 5.4 GB.)
    fn widen_spacing(&self, room: usize) {
        let for_good: usize = self.shards.iter().map(Shard::for_good_bytes).sum();
        let mut every = self.clock.keep_every.load(Ordering::Relaxed);
        while every < KEEP_EVERY_AT_MOST && for_good > room - room / every as usize {
            every *= 2;
        }
        self.clock.keep_every.store(every, Ordering::Relaxed);
    }

    /// Freezes every shard that has keys in its table or transient keys to let go of, whether
    /// that saves memory or not (tests freeze after every level).
    pub(super) fn freeze_all(
        &mut self,
        pool: Option<&rayon::ThreadPool>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Option<usize> {
        let at = self.freeze_at();
        self.freeze_where(pool, stop, at, &|shard| {
            shard.tally.len > 0 || shard.transient_kept(at).count() < shard.transient.len()
        })
    }

    /// A freeze now, keeping transient keys for the set's time.
    fn freeze_at(&self) -> FreezeAt {
        FreezeAt {
            level: self.clock.level.load(Ordering::Relaxed),
            kept_for: self.clock.kept_for,
        }
    }

    /// Freezes the shards `worth` picks (see `freeze`).
    fn freeze_where(
        &mut self,
        pool: Option<&rayon::ThreadPool>,
        stop: &(dyn Fn() -> bool + Sync),
        at: FreezeAt,
        worth: &(dyn Fn(&Shard) -> bool + Sync),
    ) -> Option<usize> {
        let before = self.bytes;
        let stopped = AtomicBool::new(false);
        let freeze = |shard: &mut Shard| {
            if stopped.load(Ordering::Relaxed) || !shard.freeze(stop, at) {
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
            None => self.shards.iter_mut().filter(|s| worth(s)).for_each(freeze),
        }
        self.recount();
        (!stopped.into_inner()).then(|| before.saturating_sub(self.bytes))
    }
}

/// One frozen set as `Shard::write_values` wrote it: a count, then the values ascending
/// (`None` for none).
fn read_frozen(input: &mut dyn std::io::Read) -> std::io::Result<Option<FrozenKeys>> {
    let mut count = [0u8; 8];
    input.read_exact(&mut count)?;
    let len = usize::try_from(u64::from_le_bytes(count))
        .map_err(|_| std::io::Error::other("a shard's count is too large"))?;
    if len == 0 {
        return Ok(None);
    }
    let mut failure = None;
    let mut last = None;
    let values = std::iter::from_fn(|| {
        if failure.is_some() {
            return None;
        }
        let mut bytes = [0u8; 16];
        if let Err(e) = input.read_exact(&mut bytes[..VALUE_BYTES]) {
            failure = Some(e);
            return None;
        }
        let value = u128::from_le_bytes(bytes);
        if value >> VALUE_BITS != 0 || last.is_some_and(|l| l >= value) {
            failure = Some(std::io::Error::other("the keys are out of order"));
            return None;
        }
        last = Some(value);
        Some(value)
    })
    .take(len);
    let frozen = FrozenKeys::new(values, len);
    if let Some(e) = failure {
        return Err(e);
    }
    frozen
        .map(Some)
        .ok_or_else(|| std::io::Error::other("a shard's keys are cut short"))
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
        let mut shard = Shard::new(None, Arc::new(Clock::new(Forgetting::default())));
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
        let mut shard = Shard::new(None, Arc::new(Clock::new(Forgetting::default())));
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
            let mut shard = Shard::new(None, Arc::new(Clock::new(Forgetting::default())));
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
            let sorted = shard.sorted_entries(&|| false).unwrap();
            let sorted = sorted.iter().map(|e| (value_in(e) >> EXT_BITS) as u64);
            assert!(
                sorted.eq(words.iter().copied()),
                "{slots} slots, {keys} keys"
            );
            assert_eq!(shard.sorted_entries(&|| true), None);
        }
    }

    /// Keys are told apart by 80 bits: the shard's 6, the word's 64 and 10 more.
    #[test]
    fn keys_differing_in_any_of_80_bits_stay_apart() {
        let a = 0x0123_4567_89ab_cdef_u128 | 5 << 90;
        for frozen in [false, true] {
            let mut set = KeySet::new();
            let kept = [0, 64, 70, 73, 122, 127].map(|bit| a ^ 1 << bit);
            for &key in &kept {
                assert_eq!(set.insert(key, usize::MAX, false), Ok(true), "{key:x}");
            }
            if frozen {
                assert!(set.freeze_all(None, &|| false).is_some());
            }
            for &key in &kept {
                assert!(set.contains(key), "{key:x}");
                // Bits 74 to 121 are not kept.
                assert_eq!(set.insert(key ^ 1 << 80, usize::MAX, false), Ok(false));
            }
            assert!(!set.contains(a ^ 1 << 65) && !set.contains(a ^ 1 << 3));
        }
    }

    /// Frozen, keys of one level in `keep_every` stay; transient keys go once their newest
    /// level is more than the set's time back; a checkpoint's copy keeps the two apart.
    #[test]
    fn transient_keys_go_once_old_keys_kept_for_good_stay() {
        let key = |i: u128| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) | 1;
        for every in [2u32, 4] {
            let forgetting = Forgetting {
                kept_for: 4,
                keep_every: every,
            };
            let mut set = KeySet::with_census(None, forgetting);
            for level in 0..20u128 {
                set.set_level(level as u32);
                for j in 0..1000 {
                    assert_eq!(
                        set.insert(key(level * 1000 + j), usize::MAX, false),
                        Ok(true)
                    );
                }
                assert!(set.freeze_all(None, &|| false).is_some());
            }
            // Frozen at level 19, kept for 4: the transient levels from 15 on are left.
            let for_good = |level: u128| level.is_multiple_of(u128::from(every));
            let expected = |level: u128| for_good(level) || level >= 15;
            let held = |set: &KeySet| {
                (0..20u128).all(|level| {
                    (0..1000).all(|j| set.contains(key(level * 1000 + j)) == expected(level))
                })
            };
            assert!(held(&set), "every {every}");
            let kept_levels = (0..20).filter(|&l| expected(l)).count();
            assert_eq!(set.len(), kept_levels * 1000);
            let mut copy = Vec::new();
            let written = set.write_values(&mut copy).unwrap();
            assert_eq!(written, copy.len() as u64);
            let mut again =
                KeySet::read_values(&mut copy.as_slice(), None, forgetting, 19).unwrap();
            assert!(held(&again));
            // Resumed, the transient keys count as frozen at level 19: gone after level 23.
            again.set_level(24);
            assert!(again.freeze_all(None, &|| false).is_some());
            let good_levels = (0..20).filter(|&l| for_good(l)).count();
            assert_eq!(again.len(), good_levels * 1000);
            assert!(!again.contains(key(19_000)) && again.contains(key(16_000)));
            // Cut short or out of order: an error, not a set.
            assert!(
                KeySet::read_values(&mut &copy[..copy.len() - 3], None, forgetting, 19).is_err()
            );
            let mut swapped = copy.clone();
            swapped[8..18].copy_from_slice(&copy[18..28]);
            swapped[18..28].copy_from_slice(&copy[8..18]);
            assert!(KeySet::read_values(&mut swapped.as_slice(), None, forgetting, 19).is_err());
        }
    }

    /// Once the keys kept for good take half of what the set took before a freeze, only every
    /// fourth level's are kept for good from then on; at three quarters every eighth, at seven
    /// eighths every sixteenth; keys kept later are transient or not by that spacing.
    #[test]
    fn levels_kept_for_good_space_out_as_they_fill_the_set() {
        let key = |i: u128| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) | 1;
        let every = |set: &KeySet| set.clock.keep_every.load(Ordering::Relaxed);
        let for_good =
            |set: &KeySet| -> usize { set.shards.iter().map(Shard::for_good_bytes).sum() };
        let fill = |set: &mut KeySet, level: u32, keys: std::ops::Range<u128>| {
            set.set_level(level);
            for i in keys {
                assert_eq!(set.insert(key(i), usize::MAX, false), Ok(true));
            }
        };
        let mut set = KeySet::new();
        fill(&mut set, 0, 0..200_000);
        let room = set.bytes();
        assert!(set.freeze(None, &|| false).is_some_and(|freed| freed > 0));
        let share = for_good(&set) as f64 / room as f64;
        let expected = match share {
            s if s <= 0.5 => 2,
            s if s <= 0.75 => 4,
            s if s <= 0.875 => 8,
            _ => 16,
        };
        assert_eq!(
            every(&set),
            expected,
            "kept for good: {share:.3} of the set"
        );
        // A few keys more: those kept for good take nearly all, every sixteenth level from now.
        // (Too few to be worth a freeze: the spacing is widened all the same.)
        fill(&mut set, 2, 200_000..202_000);
        assert_eq!(set.freeze(None, &|| false), Some(0));
        assert_eq!(every(&set), 16);
        let transient =
            |set: &KeySet| -> usize { set.shards.iter().map(|s| s.tally.transient).sum() };
        let before = transient(&set);
        fill(&mut set, 16, 202_000..203_000);
        fill(&mut set, 17, 203_000..203_500);
        fill(&mut set, 18, 203_500..204_000);
        assert_eq!(transient(&set) - before, 1000);
        assert!((0..204_000).all(|i| set.contains(key(i))));
        // Asked for, the spacing is a power of two from 2 to 16 (every 16th level kept for
        // good is what ends ghosts).
        for (asked, spacing) in [(0, 2), (3, 4), (16, 16), (64, 16)] {
            let forgetting = Forgetting {
                kept_for: 4,
                keep_every: asked,
            };
            assert_eq!(every(&KeySet::with_census(None, forgetting)), spacing);
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
