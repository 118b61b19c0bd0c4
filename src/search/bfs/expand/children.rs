//! Expanding one position of a breadth-first level: its checks, their evasions, and which of
//! the positions they lead to are new and worth keeping.
//!
//! Two steps, so that the memory look-ups of one position overlap the move generation of the
//! next: [`Expansion::generate`] finds the children and their keys and starts loading their
//! key-set and dead-cache slots; [`Expansion::resolve`], called after the next position's
//! `generate`, looks them up and plays only the new ones. Children are resolved in the order
//! they were generated, so the next level comes out in the same order either way.

use crate::search::bfs::keys::KeySet;
use crate::search::bfs::levels::level::{Link, Mate, Parent};
use crate::search::bfs::levels::places::place_of;
use crate::search::machine::prefetch_write;
use crate::search::memory::ZeroedTable;
use crate::shogi::movegen::{self, MoveList};
use crate::shogi::RuleSet;
use crate::shogi::{Move, PackedPosition, Position};
use std::sync::atomic::{AtomicU64, Ordering};

/// Keys of positions found to have no check, so that meeting one again costs a look-up rather
/// than a check generation (a long problem meets most of its dead positions several times).
/// Lossy: a newer key overwrites an older one in its slot, and a key missing here is only
/// tested again. Whether a position has a check depends on the position alone, so entries stay
/// true from one search to the next. One cache serves all the threads of a pass: each slot is
/// one atomic word, so a reader sees a whole key or none, and a lost race only loses an entry.
pub(crate) struct DeadCache {
    table: ZeroedTable<u64>,
}

impl DeadCache {
    const SLOTS: usize = 1 << 18;
    /// Memory the cache takes (one a pass, shared by its threads).
    pub(crate) const BYTES: usize = Self::SLOTS * 8;

    /// Exactly one huge page, written at once: its slots are read before they are written (why
    /// that costs: [`ZeroedTable::new_populated`]; at two threads gold_only_5 took 10 ms instead
    /// of 5). A huge page written costs one fault; a populated mapping would be 512 small pages.
    pub(crate) fn new() -> DeadCache {
        let mut table = ZeroedTable::new(Self::SLOTS).expect("a 2 MB dead-position cache");
        table.prefault();
        DeadCache { table }
    }

    #[inline]
    fn slots(&self) -> &[AtomicU64] {
        self.table.as_atomic()
    }

    #[inline]
    fn slot(key: u128) -> usize {
        (key >> 64) as usize & (Self::SLOTS - 1)
    }

    #[inline]
    pub(crate) fn contains(&self, key: u128) -> bool {
        let tag = key as u64;
        tag != 0 && self.slots()[Self::slot(key)].load(Ordering::Relaxed) == tag
    }

    #[inline]
    fn insert(&self, key: u128) {
        self.slots()[Self::slot(key)].store(key as u64, Ordering::Relaxed);
    }

    /// Starts fetching the slot of `key` for writing: about half the keys looked up are then
    /// written (dead), and a slot another thread wrote last would otherwise be fetched twice,
    /// to read and then to own, the second time holding up every store behind it
    /// (forest-06-10_97 at two threads: 0.416 -> 0.381 s).
    #[inline]
    fn prefetch(&self, key: u128) {
        prefetch_write(&self.slots()[Self::slot(key)]);
    }
}

/// Where the children of a level position go.
pub(crate) trait ChildSink {
    /// Why the level cannot go on (memory).
    type Stop;
    /// Whether the position `key` is already known (then it is not played). Counting, a known
    /// position may take `link` as another way into it. Asked about each child the dead cache
    /// does not hold, in the order the children were generated.
    /// With `frozen_apart` (what `frozen_apart` said as the position's children began to be
    /// resolved), the frozen keys are left to `is_known_after_all`.
    fn is_known(&mut self, key: u128, link: Link, paths: u32, frozen_apart: bool) -> bool;
    /// A new position with a check.
    fn add(&mut self, child: NewChild) -> Result<(), Self::Stop>;
    /// Starts loading what `is_known` will look up for `key` besides the key set and the dead
    /// cache, which `generate` loads itself: called as each child is generated, a position
    /// before it is resolved.
    #[inline]
    fn prefetch(&self, _key: u128) {}
    /// Starts loading what the key set's frozen keys will read for `key` past what
    /// `generate` loaded (see `KeySet::prefetch_frozen`): called for each of a position's
    /// children just before they are resolved, or with `frozen_apart`, for each child with a
    /// check that `is_known` passed, a little after `prefetch_frozen_start`.
    #[inline]
    fn prefetch_frozen(&self, _key: u128) {}
    /// Whether `is_known` leaves the frozen keys out (to `is_known_after_all`). A frozen look-up
    /// reads a bucket's start and then its records, two loads from a table of gigabytes; most
    /// children it is asked about are new or dead (加藤徹 162a: 1.63 known for 2.82 dead and 1
    /// new), and a dead one needs no look-up at all: a position without a check is
    /// never kept. So the frozen keys are asked only about the children found to have a check.
    #[inline]
    fn frozen_apart(&self) -> bool {
        false
    }
    /// With `frozen_apart`: starts loading where `key`'s frozen bucket begins.
    #[inline]
    fn prefetch_frozen_start(&self, _key: u128) {}
    /// Whether the frozen look-ups of a position's children may wait until two more positions
    /// have been resolved (see `Deferred`): the sink must then take `add`s and further ways
    /// in of up to three parents interleaved, each parent's in order.
    #[inline]
    fn defers_frozen(&self) -> bool {
        false
    }
    /// With `frozen_apart`, the second look at a child `is_known` passed and found to have a
    /// check: whether it is known after all (a frozen key, or a copy of a child handed to `add`
    /// since), taking `link` as `is_known` would.
    #[inline]
    fn is_known_after_all(&mut self, _key: u128, _link: Link, _paths: u32) -> bool {
        false
    }
}

/// A position reached for the first time, with a check.
pub(crate) struct NewChild<'a> {
    pub key: u128,
    pub link: Link,
    /// Ways into it so far (counting; 1 otherwise).
    pub paths: u32,
    pub packed: PackedPosition,
    /// Its checks (never empty).
    pub checks: &'a [Move],
}

/// A child with a check waiting for its frozen look-up (see `ChildSink::frozen_apart`).
struct Waiting {
    key: u128,
    link: Link,
    packed: PackedPosition,
    /// Where its checks are in `Expansion::waiting_checks`.
    checks: std::ops::Range<usize>,
}

/// One position's children waiting for their frozen look-up, and their checks.
#[derive(Default)]
struct Group {
    waiting: Vec<Waiting>,
    checks: Vec<Move>,
    /// The position's paths (see `Expansion::paths`).
    paths: u32,
}

impl Group {
    fn clear(&mut self) {
        self.waiting.clear();
        self.checks.clear();
    }

    /// Starts loading the frozen records of every child (their buckets' starts, asked for
    /// when each was found to have a check, are loaded or on their way).
    fn prefetch_records<S: ChildSink>(&self, sink: &S) {
        for child in &self.waiting {
            sink.prefetch_frozen(child.key);
        }
    }

    /// Looks each child up in the frozen keys and hands the new ones to `sink`, in order.
    fn finish<S: ChildSink>(&mut self, sink: &mut S) -> Result<(), S::Stop> {
        let mut result = Ok(());
        for child in self.waiting.drain(..) {
            if sink.is_known_after_all(child.key, child.link, self.paths) {
                continue;
            }
            if let Err(stop) = sink.add(NewChild {
                key: child.key,
                link: child.link,
                paths: self.paths,
                packed: child.packed,
                checks: &self.checks[child.checks],
            }) {
                result = Err(stop);
                break;
            }
        }
        // (`drain` left `waiting` empty, a stop included.)
        self.checks.clear();
        result
    }
}

/// The groups of children waiting for their frozen look-ups, oldest first. A frozen look-up
/// is two dependent loads from a table of gigabytes (a bucket's start, then its records);
/// finished at the end of its own position's `resolve`, the second load was asked for as soon
/// as the first arrived, and the look-up waited for it at once (加藤徹 162a's segment:
/// `FrozenKeys::contains` 4.6% of the samples, 3.0% deferred). With
/// `ChildSink::defers_frozen` the starts load while the next position is resolved, the records
/// while the one after it is, and only then is the group looked up.
#[derive(Default)]
struct Deferred {
    groups: [Group; Deferred::GROUPS],
    /// Where the oldest group is, and how many are held.
    oldest: usize,
    held: usize,
}

impl Deferred {
    const GROUPS: usize = 3;

    fn at_age(&mut self, age: usize) -> &mut Group {
        let newest = self.oldest + self.held - 1;
        &mut self.groups[(newest - age) % Self::GROUPS]
    }

    /// The group the next position's children go to (empty).
    fn next_group(&mut self) -> &mut Group {
        debug_assert!(self.held < Self::GROUPS);
        self.held += 1;
        self.at_age(0)
    }

    /// Finishes the oldest group.
    fn finish_oldest<S: ChildSink>(&mut self, sink: &mut S) -> Result<(), S::Stop> {
        let group = &mut self.groups[self.oldest % Self::GROUPS];
        self.oldest = (self.oldest + 1) % Self::GROUPS;
        self.held -= 1;
        let result = group.finish(sink);
        group.clear();
        result
    }

    /// What follows a position's `resolve` (its group the newest): the group before it gets
    /// its records loaded and the one before that is finished; or, without deferring, the
    /// position's own group both.
    fn advance<S: ChildSink>(&mut self, sink: &mut S) -> Result<(), S::Stop> {
        if self.held == 1 && self.at_age(0).waiting.is_empty() {
            // (Nothing waits: no keys are frozen, or none of the position's children had to
            // be looked up there.)
            self.held = 0;
            return Ok(());
        }
        if !sink.defers_frozen() {
            self.at_age(0).prefetch_records(sink);
            return self.finish_oldest(sink);
        }
        if self.held >= 2 {
            self.at_age(1).prefetch_records(sink);
        }
        if self.held == Self::GROUPS {
            return self.finish_oldest(sink);
        }
        Ok(())
    }

    /// Finishes every group, oldest first.
    fn flush<S: ChildSink>(&mut self, sink: &mut S) -> Result<(), S::Stop> {
        for age in 0..self.held {
            self.at_age(age).prefetch_records(sink);
        }
        while self.held > 0 {
            self.finish_oldest(sink)?;
        }
        Ok(())
    }

    fn clear(&mut self) {
        for group in &mut self.groups {
            group.clear();
        }
        self.oldest = 0;
        self.held = 0;
    }
}

/// An evasion after a check, their places in the lists they came from (see `Link`), and the
/// key of the position it leads to.
#[derive(Clone, Copy)]
struct Child {
    check: Move,
    evasion: Move,
    check_place: u16,
    evasion_place: u16,
    key: u128,
}

/// What [`Expansion::generate`] looks for besides the children.
#[derive(Clone, Copy)]
pub(crate) struct Looking {
    /// HS#: a defender's reply that mates the attacker ends a line, and a check that mates the
    /// defender is a dead end (H#: such a check ends a line).
    pub selfmate: bool,
    /// The rules moves follow.
    pub rules: RuleSet,
    /// Stop at the first mate.
    pub first_mate_only: bool,
    /// Another thread found a mate on this level: keep no children.
    pub mate_elsewhere: bool,
}

/// One level position being expanded.
pub(crate) struct Expansion {
    pos: Position,
    index: u32,
    paths: u32,
    children: Vec<Child>,
    evasions: MoveList,
    scratch: MoveList,
    /// The rules of the last `generate`, which `resolve` follows too.
    rules: RuleSet,
}

impl Expansion {
    pub(crate) fn new() -> Expansion {
        Expansion {
            pos: Position::empty(),
            index: 0,
            paths: 0,
            children: Vec::with_capacity(movegen::MAX_MOVES),
            evasions: MoveList::new(),
            scratch: MoveList::new(),
            rules: RuleSet::PLAIN,
        }
    }

    /// Unpacks `parent` and finds its children. A mate (H#: a check without an evasion; HS#:
    /// an evasion that checkmates the attacker) goes to `mates`, and with `first_mate_only`
    /// nothing more is looked at. Once `mates` holds any, or with `mate_elsewhere`, this is the
    /// mate level and no children are kept. Each child's slots in the key set, the dead cache
    /// and whatever else `sink` will look up start loading here, once all are found. Returns
    /// the moves generated (nodes).
    pub(crate) fn generate<S: ChildSink>(
        &mut self,
        parent: Parent,
        (seen, dead, sink): (&KeySet, &DeadCache, &S),
        mates: &mut Vec<Mate>,
        looking: Looking,
    ) -> u64 {
        let Looking {
            selfmate,
            rules,
            first_mate_only,
            mate_elsewhere,
        } = looking;
        self.rules = rules;
        // (Children of the mate level are never resolved.)
        self.children.clear();
        let Parent {
            packed,
            checks,
            index,
            paths,
            key,
        } = parent;
        self.index = index;
        self.paths = paths;
        let pos = &mut self.pos;
        rules.adopt(pos);
        match key {
            Some(key) => pos.unpack_with_key(packed, key),
            None => pos.unpack_from(packed),
        }
        let frozen_apart = sink.frozen_apart();
        let mut nodes = 0;
        for (check_place, &check) in checks.iter().enumerate() {
            pos.do_move(check);
            nodes += 1;
            self.evasions.clear();
            rules.evasions(pos, &mut self.evasions);
            if self.evasions.is_empty() {
                // (In HS# the attacker has mated the defender: a dead end.)
                if !selfmate {
                    mates.push(Mate {
                        parent: index,
                        check,
                        reply: None,
                        paths,
                    });
                    if first_mate_only {
                        pos.undo_move(check);
                        self.children.clear();
                        return nodes;
                    }
                }
                pos.undo_move(check);
                continue;
            }
            if selfmate {
                for &reply in self.evasions.iter() {
                    if rules.gives_check(pos, reply) {
                        pos.do_move(reply);
                        self.scratch.clear();
                        rules.evasions(pos, &mut self.scratch);
                        pos.undo_move(reply);
                        if self.scratch.is_empty() {
                            mates.push(Mate {
                                parent: index,
                                check,
                                reply: Some(reply),
                                paths,
                            });
                            if first_mate_only {
                                pos.undo_move(check);
                                self.children.clear();
                                return nodes;
                            }
                        }
                    }
                }
            }
            if mates.is_empty() && !mate_elsewhere {
                nodes += self.evasions.len() as u64;
                for (evasion_place, &evasion) in self.evasions.iter().enumerate() {
                    let key = pos.key_after(evasion);
                    self.children.push(Child {
                        check,
                        evasion,
                        check_place: place_of(check_place),
                        evasion_place: place_of(evasion_place),
                        key,
                    });
                }
            }
            pos.undo_move(check);
        }
        // The loads start together, once every child is found: started as each child was
        // found, each waited on its own (a load of a table without huge pages walks the page
        // tables first, and the core stalls behind it), the next one's wait coming after the
        // generation in between; together their waits overlap (12555 at one thread 5.91 ->
        // 5.66 s, at two 2.96 -> 2.89 s).
        for child in &self.children {
            let key = child.key;
            if frozen_apart {
                seen.prefetch_table(key);
            } else {
                seen.prefetch(key);
            }
            dead.prefetch(key);
            sink.prefetch(key);
        }
        nodes
    }

    /// Sorts out the children found by the last `generate`: known ones and dead ones are
    /// dropped, the others are played and handed to `sink` in the order they were found (with
    /// `frozen_apart`, those with a check go to `group`, to be looked up in the frozen keys
    /// and handed on later, see `Deferred`).
    fn resolve<S: ChildSink>(
        &mut self,
        dead: &DeadCache,
        sink: &mut S,
        group: &mut Group,
    ) -> Result<(), S::Stop> {
        let pos = &mut self.pos;
        let mut played: Option<Move> = None;
        let mut result = Ok(());
        let frozen_apart = sink.frozen_apart();
        if !frozen_apart {
            for child in &self.children {
                sink.prefetch_frozen(child.key);
            }
        }
        for child in self.children.drain(..) {
            let link = Link {
                parent: self.index,
                check_place: child.check_place,
                evasion_place: child.evasion_place,
            };
            // The dead cache first: its slot was loaded with the bucket's, a position ago, from
            // one huge page (no page walk), and a dead position is never kept, so the key
            // set's bucket (often a page walk and a miss) is not needed for it (12555 at one
            // thread: the key set's look-up 6.6% -> 5.4% of the samples). Sinks that number
            // children see the others in the same order.
            if dead.contains(child.key) || sink.is_known(child.key, link, self.paths, frozen_apart)
            {
                continue;
            }
            if played != Some(child.check) {
                if let Some(check) = played {
                    pos.undo_move(check);
                }
                pos.do_move(child.check);
                played = Some(child.check);
            }
            pos.do_move(child.evasion);
            // A position without a check leads nowhere: it is not kept, and met again it is
            // tested again (or found in the dead cache).
            self.scratch.clear();
            self.rules.checks(pos, &mut self.scratch);
            if self.scratch.is_empty() {
                dead.insert(child.key);
            } else if frozen_apart {
                sink.prefetch_frozen_start(child.key);
                group.paths = self.paths;
                let start = group.checks.len();
                group.checks.extend_from_slice(&self.scratch);
                group.waiting.push(Waiting {
                    key: child.key,
                    link,
                    packed: pos.pack(),
                    checks: start..group.checks.len(),
                });
            } else if let Err(stop) = sink.add(NewChild {
                key: child.key,
                link,
                paths: self.paths,
                packed: pos.pack(),
                checks: &self.scratch,
            }) {
                result = Err(stop);
                pos.undo_move(child.evasion);
                break;
            }
            pos.undo_move(child.evasion);
        }
        if let Some(check) = played {
            pos.undo_move(check);
        }
        self.children.clear();
        result
    }
}

/// Two expansions taken in turn: the one whose children are being generated and the one whose
/// children are being resolved. They swap roles by index, not by moving them: each holds a
/// position and move lists, kilobytes to copy (the copies were 4.7% of a long solve). One is
/// kept for a whole pass (a thread's for all its shares): made anew each level, its lists were
/// allocated and initialised again some ten thousand times on a long problem of narrow levels.
pub(crate) struct Pipeline {
    slots: [Expansion; 2],
    turn: usize,
    deferred: Deferred,
}

impl Pipeline {
    pub(crate) fn new() -> Pipeline {
        Pipeline {
            slots: [Expansion::new(), Expansion::new()],
            turn: 0,
            deferred: Deferred::default(),
        }
    }

    /// Resolves the expansion generated before the current one (see [`Expansion::resolve`]),
    /// and hands on what waited for the frozen keys as far as `sink` lets it wait.
    pub(crate) fn resolve_previous<S: ChildSink>(
        &mut self,
        dead: &DeadCache,
        sink: &mut S,
    ) -> Result<(), S::Stop> {
        let expansion = &mut self.slots[self.turn ^ 1];
        if self.deferred.held == 0 && !sink.frozen_apart() {
            // No child goes to the frozen keys (none are frozen), and none waits.
            return expansion.resolve(dead, sink, &mut self.deferred.groups[0]);
        }
        let group = self.deferred.next_group();
        expansion.resolve(dead, sink, group)?;
        self.deferred.advance(sink)
    }

    /// [`Pipeline::resolve_previous`], then every child still waiting handed on: where a
    /// run of positions ends (a level's, or a batch's, whose candidates must all be in before
    /// the next batch's).
    pub(crate) fn resolve_rest<S: ChildSink>(
        &mut self,
        dead: &DeadCache,
        sink: &mut S,
    ) -> Result<(), S::Stop> {
        self.resolve_previous(dead, sink)?;
        self.deferred.flush(sink)
    }

    /// The expansion to generate into now.
    pub(crate) fn current(&mut self) -> &mut Expansion {
        &mut self.slots[self.turn]
    }

    /// The current expansion becomes the previous one.
    pub(crate) fn advance(&mut self) {
        self.turn ^= 1;
    }

    /// Ready for a new level, keeping its room: no children left from the last one.
    pub(crate) fn reset(&mut self) {
        for expansion in &mut self.slots {
            expansion.children.clear();
        }
        self.deferred.clear();
        self.turn = 0;
    }
}

impl Default for Pipeline {
    fn default() -> Pipeline {
        Pipeline::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dead_cache_forgets_but_never_invents() {
        let cache = DeadCache::new();
        let a = 0x1234_5678_9abc_def0_0fed_cba9_8765_4321u128;
        assert!(!cache.contains(a));
        cache.insert(a);
        assert!(cache.contains(a));
        // Same slot (same high bits), other low bits: it takes the slot, `a` is forgotten.
        let b = a ^ 1;
        assert!(!cache.contains(b));
        cache.insert(b);
        assert!(cache.contains(b) && !cache.contains(a));
        // A key whose low 64 bits are zero is never reported (zero marks an empty slot).
        let zero_low = a & !(u64::MAX as u128);
        cache.insert(zero_low);
        assert!(!cache.contains(zero_low));
    }
}
