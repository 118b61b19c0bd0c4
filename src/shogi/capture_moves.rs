//! Moves under a capture rule (キルケ, アンチキルケ, PWC) with normal powers and no paralysis.
//! A move that captures nothing leaves the board exactly as in normal shogi, so its legality and
//! whether it checks are normal shogi's: those moves come from the normal generator. Only
//! captures, which put a piece back on the board, are played on a copy and judged — and the
//! pawn-drop-mate test, since the escapes it looks for may be captures.

use super::attacks::{
    attacks, between, fill_files, king_attacks, legal_ranks, line, promotion_zone,
};
use super::bitboard::Bitboard;
use super::capture_rule::{self, CaptureSetting};
use super::conditions::{Conditions, PawnDropMate, PawnDropMateAllowed};
use super::movegen::{self, MoveList};
use super::played::capture_setting;
use super::position::Position;
use super::types::{Move, PieceType};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Only {
    Legal,
    Checks,
}

/// Is `m` a board move onto an enemy piece?
#[inline]
fn is_capture(pos: &Position, m: Move) -> bool {
    !m.is_drop() && pos.piece_at(m.to()).is_some()
}

/// Keeps, of the normal generator's moves in `list`, those that capture nothing and are legal
/// here: a pawn drop that checks is a mate, and illegal without 打歩詰可, when the opponent has
/// no escape under these rules.
fn keep_quiet(pos: &Position, conditions: Conditions, list: &mut MoveList) {
    list.retain(|m| !is_capture(pos, m) && !is_pawn_drop_mate(pos, conditions, m));
}

/// Is `m` a pawn drop that mates (under these rules) while pawn-drop mate is illegal?
fn is_pawn_drop_mate(pos: &Position, conditions: Conditions, m: Move) -> bool {
    if !m.is_drop()
        || m.dropped() != PieceType::Pawn
        || conditions.pawn_drop_mate == PawnDropMate::Allowed
        || !movegen::gives_check(pos, m)
    {
        return false;
    }
    let mut after = pos.scratch();
    after.do_move(m);
    !has_legal(&after, conditions)
}

/// Calls `sink` with each legal capture (or each legal capture that checks), each file-5
/// choice a move of its own, until it returns true; returns whether it did.
fn any_capture(
    pos: &Position,
    setting: CaptureSetting,
    only: Only,
    sink: &mut impl FnMut(Move) -> bool,
) -> bool {
    let us = pos.side_to_move();
    let enemy = pos.pieces_of(!us);
    let occ = pos.occupied();
    let zone = promotion_zone(us);
    let pawn_files = fill_files(pos.pieces(us, PieceType::Pawn));
    let mut board: Option<Position> = None;
    for from in pos.pieces_of(us) {
        let kind = pos.piece_at(from).expect("a set bit holds a piece").kind();
        let targets = attacks(us, kind, from, occ) & enemy;
        if targets.is_empty() {
            continue;
        }
        let stands = legal_ranks(us, kind);
        for to in targets {
            for promote in [true, false] {
                if promote && !(kind.can_promote() && (zone.has(from) || zone.has(to))) {
                    continue;
                }
                let m = Move::normal(from, to, promote);
                let two = capture_rule::has_two_choices(pos, setting, m);
                for m in [m, m.choosing_far_home()]
                    .into_iter()
                    .take(1 + usize::from(two))
                {
                    // Dead pieces and two pawns are judged where the mover ends.
                    if !promote
                        && !capture_rule::mover_may_end(pos, setting, (m, true), stands, pawn_files)
                    {
                        continue;
                    }
                    let after = board.get_or_insert_with(|| pos.scratch());
                    after.do_move(m);
                    let safe = after
                        .king(us)
                        .is_none_or(|k| after.attackers_to(!us, k, after.occupied()).is_empty());
                    let ok = safe && (only == Only::Legal || after.in_check());
                    after.undo_move(m);
                    if ok && sink(m) {
                        return true;
                    }
                }
            }
        }
    }
    false
}

/// All legal moves under `conditions` (強欲・禁欲 not applied), into an empty `list`.
pub fn legal(pos: &Position, conditions: Conditions, list: &mut MoveList) {
    movegen::legal_under::<PawnDropMateAllowed>(pos, list);
    keep_quiet(pos, conditions, list);
    any_capture(pos, capture_setting(conditions), Only::Legal, &mut |m| {
        list.push(m);
        false
    });
}

/// All legal moves that give check under `conditions` (強欲・禁欲 not applied), into an empty
/// `list`.
pub fn checks(pos: &Position, conditions: Conditions, list: &mut MoveList) {
    movegen::checks_under::<PawnDropMateAllowed>(pos, list);
    keep_quiet(pos, conditions, list);
    any_capture(pos, capture_setting(conditions), Only::Checks, &mut |m| {
        list.push(m);
        false
    });
}

/// Has the side to move, in check, an answer that captures nothing and needs no pawn-drop-mate
/// test — a king step, an interposing piece or drop (normal shogi's answers, and legal here as
/// there)? The usual answer to a check, found without generating every move.
fn has_quiet_evasion(pos: &Position) -> bool {
    let us = pos.side_to_move();
    let Some(king) = pos.king(us) else {
        return false;
    };
    let occ = pos.occupied();
    let king_occ = occ ^ Bitboard::from_square(king);
    for to in king_attacks(king) & !occ {
        if pos.attackers_to(!us, to, king_occ).is_empty() {
            return true;
        }
    }
    let checkers = pos.checkers();
    if checkers.has_many() {
        return false;
    }
    let block = between(king, checkers.lsb());
    if block.is_empty() {
        return false;
    }
    let hand = pos.hand(us);
    if PieceType::HAND.into_iter().any(|kind| {
        kind != PieceType::Pawn && hand.has(kind) && (block & legal_ranks(us, kind)).is_nonempty()
    }) {
        return true;
    }
    let pinned = pos.pinned(us);
    let movers = pos.pieces_of(us) & !Bitboard::from_square(king);
    block.into_iter().any(|to| {
        (pos.attackers_to(us, to, occ) & movers)
            .into_iter()
            .any(|from| !pinned.has(from) || line(king, from).has(to))
    })
}

/// Does the side to move have a legal move?
pub fn has_legal(pos: &Position, conditions: Conditions) -> bool {
    if pos.in_check() && has_quiet_evasion(pos) {
        return true;
    }
    let mut plain = MoveList::new();
    movegen::legal_under::<PawnDropMateAllowed>(pos, &mut plain);
    plain
        .iter()
        .any(|&m| !is_capture(pos, m) && !is_pawn_drop_mate(pos, conditions, m))
        || any_capture(pos, capture_setting(conditions), Only::Legal, &mut |_| true)
}

/// Does `m` (legal in `pos`) give check?
pub fn gives_check(pos: &Position, m: Move) -> bool {
    if is_capture(pos, m) {
        let mut after = pos.scratch();
        after.do_move(m);
        after.in_check()
    } else {
        movegen::gives_check(pos, m)
    }
}
