//! A level's links as the graph holds them in memory: packed, since they are most of what a
//! long pass keeps besides its keys. A level's positions come in their parents' order (each
//! parent's new children in turn), so the first link into a position keeps its two moves but
//! its parent only as the step from the position before's parent: one byte instead of four,
//! with the parent in full at the start of every block of [`BLOCK`] positions so that a look-up
//! adds up at most a block's steps. 8 bytes a first link become about 5.1. The further ways in
//! (counting) stay as they are.

use super::level::{LevelEdges, Link};
use crate::shogi::Move;

/// Positions a block: each block's first parent is kept in full.
const BLOCK: usize = 64;
/// A step byte saying "the parent is in `far`": a step this long, or a parent before the last.
const FAR: u8 = u8::MAX;

/// The edges into one level's positions, packed (see the module notes).
pub(crate) struct PackedEdges {
    first: Firsts,
    /// Further edges, sorted by position (as `LevelGraph::push` sorts them).
    extra: Vec<(u32, Link)>,
}

/// The first link into each position.
enum Firsts {
    Packed(Steps),
    /// Where parents do not come in order (more than one step in [`MOST_FAR`] is far), as they
    /// were: packing them would take more room, not less.
    Plain(Vec<Link>),
}

/// First links with their parents as steps.
struct Steps {
    /// The check and evasion, by position.
    moves: Vec<[Move; 2]>,
    /// The parent less the position before's, by position ([`FAR`]: see `far`; a block's first
    /// position's is unused).
    steps: Vec<u8>,
    /// The parent of each block's first position.
    block_parents: Vec<u32>,
    /// The parents whose step did not fit a byte, with their positions, in position order.
    far: Vec<(u32, u32)>,
}

/// Steps that do not fit a byte cost 9 bytes: past one in this many, links stay plain.
const MOST_FAR: usize = 16;

impl PackedEdges {
    pub(crate) fn pack(edges: LevelEdges) -> PackedEdges {
        let LevelEdges {
            mut first,
            mut extra,
        } = edges;
        extra.shrink_to_fit();
        let steps = Steps::of(&first);
        let first = if steps.far.len() * MOST_FAR > first.len() {
            first.shrink_to_fit();
            Firsts::Plain(first)
        } else {
            Firsts::Packed(steps)
        };
        PackedEdges { first, extra }
    }

    /// The first links, plain again (for the file, when memory runs short).
    pub(crate) fn first_links(&self) -> Vec<Link> {
        match &self.first {
            Firsts::Packed(steps) => steps.unpack(),
            Firsts::Plain(first) => first.clone(),
        }
    }

    /// The further edges, by position.
    pub(crate) fn extra(&self) -> &[(u32, Link)] {
        &self.extra
    }

    /// The edges into position `child`: the first one, then the others.
    pub(crate) fn edges_into(&self, child: u32) -> Vec<Link> {
        let first = match &self.first {
            Firsts::Packed(steps) => steps.first(child),
            Firsts::Plain(first) => first[child as usize],
        };
        let start = self.extra.partition_point(|&(c, _)| c < child);
        let others = self.extra[start..]
            .iter()
            .take_while(|&&(c, _)| c == child)
            .map(|&(_, link)| link);
        std::iter::once(first).chain(others).collect()
    }

    /// Memory held, counting spare capacity.
    pub(crate) fn bytes(&self) -> usize {
        let first = match &self.first {
            Firsts::Packed(steps) => steps.bytes(),
            Firsts::Plain(first) => first.capacity() * std::mem::size_of::<Link>(),
        };
        first + self.extra.capacity() * std::mem::size_of::<(u32, Link)>()
    }

    /// Whether the first links are packed (tests).
    #[cfg(test)]
    fn is_packed(&self) -> bool {
        matches!(self.first, Firsts::Packed(_))
    }
}

impl Steps {
    fn of(first: &[Link]) -> Steps {
        let mut moves = Vec::with_capacity(first.len());
        let mut steps = Vec::with_capacity(first.len());
        let mut block_parents = Vec::with_capacity(first.len().div_ceil(BLOCK));
        let mut far = Vec::new();
        let mut last = 0u32;
        for (child, link) in first.iter().enumerate() {
            moves.push([link.check, link.evasion]);
            if child % BLOCK == 0 {
                block_parents.push(link.parent);
                steps.push(0);
            } else {
                match link
                    .parent
                    .checked_sub(last)
                    .filter(|&s| s < u32::from(FAR))
                {
                    Some(step) => steps.push(step as u8),
                    None => {
                        steps.push(FAR);
                        far.push((child as u32, link.parent));
                    }
                }
            }
            last = link.parent;
        }
        far.shrink_to_fit();
        Steps {
            moves,
            steps,
            block_parents,
            far,
        }
    }

    fn unpack(&self) -> Vec<Link> {
        let mut first = Vec::with_capacity(self.moves.len());
        let mut far = self.far.iter();
        let mut parent = 0u32;
        for (child, (&[check, evasion], &step)) in self.moves.iter().zip(&self.steps).enumerate() {
            parent = if child % BLOCK == 0 {
                self.block_parents[child / BLOCK]
            } else if step == FAR {
                far.next().expect("a far parent for every FAR step").1
            } else {
                parent + u32::from(step)
            };
            first.push(Link {
                parent,
                check,
                evasion,
            });
        }
        first
    }

    /// The first link into position `child`.
    fn first(&self, child: u32) -> Link {
        let child = child as usize;
        let block = child - child % BLOCK;
        let mut parent = self.block_parents[child / BLOCK];
        for at in block + 1..=child {
            parent = match self.steps[at] {
                FAR => {
                    let i = self.far.partition_point(|&(c, _)| (c as usize) < at);
                    self.far[i].1
                }
                step => parent + u32::from(step),
            };
        }
        let [check, evasion] = self.moves[child];
        Link {
            parent,
            check,
            evasion,
        }
    }

    fn bytes(&self) -> usize {
        self.moves.capacity() * std::mem::size_of::<[Move; 2]>()
            + self.steps.capacity()
            + self.block_parents.capacity() * 4
            + self.far.capacity() * 8
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

    fn plain(edges: &LevelEdges) -> Vec<(u32, u16, u16)> {
        edges
            .first
            .iter()
            .map(|l| (l.parent, l.check.raw(), l.evasion.raw()))
            .collect()
    }

    /// Parents in rising order with steps of every size (0, small, 254, 255 and over), a parent
    /// before the last one, the largest index and the unset filler: each position's edges read
    /// back as they were put in, one by one and all together.
    #[test]
    fn every_link_reads_back_as_put_in() {
        let mut parents = Vec::new();
        let mut parent = 5u32;
        for i in 0..1000u32 {
            // Far steps (255 and more) are one in 18 here: few enough to pack.
            parent += match i % 37 {
                0..=2 => 0,
                3 => 254,
                4 => 255,
                5 => 70_000,
                _ => i % 4,
            };
            parents.push(parent);
        }
        parents[300] = 3; // before the last one
        parents[64] = 1; // a block's first
        parents[999] = u32::MAX;
        let first: Vec<Link> = parents
            .iter()
            .enumerate()
            .map(|(i, &p)| link(p, i as u32))
            .collect();
        let extra = vec![
            (0, link(9, 1)),
            (64, link(8, 2)),
            (64, link(7, 3)),
            (999, link(6, 4)),
        ];
        let edges = LevelEdges {
            first: first.clone(),
            extra: extra.clone(),
        };
        let before = plain(&edges);
        let packed = PackedEdges::pack(edges);
        assert!(
            matches!(&packed.first, Firsts::Packed(steps) if !steps.far.is_empty()),
            "the test meets far steps"
        );
        assert_eq!(
            plain(&LevelEdges {
                first: packed.first_links(),
                extra: Vec::new()
            }),
            before
        );
        assert!(packed.extra() == extra);
        for (child, link) in first.iter().enumerate() {
            let got = packed.edges_into(child as u32);
            let want: Vec<Link> = std::iter::once(*link)
                .chain(extra.iter().filter(|e| e.0 == child as u32).map(|e| e.1))
                .collect();
            assert!(got == want, "position {child}");
        }
        // Rising parents with small steps: about five bytes a first link.
        let rising: Vec<Link> = (0..64_000u32).map(|i| link(i / 3, i)).collect();
        let small = PackedEdges::pack(LevelEdges {
            first: rising,
            extra: Vec::new(),
        });
        assert!(small.bytes() <= 64_000 * 51 / 10, "{}", small.bytes());
        // Parents in no order stay plain, and read back the same.
        let shuffled: Vec<Link> = (0..1000u32).map(|i| link(i * 7919 % 1000, i)).collect();
        let plain_edges = PackedEdges::pack(LevelEdges {
            first: shuffled.clone(),
            extra: Vec::new(),
        });
        assert!(!plain_edges.is_packed());
        for (child, link) in shuffled.iter().enumerate() {
            assert!(plain_edges.edges_into(child as u32) == vec![*link]);
        }
    }
}
