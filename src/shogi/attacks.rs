//! Attack tables, computed at compile time, and sliding attacks.
//!
//! Sliding pieces use one ray per direction: for a ray running towards higher square indices the
//! nearest blocker is the lowest set bit of `ray & occupied`, for one running towards lower indices
//! the highest; both are a handful of `u128` operations and need no large tables.

use super::bitboard::Bitboard;
use super::conditions::PieceMoves;
use super::types::{Color, PieceType, Square};

const fn on_board(f: i32, r: i32) -> bool {
    f >= 0 && f < 9 && r >= 0 && r < 9
}

/// Step offsets `(file, rank)` from Black's point of view (rank -1 is forward).
const PAWN_STEPS: &[(i32, i32)] = &[(0, -1)];
const KNIGHT_STEPS: &[(i32, i32)] = &[(-1, -2), (1, -2)];
const SILVER_STEPS: &[(i32, i32)] = &[(-1, -1), (0, -1), (1, -1), (-1, 1), (1, 1)];
const GOLD_STEPS: &[(i32, i32)] = &[(-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (0, 1)];
const KING_STEPS: &[(i32, i32)] = &[
    (-1, -1),
    (0, -1),
    (1, -1),
    (-1, 0),
    (1, 0),
    (-1, 1),
    (0, 1),
    (1, 1),
];

const fn step_table(steps: &[(i32, i32)], color: Color) -> [u128; 81] {
    let mut table = [0u128; 81];
    let mut sq = 0;
    while sq < 81 {
        let f = (sq / 9) as i32;
        let r = (sq % 9) as i32;
        let mut i = 0;
        while i < steps.len() {
            let df = steps[i].0;
            let dr = match color {
                Color::Black => steps[i].1,
                Color::White => -steps[i].1,
            };
            if on_board(f + df, r + dr) {
                table[sq] |= 1u128 << ((f + df) * 9 + r + dr);
            }
            i += 1;
        }
        sq += 1;
    }
    table
}

const fn colored_steps(steps: &[(i32, i32)]) -> [[u128; 81]; 2] {
    [
        step_table(steps, Color::Black),
        step_table(steps, Color::White),
    ]
}

static PAWN: [[u128; 81]; 2] = colored_steps(PAWN_STEPS);
static KNIGHT: [[u128; 81]; 2] = colored_steps(KNIGHT_STEPS);
static SILVER: [[u128; 81]; 2] = colored_steps(SILVER_STEPS);
static GOLD: [[u128; 81]; 2] = colored_steps(GOLD_STEPS);
static KING: [u128; 81] = step_table(KING_STEPS, Color::Black);

/// `CHECK_FROM[color][i][king]` for the step kinds pawn, knight, silver and gold (`i` = 0..4):
/// the squares from which such a piece of `color` might check a king on `king` in one move,
/// promoted or not. An over-approximation (it ignores whether the move may promote), so that
/// generating checks can skip the many pieces far from the king without looking at them.
const fn check_from_table() -> [[[u128; 81]; 4]; 2] {
    let kinds = [PAWN_STEPS, KNIGHT_STEPS, SILVER_STEPS, GOLD_STEPS];
    let colors = [Color::Black, Color::White];
    let mut t = [[[0u128; 81]; 4]; 2];
    let mut c = 0;
    while c < 2 {
        let gold_from_king = step_table(GOLD_STEPS, colors[1 - c]);
        let mut i = 0;
        while i < 4 {
            let reach = step_table(kinds[i], colors[c]);
            // Seen from the king, the squares a piece of `color` checks it from are the
            // squares the same kind of the other colour reaches.
            let from_king = step_table(kinds[i], colors[1 - c]);
            let mut king = 0;
            while king < 81 {
                // Pawn, knight and silver may promote to a gold-mover on arrival.
                let targets = from_king[king] | gold_from_king[king];
                let mut from = 0;
                while from < 81 {
                    if reach[from] & targets != 0 {
                        t[c][i][king] |= 1u128 << from;
                    }
                    from += 1;
                }
                king += 1;
            }
            i += 1;
        }
        c += 1;
    }
    t
}

static CHECK_FROM: [[[u128; 81]; 4]; 2] = check_from_table();

/// Squares from which a step piece of either colour may attack a square next to `king`: up to
/// two files and three ranks away (a knight two ranks beyond a neighbour).
const fn near_step_sources_table() -> [u128; 81] {
    let mut t = [0u128; 81];
    let mut king: usize = 0;
    while king < 81 {
        let mut sq: usize = 0;
        while sq < 81 {
            let files_apart = (sq / 9).abs_diff(king / 9);
            let ranks_apart = (sq % 9).abs_diff(king % 9);
            if files_apart <= 2 && ranks_apart <= 3 {
                t[king] |= 1u128 << sq;
            }
            sq += 1;
        }
        king += 1;
    }
    t
}

static NEAR_STEP_SOURCES: [u128; 81] = near_step_sources_table();

/// Squares from which a step piece may attack a square next to `king`.
#[inline]
pub fn step_sources_near(king: Square) -> Bitboard {
    Bitboard(NEAR_STEP_SOURCES[king.index()])
}

/// Squares from which a `kind` piece (a pawn, knight, silver or gold-mover) of `color` might
/// give a direct check to a king on `king` in one move; every square for other kinds.
#[inline]
pub fn check_candidates(color: Color, kind: PieceType, king: Square) -> Bitboard {
    let i = match kind {
        PieceType::Pawn => 0,
        PieceType::Knight => 1,
        PieceType::Silver => 2,
        PieceType::Gold
        | PieceType::ProPawn
        | PieceType::ProLance
        | PieceType::ProKnight
        | PieceType::ProSilver => 3,
        _ => return Bitboard::ALL,
    };
    Bitboard(CHECK_FROM[color.index()][i][king.index()])
}

/// Ray directions `(file, rank)`. The first four run towards lower square indices.
const DIRS: [(i32, i32); 8] = [
    (0, -1),  // towards rank a: index -1
    (-1, 0),  // towards file 1: index -9
    (-1, -1), // index -10
    (-1, 1),  // index -8
    (0, 1),   // index +1
    (1, 0),   // index +9
    (1, 1),   // index +10
    (1, -1),  // index +8
];
const UP: usize = 0;
const RIGHT: usize = 1;
const UP_RIGHT: usize = 2;
const DOWN_RIGHT: usize = 3;
const DOWN: usize = 4;
const LEFT: usize = 5;
const DOWN_LEFT: usize = 6;
const UP_LEFT: usize = 7;

const fn ray_table() -> [[u128; 81]; 8] {
    let mut t = [[0u128; 81]; 8];
    let mut d = 0;
    while d < 8 {
        let mut sq = 0;
        while sq < 81 {
            let mut f = (sq / 9) as i32 + DIRS[d].0;
            let mut r = (sq % 9) as i32 + DIRS[d].1;
            while on_board(f, r) {
                t[d][sq] |= 1u128 << (f * 9 + r);
                f += DIRS[d].0;
                r += DIRS[d].1;
            }
            sq += 1;
        }
        d += 1;
    }
    t
}

static RAYS: [[u128; 81]; 8] = ray_table();

/// The four rays of each direction group together: [orthogonal, diagonal][square]. A pseudo
/// attack is asked before most slider look-ups (`is_attacked`, pins), one load instead of four.
static PSEUDO: [[u128; 81]; 2] = {
    let mut table = [[0u128; 81]; 2];
    let mut s = 0;
    while s < 81 {
        table[0][s] = RAYS[UP][s] | RAYS[RIGHT][s] | RAYS[DOWN][s] | RAYS[LEFT][s];
        table[1][s] =
            RAYS[UP_RIGHT][s] | RAYS[DOWN_RIGHT][s] | RAYS[DOWN_LEFT][s] | RAYS[UP_LEFT][s];
        s += 1;
    }
    table
};

const fn between_table() -> [[u128; 81]; 81] {
    let mut t = [[0u128; 81]; 81];
    let mut a = 0;
    while a < 81 {
        let mut d = 0;
        while d < 8 {
            let mut f = (a / 9) as i32 + DIRS[d].0;
            let mut r = (a % 9) as i32 + DIRS[d].1;
            let mut acc = 0u128;
            while on_board(f, r) {
                let b = (f * 9 + r) as usize;
                t[a][b] = acc;
                acc |= 1u128 << b;
                f += DIRS[d].0;
                r += DIRS[d].1;
            }
            d += 1;
        }
        a += 1;
    }
    t
}

const fn line_table() -> [[u128; 81]; 81] {
    let rays = ray_table();
    let mut t = [[0u128; 81]; 81];
    let mut a = 0;
    while a < 81 {
        let mut d = 0;
        while d < 4 {
            // Direction d and its opposite d + 4 form one full line through a.
            let line = rays[d][a] | rays[d + 4][a] | 1u128 << a;
            let mut b = 0;
            while b < 81 {
                if line >> b & 1 != 0 && b != a {
                    t[a][b] = line;
                }
                b += 1;
            }
            d += 1;
        }
        a += 1;
    }
    t
}

static BETWEEN: [[u128; 81]; 81] = between_table();

/// `DIRECTION[a][b]`: index into `DIRS` of the ray from `a` that passes through `b`, or 8.
const fn direction_table() -> [[u8; 81]; 81] {
    let rays = ray_table();
    let mut t = [[8u8; 81]; 81];
    let mut a = 0;
    while a < 81 {
        let mut d = 0;
        while d < 8 {
            let mut b = 0;
            while b < 81 {
                if rays[d][a] >> b & 1 != 0 {
                    t[a][b] = d as u8;
                }
                b += 1;
            }
            d += 1;
        }
        a += 1;
    }
    t
}

static DIRECTION: [[u8; 81]; 81] = direction_table();
static LINE: [[u128; 81]; 81] = line_table();

#[inline]
fn ray_towards_high(dir: usize, sq: Square, occ: Bitboard) -> u128 {
    let ray = RAYS[dir][sq.index()];
    let blockers = ray & occ.0;
    // Bits up to and including the lowest blocker; all bits when there is none.
    ray & (blockers ^ blockers.wrapping_sub(1))
}

#[inline]
fn ray_towards_low(dir: usize, sq: Square, occ: Bitboard) -> u128 {
    let ray = RAYS[dir][sq.index()];
    // Bit 0 stands in for "no blocker": it keeps the whole ray, as square 0 is its far end.
    let blockers = ray & occ.0 | 1;
    ray & AT_OR_ABOVE[127 - blockers.leading_zeros() as usize]
}

/// `u128::MAX << i`: one load where the variable 128-bit shift took a handful of instructions
/// and branches (slider attacks run on every check and evasion generated).
static AT_OR_ABOVE: [u128; 128] = {
    let mut table = [0u128; 128];
    let mut i = 0;
    while i < 128 {
        table[i] = u128::MAX << i;
        i += 1;
    }
    table
};

/// The squares a slider on `from` reaches along the ray through `through` (up to and including
/// the first occupied square); empty when the two squares are not aligned.
#[inline]
pub fn ray_through(from: Square, through: Square, occ: Bitboard) -> Bitboard {
    match DIRECTION[from.index()][through.index()] as usize {
        d @ 0..=3 => Bitboard(ray_towards_low(d, from, occ)),
        d @ 4..=7 => Bitboard(ray_towards_high(d, from, occ)),
        _ => Bitboard::EMPTY,
    }
}

/// True when a `kind` piece of `color` on `from` attacks `target` given occupancy `occ`.
#[inline]
pub fn attacks_square(
    color: Color,
    kind: PieceType,
    from: Square,
    target: Square,
    occ: Bitboard,
) -> bool {
    let clear = || (between(from, target) & occ).is_empty();
    match kind {
        PieceType::Pawn => pawn_attacks(color, from).has(target),
        PieceType::Knight => knight_attacks(color, from).has(target),
        PieceType::Silver => silver_attacks(color, from).has(target),
        PieceType::Gold
        | PieceType::ProPawn
        | PieceType::ProLance
        | PieceType::ProKnight
        | PieceType::ProSilver => gold_attacks(color, from).has(target),
        PieceType::King => king_attacks(from).has(target),
        PieceType::Lance => lance_pseudo_attacks(color, from).has(target) && clear(),
        PieceType::Bishop => bishop_pseudo_attacks(from).has(target) && clear(),
        PieceType::Rook => rook_pseudo_attacks(from).has(target) && clear(),
        PieceType::Horse => {
            king_attacks(from).has(target) || (bishop_pseudo_attacks(from).has(target) && clear())
        }
        PieceType::Dragon => {
            king_attacks(from).has(target) || (rook_pseudo_attacks(from).has(target) && clear())
        }
    }
}

#[inline]
pub fn pawn_attacks(color: Color, sq: Square) -> Bitboard {
    Bitboard(PAWN[color.index()][sq.index()])
}

#[inline]
pub fn knight_attacks(color: Color, sq: Square) -> Bitboard {
    Bitboard(KNIGHT[color.index()][sq.index()])
}

#[inline]
pub fn silver_attacks(color: Color, sq: Square) -> Bitboard {
    Bitboard(SILVER[color.index()][sq.index()])
}

#[inline]
pub fn gold_attacks(color: Color, sq: Square) -> Bitboard {
    Bitboard(GOLD[color.index()][sq.index()])
}

#[inline]
pub fn king_attacks(sq: Square) -> Bitboard {
    Bitboard(KING[sq.index()])
}

#[inline]
pub fn lance_attacks(color: Color, sq: Square, occ: Bitboard) -> Bitboard {
    Bitboard(match color {
        Color::Black => ray_towards_low(UP, sq, occ),
        Color::White => ray_towards_high(DOWN, sq, occ),
    })
}

/// Lance moves on an empty board.
#[inline]
pub fn lance_pseudo_attacks(color: Color, sq: Square) -> Bitboard {
    Bitboard(match color {
        Color::Black => RAYS[UP][sq.index()],
        Color::White => RAYS[DOWN][sq.index()],
    })
}

#[inline]
pub fn rook_attacks(sq: Square, occ: Bitboard) -> Bitboard {
    Bitboard(
        ray_towards_low(UP, sq, occ)
            | ray_towards_low(RIGHT, sq, occ)
            | ray_towards_high(DOWN, sq, occ)
            | ray_towards_high(LEFT, sq, occ),
    )
}

#[inline]
pub fn bishop_attacks(sq: Square, occ: Bitboard) -> Bitboard {
    Bitboard(
        ray_towards_low(UP_RIGHT, sq, occ)
            | ray_towards_low(DOWN_RIGHT, sq, occ)
            | ray_towards_high(DOWN_LEFT, sq, occ)
            | ray_towards_high(UP_LEFT, sq, occ),
    )
}

#[inline]
pub fn rook_pseudo_attacks(sq: Square) -> Bitboard {
    Bitboard(PSEUDO[0][sq.index()])
}

#[inline]
pub fn bishop_pseudo_attacks(sq: Square) -> Bitboard {
    Bitboard(PSEUDO[1][sq.index()])
}

/// Squares strictly between `a` and `b` when they share a rank, file or diagonal.
#[inline]
pub fn between(a: Square, b: Square) -> Bitboard {
    Bitboard(BETWEEN[a.index()][b.index()])
}

/// The whole line through `a` and `b` (edge to edge) when aligned, else empty.
#[inline]
pub fn line(a: Square, b: Square) -> Bitboard {
    Bitboard(LINE[a.index()][b.index()])
}

/// True when the three squares lie on one line.
#[inline]
pub fn aligned(a: Square, b: Square, c: Square) -> bool {
    line(a, b).has(c)
}

/// Attacks of a piece of `color` and kind `kind` standing on `sq`.
#[inline]
pub fn attacks(color: Color, kind: PieceType, sq: Square, occ: Bitboard) -> Bitboard {
    match kind {
        PieceType::Pawn => pawn_attacks(color, sq),
        PieceType::Lance => lance_attacks(color, sq, occ),
        PieceType::Knight => knight_attacks(color, sq),
        PieceType::Silver => silver_attacks(color, sq),
        PieceType::Gold
        | PieceType::ProPawn
        | PieceType::ProLance
        | PieceType::ProKnight
        | PieceType::ProSilver => gold_attacks(color, sq),
        PieceType::Bishop => bishop_attacks(sq, occ),
        PieceType::Rook => rook_attacks(sq, occ),
        PieceType::King => king_attacks(sq),
        PieceType::Horse => bishop_attacks(sq, occ) | king_attacks(sq),
        PieceType::Dragon => rook_attacks(sq, occ) | king_attacks(sq),
    }
}

/// Attacks of a piece of `color` and kind `kind` on `sq` on an empty board (the squares it
/// could ever reach in one move from there), from tables.
#[inline]
pub fn pseudo_attacks(color: Color, kind: PieceType, sq: Square) -> Bitboard {
    match kind {
        PieceType::Lance => lance_pseudo_attacks(color, sq),
        PieceType::Bishop => bishop_pseudo_attacks(sq),
        PieceType::Rook => rook_pseudo_attacks(sq),
        PieceType::Horse => bishop_pseudo_attacks(sq) | king_attacks(sq),
        PieceType::Dragon => rook_pseudo_attacks(sq) | king_attacks(sq),
        step => attacks(color, step, sq, Bitboard::EMPTY),
    }
}

/// Ranks (from `color`'s side) where a piece of this kind may stand: pawns and lances never on
/// the far rank, knights never on the two far ranks.
#[inline]
pub fn legal_ranks(color: Color, kind: PieceType) -> Bitboard {
    let far = match kind {
        PieceType::Pawn | PieceType::Lance => 1,
        PieceType::Knight => 2,
        _ => 0,
    };
    Bitboard(RELATIVE_RANKS_FROM[color.index()][far])
}

/// Where an unpromoted piece of `kind` may stand under `moves` (rules.md §4): anywhere under
/// 安南 and 背面 (a lender behind can always come); under 安北 and 対面 not on the last rank for
/// pawns, lances and knights; under normal powers the usual ranks.
pub fn standing_ranks(moves: PieceMoves, color: Color, kind: PieceType) -> Bitboard {
    match moves {
        PieceMoves::Normal => legal_ranks(color, kind),
        PieceMoves::Annan | PieceMoves::Haimen => Bitboard::ALL,
        PieceMoves::Anhoku | PieceMoves::Taimen => match kind {
            PieceType::Pawn | PieceType::Lance | PieceType::Knight => {
                legal_ranks(color, PieceType::Pawn)
            }
            _ => Bitboard::ALL,
        },
    }
}

const fn rank_masks() -> [[u128; 3]; 2] {
    // [color][n]: squares whose rank, seen from color, is >= n.
    let mut t = [[0u128; 3]; 2];
    let mut sq = 0;
    while sq < 81 {
        let r = sq % 9;
        let mut n = 0;
        while n < 3 {
            if r >= n {
                t[0][n] |= 1u128 << sq;
            }
            if 8 - r >= n {
                t[1][n] |= 1u128 << sq;
            }
            n += 1;
        }
        sq += 1;
    }
    t
}

static RELATIVE_RANKS_FROM: [[u128; 3]; 2] = rank_masks();

const fn zone_masks() -> [u128; 2] {
    let mut t = [0u128; 2];
    let mut sq = 0;
    while sq < 81 {
        let r = sq % 9;
        if r < 3 {
            t[0] |= 1u128 << sq;
        }
        if r > 5 {
            t[1] |= 1u128 << sq;
        }
        sq += 1;
    }
    t
}

static ZONES: [u128; 2] = zone_masks();

/// The three ranks where `color`'s pieces may promote.
#[inline]
pub fn promotion_zone(color: Color) -> Bitboard {
    Bitboard(ZONES[color.index()])
}

const fn file_masks() -> [u128; 9] {
    let mut t = [0u128; 9];
    let mut f = 0;
    while f < 9 {
        t[f] = 0x1ffu128 << (f * 9);
        f += 1;
    }
    t
}

static FILES: [u128; 9] = file_masks();

#[inline]
pub fn file_mask(file: u8) -> Bitboard {
    Bitboard(FILES[file as usize])
}

/// Bit 0 of every file (squares 0, 9, ..., 72).
const FILE_BASES: u128 = {
    let mut b = 0u128;
    let mut f = 0;
    while f < 9 {
        b |= 1u128 << (f * 9);
        f += 1;
    }
    b
};

/// Files containing a set bit, spread over the whole file (for the two-pawn rule). Branch-free:
/// fold each file's nine bits onto its lowest, then multiply that bit out to the whole file
/// (no carries, the files do not overlap). It runs for every position whose side has a pawn in
/// hand.
#[inline]
pub fn fill_files(b: Bitboard) -> Bitboard {
    let x = b.0;
    let two = x | x >> 1;
    let four = two | two >> 2;
    let nine = four | four >> 4 | x >> 8;
    Bitboard((nine & FILE_BASES) * 0x1ff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slide_naive(sq: Square, occ: Bitboard, dirs: &[(i32, i32)]) -> Bitboard {
        let mut b = Bitboard::EMPTY;
        for &(df, dr) in dirs {
            let mut cur = sq;
            while let Some(n) = cur.offset(df, dr) {
                b.set(n);
                if occ.has(n) {
                    break;
                }
                cur = n;
            }
        }
        b
    }

    #[test]
    fn sliders_match_naive() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let occ = Bitboard(((next() as u128) << 64 | next() as u128) & Bitboard::ALL.0);
            let occ = Bitboard(occ.0 & ((next() as u128) << 64 | next() as u128));
            for sq in Square::all() {
                let rook = slide_naive(sq, occ, &[(0, 1), (0, -1), (1, 0), (-1, 0)]);
                let bishop = slide_naive(sq, occ, &[(1, 1), (1, -1), (-1, 1), (-1, -1)]);
                assert_eq!(rook_attacks(sq, occ), rook, "rook {sq:?}");
                assert_eq!(bishop_attacks(sq, occ), bishop, "bishop {sq:?}");
                assert_eq!(
                    lance_attacks(Color::Black, sq, occ),
                    slide_naive(sq, occ, &[(0, -1)])
                );
                assert_eq!(
                    lance_attacks(Color::White, sq, occ),
                    slide_naive(sq, occ, &[(0, 1)])
                );
            }
        }
    }

    #[test]
    fn fill_files_matches_file_by_file() {
        let mut seed = 0x0fed_cba9_8765_4321u64;
        for _ in 0..5000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Sparse boards: a few bits, as pawns are.
            let b =
                Bitboard(((seed as u128) << 64 | seed.rotate_left(17) as u128) & Bitboard::ALL.0);
            let b = Bitboard(b.0 & (b.0 >> 3) & (b.0 >> 7));
            let mut expected = Bitboard::EMPTY;
            for f in 0..9 {
                if (b & file_mask(f)).is_nonempty() {
                    expected |= file_mask(f);
                }
            }
            assert_eq!(fill_files(b), expected);
        }
    }

    #[test]
    fn between_and_line() {
        let a = Square::new(0, 0);
        let b = Square::new(4, 4);
        assert_eq!(between(a, b).count(), 3);
        assert!(line(a, b).has(Square::new(8, 8)));
        assert!(between(a, Square::new(1, 2)).is_empty());
        assert!(line(a, Square::new(1, 2)).is_empty());
        assert!(aligned(a, b, Square::new(2, 2)));
    }

    #[test]
    fn step_tables() {
        assert_eq!(knight_attacks(Color::Black, Square::new(4, 4)).count(), 2);
        assert_eq!(gold_attacks(Color::White, Square::new(4, 4)).count(), 6);
        assert!(pawn_attacks(Color::Black, Square::new(4, 4)).has(Square::new(4, 3)));
        assert!(pawn_attacks(Color::White, Square::new(4, 4)).has(Square::new(4, 5)));
        assert_eq!(king_attacks(Square::new(0, 0)).count(), 3);
    }
}
