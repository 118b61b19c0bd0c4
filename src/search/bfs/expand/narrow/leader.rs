//! The calling thread's side of the loop: it expands and ranks like the others, and at the
//! second barrier books the level and decides whether the loop goes on.

use super::cells::{Placed, EVENT_GIVE_BACK, EVENT_MATE, GO_ON, LEAVE};
use super::claims::claim_mask;
use super::step::Run;
#[cfg(test)]
use super::step::LEFTOVERS;
use super::{fixed_bytes, Book, LevelDone};
use crate::search::bfs::expand::crew::wait;
use crate::search::bfs::levels::disk::DiskError;
use crate::search::bfs::levels::level::{
    LevelEdges, LevelOutcome, LevelPositions, Link, Mate, LINK_BYTES,
};
use std::sync::atomic::Ordering;

/// How the calling thread's part ended.
pub(super) enum Ended {
    /// The level at this parity goes back to the pass.
    Handback(usize),
    Done(LevelOutcome),
    Disk(DiskError),
}

/// The calling thread's side: it expands and ranks like the helpers, and books each level
/// while they wait.
pub(super) struct Leader<'l, 'r, 'b> {
    pub(super) run: &'l Run<'r>,
    pub(super) book: &'l mut Book<'b>,
    pub(super) depth: &'l mut u32,
    pub(super) nudges: &'l dyn Fn(),
    /// The pass's nodes before this run.
    pub(super) nodes_before: u64,
    /// What [`Leader::held`] said at the last barrier.
    pub(super) held_at_barrier: usize,
    /// The width of the level being expanded (the claims table is sized from its growth).
    pub(super) expanding: usize,
}

impl Leader<'_, '_, '_> {
    pub(super) fn lead(mut self) -> Ended {
        let run = self.run;
        let ended = loop {
            run.expand(0);
            self.gather();
            if let Some(ended) = self.after_expansion() {
                break ended;
            }
            self.make_room_for_places();
            run.release(GO_ON);
            run.rank(0);
            self.gather();
            match self.after_ranking() {
                Ranked::GoOn(booking) => {
                    run.release(GO_ON);
                    // The helpers expand meanwhile (batches are taken by whoever comes).
                    if let Some(ended) = self.book_level(booking) {
                        // (Too late to leave at this barrier: at the next.)
                        run.expand(0);
                        self.gather();
                        break ended;
                    }
                }
                Ranked::End(ended) => break ended,
            }
        };
        run.release(LEAVE);
        run.free_claims(0);
        ended
    }

    /// Waits for every helper to arrive at the barrier.
    pub(super) fn gather(&self) {
        let run = self.run;
        let helpers = run.narrow.threads - 1;
        let mut spins = 0u32;
        while run.arrived.0.load(Ordering::Acquire) < helpers {
            if run.quit.load(Ordering::Relaxed) {
                panic!("a helper of the narrow levels panicked");
            }
            if spins % 1024 == 1023 {
                (self.nudges)();
            }
            wait(&mut spins);
        }
        run.arrived.0.store(0, Ordering::Relaxed);
    }

    /// Memory the loop holds besides the key set and the graph: its tables and lists (read
    /// while the helpers wait at a barrier).
    pub(super) fn held(&self) -> usize {
        let narrow = self.run.narrow;
        // SAFETY: the helpers wait at the barrier.
        let lists: usize = narrow.local.iter().map(|l| unsafe { l.get() }.bytes).sum();
        // (This level's lists and the next, about as big.)
        fixed_bytes(narrow.threads) + 2 * lists
    }

    /// At the first barrier: the level's mates, or why the loop ends here (all of it read
    /// only when a thread raised an event).
    pub(super) fn after_expansion(&mut self) -> Option<Ended> {
        let run = self.run;
        let events = run.events.0.swap(0, Ordering::Relaxed);
        if events == 0 {
            return None;
        }
        let narrow = run.narrow;
        let parity = run.parity.load(Ordering::Relaxed);
        let counting = run.cap > 1;
        // SAFETY (all the cells below): the helpers wait at the barrier; this thread alone
        // touches the loop's state until it releases them.
        let locals = || narrow.local.iter().map(|l| unsafe { l.get() });
        if let Some(abort) = locals().find_map(|l| l.abort) {
            return Some(Ended::Done(LevelOutcome::Aborted(abort)));
        }
        if events & EVENT_GIVE_BACK != 0 {
            return Some(Ended::Handback(parity));
        }
        if events & EVENT_MATE != 0 {
            // Each parent's mates come from one thread, in order: a stable sort by parent
            // gives them in the order one thread would have found them.
            let mut mates: Vec<Mate> = locals().flat_map(|l| l.mates.iter().copied()).collect();
            mates.sort_by_key(|m| m.parent);
            if !counting {
                mates.truncate(1);
                return Some(Ended::Done(LevelOutcome::Mates { mates, count: 1 }));
            }
            let count = Mate::count(&mates, run.cap);
            return Some(Ended::Done(LevelOutcome::Mates { mates, count }));
        }
        None
    }

    /// At the first barrier, the loop going on: the next level's index and first edges made
    /// as long as the level is (its copies less the stale ones), for step 2 to fill.
    pub(super) fn make_room_for_places(&mut self) {
        let run = self.run;
        let narrow = run.narrow;
        let next = run.parity.load(Ordering::Relaxed) ^ 1;
        // SAFETY (all the cells below): the helpers wait at the barrier.
        let width: usize = narrow.found[next]
            .iter()
            .map(|f| unsafe { f.get() }.len())
            .sum::<usize>()
            - narrow.marks[next]
                .iter()
                .map(|m| m.stale_count.load(Ordering::Relaxed))
                .sum::<usize>();
        let index = unsafe { narrow.index.get_mut() };
        self.expanding = index.len();
        let first = unsafe { run.first.get_mut() };
        let placed = Placed::over(index, first, width);
        *unsafe { run.placed.get_mut() } = placed;
    }

    /// At the second barrier: the new level's index (and its first edges) for the threads to
    /// go on with, or why the loop ends here. What else the level needs booking is done
    /// after the barrier ([`Leader::book_level`]).
    pub(super) fn after_ranking(&mut self) -> Ranked {
        let run = self.run;
        let narrow = run.narrow;
        let parity = run.parity.load(Ordering::Relaxed);
        let next = parity ^ 1;
        // SAFETY (all the cells below): the helpers wait at the barrier.
        let locals = || narrow.local.iter().map(|l| unsafe { l.get() });
        let seen = unsafe { run.seen.get_mut() };
        seen.grew(locals().map(|l| l.grown).sum());
        if run.short.swap(false, Ordering::Relaxed) {
            let leftover: Vec<u128> = locals().flat_map(|l| l.leftover.iter().copied()).collect();
            if let Some(ended) = self.insert_leftover(&leftover) {
                return Ranked::End(ended);
            }
        }
        let width = unsafe { narrow.index.get() }.len();
        if width == 0 {
            return Ranked::End(Ended::Done(LevelOutcome::Next {
                next: LevelPositions::default(),
                counts: Vec::new(),
                edges: LevelEdges::default(),
            }));
        }
        // The buffers `Placed` pointed into are let go of here, until the next first barrier.
        *unsafe { run.placed.get_mut() } = Placed::default();
        let first = std::mem::take(unsafe { run.first.get_mut() });
        debug_assert!(
            first.iter().all(|&l| l != Link::UNSET),
            "every place is taken"
        );
        let extra: Vec<(u32, Link, u64)> = locals().flat_map(|l| l.extra.iter().copied()).collect();
        let booking = Booking {
            edges: LevelEdges {
                first,
                extra: Vec::new(),
            },
            extra,
            width,
        };
        *self.depth += 1;
        run.parity.store(next, Ordering::Relaxed);
        let seen = unsafe { run.seen.get() };
        // The children found from here on belong to the level after the new one.
        seen.set_level(*self.depth + 1);
        // The graph as it will be once the level is in.
        let graph = self.book.graph.bytes() + booking.edges.bytes();
        self.held_at_barrier = self.held();
        let used = seen.bytes() + graph + booking.extra.len() * (LINK_BYTES + 4);
        let used = used + self.held_at_barrier;
        if width >= run.wide || used > *self.book.budget || (self.book.too_deep)(*self.depth) {
            // Booked now: the loop ends at this barrier.
            return Ranked::End(self.book_level(booking).unwrap_or(Ended::Handback(next)));
        }
        let mask = claim_mask(width, self.expanding);
        // The next level's table: its slots were all freed during this level's expansion.
        narrow.claims[next].prepare(mask);
        run.mask.store(mask, Ordering::Relaxed);
        run.next_batch.0.store(0, Ordering::Relaxed);
        let share = (self.book.budget.saturating_sub(used) / narrow.threads).min(run.key_allowance);
        run.allowance.store(share, Ordering::Relaxed);
        Ranked::GoOn(booking)
    }

    /// Inserts the keys the threads could not insert for want of memory, as the one-thread
    /// pass would: with more room if there is any (the caller's memory, then links moved to
    /// disk), else with the keys frozen, else filling the shards up (see `NextLevel::add`);
    /// why the pass must end when even that fails.
    pub(super) fn insert_leftover(&mut self, keys: &[u128]) -> Option<Ended> {
        // SAFETY: the helpers wait at the barrier.
        let seen = unsafe { self.run.seen.get_mut() };
        #[cfg(test)]
        LEFTOVERS.fetch_add(1, Ordering::Relaxed);
        let mut resorts = crate::search::bfs::room::LastResorts::default();
        for &key in keys {
            loop {
                let others = self.book.graph.bytes() + self.held();
                let budget = self.book.budget.saturating_sub(others);
                if seen.insert(key, budget, resorts.cramming).is_ok() {
                    break;
                }
                let room = crate::search::bfs::room::more_room(
                    self.book.more_memory,
                    self.book.graph,
                    self.book.disk,
                );
                match room {
                    Ok(crate::search::bfs::room::Room::Memory(extra)) => *self.book.budget += extra,
                    // Links moved to disk: the graph counts fewer bytes.
                    Ok(crate::search::bfs::room::Room::Disk(freed)) if freed > 0 => {}
                    Ok(_) if resorts.take(seen, self.run.interrupt) => {}
                    Ok(_) => return Some(Ended::Done(LevelOutcome::Memory)),
                    Err(e) => return Some(Ended::Disk(e)),
                }
            }
        }
        None
    }

    /// The rest of a level's booking: its edges into the graph, its figures out. Why the loop
    /// must end, if it must.
    pub(super) fn book_level(&mut self, booking: Booking) -> Option<Ended> {
        let Booking {
            mut edges,
            mut extra,
            width,
        } = booking;
        // By position, then in the order met: one thread's order.
        extra.sort_unstable_by_key(|&(child, _, order)| (child, order));
        edges.extra = extra.into_iter().map(|(c, l, _)| (c, l)).collect();
        if let Err(e) = self.book.graph.push(edges) {
            return Some(Ended::Disk(e));
        }
        let run = self.run;
        // SAFETY: the key set is only read until the next barrier.
        let seen = unsafe { run.seen.get() };
        let nodes = self.nodes_before
            + run
                .narrow
                .nodes
                .iter()
                .map(|n| n.0.load(Ordering::Relaxed))
                .sum::<u64>();
        let used = seen.bytes() + self.book.graph.bytes() + self.held_estimate();
        (self.book.after_level)(LevelDone {
            depth: *self.depth,
            width,
            seen,
            graph: self.book.graph,
            used,
            budget: *self.book.budget,
            nodes,
        });
        None
    }

    /// Memory the loop holds besides the key set and the graph, as of the last barrier (the
    /// lists' sizes then; they change once the threads go on).
    pub(super) fn held_estimate(&self) -> usize {
        self.held_at_barrier
    }
}

/// What the second barrier comes to.
pub(super) enum Ranked {
    /// The loop goes on; the level's booking is finished after the barrier.
    GoOn(Booking),
    End(Ended),
}

/// A level's booking, begun at the second barrier and finished after it.
pub(super) struct Booking {
    pub(super) edges: LevelEdges,
    /// Further ways in: (position, link, order).
    pub(super) extra: Vec<(u32, Link, u64)>,
    pub(super) width: usize,
}
