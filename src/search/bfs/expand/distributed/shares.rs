//! A rank's expansion of its part of a level: on one thread, or with `--threads` cut into
//! shares (runs of the level's positions) for the rank's threads; each child not known here
//! packed for its owner with its order, so that the owners need not hear them in any order.

use super::wire::{self, RankMate};
use super::{rank_of, Part, Status};
use crate::search::bfs::expand::children::{self, DeadCache, Looking, NewChild, Pipeline};
use crate::search::bfs::keys::KeySet;
use crate::search::bfs::levels::level::{Link, Mate, Parent};
use crate::search::bfs::limits::PassLimits;
use crate::search::interrupt::POLL_INTERVAL;
use parking_lot::Mutex;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;

/// The fewest positions a thread's share of a level has (narrower levels are expanded by the
/// calling thread alone; `PassTuning::parallel_batch_positions` overrides it). One rank of two
/// threads (`mpirun --bind-to none -np 1 ... --threads 2`), two runs each: 64 beat 16, 256 and
/// 1,024 on 寿限無 19447 and matched 16 on 龍の顎 12555 (5.2 s; 5.1, 5.8, 7.2) and 森茂 1461.
const SHARE_POSITIONS: usize = 64;

/// What a rank's expansion of its part came to.
pub(super) struct Expanded {
    pub status: Status,
    /// Its mates, in order (the first only, unless counting).
    pub mates: Vec<RankMate>,
    /// The children to send, by owner, after a byte for the status.
    pub outgoing: Vec<Vec<u8>>,
}

/// Expands this rank's part of the level: mates found, and the children it does not know of,
/// each for its owner. A level wide enough, with a pool, is cut into shares for its threads,
/// each a run of positions; a share's children carry their orders, so the owners need not
/// hear them in any particular order.
pub(super) fn expand_part(
    part: &Part,
    (seen, dead, pipelines): (&KeySet, &DeadCache, &Mutex<Vec<Pipeline>>),
    limits: &PassLimits,
    (me, ranks): (usize, usize),
    nodes: &mut u64,
) -> Expanded {
    let len = part.positions.len();
    // Several shares a thread, so that one slow share does not hold up the level, and none
    // smaller than the one-process pass's threads take.
    let smallest = limits
        .tuning
        .parallel_batch_positions
        .unwrap_or(SHARE_POSITIONS);
    let shares = limits.pool.map_or(1, |pool| {
        (len / smallest.max(1)).clamp(1, pool.current_num_threads() * 4)
    });
    let halt = Halt::default();
    let expand = |share: usize| {
        let mut pipeline = pipelines.lock().pop().unwrap_or_default();
        let done = expand_share(
            part,
            (share, share * len / shares..(share + 1) * len / shares),
            (seen, dead, &mut pipeline, &halt),
            limits,
            (me, ranks),
        );
        pipelines.lock().push(pipeline);
        done
    };
    let shares: Vec<Share> = match limits.pool.filter(|_| shares > 1) {
        None => vec![expand(0)],
        Some(pool) => pool.install(|| (0..shares).into_par_iter().map(expand).collect()),
    };
    let mut status = Status::Going;
    let mut mates = Vec::new();
    let mut outgoing: Vec<Vec<u8>> = Vec::new();
    for share in shares {
        *nodes += share.nodes;
        status = status.max(share.status);
        if mates.is_empty() || limits.solution_cap > 1 {
            mates.extend(share.mates);
        }
        if outgoing.is_empty() {
            outgoing = share.outgoing;
        } else {
            for (to, from) in outgoing.iter_mut().zip(&share.outgoing) {
                // (After the share's place for the status.)
                to.extend_from_slice(&from[1..]);
            }
        }
    }
    if status == Status::Going && !mates.is_empty() {
        status = Status::Mate;
    }
    Expanded {
        status,
        mates,
        outgoing,
    }
}

/// What the shares of a level tell one another as they go.
struct Halt {
    /// The first share that met a mate (`usize::MAX`: none yet).
    first_mate: AtomicUsize,
    /// A share saw the search stopped or out of time (a `Status`; 0: not).
    aborted: AtomicU8,
}

impl Default for Halt {
    fn default() -> Halt {
        Halt {
            first_mate: AtomicUsize::new(usize::MAX),
            aborted: AtomicU8::new(0),
        }
    }
}

/// A share's expansion.
struct Share {
    status: Status,
    /// Its mates, in order, as the rank orders them.
    mates: Vec<RankMate>,
    /// Its children, by owner, after a byte left for the status.
    outgoing: Vec<Vec<u8>>,
    nodes: u64,
}

/// Expands the positions `range` of this rank's part (share number `share` of the level).
fn expand_share(
    part: &Part,
    (share, range): (usize, std::ops::Range<usize>),
    (seen, dead, pipeline, halt): (&KeySet, &DeadCache, &mut Pipeline, &Halt),
    limits: &PassLimits,
    (me, ranks): (usize, usize),
) -> Share {
    let counting = limits.solution_cap > 1;
    let mut outbox = Outbox {
        seen,
        ranks,
        me,
        globals: &part.globals,
        outgoing: vec![vec![Status::Going as u8]; ranks],
        parent: u32::MAX,
        next_ordinal: 0,
        ordinal: 0,
    };
    let mut mates: Vec<Mate> = Vec::new();
    let mut status = Status::Going;
    let mut nodes = 0u64;
    let mut next_poll = POLL_INTERVAL;
    pipeline.reset();
    for index in range {
        // Counting, every share looks for mates to the end, keeping no children once a mate
        // is known anywhere; otherwise the shares after the first with a mate are not needed.
        let first_mate = halt.first_mate.load(Ordering::Relaxed);
        if (!counting && first_mate < share) || halt.aborted.load(Ordering::Relaxed) != 0 {
            break;
        }
        let (packed, checks) = part.positions.get(index);
        let parent = Parent {
            packed,
            checks,
            index: index as u32,
            paths: if counting { part.counts[index] } else { 1 },
            key: None,
        };
        nodes += pipeline.current().generate(
            parent,
            (seen, dead, &outbox),
            &mut mates,
            Looking {
                selfmate: limits.selfmate,
                rules: limits.rules,
                first_mate_only: !counting,
                mate_elsewhere: first_mate != usize::MAX,
            },
        );
        if !mates.is_empty() {
            halt.first_mate.fetch_min(share, Ordering::Relaxed);
            if !counting {
                break;
            }
        }
        if mates.is_empty() {
            let _ = pipeline.resolve_previous(dead, &mut outbox);
        }
        pipeline.advance();
        if nodes >= next_poll {
            next_poll = (nodes / POLL_INTERVAL + 1) * POLL_INTERVAL;
            if let Some(abort) = limits.interrupt.check(Instant::now()) {
                status = Status::of_abort(abort);
                halt.aborted.store(status as u8, Ordering::Relaxed);
                break;
            }
        }
    }
    if mates.is_empty() && status == Status::Going {
        let _ = pipeline.resolve_rest(dead, &mut outbox);
    }
    // (Another share's stop: 0 is `Going`, which changes nothing.)
    status = status.max(Status::of(halt.aborted.load(Ordering::Relaxed).into()));
    let mut rank_mates = Vec::with_capacity(mates.len());
    // Mates of one parent come in the order they were found: their place among the parent's.
    let mut last_parent = None;
    let mut seq = 0u32;
    for mate in &mates {
        if last_parent != Some(mate.parent) {
            last_parent = Some(mate.parent);
            seq = 0;
        }
        rank_mates.push(RankMate {
            order: wire::order_of(part.globals[mate.parent as usize], seq),
            parent: mate.parent,
            check: mate.check,
            reply: mate.reply,
            paths: mate.paths,
        });
        seq += 1;
    }
    Share {
        status,
        mates: rank_mates,
        outgoing: outbox.outgoing,
        nodes,
    }
}

/// Where a rank's children go: those it owns and has seen on earlier levels are dropped, the
/// rest are packed for their owners with their order.
struct Outbox<'a> {
    seen: &'a KeySet,
    ranks: usize,
    me: usize,
    globals: &'a [u64],
    outgoing: Vec<Vec<u8>>,
    /// The parent whose children are being resolved, and the place of the next among them.
    parent: u32,
    next_ordinal: u32,
    /// The place of the child last asked about.
    ordinal: u32,
}

impl children::ChildSink for Outbox<'_> {
    type Stop = ();

    #[inline]
    fn prefetch_frozen(&self, key: u128) {
        self.seen.prefetch_frozen(key);
    }

    #[inline]
    fn is_known(&mut self, key: u128, link: Link, _paths: u32, _frozen_apart: bool) -> bool {
        // Every child outside the dead cache is asked about first, in the order they were
        // generated: the ordinals keep the children's order within a parent.
        if link.parent != self.parent {
            self.parent = link.parent;
            self.next_ordinal = 0;
        }
        self.ordinal = self.next_ordinal;
        self.next_ordinal += 1;
        rank_of(key, self.ranks) == self.me && self.seen.contains(key)
    }

    fn add(&mut self, child: NewChild) -> Result<(), ()> {
        let owner = rank_of(child.key, self.ranks);
        let order = wire::order_of(self.globals[child.link.parent as usize], self.ordinal);
        wire::put_candidate(
            &mut self.outgoing[owner],
            (child.key, order, &child.link, child.paths),
            &child.packed,
            child.checks,
        );
        Ok(())
    }
}
