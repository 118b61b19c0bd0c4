//! The breadth-first search's set of positions seen: keys only, 80 bits of each, in 12-18
//! bytes a key, or about 8 once frozen (see `frozen.rs`) when memory runs short; then
//! keys of the levels not kept for good are let go of once old (see `forgetting.rs`).

use super::bucket::{value_of, Slot, BUCKET_BYTES, EXT_BITS, EXT_MASK};
use super::census::Census;
use super::forgetting::{
    Clock, Forgetting, FreezeAt, Span, Tag, Term, KEPT_FOR_GOOD_EVERY, KEPT_SHORT_AT_LEAST,
};
use super::frozen::{merged, FrozenKeys, NotFrozen, NotMade, VALUE_BITS};
use super::table::{Inserted, KeyTable};
use parking_lot::Mutex;
use std::sync::Arc;

/// An insert-only set of 128-bit keys: 64 tables of one-line buckets (`table.rs`) chosen by the
/// key's top 6 bits, each storing 74 more bits of the key (80 bits in all), and growing by a
/// quarter on its own when 74% full (by less near the budget, see `FULL_PERCENT`), so memory
/// stays near 64 / 7 / 0.66 bytes a key (64 / 6 / 0.66 while a shard is small) and growing
/// never needs twice the whole set. Keys equal in those 80 bits count as one: for the 1.45 * 10^9
/// keys of the 6,935-ply problem the chance of any such pair is about 10^-6 (and a lost
/// position could only make the answer longer, never wrong as a line). An all-zero word is an
/// empty slot, so a key whose low 64 bits are zero is kept as a stand-in made of its high bits.
/// The shards are separate so that threads can each own some of them; 64 rather than thousands,
/// so that their bookkeeping stays in the L1 cache (measured: 12555 went from 6.9 s to 6.4 s).
pub(crate) struct KeySet {
    pub(crate) shards: Vec<Shard>,
    /// Bytes of all shards' tables.
    bytes: usize,
    /// When positions were first kept and met again (the level log's figures).
    census: Option<Arc<Census>>,
    clock: Arc<Clock>,
    /// Whether any shard has frozen keys.
    any_frozen: bool,
}

/// One of the key set's tables, and the keys frozen out of it when memory ran short (see
/// `KeySet::freeze`). Its owner writes the count at every insertion while other threads read
/// the table's address for their look-ups: the two are kept on separate cache lines, and
/// shards owned by different threads never share one.
#[repr(align(128))]
pub(crate) struct Shard {
    table: KeyTable,
    /// Keys frozen, each with its tag (an `Entry`): one set, so that a look-up reads one
    /// bucket (two sets, for good and the rest, took two more loads a look-up).
    frozen: Option<FrozenKeys>,
    /// For each tag of the keys kept long or short, the levels they were kept on and how many
    /// of them the frozen set holds.
    spans: Spans,
    /// The first level whose keys the table may hold (the last freeze's).
    since: u32,
    census: Option<Arc<Census>>,
    clock: Arc<Clock>,
    tally: Tally,
}

/// Keys in a shard's table, on a line of its own (see `Shard`).
#[repr(align(128))]
struct Tally {
    len: usize,
    /// Of them, those of each tag.
    by_tag: [usize; Tag::COUNT],
}

impl Tally {
    const EMPTY: Tally = Tally {
        len: 0,
        by_tag: [0; Tag::COUNT],
    };

    fn of_term(&self, term: Term) -> usize {
        Tag::all()
            .filter(|tag| tag.term() == term)
            .map(|tag| self.by_tag[tag.index()])
            .sum()
    }
}

const SHARD_BITS: u32 = 6;
const _: () = assert!(
    EXT_BITS + Tag::BITS <= u16::BITS,
    "a key's tag fits beside its bits"
);
/// A shard grows once this full, in percent (of its slots): by a quarter while memory is
/// ample... At 74% a quarter of the buckets have passed keys on (see `table.rs`). Growing by a
/// quarter, a shard runs between 59% and 74% full, where by half it ran between 49% and 74%:
/// peak RSS at the defaults 92 -> 76 MB on wfp-56-12 2571, 121 -> 99 MB on 龍の顎 12555, for
/// twice the rehashing (1461: 1.0% -> 1.8% of the samples).
const FULL_PERCENT: usize = 74;
/// Once memory is not ample, a shard grows (by a sixteenth) only when this full: where the
/// pass is short of memory, fewer bytes a key are worth a longer look-up (a miss reads 1.16
/// lines at 74%, about 1.4 at 80%: `table.rs`).
const TIGHT_FULL_PERCENT: usize = 80;
/// ...(room for this many shards of its size to grow), else by a sixteenth; and when
/// not even that fits and no more memory is to be had, it fills up to `CRAMMED_PERCENT`
/// (probes get longer, but the pass goes on). The shards reach 74% at about the same time:
/// growing them all by half near the budget had 加藤徹 6935 give up at 6,369 of its 6,935 plies
/// with a fifth of its memory unused, and growing by half while it fitted, then filling, at
/// 6,767 plies with shards grown last still half empty.
const AMPLE_SHARDS: usize = 32;
/// A shard this full (per cent) may be grown ahead of its insertions (see `Shard::grown_ahead`).
const AHEAD_PERCENT: usize = 69;
const CRAMMED_PERCENT: usize = 90;
/// A freeze must free at least this fraction (1 / n) of the set's bytes...
const MIN_FREEZE_SAVING: usize = 8;
/// ...or, when even keys kept for less time would not free that much, this fraction: a
/// freeze rebuilds every frozen key (some 25 s for 加藤徹 162a's 6 GB), but the shards
/// crammed instead (filled to `CRAMMED_PERCENT`; with the slots end to end, a look-up that
/// missed read some 50) made its levels 3-10 times slower until the next freeze, 20 levels
/// later.
const LAST_FREEZE_SAVING: usize = 32;
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

/// Whether an insertion still has the frozen set to look its key up in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrozenLookUp {
    Needed,
    /// Looked up since the last freeze: not there.
    Done,
}

/// The thread of `owners` that inserts into shard `shard` when several insert at once: each
/// shard has one writer. One rule for both parallel loops (`parallel/`, `narrow/`).
#[inline]
pub(crate) fn owner_of(shard: usize, owners: usize) -> usize {
    shard % owners
}

/// The thread of `owners` that inserts `key` (the owner of its shard).
#[inline]
pub(crate) fn owner_of_key(key: u128, owners: usize) -> usize {
    owner_of(shard_of(key), owners)
}

/// Where shard `shard` comes among its owner's shards, as [`KeySet::split_among`] lists them.
#[inline]
pub(crate) fn place_among_owned(shard: usize, owners: usize) -> usize {
    shard / owners
}

/// The shards of `shards` that `owner` of `owners` owns, in rising order.
pub(crate) fn shards_of(owner: usize, owners: usize, shards: usize) -> impl Iterator<Item = usize> {
    (0..shards).filter(move |&shard| owner_of(shard, owners) == owner)
}

/// Which shard holds `key`.
#[inline]
pub(crate) fn shard_of(key: u128) -> usize {
    (key >> (128 - SHARD_BITS)) as usize
}

/// Whether a shard's frozen keys hold `value`. (Free of the shard, so that an insertion can ask
/// while it holds the table.)
#[inline]
fn frozen_holds(frozen: &Option<FrozenKeys>, value: u128) -> bool {
    frozen.as_ref().is_some_and(|f| f.contains(value))
}

/// A key as a freeze sorts them and the frozen set keeps it: the value shifted up by
/// `Tag::BITS`, with its tag below.
type Entry = u128;

fn tag_in(entry: &Entry) -> Tag {
    Tag::from_bits((entry & ((1 << Tag::BITS) - 1)) as u32)
}

/// The tag in an entry read from a file, if it is one a key can have.
fn known_tag_in(entry: &Entry) -> Option<Tag> {
    let bits = (entry & ((1 << Tag::BITS) - 1)) as u32;
    Some(Tag::from_bits(bits)).filter(|tag| tag.bits() == bits)
}

/// What each tag of the keys kept long or short spans once frozen (see `Shard::spans`).
type Spans = [Option<Span>; Tag::TRANSIENT];

/// Writes a count (8 bytes) and `values` (ascending, `VALUE_BYTES` each, little-endian);
/// returns the bytes written.
fn write_set(
    out: &mut dyn std::io::Write,
    len: usize,
    values: impl Iterator<Item = u128>,
) -> std::io::Result<u64> {
    out.write_all(&(len as u64).to_le_bytes())?;
    for value in values {
        out.write_all(&value.to_le_bytes()[..VALUE_BYTES])?;
    }
    Ok(8 + (VALUE_BYTES * len) as u64)
}

impl Shard {
    const FIRST_BUCKETS: usize = 3;

    fn new(census: Option<Arc<Census>>, clock: Arc<Clock>) -> Shard {
        Shard {
            table: KeyTable::new(Self::FIRST_BUCKETS).expect("a small key table"),
            frozen: None,
            spans: [None; Tag::TRANSIENT],
            since: 0,
            census,
            clock,
            tally: Tally::EMPTY,
        }
    }

    /// Tells the census (if any) that `key` was met again.
    #[inline]
    pub(crate) fn met_again(&self, key: u128) {
        if let Some(census) = &self.census {
            census.met_again(key);
        }
    }

    /// Frozen keys kept long or short.
    fn frozen_transient(&self) -> usize {
        self.spans.iter().flatten().map(|span| span.keys).sum()
    }

    /// Bytes of the frozen keys of the spaced levels: kept for good or long (their share of
    /// the frozen set's bytes).
    fn spaced_bytes(&self) -> usize {
        let long: usize = Tag::transient()
            .filter(|tag| tag.term() == Term::Long)
            .filter_map(|tag| self.spans[tag.transient_index()])
            .map(|span| span.keys)
            .sum();
        let spaced = self.frozen_len() - self.frozen_transient() + long;
        (self.frozen.as_ref()).map_or(0, |f| f.bytes() * spaced / f.len().max(1))
    }

    fn frozen_bytes(&self) -> usize {
        self.frozen.as_ref().map_or(0, FrozenKeys::bytes)
    }

    fn bytes(&self) -> usize {
        self.table.bytes() + self.frozen_bytes()
    }

    pub(crate) fn len(&self) -> usize {
        self.tally.len + self.frozen_len()
    }

    fn frozen_len(&self) -> usize {
        self.frozen.as_ref().map_or(0, FrozenKeys::len)
    }

    #[inline]
    fn is_frozen(&self, value: u128) -> bool {
        frozen_holds(&self.frozen, value)
    }

    /// Keys kept for good once the table is frozen.
    fn for_good_after_freeze(&self) -> usize {
        self.frozen_len() - self.frozen_transient() + self.tally.of_term(Term::ForGood)
    }

    /// Keys the frozen set holds after a freeze that leaves `spans`.
    fn frozen_after(&self, spans: &Spans) -> usize {
        self.for_good_after_freeze() + spans.iter().flatten().map(|s| s.keys).sum::<usize>()
    }

    /// The spans once the table's keys kept long or short are frozen `at`, each in the block
    /// its tag names then (see `Clock::block_of`); without those the freeze lets go of if
    /// `dropping`.
    fn spans_after(&self, at: FreezeAt, dropping: bool) -> Spans {
        let mut spans = self.spans;
        for tag in Tag::transient() {
            let keys = self.tally.by_tag[tag.index()];
            if keys == 0 {
                continue;
            }
            let (oldest, newest) = self.clock.block_of(tag, at.level);
            let span = &mut spans[tag.transient_index()];
            *span = Some(match *span {
                // (The same tag names a block 16 back only if that block was kept that long.)
                Some(old) => Span {
                    oldest: old.oldest.min(oldest),
                    newest: old.newest.max(newest),
                    keys: old.keys + keys,
                },
                None => Span {
                    oldest,
                    newest,
                    keys,
                },
            });
        }
        if dropping {
            for (i, span) in spans.iter_mut().enumerate() {
                let term = Tag::of_transient_index(i).term();
                if span.is_some_and(|span| !at.keeps(term, span.newest)) {
                    *span = None;
                }
            }
        }
        spans
    }

    /// Whether a freeze `at` lets go of any frozen key.
    fn lets_go(&self, at: FreezeAt) -> bool {
        (self.spans.iter().enumerate()).any(|(i, span)| {
            span.is_some_and(|span| !at.keeps(Tag::of_transient_index(i).term(), span.newest))
        })
    }

    /// Bytes a freeze `at` of this shard would free (0 if it would not).
    fn freeze_saving(&self, at: FreezeAt) -> usize {
        if u32::try_from(self.len()).is_err() || (self.tally.len == 0 && !self.lets_go(at)) {
            return 0;
        }
        let after = match self.frozen_after(&self.spans_after(at, true)) {
            0 => 0,
            keys => FrozenKeys::bytes_for_tagged(keys, Tag::BITS),
        } + Self::FIRST_BUCKETS * BUCKET_BYTES;
        self.bytes().saturating_sub(after)
    }

    /// Moves the table's keys into the frozen set and starts an empty table; keys whose term
    /// is over `at` are let go of (see `forgetting.rs`). Memory for the sorted keys and the
    /// new set is taken on top of the old ones, one shard at a time. The shard is left as it
    /// was if `stop` said so first or that memory was not to be had.
    fn freeze(&mut self, stop: &dyn Fn() -> bool, at: FreezeAt) -> Result<(), NotFrozen> {
        let entries = self.sorted_entries(stop)?;
        let mut polled = 0usize;
        let mut stopped = false;
        let mut go_on = || {
            polled += 1;
            stopped = stopped || (polled.is_multiple_of(STOP_POLL) && stop());
            !stopped
        };
        let spans = self.spans_after(at, true);
        let entries = self
            .frozen_entries(&entries, &spans)
            .take_while(|_| go_on());
        // (`freeze_saving` is 0, so no freeze, for a shard of more keys than a frozen set
        // holds.)
        let set = FrozenKeys::new_tagged(entries, self.frozen_after(&spans), Tag::BITS);
        let set = match set {
            Ok(set) => set,
            Err(NotMade::Miscounted) if stopped => return Err(NotFrozen::Stopped),
            Err(NotMade::NoMemory) => return Err(NotFrozen::NoMemory),
            Err(why) => {
                // The table and the frozen set held a key twice: every later freeze would
                // fail. The pass ends as short of memory (release builds).
                debug_assert!(
                    false,
                    "a freeze's keys did not come to their count: {why:?}"
                );
                return Err(NotFrozen::NoMemory);
            }
        };
        self.frozen = (set.len() > 0).then_some(set);
        self.spans = spans;
        self.table = KeyTable::new(Self::FIRST_BUCKETS).expect("a small key table");
        self.tally = Tally::EMPTY;
        self.since = at.level;
        Ok(())
    }

    /// The frozen set's entries and the table's `entries` (ascending) that `spans` keeps, as
    /// a freeze leaving `spans` makes them: ascending.
    fn frozen_entries<'a>(
        &'a self,
        entries: &'a [Entry],
        spans: &'a Spans,
    ) -> impl Iterator<Item = Entry> + 'a {
        let kept = |entry: &Entry| {
            let tag = tag_in(entry);
            tag == Tag::FOR_GOOD || spans[tag.transient_index()].is_some()
        };
        let old = self.frozen.iter().flat_map(FrozenKeys::values);
        merged(old.filter(kept), entries.iter().copied().filter(kept))
    }

    /// The table's keys as entries, ascending; not if `stop` said so first or memory was
    /// short (see `KeyTable::sorted_entries`).
    fn sorted_entries(&self, stop: &dyn Fn() -> bool) -> Result<Vec<Entry>, NotFrozen> {
        let entry = |Slot { word, ext }: Slot| -> Entry {
            value_of(word, ext) << Tag::BITS | u128::from(ext >> EXT_BITS)
        };
        let poll = (STOP_POLL / self.table.bucket_slots()).max(1);
        self.table.sorted_entries(entry, self.tally.len, poll, stop)
    }

    /// Writes the shard's keys (see `KeySet::write_values`): the number of tags of keys kept
    /// long or short, each tag with the oldest and newest level of its keys (4 bytes each);
    /// then every key as a count and the entries (value and tag) ascending: as a freeze now
    /// would make them without letting any go. Returns the bytes written.
    fn write_values(&self, out: &mut dyn std::io::Write) -> std::io::Result<u64> {
        let entries = self
            .sorted_entries(&|| false)
            .map_err(|_| std::io::Error::other("no memory to sort a shard's keys"))?;
        let at = FreezeAt {
            level: self.clock.level(),
            kept_for: self.clock.kept_for(),
        };
        let spans = self.spans_after(at, false);
        out.write_all(&(spans.iter().flatten().count() as u64).to_le_bytes())?;
        let mut bytes = 8;
        for (i, span) in spans.iter().enumerate() {
            if let Some(span) = span {
                let tag = Tag::of_transient_index(i);
                for field in [tag.bits(), span.oldest, span.newest] {
                    out.write_all(&field.to_le_bytes())?;
                }
                bytes += 12;
            }
        }
        let entries = self.frozen_entries(&entries, &spans);
        bytes += write_set(out, self.frozen_after(&spans), entries)?;
        Ok(bytes)
    }

    /// Whether `key` is in this shard.
    #[inline]
    fn contains(&self, key: u128) -> bool {
        self.in_table(key) || self.in_frozen(key)
    }

    /// Whether the table holds `key` (not looking at the frozen keys).
    #[inline]
    fn in_table(&self, key: u128) -> bool {
        let known = self.table.contains(stored(key), ext_of(key));
        if known {
            self.met_again(key);
        }
        known
    }

    /// Whether the frozen keys hold `key`.
    #[inline]
    fn in_frozen(&self, key: u128) -> bool {
        let known = self.is_frozen(value_of(stored(key), ext_of(key)));
        if known {
            self.met_again(key);
        }
        known
    }

    /// Inserts `key`; false if it was already there. Growing may add at most `allowance` bytes
    /// (reduced by what it adds); `Err` when it would need more. `cram`: there is no more
    /// memory to be had, fill up to `CRAMMED_PERCENT` rather than fail.
    #[inline]
    pub(crate) fn insert(
        &mut self,
        key: u128,
        allowance: &mut usize,
        cram: bool,
    ) -> Result<bool, ()> {
        self.insert_with(key, allowance, cram, FrozenLookUp::Needed)
    }

    /// [`Shard::insert`], told whether the frozen set is still to be read: with
    /// [`FrozenLookUp::Done`] the caller looked `key` up (`contains`) since the shard last froze
    /// and found it missing, so the frozen set cannot hold it. (Past the first freezes that
    /// second look-up read a frozen bucket for every new position.)
    #[inline]
    pub(crate) fn insert_with(
        &mut self,
        key: u128,
        allowance: &mut usize,
        cram: bool,
        frozen: FrozenLookUp,
    ) -> Result<bool, ()> {
        debug_assert!(
            frozen == FrozenLookUp::Needed || !self.is_frozen(value_of(stored(key), ext_of(key))),
            "a key said to be missing from the frozen set is in it"
        );
        let word = stored(key);
        let ext = ext_of(key);
        let size = self.table.buckets();
        // (The first test, the lower bound, spares most insertions the allowance's sums.)
        if (self.tally.len + 1) * 100 > self.table.slots() * FULL_PERCENT
            && (self.tally.len + 1) * 100 > self.table.slots() * self.full_percent(*allowance)
        {
            match self.bigger(*allowance) {
                Some(bigger) => {
                    self.grow(bigger)?;
                    *allowance -= (bigger - size) * BUCKET_BYTES;
                }
                None if cram
                    && (self.tally.len + 1) * 100 <= self.table.slots() * CRAMMED_PERCENT => {}
                None => return Err(()),
            }
        }
        let tag = self.clock.tag_now();
        let frozen_set = &self.frozen;
        let elsewhere =
            || frozen == FrozenLookUp::Needed && frozen_holds(frozen_set, value_of(word, ext));
        let above = (tag.bits() as u16) << EXT_BITS;
        let new = match self.table.insert(word, ext, above, elsewhere) {
            Inserted::New => true,
            Inserted::Known => false,
            // Counted at once: a crammed shard keeps some keys aside, and the map holding them
            // grows by doubling.
            Inserted::Aside { grew } => {
                *allowance = allowance.saturating_sub(grew);
                true
            }
        };
        if new {
            self.tally.len += 1;
            self.tally.by_tag[tag.index()] += 1;
        }
        match (&self.census, new) {
            (Some(census), true) => census.kept(key),
            (Some(census), false) => census.met_again(key),
            (None, _) => {}
        }
        Ok(new)
    }

    /// The size the table grows to when full, with `allowance` bytes to grow by: by a quarter
    /// while memory is ample, else by a sixteenth (see `AMPLE_SHARDS`); `None` if even that does
    /// not fit (while growing, the old and the new table exist together).
    fn bigger(&self, allowance: usize) -> Option<usize> {
        let size = self.table.buckets();
        let step = if self.ample(allowance) {
            size / 4
        } else {
            size / 16
        };
        let bigger = size + step.max(1);
        Some(bigger).filter(|b| (size + b) * BUCKET_BYTES <= allowance)
    }

    /// Whether `allowance` leaves room for `AMPLE_SHARDS` shards of this one's size to grow.
    fn ample(&self, allowance: usize) -> bool {
        allowance / AMPLE_SHARDS >= self.table.bytes()
    }

    /// How full the shard may get before it grows: `FULL_PERCENT` while memory is ample,
    /// `TIGHT_FULL_PERCENT` once it is not.
    fn full_percent(&self, allowance: usize) -> usize {
        if self.ample(allowance) {
            FULL_PERCENT
        } else {
            TIGHT_FULL_PERCENT
        }
    }

    /// A shard nearly full (`AHEAD_PERCENT`) made again bigger, as it would grow at its next
    /// insertions, with the bytes it adds (`None`: not due, or not within `allowance`). Only
    /// reads the shard, so its owner can do it while other threads look keys up in it, and put
    /// it in before it inserts again (see [`Shard::put_grown`]).
    pub(crate) fn grown_ahead(&self, allowance: usize) -> Option<Grown> {
        let size = self.table.buckets();
        let ahead = self.full_percent(allowance) - (FULL_PERCENT - AHEAD_PERCENT);
        if self.tally.len * 100 < self.table.slots() * ahead {
            return None;
        }
        let bigger = self.bigger(allowance)?;
        let table = self.table.rehashed(bigger)?;
        Some(Grown {
            table,
            keys: self.tally.len,
            bytes: (bigger - size) * BUCKET_BYTES,
        })
    }

    /// Puts in the table `grown_ahead` made, the shard having taken no key since.
    pub(crate) fn put_grown(&mut self, grown: Grown) {
        assert_eq!(grown.keys, self.tally.len, "no key inserted since the copy");
        self.table = grown.table;
    }

    /// Starts loading the slot where `key` would go, to be read.
    #[inline]
    pub(crate) fn prefetch(&self, key: u128) {
        self.prefetch_with(
            key,
            crate::search::machine::prefetch_at,
            FrozenLookUp::Needed,
        );
    }

    /// Starts loading the slot where `key` would go, to be written: an owner inserting keys
    /// whose lines the other threads read last (their look-ups on the level) otherwise takes
    /// each line back from their CPU only when its store comes.
    #[inline]
    pub(crate) fn prefetch_for_insert(&self, key: u128, frozen: FrozenLookUp) {
        self.prefetch_with(key, crate::search::machine::prefetch_write, frozen);
    }

    #[inline]
    fn prefetch_with(&self, key: u128, load: impl Fn(*const u8), frozen: FrozenLookUp) {
        self.table.prefetch(stored(key), load);
        if let Some(set) = self
            .frozen
            .as_ref()
            .filter(|_| frozen == FrozenLookUp::Needed)
        {
            set.prefetch(value_of(stored(key), ext_of(key)));
        }
    }

    /// See `KeySet::prefetch_frozen_start`.
    #[inline]
    fn prefetch_frozen_start(&self, key: u128) {
        if let Some(frozen) = &self.frozen {
            frozen.prefetch(value_of(stored(key), ext_of(key)));
        }
    }

    /// See `KeySet::prefetch_frozen`.
    #[inline]
    pub(crate) fn prefetch_frozen(&self, key: u128) {
        if let Some(frozen) = &self.frozen {
            frozen.prefetch_records(value_of(stored(key), ext_of(key)));
        }
    }

    /// Makes the table `buckets` buckets (`Err` without the memory).
    fn grow(&mut self, buckets: usize) -> Result<(), ()> {
        self.table = self.table.rehashed(buckets).ok_or(())?;
        Ok(())
    }
}

/// Bytes a frozen value takes in a checkpoint's keys file.
const VALUE_BYTES: usize = (VALUE_BITS as usize).div_ceil(8);

/// A shard's table grown ahead of its insertions (see [`Shard::grown_ahead`]).
pub(crate) struct Grown {
    table: KeyTable,
    /// The keys the shard held when copied.
    keys: usize,
    /// What the shard grows by.
    pub(crate) bytes: usize,
}

impl Grown {
    /// Bytes the copy takes while it stands beside the shard's table: all of its table's.
    pub(crate) fn held_bytes(&self) -> usize {
        self.table.bytes()
    }
}

impl KeySet {
    const SHARDS: usize = 1 << SHARD_BITS;

    /// The shards shared out among `owners` (see [`owner_of`]), each owner's in rising order.
    pub(crate) fn split_among(&mut self, owners: usize) -> Vec<Vec<&mut Shard>> {
        let mut split: Vec<Vec<&mut Shard>> = (0..owners).map(|_| Vec::new()).collect();
        for (shard, table) in self.shards.iter_mut().enumerate() {
            split[owner_of(shard, owners)].push(table);
        }
        split
    }

    #[cfg(test)]
    pub(crate) fn new() -> KeySet {
        Self::with_census(None, Forgetting::default())
    }

    /// A set that tells `census` of every key kept and met again, and lets keys go as
    /// `forgetting` says once memory is short.
    pub(crate) fn with_census(census: Option<Arc<Census>>, forgetting: Forgetting) -> KeySet {
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
    pub(crate) fn set_level(&self, level: u32) {
        self.clock.set_level(level);
        if let Some(census) = &self.census {
            census.set_level(level);
        }
    }

    /// Writes every key as the shards keep it: for each shard, the keys kept for good, then
    /// the sets kept long or short (see `Shard::write_values`), the values 10 bytes each,
    /// all little-endian. Returns the bytes written.
    pub(crate) fn write_values(&self, out: &mut dyn std::io::Write) -> std::io::Result<u64> {
        let mut bytes = 0;
        for shard in &self.shards {
            bytes += shard.write_values(out)?;
        }
        Ok(bytes)
    }

    /// The set [`Self::write_values`] wrote, every key frozen (the compact form), the clock at
    /// level `level`. An error if the values run short, are out of order or too wide, or a
    /// set's header is damaged. `input_bytes` is the length of the input: a shard's count
    /// beyond what it could hold is refused before anything is made for it (a damaged count
    /// must not ask for gigabytes).
    pub(crate) fn read_values(
        input: &mut dyn std::io::Read,
        census: Option<Arc<Census>>,
        forgetting: Forgetting,
        level: u32,
        input_bytes: u64,
    ) -> std::io::Result<KeySet> {
        let most_keys = input_bytes / VALUE_BYTES as u64;
        let mut set = KeySet::with_census(census, forgetting);
        for shard in &mut set.shards {
            let mut count = [0u8; 8];
            input.read_exact(&mut count)?;
            let tags = u64::from_le_bytes(count);
            if tags > Tag::TRANSIENT as u64 {
                return Err(std::io::Error::other(format!("a shard has {tags} tags")));
            }
            for _ in 0..tags {
                let mut header = [0u8; 12];
                input.read_exact(&mut header)?;
                let field = |i: usize| u32::from_le_bytes(header[i..i + 4].try_into().expect("4"));
                let tag = Tag::from_bits(field(0));
                let (oldest, newest) = (field(4), field(8));
                let span = &mut shard.spans[tag.transient_index_of_any()];
                if tag.term() == Term::ForGood || oldest > newest || span.is_some() {
                    return Err(std::io::Error::other("a tag's header is damaged"));
                }
                *span = Some(Span {
                    oldest,
                    newest,
                    keys: 0,
                });
            }
            let spans = &mut shard.spans;
            let mut count_in = |entry: Entry| match known_tag_in(&entry) {
                Some(Tag::FOR_GOOD) => true,
                Some(tag) => match &mut spans[tag.transient_index()] {
                    Some(span) => {
                        span.keys += 1;
                        true
                    }
                    None => false,
                },
                None => false,
            };
            shard.frozen = read_set(input, Tag::BITS, most_keys, &mut count_in)?;
            shard.since = level;
        }
        set.set_level(level);
        set.recount();
        Ok(set)
    }

    /// The census, if the set has one.
    pub(crate) fn census(&self) -> Option<&Census> {
        self.census.as_deref()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Keys held.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(Shard::len).sum()
    }

    /// Copies, grown, of the nearly full shards among `shards` (see [`Shard::grown_ahead`]),
    /// into `out`: within `allowance` bytes, and, past the first, only while the copies hold
    /// less than `most` bytes in all. A copy stands beside its shard's table until it is put
    /// in, and the shards fill up together: copied all at once, they held the key set twice
    /// over.
    pub(crate) fn grow_ahead(
        &self,
        shards: impl Iterator<Item = usize>,
        mut allowance: usize,
        most: usize,
        out: &mut Vec<(usize, Grown)>,
    ) {
        out.clear();
        let mut copied = 0;
        for shard in shards {
            if copied >= most.max(1) {
                break;
            }
            if let Some(grown) = self.shards[shard].grown_ahead(allowance) {
                allowance = allowance.saturating_sub(grown.held_bytes());
                copied += grown.held_bytes();
                out.push((shard, grown));
            }
        }
    }

    /// Keys frozen (for tests).
    #[cfg(test)]
    pub(crate) fn frozen_len(&self) -> usize {
        self.shards.iter().map(Shard::frozen_len).sum()
    }

    /// Counts `bytes` a shard grew by directly.
    pub(crate) fn grew(&mut self, bytes: usize) {
        self.bytes += bytes;
    }

    /// Counts the bytes again after the shards were changed directly.
    pub(crate) fn recount(&mut self) {
        self.bytes = self.shards.iter().map(Shard::bytes).sum();
        self.any_frozen = self.shards.iter().any(|s| s.frozen_len() > 0);
    }

    pub(crate) fn contains(&self, key: u128) -> bool {
        self.shards[shard_of(key)].contains(key)
    }

    /// Whether any keys are frozen: then a look-up may be taken in two steps,
    /// [`Self::in_table`] and, only if need be, [`Self::in_frozen`].
    #[inline]
    pub(crate) fn any_frozen(&self) -> bool {
        self.any_frozen
    }

    /// A sink's first look at `key` (see `ChildSink::frozen_apart`): the table alone with
    /// `frozen_apart`, else the frozen keys too.
    #[inline]
    pub(crate) fn first_look(&self, key: u128, frozen_apart: bool) -> bool {
        if frozen_apart {
            self.in_table(key)
        } else {
            self.contains(key)
        }
    }

    /// Whether `key` is in a shard's table (its frozen keys not looked at).
    #[inline]
    pub(crate) fn in_table(&self, key: u128) -> bool {
        self.shards[shard_of(key)].in_table(key)
    }

    /// Whether `key` is among the frozen keys (the tables not looked at).
    #[inline]
    pub(crate) fn in_frozen(&self, key: u128) -> bool {
        self.any_frozen && self.shards[shard_of(key)].in_frozen(key)
    }

    /// Starts loading the table slot where `key` would be, not the frozen bucket (see
    /// `prefetch_frozen_start`).
    #[inline]
    pub(crate) fn prefetch_table(&self, key: u128) {
        self.shards[shard_of(key)].prefetch_with(
            key,
            crate::search::machine::prefetch_at,
            FrozenLookUp::Done,
        );
    }

    /// Starts loading where `key`'s frozen bucket begins (`prefetch_frozen` then loads its
    /// records).
    #[inline]
    pub(crate) fn prefetch_frozen_start(&self, key: u128) {
        if self.any_frozen {
            self.shards[shard_of(key)].prefetch_frozen_start(key);
        }
    }

    /// Inserts `key`; false if it was already there. `Err` when growing a shard would pass
    /// `budget` bytes for the whole set (with `cram`, only once the shard is crammed full).
    #[inline]
    pub(crate) fn insert(&mut self, key: u128, budget: usize, cram: bool) -> Result<bool, ()> {
        let mut allowance = budget.saturating_sub(self.bytes);
        let before = allowance;
        let inserted = self.shards[shard_of(key)].insert(key, &mut allowance, cram);
        self.bytes += before - allowance;
        inserted
    }

    /// Starts loading the slot where `key` would go.
    #[inline]
    pub(crate) fn prefetch(&self, key: u128) {
        self.shards[shard_of(key)].prefetch(key);
    }

    /// Starts loading the frozen records `key`'s look-up will read, once `prefetch` has
    /// brought in where their buckets begin: without it each frozen set's look-up waited for
    /// two loads in a row (龍の顎 12555 at `--hash 28`: `frozen_holds` 28% of the samples).
    #[inline]
    pub(crate) fn prefetch_frozen(&self, key: u128) {
        if self.any_frozen {
            self.shards[shard_of(key)].prefetch_frozen(key);
        }
    }

    /// Freezes the keys of every shard where that saves memory (see `frozen.rs`): about 8
    /// bytes a key instead of the table's 12-18, looked up a little more slowly. Keys of one
    /// level in `KEPT_FOR_GOOD_EVERY` stay frozen for good; the others are let go of once
    /// their term is over (see `forgetting.rs`; the short term is cut, down to
    /// `KEPT_SHORT_AT_LEAST`, when that frees too little). A position whose key was let go
    /// of and is met again is kept again, deeper than it was first, and expanded again: a
    /// "ghost". That costs work but never changes an answer (docs/design.md, "Forgetting"):
    /// every child of a ghost was reached at least as early before, so a ghost never gives a
    /// genuinely new position a way in, nor a mate at the level where mates are first found;
    /// and since a position is kept at most once on a level kept for good, ghosts die out.
    ///
    /// With `pool`, shards are frozen on its threads. Returns the bytes freed: 0 when that
    /// would be less than an eighth of the set even with the short term cut, and less than
    /// `1 / LAST_FREEZE_SAVING` of it with the terms whole (each freeze rebuilds every frozen
    /// key: freezing again and again for little would cost more than it gives). Not when `stop`
    /// (polled every million keys or so) cut it short, or the memory for a shard's sorted keys
    /// or its new frozen set was not to be had: every shard then holds its keys, frozen or not
    /// (some shards may have been frozen), and the caller should end the search (a freeze of a
    /// billion keys took seconds).
    pub(crate) fn freeze(
        &mut self,
        pool: Option<&rayon::ThreadPool>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<usize, NotFrozen> {
        let mut at = self.freeze_at();
        let room = self.bytes;
        // Short of what an eighth needs, keys are kept for less time, down to
        // `KEPT_SHORT_AT_LEAST` (ghosts cost more the shorter it is).
        let least = KEPT_SHORT_AT_LEAST.min(at.kept_for);
        let saving =
            |at: FreezeAt| -> usize { self.shards.iter().map(|s| s.freeze_saving(at)).sum() };
        let normal = at;
        let chosen = loop {
            if saving(at) >= self.bytes / MIN_FREEZE_SAVING {
                break Some(at);
            }
            if at.kept_for <= least {
                // Rather than cram the shards: a smaller saving, the keys kept their time.
                break (saving(normal) >= self.bytes / LAST_FREEZE_SAVING).then_some(normal);
            }
            at.kept_for = (at.kept_for / 2).max(least);
        };
        let freed = match chosen {
            Some(at) => self.freeze_where(pool, stop, at, &|shard| shard.freeze_saving(at) > 0),
            None => Ok(0),
        };
        self.widen_spacing(room);
        freed
    }

    /// Spaces the levels kept long further apart once their keys and those kept for good
    /// take more than all but `1 / keep_every` of `room` (what the set took before a freeze:
    /// what memory allows it): every 4th level once they take half, every 8th at three
    /// quarters, every 16th (those kept for good alone) at seven eighths. The spacing applies
    /// to keys kept from now on.
    fn widen_spacing(&self, room: usize) {
        let spaced: usize = self.shards.iter().map(Shard::spaced_bytes).sum();
        let mut every = self.clock.keep_every();
        while every < KEPT_FOR_GOOD_EVERY && spaced > room - room / every as usize {
            every *= 2;
        }
        self.clock.set_keep_every(every);
    }

    /// The least memory a freeze now could leave the set in (with the short term cut as far
    /// as `freeze` would cut it): for whether freezing could make room at all.
    pub(crate) fn least_bytes(&self) -> usize {
        let mut at = self.freeze_at();
        at.kept_for = KEPT_SHORT_AT_LEAST.min(at.kept_for);
        let saving: usize = self.shards.iter().map(|s| s.freeze_saving(at)).sum();
        self.bytes.saturating_sub(saving)
    }

    /// Freezes every shard that has keys in its table or transient keys to let go of, whether
    /// that saves memory or not (tests freeze after every level).
    pub(crate) fn freeze_all(
        &mut self,
        pool: Option<&rayon::ThreadPool>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<usize, NotFrozen> {
        let at = self.freeze_at();
        self.freeze_where(pool, stop, at, &|shard| {
            shard.tally.len > 0 || shard.lets_go(at)
        })
    }

    /// A freeze now, keeping keys for the set's time.
    fn freeze_at(&self) -> FreezeAt {
        FreezeAt {
            level: self.clock.level(),
            kept_for: self.clock.kept_for(),
        }
    }

    /// Freezes the shards `worth` picks (see `freeze`); once one shard's freeze fails, the
    /// others are left as they are.
    fn freeze_where(
        &mut self,
        pool: Option<&rayon::ThreadPool>,
        stop: &(dyn Fn() -> bool + Sync),
        at: FreezeAt,
        worth: &(dyn Fn(&Shard) -> bool + Sync),
    ) -> Result<usize, NotFrozen> {
        let before = self.bytes;
        // The first failure, if any (a shard's freeze takes seconds: the lock costs nothing).
        let failure: Mutex<Option<NotFrozen>> = Mutex::new(None);
        let freeze = |shard: &mut Shard| {
            if failure.lock().is_some() {
                return;
            }
            if let Err(why) = shard.freeze(stop, at) {
                failure.lock().get_or_insert(why);
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
        match failure.into_inner() {
            None => Ok(before.saturating_sub(self.bytes)),
            Some(why) => Err(why),
        }
    }
}

/// One frozen set as `Shard::write_values` wrote it: a count, then the values (with tags of
/// `tag_bits` bits) ascending, each of which `check` accepts (`None` for none).
fn read_set(
    input: &mut dyn std::io::Read,
    tag_bits: u32,
    most_keys: u64,
    check: &mut dyn FnMut(u128) -> bool,
) -> std::io::Result<Option<FrozenKeys>> {
    let mut count = [0u8; 8];
    input.read_exact(&mut count)?;
    let count = u64::from_le_bytes(count);
    let too_large = || std::io::Error::other("a shard's count is larger than the file");
    if count > most_keys {
        return Err(too_large());
    }
    let len = usize::try_from(count).map_err(|_| too_large())?;
    if len == 0 {
        return Ok(None);
    }
    let mut failure = None;
    let mut last = None;
    let items = std::iter::from_fn(|| {
        if failure.is_some() {
            return None;
        }
        let mut bytes = [0u8; 16];
        if let Err(e) = input.read_exact(&mut bytes[..VALUE_BYTES]) {
            failure = Some(e);
            return None;
        }
        let item = u128::from_le_bytes(bytes);
        let value = item >> tag_bits;
        if value >> VALUE_BITS != 0 || last.is_some_and(|l| l >= value) {
            failure = Some(std::io::Error::other("the keys are out of order"));
            return None;
        }
        if !check(item) {
            failure = Some(std::io::Error::other("a key's tag is unknown"));
            return None;
        }
        last = Some(value);
        Some(item)
    })
    .take(len);
    let frozen = FrozenKeys::new_tagged(items, len, tag_bits);
    if let Some(e) = failure {
        return Err(e);
    }
    frozen.map(Some).map_err(|why| match why {
        NotMade::NoMemory => std::io::Error::other("no memory for a shard's keys"),
        NotMade::Miscounted | NotMade::TooMany => {
            std::io::Error::other("a shard's keys are cut short")
        }
    })
}

#[cfg(test)]
mod tests;
