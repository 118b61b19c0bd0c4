//! Moves under a capture rule (キルケ, アンチキルケ, PWC) or a paralysis rule (マドラシ,
//! Kマドラシ), with or without changed powers. A capture can put a piece anywhere on the board
//! and any move can paralyse or free a piece far away, so each candidate is played on a copy
//! of the position and the position after it judged: is the mover's king attacked, is the
//! opponent's, by a piece that is not paralysed. Neither normal shogi nor the power
//! conditions alone come here.

use super::attacks::{fill_files, promotion_zone};
use super::capture_rule::{self, CaptureSetting};
use super::conditions::{CaptureRule, Conditions, Paralysis, PawnDropMate};
use super::movegen::MoveList;
use super::position::Position;
use super::powers::{reach, reach_from, standing_ranks};
use super::types::{Color, Move, Piece, PieceType, Square};

/// The capture setting a position must play under for `conditions`.
pub fn capture_setting(conditions: Conditions) -> CaptureSetting {
    CaptureSetting {
        rule: conditions.capture_rule,
        moves: conditions.piece_moves,
    }
}

/// Is `piece`, on `sq`, paralysed: attacked by an enemy piece of its own kind (promoted state
/// included)? Paralysed pieces still paralyse, so no piece's paralysis depends on another's.
fn paralysed(pos: &Position, conditions: Conditions, sq: Square, piece: Piece) -> bool {
    match conditions.paralysis {
        Paralysis::None => false,
        Paralysis::Madrasi if piece.kind() == PieceType::King => false,
        Paralysis::Madrasi | Paralysis::KMadrasi => {
            let enemy = Piece::new(!piece.color(), piece.kind());
            (pos.pieces(enemy.color(), enemy.kind()) & reach_from(sq))
                .into_iter()
                .any(|from| reach(pos, conditions.piece_moves, from, enemy).has(sq))
        }
    }
}

/// Does a piece of `by` that is not paralysed reach `target`?
fn attacked(pos: &Position, conditions: Conditions, by: Color, target: Square) -> bool {
    (pos.pieces_of(by) & reach_from(target))
        .into_iter()
        .any(|sq| {
            let piece = pos.piece_at(sq).expect("a set bit holds a piece");
            reach(pos, conditions.piece_moves, sq, piece).has(target)
                && !paralysed(pos, conditions, sq, piece)
        })
}

/// Is the king of `color` attacked in `pos` (whoever is to move)?
pub fn king_attacked(pos: &Position, conditions: Conditions, color: Color) -> bool {
    pos.king(color)
        .is_some_and(|k| attacked(pos, conditions, !color, k))
}

/// Is the side to move's king attacked?
pub fn in_check(pos: &Position, conditions: Conditions) -> bool {
    king_attacked(pos, conditions, pos.side_to_move())
}

/// Does `m` (legal in `pos`) give check?
pub fn gives_check(pos: &Position, conditions: Conditions, m: Move) -> bool {
    let mut after = pos.clone();
    after.do_move(m);
    king_attacked(&after, conditions, pos.side_to_move().flip())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Only {
    Legal,
    Checks,
}

/// Calls `sink` with each legal move (or each legal check) until it returns true; returns
/// whether it did. Each file-5 choice of a capture is a move of its own. Board moves come
/// before drops, so an existence test rarely reaches the drops.
fn any_move(
    pos: &Position,
    conditions: Conditions,
    only: Only,
    sink: &mut impl FnMut(Move) -> bool,
) -> bool {
    let setting = capture_setting(conditions);
    debug_assert_eq!(
        pos.capture_setting(),
        setting,
        "the position plays captures under other rules"
    );
    let moves = conditions.piece_moves;
    let us = pos.side_to_move();
    let own = pos.pieces_of(us);
    let pawn_files = fill_files(pos.pieces(us, PieceType::Pawn));
    let zone = promotion_zone(us);
    let mut board = pos.clone();
    let mut try_move = |m: Move| -> bool {
        board.do_move(m);
        let mut ok = !king_attacked(&board, conditions, us);
        if ok && (only == Only::Checks || (m.is_drop() && m.dropped() == PieceType::Pawn)) {
            let checks = king_attacked(&board, conditions, !us);
            ok = match only {
                Only::Checks => checks,
                Only::Legal => true,
            };
            // A pawn drop that mates is illegal unless 打歩詰可.
            if ok
                && checks
                && m.is_drop()
                && m.dropped() == PieceType::Pawn
                && conditions.pawn_drop_mate == PawnDropMate::Illegal
                && !has_legal(&board, conditions)
            {
                ok = false;
            }
        }
        board.undo_move(m);
        ok && sink(m)
    };
    for from in own {
        let piece = pos.piece_at(from).expect("a set bit holds a piece");
        if paralysed(pos, conditions, from, piece) {
            continue;
        }
        let kind = piece.kind();
        let stands = standing_ranks(moves, us, kind);
        for to in reach(pos, moves, from, piece) & !own {
            let capture = pos.piece_at(to).is_some() && setting.rule != CaptureRule::Normal;
            for promote in [true, false] {
                if promote && !(kind.can_promote() && (zone.has(from) || zone.has(to))) {
                    continue;
                }
                let m = Move::normal(from, to, promote);
                let two = capture && capture_rule::has_two_choices(pos, setting, m);
                for m in [m, m.choosing_far_home()]
                    .into_iter()
                    .take(1 + usize::from(two))
                {
                    if !promote {
                        // Dead pieces and two pawns are judged where the mover ends.
                        let end = if capture && setting.rule == CaptureRule::AntiCirce {
                            capture_rule::aftermath(pos, setting, m).capturer_to
                        } else {
                            to
                        };
                        let doubles = kind == PieceType::Pawn
                            && end.file() != from.file()
                            && pawn_files.has(end);
                        if !stands.has(end) || doubles {
                            continue;
                        }
                    }
                    if try_move(m) {
                        return true;
                    }
                }
            }
        }
    }
    let hand = pos.hand(us);
    let empty = !pos.occupied();
    for kind in PieceType::HAND {
        if !hand.has(kind) {
            continue;
        }
        let mut dests = empty & standing_ranks(moves, us, kind);
        if kind == PieceType::Pawn {
            dests &= !pawn_files;
        }
        for to in dests {
            if try_move(Move::drop(kind, to)) {
                return true;
            }
        }
    }
    false
}

/// All legal moves under `conditions` (the captures rule 強欲・禁欲 not applied).
pub fn legal(pos: &Position, conditions: Conditions, list: &mut MoveList) {
    any_move(pos, conditions, Only::Legal, &mut |m| {
        list.push(m);
        false
    });
}

/// All legal moves that give check under `conditions` (強欲・禁欲 not applied).
pub fn checks(pos: &Position, conditions: Conditions, list: &mut MoveList) {
    any_move(pos, conditions, Only::Checks, &mut |m| {
        list.push(m);
        false
    });
}

/// Does the side to move have a legal move?
pub fn has_legal(pos: &Position, conditions: Conditions) -> bool {
    any_move(pos, conditions, Only::Legal, &mut |_| true)
}
