//! The engine's move generation under the fairy conditions against the reference model of
//! `fairy/mod.rs` (itself checked first: with no condition against the engine, under 安南
//! against lishogi's published perft counts, against rules.md's worked examples): legal moves,
//! checks, check and mate on thousands of positions per condition, and perft.

mod fairy;

use fairy::*;
use kyozume::shogi::conditions::{Captures, Conditions};
use kyozume::shogi::movegen::{self, MoveList};
use kyozume::shogi::{Position, RuleSet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

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
        while roots < 2000 {
            let Some(root) = random_root(&mut rng, rules, roots) else {
                continue;
            };
            roots += 1;
            let cases = with_some_checks(&mut rng, rules, root);
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
            let Some(root) = random_root(&mut rng, rules, roots) else {
                continue;
            };
            roots += 1;
            let cases = with_some_checks(&mut rng, rules, root);
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
