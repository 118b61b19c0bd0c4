//! The breadth-first pass's links on disk, once memory runs short.
//!
//! Links (how each position was first reached, and with counting every further shortest way
//! into it) are written once, level by level, and read back only to rebuild the mating lines at
//! the end: the first thing to move out of memory (4 of the 9 GB on 加藤徹 6935). They go to one
//! unnamed temporary file: the system removes it when it is closed, which happens however the
//! search ends — an answer, `stop`, a time limit, an error, Ctrl-C or a killed process — so no
//! stale file is ever left behind, and none is visible in the directory even while it is used.

use super::level::Link;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Where and how much the pass may write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskBudget {
    /// Directory for the temporary file (None: the system's temporary directory).
    pub dir: Option<PathBuf>,
    /// Bytes the pass may write; 0: never use the disk (the pass gives up when memory runs out).
    pub cap_bytes: u64,
    /// Write the links to disk from the first level on, whatever the memory (for tests).
    pub always: bool,
}

impl DiskBudget {
    /// The directory the file goes to.
    pub fn directory(&self) -> PathBuf {
        self.dir.clone().unwrap_or_else(std::env::temp_dir)
    }
}

/// Why the disk could not be used. The pass ends with it: nothing it proved is lost (the bound
/// is kept), but a long problem cannot go on without the disk.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DiskError {
    #[error(
        "cannot make a temporary file in {dir}: {message} (set TempDir to a writable directory)"
    )]
    Create { dir: PathBuf, message: String },
    #[error("cannot write to the temporary file in {dir}: {message}")]
    Write { dir: PathBuf, message: String },
    #[error("cannot read back the temporary file in {dir}: {message}")]
    Read { dir: PathBuf, message: String },
    #[error(
        "the disk cap of {cap_mb} MB is reached in {dir} (raise DiskCap or give more USI_Hash)"
    )]
    Cap { dir: PathBuf, cap_mb: u64 },
    #[error("cannot write a checkpoint in {dir}: {message}")]
    CheckpointWrite { dir: PathBuf, message: String },
    /// A checkpoint that cannot be resumed: another problem's, another version's, damaged, or
    /// missing when one was asked for.
    #[error("checkpoint in {dir} refused: {message}")]
    CheckpointRefused { dir: PathBuf, message: String },
    /// Another rank of a distributed pass could not use its disk (its error, as it said it).
    #[error("rank {rank}: {message}")]
    OnRank { rank: usize, message: String },
    /// Links read back that name no move on the way from the root (see `places.rs`).
    #[error("the links read back do not make a line from the root (damaged links)")]
    Unplayable,
}

/// Where one level's edges lie in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DiskEdges {
    // The words first, then the half-words: 24 bytes, not 32 (one a level, kept in memory).
    first_at: u64,
    extra_at: u64,
    first_len: u32,
    extra_len: u32,
}

impl DiskEdges {
    /// As a checkpoint records it: where the first links start, how many, where the further
    /// ones start, how many.
    pub(crate) fn to_words(self) -> [u64; 4] {
        [
            self.first_at,
            self.first_len.into(),
            self.extra_at,
            self.extra_len.into(),
        ]
    }

    /// From [`Self::to_words`]; None if the words cannot be a level's place in a file of
    /// `file_len` bytes.
    pub(crate) fn from_words(words: [u64; 4], file_len: u64) -> Option<DiskEdges> {
        let [first_at, first_len, extra_at, extra_len] = words;
        let edges = DiskEdges {
            first_at,
            first_len: first_len.try_into().ok()?,
            extra_at,
            extra_len: extra_len.try_into().ok()?,
        };
        let first_end = first_at.checked_add(first_len.checked_mul(LINK_RECORD)?)?;
        let extra_end = extra_at.checked_add(extra_len.checked_mul(EXTRA_RECORD)?)?;
        (first_end == extra_at && extra_end <= file_len).then_some(edges)
    }
}

const LINK_RECORD: u64 = 8;
const EXTRA_RECORD: u64 = 12;

/// The unnamed file the links go to.
pub(crate) struct LinkFile {
    writer: BufWriter<File>,
    dir: PathBuf,
    written: u64,
    cap: u64,
}

impl LinkFile {
    pub fn create(budget: &DiskBudget) -> Result<LinkFile, DiskError> {
        let dir = budget.directory();
        let file = tempfile::tempfile_in(&dir).map_err(|e| DiskError::Create {
            dir: dir.clone(),
            message: e.to_string(),
        })?;
        Ok(LinkFile::over(file, dir, 0, budget))
    }

    /// Links in `file` (in `dir`), `written` bytes of them already there.
    fn over(file: File, dir: PathBuf, written: u64, budget: &DiskBudget) -> LinkFile {
        LinkFile {
            writer: BufWriter::with_capacity(1 << 20, file),
            dir,
            written,
            cap: budget.cap_bytes,
        }
    }

    /// A file named `path` (made anew), for links that must outlive the process (a
    /// checkpoint's).
    pub fn create_named(path: &Path, budget: &DiskBudget) -> Result<LinkFile, DiskError> {
        let dir = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| DiskError::Create {
                dir: dir.clone(),
                message: e.to_string(),
            })?;
        Ok(LinkFile::over(file, dir, 0, budget))
    }

    /// The named file `path` as a checkpoint left it: its first `len` bytes (anything written
    /// after the checkpoint is cut off). An error if it is shorter.
    pub fn reopen_named(path: &Path, len: u64, budget: &DiskBudget) -> std::io::Result<LinkFile> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        if file.metadata()?.len() < len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("the links file is shorter than the {len} bytes recorded"),
            ));
        }
        file.set_len(len)?;
        file.seek(SeekFrom::End(0))?;
        let dir = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
        Ok(LinkFile::over(file, dir, len, budget))
    }

    /// Writes out what is buffered and waits until the disk has it.
    pub fn make_durable(&mut self) -> Result<(), DiskError> {
        self.writer
            .flush()
            .and_then(|()| self.writer.get_ref().sync_data())
            .map_err(|e| self.write_error(e))
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Appends one level's edges: the first way into each new position, then the further ones
    /// (sorted by child).
    pub fn append(
        &mut self,
        first: &[Link],
        extra: &[(u32, Link)],
    ) -> Result<DiskEdges, DiskError> {
        let bytes = first.len() as u64 * LINK_RECORD + extra.len() as u64 * EXTRA_RECORD;
        if self.written + bytes > self.cap {
            return Err(DiskError::Cap {
                dir: self.dir.clone(),
                cap_mb: self.cap >> 20,
            });
        }
        let first_at = self.written;
        let extra_at = first_at + first.len() as u64 * LINK_RECORD;
        let result = first
            .iter()
            .try_for_each(|link| self.writer.write_all(&link_bytes(link)))
            .and_then(|()| {
                extra.iter().try_for_each(|(child, link)| {
                    self.writer.write_all(&child.to_le_bytes())?;
                    self.writer.write_all(&link_bytes(link))
                })
            });
        result.map_err(|e| self.write_error(e))?;
        self.written += bytes;
        Ok(DiskEdges {
            first_at,
            first_len: first.len() as u32,
            extra_at,
            extra_len: extra.len() as u32,
        })
    }

    fn write_error(&self, e: std::io::Error) -> DiskError {
        DiskError::Write {
            dir: self.dir.clone(),
            message: e.to_string(),
        }
    }

    /// Makes everything appended readable.
    pub fn finish_writing(&mut self) -> Result<(), DiskError> {
        self.writer.flush().map_err(|e| self.write_error(e))
    }

    /// The edges into position `index` of a level: the first way in, then the others.
    /// [`Self::finish_writing`] must have been called since the last append.
    pub fn edges_into(&self, edges: &DiskEdges, index: u32) -> Result<Vec<Link>, DiskError> {
        debug_assert!(index < edges.first_len);
        let mut record = [0u8; EXTRA_RECORD as usize];
        let first = &mut record[..LINK_RECORD as usize];
        self.read_at(edges.first_at + u64::from(index) * LINK_RECORD, first)?;
        let mut links = vec![link_from(first)];
        // The first further edge into `index` (they are sorted by child).
        let extra_at = |i: u32| edges.extra_at + u64::from(i) * EXTRA_RECORD;
        let (mut low, mut high) = (0, edges.extra_len);
        while low < high {
            let middle = low + (high - low) / 2;
            self.read_at(extra_at(middle), &mut record[..4])?;
            if child_of(&record) < index {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        for i in low..edges.extra_len {
            self.read_at(extra_at(i), &mut record)?;
            if child_of(&record) != index {
                break;
            }
            links.push(link_from(&record[4..]));
        }
        Ok(links)
    }

    fn read_at(&self, at: u64, buffer: &mut [u8]) -> Result<(), DiskError> {
        let mut file = self.writer.get_ref();
        file.seek(SeekFrom::Start(at))
            .and_then(|_| file.read_exact(buffer))
            // Appends go on at the end.
            .and_then(|()| file.seek(SeekFrom::End(0)).map(|_| ()))
            .map_err(|e| DiskError::Read {
                dir: self.dir.clone(),
                message: e.to_string(),
            })
    }
}

fn link_bytes(link: &Link) -> [u8; LINK_RECORD as usize] {
    let mut bytes = [0u8; LINK_RECORD as usize];
    bytes[..4].copy_from_slice(&link.parent.to_le_bytes());
    bytes[4..6].copy_from_slice(&link.check_place.to_le_bytes());
    bytes[6..].copy_from_slice(&link.evasion_place.to_le_bytes());
    bytes
}

fn link_from(bytes: &[u8]) -> Link {
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    Link {
        parent: u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
        check_place: u16_at(4),
        evasion_place: u16_at(6),
    }
}

fn child_of(record: &[u8]) -> u32 {
    u32::from_le_bytes([record[0], record[1], record[2], record[3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(n: u32) -> Link {
        Link {
            parent: n,
            check_place: n as u16 ^ 0x1234,
            evasion_place: n as u16 ^ 0x4321,
        }
    }

    fn same(a: &[Link], b: &[Link]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
    }

    #[test]
    fn reads_back_every_edge_of_every_level() {
        let dir = tempfile::tempdir().unwrap();
        let budget = DiskBudget {
            dir: Some(dir.path().to_path_buf()),
            cap_bytes: 1 << 20,
            always: false,
        };
        let mut file = LinkFile::create(&budget).unwrap();
        let mut levels = Vec::new();
        for level in 0..5u32 {
            let first: Vec<Link> = (0..40 + level).map(|i| link(i * 7 + level)).collect();
            // Further edges into every third child, two of them into child 3.
            let mut extra: Vec<(u32, Link)> = (0..40 + level)
                .step_by(3)
                .map(|c| (c, link(1000 + c)))
                .collect();
            extra.insert(2, (3, link(2000)));
            let stored = file.append(&first, &extra).unwrap();
            levels.push((first, extra, stored));
        }
        file.finish_writing().unwrap();
        // The file has no name: the directory stays empty while it is in use.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        for (first, extra, stored) in &levels {
            for child in 0..first.len() as u32 {
                let mut expected = vec![first[child as usize]];
                expected.extend(extra.iter().filter(|e| e.0 == child).map(|e| e.1));
                let read = file.edges_into(stored, child).unwrap();
                assert!(same(&read, &expected), "child {child}");
            }
        }
    }

    #[test]
    fn the_cap_and_a_missing_directory_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let budget = DiskBudget {
            dir: Some(dir.path().to_path_buf()),
            cap_bytes: 80,
            always: false,
        };
        let mut file = LinkFile::create(&budget).unwrap();
        let ten: Vec<Link> = (0..10).map(link).collect();
        assert!(file.append(&ten, &[]).is_ok());
        let error = file.append(&ten[..1], &[]).unwrap_err();
        assert!(matches!(error, DiskError::Cap { .. }), "{error}");
        let missing = DiskBudget {
            dir: Some(dir.path().join("no such directory")),
            ..budget
        };
        let error = LinkFile::create(&missing).err().unwrap();
        assert!(error.to_string().contains("no such directory"), "{error}");
    }
}
