//! The links from every level to the one before, kept for rebuilding the shortest lines at the
//! end: in memory while it lasts, then level by level in a file (see `disk.rs`).

use super::disk::{DiskBudget, DiskEdges, DiskError, LinkFile};
use super::level::{LevelEdges, Link, Mate};
use super::packed::PackedEdges;
use super::places::line_of;
use crate::shogi::{Move, Position, RuleSet};

/// All levels' edges, for reading mating lines back to the root: in memory, or once memory
/// runs short, in a file (see `disk.rs`).
#[derive(Default)]
pub(crate) struct LevelGraph {
    /// `levels[k]` holds the edges into level `k + 1`.
    pub(crate) levels: Vec<StoredEdges>,
    pub(crate) bytes: usize,
    /// Where levels go once the graph has started moving to disk.
    pub(crate) file: Option<LinkFile>,
    /// Levels before this one are all on disk.
    pub(crate) on_disk_before: usize,
    /// Memory ran short: new levels go straight to the file. (A checkpoint moves the levels
    /// it finds to the file without this: later levels stay in memory until the next one.)
    pub(crate) spilling: bool,
    /// Where the file is made when it must have a name (the checkpoint's links, see
    /// `checkpoint.rs`); None: an unnamed temporary file.
    pub(crate) named: Option<std::path::PathBuf>,
}

pub(crate) enum StoredEdges {
    Memory(PackedEdges),
    Disk(DiskEdges),
}

// One a level, tens of thousands on long narrow problems (and the vector holding them has up
// to twice as many): kept small.
const _: () = assert!(std::mem::size_of::<StoredEdges>() <= 32);

impl LevelGraph {
    /// Bytes held in memory.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes + self.levels.capacity() * std::mem::size_of::<StoredEdges>()
    }

    /// The least memory the links could take with every level moved to disk (none of it if
    /// the disk may not be used).
    pub(crate) fn least_bytes(&self, disk: &DiskBudget) -> usize {
        match disk.cap_bytes {
            0 => self.bytes(),
            _ => self.bytes() - self.bytes,
        }
    }

    /// Bytes written to disk.
    pub(crate) fn disk_bytes(&self) -> u64 {
        self.file.as_ref().map_or(0, LinkFile::written)
    }

    pub(crate) fn push(&mut self, mut edges: LevelEdges) -> Result<(), DiskError> {
        // Sorted by child, so that lines can find every edge into a position; stable, so that
        // the edges into one child stay in the order they were found (as the threaded
        // expansion orders them too).
        edges.extra.sort_by_key(|&(child, _)| child);
        let packed = PackedEdges::pack(edges);
        let stored = match self.file.as_mut().filter(|_| self.spilling) {
            Some(file) => StoredEdges::Disk(file.append(&packed)?),
            None => {
                self.bytes += packed.bytes();
                StoredEdges::Memory(packed)
            }
        };
        self.levels.push(stored);
        Ok(())
    }

    /// Moves levels held in memory to a file, oldest first, until `want` bytes are freed or
    /// none are left; from the first call on, new levels go to the file too. Returns the bytes
    /// freed (0 if the disk may not be used or everything is there already). A step at a time,
    /// so that the pass goes on reporting and answering `stop` (moving 6.5 GB at once took 20 s).
    pub(crate) fn move_to_disk(
        &mut self,
        budget: &DiskBudget,
        want: usize,
    ) -> Result<usize, DiskError> {
        if budget.cap_bytes == 0 {
            return Ok(0);
        }
        self.spilling = true;
        self.move_levels_to_file(budget, want)
    }

    /// Moves every level held in memory to the file and makes the file durable (a
    /// checkpoint's links): later levels stay in memory unless memory runs short.
    pub(crate) fn move_all_to_disk(&mut self, budget: &DiskBudget) -> Result<(), DiskError> {
        self.move_levels_to_file(budget, usize::MAX)?;
        self.file.as_mut().expect("made by the move").make_durable()
    }

    fn move_levels_to_file(
        &mut self,
        budget: &DiskBudget,
        want: usize,
    ) -> Result<usize, DiskError> {
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(match &self.named {
                Some(path) => LinkFile::create_named(path, budget)?,
                None => LinkFile::create(budget)?,
            }),
        };
        let mut freed = 0;
        while freed < want && self.on_disk_before < self.levels.len() {
            let level = &mut self.levels[self.on_disk_before];
            if let StoredEdges::Memory(packed) = level {
                freed += packed.bytes();
                *level = StoredEdges::Disk(file.append(packed)?);
            }
            self.on_disk_before += 1;
        }
        self.bytes -= freed;
        if freed > 0 {
            crate::search::memory::release_freed_memory();
        }
        Ok(freed)
    }

    /// Makes every level written to the file readable (before `edges_into`; `lines` does it).
    pub(crate) fn finish_writing(&mut self) -> Result<(), DiskError> {
        self.file.as_mut().map_or(Ok(()), LinkFile::finish_writing)
    }

    /// The edges into position `index` of level `depth` (>= 1): the first one, then the others.
    pub(crate) fn edges_into(&self, depth: usize, index: u32) -> Result<Vec<Link>, DiskError> {
        match &self.levels[depth - 1] {
            StoredEdges::Memory(packed) => packed.edges_into(index).ok_or(DiskError::Unplayable),
            StoredEdges::Disk(stored) => {
                let file = self.file.as_ref().expect("levels on disk have a file");
                file.edges_into(stored, index)
            }
        }
    }

    /// Up to `cap` mating lines from `root` (under `rules`), in the order their last moves
    /// were found.
    pub(crate) fn lines(
        &mut self,
        mates: &[Mate],
        cap: usize,
        (root, rules): (&Position, RuleSet),
    ) -> Result<Vec<Vec<Move>>, DiskError> {
        self.finish_writing()?;
        let depth = self.levels.len();
        let mut lines = Vec::new();
        let mut suffix = Vec::with_capacity(depth);
        for mate in mates {
            let mut ways = Vec::new();
            self.walk_back(
                depth,
                mate.parent,
                &mut suffix,
                &mut ways,
                cap - lines.len(),
            )?;
            for places in ways {
                lines.push(played((root, rules), places, (mate.check, mate.reply))?);
            }
            if lines.len() >= cap {
                break;
            }
        }
        Ok(lines)
    }

    /// Extends the reversed `suffix` of places from position `index` of level `depth` back to
    /// the root in every way, adding each way (root first) to `ways` until there are `cap`.
    pub(crate) fn walk_back(
        &self,
        depth: usize,
        index: u32,
        suffix: &mut Vec<(u16, u16)>,
        ways: &mut Vec<Vec<(u16, u16)>>,
        cap: usize,
    ) -> Result<(), DiskError> {
        if depth == 0 {
            ways.push(suffix.iter().rev().copied().collect());
            return Ok(());
        }
        for link in self.edges_into(depth, index)? {
            if ways.len() >= cap {
                break;
            }
            suffix.push((link.check_place, link.evasion_place));
            self.walk_back(depth - 1, link.parent, suffix, ways, cap)?;
            suffix.pop();
        }
        Ok(())
    }
}

/// The mating line that `places` (root first) and then a mate's check and reply (HS#) make
/// from `root`.
pub(crate) fn played(
    (root, rules): (&Position, RuleSet),
    places: Vec<(u16, u16)>,
    (check, reply): (Move, Option<Move>),
) -> Result<Vec<Move>, DiskError> {
    let last: Vec<Move> = std::iter::once(check).chain(reply).collect();
    line_of(root, rules, places.into_iter(), &last).ok_or(DiskError::Unplayable)
}

/// Links moved to disk at a time when memory runs short (a fraction of a second of writing).
pub(crate) const DISK_STEP_BYTES: usize = 64 << 20;
