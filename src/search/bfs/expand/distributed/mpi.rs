//! Ranks that are MPI processes (the `mpi` feature): `Transport`'s collectives over MPI's.
//!
//! One thread of the process owns MPI: it initialises it (`MPI_THREAD_FUNNELED`: only that
//! thread calls MPI), makes the collectives the search's thread asks for over a channel, and
//! finalises MPI when the last `MpiRank` is gone. So MPI's handles never cross threads, and the
//! search runs on its own thread (with its deep stack) as it does in one process.

use super::transport::Transport;
use crossbeam_channel::{Receiver, RecvError, Sender, TryRecvError};
use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;

/// At most this many bytes go out of a rank in one round of an all-to-all (MPI counts are
/// 32-bit, and a round's buffers are copies): a level's exchange takes as many rounds as its
/// largest buffer needs.
const ROUND_BYTES: usize = 256 << 20;

/// How long a thread waiting for the other (the search for a collective's answer, MPI's thread
/// for the next request) polls before it sleeps: a thread asleep on another core took some
/// 100 us to wake on this machine's VM, twice a level (寿限無 19447 with the rank free to use
/// both cores: 3.8 s, against 1.7 s with the two threads bound to one).
const POLLING: std::time::Duration = std::time::Duration::from_millis(1);

/// The next message on `receiver`, polled for up to `POLLING` before sleeping on it; each poll
/// yields, so that a thread sharing the core (a rank bound to one core) runs meanwhile.
fn patient_recv<T>(receiver: &Receiver<T>) -> Result<T, RecvError> {
    let deadline = std::time::Instant::now() + POLLING;
    loop {
        match receiver.try_recv() {
            Ok(message) => return Ok(message),
            Err(TryRecvError::Disconnected) => return Err(RecvError),
            Err(TryRecvError::Empty) if std::time::Instant::now() >= deadline => {
                return receiver.recv();
            }
            Err(TryRecvError::Empty) => std::thread::yield_now(),
        }
    }
}

enum Request {
    AllToAll(Vec<Vec<u8>>, Sender<Vec<Vec<u8>>>),
    AllGather(Vec<u8>, Sender<Vec<Vec<u8>>>),
}

/// This process's rank among the MPI job's.
pub struct MpiRank {
    rank: usize,
    ranks: usize,
    requests: Sender<Request>,
}

/// The thread that owns MPI; joined once every `MpiRank` is dropped (MPI is then finalised).
pub struct MpiThread(std::thread::JoinHandle<()>);

impl MpiThread {
    /// Waits for MPI to be finalised.
    pub fn join(self) {
        // (A panic on that thread has been reported already.)
        let _ = self.0.join();
    }
}

/// Starts MPI on a thread of its own: this process's rank, and the thread to join at the end.
pub fn start() -> Result<(MpiRank, MpiThread), String> {
    let (ready, is_ready) = crossbeam_channel::bounded(1);
    let (requests, incoming) = crossbeam_channel::unbounded::<Request>();
    let thread = std::thread::Builder::new()
        .name("mpi".into())
        .spawn(move || {
            let Some((universe, _)) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            else {
                let _ = ready.send(Err("MPI could not be initialised".to_string()));
                return;
            };
            let world = universe.world();
            let _ = ready.send(Ok((world.rank() as usize, world.size() as usize)));
            while let Ok(request) = patient_recv(&incoming) {
                match request {
                    Request::AllToAll(outgoing, reply) => {
                        let _ = reply.send(all_to_all(&world, outgoing));
                    }
                    Request::AllGather(mine, reply) => {
                        let _ = reply.send(all_gather(&world, mine));
                    }
                }
            }
        })
        .map_err(|e| format!("no thread for MPI: {e}"))?;
    let (rank, ranks) = is_ready
        .recv()
        .map_err(|_| "MPI's thread ended".to_string())??;
    Ok((
        MpiRank {
            rank,
            ranks,
            requests,
        },
        MpiThread(thread),
    ))
}

impl Transport for MpiRank {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.ranks
    }

    fn all_to_all(&self, outgoing: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        self.ask(|reply| Request::AllToAll(outgoing, reply))
    }

    fn all_gather(&self, mine: Vec<u8>) -> Vec<Vec<u8>> {
        self.ask(|reply| Request::AllGather(mine, reply))
    }
}

impl MpiRank {
    /// Has MPI's thread make the collective `request` and waits for its answer.
    fn ask(&self, request: impl FnOnce(Sender<Vec<Vec<u8>>>) -> Request) -> Vec<Vec<u8>> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        self.requests
            .send(request(reply))
            .expect("MPI's thread outlives its ranks");
        patient_recv(&answer).expect("MPI's thread answers")
    }
}

/// Every rank's `mine`: the sizes gathered first, then the bytes (by the all-to-all when
/// they are more than one MPI call takes).
fn all_gather(world: &SimpleCommunicator, mine: Vec<u8>) -> Vec<Vec<u8>> {
    let ranks = world.size() as usize;
    let mut sizes = vec![0u64; ranks];
    world.all_gather_into(&(mine.len() as u64), &mut sizes[..]);
    let total: u64 = sizes.iter().sum();
    if total >= ROUND_BYTES as u64 {
        return all_to_all(world, vec![mine; ranks]);
    }
    let counts: Vec<Count> = sizes.iter().map(|&n| n as Count).collect();
    let displacements: Vec<Count> = counts
        .iter()
        .scan(0, |at, &c| {
            let here = *at;
            *at += c;
            Some(here)
        })
        .collect();
    // (One byte more in each buffer, as in `all_to_all`.)
    let mut send = mine;
    let len = send.len();
    send.push(0);
    let mut received = vec![0u8; total as usize + 1];
    {
        let mut into = PartitionMut::new(&mut received[..], &counts[..], &displacements[..]);
        world.all_gather_varcount_into(&send[..len], &mut into);
    }
    (counts.iter().zip(&displacements))
        .map(|(&c, &d)| received[d as usize..(d + c) as usize].to_vec())
        .collect()
}

/// The all-to-all of `outgoing` (one buffer a rank), in rounds of at most `ROUND_BYTES` out of
/// each rank.
fn all_to_all(world: &SimpleCommunicator, outgoing: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let ranks = outgoing.len();
    let per_rank = (ROUND_BYTES / ranks).max(1) as u64;
    // To each rank: the size of its buffer, and the rounds this rank's largest one needs (so
    // that every rank learns the rounds all need from the one exchange).
    let sizes: Vec<u64> = outgoing.iter().map(|b| b.len() as u64).collect();
    let my_rounds = sizes.iter().max().map_or(0, |&n| n.div_ceil(per_rank));
    let announced: Vec<u64> = sizes.iter().flat_map(|&n| [n, my_rounds]).collect();
    let mut heard = vec![0u64; 2 * ranks];
    world.all_to_all_into(&announced[..], &mut heard[..]);
    let incoming_sizes: Vec<u64> = heard.iter().step_by(2).copied().collect();
    let rounds = heard.iter().skip(1).step_by(2).copied().max().unwrap_or(0);
    let mut incoming: Vec<Vec<u8>> = incoming_sizes
        .iter()
        .map(|&n| Vec::with_capacity(n as usize))
        .collect();
    let slice_of = |size: u64, round: u64| {
        let start = (round * per_rank).min(size);
        start as usize..(start + per_rank).min(size) as usize
    };
    let displacements = |counts: &[Count]| -> Vec<Count> {
        counts
            .iter()
            .scan(0, |at, &c| {
                let here = *at;
                *at += c;
                Some(here)
            })
            .collect()
    };
    for round in 0..rounds {
        let mut send = Vec::new();
        let mut send_counts = Vec::with_capacity(ranks);
        for buffer in &outgoing {
            let slice = &buffer[slice_of(buffer.len() as u64, round)];
            send.extend_from_slice(slice);
            send_counts.push(slice.len() as Count);
        }
        let receive_counts: Vec<Count> = incoming_sizes
            .iter()
            .map(|&n| slice_of(n, round).len() as Count)
            .collect();
        // One byte more in each buffer, outside every count: two empty buffers would be at the
        // same dangling address, which MPI takes for one buffer used both ways and refuses.
        send.push(0);
        let mut received = vec![0u8; receive_counts.iter().map(|&c| c as usize).sum::<usize>() + 1];
        {
            let send_displacements = displacements(&send_counts);
            let receive_displacements = displacements(&receive_counts);
            let out = Partition::new(&send[..], &send_counts[..], &send_displacements[..]);
            let mut into = PartitionMut::new(
                &mut received[..],
                &receive_counts[..],
                &receive_displacements[..],
            );
            world.all_to_all_varcount_into(&out, &mut into);
        }
        let mut at = 0;
        for (buffer, &count) in incoming.iter_mut().zip(&receive_counts) {
            buffer.extend_from_slice(&received[at..at + count as usize]);
            at += count as usize;
        }
    }
    incoming
}
