//! The breadth-first pass's links on disk, once memory runs short.
//!
//! Links (how each position was first reached, and with counting every further shortest way
//! into it) are written once, level by level, and read back only to rebuild the mating lines at
//! the end: the first thing to move out of memory (4 of the 9 GB on 加藤徹 6935). They go to one
//! unnamed temporary file: the system removes it when it is closed, which happens however the
//! search ends — an answer, `stop`, a time limit, an error, Ctrl-C or a killed process — so no
//! stale file is ever left behind, and none is visible in the directory even while it is used.

use super::level::Link;
use super::packed::{edges_into_read, PackedEdges};
use super::rising::ReadLevel;
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

/// Where one level's edges lie in the file: the level's packed bytes (see `packed.rs`), as
/// it kept them in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DiskEdges {
    // The words first, then the half-words: 24 bytes, not 32 (one a level, kept in memory).
    at: u64,
    bytes: u64,
    first_len: u32,
    extra_len: u32,
}

impl DiskEdges {
    /// As a checkpoint records it: where the level's bytes start, how many, and how many
    /// first links and further ones they hold (checked against the bytes when read back).
    pub(crate) fn to_words(self) -> [u64; 4] {
        [
            self.at,
            self.bytes,
            self.first_len.into(),
            self.extra_len.into(),
        ]
    }

    /// From [`Self::to_words`]; None if the words cannot be a level's place in a file of
    /// `file_len` bytes.
    pub(crate) fn from_words(words: [u64; 4], file_len: u64) -> Option<DiskEdges> {
        let [at, bytes, first_len, extra_len] = words;
        let edges = DiskEdges {
            at,
            bytes,
            first_len: first_len.try_into().ok()?,
            extra_len: extra_len.try_into().ok()?,
        };
        (at.checked_add(bytes)? <= file_len).then_some(edges)
    }
}

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

    /// Appends one level's edges, as packed in memory.
    pub fn append(&mut self, packed: &PackedEdges) -> Result<DiskEdges, DiskError> {
        let bytes = packed.as_bytes();
        let len = bytes.len() as u64;
        if self.written + len > self.cap {
            return Err(DiskError::Cap {
                dir: self.dir.clone(),
                cap_mb: self.cap >> 20,
            });
        }
        self.writer
            .write_all(bytes)
            .map_err(|e| self.write_error(e))?;
        let (first_len, extra_len) = packed.lens();
        let edges = DiskEdges {
            at: self.written,
            bytes: len,
            first_len,
            extra_len,
        };
        self.written += len;
        Ok(edges)
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
    /// [`Self::finish_writing`] must have been called since the last append. A few small
    /// reads a level (its header, the link, a block of its rising indices and a search among
    /// them): reading the whole level instead would read every link written (gigabytes on the
    /// longest problems) once a line.
    pub fn edges_into(&self, edges: &DiskEdges, index: u32) -> Result<Vec<Link>, DiskError> {
        let level = Level { file: self, edges };
        let len = usize::try_from(edges.bytes).map_err(|_| DiskError::Unplayable)?;
        edges_into_read(&level, len, (edges.first_len, edges.extra_len), index)?
            .ok_or(DiskError::Unplayable)
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

/// One level's bytes in the file.
struct Level<'a> {
    file: &'a LinkFile,
    edges: &'a DiskEdges,
}

impl ReadLevel<DiskError> for Level<'_> {
    fn read(&self, at: usize, buffer: &mut [u8]) -> Result<(), DiskError> {
        // (Within the level: a damaged header that points past it is refused before.)
        if at as u64 + buffer.len() as u64 > self.edges.bytes {
            return Err(DiskError::Unplayable);
        }
        self.file.read_at(self.edges.at + at as u64, buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::super::level::LevelEdges;
    use super::*;

    fn link(n: u32) -> Link {
        Link {
            parent: n,
            check_place: n as u16 ^ 0x1234,
            evasion_place: n as u16 ^ 0x4321,
        }
    }

    /// Up to `cap_bytes` in `dir`.
    fn budget_in(dir: &Path, cap_bytes: u64) -> DiskBudget {
        DiskBudget {
            dir: Some(dir.to_path_buf()),
            cap_bytes,
            always: false,
        }
    }

    fn packed(first: &[Link], extra: &[(u32, Link)]) -> PackedEdges {
        PackedEdges::pack(LevelEdges {
            first: first.to_vec(),
            extra: extra.to_vec(),
        })
    }

    #[test]
    fn reads_back_every_edge_of_every_level() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = LinkFile::create(&budget_in(dir.path(), 1 << 20)).unwrap();
        let mut levels = Vec::new();
        for level in 0..5u32 {
            // Rising parents (packed) on even levels, scattered ones (kept plain) on odd ones.
            let first: Vec<Link> = (0..40 + level)
                .map(|i| link(if level % 2 == 0 { i / 2 } else { i * 7 % 40 }))
                .collect();
            // Further edges into every third child, two of them into child 3.
            let mut extra: Vec<(u32, Link)> = (0..40 + level)
                .step_by(3)
                .map(|c| (c, link(1000 + c)))
                .collect();
            extra.insert(2, (3, link(2000)));
            let stored = file.append(&packed(&first, &extra)).unwrap();
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
                assert_eq!(read, expected, "child {child}");
            }
            let past = file.edges_into(stored, first.len() as u32).unwrap_err();
            assert_eq!(past, DiskError::Unplayable);
        }
        // A level appended after reading: readable once written out, the others still.
        let first: Vec<Link> = (0..9).map(link).collect();
        let stored = file.append(&packed(&first, &[])).unwrap();
        file.finish_writing().unwrap();
        assert_eq!(file.edges_into(&stored, 8).unwrap(), vec![link(8)]);
        let (first, _, stored) = &levels[0];
        assert_eq!(file.edges_into(stored, 0).unwrap()[0], first[0]);
    }

    /// Where a level's words say its bytes are is checked against the file's length, and what
    /// lies there against the words' counts.
    #[test]
    fn a_level_that_is_not_where_its_words_say_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = LinkFile::create(&budget_in(dir.path(), 1 << 20)).unwrap();
        let first: Vec<Link> = (0..30).map(|i| link(i / 3)).collect();
        let stored = file.append(&packed(&first, &[(4, link(9))])).unwrap();
        let other = file.append(&packed(&first[..10], &[])).unwrap();
        file.finish_writing().unwrap();
        let words = stored.to_words();
        assert_eq!(DiskEdges::from_words(words, file.written()), Some(stored));
        assert_eq!(DiskEdges::from_words(words, words[1] - 1), None);
        let [at, bytes, first_len, extra_len] = words;
        for wrong in [
            [at + 1, bytes, first_len, extra_len],
            [at, bytes - 1, first_len, extra_len],
            [at, bytes, first_len + 1, extra_len],
            [at, bytes, first_len, 0],
            [at, bytes + other.to_words()[1], first_len, extra_len],
        ] {
            let edges = DiskEdges::from_words(wrong, file.written()).expect("within the file");
            assert_eq!(file.edges_into(&edges, 0), Err(DiskError::Unplayable));
        }
    }

    #[test]
    fn the_cap_and_a_missing_directory_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let ten = packed(&(0..10).map(link).collect::<Vec<_>>(), &[]);
        let budget = budget_in(dir.path(), ten.as_bytes().len() as u64 + 20);
        let mut file = LinkFile::create(&budget).unwrap();
        assert!(file.append(&ten).is_ok());
        let error = file.append(&ten).unwrap_err();
        assert!(matches!(error, DiskError::Cap { .. }), "{error}");
        let missing = DiskBudget {
            dir: Some(dir.path().join("no such directory")),
            ..budget
        };
        let error = LinkFile::create(&missing).err().unwrap();
        assert!(error.to_string().contains("no such directory"), "{error}");
    }
}
