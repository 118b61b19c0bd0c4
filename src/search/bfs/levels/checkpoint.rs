//! Checkpoints: what the breadth-first pass needs to go on after its process ends (a reboot,
//! Ctrl-C, a killed job), written at a level boundary every so often.
//!
//! A problem's checkpoint lives in a directory of its own under the one the user names
//! (`kyozume-` and a hash of the problem, its rules and its solution limit), so that one
//! directory serves any number of problems. In it:
//!
//! - `links`: every level's edges, appended level by level and never rewritten (the pass's
//!   links file, named instead of unnamed; see `disk.rs`);
//! - `keys.G` and `level.G` of generation `G`: the key set (each shard's keys kept for good,
//!   then its sets of keys kept long or short with their levels, ascending; see
//!   `KeySet::write_values`) and the level about to be expanded with its path counts;
//! - `manifest.toml`: which generation is complete, the problem it belongs to, the depth, the
//!   length of `links` and where each level's edges lie in it, and the checksums.
//!
//! A generation is written in full and made durable (fsync) before a new manifest replaces the
//! old one by a rename, and the old generation's files go only after that: a kill at any
//! instant leaves the last manifest and everything it names intact. Bytes appended to `links`
//! after the manifest's length are cut off when the checkpoint is resumed.
//!
//! The ranks of a distributed pass keep a checkpoint each, in `rank-R` under a directory of
//! their own (the problem with the number of ranks), with `globals.G` besides (each position's
//! place in the whole level). A rank keeps its previous generation (`manifest.prev.toml` and
//! its files) until every rank has written the new one, so that the ranks always have a
//! generation in common: a kill while some have written a generation and some not leaves them
//! to go on from the one before.

use super::disk::{DiskBudget, DiskEdges, DiskError, LinkFile};
use super::graph::{LevelGraph, StoredEdges};
use super::level::LevelPositions;
use crate::search::bfs::keys::census::Census;
use crate::search::bfs::keys::forgetting::Forgetting;
use crate::search::bfs::keys::KeySet;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether a search starts from a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointStart {
    /// Start afresh; a checkpoint of the same problem already there is an error (it would be
    /// overwritten: `solve --checkpoint`).
    Fresh,
    /// Go on from the problem's checkpoint, which must be there (`solve --resume`).
    Resume,
    /// Go on from the problem's checkpoint if there is one, else start afresh (the engine).
    Either,
}

/// Where and how often the pass writes checkpoints, and whether it starts from one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpointing {
    /// The directory the user named; each problem's checkpoint goes in a subdirectory.
    pub dir: PathBuf,
    /// At most this often (at the first level boundary after it has passed).
    pub every: Duration,
    pub start: CheckpointStart,
}

/// Format of the files: a checkpoint of another format is refused. (5: links keep the places
/// of their moves, not the moves; 6: `links` keeps each level packed as in memory.)
const FORMAT: u32 = 6;
const MANIFEST: &str = "manifest.toml";
/// A rank's previous generation's manifest, kept until every rank has written the new one.
const PREVIOUS: &str = "manifest.prev.toml";
const LINKS: &str = "links";

/// One problem's checkpoints.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// The problem's own directory.
    pub dir: PathBuf,
    pub every: Duration,
    pub start: CheckpointStart,
    /// What the checkpoint must be of: the root's SFEN, the stipulation with its conditions
    /// and the solution limit (links are kept for counting only when it is above 1).
    pub problem: String,
    /// This rank's checkpoint and the number of ranks, for a distributed pass.
    pub rank: Option<(usize, usize)>,
}

impl Plan {
    pub(crate) fn new(checkpointing: &Checkpointing, problem: String) -> Plan {
        // FNV-1a: stable from one build to the next (the standard hasher is not).
        let hash = problem.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        Plan {
            dir: checkpointing.dir.join(format!("kyozume-{hash:016x}")),
            every: checkpointing.every,
            start: checkpointing.start,
            problem,
            rank: None,
        }
    }

    /// Rank `rank`'s checkpoint of the problem among `ranks` ranks: a problem of its own (a
    /// checkpoint of one process, or of other ranks, is refused), in a directory of its own.
    pub(crate) fn for_rank(self, checkpointing: &Checkpointing, rank: usize, ranks: usize) -> Plan {
        let problem = format!("{} | ranks {ranks}", self.problem);
        let ranks_plan = Plan::new(checkpointing, problem);
        Plan {
            dir: ranks_plan.dir.join(format!("rank-{rank}")),
            rank: Some((rank, ranks)),
            ..ranks_plan
        }
    }

    pub(crate) fn refused(&self, message: impl Into<String>) -> DiskError {
        DiskError::CheckpointRefused {
            dir: self.dir.clone(),
            message: message.into(),
        }
    }

    fn write_error(&self, e: impl std::fmt::Display) -> DiskError {
        DiskError::CheckpointWrite {
            dir: self.dir.clone(),
            message: e.to_string(),
        }
    }

    /// Whether the problem has a checkpoint to go on from.
    pub(crate) fn has_checkpoint(&self) -> bool {
        self.dir.join(MANIFEST).exists()
    }

    /// Where the links go.
    pub(crate) fn links_path(&self) -> PathBuf {
        self.dir.join(LINKS)
    }

    /// The problem's checkpoint is removed (its answer is known); a rank's, with the ranks'
    /// directory once the last rank has removed its own.
    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if self.rank.is_some() {
            if let Some(ranks_dir) = self.dir.parent() {
                // (Fails while another rank's checkpoint is there: the last one removes it.)
                let _ = std::fs::remove_dir(ranks_dir);
            }
        }
    }

    /// The refusal to start afresh over a checkpoint of the same problem.
    pub(crate) fn refused_fresh(&self) -> DiskError {
        self.refused(
            "it already holds a checkpoint of this problem: go on from it with --resume, or \
             remove the directory to start afresh",
        )
    }

    /// The refusal to go on from a checkpoint that is not there.
    pub(crate) fn refused_missing(&self) -> DiskError {
        // Other problems' checkpoints in the directory the user named (a rank's own lies a
        // level further down, in the ranks' directory, which may be there without this rank's).
        let (named, ranks_dir) = match self.rank {
            Some(_) => (self.dir.parent().and_then(Path::parent), self.dir.parent()),
            None => (self.dir.parent(), None),
        };
        let others = named
            .map_or(0, count_checkpoints)
            .saturating_sub(usize::from(ranks_dir.is_some_and(Path::exists)));
        let others = match others {
            0 => String::new(),
            n => format!(" (the directory holds checkpoints of {n} other problems)"),
        };
        let ranks = match self.rank {
            Some((_, ranks)) => format!(" among {ranks} ranks"),
            None => String::new(),
        };
        self.refused(format!(
            "there is no checkpoint of this problem under these rules and solution limit{ranks}{others}"
        ))
    }
}

#[derive(Serialize, Deserialize)]
struct Manifest {
    format: u32,
    problem: String,
    generation: u64,
    /// The level about to be expanded.
    depth: u32,
    /// Moves played by the pass before the checkpoint.
    nodes: u64,
    keys: Stored,
    level: Stored,
    /// Each position's global index (a rank's checkpoint only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    globals: Option<Stored>,
    links_bytes: u64,
    /// Where each level's edges lie in `links` (see [`DiskEdges::to_words`]).
    edges: Vec<[u64; 4]>,
}

/// A file's length and CRC-32.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
struct Stored {
    bytes: u64,
    crc: u32,
}

/// A writer (or reader) that counts and checksums what goes through it. It sits between the
/// file and the buffer, so that it sums the buffer's large blocks: outside the buffer it
/// summed each key's ten bytes on their own, the checksum's slow path for short slices
/// (`crc32fast`'s baseline took 2-3% of the samples of 162a's segment, which starts by
/// reading a 6 GB checkpoint).
struct Summed<W> {
    inner: W,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<W: Write> Write for Summed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<R: Read> Read for Summed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

fn summed<T>(inner: T) -> Summed<T> {
    Summed {
        inner,
        crc: crc32fast::Hasher::new(),
        bytes: 0,
    }
}

/// Writes `fill`'s bytes to `path` and waits until the disk has them.
fn write_file(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<Stored> {
    let file = File::create(path)?;
    let mut out = BufWriter::with_capacity(1 << 20, summed(file));
    fill(&mut out)?;
    out.flush()?;
    let Summed { inner, crc, bytes } = out.into_inner().map_err(|e| e.into_error())?;
    inner.sync_all()?;
    Ok(Stored {
        bytes,
        crc: crc.finalize(),
    })
}

/// Reads `path` through `read`, which must take exactly the bytes `stored` says, with its
/// checksum.
fn read_file<T>(
    path: &Path,
    stored: Stored,
    read: impl FnOnce(&mut dyn Read) -> std::io::Result<T>,
) -> Result<T, String> {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let file = File::open(path).map_err(|e| format!("{name}: {e}"))?;
    let mut input = BufReader::with_capacity(1 << 20, summed(file));
    let value = read(&mut input).map_err(|e| format!("{name} is damaged ({e})"))?;
    // A byte left, in the buffer or the file: the file is longer than what `read` took.
    // Otherwise the sum has now seen the whole file.
    let mut rest = [0u8; 1];
    let longer = input.read(&mut rest).map_err(|e| format!("{name}: {e}"))? > 0;
    let summed = input.get_ref();
    if longer || summed.bytes != stored.bytes || summed.crc.clone().finalize() != stored.crc {
        return Err(format!(
            "{name} is damaged (its length or checksum is not the one recorded)"
        ));
    }
    Ok(value)
}

/// Syncs a directory, so that a rename in it is on disk.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// What the pass keeps of its checkpoints while it runs.
pub(crate) struct Checkpoints {
    pub plan: Plan,
    generation: u64,
    /// When the last one was written (or the pass began).
    last: Instant,
    /// Bytes of the last generation's files (the links are counted by the graph).
    pub bytes: u64,
    /// Time spent writing checkpoints in this process.
    pub spent: Duration,
    /// The pass went on from a checkpoint.
    pub resumed: bool,
    /// A rank's previous generation, kept until every rank has written the last one.
    previous: Option<u64>,
}

impl Checkpoints {
    /// Whether one is due at a level boundary now.
    pub(crate) fn due(&self) -> bool {
        self.last.elapsed() >= self.plan.every
    }

    /// When the next one is due.
    pub(crate) fn due_at(&self) -> Instant {
        self.last + self.plan.every
    }

    /// Writes a checkpoint of the pass at the boundary before level `depth` (`level`, with
    /// its `counts` and, for a rank, its positions' `globals`, is about to be expanded). The
    /// links go to the file first (see [`LevelGraph::move_all_to_disk`]). A rank keeps its
    /// previous generation until [`Self::drop_previous`].
    pub(crate) fn write(
        &mut self,
        (seen, level, counts, graph): (&KeySet, &LevelPositions, &[u32], &mut LevelGraph),
        globals: Option<&[u64]>,
        (depth, nodes): (u32, u64),
        disk: &DiskBudget,
    ) -> Result<(), DiskError> {
        let started = Instant::now();
        let plan = &self.plan;
        graph.move_all_to_disk(disk)?;
        let links_bytes = graph.disk_bytes();
        // Both generations are on disk until the new manifest is in.
        let keys_bytes = 8 * (seen.len() as u64 + 64);
        let level_bytes =
            (level.bytes() + counts.len() * 4 + globals.map_or(0, |g| g.len() * 8)) as u64;
        if links_bytes + self.bytes + keys_bytes + level_bytes > disk.cap_bytes {
            return Err(DiskError::Cap {
                dir: plan.dir.clone(),
                cap_mb: disk.cap_bytes >> 20,
            });
        }
        let generation = self.generation + 1;
        let keys_path = plan.dir.join(format!("keys.{generation}"));
        let level_path = plan.dir.join(format!("level.{generation}"));
        let keys = write_file(&keys_path, |out| seen.write_values(out).map(|_| ()))
            .map_err(|e| plan.write_error(e))?;
        let level = write_file(&level_path, |out| level.write_to(counts, out))
            .map_err(|e| plan.write_error(e))?;
        let globals = match globals {
            Some(globals) => Some(
                write_file(&plan.dir.join(format!("globals.{generation}")), |out| {
                    globals
                        .iter()
                        .try_for_each(|g| out.write_all(&g.to_le_bytes()))
                })
                .map_err(|e| plan.write_error(e))?,
            ),
            None => None,
        };
        let edges = graph
            .levels
            .iter()
            .map(|stored| match stored {
                StoredEdges::Disk(edges) => edges.to_words(),
                StoredEdges::Memory(_) => unreachable!("every level was moved to the file"),
            })
            .collect();
        let manifest = Manifest {
            format: FORMAT,
            problem: plan.problem.clone(),
            generation,
            depth,
            nodes,
            keys,
            level,
            globals,
            links_bytes,
            edges,
        };
        let text = toml::to_string(&manifest).map_err(|e| plan.write_error(e))?;
        let replace = |name: &str, text: &[u8]| {
            let fresh = plan.dir.join("manifest.new");
            write_file(&fresh, |out| out.write_all(text))
                .and_then(|_| std::fs::rename(&fresh, plan.dir.join(name)))
                .and_then(|()| sync_dir(&plan.dir))
                .map_err(|e| plan.write_error(e))
        };
        let old = self.generation;
        if plan.rank.is_some() && old > 0 {
            // The ranks may have to go back to it: kept whole until they all have this one
            // (the one before went when they all had it: see `drop_previous`).
            let kept = std::fs::read(plan.dir.join(MANIFEST)).map_err(|e| plan.write_error(e))?;
            replace(PREVIOUS, &kept)?;
            self.previous = Some(old);
        }
        replace(MANIFEST, text.as_bytes())?;
        if plan.rank.is_none() {
            remove_generation(&plan.dir, old);
        }
        self.generation = generation;
        self.bytes = keys.bytes + level.bytes + globals.map_or(0, |g| g.bytes) + text.len() as u64;
        self.last = Instant::now();
        self.spent += started.elapsed();
        Ok(())
    }

    /// A rank's previous generation goes, every rank having written the last one.
    pub(crate) fn drop_previous(&mut self) {
        if let Some(previous) = self.previous.take() {
            let _ = std::fs::remove_file(self.plan.dir.join(PREVIOUS));
            remove_generation(&self.plan.dir, previous);
        }
    }
}

/// Generation `generation`'s files but the manifest.
fn remove_generation(dir: &Path, generation: u64) {
    for name in ["keys", "level", "globals"] {
        let _ = std::fs::remove_file(dir.join(format!("{name}.{generation}")));
    }
}

/// A pass as a checkpoint left it.
pub(crate) struct Resumed {
    pub seen: KeySet,
    pub level: LevelPositions,
    pub counts: Vec<u32>,
    /// Each position's global index (a rank's checkpoint).
    pub globals: Option<Vec<u64>>,
    pub graph: LevelGraph,
    pub depth: u32,
    pub nodes: u64,
}

/// Starts checkpointing `plan`: the pass as its checkpoint left it, if it is to go on from one
/// (see [`CheckpointStart`]); None to start afresh (the problem's directory then made empty).
pub(crate) fn start(
    plan: &Plan,
    disk: &DiskBudget,
    census: Option<Arc<Census>>,
    forgetting: Forgetting,
) -> Result<(Checkpoints, Option<Resumed>), DiskError> {
    let there = plan.dir.join(MANIFEST).exists();
    match (plan.start, there) {
        (CheckpointStart::Fresh, true) => return Err(plan.refused_fresh()),
        (CheckpointStart::Resume, false) => return Err(plan.refused_missing()),
        _ => {}
    }
    start_at(plan, there.then_some(MANIFEST), disk, (census, forgetting))
}

/// The generations a rank's checkpoint of `plan` can go on from (its manifest's, and the
/// previous one's if it is still there), the newest first.
pub(crate) fn generations(plan: &Plan) -> Vec<u64> {
    [MANIFEST, PREVIOUS]
        .iter()
        .filter_map(|name| {
            let text = std::fs::read_to_string(plan.dir.join(name)).ok()?;
            let manifest: Manifest = toml::from_str(&text).ok()?;
            (manifest.format == FORMAT && manifest.problem == plan.problem)
                .then_some(manifest.generation)
        })
        .collect()
}

/// Starts a rank's checkpoints from `generation` (one [`generations`] gave: the ranks'
/// newest in common), or afresh.
pub(crate) fn start_rank(
    plan: &Plan,
    generation: Option<u64>,
    disk: &DiskBudget,
    forgetting: Forgetting,
) -> Result<(Checkpoints, Option<Resumed>), DiskError> {
    let manifest = generation.map(|g| match generations(plan).first() {
        Some(&newest) if newest == g => MANIFEST,
        _ => PREVIOUS,
    });
    start_at(plan, manifest, disk, (None, forgetting))
}

/// Checkpoints of `plan` from the one manifest `manifest` names, or afresh.
fn start_at(
    plan: &Plan,
    manifest: Option<&str>,
    disk: &DiskBudget,
    (census, forgetting): (Option<Arc<Census>>, Forgetting),
) -> Result<(Checkpoints, Option<Resumed>), DiskError> {
    let resumed = match manifest {
        Some(manifest) => Some(resume(plan, manifest, disk, census, forgetting)?),
        None => {
            let _ = std::fs::remove_dir_all(&plan.dir);
            std::fs::create_dir_all(&plan.dir).map_err(|e| plan.write_error(e))?;
            None
        }
    };
    let checkpoints = Checkpoints {
        plan: plan.clone(),
        generation: resumed.as_ref().map_or(0, |(_, g, _)| *g),
        last: Instant::now(),
        bytes: resumed.as_ref().map_or(0, |(_, _, b)| *b),
        spent: Duration::ZERO,
        resumed: resumed.is_some(),
        previous: None,
    };
    Ok((checkpoints, resumed.map(|(r, _, _)| r)))
}

/// Checkpoint directories in `dir`.
fn count_checkpoints(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("kyozume-"))
            .count()
    })
}

/// The pass the checkpoint of `plan` that `manifest_name` describes holds, its generation and
/// the bytes of its files; the files of any other generation go, and that manifest becomes
/// the checkpoint's manifest.
fn resume(
    plan: &Plan,
    manifest_name: &str,
    disk: &DiskBudget,
    census: Option<Arc<Census>>,
    forgetting: Forgetting,
) -> Result<(Resumed, u64, u64), DiskError> {
    let text = std::fs::read_to_string(plan.dir.join(manifest_name))
        .map_err(|e| plan.refused(format!("{manifest_name}: {e}")))?;
    let manifest: Manifest = toml::from_str(&text)
        .map_err(|e| plan.refused(format!("{manifest_name} is damaged ({e})")))?;
    if manifest.format != FORMAT {
        return Err(plan.refused(format!(
            "it was written in format {} (this engine reads {FORMAT})",
            manifest.format
        )));
    }
    if manifest.problem != plan.problem {
        return Err(plan.refused(format!(
            "it is a checkpoint of another problem ({}), not of {}",
            manifest.problem, plan.problem
        )));
    }
    let generation = manifest.generation;
    let file = |name: &str| plan.dir.join(format!("{name}.{generation}"));
    // The file's own length bounds what its counts may ask for, whatever the manifest says.
    let keys_bytes = std::fs::metadata(file("keys")).map_or(0, |m| m.len());
    let seen = read_file(&file("keys"), manifest.keys, |input| {
        KeySet::read_values(input, census, forgetting, manifest.depth, keys_bytes)
    })
    .map_err(|e| plan.refused(e))?;
    let (level, counts) = read_file(&file("level"), manifest.level, LevelPositions::read_from)
        .map_err(|e| plan.refused(e))?;
    let globals = match (manifest.globals, plan.rank) {
        (Some(stored), Some(_)) => Some(
            read_file(&file("globals"), stored, |input| {
                let mut bytes = Vec::new();
                input.read_to_end(&mut bytes)?;
                Ok(bytes
                    .chunks_exact(8)
                    .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
                    .collect::<Vec<u64>>())
            })
            .map_err(|e| plan.refused(e))?,
        ),
        (None, None) => None,
        _ => return Err(plan.refused(format!("{manifest_name} is damaged (its globals)"))),
    };
    if globals.as_ref().is_some_and(|g| g.len() != level.len()) {
        return Err(plan.refused(format!("{manifest_name} is damaged (its globals)")));
    }
    let links = LinkFile::reopen_named(&plan.links_path(), manifest.links_bytes, disk)
        .map_err(|e| plan.refused(format!("{LINKS}: {e}")))?;
    let levels = manifest
        .edges
        .iter()
        .map(|&words| DiskEdges::from_words(words, manifest.links_bytes).map(StoredEdges::Disk))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| plan.refused(format!("{manifest_name} is damaged (a level's links)")))?;
    // (A rank's part of a level may be empty; one process's never is.)
    if levels.len() != manifest.depth as usize || (level.is_empty() && plan.rank.is_none()) {
        return Err(plan.refused(format!("{manifest_name} is damaged (its levels)")));
    }
    if manifest_name != MANIFEST {
        std::fs::rename(plan.dir.join(manifest_name), plan.dir.join(MANIFEST))
            .and_then(|()| sync_dir(&plan.dir))
            .map_err(|e| plan.write_error(e))?;
    }
    // Files of a generation that was being written when the process ended.
    if let Ok(entries) = std::fs::read_dir(&plan.dir) {
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let ours = [MANIFEST, LINKS].contains(&name.as_str())
                || ["keys", "level", "globals"]
                    .iter()
                    .any(|file| name == format!("{file}.{generation}"));
            if !ours {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    let on_disk = levels.len();
    let graph = LevelGraph {
        levels,
        bytes: 0,
        file: Some(links),
        on_disk_before: on_disk,
        spilling: false,
        named: Some(plan.links_path()),
    };
    let bytes = manifest.keys.bytes
        + manifest.level.bytes
        + manifest.globals.map_or(0, |g| g.bytes)
        + text.len() as u64;
    Ok((
        Resumed {
            seen,
            level,
            counts,
            globals,
            graph,
            depth: manifest.depth,
            nodes: manifest.nodes,
        },
        generation,
        bytes,
    ))
}

/// Reads `bytes` the way a checkpoint's files are read, checksums aside so that any bytes reach
/// the readers: a manifest, a key set and a level, each after its length (4 bytes, little
/// endian). For the fuzz targets: whatever the bytes, a value or an error, never a panic.
#[doc(hidden)]
pub fn read_unchecked(bytes: &[u8]) -> Result<(), String> {
    fn split(bytes: &[u8]) -> (&[u8], &[u8]) {
        let (len, rest) = match bytes.split_first_chunk::<4>() {
            Some((len, rest)) => (u32::from_le_bytes(*len) as usize, rest),
            None => (0, bytes),
        };
        rest.split_at(len.min(rest.len()))
    }
    let (manifest, rest) = split(bytes);
    let (keys, level) = split(rest);
    let depth = match std::str::from_utf8(manifest).map(toml::from_str::<Manifest>) {
        Ok(Ok(manifest)) => {
            for &words in &manifest.edges {
                let _ = DiskEdges::from_words(words, manifest.links_bytes);
            }
            manifest.depth
        }
        _ => 0,
    };
    let keys_bytes = keys.len() as u64;
    let read_keys = KeySet::read_values(
        &mut &keys[..],
        None,
        Forgetting::default(),
        depth,
        keys_bytes,
    );
    let read_level = LevelPositions::read_from(&mut &level[..]);
    read_keys
        .and(read_level)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file written in many small pieces (as keys are, ten bytes each) reads back with its
    /// length and sum; one byte more, one byte changed, or a reader that stops short is
    /// damage. The sum is taken below the buffers, over what the file holds.
    #[test]
    fn a_file_reads_back_only_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pieces");
        let pieces: Vec<[u8; 10]> = (0..300_000u32)
            .map(|i| {
                let mut piece = [0u8; 10];
                piece[..4].copy_from_slice(&i.to_le_bytes());
                piece[4..8].copy_from_slice(&i.wrapping_mul(0x9e37_79b9).to_le_bytes());
                piece
            })
            .collect();
        let stored = write_file(&path, |out| {
            pieces.iter().try_for_each(|piece| out.write_all(piece))
        })
        .unwrap();
        assert_eq!(stored.bytes, 3_000_000);
        let read_all = |input: &mut dyn Read| {
            let mut piece = [0u8; 10];
            let mut read = Vec::with_capacity(pieces.len());
            for _ in 0..pieces.len() {
                input.read_exact(&mut piece)?;
                read.push(piece);
            }
            Ok(read)
        };
        assert_eq!(read_file(&path, stored, read_all).unwrap(), pieces);
        // A reader that takes less than the file holds.
        let short = read_file(&path, stored, |input| {
            let mut piece = [0u8; 10];
            input.read_exact(&mut piece)
        });
        assert!(short.unwrap_err().contains("damaged"));
        // One byte changed, then one byte more.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[2_500_000] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(read_file(&path, stored, read_all)
            .unwrap_err()
            .contains("damaged"));
        bytes[2_500_000] ^= 1;
        bytes.push(0);
        std::fs::write(&path, &bytes).unwrap();
        assert!(read_file(&path, stored, read_all)
            .unwrap_err()
            .contains("damaged"));
        bytes.pop();
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read_file(&path, stored, read_all).unwrap(), pieces);
    }
}
