//! Where more room comes from once a pass has spent its budget: the caller's memory (the
//! table's), then links moved to disk, then the keys frozen, then the key set filled further.

use super::disk::{DiskBudget, DiskError};
use super::graph::{LevelGraph, DISK_STEP_BYTES};
use super::keyset::KeySet;
use crate::search::helpmate::Interrupt;

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

/// What a pass does for room for its keys once no more memory (and no more disk for the
/// links) is to be had: the keys frozen, once (see `KeySet::freeze`), then the shards filled
/// further (see `Shard::insert`); then nothing is left.
#[derive(Default)]
pub(super) struct LastResorts {
    pub(super) froze: bool,
    pub(super) cramming: bool,
}

impl LastResorts {
    /// Takes the next resort; false when none is left. A freeze cut short by the interrupt
    /// leaves the set whole; the pass then ends at its next poll.
    pub(super) fn take(&mut self, seen: &mut KeySet, interrupt: Interrupt) -> bool {
        if !self.froze {
            self.froze = true;
            let _ = seen.freeze(None, &|| interrupt.raised());
        } else if !self.cramming {
            self.cramming = true;
        } else {
            return false;
        }
        true
    }
}
