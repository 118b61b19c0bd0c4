//! Perft: counting the leaf nodes of the legal-move tree, the standard test of a move generator.

use super::conditions::{Captures, PawnDropMate, PawnDropMateAllowed, Plain, Rules};
use super::movegen::{self, MoveList};
use super::position::Position;
use super::rules::RuleSet;
use super::types::Move;

/// Leaf count at `depth`. With `bulk`, the last ply counts generated moves instead of playing
/// them (same result, faster).
pub fn perft(pos: &mut Position, depth: u32, bulk: bool) -> u64 {
    perft_under::<Plain>(pos, depth, bulk, Captures::Free)
}

/// Leaf count at `depth` under the rules `R` and the captures rule `captures` (強欲 and 禁欲
/// narrow each side's legal moves; there is no check obligation in perft).
pub fn perft_under<R: Rules>(
    pos: &mut Position,
    depth: u32,
    bulk: bool,
    captures: Captures,
) -> u64 {
    if captures == Captures::Free {
        count::<R, false>(pos, depth, bulk, captures)
    } else {
        count::<R, true>(pos, depth, bulk, captures)
    }
}

/// The count itself; `FILTER` is false when captures are free, so that normal shogi's perft
/// has no test of the captures rule at any node.
fn count<R: Rules, const FILTER: bool>(
    pos: &mut Position,
    depth: u32,
    bulk: bool,
    captures: Captures,
) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut list = MoveList::new();
    movegen::legal_under::<R>(pos, &mut list);
    if FILTER {
        movegen::keep_allowed_captures(pos, captures, &mut list);
    }
    if bulk && depth == 1 {
        return list.len() as u64;
    }
    let mut nodes = 0;
    for &m in list.iter() {
        pos.do_move(m);
        nodes += count::<R, FILTER>(pos, depth - 1, bulk, captures);
        pos.undo_move(m);
    }
    nodes
}

/// Per-root-move leaf counts (`depth >= 1`), in generation order.
pub fn divide(pos: &mut Position, depth: u32, bulk: bool) -> Vec<(Move, u64)> {
    divide_under::<Plain>(pos, depth, bulk, Captures::Free)
}

/// [`divide`] under the rules `R` and `captures` (see [`perft_under`]).
pub fn divide_under<R: Rules>(
    pos: &mut Position,
    depth: u32,
    bulk: bool,
    captures: Captures,
) -> Vec<(Move, u64)> {
    let mut list = MoveList::new();
    movegen::legal_under::<R>(pos, &mut list);
    if captures != Captures::Free {
        movegen::keep_allowed_captures(pos, captures, &mut list);
    }
    list.iter()
        .map(|&m| {
            pos.do_move(m);
            let n = perft_under::<R>(pos, depth.saturating_sub(1), bulk, captures);
            pos.undo_move(m);
            (m, n)
        })
        .collect()
}

/// Leaf count at `depth` under any rule set, the captures rule included: normal piece powers
/// through the generator's instance for the rules (see [`perft_under`]), changed ones through
/// [`RuleSet::legal`].
pub fn perft_rules(pos: &mut Position, depth: u32, bulk: bool, rules: RuleSet) -> u64 {
    let c = rules.conditions();
    rules.adopt(pos);
    match (rules.fixed_powers(), c.pawn_drop_mate) {
        (true, PawnDropMate::Illegal) => perft_under::<Plain>(pos, depth, bulk, c.captures),
        (true, PawnDropMate::Allowed) => {
            perft_under::<PawnDropMateAllowed>(pos, depth, bulk, c.captures)
        }
        _ => count_powers(pos, depth, bulk, rules),
    }
}

fn count_powers(pos: &mut Position, depth: u32, bulk: bool, rules: RuleSet) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut list = MoveList::new();
    rules.legal(pos, &mut list);
    if bulk && depth == 1 {
        return list.len() as u64;
    }
    let mut nodes = 0;
    for &m in list.iter() {
        pos.do_move(m);
        nodes += count_powers(pos, depth - 1, bulk, rules);
        pos.undo_move(m);
    }
    nodes
}

/// [`divide`] under any rule set (see [`perft_rules`]).
pub fn divide_rules(
    pos: &mut Position,
    depth: u32,
    bulk: bool,
    rules: RuleSet,
) -> Vec<(Move, u64)> {
    rules.adopt(pos);
    let mut list = MoveList::new();
    rules.legal(pos, &mut list);
    list.iter()
        .map(|&m| {
            pos.do_move(m);
            let n = perft_rules(pos, depth.saturating_sub(1), bulk, rules);
            pos.undo_move(m);
            (m, n)
        })
        .collect()
}
