//! kyozume: a shogi helpmate (協力詰) solver speaking USI.
//!
//! * [`shogi`]: the rules — position, notation, move generation;
//! * [`search`]: the helpmate search and its transposition table;
//! * [`usi`]: the protocol front end;
//! * [`workbench`]: `kyozume solve` — problem formats, reports, batches;
//! * [`config`]: default option values from `engine.toml`;
//! * [`peak_memory`]: the process's peak resident memory.

pub mod bench;
pub mod config;
pub mod peak_memory;
pub mod search;
pub mod shogi;
pub mod usi;
pub mod workbench;
