//! 81-square bitboards in one `u128` (bit `i` = square index `i`, file-major).

use super::types::Square;
use std::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign, BitXor, BitXorAssign, Not};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Bitboard(pub u128);

/// Each square's bit, for setting and clearing at run time: a load where a 128-bit shift by
/// a variable count is a branch or a few conditional moves (`do_move`, `undo_move`).
static SQUARE_BITS: [u128; 81] = {
    let mut bits = [0; 81];
    let mut i = 0;
    while i < 81 {
        bits[i] = 1 << i;
        i += 1;
    }
    bits
};

impl Bitboard {
    pub const EMPTY: Bitboard = Bitboard(0);
    pub const ALL: Bitboard = Bitboard((1u128 << 81) - 1);

    #[inline]
    pub const fn from_square(sq: Square) -> Bitboard {
        Bitboard(1u128 << sq.index())
    }

    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    #[inline]
    pub const fn is_nonempty(self) -> bool {
        self.0 != 0
    }

    #[inline]
    pub fn has(self, sq: Square) -> bool {
        self.0 & SQUARE_BITS[sq.index()] != 0
    }

    #[inline]
    pub fn set(&mut self, sq: Square) {
        self.0 |= SQUARE_BITS[sq.index()];
    }

    #[inline]
    pub fn clear(&mut self, sq: Square) {
        self.0 &= !SQUARE_BITS[sq.index()];
    }

    #[inline]
    pub fn toggle(&mut self, sq: Square) {
        self.0 ^= SQUARE_BITS[sq.index()];
    }

    #[inline]
    pub const fn count(self) -> u32 {
        self.0.count_ones()
    }

    /// More than one square set.
    #[inline]
    pub const fn has_many(self) -> bool {
        self.0 & self.0.wrapping_sub(1) != 0
    }

    /// The lowest square; the board must not be empty.
    #[inline]
    pub fn lsb(self) -> Square {
        debug_assert!(self.is_nonempty());
        Square::from_index(self.0.trailing_zeros() as u8)
    }

    /// Removes and returns the lowest square.
    #[inline]
    pub fn pop(&mut self) -> Option<Square> {
        pop_lowest(&mut self.0)
    }

    /// The single square if exactly one is set.
    #[inline]
    pub fn single(self) -> Option<Square> {
        (self.0 != 0 && !self.has_many()).then(|| self.lsb())
    }

    /// Squares one rank towards rank "a" (Black's forward step). Bits of rank "a" would wrap
    /// into the previous file, so callers must pass boards without rank "a".
    #[inline]
    pub const fn shift_up(self) -> Bitboard {
        Bitboard(self.0 >> 1)
    }

    /// Squares one rank towards rank "i" (White's forward step); see [`shift_up`](Self::shift_up).
    #[inline]
    pub const fn shift_down(self) -> Bitboard {
        Bitboard((self.0 << 1) & Bitboard::ALL.0)
    }

    /// Iterates squares from low to high.
    #[inline]
    pub fn iter(self) -> BitboardIter {
        BitboardIter {
            low: self.0 as u64,
            high: (self.0 >> 64) as u64,
        }
    }
}

/// The squares of a board, low to high, one 64-bit half after the other: a 128-bit count of
/// trailing zeros and clear of the lowest bit each took twice the instructions (movegen's
/// loops over a board were 6% of 森茂 1965's instructions at two threads, under cachegrind).
pub struct BitboardIter {
    low: u64,
    high: u64,
}

#[inline]
fn pop_lowest(bits: &mut u128) -> Option<Square> {
    if *bits == 0 {
        None
    } else {
        let sq = Square::from_index(bits.trailing_zeros() as u8);
        *bits &= *bits - 1;
        Some(sq)
    }
}

impl Iterator for BitboardIter {
    type Item = Square;
    #[inline]
    fn next(&mut self) -> Option<Square> {
        if self.low != 0 {
            let sq = Square::from_index(self.low.trailing_zeros() as u8);
            self.low &= self.low - 1;
            Some(sq)
        } else if self.high != 0 {
            let sq = Square::from_index(64 + self.high.trailing_zeros() as u8);
            self.high &= self.high - 1;
            Some(sq)
        } else {
            None
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.low.count_ones() + self.high.count_ones()) as usize;
        (n, Some(n))
    }
}

impl IntoIterator for Bitboard {
    type Item = Square;
    type IntoIter = BitboardIter;
    #[inline]
    fn into_iter(self) -> BitboardIter {
        self.iter()
    }
}

macro_rules! bit_ops {
    ($tr:ident, $f:ident, $tra:ident, $fa:ident, $op:tt) => {
        impl $tr for Bitboard {
            type Output = Bitboard;
            #[inline]
            fn $f(self, rhs: Bitboard) -> Bitboard {
                Bitboard(self.0 $op rhs.0)
            }
        }
        impl $tra for Bitboard {
            #[inline]
            fn $fa(&mut self, rhs: Bitboard) {
                self.0 = self.0 $op rhs.0;
            }
        }
    };
}

bit_ops!(BitAnd, bitand, BitAndAssign, bitand_assign, &);
bit_ops!(BitOr, bitor, BitOrAssign, bitor_assign, |);
bit_ops!(BitXor, bitxor, BitXorAssign, bitxor_assign, ^);

impl Not for Bitboard {
    type Output = Bitboard;
    #[inline]
    fn not(self) -> Bitboard {
        Bitboard(!self.0 & Bitboard::ALL.0)
    }
}

impl std::fmt::Debug for Bitboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f)?;
        for rank in 0..9 {
            for file in (0..9).rev() {
                let c = if self.has(Square::new(file, rank)) {
                    'X'
                } else {
                    '.'
                };
                write!(f, "{c}")?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_and_counts() {
        let mut b = Bitboard::EMPTY;
        b.set(Square::new(0, 0));
        b.set(Square::new(8, 8));
        b.set(Square::new(4, 4));
        assert_eq!(b.count(), 3);
        assert!(b.has_many());
        let v: Vec<_> = b.iter().collect();
        assert_eq!(
            v,
            vec![Square::new(0, 0), Square::new(4, 4), Square::new(8, 8)]
        );
        assert_eq!((!Bitboard::EMPTY).count(), 81);
        assert_eq!(
            Bitboard::from_square(Square::new(3, 3)).single(),
            Some(Square::new(3, 3))
        );
    }

    /// The two halves' iteration gives every square of a board once, low to high, across the
    /// boundary at square 64 too, and says beforehand how many.
    #[test]
    fn iteration_meets_every_square_in_order() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut boards = vec![0u128, 1, 1 << 63, 1 << 64, 3 << 63, Bitboard::ALL.0];
        for _ in 0..500 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let y = x.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15;
            boards.push(
                (u128::from(x) | u128::from(y) << 64)
                    & Bitboard::ALL.0
                    & u128::from(x).rotate_left(x as u32 % 128),
            );
            boards.push((u128::from(x) | u128::from(y) << 64) & Bitboard::ALL.0);
        }
        for bits in boards {
            let expected: Vec<usize> = (0..81).filter(|&i| bits >> i & 1 == 1).collect();
            let iter = Bitboard(bits).iter();
            assert_eq!(iter.size_hint(), (expected.len(), Some(expected.len())));
            let met: Vec<usize> = iter.map(Square::index).collect();
            assert_eq!(met, expected, "{bits:#x}");
        }
    }
}
