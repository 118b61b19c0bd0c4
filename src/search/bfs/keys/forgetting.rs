//! Which keys a key set short of memory lets go of, and when (see `KeySet::freeze` and
//! docs/design.md, "Forgetting").
//!
//! Every key has a *term*, fixed by the level it was first kept on: keys of one level in
//! `KEPT_FOR_GOOD_EVERY` are kept for good; keys of the other *spaced* levels (one in
//! `Clock::keep_every`) are kept long; the rest short. Frozen, a key kept long or short joins
//! the set of its term and *block* (a run of levels), and the set is let go of once its newest
//! level is its term's time back. What a table keeps beside a key (its `Tag`) is the term and
//! the block's number modulo `BLOCK_RESIDUES`: at a freeze each key is put in the latest block
//! its tag allows, so a key is never let go of sooner than its own level says, only (when a
//! table spans many blocks) later.

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

/// Which keys a key set short of memory lets go of (see `KeySet::freeze`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forgetting {
    /// Levels (two plies each) a frozen key kept short is kept after its level (sooner, down to
    /// 64, when memory is very short); keys kept long are kept `LONG_FACTOR` times as long.
    pub kept_for: u32,
    /// Keys of one level in this many (rounded up to a power of two, 2 to 16) are kept long,
    /// or for good on one level in 16, the others short; doubled, up to 16, as the keys kept
    /// long or for good fill the set.
    pub keep_every: u32,
}

impl Default for Forgetting {
    fn default() -> Forgetting {
        Forgetting {
            kept_for: KEPT_SHORT_FOR,
            keep_every: 2,
        }
    }
}

/// Levels a frozen key kept short is kept for: 512 plies. On 加藤徹 162a 0.33% of the positions
/// met again were first kept longer ago than this.
const KEPT_SHORT_FOR: u32 = 256;
/// ...and at least this many when memory is short: on 162a, 37% of the positions met again
/// were first kept 33-64 levels before, 7.2% longer ago.
pub(crate) const KEPT_SHORT_AT_LEAST: u32 = 64;
/// Keys kept long are kept this many times as long as those kept short: 2,048 plies by
/// default. On 162a none of the positions met again had been first kept longer ago than
/// 2,048 levels, and 1 in 10^5 longer ago than 1,024.
const LONG_FACTOR: u32 = 4;
/// Keys of one level in this many are kept for good: the widest spacing of the levels kept
/// long (see `KeySet::widen_spacing`). Ghosts die out because of them (docs/design.md).
pub(crate) const KEPT_FOR_GOOD_EVERY: u32 = 16;
/// Blocks a tag tells apart (see the module's comment).
const BLOCK_RESIDUES: u32 = 16;

/// How long a frozen key is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Term {
    ForGood,
    Long,
    Short,
}

/// What a table keeps beside a key for its forgetting: its term and its block's number modulo
/// `BLOCK_RESIDUES` (`Tag::BITS` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tag(u8);

impl Tag {
    pub(crate) const BITS: u32 = 6;
    /// Tags there are: three terms of `BLOCK_RESIDUES` residues each.
    pub(crate) const COUNT: usize = 3 * BLOCK_RESIDUES as usize;
    /// The tag of every key kept for good.
    pub(crate) const FOR_GOOD: Tag = Tag(0);

    fn new(term: Term, residue: u32) -> Tag {
        Tag((term as u32 * BLOCK_RESIDUES + residue) as u8)
    }

    /// The tag of `bits` (as `bits()` gave them; anything else reads as a key kept for good).
    pub(crate) fn from_bits(bits: u32) -> Tag {
        match bits {
            bits if bits < BLOCK_RESIDUES || bits as usize >= Self::COUNT => Self::FOR_GOOD,
            bits => Tag(bits as u8),
        }
    }

    pub(crate) fn bits(self) -> u32 {
        self.0 as u32
    }

    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }

    /// Tags of keys kept long or short (see `transient_index`).
    pub(crate) const TRANSIENT: usize = Self::COUNT - BLOCK_RESIDUES as usize;

    /// Every tag a key can have: the one kept for good, then those kept long or short.
    pub(crate) fn all() -> impl Iterator<Item = Tag> {
        std::iter::once(Self::FOR_GOOD).chain(Self::transient())
    }

    /// The tags of keys kept long or short.
    pub(crate) fn transient() -> impl Iterator<Item = Tag> {
        (BLOCK_RESIDUES as u8..Self::COUNT as u8).map(Tag)
    }

    /// Where a tag of a key kept long or short comes among them (below `TRANSIENT`).
    pub(crate) fn transient_index(self) -> usize {
        debug_assert!(self.term() != Term::ForGood);
        self.transient_index_of_any()
    }

    /// `transient_index`, and 0 for the tag kept for good (that a damaged file may name).
    pub(crate) fn transient_index_of_any(self) -> usize {
        self.index().saturating_sub(BLOCK_RESIDUES as usize)
    }

    /// The tag whose `transient_index` is `index` (the last for any larger).
    pub(crate) fn of_transient_index(index: usize) -> Tag {
        Tag((index.min(Self::TRANSIENT - 1) + BLOCK_RESIDUES as usize) as u8)
    }

    pub(crate) fn term(self) -> Term {
        match self.bits() / BLOCK_RESIDUES {
            0 => Term::ForGood,
            1 => Term::Long,
            _ => Term::Short,
        }
    }

    fn residue(self) -> u32 {
        self.bits() % BLOCK_RESIDUES
    }
}

/// The level the set's new keys belong to, shared by its shards, and the tag they get.
pub(crate) struct Clock {
    level: AtomicU32,
    /// One level in this many is spaced (a power of two, 2 to `KEPT_FOR_GOOD_EVERY`).
    keep_every: AtomicU32,
    kept_for: u32,
    /// The tag of the keys kept now (from the two above).
    tag: AtomicU8,
}

impl Clock {
    pub(crate) fn new(forgetting: Forgetting) -> Clock {
        let clock = Clock {
            level: AtomicU32::new(0),
            keep_every: AtomicU32::new(
                forgetting
                    .keep_every
                    .next_power_of_two()
                    .clamp(2, KEPT_FOR_GOOD_EVERY),
            ),
            kept_for: forgetting.kept_for,
            tag: AtomicU8::new(0),
        };
        clock.retag();
        clock
    }

    pub(crate) fn level(&self) -> u32 {
        self.level.load(Ordering::Relaxed)
    }

    pub(crate) fn set_level(&self, level: u32) {
        self.level.store(level, Ordering::Relaxed);
        self.retag();
    }

    pub(crate) fn keep_every(&self) -> u32 {
        self.keep_every.load(Ordering::Relaxed)
    }

    pub(crate) fn set_keep_every(&self, every: u32) {
        self.keep_every.store(every, Ordering::Relaxed);
        self.retag();
    }

    pub(crate) fn kept_for(&self) -> u32 {
        self.kept_for
    }

    /// The tag of a key kept now.
    #[inline]
    pub(crate) fn tag_now(&self) -> Tag {
        Tag(self.tag.load(Ordering::Relaxed))
    }

    fn retag(&self) {
        let tag = self.tag_of(self.level());
        self.tag.store(tag.0, Ordering::Relaxed);
    }

    fn term_of(&self, level: u32) -> Term {
        if level.is_multiple_of(KEPT_FOR_GOOD_EVERY) {
            Term::ForGood
        } else if level.is_multiple_of(self.keep_every()) {
            Term::Long
        } else {
            Term::Short
        }
    }

    /// Levels a block of `term` spans: a quarter of the term's time, so that about five
    /// sets of a term are kept at once.
    fn block_len(&self, term: Term) -> u32 {
        let kept = match term {
            Term::Long => self.kept_for.saturating_mul(LONG_FACTOR),
            _ => self.kept_for,
        };
        (kept / 4).max(1)
    }

    fn tag_of(&self, level: u32) -> Tag {
        match self.term_of(level) {
            Term::ForGood => Tag::FOR_GOOD,
            term => Tag::new(term, level / self.block_len(term) % BLOCK_RESIDUES),
        }
    }

    /// The levels (`oldest..=newest`) of the block a key tagged `tag` (not kept for good) is
    /// frozen into at level `at`: the latest block up to `at` that the tag allows.
    pub(crate) fn block_of(&self, tag: Tag, at: u32) -> (u32, u32) {
        let len = self.block_len(tag.term());
        let last = at / len;
        let back = (last % BLOCK_RESIDUES + BLOCK_RESIDUES - tag.residue()) % BLOCK_RESIDUES;
        // (A tag never names a block after `at`: saturating only guards a damaged table.)
        let block = last.saturating_sub(back);
        (block * len, (block * len).saturating_add(len - 1).min(at))
    }
}

/// A freeze: the level being made, and how many levels a key kept short is kept after its
/// block's newest.
#[derive(Clone, Copy)]
pub(crate) struct FreezeAt {
    pub(crate) level: u32,
    pub(crate) kept_for: u32,
}

impl FreezeAt {
    /// Whether the freeze keeps keys of `term` whose newest level is `newest`. (Kept for at
    /// least 2 levels, so that the level being made and the one expanded are never let go of.)
    pub(crate) fn keeps(&self, term: Term, newest: u32) -> bool {
        let kept = match term {
            Term::ForGood => return true,
            Term::Long => self.kept_for.saturating_mul(LONG_FACTOR),
            Term::Short => self.kept_for,
        };
        newest.saturating_add(kept.max(2)) >= self.level
    }
}

/// The levels (`oldest..=newest`) whose keys bear a tag among a shard's frozen keys, and how
/// many keys those are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) oldest: u32,
    pub(crate) newest: u32,
    pub(crate) keys: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One level in 16 is kept for good, the other spaced ones long, the rest short; a tag
    /// names the latest block it can, which holds the key's own level when the table spans
    /// fewer than 16 blocks, and a later one otherwise.
    #[test]
    fn terms_follow_levels_and_blocks_never_come_early() {
        let clock = Clock::new(Forgetting {
            kept_for: 8,
            keep_every: 4,
        });
        let term = |level| {
            clock.set_level(level);
            clock.tag_now().term()
        };
        assert_eq!(term(0), Term::ForGood);
        assert_eq!(term(32), Term::ForGood);
        assert_eq!(term(4), Term::Long);
        assert_eq!(term(6), Term::Short);
        assert_eq!(term(7), Term::Short);
        clock.set_keep_every(16);
        assert_eq!(term(4), Term::Short);
        clock.set_keep_every(4);
        // Short blocks span 2 levels, long ones 8.
        for level in 1..2000u32 {
            clock.set_level(level);
            let tag = clock.tag_now();
            if tag.term() == Term::ForGood {
                continue;
            }
            let len = if tag.term() == Term::Long { 8 } else { 2 };
            for at in level..level + 40 * len {
                let (oldest, newest) = clock.block_of(tag, at);
                assert!(newest <= at && oldest <= newest && newest - oldest < len);
                assert!(
                    newest >= level,
                    "level {level} frozen at {at}: {oldest}..={newest}"
                );
                if at < (level / len + 16) * len {
                    assert!(oldest <= level, "level {level} frozen at {at}");
                }
            }
        }
        assert_eq!(Tag::from_bits(Tag::COUNT as u32).term(), Term::ForGood);
        for tag in Tag::all() {
            assert_eq!(Tag::from_bits(tag.bits()), tag);
        }
        for tag in Tag::transient() {
            assert!(tag.transient_index() < Tag::TRANSIENT);
            assert_eq!(Tag::of_transient_index(tag.transient_index()), tag);
        }
    }
}
