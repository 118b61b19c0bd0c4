//! Step 1's sink: new positions claimed and kept in the thread's list.

use super::cells::EVENT_GIVE_BACK;
use super::claims::{claim_parts, claim_word, Claims};
use super::lists::{Found, Later, Marks};
use super::{ORDER_SHIFT, THREAD_ENTRIES};
use crate::search::bfs::expand::children::{ChildSink, NewChild};
use crate::search::bfs::keys::{self, KeySet};
use crate::search::bfs::levels::level::Link;
use std::sync::atomic::{AtomicU8, Ordering};

/// Step 1's sink: new positions claimed and kept in the thread's list.
pub(super) struct Sink<'s> {
    pub(super) seen: &'s KeySet,
    pub(super) claims: &'s Claims,
    pub(super) mask: usize,
    pub(super) found: &'s mut Found,
    /// The next level's marks, every thread's.
    pub(super) marks: &'s [Marks],
    pub(super) later: &'s mut Vec<Later>,
    pub(super) taken: &'s mut Vec<u32>,
    pub(super) claims_limit: usize,
    pub(super) events: &'s AtomicU8,
    pub(super) thread: usize,
    pub(super) threads: usize,
    pub(super) counting: bool,
    /// The parent whose children are coming in, and how many of them have been numbered.
    pub(super) parent: u32,
    pub(super) number: u64,
    /// The order of the child being looked at.
    pub(super) order: u64,
}

impl Sink<'_> {
    pub(super) fn raise(&self, event: u8) {
        self.events.fetch_or(event, Ordering::Relaxed);
    }

    /// A copy that is not the first of its key: counting, a further way in.
    pub(super) fn later(&mut self, key: u128, link: Link, paths: u32) {
        if self.counting {
            self.later.push(Later {
                key,
                order: self.order,
                link,
                paths,
            });
        }
    }
}

impl ChildSink for Sink<'_> {
    type Stop = std::convert::Infallible;

    #[inline]
    fn prefetch_frozen(&self, key: u128) {
        self.seen.prefetch_frozen(key);
    }

    /// The claims slot: last written on the other CPU, it was looked up cold (寿限無 19447 at
    /// two threads: `Claims::lookup` 3.3% of the samples, nearly all on the slot's load, and
    /// 0.8% with the slot loaded ahead).
    #[inline]
    fn prefetch(&self, key: u128) {
        self.claims.prefetch(key, self.mask);
    }

    #[inline]
    fn is_known(&mut self, key: u128, link: Link, paths: u32, _frozen_apart: bool) -> bool {
        if self.seen.contains(key) {
            return true;
        }
        if link.parent != self.parent {
            self.parent = link.parent;
            self.number = 0;
        }
        self.order = u64::from(link.parent) << ORDER_SHIFT | self.number;
        self.number += 1;
        let claim = self.claims.lookup(key, self.mask);
        if claim != 0 && claim_parts(claim).0 < self.order {
            self.later(key, link, paths);
            return true;
        }
        false
    }

    #[inline]
    fn add(&mut self, child: NewChild) -> Result<(), Self::Stop> {
        // A level given back is expanded again the usual way: nothing more to claim here.
        if self.events.load(Ordering::Relaxed) & EVENT_GIVE_BACK != 0 {
            return Ok(());
        }
        let entry = self.found.len();
        // A level too wide for the tables goes back to the pass, to be expanded again.
        if entry >= THREAD_ENTRIES {
            self.raise(EVENT_GIVE_BACK);
            return Ok(());
        }
        let Some((slot, took)) = self.claims.slot(child.key, self.mask) else {
            self.raise(EVENT_GIVE_BACK);
            return Ok(());
        };
        if took {
            self.taken.push(slot as u32);
            if self.taken.len() > self.claims_limit {
                self.raise(EVENT_GIVE_BACK);
            }
        }
        match self
            .claims
            .claim(slot, claim_word(self.order, self.thread, entry))
        {
            Ok(displaced) => {
                if displaced != 0 {
                    let (_, holder, their) = claim_parts(displaced);
                    self.marks[holder].mark_stale(their);
                }
                let found = &mut *self.found;
                found.positions.push(child.packed, child.checks);
                found.orders.push(self.order);
                found.keys.push(child.key);
                found.owners[keys::owner_of_key(child.key, self.threads)].push(entry as u16);
                found.links.push(child.link);
                found.paths.push(child.paths);
                found.prefetch_tails();
            }
            Err(()) => self.later(child.key, child.link, child.paths),
        }
        Ok(())
    }
}
