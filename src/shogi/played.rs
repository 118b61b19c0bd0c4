//! Moves under a capture rule (キルケ, アンチキルケ, PWC) or a paralysis rule (マドラシ,
//! Kマドラシ), with or without changed powers. A capture can put a piece anywhere on the board
//! and any move can paralyse or free a piece far away, so each candidate is played on a copy
//! of the position and the position after it judged: is the mover's king attacked, is the
//! opponent's, by a piece that is not paralysed. Neither normal shogi nor the power
//! conditions alone come here.

use super::attacks::{attacks, between, fill_files, promotion_zone, standing_ranks};
use super::bitboard::Bitboard;
use super::capture_rule::{self, CaptureSetting};
use super::conditions::{CaptureRule, Conditions, Paralysis, PawnDropMate, PieceMoves};
use super::movegen::MoveList;
use super::position::Position;
use super::powers::{reach, reach_from};
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
            let kind = pos.pieces(enemy.color(), enemy.kind());
            if conditions.piece_moves == PieceMoves::Normal {
                return (pos.attackers_to(enemy.color(), sq, pos.occupied()) & kind).is_nonempty();
            }
            (kind & reach_from(sq))
                .into_iter()
                .any(|from| reach(pos, conditions.piece_moves, from, enemy).has(sq))
        }
    }
}

/// Does a piece of `by` that is not paralysed reach `target`?
fn attacked(pos: &Position, conditions: Conditions, by: Color, target: Square) -> bool {
    if conditions.piece_moves == PieceMoves::Normal {
        return pos
            .attackers_to(by, target, pos.occupied())
            .into_iter()
            .any(|sq| {
                let piece = pos.piece_at(sq).expect("a set bit holds a piece");
                !paralysed(pos, conditions, sq, piece)
            });
    }
    (pos.pieces_of(by) & reach_from(target))
        .into_iter()
        .any(|sq| {
            let piece = pos.piece_at(sq).expect("a set bit holds a piece");
            reach(pos, conditions.piece_moves, sq, piece).has(target)
                && !paralysed(pos, conditions, sq, piece)
        })
}

/// The pieces that check the side to move's king (for showing a line; not on a search's path):
/// those of the other side that reach it and are not paralysed.
pub fn checkers(pos: &Position, conditions: Conditions) -> Bitboard {
    let us = pos.side_to_move();
    let Some(king) = pos.king(us) else {
        return Bitboard::EMPTY;
    };
    let candidates = pos.pieces_of(!us) & reach_from(king);
    let mut found = Bitboard::EMPTY;
    for sq in candidates {
        let piece = pos.piece_at(sq).expect("a set bit holds a piece");
        if reach(pos, conditions.piece_moves, sq, piece).has(king)
            && !paralysed(pos, conditions, sq, piece)
        {
            found.set(sq);
        }
    }
    found
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
    let mut after = pos.scratch();
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
    let mut board = pos.scratch();
    let mut try_move = |m: Move| -> bool {
        board.do_move(m);
        let mut ok = !king_attacked(&board, conditions, us);
        if ok && (only == Only::Checks || m.is_pawn_drop()) {
            let checks = king_attacked(&board, conditions, !us);
            ok = match only {
                Only::Checks => checks,
                Only::Legal => true,
            };
            // A pawn drop that mates is illegal unless 打歩詰可.
            if ok
                && checks
                && m.is_pawn_drop()
                && conditions.pawn_drop_mate == PawnDropMate::Illegal
                && !has_legal(&board, conditions)
            {
                ok = false;
            }
        }
        board.undo_move(m);
        ok
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
                    // Dead pieces and two pawns are judged where the mover ends.
                    if !promote
                        && !capture_rule::mover_may_end(
                            pos,
                            setting,
                            (m, capture),
                            stands,
                            pawn_files,
                        )
                    {
                        continue;
                    }
                    if try_move(m) && sink(m) {
                        return true;
                    }
                }
            }
        }
    }
    let hand = pos.hand(us);
    if hand.is_empty() {
        return false;
    }
    let empty = !pos.occupied();
    let drops = DropSquares::new(pos, conditions, only);
    for kind in PieceType::HAND {
        if !hand.has(kind) {
            continue;
        }
        let mut dests = empty & standing_ranks(moves, us, kind);
        if kind == PieceType::Pawn {
            dests &= !pawn_files;
        }
        let (judge, legal) = drops.squares(pos, kind);
        for to in dests & (judge | legal) {
            let m = Move::drop(kind, to);
            if (legal.has(to) || try_move(m)) && sink(m) {
                return true;
            }
        }
    }
    false
}

/// Where a drop can matter, with normal powers: a drop changes the board on its square only,
/// so it checks by its own attack or by closing the line of a piece that paralyses one of the
/// mover's pieces aimed at the king; it leaves the mover in check unless it closes a checker's
/// line or paralyses the checker; and it exposes the mover's king only by closing the line of a
/// mover's piece that paralyses an enemy piece aimed at that king. Under lent powers every
/// drop is judged.
struct DropSquares {
    /// Lent powers or no king to look at: judge every drop.
    judge_all: bool,
    only: Only,
    /// The opponent's king.
    their_king: Option<Square>,
    /// The mover in check: its king and the checkers.
    checkers: Bitboard,
    king: Option<Square>,
    /// Squares on a line that paralyses a piece aimed at a king (either king).
    freeing: Bitboard,
}

impl DropSquares {
    fn new(pos: &Position, conditions: Conditions, only: Only) -> DropSquares {
        let us = pos.side_to_move();
        let occ = pos.occupied();
        let king = pos.king(us);
        let their_king = pos.king(!us);
        let mut squares = DropSquares {
            judge_all: conditions.piece_moves != PieceMoves::Normal,
            only,
            their_king,
            checkers: Bitboard::EMPTY,
            king,
            freeing: Bitboard::EMPTY,
        };
        if squares.judge_all {
            return squares;
        }
        // Pieces aimed at a king but paralysed: closing their paralysers' lines frees them.
        for (target, by) in [(their_king, us), (king, !us)] {
            let Some(target) = target else { continue };
            for sq in pos.attackers_to(by, target, occ) {
                let piece = pos.piece_at(sq).expect("a set bit holds a piece");
                if !paralysed(pos, conditions, sq, piece) {
                    if by == !us {
                        squares.checkers.set(sq);
                    }
                    continue;
                }
                let paralysers = pos.attackers_to(!by, sq, occ) & pos.pieces(!by, piece.kind());
                for p in paralysers {
                    squares.freeing |= between(p, sq);
                }
            }
        }
        squares
    }

    /// For drops of `kind`: the squares where a drop must be played and judged, and those
    /// where it is kept without that. Elsewhere it is not wanted.
    fn squares(&self, pos: &Position, kind: PieceType) -> (Bitboard, Bitboard) {
        if self.judge_all {
            return (Bitboard::ALL, Bitboard::EMPTY);
        }
        let us = pos.side_to_move();
        let occ = pos.occupied();
        if let Some(king) = self.king.filter(|_| self.checkers.is_nonempty()) {
            // In check: only closing every checker's line or paralysing a checker can help.
            let mut closing = Bitboard::ALL;
            let mut paralysing = Bitboard::EMPTY;
            for c in self.checkers {
                closing &= between(king, c);
                if pos.piece_at(c).is_some_and(|p| p.kind() == kind) {
                    // Where a piece of `kind` of ours would attack the checker.
                    paralysing |= attacks(!us, kind, c, occ);
                }
            }
            return (closing | paralysing | self.freeing, Bitboard::EMPTY);
        }
        match self.only {
            Only::Checks => {
                // Its own attack on the king (unless it is paralysed there), or freeing.
                let own = self
                    .their_king
                    .map_or(Bitboard::EMPTY, |k| attacks(!us, kind, k, occ));
                (own | self.freeing, Bitboard::EMPTY)
            }
            // A pawn may check, and the pawn-drop-mate test needs the position.
            Only::Legal if kind == PieceType::Pawn => (Bitboard::ALL, Bitboard::EMPTY),
            Only::Legal => (self.freeing, !self.freeing),
        }
    }
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
