//! Basic value types of shogi: colours, squares, piece kinds, pieces and moves.
//!
//! Squares are numbered file-major (`index = file * 9 + rank`, file 0 = "1", rank 0 = "a"), so
//! that a file is nine consecutive bits of a bitboard, as in YaneuraOu.

use std::fmt;
use std::num::NonZeroU8;

/// The side: Black (sente, moves first, upper-case in SFEN) or White (gote).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Color {
    Black = 0,
    White = 1,
}

impl Color {
    pub const ALL: [Color; 2] = [Color::Black, Color::White];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    #[inline]
    pub const fn flip(self) -> Color {
        match self {
            Color::Black => Color::White,
            Color::White => Color::Black,
        }
    }

    /// SFEN side-to-move letter.
    pub const fn sfen_char(self) -> char {
        match self {
            Color::Black => 'b',
            Color::White => 'w',
        }
    }
}

impl std::ops::Not for Color {
    type Output = Color;
    #[inline]
    fn not(self) -> Color {
        self.flip()
    }
}

/// A board square, `0..81`, file-major.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square(u8);

impl Square {
    pub const NUM: usize = 81;

    /// `file` and `rank` are 0-based (file 0 is the USI file "1", rank 0 the USI rank "a").
    #[inline]
    pub const fn new(file: u8, rank: u8) -> Square {
        debug_assert!(file < 9 && rank < 9);
        Square(file * 9 + rank)
    }

    #[inline]
    pub const fn from_index(index: u8) -> Square {
        debug_assert!(index < 81);
        Square(index)
    }

    /// Checked constructor from a signed index.
    #[inline]
    pub fn try_from_index(index: i32) -> Option<Square> {
        (0..81).contains(&index).then_some(Square(index as u8))
    }

    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    #[inline]
    pub const fn file(self) -> u8 {
        self.0 / 9
    }

    #[inline]
    pub const fn rank(self) -> u8 {
        self.0 % 9
    }

    /// Rank counted from `color`'s own side: 0 is the far (promotion-most) rank.
    #[inline]
    pub const fn relative_rank(self, color: Color) -> u8 {
        match color {
            Color::Black => self.rank(),
            Color::White => 8 - self.rank(),
        }
    }

    /// True when the square lies in `color`'s promotion zone (the three far ranks).
    #[inline]
    pub const fn in_promotion_zone(self, color: Color) -> bool {
        self.relative_rank(color) < 3
    }

    /// The square `df` files and `dr` ranks away, if on the board.
    pub fn offset(self, df: i32, dr: i32) -> Option<Square> {
        let f = self.file() as i32 + df;
        let r = self.rank() as i32 + dr;
        ((0..9).contains(&f) && (0..9).contains(&r)).then(|| Square::new(f as u8, r as u8))
    }

    pub fn all() -> impl Iterator<Item = Square> {
        (0..81u8).map(Square)
    }

    /// Parses the USI form, e.g. `7g`.
    pub fn from_usi(text: &str) -> Option<Square> {
        let b = text.as_bytes();
        if b.len() != 2 {
            return None;
        }
        let file = b[0].checked_sub(b'1').filter(|&f| f < 9)?;
        let rank = b[1].checked_sub(b'a').filter(|&r| r < 9)?;
        Some(Square::new(file, rank))
    }
}

impl fmt::Display for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}",
            (b'1' + self.file()) as char,
            (b'a' + self.rank()) as char
        )
    }
}

impl fmt::Debug for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Kind of piece without colour. Promoted kinds are the base kind + 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum PieceType {
    Pawn = 1,
    Lance = 2,
    Knight = 3,
    Silver = 4,
    Bishop = 5,
    Rook = 6,
    Gold = 7,
    King = 8,
    ProPawn = 9,
    ProLance = 10,
    ProKnight = 11,
    ProSilver = 12,
    Horse = 13,
    Dragon = 14,
}

impl PieceType {
    /// Table size when indexing by `PieceType as usize`.
    pub const NUM: usize = 15;

    pub const ALL: [PieceType; 14] = [
        PieceType::Pawn,
        PieceType::Lance,
        PieceType::Knight,
        PieceType::Silver,
        PieceType::Bishop,
        PieceType::Rook,
        PieceType::Gold,
        PieceType::King,
        PieceType::ProPawn,
        PieceType::ProLance,
        PieceType::ProKnight,
        PieceType::ProSilver,
        PieceType::Horse,
        PieceType::Dragon,
    ];

    /// The kinds that can be held in hand, in SFEN order of value (R B G S N L P is the
    /// conventional printing order; see [`PieceType::HAND_PRINT_ORDER`]).
    pub const HAND: [PieceType; 7] = [
        PieceType::Pawn,
        PieceType::Lance,
        PieceType::Knight,
        PieceType::Silver,
        PieceType::Gold,
        PieceType::Bishop,
        PieceType::Rook,
    ];

    pub const HAND_PRINT_ORDER: [PieceType; 7] = [
        PieceType::Rook,
        PieceType::Bishop,
        PieceType::Gold,
        PieceType::Silver,
        PieceType::Knight,
        PieceType::Lance,
        PieceType::Pawn,
    ];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    #[inline]
    pub const fn from_index(i: u8) -> Option<PieceType> {
        Some(match i {
            1 => PieceType::Pawn,
            2 => PieceType::Lance,
            3 => PieceType::Knight,
            4 => PieceType::Silver,
            5 => PieceType::Bishop,
            6 => PieceType::Rook,
            7 => PieceType::Gold,
            8 => PieceType::King,
            9 => PieceType::ProPawn,
            10 => PieceType::ProLance,
            11 => PieceType::ProKnight,
            12 => PieceType::ProSilver,
            13 => PieceType::Horse,
            14 => PieceType::Dragon,
            _ => return None,
        })
    }

    /// `from_index` for values known to be valid (compiles to no work).
    #[inline]
    const fn from_valid(i: u8) -> PieceType {
        match PieceType::from_index(i) {
            Some(k) => k,
            None => panic!("invalid piece kind"),
        }
    }

    #[inline]
    pub const fn can_promote(self) -> bool {
        (self as u8) <= PieceType::Rook as u8
    }

    #[inline]
    pub const fn is_promoted(self) -> bool {
        (self as u8) > PieceType::King as u8
    }

    /// The promoted kind. Only meaningful when [`can_promote`](Self::can_promote).
    #[inline]
    pub fn promoted(self) -> PieceType {
        debug_assert!(self.can_promote());
        PieceType::from_valid(self as u8 + 8)
    }

    /// The kind this piece reverts to when captured (its hand kind).
    #[inline]
    pub fn unpromoted(self) -> PieceType {
        if self.is_promoted() {
            PieceType::from_valid(self as u8 - 8)
        } else {
            self
        }
    }

    /// Upper-case SFEN letter of the base kind.
    pub const fn sfen_char(self) -> char {
        match self {
            PieceType::Pawn | PieceType::ProPawn => 'P',
            PieceType::Lance | PieceType::ProLance => 'L',
            PieceType::Knight | PieceType::ProKnight => 'N',
            PieceType::Silver | PieceType::ProSilver => 'S',
            PieceType::Bishop | PieceType::Horse => 'B',
            PieceType::Rook | PieceType::Dragon => 'R',
            PieceType::Gold => 'G',
            PieceType::King => 'K',
        }
    }

    /// Unpromoted kind from an SFEN letter (either case).
    pub fn from_sfen_char(c: char) -> Option<PieceType> {
        Some(match c.to_ascii_uppercase() {
            'P' => PieceType::Pawn,
            'L' => PieceType::Lance,
            'N' => PieceType::Knight,
            'S' => PieceType::Silver,
            'B' => PieceType::Bishop,
            'R' => PieceType::Rook,
            'G' => PieceType::Gold,
            'K' => PieceType::King,
            _ => return None,
        })
    }

    /// How many pieces of this base kind a shogi set holds (both sides together).
    pub const fn set_count(self) -> u8 {
        match self {
            PieceType::Pawn => 18,
            PieceType::Lance | PieceType::Knight | PieceType::Silver | PieceType::Gold => 4,
            PieceType::Bishop | PieceType::Rook | PieceType::King => 2,
            _ => 0,
        }
    }
}

/// A coloured piece, packed as `kind | color << 4` (never zero, so `Option<Piece>` is one byte).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Piece(NonZeroU8);

impl Piece {
    /// The piece with dense index `i` (see [`Piece::index`]), if any.
    #[inline]
    pub fn from_index(i: u8) -> Option<Piece> {
        let kind = PieceType::from_index(i & 15)?;
        let color = match i >> 4 {
            0 => Color::Black,
            1 => Color::White,
            _ => return None,
        };
        Some(Piece::new(color, kind))
    }

    #[inline]
    pub const fn new(color: Color, kind: PieceType) -> Piece {
        match NonZeroU8::new(kind as u8 | (color as u8) << 4) {
            Some(v) => Piece(v),
            None => unreachable!(),
        }
    }

    #[inline]
    pub fn kind(self) -> PieceType {
        PieceType::from_valid(self.0.get() & 15)
    }

    #[inline]
    pub const fn color(self) -> Color {
        if self.0.get() >> 4 == 0 {
            Color::Black
        } else {
            Color::White
        }
    }

    /// Dense index `0..32` for tables.
    #[inline]
    pub const fn index(self) -> usize {
        self.0.get() as usize
    }

    /// SFEN token, e.g. `+p` or `K`.
    pub fn sfen(self) -> String {
        let mut s = String::new();
        if self.kind().is_promoted() {
            s.push('+');
        }
        let c = self.kind().sfen_char();
        s.push(match self.color() {
            Color::Black => c,
            Color::White => c.to_ascii_lowercase(),
        });
        s
    }
}

impl fmt::Debug for Piece {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sfen())
    }
}

/// Pieces in one side's hand: a count per hand kind, indexed by `PieceType as usize`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Hand([u8; 8]);

impl Hand {
    #[inline]
    pub fn count(self, kind: PieceType) -> u8 {
        self.0[kind.index()]
    }

    #[inline]
    pub fn has(self, kind: PieceType) -> bool {
        self.0[kind.index()] != 0
    }

    #[inline]
    pub fn add(&mut self, kind: PieceType) {
        self.0[kind.index()] += 1;
    }

    #[inline]
    pub fn remove(&mut self, kind: PieceType) {
        self.0[kind.index()] -= 1;
    }

    pub fn set(&mut self, kind: PieceType, count: u8) {
        self.0[kind.index()] = count;
    }

    pub fn is_empty(self) -> bool {
        self.0 == [0; 8]
    }
}

impl fmt::Debug for Hand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for kind in PieceType::HAND_PRINT_ORDER {
            let n = self.count(kind);
            if n > 1 {
                write!(f, "{n}")?;
            }
            if n > 0 {
                write!(f, "{}", kind.sfen_char())?;
            }
        }
        Ok(())
    }
}

/// A move packed in 16 bits: destination in bits 0..7, origin in bits 7..14 (for a drop,
/// `81 + kind`), promotion flag in bit 14, the choice of home (キルケ, アンチキルケ) in bit 15.
/// The all-zero value is [`Move::NULL`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Move(u16);

impl Move {
    pub const NULL: Move = Move(0);
    const PROMOTE: u16 = 1 << 14;
    /// Under キルケ and アンチキルケ, a capture on file 5 with both homes empty is two moves:
    /// this bit chooses the home on the file-9 side (clear: the file-1 side).
    const FAR_HOME: u16 = 1 << 15;
    const DROP_BASE: u16 = 81;

    #[inline]
    pub const fn normal(from: Square, to: Square, promote: bool) -> Move {
        Move(to.0 as u16 | (from.0 as u16) << 7 | if promote { Move::PROMOTE } else { 0 })
    }

    #[inline]
    pub const fn drop(kind: PieceType, to: Square) -> Move {
        Move(to.0 as u16 | (Move::DROP_BASE + kind as u16) << 7)
    }

    #[inline]
    pub const fn to(self) -> Square {
        Square((self.0 & 0x7f) as u8)
    }

    #[inline]
    const fn origin_bits(self) -> u16 {
        (self.0 >> 7) & 0x7f
    }

    #[inline]
    pub const fn is_drop(self) -> bool {
        self.origin_bits() >= Move::DROP_BASE
    }

    /// Origin square; only meaningful when not a drop.
    #[inline]
    pub const fn from(self) -> Square {
        Square(self.origin_bits() as u8)
    }

    /// Dropped kind; only meaningful for drops.
    #[inline]
    pub fn dropped(self) -> PieceType {
        PieceType::from_valid((self.origin_bits() - Move::DROP_BASE) as u8)
    }

    /// A pawn drop (the one move the 打歩詰 rule judges).
    #[inline]
    pub fn is_pawn_drop(self) -> bool {
        self.is_drop() && self.dropped() == PieceType::Pawn
    }

    #[inline]
    pub const fn is_promotion(self) -> bool {
        self.0 & Move::PROMOTE != 0
    }

    #[inline]
    pub const fn is_null(self) -> bool {
        self.0 == 0
    }

    /// This capture with the file-9-side home chosen (see [`Move::chooses_far_home`]).
    #[inline]
    pub const fn choosing_far_home(self) -> Move {
        Move(self.0 | Move::FAR_HOME)
    }

    /// Does this capture choose the home on the file-9 side, of two empty ones on file 5?
    #[inline]
    pub const fn chooses_far_home(self) -> bool {
        self.0 & Move::FAR_HOME != 0
    }

    /// The move without its choice of home: what USI prints.
    #[inline]
    pub const fn plain(self) -> Move {
        Move(self.0 & !Move::FAR_HOME)
    }

    #[inline]
    pub const fn raw(self) -> u16 {
        self.0
    }

    #[inline]
    pub const fn from_raw(raw: u16) -> Move {
        Move(raw)
    }
}

impl fmt::Display for Move {
    /// USI notation: `7g7f`, `2b8h+`, `P*5e`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_null() {
            return f.write_str("none");
        }
        if self.is_drop() {
            write!(f, "{}*{}", self.dropped().sfen_char(), self.to())
        } else {
            write!(f, "{}{}", self.from(), self.to())?;
            if self.is_promotion() {
                f.write_str("+")?;
            }
            Ok(())
        }
    }
}

impl fmt::Debug for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)?;
        if self.chooses_far_home() {
            f.write_str("(far home)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn square_usi_round_trip() {
        for sq in Square::all() {
            assert_eq!(Square::from_usi(&sq.to_string()), Some(sq));
        }
        assert_eq!(Square::from_usi("7g"), Some(Square::new(6, 6)));
        assert_eq!(Square::from_usi("0a"), None);
        assert_eq!(Square::from_usi("1j"), None);
    }

    #[test]
    fn move_packing() {
        let m = Move::normal(Square::new(1, 1), Square::new(7, 7), true);
        assert_eq!(m.to_string(), "2b8h+");
        assert!(!m.is_drop());
        let d = Move::drop(PieceType::Pawn, Square::new(4, 4));
        assert_eq!(d.to_string(), "P*5e");
        assert!(d.is_drop());
        assert_eq!(d.dropped(), PieceType::Pawn);
        let r = Move::drop(PieceType::Rook, Square::new(8, 8));
        assert_eq!(r.dropped(), PieceType::Rook);
    }

    #[test]
    fn promotion_table() {
        for pt in PieceType::ALL {
            if pt.can_promote() {
                assert_eq!(pt.promoted().unpromoted(), pt);
                assert!(pt.promoted().is_promoted());
            }
        }
        assert_eq!(PieceType::Bishop.promoted(), PieceType::Horse);
        assert_eq!(PieceType::Rook.promoted(), PieceType::Dragon);
    }
}
