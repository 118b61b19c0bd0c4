//! Reading a problem, for every front end: the formats composers write a position in (SFEN, a
//! USI `position ...` line, a BOD diagram, a KIF file), the stipulation and length a file names,
//! and a USI position with moves played from it. Under the rules of the problem: a position
//! only a fairy condition allows is read under that condition. And the length it is asked
//! within.
//!
//! The front ends (`usi`, `workbench`, `serve`) read problems here and never through each other.

pub mod formats;
pub mod length;
pub mod position_line;

pub use formats::{
    decode, detect, named_length, named_stipulation, parse_problem, parse_problem_and_stipulation,
    parse_problem_under, Format, InputError,
};
pub use length::Length;
pub use position_line::{play_moves, position_of_problem, PositionBase, PositionLine};
