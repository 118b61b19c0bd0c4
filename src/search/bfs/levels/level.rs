//! What a breadth-first level is: its positions (packed, each with its checks), how each was
//! reached (a link to its parent), the edges into the next level, and what expanding it came to.

use crate::search::interrupt::{Abort, Interrupt};
use crate::shogi::movegen::MoveList;
use crate::shogi::RuleSet;
use crate::shogi::{Move, PackedPosition, Position};

/// How a position of level `k + 1` was reached from level `k`: its parent, and the places of
/// the check and the evasion played in the lists the rules generate for them (the parent's
/// checks, as the level keeps them; that check's evasions), not the moves themselves. Those
/// lists come out the same for the same position and rules however it was reached, so the
/// places name the moves again when a line is played from the root (`places.rs`); a place
/// most often fits a byte, so a packed level keeps two bytes where the moves took four.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Link {
    pub(crate) parent: u32,
    pub(crate) check_place: u16,
    pub(crate) evasion_place: u16,
}

impl Link {
    /// A slot's filler until its link is written (no parent has this index).
    pub(crate) const UNSET: Link = Link {
        parent: u32::MAX,
        check_place: 0,
        evasion_place: 0,
    };
}

pub(crate) const LINK_BYTES: usize = std::mem::size_of::<Link>();

pub(crate) const PACKED_BYTES: usize = std::mem::size_of::<PackedPosition>();

/// The positions of a level, each with its checks (found when the position was reached, to
/// tell whether it had any: kept, so that expanding it does not generate them again).
#[derive(Default)]
pub(crate) struct LevelPositions {
    pub(crate) packed: Vec<PackedPosition>,
    /// Every position's checks, one after the other.
    pub(crate) checks: Vec<Move>,
    /// Where each position's checks end in `checks`.
    pub(crate) ends: Vec<u32>,
}

impl LevelPositions {
    pub(crate) fn root(root: &Position, rules: RuleSet) -> LevelPositions {
        let mut level = LevelPositions::default();
        let mut checks = MoveList::new();
        rules.checks(root, &mut checks);
        level.push(root.pack(), &checks);
        level
    }

    pub(crate) fn len(&self) -> usize {
        self.packed.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }

    #[inline]
    pub(crate) fn push(&mut self, packed: PackedPosition, checks: &[Move]) {
        self.packed.push(packed);
        self.checks.extend_from_slice(checks);
        self.ends.push(self.checks.len() as u32);
    }

    /// Starts owning the lines the next positions go to (see [`prefetch_tail`]).
    #[inline]
    pub(crate) fn prefetch_tails(&self) {
        prefetch_tail(&self.packed, TAIL_AHEAD);
        prefetch_tail(&self.checks, TAIL_AHEAD);
        prefetch_tail(&self.ends, TAIL_AHEAD);
    }

    /// Starts loading positions `range` and their checks: a thread expanding a batch of them
    /// mostly reads lines that another thread wrote last (the merge, or its insertion), each a
    /// round trip between CPUs if taken one by one as the expansion comes to them.
    pub(crate) fn prefetch(&self, range: std::ops::Range<usize>) {
        if range.is_empty() {
            return;
        }
        prefetch_lines(&self.packed[range.clone()]);
        let start = if range.start == 0 {
            0
        } else {
            self.ends[range.start - 1]
        };
        let end = self.ends[range.end - 1];
        prefetch_lines(&self.checks[start as usize..end as usize]);
        prefetch_lines(&self.ends[range]);
    }

    /// Starts loading position `index` (both lines a record may straddle) and its checks, a
    /// few positions before it is expanded: one thread walks a level in order, and each
    /// parent's first read otherwise waited on memory (森茂 1461 at one thread: a fifth of
    /// `unpack_from`'s samples on its first load).
    #[inline]
    pub(crate) fn prefetch_one(&self, index: usize) {
        let (Some(packed), Some(&end)) = (self.packed.get(index), self.ends.get(index)) else {
            return;
        };
        let first = packed as *const PackedPosition as *const u8;
        crate::search::machine::prefetch_at(first);
        crate::search::machine::prefetch_at(first.wrapping_add(PACKED_BYTES - 1));
        if let Some(last) = (end as usize).checked_sub(1) {
            crate::search::machine::prefetch_at(self.checks.as_ptr().wrapping_add(last));
        }
    }

    /// Position `index` and its checks.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> (&PackedPosition, &[Move]) {
        let start = if index == 0 { 0 } else { self.ends[index - 1] };
        let end = self.ends[index];
        (
            &self.packed[index],
            &self.checks[start as usize..end as usize],
        )
    }

    /// Memory held, counting spare capacity.
    pub(crate) fn bytes(&self) -> usize {
        self.packed.capacity() * PACKED_BYTES
            + self.checks.capacity() * 2
            + self.ends.capacity() * 4
    }

    /// Writes the positions, their checks and `counts` (one a position, or none), little-endian.
    pub(crate) fn write_to(
        &self,
        counts: &[u32],
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let u64s = |out: &mut dyn std::io::Write, words: &[u64]| {
            words
                .iter()
                .try_for_each(|w| out.write_all(&w.to_le_bytes()))
        };
        u64s(
            out,
            &[
                self.len() as u64,
                self.checks.len() as u64,
                counts.len() as u64,
            ],
        )?;
        for packed in &self.packed {
            u64s(out, &packed.to_words())?;
        }
        for check in &self.checks {
            out.write_all(&check.raw().to_le_bytes())?;
        }
        for value in self.ends.iter().chain(counts) {
            out.write_all(&value.to_le_bytes())?;
        }
        Ok(())
    }

    /// The positions and counts [`Self::write_to`] wrote.
    pub(crate) fn read_from(
        input: &mut dyn std::io::Read,
    ) -> std::io::Result<(LevelPositions, Vec<u32>)> {
        fn u64_from(input: &mut dyn std::io::Read) -> std::io::Result<u64> {
            let mut bytes = [0u8; 8];
            input.read_exact(&mut bytes)?;
            Ok(u64::from_le_bytes(bytes))
        }
        fn u32_from(input: &mut dyn std::io::Read) -> std::io::Result<u32> {
            let mut bytes = [0u8; 4];
            input.read_exact(&mut bytes)?;
            Ok(u32::from_le_bytes(bytes))
        }
        let too_many = || std::io::Error::other("a level's sizes are out of range");
        let mut size = || -> std::io::Result<usize> {
            usize::try_from(u64_from(input)?).map_err(|_| too_many())
        };
        let (len, checks, counted) = (size()?, size()?, size()?);
        if len > u32::MAX as usize || checks > u32::MAX as usize || (counted != 0 && counted != len)
        {
            return Err(too_many());
        }
        let mut level = LevelPositions::default();
        for _ in 0..len {
            let mut words = [0u64; 6];
            for word in &mut words {
                *word = u64_from(input)?;
            }
            // (Written by an older build, a record may not say whether its side to move is in
            // check: unpacking then looks.)
            level
                .packed
                .push(PackedPosition::from_words(words).may_be_in_check());
        }
        for _ in 0..checks {
            let mut bytes = [0u8; 2];
            input.read_exact(&mut bytes)?;
            level.checks.push(Move::from_raw(u16::from_le_bytes(bytes)));
        }
        for _ in 0..len {
            level.ends.push(u32_from(input)?);
        }
        let ordered = level.ends.windows(2).all(|w| w[0] <= w[1]);
        if !ordered || level.ends.last().is_some_and(|&e| e as usize != checks) {
            return Err(std::io::Error::other("a level's checks do not add up"));
        }
        let counts = (0..counted)
            .map(|_| u32_from(input))
            .collect::<Result<_, _>>()?;
        Ok((level, counts))
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.packed.shrink_to_fit();
        self.checks.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

/// A mating line's last moves, found on a level: the parent's index, its check and, in HS#,
/// the defender's mating reply; with the number of paths into the parent (counting).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mate {
    pub parent: u32,
    pub check: Move,
    pub reply: Option<Move>,
    pub paths: u32,
}

impl Mate {
    /// The paths into `mates`, capped at `cap`.
    pub(crate) fn count(mates: &[Mate], cap: u32) -> u32 {
        mates
            .iter()
            .fold(0u32, |c, m| c.saturating_add(m.paths).min(cap))
    }
}

/// What one level came to.
pub(crate) enum LevelOutcome {
    /// Mates on this level, in order, and the number of paths into them (capped).
    Mates {
        mates: Vec<Mate>,
        count: u32,
    },
    /// The next level, its path counts (counting only) and the edges into it.
    Next {
        next: LevelPositions,
        counts: Vec<u32>,
        edges: LevelEdges,
    },
    Aborted(Abort),
    /// The key set could not grow within the budget.
    Memory,
}

/// The level being expanded.
pub(crate) struct Level<'a> {
    pub positions: &'a LevelPositions,
    /// Positions the threads expand before their candidates are inserted (see
    /// [`SLICE_POSITIONS`]).
    pub slice: usize,
    /// Positions in each batch a thread takes of a slice (None: sized to the slice).
    pub batch: Option<usize>,
    /// Paths into each position (counting only).
    pub counts: &'a [u32],
    pub cap: u32,
    /// HS#: a defender's reply that mates the attacker ends a line (H#: a check that mates).
    pub selfmate: bool,
    /// The rules moves follow.
    pub rules: RuleSet,
    pub interrupt: Interrupt<'a>,
    /// Bytes held besides the key set and what this level adds: the links of earlier levels,
    /// this level's positions and counts.
    pub held: usize,
}

impl Level<'_> {
    pub(crate) fn counting(&self) -> bool {
        self.cap > 1
    }

    /// Position `index`, for expanding.
    #[inline]
    pub(crate) fn parent(&self, index: usize) -> Parent<'_> {
        let (packed, checks) = self.positions.get(index);
        Parent {
            packed,
            checks,
            index: index as u32,
            paths: if self.counting() {
                self.counts[index]
            } else {
                1
            },
            key: None,
        }
    }
}

/// Starts loading the cache lines of `items` (one look-up hint a line).
pub(crate) fn prefetch_lines<T>(items: &[T]) {
    let step = (64 / std::mem::size_of::<T>().max(1)).max(1);
    items
        .iter()
        .step_by(step)
        .for_each(crate::search::machine::prefetch);
}

/// Starts owning the line `ahead` bytes past the end of `items` (written as it grows): where
/// another thread read the vector last, each new line is otherwise taken back from its CPU only
/// when a store reaches it, and the stores behind that one wait (stores complete in order). A
/// hint: past the allocation it loads nothing of use, and costs nothing else.
#[inline]
pub(crate) fn prefetch_tail<T>(items: &[T], ahead: usize) {
    let end = items.as_ptr_range().end as *const u8;
    crate::search::machine::prefetch_write(end.wrapping_add(ahead));
}

/// How far ahead a list filled one entry at a time starts owning its next lines: the line
/// after the one being written.
pub(crate) const TAIL_AHEAD: usize = 64;

/// A word on a cache line of its own: words every thread writes (a barrier's, a shared
/// counter) would otherwise slow down the reads of whatever shares their line. 128 bytes: the
/// line and the one the CPU fetches with it.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Line<T>(pub T);

/// The edges from one level into the next: the first way into each new position (indexed like
/// the next level) and, when counting, every further way into one of them.
#[derive(Default)]
pub(crate) struct LevelEdges {
    pub(crate) first: Vec<Link>,
    pub(crate) extra: Vec<(u32, Link)>,
}

impl LevelEdges {
    /// Memory held, counting spare capacity.
    pub(crate) fn bytes(&self) -> usize {
        self.first.capacity() * LINK_BYTES + self.extra.capacity() * (LINK_BYTES + 4)
    }
}

/// A position of the level, as `generate` takes it.
pub(crate) struct Parent<'a> {
    pub packed: &'a PackedPosition,
    /// Its checks.
    pub checks: &'a [Move],
    /// Its index in the level.
    pub index: u32,
    /// Ways into it (counting; 1 otherwise).
    pub paths: u32,
    /// Its key, where the level keeps its positions' keys (spares unpacking the Zobrist sum).
    pub key: Option<u128>,
}
