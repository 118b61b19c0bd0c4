//! Perft: counting the leaf nodes of the legal-move tree, the standard test of a move generator.

use super::movegen::{self, MoveList};
use super::position::Position;
use super::types::Move;

/// Leaf count at `depth`. With `bulk`, the last ply counts generated moves instead of playing
/// them (same result, faster).
pub fn perft(pos: &mut Position, depth: u32, bulk: bool) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut list = MoveList::new();
    movegen::legal(pos, &mut list);
    if bulk && depth == 1 {
        return list.len() as u64;
    }
    let mut nodes = 0;
    for &m in list.iter() {
        pos.do_move(m);
        nodes += perft(pos, depth - 1, bulk);
        pos.undo_move(m);
    }
    nodes
}

/// Per-root-move leaf counts (`depth >= 1`), in generation order.
pub fn divide(pos: &mut Position, depth: u32, bulk: bool) -> Vec<(Move, u64)> {
    let mut list = MoveList::new();
    movegen::legal(pos, &mut list);
    list.iter()
        .map(|&m| {
            pos.do_move(m);
            let n = perft(pos, depth.saturating_sub(1), bulk);
            pos.undo_move(m);
            (m, n)
        })
        .collect()
}
