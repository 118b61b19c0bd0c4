//! How the ranks of a distributed pass reach one another: collective operations only, which
//! every rank calls in the same order (as MPI's are). Two kinds of ranks implement them:
//! threads of one process ([`LocalRank`], for tests and for trying the pass without MPI) and
//! MPI processes (behind the `mpi` feature).

use crossbeam_channel::{Receiver, Sender};

/// One rank's end of the collective operations among `ranks()` ranks.
pub trait Transport: Send + Sync {
    /// This rank, from 0.
    fn rank(&self) -> usize;

    /// How many ranks there are.
    fn ranks(&self) -> usize;

    /// Sends `outgoing[r]` to rank `r` (itself included); returns what each rank sent this
    /// one, by rank.
    fn all_to_all(&self, outgoing: Vec<Vec<u8>>) -> Vec<Vec<u8>>;

    /// Every rank's `mine`, by rank.
    fn all_gather(&self, mine: Vec<u8>) -> Vec<Vec<u8>> {
        self.all_to_all(vec![mine; self.ranks()])
    }

    /// The sum over the ranks of `value`.
    fn sum(&self, value: u64) -> u64 {
        words(self.all_gather(value.to_le_bytes().to_vec())).sum()
    }

    /// The largest `value` of the ranks.
    fn max(&self, value: u64) -> u64 {
        words(self.all_gather(value.to_le_bytes().to_vec()))
            .max()
            .unwrap_or(0)
    }
}

/// The 8-byte words gathered from each rank.
fn words(gathered: Vec<Vec<u8>>) -> impl Iterator<Item = u64> {
    gathered
        .into_iter()
        .map(|bytes| u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes a rank")))
}

/// A rank that is a thread of this process: the ranks of a group pass byte buffers over
/// channels, one channel for each pair of ranks so that what a rank receives from another
/// comes in the order it was sent, whatever the others do meanwhile.
pub struct LocalRank {
    rank: usize,
    /// To each rank.
    to: Vec<Sender<Vec<u8>>>,
    /// From each rank.
    from: Vec<Receiver<Vec<u8>>>,
}

impl LocalRank {
    /// The `ranks` ranks of a new group, by rank: give each its own thread.
    pub fn group(ranks: usize) -> Vec<LocalRank> {
        let mut to: Vec<Vec<Sender<Vec<u8>>>> = (0..ranks).map(|_| Vec::new()).collect();
        let mut from: Vec<Vec<Receiver<Vec<u8>>>> = (0..ranks).map(|_| Vec::new()).collect();
        for sender in to.iter_mut() {
            for receiver in from.iter_mut() {
                let (s, r) = crossbeam_channel::unbounded();
                sender.push(s);
                receiver.push(r);
            }
        }
        to.into_iter()
            .zip(from)
            .enumerate()
            .map(|(rank, (to, from))| LocalRank { rank, to, from })
            .collect()
    }
}

impl Transport for LocalRank {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.to.len()
    }

    fn all_to_all(&self, outgoing: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        assert_eq!(outgoing.len(), self.ranks(), "one buffer for each rank");
        for (to, bytes) in self.to.iter().zip(outgoing) {
            // (A rank whose thread has ended is a bug of the caller's: collectives are
            // called by every rank.)
            to.send(bytes).expect("every rank of the group takes part");
        }
        self.from
            .iter()
            .map(|from| from.recv().expect("every rank of the group takes part"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_ranks_exchange_gather_and_reduce() {
        let ranks = LocalRank::group(3);
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = ranks
                .iter()
                .map(|rank| {
                    scope.spawn(move || {
                        let me = rank.rank() as u8;
                        // Twice in a row: a fast rank's second round never mixes with the first.
                        let mut rounds = Vec::new();
                        for round in 0..2u8 {
                            let out = (0..3u8).map(|to| vec![me, to, round]).collect();
                            rounds.push(rank.all_to_all(out));
                        }
                        let gathered = rank.all_gather(vec![me; me as usize + 1]);
                        (
                            rounds,
                            gathered,
                            rank.sum(me as u64 + 1),
                            rank.max(me as u64 * 7),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (me, (rounds, gathered, sum, max)) in results.into_iter().enumerate() {
            for (round, got) in rounds.into_iter().enumerate() {
                let expected: Vec<Vec<u8>> = (0..3u8)
                    .map(|from| vec![from, me as u8, round as u8])
                    .collect();
                assert_eq!(got, expected);
            }
            let expected: Vec<Vec<u8>> = (0..3u8).map(|r| vec![r; r as usize + 1]).collect();
            assert_eq!(gathered, expected);
            assert_eq!((sum, max), (6, 14));
        }
    }
}
