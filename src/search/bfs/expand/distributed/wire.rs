//! What the ranks of a distributed pass send one another, as bytes (little-endian): a child
//! for its owner to keep or drop, a mate for every rank to order, the edges into a position
//! for a line being read back.

use crate::search::bfs::levels::level::Link;
use crate::shogi::{Move, PackedPosition};

/// A child sent to the rank that owns its key.
pub(super) struct Candidate {
    pub key: u128,
    /// Where it comes in the one-process pass's order (see `order_of`).
    pub order: u64,
    /// Its parent as a reference (see `node_ref`), and the moves from it.
    pub link: Link,
    /// Ways into its parent (counting; 1 otherwise).
    pub paths: u32,
    pub packed: PackedPosition,
    /// Where its checks are in the decoder's list.
    pub checks: std::ops::Range<usize>,
}

/// The order of the child `ordinal` (the how-many-th generated) of the position with the
/// global index `parent`: the one-process pass keeps a level's positions in this order.
pub(super) fn order_of(parent: u64, ordinal: u32) -> u64 {
    debug_assert!(parent < 1 << 40 && ordinal < 1 << 24);
    parent << 24 | u64::from(ordinal)
}

/// The parent's global index in `order` (see `order_of`).
pub(super) fn parent_of(order: u64) -> u64 {
    order >> 24
}

/// Position `local` of rank `rank` among `ranks`, in the `parent` field of a link.
pub(super) fn node_ref(rank: usize, local: u32, ranks: usize) -> Option<u32> {
    u32::try_from(local as u64 * ranks as u64 + rank as u64).ok()
}

/// The rank and local index of a `node_ref`.
pub(super) fn node_of(node: u32, ranks: usize) -> (usize, u32) {
    (node as usize % ranks, node / ranks as u32)
}

fn put_link(out: &mut Vec<u8>, link: &Link) {
    out.extend_from_slice(&link.parent.to_le_bytes());
    out.extend_from_slice(&link.check_place.to_le_bytes());
    out.extend_from_slice(&link.evasion_place.to_le_bytes());
}

/// Reads a byte buffer from the front; every read is checked (a short buffer is a bug of the
/// sender's, reported rather than a panic).
pub(super) struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_at_checked(N)?;
        self.0 = rest;
        head.try_into().ok()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn u16(&mut self) -> Option<u16> {
        self.take().map(u16::from_le_bytes)
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }

    pub fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }

    pub fn u128(&mut self) -> Option<u128> {
        self.take().map(u128::from_le_bytes)
    }

    pub fn link(&mut self) -> Option<Link> {
        Some(Link {
            parent: self.u32()?,
            check_place: self.u16()?,
            evasion_place: self.u16()?,
        })
    }
}

/// Appends a candidate: key, order, link, paths, the packed position, its checks.
pub(super) fn put_candidate(
    out: &mut Vec<u8>,
    (key, order, link, paths): (u128, u64, &Link, u32),
    packed: &PackedPosition,
    checks: &[Move],
) {
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&order.to_le_bytes());
    put_link(out, link);
    out.extend_from_slice(&paths.to_le_bytes());
    for word in packed.to_words() {
        out.extend_from_slice(&word.to_le_bytes());
    }
    out.extend_from_slice(&(checks.len() as u16).to_le_bytes());
    for check in checks {
        out.extend_from_slice(&check.raw().to_le_bytes());
    }
}

/// Reads the candidates of `bytes` into `candidates`, their checks into `checks`; None if
/// the buffer is damaged.
pub(super) fn read_candidates(
    bytes: &[u8],
    candidates: &mut Vec<Candidate>,
    checks: &mut Vec<Move>,
) -> Option<()> {
    let mut reader = Reader(bytes);
    while !reader.is_empty() {
        let key = reader.u128()?;
        let order = reader.u64()?;
        let link = reader.link()?;
        let paths = reader.u32()?;
        let mut words = [0u64; 6];
        for word in &mut words {
            *word = reader.u64()?;
        }
        let count = reader.u16()? as usize;
        let start = checks.len();
        for _ in 0..count {
            checks.push(Move::from_raw(reader.u16()?));
        }
        candidates.push(Candidate {
            key,
            order,
            link,
            paths,
            packed: PackedPosition::from_words(words),
            checks: start..checks.len(),
        });
    }
    Some(())
}

/// A mate as the ranks gather them: where it comes in the one-process order, its parent as a
/// reference, the check, the reply (HS#), the paths into the parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RankMate {
    pub order: u64,
    pub parent: u32,
    pub check: Move,
    pub reply: Option<Move>,
    pub paths: u32,
}

pub(super) fn put_mate(out: &mut Vec<u8>, mate: &RankMate) {
    out.extend_from_slice(&mate.order.to_le_bytes());
    out.extend_from_slice(&mate.parent.to_le_bytes());
    out.extend_from_slice(&mate.check.raw().to_le_bytes());
    out.push(u8::from(mate.reply.is_some()));
    out.extend_from_slice(&mate.reply.unwrap_or(Move::NULL).raw().to_le_bytes());
    out.extend_from_slice(&mate.paths.to_le_bytes());
}

pub(super) fn read_mates(bytes: &[u8], mates: &mut Vec<RankMate>) -> Option<()> {
    let mut reader = Reader(bytes);
    while !reader.is_empty() {
        let order = reader.u64()?;
        let parent = reader.u32()?;
        let check = Move::from_raw(reader.u16()?);
        let has_reply = reader.take::<1>()?[0] != 0;
        let reply = Move::from_raw(reader.u16()?);
        let paths = reader.u32()?;
        mates.push(RankMate {
            order,
            parent,
            check,
            reply: has_reply.then_some(reply),
            paths,
        });
    }
    Some(())
}

/// The edges into a position, for a line read back: a count, then the links.
pub(super) fn put_links(out: &mut Vec<u8>, links: &[Link]) {
    out.extend_from_slice(&(links.len() as u32).to_le_bytes());
    for link in links {
        put_link(out, link);
    }
}

pub(super) fn read_links(bytes: &[u8]) -> Option<Vec<Link>> {
    let mut reader = Reader(bytes);
    let count = reader.u32()?;
    let links = (0..count)
        .map(|_| reader.link())
        .collect::<Option<Vec<_>>>()?;
    reader.is_empty().then_some(links)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shogi::Position;

    #[test]
    fn what_is_sent_is_what_is_read() {
        let pos = Position::from_sfen("4k4/9/4P4/9/9/9/9/9/4K4 b G 1").unwrap();
        let link = Link {
            parent: 77,
            check_place: 0x1234,
            evasion_place: 0x0567,
        };
        let checks = [Move::from_raw(3), Move::from_raw(0x7fff)];
        let mut bytes = Vec::new();
        put_candidate(
            &mut bytes,
            (u128::MAX - 5, order_of(9, 4), &link, 3),
            &pos.pack(),
            &checks,
        );
        put_candidate(&mut bytes, (1, 2, &link, 1), &pos.pack(), &[]);
        let (mut read, mut read_checks) = (Vec::new(), Vec::new());
        read_candidates(&bytes, &mut read, &mut read_checks).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(
            (read[0].key, read[0].order, read[0].paths),
            (u128::MAX - 5, 9 << 24 | 4, 3)
        );
        assert!(read[0].link == link && read[0].packed == pos.pack());
        assert_eq!(&read_checks[read[0].checks.clone()], &checks);
        assert!(read[1].checks.is_empty());
        // Cut short: refused.
        assert!(read_candidates(&bytes[..bytes.len() - 1], &mut read, &mut read_checks).is_none());

        let mates = [
            RankMate {
                order: 5,
                parent: 6,
                check: Move::from_raw(7),
                reply: None,
                paths: 8,
            },
            RankMate {
                order: 1,
                parent: 2,
                check: Move::from_raw(3),
                reply: Some(Move::from_raw(4)),
                paths: 9,
            },
        ];
        let mut bytes = Vec::new();
        mates.iter().for_each(|m| put_mate(&mut bytes, m));
        let mut read = Vec::new();
        read_mates(&bytes, &mut read).unwrap();
        assert_eq!(read, mates);

        let mut bytes = Vec::new();
        put_links(&mut bytes, &[link, link]);
        assert!(read_links(&bytes).unwrap() == vec![link, link]);
        assert!(read_links(&bytes[..bytes.len() - 2]).is_none());

        for ranks in [1, 2, 3, 7] {
            for (rank, local) in [(0, 0), (ranks - 1, 12345)] {
                let node = node_ref(rank, local, ranks).unwrap();
                assert_eq!(node_of(node, ranks), (rank, local));
            }
        }
    }
}
