//! The rules of shogi: board representation, SFEN and USI notation, move generation, perft.

pub mod attacks;
pub mod bitboard;
pub mod board;
pub mod capture_moves;
pub mod capture_rule;
pub mod conditions;
pub mod display;
pub mod japanese;
pub mod kif;
pub mod movegen;
pub mod perft;
pub mod played;
pub mod position;
pub mod powers;
pub mod record;
pub mod rules;
pub mod sfen;
pub mod stipulation;
pub mod types;
mod zobrist;

pub use bitboard::Bitboard;
pub use conditions::Conditions;
pub use movegen::MoveList;
pub use position::{PackedPosition, Position};
pub use rules::RuleSet;
pub use sfen::{MoveError, SfenError, STARTPOS_SFEN};
pub use stipulation::{Goal, Stipulation};
pub use types::{Color, Hand, Move, Piece, PieceType, Square};
