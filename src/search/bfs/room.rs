//! Where more room comes from once a pass has spent its budget: the caller's memory (the
//! table's), then links moved to disk, then the keys frozen, then the key set filled further.

use crate::search::bfs::keys::{KeySet, NotFrozen};
use crate::search::bfs::levels::disk::{DiskBudget, DiskError};
use crate::search::bfs::levels::graph::{LevelGraph, DISK_STEP_BYTES};
use crate::search::bfs::levels::level::LevelPositions;
use crate::search::bfs::limits::PassLimits;
use crate::search::bfs::outcome::{BfsOutcome, GiveUp};
use crate::search::interrupt::{Abort, Interrupt};

/// Where more room came from once the budget was spent.
pub(super) enum Room {
    /// Bytes added to the budget (the table's memory).
    Memory(usize),
    /// Bytes of links moved to disk (0: nothing left to move).
    Disk(usize),
}

/// More room for a pass that has spent its budget, in the order it is taken: the caller's
/// memory (the table's), then links moved to disk. (Then the callers freeze the keys, see
/// `KeySet::freeze`, and last the key set fills up, see `Shard::insert`.)
pub(super) fn more_room(
    more_memory: &mut dyn FnMut() -> usize,
    graph: &mut LevelGraph,
    disk: &DiskBudget,
) -> Result<Room, DiskError> {
    match more_memory() {
        0 => graph.move_to_disk(disk, DISK_STEP_BYTES).map(Room::Disk),
        extra => Ok(Room::Memory(extra)),
    }
}

/// Where `make_room` makes room: the disk for links, the threads that freeze the keys, and
/// what cuts a freeze short.
pub(super) struct Places<'a> {
    pub(super) disk: &'a DiskBudget,
    pub(super) pool: Option<&'a rayon::ThreadPool>,
    pub(super) interrupt: Interrupt<'a>,
}

/// Why no room was made, beyond there being none to be had.
impl<'a> Places<'a> {
    /// Where the pass under `limits` makes room.
    pub(super) fn of(limits: &'a PassLimits) -> Places<'a> {
        Places {
            disk: limits.disk,
            pool: limits.pool,
            interrupt: limits.interrupt,
        }
    }
}

#[derive(Debug)]
pub(super) enum NoRoom {
    Disk(DiskError),
    /// The interrupt cut a freeze short.
    Aborted(Abort),
}

/// Asks for room until what the pass holds (`seen`, `graph` and `fixed` bytes that stay) and
/// `beside` fit the budget, in the order room is taken: the caller's memory, then the disk
/// for links, then the keys frozen (see `KeySet::freeze`). Whether they fit; an error only
/// for a disk error or a freeze the interrupt cut short (a freeze that found no memory for
/// its sets reads as no room).
///
/// For `beside` (room for the threads, which the pass can do without), links go to disk and
/// keys are frozen only while that could make room at all: where even every link on disk and
/// the deepest freeze would leave too little, they would only cost. (At a budget a few times
/// a wide level, every wide level froze the keys for nothing, and the short terms those
/// freezes cut left 森茂 1965 at 16 MB and two threads short of memory at ply 1,673 now and
/// then: deepening went on from there, for hours.)
pub(super) fn make_room(
    (seen, graph, fixed): (&mut KeySet, &mut LevelGraph, usize),
    budget: &mut usize,
    more_memory: &mut dyn FnMut() -> usize,
    places: Places,
    beside: usize,
) -> Result<bool, NoRoom> {
    loop {
        let used = seen.bytes() + graph.bytes() + fixed;
        if used + beside <= *budget {
            return Ok(true);
        }
        if beside > 0 {
            let least = seen.least_bytes() + graph.least_bytes(places.disk) + fixed;
            if least + beside > *budget {
                match more_memory() {
                    0 => return Ok(false),
                    extra => {
                        *budget += extra;
                        continue;
                    }
                }
            }
        }
        match more_room(more_memory, graph, places.disk) {
            Ok(Room::Memory(extra)) => *budget += extra,
            // Last, the keys frozen.
            Ok(Room::Disk(0)) => {
                let stop = || places.interrupt.raised();
                match seen.freeze(places.pool, &stop) {
                    Ok(0) | Err(NotFrozen::NoMemory) => return Ok(false),
                    Ok(_) => {}
                    Err(NotFrozen::Stopped) => return Err(NoRoom::Aborted(places.interrupt.why())),
                }
            }
            Ok(Room::Disk(_)) => {}
            Err(e) => return Err(NoRoom::Disk(e)),
        }
    }
}

/// What a pass does for room for its keys once no more memory (and no more disk for the
/// links) is to be had: the keys frozen, once (see `KeySet::freeze`), then the shards filled
/// further (see `Shard::insert`); then nothing is left.
#[derive(Default)]
pub(super) struct LastResorts {
    pub(super) froze: bool,
    pub(super) cramming: bool,
}

/// A resort [`LastResorts::next`] hands out.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum LastResort {
    Freeze,
    Cram,
}

impl LastResorts {
    /// The next resort, now marked taken (the caller does it); None when none is left.
    pub(super) fn next(&mut self) -> Option<LastResort> {
        if !self.froze {
            self.froze = true;
            Some(LastResort::Freeze)
        } else if !self.cramming {
            self.cramming = true;
            Some(LastResort::Cram)
        } else {
            None
        }
    }

    /// Takes the next resort on one thread; false when none is left. A freeze cut short by
    /// the interrupt leaves the set whole; the pass then ends at its next poll.
    pub(super) fn take(&mut self, seen: &mut KeySet, interrupt: Interrupt) -> bool {
        match self.next() {
            Some(LastResort::Freeze) => {
                let _ = seen.freeze(None, &|| interrupt.raised());
                true
            }
            Some(LastResort::Cram) => true,
            None => false,
        }
    }
}

/// Brings the pass back within its budget after a level (see `make_room`); the bytes used,
/// or the pass's outcome if it must give up (`lower_bound`: the next level's).
pub(super) fn settle_memory(
    (seen, graph, level, counts): (&mut KeySet, &mut LevelGraph, &LevelPositions, &Vec<u32>),
    budget: &mut usize,
    more_memory: &mut dyn FnMut() -> usize,
    limits: &PassLimits,
    lower_bound: u32,
) -> Result<usize, BfsOutcome> {
    let fixed = level.bytes() + counts.capacity() * 4;
    if with_room(
        (seen, graph, fixed),
        budget,
        more_memory,
        limits,
        (0, lower_bound),
    )? {
        Ok(seen.bytes() + graph.bytes() + fixed)
    } else {
        Err(BfsOutcome::GaveUp {
            lower_bound,
            reason: GiveUp::Memory,
        })
    }
}

/// `make_room` for the pass: whether what it holds and `beside` fit, or the pass's outcome
/// where a disk error or the interrupt ends it.
pub(super) fn with_room(
    stores: (&mut KeySet, &mut LevelGraph, usize),
    budget: &mut usize,
    more_memory: &mut dyn FnMut() -> usize,
    limits: &PassLimits,
    (beside, lower_bound): (usize, u32),
) -> Result<bool, BfsOutcome> {
    make_room(stores, budget, more_memory, Places::of(limits), beside).map_err(|no_room| {
        BfsOutcome::GaveUp {
            lower_bound,
            reason: no_room.into(),
        }
    })
}

impl From<NoRoom> for GiveUp {
    fn from(no_room: NoRoom) -> GiveUp {
        match no_room {
            NoRoom::Disk(e) => GiveUp::Disk(e),
            NoRoom::Aborted(abort) => GiveUp::Aborted(abort),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::bfs::levels::level::{LevelEdges, Link};
    use std::sync::atomic::AtomicBool;

    /// A pass's stores as memory runs short: 200,000 keys in their tables (none frozen) and a
    /// level of 100,000 links in memory.
    fn stores() -> (KeySet, LevelGraph) {
        let mut seen = KeySet::new();
        seen.set_level(1);
        for i in 0..200_000u128 {
            let key = i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) | 1;
            assert_eq!(seen.insert(key, usize::MAX, false), Ok(true));
        }
        let mut graph = LevelGraph::default();
        let edges = LevelEdges {
            first: vec![Link::UNSET; 100_000],
            extra: Vec::new(),
        };
        graph.push(edges).unwrap();
        (seen, graph)
    }

    /// `make_room` for `beside` bytes beyond what the stores hold now (the budget they fit
    /// exactly), with `extra` bytes of the caller's memory to be had once: whether they fit,
    /// the key set's and the links' bytes after, and the links written to disk.
    fn room_for(beside: usize, extra: usize) -> (bool, usize, usize, u64) {
        let dir = tempfile::tempdir().unwrap();
        let disk = DiskBudget {
            dir: Some(dir.path().to_path_buf()),
            cap_bytes: 1 << 30,
            always: false,
        };
        let stop = AtomicBool::new(false);
        let places = Places {
            disk: &disk,
            pool: None,
            interrupt: Interrupt {
                stop: &stop,
                deadline: None,
                mate_elsewhere: None,
            },
        };
        let (mut seen, mut graph) = stores();
        let fixed = 1 << 20;
        let mut budget = seen.bytes() + graph.bytes() + fixed;
        let mut more = Some(extra);
        let mut more_memory = || more.take().unwrap_or(0);
        let fit = make_room(
            (&mut seen, &mut graph, fixed),
            &mut budget,
            &mut more_memory,
            places,
            beside,
        )
        .unwrap();
        (fit, seen.bytes(), graph.bytes(), graph.disk_bytes())
    }

    #[test]
    fn room_for_the_threads_is_made_only_where_it_can_be() {
        let (_, keys, links, _) = room_for(0, 0);
        // What the links on disk and a freeze can free: a third of the links and keys fit
        // (more than the links alone).
        assert!((keys + links) / 3 > links);
        let (fit, keys_after, links_after, on_disk) = room_for((keys + links) / 3, 0);
        assert!(fit);
        assert!(
            on_disk > 0 && links_after < links / 8,
            "{links_after} of {links}"
        );
        assert!(keys_after < keys, "{keys_after} of {keys}");
        // Beyond it: nothing is moved or frozen for nothing.
        let (fit, keys_after, links_after, on_disk) = room_for(keys + links, 0);
        assert!(!fit);
        assert_eq!((keys_after, links_after, on_disk), (keys, links, 0));
        // Unless the caller's memory makes it fit.
        let (fit, keys_after, links_after, on_disk) = room_for(keys + links, keys + links);
        assert!(fit);
        assert_eq!((keys_after, links_after, on_disk), (keys, links, 0));
    }
}
