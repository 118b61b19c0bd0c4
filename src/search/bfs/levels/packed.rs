//! A level's links as the graph holds them in memory: packed, since they are most of what a
//! long pass keeps besides its keys. A level's positions come in their parents' order (each
//! parent's new children in turn), so the first link into a position keeps its parent only as
//! the step from the position before's parent (`rising.rs`): one byte instead of four. Its two
//! places (see `Link`) take a byte each where all of the list's do, as nearly always (two
//! otherwise). The further ways in (counting) are kept in position order, so each keeps its
//! position the same way. 8 bytes a first link become about 3.1, 12 a further one about 7.1.
//! The links file keeps a level in the same bytes (`disk.rs`), read back through
//! [`edges_into_read`] a few pieces at a time.

use super::level::{LevelEdges, Link};
use super::rising::{self, word, ReadLevel, Rising, RisingAt};

/// The edges into one level's positions, packed (see the module notes), in one allocation: a
/// long narrow problem has tens of thousands of levels of a few hundred positions, where eight
/// vectors a level (and their headers) took more than a byte a position.
pub(crate) struct PackedEdges {
    /// [`HEADER`], then the first links (packed or plain), then the further ones.
    bytes: Box<[u8]>,
}

/// Five words: how many first links, how many further ones, how many of each list's steps
/// are far ([`PLAIN`]: that list is kept plain), and each list's [`Width`] (a byte each).
const HEADER: usize = 20;
/// A list whose positions or parents do not come in order (more than one step in [`MOST_FAR`]
/// is far) is kept as it was: packing it would take more room, not less.
const PLAIN: u32 = u32::MAX;
/// Steps that do not fit a byte cost 9 bytes: past one in this many, a list stays plain.
const MOST_FAR: usize = 16;
/// A parent's or a position's index, kept whole.
const INDEX: usize = 4;
/// What an allocation costs beyond its bytes (the allocator's header), counted in `bytes`.
const ALLOCATION: usize = 16;

/// The bytes a list keeps each place in: one when all its places fit one, else two.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Width(usize);

impl Width {
    fn of<'a>(mut links: impl Iterator<Item = &'a Link>) -> Width {
        let wide = |l: &Link| l.check_place > 0xff || l.evasion_place > 0xff;
        Width(if links.any(wide) { 2 } else { 1 })
    }

    /// A link's two places.
    fn places(self) -> usize {
        2 * self.0
    }

    /// A whole link: its parent and its places.
    fn link(self) -> usize {
        INDEX + self.places()
    }

    /// A plain further link: its position, then the link.
    fn further(self) -> usize {
        INDEX + self.link()
    }

    fn push_places(self, out: &mut Vec<u8>, link: Link) {
        // (Each width its own constant-sized write: a slice of the width's length was a call
        // to `memcpy` a place.)
        for place in [link.check_place, link.evasion_place] {
            match self.0 {
                1 => out.push(place as u8),
                _ => out.extend_from_slice(&place.to_le_bytes()),
            }
        }
    }

    fn push_link(self, out: &mut Vec<u8>, link: Link) {
        out.extend_from_slice(&link.parent.to_le_bytes());
        self.push_places(out, link);
    }

    /// The places at `at`.
    fn places_at(self, bytes: &[u8], at: usize) -> (u16, u16) {
        let place = |at: usize| match self.0 {
            1 => u16::from(bytes[at]),
            _ => u16::from_le_bytes([bytes[at], bytes[at + 1]]),
        };
        (place(at), place(at + self.0))
    }

    /// The link at `at`, its parent given (a packed first link's comes from the steps).
    fn link_with(self, bytes: &[u8], at: usize, parent: u32) -> Link {
        let (check_place, evasion_place) = self.places_at(bytes, at);
        Link {
            parent,
            check_place,
            evasion_place,
        }
    }

    /// The whole link at `at`.
    fn link_at(self, bytes: &[u8], at: usize) -> Link {
        self.link_with(bytes, at + INDEX, word(bytes, at))
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
    /// Links (or, for first links, places) a fixed size each, and the positions or parents.
    Packed(&'a [u8], Rising<'a>, Width),
    /// Whole links (with their positions, for further ones).
    Plain(&'a [u8], Width),
}

impl PackedEdges {
    pub(crate) fn pack(edges: LevelEdges) -> PackedEdges {
        let LevelEdges { first, extra } = edges;
        let parents = || first.iter().map(|link| link.parent);
        let children = || extra.iter().map(|&(child, _)| child);
        let first_far = far_or_plain(parents(), first.len());
        let extra_far = far_or_plain(children(), extra.len());
        let first_width = Width::of(first.iter());
        let extra_width = Width::of(extra.iter().map(|(_, link)| link));
        let first_bytes = match first_far {
            PLAIN => first.len() * first_width.link(),
            far => first.len() * first_width.places() + rising::bytes(first.len(), far as usize),
        };
        let extra_bytes = match extra_far {
            PLAIN => extra.len() * extra_width.further(),
            far => extra.len() * extra_width.link() + rising::bytes(extra.len(), far as usize),
        };
        let mut out = Vec::with_capacity(HEADER + first_bytes + extra_bytes);
        let widths = (first_width.0 | extra_width.0 << 8) as u32;
        for w in [
            first.len() as u32,
            extra.len() as u32,
            first_far,
            extra_far,
            widths,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        if first_far == PLAIN {
            first
                .iter()
                .for_each(|&link| first_width.push_link(&mut out, link));
        } else {
            first
                .iter()
                .for_each(|&link| first_width.push_places(&mut out, link));
            rising::write(parents(), &mut out);
        }
        if extra_far == PLAIN {
            for &(child, link) in &extra {
                out.extend_from_slice(&child.to_le_bytes());
                extra_width.push_link(&mut out, link);
            }
        } else {
            extra
                .iter()
                .for_each(|&(_, link)| extra_width.push_link(&mut out, link));
            rising::write(children(), &mut out);
        }
        debug_assert_eq!(out.len(), out.capacity());
        PackedEdges {
            bytes: out.into_boxed_slice(),
        }
    }

    /// The packed bytes, as a file keeps them (see `disk.rs`: read back through
    /// [`edges_into_read`]).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// How many first links (positions of the level) and further ones.
    pub(crate) fn lens(&self) -> (u32, u32) {
        (word(&self.bytes, 0), word(&self.bytes, 4))
    }

    /// Memory held, with the allocation's own header.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.len() + ALLOCATION
    }

    /// The first links and the further ones, read from the bytes.
    fn lists(&self) -> (usize, List<'_>, usize, List<'_>) {
        let header = self.bytes.first_chunk::<HEADER>().expect("a header");
        let layout = Layout::of(header, self.bytes.len()).expect("a level's bytes as packed");
        let list = |at: ListAt| match at {
            ListAt::Plain { at, width } => List::Plain(&self.bytes[at..], width),
            ListAt::Packed { at, rising, width } => {
                List::Packed(&self.bytes[at..], rising.in_bytes(&self.bytes), width)
            }
        };
        (
            layout.first_len,
            list(layout.first),
            layout.extra_len,
            list(layout.extra),
        )
    }

    /// The first links, plain again (tests).
    #[cfg(test)]
    fn first_links(&self) -> Vec<Link> {
        match self.lists() {
            (len, List::Packed(places, parents, width), ..) => (0..len)
                .zip(parents.iter_from(0))
                .map(|(at, parent)| width.link_with(places, width.places() * at, parent))
                .collect(),
            (len, List::Plain(links, width), ..) => (0..len)
                .map(|at| width.link_at(links, width.link() * at))
                .collect(),
        }
    }

    /// The further edges, plain again, by position (tests).
    #[cfg(test)]
    fn extra(&self) -> Vec<(u32, Link)> {
        match self.lists() {
            (.., List::Packed(links, children, width)) => children
                .iter_from(0)
                .enumerate()
                .map(|(at, child)| (child, width.link_at(links, width.link() * at)))
                .collect(),
            (.., len, List::Plain(links, width)) => (0..len)
                .map(|at| {
                    let at = width.further() * at;
                    (word(links, at), width.link_at(links, at + INDEX))
                })
                .collect(),
        }
    }

    /// The edges into position `child`: the first one, then the others; None if the level has
    /// no such position.
    pub(crate) fn edges_into(&self, child: u32) -> Option<Vec<Link>> {
        let (first_len, first, extra_len, extra) = self.lists();
        let at = child as usize;
        if at >= first_len {
            return None;
        }
        let mut edges = vec![match first {
            List::Packed(places, parents, width) => {
                width.link_with(places, width.places() * at, parents.get(at))
            }
            List::Plain(links, width) => width.link_at(links, width.link() * at),
        }];
        match extra {
            List::Packed(links, children, width) => {
                let start = children.first_not_below(child);
                let count = children
                    .iter_from(start)
                    .take_while(|&c| c == child)
                    .count();
                edges.extend(
                    (start..start + count).map(|at| width.link_at(links, width.link() * at)),
                );
            }
            List::Plain(links, width) => {
                let further = width.further();
                let start = rising::partition(extra_len, |at| word(links, further * at) < child);
                let into = (start..extra_len).take_while(|&at| word(links, further * at) == child);
                edges.extend(into.map(|at| width.link_at(links, further * at + INDEX)));
            }
        }
        Some(edges)
    }

    /// Whether the first links and the further ones are packed, and their places' widths
    /// (tests).
    #[cfg(test)]
    fn layout(&self) -> ((bool, usize), (bool, usize)) {
        let of = |list: &List| match list {
            List::Packed(.., width) => (true, width.0),
            List::Plain(_, width) => (false, width.0),
        };
        let (_, first, _, extra) = self.lists();
        (of(&first), of(&extra))
    }
}

/// Where a level's two lists lie in its bytes, from its header alone.
#[derive(Clone, Copy)]
struct Layout {
    first_len: usize,
    extra_len: usize,
    first: ListAt,
    extra: ListAt,
}

/// Where one list lies.
#[derive(Clone, Copy)]
enum ListAt {
    /// Whole links from `at` (with their positions, for further ones).
    Plain { at: usize, width: Width },
    /// Links (or, for first links, places) from `at`, and the positions or parents.
    Packed {
        at: usize,
        rising: RisingAt,
        width: Width,
    },
}

impl Layout {
    /// The layout `header` gives a level of `len` bytes; None if its widths are none or its
    /// lists would not take exactly those bytes (damaged bytes read back from a file).
    fn of(header: &[u8; HEADER], len: usize) -> Option<Layout> {
        let field = |n: usize| word(header, 4 * n);
        let (first_len, extra_len) = (field(0) as usize, field(1) as usize);
        let widths = field(4) as usize;
        let width = |w: usize| [1, 2].contains(&w).then_some(Width(w));
        let (first_width, extra_width) = (width(widths & 0xff)?, width(widths >> 8)?);
        // Each list from `at`: where it is and where it ends.
        let list = |at: usize, len: usize, far: u32, width: Width, plain: usize, packed: usize| {
            Some(match far {
                PLAIN => (
                    ListAt::Plain { at, width },
                    at.checked_add(len.checked_mul(plain)?)?,
                ),
                far if far as usize <= len => {
                    let rising_at = at.checked_add(len.checked_mul(packed)?)?;
                    let (rising, end) = RisingAt::new(rising_at, len, far as usize);
                    (ListAt::Packed { at, rising, width }, end)
                }
                _ => return None,
            })
        };
        let (first, first_end) = list(
            HEADER,
            first_len,
            field(2),
            first_width,
            first_width.link(),
            first_width.places(),
        )?;
        let (extra, end) = list(
            first_end,
            extra_len,
            field(3),
            extra_width,
            extra_width.further(),
            extra_width.link(),
        )?;
        (end == len).then_some(Layout {
            first_len,
            extra_len,
            first,
            extra,
        })
    }
}

/// The edges into position `child` of a level of `len` bytes read through `read` (from a
/// file): [`PackedEdges::edges_into`], reading only the few bytes it needs. None if the level
/// has no such position, or if its bytes are not a level of `lens` (first links, further ones)
/// — damaged; within that, damaged bytes may read as wrong links, never as a panic.
pub(crate) fn edges_into_read<E>(
    read: &(impl ReadLevel<E> + ?Sized),
    len: usize,
    lens: (u32, u32),
    child: u32,
) -> Result<Option<Vec<Link>>, E> {
    let mut header = [0u8; HEADER];
    if len < HEADER {
        return Ok(None);
    }
    read.read(0, &mut header)?;
    let Some(layout) = Layout::of(&header, len) else {
        return Ok(None);
    };
    if (layout.first_len, layout.extra_len) != (lens.0 as usize, lens.1 as usize)
        || child as usize >= layout.first_len
    {
        return Ok(None);
    }
    let at = child as usize;
    // A link (or its places) of `width` at byte `at`, its parent given or kept before it.
    let link_at = |at: usize, width: Width, parent: Option<u32>| -> Result<Link, E> {
        let mut bytes = [0u8; INDEX + 4];
        match parent {
            Some(parent) => {
                let bytes = &mut bytes[..width.places()];
                read.read(at, bytes)?;
                Ok(width.link_with(bytes, 0, parent))
            }
            None => {
                let bytes = &mut bytes[..width.link()];
                read.read(at, bytes)?;
                Ok(width.link_at(bytes, 0))
            }
        }
    };
    let mut edges = vec![match layout.first {
        ListAt::Packed {
            at: places,
            rising,
            width,
        } => {
            let parent = rising.get(read, at)?;
            link_at(places + width.places() * at, width, Some(parent))?
        }
        ListAt::Plain { at: links, width } => link_at(links + width.link() * at, width, None)?,
    }];
    match layout.extra {
        ListAt::Packed {
            at: links,
            rising,
            width,
        } => {
            let start = rising.first_not_below(read, child)?;
            let mut count = 0;
            rising.scan(read, start, |_, c| {
                count += usize::from(c == child);
                c == child
            })?;
            for at in start..start + count {
                edges.push(link_at(links + width.link() * at, width, None)?);
            }
        }
        ListAt::Plain { at: links, width } => {
            let further = width.further();
            let start = rising::try_partition(layout.extra_len, |at| {
                Ok(read.word(links + further * at)? < child)
            })?;
            for at in start..layout.extra_len {
                if read.word(links + further * at)? != child {
                    break;
                }
                edges.push(link_at(links + further * at + INDEX, width, None)?);
            }
        }
    }
    Ok(Some(edges))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link with places below 256, as nearly all are.
    fn link(parent: u32, n: u32) -> Link {
        Link {
            parent,
            check_place: (n % 97) as u16,
            evasion_place: (n * 7 % 251) as u16,
        }
    }

    /// A link with `n`'s places over the whole range a place may take.
    fn wide_link(parent: u32, n: u32) -> Link {
        Link {
            parent,
            check_place: (n * 977 % 600) as u16,
            evasion_place: (n * 31 % 65_536) as u16,
        }
    }

    /// Each position's edges read back as they were put in, one by one and all together.
    /// (In memory, and a piece at a time as from a file.)
    fn reads_back(first: &[Link], extra: &[(u32, Link)], packed: &PackedEdges) {
        assert_eq!(packed.first_links(), first);
        assert!(packed.extra() == extra);
        let (bytes, lens) = (packed.as_bytes(), packed.lens());
        assert_eq!(lens, (first.len() as u32, extra.len() as u32));
        for (child, link) in first.iter().enumerate() {
            let want: Vec<Link> = std::iter::once(*link)
                .chain(extra.iter().filter(|e| e.0 == child as u32).map(|e| e.1))
                .collect();
            assert!(
                packed.edges_into(child as u32) == Some(want.clone()),
                "{child}"
            );
            let read = edges_into_read(bytes, bytes.len(), lens, child as u32);
            assert_eq!(
                read,
                Ok(Some(want)),
                "position {child}, read as from a file"
            );
        }
        let past = first.len() as u32;
        assert!(packed.edges_into(past).is_none());
        assert_eq!(edges_into_read(bytes, bytes.len(), lens, past), Ok(None));
        let other_lens = (lens.0, lens.1 + 1);
        assert_eq!(edges_into_read(bytes, bytes.len(), other_lens, 0), Ok(None));
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
        assert_eq!(packed.layout(), ((true, 1), (true, 1)));
        reads_back(&first, &extra, &packed);
        // Rising parents with small steps: about three bytes a first link; a further one in
        // every three positions: about seven bytes each.
        let rising: Vec<Link> = (0..64_000u32).map(|i| link(i / 3, i)).collect();
        let small = PackedEdges::pack(LevelEdges {
            first: rising,
            extra: Vec::new(),
        });
        assert!(small.bytes() <= 64_000 * 31 / 10, "{}", small.bytes());
        let further: Vec<(u32, Link)> =
            (0..64_000u32).step_by(3).map(|c| (c, link(c, c))).collect();
        let with_further = PackedEdges::pack(LevelEdges {
            first: (0..64_000u32).map(|i| link(i / 3, i)).collect(),
            extra: further.clone(),
        });
        let further_bytes = with_further.bytes() - small.bytes();
        assert!(further_bytes <= further.len() * 72 / 10, "{further_bytes}");
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
        assert_eq!(packed.layout(), ((false, 1), (true, 1)));
        reads_back(&shuffled, &scattered, &packed);
        let far_apart: Vec<(u32, Link)> = (0..10u32).map(|i| (i * 300, link(i, i))).collect();
        let rising: Vec<Link> = (0..3000u32).map(|i| link(i / 2, i)).collect();
        let packed = PackedEdges::pack(LevelEdges {
            first: rising.clone(),
            extra: far_apart.clone(),
        });
        assert_eq!(packed.layout(), ((true, 1), (false, 1)));
        reads_back(&rising, &far_apart, &packed);
    }

    /// A list with one place past a byte keeps all its places in two bytes, packed or plain,
    /// the other list in one; all read back as put in.
    #[test]
    fn places_past_a_byte_take_two() {
        for wide_first in [false, true] {
            let make = |i: u32, parent: u32, wide: bool| match wide {
                true => wide_link(parent, i),
                false => link(parent, i),
            };
            let rising: Vec<Link> = (0..3000u32).map(|i| make(i, i / 2, wide_first)).collect();
            let shuffled: Vec<Link> = (0..1000u32)
                .map(|i| make(i, i * 7919 % 1000, wide_first))
                .collect();
            let near: Vec<(u32, Link)> = (0..900u32)
                .step_by(3)
                .map(|c| (c, make(c, c / 2, !wide_first)))
                .collect();
            let far_apart: Vec<(u32, Link)> = (0..10u32)
                .map(|i| (i * 300, make(i, i, !wide_first)))
                .collect();
            let (first_width, extra_width) = if wide_first { (2, 1) } else { (1, 2) };
            for (first, extra, packed_lists) in [
                (&rising, &near, (true, true)),
                (&shuffled, &far_apart, (false, false)),
            ] {
                let packed = PackedEdges::pack(LevelEdges {
                    first: first.clone(),
                    extra: extra.clone(),
                });
                assert_eq!(
                    packed.layout(),
                    ((packed_lists.0, first_width), (packed_lists.1, extra_width))
                );
                reads_back(first, extra, &packed);
            }
        }
    }

    /// Bytes read back from a damaged file: a header that does not fit them is refused, and
    /// whatever else a byte changed into, reading every position's edges never panics.
    #[test]
    fn damaged_bytes_are_refused_or_read_without_a_panic() {
        let mut parents = rising::climbing(300, 5, |i| i % 4);
        parents[200] = 3;
        // A block's first index near the largest: a step damaged into a long one overflows.
        parents[256] = u32::MAX - 3;
        let first: Vec<Link> = parents
            .iter()
            .enumerate()
            .map(|(i, &p)| link(p, i as u32))
            .collect();
        let extra: Vec<(u32, Link)> = (0..290u32).step_by(5).map(|c| (c, link(c, c))).collect();
        let packed = PackedEdges::pack(LevelEdges { first, extra });
        assert_eq!(
            packed.layout(),
            ((true, 1), (true, 1)),
            "far steps to damage"
        );
        let (bytes, lens) = (packed.as_bytes(), packed.lens());
        assert!(edges_into_read(&bytes[..bytes.len() - 1], bytes.len() - 1, lens, 0) == Ok(None));
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(edges_into_read(&longer[..], longer.len(), lens, 0) == Ok(None));
        let mut refused = 0;
        for at in 0..bytes.len() {
            for value in [0u8, 1, 2, 0x7f, 0xfe, 0xff] {
                let mut damaged = bytes.to_vec();
                damaged[at] = value;
                let read = |child| edges_into_read(&damaged[..], damaged.len(), lens, child);
                refused += usize::from(read(0) == Ok(None));
                for child in 0..lens.0 + 2 {
                    assert!(read(child).is_ok(), "reads stay within the level");
                }
            }
        }
        assert!(refused > 0, "some headers damaged beyond use");
    }
}
