//! Zobrist keys, 128 bits wide and generated at compile time.
//!
//! Every contribution is *added* (wrapping), never xored, so that board pieces, hand counts and
//! the side to move combine in any order: a hand of `n` pieces of one kind contributes
//! `n * key`, and a capture or drop costs one addition or subtraction.

use super::types::{Color, Piece, PieceType, Square};

const fn splitmix(state: u64) -> (u64, u64) {
    let s = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (s, z ^ (z >> 31))
}

struct Keys {
    board: [[u128; 81]; 32],
    hand: [[u128; 8]; 2],
    side: u128,
}

const fn make_keys() -> Keys {
    let mut state = 0x6b79_6f7a_756d_6521u64; // "kyozume!"
    let mut keys = Keys {
        board: [[0; 81]; 32],
        hand: [[0; 8]; 2],
        side: 0,
    };
    let mut p = 0;
    while p < 32 {
        let mut sq = 0;
        while sq < 81 {
            let (s1, lo) = splitmix(state);
            let (s2, hi) = splitmix(s1);
            state = s2;
            keys.board[p][sq] = (hi as u128) << 64 | lo as u128;
            sq += 1;
        }
        p += 1;
    }
    let mut c = 0;
    while c < 2 {
        let mut k = 0;
        while k < 8 {
            let (s1, lo) = splitmix(state);
            let (s2, hi) = splitmix(s1);
            state = s2;
            keys.hand[c][k] = (hi as u128) << 64 | lo as u128;
            k += 1;
        }
        c += 1;
    }
    let (s1, lo) = splitmix(state);
    let (_, hi) = splitmix(s1);
    keys.side = (hi as u128) << 64 | lo as u128;
    keys
}

static KEYS: Keys = make_keys();

#[inline]
pub fn piece_key(piece: Piece, sq: Square) -> u128 {
    KEYS.board[piece.index()][sq.index()]
}

/// Key of one piece of `kind` in `color`'s hand.
#[inline]
pub fn hand_key(color: Color, kind: PieceType) -> u128 {
    KEYS.hand[color.index()][kind.index()]
}

/// Added when White is to move.
#[inline]
pub fn side_key() -> u128 {
    KEYS.side
}
