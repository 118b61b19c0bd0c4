//! A slice of a level cut into batches, taken in order from one counter by the threads.

use super::slice::ORDER_SHIFT;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How a slice is cut into batches: each takes a `1 / (GUIDED_SHARES * threads)` of what is
/// left, between the fewest and the most positions below. A thread done with its last batch
/// waits for the others' last, so the batches shrink as the slice runs out (on 寿限無 19447 the
/// threads' ends of an expansion were 2.7 us apart a level with batches of 8); but each is taken
/// from a counter that all the threads write (a round trip between CPUs), so they start larger.
const GUIDED_SHARES: usize = 4;
const MIN_BATCH: usize = 2;
const MAX_BATCH: usize = 64;

/// The batches of a slice, handed out in order.
pub(super) struct Batches<'a> {
    /// Where each batch starts, then the slice's end.
    pub(super) bounds: &'a [usize],
    /// The next batch to take.
    pub(super) next: &'a AtomicUsize,
}

/// Cuts `slice` (first index, end) into batches for `threads` threads, into `bounds` (see
/// `Batches`): of `fixed` positions each if given, else guided (see `GUIDED_SHARES`).
pub(crate) fn cut_into_batches(
    slice: (usize, usize),
    fixed: Option<usize>,
    threads: usize,
    bounds: &mut Vec<usize>,
) {
    bounds.clear();
    let mut at = slice.0;
    bounds.push(at);
    while at < slice.1 {
        let left = slice.1 - at;
        let len = fixed.map_or_else(
            || {
                left.div_ceil(GUIDED_SHARES * threads)
                    .clamp(MIN_BATCH, MAX_BATCH)
            },
            |len| len.max(1),
        );
        at += len.min(left);
        bounds.push(at);
    }
}

impl Batches<'_> {
    pub(super) fn count(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Positions in the slice.
    pub(super) fn positions(&self) -> usize {
        self.bounds[self.count()] - self.bounds[0]
    }

    /// The next batch's number and positions, if any is left.
    pub(super) fn take(&self) -> Option<(usize, std::ops::Range<usize>)> {
        let batch = self.next.fetch_add(1, Ordering::Relaxed);
        (batch < self.count()).then(|| (batch, self.bounds[batch]..self.bounds[batch + 1]))
    }

    /// The first candidate number after `batch`'s.
    pub(super) fn end_order(&self, batch: usize) -> u64 {
        (self.bounds[batch + 1] as u64) << ORDER_SHIFT
    }
}
