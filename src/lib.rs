//! kyozume: a shogi helpmate (協力詰) solver speaking USI.
//!
//! * [`shogi`]: the rules — position, notation, move generation;
//! * [`search`]: the helpmate search and its transposition table;
//! * [`problem`]: reading a problem (SFEN, `position`, BOD, KIF), for every front end;
//! * [`report`]: a problem's answer for people and as JSON, for every front end;
//! * [`usi`]: the protocol front end;
//! * [`workbench`]: `kyozume solve` — problem formats, reports, batches;
//! * [`serve`]: `kyozume serve` — the web page and its JSON API;
//! * [`cli`]: the command line, each subcommand handed to the unit above that does it;
//! * [`config`]: default option values from `engine.toml`;
//! * [`peak_memory`]: the process's peak resident memory.

pub mod bench;
pub mod cli;
pub mod config;
#[doc(hidden)]
pub mod fuzzing;
pub mod peak_memory;
pub mod problem;
pub mod report;
pub mod search;
pub mod serve;
pub mod shogi;
pub mod usi;
pub mod workbench;
