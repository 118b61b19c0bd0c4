//! What a capture does under キルケ, アンチキルケ and PWC: where the captured piece or the
//! capturer ends up (docs/fairy.md, "Capture rules"). The position plays it
//! (`Position::do_move`); the generator asks which moves a capture makes (two on file 5 when
//! both homes are empty) and where the capturer ends, for its dead-piece and two-pawn tests.
//! It reads the board through [`CaptureBoard`], so that the position, which plays captures
//! by it, stays below it.

use super::attacks::file_mask;
use super::attacks::standing_ranks;
use super::bitboard::Bitboard;
use super::board::Board;
use super::conditions::{CaptureRule, PieceMoves};
use super::types::{Color, Move, Piece, PieceType, Square};

/// What the capture rules read of a board beyond [`Board`] (the position implements it).
pub trait CaptureBoard: Board {
    fn side_to_move(&self) -> Color;
    fn pieces(&self, color: Color, kind: PieceType) -> Bitboard;
}

/// The capture rule a position plays its captures under, with the piece moves its dead-piece
/// test follows (a PWC placement may not leave a dead piece).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CaptureSetting {
    pub rule: CaptureRule,
    pub moves: PieceMoves,
}

/// Where the pieces of a capture end up, besides the plain capture's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aftermath {
    /// Where the capturer ends: the capture square, or its home (アンチキルケ).
    pub capturer_to: Square,
    /// The captured piece put back on the board (キルケ, PWC), and where.
    pub victim_to: Option<(Square, Piece)>,
}

impl Aftermath {
    /// The plain capture: the capturer on the capture square, the captured piece in hand.
    fn plain(to: Square) -> Aftermath {
        Aftermath {
            capturer_to: to,
            victim_to: None,
        }
    }

    /// Does the captured piece go to the capturer's hand?
    #[inline]
    pub fn to_hand(self) -> bool {
        self.victim_to.is_none()
    }
}

/// The home squares of a piece of `color` whose base type is `base`, for a capture on
/// `capture`: one, or two on file 5 (the file-1 side first). Kings' homes are used only by
/// アンチキルケ.
pub fn homes(color: Color, base: PieceType, capture: Square) -> (Square, Option<Square>) {
    let back = match color {
        Color::Black => 8,
        Color::White => 0,
    };
    // The file-1-side file of the two (0-based), for the pieces that have two homes.
    let pair = |near: u8| {
        let far = 8 - near;
        match capture.file() {
            f if f < 4 => (Square::new(near, back), None),
            f if f > 4 => (Square::new(far, back), None),
            _ => (Square::new(near, back), Some(Square::new(far, back))),
        }
    };
    match base {
        PieceType::Pawn => {
            let rank = match color {
                Color::Black => 6,
                Color::White => 2,
            };
            (Square::new(capture.file(), rank), None)
        }
        PieceType::Lance => pair(0),
        PieceType::Knight => pair(1),
        PieceType::Silver => pair(2),
        PieceType::Gold => pair(3),
        PieceType::Bishop => match color {
            Color::Black => (Square::new(7, 7), None),
            Color::White => (Square::new(1, 1), None),
        },
        PieceType::Rook => match color {
            Color::Black => (Square::new(1, 7), None),
            Color::White => (Square::new(7, 1), None),
        },
        _ => (Square::new(4, back), None),
    }
}

/// The home a piece goes to, if any: the one home when empty; of two, the one `m` chooses
/// when both are empty, else the empty one.
fn home_taken(empty: Bitboard, homes: (Square, Option<Square>), m: Move) -> Option<Square> {
    match homes {
        (one, None) => empty.has(one).then_some(one),
        (near, Some(far)) => match (empty.has(near), empty.has(far)) {
            (true, true) => Some(if m.chooses_far_home() { far } else { near }),
            (true, false) => Some(near),
            (false, true) => Some(far),
            (false, false) => None,
        },
    }
}

/// Squares that count as empty for a home (docs/fairy.md): the capturer's origin is empty,
/// the capture square is not.
#[inline]
fn empty_for_homes(pos: &impl CaptureBoard, from: Square) -> Bitboard {
    !(pos.occupied() ^ Bitboard::from_square(from))
}

/// Has `color` an unpromoted pawn on `file` other than on `except`?
#[inline]
fn pawn_on_file(pos: &impl CaptureBoard, color: Color, file: u8, except: Square) -> bool {
    let pawns = pos.pieces(color, PieceType::Pawn) & file_mask(file);
    (pawns & !Bitboard::from_square(except)).is_nonempty()
}

/// What the capture `m` (a board move onto an enemy piece) does under `setting`, `m`'s
/// file-5 choice included.
pub fn aftermath(pos: &impl CaptureBoard, setting: CaptureSetting, m: Move) -> Aftermath {
    let from = m.from();
    let to = m.to();
    let us = pos.side_to_move();
    let victim = pos.piece_at(to).expect("a capture's square holds a piece");
    let capturer = pos.piece_at(from).expect("a move's origin holds a piece");
    match setting.rule {
        CaptureRule::Normal => Aftermath::plain(to),
        CaptureRule::Circe => {
            let base = victim.kind().unpromoted();
            let them = victim.color();
            if base == PieceType::King
                || (base == PieceType::Pawn && pawn_on_file(pos, them, to.file(), to))
            {
                return Aftermath::plain(to);
            }
            let empty = empty_for_homes(pos, from);
            match home_taken(empty, homes(them, base, to), m) {
                Some(home) => Aftermath {
                    capturer_to: to,
                    victim_to: Some((home, Piece::new(them, base))),
                },
                None => Aftermath::plain(to),
            }
        }
        CaptureRule::AntiCirce => {
            let kind = if m.is_promotion() {
                capturer.kind().promoted()
            } else {
                capturer.kind()
            };
            let base = kind.unpromoted();
            let (home, other) = homes(us, base, to);
            // An unpromoted pawn stays when another of its side's pawns holds the home file.
            if kind == PieceType::Pawn && pawn_on_file(pos, us, home.file(), from) {
                return Aftermath::plain(to);
            }
            let empty = empty_for_homes(pos, from);
            match home_taken(empty, (home, other), m) {
                Some(home) => Aftermath {
                    capturer_to: home,
                    victim_to: None,
                },
                None => Aftermath::plain(to),
            }
        }
        CaptureRule::Pwc => {
            let kind = victim.kind();
            let them = victim.color();
            let dead = !standing_ranks(setting.moves, them, kind).has(from);
            let doubled = kind == PieceType::Pawn && pawn_on_file(pos, them, from.file(), to);
            if dead || doubled {
                Aftermath::plain(to)
            } else {
                Aftermath {
                    capturer_to: to,
                    victim_to: Some((from, victim)),
                }
            }
        }
    }
}

/// May the unpromoted mover of `m` (a board move, a capture under `setting` if `capture`) end
/// where it ends — the capture square, or its home when it returns (アンチキルケ)? Not a dead
/// piece there (`stands`: where its kind may stand) and no second pawn on a file it changed
/// to (`pawn_files`: the files with the mover's pawns).
pub fn mover_may_end(
    pos: &impl CaptureBoard,
    setting: CaptureSetting,
    (m, capture): (Move, bool),
    stands: Bitboard,
    pawn_files: Bitboard,
) -> bool {
    let end = if capture && setting.rule == CaptureRule::AntiCirce {
        aftermath(pos, setting, m).capturer_to
    } else {
        m.to()
    };
    let kind = pos
        .piece_at(m.from())
        .expect("a move's origin holds a piece")
        .kind();
    let doubles = kind == PieceType::Pawn && end.file() != m.from().file() && pawn_files.has(end);
    stands.has(end) && !doubles
}

/// Does the capture `m` (without a choice) offer two moves, one for each home of file 5?
/// Only when both homes are empty and the piece would go there.
pub fn has_two_choices(pos: &impl CaptureBoard, setting: CaptureSetting, m: Move) -> bool {
    if m.to().file() != 4 {
        return false;
    }
    let near = aftermath(pos, setting, m);
    let far = aftermath(pos, setting, m.choosing_far_home());
    near != far
}
