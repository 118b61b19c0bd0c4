//! What a front end asks of the search: the problem's stipulation, time, bound, solutions,
//! threads, disk, checkpoints and ranks ([`Limits`]), with the tuning tests turn ([`Tuning`])
//! kept apart and passed whole.

use super::bfs::{Checkpointing, DiskBudget, LevelStats, PassTuning, Transport};
use super::smp::HELPERS_FROM_NODES;
use crate::shogi::Stipulation;
use std::time::Duration;

/// What to stop at, besides an external stop flag, and how to search.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// What the problem asks for (H#, HS#, the defender first or not).
    pub stipulation: Stipulation,
    /// Wall-clock limit for the whole search.
    pub time: Option<Duration>,
    /// Do not look for mates longer than this many plies.
    pub max_plies: Option<u32>,
    pub strategy: Strategy,
    /// Count shortest solutions up to this many (0 or 1: do not count).
    pub solution_limit: usize,
    /// Search threads (0 or 1: the calling thread alone). Results do not depend on it.
    pub threads: usize,
    /// Where the breadth-first pass sends the figures of each level it finishes.
    pub level_log: Option<crossbeam_channel::Sender<LevelStats>>,
    /// Where the breadth-first pass may put its links once memory runs short (the default:
    /// nowhere; the engine and the command line allow `DiskCap` in `TempDir`).
    pub disk: DiskBudget,
    /// Checkpoints of the breadth-first pass, and whether it starts from one (None: none).
    pub checkpoint: Option<Checkpointing>,
    /// The ranks the breadth-first pass is shared among, this solver being one of them: the
    /// pass starts at once, and every rank's solver, given the same problem and limits, gives
    /// the same answer.
    pub ranks: Option<Ranks>,
    /// The knobs tests turn; front ends leave the default.
    pub tuning: Tuning,
}

/// The search's tuning: knobs that change how it spends time and memory, never its answers.
/// Tests turn them to drive small problems down every path; front ends take the default.
#[derive(Clone, Debug)]
pub struct Tuning {
    /// Deepening iterations get helper threads once the previous one took this many nodes
    /// (default [`HELPERS_FROM_NODES`]; tests set 0 to share every iteration).
    pub helpers_from_nodes: u64,
    /// Deepening helpers even beyond the machine's cores (tests: to run three helpers on a
    /// two-core machine). Otherwise a helper with no core of its own would only take time from
    /// the main search (the 13-ply `9/9/9/9/9/9/4k4/9/9 b S2N2P2r2b4g3s2n4l16p 1` at four
    /// threads on two cores: 1.10 s against 0.95 s at one thread).
    pub helpers_beyond_cores: bool,
    /// The breadth-first pass's own knobs, passed to it whole.
    pub pass: PassTuning,
}

impl Tuning {
    /// These knobs, with the pass's set to `pass`.
    pub fn with_pass(self, pass: PassTuning) -> Tuning {
        Tuning { pass, ..self }
    }
}

/// The default knobs of deepening, with the pass's set to these.
impl From<PassTuning> for Tuning {
    fn from(pass: PassTuning) -> Tuning {
        Tuning::default().with_pass(pass)
    }
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            helpers_from_nodes: HELPERS_FROM_NODES,
            helpers_beyond_cores: false,
            pass: PassTuning::default(),
        }
    }
}

/// One rank of a distributed breadth-first pass (see [`Limits::ranks`]).
#[derive(Clone)]
pub struct Ranks(pub std::sync::Arc<dyn Transport>);

impl std::fmt::Debug for Ranks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rank {} of {}", self.0.rank(), self.0.ranks())
    }
}

/// Which searches to use. Both give the same answers; `Auto` is the fastest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strategy {
    /// Iterative deepening for short lengths, then a breadth-first pass within the memory
    /// budget, then iterative deepening again if that runs out.
    #[default]
    Auto,
    /// Iterative deepening only.
    Deepening,
    /// The breadth-first pass from the start (falling back to deepening when memory runs
    /// out): for tests and comparisons.
    BreadthFirst,
}
