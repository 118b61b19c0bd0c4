//! The narrow levels of the breadth-first pass, with the calling thread and its crew running
//! the level loop together.
//!
//! A long problem of narrow levels (寿限無 19447: 9,700 levels of about a hundred positions)
//! pays for every hand-off between threads: in `parallel/` a level is two fork-joins (the
//! expansion, the insertion) and a merge on the calling thread, and a helper that went back to
//! the pool between them has to be woken. Here the threads stay in one loop and meet twice a
//! level, at a barrier:
//!
//! 1. **Expand** (every thread, taking batches of the level from a shared counter): as in
//!    `parallel/`, the key set is only read; a new position of the next level is *claimed*
//!    in a small table of the level's keys that all the threads share ([`Claims`]). A claim
//!    keeps the least order a copy of the key was met with (where one thread would have met
//!    it: by parent, then child) and where that copy sits. A thread that finds a lower order
//!    there drops its copy (counting: a further way in, resolved in step 2); one that lowers a
//!    claim marks the copy it displaced as stale.
//! 2. **Rank** (after the first barrier, every thread its own copies): a new position's place
//!    in the next level is the number of live copies, of all the threads, with a lower order;
//!    each thread writes its copies into the next level's index at their places (made as long
//!    as the level at the barrier), inserts the keys of its own shards, from every thread's
//!    copies, into the key set, and resolves its further ways in.
//! 3. At the second barrier the calling thread decides whether the loop goes on, and books the
//!    level (its edges, its figures, the memory) while the others start on the next.
//!
//! The levels, their edges and their counts are exactly one thread's, in its order; only the
//! positions stay in the list of the thread that found them, each with its place. A level that
//! outgrows the claims table or a thread's list is given back and expanded the usual way, as is
//! a level too wide for this loop or one that needs memory the loop cannot make (nothing of it
//! has been written to the key set then).

mod cells;
mod claims;
mod leader;
mod lists;
mod sink;
mod step;
#[cfg(test)]
mod tests;

use crate::search::bfs::expand::children::DeadCache;
use crate::search::bfs::expand::crew::Beside;
use crate::search::bfs::keys::KeySet;
use crate::search::bfs::levels::disk::DiskError;
use crate::search::bfs::levels::graph::LevelGraph;
use crate::search::bfs::levels::level::{LevelOutcome, LevelPositions, Line};
use crate::search::interrupt::Interrupt;
use crate::shogi::RuleSet;
use cells::{PhasedCell, Placed, Shards, GO_ON};
use claims::{claim_mask, Claims, CLAIM_SLOTS};
use leader::{Ended, Leader};
use lists::{Found, Local, Marks};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use step::Run;

/// The most copies one thread may keep on a level (a claim numbers them in 16 bits).
const THREAD_ENTRIES: usize = 1 << 16;

/// The widest level the loop can start from (it goes into one thread's list).
pub(crate) const MAX_FIRST_WIDTH: usize = THREAD_ENTRIES;

/// A copy's order: its parent's place in the level, then its number among that parent's
/// children (as in `parallel/`).
const ORDER_SHIFT: u32 = 24;

/// Memory of the loop's tables for `threads` threads, besides its lists: two claims tables
/// and the marks on the lists.
pub(crate) fn fixed_bytes(threads: usize) -> usize {
    2 * CLAIM_SLOTS * 16 + 2 * threads * THREAD_ENTRIES * 8
}

/// What the loop keeps from one run to the next: its lists and tables, for `threads` threads.
pub(crate) struct Narrow {
    threads: usize,
    /// Each level parity's lists, one a thread, with their marks.
    found: [Vec<PhasedCell<Found>>; 2],
    marks: [Vec<Marks>; 2],
    claims: [Claims; 2],
    local: Vec<PhasedCell<Local>>,
    /// The level being expanded, in its order: each position's thread (high 16 bits) and
    /// entry in that thread's list.
    index: PhasedCell<Vec<u32>>,
    /// Each thread's nodes in this run, on a line of its own (read for progress reports).
    nodes: Vec<Line<AtomicU64>>,
}

impl Narrow {
    /// The loop's lists and tables for `threads` threads (`None` if the memory is not to be
    /// had).
    pub(crate) fn new(threads: usize) -> Option<Narrow> {
        assert!((2..=256).contains(&threads));
        let lists = || {
            (0..threads)
                .map(|_| PhasedCell::new(Found::new(threads)))
                .collect()
        };
        let marks = || {
            (0..threads)
                .map(|_| Marks::new())
                .collect::<Option<Vec<_>>>()
        };
        Some(Narrow {
            threads,
            found: [lists(), lists()],
            marks: [marks()?, marks()?],
            claims: [Claims::new()?, Claims::new()?],
            local: (0..threads)
                .map(|_| PhasedCell::new(Local::new()))
                .collect(),
            index: PhasedCell::new(Vec::new()),
            nodes: (0..threads).map(|_| Line::default()).collect(),
        })
    }

    pub(crate) fn threads(&self) -> usize {
        self.threads
    }
}

/// The level the pass is at, as the loop takes it and gives it back.
pub(crate) struct At<'a> {
    pub depth: &'a mut u32,
    pub level: &'a mut LevelPositions,
    pub counts: &'a mut Vec<u32>,
}

/// The rest of the pass, for the calling thread to book each level with.
pub(crate) struct Book<'a> {
    pub graph: &'a mut LevelGraph,
    pub budget: &'a mut usize,
    pub more_memory: &'a mut dyn FnMut() -> usize,
    /// Where links may go when memory runs short.
    pub disk: &'a crate::search::bfs::levels::disk::DiskBudget,
    pub nodes: &'a mut u64,
    /// Called after each level made here.
    pub after_level: &'a mut dyn FnMut(LevelDone),
    /// Whether a level at this depth is too deep to expand.
    pub too_deep: &'a dyn Fn(u32) -> bool,
}

/// A level the loop has made, for the pass's figures.
pub(crate) struct LevelDone<'a> {
    pub depth: u32,
    pub width: usize,
    pub seen: &'a KeySet,
    pub graph: &'a LevelGraph,
    /// Memory in use, and the budget.
    pub used: usize,
    pub budget: usize,
    pub nodes: u64,
}

/// How the loop ended.
pub(crate) enum Exit {
    /// The level at `depth` is back in `level` and `counts`, to be expanded the usual way.
    Handback,
    /// The pass's outcome at this level.
    Done(LevelOutcome),
    /// A level's edges could not be kept.
    Disk(DiskError),
}

/// How the loop runs.
pub(crate) struct Setup<'a> {
    pub interrupt: Interrupt<'a>,
    /// Ways into a position are counted up to this (1: not counted).
    pub cap: u32,
    /// HS# (see [`Looking::selfmate`](crate::search::bfs::expand::children::Looking::selfmate)).
    pub selfmate: bool,
    /// The rules moves follow.
    pub rules: RuleSet,
    /// Positions in each batch (None: guided, see `cut_into_batches`).
    pub batch: Option<usize>,
    /// See [`NARROW_CLAIMS_PERCENT`].
    pub claims_percent: usize,
    /// The loop ends before a level this wide.
    pub wide: usize,
    /// The most bytes a thread's shards may grow by on a level (tests set 0, so that every
    /// growth falls to the calling thread; see `Local::leftover`).
    pub key_allowance: usize,
}

/// Runs the pass's levels from `at` on with `crew` while they are narrow. The calling thread
/// books each level (`book`); every thread expands and ranks.
pub(crate) fn run(
    narrow: &mut Narrow,
    crew: &mut dyn Beside,
    seen: &mut KeySet,
    dead: &DeadCache,
    setup: Setup,
    at: At,
    book: &mut Book,
) -> Exit {
    let Setup {
        interrupt,
        cap,
        selfmate,
        rules,
        batch,
        claims_percent,
        wide,
        key_allowance,
    } = setup;
    let helpers = narrow.threads - 1;
    debug_assert!(helpers <= crew.helpers());
    let counting = cap > 1;
    let width = at.level.len();
    enter(narrow, at.level, at.counts, counting);
    let shards = Shards {
        first: seen.shards.as_mut_ptr(),
        len: seen.shards.len(),
    };
    let allowance = (book
        .budget
        .saturating_sub(seen.bytes() + book.graph.bytes() + fixed_bytes(narrow.threads))
        / narrow.threads)
        .min(key_allowance);
    for nodes in &narrow.nodes {
        nodes.0.store(0, Ordering::Relaxed);
    }
    // The first level's table (the other is readied at the first barrier).
    let first_mask = claim_mask(width, width);
    narrow.claims[0].prepare(first_mask);
    let run = Run {
        narrow,
        seen: PhasedCell::new(seen),
        shards,
        allowance: AtomicUsize::new(allowance),
        short: AtomicBool::new(false),
        dead,
        interrupt,
        cap,
        selfmate,
        rules,
        batch,
        claims_percent,
        wide,
        key_allowance,
        arrived: Line::default(),
        generation: Line::default(),
        next_batch: Line::default(),
        mate_found: Line::default(),
        events: Line::default(),
        first: PhasedCell::new(Vec::new()),
        placed: PhasedCell::new(Placed::default()),
        parity: AtomicUsize::new(0),
        mask: AtomicUsize::new(first_mask),
        verdict: AtomicU8::new(GO_ON),
        quit: AtomicBool::new(false),
    };
    let nodes_before = *book.nodes;
    let mut exit = None;
    let mut own = |nudge: &dyn Fn()| {
        let leader = Leader {
            run: &run,
            book: &mut *book,
            depth: &mut *at.depth,
            nudges: nudge,
            nodes_before,
            held_at_barrier: 0,
            expanding: width,
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| leader.lead())) {
            Ok(ended) => exit = Some(ended),
            Err(payload) => {
                // The helpers leave their barrier; the crew raises the panic once they have.
                run.quit.store(true, Ordering::Relaxed);
                run.free_claims(0);
                std::panic::resume_unwind(payload);
            }
        }
    };
    let helper = |part: usize| run.help(part + 1);
    crew.beside(helpers, &helper, &mut own);
    // Tables grown ahead for a step 2 that did not come.
    for local in &mut narrow.local {
        local.0.get_mut().grown_ahead.clear();
    }
    *book.nodes = nodes_before
        + narrow
            .nodes
            .iter()
            .map(|n| n.0.load(Ordering::Relaxed))
            .sum::<u64>();
    match exit.expect("the calling thread's part ran") {
        Ended::Handback(parity) => {
            (*at.level, *at.counts) = leave(narrow, parity, counting, cap);
            Exit::Handback
        }
        Ended::Done(outcome) => Exit::Done(outcome),
        Ended::Disk(e) => Exit::Disk(e),
    }
}

/// Takes `level` (and its counts) in as the first level: the calling thread's list at parity 0.
fn enter(narrow: &mut Narrow, level: &mut LevelPositions, counts: &[u32], counting: bool) {
    for parity in 0..2 {
        for (found, marks) in narrow.found[parity].iter_mut().zip(&narrow.marks[parity]) {
            let found = found.0.get_mut();
            marks.reset(found.len());
            found.clear();
        }
    }
    let first = narrow.found[0][0].0.get_mut();
    std::mem::swap(&mut first.positions, level);
    let len = first.positions.len();
    if counting {
        first.paths.extend_from_slice(&counts[..len]);
    }
    let index = narrow.index.0.get_mut();
    index.clear();
    index.extend(0..len as u32);
}

/// The level at `parity` as one list, with its counts (capped; none when not counting).
fn leave(
    narrow: &mut Narrow,
    parity: usize,
    counting: bool,
    cap: u32,
) -> (LevelPositions, Vec<u32>) {
    let marks = &narrow.marks[parity];
    let found: Vec<&Found> = narrow.found[parity]
        .iter_mut()
        .map(|f| &*f.0.get_mut())
        .collect();
    let at: Vec<(usize, usize)> = narrow
        .index
        .0
        .get_mut()
        .iter()
        .map(|&at| (at as usize >> 16, at as usize & 0xffff))
        .collect();
    let mut level = LevelPositions {
        packed: Vec::with_capacity(at.len()),
        checks: Vec::new(),
        ends: Vec::with_capacity(at.len()),
    };
    for &(thread, entry) in &at {
        let (packed, checks) = found[thread].positions.get(entry);
        level.push(*packed, checks);
    }
    let counts = if counting {
        at.iter()
            .map(|&(t, e)| {
                let paths = found[t].paths[e].saturating_add(marks[t].gained(e));
                paths.min(cap)
            })
            .collect()
    } else {
        Vec::new()
    };
    (level, counts)
}
