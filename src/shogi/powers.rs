//! Moves under 安南, 安北, 対面 and 背面 (rules.md §3-§5): a piece moves like a neighbour in its
//! file, so attacks, checks and legality all depend on the whole board after a move.
//!
//! Powers are computed from the board each time they are needed; legality and check are judged
//! on the board after the move (a move can give or uncover check by changing a neighbour's
//! power), without playing it: [`After`] shows the position as the move leaves it. Normal shogi
//! never comes here; its generator (`movegen`) relies on fixed powers.

use super::attacks::{
    attacks, between, bishop_pseudo_attacks, fill_files, knight_attacks, promotion_zone,
    rook_pseudo_attacks, standing_ranks,
};
use super::bitboard::Bitboard;
use super::board::Board;
use super::conditions::{Conditions, PawnDropMate, PieceMoves};
use super::movegen::MoveList;
use super::position::Position;
use super::types::{Color, Move, Piece, PieceType, Square};

/// The board of `pos` after a move, without playing it.
struct After<'a> {
    pos: &'a Position,
    from: Option<Square>,
    to: Square,
    placed: Piece,
    by_color: [Bitboard; 2],
}

impl<'a> After<'a> {
    fn new(pos: &'a Position, m: Move) -> After<'a> {
        let us = pos.side_to_move();
        let to = Bitboard::from_square(m.to());
        let mut by_color = [pos.pieces_of(Color::Black), pos.pieces_of(Color::White)];
        let (from, placed) = if m.is_drop() {
            (None, Piece::new(us, m.dropped()))
        } else {
            let piece = pos
                .piece_at(m.from())
                .expect("a move's origin holds a piece");
            by_color[us.index()] ^= Bitboard::from_square(m.from());
            let kind = if m.is_promotion() {
                piece.kind().promoted()
            } else {
                piece.kind()
            };
            (Some(m.from()), Piece::new(us, kind))
        };
        by_color[us.index()] |= to;
        by_color[(!us).index()] &= !to;
        After {
            pos,
            from,
            to: m.to(),
            placed,
            by_color,
        }
    }
}

impl Board for After<'_> {
    #[inline]
    fn piece_at(&self, sq: Square) -> Option<Piece> {
        if sq == self.to {
            Some(self.placed)
        } else if Some(sq) == self.from {
            None
        } else {
            self.pos.piece_at(sq)
        }
    }
    #[inline]
    fn occupied(&self) -> Bitboard {
        self.by_color[0] | self.by_color[1]
    }
    #[inline]
    fn pieces_of(&self, color: Color) -> Bitboard {
        self.by_color[color.index()]
    }
}

/// The type whose moves the piece `piece` on `sq` makes under `moves`: its neighbour's own type
/// when the neighbour qualifies (never a borrowed power: no chains), else its own.
#[inline]
pub(super) fn power(board: &impl Board, moves: PieceMoves, sq: Square, piece: Piece) -> PieceType {
    let (in_front, friendly) = match moves {
        PieceMoves::Normal => return piece.kind(),
        PieceMoves::Annan => (false, true),
        PieceMoves::Anhoku => (true, true),
        PieceMoves::Taimen => (true, false),
        PieceMoves::Haimen => (false, false),
    };
    // Black's front is rank a (rank index 0).
    let towards_a = (piece.color() == Color::Black) == in_front;
    match sq.offset(0, if towards_a { -1 } else { 1 }) {
        Some(n) => match board.piece_at(n) {
            Some(lender) if (lender.color() == piece.color()) == friendly => lender.kind(),
            _ => piece.kind(),
        },
        None => piece.kind(),
    }
}

/// The squares the piece on `sq` reaches (attacks), in its own direction.
#[inline]
pub(super) fn reach(board: &impl Board, moves: PieceMoves, sq: Square, piece: Piece) -> Bitboard {
    attacks(
        piece.color(),
        power(board, moves, sq, piece),
        sq,
        board.occupied(),
    )
}

/// The squares from which some power reaches `target`: its lines and a knight's jump away.
#[inline]
pub(super) fn reach_from(target: Square) -> Bitboard {
    rook_pseudo_attacks(target)
        | bishop_pseudo_attacks(target)
        | knight_attacks(Color::Black, target)
        | knight_attacks(Color::White, target)
}

/// Does a piece of `by` reach `target`? Whether capturing there would be legal does not matter.
fn attacked(board: &impl Board, moves: PieceMoves, by: Color, target: Square) -> bool {
    (board.pieces_of(by) & reach_from(target))
        .into_iter()
        .any(|sq| {
            let piece = board.piece_at(sq).expect("a set bit holds a piece");
            reach(board, moves, sq, piece).has(target)
        })
}

/// Is the side to move's king attacked?
pub fn in_check(pos: &Position, moves: PieceMoves) -> bool {
    king_attacked(pos, moves, pos.side_to_move())
}

/// Is the king of `color` attacked in `pos` (whoever is to move)?
pub fn king_attacked(pos: &Position, moves: PieceMoves, color: Color) -> bool {
    pos.king(color)
        .is_some_and(|k| attacked(pos, moves, !color, k))
}

/// When the side to move is in check, the squares where a piece put down would block every
/// checker's line (none if a checker is next to the king or a knight's jump away); None when it
/// is not in check.
fn check_blocks(pos: &Position, moves: PieceMoves) -> Option<Bitboard> {
    let us = pos.side_to_move();
    let king = pos.king(us)?;
    let mut blocks: Option<Bitboard> = None;
    for sq in pos.pieces_of(!us) & reach_from(king) {
        let piece = pos.piece_at(sq).expect("a set bit holds a piece");
        if reach(pos, moves, sq, piece).has(king) {
            let line = between(king, sq);
            blocks = Some(blocks.map_or(line, |b| b & line));
        }
    }
    blocks
}

/// Does `m` leave the mover's king unattacked?
fn keeps_king_safe(pos: &Position, moves: PieceMoves, after: &After, m: Move) -> bool {
    let us = pos.side_to_move();
    let king = if !m.is_drop() && after.placed.kind() == PieceType::King {
        Some(m.to())
    } else {
        pos.king(us)
    };
    king.is_none_or(|k| !attacked(after, moves, !us, k))
}

/// Does `m` attack the opponent's king once played?
fn checks_after(pos: &Position, moves: PieceMoves, after: &After) -> bool {
    let us = pos.side_to_move();
    pos.king(!us).is_some_and(|k| attacked(after, moves, us, k))
}

/// Does `m` (legal in `pos`) give check?
pub fn gives_check(pos: &Position, moves: PieceMoves, m: Move) -> bool {
    checks_after(pos, moves, &After::new(pos, m))
}

/// Is the pawn drop `m` a mate (illegal unless 打歩詰可)?
fn is_pawn_drop_mate(pos: &Position, conditions: Conditions, m: Move) -> bool {
    let mut after = pos.clone();
    after.do_move(m);
    in_check(&after, conditions.piece_moves)
        && !any_move(&after, conditions, Only::Legal, &mut |_| true)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Only {
    Legal,
    Checks,
}

/// Calls `sink` with each legal move (or each legal check) until it returns true; returns
/// whether it did. Board moves come before drops, so an existence test rarely reaches the
/// drops' pawn-drop-mate tests.
fn any_move(
    pos: &Position,
    conditions: Conditions,
    only: Only,
    sink: &mut impl FnMut(Move) -> bool,
) -> bool {
    let moves = conditions.piece_moves;
    let us = pos.side_to_move();
    let own = pos.pieces_of(us);
    let occ = pos.occupied();
    let pawn_files = fill_files(pos.pieces(us, PieceType::Pawn));
    let zone = promotion_zone(us);
    // Squares in front of or behind a piece: a piece arriving there, leaving from there or put
    // down there changes a neighbour's power or takes one (see the drops below).
    let mut sensitive = Bitboard::EMPTY;
    for sq in occ {
        for dr in [-1, 1] {
            if let Some(n) = sq.offset(0, dr) {
                sensitive.set(n);
            }
        }
    }
    let their_king = pos.king(!us);
    // Leaving a square off every line through the opponent's king uncovers no check.
    let their_lines = their_king.map_or(Bitboard::EMPTY, |k| {
        rook_pseudo_attacks(k) | bishop_pseudo_attacks(k)
    });
    let mut try_move = |m: Move, quiet: bool| -> bool {
        if only == Only::Checks && quiet {
            // No power changes and nothing uncovered: only the moved piece, with its own
            // moves on a square without neighbours in its file, can check.
            let kind = pos.piece_at(m.from()).expect("a piece to move").kind();
            let kind = if m.is_promotion() {
                kind.promoted()
            } else {
                kind
            };
            let occ_after = (occ ^ Bitboard::from_square(m.from())) | Bitboard::from_square(m.to());
            if !their_king.is_some_and(|k| attacks(us, kind, m.to(), occ_after).has(k)) {
                return false;
            }
        }
        let after = After::new(pos, m);
        (only == Only::Legal || checks_after(pos, moves, &after))
            && keeps_king_safe(pos, moves, &after, m)
            && sink(m)
    };
    for from in own {
        let piece = pos.piece_at(from).expect("a set bit holds a piece");
        let kind = piece.kind();
        let stands = standing_ranks(moves, us, kind);
        let quiet_from = !their_lines.has(from) && !sensitive.has(from);
        for to in attacks(us, power(pos, moves, from, piece), from, occ) & !own {
            let quiet = quiet_from && !sensitive.has(to);
            // Promotion follows the piece's own type, whatever power it used.
            if kind.can_promote()
                && (zone.has(from) || zone.has(to))
                && try_move(Move::normal(from, to, true), quiet)
            {
                return true;
            }
            // A pawn with a borrowed power may change files: the two-pawn rule covers it.
            let doubles = kind == PieceType::Pawn && to.file() != from.file() && pawn_files.has(to);
            if stands.has(to) && !doubles && try_move(Move::normal(from, to, false), quiet) {
                return true;
            }
        }
    }
    let hand = pos.hand(us);
    if hand.is_empty() {
        return false;
    }
    // A drop changes the board only on its square: it adds a blocker, and it changes the power
    // of a piece in front of or behind it (and takes its own from one). Anywhere else ("quiet")
    // every other piece's power is what it was, so it cannot uncover or give a check but with
    // its own moves, and it answers a check only by blocking a ranging checker's line.
    let blocks = check_blocks(pos, moves);
    let safe_now = blocks.is_none();
    if let Some(blocks) = blocks {
        sensitive |= blocks;
    }
    // Under 安南 and 安北 a piece borrows only from its own side: a drop changes the powers of
    // the dropping side's pieces alone, and on the other side's only blocks lines. So the king
    // is safe after a drop exactly when it was before or the drop blocks every checker.
    let lenders_are_friends = matches!(moves, PieceMoves::Annan | PieceMoves::Anhoku);
    for kind in PieceType::HAND {
        if !hand.has(kind) {
            continue;
        }
        let mut dests = !occ & standing_ranks(moves, us, kind);
        if kind == PieceType::Pawn {
            dests &= !pawn_files;
        }
        if !safe_now {
            // In check, a quiet drop leaves the check.
            dests &= sensitive;
        }
        // Where a quiet drop of this kind checks with its own moves: where the opponent's king
        // would reach with this kind's moves turned round.
        let checking = their_king.map_or(Bitboard::EMPTY, |k| attacks(!us, kind, k, occ));
        if only == Only::Checks {
            dests &= checking | sensitive;
        }
        for to in dests {
            let m = Move::drop(kind, to);
            let checks = if lenders_are_friends && sensitive.has(to) {
                // Safe as before, or by blocking; only a check needs the board after the drop.
                if !(safe_now || blocks.is_some_and(|b| b.has(to))) {
                    continue;
                }
                let needs_check = only == Only::Checks || kind == PieceType::Pawn;
                let checks = needs_check && checks_after(pos, moves, &After::new(pos, m));
                if only == Only::Checks && !checks {
                    continue;
                }
                checks
            } else if sensitive.has(to) {
                let after = After::new(pos, m);
                let checks = checks_after(pos, moves, &after);
                if (only == Only::Checks && !checks) || !keeps_king_safe(pos, moves, &after, m) {
                    continue;
                }
                checks
            } else {
                checking.has(to)
            };
            if kind == PieceType::Pawn
                && checks
                && conditions.pawn_drop_mate == PawnDropMate::Illegal
                && is_pawn_drop_mate(pos, conditions, m)
            {
                continue;
            }
            if sink(m) {
                return true;
            }
        }
    }
    false
}

/// All legal moves under `conditions` (the captures rule not applied).
pub fn legal(pos: &Position, conditions: Conditions, list: &mut MoveList) {
    any_move(pos, conditions, Only::Legal, &mut |m| {
        list.push(m);
        false
    });
}

/// All legal moves that give check under `conditions` (the captures rule not applied).
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
