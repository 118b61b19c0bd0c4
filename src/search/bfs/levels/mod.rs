//! The levels and what the pass records of them: a level's positions with their checks
//! (`level.rs`), the links from each position to its parents for reading lines back
//! (`graph.rs`, packed in memory by `packed.rs` with `rising.rs`), the links moved to a file
//! when memory is short (`disk.rs`), and checkpoints a run goes on from (`checkpoint.rs`).

pub(super) mod checkpoint;
pub(super) mod disk;
pub(super) mod graph;
pub(super) mod level;
mod packed;
pub(super) mod places;
mod rising;
