//! Each new position of a level learns its global index — its place in the one-process pass's
//! level — from the orders of all ranks' new positions: gathered to every rank (narrow levels),
//! or by ranges of their parents (wide ones), so that what crosses the network does not grow
//! with the ranks.

use super::transport::Transport;
use super::wire;
use super::{sent_to_others, status_of, Status};

/// The global indices of this rank's new positions (`mine`: their orders, ascending) and the
/// width of the level, from every rank's orders gathered to all; or the largest status a rank
/// sent instead (`status`, in front of its orders). An error is every rank's.
pub(super) fn number_by_gathering(
    mine: &[u64],
    status: Status,
    transport: &dyn Transport,
    sent: &mut u64,
) -> Result<(Vec<u64>, u64), Status> {
    let mut orders = vec![status as u8];
    orders.extend(mine.iter().flat_map(|o| o.to_le_bytes()));
    *sent += (orders.len() * (transport.ranks() - 1)) as u64;
    let gathered = transport.all_gather(orders);
    match status_of(&gathered) {
        Status::Going => {}
        status => return Err(status),
    }
    // (Every rank reads every list, its own too, so that all find a damaged one.)
    if gathered.iter().any(|g| g.len() % 8 != 1) {
        return Err(Status::Damaged);
    }
    let globals = global_indices(mine, &gathered, transport.rank()).ok_or(Status::Damaged)?;
    let width = gathered.iter().map(|g| g.len() as u64 / 8).sum();
    Ok((globals, width))
}

/// The global index of each of `mine` (ascending orders of this rank's new positions): how
/// many new positions of all ranks come before it (`gathered`: each rank's orders, after its
/// status byte). None if a rank's list is damaged.
fn global_indices(mine: &[u64], gathered: &[Vec<u8>], me: usize) -> Option<Vec<u64>> {
    let mut globals: Vec<u64> = (0..mine.len() as u64).collect();
    for (rank, bytes) in gathered.iter().enumerate() {
        let bytes = bytes.get(1..)?;
        if rank == me {
            continue;
        }
        let theirs = read_words(bytes)?;
        // Both ascending: walk them together.
        let mut before = 0u64;
        let mut theirs = theirs.into_iter().peekable();
        for (order, global) in mine.iter().zip(&mut globals) {
            while theirs.next_if(|&t| t < *order).is_some() {
                before += 1;
            }
            *global += before;
        }
    }
    Some(globals)
}

/// `number_by_gathering`'s answer with less sent: rank `q` numbers the new positions whose
/// parents are the `q`-th of the ranks' shares of the level's global indices (`width` of
/// them). Orders sort by parent first, so rank `q`'s positions all come after rank `q - 1`'s:
/// each rank sorts the orders it is sent, learns from a gathered count how many come before
/// its range, and sends each position's global index back to its owner. An error is every
/// rank's; a rank sent damaged globals gets fewer than `mine` (the pass reports it then).
pub(super) fn number_by_ranges(
    mine: &[u64],
    status: Status,
    width: u64,
    transport: &dyn Transport,
    sent: &mut u64,
) -> Result<(Vec<u64>, u64), Status> {
    let (me, ranks) = (transport.rank(), transport.ranks());
    let range_of = |order: u64| {
        (u128::from(wire::parent_of(order)) * ranks as u128 / u128::from(width.max(1))) as usize
    };
    let mut outgoing = vec![vec![status as u8]; ranks];
    for &order in mine {
        // (A parent past the level is a bug; the last range takes it rather than panic.)
        outgoing[range_of(order).min(ranks - 1)].extend_from_slice(&order.to_le_bytes());
    }
    *sent += sent_to_others(&outgoing, me);
    let received = transport.all_to_all(outgoing);
    match status_of(&received) {
        Status::Going => {}
        status => return Err(status),
    }
    // Every order received, with the rank it came from and its place in that rank's list.
    let mut ranged: Vec<(u64, u32, u32)> = Vec::new();
    let mut status = Status::Going;
    for (from, bytes) in received.iter().enumerate() {
        let Some(orders) = read_words(&bytes[1..]) else {
            status = Status::Damaged;
            continue;
        };
        ranged.extend((orders.into_iter().enumerate()).map(|(i, o)| (o, from as u32, i as u32)));
    }
    drop(received);
    ranged.sort_unstable();
    // (A rank that could not read what it was sent says so here, so that all end together.)
    let mut count = vec![status as u8];
    count.extend_from_slice(&(ranged.len() as u64).to_le_bytes());
    *sent += (count.len() * (ranks - 1)) as u64;
    let counts = transport.all_gather(count);
    match status_of(&counts) {
        Status::Going => {}
        status => return Err(status),
    }
    let counts: Vec<u64> = (counts.iter())
        .map(|c| read_words(&c[1..]).and_then(|w| w.first().copied()))
        .collect::<Option<_>>()
        .ok_or(Status::Damaged)?;
    let before: u64 = counts[..me].iter().sum();
    // Each sender's globals, written where its orders were in what it sent.
    let mut back: Vec<Vec<u8>> = (received_sizes(&ranged, ranks).into_iter())
        .map(|n| vec![0; 8 * n])
        .collect();
    for (place, &(_, from, i)) in ranged.iter().enumerate() {
        let at = 8 * i as usize;
        back[from as usize][at..at + 8].copy_from_slice(&(before + place as u64).to_le_bytes());
    }
    *sent += sent_to_others(&back, me);
    // Each range's globals, in the order this rank sent its orders: ascending ranges, so the
    // globals of `mine` in order.
    let mut globals = Vec::with_capacity(mine.len());
    for bytes in transport.all_to_all(back) {
        // (Damaged: fewer globals than positions, which the pass reports at the next level.)
        globals.extend(read_words(&bytes).unwrap_or_default());
    }
    Ok((globals, counts.iter().sum()))
}

/// How many of `ranged` came from each rank.
fn received_sizes(ranged: &[(u64, u32, u32)], ranks: usize) -> Vec<usize> {
    let mut sizes = vec![0; ranks];
    for &(_, from, _) in ranged {
        sizes[from as usize] += 1;
    }
    sizes
}

/// Little-endian 8-byte words; None if `bytes` is not a whole number of them.
fn read_words(bytes: &[u8]) -> Option<Vec<u64>> {
    bytes.len().is_multiple_of(8).then(|| {
        (bytes.chunks_exact(8))
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::bfs::expand::distributed::transport::LocalRank;

    /// Both ways give every new position its place among all ranks' (a plain sort of them
    /// all), and the level's width, whatever ranks own them and however they bunch.
    #[test]
    fn ranges_and_gathering_number_as_a_sort_does() {
        for (ranks, width, seed) in [(2, 50u64, 1u64), (3, 7, 2), (4, 1000, 3), (5, 1, 4)] {
            // Each rank's new positions: distinct orders (a parent below `width`, an ordinal),
            // spread over the ranks pseudo-randomly, ascending on each.
            let mut state = seed;
            let mut next = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            let mut mine: Vec<Vec<u64>> = vec![Vec::new(); ranks];
            for parent in 0..width {
                for ordinal in 0..next() % 4 {
                    mine[(next() % ranks as u64) as usize]
                        .push(wire::order_of(parent, ordinal as u32));
                }
            }
            let mut all: Vec<u64> = mine.concat();
            all.sort_unstable();
            let expected: Vec<Vec<u64>> = (mine.iter())
                .map(|m| {
                    m.iter()
                        .map(|o| all.binary_search(o).unwrap() as u64)
                        .collect()
                })
                .collect();
            let group = LocalRank::group(ranks);
            let numbered: Vec<_> = std::thread::scope(|scope| {
                let handles: Vec<_> = (group.iter().zip(&mine))
                    .map(|(rank, mine)| {
                        scope.spawn(move || {
                            let mut sent = 0;
                            let by_ranges =
                                number_by_ranges(mine, Status::Going, width, rank, &mut sent);
                            let by_gathering =
                                number_by_gathering(mine, Status::Going, rank, &mut sent);
                            (by_ranges, by_gathering)
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for (rank, (by_ranges, by_gathering)) in numbered.into_iter().enumerate() {
                let at = format!("{ranks} ranks, width {width}, rank {rank}");
                let want = Ok((expected[rank].clone(), all.len() as u64));
                assert!(by_ranges == want, "{at}: by ranges");
                assert!(by_gathering == want, "{at}: by gathering");
            }
        }
    }

    /// A status any rank sends ends the numbering on every rank, both ways.
    #[test]
    fn a_rank_that_stops_stops_the_numbering_everywhere() {
        let group = LocalRank::group(3);
        std::thread::scope(|scope| {
            for rank in &group {
                scope.spawn(move || {
                    let status = match rank.rank() {
                        1 => Status::Stopped,
                        _ => Status::Going,
                    };
                    let mut sent = 0;
                    let orders = [wire::order_of(0, rank.rank() as u32)];
                    let by_ranges = number_by_ranges(&orders, status, 1, rank, &mut sent);
                    assert!(by_ranges == Err(Status::Stopped));
                    let by_gathering = number_by_gathering(&orders, status, rank, &mut sent);
                    assert!(by_gathering == Err(Status::Stopped));
                });
            }
        });
    }
}
