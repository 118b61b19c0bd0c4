//! A second, deliberately simple move generator and solver for the fairy conditions, written
//! square by square from `../shared/fairy/rules.md` and sharing nothing with the engine but the
//! SFEN and USI texts: each piece's power is looked up from its neighbour (安南・安北・対面・背面),
//! every move is tried on a copy of the board and kept if the mover's king is then not attacked
//! (powers recomputed), a pawn drop is a mate if the opponent then has no move of its own, and
//! the solver counts every line of a given length with a memo of boards. Also the random
//! positions and problems the tests draw, and the engine's side of each comparison.

#![allow(dead_code)]

pub mod capture;

use kyozume::search::{Limits, Outcome, Solver, Strategy};
use kyozume::shogi::conditions::{Captures, Conditions, PawnDropMate, PieceMoves};
use kyozume::shogi::movegen::MoveList;
use kyozume::shogi::stipulation::verify_solution;
use kyozume::shogi::{Goal, Position, RuleSet, Stipulation};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::AtomicBool;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Powers {
    Normal,
    Annan,
    Anhoku,
    Taimen,
    Haimen,
}

/// Piece kinds in SFEN's letters; hands are indexed by the first seven.
pub const KINDS: [char; 8] = ['P', 'L', 'N', 'S', 'G', 'B', 'R', 'K'];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Man {
    pub black: bool,
    pub kind: char,
    pub promoted: bool,
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Board {
    /// `[rank][file - 1]`, rank 0 = `a`.
    pub squares: [[Option<Man>; 9]; 9],
    /// `[black, white][kind]` for P, L, N, S, G, B, R.
    pub hands: [[u8; 7]; 2],
    pub black_to_move: bool,
}

pub fn parse(sfen: &str) -> Board {
    let fields: Vec<&str> = sfen.split_whitespace().collect();
    let mut squares = [[None; 9]; 9];
    for (rank, row) in fields[0].split('/').enumerate() {
        let mut file = 9;
        let mut promoted = false;
        for c in row.chars() {
            if let Some(n) = c.to_digit(10) {
                file -= n as usize;
            } else if c == '+' {
                promoted = true;
            } else {
                squares[rank][file - 1] = Some(Man {
                    black: c.is_ascii_uppercase(),
                    kind: c.to_ascii_uppercase(),
                    promoted,
                });
                promoted = false;
                file -= 1;
            }
        }
    }
    let mut hands = [[0u8; 7]; 2];
    let mut count = 0u8;
    for c in fields[2].chars().filter(|&c| c != '-') {
        if let Some(n) = c.to_digit(10) {
            count = count * 10 + n as u8;
            continue;
        }
        let side = usize::from(c.is_ascii_lowercase());
        let kind = KINDS
            .iter()
            .position(|&k| k == c.to_ascii_uppercase())
            .unwrap();
        hands[side][kind] += count.max(1);
        count = 0;
    }
    Board {
        squares,
        hands,
        black_to_move: fields[1] == "b",
    }
}

pub fn square_name(file: usize, rank: usize) -> String {
    format!("{file}{}", (b'a' + rank as u8) as char)
}

/// The steps of a power, forward being +1 in `dy`: (dx, dy, slides).
pub fn steps(kind: char, promoted: bool) -> Vec<(i32, i32, bool)> {
    let gold = vec![
        (0, 1, false),
        (-1, 1, false),
        (1, 1, false),
        (-1, 0, false),
        (1, 0, false),
        (0, -1, false),
    ];
    let diagonal = [(1, 1), (1, -1), (-1, 1), (-1, -1)];
    let straight = [(0, 1), (0, -1), (1, 0), (-1, 0)];
    match (kind, promoted) {
        ('P', false) => vec![(0, 1, false)],
        ('L', false) => vec![(0, 1, true)],
        ('N', false) => vec![(-1, 2, false), (1, 2, false)],
        ('S', false) => vec![
            (0, 1, false),
            (-1, 1, false),
            (1, 1, false),
            (-1, -1, false),
            (1, -1, false),
        ],
        ('G', _) | ('P' | 'L' | 'N' | 'S', true) => gold,
        ('K', _) => diagonal
            .iter()
            .chain(&straight)
            .map(|&(x, y)| (x, y, false))
            .collect(),
        ('B', p) => {
            let mut v: Vec<_> = diagonal.iter().map(|&(x, y)| (x, y, true)).collect();
            if p {
                v.extend(straight.iter().map(|&(x, y)| (x, y, false)));
            }
            v
        }
        ('R', p) => {
            let mut v: Vec<_> = straight.iter().map(|&(x, y)| (x, y, true)).collect();
            if p {
                v.extend(diagonal.iter().map(|&(x, y)| (x, y, false)));
            }
            v
        }
        _ => unreachable!("{kind}"),
    }
}

impl Board {
    pub fn at(&self, file: i32, rank: i32) -> Option<Option<Man>> {
        ((1..=9).contains(&file) && (0..9).contains(&rank))
            .then(|| self.squares[rank as usize][file as usize - 1])
    }

    /// The power (kind, promoted) the piece on (file, rank) moves with.
    pub fn power(&self, powers: Powers, file: usize, rank: usize) -> (char, bool) {
        let man = self.squares[rank][file - 1].unwrap();
        let forward = if man.black { -1 } else { 1 };
        let (offset, friendly) = match powers {
            Powers::Normal => return (man.kind, man.promoted),
            Powers::Annan => (-forward, true),
            Powers::Anhoku => (forward, true),
            Powers::Taimen => (forward, false),
            Powers::Haimen => (-forward, false),
        };
        match self.at(file as i32, rank as i32 + offset) {
            Some(Some(n)) if (n.black == man.black) == friendly => (n.kind, n.promoted),
            _ => (man.kind, man.promoted),
        }
    }

    /// The squares the piece on (file, rank) reaches (any occupant).
    pub fn reach(&self, powers: Powers, file: usize, rank: usize) -> Vec<(usize, usize)> {
        let man = self.squares[rank][file - 1].unwrap();
        let (kind, promoted) = self.power(powers, file, rank);
        let forward = if man.black { -1 } else { 1 };
        let mut out = Vec::new();
        for (dx, dy, slides) in steps(kind, promoted) {
            let (mut f, mut r) = (file as i32, rank as i32);
            loop {
                f += dx;
                r += dy * forward;
                match self.at(f, r) {
                    None => break,
                    Some(occupant) => {
                        out.push((f as usize, r as usize));
                        if occupant.is_some() || !slides {
                            break;
                        }
                    }
                }
            }
        }
        out
    }

    pub fn king(&self, black: bool) -> Option<(usize, usize)> {
        (0..9)
            .flat_map(|r| (1..=9).map(move |f| (f, r)))
            .find(|&(f, r)| {
                self.squares[r][f - 1]
                    == Some(Man {
                        black,
                        kind: 'K',
                        promoted: false,
                    })
            })
    }

    pub fn attacked_by(&self, powers: Powers, black: bool, target: (usize, usize)) -> bool {
        (0..9).any(|r| {
            (1..=9).any(|f| {
                self.squares[r][f - 1].is_some_and(|m| m.black == black)
                    && self.reach(powers, f, r).contains(&target)
            })
        })
    }

    pub fn in_check(&self, powers: Powers, black: bool) -> bool {
        self.king(black)
            .is_some_and(|k| self.attacked_by(powers, !black, k))
    }

    /// Ranks (counted from the owner's far side, 0 = last) where an unpromoted piece of this
    /// kind may not stand.
    pub fn dead(powers: Powers, kind: char, ranks_from_far_side: usize) -> bool {
        match powers {
            Powers::Annan | Powers::Haimen => false,
            Powers::Anhoku | Powers::Taimen => {
                matches!(kind, 'P' | 'L' | 'N') && ranks_from_far_side == 0
            }
            Powers::Normal => match kind {
                'P' | 'L' => ranks_from_far_side == 0,
                'N' => ranks_from_far_side <= 1,
                _ => false,
            },
        }
    }

    pub fn far(black: bool, rank: usize) -> usize {
        if black {
            rank
        } else {
            8 - rank
        }
    }

    pub fn has_pawn_on_file(&self, black: bool, file: usize, except_rank: Option<usize>) -> bool {
        (0..9).any(|r| {
            Some(r) != except_rank
                && self.squares[r][file - 1]
                    == Some(Man {
                        black,
                        kind: 'P',
                        promoted: false,
                    })
        })
    }

    /// Every legal move of the side to move, with the board after it, as USI text.
    pub fn legal(&self, powers: Powers, drop_mate_ok: bool) -> Vec<(String, Board)> {
        let us = self.black_to_move;
        let mut out = Vec::new();
        let mut keep = |text: String, after: Board| {
            if !after.in_check(powers, us) {
                out.push((text, after));
            }
        };
        for rank in 0..9 {
            for file in 1..=9 {
                let Some(man) = self.squares[rank][file - 1] else {
                    continue;
                };
                if man.black != us {
                    continue;
                }
                for (tf, tr) in self.reach(powers, file, rank) {
                    if self.squares[tr][tf - 1].is_some_and(|m| m.black == us) {
                        continue;
                    }
                    let zone = |r: usize| Board::far(us, r) <= 2;
                    let can_promote = !man.promoted
                        && matches!(man.kind, 'P' | 'L' | 'N' | 'S' | 'B' | 'R')
                        && (zone(rank) || zone(tr));
                    for promote in [false, true] {
                        if promote && !can_promote {
                            continue;
                        }
                        if !promote
                            && !man.promoted
                            && Board::dead(powers, man.kind, Board::far(us, tr))
                        {
                            continue;
                        }
                        // 二歩 by a pawn's move (a borrowed power can change its file).
                        if !promote
                            && man.kind == 'P'
                            && !man.promoted
                            && tf != file
                            && self.has_pawn_on_file(us, tf, None)
                        {
                            continue;
                        }
                        let mut after = self.clone();
                        if let Some(taken) = after.squares[tr][tf - 1] {
                            let k = KINDS.iter().position(|&k| k == taken.kind).unwrap();
                            after.hands[usize::from(!us)][k] += 1;
                        }
                        after.squares[rank][file - 1] = None;
                        after.squares[tr][tf - 1] = Some(Man {
                            promoted: man.promoted || promote,
                            ..man
                        });
                        after.black_to_move = !us;
                        let text = format!(
                            "{}{}{}",
                            square_name(file, rank),
                            square_name(tf, tr),
                            if promote { "+" } else { "" }
                        );
                        keep(text, after);
                    }
                }
            }
        }
        for (k, &kind) in KINDS[..7].iter().enumerate() {
            if self.hands[usize::from(!us)][k] == 0 {
                continue;
            }
            for rank in 0..9 {
                for file in 1..=9 {
                    if self.squares[rank][file - 1].is_some()
                        || Board::dead(powers, kind, Board::far(us, rank))
                        || (kind == 'P' && self.has_pawn_on_file(us, file, None))
                    {
                        continue;
                    }
                    let mut after = self.clone();
                    after.hands[usize::from(!us)][k] -= 1;
                    after.squares[rank][file - 1] = Some(Man {
                        black: us,
                        kind,
                        promoted: false,
                    });
                    after.black_to_move = !us;
                    if kind == 'P'
                        && !drop_mate_ok
                        && !after.in_check(powers, us)
                        && after.in_check(powers, !us)
                        && after.legal(powers, drop_mate_ok).is_empty()
                    {
                        continue;
                    }
                    keep(format!("{kind}*{}", square_name(file, rank)), after);
                }
            }
        }
        out
    }
}

pub fn moves_of(board: &Board, powers: Powers) -> BTreeSet<String> {
    board
        .legal(powers, false)
        .into_iter()
        .map(|(m, _)| m)
        .collect()
}

/// The engine's legal moves in `sfen` under `powers` (and 打歩詰可 with `drop_mate_ok`).
pub fn engine_moves(sfen: &str, powers: Powers, drop_mate_ok: bool) -> BTreeSet<String> {
    let rules = RuleSet::new(
        Fairy {
            powers,
            drop_mate_ok,
            greedy: None,
        }
        .conditions(),
    );
    let pos = Position::from_sfen_under(sfen, rules).unwrap();
    let mut list = MoveList::new();
    rules.legal(&pos, &mut list);
    list.iter().map(|m| m.to_string()).collect()
}

/// A sparse random position around the defender's king, pawns in the mover's hand; None if the
/// engine does not take it.
pub fn random_sparse(rng: &mut ChaCha8Rng) -> Option<Position> {
    random_sparse_under(rng, RuleSet::PLAIN)
}

/// [`random_sparse`], the position taken if valid under `rules`.
pub fn random_sparse_under(rng: &mut ChaCha8Rng, rules: RuleSet) -> Option<Position> {
    let mut squares = [['.'; 9]; 9];
    let waiting = rng.random_bool(0.7);
    let rank = if waiting { 0 } else { rng.random_range(0..4) };
    let king = (rank, rng.random_range(0..9));
    squares[king.0][king.1] = 'k';
    if waiting {
        // A pawn-drop mate in waiting: a gold two squares in front of the king guards the
        // square between, and the king's side squares are often its own lance or knight.
        squares[king.0 + 2][king.1] = 'G';
        for f in [king.1.wrapping_sub(1), king.1 + 1] {
            if f < 9 && rng.random_bool(0.7) {
                squares[king.0][f] = ['l', 'n'][rng.random_range(0..2)];
            }
        }
    }
    let own_king = (rng.random_range(5..9), rng.random_range(0..9));
    squares[own_king.0][own_king.1] = 'K';
    for _ in 0..rng.random_range(1..7) {
        let r = king.0 as i32 + rng.random_range(-2..=3);
        let f = king.1 as i32 + rng.random_range(-2..=2);
        if !(0..9).contains(&r) || !(0..9).contains(&f) || squares[r as usize][f as usize] != '.' {
            continue;
        }
        let kind = ['P', 'L', 'N', 'S', 'G', 'B', 'R'][rng.random_range(0..7)];
        squares[r as usize][f as usize] = if rng.random_bool(0.6) {
            kind
        } else {
            kind.to_ascii_lowercase()
        };
    }
    let tokens: Vec<Vec<String>> = squares
        .iter()
        .map(|row| {
            row.iter()
                .map(|&c| {
                    if c == '.' {
                        String::new()
                    } else {
                        c.to_string()
                    }
                })
                .collect()
        })
        .collect();
    let board = sfen_board(&tokens);
    let hand = ["P", "PG", "2P", "PS", "Pp"][rng.random_range(0..5)];
    Position::from_sfen_under(&format!("{board} b {hand} 1"), rules).ok()
}

/// The reference's leaf count, with 強欲 (`Some(true)`) or 禁欲 (`Some(false)`) narrowing each
/// side's moves to its captures or to its other moves when it has any.
pub fn reference_perft(board: &Board, depth: u32, drop_mate_ok: bool, greedy: Option<bool>) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut moves = board.legal(Powers::Normal, drop_mate_ok);
    if let Some(greedy) = greedy {
        let is_capture = |(m, _): &(String, Board)| {
            !m.contains('*') && {
                let b = m.as_bytes();
                let file = (b[2] - b'0') as usize;
                let rank = (b[3] - b'a') as usize;
                board.squares[rank][file - 1].is_some()
            }
        };
        if moves.iter().any(|m| is_capture(m) == greedy) {
            moves.retain(|m| is_capture(m) == greedy);
        }
    }
    moves
        .iter()
        .map(|(_, after)| reference_perft(after, depth - 1, drop_mate_ok, greedy))
        .sum()
}

/// The rules a reference solve follows.
#[derive(Clone, Copy)]
pub struct Fairy {
    pub powers: Powers,
    pub drop_mate_ok: bool,
    /// 強欲 `Some(true)`, 禁欲 `Some(false)`.
    pub greedy: Option<bool>,
}

impl Fairy {
    /// The moves the side to move may play (the attacker's checks only), after the captures
    /// rule, each with the board after it.
    pub fn moves(self, board: &Board, attacker: bool) -> Vec<(String, Board)> {
        let mut moves = board.legal(self.powers, self.drop_mate_ok);
        if attacker {
            moves.retain(|(_, after)| after.in_check(self.powers, after.black_to_move));
        }
        if let Some(greedy) = self.greedy {
            let is_capture = |(m, _): &(String, Board)| {
                let b = m.as_bytes();
                !m.contains('*')
                    && board.squares[(b[3] - b'a') as usize][(b[2] - b'0') as usize - 1].is_some()
            };
            if moves.iter().any(|m| is_capture(m) == greedy) {
                moves.retain(|m| is_capture(m) == greedy);
            }
        }
        moves
    }

    /// Every H# line of exactly `plies` plies from `board` (the side to move attacking).
    pub fn helpmates(self, board: &Board, plies: u32, attacker: bool) -> Vec<Vec<String>> {
        let mut lines = Vec::new();
        for (m, after) in self.moves(board, attacker) {
            if plies == 1 {
                let mated = after.in_check(self.powers, after.black_to_move)
                    && after.legal(self.powers, self.drop_mate_ok).is_empty();
                if attacker && mated {
                    lines.push(vec![m]);
                }
            } else {
                for mut rest in self.helpmates(&after, plies - 1, !attacker) {
                    rest.insert(0, m.clone());
                    lines.push(rest);
                }
            }
        }
        lines
    }
}

impl Powers {
    pub fn engine(self) -> PieceMoves {
        match self {
            Powers::Normal => PieceMoves::Normal,
            Powers::Annan => PieceMoves::Annan,
            Powers::Anhoku => PieceMoves::Anhoku,
            Powers::Taimen => PieceMoves::Taimen,
            Powers::Haimen => PieceMoves::Haimen,
        }
    }
}

/// The engine's legal moves, checks, check and mate against the reference's in `pos`.
/// Returns (in check, mated).
pub fn compare_generators(pos: &Position, powers: Powers, drop_mate_ok: bool) -> (bool, bool) {
    let rules = RuleSet::new(Conditions {
        piece_moves: powers.engine(),
        pawn_drop_mate: if drop_mate_ok {
            PawnDropMate::Allowed
        } else {
            PawnDropMate::Illegal
        },
        ..Conditions::NONE
    });
    let sfen = pos.to_sfen();
    let board = parse(&sfen);
    assert!(
        !board.in_check(powers, !board.black_to_move),
        "{powers:?}: the side not to move is in check {sfen}"
    );
    let reference = board.legal(powers, drop_mate_ok);
    let as_set =
        |list: &MoveList| -> BTreeSet<String> { list.iter().map(|m| m.to_string()).collect() };
    let mut list = MoveList::new();
    rules.legal(pos, &mut list);
    let engine = as_set(&list);
    let want: BTreeSet<String> = reference.iter().map(|(m, _)| m.clone()).collect();
    assert_eq!(engine, want, "{powers:?} legal {sfen}");
    assert_eq!(list.len(), engine.len(), "{powers:?} a move twice {sfen}");
    let mut list = MoveList::new();
    rules.checks(pos, &mut list);
    let want_checks: BTreeSet<String> = reference
        .iter()
        .filter(|(_, after)| after.in_check(powers, after.black_to_move))
        .map(|(m, _)| m.clone())
        .collect();
    assert_eq!(as_set(&list), want_checks, "{powers:?} checks {sfen}");
    for &m in list.iter() {
        assert!(rules.gives_check(pos, m), "{powers:?} {m} {sfen}");
    }
    let in_check = board.in_check(powers, board.black_to_move);
    assert_eq!(rules.in_check(pos), in_check, "{powers:?} in check {sfen}");
    let mated = in_check && reference.is_empty();
    assert_eq!(rules.is_checkmate(pos), mated, "{powers:?} mate {sfen}");
    if in_check {
        assert_eq!(rules.has_evasion(pos), !mated, "{powers:?} {sfen}");
    }
    (in_check, mated)
}

/// Does some piece of the side to move move with a power not its own?
pub fn lends_a_power(board: &Board, powers: Powers) -> bool {
    (0..9).any(|rank| {
        (1..=9).any(|file| {
            board.squares[rank][file - 1].is_some_and(|man| {
                man.black == board.black_to_move
                    && board.power(powers, file, rank) != (man.kind, man.promoted)
            })
        })
    })
}

impl Fairy {
    /// Lines of exactly `r` plies from `board` that end in the goal (H#: the attacker, Black
    /// or White as `attacker_black` says, mates; HS#, `selfmate`: the defender mates), capped.
    /// A walk that repeats a position is counted too, which changes nothing at the shortest
    /// length: cutting the cycle out would give a shorter line.
    pub fn lines(
        self,
        memo: &mut HashMap<(Board, u32), u64>,
        board: &Board,
        r: u32,
        (attacker_black, selfmate): (bool, bool),
    ) -> u64 {
        if r == 0 {
            return 0;
        }
        if let Some(&n) = memo.get(&(board.clone(), r)) {
            return n;
        }
        let attacker = board.black_to_move == attacker_black;
        let mated_side = attacker_black == selfmate;
        let mut n = 0u64;
        for (_, after) in self.moves(board, attacker) {
            n += if r == 1 {
                let mated = after.black_to_move == mated_side
                    && after.in_check(self.powers, after.black_to_move)
                    && after.legal(self.powers, self.drop_mate_ok).is_empty();
                u64::from(mated)
            } else {
                self.lines(memo, &after, r - 1, (attacker_black, selfmate))
            };
        }
        let n = n.min(1_000_000);
        memo.insert((board.clone(), r), n);
        n
    }

    /// The shortest length up to `max` plies and its number of lines.
    pub fn shortest(self, sfen: &str, stipulation: Stipulation, max: u32) -> Option<(u32, u64)> {
        let board = parse(sfen);
        let attacker_black = board.black_to_move != stipulation.defender_first;
        let selfmate = stipulation.goal == Goal::Selfmate;
        let mut memo = HashMap::new();
        (1..=max).find_map(|r| {
            let n = self.lines(&mut memo, &board, r, (attacker_black, selfmate));
            (n > 0).then_some((r, n))
        })
    }

    /// The same rules for the engine.
    pub fn conditions(self) -> Conditions {
        Conditions {
            piece_moves: self.powers.engine(),
            pawn_drop_mate: if self.drop_mate_ok {
                PawnDropMate::Allowed
            } else {
                PawnDropMate::Illegal
            },
            captures: match self.greedy {
                None => Captures::Free,
                Some(true) => Captures::Greedy,
                Some(false) => Captures::Ascetic,
            },
            ..Conditions::NONE
        }
    }
}

/// A sparse random problem for `stipulation`: the defender's king (White) near its edge, the
/// attacker's (Black) below, for HS# with White pieces aimed at it; a few pieces of both sides
/// around the kings, most in files with a neighbour (so that powers are borrowed), a piece or
/// two in Black's hand. None when the draw is not a position under the conditions.
pub fn random_problem(rng: &mut ChaCha8Rng, stipulation: Stipulation) -> Option<Position> {
    // SFEN tokens, "" for an empty square.
    let mut squares = vec![vec![String::new(); 9]; 9];
    let selfmate = stipulation.goal == Goal::Selfmate;
    // HS#: the kings two or three ranks apart, so that a check can bring the defender's
    // pieces to mate the attacker's king.
    let white_king: (usize, usize) = if selfmate {
        (rng.random_range(2..5), rng.random_range(0..9))
    } else {
        (rng.random_range(0..3), rng.random_range(0..9))
    };
    let black_king = if selfmate {
        let f = white_king.1 as i32 + rng.random_range(-2..=2);
        (
            (white_king.0 + rng.random_range(2..4)).min(8),
            f.clamp(0, 8) as usize,
        )
    } else {
        (rng.random_range(6..9), rng.random_range(0..9))
    };
    squares[white_king.0][white_king.1] = "k".to_string();
    if !squares[black_king.0][black_king.1].is_empty() {
        return None;
    }
    squares[black_king.0][black_king.1] = "K".to_string();
    let kinds = ["P", "L", "N", "S", "G", "B", "R", "+P", "+B", "+R"];
    for i in 0..rng.random_range(2..8) {
        // Around the defender's king, and for HS# around the attacker's too (mostly White's
        // pieces there, to mate it).
        let near_black = selfmate && i % 3 != 0;
        let (kr, kf) = if near_black { black_king } else { white_king };
        let r = kr as i32 + rng.random_range(-2..=3);
        let f = kf as i32 + rng.random_range(-2..=2);
        if !(0..9).contains(&r)
            || !(0..9).contains(&f)
            || !squares[r as usize][f as usize].is_empty()
        {
            continue;
        }
        let kind = kinds[rng.random_range(0..kinds.len())];
        let black = rng.random_bool(if near_black { 0.3 } else { 0.6 });
        squares[r as usize][f as usize] = if black {
            kind.to_string()
        } else {
            kind.to_ascii_lowercase()
        };
    }
    let board = sfen_board(&squares);
    let hand = ["G", "S", "P", "GP", "SN", "R", "B", "GS", "L", "NP"][rng.random_range(0..10)];
    let side = if stipulation.defender_first { 'w' } else { 'b' };
    Position::from_sfen_under(&format!("{board} {side} {hand} 1"), stipulation.rules()).ok()
}

/// The engine's shortest length and count within `max` plies, its lines verified.
pub fn engine_solve(
    solver: &mut Solver,
    root: &Position,
    stipulation: Stipulation,
    strategy: Strategy,
    max: u32,
) -> Option<(u32, u64)> {
    let limits = Limits {
        stipulation,
        strategy,
        max_plies: Some(max),
        solution_limit: 1000,
        ..Default::default()
    };
    let r = solver
        .solve(root, &limits, &AtomicBool::new(false), &mut |_| {})
        .unwrap();
    match r.outcome {
        Outcome::Mate(line) => {
            let s = r.solutions.expect("counted");
            assert!(s.complete);
            for l in &s.lines {
                assert_eq!(l.len(), line.len());
                verify_solution(root, stipulation, l)
                    .unwrap_or_else(|e| panic!("{} {stipulation}: {e}", root.to_sfen()));
            }
            Some((line.len() as u32, s.count as u64))
        }
        Outcome::NoMate => None,
        Outcome::NoMateWithin { max_plies } => {
            assert_eq!(max_plies, max, "{}", root.to_sfen());
            None
        }
        Outcome::Unknown { lower_bound } => {
            panic!("{}: stopped at {lower_bound}", root.to_sfen())
        }
    }
}

/// The board field of an SFEN from rows of tokens (rank a first, file 9 first; "" for an empty
/// square).
pub fn sfen_board(rows: &[Vec<String>]) -> String {
    let rows: Vec<String> = rows
        .iter()
        .map(|row| {
            let mut text = String::new();
            let mut empty = 0;
            for token in row {
                if token.is_empty() {
                    empty += 1;
                    continue;
                }
                if empty > 0 {
                    text.push_str(&empty.to_string());
                    empty = 0;
                }
                text.push_str(token);
            }
            if empty > 0 {
                text.push_str(&empty.to_string());
            }
            text
        })
        .collect();
    rows.join("/")
}

/// The `n`th random root under `rules`: even ones from a random game under them (so that pieces
/// stand and move where only the rules let them), odd ones sparse around a king; None when the
/// draw is not a position.
pub fn random_root(rng: &mut ChaCha8Rng, rules: RuleSet, n: usize) -> Option<Position> {
    if n % 2 == 1 {
        return random_sparse_under(rng, rules);
    }
    let mut pos = Position::startpos();
    for _ in 0..rng.random_range(0..160) {
        let mut list = MoveList::new();
        rules.legal(&pos, &mut list);
        if list.is_empty() {
            break;
        }
        pos.do_move(list.as_slice()[rng.random_range(0..list.len())]);
    }
    Some(pos)
}

/// `root` and the positions after up to three of its checks (the defender in check, often
/// mated).
pub fn with_some_checks(rng: &mut ChaCha8Rng, rules: RuleSet, root: Position) -> Vec<Position> {
    let mut list = MoveList::new();
    rules.checks(&root, &mut list);
    let mut cases = vec![root.clone()];
    for _ in 0..3.min(list.len()) {
        let mut next = root.clone();
        next.do_move(list.as_slice()[rng.random_range(0..list.len())]);
        cases.push(next);
    }
    cases
}
