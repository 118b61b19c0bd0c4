//! The capture rules (キルケ, アンチキルケ, PWC) and the paralysis rules (マドラシ, Kマドラシ)
//! against the square-by-square reference (`tests/fairy/capture.rs`): move lists, checks, check
//! and mate, perft to depth 3 and the shortest helpmates, H# and HS#, with and without 受先,
//! alone and with 安南, 打歩詰可, 強欲 or 禁欲, on positions drawn to exercise them: captures on file 5, pawns
//! on their home ranks, pieces that would be reborn or placed dead or doubled, pieces of a kind
//! facing each other.

mod fairy;

use fairy::capture::{written, Capture, Para, Rules2};
use fairy::*;
use kyozume::search::{Solver, Strategy};
use kyozume::shogi::perft::perft_rules;
use kyozume::shogi::{Goal, MoveList, Position, RuleSet, Stipulation};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

/// The five conditions alone.
const ALONE: [Rules2; 5] = [
    Rules2 {
        capture: Capture::Circe,
        ..Rules2::PLAIN
    },
    Rules2 {
        capture: Capture::AntiCirce,
        ..Rules2::PLAIN
    },
    Rules2 {
        capture: Capture::Pwc,
        ..Rules2::PLAIN
    },
    Rules2 {
        paralysis: Para::Madrasi,
        ..Rules2::PLAIN
    },
    Rules2 {
        paralysis: Para::KMadrasi,
        ..Rules2::PLAIN
    },
];

/// A position drawn for the capture and paralysis rules: both kings, a few pieces of both sides
/// around the defender's king and on file 5, some on their home squares and home ranks, some
/// of a kind facing each other; a piece or two in hand. None when it is not a position.
fn random_position(rng: &mut ChaCha8Rng, rules: RuleSet, side: char) -> Option<Position> {
    let mut squares = vec![vec![String::new(); 9]; 9];
    let white_king = (rng.random_range(0..4), rng.random_range(2..7));
    squares[white_king.0][white_king.1] = "k".into();
    let black_king = (rng.random_range(5..9), rng.random_range(0..9));
    if black_king == white_king {
        return None;
    }
    squares[black_king.0][black_king.1] = "K".into();
    let kinds = ["P", "L", "N", "S", "G", "B", "R", "+P", "+S", "+B", "+R"];
    // (rank, file index 0 = file 9) squares the rules care about: homes and file 5.
    let homes = [
        (0, 0),
        (0, 1),
        (0, 2),
        (0, 3),
        (0, 5),
        (0, 6),
        (0, 7),
        (0, 8),
        (1, 7),
        (1, 1),
        (8, 0),
        (8, 1),
        (8, 2),
        (8, 3),
        (8, 5),
        (8, 6),
        (8, 7),
        (8, 8),
        (7, 1),
        (7, 7),
    ];
    for i in 0..rng.random_range(3..9) {
        let (r, f) = match i % 3 {
            0 => {
                let r = white_king.0 as i32 + rng.random_range(-1..=3);
                let f = white_king.1 as i32 + rng.random_range(-2..=2);
                (r, f)
            }
            1 => (rng.random_range(0..9), 4),
            _ => {
                let (r, f) = homes[rng.random_range(0..homes.len())];
                (r, f)
            }
        };
        if !(0..9).contains(&r)
            || !(0..9).contains(&f)
            || !squares[r as usize][f as usize].is_empty()
        {
            continue;
        }
        // Pawns on their home ranks (c, g) now and then.
        let r = if rng.random_bool(0.15) && squares[2][f as usize].is_empty() {
            2
        } else {
            r
        };
        if !squares[r as usize][f as usize].is_empty() {
            continue;
        }
        let kind = kinds[rng.random_range(0..kinds.len())];
        let black = rng.random_bool(0.55);
        squares[r as usize][f as usize] = if black {
            kind.to_string()
        } else {
            kind.to_ascii_lowercase()
        };
        // A piece of the same kind facing it, for paralysis.
        if rng.random_bool(0.25) {
            let (r2, f2) = (r + rng.random_range(-2..=2), f + rng.random_range(-2..=2));
            if (0..9).contains(&r2)
                && (0..9).contains(&f2)
                && squares[r2 as usize][f2 as usize].is_empty()
            {
                squares[r2 as usize][f2 as usize] = if black {
                    kind.to_ascii_lowercase()
                } else {
                    kind.to_string()
                };
            }
        }
    }
    let board = sfen_board(&squares);
    let hand = [
        "-", "P", "G", "S", "GP", "SN", "R", "B", "Pp", "Gs", "L", "Nr",
    ][rng.random_range(0..12)];
    Position::from_sfen_under(&format!("{board} {side} {hand} 1"), rules).ok()
}

/// The engine's and the reference's legal moves, checks, check and mate in `pos`.
fn compare(pos: &Position, reference: Rules2) -> bool {
    let rules = RuleSet::new(reference.conditions());
    let sfen = pos.to_sfen();
    let board = parse(&sfen);
    let want = reference.legal(&board);
    let mut list = MoveList::new();
    rules.without_captures_rule().legal(pos, &mut list);
    let engine: Vec<String> = list.iter().map(|&m| written(pos, m, rules)).collect();
    let engine_set: BTreeSet<String> = engine.iter().cloned().collect();
    let want_set: BTreeSet<String> = want.iter().map(|(m, _)| m.clone()).collect();
    assert_eq!(engine_set, want_set, "{reference:?} legal {sfen}");
    assert_eq!(
        engine.len(),
        engine_set.len(),
        "{reference:?} a move twice {sfen}"
    );
    let mut checks = MoveList::new();
    rules.without_captures_rule().checks(pos, &mut checks);
    let engine_checks: BTreeSet<String> = checks.iter().map(|&m| written(pos, m, rules)).collect();
    let want_checks: BTreeSet<String> = want
        .iter()
        .filter(|(_, after)| reference.in_check(after, after.black_to_move))
        .map(|(m, _)| m.clone())
        .collect();
    assert_eq!(engine_checks, want_checks, "{reference:?} checks {sfen}");
    for &m in checks.iter() {
        assert!(rules.gives_check(pos, m), "{reference:?} {m:?} {sfen}");
        // The position after the move is the reference's.
        let mut after = pos.clone();
        after.do_move(m);
        let text = written(pos, m, rules);
        let (_, board_after) = want.iter().find(|(w, _)| *w == text).unwrap();
        assert!(
            parse(&after.to_sfen()) == *board_after,
            "{reference:?} {text} {sfen}: the engine leaves {}",
            after.to_sfen()
        );
        assert_eq!(after.key(), after.compute_key(), "{text} {sfen}");
        after.undo_move(m);
        assert_eq!(&after, pos, "{text} undo {sfen}");
    }
    let in_check = reference.in_check(&board, board.black_to_move);
    assert_eq!(
        rules.in_check(pos),
        in_check,
        "{reference:?} in check {sfen}"
    );
    let mated = in_check && want.is_empty();
    assert_eq!(rules.is_checkmate(pos), mated, "{reference:?} mate {sfen}");
    in_check
}

#[test]
fn move_lists_agree_with_the_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(63);
    for reference in ALONE
        .into_iter()
        .chain(ALONE.map(|r| Rules2 {
            powers: Powers::Annan,
            ..r
        }))
        .chain([Rules2 {
            capture: Capture::Circe,
            paralysis: Para::Madrasi,
            ..Rules2::PLAIN
        }])
    {
        let rules = RuleSet::new(reference.conditions());
        let (mut positions, mut in_check) = (0, 0);
        while positions < 150 {
            let Some(root) = random_position(&mut rng, rules, 'b') else {
                continue;
            };
            // The root and the positions after some of its checks (the defender in check).
            let mut list = MoveList::new();
            rules.checks(&root, &mut list);
            let mut cases = vec![root.clone()];
            for _ in 0..2.min(list.len()) {
                let mut next = root.clone();
                next.do_move(list.as_slice()[rng.random_range(0..list.len())]);
                cases.push(next);
            }
            for pos in &cases {
                in_check += usize::from(compare(pos, reference));
            }
            positions += 1;
        }
        assert!(
            in_check >= 100,
            "{reference:?}: {in_check} positions in check"
        );
    }
}

#[test]
fn perft_to_depth_three_agrees_with_the_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(6303);
    for reference in ALONE {
        let rules = RuleSet::new(reference.conditions());
        let mut done = 0;
        while done < 100 {
            let Some(mut pos) = random_position(&mut rng, rules, 'b') else {
                continue;
            };
            let board = parse(&pos.to_sfen());
            let sfen = pos.to_sfen();
            assert_eq!(
                perft_rules(&mut pos, 3, true, rules),
                reference.perft(&board, 3),
                "{reference:?} perft 3 {sfen}"
            );
            done += 1;
        }
    }
}

#[test]
fn shortest_helpmates_agree_with_the_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(6306);
    let mut solver = Solver::new(32).unwrap();
    let mut found = 0;
    let mut tried = 0;
    let with = |r: Rules2, powers, drop_mate_ok, greedy| Rules2 {
        powers,
        drop_mate_ok,
        greedy,
        ..r
    };
    for (i, base) in ALONE.into_iter().enumerate() {
        for (powers, drop_mate_ok, greedy) in [
            (Powers::Normal, false, None),
            (Powers::Annan, false, None),
            (Powers::Normal, true, None),
            (Powers::Normal, false, Some(true)),
            (Powers::Normal, false, Some(false)),
        ] {
            let reference = with(base, powers, drop_mate_ok, greedy);
            for (goal, defender_first) in [
                (Goal::Helpmate, false),
                (Goal::Helpmate, true),
                (Goal::Selfmate, false),
                (Goal::Selfmate, true),
            ] {
                let stipulation = Stipulation {
                    goal,
                    defender_first,
                    conditions: reference.conditions(),
                };
                let max = match (goal, defender_first) {
                    (Goal::Helpmate, false) => 5,
                    _ => 4,
                };
                let mut here = 0;
                let mut attempts = 0;
                while here < 6 && attempts < 400 {
                    attempts += 1;
                    let side = if defender_first { 'w' } else { 'b' };
                    let Some(root) = random_position(&mut rng, stipulation.rules(), side) else {
                        continue;
                    };
                    let sfen = root.to_sfen();
                    // (The engine counts up to 1,000 lines.)
                    let want = reference
                        .shortest(&sfen, stipulation, max)
                        .map(|(plies, count)| (plies, count.min(1000)));
                    let strategy = if (i + here) % 2 == 0 {
                        Strategy::Auto
                    } else {
                        Strategy::BreadthFirst
                    };
                    let got = engine_solve(&mut solver, &root, stipulation, strategy, max);
                    assert_eq!(got, want, "{stipulation} {sfen}");
                    tried += 1;
                    if want.is_some() {
                        found += 1;
                    }
                    here += 1;
                }
            }
        }
    }
    assert!(tried >= 500, "{tried} problems");
    assert!(found >= 100, "only {found} of {tried} with a helpmate");
}

/// Problems whose answers come from the breadth-first pass under each capture rule: suite
/// problems played under the rule (whatever their length there) and PWC's 73-ply H-P4 (神無七郎,
/// OFM No.116). (rules, SFEN).
const PASS_PROBLEMS: [(&str, &str); 9] = [
    // 詰棋猫「ダイアモンド」55手: 55 plies under キルケ, unique.
    (
        "キルケ",
        "4lk3/5nP2/S2Pp4/1SG2pL1G/2SL4S/1N1p1l1B1/B4NR2/3g1K1p1/PNP1P3P b Prg7p 1",
    ),
    // smokecone step33: 31 plies under キルケ.
    (
        "キルケ",
        "4G2+P+P/6K1+P/4P2P1/5LS2/5PLLP/6L2/6k2/6+p2/6P2 b 2r2b3g3s4n9p 1",
    ),
    // oneway43: 19 plies under キルケ.
    (
        "キルケ",
        "sg7/1b1S3+P1/pNPp4g/S+P1sgpppB/1L2p2P+p/1l3RK1k/P1pGP1+p1p/1PNNN3P/RL6L b - 1",
    ),
    // smokecone step9: 29 plies under アンチキルケ.
    (
        "アンチキルケ",
        "7+PG/6K1+P/7PG/9/8k/9/9/9/9 b 2r2b2g4s4n4l15p 1",
    ),
    // forest-06-10_97: 19 plies under アンチキルケ.
    (
        "アンチキルケ",
        "s2B5/1L1S5/1PPPPL2R/1+l5N1/P6N1/2k4N1/7N1/1pgg2g2/K5+Br1 b g2sl12p 1",
    ),
    // smokecone step11: 19 plies under アンチキルケ.
    (
        "アンチキルケ",
        "7+P1/6KG+P/7P1/7G+P/9/8k/9/9/9 b 2r2b2g4s4n4l14p 1",
    ),
    // H-P4: 73 plies under PWC, unique.
    (
        "PWC",
        "9/9/9/9/2K6/+p+p4+p+p+p/1+p+p+p+p+p+p2/1+p+p+p+p+p+p2/7kP b 2B 1",
    ),
    // test_solve_16: 21 plies under PWC.
    (
        "PWC",
        "9/9/9/9/7bb/1ppssssp1/K5k2/+RL1l1gg2/rL3gg1+l b 4N15P 1",
    ),
    // 詰棋猫「ダイアモンド」55手: 19 plies under PWC, unique.
    (
        "PWC",
        "4lk3/5nP2/S2Pp4/1SG2pL1G/2SL4S/1N1p1l1B1/B4NR2/3g1K1p1/PNP1P3P b Prg7p 1",
    ),
];

#[test]
fn the_pass_under_each_capture_rule_agrees_at_one_and_two_threads() {
    use kyozume::search::{Limits, Outcome};
    use kyozume::shogi::conditions::Conditions;
    use std::sync::atomic::AtomicBool;
    let mut solver = Solver::new(128).unwrap();
    for (names, sfen) in PASS_PROBLEMS {
        let (conditions, _) = Conditions::parse_prefix(names).unwrap();
        let rules = RuleSet::new(conditions);
        let reference = Rules2 {
            capture: match conditions.capture_rule {
                kyozume::shogi::conditions::CaptureRule::Circe => Capture::Circe,
                kyozume::shogi::conditions::CaptureRule::AntiCirce => Capture::AntiCirce,
                _ => Capture::Pwc,
            },
            ..Rules2::PLAIN
        };
        let root = Position::from_sfen_under(sfen, rules).unwrap();
        let stipulation = Stipulation::HELPMATE.under(conditions);
        let mut answers = Vec::new();
        for threads in [1, 2] {
            let limits = Limits {
                stipulation,
                strategy: Strategy::BreadthFirst,
                solution_limit: 20,
                threads,
                ..Default::default()
            };
            let result = solver
                .solve(&root, &limits, &AtomicBool::new(false), &mut |_| {})
                .unwrap();
            let Outcome::Mate(line) = result.outcome else {
                panic!("{names} {sfen}: no mate at {threads} threads");
            };
            let solutions = result.solutions.expect("counted");
            assert!(solutions.complete, "{names} {sfen}");
            let mut lines = BTreeSet::new();
            for l in &solutions.lines {
                let mut pos = root.clone();
                let mut texts = Vec::new();
                for &m in l {
                    texts.push(written(&pos, m, rules));
                    pos.do_move(m);
                }
                reference
                    .replay_helpmate(sfen, &texts)
                    .unwrap_or_else(|e| panic!("{names} {sfen} {}: {e}", texts.join(" ")));
                lines.insert(texts.join(" "));
            }
            answers.push((line.len(), solutions.count, lines));
        }
        assert_eq!(
            answers[0], answers[1],
            "{names} {sfen}: one and two threads"
        );
    }
}
