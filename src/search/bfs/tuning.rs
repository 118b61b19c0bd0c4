//! The pass's tuning: the knobs tests turn to send small problems down every path (threads from
//! the first level, tiny slices and batches, the narrow loop never or always, keys frozen after
//! every level), with the defaults front ends get and why they are what they are.

use super::keys::forgetting::Forgetting;

/// The pass's knobs, passed whole from [`crate::search::Limits`] to the pass. Every setting gives
/// the same answers; only time and memory differ.
#[derive(Clone, Debug)]
pub struct PassTuning {
    /// Levels at least this wide are expanded with the threads (see
    /// [`PARALLEL_FROM_POSITIONS`]; tests set 1 to send every level through them).
    pub parallel_from_positions: usize,
    /// Positions the threads expand before inserting their children (see [`SLICE_POSITIONS`];
    /// tests set a few to cut every level into many slices).
    pub parallel_slice_positions: usize,
    /// Positions in each batch a thread takes of a slice, and the fewest in a thread's share of
    /// a distributed pass's level (None: sized to the slice, 8 to 64; 64 for the shares; tests
    /// set 2 so that the threads' batches interleave finely).
    pub parallel_batch_positions: Option<usize>,
    /// Levels narrower than this (and at least `parallel_from_positions` wide) run with all
    /// threads in one loop (see [`NARROW_BELOW`]; 0: never).
    pub narrow_below: usize,
    /// The narrow loop gives a level back once its claims fill this share of their table (per
    /// cent; see [`NARROW_CLAIMS_PERCENT`]; tests set a few to make it give levels back).
    pub narrow_claims_percent: usize,
    /// The most bytes a thread's key-set shards may grow by on a narrow level (tests set 0 to
    /// send every growth through the calling thread).
    pub narrow_key_allowance: usize,
    /// A distributed pass numbers a level's new positions by ranges of their parents once the
    /// level before is this wide times the ranks less one (see [`RANGES_FROM`]; tests set 0).
    pub ranges_from: u64,
    /// The threads join in once the pass has searched this many nodes (see
    /// [`THREADS_FROM_NODES`]; tests that choose the levels the threads take set 0).
    pub threads_from_nodes: u64,
    /// Which keys the pass lets go of once memory is short (the default: keys of one level in
    /// 16 kept for good, of every other level for 1,024 levels, the others for 256; tests let
    /// them go after 2 levels, so that positions are forgotten and expanded again all the time).
    pub forgetting: Forgetting,
    /// Freeze the keys after every level, as when memory runs short (tests: the frozen stores
    /// on every level of small problems).
    pub freeze_every_level: bool,
}

impl Default for PassTuning {
    fn default() -> PassTuning {
        PassTuning {
            parallel_from_positions: PARALLEL_FROM_POSITIONS,
            parallel_slice_positions: SLICE_POSITIONS,
            parallel_batch_positions: None,
            narrow_below: NARROW_BELOW,
            narrow_claims_percent: NARROW_CLAIMS_PERCENT,
            narrow_key_allowance: usize::MAX,
            ranges_from: RANGES_FROM,
            threads_from_nodes: THREADS_FROM_NODES,
            forgetting: Forgetting::default(),
            freeze_every_level: false,
        }
    }
}

impl PassTuning {
    /// Every level, however narrow, through the threads from the first (tests).
    pub fn threads_on_every_level() -> PassTuning {
        PassTuning {
            parallel_from_positions: 1,
            threads_from_nodes: 0,
            ..PassTuning::default()
        }
    }
}

/// Levels at least this wide are expanded with several threads (when there are any); narrower
/// ones cost less than handing them out. Both ways give the same level, edges and order.
/// Measured at two threads: 64 beat 4096, 1024 and 256 on every long problem tried (12555:
/// 5.9 s at 4096, 4.1-4.3 s at 64; 2571: 3.9 s, 2.7 s); once the threads no longer waited on
/// each other's cache lines, 16 beat 64 on 寿限無 19447 (0.561 s against 0.606; 8 and 4 no
/// better) and equalled it on 12555, 1965 and 2571.
pub(crate) const PARALLEL_FROM_POSITIONS: usize = 16;

/// Positions expanded before their candidates are inserted: bounds the candidates held at once
/// (about two a position, 96 bytes each: some 13 MB).
pub(crate) const SLICE_POSITIONS: usize = 1 << 16;

/// Levels narrower than this run in the loop (wider ones cost far more than their hand-offs).
pub(crate) const NARROW_BELOW: usize = 4096;

/// A level is given back once its claims fill this share of their table (per cent).
pub(crate) const NARROW_CLAIMS_PERCENT: usize = 60;

/// From which width of a level (times the ranks less one) its new positions are numbered by
/// ranges of their parents rather than by gathering every rank's orders (`PassTuning::ranges_from`):
/// gathered, every rank receives 8 bytes for each new position of the level, which grows with the
/// ranks; by ranges, 16 bytes a position cross the network in all, in three collectives instead
/// of one.
pub(crate) const RANGES_FROM: u64 = 1 << 16;

/// A pass's threads join in once it has searched this many nodes (some 3 ms): a pass that
/// ends sooner costs less on one thread than the threads' start (the narrow loop's tables
/// written, the crew called: a 27-ply problem the pass solves in 0.04 ms at one thread took
/// 0.16 ms at two).
pub(crate) const THREADS_FROM_NODES: u64 = 20_000;
