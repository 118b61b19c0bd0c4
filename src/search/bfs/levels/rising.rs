//! A list of indices that mostly rises by small steps, a byte an index: the parents of a
//! level's first links (each parent's children come together) and the positions that have
//! further links (kept in position order). Each index is kept as the step from the one before;
//! every [`BLOCK`]th index is kept whole, so that reading one adds up at most a block's steps,
//! and a step that does not fit a byte (a long one, or one going back) is kept whole beside.

/// Indices a block: each block's first is kept whole.
const BLOCK: usize = 64;
/// A step byte saying "this index is among the far ones": a step this long, or one going back.
const FAR: u8 = u8::MAX;

/// Each index with where it is and its step byte: 0 at a block's start, [`FAR`] where the step
/// does not fit a byte.
fn with_steps(indices: impl Iterator<Item = u32>) -> impl Iterator<Item = (usize, u32, u8)> {
    indices.enumerate().scan(0u32, |last, (at, index)| {
        let step = match index.checked_sub(*last).filter(|&s| s < u32::from(FAR)) {
            _ if at % BLOCK == 0 => 0,
            Some(step) => step as u8,
            None => FAR,
        };
        *last = index;
        Some((at, index, step))
    })
}

/// How many of `indices` do not fit a step byte (each costs 8 bytes more).
pub(super) fn far_steps(indices: impl Iterator<Item = u32>) -> usize {
    with_steps(indices)
        .filter(|&(.., step)| step == FAR)
        .count()
}

/// The bytes `len` indices take, `far` of them far.
pub(super) fn bytes(len: usize, far: usize) -> usize {
    len + len.div_ceil(BLOCK) * 4 + far * 8
}

/// Appends `indices` to `out`, as [`Rising::read`] reads them: the steps, then each block's
/// first index, then each far index after where it is in the list (little-endian words).
pub(super) fn write(indices: impl Iterator<Item = u32> + Clone, out: &mut Vec<u8>) {
    out.extend(with_steps(indices.clone()).map(|(.., step)| step));
    for index in indices.clone().step_by(BLOCK) {
        out.extend_from_slice(&index.to_le_bytes());
    }
    for (at, index, step) in with_steps(indices) {
        if step == FAR {
            out.extend_from_slice(&(at as u32).to_le_bytes());
            out.extend_from_slice(&index.to_le_bytes());
        }
    }
}

/// Rising indices, as `write` left them in a level's bytes (see the module notes).
#[derive(Clone, Copy)]
pub(super) struct Rising<'a> {
    /// Each index less the one before ([`FAR`]: see `far`; a block's first is unused).
    steps: &'a [u8],
    /// Each block's first index, a word each.
    block_starts: &'a [u8],
    /// The indices whose step did not fit a byte, each after where it is in the list.
    far: &'a [u8],
}

/// The first of `0..len` for which `below` is false, `below` being true up to some point and
/// false from there on (a binary search over positions, not over a slice).
pub(super) fn partition(len: usize, below: impl Fn(usize) -> bool) -> usize {
    try_partition(len, |at| Ok::<_, std::convert::Infallible>(below(at)))
        .unwrap_or_else(|e| match e {})
}

/// [`partition`] with a test that may fail (a read from a file).
pub(super) fn try_partition<E>(
    len: usize,
    below: impl Fn(usize) -> Result<bool, E>,
) -> Result<usize, E> {
    let (mut low, mut high) = (0, len);
    while low < high {
        let middle = low + (high - low) / 2;
        if below(middle)? {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    Ok(low)
}

/// The little-endian word at byte `at`.
pub(super) fn word(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

impl<'a> Rising<'a> {
    /// The `len` indices, `far` of them far, at the start of `bytes`; and the bytes after them.
    pub(super) fn read(bytes: &'a [u8], len: usize, far: usize) -> (Rising<'a>, &'a [u8]) {
        let (steps, rest) = bytes.split_at(len);
        let (block_starts, rest) = rest.split_at(len.div_ceil(BLOCK) * 4);
        let (far, rest) = rest.split_at(far * 8);
        let rising = Rising {
            steps,
            block_starts,
            far,
        };
        (rising, rest)
    }

    pub(super) fn len(&self) -> usize {
        self.steps.len()
    }

    /// The far index at `n` in `far`.
    fn far_index(&self, n: usize) -> u32 {
        word(self.far, 8 * n + 4)
    }

    /// The indices from `from` on.
    pub(super) fn iter_from(self, from: usize) -> impl Iterator<Item = u32> + 'a {
        let block = from - from % BLOCK;
        let far_len = self.far.len() / 8;
        let mut far = partition(far_len, |n| (word(self.far, 8 * n) as usize) < block);
        let mut index = 0;
        (block..self.len()).filter_map(move |at| {
            index = if at % BLOCK == 0 {
                word(self.block_starts, 4 * (at / BLOCK))
            } else if self.steps[at] == FAR {
                far += 1;
                self.far_index(far - 1)
            } else {
                index + u32::from(self.steps[at])
            };
            (at >= from).then_some(index)
        })
    }

    pub(super) fn get(self, at: usize) -> u32 {
        self.iter_from(at).next().expect("an index in the list")
    }

    /// Where the first index not below `index` is, in a list kept in rising order (the length
    /// if there is none).
    pub(super) fn first_not_below(self, index: u32) -> usize {
        let blocks = self.block_starts.len() / 4;
        let blocks_below = partition(blocks, |b| word(self.block_starts, 4 * b) < index);
        let Some(block) = blocks_below.checked_sub(1) else {
            return 0;
        };
        let from = block * BLOCK;
        let found = self.iter_from(from).position(|i| i >= index);
        found.map_or(self.len(), |n| from + n)
    }
}

/// Where a rising list lies in a level's bytes, for reading it a piece at a time from a file
/// (see `disk.rs`): the same layout as [`Rising`], by offsets instead of slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RisingAt {
    steps: usize,
    block_starts: usize,
    far: usize,
    len: usize,
    far_len: usize,
}

impl RisingAt {
    /// The `len` indices, `far` of them far, starting at byte `at`; and where they end.
    pub(super) fn new(at: usize, len: usize, far: usize) -> (RisingAt, usize) {
        let block_starts = at + len;
        let rising = RisingAt {
            steps: at,
            block_starts,
            far: block_starts + len.div_ceil(BLOCK) * 4,
            len,
            far_len: far,
        };
        (rising, at + bytes(len, far))
    }

    /// The list in `bytes` (those of the whole level).
    pub(super) fn in_bytes(self, bytes: &[u8]) -> Rising<'_> {
        Rising::read(&bytes[self.steps..], self.len, self.far_len).0
    }

    /// The index at `at`, read through `read` (bytes at an offset in the level).
    pub(super) fn get<E>(self, read: &(impl ReadLevel<E> + ?Sized), at: usize) -> Result<u32, E> {
        let mut index = 0;
        self.scan(read, at, |_, i| {
            index = i;
            false
        })?;
        Ok(index)
    }

    /// Where the first index not below `index` is, in a list kept in rising order (the length
    /// if there is none): [`Rising::first_not_below`], read through `read`.
    pub(super) fn first_not_below<E>(
        self,
        read: &(impl ReadLevel<E> + ?Sized),
        index: u32,
    ) -> Result<usize, E> {
        let blocks = self.len.div_ceil(BLOCK);
        let blocks_below =
            try_partition(
                blocks,
                |b| Ok(read.word(self.block_starts + 4 * b)? < index),
            )?;
        let Some(block) = blocks_below.checked_sub(1) else {
            return Ok(0);
        };
        let mut found = self.len;
        self.scan(read, block * BLOCK, |at, i| {
            if i >= index {
                found = at;
            }
            i < index
        })?;
        Ok(found)
    }

    /// Calls `f(at, index)` for each index from `from` on, while it returns true.
    pub(super) fn scan<E>(
        self,
        read: &(impl ReadLevel<E> + ?Sized),
        from: usize,
        mut f: impl FnMut(usize, u32) -> bool,
    ) -> Result<(), E> {
        let mut block = from / BLOCK;
        let mut steps = [0u8; BLOCK];
        while block * BLOCK < self.len {
            let start = block * BLOCK;
            let steps = &mut steps[..BLOCK.min(self.len - start)];
            read.read(self.steps + start, steps)?;
            let mut index = read.word(self.block_starts + 4 * block)?;
            for (n, &step) in steps.iter().enumerate() {
                let at = start + n;
                if n > 0 {
                    index = match step {
                        FAR => self.far_index(read, at)?,
                        // (Wrapping: no valid list overflows, a damaged one must not panic.)
                        step => index.wrapping_add(u32::from(step)),
                    };
                }
                if at >= from && !f(at, index) {
                    return Ok(());
                }
            }
            block += 1;
        }
        Ok(())
    }

    /// The far index at `at` in the list: looked up among the far ones (kept by where they
    /// are); past every level's if there is none there (damaged bytes).
    fn far_index<E>(self, read: &(impl ReadLevel<E> + ?Sized), at: usize) -> Result<u32, E> {
        let where_at = |n: usize| read.word(self.far + 8 * n).map(|w| w as usize);
        let n = try_partition(self.far_len, |n| Ok(where_at(n)? < at))?;
        if n < self.far_len && where_at(n)? == at {
            read.word(self.far + 8 * n + 4)
        } else {
            Ok(u32::MAX)
        }
    }
}

/// A level's bytes, read a piece at a time (from a file: see `disk.rs`).
pub(crate) trait ReadLevel<E> {
    /// Fills `buffer` from byte `at` of the level.
    fn read(&self, at: usize, buffer: &mut [u8]) -> Result<(), E>;

    /// The little-endian word at byte `at`.
    fn word(&self, at: usize) -> Result<u32, E> {
        let mut bytes = [0u8; 4];
        self.read(at, &mut bytes)?;
        Ok(u32::from_le_bytes(bytes))
    }
}

/// (Tests: the level's bytes in memory.)
#[cfg(test)]
impl ReadLevel<()> for [u8] {
    fn read(&self, at: usize, buffer: &mut [u8]) -> Result<(), ()> {
        let bytes = self.get(at..at + buffer.len()).ok_or(())?;
        buffer.copy_from_slice(bytes);
        Ok(())
    }
}

/// Indices from `start`, each `step(i)` past the one before (tests here and in `packed.rs`).
#[cfg(test)]
pub(super) fn climbing(len: u32, start: u32, step: impl Fn(u32) -> u32) -> Vec<u32> {
    (0..len)
        .scan(start, |index, i| {
            *index += step(i);
            Some(*index)
        })
        .collect()
}

/// Steps of every size: none, small, 254, 255 and 70,000 (far steps one in 18 or so).
#[cfg(test)]
pub(super) fn every_size(i: u32) -> u32 {
    match i % 37 {
        0..=2 => 0,
        3 => 254,
        4 => 255,
        5 => 70_000,
        _ => i % 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(indices: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        write(indices.iter().copied(), &mut out);
        out
    }

    /// Steps of every size (none, small, 254, 255 and over), steps going back, the largest
    /// index: each index reads back as put in, alone and from anywhere on.
    #[test]
    fn every_index_reads_back_as_put_in() {
        let mut indices = climbing(1000, 5, every_size);
        indices[300] = 3;
        indices[64] = 1;
        indices[999] = u32::MAX;
        let far = far_steps(indices.iter().copied());
        assert!(far > 0, "the test meets far steps");
        let written = written(&indices);
        assert_eq!(written.len(), bytes(indices.len(), far));
        let (rising, rest) = Rising::read(&written, indices.len(), far);
        assert!(rest.is_empty());
        assert_eq!(rising.len(), indices.len());
        for (at, &index) in indices.iter().enumerate() {
            assert_eq!(rising.get(at), index, "at {at}");
        }
        for from in [0, 1, 63, 64, 65, 299, 301, 998, 999, 1000] {
            let read: Vec<u32> = rising.iter_from(from).collect();
            assert_eq!(read, indices[from..], "from {from}");
        }
        // The same, read a piece at a time (as from a file), three bytes in.
        let mut level = vec![7u8; 3];
        level.extend_from_slice(&written);
        let (at, end) = RisingAt::new(3, indices.len(), far);
        assert_eq!(end, level.len());
        assert_eq!(
            at.in_bytes(&level).iter_from(0).collect::<Vec<_>>(),
            indices
        );
        for (n, &index) in indices.iter().enumerate() {
            assert_eq!(at.get(&level[..], n), Ok(index), "at {n}");
        }
    }

    /// In a rising list, the first index not below any given one is found where a plain
    /// search of the list finds it, whatever the blocks and far steps.
    #[test]
    fn a_rising_list_is_searched_like_a_plain_one() {
        let indices = climbing(700, 0, |i| match i % 23 {
            0..=5 => 0,
            6 => 300,
            _ => i % 5,
        });
        let index = *indices.last().expect("indices");
        let written = written(&indices);
        let (rising, _) = Rising::read(&written, indices.len(), far_steps(indices.iter().copied()));
        let far = far_steps(indices.iter().copied());
        let (at, _) = RisingAt::new(0, indices.len(), far);
        for wanted in 0..=index + 2 {
            let plain = indices.partition_point(|&i| i < wanted);
            assert_eq!(rising.first_not_below(wanted), plain, "{wanted}");
            assert_eq!(
                at.first_not_below(&written[..], wanted),
                Ok(plain),
                "{wanted}"
            );
        }
        let (empty, _) = Rising::read(&[], 0, 0);
        assert_eq!(empty.first_not_below(7), 0);
    }
}
