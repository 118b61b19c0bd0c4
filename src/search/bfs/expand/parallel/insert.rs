//! Phase 2 of a threaded level: each owner inserts its candidates into its own shards, in the
//! order one thread would have met them; and what it turns to when memory runs short.

use super::batches::Batches;
use super::slice::{room_in, Expanded, Inserted, NewPosition, MERGED_BYTES, MERGED_EXTRA_BYTES};
use crate::search::bfs::keys::{self, FrozenLookUp, Shard};
use crate::search::bfs::levels::level::Level;
use crate::search::bfs::room::{LastResort, LastResorts};
use crate::search::interrupt::POLL_INTERVAL;
use crate::shogi::Move;

/// How many candidates ahead an owner starts loading key-set slots.
const PREFETCH_AHEAD: usize = 8;
/// A level the threads started goes on past its allowance, once every resort is spent, by up
/// to this fraction of what they were expected to take (`Workers::level_estimate`), rather
/// than end the pass: the level was given to them on an estimate, and one thread, which needs
/// about half as much, would have finished it. (森茂 1965 at 16 MB and two threads: a level
/// in seven ran out in its last slice, 0.2 MB short; the pass then gave up at ply 1,673 and
/// deepening went on for hours.) The level's end brings the pass back within its budget.
pub(super) const OVERDRAFT_DIVISOR: usize = 4;
/// ...and by this many bytes at most: within what the process may hold beyond `USI_Hash`
/// (64 MB, docs/usi.md).
const OVERDRAFT_MOST: usize = 16 << 20;

/// What the owners turn to, in this order, when their insertion of a slice runs out of memory:
/// more from the caller; the pass's last resorts (a freeze of the keys, then filling the
/// shards further: once a slice each, see `LastResorts`); the overdraft (once a level, see
/// `OVERDRAFT_DIVISOR`); and only then giving up the pass.
pub(super) struct Resorts {
    /// The freeze and the cramming of the current slice.
    pub(super) last: LastResorts,
    /// What the level may still overdraw (0 once taken).
    overdraft: usize,
}

/// The next thing [`Resorts::next`] says to do.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Resort {
    /// Insert again with what there is (the owners done left memory, or the shards are now
    /// to be crammed).
    Again,
    /// The caller gave this many more bytes.
    More(usize),
    /// Freeze the keys, then insert again.
    Freeze,
    /// Go on past the allowance by this many bytes.
    Overdraw(usize),
    /// Nothing is left: the pass ends for memory.
    GiveUp,
}

impl Resorts {
    /// For a level whose threads were expected to take `estimate` bytes.
    pub(super) fn for_level(estimate: usize) -> Resorts {
        Resorts {
            last: LastResorts::default(),
            overdraft: (estimate / OVERDRAFT_DIVISOR).min(OVERDRAFT_MOST),
        }
    }

    /// A new slice may freeze again and starts uncrammed; the overdraft stays taken.
    pub(super) fn new_slice(&mut self) {
        self.last = LastResorts::default();
    }

    /// What to do after an insertion that stopped short, the caller having given `more` bytes
    /// (0: none) and `others_left_room` saying whether owners that finished left memory unused.
    pub(super) fn next(&mut self, more: usize, others_left_room: bool) -> Resort {
        match more {
            0 if others_left_room => Resort::Again,
            0 => match self.last.next() {
                Some(LastResort::Freeze) => Resort::Freeze,
                Some(LastResort::Cram) => Resort::Again,
                None if self.overdraft > 0 => Resort::Overdraw(std::mem::take(&mut self.overdraft)),
                None => Resort::GiveUp,
            },
            bytes => Resort::More(bytes),
        }
    }
}

/// How an owner inserts a slice's candidates.
#[derive(Clone, Copy)]
pub(super) struct Insertions {
    /// The bytes its shards may grow by.
    pub(super) allowance: usize,
    /// Whether to cram them (see `Shard::insert`).
    pub(super) cram: bool,
    /// `Done` while the set has not frozen since the slice's expansion looked the candidates
    /// up: then none is in a frozen set (a key there was known, not a candidate; the keys
    /// inserted since are in the tables), and the insertions need not look there again.
    pub(super) frozen: FrozenLookUp,
}

/// Phase 2 for one owner: inserts its candidates, batch by batch, from the share that took
/// each (`from`: the shares, which share took each batch, the batches), resuming where a
/// previous call stopped for want of memory. Returns the bytes its shards grew by.
pub(super) fn insert_owned(
    owner: usize,
    owners: usize,
    shards: &mut [&mut Shard],
    (expanded, takers, batches): (&[Expanded], &[u32], &Batches),
    level: &Level,
    memory: Insertions,
    out: &mut Inserted,
) -> usize {
    let Insertions {
        mut allowance,
        cram,
        frozen,
    } = memory;
    let start_allowance = allowance;
    let Some((first_batch, mut next)) = out.resume_at.take() else {
        return 0;
    };
    let mut since_poll = 0;
    for (batch, &share) in takers.iter().enumerate().skip(first_batch) {
        let e = &expanded[share as usize];
        let bucket = &e.buckets[owner];
        let end = batches.end_order(batch);
        let at = &mut next[share as usize];
        while let Some(c) = bucket.get(*at).filter(|c| c.order < end) {
            since_poll += 1;
            if since_poll == POLL_INTERVAL {
                since_poll = 0;
                if level.interrupt.raised() {
                    out.interrupted = true;
                    return start_allowance - allowance;
                }
            }
            // Start loading the slot a few candidates ahead (in this share: most likely the
            // ones inserted next): the look-ups are cache misses.
            if let Some(ahead) = bucket.get(*at + PREFETCH_AHEAD) {
                let place = keys::place_among_owned(keys::shard_of(ahead.key), owners);
                shards[place].prefetch_for_insert(ahead.key, frozen);
                if level.counting() {
                    out.local_index.prefetch(ahead.key);
                }
            }
            // And, halfway there, the frozen records, now that where they begin is loaded,
            // if the insertion is to look a new key up in the frozen set too.
            if let Some(nearer) = bucket
                .get(*at + PREFETCH_AHEAD / 2)
                .filter(|_| frozen == FrozenLookUp::Needed)
            {
                let place = keys::place_among_owned(keys::shard_of(nearer.key), owners);
                shards[place].prefetch_frozen(nearer.key);
            }
            // Room for what the candidate may add, taken before its key goes in: a new position
            // (and the merge's copy of it), or, counting, a further way in.
            let (new_room, extra_room) = (
                MERGED_BYTES + c.checks.1 as usize * std::mem::size_of::<Move>(),
                MERGED_EXTRA_BYTES,
            );
            if !out_has_room(out, c.checks.1 as usize, level.counting(), &mut allowance)
                || allowance < new_room + extra_room
            {
                out.resume_at = Some((batch, next));
                return start_allowance - allowance;
            }
            let shard = &mut shards[keys::place_among_owned(keys::shard_of(c.key), owners)];
            // A candidate without a position is a repeat (see `Repeats`): its first copy, with
            // the position, came before and is in the set, so it is never new. Not inserted:
            // a freeze between the two copies' slices moved the first out of the table, and
            // with `Done` the insertion would not look in the frozen set, keeping the key twice
            // (a positionless position on the next level, and a frozen set one key short of
            // its count, which failed every later freeze: 加藤徹 162a gave up at 6,300 plies).
            let inserted = if c.checks.1 == 0 {
                shard.met_again(c.key);
                Ok(false)
            } else {
                shard.insert_with(c.key, &mut allowance, cram, frozen)
            };
            match inserted {
                Err(()) => {
                    out.resume_at = Some((batch, next));
                    return start_allowance - allowance;
                }
                Ok(true) => {
                    if level.counting() {
                        out.local_index.insert(c.key, out.new.len() as u32);
                        out.level_keys.insert(c.key);
                    }
                    let (start, len) = c.checks;
                    let checks = &e.checks[start as usize..(start + len) as usize];
                    out.new.push(NewPosition {
                        order: c.order,
                        link: c.link,
                        paths: c.paths,
                        packed: c.packed,
                        checks: (out.checks.len() as u32, len),
                    });
                    out.checks.extend_from_slice(checks);
                    allowance -= new_room;
                }
                Ok(false) if level.counting() => {
                    if let Some(local) = out.local_index.get(c.key) {
                        allowance -= extra_room;
                        out.extra.push((local, c.link));
                        let paths = &mut out.new[local as usize].paths;
                        *paths = paths.saturating_add(c.paths).min(level.cap);
                    }
                }
                Ok(false) => {}
            }
            *at += 1;
        }
    }
    debug_assert!(
        next.iter()
            .zip(expanded)
            .all(|(&at, e)| at == e.buckets[owner].len()),
        "every candidate is inserted"
    );
    start_allowance - allowance
}

/// Makes room in an owner's vectors for one more new position with `checks` checks, or
/// (`counting`) a further way in, out of `allowance`; false if it does not fit.
fn out_has_room(out: &mut Inserted, checks: usize, counting: bool, allowance: &mut usize) -> bool {
    if !room_in(&mut out.new, 1, allowance) || !room_in(&mut out.checks, checks, allowance) {
        return false;
    }
    if !counting {
        return true;
    }
    if !room_in(&mut out.extra, 1, allowance) {
        return false;
    }
    // The index doubles: while its entries move, the old table and the new exist together.
    let needed = out.local_index.room_needed();
    if needed > 0 {
        if needed > *allowance {
            return false;
        }
        *allowance -= out.local_index.grow();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_insertion_short_of_memory_freezes_crams_overdraws_then_gives_up() {
        let estimate = 40 << 20;
        let quarter = estimate / OVERDRAFT_DIVISOR;
        let mut resorts = Resorts::for_level(estimate);
        // Memory from the caller comes first, and spends no resort.
        assert_eq!(resorts.next(1 << 20, false), Resort::More(1 << 20));
        // Owners done early left room: insert again before anything else.
        assert_eq!(resorts.next(0, true), Resort::Again);
        assert!(!resorts.last.froze && !resorts.last.cramming);
        assert_eq!(resorts.next(0, false), Resort::Freeze);
        assert_eq!(resorts.next(0, false), Resort::Again);
        assert!(resorts.last.froze && resorts.last.cramming);
        assert_eq!(resorts.next(0, false), Resort::Overdraw(quarter));
        assert_eq!(resorts.next(0, false), Resort::GiveUp);
        // The next slice may freeze and cram again, but the level's overdraft is spent.
        resorts.new_slice();
        assert_eq!(resorts.next(0, false), Resort::Freeze);
        assert_eq!(resorts.next(0, false), Resort::Again);
        assert_eq!(resorts.next(0, false), Resort::GiveUp);
        // A wide level's overdraft is capped.
        let mut wide = Resorts::for_level(1 << 30);
        wide.last.froze = true;
        wide.last.cramming = true;
        assert_eq!(wide.next(0, false), Resort::Overdraw(OVERDRAFT_MOST));
    }
}
