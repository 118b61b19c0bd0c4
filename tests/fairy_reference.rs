//! A second, deliberately simple move generator for the fairy conditions, written square by
//! square from `../shared/fairy/rules.md` and sharing nothing with the engine but the SFEN and
//! USI texts: each piece's power is looked up from its neighbour (安南・安北・対面・背面), every
//! move is tried on a copy of the board and kept if the mover's king is then not attacked (powers
//! recomputed), and a pawn drop is a mate if the opponent then has no move of its own.
//!
//! Here it is checked itself: with no condition against the engine's generator, under 安南
//! against lishogi's published perft counts (with the one rule where lishogi differs, a pawn
//! move making 二歩, taken from `lishogi_annan_perft.tsv`'s own column), and against the worked
//! examples of rules.md: the yardstick the engine's generator under each condition is held to.

mod common;

use kyozume::search::{Limits, Outcome, Solver, Strategy};
use kyozume::shogi::conditions::{Captures, Conditions, PawnDropMate, PieceMoves};
use kyozume::shogi::movegen::{self, MoveList};
use kyozume::shogi::stipulation::verify_solution;
use kyozume::shogi::{Goal, Stipulation};
use kyozume::shogi::{Position, RuleSet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Powers {
    Normal,
    Annan,
    Anhoku,
    Taimen,
    Haimen,
}

/// Piece kinds in SFEN's letters; hands are indexed by the first seven.
const KINDS: [char; 8] = ['P', 'L', 'N', 'S', 'G', 'B', 'R', 'K'];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Man {
    black: bool,
    kind: char,
    promoted: bool,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct Board {
    /// `[rank][file - 1]`, rank 0 = `a`.
    squares: [[Option<Man>; 9]; 9],
    /// `[black, white][kind]` for P, L, N, S, G, B, R.
    hands: [[u8; 7]; 2],
    black_to_move: bool,
}

fn parse(sfen: &str) -> Board {
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

fn square_name(file: usize, rank: usize) -> String {
    format!("{file}{}", (b'a' + rank as u8) as char)
}

/// The steps of a power, forward being +1 in `dy`: (dx, dy, slides).
fn steps(kind: char, promoted: bool) -> Vec<(i32, i32, bool)> {
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
    fn at(&self, file: i32, rank: i32) -> Option<Option<Man>> {
        ((1..=9).contains(&file) && (0..9).contains(&rank))
            .then(|| self.squares[rank as usize][file as usize - 1])
    }

    /// The power (kind, promoted) the piece on (file, rank) moves with.
    fn power(&self, powers: Powers, file: usize, rank: usize) -> (char, bool) {
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
    fn reach(&self, powers: Powers, file: usize, rank: usize) -> Vec<(usize, usize)> {
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

    fn king(&self, black: bool) -> Option<(usize, usize)> {
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

    fn attacked_by(&self, powers: Powers, black: bool, target: (usize, usize)) -> bool {
        (0..9).any(|r| {
            (1..=9).any(|f| {
                self.squares[r][f - 1].is_some_and(|m| m.black == black)
                    && self.reach(powers, f, r).contains(&target)
            })
        })
    }

    fn in_check(&self, powers: Powers, black: bool) -> bool {
        self.king(black)
            .is_some_and(|k| self.attacked_by(powers, !black, k))
    }

    /// Ranks (counted from the owner's far side, 0 = last) where an unpromoted piece of this
    /// kind may not stand.
    fn dead(powers: Powers, kind: char, ranks_from_far_side: usize) -> bool {
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

    fn far(black: bool, rank: usize) -> usize {
        if black {
            rank
        } else {
            8 - rank
        }
    }

    fn has_pawn_on_file(&self, black: bool, file: usize, except_rank: Option<usize>) -> bool {
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
    fn legal(&self, powers: Powers, drop_mate_ok: bool) -> Vec<(String, Board)> {
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

fn moves_of(board: &Board, powers: Powers) -> BTreeSet<String> {
    board
        .legal(powers, false)
        .into_iter()
        .map(|(m, _)| m)
        .collect()
}

#[test]
fn with_no_condition_it_agrees_with_the_engine() {
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let mut positions = 0;
    let mut checks = 0;
    while positions < 2000 {
        let mut pos = Position::from_sfen(kyozume::shogi::STARTPOS_SFEN).unwrap();
        for _ in 0..rng.random_range(0..120) {
            let mut list = MoveList::new();
            movegen::legal(&pos, &mut list);
            if list.is_empty() {
                break;
            }
            let m = list.as_slice()[rng.random_range(0..list.len())];
            pos.do_move(m);
        }
        let mut list = MoveList::new();
        movegen::legal(&pos, &mut list);
        let engine: BTreeSet<String> = list.iter().map(|m| m.to_string()).collect();
        let board = parse(&pos.to_sfen());
        assert_eq!(
            moves_of(&board, Powers::Normal),
            engine,
            "{}",
            pos.to_sfen()
        );
        checks += usize::from(pos.in_check());
        positions += 1;
    }
    assert!(checks >= 20, "{checks} positions in check");
}

#[test]
fn under_annan_it_gives_lishogis_counts_with_the_move_nifu_ban() {
    let path = "tests/data/lishogi_annan_perft.tsv";
    let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut rows = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        let want: usize = f[2].parse().unwrap();
        let board = parse(f[0]);
        assert_eq!(board.legal(Powers::Annan, false).len(), want, "{}", f[0]);
        rows += 1;
    }
    assert_eq!(rows, 260);
}

#[test]
fn the_worked_examples_of_the_rules() {
    // rules.md §8: the legal moves of one piece.
    let cases: [(Powers, &str, &str, &str); 10] = [
        (
            Powers::Annan,
            "3k5/9/9/9/4P4/4R4/9/9/K8 b - 1",
            "5e",
            "5e1e 5e2e 5e3e 5e4e 5e5a 5e5a+ 5e5b 5e5b+ 5e5c 5e5c+ 5e5d 5e6e 5e7e 5e8e 5e9e",
        ),
        (
            Powers::Annan,
            "3k5/9/9/9/4P4/4R4/9/9/K8 b - 1",
            "5f",
            "5f1f 5f2f 5f3f 5f4f 5f5g 5f5h 5f5i 5f6f 5f7f 5f8f 5f9f",
        ),
        (
            Powers::Annan,
            "3k5/9/9/9/4P4/4R4/5P3/9/K8 b - 1",
            "5e",
            "5e1e 5e2e 5e3e 5e5a 5e5a+ 5e5b 5e5b+ 5e5c 5e5c+ 5e5d 5e6e 5e7e 5e8e 5e9e",
        ),
        (
            Powers::Annan,
            "4k4/9/9/6P2/6N2/6R2/9/9/K8 b - 1",
            "3d",
            "3d2b 3d2b+ 3d4b 3d4b+",
        ),
        (
            Powers::Annan,
            "4k4/9/9/6P2/6N2/6R2/9/9/K8 b - 1",
            "3e",
            "3e1e 3e2e 3e4e 3e5e 3e6e 3e7e 3e8e 3e9e",
        ),
        (
            Powers::Annan,
            "4k4/9/9/9/9/9/9/4K4/4G4 b - 1",
            "5h",
            "5h4g 5h4h 5h5g 5h6g 5h6h",
        ),
        (
            Powers::Anhoku,
            "4k4/9/9/6P2/6S2/6N2/9/9/K8 b - 1",
            "3f",
            "3f2e 3f2g 3f4e 3f4g",
        ),
        (
            Powers::Taimen,
            "7r1/7G1/9/9/9/9/9/9/k7K b - 1",
            "2b",
            "2b1b 2b2a 2b2c 2b2d 2b2e 2b2f 2b2g 2b2h 2b2i 2b3b 2b4b 2b5b 2b6b 2b7b 2b8b 2b9b",
        ),
        (
            Powers::Taimen,
            "7r1/7G1/9/9/9/9/9/9/k7K w - 1",
            "2a",
            "2a1a 2a1b 2a2b 2a3a 2a3b",
        ),
        (Powers::Haimen, "9/9/7P1/7k1/9/9/9/9/K8 w - 1", "2d", "2d2e"),
    ];
    for (powers, sfen, from, want) in cases {
        let got: BTreeSet<String> = moves_of(&parse(sfen), powers)
            .into_iter()
            .filter(|m| m.starts_with(from))
            .collect();
        let want: BTreeSet<String> = want.split_whitespace().map(str::to_string).collect();
        assert_eq!(got, want, "{powers:?} {sfen} {from}");
        // The engine too.
        let got: BTreeSet<String> = engine_moves(sfen, powers, false)
            .into_iter()
            .filter(|m| m.starts_with(from))
            .collect();
        assert_eq!(got, want, "engine: {powers:?} {sfen} {from}");
    }
    // Drops on an empty file: rank a under 安北/対面 is closed to N, L, P and N*5b is open; under
    // 安南/背面 all of them drop on rank a; under normal rules a knight needs rank c.
    let sfen = "k8/9/9/9/9/9/9/9/8K b NLP 1";
    for (powers, open, closed) in [
        (Powers::Anhoku, vec!["N*5b"], vec!["N*5a", "L*5a", "P*5a"]),
        (Powers::Taimen, vec!["N*5b"], vec!["N*5a", "L*5a", "P*5a"]),
        (Powers::Annan, vec!["P*4a", "L*4a", "N*4a"], vec![]),
        (Powers::Haimen, vec!["P*4a", "L*4a", "N*4a"], vec![]),
        (Powers::Normal, vec!["N*5c"], vec!["N*5b", "N*5a"]),
    ] {
        let moves = moves_of(&parse(sfen), powers);
        assert_eq!(
            moves,
            engine_moves(sfen, powers, false),
            "engine: {powers:?}"
        );
        for m in open {
            assert!(moves.contains(m), "{powers:?}: {m} missing");
        }
        for m in closed {
            assert!(!moves.contains(m), "{powers:?}: {m} allowed");
        }
    }
    // §9: under 安南 P*7c would mate (the pawn borrows the bishop behind it): illegal unless
    // pawn-drop mate is allowed.
    let board = parse("k1G6/9/9/2B6/9/9/9/9/8K b P 1");
    let find = |ok: bool| {
        board
            .legal(Powers::Annan, ok)
            .into_iter()
            .any(|(m, _)| m == "P*7c")
    };
    assert!(!find(false) && find(true));
    let sfen = "k1G6/9/9/2B6/9/9/9/9/8K b P 1";
    assert!(!engine_moves(sfen, Powers::Annan, false).contains("P*7c"));
    assert!(engine_moves(sfen, Powers::Annan, true).contains("P*7c"));
}

/// The engine's legal moves in `sfen` under `powers` (and 打歩詰可 with `drop_mate_ok`).
fn engine_moves(sfen: &str, powers: Powers, drop_mate_ok: bool) -> BTreeSet<String> {
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

#[test]
fn the_reference_plays_moves_as_the_engine_does() {
    // The reference's boards after a move match the engine's positions (captured pieces to the
    // hand, promotion, the side to move), over 500 random plies.
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut pos = Position::from_sfen(kyozume::shogi::STARTPOS_SFEN).unwrap();
    for _ in 0..500 {
        let board = parse(&pos.to_sfen());
        let moves = board.legal(Powers::Normal, false);
        if moves.is_empty() {
            pos = Position::from_sfen(kyozume::shogi::STARTPOS_SFEN).unwrap();
            continue;
        }
        let (text, after) = &moves[rng.random_range(0..moves.len())];
        pos.do_move(pos.parse_move(text).unwrap());
        let engine = parse(&pos.to_sfen());
        assert_eq!(engine.squares, after.squares, "{text}");
        assert_eq!(engine.hands, after.hands, "{text}");
        assert_eq!(engine.black_to_move, after.black_to_move);
    }
}

/// A sparse random position around the defender's king, pawns in the mover's hand; None if the
/// engine does not take it.
fn random_sparse(rng: &mut ChaCha8Rng) -> Option<Position> {
    random_sparse_under(rng, RuleSet::PLAIN)
}

/// [`random_sparse`], the position taken if valid under `rules`.
fn random_sparse_under(rng: &mut ChaCha8Rng, rules: RuleSet) -> Option<Position> {
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
    let board: Vec<String> = squares
        .iter()
        .map(|row| {
            let mut s = String::new();
            let mut empty = 0;
            for &c in row {
                if c == '.' {
                    empty += 1;
                } else {
                    if empty > 0 {
                        s.push_str(&empty.to_string());
                        empty = 0;
                    }
                    s.push(c);
                }
            }
            if empty > 0 {
                s.push_str(&empty.to_string());
            }
            s
        })
        .collect();
    let hand = ["P", "PG", "2P", "PS", "Pp"][rng.random_range(0..5)];
    Position::from_sfen_under(&format!("{} b {hand} 1", board.join("/")), rules).ok()
}

#[test]
fn pawn_drop_mate_allowed_in_the_engine_agrees_with_the_reference() {
    use kyozume::shogi::conditions::{PawnDropMateAllowed, Plain};
    let mut rng = ChaCha8Rng::seed_from_u64(411);
    let (mut positions, mut drop_mates, mut mated) = (0, 0, 0);
    for _ in 0..700 {
        let Some(root) = random_sparse(&mut rng) else {
            continue;
        };
        // The root, and each position after one of its moves (the defender to move, often in
        // check, with its own pawn drops).
        let mut list = MoveList::new();
        movegen::legal_under::<PawnDropMateAllowed>(&root, &mut list);
        let mut cases = vec![root.clone()];
        let pawn_drops = list.iter().filter(|m| m.to_string().starts_with("P*"));
        for &m in pawn_drops.chain(list.iter().take(4)) {
            let mut next = root.clone();
            next.do_move(m);
            cases.push(next);
        }
        for pos in cases {
            let board = parse(&pos.to_sfen());
            let reference: BTreeSet<String> = board
                .legal(Powers::Normal, true)
                .into_iter()
                .map(|(m, _)| m)
                .collect();
            let mut list = MoveList::new();
            movegen::legal_under::<PawnDropMateAllowed>(&pos, &mut list);
            let engine: BTreeSet<String> = list.iter().map(|m| m.to_string()).collect();
            assert_eq!(engine, reference, "{}", pos.to_sfen());
            // Checks: the moves after which the opponent is in check.
            let reference_checks: BTreeSet<String> = board
                .legal(Powers::Normal, true)
                .into_iter()
                .filter(|(_, after)| after.in_check(Powers::Normal, after.black_to_move))
                .map(|(m, _)| m)
                .collect();
            let mut list = MoveList::new();
            movegen::checks_under::<PawnDropMateAllowed>(&pos, &mut list);
            let engine_checks: BTreeSet<String> = list.iter().map(|m| m.to_string()).collect();
            assert_eq!(engine_checks, reference_checks, "checks {}", pos.to_sfen());
            // Mate: in check and no move.
            let reference_mated =
                board.in_check(Powers::Normal, board.black_to_move) && reference.is_empty();
            assert_eq!(
                movegen::is_checkmate_under::<PawnDropMateAllowed>(&pos),
                reference_mated,
                "{}",
                pos.to_sfen()
            );
            // What the condition changes: pawn drops that mate, legal only under it.
            let plain = moves_of(&board, Powers::Normal);
            drop_mates += reference.difference(&plain).count();
            mated += usize::from(reference_mated);
            let mut list = MoveList::new();
            movegen::legal_under::<Plain>(&pos, &mut list);
            assert_eq!(list.len(), plain.len(), "{}", pos.to_sfen());
            positions += 1;
        }
    }
    eprintln!("{positions} positions, {drop_mates} drop mates, {mated} mated");
    assert!(positions >= 2000, "{positions} positions");
    assert!(
        drop_mates >= 20 && mated >= 20,
        "{drop_mates} drop mates, {mated} mated"
    );
}

/// The reference's leaf count, with 強欲 (`Some(true)`) or 禁欲 (`Some(false)`) narrowing each
/// side's moves to its captures or to its other moves when it has any.
fn reference_perft(board: &Board, depth: u32, drop_mate_ok: bool, greedy: Option<bool>) -> u64 {
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

#[test]
fn perft_under_conditions_agrees_with_the_reference() {
    use kyozume::shogi::conditions::{Captures, PawnDropMateAllowed, Plain};
    use kyozume::shogi::perft::perft_under;
    let mut rng = ChaCha8Rng::seed_from_u64(4141);
    let mut roots = vec![
        Position::from_sfen("9/2+p2+P3/2p6/3nk4/3p1L1B1/9/9/9/9 b 2G 1").unwrap(),
        Position::from_sfen("7nk/9/7G1/9/9/9/9/9/K8 b P 1").unwrap(),
    ];
    while roots.len() < 60 {
        if let Some(pos) = random_sparse(&mut rng) {
            roots.push(pos);
        }
    }
    let mut differ = [0usize; 3];
    for root in &roots {
        let board = parse(&root.to_sfen());
        for (i, (captures, greedy)) in [
            (Captures::Free, None),
            (Captures::Greedy, Some(true)),
            (Captures::Ascetic, Some(false)),
        ]
        .into_iter()
        .enumerate()
        {
            for drop_ok in [false, true] {
                let want = reference_perft(&board, 2, drop_ok, greedy);
                let mut pos = root.clone();
                let got = if drop_ok {
                    perft_under::<PawnDropMateAllowed>(&mut pos, 2, true, captures)
                } else {
                    perft_under::<Plain>(&mut pos, 2, true, captures)
                };
                assert_eq!(
                    got,
                    want,
                    "{} {captures:?} drop mate {drop_ok}",
                    root.to_sfen()
                );
                if greedy.is_some() {
                    differ[i] += usize::from(want != reference_perft(&board, 2, drop_ok, None));
                }
            }
        }
    }
    // The filters changed the counts often enough to be tested.
    assert!(differ[1] >= 10 && differ[2] >= 10, "{differ:?}");
}

#[test]
fn perft_on_the_command_line_takes_the_conditions_it_knows() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kyozume"))
            .arg("perft")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    // rules.md §9: P*1b mates, legal only under 打歩詰可.
    let sfen = "7nk/9/7G1/9/9/9/9/9/K8 b P 1";
    let board = parse(sfen);
    for (rules, drop_ok) in [(None, false), (Some("打歩詰可"), true)] {
        let mut args = vec!["1", "--sfen", sfen];
        if let Some(r) = rules {
            args.extend(["--rules", r]);
        }
        let (code, stdout, _) = run(&args);
        assert_eq!(code, Some(0));
        let want = board.legal(Powers::Normal, drop_ok).len();
        assert!(
            stdout.contains(&format!("Nodes searched: {want}\n")),
            "{stdout}"
        );
    }
    // Piece powers, on a position only 安南 and 背面 allow (a pawn on the last rank), in
    // Japanese and as the option's value.
    let sfen = "4k3P/9/9/9/9/4PS3/4G4/4R4/4K4 b GP 1";
    for (rules, powers) in [("安南", Powers::Annan), ("Haimen", Powers::Haimen)] {
        let (code, stdout, _) = run(&["1", "--sfen", sfen, "--rules", rules]);
        assert_eq!(code, Some(0), "{rules}");
        let want = parse(sfen).legal(powers, false).len();
        assert!(
            stdout.contains(&format!("Nodes searched: {want}\n")),
            "{rules}: {stdout}"
        );
    }
    let (code, _, stderr) = run(&["1", "--sfen", sfen, "--rules", "対面"]);
    assert_eq!(code, Some(2), "a pawn on the last rank is dead under 対面");
    assert!(
        stderr.starts_with("kyozume perft: invalid --sfen"),
        "{stderr}"
    );
    // Two of a group never go together, and a stipulation is not a condition: a clear error.
    for rules in ["安南対面", "強欲禁欲", "ばか詰"] {
        let (code, stdout, stderr) = run(&["1", "--rules", rules]);
        assert_eq!(code, Some(2), "{rules}");
        assert!(
            stdout.is_empty() && stderr.starts_with("kyozume perft: "),
            "{stderr}"
        );
    }
}

/// The rules a reference solve follows.
#[derive(Clone, Copy)]
struct Fairy {
    powers: Powers,
    drop_mate_ok: bool,
    /// 強欲 `Some(true)`, 禁欲 `Some(false)`.
    greedy: Option<bool>,
}

impl Fairy {
    /// The moves the side to move may play (the attacker's checks only), after the captures
    /// rule, each with the board after it.
    fn moves(self, board: &Board, attacker: bool) -> Vec<(String, Board)> {
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
    fn helpmates(self, board: &Board, plies: u32, attacker: bool) -> Vec<Vec<String>> {
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

#[test]
fn the_worked_helpmates_of_the_rules() {
    // rules.md §9: (rules, SFEN, shortest within 3 plies, its lines).
    let plain = Fairy {
        powers: Powers::Normal,
        drop_mate_ok: false,
        greedy: None,
    };
    let with = |powers| Fairy { powers, ..plain };
    let cases: [(Fairy, &str, Option<u32>, &[&str]); 8] = [
        (
            with(Powers::Annan),
            "k1G6/9/9/2B6/9/9/9/9/8K b P 1",
            None,
            &[],
        ),
        (
            Fairy {
                drop_mate_ok: true,
                ..with(Powers::Annan)
            },
            "k1G6/9/9/2B6/9/9/9/9/8K b P 1",
            Some(1),
            &["P*7c"],
        ),
        (plain, "7nk/9/7G1/9/9/9/9/9/K8 b P 1", None, &[]),
        (
            Fairy {
                drop_mate_ok: true,
                ..plain
            },
            "7nk/9/7G1/9/9/9/9/9/K8 b P 1",
            Some(1),
            &["P*1b"],
        ),
        (
            with(Powers::Anhoku),
            "8k/9/8P/7N1/9/9/9/9/K8 b G 1",
            Some(1),
            &["1c1b+", "2d1b+", "G*1b"],
        ),
        (
            with(Powers::Taimen),
            "8k/9/9/9/9/9/9/9/K8 b GS 1",
            Some(3),
            &["S*1b 1a2b G*2c", "S*2b 1a1b G*1c"],
        ),
        (
            with(Powers::Haimen),
            "7k1/9/6P2/9/9/9/9/9/K8 b G 1",
            Some(3),
            &["3c3b+ 2a1a G*2b"],
        ),
        (
            Fairy {
                greedy: Some(true),
                ..plain
            },
            "9/2+p2+P3/2p6/3nk4/3p1L1B1/9/9/9/9 b 2G 1",
            Some(3),
            &["G*4d 5d6c 2e5b+"],
        ),
    ];
    for (rules, sfen, shortest, want) in cases {
        let board = parse(sfen);
        let found = [1, 3].into_iter().find_map(|n| {
            let lines = rules.helpmates(&board, n, true);
            (!lines.is_empty()).then_some((n, lines))
        });
        assert_eq!(found.as_ref().map(|f| f.0), shortest, "{sfen}");
        let got: BTreeSet<String> = found
            .map(|(_, lines)| lines.iter().map(|l| l.join(" ")).collect())
            .unwrap_or_default();
        let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
        assert_eq!(got, want, "{sfen}");
        // The engine: the same shortest length within 3 plies and the same lines.
        let stipulation = Stipulation::HELPMATE.under(rules.conditions());
        let root = Position::from_sfen_under(sfen, stipulation.rules()).unwrap();
        let limits = Limits {
            stipulation,
            max_plies: Some(3),
            solution_limit: 10,
            ..Default::default()
        };
        let result = kyozume::search::with_search_stack(|| {
            Solver::new_lazy(16)
                .unwrap()
                .solve(&root, &limits, &AtomicBool::new(false), &mut |_| {})
                .unwrap()
        });
        let lines: BTreeSet<String> = match result.outcome {
            Outcome::Mate(_) => result
                .solutions
                .unwrap()
                .lines
                .iter()
                .map(|l| {
                    l.iter()
                        .map(|m| m.to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect(),
            _ => BTreeSet::new(),
        };
        assert_eq!(lines, want, "engine: {sfen} {}", stipulation.japanese());
    }
    // Plain rules give the 強欲 problem three lines: after G*5e the king may also step away.
    let board = parse("9/2+p2+P3/2p6/3nk4/3p1L1B1/9/9/9/9 b 2G 1");
    assert_eq!(plain.helpmates(&board, 3, true).len(), 3);
}

impl Powers {
    fn engine(self) -> PieceMoves {
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
fn compare_generators(pos: &Position, powers: Powers, drop_mate_ok: bool) -> (bool, bool) {
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
fn lends_a_power(board: &Board, powers: Powers) -> bool {
    (0..9).any(|rank| {
        (1..=9).any(|file| {
            board.squares[rank][file - 1].is_some_and(|man| {
                man.black == board.black_to_move
                    && board.power(powers, file, rank) != (man.kind, man.promoted)
            })
        })
    })
}

#[test]
fn under_each_power_condition_the_engine_agrees_with_the_reference() {
    // Per condition: 1,000 positions from random games under it (so pieces stand and move where
    // only the condition lets them), 1,000 sparse ones around a king; in each, and after up to
    // three of its checks (the defender in check, often mated), legal moves, checks, check and
    // mate must match, with and without 打歩詰可.
    for (seed, powers) in [
        (1u64, Powers::Annan),
        (2, Powers::Anhoku),
        (3, Powers::Taimen),
        (4, Powers::Haimen),
    ] {
        let mut rng = ChaCha8Rng::seed_from_u64(4100 + seed);
        let rules = RuleSet::new(Conditions {
            piece_moves: powers.engine(),
            ..Conditions::NONE
        });
        let (mut roots, mut checked, mut mated, mut borrowed) = (0, 0, 0, 0);
        let mut cases = Vec::new();
        while roots < 2000 {
            let root = if roots % 2 == 0 {
                let mut pos = Position::startpos();
                for _ in 0..rng.random_range(0..160) {
                    let mut list = MoveList::new();
                    rules.legal(&pos, &mut list);
                    if list.is_empty() {
                        break;
                    }
                    pos.do_move(list.as_slice()[rng.random_range(0..list.len())]);
                }
                pos
            } else {
                let Some(pos) = random_sparse_under(&mut rng, rules) else {
                    continue;
                };
                pos
            };
            roots += 1;
            cases.clear();
            cases.push(root.clone());
            let mut list = MoveList::new();
            rules.checks(&root, &mut list);
            for _ in 0..3.min(list.len()) {
                let mut next = root.clone();
                next.do_move(list.as_slice()[rng.random_range(0..list.len())]);
                cases.push(next);
            }
            for pos in &cases {
                let drop_mate_ok = rng.random_bool(0.3);
                let (c, m) = compare_generators(pos, powers, drop_mate_ok);
                checked += usize::from(c);
                mated += usize::from(m);
                borrowed += usize::from(lends_a_power(&parse(&pos.to_sfen()), powers));
            }
        }
        eprintln!("{powers:?}: {roots} roots, {checked} in check, {mated} mated, {borrowed} where a piece borrows a power");
        assert!(
            checked >= 1000 && mated >= 50 && borrowed >= 1000,
            "{powers:?}: {checked} in check, {mated} mated, {borrowed} changed"
        );
    }
}

impl Fairy {
    /// Lines of exactly `r` plies from `board` that end in the goal (H#: the attacker, Black
    /// or White as `attacker_black` says, mates; HS#, `selfmate`: the defender mates), capped.
    /// A walk that repeats a position is counted too, which changes nothing at the shortest
    /// length: cutting the cycle out would give a shorter line.
    fn lines(
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
    fn shortest(self, sfen: &str, stipulation: Stipulation, max: u32) -> Option<(u32, u64)> {
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
    fn conditions(self) -> Conditions {
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
        }
    }
}

/// A sparse random problem for `stipulation`: the defender's king (White) near its edge, the
/// attacker's (Black) below, for HS# with White pieces aimed at it; a few pieces of both sides
/// around the kings, most in files with a neighbour (so that powers are borrowed), a piece or
/// two in Black's hand. None when the draw is not a position under the conditions.
fn random_problem(rng: &mut ChaCha8Rng, stipulation: Stipulation) -> Option<Position> {
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
    let board: Vec<String> = squares
        .iter()
        .map(|row| {
            let mut s = String::new();
            let mut empty = 0;
            for token in row {
                if token.is_empty() {
                    empty += 1;
                    continue;
                }
                if empty > 0 {
                    s.push_str(&empty.to_string());
                    empty = 0;
                }
                s.push_str(token);
            }
            if empty > 0 {
                s.push_str(&empty.to_string());
            }
            s
        })
        .collect();
    // (Squares are written from file 9 to file 1: the row's order is SFEN's.)
    let hand = ["G", "S", "P", "GP", "SN", "R", "B", "GS", "L", "NP"][rng.random_range(0..10)];
    let side = if stipulation.defender_first { 'w' } else { 'b' };
    Position::from_sfen_under(
        &format!("{} {side} {hand} 1", board.join("/")),
        stipulation.rules(),
    )
    .ok()
}

/// The engine's shortest length and count within `max` plies, its lines verified.
fn engine_solve(
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
        Outcome::Unknown { lower_bound } => {
            assert!(
                lower_bound > max,
                "{}: stopped at {lower_bound}",
                root.to_sfen()
            );
            None
        }
    }
}

#[test]
fn under_each_condition_the_engine_solves_as_the_reference() {
    // Per condition, H# and HS# (a quarter of them 受先): 100 random problems each (at most 50
    // without a line) with the shortest length and count of the reference solver within the
    // plies searched; each also through the breadth-first pass where the pass runs (no 受先).
    let plain = Fairy {
        powers: Powers::Normal,
        drop_mate_ok: false,
        greedy: None,
    };
    let conditions = [
        Fairy {
            powers: Powers::Annan,
            ..plain
        },
        Fairy {
            powers: Powers::Anhoku,
            ..plain
        },
        Fairy {
            powers: Powers::Taimen,
            ..plain
        },
        Fairy {
            powers: Powers::Haimen,
            ..plain
        },
        Fairy {
            drop_mate_ok: true,
            ..plain
        },
        Fairy {
            greedy: Some(true),
            ..plain
        },
        Fairy {
            greedy: Some(false),
            ..plain
        },
    ];
    kyozume::search::with_search_stack(|| {
        let mut solver = Solver::new_lazy(32).unwrap();
        for (i, rules) in conditions.into_iter().enumerate() {
            let mut rng = ChaCha8Rng::seed_from_u64(4141 + i as u64);
            for goal in [Goal::Helpmate, Goal::Selfmate] {
                let (mut solved, mut unsolved) = (0, 0);
                let mut lengths = BTreeSet::new();
                while solved + unsolved < 100 {
                    let defender_first = (solved + unsolved) % 4 == 3;
                    let stipulation = Stipulation {
                        goal,
                        defender_first,
                        conditions: rules.conditions(),
                    };
                    let Some(root) = random_problem(&mut rng, stipulation) else {
                        continue;
                    };
                    if stipulation.check_position(&root).is_err() {
                        continue;
                    }
                    let max = match (goal, defender_first) {
                        (Goal::Helpmate, false) => 5,
                        _ => 4,
                    };
                    let sfen = root.to_sfen();
                    let got = engine_solve(&mut solver, &root, stipulation, Strategy::Auto, max);
                    if got.is_none() && unsolved >= 50 {
                        // Most random HS# problems have no line; half are enough (all 50 held
                        // to the reference, which is slow: the engine picks which to skip).
                        continue;
                    }
                    let want = rules
                        .shortest(&sfen, stipulation, max)
                        .map(|(len, n)| (len, n.min(1000)));
                    assert_eq!(got, want, "{sfen} {}", stipulation.japanese());
                    if !defender_first {
                        let got = engine_solve(
                            &mut solver,
                            &root,
                            stipulation,
                            Strategy::BreadthFirst,
                            max,
                        );
                        assert_eq!(got, want, "{sfen} {} breadth-first", stipulation.japanese());
                    }
                    match want {
                        Some((len, _)) => {
                            solved += 1;
                            lengths.insert(len);
                        }
                        None => unsolved += 1,
                    }
                }
                // Longer lines: problems the engine solves in 5 plies or more (H#; HS# 4 or
                // more), searched to 7 (HS#: 6), until 5 of them.
                let max = if goal == Goal::Helpmate { 7 } else { 6 };
                let mut long = 0;
                while long < 5 {
                    let stipulation = Stipulation {
                        goal,
                        defender_first: false,
                        conditions: rules.conditions(),
                    };
                    let Some(root) = random_problem(&mut rng, stipulation) else {
                        continue;
                    };
                    if stipulation.check_position(&root).is_err() {
                        continue;
                    }
                    let got = engine_solve(&mut solver, &root, stipulation, Strategy::Auto, max);
                    if got.is_none_or(|(len, _)| len < max - 2) {
                        continue;
                    }
                    let sfen = root.to_sfen();
                    let want = rules
                        .shortest(&sfen, stipulation, max)
                        .map(|(len, n)| (len, n.min(1000)));
                    assert_eq!(got, want, "{sfen} {}", stipulation.japanese());
                    lengths.insert(got.unwrap().0);
                    long += 1;
                }
                eprintln!(
                    "{} {goal:?}: {solved} solved, {unsolved} not, lengths {lengths:?}",
                    rules.conditions()
                );
                assert!(
                    solved >= 20 && unsolved >= 5,
                    "{} {goal:?}",
                    rules.conditions()
                );
                assert!(
                    lengths.len() >= 2,
                    "{} {goal:?}: {lengths:?}",
                    rules.conditions()
                );
            }
        }
    });
}

#[test]
fn usi_switches_conditions_between_problems_in_one_script() {
    let taimen = "8k/9/9/9/9/9/9/9/K8 b GS 1";
    let annan = "k1G6/9/9/2B6/9/9/9/9/8K b P 1";
    let greed = "9/2+p2+P3/2p6/3nk4/3p1L1B1/9/9/9/9 b 2G 1";
    let plain = Fairy {
        powers: Powers::Normal,
        drop_mate_ok: false,
        greedy: None,
    };
    // Each step's commands before its `go`, the problem it poses under which rules, and
    // whether one of its commands is refused (the engine then keeps its old setting).
    let steps: Vec<(Vec<String>, &str, Fairy, bool)> = vec![
        (
            vec![
                "setoption name PieceMoves value Taimen".into(),
                format!("position sfen {taimen}"),
            ],
            taimen,
            Fairy {
                powers: Powers::Taimen,
                ..plain
            },
            false,
        ),
        (
            vec!["setoption name PieceMoves value Annam".into()],
            taimen,
            Fairy {
                powers: Powers::Taimen,
                ..plain
            },
            true,
        ),
        (
            vec!["setoption name PieceMoves value Normal".into()],
            taimen,
            plain,
            false,
        ),
        (
            vec![
                "setoption name PieceMoves value Annan".into(),
                "setoption name PawnDropMate value Allowed".into(),
                format!("position sfen {annan}"),
            ],
            annan,
            Fairy {
                powers: Powers::Annan,
                drop_mate_ok: true,
                ..plain
            },
            false,
        ),
        (
            vec![
                "setoption name PieceMoves value Normal".into(),
                "setoption name PawnDropMate value Illegal".into(),
                "setoption name Captures value Greedy".into(),
                format!("position sfen {greed}"),
            ],
            greed,
            Fairy {
                greedy: Some(true),
                ..plain
            },
            false,
        ),
        (
            vec!["setoption name Captures value Greediest".into()],
            greed,
            Fairy {
                greedy: Some(true),
                ..plain
            },
            true,
        ),
        (
            vec!["setoption name Captures value Free".into()],
            greed,
            plain,
            false,
        ),
    ];
    let mut script = String::from("usi\nisready\nsetoption name SolutionLimit value 10\n");
    for (commands, ..) in &steps {
        for c in commands {
            script.push_str(c);
            script.push('\n');
        }
        script.push_str("go mate 10000\n");
    }
    let (lines, status, _) = common::run_script(&script, std::time::Duration::from_secs(60));
    assert!(status.success());
    // The lines of each search: from its `info string stipulation` to its `checkmate`.
    let mut searches: Vec<Vec<&String>> = Vec::new();
    let mut errors_before: Vec<usize> = Vec::new();
    let mut errors = 0;
    for l in &lines {
        if l.starts_with("info string error") {
            errors += 1;
        } else if l.starts_with("info string stipulation") {
            searches.push(vec![l]);
            errors_before.push(errors);
            errors = 0;
        } else if let Some(search) = searches.last_mut() {
            search.push(l);
        }
    }
    assert_eq!(searches.len(), steps.len(), "{lines:#?}");
    for ((_, sfen, rules, refused), (search, errors)) in
        steps.iter().zip(searches.iter().zip(&errors_before))
    {
        assert_eq!(*errors, usize::from(*refused), "{sfen}: {lines:#?}");
        let stipulation = Stipulation::HELPMATE.under(rules.conditions());
        let conditions = rules.conditions();
        if conditions.is_none() {
            assert!(!search[0].contains("conditions"), "{}", search[0]);
        } else {
            assert!(
                search[0].ends_with(&format!("conditions {conditions}")),
                "{}",
                search[0]
            );
        }
        let (len, count) = rules
            .shortest(sfen, stipulation, 5)
            .expect("each has a mate");
        let answer = search.last().unwrap();
        let root = Position::from_sfen_under(sfen, stipulation.rules()).unwrap();
        let mut line = Vec::new();
        let mut pos = root.clone();
        for text in answer.strip_prefix("checkmate ").unwrap().split(' ') {
            let m = pos.parse_move_under(text, stipulation.rules()).unwrap();
            pos.do_move(m);
            line.push(m);
        }
        verify_solution(&root, stipulation, &line).unwrap();
        assert_eq!(line.len() as u32, len, "{sfen} {}", stipulation.japanese());
        // The count: one line per `alt`, besides the first.
        let alternatives = search
            .iter()
            .filter(|l| l.starts_with("info string alt"))
            .count();
        assert_eq!(
            alternatives as u64 + 1,
            count,
            "{sfen} {}: {search:#?}",
            stipulation.japanese()
        );
    }
}

#[test]
fn under_greed_and_asceticism_the_engine_agrees_with_the_reference() {
    // 2,000 positions each (half from random games, half sparse around a king, and after up to
    // three checks of each): the moves each side may play (the defender's legal moves, the
    // attacker's checks, each narrowed by the rule) and mate, engine against reference.
    for (seed, greedy, captures) in [
        (5u64, true, Captures::Greedy),
        (6, false, Captures::Ascetic),
    ] {
        let mut rng = ChaCha8Rng::seed_from_u64(4100 + seed);
        let rules = RuleSet::new(Conditions {
            captures,
            ..Conditions::NONE
        });
        let reference = Fairy {
            powers: Powers::Normal,
            drop_mate_ok: false,
            greedy: Some(greedy),
        };
        let (mut roots, mut narrowed, mut mated) = (0, 0, 0);
        while roots < 2000 {
            let root = if roots % 2 == 0 {
                let mut pos = Position::startpos();
                for _ in 0..rng.random_range(0..160) {
                    let mut list = MoveList::new();
                    rules.legal(&pos, &mut list);
                    if list.is_empty() {
                        break;
                    }
                    pos.do_move(list.as_slice()[rng.random_range(0..list.len())]);
                }
                pos
            } else {
                let Some(pos) = random_sparse_under(&mut rng, rules) else {
                    continue;
                };
                pos
            };
            roots += 1;
            let mut cases = vec![root.clone()];
            let mut list = MoveList::new();
            rules.checks(&root, &mut list);
            for _ in 0..3.min(list.len()) {
                let mut next = root.clone();
                next.do_move(list.as_slice()[rng.random_range(0..list.len())]);
                cases.push(next);
            }
            for pos in &cases {
                let sfen = pos.to_sfen();
                let board = parse(&sfen);
                let as_set = |list: &MoveList| -> BTreeSet<String> {
                    list.iter().map(|m| m.to_string()).collect()
                };
                let names = |moves: Vec<(String, Board)>| -> BTreeSet<String> {
                    moves.into_iter().map(|(m, _)| m).collect()
                };
                let mut list = MoveList::new();
                rules.legal(pos, &mut list);
                let want = names(reference.moves(&board, false));
                assert_eq!(as_set(&list), want, "{captures:?} legal {sfen}");
                narrowed += usize::from(want.len() < moves_of(&board, Powers::Normal).len());
                let mut list = MoveList::new();
                rules.checks(pos, &mut list);
                assert_eq!(
                    as_set(&list),
                    names(reference.moves(&board, true)),
                    "{captures:?} checks {sfen}"
                );
                let is_mated = board.in_check(Powers::Normal, board.black_to_move)
                    && board.legal(Powers::Normal, false).is_empty();
                assert_eq!(
                    rules.is_checkmate(pos),
                    is_mated,
                    "{captures:?} mate {sfen}"
                );
                mated += usize::from(is_mated);
            }
        }
        eprintln!("{captures:?}: {roots} roots, {narrowed} narrowed by the rule, {mated} mated");
        assert!(
            narrowed >= 500 && mated >= 50,
            "{captures:?}: {narrowed} narrowed, {mated} mated"
        );
    }
}

#[test]
fn fairy_mates_lengths_under_each_condition() {
    // Fairy Mate's lengths for problems of our own making under each condition
    // (tests/data/fairy_mate_conditions.tsv): the engine finds the same, its line verified.
    let path = "tests/data/fairy_mate_conditions.tsv";
    let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut per_condition: HashMap<String, usize> = HashMap::new();
    kyozume::search::with_search_stack(|| {
        let mut solver = Solver::new_lazy(64).unwrap();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = line.split('\t').collect();
            let stipulation = Stipulation::parse_rules(f[0]).unwrap();
            let want: usize = f[3].parse().unwrap();
            let root = Position::from_sfen_under(f[2], stipulation.rules()).unwrap();
            let limits = Limits {
                stipulation,
                solution_limit: 1,
                ..Default::default()
            };
            let r = solver
                .solve(&root, &limits, &AtomicBool::new(false), &mut |_| {})
                .unwrap();
            let Outcome::Mate(line) = r.outcome else {
                panic!("{} {}: no mate", f[0], f[1]);
            };
            assert_eq!(line.len(), want, "{} {}", f[0], f[1]);
            verify_solution(&root, stipulation, &line).unwrap();
            *per_condition.entry(f[0].to_string()).or_default() += 1;
        }
    });
    assert_eq!(per_condition.len(), 7, "{per_condition:?}");
    assert!(per_condition.values().all(|&n| n >= 5), "{per_condition:?}");
}

#[test]
fn the_command_line_reads_conditions_from_rules_and_batch_columns() {
    let kyozume = env!("CARGO_BIN_EXE_kyozume");
    // 背面: the pawn borrows nothing here, and 3c3b+ 2a1a G*2b is the only line (rules.md §9).
    let haimen = "7k1/9/6P2/9/9/9/9/9/K8 b G 1";
    let out = std::process::Command::new(kyozume)
        .args(["solve", "--json", "--rules", "背面ばか詰", haimen])
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&out.stdout);
    assert!(json.contains("\"stipulation\":\"H# (Haimen)\""), "{json}");
    assert!(
        json.contains("\"moves\":[\"3c3b+\",\"2a1a\",\"G*2b\"]"),
        "{json}"
    );
    // A batch whose third column names the conditions; a pawn on the last rank, which only
    // 安南 and 背面 allow, is read under them.
    let dir = std::env::temp_dir().join(format!("kyozume-fairy-batch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("batch.tsv");
    std::fs::write(
        &file,
        format!(
            "haimen\t{haimen}\t背面\nannan\t4k3P/9/9/9/9/9/9/9/4K4 b G 1\t安南協力詰\n\
             plain\t4k3P/9/9/9/9/9/9/9/4K4 b G 1\n"
        ),
    )
    .unwrap();
    let out = std::process::Command::new(kyozume)
        .args(["solve", "--json", "--batch", file.to_str().unwrap()])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains("\"stipulation\":\"H# (Haimen)\"") && lines[0].contains("\"plies\":3"),
        "{text}"
    );
    assert!(
        lines[1].contains("\"stipulation\":\"H# (Annan)\"")
            && lines[1].contains("\"status\":\"mate\""),
        "{text}"
    );
    assert!(lines[2].contains("\"status\":\"error\""), "{text}");
    // Two piece-power conditions at once: a clear error, exit status 2.
    let out = std::process::Command::new(kyozume)
        .args(["solve", "--rules", "安南対面ばか詰", haimen])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("kyozume solve: --rules: ") && err.contains("cannot be combined"),
        "{err}"
    );
}
