//! What the rules read of a board, as a trait: the position is one such board; a view of it
//! after a move that is not played (`powers::After`) is another, so that a move can be judged
//! without playing it.

use super::bitboard::Bitboard;
use super::types::{Color, Piece, Square};

/// A board the rules can read.
pub trait Board {
    fn piece_at(&self, sq: Square) -> Option<Piece>;
    fn occupied(&self) -> Bitboard;
    fn pieces_of(&self, color: Color) -> Bitboard;
}
