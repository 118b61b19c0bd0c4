//! A level's links as the graph holds them in memory: packed, since they are most of what a
//! long pass keeps besides its keys. A level's positions come in their parents' order (each
//! parent's new children in turn), so the first link into a position keeps its two moves but
//! its parent only as the step from the position before's parent (`rising.rs`): one byte
//! instead of four. The further ways in (counting) are kept in position order, so each keeps
//! its position the same way. 8 bytes a first link become about 5.1, 12 a further one about 9.1.

use super::level::{LevelEdges, Link};
use super::rising::{self, word, Rising};
use crate::shogi::Move;

/// The edges into one level's positions, packed (see the module notes), in one allocation: a
/// long narrow problem has tens of thousands of levels of a few hundred positions, where eight
/// vectors a level (and their headers) took more than a byte a position.
pub(crate) struct PackedEdges {
    /// [`HEADER`], then the first links (packed or plain), then the further ones.
    bytes: Box<[u8]>,
}

/// Four words: how many first links, how many further ones, and how many of each list's steps
/// are far ([`PLAIN`]: that list is kept plain).
const HEADER: usize = 16;
/// A list whose positions or parents do not come in order (more than one step in [`MOST_FAR`]
/// is far) is kept as it was: packing it would take more room, not less.
const PLAIN: u32 = u32::MAX;
/// Steps that do not fit a byte cost 9 bytes: past one in this many, a list stays plain.
const MOST_FAR: usize = 16;
/// A link's bytes: its parent, check and evasion.
const LINK: usize = 8;
/// A first link's check and evasion, when its parent is kept as a step.
const MOVES: usize = 4;
/// A plain further link's bytes: its position, then the link.
const FURTHER: usize = 4 + LINK;
/// What an allocation costs beyond its bytes (the allocator's header), counted in `bytes`.
const ALLOCATION: usize = 16;

fn push_link(out: &mut Vec<u8>, link: Link) {
    out.extend_from_slice(&link.parent.to_le_bytes());
    push_moves(out, link);
}

fn push_moves(out: &mut Vec<u8>, link: Link) {
    out.extend_from_slice(&link.check.raw().to_le_bytes());
    out.extend_from_slice(&link.evasion.raw().to_le_bytes());
}

fn moves_at(bytes: &[u8], at: usize) -> (Move, Move) {
    let half = |at: usize| Move::from_raw(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
    (half(at), half(at + 2))
}

fn link_at(bytes: &[u8], at: usize) -> Link {
    let (check, evasion) = moves_at(bytes, at + 4);
    Link {
        parent: word(bytes, at),
        check,
        evasion,
    }
}

/// How many of `indices` are far when packed, or [`PLAIN`] if too many for packing to pay.
fn far_or_plain(indices: impl Iterator<Item = u32>, len: usize) -> u32 {
    let far = rising::far_steps(indices);
    if far * MOST_FAR > len {
        PLAIN
    } else {
        far as u32
    }
}

/// A level's first links or further ones, read from its bytes.
enum List<'a> {
    /// Links (or, for first links, moves) a fixed size each, and the positions or parents.
    Packed(&'a [u8], Rising<'a>),
    /// Whole links (with their positions, for further ones).
    Plain(&'a [u8]),
}

impl PackedEdges {
    pub(crate) fn pack(edges: LevelEdges) -> PackedEdges {
        let LevelEdges { first, extra } = edges;
        let parents = || first.iter().map(|link| link.parent);
        let children = || extra.iter().map(|&(child, _)| child);
        let first_far = far_or_plain(parents(), first.len());
        let extra_far = far_or_plain(children(), extra.len());
        let first_bytes = match first_far {
            PLAIN => first.len() * LINK,
            far => first.len() * MOVES + rising::bytes(first.len(), far as usize),
        };
        let extra_bytes = match extra_far {
            PLAIN => extra.len() * FURTHER,
            far => extra.len() * LINK + rising::bytes(extra.len(), far as usize),
        };
        let mut out = Vec::with_capacity(HEADER + first_bytes + extra_bytes);
        for w in [first.len() as u32, extra.len() as u32, first_far, extra_far] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        if first_far == PLAIN {
            first.iter().for_each(|&link| push_link(&mut out, link));
        } else {
            first.iter().for_each(|&link| push_moves(&mut out, link));
            rising::write(parents(), &mut out);
        }
        if extra_far == PLAIN {
            for &(child, link) in &extra {
                out.extend_from_slice(&child.to_le_bytes());
                push_link(&mut out, link);
            }
        } else {
            extra
                .iter()
                .for_each(|&(_, link)| push_link(&mut out, link));
            rising::write(children(), &mut out);
        }
        debug_assert_eq!(out.len(), out.capacity());
        PackedEdges {
            bytes: out.into_boxed_slice(),
        }
    }

    /// The first links and the further ones, read from the bytes.
    fn lists(&self) -> (usize, List<'_>, usize, List<'_>) {
        let header = |n: usize| word(&self.bytes, 4 * n);
        let (first_len, extra_len) = (header(0) as usize, header(1) as usize);
        let rest = &self.bytes[HEADER..];
        let (first, rest) = match header(2) {
            PLAIN => {
                let (links, rest) = rest.split_at(first_len * LINK);
                (List::Plain(links), rest)
            }
            far => {
                let (moves, rest) = rest.split_at(first_len * MOVES);
                let (parents, rest) = Rising::read(rest, first_len, far as usize);
                (List::Packed(moves, parents), rest)
            }
        };
        let extra = match header(3) {
            PLAIN => List::Plain(rest),
            far => {
                let (links, rest) = rest.split_at(extra_len * LINK);
                List::Packed(links, Rising::read(rest, extra_len, far as usize).0)
            }
        };
        (first_len, first, extra_len, extra)
    }

    /// The first links, plain again (for the file, when memory runs short).
    pub(crate) fn first_links(&self) -> Vec<Link> {
        match self.lists() {
            (len, List::Packed(moves, parents), ..) => (0..len)
                .zip(parents.iter_from(0))
                .map(|(at, parent)| {
                    let (check, evasion) = moves_at(moves, MOVES * at);
                    Link {
                        parent,
                        check,
                        evasion,
                    }
                })
                .collect(),
            (len, List::Plain(links), ..) => (0..len).map(|at| link_at(links, LINK * at)).collect(),
        }
    }

    /// The further edges, plain again, by position.
    pub(crate) fn extra(&self) -> Vec<(u32, Link)> {
        match self.lists() {
            (.., List::Packed(links, children)) => children
                .iter_from(0)
                .enumerate()
                .map(|(at, child)| (child, link_at(links, LINK * at)))
                .collect(),
            (.., len, List::Plain(links)) => (0..len)
                .map(|at| (word(links, FURTHER * at), link_at(links, FURTHER * at + 4)))
                .collect(),
        }
    }

    /// The edges into position `child`: the first one, then the others.
    pub(crate) fn edges_into(&self, child: u32) -> Vec<Link> {
        let (_, first, extra_len, extra) = self.lists();
        let at = child as usize;
        let mut edges = vec![match first {
            List::Packed(moves, parents) => {
                let (check, evasion) = moves_at(moves, MOVES * at);
                Link {
                    parent: parents.get(at),
                    check,
                    evasion,
                }
            }
            List::Plain(links) => link_at(links, LINK * at),
        }];
        match extra {
            List::Packed(links, children) => {
                let start = children.first_not_below(child);
                let count = children
                    .iter_from(start)
                    .take_while(|&c| c == child)
                    .count();
                edges.extend((start..start + count).map(|at| link_at(links, LINK * at)));
            }
            List::Plain(links) => {
                let start = rising::partition(extra_len, |at| word(links, FURTHER * at) < child);
                let into = (start..extra_len).take_while(|&at| word(links, FURTHER * at) == child);
                edges.extend(into.map(|at| link_at(links, FURTHER * at + 4)));
            }
        }
        edges
    }

    /// Memory held, with the allocation's own header.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.len() + ALLOCATION
    }

    /// Whether the first links and the further ones are packed (tests).
    #[cfg(test)]
    fn is_packed(&self) -> (bool, bool) {
        let (_, first, _, extra) = self.lists();
        (
            matches!(first, List::Packed(..)),
            matches!(extra, List::Packed(..)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(parent: u32, n: u32) -> Link {
        Link {
            parent,
            check: Move::from_raw((n % 30_000 + 1) as u16),
            evasion: Move::from_raw((n * 7 % 30_000 + 2) as u16),
        }
    }

    fn plain(links: &[Link]) -> Vec<(u32, u16, u16)> {
        links
            .iter()
            .map(|l| (l.parent, l.check.raw(), l.evasion.raw()))
            .collect()
    }

    /// Each position's edges read back as they were put in, one by one and all together.
    fn reads_back(first: &[Link], extra: &[(u32, Link)], packed: &PackedEdges) {
        assert_eq!(plain(&packed.first_links()), plain(first));
        assert!(packed.extra() == extra);
        for (child, link) in first.iter().enumerate() {
            let got = packed.edges_into(child as u32);
            let want: Vec<Link> = std::iter::once(*link)
                .chain(extra.iter().filter(|e| e.0 == child as u32).map(|e| e.1))
                .collect();
            assert!(got == want, "position {child}");
        }
    }

    /// Parents in rising order with steps of every size, a parent before the last one, the
    /// largest index and the unset filler; further edges into positions near and far apart,
    /// several into one, across blocks: everything reads back as put in.
    #[test]
    fn every_link_reads_back_as_put_in() {
        // Far steps (255 and more) are one in 18 here: few enough to pack.
        let mut parents = rising::climbing(1000, 5, rising::every_size);
        parents[300] = 3; // before the last one
        parents[64] = 1; // a block's first
        parents[999] = u32::MAX;
        let first: Vec<Link> = parents
            .iter()
            .enumerate()
            .map(|(i, &p)| link(p, i as u32))
            .collect();
        // Into every position a multiple of 7 (three into some), then one far off.
        let mut extra: Vec<(u32, Link)> = (0..990u32)
            .step_by(7)
            .flat_map(|c| (0..1 + c % 3).map(move |k| (c, link(c + k, c * 3 + k))))
            .collect();
        extra.push((999, link(6, 4)));
        let edges = LevelEdges {
            first: first.clone(),
            extra: extra.clone(),
        };
        let packed = PackedEdges::pack(edges);
        assert_eq!(packed.is_packed(), (true, true));
        reads_back(&first, &extra, &packed);
        // Rising parents with small steps: about five bytes a first link; a further one in
        // every three positions: about nine bytes each.
        let rising: Vec<Link> = (0..64_000u32).map(|i| link(i / 3, i)).collect();
        let small = PackedEdges::pack(LevelEdges {
            first: rising,
            extra: Vec::new(),
        });
        assert!(small.bytes() <= 64_000 * 51 / 10, "{}", small.bytes());
        let further: Vec<(u32, Link)> =
            (0..64_000u32).step_by(3).map(|c| (c, link(c, c))).collect();
        let with_further = PackedEdges::pack(LevelEdges {
            first: (0..64_000u32).map(|i| link(i / 3, i)).collect(),
            extra: further.clone(),
        });
        let further_bytes = with_further.bytes() - small.bytes();
        assert!(further_bytes <= further.len() * 92 / 10, "{further_bytes}");
    }

    /// Parents and further positions in no order stay plain, and read back the same.
    #[test]
    fn links_in_no_order_stay_plain() {
        let shuffled: Vec<Link> = (0..1000u32).map(|i| link(i * 7919 % 1000, i)).collect();
        let scattered: Vec<(u32, Link)> = (0..100u32).map(|i| (i * 9, link(i, i))).collect();
        let packed = PackedEdges::pack(LevelEdges {
            first: shuffled.clone(),
            extra: scattered.clone(),
        });
        assert_eq!(packed.is_packed(), (false, true));
        reads_back(&shuffled, &scattered, &packed);
        let far_apart: Vec<(u32, Link)> = (0..10u32).map(|i| (i * 300, link(i, i))).collect();
        let rising: Vec<Link> = (0..3000u32).map(|i| link(i / 2, i)).collect();
        let packed = PackedEdges::pack(LevelEdges {
            first: rising.clone(),
            extra: far_apart.clone(),
        });
        assert_eq!(packed.is_packed(), (true, false));
        reads_back(&rising, &far_apart, &packed);
    }
}
