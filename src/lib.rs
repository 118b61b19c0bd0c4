//! kyozume: a shogi helpmate (協力詰) solver speaking USI.
//!
//! * [`shogi`]: the rules — position, notation, move generation;
//! * `search`: the helpmate search and its transposition table;
//! * `usi`: the protocol front end.

pub mod shogi;
