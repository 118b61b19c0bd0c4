//! Phase 3 of a threaded level: the owners' new positions merged into the next level, in the
//! order one thread would have made it.

use super::slice::Inserted;
use crate::search::bfs::levels::level::{LevelEdges, LevelPositions, Link};
use crate::shogi::Move;
use rayon::prelude::*;

/// Every owner's new positions as (order, owner, index), in order. Each owner's are in order
/// already: two owners' runs are merged in one pass (the stable sort took a third of a narrow
/// level's merge), more by a stable sort, which merges runs.
pub(super) fn merged_order(inserted: &[Inserted]) -> Vec<(u64, u32, u32)> {
    let run = |owner: usize| {
        inserted[owner]
            .new
            .iter()
            .enumerate()
            .map(move |(i, n)| (n.order, owner as u32, i as u32))
    };
    if let [a, b] = inserted {
        let mut order = Vec::with_capacity(a.new.len() + b.new.len());
        let (mut a, mut b) = (run(0).peekable(), run(1).peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 <= y.0 => a.next(),
                (Some(_), Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, _) => b.next(),
            };
            match next {
                Some(entry) => order.push(entry),
                None => return order,
            }
        }
    }
    let mut order: Vec<(u64, u32, u32)> = (0..inserted.len()).flat_map(run).collect();
    order.sort_by_key(|&(o, _, _)| o);
    order
}

/// Positions a block of the parallel merge copies.
const MERGE_BLOCK: usize = 4096;

/// The next level from the owners' new positions, taken in `order` (order, owner, index):
/// the positions with their checks, their ways in (counting) and their edges. A wide level is
/// copied on all threads, block by block: on one thread the copy was a tenth of a level's time
/// at two threads.
pub(super) fn merge(
    pool: &rayon::ThreadPool,
    inserted: &[Inserted],
    order: &[(u64, u32, u32)],
    counting: bool,
) -> (LevelPositions, Vec<u32>, LevelEdges) {
    let new = |&(_, owner, i): &(u64, u32, u32)| &inserted[owner as usize].new[i as usize];
    let mut next = LevelPositions::default();
    let mut counts = Vec::new();
    let mut edges = LevelEdges::default();
    next.ends.reserve_exact(order.len());
    let mut end = 0u32;
    for entry in order {
        end += new(entry).checks.1;
        next.ends.push(end);
    }
    next.checks = vec![Move::NULL; end as usize];
    // The checks' room, cut block by block.
    let mut check_blocks: Vec<&mut [Move]> = Vec::with_capacity(order.len() / MERGE_BLOCK + 1);
    let mut rest: &mut [Move] = &mut next.checks;
    let mut taken = 0u32;
    for block in next.ends.chunks(MERGE_BLOCK) {
        let last = *block.last().expect("chunks are never empty");
        let (head, tail) = std::mem::take(&mut rest).split_at_mut((last - taken) as usize);
        check_blocks.push(head);
        rest = tail;
        taken = last;
    }
    let copy_checks = |(entries, out): (&[(u64, u32, u32)], &mut [Move])| {
        let mut at = 0;
        for entry in entries {
            let (owner, n) = (entry.1 as usize, new(entry));
            let (start, len) = (n.checks.0 as usize, n.checks.1 as usize);
            out[at..at + len].copy_from_slice(&inserted[owner].checks[start..start + len]);
            at += len;
        }
    };
    // Inside the pool: a level under two blocks is not split, and no other thread is woken.
    pool.install(|| {
        let entries = || order.par_iter().with_min_len(MERGE_BLOCK);
        entries()
            .map(|e| new(e).packed)
            .collect_into_vec(&mut next.packed);
        entries()
            .map(|e| new(e).link)
            .collect_into_vec(&mut edges.first);
        if counting {
            entries()
                .map(|e| new(e).paths)
                .collect_into_vec(&mut counts);
        }
        order
            .par_chunks(MERGE_BLOCK)
            .with_min_len(2)
            .zip(check_blocks)
            .for_each(copy_checks);
    });
    if counting {
        let mut global: Vec<Vec<u32>> = inserted.iter().map(|o| vec![0; o.new.len()]).collect();
        for (g, &(_, owner, i)) in order.iter().enumerate() {
            global[owner as usize][i as usize] = g as u32;
        }
        // By child, then in the order found: what one thread's stable sort gives. All the ways
        // into one child come from its key's owner, which found them in order, so a counting
        // sort by child keeps that order (sorting by child and order took 13 ms of
        // forest-06-10_97's 0.37 s at two threads, this takes 3).
        let mut starts = vec![0u32; order.len() + 1];
        for (owner, o) in inserted.iter().enumerate() {
            for &(i, _) in &o.extra {
                starts[global[owner][i as usize] as usize + 1] += 1;
            }
        }
        for c in 1..starts.len() {
            starts[c] += starts[c - 1];
        }
        edges.extra = vec![(0, Link::UNSET); starts[order.len()] as usize];
        for (owner, o) in inserted.iter().enumerate() {
            for &(i, link) in &o.extra {
                let child = global[owner][i as usize];
                let at = &mut starts[child as usize];
                edges.extra[*at as usize] = (child, link);
                *at += 1;
            }
        }
        // An owner meets a child's further ways in by parent, except that with the frozen
        // look-ups deferred (`ChildSink::defers_frozen`) the ways a parent's frozen look-ups
        // found may come after the next two parents' ways: a stable sort by parent puts them
        // back, each parent's in the order found (most children have one or two ways in).
        for ways in edges.extra.chunk_by_mut(|a, b| a.0 == b.0) {
            if ways.len() > 1 {
                ways.sort_by_key(|&(_, link)| link.parent);
            }
        }
    }
    (next, counts, edges)
}
